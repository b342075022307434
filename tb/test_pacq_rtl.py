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

import harness
from bench_config import BenchConfig
from stimulus import WORDS2, WORDS4
from tcgen.hw import numeric as num
from tcgen.registry import get_unit
from tcgen.hw.layout import pack, unpack
from tcgen.units.pacq import layouts
from tcgen.units.pacq import model as M
from tcgen.units.pacq.family import baseline_tile_ops, pacq_tile_ops
from tcgen.units.pacq.model import activations
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
    dict(rounding="rtz"),
    dict(mode="exact"),
    dict(mode="offset8"),
    dict(mode="literal", rounding="rtz"),
    dict(wbits="4", pipeline=2),
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
    from stimulus import specials                  # every FP16 class x every code (coverage)
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
    ("dp4_baseline", dict(acc="fp32", rounding="rtz"), ()),
    ("dp4_pacq", dict(), (4, 2)),                                   # both, D=2, paper, FP16
    ("dp4_pacq", dict(D=1, mode="exact", acc="fp32"), (4,)),
    ("dp4_pacq", dict(D=4, mode="offset8", acc="fp32"), (4, 2)),
    ("dp4_pacq", dict(mode="literal", rounding="rtz", sum_a=False), ()),
    ("dp4_pacq", dict(wbits="4", D=4, acc="fp32", rounding="rtz"), (4,)),
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
    from stimulus import specials
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

