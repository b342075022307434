"""The Winograd EWMM on the Volta octet (issue 42 §1; docs/winograd_octet.md).

Application layer: it joins two families that never import each other -- the Winograd models
(:mod:`tcgen.units.winograd.model`: tiles, transforms, ``ewmm``) and the dense octet
(:mod:`tcgen.units.sparse.model`: ``dense_wmma``, its cycle model; ``octet_dense`` in RTL).
numpy and the two models only (no Amaranth).

The mapping
    The EWMM is (m+2)² independent GEMMs, one per lane ℓ:
    ``Ô_ℓ[K × Q] = F̂_ℓ[K × C] · Î_ℓ[C × Q]`` with Q = N·T_h·T_w columns (image-major tile
    positions).  One octet WMMA computes an 8 × 8 block of D = A·B + C over a 16-wide k-tile,
    so lane ℓ's GEMM is cut into ⌈K/8⌉ × ⌈Q/8⌉ output blocks and ⌈C/16⌉ k-tiles, one request
    each: **A = F̂_ℓ[8 filters × 16 channels]**, **B = Î_ℓ[16 channels × 8 tile positions]**,
    **C = the block's running Ô** (−0 for the first k-tile, then the previous request's D).
    Requests go k-tile-major (then lane, filter block, position block), so a request's C is
    the D of the request L·⌈K/8⌉·⌈Q/8⌉ ≥ 16 before it.  Padding: channels beyond C are
    (A, B) = (+0, −0) -- the model's (F̂, Î) = (+0, −0) padding, product −0; filters beyond K
    and positions beyond Q are +0 / −0 and their outputs are dropped.

Numerics (mode ``fp16``: FP16 transforms, FP16 × FP16 exact in FP32, FP32 accumulation)
    ``dense_wmma`` chains, per output, one DP-4 ``((p0 + p1) + (p2 + p3)) + acc`` per 4-wide
    k-chunk in ascending k, starting from C; across requests the chain continues through C in
    ascending k-tiles.  That is exactly ``model.ewmm``'s order (ascending c, DP-4 chunks, the
    same DP-4, a −0 start), and the extra all-(−0) chunks of the 16-wide k-tile add −0, the
    identity, so **the octet path equals model.ewmm bit for bit** (tested, specials included).
    It would not with the octet's own padding (``dense_wmma`` pads k with +0 · +0 = +0 products)
    or a +0 start: then a lane whose products are all −0 gives +0 where ``ewmm`` gives −0 --
    the sign of a zero, nothing else (:func:`ewmm_octet` ``pad="octet"``, ``start="+0"`` show
    it).  Mode ``fp16acc`` (model only: the RTL octet accumulates in FP32) differs in value:
    Winograd rounds every product to FP16 and then adds in FP16; the octet's FP16 mode rounds
    the exact sum of two exact products (``dp4`` acc="fp16").  Modes ``fp32`` and ``int`` do
    not map: the octet multiplies FP16.

Cycles (:func:`cycles`)
    (m+2)²·⌈K/8⌉·⌈C/16⌉ WMMAs per 8 tile positions, each 40 cycles (34 with ping-pong
    request to result; back to back 40 / 32: with ping-pong the next WMMA's first fill hides
    under the last compute, tb/test_sparse_rtl.py) -- against ``wino_conv``'s interval
    ``max(C, K) + ⌈K·(m+2)²/dps⌉·⌈C/4⌉`` per tile, its ITF included (:func:`wino_conv_cycles`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcgen.hw import numeric as num
from tcgen.units.sparse import model as sm
from tcgen.units.winograd import model as wm
from tcgen.units.winograd.params import WinoConvParams

__all__ = ["ROWS", "COLS", "KTILE", "MODES", "Step", "plan", "operands", "ewmm_octet",
           "assemble", "winograd_conv_octet", "ewmm_exact", "ewmm_bound", "cycles",
           "wino_conv_cycles"]

#: one octet's D share (filters × tile positions) and the WMMA's k-tile (channels)
ROWS, COLS, KTILE = 8, 8, 16
#: Winograd modes the octet can run: fp16 (FP32 accumulation: the RTL's) and fp16acc (the
#: octet model's FP16 accumulation; no RTL)
MODES = {"fp16": "fp32", "fp16acc": "fp16"}
_NEG0_16 = np.uint64(0x8000)


@dataclass(frozen=True)
class Step:
    """One octet request: k-tile ``ct`` of output block (``kb``, ``qb``) of lane ``lane``."""
    ct: int
    lane: int
    kb: int
    qb: int


def _check_mode(mode, who):
    if mode not in MODES:
        raise ValueError(f"{who}: mode must be one of {', '.join(MODES)} (the octet multiplies "
                         f"FP16 operands), got {mode!r}")
    return mode


def _shapes(I_hat, F_hat, who):
    Ih, Fh = np.asarray(I_hat), np.asarray(F_hat)
    if Ih.ndim != 4 or Fh.ndim != 3 or Ih.shape[1] != Fh.shape[1] or Ih.shape[3] != Fh.shape[2]:
        raise ValueError(f"{who}: I_hat must be [N, C, P, L] and F_hat [K, C, L] with equal C "
                         f"and L, got {Ih.shape} and {Fh.shape}")
    for name, x in (("I_hat", Ih), ("F_hat", Fh)):
        if x.dtype.kind not in "ui" or (x.size and int(x.max()) > 0xFFFF):
            raise ValueError(f"{who}: {name} must hold FP16 encodings (unsigned integers)")
    return Ih.astype(np.uint64), Fh.astype(np.uint64)


def plan(C: int, K: int, Q: int, L: int) -> list[Step]:
    """The request order for an EWMM of C channels, K filters, Q columns (N·P tile
    positions), L lanes: k-tile-major, then lane, filter block, position block."""
    for name, v in (("C", C), ("K", K), ("Q", Q), ("L", L)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"plan: {name} must be an integer >= 1, got {v!r}")
    return [Step(ct, lane, kb, qb) for ct in range(-(-C // KTILE)) for lane in range(L)
            for kb in range(-(-K // ROWS)) for qb in range(-(-Q // COLS))]


def operands(I_hat, F_hat, *, pad: str = "model"):
    """Per lane, the padded GEMM operands: A [L, K', C'] (F̂), B [L, C', Q'] (Î) as FP16
    encodings, K' / C' / Q' rounded up to 8 / 16 / 8.  ``pad="model"``: channel padding
    (A, B) = (+0, −0), the model's; ``"octet"``: (+0, +0), dense_wmma's own."""
    Ih, Fh = _shapes(I_hat, F_hat, "operands")
    if pad not in ("model", "octet"):
        raise ValueError(f"operands: pad must be 'model' or 'octet', got {pad!r}")
    N, C, P, L = Ih.shape
    K, Q = Fh.shape[0], N * P
    Kp, Cp, Qp = (-(-K // ROWS) * ROWS, -(-C // KTILE) * KTILE, -(-Q // COLS) * COLS)
    A = np.zeros((L, Kp, Cp), dtype=np.uint64)
    A[:, :K, :C] = Fh.transpose(2, 0, 1)
    B = np.full((L, Cp, Qp), _NEG0_16 if pad == "model" else 0, dtype=np.uint64)
    B[:, :C, :Q] = Ih.transpose(3, 1, 0, 2).reshape(L, C, Q)
    return A, B


def _blocks(A, B, s: Step):
    r, q, k = s.kb * ROWS, s.qb * COLS, s.ct * KTILE
    return A[s.lane, r:r + ROWS, k:k + KTILE], B[s.lane, k:k + KTILE, q:q + COLS]


def ewmm_octet(I_hat, F_hat, mode: str = "fp16", *, pad: str = "model", start: str = "-0",
               trace: list | None = None) -> np.ndarray:
    """``model.ewmm`` through octet WMMAs (``dense_wmma``, the octet's golden model): I_hat
    [N, C, P, L], F_hat [K, C, L] FP16 encodings -> Ô [N, K, P, L] in the accumulation
    format.  ``trace`` (a list) receives one (Step, a, b, c, d) per request, in order: the
    octet requests and their results.  ``pad`` / ``start`` ("−0" / "+0"): the channel
    padding (:func:`operands`) and the accumulator start -- the defaults give ``ewmm``'s
    result bit for bit; the others show where the octet's own conventions differ."""
    mode = _check_mode(mode, "ewmm_octet")
    if start not in ("-0", "+0"):
        raise ValueError(f"ewmm_octet: start must be '-0' or '+0', got {start!r}")
    acc = MODES[mode]
    Ih, Fh = _shapes(I_hat, F_hat, "ewmm_octet")
    N, C, P, L = Ih.shape
    K = Fh.shape[0]
    A, B = operands(Ih, Fh, pad=pad)
    zero = np.uint64(num.get_format(acc).sign_mask if start == "-0" else 0)
    D: dict = {}
    for s in plan(C, K, N * P, L):
        a, b = _blocks(A, B, s)
        key = (s.lane, s.kb, s.qb)
        c = D.get(key, np.full((ROWS, COLS), zero, dtype=np.uint64))
        d = sm.dense_wmma(a, b, c, acc=acc)
        D[key] = d
        if trace is not None:
            trace.append((s, a, b, c, d))
    return _gather(D, N, K, P, L)


def _gather(D, N, K, P, L):
    Kp, Qp = -(-K // ROWS) * ROWS, -(-N * P // COLS) * COLS
    out = np.zeros((L, Kp, Qp), dtype=np.uint64)
    for (lane, kb, qb), d in D.items():
        out[lane, kb * ROWS:kb * ROWS + ROWS, qb * COLS:qb * COLS + COLS] = d
    return out[:, :K, :N * P].reshape(L, K, N, P).transpose(2, 1, 3, 0).copy()


def assemble(steps, results, N: int, K: int, P: int, L: int) -> np.ndarray:
    """Ô [N, K, P, L] from the D [8, 8] of every request (``results`` in the order of
    ``steps``, e.g. what the RTL returned): each block's last k-tile is its Ô."""
    steps, results = list(steps), list(results)
    if len(steps) != len(results):
        raise ValueError(f"assemble: {len(steps)} steps but {len(results)} results")
    last = max(s.ct for s in steps)
    D = {(s.lane, s.kb, s.qb): np.asarray(d, dtype=np.uint64)
         for s, d in zip(steps, results) if s.ct == last}
    if len(D) != L * -(-K // ROWS) * -(-N * P // COLS):
        raise ValueError("assemble: the steps do not cover every output block")
    return _gather(D, N, K, P, L)


def winograd_conv_octet(I, F, m: int = 2, mode: str = "fp16", pad: int = 1, *,
                        trace: dict | None = None) -> np.ndarray:
    """``model.winograd_conv`` with the EWMM on octet WMMAs: the model's tiles, ITF and FTF
    (FP16), :func:`ewmm_octet`, the model's OTF and crop.  I [N, C, H, W] (or [C, H, W]),
    F [K, C, 3, 3] FP16 encodings -> O (accumulation-format encodings).  ``trace`` receives
    ``itf``, ``ftf``, ``ewmm`` (as :func:`ewmm_octet` gives it, [N, K, P, L]) and
    ``requests`` (its trace)."""
    mode = _check_mode(mode, "winograd_conv_octet")
    I, F = np.asarray(I), np.asarray(F)
    single = I.ndim == 3
    if single:
        I = I[None]
    if I.ndim != 4 or F.ndim != 4 or F.shape[1:] != (I.shape[1], 3, 3):
        raise ValueError(f"winograd_conv_octet: I must be [N, C, H, W] and F [K, C, 3, 3], "
                         f"got {I.shape} and {F.shape}")
    N, C, H, W = I.shape
    K = F.shape[0]
    Ho, Wo = H + 2 * pad - 2, W + 2 * pad - 2
    d = wm.tile_input(I, m, pad)                                 # [N, C, Th, Tw, m+2, m+2]
    Th, Tw = d.shape[2:4]
    L = (m + 2) ** 2
    Ih = wm.itf(d, m, mode)
    Fh = wm.ftf(F, m, mode)
    reqs: list = []
    Oh = ewmm_octet(Ih.reshape(N, C, Th * Tw, L), Fh.reshape(K, C, L), mode, trace=reqs)
    O = wm.untile(wm.otf(Oh.reshape(N, K, Th, Tw, m + 2, m + 2), m, mode), Ho, Wo)
    if trace is not None:
        trace.update(itf=Ih, ftf=Fh, ewmm=Oh, requests=reqs)
    return O[0] if single else O


def _exact_ints(x):
    """FP16 encodings -> exact integers ×2^24 (object array; inf / NaN refused)."""
    v = num.to_float(np.asarray(x, dtype=np.uint64), "fp16")
    if not np.all(np.isfinite(v)):
        raise ValueError("ewmm_exact: inf / NaN operands have no exact value")
    return (v * 2.0 ** 24).astype(np.int64).astype(object)


def ewmm_exact(I_hat, F_hat):
    """The exact EWMM (Python integers): Σ_c Î·F̂ of FP16 encodings I_hat [N, C, P, L],
    F_hat [K, C, L] -> [N, K, P, L] object array of ints, in units of 2^−48."""
    Ih, Fh = _shapes(I_hat, F_hat, "ewmm_exact")
    return np.einsum("ncpl,kcl->nkpl", _exact_ints(Ih), _exact_ints(Fh))


def ewmm_bound(I_hat, F_hat, mode: str = "fp16") -> np.ndarray:
    """The octet model's a-priori bound (``sparse.model.error_bound``) on |Ô − exact| per
    output, float64: ⌈C/4⌉ DP-4s (the padding chunks add −0 exactly) from a −0 start."""
    mode = _check_mode(mode, "ewmm_bound")
    Ih, Fh = _shapes(I_hat, F_hat, "ewmm_bound")
    a = np.abs(num.to_float(Ih, "fp16"))
    f = np.abs(num.to_float(Fh, "fp16"))
    return sm.error_bound(np.einsum("ncpl,kcl->nkpl", a, f), -(-Ih.shape[1] // 4),
                          acc=MODES[mode])


def cycles(C: int, K: int, m: int = 2, *, positions: int = 8, pingpong: bool = False,
           back_to_back: bool = True) -> dict:
    """The octet form's EWMM cycles for ``positions`` tile positions (C channels, K
    filters): requests = (m+2)²·⌈K/8⌉·⌈C/16⌉·⌈positions/8⌉, each one WMMA of
    ``sparse.model.cycle_timing`` (40 / 34 request to result; back to back sets·(fill +
    compute) = 40, or with ping-pong sets·max(fill, compute) = 32).  Returns requests,
    cycles_per_wmma, cycles, per_tile, utilisation (useful MACs / 32 per cycle)."""
    L = (m + 2) ** 2
    t = sm.cycle_timing("dense", pingpong)
    per = (t["sets"] * (max(t["load"], t["compute"]) if pingpong else t["load"] + t["compute"])
           if back_to_back else t["cycles"])
    req = L * -(-K // ROWS) * -(-C // KTILE) * -(-positions // COLS)
    total = req * per
    return {"requests": req, "cycles_per_wmma": per, "cycles": total,
            "per_tile": total / positions,
            "utilisation": K * C * L * positions / (total * 4 * 8)}


def wino_conv_cycles(C: int, K: int, m: int = 2, dps: int = 8, **fields) -> dict:
    """``wino_conv``'s cycles per tile back to back, from its own parameters
    (``WinoConvParams.interval``, ``ewmm_cycles``; docs/winograd.md), mode fp16, and the
    utilisation of its ``dps`` DP-4s (useful MACs / (4·dps) per cycle); ``fields``: other
    ``wino_conv`` fields (e.g. ``overlap=True``)."""
    p = WinoConvParams(m=m, mode="fp16", C=C, K=K, dps=dps, **fields)
    macs = K * C * p.lanes
    return {"ewmm": p.ewmm_cycles, "per_tile": p.interval,
            "utilisation": macs / (p.interval * 4 * dps),
            "ewmm_utilisation": macs / (p.ewmm_cycles * 4 * dps)}
