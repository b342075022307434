"""cocotb: FP adder, multiplier and converter RTL against the numeric reference (zero mismatches).

Every test checks its vectors on the batch path (tcgen/verify/batch.py: stimulus and expected
values loaded
into the simulation, compared there); the pipelined back-to-back tests use the per-vector
fixed-latency bench, which also reports the latency it measured.  The expected values come from
tcgen.hw.numeric (itself checked against Fractions in test_numeric.py).  Seeds are printed and
``TCGEN_SEED`` overrides them.
"""
from __future__ import annotations

import numpy as np
import pytest

from tcgen.verify import harness
from tcgen.hw import numeric as num
from tcgen.registry import get_unit
from tcgen.verify.stimulus import (concat_pairs, convert_corners, cross, dot_lanes, edge_values,
                      random_fp_pairs, result_corners, specials, tie_pairs)

MODES = num.MODES


def _run(unit, params, stimulus, request, per_vector=False):
    name = request.node.name[:80]
    if per_vector:
        summary = harness.run(unit, params, stimulus=stimulus, name=name)
    else:
        summary = harness.run_batch(unit, params, stimulus=stimulus, name=name, depth=1 << 16)
        assert summary["checked"] == summary["vectors"]
    n = len(next(iter(stimulus.values())))
    assert summary["vectors"] == n
    assert summary["mismatches"] == 0
    return summary


def _binop(op, fmt, mode, a, b, request, per_vector=False, **kw):
    unit = get_unit(op)
    return _run(op, unit.params(fmt=fmt, rounding=mode, **kw), {"a": a, "b": b}, request,
                per_vector)


# -- FP16: specials, directed, 200,000 random per op and mode (the second 100,000 in
# make test-slow) -------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["fp_add", "fp_mul"])
def test_fp16_specials_and_directed(op, mode, request):
    rng = np.random.default_rng(harness.seed(16))
    pairs = concat_pairs(cross(specials("fp16")),          # every pair of special classes
                         cross(edge_values("fp16")),       # ties/overflow/underflow/cancel
                         tie_pairs("fp16", rng, 4000))
    _binop(op, "fp16", mode, *pairs, request)


@pytest.mark.parametrize("chunk", [0, pytest.param(1, marks=pytest.mark.slow)])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["fp_add", "fp_mul"])
def test_fp16_random(op, mode, chunk, request):
    """2 chunks × 100,000 = 200,000 random pairs per op and rounding mode (chunk 1 in make
    test-slow)."""
    rng = np.random.default_rng(harness.seed(1600 + chunk))
    _binop(op, "fp16", mode, *random_fp_pairs("fp16", rng, 100_000), request)


# -- FP8: exhaustive ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["rne", pytest.param("rtz", marks=pytest.mark.slow)])
@pytest.mark.parametrize("op", ["fp_add", "fp_mul"])
@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
def test_fp8_exhaustive(fmt, op, mode, request):
    v = np.arange(256, dtype=np.uint64)
    _binop(op, fmt, mode, *cross(v), request)


# -- BF16 and FP32 -----------------------------------------------------------------------------
# RTZ at BF16 and the FP32 multiplier's: make test-slow (make test's budget; FP16 runs both modes)
@pytest.mark.parametrize("mode", ["rne", pytest.param("rtz", marks=pytest.mark.slow)])
@pytest.mark.parametrize("op", ["fp_add", "fp_mul"])
def test_bf16(op, mode, request):
    rng = np.random.default_rng(harness.seed(1616))
    pairs = concat_pairs(cross(edge_values("bf16")), tie_pairs("bf16", rng, 2000),
                         random_fp_pairs("bf16", rng, 50_000))
    _binop(op, "bf16", mode, *pairs, request)


@pytest.mark.parametrize("chunk", [0, 1])
@pytest.mark.parametrize("mode", MODES)
def test_fp32_add(mode, chunk, request):
    """2 chunks × 50,000 random + specials/edges/ties = > 100,000 per rounding mode."""
    rng = np.random.default_rng(harness.seed(3200 + chunk))
    extra = concat_pairs(cross(edge_values("fp32")), tie_pairs("fp32", rng, 2000)) \
        if chunk == 0 else (np.zeros(0, np.uint64), np.zeros(0, np.uint64))
    _binop("fp_add", "fp32", mode, *concat_pairs(extra, random_fp_pairs("fp32", rng, 50_000)),
           request)


@pytest.mark.parametrize("mode", ["rne", pytest.param("rtz", marks=pytest.mark.slow)])
def test_fp32_mul(mode, request):
    rng = np.random.default_rng(harness.seed(3232))
    pairs = concat_pairs(cross(specials("fp32")), tie_pairs("fp32", rng, 1000),
                         random_fp_pairs("fp32", rng, 2_000))    # Icarus (~1.4 ms a vector)
    _binop("fp_mul", "fp32", mode, *pairs, request)


_MUL_VARIANTS = {"early": {"norm": "early"}, "early_narrow": {"norm": "early", "rshift": "narrow"},
                 "booth4_early_narrow": {"mult": "booth4", "norm": "early", "rshift": "narrow"},
                 "compound": {"rinc": "compound"},
                 # issue 43's lowest-energy multiplier (docs/peers.md; mult=auto: booth4 at
                 # FP16 and FP32, the array at BF16); every FP16 RNE pair too
                 # (scripts/fp_exhaustive.py, reports/hw_verification_exhaustive.md)
                 "low_energy": {"tree": "tdm", "rinc": "compound", "cpa": "brent_kung"}}
_MUL_VARIANTS_FAST = (("booth4_early_narrow", "fp16", 5_000, "rne"),
                      ("booth4_early_narrow", "bf16", 5_000, "rtz"))


@pytest.mark.parametrize("variant,fmt,n,mode", list(_MUL_VARIANTS_FAST)
    + [pytest.param(v, f, n, r, marks=pytest.mark.slow) for v in _MUL_VARIANTS for f, n, r in
       [("fp16", 5_000, "rne"), ("bf16", 5_000, "rtz"), ("fp16", 5_000, "rtz"),
        ("bf16", 5_000, "rne"), ("fp32", 2_000, "rne"), ("fp32", 2_000, "rtz")]
       + [(f, 1_000_000, r) for f in ("fp16", "bf16", "fp32") for r in MODES]
       if (v, f, r) not in {(x[0], x[1], x[3]) for x in _MUL_VARIANTS_FAST}
       or n == 1_000_000])
def test_mul_variants(variant, fmt, n, mode, request):
    """fp_mul's issue-17 variants (norm=early; with rshift=narrow; rinc=compound) and issue 43's
    lowest-energy combination: every pair of edge values (subnormal factors of every
    leading-zero count, products at the underflow and overflow edges), ties and random pairs,
    bit-exact against the model (FP8: proved formally in test_formal.py, rshift=narrow alone
    too).  make test: booth4+early+narrow at FP16 RNE and BF16 RTZ with a few thousand random
    pairs (Icarus; the lowest-energy combination is proved at FP8 in make test and checked on
    every FP16 and BF16 RNE pair by scripts/fp_exhaustive.py); make test-slow: the other
    variants and modes, FP32, and 10^6 pairs (Verilator)."""
    rng = np.random.default_rng(harness.seed(3240))
    pairs = concat_pairs(cross(edge_values(fmt)), tie_pairs(fmt, rng, 1000),
                         random_fp_pairs(fmt, rng, n))
    _binop("fp_mul", fmt, mode, *pairs, request, **_MUL_VARIANTS[variant])


@pytest.mark.slow
@pytest.mark.parametrize("fmt,n", [("fp16", 20_000), ("bf16", 20_000), ("fp32", 5_000)])
@pytest.mark.parametrize("cpa", ["ripple", "sklansky", "kogge_stone", "brent_kung"])
def test_mul_cpa(cpa, fmt, n, request):
    """fp_mul cpa=<topology> (intarith.prefix_add as the product's final adder, alone and with
    booth4 + early + narrow), RNE, edge x edge, ties and random pairs against the model (FP8
    and int_mul: proved in test_formal.py)."""
    rng = np.random.default_rng(harness.seed(3241))
    pairs = concat_pairs(cross(edge_values(fmt)), tie_pairs(fmt, rng, 1000),
                         random_fp_pairs(fmt, rng, n))
    _binop("fp_mul", fmt, "rne", *pairs, request, cpa=cpa)
    _binop("fp_mul", fmt, "rne", *pairs, request, cpa=cpa, mult="booth4", norm="early",
           rshift="narrow")


@pytest.mark.parametrize("fmt,n,extra", [("fp16", 3_000, {})] + [
    pytest.param(f, n, x, marks=pytest.mark.slow)
    for f, n in (("fp16", 20_000), ("bf16", 20_000), ("fp32", 5_000))
    for x in ({}, {"mult": "booth4", "norm": "early", "rshift": "narrow", "cpa": "kogge_stone"})
    if (f, x) != ("fp16", {})])
def test_mul_tree_gkl(fmt, n, extra, request):
    """fp_mul tree=gkl (the significand product's tree of Goncharov-Kulikov-Levtsov MDFA
    blocks; alone and with booth4 + early + narrow + Kogge-Stone), RNE, edge x edge, ties and
    random pairs against the model (FP8 and int_mul: proved in test_formal.py)."""
    rng = np.random.default_rng(harness.seed(3242))
    pairs = concat_pairs(cross(edge_values(fmt)), tie_pairs(fmt, rng, 1000),
                         random_fp_pairs(fmt, rng, n))
    _binop("fp_mul", fmt, "rne", *pairs, request, tree="gkl", **extra)


@pytest.mark.parametrize("fmt,n,mult", [("fp16", 20_000, "array")] + [
    pytest.param(f, n, m, marks=pytest.mark.slow)
    for f, n, m in (("fp16", 20_000, "booth4"), ("bf16", 20_000, "array"),
                    ("fp32", 5_000, "array"), ("fp32", 5_000, "booth4"))])
def test_mul_tree_tdm(fmt, n, mult, request):
    """fp_mul tree=tdm (three-greedy on arrival times), RNE, edge x edge, ties and random pairs
    against the model."""
    rng = np.random.default_rng(harness.seed(3243))
    pairs = concat_pairs(cross(edge_values(fmt)), tie_pairs(fmt, rng, 1000),
                         random_fp_pairs(fmt, rng, n))
    _binop("fp_mul", fmt, "rne", *pairs, request, tree="tdm", mult=mult)


@pytest.mark.parametrize("op,isolate,fmt,n", [("fp_mul", "specials", "fp16", 3_000),
                                               ("fp_add", "far+specials", "fp16", 3_000)] + [
    pytest.param(op, iso, f, n, marks=pytest.mark.slow)
    for op, iso in (("fp_mul", "specials"), ("fp_add", "far+specials"), ("fp_add", "far"))
    for f, n in (("fp16", 50_000), ("bf16", 20_000), ("fp32", 5_000))])
def test_isolate(op, isolate, fmt, n, request):
    """Operand isolation (issue 43), RNE: every pair of edge values (specials, subnormals, far
    and near exponents), ties and random pairs against the model (FP8: proved in
    test_formal.py::test_fp8_isolate)."""
    rng = np.random.default_rng(harness.seed(3244))
    pairs = concat_pairs(cross(edge_values(fmt)), tie_pairs(fmt, rng, 1000),
                         random_fp_pairs(fmt, rng, n))
    _binop(op, fmt, "rne", *pairs, request, isolate=isolate)


_GATE_KW = {"fp_mul": [{"gate": "norm+subnormal"},
                       {"gate": "norm+subnormal", "mult": "array", "tree": "tdm",
                        "norm": "late", "rshift": "wide", "cuts": "lzc+norm"},
                       {"gate": "norm", "isolate": "specials", "pipeline": 2}],
            "fp_add": [{"gate": "norm+subnormal"},
                       {"gate": "norm+subnormal", "isolate": "far+specials",
                        "cuts": "align+lzc+norm"},
                       {"gate": "subnormal", "pipeline": 2}]}


@pytest.mark.parametrize("op", ["fp_add", "fp_mul"])
def test_gate_builds_what_it_names(op):
    """Each gate choice builds its own paths and no other: the short normalization beside the
    general one (``gate_fast``) for ``norm``, the held right shift (``*_shr_gin``) for
    ``subnormal`` ("subnormal" contains "norm": the first study run measured norm+subnormal
    for it), both for ``norm+subnormal``, neither for ``none`` (the plain unit's Verilog)."""
    from tcgen.generate import verilog
    u = get_unit(op)
    for gate, fast, under in (("none", False, False), ("norm", True, False),
                              ("subnormal", False, True), ("norm+subnormal", True, True)):
        text = verilog(op, u.params(fmt="fp16", gate=gate))
        assert ("gate_fast" in text, "_shr_gin" in text) == (fast, under), gate
    assert verilog(op, u.params(fmt="fp16", gate="none")) == verilog(op, u.params(fmt="fp16"))


@pytest.mark.parametrize("op,kw,fmt,n", [(op, _GATE_KW[op][0], "fp16", 3_000)
                                         for op in _GATE_KW] + [
    pytest.param(op, kw, f, n, marks=pytest.mark.slow) for op in _GATE_KW
    for i, kw in enumerate(_GATE_KW[op])
    for f, n in (("fp16", 50_000), ("bf16", 20_000), ("fp32", 5_000)) if (i, f) != (0, "fp16")],
    ids=lambda x: "-".join(f"{k}={v}" for k, v in x.items()) if isinstance(x, dict) else None)
def test_gate(op, kw, fmt, n, request):
    """Gating of the normalization and subnormal paths (issue 43), RNE: edge × edge
    (subnormals, underflow, cancellation), ties and random pairs against the model, alone,
    with the other techniques and registered between the paths (FP8: proved in
    test_formal.py::test_fp8_gate)."""
    rng = np.random.default_rng(harness.seed(3245))
    pairs = concat_pairs(cross(edge_values(fmt)), tie_pairs(fmt, rng, 1000),
                         random_fp_pairs(fmt, rng, n))
    _binop(op, fmt, "rne", *pairs, request, per_vector=kw.get("pipeline", 0) > 0, **kw)


@pytest.mark.parametrize("unit", ["fp_add", "fp_mul"])
@pytest.mark.parametrize("fmt", ["fp16", "bf16", "fp32"])
def test_fp_named_workloads(unit, fmt):
    """The FP units' named workloads (issue 43: isolation's energy depends on the data):
    ``normal`` draws a, b ~ N(0, 1) rounded to the format, ``relu`` the same with a clamped at
    0 -- half of a exact +0, the rest positive -- and the same seed gives the same stream."""
    u = get_unit(unit)
    p = u.params(fmt=fmt)
    assert set(u.workloads) >= {"normal", "relu"}
    for name in ("normal", "relu"):
        wl = u.named_workload(name, p)
        s = wl.stimulus(p, np.random.default_rng(7), 4000)
        again = wl.stimulus(p, np.random.default_rng(7), 4000)
        assert all(np.array_equal(s[k], again[k]) for k in ("a", "b"))
        a, b = (num.to_float(s[k], fmt) for k in ("a", "b"))
        assert np.isfinite(a).all() and np.isfinite(b).all()
        assert abs(b.mean()) < 0.1 and 0.9 < b.std() < 1.1
        x = np.random.default_rng(7).normal(0.0, 1.0, size=4000)
        if name == "relu":
            assert (s["a"] >> np.uint64(num.get_format(fmt).width - 1) == 0).all()
            assert 0.45 < np.mean(s["a"] == 0) < 0.55
            assert np.array_equal(s["a"], num.from_float(np.maximum(x, 0.0), fmt))
        else:
            assert np.array_equal(s["a"], num.from_float(x, fmt))


# -- pipelining and flush-to-zero ------------------------------------------------------------------
@pytest.mark.parametrize("pipeline", [1, pytest.param(2, marks=pytest.mark.slow)])   # the budget
@pytest.mark.parametrize("op", ["fp_add", "fp_mul"])
def test_pipelined_back_to_back(op, pipeline, request):
    """One new operation every cycle through the registered datapath (latency = pipeline)."""
    rng = np.random.default_rng(harness.seed(77))
    pairs = concat_pairs(cross(specials("fp16")), random_fp_pairs("fp16", rng, 8000))
    s = _binop(op, "fp16", "rne", *pairs, request, per_vector=True, pipeline=pipeline)
    assert s["latency"] == pipeline


@pytest.mark.parametrize("op", ["fp_add", "fp_mul"])
@pytest.mark.parametrize("fmt", ["fp16", "bf16"])
def test_ftz(op, fmt, request):
    rng = np.random.default_rng(harness.seed(88))
    pairs = concat_pairs(cross(edge_values(fmt)), random_fp_pairs(fmt, rng, 4000))
    _binop(op, fmt, "rne", *pairs, request, ftz=True)


# -- conversions ---------------------------------------------------------------------------------
FROM_FP16 = [("fp32", "rne", False), ("bf16", "rne", False), ("bf16", "rtz", False)] + \
    [(d, m, s) for d in ("fp8_e4m3", "fp8_e5m2") for m, s in
     (("rne", False), ("rtz", False), ("rne", True))] + \
    [pytest.param(d, "rtz", True, marks=pytest.mark.slow) for d in ("fp8_e4m3", "fp8_e5m2")]


@pytest.mark.parametrize("dst,mode,saturate", FROM_FP16)
def test_convert_from_fp16_exhaustive(dst, mode, saturate, request):
    p = get_unit("fp_convert").params(src="fp16", dst=dst, rounding=mode, saturate=saturate)
    _run("fp_convert", p, {"a": np.arange(1 << 16, dtype=np.uint64)}, request)


@pytest.mark.parametrize("src", ["bf16", "fp8_e4m3", "fp8_e5m2"])
def test_convert_to_fp32_exhaustive(src, request):
    fmt = num.get_format(src)
    p = get_unit("fp_convert").params(src=src, dst="fp32")
    _run("fp_convert", p, {"a": np.arange(1 << fmt.width, dtype=np.uint64)}, request)


@pytest.mark.parametrize("dst", ["fp16", "bf16", "fp8_e4m3"])
@pytest.mark.parametrize("mode", MODES)
def test_convert_from_fp32_random(dst, mode, request):
    rng = np.random.default_rng(harness.seed(3216))
    a = np.concatenate([np.array(edge_values("fp32"), np.uint64),
                        random_fp_pairs("fp32", rng, 10_000)[0],
                        # values across the destination's range and its edges
                        num.from_float(rng.standard_normal(5_000) *
                                       np.exp2(rng.integers(-30, 18, 5_000)), "fp32"),
                       convert_corners("fp32", dst, rng)])      # ties, overflow edge
    p = get_unit("fp_convert").params(src="fp32", dst=dst, rounding=mode)
    _run("fp_convert", p, {"a": a}, request)


def test_convert_pipelined(request):
    p = get_unit("fp_convert").params(src="fp32", dst="fp16", pipeline=1)
    rng = np.random.default_rng(harness.seed(5))
    s = _run("fp_convert", p, {"a": random_fp_pairs("fp32", rng, 4000)[0]}, request,
             per_vector=True)
    assert s["latency"] == 1


# -- the exact product and the library DP-4 (tcgen.hw.dot) -------------------------------------
@pytest.mark.parametrize("kw", [{}] + [pytest.param(x, marks=pytest.mark.slow) for x in (
    {"mult": "booth4"}, {"tree": "tdm", "isolate": "specials"},
    {"mult": "booth4", "tree": "gkl", "isolate": "specials"},
    {"gate": "norm"}, {"mult": "booth4", "tree": "tdm", "gate": "norm"})])
def test_fp_product_fp16(kw, request):
    """FP16 × FP16 -> FP32 exact: every pair of specials and edge values + 100,000 random;
    make test-slow: the same with Booth partial products, the three-greedy or GKL tree and
    operand isolation (issue 43)."""
    rng = np.random.default_rng(harness.seed(1700))
    a, b = concat_pairs(cross(edge_values("fp16")), random_fp_pairs("fp16", rng, 100_000))
    _run("fp_product", get_unit("fp_product").params(**kw), {"a": a, "b": b}, request)


_DP4 = [("exact", "fp32", False), ("exact", "fp32", True), ("rounded", "fp32", False),
        ("rounded", "fp16", False)]


#: the lanes' multipliers with issue 43's techniques (the DP-4's mult / tree / isolate)
_DP4_MULS = [("exact", "fp32", True, {"tree": "tdm", "isolate": "specials"}),
             ("exact", "fp32", False, {"mult": "booth4", "tree": "tdm"}),
             ("rounded", "fp32", False, {"mult": "array", "tree": "tdm", "isolate": "specials"}),
             ("exact", "fp32", False, {"tree": "tdm", "gate": "norm"}),
             ("rounded", "fp32", False, {"mult": "array", "tree": "tdm", "gate": "norm"})]


@pytest.mark.parametrize("product,acc,skip,n,kw", [(*_DP4[2], 1_500, {})] + [
    pytest.param(*c, 1_500, {}, marks=pytest.mark.slow) for c in _DP4[:2]] + [   # the budget
    # (skip-zero: test_dp4_split[True])
    pytest.param(*c, 40_000, {}, marks=pytest.mark.slow) for c in _DP4] + [
    pytest.param(*c[:3], 10_000, c[3], marks=pytest.mark.slow) for c in _DP4_MULS])
def test_dp4(product, acc, skip, n, kw, request):
    """DP-4s with operand lanes from the adder/multiplier mix with specials and cancelling
    pairs, C from the same mix in acc; with skip_zero a quarter of the a lanes are ±0.  make
    test: 1,500 per configuration (Icarus, ~2 ms each); make test-slow: 40,000 (Verilator, by
    the cost model), and 10,000 with the lanes' multipliers on Booth, the three-greedy tree
    and operand isolation (``kw``)."""
    from amaranth.lib import data
    from tcgen.hw.layout import pack
    rng = np.random.default_rng(harness.seed(1701 + (n > 1_500)))
    p = get_unit("dp4").params(acc=acc, product=product, skip_zero=skip, **kw)
    a, b = dot_lanes("fp16", rng, n), dot_lanes("fp16", rng, n)
    if skip:
        a = np.where(rng.random(a.shape) < 0.25, a & np.uint64(0x8000), a)
    c = dot_lanes(acc, rng, n, lanes=1)[:, 0]
    corners = result_corners("fp16", acc, 4)           # every result class (coverage)
    a, b, c = (np.concatenate([x, y]) for x, y in zip((a, b, c), corners))
    lanes = data.ArrayLayout(16, 4)
    _run("dp4", p, {"a": pack(lanes, a), "b": pack(lanes, b), "c": c}, request)


@pytest.mark.parametrize("skip", [pytest.param(False, marks=pytest.mark.slow), True])   # the budget
def test_dp4_split(skip, request):
    """The run-time split DP-4 (1×DP-4 / 2×DP-2 / 4×DP-1): 2,000 vectors, every mode (0..3)
    equally often, four accumulators from the same mix; the model's mode 0 is also checked
    against the unsplit DP-4 and modes 1-3 against the groups' sums written out here."""
    from amaranth.lib import data
    from tcgen.hw.layout import pack
    rng = np.random.default_rng(harness.seed(1702))
    n = 2_000
    p = get_unit("dp4").params(split=True, skip_zero=skip)
    a, b = dot_lanes("fp16", rng, n), dot_lanes("fp16", rng, n)
    if skip:
        a = np.where(rng.random(a.shape) < 0.25, a & np.uint64(0x8000), a)
    c = dot_lanes("fp32", rng, n)
    mode = np.arange(n, dtype=np.int64) % 4
    y = num.dot4(a, b, c, skip_zero=skip, split=mode)
    # the model against sums written out per mode (independent of its muxes)
    prod = num.fp_product(a, b, "fp16", "fp32")
    if skip:
        prod = np.where((a & np.uint64(0x7FFF)) == 0, np.uint64(0x80000000), prod)

    def add(x, z):
        return num.fp_add(x, z, "fp32")
    zero = np.zeros(n, dtype=np.uint64)
    want = {0: [num.dot4(a, b, c[:, 0], skip_zero=skip), zero, zero, zero],
            1: [add(add(prod[:, 0], prod[:, 1]), c[:, 0]),
                add(add(prod[:, 2], prod[:, 3]), c[:, 1]), zero, zero],
            2: [add(prod[:, k], c[:, k]) for k in range(4)]}
    want[3] = want[2]
    for md, cols in want.items():
        sel = mode == md
        np.testing.assert_array_equal(y[sel], np.stack(cols, axis=-1)[sel])
    lanes, accs = data.ArrayLayout(16, 4), data.ArrayLayout(32, 4)
    _run("dp4", p, {"a": pack(lanes, a), "b": pack(lanes, b), "c": pack(accs, c),
                    "mode": mode.astype(np.uint64)}, request)
