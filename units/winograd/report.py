"""The Winograd paper's checkable figures computed from the family's models (the claims
ledger's ``source = "model"`` calls): operation counts of the pinned transform networks
(:func:`tcgen.units.winograd.model.op_counts` -- the transform units build one hardware
operator per op of these networks, tb/test_winograd_rtl.py), multiplies per output tile,
transformed-input growth and the element-wise stage's intensity (:func:`figures`); the
paper's FTF network counted and checked; Eq. 1 checked exactly and the golden model's error
measured on a fixed-seed set (:func:`numerics`); and the per-layer throughput / traffic
MODEL of :mod:`tcgen.units.winograd.layers` over the paper's ResNet layers, with the paper's
analytic forms -- intensity, the §8.1 break-even -- and the model-side figures quoted beside
the GPU-only claims (:func:`layer_figures`)."""
from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np

from tcgen.hw import numeric as num

from . import layers, model, paper

__all__ = ["figures", "ftf_counts", "numerics", "layer_figures", "nonfused_proxy",
           "blocking_figures", "storage", "context"]

_FP32_BYTES = 4


def figures() -> dict:
    """{"f23", "f43"}: each {op counts of model.op_counts, "mult_reduction" (direct / Winograd
    multiplies per output tile per (c, k)), "input_growth" (transformed-input words per
    output pixel: (m+2)² / m²), "ewmm_intensity" (FP32 ops per operand byte of one (m+2)²
    element-wise multiply without reuse: 2·(m+2)² / (2·(m+2)²·4 B)), "filter_words" (the
    transformed filter words per (k, c): (m+2)²), "raw_filter_words" (9),
    "itf_pressure_pct" (ITF adds per element-wise multiply-add at the paper's bk = 64, in
    %)}; "ftf" (:func:`ftf_counts`); "intensity" (the GEMM-block intensities of §3.3 / §4.3,
    FP32 op/B: "bk32", "bk64", "bk64_ratio", "thread_gemm"); "breakeven" (the §8.1 K* of
    V100 and the RTX2070's clock range); "workspace_mb" (16·K·C FP32 words per layer, MiB)."""
    out = {}
    for m, key in ((2, "f23"), (4, "f43")):
        c = model.op_counts(m)
        lanes = (m + 2) ** 2
        out[key] = {**c, "mult_reduction": c["direct_muls"] / c["ewmm_muls"],
                    "input_growth": lanes / (m * m),
                    "ewmm_intensity": 2 * lanes / (2 * lanes * _FP32_BYTES),
                    "filter_words": lanes, "raw_filter_words": 9,
                    "itf_pressure_pct": 100 * layers.itf_adds_per_mac(m, 64)}
    out["ftf"] = ftf_counts()
    bk32, bk64 = (layers.gemm_intensity(*paper.BLOCKING[k][:2]) for k in ("cudnn", "paper"))
    out["intensity"] = {"bk32": bk32, "bk64": bk64, "bk64_ratio": bk64 / bk32,
                        "thread_gemm": layers.gemm_intensity(*paper.THREAD_GEMM)}
    v, r = paper.GPUS["V100"], paper.GPUS["RTX2070"]
    out["breakeven"] = {"V100": layers.breakeven_k(v["flops"], v["bw"]),
                        "RTX2070": tuple(layers.breakeven_k(f, r["bw"]) for f in r["flops"])}
    out["workspace_mb"] = {ly["name"]: out["f23"]["filter_words"] * ly["K"] * ly["C"]
                           * _FP32_BYTES / 2 ** 20 for ly in layers.LAYERS}
    return out


# -- the filter transform: the paper's network and ours ------------------------------------------
def _run_paper_ftf(x):
    """The paper's FTF network (paper.FTF_NETWORK_PAPER) on one vector of 3 Fractions."""
    body, outs = paper.FTF_NETWORK_PAPER
    env = {f"x{i}": v for i, v in enumerate(x)}
    env["h"] = Fraction(1, 2)
    for dst, op, args in body:
        a = [(-env[s[1:]]) if s.startswith("-") else env[s] for s in args]
        env[dst] = {"add": lambda p, q: p + q, "mul": lambda p, q: p * q,
                    "fma": lambda p, q, s: p * q + s}[op](*a)
    return [env[o] for o in outs]


def _paper_ftf_2d(g):
    """Column pass then row pass of the paper's network on a 3×3 filter (Fractions)."""
    cols = [_run_paper_ftf([g[i][j] for i in range(3)]) for j in range(3)]     # t = G g
    t = [[cols[j][i] for j in range(3)] for i in range(4)]
    return [_run_paper_ftf(t[i]) for i in range(4)]                            # t Gᵀ


def ftf_counts() -> dict:
    """The F(2,3) filter transform counted two ways, and the paper's network checked.

    ``paper_*``: the note's reconstruction of the paper's FTF (paper.FTF_NETWORK_PAPER: per
    1-D vector t = g0 + g2, h = ½g1, FFMA(½, t, ±h)), counted as GPU instructions (FADD,
    FMUL, FFMA one each) over its 3 column + 4 row vectors; ``paper_exact`` is 1 when that
    network computes G g Gᵀ exactly on all 9 one-hot filters (it is linear, so that is every
    filter).  ``ours_*``: the pinned network wino_ftf builds (model.networks(2)["ftf"]):
    ``ours_adds`` FP adders, ``ours_halvings`` ×½ (an exponent decrement with a rounding step
    for subnormal results -- no adder), ``ours_ops`` both."""
    body, _ = paper.FTF_NETWORK_PAPER
    c = model.op_counts(2)
    vectors = c["ftf_vectors"]
    G = [[Fraction(v) for v in row] for row in paper.G[2]]
    ok = True
    for k in range(9):
        g = [[Fraction(int(3 * i + j == k)) for j in range(3)] for i in range(3)]
        want = [[sum(G[i][a] * g[a][b] * G[j][b] for a in range(3) for b in range(3))
                 for j in range(4)] for i in range(4)]
        ok &= _paper_ftf_2d(g) == want
    kinds = [op for _, op, _ in body]
    ours_body, _ = model.networks(2)["ftf"]
    return {"vectors": vectors,
            "paper_per_vector": len(body), "paper_instructions": vectors * len(body),
            "paper_adds": vectors * sum(k in ("add", "fma") for k in kinds),
            "paper_muls": vectors * sum(k in ("mul", "fma") for k in kinds),
            "paper_exact": int(ok),
            "ours_per_vector": len(ours_body), "ours_adds": c["ftf_adds"],
            "ours_halvings": c["ftf_halvings"], "ours_ops": c["ftf_adds"] + c["ftf_halvings"]}


# -- Eq. 1 and the golden model's error ----------------------------------------------------------
def _eq1_mismatches(m: int) -> int:
    """Outputs where Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A with the printed matrices (paper.BT / G / AT)
    differs from the direct correlation of d with g, over every pair of one-hot d ((m+2)² of
    them) and one-hot g (9).  Exact: G is scaled by s, the least common denominator of its
    entries (2, 24), so both sides are integers and the left one is s² times the right one.
    Both sides are bilinear in (d, g), so 0 proves the identity for every input."""
    s = math.lcm(*(Fraction(v).denominator for r in paper.G[m] for v in r))
    BT, AT = (np.array(M[m], dtype=np.int64) for M in (paper.BT, paper.AT))
    Gs = np.array([[int(Fraction(v) * s) for v in r] for r in paper.G[m]], dtype=np.int64)
    n = m + 2
    D = np.eye(n * n, dtype=np.int64).reshape(n * n, n, n)
    W = np.eye(9, dtype=np.int64).reshape(9, 3, 3)
    Ih = np.einsum("ia,pab,jb->pij", BT, D, BT)
    Fh = np.einsum("ia,qab,jb->qij", Gs, W, Gs)
    O = np.einsum("ia,pqab,jb->pqij", AT, Ih[:, None] * Fh[None], AT)
    win = np.lib.stride_tricks.sliding_window_view(D, (3, 3), axis=(1, 2))    # [p, m, m, 3, 3]
    ref = np.einsum("pijrs,qrs->pqij", win, W)
    return int(np.sum(O != s * s * ref))


def numerics(seed: int = 2020, hw: int = 16) -> dict:
    """Eq. 1 and the golden model on a fixed-seed set (< 2 s):

    ``eq1_mismatches`` {2, 4}: :func:`_eq1_mismatches` (0: the printed matrices are exact);
    ``ref64_rel_rms``: the float64 matrix form (model.winograd_ref64) against float64 direct
    convolution; ``window``: FP32 F(2,3) (model.winograd_conv) on integers |x| ≤ 8, C = 64
    (81·r²·C < 2^22) against model.direct_conv_exact -- ``window_mismatches`` outputs that
    differ (0: bit-exact), and F(4,3)'s (never exact; informational); ``rel_rms`` (mode, m):
    the note's setup (N = 1, C = 64, K = 8, N(0, 1) data, He filters, against float64 direct
    convolution of the unrounded data) on an ``hw``×``hw`` output (16, not the note's 24:
    under a second) with ``tolerance`` paper.TOLERANCE and the note's ``empirical``;
    ``bound_ratio`` (mode, m): max |O − O_ref| / model.error_bound on the rounded inputs; ``failures``: eq1 mismatches + F(2,3) window mismatches + rel-RMS
    above tolerance + bound ratios above 1."""
    rng = np.random.default_rng(seed)
    out = {"seed": seed, "hw": hw,
           "eq1_mismatches": {m: _eq1_mismatches(m) for m in model.TILES}}
    S, C = paper.EMPIRICAL_SETUP, 64
    I = rng.normal(0.0, 1.0, (S["N"], C, hw, hw))
    F = rng.normal(0.0, math.sqrt(2.0 / (9 * C)), (S["K"], C, 3, 3))
    ref = model.direct_conv(I, F, S["pad"])
    out["ref64_rel_rms"] = model.rel_rms(model.winograd_ref64(I, F, 2, S["pad"]), ref)
    # the exactness window
    r, Cw = paper.WINDOW_VERIFIED[0]
    Ii = rng.integers(-r, r + 1, (1, Cw, 8, 8))
    Fi = rng.integers(-r, r + 1, (4, Cw, 3, 3))
    exact = model.direct_conv_exact(Ii, Fi).astype(np.float64)
    win = {}
    for m in model.TILES:
        got = model.decode_output(model.winograd_conv(model.encode_input(Ii, "fp32"),
                                                      model.encode_input(Fi, "fp32"), m,
                                                      "fp32"), "fp32")
        win[m] = int(np.sum(got != exact))
    out["window"] = {"r": r, "C": Cw, "limit_ok": 81 * r * r * Cw < paper.WINDOW_LIMIT,
                     "mismatches": win, "outputs": int(exact.size)}
    out["window_mismatches"] = win[2]
    rel, ratio = {}, {}
    for mode in ("fp32", "fp16"):
        dfmt = model.formats(mode)["data"]
        Ib, Fb = model.encode_input(I, mode), model.encode_input(F, mode)
        ref_r = model.direct_conv(num.to_float(Ib, dfmt), num.to_float(Fb, dfmt), S["pad"])
        for m in model.TILES:
            got = model.decode_output(model.winograd_conv(Ib, Fb, m, mode, S["pad"]), mode)
            rel[f"{mode}_f{m}3"] = model.rel_rms(got, ref)
            bound = model.error_bound(Ib, Fb, m, mode, S["pad"])
            ratio[f"{mode}_f{m}3"] = float(np.max(np.abs(got - ref_r) / bound))
    out["rel_rms"] = rel
    out["tolerance"] = {f"{mo}_f{m}3": paper.TOLERANCE[(mo, m)] for mo in ("fp32", "fp16")
                        for m in model.TILES}
    out["empirical"] = {f"{mo}_f{m}3": paper.EMPIRICAL[(mo, m, C)] for mo in ("fp32", "fp16")
                        for m in model.TILES}
    out["bound_ratio"] = ratio
    out["failures"] = (sum(out["eq1_mismatches"].values()) + win[2]
                       + (not out["window"]["limit_ok"])
                       + sum(rel[k] > out["tolerance"][k] for k in rel)
                       + sum(v > 1 for v in ratio.values()))
    return out


# -- the per-layer model -------------------------------------------------------------------------
def layer_figures(dps: int = layers.DPS, C_blk: int = layers.BLOCK[0],
                  K_blk: int = layers.BLOCK[1]) -> dict:
    """The per-layer MODEL (:mod:`tcgen.units.winograd.layers`) at ``dps`` DP-4s per design
    and request blocks (C_blk, K_blk), over the paper's layers × N = 32..128:

    ``table`` / ``table_overlap``: cycles, speedups over direct and the winners, the ITF as
    built (not overlapped) and hidden under the EWMM; ``intensity_ratio``: layer intensity
    (2 ops per multiply executed per byte of compulsory FP32 traffic) of direct over fused
    F(2,3), ``mean`` / ``min`` / ``max`` over the 16 cells and ``input_only`` (the input's
    bytes alone: 2.25 for even maps); ``conv5``: fused F(2,3) (ITF hidden, the most
    favourable case) against non-fused F(4,3) on Conv5 at V100's machine balance
    (layers.fused_vs_nonfused), ``fused_speed`` per N and ``fused_speed_max``; ``fused_speed``
    per layer (N = 32) as built and ITF hidden, and the paper's own formula; ``breakeven``
    K* on our datapath (8·dps FLOP/cycle) for memory ports of 4, 8, 16 B/cycle (FP32);
    ``fused_time``: direct_conv3x3's layer cycles over wino_conv F(2,3)'s (``overlap``: the
    overlapped datapath, ``first``: the first one), per layer and ``min``;
    ``mainloop``: the DP-4s' busy share of the F(2,3) EWMM over one request (as built and
    hidden); ``bk``: the blocking proxies -- ITF pressure at bk 32 / 64 and the compute-bound
    (1 + 2/32)/(1 + 2/64) and memory-bound (intensity) gains of bk = 64, and our datapath's
    cycles at K_blk 8 against 16."""
    block = (C_blk, K_blk)
    kw = dict(dps=dps, block=block)
    tab = layers.table(**kw)
    tab_o = layers.table(overlap=True, **kw)
    cells = [(ly, N) for ly in layers.LAYERS for N in paper.BATCHES]
    ir = [layers.layer_intensity(ly, N, "direct") / layers.layer_intensity(ly, N, "f23")
          for ly, N in cells]
    inp = {ly["name"]: layers.multiplies(ly, 1, "direct") / layers.multiplies(ly, 1, "f23")
           for ly in layers.LAYERS}
    v = paper.GPUS["V100"]
    bal = v["flops"] / v["bw"]
    conv5 = {N: layers.fused_vs_nonfused("Conv5", N, balance=bal, **kw)["fused_speed"]
             for N in paper.BATCHES}
    per_layer = {}
    for ly in layers.LAYERS:
        pt = layers.paper_times(ly, 32, v["flops"], v["bw"])
        per_layer[ly["name"]] = {
            "hidden": layers.fused_vs_nonfused(ly, 32, balance=bal, **kw)["fused_speed"],
            "as_built": layers.fused_vs_nonfused(ly, 32, balance=bal, overlap=False,
                                                 **kw)["fused_speed"],
            "paper_formula": pt["nonfused"] / pt["fused"],
            "heatmap_v100": paper.HEATMAP_V100["WINOGRAD_NONFUSED"][ly["name"]]}
    flop = 8 * dps
    p = layers.unit_params("f23", C_blk, K_blk, dps)
    ewmm = p.groups * p.chunks
    pr = {bk: layers.itf_adds_per_mac(2, bk) for bk in (32, 64)}
    k8 = layers.layer_cycles("Conv5", 32, "f23", dps=dps, block=(C_blk, 8))
    k16 = layers.layer_cycles("Conv5", 32, "f23", dps=dps, block=(C_blk, 16))
    return {
        "dps": dps, "block": block,
        "table": _summary(tab), "table_overlap": _summary(tab_o),
        "intensity_ratio": {"mean": sum(ir) / len(ir), "min": min(ir), "max": max(ir),
                            "input_only": inp},
        "conv5": {"fused_speed": conv5, "fused_speed_max": max(conv5.values()),
                  "balance": bal},
        "fused_speed": per_layer,
        "breakeven": {"v100": layers.breakeven_k(v["flops"], v["bw"]),
                      **{f"ours_{b}B": layers.breakeven_k(flop, b) for b in (4, 8, 16)}},
        # §8.1's fused F(2,3) time with the transforms in (claim winograd-fused-time-f23):
        # direct_conv3x3's layer cycles over wino_conv F(2,3)'s at equal DP-4 count, the
        # overlapped datapath (overlap=true, RTL-checked interval) and the first one (N = 32;
        # N cancels), per layer and the smallest
        "fused_time": {
            kind: {**{ly: t["by"][ly][32]["speedup"]["f23"] for ly in t["by"]},
                   "min": min(t["by"][ly][32]["speedup"]["f23"] for ly in t["by"])}
            for kind, t in (("overlap", tab_o), ("first", tab))},
        "mainloop": {"as_built": ewmm / p.interval,       # hidden: overlap=true as built
                     "hidden": ewmm / dataclasses.replace(p, overlap=True).interval},
        "bk": {"itf_pressure": pr,
               "compute_bound_gain": (1 + pr[32]) / (1 + pr[64]),
               "memory_bound_gain": layers.gemm_intensity(64, 32) / layers.gemm_intensity(32, 32),
               "ours_kblk8_over_16": k8 / k16},
    }


def _summary(tab: dict) -> dict:
    """A table's means, ranges and winners, and per layer the speedups at N = 32 (the model's
    speedups do not depend on N: every term is proportional to it)."""
    return {"mean_speedup": tab["mean_speedup"], "range_speedup": tab["range_speedup"],
            "mean_speedup_vs_ideal": tab["mean_speedup_vs_ideal"],
            "range_speedup_vs_ideal": tab["range_speedup_vs_ideal"],
            "winners": tab["winners"],
            "by_layer": {name: {"speedup_vs_ideal": rows[32]["speedup_vs_ideal"],
                                "winner": rows[32]["winner"]}
                         for name, rows in tab["by"].items()}}


def storage(m: int = 2, mode: str = "fp32", C: int = 8, K: int = 4) -> dict:
    """Bits of what each tile datapath holds or reads per request (``params.bits``): the
    request's input tiles (the same for both), its filters (Winograd: K·C·(m+2)² transformed
    words; direct: K·C·9 raw), and the register banks inside ``wino_conv`` (Î: C·(m+2)²,
    Ô: K·(m+2)²) and ``direct_conv3x3`` (its output bank: K·m²), plus the result register
    (K·m² output words, both)."""
    from .params import DirectConvParams, WinoConvParams
    w = WinoConvParams(m=m, mode=mode, C=C, K=K)
    d = DirectConvParams(m=m, mode=mode, C=C, K=K)
    n = (m + 2) ** 2
    return {"tiles": C * n * w.bits("data"),
            "wino_filters": K * C * n * w.bits("filter"),
            "direct_filters": K * C * 9 * d.bits("weight"),
            "wino_ihat": C * n * w.bits("transform"), "wino_ohat": K * n * w.bits("acc"),
            "direct_bank": K * m * m * d.bits("acc"), "result": K * m * m * w.bits("output")}


def context() -> dict:
    """Names the study template (studies/winograd_ppa.md.j2) shows beside the sweep's rows:
    ``fig`` (:func:`figures`), ``cycles`` ((m, design) -> (cycles, interval) per tile at the
    study's C = 8, K = 4 and dps), ``storage`` ((m, mode) -> :func:`storage`), ``widths``
    (mode int: m -> model.int_widths at INT8, C = 8), ``layers`` (:func:`layer_figures`),
    ``k16`` (cycles per tile at K = 16), ``layer_at`` (layer -> design -> cycles of ResNet's
    layer at N = 32 on the study's units: C 8 / K 4 requests, 4 DP-4s for F(2,3) and F(4,3), 9
    for direct; the template multiplies them by the measured areas), ``layer_at_overlap`` (the
    same for the first and overlapped F(2,3) / F(4,3) datapaths and direct:
    studies/winograd_overlap.md.j2)."""
    from .params import DirectConvParams, WinoConvParams
    cyc = {}
    for m, dw, dd in ((2, 4, 9), (4, 4, 16)):
        w, d = WinoConvParams(m=m, dps=dw), DirectConvParams(m=m, dps=dd)
        cyc[(m, "wino")] = (w.cycles, w.interval)
        cyc[(m, "direct")] = (d.cycles, d.interval)
    k16 = {"wino": WinoConvParams(K=16).interval, "direct": DirectConvParams(K=16, dps=9).interval}
    # per layer at N = 32, the study's request block (C 8, K 4) and DP-4 counts (F(2,3) and
    # F(4,3): 4, direct: 9): cycles per batch for the area x time table of the template
    at = {ly["name"]: {d: layers.layer_cycles(ly, 32, d, dps=4 if d != "direct" else 9,
                                               block=(8, 4))
                       for d in layers.DESIGNS} for ly in layers.LAYERS}
    # the same at the overlap study's designs (studies/winograd_overlap.toml): the first and
    # the overlapped F(2,3) / F(4,3) datapaths on 4 DP-4s (overlap: Ô accumulated over the C
    # blocks, interval max(C, EWMM, K)), direct on 9 (the template's area reference)
    at_ov = {ly["name"]: {
        "f23_first": layers.layer_cycles(ly, 32, "f23", dps=4, block=(8, 4)),
        "f23_overlap": layers.layer_cycles(ly, 32, "f23", dps=4, block=(8, 4), overlap=True),
        "f43_first": layers.layer_cycles(ly, 32, "f43", dps=4, block=(8, 4)),
        "f43_overlap": layers.layer_cycles(ly, 32, "f43", dps=4, block=(8, 4), overlap=True),
        "direct": layers.layer_cycles(ly, 32, "direct", dps=9, block=(8, 4))}
        for ly in layers.LAYERS}
    return {"fig": figures(), "cycles": cyc, "k16": k16, "layer_at": at,
            "layer_at_overlap": at_ov,
            "storage": {(m, mode): storage(m, mode) for m in (2, 4)
                        for mode in ("fp32", "fp16", "int")},
            "widths": {m: model.int_widths(m, 8, 8, 8) for m in (2, 4)},
            "layers": layer_figures()}


# -- the fused / non-fused proxy over every layer (issue 39: the sibling rule) ------------------
def nonfused_proxy(dps: int = layers.DPS, C_blk: int = layers.BLOCK[0],
                   K_blk: int = layers.BLOCK[1]) -> dict:
    """The cycle-model proxy of the paper's fused-against-non-fused observations (§7.3 obs.
    3–6, §8.1), one entry per ResNet layer: ``fused_speed`` (non-fused F(4,3) cycles over fused
    F(2,3) cycles, :func:`layers.fused_vs_nonfused`; > 1: fused is faster) with the ITF hidden
    (``hidden``, the case the ledger judges) and as built (``as_built``), at V100's machine
    balance and at RTX2070's (``rtx2070_lo`` / ``rtx2070_hi``: 1.62 / 1.71 GHz), its
    ``min_over_n`` / ``max_over_n`` over N = 32..128 (equal: N cancels), the paper's own §8.1
    formula (``paper_formula``); and the DRAM words of the layer at N = 32 (``traffic``):
    ``fused`` (input read once, output written once, the 16KC transformed filters),
    ``fused_gpu`` (the input read K/bk times, bk = 64, as the paper's kernel does),
    ``nonfused`` (the ITF and OTF passes -- input, Î, Ô, output -- and the 36KC filters: the
    paper's §8.1 accounting, the GEMM's own reads of Î and writes of Ô not counted), and
    ``ratio`` / ``ratio_gpu`` (non-fused over fused)."""
    block = (C_blk, K_blk)
    kw = dict(dps=dps, block=block)
    v, r = paper.GPUS["V100"], paper.GPUS["RTX2070"]
    bal = v["flops"] / v["bw"]
    bal_r = tuple(f / r["bw"] for f in r["flops"])
    bk = paper.BLOCKING["paper"][0]
    out = {"balance": {"V100": bal, "RTX2070": bal_r}}
    for ly in layers.LAYERS:
        over_n = [layers.fused_vs_nonfused(ly, N, balance=bal, **kw)["fused_speed"]
                  for N in paper.BATCHES]
        pt = layers.paper_times(ly, 32, v["flops"], v["bw"])
        t23 = layers.traffic(ly, 32, "f23")
        t43 = layers.traffic(ly, 32, "f43")
        fused = t23["input"] + t23["output"] + t23["filters"]
        fused_gpu = t23["input"] * -(-ly["K"] // bk) + t23["output"] + t23["filters"]
        nonfused = t43["nonfused_pass"] + t43["filters"]
        out[ly["name"]] = {
            "hidden": layers.fused_vs_nonfused(ly, 32, balance=bal, **kw)["fused_speed"],
            "as_built": layers.fused_vs_nonfused(ly, 32, balance=bal, overlap=False,
                                                 **kw)["fused_speed"],
            "rtx2070_lo": layers.fused_vs_nonfused(ly, 32, balance=bal_r[0],
                                                   **kw)["fused_speed"],
            "rtx2070_hi": layers.fused_vs_nonfused(ly, 32, balance=bal_r[1],
                                                   **kw)["fused_speed"],
            "min_over_n": min(over_n), "max_over_n": max(over_n),
            "paper_formula": pt["nonfused"] / pt["fused"],
            "traffic": {"fused": fused, "fused_gpu": fused_gpu, "nonfused": nonfused,
                        "ratio": nonfused / fused, "ratio_gpu": nonfused / fused_gpu}}
    return out


def blocking_figures() -> dict:
    """§3.3's blocking arithmetic: the input is loaded and transformed ⌈K/bk⌉ times per layer;
    per ResNet layer those passes at the paper's bk = 64 and cuDNN's bk = 32 and their ratio
    (``passes``), its largest over the layers (``passes_ratio_max``), and the ITF adds per
    element-wise multiply-add at each bk (layers.itf_adds_per_mac: 2/bk) and their ratio."""
    bk64, bk32 = paper.BLOCKING["paper"][0], paper.BLOCKING["cudnn"][0]
    passes = {ly["name"]: {"bk64": -(-ly["K"] // bk64), "bk32": -(-ly["K"] // bk32)}
              for ly in layers.LAYERS}
    for v in passes.values():
        v["ratio"] = v["bk64"] / v["bk32"]
    pr = {"bk32": layers.itf_adds_per_mac(2, bk32), "bk64": layers.itf_adds_per_mac(2, bk64)}
    return {"passes": passes, "passes_ratio_max": max(v["ratio"] for v in passes.values()),
            "itf_per_mac": pr, "itf_per_mac_ratio": pr["bk64"] / pr["bk32"]}
