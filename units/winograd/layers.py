"""Per-layer throughput and traffic MODEL of the Winograd family (issue 15 §4): which of direct
convolution, fused F(2×2,3×3) and fused F(4×4,3×3) wins on the paper's ResNet layers
(:data:`tcgen.units.winograd.paper.RESNET_LAYERS`, N = 32..128) on *our* datapaths, beside the
paper's own analytic forms (intensity, the §8.1 fused / non-fused break-even).

Everything here is a model -- arithmetic on the units' schedules and on operand counts -- not
a measurement and not a GPU result.  Plain arithmetic on the family's params, model and paper
modules (no Amaranth).

The datapath cycle model
    A layer (H' = W' = ``HW``, C, K, batch N; stride 1, pad 1) is cut into requests of the
    tile datapaths as they are built (docs/winograd.md): one output tile position (m×m
    outputs, m = 2 for ``direct`` and ``f23``, 4 for ``f43``), a block of at most ``C_blk``
    input channels and ``K_blk`` filters.  A request costs its unit's back-to-back
    ``interval`` (:class:`~tcgen.units.winograd.params.WinoConvParams` /
    :class:`~tcgen.units.winograd.params.DirectConvParams`, the schedules the RTL tests
    assert): ``wino_conv`` C_b (ITF) + ⌈K_b·(m+2)²/dps⌉·⌈C_b/4⌉ (EWMM),
    ``direct_conv3x3`` ⌈K_b·m²/dps⌉·⌈9C_b/4⌉.  Layer cycles = N·T² positions
    (T = ⌈HW/m⌉, the last tile row / column computed in full and cropped: Conv5's 7×7 is
    computed as 8×8 by every m here) × Σ over the (C, K) blocks of their intervals.
    ``overlap=True`` is ``wino_conv``'s overlapped datapath as built (issue 42:
    ``overlap=true``, a ping-pong Î and Ô bank, weight-stationary filters): the ITF under the
    previous request's EWMM and the OTF under the next one, interval max(C_b, EWMM, K_b) --
    the RTL's measured figure (tb/test_winograd_overlap.py); its consecutive C blocks
    accumulate in Ô (``accumulate=true``) at no extra cycle.  Assumptions [A]: as built
    without overlap, the partial results of consecutive C blocks accumulate (summed after the
    OTF) at no DP-4 cycle (that unit has no accumulation); requests run back to back with
    operands ready (fill and drain, a few tens of cycles per layer, are not counted).  ``direct_ideal`` is the bound of any direct schedule on ``dps``
    DP-4s: 9·N·K·C·HW² MACs / (4·dps), every lane busy, no tile waste (on Conv2–Conv4 the
    ``direct_conv3x3`` schedule meets it exactly at the default blocks).

    Equal DP-4 count is the default budget (``dps`` DP-4 units for every design; 8 = one Volta
    octet).  Equal area: pass ``area`` (each design's measured area at that ``dps`` and those
    blocks); the model then replicates each datapath linearly [A] and compares cycles × area.

The traffic model (words; × ``word_bytes`` for bytes)
    ``input`` N·C·HW² (each pixel read once: a line buffer in front of the ITF), ``output``
    N·K·HW², ``filters`` the resident filter store -- 9·K·C raw (direct) or (m+2)²·K·C
    transformed (16KC / 36KC, the FTF offline), ``input_requests`` / ``filter_requests`` what
    the units' request payloads carry as built (input tiles of (m+2)², over-fetched
    (m+2)²/m² and re-sent per K block; every request's filters), ``transformed_input`` /
    ``transformed_output`` Î and Ô of the whole layer (a non-fused pipeline's workspace), and
    ``nonfused_pass`` = input + Î + Ô + output, the words the ITF and OTF passes of a non-fused
    pipeline move (the paper's (1 + 2.25)·2·NCHW for F(4,3) at K = C and even maps).

The paper's analytic forms (§3.3, §4.3, §8.1)
    :func:`gemm_intensity` bk·bn·2 ops over (bk + bn) words per reduction step (FP32:
    bk·bn/(2(bk + bn)) op/B); :func:`breakeven_k` the K at which T_fused = 2NCHWK·9/(2.25·F)
    equals T_nonfused = 2NCHWK·9/(4·F) + NCHW·6.5·4 B/BW, i.e. K* = 26·F/(3.5·BW).
"""
from __future__ import annotations

import dataclasses

from . import model, paper
from .params import DirectConvParams, WinoConvParams

__all__ = ["DESIGNS", "DPS", "BLOCK", "LAYERS", "tiles", "waste", "multiplies", "unit_params",
           "layer_cycles", "direct_ideal_cycles", "traffic", "gemm_intensity",
           "tile_intensity", "layer_intensity", "itf_adds_per_mac", "breakeven_k",
           "paper_times", "nonfused_cycles", "fused_vs_nonfused", "compare", "table",
           "m_tradeoff"]

#: the designs of the model: direct (direct_conv3x3, m = 2 tiles), fused F(2,3), fused F(4,3)
DESIGNS = ("direct", "f23", "f43")
_M = {"direct": 2, "f23": 2, "f43": 4}
#: the default budget: 8 DP-4 units (one Volta octet's) for every design
DPS = 8
#: the default request block (C_blk, K_blk): the tile datapaths' largest C and K
BLOCK = (64, 16)
#: ResNet's 3×3 layers (paper Table 1)
LAYERS = paper.RESNET_LAYERS
_FLOP_PER_DP4 = 8                       # 4 multiply-adds per cycle
_TAPS = 9                               # 3×3


def _layer(layer) -> dict:
    if isinstance(layer, str):
        for ly in LAYERS:
            if ly["name"] == layer:
                return ly
        raise ValueError(f"layers: no layer {layer!r} (known: "
                         f"{', '.join(ly['name'] for ly in LAYERS)})")
    return layer


def _design(design: str) -> str:
    if design not in DESIGNS:
        raise ValueError(f"layers: design must be one of {', '.join(DESIGNS)}, got {design!r}")
    return design


def tiles(hw: int, m: int) -> int:
    """Output tiles per side, ⌈HW/m⌉."""
    return -(-hw // m)


def waste(hw: int, m: int) -> float:
    """Outputs computed per output kept: (T·m)²/HW² (Conv5, 7×7, m = 2 or 4: 64/49)."""
    return (tiles(hw, m) * m) ** 2 / hw ** 2


def multiplies(layer, N: int, design: str) -> int:
    """Multiplies per layer: direct 9·N·K·C·HW² (no tile waste); F(m,3) N·K·C·T²·(m+2)²
    (model.op_counts' (m+2)² per tile per (c, k), over every computed tile)."""
    ly, design = _layer(layer), _design(design)
    if design == "direct":
        return _TAPS * N * ly["K"] * ly["C"] * ly["HW"] ** 2
    m = _M[design]
    return N * ly["K"] * ly["C"] * tiles(ly["HW"], m) ** 2 * model.op_counts(m)["ewmm_muls"]


def unit_params(design: str, C: int, K: int, dps: int = DPS, mode: str = "fp32"):
    """The unit that runs one request of ``design``: DirectConvParams (m = 2) or
    WinoConvParams (m = 2, 4) at C, K, dps (ParamError outside the units' ranges)."""
    design = _design(design)
    cls = DirectConvParams if design == "direct" else WinoConvParams
    return cls(m=_M[design], mode=mode, C=C, K=K, dps=dps)


def _blocks(total: int, blk: int) -> list[tuple[int, int]]:
    """[(block size, count)]: full blocks and the remainder."""
    out = [(blk, total // blk)] if total >= blk else []
    if total % blk:
        out.append((total % blk, 1))
    return out


def _request(p, overlap: bool) -> tuple[int, int]:
    """(interval, DP-4 busy cycles) of one request; ``overlap``: wino_conv's overlapped
    datapath as built (``overlap=true``, C blocks accumulated in Ô: ``accumulate=true``),
    whose interval is max(C, EWMM, K)."""
    ewmm = p.groups * p.chunks
    if isinstance(p, WinoConvParams) and overlap:
        return dataclasses.replace(p, overlap=True, accumulate=True).interval, ewmm
    return p.interval, ewmm


def layer_cycles(layer, N: int, design: str, *, dps: int = DPS, block=BLOCK,
                 overlap: bool = False, mode: str = "fp32", detail: bool = False):
    """Cycles of one layer on ``design``'s datapath (module docstring): N·T² positions × Σ
    over the (C, K) blocks of the unit's interval.  ``detail=True``: a dict with
    ``cycles``, ``positions``, ``requests``, ``dp4_busy`` (cycles the DP-4s compute) and
    ``itf`` (ITF cycles not hidden)."""
    ly, design = _layer(layer), _design(design)
    C_blk, K_blk = block
    pos = N * tiles(ly["HW"], _M[design]) ** 2
    cyc = busy = req = 0
    for cb, nc in _blocks(ly["C"], C_blk):
        for kb, nk in _blocks(ly["K"], K_blk):
            iv, ew = _request(unit_params(design, cb, kb, dps, mode), overlap)
            cyc += nc * nk * iv
            busy += nc * nk * ew
            req += nc * nk
    out = {"cycles": pos * cyc, "positions": pos, "requests": pos * req,
           "dp4_busy": pos * busy, "itf": pos * (cyc - busy)}
    return out if detail else out["cycles"]


def direct_ideal_cycles(layer, N: int, *, dps: int = DPS) -> int:
    """⌈9·N·K·C·HW² / (4·dps)⌉: direct convolution with every DP-4 lane busy, no tile waste."""
    return -(-multiplies(layer, N, "direct") // (4 * dps))


def traffic(layer, N: int, design: str, *, block=BLOCK, word_bytes: int | None = None) -> dict:
    """Operand traffic of one layer in words (module docstring), or bytes with
    ``word_bytes``: input, output, filters, input_requests, filter_requests and, for the
    Winograd designs, transformed_input, transformed_output, nonfused_pass."""
    ly, design = _layer(layer), _design(design)
    m = _M[design]
    n2 = (m + 2) ** 2
    T2 = tiles(ly["HW"], m) ** 2
    C, K, hw2 = ly["C"], ly["K"], ly["HW"] ** 2
    per_kc = _TAPS if design == "direct" else n2
    nK = -(-K // block[1])
    out = {"input": N * C * hw2, "output": N * K * hw2, "filters": per_kc * K * C,
           "input_requests": N * T2 * C * n2 * nK,
           "filter_requests": N * T2 * K * C * per_kc}
    if design != "direct":
        out["transformed_input"] = N * C * T2 * n2
        out["transformed_output"] = N * K * T2 * n2
        out["nonfused_pass"] = (out["input"] + out["transformed_input"]
                                + out["transformed_output"] + out["output"])
    if word_bytes:
        out = {k: v * word_bytes for k, v in out.items()}
    return out


# -- intensity -----------------------------------------------------------------------------------
def gemm_intensity(bk: int, bn: int, word_bytes: int = 4) -> float:
    """Ops per operand byte of a bk×bn outer-product block: each reduction step reads bk + bn
    words and does bk·bn multiply-adds (2 ops): 2·bk·bn / (word_bytes·(bk + bn)) -- FP32:
    bk·bn/(2(bk + bn)) (paper §3.3: (32, 32) 8, (64, 32) 10.67; §4.3: (8, 8) 2)."""
    return 2 * bk * bn / (word_bytes * (bk + bn))


def tile_intensity(m: int = 2, word_bytes: int = 4) -> float:
    """One (m+2)² element-wise multiply without reuse: (m+2)² multiply-adds (2 ops) over
    2·(m+2)² operands (paper §4.3: F(2,3), FP32: (16·2)/(32·4) = 0.25 op/B)."""
    n2 = model.op_counts(m)["ewmm_muls"]
    return 2 * n2 / (2 * n2 * word_bytes)


def layer_intensity(layer, N: int, design: str, word_bytes: int = 4) -> float:
    """Ops (2 per multiply executed) per byte of the layer's compulsory traffic -- the input
    read once, the output written once, the resident filters read once (9KC raw or the
    (m+2)²KC transformed): a roofline intensity of the whole layer."""
    t = traffic(layer, N, design)
    return 2 * multiplies(layer, N, design) / (word_bytes * (t["input"] + t["output"]
                                                             + t["filters"]))


def itf_adds_per_mac(m: int = 2, bk: int = 64) -> float:
    """ITF adds per element-wise multiply-add when one transformed input tile serves bk
    filters: itf_adds / ((m+2)²·bk) (paper §4.2: 32 / 1024 at bk = 64; wino_conv's request:
    bk = its K)."""
    c = model.op_counts(m)
    return c["itf_adds"] / (c["ewmm_muls"] * bk)


# -- fused vs non-fused (§8.1) -------------------------------------------------------------------
def _mult_saving(m_fused: int = 2, m_nonfused: int = 4) -> float:
    """1/r_fused − 1/r_nonfused, r = direct / Winograd multiplies (2.25, 4)."""
    r = {m: model.op_counts(m)["direct_muls"] / model.op_counts(m)["ewmm_muls"]
         for m in (m_fused, m_nonfused)}
    return 1 / r[m_fused] - 1 / r[m_nonfused]


def breakeven_k(flops: float, bw: float, word_bytes: int = 4,
                traffic_words: float = paper.NONFUSED_TRAFFIC_WORDS) -> float:
    """The paper's break-even filter count (§8.1): T_fused = 2·NCHW·K·9/(2.25·F) equals
    T_nonfused = 2·NCHW·K·9/(4·F) + NCHW·traffic_words·word_bytes/BW at
    K* = traffic_words·word_bytes·F / (2·9·(1/2.25 − 1/4)·BW) = 26·F/(3.5·BW) for FP32
    (≈ 7.43 × the machine balance F/BW).  F and BW in any consistent units (FLOP/s and B/s,
    or FLOP/cycle and B/cycle)."""
    return traffic_words * word_bytes * flops / (2 * _TAPS * _mult_saving() * bw)


def paper_times(layer, N: int, flops: float, bw: float, word_bytes: int = 4) -> dict:
    """The paper's §8.1 times (seconds; no tile waste, K = C assumed by the traffic term):
    ``fused`` 2NCHWKRS/(2.25·F), ``nonfused`` 2NCHWKRS/(4·F) + NCHW·6.5·word_bytes/BW."""
    ly = _layer(layer)
    nchw = N * ly["C"] * ly["HW"] ** 2
    flop = 2 * nchw * ly["K"] * _TAPS
    r = {m: model.op_counts(m)["direct_muls"] / model.op_counts(m)["ewmm_muls"] for m in (2, 4)}
    return {"fused": flop / (r[2] * flops),
            "nonfused": flop / (r[4] * flops)
            + nchw * paper.NONFUSED_TRAFFIC_WORDS * word_bytes / bw}


def nonfused_cycles(layer, N: int, *, bytes_per_cycle: float, dps: int = DPS, block=BLOCK,
                    word_bytes: int = 4, mode: str = "fp32") -> float:
    """Non-fused F(4,3) on our datapath: the F(4,3) EWMM schedule (wino_conv m = 4 without its
    ITF: the transforms are separate passes) + the ITF and OTF passes' traffic
    (``nonfused_pass``: input, Î, Ô, output, tile waste included) through a memory port of
    ``bytes_per_cycle``, serially -- the paper's assumptions (the GEMM's own operand traffic
    hidden under its compute, the transform passes memory-bound)."""
    d = layer_cycles(layer, N, "f43", dps=dps, block=block, mode=mode, detail=True)
    t = traffic(layer, N, "f43", block=block, word_bytes=word_bytes)
    return d["dp4_busy"] + t["nonfused_pass"] / bytes_per_cycle


def fused_vs_nonfused(layer, N: int, *, balance: float, dps: int = DPS, block=BLOCK,
                      overlap: bool = True, word_bytes: int = 4, mode: str = "fp32") -> dict:
    """Fused F(2,3) (wino_conv m = 2, everything on chip) against non-fused F(4,3)
    (:func:`nonfused_cycles`) on ``dps`` DP-4s (8·dps FLOP/cycle) fed at a machine
    ``balance`` (FLOP per byte; V100: 15.7 T / 900 GB/s = 17.4): cycles of both,
    ``fused_speed`` = nonfused / fused (< 1: fused is slower) and our datapath's
    :func:`breakeven_k`."""
    bpc = _FLOP_PER_DP4 * dps / balance
    f = layer_cycles(layer, N, "f23", dps=dps, block=block, overlap=overlap, mode=mode)
    nf = nonfused_cycles(layer, N, bytes_per_cycle=bpc, dps=dps, block=block,
                         word_bytes=word_bytes, mode=mode)
    return {"fused": f, "nonfused": nf, "fused_speed": nf / f, "bytes_per_cycle": bpc,
            "breakeven_k": breakeven_k(_FLOP_PER_DP4 * dps, bpc, word_bytes)}


# -- the per-layer table -------------------------------------------------------------------------
def compare(layer, N: int, *, dps: int = DPS, block=BLOCK, overlap: bool = False,
            mode: str = "fp32", area: dict | None = None) -> dict:
    """One layer at batch N: cycles of direct / f23 / f43 (and direct_ideal), speedups over
    direct, the winner, and with ``area`` ({design: area at this dps and block}) the cycles
    at equal area (× area / area of direct: linear replication [A]) and that winner."""
    ly = _layer(layer)
    cyc = {d: layer_cycles(ly, N, d, dps=dps, block=block, overlap=overlap, mode=mode)
           for d in DESIGNS}
    ideal = direct_ideal_cycles(ly, N, dps=dps)
    out = {"layer": ly["name"], "N": N, "cycles": cyc, "direct_ideal": ideal,
           "speedup": {d: cyc["direct"] / cyc[d] for d in DESIGNS},
           "speedup_vs_ideal": {d: ideal / cyc[d] for d in DESIGNS},
           "winner": min(DESIGNS, key=lambda d: cyc[d])}
    if area is not None:
        eq = {d: cyc[d] * area[d] / area["direct"] for d in DESIGNS}
        out["equal_area_cycles"] = eq
        out["equal_area_winner"] = min(DESIGNS, key=lambda d: eq[d])
    return out


def table(*, dps: int = DPS, block=BLOCK, overlap: bool = False, mode: str = "fp32",
          area: dict | None = None, batches=paper.BATCHES) -> dict:
    """:func:`compare` over the paper's layers × batches: ``rows`` (list), ``by`` (layer name
    -> N -> row), ``mean_speedup`` per design (mean over the cells of direct / design cycles),
    ``range_speedup`` (min, max) and the winners."""
    rows = [compare(ly, N, dps=dps, block=block, overlap=overlap, mode=mode, area=area)
            for ly in LAYERS for N in batches]
    by: dict = {}
    for r in rows:
        by.setdefault(r["layer"], {})[r["N"]] = r
    sp = {d: [r["speedup"][d] for r in rows] for d in DESIGNS}
    spi = {d: [r["speedup_vs_ideal"][d] for r in rows] for d in DESIGNS}
    return {"rows": rows, "by": by,
            "mean_speedup": {d: sum(v) / len(v) for d, v in sp.items()},
            "range_speedup": {d: (min(v), max(v)) for d, v in sp.items()},
            "mean_speedup_vs_ideal": {d: sum(v) / len(v) for d, v in spi.items()},
            "range_speedup_vs_ideal": {d: (min(v), max(v)) for d, v in spi.items()},
            "winners": sorted({r["winner"] for r in rows})}


def m_tradeoff() -> dict:
    """F(2,3) against F(4,3) from the models and the note (the issue's "area and energy saved
    against the error grown"; area and energy wait for the study): per m, multiplies per
    output per (c, k) (direct 9), transform adds per tile (ITF, OTF), the 2-D amplification
    Σ|coefficients| (direct 9), the note's empirical FP32 / FP16 rel-RMS at C = 64 and its
    tolerances."""
    out = {}
    for m in (2, 4):
        c = model.op_counts(m)
        out[f"f{m}3"] = {"muls_per_output": c["ewmm_muls"] / (m * m),
                         "itf_adds": c["itf_adds"], "otf_adds": c["otf_adds"],
                         "amplification": float(model.amplification(m)[1].max()),
                         "rel_rms_fp32": paper.EMPIRICAL[("fp32", m, 64)],
                         "rel_rms_fp16": paper.EMPIRICAL[("fp16", m, 64)],
                         "tolerance_fp32": paper.TOLERANCE[("fp32", m)],
                         "tolerance_fp16": paper.TOLERANCE[("fp16", m)]}
    out["direct"] = {"muls_per_output": float(_TAPS), "amplification": float(_TAPS),
                     "rel_rms_fp32": paper.EMPIRICAL[("direct_fp32", 64)],
                     "rel_rms_fp16": paper.EMPIRICAL[("direct_fp16", 64)]}
    return out
