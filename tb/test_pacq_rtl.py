"""PacQ RTL == golden model (cocotb through tb.harness; Icarus by default).

pacq_mul: every activation exponent field × sign (zeros, subnormals, normals, ±inf, NaN) with
12 significands each, × words that put every code in every lane (16 INT4 words, 4 INT2 words,
lanes distinct within a word), the lane-isolation patterns with maximal significands, the notes'
vectors and seeded random -- for every output mode and both rounding modes.  The full
65,536-activation sweep is in test_pacq_exhaustive.py (slow).

DP-4s: chained m16n16k16 tiles (the accumulator input of each k4 step is the model's previous
result) for INT4 and INT2 on the same hardware, plus raw random operations (specials included),
under back-to-back, bubbles/backpressure and reset-mid-operation; and the paper's m2n4k4 cycle
counts (11 / 19 / 35).
"""
from __future__ import annotations

import numpy as np
import pytest

from tcgen.verify import harness
from tcgen.verify.bench_config import BenchConfig
from tcgen.verify.stimulus import WORDS2, WORDS4
from tcgen.hw import numeric as num
from tcgen.registry import get_unit
from tcgen.hw.layout import pack, unpack
from tcgen.units.pacq import layouts
from tcgen.units.pacq import model as M
from tcgen.units.pacq.family import baseline_tile_ops, pacq_tile_ops
from tcgen.units.pacq.model import activations
from tcgen.units.pacq.params import lanes_of
from tcgen.units.pacq.paper import NOTES_VECTORS


# -- stimulus --------------------------------------------------------------------------------
def activation_set(rng, per_exponent_random=4):
    """Every sign × exponent field with fixed edge significands plus random ones."""
    fixed = [0x000, 0x001, 0x03F, 0x155, 0x200, 0x2AA, 0x3E2, 0x3FF]
    out = []
    for s in (0, 1):
        for e in range(32):
            fr = fixed + [int(x) for x in rng.integers(0, 1024, per_exponent_random)]
            out += [(s << 15) | (e << 10) | f for f in fr]
    return np.array(out, dtype=np.uint64)


ISOLATION = [0x0000, 0xFFFF, 0x8888, 0x7777, 0xF0F0, 0x0F0F, 0x5555, 0xAAAA,
             0x000F, 0x00F0, 0x0F00, 0xF000, 0x0003, 0xC000]
MAX_SIG = [0x3FFF, 0x7BFF, 0xBFFF, 0x03FF, 0x53E2, 0x5000, 0x3FE2]


def pacq_mul_stimulus(p, rng):
    acts = activation_set(rng)
    a, w, i2 = [], [], []
    if p.wbits in ("both", "4"):
        for word in WORDS4:
            a.append(acts), w.append(np.full(acts.size, word)), i2.append(np.zeros(acts.size))
    if p.wbits in ("both", "2"):
        for word in WORDS2:
            a.append(acts), w.append(np.full(acts.size, word)), i2.append(np.ones(acts.size))
    for av in MAX_SIG:
        for word in ISOLATION:
            for sel in (0, 1):
                a.append([av]), w.append([word]), i2.append([sel])
    for av, word, sel, _, _ in NOTES_VECTORS:
        a.append([av]), w.append([word]), i2.append([sel])
    n = 1000
    a.append(rng.integers(0, 1 << 16, n)), w.append(rng.integers(0, 1 << 16, n))
    i2.append(rng.integers(0, 2, n))
    stim = {"a": np.concatenate(a).astype(np.uint64), "w": np.concatenate(w).astype(np.uint64)}
    int2 = np.concatenate(i2).astype(np.uint64)
    if p.wbits == "both":
        stim["int2"] = int2
    else:      # fixed width: drop vectors meant for the other width
        keep = int2 == (1 if p.wbits == "2" else 0)
        stim = {k: v[keep] for k, v in stim.items()}
    return stim


PACQ_MUL_CONFIGS = [
    dict(),                                       # paper, RNE, INT4+INT2 (the default)
    pytest.param(dict(rounding="rtz"), marks=pytest.mark.slow),      # make test's budget
    dict(mode="exact"),
    dict(mode="offset8"),
    pytest.param(dict(mode="literal", rounding="rtz"), marks=pytest.mark.slow),
    pytest.param(dict(wbits="4", pipeline=2), marks=pytest.mark.slow),
    dict(wbits="2", rounding="rtz", pipeline=1),
]


@pytest.mark.parametrize("cfg", PACQ_MUL_CONFIGS, ids=lambda c: "-".join(
    f"{k}={v}" for k, v in c.items()) or "default")
def test_pacq_mul_matches_model(cfg):
    unit = get_unit("pacq_mul")
    p = unit.params(**cfg)
    rng = np.random.default_rng(harness.seed(101))
    stim = pacq_mul_stimulus(p, rng)
    s = harness.run("pacq_mul", p, stimulus=stim, name="directed")
    assert s["vectors"] == len(stim["a"]) and s["mismatches"] == 0
    assert s["latency"] == p.pipeline


def test_fp16_mul_matches_model():
    rng = np.random.default_rng(harness.seed(102))
    special = np.array([0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0x7BFF, 0x7C00, 0xFC00,
                        0x7E00, 0x7C01], dtype=np.uint64)
    a = np.concatenate([np.repeat(special, special.size), rng.integers(0, 1 << 16, 2000)])
    b = np.concatenate([np.tile(special, special.size), rng.integers(0, 1 << 16, 2000)])
    for cfg in (dict(), dict(rounding="rtz", pipeline=1)):
        p = get_unit("fp16_mul").params(**cfg)
        s = harness.run("fp16_mul", p, stimulus={"a": a.astype(np.uint64),
                                                 "b": b.astype(np.uint64)}, name="mix")
        assert s["vectors"] == a.size and s["mismatches"] == 0


@pytest.mark.parametrize("wbits", ["both", "4", "2"])
def test_int_dequant_every_code(wbits):
    p = get_unit("int_dequant").params(wbits=wbits)
    ncode = 4 if wbits == "2" else 16
    stim = {"code": np.tile(np.arange(ncode, dtype=np.uint64), 2)}
    if wbits == "both":
        stim["int2"] = np.repeat(np.array([0, 1], dtype=np.uint64), ncode)
    s = harness.run("int_dequant", p, stimulus=stim, name="codes")
    assert s["vectors"] == 2 * ncode and s["mismatches"] == 0
    # and the model is the signed weight itself
    int2 = stim.get("int2", np.full(2 * ncode, 1 if wbits == "2" else 0))
    b = num.to_float(M.int_dequant(stim["code"], int2), "fp16")
    wb = np.where(int2 == 1, 2, 4)
    assert np.array_equal(b, np.where(wb == 2, (stim["code"] & 3) - 2.0,
                                      stim["code"].astype(float) - 8.0))


def test_dequant_mul_matches_model():
    rng = np.random.default_rng(harness.seed(103))
    n = 2000
    p = get_unit("dequant_mul").params()
    stim = {"a": rng.integers(0, 1 << 16, n, dtype=np.uint64),
            "code": rng.integers(0, 16, n, dtype=np.uint64),
            "int2": rng.integers(0, 2, n, dtype=np.uint64)}
    from tcgen.verify.stimulus import specials     # every FP16 class x every code (coverage)
    sp = np.array(specials("fp16"), np.uint64)
    codes = np.arange(16, dtype=np.uint64)
    stim = {"a": np.concatenate([stim["a"], np.repeat(sp, 32)]),
            "code": np.concatenate([stim["code"], np.tile(np.tile(codes, 2), len(sp))]),
            "int2": np.concatenate([stim["int2"], np.tile(np.repeat(np.arange(2, dtype=np.uint64),
                                                                    16), len(sp))])}
    n = len(stim["a"])
    s = harness.run("dequant_mul", p, stimulus=stim, name="random")
    assert s["vectors"] == n and s["mismatches"] == 0


# -- DP-4 --------------------------------------------------------------------------------------
def _weights16(B):
    return num.from_float(B.astype(np.float64), "fp16")


#: (unit, params, tiles): tiles = the widths whose chained m16n16k16 tile is run (plus 40 raw
#: random operations for every configuration)
DP4_CONFIGS = [
    ("dp4_baseline", dict(), (16,)),
    pytest.param("dp4_baseline", dict(acc="fp32", rounding="rtz"), (), marks=pytest.mark.slow),
    ("dp4_pacq", dict(), (4, 2)),                                   # both, D=2, paper, FP16
    pytest.param("dp4_pacq", dict(D=1, mode="exact", acc="fp32"), (4,), marks=pytest.mark.slow),
    ("dp4_pacq", dict(D=4, mode="offset8", acc="fp32"), (4, 2)),
    ("dp4_pacq", dict(mode="literal", rounding="rtz", sum_a=False), ()),
    pytest.param("dp4_pacq", dict(wbits="4", D=4, acc="fp32", rounding="rtz"), (4,),
                 marks=pytest.mark.slow),   # make test's budget: this and the two above
    ("dp4_pacq", dict(wbits="2", D=1, mode="offset8"), ()),
]
STRESS_OPS = 48       # operations replayed under bubbles/backpressure and across a reset


def _cfg_id(x):
    if isinstance(x, str):
        return x
    if isinstance(x, tuple):
        return "tiles" + "+".join(map(str, x)) if x else "random"
    return "-".join(f"{k}={v}" for k, v in x.items()) or "default"


@pytest.mark.parametrize("name,cfg,tiles", DP4_CONFIGS, ids=_cfg_id)
def test_dp4_matches_model(name, cfg, tiles):
    unit = get_unit(name)
    p = unit.params(**cfg)
    rng = np.random.default_rng(harness.seed(104))
    A = activations(rng, (16, 16))
    parts = []
    for wb in tiles:
        if name == "dp4_baseline":
            parts.append(baseline_tile_ops(p, A, _weights16(rng.integers(-8, 8, (16, 16)))))
        else:
            lo, hi = M.WEIGHT_RANGE[wb]
            parts.append(pacq_tile_ops(p, A, rng.integers(lo, hi + 1, (16, 16)), wb))
    raw = unit.workload(p, rng, 40)["op__payload"]                      # random ops ...
    layout = layouts.dp4_baseline_op(p) if name == "dp4_baseline" else layouts.dp4_pacq_op(p)
    f = unpack(layout, raw)
    f["a"] = rng.integers(0, 1 << 16, f["a"].shape, dtype=np.uint64)    # ... any bits in A
    if name == "dp4_pacq" and p.wbits == "both":
        f["int2"] = rng.integers(0, 2, len(raw), dtype=np.uint64)
    f = _class_corners(p, f)                  # every operand and result class (coverage)
    parts.insert(0, pack(layout, f))                          # stress runs use these
    ops = np.concatenate(parts)
    s = harness.run(name, p, bench="stream", stimulus={"op__payload": ops}, name="tiles",
                    extra_env=BenchConfig(stress_ops=STRESS_OPS).env())
    beats = len(unit.golden(p, op__payload=ops)["res__payload"])
    stress = len(unit.golden(p, op__payload=ops[:STRESS_OPS])["res__payload"])
    assert s["back_to_back_vectors"] == beats
    assert s["backpressure_vectors"] == stress and s["reset_mid_operation_vectors"] == stress
    assert s["reset_leaked"] == 0
    assert s["mismatches"] == 0
    assert s["back_to_back_cycles"] == beats + 3          # one beat per cycle, 3-cycle pipeline


@pytest.mark.parametrize("name,cfg,wbits,paper_cycles,outputs", [
    ("dp4_baseline", dict(), None, 11, 8),
    ("dp4_pacq", dict(), 4, 19, 32),
    ("dp4_pacq", dict(), 2, 35, 64),
])
def test_dp4_m2n4k4_cycle_counts(name, cfg, wbits, paper_cycles, outputs):
    """The paper's DP-4 on m2n4k4: 11 cycles for 8 FP16 outputs (baseline), 19 for 32 (INT4),
    35 for 64 (INT2) -- measured on the RTL from first operation to last result."""
    unit = get_unit(name)
    p = unit.params(**cfg)
    rng = np.random.default_rng(harness.seed(105))
    A = activations(rng, (2, 4))
    if name == "dp4_baseline":
        ops = baseline_tile_ops(p, A, _weights16(rng.integers(-8, 8, (4, 4))))
    else:
        lo, hi = M.WEIGHT_RANGE[wbits]
        ops = pacq_tile_ops(p, A, rng.integers(lo, hi + 1, (4, 4 * (16 // wbits))), wbits)
    s = harness.run(name, p, bench="stream", stimulus={"op__payload": ops},
                    name=f"m2n4k4-{wbits}")
    assert s["mismatches"] == 0
    outs = s["back_to_back_vectors"] * (1 if name == "dp4_baseline" else p.D)
    assert outs == outputs
    assert s["back_to_back_cycles"] == paper_cycles


@pytest.mark.parametrize("cfg", [dict(), dict(mode="offset8", acc="fp32")],
                         ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_numerics_configs_on_rtl(cfg):
    """The dp4_pacq sample of scripts/pacq_numerics.py (which reads the golden model's beats):
    chained m4n16k16 INT4 tiles of its two configurations give the same beats on the RTL."""
    unit = get_unit("dp4_pacq")
    p = unit.params(**cfg)
    rng = np.random.default_rng(harness.seed(106))
    m, k, n = 4, 16, 16
    A = activations(rng, (m, k))
    ops = pacq_tile_ops(p, A, rng.integers(-8, 8, (k, n)), 4)
    s = harness.run("dp4_pacq", p, bench="stream", stimulus={"op__payload": ops},
                    name="numerics")
    beats = len(unit.golden(p, op__payload=ops)["res__payload"])
    assert beats == k // 4 * m * (n // 4) * (4 // p.D)
    assert s["back_to_back_vectors"] == beats
    assert s["mismatches"] == 0


def test_dp4_scripted_valid_ready_patterns():
    """The stream bench's scripted patterns: valid may rise every other cycle, ready is low one
    cycle in three; the baseline DP-4 (one op per cycle) then issues exactly every 2 cycles with
    no stall on its output, and matches the model."""
    unit = get_unit("dp4_baseline")
    p = unit.params()
    ops = unit.workload(p, np.random.default_rng(harness.seed(107)), 24)["op__payload"]
    cfg = BenchConfig(scenarios=("backpressure",), idle=0.0, valid_pattern="10", stall=0.0)
    s = harness.run("dp4_baseline", p, bench="stream", stimulus={"op__payload": ops},
                    name="scripted", extra_env=cfg.env())
    assert s["backpressure_issue_intervals"] == [2]
    assert s["backpressure_vectors"] == 24 and s["mismatches"] == 0
    cfg = BenchConfig(scenarios=("backpressure",), idle=0.0, stall=0.0, ready_pattern="110")
    s = harness.run("dp4_baseline", p, bench="stream", stimulus={"op__payload": ops},
                    name="scripted_ready", extra_env=cfg.env())
    assert s["backpressure_vectors"] == 24 and s["mismatches"] == 0
    assert s["backpressure_cycles"] >= 24 * 3 // 2        # results leave on 2 cycles of 3


def _class_corners(p, f: dict) -> dict:
    """Operation fields ``f`` (unpacked payloads) with rows appended that reach every FP class
    (docs/coverage.md): A lanes (and the baseline's B lanes, reversed) set to each FP16 special
    (C = +0); A = +0 with C lanes set to
    each special of the accumulation format (the result is then C's class); A at FP16 max
    with C at the accumulator's max, both signs (overflow); the other fields copied from the
    first rows."""
    from tcgen.verify.stimulus import specials
    lanes_a = f["a"].shape[1]
    c = np.asarray(f["c"])
    lanes_c = c.shape[1] if c.ndim > 1 else 1
    sp_a = np.array(specials("fp16"), np.uint64)
    sp_c = np.array(specials(p.acc), np.uint64)
    amax = num.get_format(p.acc)
    rows_a = np.resize(sp_a, (-(-len(sp_a) // lanes_a), lanes_a))
    rows_c = np.resize(sp_c, (-(-len(sp_c) // lanes_c), lanes_c))
    big = [[0x7BFF] * lanes_a, [0xFBFF] * lanes_a]
    a = np.concatenate([rows_a, np.zeros((len(rows_c), lanes_a), np.uint64),
                        np.array(big, np.uint64)])
    cc = np.concatenate([np.zeros((len(rows_a), lanes_c), np.uint64), rows_c,
                         np.array([[amax.max_finite] * lanes_c,
                                   [amax.max_finite | amax.sign_mask] * lanes_c], np.uint64)])
    k = len(a)
    out = {}
    for key, v in f.items():
        v = np.asarray(v)
        extra = np.resize(v, (k,) + v.shape[1:])
        if key == "a":
            extra = a.astype(v.dtype)
        elif key == "c":
            extra = (cc if v.ndim > 1 else cc[:, 0]).astype(v.dtype)
        elif key in ("b", "w"):
            extra = np.resize(v, (k,) + v.shape[1:]).copy()
            if key == "b":                    # the baseline's B: the specials too, then max
                extra[:len(rows_a)] = rows_a[:, ::-1]
                extra[-2:] = 0x7BFF
        out[key] = np.concatenate([v, extra])
    return out



# -- DP-4 FP32 datapath corners (directed; docs/mutation.md) -----------------------------------
#: configurations whose lanes reach the trees as exact fixed-point products (exact / offset8,
#: FP32 accumulation); the first is the mutation target of tb/mutation.py
EXACT_DP4_CONFIGS = [dict(D=1, mode="exact", acc="fp32"),
                     dict(D=4, mode="offset8", acc="fp32")]


def _word(codes, int2):
    """A packed word from its lane codes (INT4: 4 lanes of 4 bits; INT2: 8 lanes of 2 bits)."""
    bits = 2 if int2 else 4
    return sum(int(y) << (bits * j) for j, y in enumerate(codes))


def _lane_products(p, a, w, int2):
    """The model's lane products in ``acc`` as floats, [n, 4, L] (exact for exact / offset8)."""
    enc = M.products_to_acc(np.asarray(a, np.uint64), np.asarray(w, np.uint64),
                            np.asarray(int2, np.uint64)[:, None], mode=p.mode, acc=p.acc,
                            rounding=p.rounding, wbits=p.wbits)
    return num.to_float(enc, p.acc)


def _lane_factors(p, int2):
    """f(y) for every lane code y: the model's product of A = 1.0 and a word of y's, as floats
    (the lane value is A·f(y): 1024 + y in exact mode, y in offset8)."""
    ncode = 4 if int2 else 16
    one = np.full((ncode, 4), 0x3C00, np.uint64)
    words = np.array([[_word([y] * (8 if int2 else 4), int2)] * 4 for y in range(ncode)],
                     np.uint64)
    enc = M.products_to_acc(one, words, np.full((ncode, 1), int2, np.uint64), mode=p.mode,
                            acc=p.acc, rounding=p.rounding, wbits=p.wbits)
    return num.to_float(enc[:, 0, 0], p.acc)


def _exponent(x):
    return np.frexp(np.abs(x))[1]


def cancelling_pairs(p, rng, int2, trials=4000):
    """{(depth, gap): (a0, y0, a1, y1)}: FP16 activations a0, a1 and lane codes y0, y1 whose
    products v0 = a0·f(y0), v1 = a1·f(y1) sum (exactly, in FP32) to a value whose leading one
    is ``depth`` bits below the larger product's (-1: a carry out; None: exactly zero) -- the
    FP32 adder then normalises by every shift the products allow -- with the products' binades
    ``gap`` (0, 1, 2 = more) apart.  A seeded search on the model's lane factors."""
    f = _lane_factors(p, int2)
    codes = np.flatnonzero(f)
    n = trials
    y0 = rng.choice(codes, n)
    y1 = np.where(rng.random(n) < 0.25, y0, rng.choice(codes, n))
    u = np.where(rng.random(n) < 0.5, rng.random(n), rng.random(n) * 2.0 ** -8)   # binade edge
    a0 = num.from_float(np.ldexp(1.0 + u, rng.integers(-12, 12, n))
                        * np.where(rng.random(n) < 0.5, 1.0, -1.0), "fp16")
    v0 = num.to_float(a0, "fp16") * f[y0]
    shrink = np.where(rng.random(n) < 0.5, 0.0, np.ldexp(rng.random(n), -rng.integers(0, 12, n)))
    same = rng.random(n) < 0.05                                   # same signs: carries
    t1 = num.from_float(np.where(same, 1.0, -1.0) * v0 * (1.0 - shrink) / f[y1], "fp16")
    out = {}
    for k in (0, -1, 1, -2, 2, -3, 3):                            # t1 and its neighbours
        a1 = (t1.astype(np.int64) + k).astype(np.uint64)
        a1 = np.where(((a1 & 0x7C00) == 0x7C00) | ((a1 ^ t1) >> 15 != 0), t1, a1)
        v1 = num.to_float(a1, "fp16") * f[y1]
        s = v0 + v1                                               # exact in float64
        big = np.maximum(np.abs(v0), np.abs(v1))
        depth = np.where(s == 0, 99, _exponent(big) - _exponent(s))
        gap = np.minimum(np.abs(_exponent(v0) - _exponent(v1)), 2)
        for i in range(n):
            key = (None if depth[i] == 99 else int(depth[i]), int(gap[i]))
            out.setdefault(key, (int(a0[i]), int(y0[i]), int(a1[i]), int(y1[i])))
    return out


def _dp4_pacq_fields(p, a, w, int2, c=None, sa=None):
    """Operation fields for dp4_pacq from [n, 4] activations / words, [n] int2, optional
    [n, L_max] c (default +0) and [n] sa (default +0)."""
    n = len(a)
    f = {"a": np.asarray(a, np.uint64).reshape(n, 4), "w": np.asarray(w, np.uint64).reshape(n, 4),
         "c": (np.zeros((n, lanes_of(p.wbits)), np.uint64) if c is None
               else np.asarray(c, np.uint64)[:, :lanes_of(p.wbits)])}
    if p.wbits == "both":
        f["int2"] = np.asarray(int2, np.uint64)
    if p.sum_a:
        f["sa"] = np.zeros(n, np.uint64) if sa is None else np.asarray(sa, np.uint64)
    return f


def _run_dp4_pacq_ops(p, fields, name):
    """The ops back to back on the RTL against the model; returns the beat count."""
    unit = get_unit("dp4_pacq")
    ops = pack(layouts.dp4_pacq_op(p), fields)
    s = harness.run("dp4_pacq", p, bench="stream", stimulus={"op__payload": ops}, name=name,
                    extra_env=BenchConfig(scenarios=("back_to_back",)).env())
    beats = len(unit.golden(p, op__payload=ops)["res__payload"])
    assert s["back_to_back_vectors"] == beats
    assert s["mismatches"] == 0
    return beats


def _fp32(x):
    return num.from_float(np.asarray(x, np.float64), "fp32")


@pytest.mark.parametrize("cfg", EXACT_DP4_CONFIGS, ids=_cfg_id)
def test_dp4_pacq_fp32_cancellation_and_alignment(cfg):
    """Every normalising shift and both alignment orders of the FP32 adders of dp4_pacq.

    * Products that cancel (:func:`cancelling_pairs`: every depth, products in the same or
      adjacent binades, exact zeros, carries) in each adder of the tree: the first level's
      two adders (lanes k0+k1, k2+k3) and the second level (k0+k2, the first level exact);
      INT4 and INT2.  The same activations cancel in the ΣA tree (less deeply: the lane
      factors differ).
    * The accumulators: c (every lane) and sa cancelling the tree's sum to every depth
      (-(1 - 2^-t)·sum, t = 1..29, exact zeros, a few of the c lanes of the same sign: carries),
      and, with a sum that is a power of two (fraction 0),
      c and sa from 2^-30 to 4 times it (both signs, fraction 0 and not): which operand is the
      larger, equal magnitudes, the far-alignment sticky, round-to-nearest ties."""
    p = get_unit("dp4_pacq").params(**cfg)
    rng = np.random.default_rng(harness.seed(108))
    a, w, i2, cc, sa = [], [], [], [], []

    def op(av, wv, int2, c=None, s=0):
        a.append(av), w.append(wv), i2.append(int2), sa.append(int(s))
        cc.append([0] * 8 if c is None else list(c))

    def rand_word():
        return int(rng.integers(0, 1 << 16))

    def lane_word(y, int2):              # lane 0 holds code y, the other lanes random codes
        lanes = 8 if int2 else 4
        ys = [y] + [int(v) for v in rng.integers(0, 4 if int2 else 16, lanes - 1)]
        return _word(ys, int2)

    for int2 in (0, 1):
        for (depth, gap), (a0, y0, a1, y1) in sorted(
                cancelling_pairs(p, rng, int2).items(), key=lambda kv: repr(kv[0])):
            w0, w1 = lane_word(y0, int2), lane_word(y1, int2)
            op([a0, a1, 0, 0], [w0, w1, rand_word(), rand_word()], int2)   # tree add0_0
            op([0, 0, a0, a1], [rand_word(), rand_word(), w0, w1], int2)   # tree add0_1
            op([a0, 0, a1, 0], [w0, rand_word(), w1, rand_word()], int2)   # tree add1_0
    # the accumulators cancel the tree's sum: c_j ~ -(p_0j)·(1 - 2^-t), sa ~ -a0·(1 - 2^-t)
    for t in range(31):
        for int2 in (0, 1):
            a0 = int(num.from_float(np.array([np.ldexp(1.0 + rng.random(), rng.integers(-8, 8))
                                              * rng.choice([-1.0, 1.0])]), "fp16")[0])
            wv = [rand_word(), 0, 0, 0]
            av = np.array([[a0, 0, 0, 0]], np.uint64)
            v = _lane_products(p, av, np.array([wv], np.uint64), np.array([int2]))[0, 0]
            shrink = 1.0 - (np.ldexp(1.0, -t) if t < 30 else 0.0)
            sign = np.where(rng.random(8) < 0.9, -1.0, 1.0)
            c = _fp32(np.resize(v, 8) * shrink * sign)
            s = _fp32(-num.to_float(np.array([a0], np.uint64), "fp16")[0] * shrink)
            op([a0, 0, 0, 0], wv, int2, c, s)
    # a power-of-two sum (lane factor a power of two where the mode has one) and accumulators
    # of every relative size: the adders' operand swap (by magnitude, zero handled apart)
    f = _lane_factors(p, 0)
    pow2 = [y for y in range(16) if f[y] > 0 and float(np.frexp(f[y])[0]) == 0.5]
    y = pow2[0] if pow2 else 1
    for k in range(-30, 3):
        e = int(rng.integers(-6, 6))
        a0 = int(num.from_float(np.array([np.ldexp(rng.choice([-1.0, 1.0]), e)]), "fp16")[0])
        av = [a0, 0, 0, 0]
        wv = [_word([y] * 4, 0), 0, 0, 0]
        v = _lane_products(p, np.array([av], np.uint64), np.array([wv], np.uint64),
                           np.array([0]))[0, 0, 0]
        frac = np.array([1.0, -1.0, 1.75, -1.75, 1.0 + 2.0 ** -23, -(1.0 + 2.0 ** -23),
                         1.5, -1.5])
        c = _fp32(v * np.ldexp(frac, k))
        s = _fp32(num.to_float(np.array([a0], np.uint64), "fp16")[0] * np.ldexp(frac[k % 8], k))
        op(av, wv, 0, c, s)
    _run_dp4_pacq_ops(p, _dp4_pacq_fields(p, a, w, i2, np.array(cc, np.uint64), sa),
                      "fp32_shifts")


#: FP16 activation specials for the pair sweep: zeros, subnormal and normal extremes, ±1,
#: infinities and NaNs of both signs
PAIR_SPECIALS = [0x0000, 0x8000, 0x0001, 0x83FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00,
                 0x7C00, 0xFC00, 0x7E00, 0xFC01]


@pytest.mark.parametrize("cfg", [EXACT_DP4_CONFIGS[0], dict()], ids=_cfg_id)
def test_dp4_pacq_special_pairs(cfg):
    """Every ordered pair (s, t) of FP16 specials in each adder of the tree, the other lanes
    +0: activations [s, t, 0, 0] (first level, k0 + k1), [0, 0, s, t] (k2 + k3), [s, 0, t, 0]
    (second level) and [s, s, t, t] (all three): every adder of the product tree and of the
    ΣA tree sees every pair of operand classes (inf - inf = NaN, inf + finite, NaN payloads,
    signed zeros, max + max), INT4 and INT2."""
    p = get_unit("dp4_pacq").params(**cfg)
    rng = np.random.default_rng(harness.seed(109))
    sp = np.array(PAIR_SPECIALS, np.uint64)
    s, t = np.repeat(sp, len(sp)), np.tile(sp, len(sp))
    z = np.zeros_like(s)
    a = np.concatenate([np.stack(x, 1) for x in ([s, t, z, z], [z, z, s, t], [s, z, t, z],
                                                 [s, s, t, t])])
    n = len(a)
    w = rng.integers(0, 1 << 16, (n, 4), dtype=np.uint64)
    int2 = np.arange(n, dtype=np.uint64) % 2
    if p.wbits != "both":
        int2 = np.full(n, 1 if p.wbits == "2" else 0, np.uint64)
    _run_dp4_pacq_ops(p, _dp4_pacq_fields(p, a, w, int2), "special_pairs")
