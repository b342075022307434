"""cocotb regressions of bmma_array, int8_mac_array and bnn_epilogue against the golden model
(paper 000 notes §4.1), through the shared harness and the generic stream bench
tcgen/verify/benches/stream.py.

The default 8×8×128 array is simulated on directed tiles, a few hundred random tiles, the
back-to-back timing check and the layer slices; the fold factors, op builds, narrow
accumulators and long K chains run on small M×N (the same generator).  The ≥ 10,000-tile random
run at full size and the full layer slices are ``slow`` (results in reports/bmma_verification.md).
Seeds are printed; TCGEN_SEED overrides them.
"""
import json
from pathlib import Path

import numpy as np
import pytest

from tcgen.verify.bench_config import run_stream
from tcgen.verify.harness import seed
from tcgen.registry import get_unit
from tcgen.units.bmma import family as bf
from tcgen.units.bmma import model as bm
from tcgen.units.bmma.family import workload_requests
from tcgen.units.bmma.params import (SENSE_GE, SENSE_LT, SENSE_ONE, SENSE_ZERO, BmmaArrayParams,
                               BnnAffineParams, BnnEpilogueParams, BnnLayerParams,
                               BwnArrayParams, Int8MacArrayParams)
from tcgen.units.bmma.stream import block_params, bn_params

from bnn_layer_runs import run_conv, run_fc, run_resnet_block

PROBE_K = (0, 1, 31, 32, 63, 64, 96, 127)


def golden(p, requests):
    """Output payloads of the unit's golden model for request payloads (unpacked and packed
    through units/bmma/layouts.py by the family)."""
    out = get_unit(p.UNIT).golden(p, req__payload=np.array(requests, dtype=object))
    return out[{"bnn_epilogue": "out__payload", "bnn_affine": "y__payload"}.get(p.UNIT,
                                                                              "d__payload")]


def simulate(unit, params, requests, name, idle=0.0, stall=0.0, timing=False, reset_at=None,
             bench_seed=1):
    """One scenario of tcgen/verify/benches/stream.py: ``reset_at`` -> reset_mid_operation (4
    requests, the result stream mostly stalled (scripted ready) so results are pending, reset
    ``reset_at`` cycles in); idle/stall -> backpressure; else back_to_back, with ``timing``
    checking the documented latency and one request per ``fold`` cycles."""
    if reset_at is not None:
        scenario = "reset_mid_operation"
        cfg = dict(reset_ops=4, reset_at=reset_at, ready_pattern="00000001")
    elif idle or stall:
        scenario, cfg = "backpressure", {}
    else:
        scenario, cfg = "back_to_back", {}
    summary = run_stream(unit, params, {"req__payload": np.array(requests, dtype=object)},
                         name=name, scenarios=(scenario,), idle=idle, stall=stall,
                         seed=bench_seed, **cfg)
    assert summary["mismatches"] == 0 and summary[f"{scenario}_inputs"] == len(requests)
    if reset_at is not None:
        assert summary["reset_leaked"] == 0
    if timing:
        latency = get_unit(unit).interface(params).latency
        step = getattr(params, "fold", 1)
        assert summary["back_to_back_latency"] == latency, summary
        assert summary["back_to_back_issue_intervals"] == [step], \
            f"input issue gaps {summary['back_to_back_issue_intervals']}, expected every " \
            f"{step} cycles (back to back)"
    observed = json.loads(Path(summary[f"{scenario}_observed"]).read_text())
    (out,) = observed.values()
    return summary, [int(x) for x in out]


def rand_bits(rng, shape):
    return rng.integers(0, 2, shape, dtype=np.uint8)


# -- directed tiles at the paper's size ---------------------------------------------------------
def directed_requests(p, rng):
    """Bit-order probes, corner patterns, wrap cases, K = 256 and 4608 chains (notes §4.1)."""
    reqs, expect_shape = [], []
    zero_a, zero_b = np.zeros((p.m, p.k), np.uint8), np.zeros((p.k, p.n), np.uint8)
    for i in range(p.m):                      # one-hot A[i][k], B = 0: only row i counts 1
        for k in PROBE_K:
            a = zero_a.copy()
            a[i, k] = 1
            reqs.append(bf.array_request(p, a, zero_b))
            e = np.zeros((p.m, p.n), np.int64)
            e[i] = 1
            expect_shape.append(e)
    for j in range(p.n):                      # one-hot B[k][j], A = 0: only column j counts 1
        for k in PROBE_K:
            b = zero_b.copy()
            b[k, j] = 1
            reqs.append(bf.array_request(p, zero_a, b))
            e = np.zeros((p.m, p.n), np.int64)
            e[:, j] = 1
            expect_shape.append(e)
    ones_a, ones_b = np.ones_like(zero_a), np.ones_like(zero_b)
    checker = bm.unpack_bits(np.full((p.m, p.k // 32), 0xAAAAAAAA, np.uint32), p.k)
    anti = bm.unpack_bits(np.full((p.n, p.k // 32), 0x55555555, np.uint32), p.k).T
    for op in ("xor", "and"):
        for a, b in ((zero_a, zero_b), (ones_a, ones_b), (ones_a, zero_b), (checker, anti)):
            reqs.append(bf.array_request(p, a, b, op=op))
    big = np.full((p.m, p.n), 2**31 - 1 - 5)                 # wraps: + popc 128
    reqs.append(bf.array_request(p, ones_a, zero_b, big))
    reqs.append(bf.array_request(p, ones_a, zero_b, np.full((p.m, p.n), -2**31)))
    reqs.append(bf.array_request(p, rand_bits(rng, (p.m, p.k)), rand_bits(rng, (p.k, p.n)),
                                 rng.integers(-2**31, 2**31, (p.m, p.n))))
    reqs.append(bf.array_request(p, ones_a, zero_b, big, chain=False, emit=False))
    reqs.append(bf.array_request(p, ones_a, zero_b, chain=True))        # chain through wrap
    for k_total in (256, 4608):               # output-stationary K chains, mixed ops
        a, b = rand_bits(rng, (p.m, k_total)), rand_bits(rng, (k_total, p.n))
        steps = k_total // p.k
        for t in range(steps):
            reqs.append(bf.array_request(p, a[:, t * p.k:(t + 1) * p.k],
                                         b[t * p.k:(t + 1) * p.k], rng.integers(-9, 9, (p.m, p.n)),
                                         chain=t > 0, emit=t == steps - 1))
    return reqs, expect_shape


def test_bmma_array_default_directed():
    p = BmmaArrayParams()
    rng = np.random.default_rng(seed(501))
    reqs, shapes = directed_requests(p, rng)
    exp = golden(p, reqs)
    # the probes are meaningful: the model puts the single 1 where the notes say
    for i, e in enumerate(shapes):
        assert np.array_equal(bf.array_result(p, exp[i]), e)
    assert np.all(bf.array_result(p, exp[len(shapes) + 8]) == 2**31 - 1 - 5 + 128 - 2**32)
    simulate("bmma_array", p, reqs, "directed", idle=0.05, stall=0.1)


def test_bmma_array_default_random_back_to_back():
    """Random tiles (random op, chain, C) issued back to back: one per cycle, latency 1."""
    p = BmmaArrayParams()
    rng = np.random.default_rng(seed(502))
    reqs = workload_requests("bmma_array", p, rng, 64)
    s, _ = simulate("bmma_array", p, reqs, "random_b2b", timing=True)
    assert s["back_to_back_latency"] == 1 and s["back_to_back_issue_intervals"] == [1]


# -- every fold factor, protocol, op builds -------------------------------------------------------
@pytest.mark.parametrize("fold", [1, pytest.param(2, marks=pytest.mark.slow), 4,
                                  pytest.param(8, marks=pytest.mark.slow)])      # make test's budget
def test_bmma_array_fold_random_with_stalls(fold):
    p = BmmaArrayParams(m=3, n=2, k=128, fold=fold)
    rng = np.random.default_rng(seed(510 + fold))
    reqs = workload_requests("bmma_array", p, rng, 150)
    simulate("bmma_array", p, reqs, "fold_stalls", idle=0.2, stall=0.3, bench_seed=fold)
    s, _ = simulate("bmma_array", p, reqs[:30], "fold_timing", timing=True)
    assert s["back_to_back_latency"] == fold and s["back_to_back_issue_intervals"] == [fold]


def carry_requests(p, rng):
    """C just below every bit boundary of the accumulator, so that a fold step's partial sum
    carries into bit b: C = 2^b − r and −2^b − r for b = 0 .. acc_width − 1 (b = 0: the sum
    crosses zero; 2^(w−1) − r: it wraps), r in 1 .. K/fold (one fold step's popcount range)
    drawn per cell; each request followed by one chained onto it (its D the base).  Random
    operands and op; every cell, every fold step."""
    ops = ("xor", "and") if p.ops == "xor_and" else (p.ops,)
    reqs, cs = [], []
    for b in range(p.acc_width):
        for sign in (1, -1):
            if sign < 0 and b == p.acc_width - 1:
                continue                                  # −2^(w−1) − r does not fit
            c = sign * (1 << b) - rng.integers(1, p.k // p.fold + 1, (p.m, p.n))
            for chain in (False, True):
                reqs.append(bf.array_request(p, rand_bits(rng, (p.m, p.k)),
                                             rand_bits(rng, (p.k, p.n)), c,
                                             op=ops[rng.integers(len(ops))], chain=chain))
                cs.append(None if chain else c)
    return reqs, cs


@pytest.mark.parametrize("fold", [1, 2, 8])
def test_bmma_array_carries_through_every_accumulator_bit(fold):
    """Accumulations that carry into every accumulator bit, with C positive and negative, from
    C and from the chained accumulator, under idle and stall cycles: the model's D."""
    p = BmmaArrayParams(m=3, n=2, k=128, fold=fold)
    rng = np.random.default_rng(seed(515 + fold))
    reqs, cs = carry_requests(p, rng)
    exp = golden(p, reqs)
    # the stimulus is what it claims: the model's sums change every bit of C somewhere
    changed = 0
    for c, d in zip(cs, exp):
        if c is not None:
            changed |= int(np.bitwise_or.reduce(
                ((bf.array_result(p, d) ^ c) & ((1 << p.acc_width) - 1)).ravel()))
    assert changed == (1 << p.acc_width) - 1, hex(changed)
    simulate("bmma_array", p, reqs, "carries", idle=0.2, stall=0.3, bench_seed=fold)


def test_bmma_array_reset_mid_operation():
    p = BmmaArrayParams(m=3, n=2, k=128, fold=4)
    rng = np.random.default_rng(seed(520))
    reqs = workload_requests("bmma_array", p, rng, 20)
    simulate("bmma_array", p, reqs, "reset", reset_at=6)


@pytest.mark.parametrize("ops", ["xor", "and"])
def test_bmma_array_single_op_builds(ops):
    p = BmmaArrayParams(m=2, n=3, k=64, fold=2, ops=ops)
    rng = np.random.default_rng(seed(530))
    reqs = workload_requests("bmma_array", p, rng, 150)
    simulate("bmma_array", p, reqs, f"ops_{ops}", idle=0.1, stall=0.1)


def test_bmma_array_long_chains_and_narrow_accumulator():
    """K = 25088 (196 chained tiles) and 128 on a 2×2 array with an s17 accumulator; then C
    near the s17 limit wraps."""
    p = BmmaArrayParams(m=2, n=2, k=128, acc_width=17)
    rng = np.random.default_rng(seed(540))
    reqs = []
    for k_total in (128, 25088):
        a, b = rand_bits(rng, (2, k_total)), rand_bits(rng, (k_total, 2))
        steps = k_total // 128
        for t in range(steps):
            reqs.append(bf.array_request(p, a[:, t * 128:(t + 1) * 128],
                                         b[t * 128:(t + 1) * 128], chain=t > 0,
                                         emit=t == steps - 1))
        d = bf.array_result(p, golden(p, reqs)[-1])
        assert np.array_equal(128 * steps - 2 * d, bm.dot_pm1_reference(a, b))   # fits s17
    ones, zeros = np.ones((2, 128), np.uint8), np.zeros((128, 2), np.uint8)
    reqs.append(bf.array_request(p, ones, zeros, np.full((2, 2), 2**16 - 100)))
    assert np.all(bf.array_result(p, golden(p, reqs)[-1]) ==
                  2**16 + 28 - 2**17)
    simulate("bmma_array", p, reqs, "chains", timing=True)


def test_int8_mac_array():
    p = Int8MacArrayParams(m=2, n=2, k=4, fold=2)
    rng = np.random.default_rng(seed(550))
    reqs = workload_requests("int8_mac_array", p, rng, 150)
    extremes = [np.full((2, 4), -128), np.full((2, 4), 127)]
    for a in extremes:
        for b in extremes:
            reqs.append(bf.int8_request(p, a, b.reshape(4, 2), np.full((2, 2), 2**31 - 1)))
    simulate("int8_mac_array", p, reqs, "int8", idle=0.2, stall=0.2)


# -- epilogue -----------------------------------------------------------------------------------
def epilogue_directed(p, rng):
    """Ties (v == τ), flips (LT), constants (γ = 0), extreme τ, residual, pool windows of 1, 2,
    3 and 4 items (ceil-mode partial windows)."""
    n = p.n
    reqs = []
    k = 576
    for sense in (SENSE_GE, SENSE_LT) if p.sense else (SENSE_GE,):
        acc = rng.integers(0, k + 1, n)
        v = k - 2 * acc
        for delta in (0, 1, -1):                         # tie, above, below
            reqs.append(bf.epilogue_request(p, acc, k, v + delta, np.full(n, sense)))
    acc = rng.integers(0, k + 1, n)
    reqs.append(bf.epilogue_request(p, acc, k, np.full(n, -2**(p.tau_width - 1)),
                                    np.full(n, SENSE_GE)))            # always 1
    reqs.append(bf.epilogue_request(p, acc, k, np.full(n, 2**(p.tau_width - 1) - 1),
                                    np.full(n, SENSE_GE)))            # 0 unless v hits max
    if p.sense:
        reqs.append(bf.epilogue_request(p, acc, k, np.zeros(n, np.int64),
                                        np.array([SENSE_ZERO, SENSE_ONE] * (n // 2) +
                                                 [SENSE_ONE] * (n % 2))))
    lim = 2**(p.res_width - 1) - 1 if p.res_width else 0       # extreme operands: exact v
    res = (lambda x: np.full(n, x)) if p.res_width else (lambda x: None)
    reqs.append(bf.epilogue_request(p, np.full(n, -2**(p.acc_width - 1)), 2**p.k_width - 1,
                                    np.full(n, lim), np.full(n, SENSE_GE), res(lim)))
    reqs.append(bf.epilogue_request(p, np.full(n, 2**(p.acc_width - 1) - 1), 0,
                                    np.full(n, -lim - 1), np.full(n, SENSE_LT if p.sense
                                                                  else SENSE_GE), res(-lim - 1)))
    for size in (1, 2, 3, 4, 4):                          # pool windows, all-zero/single-one
        for t in range(size):
            acc = np.full(n, k)                           # v = −k: below τ = 0 -> 0
            if size == 4 and len(reqs) % 2 and t == 2:
                acc[rng.integers(n)] = 0                  # a single one in the window
            reqs.append(bf.epilogue_request(p, acc, k, np.zeros(n, np.int64),
                                            np.full(n, SENSE_GE),
                                            rng.integers(-3, 4, n) if p.res_width else None,
                                            last=t == size - 1))
    return reqs


@pytest.mark.parametrize("n,res_width,sense", [(8, 32, True), (5, 0, False)])
def test_bnn_epilogue(n, res_width, sense):
    """Default build, and a paper-faithful one (v ≥ τ only, no residual port)."""
    p = BnnEpilogueParams(n=n, res_width=res_width, sense=sense)
    rng = np.random.default_rng(seed(560 + n))
    reqs = epilogue_directed(p, rng) + workload_requests("bnn_epilogue", p, rng, 300)
    out = golden(p, reqs)
    assert 0 < sum(bin(int(x)).count("1") for x in out) < len(out) * n   # not constant
    simulate("bnn_epilogue", p, reqs, "epilogue", idle=0.2, stall=0.3)
    s, _ = simulate("bnn_epilogue", p, reqs[:40], "epilogue_timing", timing=True)
    assert s["back_to_back_latency"] == 1 and s["back_to_back_issue_intervals"] == [1]


# -- layer-level slices through bmma_array + bnn_epilogue (notes §4.1) ----------------------------
_bn_params = bn_params              # a flipped (γ < 0) and a constant (γ = 0) channel


def conv_slice(pixels, pool_windows, rng_seed, o_tiles=1):
    """ResNet-18 layer-1 conv 64→64 3×3 @56×56, 8 images; the given output pixels and 2×2 OR
    pool windows, ``o_tiles`` groups of 8 output channels."""
    rng = np.random.default_rng(rng_seed)
    pa = BmmaArrayParams()
    pe = BnnEpilogueParams()
    h, c, o = 56, 64, 8 * o_tiles
    x = rand_bits(rng, (h, h, 8, c))
    w = rand_bits(rng, (3, 3, c, o))
    bn = _bn_params(rng, o)
    tau, sense = bm.bn_threshold(**bn)
    excl = bm.exclude_counts(h, h, 3, 3)
    ref = bm.conv_pm1_reference(x, w)                          # float64, zero padding
    residual = rng.integers(-40, 41, (h, h, 8, o))
    order = list(dict.fromkeys(pixels + [px for win in pool_windows for px in win]))
    reqs = []
    for (py, px) in order:
        for ot in range(o_tiles):
            taps = [(dy, dx) for dy in range(3) for dx in range(3)
                    if 0 <= py + dy - 1 < h and 0 <= px + dx - 1 < h]
            assert len(taps) == 9 - excl[py, px]
            for t, (dy, dx) in enumerate(taps):
                a = np.zeros((8, 128), np.uint8)
                a[:, :c] = x[py + dy - 1, px + dx - 1]
                b = np.zeros((128, 8), np.uint8)
                b[:c] = w[dy, dx][:, 8 * ot:8 * ot + 8]
                reqs.append(bf.array_request(pa, a, b, chain=t > 0, emit=t == len(taps) - 1))
    _, got = simulate("bmma_array", pa, reqs, "conv_slice")
    acc = {}
    for idx, (py, px) in enumerate(order):
        acc[(py, px)] = np.concatenate([bf.array_result(pa, got[idx * o_tiles + ot])
                                        for ot in range(o_tiles)], axis=1)     # (8 images, o)
        v = c * (9 - excl[py, px]) - 2 * acc[(py, px)]
        assert np.array_equal(v, ref[py, px]), (py, px)        # RTL popcounts vs float conv
    # epilogue: per image, one item per pixel; pool windows close with `last`
    items, expect = [], []
    sign = bm.bn_sign_reference(ref + residual, **bn)          # float sign(BN(conv + res))
    groups = [[px] for px in pixels] + [list(win) for win in pool_windows]
    for group in groups:
        for img in range(8):
            for ot in range(o_tiles):
                sl = slice(8 * ot, 8 * ot + 8)
                for t, px in enumerate(group):
                    items.append(bf.epilogue_request(
                        pe, acc[px][img, sl], c * (9 - excl[px]), tau[sl], sense[sl],
                        residual[px][img, sl], last=t == len(group) - 1))
                bits = np.max([sign[px][img, sl] for px in group], axis=0)   # OR-pool
                expect.append(int(bm.pack_channels(bits)))
    _, out = simulate("bnn_epilogue", pe, items, "conv_slice_epilogue", stall=0.2)
    assert out == expect
    return len(reqs), len(items)


def test_layer_resnet18_conv_slice():
    n_req, n_items = conv_slice([(0, 0), (0, 27), (27, 27), (55, 55)],
                                [((0, 0), (0, 1), (1, 0), (1, 1))], seed(570))
    assert n_req > 0 and n_items > 0


def fc_slice(n_tiles, rng_seed, k=784, n_out=1024):
    """MNIST-MLP FC 784→1024 (binarized input x ≥ 0), the first ``n_tiles`` groups of 8
    outputs; K pads to 896 (7 chained tiles), fix-up with the true K = 784."""
    rng = np.random.default_rng(rng_seed)
    pa = BmmaArrayParams()
    pe = BnnEpilogueParams(res_width=0)
    xin = rng.normal(size=(8, k))
    x = bm.binarize(xin)
    w = rand_bits(rng, (k, n_out))
    bn = _bn_params(rng, n_out)
    tau, sense = bm.bn_threshold(**bn)
    ref = bm.dot_pm1_reference(x, w)
    kp = -(-k // 128) * 128
    xp = np.zeros((8, kp), np.uint8)
    xp[:, :k] = x
    wp = np.zeros((kp, n_out), np.uint8)
    wp[:k] = w
    reqs = []
    for t in range(n_tiles):
        for s in range(kp // 128):
            reqs.append(bf.array_request(pa, xp[:, 128 * s:128 * s + 128],
                                         wp[128 * s:128 * s + 128, 8 * t:8 * t + 8],
                                         chain=s > 0, emit=s == kp // 128 - 1))
    _, got = simulate("bmma_array", pa, reqs, "fc_slice")
    items, expect = [], []
    sign = bm.bn_sign_reference(ref, **bn)
    for t in range(n_tiles):
        acc = bf.array_result(pa, got[t])
        sl = slice(8 * t, 8 * t + 8)
        assert np.array_equal(k - 2 * acc, ref[:, sl])
        for img in range(8):
            items.append(bf.epilogue_request(pe, acc[img], k, tau[sl], sense[sl]))
            expect.append(int(bm.pack_channels(sign[img, sl])))
    _, out = simulate("bnn_epilogue", pe, items, "fc_slice_epilogue")
    assert out == expect
    return len(reqs), len(items)


def test_layer_mnist_fc_slice():
    fc_slice(4, seed(580))


# -- slow: full-size random population and full layer slices --------------------------------------
@pytest.mark.slow
def test_slow_bmma_array_10k_random_tiles():
    p = BmmaArrayParams()
    rng = np.random.default_rng(seed(590))
    reqs = workload_requests("bmma_array", p, rng, 10_000)
    s, _ = simulate("bmma_array", p, reqs, "random10k", idle=0.05, stall=0.05)
    print(f"[bmma] 10k random tiles: {s}")


@pytest.mark.slow
@pytest.mark.parametrize("fold", [2, 4, 8])
def test_slow_bmma_array_full_size_folds(fold):
    p = BmmaArrayParams(fold=fold)
    rng = np.random.default_rng(seed(595 + fold))
    reqs = workload_requests("bmma_array", p, rng, 300)
    simulate("bmma_array", p, reqs, "full_fold", idle=0.2, stall=0.2)
    s, _ = simulate("bmma_array", p, reqs[:40], "full_fold_timing", timing=True)
    assert s["back_to_back_latency"] == fold


@pytest.mark.slow
def test_slow_layer_resnet18_conv_full_border_and_pools():
    """Every border pixel class and several pool windows, all 64 output channels."""
    pixels = [(0, 0), (0, 55), (55, 0), (55, 55), (0, 13), (55, 40), (20, 0), (33, 55),
              (10, 10), (28, 28), (41, 17)]
    pools = [((0, 0), (0, 1), (1, 0), (1, 1)), ((54, 54), (54, 55), (55, 54), (55, 55)),
             ((20, 30), (20, 31), (21, 30), (21, 31))]
    conv_slice(pixels, pools, seed(600), o_tiles=8)


@pytest.mark.slow
def test_slow_layer_mnist_fc_full():
    fc_slice(128, seed(610))


# -- directed tests from mutation testing (docs/mutation.md, reports/mutation.md) -----------------
def test_bnn_epilogue_full_range_ties():
    """Accumulators over the whole signed range and τ at v − 1, v, v + 1: every bit of
    v = K_eff − 2·acc then decides an output bit.  The random workload's accumulators are small
    (|acc| ≤ K), so faults in the upper bits of the subtractor went unnoticed (mutants
    bnn_epilogue-b76bab, -ef3c92, -789332, ... of reports/mutation.md)."""
    p = BnnEpilogueParams(n=5, res_width=0, sense=False)
    rng = np.random.default_rng(seed(571))
    reqs = []
    for i in range(48):
        top = 1 << (2 + i % 28)                       # magnitudes 2^2 .. 2^29
        acc = rng.integers(-top, top, p.n)
        k = int(rng.integers(0, 1 << p.k_width))
        v = k - 2 * acc
        for delta in (-1, 0, 1):                      # τ just above, at and below v
            reqs.append(bf.epilogue_request(p, acc, k, v + delta, np.full(p.n, SENSE_GE)))
    out = golden(p, reqs)
    assert 0 < sum(bin(int(x)).count("1") for x in out) < len(out) * p.n   # not constant
    simulate("bnn_epilogue", p, reqs, "epilogue_full_range", idle=0.1, stall=0.2)


# -- issue 42: the residual path (save of v, 2×2 max of integer residuals) and raw input --------
def epilogue_residual_directed(p, rng):
    """res_pool: the maximum at each of the 4 window positions, all 4 equal, the extremes of
    res_width; τ at v − 1, v, v + 1; accumulators over the whole signed range, so the saved v
    wraps at res_width bits.  Returns (requests, expected saved v per request: every item is
    its own window, and the number of saved values that wrapped)."""
    n, rw = p.n, p.res_width
    lo, hi = -(1 << (rw - 1)), (1 << (rw - 1)) - 1
    k_max = (1 << p.k_width) - 1
    reqs, saved, wraps = [], [], [0]

    def item(acc, k, res4, delta):
        r = res4.max(1) if p.res_pool else res4[:, 0]
        v = (int(k) - 2 * acc if p.fixup else acc) + r          # python ints: independent
        tau = np.clip(v + delta, -(1 << (p.tau_width - 1)), (1 << (p.tau_width - 1)) - 1)
        reqs.append(bf.epilogue_request(p, acc, k, tau, np.full(n, SENSE_GE),
                                        res4 if p.res_pool else res4[:, 0]))
        saved.append([((int(x) - lo) % (1 << rw)) + lo for x in v])
        wraps[0] += sum(not lo <= int(x) <= hi for x in v)
    for pos in range(5):                              # max at 0..3, then all four equal
        res4 = rng.integers(lo, hi + 1, (n, 4))
        res4[:, pos % 4] = np.maximum(res4.max(1), res4[:, pos % 4])
        if pos == 4:
            res4[:] = res4[:, :1]
        for delta in (-1, 0, 1):
            acc = rng.integers(-(1 << 12), 1 << 12, n)
            item(acc, rng.integers(0, k_max + 1), res4, np.full(n, delta))
    for ext in (lo, hi):
        item(np.full(n, -(1 << (p.acc_width - 1))), k_max, np.full((n, 4), ext), np.zeros(n))
        item(np.full(n, (1 << (p.acc_width - 1)) - 1), 0, np.full((n, 4), ext), np.zeros(n))
    for _ in range(6):                                # wide accumulators: v wraps when saved
        acc = rng.integers(-(1 << (p.acc_width - 1)), 1 << (p.acc_width - 1), n)
        item(acc, rng.integers(0, k_max + 1), rng.integers(lo, hi + 1, (n, 4)),
             rng.integers(-1, 2, n))
    return reqs, saved, wraps[0]


@pytest.mark.parametrize("kw", [dict(n=8, res_width=20, res_pool=True, save=True),
                                pytest.param(dict(n=3, res_width=10, fixup=False, save=True,
                                                  sense=False, acc_width=24, k_width=12,
                                                  tau_width=28), marks=pytest.mark.slow)])
def test_bnn_epilogue_residual_save_and_max(kw):
    """The residual path in RTL: v (residual included) saved, wrapped to res_width, and the 2×2
    max of 4 integer residuals added before the compare; and the raw-input build (fixup =
    false, v = acc + res, the BWN first layer's; slow: make test runs that build in
    test_layer_bwn_stem_slice).  Directed corners (expected saved v computed here with python
    integers), then the random workload with pool windows."""
    p = BnnEpilogueParams(**kw)          # kw0: the build of the chain and block tests
    rng = np.random.default_rng(seed(575))
    reqs, saved, wraps = epilogue_residual_directed(p, rng)
    out = golden(p, reqs)
    assert [bf.epilogue_saved(p, x).tolist() for x in out] == saved
    assert wraps > 0                                  # the wrap of the saved v is exercised
    bits = np.array([bf.epilogue_result(p, x) for x in out])
    assert 0 < bits.sum() < bits.size
    reqs += workload_requests("bnn_epilogue", p, rng, 120)
    _, got = simulate("bnn_epilogue", p, reqs, "residual", idle=0.2, stall=0.3)
    assert got[:len(saved)] == [int(x) for x in out]
    s, _ = simulate("bnn_epilogue", p, reqs[:30], "residual_timing", timing=True)
    assert s["back_to_back_latency"] == 1


def test_residual_chain_two_blocks_rtl():
    """Two binarized conv blocks joined by the residual path, both epilogues in RTL: block 1
    (3×3, 6×6 map, 8 images, C = 16 → 8 channels) adds an input residual r0, thresholds and
    saves v1 = conv1 + r0; block 2 (3×3 stride 2 on block 1's RTL bits, 6×6 → 3×3) adds the
    2×2 max of the RTL-saved v1 (res_pool) and thresholds.  Both outputs against float64
    conv + BN + sign, block 2's residual against the model's max_pool of the float v1."""
    rng = np.random.default_rng(seed(576))
    pe = BnnEpilogueParams(n=8, res_width=20, res_pool=True, save=True)
    h, nimg, c, o = 6, 8, 16, 8
    x = rand_bits(rng, (h, h, nimg, c))
    w1, w2 = rand_bits(rng, (3, 3, c, o)), rand_bits(rng, (3, 3, o, o))
    bn1, bn2 = _bn_params(rng, o), _bn_params(rng, o)
    (tau1, sense1), (tau2, sense2) = bm.bn_threshold(**bn1), bm.bn_threshold(**bn2)
    r0 = rng.integers(-30, 31, (h, h, nimg, o))
    acc1, excl1, _ = bm.bconv(x, w1)
    items = []
    for py in range(h):
        for px in range(h):
            for img in range(nimg):
                items.append(bf.epilogue_request(pe, acc1[py, px, img], c * (9 - excl1[py, px]),
                                                 tau1, sense1, np.repeat(r0[py, px, img][:, None],
                                                                         4, 1)))
    _, out1 = simulate("bnn_epilogue", pe, items, "chain_block1", stall=0.2)
    bits1 = np.array([bf.epilogue_result(pe, x) for x in out1]).reshape(h, h, nimg, o)
    v1 = np.array([bf.epilogue_saved(pe, x) for x in out1]).reshape(h, h, nimg, o)
    ref1 = bm.conv_pm1_reference(x, w1) + r0
    assert np.array_equal(v1, ref1)
    assert np.array_equal(bits1, bm.bn_sign_reference(ref1, **bn1))
    acc2, excl2, _ = bm.bconv(bits1, w2, stride=2, pad=1)
    ph = acc2.shape[0]
    items = []
    for py in range(ph):
        for px in range(ph):
            win = bm.residual_window4(v1, py, px)               # (nimg, o, 4)
            for img in range(nimg):
                items.append(bf.epilogue_request(pe, acc2[py, px, img], o * (9 - excl2[py, px]),
                                                 tau2, sense2, win[img]))
    _, out2 = simulate("bnn_epilogue", pe, items, "chain_block2", stall=0.2)
    bits2 = np.array([bf.epilogue_result(pe, x) for x in out2]).reshape(ph, ph, nimg, o)
    ref2 = bm.conv_pm1_reference(bits1, w2, stride=2, pad=1) + bm.max_pool(ref1, 2)
    assert np.array_equal(bits2, bm.bn_sign_reference(ref2, **bn2))
    assert 0 < bits2.sum() < bits2.size


# -- issue 42: the last-layer affine ---------------------------------------------------------------
def test_bnn_affine_fixed_point_against_float64():
    """bnn_affine in RTL: y = (K − 2·acc)·scale_q + bias_q exact.  Every operand at its extremes
    (the widest y), then a last FC layer 1024→5 on 8 images (popcounts from the model's tiled
    BMM) with scale and bias quantized to F = 12 fractional bits: the RTL's y·2^−12 equals the
    model's float64 v·scale + bias, v the float64 ±1 product, bit for bit (float64 is exact at
    these sizes)."""
    p = BnnAffineParams(n=5, acc_width=17, k_width=11, scale_width=14, bias_width=24)
    rng = np.random.default_rng(seed(577))
    reqs, expect = [], []
    a_lo, a_hi = -(1 << 16), (1 << 16) - 1
    s_lo, s_hi = -(1 << 13), (1 << 13) - 1
    b_lo, b_hi = -(1 << 23), (1 << 23) - 1
    for acc in (a_lo, a_hi, 0):
        for k in (0, (1 << 11) - 1):
            for sc in (s_lo, s_hi, 0, -1):
                for bi in (b_lo, b_hi):
                    reqs.append(bf.affine_request(p, np.full(5, acc), k, np.full(5, sc),
                                                  np.full(5, bi)))
                    expect.append([(k - 2 * acc) * sc + bi] * 5)     # python ints
    frac = 12
    k = 1024
    x, w = rand_bits(rng, (8, k)), rand_bits(rng, (k, 5))
    ref = bm.dot_pm1_reference(x, w)                                   # float64 ±1 FC
    acc = bm.bmm_tiled(x, w)
    scale = rng.normal(0, 1, 5)
    bias = rng.normal(0, 4, 5)
    scale_q = np.round(scale * 2**frac).astype(np.int64)
    bias_q = np.round(bias * 2**frac).astype(np.int64)
    for img in range(8):
        reqs.append(bf.affine_request(p, acc[img], k, scale_q, bias_q))
    out = golden(p, reqs)
    assert [bf.affine_result(p, y).tolist() for y in out[:len(expect)]] == expect
    _, got = simulate("bnn_affine", p, reqs, "affine", idle=0.2, stall=0.3)
    assert got == [int(y) for y in out]
    real = bm.last_layer_affine(ref, scale_q / 2**frac, bias_q / 2**frac)   # float64 model
    rtl = np.array([bf.affine_result(p, y) for y in got[len(expect):]], dtype=np.float64)
    assert np.array_equal(rtl / 2**frac, real)
    s, _ = simulate("bnn_affine", p, reqs[:30], "affine_timing", timing=True)
    assert s["back_to_back_latency"] == 1 and s["back_to_back_issue_intervals"] == [1]


# -- issue 42: the BWN first layer ---------------------------------------------------------------
def test_bwn_array_random_and_extremes():
    """bwn_array (fold 2, narrow activations) on random requests under stalls, then every
    activation extreme against every weight (−2^(a−1) negated is +2^(a−1): one bit wider), C at
    the wrap; and back-to-back timing."""
    p = BwnArrayParams(m=3, n=2, k=12, fold=2, a_width=5, acc_width=12)
    rng = np.random.default_rng(seed(578))
    reqs = workload_requests("bwn_array", p, rng, 120)
    for a in (-16, 15, 0):
        for wbit in (0, 1):
            b = np.full((p.k, p.n), wbit)
            b[0, 0] ^= 1                                     # one column differs in one bit
            reqs.append(bf.bwn_request(p, np.full((p.m, p.k), a), b, np.full((p.m, p.n), 2000)))
    out = golden(p, reqs)
    d = bf.array_result(p, out[-6])                  # a = −16, w = 0 (but one): ±16·12 onto 2000
    assert d[0, 0] == 16 * 12 - 2 * 16 + 2000 - 4096 and d[0, 1] == 16 * 12 + 2000 - 4096
    simulate("bwn_array", p, reqs, "bwn", idle=0.2, stall=0.3)
    s, _ = simulate("bwn_array", p, reqs[:30], "bwn_timing", timing=True)
    assert s["back_to_back_latency"] == 2 and s["back_to_back_issue_intervals"] == [2]


def bwn_stem_slice(pixels, rng_seed, h=16):
    """The ResNet-18 stem's geometry (7×7, stride 4, pad 3, C = 3 -> 8 channels here), INT8
    images (8 of them), at ``pixels`` of the (h/4)² output: per pixel the in-frame taps' 3
    channels are chained through bwn_array (m8n8k8, the default) in K-chunks of 8 (zero
    activations pad the last), then bnn_epilogue (fixup = false, save) thresholds v = D and saves it as the first
    residual.  Against float64 conv of the ±1 weights + BN + sign, and the integer conv; the
    array's operations and cycles against throughput.bwn_ops."""
    rng = np.random.default_rng(rng_seed)
    pa = BwnArrayParams()
    pe = BnnEpilogueParams(n=8, fixup=False, res_width=20, save=True)
    c, o, r, stride, pad = 3, 8, 7, 4, 3
    x = rng.integers(-128, 128, (h, h, 8, c))
    w = rand_bits(rng, (r, r, c, o))
    ref = bm.bwn_conv(x, w, stride, pad)
    flt = np.zeros(ref.shape)                                # float64, independent of the model
    xp = np.zeros((h + 2 * pad + r, h + 2 * pad + r, 8, c))
    xp[pad:pad + h, pad:pad + h] = x
    for dy in range(r):
        for dx in range(r):
            flt += xp[dy:dy + h:stride, dx:dx + h:stride][:ref.shape[0], :ref.shape[1]] @ \
                bm.to_pm1(w[dy, dx])
    assert np.array_equal(ref, flt)
    bn = _bn_params(rng, o)
    bn["mean"], bn["var"] = rng.normal(0, 300, o), rng.uniform(1e3, 1e5, o)
    tau, sense = bm.bn_threshold(**bn)
    reqs = []
    for (py, px) in pixels:
        taps = [(dy, dx) for dy in range(r) for dx in range(r)
                if 0 <= py * stride - pad + dy < h and 0 <= px * stride - pad + dx < h]
        a = np.concatenate([x[py * stride - pad + dy, px * stride - pad + dx] for dy, dx in taps],
                           axis=1)                                          # (8 images, taps·C)
        b = np.concatenate([w[dy, dx] for dy, dx in taps], axis=0)          # (taps·C, O)
        kk = -(-a.shape[1] // pa.k) * pa.k
        a = np.pad(a, ((0, 0), (0, kk - a.shape[1])))
        b = np.pad(b, ((0, kk - b.shape[0]), (0, 0)))
        steps = kk // pa.k
        for t in range(steps):
            reqs.append(bf.bwn_request(pa, a[:, t * pa.k:(t + 1) * pa.k],
                                       b[t * pa.k:(t + 1) * pa.k], chain=t > 0,
                                       emit=t == steps - 1))
    s, got = simulate("bwn_array", pa, reqs, "bwn_stem", timing=True)
    from tcgen.units.bmma import throughput as tp
    per_pixel = tp.bwn_ops(tp.Layer("bwn", c, o, h, r, stride), batch=8,
                           tile=(pa.m, pa.n, pa.k))["per_pixel"]
    model_ops = sum(int(per_pixel[py, px]) for py, px in pixels)
    assert len(reqs) == model_ops and s["back_to_back_cycles"] == model_ops * pa.fold + 1
    items = []
    for i, (py, px) in enumerate(pixels):
        d = bf.array_result(pa, got[i])
        assert np.array_equal(d, ref[py, px]), (py, px)
        for img in range(8):
            items.append(bf.epilogue_request(pe, d[img], None, tau, sense))
    _, out = simulate("bnn_epilogue", pe, items, "bwn_stem_epilogue", stall=0.2)
    sign = bm.bn_sign_reference(flt, **bn)
    bits = np.array([bf.epilogue_result(pe, y) for y in out])
    saved = np.array([bf.epilogue_saved(pe, y) for y in out])
    expect = np.concatenate([sign[py, px] for py, px in pixels])
    assert np.array_equal(bits, expect)
    assert np.array_equal(saved, np.concatenate([ref[py, px] for py, px in pixels]))
    assert 0 < bits.sum() < bits.size
    return len(reqs)


@pytest.mark.slow           # ~10 s; the basic block's RTL run stays in make test
def test_layer_bwn_stem_slice():
    """A corner, an edge and an interior pixel of the stem (7×7/s4 on 16×16)."""
    assert bwn_stem_slice([(0, 0), (0, 2), (2, 1)], seed(579)) > 0


@pytest.mark.slow
def test_slow_layer_bwn_stem_full():
    """Every output pixel of the stem on a 32×32 INT8 image (8×8 outputs)."""
    bwn_stem_slice([(py, px) for py in range(8) for px in range(8)], seed(611), h=32)


# -- issue 42: bnn_layer, the array + serializer + epilogue top ---------------------------------
def test_bnn_layer_stream_backpressure_reset_and_latency():
    """bnn_layer (m3n2k32 F=2, res_pool; the default sense/save) on its random workload
    (chains of 1..3 operations, random τ/sense/residuals, pool windows closed at random, so
    the 3 interleaved pool windows of the epilogue are exercised): back to back (latency
    fold + 2), under idle cycles and output stalls, and reset with operations in flight;
    against the composed golden model (bmma_array_model, then bnn_epilogue_model)."""
    p = BnnLayerParams(m=3, n=2, k=32, fold=2, res_pool=True, res_width=8)
    reqs = workload_requests("bnn_layer", p, np.random.default_rng(seed(613)), 90)
    s = run_stream("bnn_layer", p, {"req__payload": np.array(reqs, dtype=object)},
                   name="layer_stream", idle=0.3, stall=0.4, seed=3)
    assert s["mismatches"] == 0 and s["reset_leaked"] == 0
    assert all(s[f"{sc}_inputs"] == len(reqs) for sc in ("back_to_back", "backpressure",
                                                          "reset_mid_operation"))
    assert s["back_to_back_latency"] == p.fold + 2 == get_unit("bnn_layer").interface(p).latency
    assert s["back_to_back_vectors"] > 30


def _check_block(run):
    assert run.ok, [(r["name"], r["checks"]) for r in run.runs]
    for r in run.runs:
        print(f"[bnn_layer block] {r['name']}: requests {r['ops']} (model {r['model_ops']}), "
              f"RTL cycles {r['cycles']}, model {r['model_cycles']} (the array alone "
              f"{r['array_cycles']})")
        assert r["ops"] == r["model_ops"]
        assert r["cycles"] == r["model_cycles"]
        assert r["issue_intervals"] == r["model_intervals"]
        drive = r["drive"]
        assert len(drive["req__valid"]) == r["cycles"]
        assert int(drive["req__valid"].sum()) >= r["ops"]
    return run


def test_resnet18_basic_block_rtl_and_cycles():
    """A binarized ResNet-18 basic block at 3×3, 8 channels, 8 images (K pads 8 → 32 as
    layer 1's 64 → 128) on bnn_layer m8n8k32: conv 1 + threshold, conv 2 on its RTL bits +
    the identity residual + threshold + save, both on the one top; bits and saved v against
    float64, requests = throughput.layer_ops, cycles = throughput.layer_top_cycles (49
    requests, 79 cycles a conv: the corner tiles' 4 operations wait for the 8-row
    serializer)."""
    run = _check_block(run_resnet_block(3, 8, block_params(), seed(585)))
    assert [r["cycles"] for r in run.runs] == [79, 79] and run.cycles == 158


@pytest.mark.slow
def test_slow_resnet18_basic_block_rtl_and_cycles():
    """The same at 8×8 and 32 channels (4 output-channel tiles, no K padding)."""
    _check_block(run_resnet_block(8, 32, block_params(), seed(586)))


@pytest.mark.slow
def test_slow_resnet18_basic_block_layer1_channels():
    """ResNet-18 layer 1's channel count (64, K padded 64 → 128) on the default top
    (m8n8k128), a 4×4 map: 800 requests a conv, every tile ≥ 4 operations."""
    _check_block(run_resnet_block(4, 64, block_params(k=128), seed(614)))


@pytest.mark.slow
def test_slow_bnn_layer_pooled_conv():
    """A VGG-style conv + BN + sign + 2×2 OR-pool on bnn_layer (5×5 map: ceil-mode partial
    windows; 8 images): the 8 rows of every tile pool in their own windows (pool_rows = m)
    across the 4 pixels of a window, against or_pool of the float64 sign."""
    rng = np.random.default_rng(seed(615))
    p = block_params(save=False, res_width=0)
    x = rand_bits(rng, (5, 5, 8, 8))
    w = rand_bits(rng, (3, 3, 8, 16))
    bn = _bn_params(rng, 16)
    bits, _, run = run_conv(p, x, w, bn, "layer_pool", pool=2)
    assert all(run["checks"].values()), run["checks"]
    sign = bm.bn_sign_reference(bm.conv_pm1_reference(x, w), **bn)
    assert np.array_equal(bits, bm.or_pool(sign, 2))
    assert 0 < bits.sum() < bits.size


# -- issue 42: the MNIST MLP end to end on RTL (reduced hidden width) -----------------------------
def mnist_mlp_rtl(hidden, rng_seed, frac=12):
    """MNIST-MLP as the code runs it (notes §3.4: binarized input x ≥ 0, FC 784→H, H→H ×2,
    H→10 (Table 5's fourth hidden layer is not in the code), BN+sign folded into
    thresholds, the last layer's BN kept as an affine map) on 8 images, every layer on RTL:
    the hidden layers on bnn_layer (m8n8k128, K padded with 0 bits, output tiles of 8; its
    packed bits the next layer's input), the output layer on bmma_array then bnn_affine
    (scale/bias quantized to ``frac`` fractional bits; the top has no affine).  Against
    float64 ±1 matmuls + BN + sign and the float64 affine.  Returns per layer (requests,
    throughput.layer_ops, RTL cycles, throughput.layer_top_cycles (hidden layers; the output
    layer: the array alone's ops + 1))."""
    from tcgen.units.bmma import throughput as tp
    rng = np.random.default_rng(rng_seed)
    pa, pf = BmmaArrayParams(), BnnAffineParams()
    pl = BnnLayerParams(res_width=0, save=False)
    sizes = [784, hidden, hidden, hidden, 10]
    n_fc = len(sizes) - 1
    x = bm.binarize(rng.normal(size=(8, 784)))
    ws = [rand_bits(rng, (sizes[i], sizes[i + 1])) for i in range(n_fc)]
    bns = [_bn_params(rng, sizes[i + 1]) for i in range(n_fc - 1)]
    scale_q = np.round(rng.normal(0, 1, 10) * 2**frac).astype(np.int64)
    bias_q = np.round(rng.normal(0, 4, 10) * 2**frac).astype(np.int64)
    stats = []
    act = x
    for layer in range(n_fc - 1):
        bits, run = run_fc(pl, act, ws[layer], bns[layer], f"mlp_fc{layer}")
        assert all(run["checks"].values()), run["checks"]
        ref = bm.dot_pm1_reference(act, ws[layer])
        assert np.array_equal(bits, bm.bn_sign_reference(ref, **bns[layer]))
        stats.append((run["ops"], run["model_ops"], run["cycles"], run["model_cycles"]))
        act = bits
    # the output layer: bmma_array, then bnn_affine
    k, n = ws[-1].shape
    kp = -(-k // 128) * 128
    ip = np.zeros((8, kp), np.uint8)
    ip[:, :k] = act
    wp = np.zeros((kp, 16), np.uint8)
    wp[:k, :n] = ws[-1]
    reqs = [bf.array_request(pa, ip[:, 128 * s:128 * s + 128], wp[128 * s:128 * s + 128,
                                                                 8 * t:8 * t + 8],
                             chain=s > 0, emit=s == kp // 128 - 1)
            for t in range(2) for s in range(kp // 128)]
    summ, got = simulate("bmma_array", pa, reqs, "mlp_out")
    ops = tp.layer_ops(tp._fc(k, n))["ops"]
    stats.append((len(reqs), ops, summ["back_to_back_cycles"], ops + 1))
    acc = np.concatenate([bf.array_result(pa, g) for g in got], axis=1)[:, :n]
    sc, bi = np.zeros(16, np.int64), np.zeros(16, np.int64)
    sc[:10], bi[:10] = scale_q, bias_q
    accp = np.zeros((8, 16), np.int64)
    accp[:, :10] = acc
    items = [bf.affine_request(pf, accp[img, 8 * t:8 * t + 8], hidden, sc[8 * t:8 * t + 8],
                               bi[8 * t:8 * t + 8]) for img in range(8) for t in range(2)]
    _, out = simulate("bnn_affine", pf, items, "mlp_affine")
    y = np.array([bf.affine_result(pf, o) for o in out], dtype=np.float64).reshape(8, 16)[:, :10]
    real = bm.last_layer_affine(bm.dot_pm1_reference(act, ws[-1]), scale_q / 2**frac,
                                bias_q / 2**frac)
    assert np.array_equal(y / 2**frac, real)
    for i, st in enumerate(stats):
        print(f"[mnist mlp] layer {i}: requests {st[0]} (model {st[1]}), RTL cycles {st[2]}, "
              f"model {st[3]}")
    return stats


@pytest.mark.slow
def test_slow_mnist_mlp_end_to_end_rtl():
    """Hidden width 64: 56 + 8 + 8 + 2 array operations per 8 images, equal to the throughput
    model's count layer by layer, and each layer's cycles to its cycle model."""
    for n_req, model_ops, cycles, model_cycles in mnist_mlp_rtl(64, seed(587)):
        assert n_req == model_ops and cycles == model_cycles


@pytest.mark.slow
def test_slow_mnist_mlp_full_end_to_end_rtl():
    """The full MNIST-MLP (784→1024→1024→1024→10): 2,960 array operations per 8 images, the
    notes' total; cycles against the cycle model layer by layer."""
    stats = mnist_mlp_rtl(1024, seed(612))
    assert [st[0] for st in stats] == [st[1] for st in stats] == [896, 1024, 1024, 16]
    assert sum(st[0] for st in stats) == 2960
    assert all(st[2] == st[3] for st in stats)
