"""The sparse family's octets (octet_dense, octet_sparse) against their golden models
(tcgen.units.sparse.model: dense_wmma, sparse_wmma) on the generic stream bench, with the cycle
counts of the cycle model (40 / 34 / 26 / 20 at the paper's point) asserted on the RTL.

The note's §4.3 cases that need the RTL: T3 (the paper's point, 20/26 cycles), T4 (dense, 40/34),
T5-T8 (all-zero rows, padded slots, max/duplicate/unsorted offsets), T12 (the (L, K) sweep with
its cycle counts), T13 (FP specials), T14 (back-to-back sets with different offsets under
stalls), T15 (reset mid-operation), T11/T16 (GEMM tiling through the octet), T17 (≥ 10^4 random
tiles: the batch bench, make test-slow).  Expected values only from the golden model; seeds
printed, TCGEN_SEED overrides them.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import harness
from bench_config import run_stream
from harness import seed
from stimulus import dot_lanes
from tcgen.hw import numeric as num
from tcgen.registry import get_unit
from tcgen.units.sparse import model as sm
from tcgen.units.sparse import paper
from tcgen.units.sparse.family import (bstat_request, dense_request, dense_result,
                                       random_bstat_requests, random_dense_requests,
                                       random_sparse_requests, sparse_request, sparse_result,
                                       sparse_tile)

_slow = pytest.mark.slow


def _params(unit, **kw):
    return get_unit(unit).params(**kw)


def _run(unit, p, requests, name, scenario="back_to_back", **cfg) -> dict:
    s = run_stream(unit, p, {"op__payload": np.array(requests, dtype=object)}, name=name,
                   scenarios=(scenario,), **cfg)
    assert s["mismatches"] == 0, s
    assert s[f"{scenario}_inputs"] == len(requests) and s["vectors"] == len(requests)
    if scenario == "reset_mid_operation":
        assert s["reset_leaked"] == 0
    return s


def _observed(s, scenario="back_to_back") -> list[int]:
    (out,) = json.loads(Path(s[f"{scenario}_observed"]).read_text()).values()
    return [int(x) for x in out]


# -- T3/T4: the paper's four cycle counts, reproduced by the RTL -------------------------------
@pytest.mark.parametrize("mode,pingpong", list(paper.WMMA_CYCLES))
def test_paper_cycles(mode, pingpong):
    """One (S)WMMA takes 40 / 34 / 26 / 20 cycles (request offered to result valid), bit-exact
    against the model; back to back, one WMMA per the same number of cycles (dense with
    ping-pong: 32, the next WMMA's first fill hides under the last compute)."""
    rng = np.random.default_rng(seed(1400))
    unit = f"octet_{mode}"
    p = _params(unit, pingpong=pingpong)
    reqs = (random_dense_requests if mode == "dense" else random_sparse_requests)(p, rng, 5)
    s = _run(unit, p, reqs, f"paper_{mode}_{pingpong}")
    cycles = paper.WMMA_CYCLES[(mode, pingpong)]
    assert sm.cycle_model(mode, pingpong) == cycles
    assert s["back_to_back_latency"] == cycles
    interval = cycles - 2 if (mode, pingpong) == ("dense", True) else cycles
    assert s["back_to_back_issue_intervals"] == [interval]


# -- T12: the (L, K) sweep: function and cycles ----------------------------------------------------
SWEEP = [(L, K, pp) for (L, K) in paper.SPARSITY_SWEEP for pp in (True, False)
         if (L, K) != (16, 4)]
_FAST = {(4, 2, True), (16, 1, False)}      # + (32, 5, True): K not a multiple of 4


@pytest.mark.parametrize("L,K,pp", [c if c in _FAST else pytest.param(*c, marks=_slow)
                                    for c in SWEEP] + [(32, 5, True)])
def test_lk_sweep_cycles(L, K, pp):
    """Every (L, K) of T12 (and L = 32, K = 5: a K that is no multiple of 4): bit-exact, and
    the cycles of the generalised cycle model (K > 4: ⌈K/4⌉ chained DP-4 passes)."""
    rng = np.random.default_rng(seed(1401))
    p = _params("octet_sparse", L=L, K=K, pingpong=pp)
    s = _run("octet_sparse", p, random_sparse_requests(p, rng, 4, density=0.8) +
             coverage_requests(p, rng), f"lk_{L}_{K}_{pp}")
    cycles = sm.cycle_model("sparse", pp, L=L, K=K)
    assert s["back_to_back_latency"] == cycles
    assert s["back_to_back_issue_intervals"] == [cycles]


# -- T5-T8: zero rows, padded slots, offsets -----------------------------------------------------
def _b_with_specials(rng, L):
    """B [L, 16]: N(0, 1) with inf, −inf and NaN planted in every row."""
    b = num.from_float(rng.normal(0, 1, (L, 16)), "fp16")
    for r in range(L):
        b[r, rng.integers(0, 16, 3)] = [0x7C00, 0xFC00, 0x7E00]
    return b


def test_zero_rows_padding_and_offsets():
    """T5: all-zero A rows give D == C bit for bit (C = −0, +0, NaN among them) even against
    inf/NaN in B; T6: one non-zero and three padded slots; T7: offsets {15,15,15,15},
    {12,13,14,15}, {0,5,10,15} (nibble order); T8: duplicates {3,3,7,7} (summed) and unsorted
    offsets."""
    rng = np.random.default_rng(seed(1402))
    p = _params("octet_sparse")
    reqs, checks = [], []
    vals = num.from_float(rng.normal(0, 1, (4, 4)), "fp16")
    c = num.from_float(rng.normal(0, 4, (4, 16)), "fp32")
    c[0, :3] = [0x80000000, 0x00000000, 0x7FC00001]
    # T5: zero values, random offsets, B full of specials
    zero = np.zeros((4, 4), dtype=np.uint64)
    zero[1] = 0x8000                                     # −0 values are zeros too
    reqs.append(sparse_request(p, zero, rng.integers(0, 16, (4, 4)), _b_with_specials(rng, 16),
                               c))
    checks.append("zero")
    # T6: one non-zero per row (slot 0), the padded slots' offsets pointing at inf rows
    one = np.zeros((4, 4), dtype=np.uint64)
    one[:, 0] = vals[:, 0]
    b1 = _b_with_specials(rng, 16)
    pad_offs = [[2, 0, 0, 0], [5, 9, 9, 9], [15, 1, 2, 3], [0, 15, 15, 15]]
    reqs.append(sparse_request(p, one, pad_offs, b1, c))
    checks.append("pad")
    b = num.from_float(rng.normal(0, 1, (16, 16)), "fp16")
    for offs in ([[15] * 4, [12, 13, 14, 15], [0, 5, 10, 15], [3, 3, 7, 7]],
                 [[7, 3, 12, 1], [15, 0, 15, 0], [9, 8, 7, 6], [1, 1, 1, 1]]):
        reqs.append(sparse_request(p, vals, offs, b, c))
        checks.append("offsets")
    s = _run("octet_sparse", p, reqs + coverage_requests(p, rng), "zero_pad_offsets")
    d = [sparse_result(p, x) for x in _observed(s)]
    nan32 = np.uint64(0x7FC00000)
    canon = np.where(((c & np.uint64(0x7FFFFFFF)) > np.uint64(0x7F800000)), nan32, c)
    assert np.array_equal(d[0], canon)                    # T5: D == C (NaN canonical)
    # T6: row r = C + val·B[offset of slot 0], one FP32 add (the padded slots add −0)
    for r in range(4):
        prod = num.fp_product(one[r, 0], b1[pad_offs[r][0]], "fp16", "fp32")
        assert np.array_equal(d[1][r], num.fp_add(prod, c[r], "fp32"))


# -- T13: FP specials ------------------------------------------------------------------------
@pytest.mark.parametrize("unit", ["octet_sparse", "octet_dense"])
def test_fp_specials(unit):
    """Values, B and C drawn from the adder/multiplier corner mix with specials (subnormals,
    ±65504, ±inf, NaN, cancelling pairs, large C against small products): bit-exact."""
    rng = np.random.default_rng(seed(1403))
    p = _params(unit)
    reqs = []
    for _ in range(6):
        if unit == "octet_sparse":
            vals = dot_lanes("fp16", rng, 4, lanes=4, special_rate=0.1)
            b = dot_lanes("fp16", rng, 16, lanes=16, special_rate=0.05)
            c = dot_lanes("fp32", rng, 4, lanes=16, special_rate=0.05)
            reqs.append(sparse_request(p, vals, rng.integers(0, 16, (4, 4)), b, c))
        else:
            a = dot_lanes("fp16", rng, 8, lanes=16, special_rate=0.05)
            b = dot_lanes("fp16", rng, 16, lanes=8, special_rate=0.05)
            c = dot_lanes("fp32", rng, 8, lanes=8, special_rate=0.05)
            reqs.append(dense_request(p, a, b, c))
    _run(unit, p, reqs, f"specials_{unit}")


# -- T14/T15: stalls, different offsets back to back, reset mid-set ---------------------------
@pytest.mark.parametrize("unit,kw,scenario", [
    ("octet_sparse", {}, "backpressure"), ("octet_sparse", {}, "reset_mid_operation"),
    ("octet_dense", {"pingpong": True}, "reset_mid_operation"),
    pytest.param("octet_dense", {"pingpong": True}, "backpressure", marks=_slow),
    pytest.param("octet_sparse", {"pingpong": False, "K": 8}, "backpressure", marks=_slow),
    pytest.param("octet_sparse", {"pingpong": False, "K": 8}, "reset_mid_operation",
                 marks=_slow),
    pytest.param("octet_dense", {}, "backpressure", marks=_slow),
    pytest.param("octet_dense", {}, "reset_mid_operation", marks=_slow)])
def test_stalls_and_reset(unit, kw, scenario):
    """Back-to-back (S)WMMAs with different offsets under random idle cycles on the request and
    stalls on the result (the result waits in the D buffer; the next compute waits for it while
    fetch/decode/load run on), and a reset with operations in flight: bit-exact, nothing leaks
    out of a reset."""
    rng = np.random.default_rng(seed(1404))
    p = _params(unit, **kw)
    reqs = (random_dense_requests if unit == "octet_dense" else random_sparse_requests)(
        p, rng, 6)
    _run(unit, p, reqs, f"{scenario}_{unit}_{len(kw)}", scenario=scenario, idle=0.4,
         stall=0.6)


# -- T11/T16: GEMM tiling through the octet -----------------------------------------------------
def _gemm_requests(p, enc: sm.Encoded, B, C):
    """The SWMMAs of D = A·B + C (A encoded, 4-row blocks × 16-column blocks × k-tiles, the
    k-tiles chained through C): each request's C is the model's previous D (expected values
    from the model only), the last k-tile's D is the GEMM's."""
    V = enc.V
    Bp = np.zeros((V * p.L, B.shape[1]), dtype=np.uint64)
    Bp[:enc.n] = B
    reqs, finals = [], {}
    for r0 in range(0, enc.M, 4):
        for c0 in range(0, B.shape[1], 16):
            d = C[r0:r0 + 4, c0:c0 + 16]
            for v in range(V):
                vals, offs = enc.values[r0:r0 + 4, v], enc.offsets[r0:r0 + 4, v]
                b = Bp[v * p.L:(v + 1) * p.L, c0:c0 + 16]
                reqs.append(sparse_request(p, vals, offs, b, d))
                d = sm.sparse_wmma(sm.Encoded(vals[:, None], offs[:, None], p.L, p.L), b, d)
            finals[(r0, c0)] = d
    return reqs, finals


@pytest.mark.parametrize("M,N,P", [(8, 27, 16), pytest.param(16, 2304, 16, marks=_slow)])
def test_gemm_tiling(M, N, P):
    """T11 (N = 27: a 3×3×3 conv, 2 vectors, the second 11 real + 5 padded columns) and T16 (a
    16-row slice of ResNet-50's 256×2304 3×3 conv, 144 k-tiles): the octet's D of the last
    k-tile equals spmm of the whole GEMM; every tile bit-exact on the bench."""
    rng = np.random.default_rng(seed(1405))
    p = _params("octet_sparse")
    enc = sm.encode(rng.normal(0, 1, (M, N)), 16, 4)
    B = num.from_float(rng.normal(0, 1, (N, P)), "fp16")
    C = num.from_float(rng.normal(0, 1, (M, P)), "fp32")
    reqs, finals = _gemm_requests(p, enc, B, C)
    want = sm.spmm(enc, B, C)
    for (r0, c0), d in finals.items():
        assert np.array_equal(d, want[r0:r0 + 4, c0:c0 + 16])
    s = _run("octet_sparse", p, reqs, f"gemm_{M}_{N}_{P}")
    got = [sparse_result(p, x) for x in _observed(s)]
    V = enc.V
    for i, ((r0, c0), d) in enumerate(finals.items()):
        assert np.array_equal(got[(i + 1) * V - 1], d)


# -- T17: ≥ 10^4 random tiles on the batch bench ------------------------------------------------
@pytest.mark.parametrize("unit,n", [("octet_sparse", 1000),
                                    pytest.param("octet_dense", 300, marks=_slow),
                                    pytest.param("octet_sparse", 10_000, marks=_slow),
                                    pytest.param("octet_dense", 10_000, marks=_slow)])
def test_random_tiles_batch(unit, n):
    """Random pruned tiles (sparse: densities 0.1..1, so rows with fewer than K non-zeros and
    all-zero rows occur) streamed through the in-simulation source/sink with stalls: 0
    mismatches."""
    rng = np.random.default_rng(seed(1406))
    p = _params(unit)
    if unit == "octet_sparse":
        reqs = [r for dens in (0.1, 0.3, 0.6, 1.0)
                for r in random_sparse_requests(p, rng, n // 4, density=dens)]
    else:
        reqs = random_dense_requests(p, rng, n)
    # Verilator: a request is 20-40 cycles of a wide payload, beyond the per-vector cost model
    s = harness.run_batch(unit, p, stimulus={"op__payload": np.array(reqs, dtype=object)},
                          name=f"batch_{unit}_{n}", stall=0.2, sim="verilator")
    assert s["vectors"] == len(reqs) and s["checked"] == len(reqs)
    assert s["mismatches"] == 0, s["first_mismatches"]


# -- numerics = fused_sm90: Hopper's fused block in each DP pass ---------------------------------
@pytest.mark.parametrize("unit,kw", [("octet_sparse", {}), ("octet_dense", {}),
                                     pytest.param("octet_sparse", {"K": 8, "pingpong": False},
                                                  marks=_slow)])
def test_fused_numerics(unit, kw):
    """The octets with FusedDot DP units (numerics=fused_sm90): random tiles and the specials
    mix (a ±0 slot against inf/NaN in B is gated, as in the ieee octet) bit-exact against the
    model's fused_sm90 semantics, with the same cycle counts as the ieee octet."""
    rng = np.random.default_rng(seed(1407))
    p = _params(unit, numerics="fused_sm90", **kw)
    if unit == "octet_sparse":
        reqs = random_sparse_requests(p, rng, 4, density=0.6)
        for _ in range(3):
            vals = dot_lanes("fp16", rng, 4, lanes=p.K, special_rate=0.1)
            vals[:, -1] &= np.uint64(0x8000)                  # a ±0 slot in every row
            b = _b_with_specials(rng, p.L)
            c = dot_lanes("fp32", rng, 4, lanes=16, special_rate=0.05)
            reqs.append(sparse_request(p, vals, rng.integers(0, p.L, (4, p.K)), b, c))
    else:
        reqs = random_dense_requests(p, rng, 3)
        for _ in range(2):
            reqs.append(dense_request(p, dot_lanes("fp16", rng, 8, lanes=16, special_rate=0.05),
                                      dot_lanes("fp16", rng, 16, lanes=8, special_rate=0.05),
                                      dot_lanes("fp32", rng, 8, lanes=8, special_rate=0.05)))
    s = _run(unit, p, reqs, f"fused_{unit}_{len(kw)}")
    mode = unit.split("_")[1]
    assert s["back_to_back_latency"] == sm.cycle_model(mode, p.pingpong, L=getattr(p, "L", 16),
                                                      K=getattr(p, "K", 4))


# -- the warp wrapper: 4 octets, one full 16×16×16 (S)WMMA ----------------------------------------
@pytest.mark.parametrize("unit,kw,scenario", [
    ("warp_smma", {}, "back_to_back"),
    pytest.param("warp_smma", {}, "backpressure", marks=_slow),
    pytest.param("warp_smma", {"pingpong": False}, "back_to_back", marks=_slow),
    pytest.param("warp_mma", {}, "back_to_back", marks=_slow),       # ~10 min on Icarus
    pytest.param("warp_mma", {"pingpong": True}, "backpressure", marks=_slow)])
def test_warp(unit, kw, scenario):
    """A full 16×16×16 WMMA / SWMMA on 4 octets with the paper's assignment (dense: worktuple i
    an 8×8 D tile; sparse: octet i rows 4i..4i+3): bit-exact against dense_wmma / sparse_wmma
    of the whole 16×16 operands, in the octet's cycle count (the paper's 40 / 34 / 26 / 20
    are per warp), back to back, and under idle/stall cycles."""
    rng = np.random.default_rng(seed(1408))
    p = _params(unit, **kw)
    mode = "dense" if unit == "warp_mma" else "sparse"
    reqs = (random_dense_requests if mode == "dense" else random_sparse_requests)(p, rng, 2)
    if mode == "sparse":
        reqs += coverage_requests(p, rng)          # every offset, 0..K padded slots
    if scenario == "back_to_back":
        s = _run(unit, p, reqs, f"warp_{unit}_{len(kw)}")
        cycles = paper.WMMA_CYCLES[(mode, p.pingpong)]
        assert s["back_to_back_latency"] == cycles
    else:
        _run(unit, p, reqs, f"warp_{unit}_{len(kw)}_bp", scenario=scenario, idle=0.3, stall=0.5)


# -- the B-stationary sparse octet (beyond the paper) ---------------------------------------------
@pytest.mark.parametrize("L,K", [(16, 4), (4, 2), pytest.param(32, 5, marks=_slow),
                                 pytest.param(16, 8, marks=_slow),
                                 pytest.param(16, 1, marks=_slow)])
def test_bstationary_cycles(L, K):
    """octet_sparse_bs: a SWMMA that loads its B tile takes max(load, FETCHIDX + decode) + 4
    EXEC sets (24 at L16 K4), one on the held tile FETCHIDX + decode + 4 sets (10), back to
    back; bit-exact against sparse_wmma on the held tile -- the reusing requests carry a
    different b that must not be read."""
    rng = np.random.default_rng(seed(1409))
    p = _params("octet_sparse_bs", L=L, K=K)
    reqs = random_bstat_requests(p, rng, 6, reuse=3)
    s = _run("octet_sparse_bs", p, reqs, f"bs_{L}_{K}")
    t = sm.bstationary_timing(L, K)
    assert s["back_to_back_latency"] == t["first"]
    assert s["back_to_back_issue_intervals"] == sorted({t["first"], t["reused"]})


@pytest.mark.parametrize("scenario", ["backpressure", "reset_mid_operation"])
def test_bstationary_stalls_and_reset(scenario):
    """Under idle/stall cycles (the held tile survives waiting results) and a reset mid-run
    (the tile resets to +0; the stimulus restarts with a loading request): bit-exact."""
    rng = np.random.default_rng(seed(1410))
    p = _params("octet_sparse_bs")
    reqs = random_bstat_requests(p, rng, 6, reuse=2)
    _run("octet_sparse_bs", p, reqs, f"bs_{scenario}", scenario=scenario, idle=0.4, stall=0.6)


def test_bstationary_held_tile_and_specials():
    """No request loads B before the first SWMMA: it multiplies the reset tile (+0: D == C for
    finite C with skip); then a tile with inf/NaN rows, and offsets that reach them only
    through padded (zero) slots, which the skip gate keeps invisible."""
    rng = np.random.default_rng(seed(1411))
    p = _params("octet_sparse_bs")
    vals = num.from_float(rng.normal(0, 1, (4, 4)), "fp16")
    c = num.from_float(rng.normal(0, 4, (4, 16)), "fp32")
    b = _b_with_specials(rng, 16)
    reqs = [bstat_request(p, False, vals, rng.integers(0, 16, (4, 4)), b, c)]
    one = np.zeros((4, 4), dtype=np.uint64)
    one[:, 0] = vals[:, 0]
    reqs.append(bstat_request(p, True, one, [[2, 0, 0, 0], [5, 9, 9, 9], [15, 1, 2, 3],
                                             [0, 15, 15, 15]], b, c))
    reqs.append(bstat_request(p, False, vals, rng.integers(0, 16, (4, 4)), b * 0, c))
    s = _run("octet_sparse_bs", p, reqs, "bs_held")
    d = [sparse_result(p, x) for x in _observed(s)]
    assert np.array_equal(d[0], np.array([[num.fp_add(np.uint64(0), x, "fp32") for x in row]
                                          for row in c]))


@pytest.mark.parametrize("n,sim", [(60, "icarus"), pytest.param(3000, "verilator", marks=_slow)])
def test_bstationary_random_batch(n, sim):
    """Random pruned tiles (densities 0.2, 0.6, 1), one B tile per 4 SWMMAs, with stalls, on
    the batch bench: 0 mismatches (60 on Icarus in make test; 3,000 on Verilator slow, one
    chunk: the held tile is state the model carries through the sequence)."""
    rng = np.random.default_rng(seed(1412))
    p = _params("octet_sparse_bs")
    reqs = [r for dens in (0.2, 0.6, 1.0)
            for r in random_bstat_requests(p, rng, n // 3, reuse=4, density=dens)]
    s = harness.run_batch("octet_sparse_bs", p,
                          stimulus={"op__payload": np.array(reqs, dtype=object)},
                          name=f"batch_bs_{n}", stall=0.2, sim=sim)
    assert s["vectors"] == len(reqs) and s["checked"] == len(reqs)
    assert s["mismatches"] == 0, s["first_mismatches"]


# -- the split DP-4 (note §5.1): k = 4, 2 or 1 non-zeros per request on one octet ---------------
_KSEQ = (0, 0, 1, 1, 2, 2, 3, 3, 1, 0, 2)


def _split_intervals(cycles, kseq):
    """Issue intervals of back-to-back requests with these kmodes: request i is accepted
    cycles[kmode_i] after request i − 1 (its fetch waits for the previous acceptance)."""
    return sorted({cycles[km] for km in kseq[1:]})


@pytest.mark.parametrize("unit,kw", [
    ("octet_sparse", {}), ("octet_sparse_bs", {}),
    pytest.param("octet_sparse", {"pingpong": False}, marks=_slow),
    pytest.param("octet_sparse", {"L": 8, "zero_slot": "multiply"}, marks=_slow),
    pytest.param("octet_sparse_bs", {"L": 4, "zero_slot": "multiply"}, marks=_slow)])
def test_split_kmodes(unit, kw):
    """split=true: one octet runs k = 4, 2, 1 (kmode 0..3) per request, back to back in a
    mixed order, bit-exact against sparse_wmma(split=True) on each request's first k slots
    (the other slots hold junk that must not be read), each request in the cycles of the cycle
    model (sparse L16 ping-pong: 20 / 12 / 8; B-stationary reused: 10 / 6 / 4)."""
    rng = np.random.default_rng(seed(1413))
    p = _params(unit, split=True, **kw)
    if unit == "octet_sparse":
        reqs = random_sparse_requests(p, rng, len(_KSEQ), density=0.7, kmodes=_KSEQ)
        cyc = [sm.cycle_model("sparse", p.pingpong, L=p.L, K=k, split=True) for k in p.kmodes]
        first, later = cyc[_KSEQ[0]], _split_intervals(cyc, _KSEQ)
    else:
        reqs = random_bstat_requests(p, rng, len(_KSEQ), reuse=len(_KSEQ), density=0.7,
                                     kmodes=_KSEQ)
        t = [sm.bstationary_timing(p.L, k, split=True) for k in p.kmodes]
        first, later = t[_KSEQ[0]]["first"], _split_intervals([x["reused"] for x in t], _KSEQ)
    s = _run(unit, p, reqs, f"split_{unit}_{len(kw)}")
    assert s["back_to_back_latency"] == first
    assert s["back_to_back_issue_intervals"] == later


@pytest.mark.parametrize("unit,scenario", [
    ("octet_sparse_bs", "backpressure"),
    pytest.param("octet_sparse", "backpressure", marks=_slow),
    pytest.param("octet_sparse", "reset_mid_operation", marks=_slow),
    pytest.param("warp_smma", "back_to_back", marks=_slow)])
def test_split_stalls_specials_warp(unit, scenario):
    """split=true under idle/stall cycles and reset, with the specials mix (inf/NaN in B, ±0
    slots), and the 4-octet warp: bit-exact against the model."""
    rng = np.random.default_rng(seed(1414))
    p = _params(unit, split=True)
    reqs = []
    for i in range(8):
        km = _KSEQ[i]
        vals = dot_lanes("fp16", rng, p.ROWS, lanes=4, special_rate=0.1)
        vals[:, -1] &= np.uint64(0x8000)                      # a ±0 slot in every row
        b = _b_with_specials(rng, p.L)
        c = dot_lanes("fp32", rng, p.ROWS, lanes=16, special_rate=0.05)
        offs = rng.integers(0, p.L, (p.ROWS, 4))
        reqs.append(bstat_request(p, i % 3 == 0, vals, offs, b, c, km)
                    if unit == "octet_sparse_bs" else sparse_request(p, vals, offs, b, c, km))
    _run(unit, p, reqs, f"split_sp_{unit}_{scenario}", scenario=scenario, idle=0.3, stall=0.5)


def coverage_requests(p, rng) -> list[int]:
    """SWMMAs whose offset fields take every value 0..L-1 and whose A rows hold 0..K padded
    (+0) slots (functional coverage, docs/coverage.md): row r's slot j has offset
    (r·K + j) mod L, and its first r mod (K+1) slots are padded."""
    rows = max(-(-p.L // p.K), p.K + 1)
    reqs = []
    for r0 in range(0, rows, p.ROWS):
        r = np.arange(r0, r0 + p.ROWS)[:, None]
        offs = (r * p.K + np.arange(p.K)[None, :]) % p.L
        vals = num.from_float(rng.normal(0, 1, (p.ROWS, p.K)), "fp16")
        vals[np.arange(p.K)[None, :] < (r % (p.K + 1))] = 0
        reqs.append(sparse_request(p, vals, offs, num.from_float(rng.normal(0, 1, (p.L, 16)),
                                                                  "fp16"),
                                   num.from_float(rng.normal(0, 4, (p.ROWS, 16)), p.acc)))
    return reqs


@pytest.mark.parametrize("L,K", [(16, 4), (4, 2)])
def test_pingpong_buffers_fill_under_a_held_result(L, K):
    """Results held for 40 cycles at a time (scripted ready): meanwhile the next SWMMA's sets
    load into both B buffers (b_full = both, every write/read pointer pair -- the ping-pong
    states of docs/coverage.md), and nothing is lost or reordered."""
    rng = np.random.default_rng(seed(1415))
    p = _params("octet_sparse", L=L, K=K)
    _run("octet_sparse", p, random_sparse_requests(p, rng, 4), f"pingpong_held_{L}_{K}",
         scenario="backpressure", idle=0.0, stall=0.0, ready_pattern="0" * 40 + "1")

