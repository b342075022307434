"""lut_dp4 RTL against the golden model (tcgen.units.lut.model.dp_step), on the batch path:
random tables from the precompute, every (sign, idx, plane) of a table, the FP edge cases of
plane scaling and accumulation (signed zero, subnormals, overflow, RNE ties), the released
RTL's exponent-add mode, and every INT weight pattern of one group for W_BIT = 3 as a chain of
plane steps that ends at Σ a·q′ + c."""
from __future__ import annotations

import numpy as np
import pytest

from tcgen.verify import harness
from tcgen.hw import numeric as num
from tcgen.hw.layout import pack
from tcgen.registry import get_unit
from tcgen.units.lut import model as lm
from tcgen.units.lut.family import dp4_inputs
from tcgen.units.lut.rtl import table_layout

_slow = pytest.mark.slow
CONFIGS = [
    dict(entry="int11", acc="int32", w_bits=3),
    dict(entry="fp16", acc="fp16"),
    dict(entry="fp16", acc="fp16", scale="rtl"),
    dict(entry="fp8_e4m3", acc="fp16", w_bits=4),
    pytest.param(dict(entry="int8", acc="int24", w_bits=8), marks=_slow),
    pytest.param(dict(entry="fp16", acc="fp32", w_bits=4), marks=_slow),
    pytest.param(dict(entry="fp16", acc="fp16", rounding="rtz"), marks=_slow),
    pytest.param(dict(k=2, entry="int16", acc="int32", w_bits=2), marks=_slow),
    pytest.param(dict(k=6, entry="fp16", acc="fp32", w_bits=2), marks=_slow),
]


def _id(cfg):
    if not isinstance(cfg, dict):
        return None
    return "-".join(f"{k}={v}" for k, v in cfg.items())


def _all_steps(p, table_words, c):
    """Every (sign, idx, plane) of one table, against accumulator values ``c``."""
    combos = [(s, i, j) for s in (0, 1) for i in range(1 << (p.k - 1)) for j in range(p.w_bits)]
    n = len(combos) * len(c)
    s, i, j = (np.array([x[q] for x in combos for _ in c], dtype=np.uint64) for q in range(3))
    return {"lut": pack(table_layout(p), np.array([table_words] * n, dtype=object)),
            "sign": s, "idx": i, "plane": j,
            "c": np.array(list(c) * len(combos), dtype=np.uint64)}


def _concat(*stims):
    return {k: np.concatenate([np.asarray(s[k], dtype=object if s[k].dtype == object
                                          else np.uint64) for s in stims]) for k in stims[0]}


def _fp_edges(p, rng):
    """Entries and accumulators at the edges: ±0, the smallest and largest subnormal, the
    largest finite (overflows when scaled), ±Inf/NaN where the format has them, values that
    cancel, and the RNE ties of the notes (2048 + 1, 2048 + 3 in FP16)."""
    F, A = num.get_format(p.entry), num.get_format(p.acc)
    ent = [0, F.sign_mask, 1, F.min_normal - 1, F.min_normal, F.max_finite,
           F.max_finite | F.sign_mask, F.nan] + ([F.inf, F.inf | F.sign_mask] if F.has_inf
                                                 else [])
    ent += [int(x) for x in num.from_float([1.0, 3.0, -1.0, 0.5], p.entry)]
    n = 1 << (p.k - 1)
    stims = []
    accs = [0, A.sign_mask, 1, A.max_finite] + [int(x) for x in num.from_float(
        [2048.0, -1.0, 1e-3], p.acc)]
    accs += [A.nan] + ([A.inf, A.inf | A.sign_mask] if A.has_inf else [])   # (coverage)
    for e in ent:
        table = [e] + [int(x) for x in rng.choice(ent, n - 1)]
        stims.append(_all_steps(p, table, accs))
    return _concat(*stims)


@pytest.mark.parametrize("cfg", CONFIGS, ids=_id)
def test_lut_dp4_matches_model(cfg):
    p = get_unit("lut_dp4").params(**cfg)
    rng = np.random.default_rng(harness.seed(1300))
    stims = [dp4_inputs(p, rng, 3000)]
    if p.entry.startswith("int"):
        w = int(p.entry[3:])
        adversarial = [(1 << (w - 1)) - 1, (1 << (w - 1)), (1 << w) - 1, 0, 1]   # max, min, -1
        table = [adversarial[i % len(adversarial)] for i in range(1 << (p.k - 1))]
        aw = int(p.acc[3:])
        cs = [0, (1 << (aw - 1)) - 1, 1 << (aw - 1), (1 << aw) - 1, 12345]
        stims.append(_all_steps(p, table, cs))
    else:
        stims.append(_fp_edges(p, rng))
    stim = _concat(*stims)
    s = harness.run_batch("lut_dp4", p, stimulus=stim, lanes=4, depth=2048)
    assert s["vectors"] == len(stim["sign"]) and s["checked"] == s["vectors"]
    assert s["mismatches"] == 0, s["first_mismatches"]


def test_lut_dp4_every_int_weight_pattern_w3():
    """All 2^(4·3) weight patterns of one K=4 group, W_BIT = 3, on an adversarial INT8 table:
    the three plane steps of each pattern (the model's accumulator after plane j is the c of
    plane j + 1) on the RTL, and the last step's value equal to Σ a·q′ + c (layer 2)."""
    p = get_unit("lut_dp4").params(entry="int11", acc="int32", w_bits=3)
    a = np.array([-128, 127, -128, 127])
    T = lm.precompute(a, "int8")                               # exact, 11-bit entries
    codes = np.arange(1 << 12)
    q = np.stack([(codes >> (3 * i)) & 7 for i in range(4)], axis=-1)
    sign, idx = lm.encode_plane(lm.bit_planes(q, 3))          # (3, 4096)
    c0 = np.random.default_rng(harness.seed(1301)).integers(-(1 << 20), 1 << 20, len(codes))
    Tn = np.broadcast_to(T, (len(codes), 8))
    accs = [c0]
    for j in range(3):
        accs.append(lm.dp_step(Tn, sign[j], idx[j], j, accs[-1], entry_fmt="int11",
                               acc_fmt="int32"))
    assert np.array_equal(accs[-1], (lm.reinterpret(q, 3) * a).sum(-1) + c0)
    words = [int(x) & 0x7FF for x in T]
    n = len(codes)
    stim = {"lut": pack(table_layout(p), np.array([words] * (3 * n), dtype=object)),
            "sign": sign.reshape(-1).astype(np.uint64), "idx": idx.reshape(-1).astype(np.uint64),
            "plane": np.repeat(np.arange(3), n).astype(np.uint64),
            "c": (np.concatenate(accs[:3]) & 0xFFFFFFFF).astype(np.uint64)}
    s = harness.run_batch("lut_dp4", p, stimulus=stim, lanes=4, depth=4096)
    assert s["vectors"] == 3 * n and s["mismatches"] == 0, s["first_mismatches"]


def test_rtl_scale_differs_from_correct_where_the_notes_say():
    """The released RTL's exponent add against the correct scaling (model level): a zero entry
    at plane 1 becomes 2^-14, a subnormal is mis-scaled, a large entry wraps -- and on normal
    entries without overflow the two agree."""
    z, sub, big = np.uint64(0), np.uint64(1), num.from_float(40000.0, "fp16")
    assert lm.rtl_scale(z, 1, "fp16") == 0x0400 and lm.plane_scale(z, 1, "fp16") == 0
    assert lm.rtl_scale(sub, 1, "fp16") != lm.plane_scale(sub, 1, "fp16")
    assert lm.plane_scale(big, 1, "fp16") == 0x7C00 and lm.rtl_scale(big, 1, "fp16") != 0x7C00
    normal = num.from_float(np.random.default_rng(3).normal(0, 1, 1000), "fp16")
    for j in range(4):
        assert (lm.rtl_scale(normal, j, "fp16") == lm.plane_scale(normal, j, "fp16")).all()


# -- lut_precompute ---------------------------------------------------------------------------
PRE_CONFIGS = [                      # make test: the small FP network and an INT one
    dict(k=2, act="fp16", network="gray"),
    dict(act="int8", network="gray"),
    pytest.param(dict(k=3, act="fp16", table="full"), marks=_slow),   # also in conv_lut_array
    pytest.param(dict(act="fp16", network="naive", table="full"), marks=_slow),
    pytest.param(dict(act="int8", table="full"), marks=_slow),
    pytest.param(dict(act="fp16", network="gray"), marks=_slow),
    pytest.param(dict(act="fp16", network="naive"), marks=_slow),
    pytest.param(dict(act="fp16", network="gray", rounding="rtz"), marks=_slow),
    pytest.param(dict(act="fp8_e4m3", network="gray"), marks=_slow),
    pytest.param(dict(act="int16", network="naive"), marks=_slow),
    pytest.param(dict(k=6, act="int8", network="gray"), marks=_slow),
    pytest.param(dict(k=5, act="fp16", network="naive"), marks=_slow),
]


@pytest.mark.parametrize("cfg", PRE_CONFIGS, ids=_id)
def test_lut_precompute_matches_model(cfg):
    """Random activations with ±0, subnormals, the largest finite (its doubling overflows) and
    INT extremes mixed in: every table entry equals the model's network (exact INT entries;
    FP rounded per add in the network's order)."""
    from tcgen.units.lut.family import precompute_inputs
    p = get_unit("lut_precompute").params(**cfg)
    rng = np.random.default_rng(harness.seed(1310))
    stim = precompute_inputs(p, rng, 3000)
    if not p.act.startswith("int"):        # every pair of specials in lanes 0, 1 (coverage)
        from amaranth.lib import data
        from tcgen.verify.stimulus import cross, specials
        a0, a1 = cross(specials(p.act))
        rows = np.zeros((len(a0), p.k), np.uint64)
        rows[:, 0], rows[:, 1] = a0, a1
        lay = data.ArrayLayout(num.get_format(p.act).width, p.k)
        stim = {"a": np.concatenate([np.asarray(stim["a"], dtype=object),
                                     np.asarray(pack(lay, rows), dtype=object)])}
    n = len(stim["a"])
    # Verilator for the deep FP networks (3-60 adders: Icarus takes minutes for 3,000 vectors);
    # Icarus for one adder or an INT network (Verilator's build would be most of the test)
    shallow = p.act.startswith("int") or p.k == 2
    s = harness.run_batch("lut_precompute", p, stimulus=stim,
                          sim="icarus" if shallow else "verilator", lanes=4, depth=1024)
    assert s["vectors"] == n and s["mismatches"] == 0, s["first_mismatches"]


@pytest.mark.parametrize("cfg", [dict(), pytest.param(dict(k=6, act="int16", network="naive"),
                                                        marks=_slow)], ids=_id)
def test_lut_precompute_int8_matches_model(cfg):
    """The INT8 table quantizer against quantize_table_pow2: full-range and scaled-down
    activations (shift 0 and 1, RNE ties, the ±128 clamp)."""
    p = get_unit("lut_precompute_int8").params(**cfg)
    rng = np.random.default_rng(harness.seed(1311))
    stim = get_unit("lut_precompute_int8").workload(p, rng, 3000)
    s = harness.run_batch("lut_precompute_int8", p, stimulus=stim, sim="icarus", lanes=4,
                          depth=1024)
    assert s["vectors"] == 3000 and s["mismatches"] == 0, s["first_mismatches"]
