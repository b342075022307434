"""The LUT Tensor Core's two bit-serial baselines against their golden models: the
conventional LUT ``conv_lut_array`` (UNPU-style, the three variants of Table 2's ablation, the
precompute per row, per unit or hoisted out of the array) and the ADD baseline
``add_dp4_array`` (Stripes-style) -- on the stream bench (back to back at one operation every
w_bits cycles, random stalls, reset in the middle of an operation), and the golden models
against the exact products: at integer activations UNPU and ADD compute C + Σ q·a, the
reinterpreted variants C + Σ q′·a, the last equal bit for bit to ``lut_array`` fed the hoisted
precompute (and, hoisted itself, taking lut_array's very request payloads)."""
from __future__ import annotations

import numpy as np
import pytest

from tcgen.verify.bench_config import run_stream
from tcgen.verify.harness import seed
from tcgen.hw import numeric as num
from tcgen.registry import get_unit
from tcgen.units.lut import model as lm
from tcgen.units.lut.family import (array_request, hoisted_tables, random_serial_requests,
                                    serial_request, to_signed)

_slow = pytest.mark.slow


def _id(cfg):
    return "-".join(f"{k}={v}" for k, v in cfg.items()) if isinstance(cfg, dict) else None


def _simulate(unit, p, requests, name, scenario="back_to_back", **cfg):
    summary = run_stream(unit, p, {"req__payload": np.array(requests, dtype=object)},
                         name=name, scenarios=(scenario,), **cfg)
    assert summary["mismatches"] == 0, summary
    assert summary[f"{scenario}_inputs"] == len(requests)
    if scenario == "back_to_back":
        assert summary["back_to_back_latency"] == get_unit(unit).interface(p).latency
        assert summary["back_to_back_issue_intervals"] == [p.w_bits], summary
    if scenario == "reset_mid_operation":
        assert summary["reset_leaked"] == 0
    return summary


CONV_CONFIGS = [
    dict(m=1, n=2, k=3, act="fp16", acc="fp16", w_bits=2, variant="unpu"),
    pytest.param(dict(m=2, n=3, act="fp16", acc="fp16", w_bits=2, variant="unpu"), marks=_slow),
    pytest.param(dict(m=2, n=3, act="int8", acc="int32", w_bits=3, variant="reinterpret"),
                 marks=_slow),                       # this and the next: make test's budget
    pytest.param(dict(m=1, n=2, act="int8", acc="int24", w_bits=2, variant="unpu",
                      placement="unit", operands="external"), marks=_slow),
    pytest.param(dict(m=2, n=2, act="fp16", acc="fp32", w_bits=2, variant="offline_inversion",
                      operands="external"), marks=_slow),
    pytest.param(dict(m=1, n=2, k=3, act="fp8_e4m3", acc="fp16", w_bits=4, variant="unpu",
                      network="naive", rounding="rtz"), marks=_slow),
    pytest.param(dict(m=1, n=2, k=5, act="int16", acc="int32", w_bits=1,
                      variant="reinterpret", placement="unit"), marks=_slow),
    # the precompute hoisted out of the array: the request carries the tables
    dict(m=2, n=3, act="int8", acc="int32", w_bits=2, variant="unpu", placement="hoisted"),
    pytest.param(dict(m=2, n=2, act="fp16", acc="fp32", w_bits=2, variant="offline_inversion",
                      placement="hoisted"), marks=_slow),
    pytest.param(dict(m=1, n=3, act="int16", acc="int32", w_bits=3, variant="reinterpret",
                      placement="hoisted", operands="external"), marks=_slow),
    pytest.param(dict(m=1, n=2, k=3, act="fp16", acc="fp16", w_bits=2, variant="unpu",
                      placement="hoisted", operands="external", network="naive"), marks=_slow),
    pytest.param(dict(m=1, n=2, k=3, act="fp8_e4m3", acc="fp16", w_bits=4,
                      variant="reinterpret", placement="hoisted", rounding="rtz"), marks=_slow),
]

ADD_CONFIGS = [
    dict(m=2, n=3, act="fp16", acc="fp16", w_bits=2),
    pytest.param(dict(m=2, n=3, act="int8", acc="int32", w_bits=3, operands="external"),
                 marks=_slow),
    pytest.param(dict(m=1, n=2, act="fp16", acc="fp32", w_bits=4), marks=_slow),
    pytest.param(dict(m=1, n=2, k=6, act="int16", acc="int32", w_bits=1), marks=_slow),
    pytest.param(dict(m=1, n=2, k=3, act="fp8_e4m3", acc="fp16", w_bits=3, rounding="rtz"),
                 marks=_slow),
]


def _cases(unit, configs):
    for c in configs:
        cfg, marks = (c, ()) if isinstance(c, dict) else (c.values[0], c.marks)
        yield pytest.param(unit, cfg, marks=marks, id=f"{unit}-{_id(cfg)}")


@pytest.mark.parametrize("unit,cfg", [*_cases("conv_lut_array", CONV_CONFIGS),
                                      *_cases("add_dp4_array", ADD_CONFIGS)])
def test_baseline_matches_model(unit, cfg):
    p = get_unit(unit).params(**cfg)
    rng = np.random.default_rng(seed(1500))
    reqs = random_serial_requests(p, rng, 30)
    _simulate(unit, p, reqs, "b2b")
    _simulate(unit, p, reqs, "stall", scenario="backpressure", idle=0.3, stall=0.4)


@pytest.mark.parametrize("unit", ["conv_lut_array", "add_dp4_array"])
def test_baseline_reset_mid_operation(unit):
    p = get_unit(unit).params(m=1, n=3, act="int8", acc="int32", w_bits=3)
    rng = np.random.default_rng(seed(1501))
    reqs = random_serial_requests(p, rng, 4)
    for at in (p.w_bits + 1, 2 * p.w_bits + 1):
        _simulate(unit, p, reqs, f"reset{at}", scenario="reset_mid_operation", reset_ops=4,
                  reset_at=at, ready_pattern="00000001")


def _int_case(rng, m, n, k, b):
    A = rng.integers(-128, 128, (m, k))
    q = rng.integers(0, 1 << b, (n, k))
    c = rng.integers(-5000, 5000, (m, n))
    planes = lm.bit_planes(q, b)                        # (b, n, k)
    return A, q, c, planes


@pytest.mark.parametrize("b", [1, 2, 3, 4])
def test_int_baselines_compute_the_exact_products(b):
    """Golden models at INT8 activations, every rounding exact: UNPU and ADD give C + A·qᵀ
    (unsigned codes), the reinterpreted conventional LUT (index inverted in the circuit or
    offline) gives C + A·q′ᵀ -- the LUT Tensor Core's function, equal to lut_array's D; the
    same with the precompute hoisted (the request's tables: full for UNPU, half otherwise)."""
    rng = np.random.default_rng(seed(1502 + b))
    m, n, k = 2, 5, 4
    for _ in range(20):
        A, q, c, planes = _int_case(rng, m, n, k, b)
        raw = lm.plane_code(planes)                                   # (b, n)
        sign, idx = lm.encode_plane(planes)
        enc = (sign << (k - 1)) | idx
        req = {"a": A[None], "c": c[None], "chain": [0], "emit": [1]}
        kw = dict(m=m, n=n, k=k, w_bits=b, act_fmt="int8", acc_fmt="int32")
        unpu = lm.conv_array_model({**req, "w": raw[None]}, variant="unpu", **kw)["d"][0]
        rein = lm.conv_array_model({**req, "w": raw[None]}, variant="reinterpret", **kw)["d"][0]
        offl = lm.conv_array_model({**req, "w": enc[None]}, variant="offline_inversion",
                                   **kw)["d"][0]
        add = lm.add_array_model({**req, "w": raw[None]}, **kw)["d"][0]
        lut = lm.lut_array_model({**req, "lut": lm.precompute(A, "int8")[None], "w": enc[None]},
                                 m=m, n=n, k=k, w_bits=b, entry_fmt="int11",
                                 acc_fmt="int32")["d"][0]
        hreq = {"c": c[None], "chain": [0], "emit": [1]}             # no activations
        full, half = lm.precompute(A, "int8", table="full")[None], lm.precompute(A, "int8")[None]
        h_unpu = lm.conv_array_model({**hreq, "lut": full, "w": raw[None]}, variant="unpu",
                                     placement="hoisted", **kw)["d"][0]
        h_rein = lm.conv_array_model({**hreq, "lut": half, "w": raw[None]},
                                     variant="reinterpret", placement="hoisted", **kw)["d"][0]
        h_offl = lm.conv_array_model({**hreq, "lut": half, "w": enc[None]},
                                     variant="offline_inversion", placement="hoisted",
                                     **kw)["d"][0]
        exact = c + A @ q.T
        assert (unpu == exact).all() and (add == exact).all() and (h_unpu == exact).all()
        want = c + A @ lm.reinterpret(q, b).T
        assert (rein == want).all() and (offl == want).all() and (lut == want).all()
        assert (h_rein == want).all() and (h_offl == want).all()


@pytest.mark.parametrize("act,placement,rtl", [
    ("fp16", "row", "conv"),
    ("int8", "hoisted", "both"),
    ("fp16", "hoisted", None),
])
def test_offline_inversion_equals_lut_array_bit_for_bit(act, placement, rtl):
    """The conventional LUT with offline inversion is the LUT Tensor Core: with the precompute
    in the array (``row``, FP16) the same D, bit for bit, as lut_array fed the same (Gray)
    precompute; with it hoisted, the very same request payloads as lut_array's at the
    precompute's entry format (INT8 activations: int11) and the same D.  The RTL agrees
    (stream bench; ``both``: lut_array's RTL too, on the same payloads)."""
    fp = act == "fp16"
    acc = "fp16" if fp else "int32"
    pc = get_unit("conv_lut_array").params(m=2, n=3, act=act, acc=acc, w_bits=2,
                                           variant="offline_inversion", placement=placement)
    pl = get_unit("lut_array").params(m=2, n=3, entry=pc.table_entry, acc=acc, w_bits=2)
    rng = np.random.default_rng(seed(1506))
    conv_reqs, lut_reqs = [], []
    for r in range(12):
        A = num.from_float(rng.normal(0, 1, (2, 4)), "fp16") if fp else \
            rng.integers(-128, 128, (2, 4))
        q = rng.integers(0, 4, (3, 4))
        c = num.from_float(rng.normal(0, 4, (2, 3)), "fp16") if fp else \
            rng.integers(-5000, 5000, (2, 3))
        sign, idx = lm.encode_plane(lm.bit_planes(q, 2))
        T = lm.precompute(A, act)
        if placement == "hoisted":
            assert (hoisted_tables(pc, A) == T).all()
        conv_reqs.append(serial_request(pc, T if placement == "hoisted" else A,
                                        (sign << 3) | idx, c, chain=r % 2 == 1))
        lut_reqs.append(array_request(pl, T, sign, idx, c, chain=r % 2 == 1))
    if placement == "hoisted":
        assert conv_reqs == lut_reqs
    dc = get_unit("conv_lut_array").golden(pc, req__payload=np.array(conv_reqs, dtype=object))
    dl = get_unit("lut_array").golden(pl, req__payload=np.array(lut_reqs, dtype=object))
    assert list(dc["d__payload"]) == list(dl["d__payload"]) and len(dc["d__payload"]) == 12
    if rtl:
        _simulate("conv_lut_array", pc, conv_reqs, "same_as_lut")
    if rtl == "both":
        _simulate("lut_array", pl, conv_reqs, "same_as_conv")


@pytest.mark.parametrize("network", ["gray", "naive"])
def test_full_table_precompute(network):
    """UNPU's {0, 1} table: INT exact (= zero_one_table, T[0] = 0); FP16 within the rounding
    of its adds of the exact table, and T[single bit] = a_i exactly (naive) / T[0] = +0."""
    rng = np.random.default_rng(seed(1507))
    a = rng.integers(-128, 128, (50, 4))
    assert (lm.precompute(a, "int8", table="full", network=network) ==
            lm.zero_one_table(a)).all()
    af = num.from_float(rng.normal(0, 1, (200, 4)), "fp16")
    t = lm.precompute(af, "fp16", table="full", network=network)
    assert (t[:, 0] == 0).all()
    exact = lm.zero_one_table(num.to_float(af, "fp16"))
    # ≤ 2^K − 1 rounded adds (Gray) of partial sums ≤ Σ|a|: each within half an ulp
    bound = 16 * 2.0 ** -11 * np.abs(num.to_float(af, "fp16")).sum(axis=1, keepdims=True)
    assert (np.abs(num.to_float(t, "fp16") - exact) <= bound).all()
    if network == "naive":
        for i in range(4):
            assert (t[:, 1 << (3 - i)] == af[:, i]).all()


def test_serial_params_reject_bad_values():
    from tcgen.hw.params import ParamError
    with pytest.raises(ParamError, match="acc"):
        get_unit("add_dp4_array").params(act="int8", acc="fp16")
    with pytest.raises(ParamError, match="k"):
        get_unit("conv_lut_array").params(k=6)
    with pytest.raises(ParamError, match="variant"):
        get_unit("conv_lut_array").params(variant="lut")
    with pytest.raises(ParamError, match="placement must be one of row, unit, hoisted"):
        get_unit("conv_lut_array").params(placement="outside")


def test_hoisted_placement_params():
    """``placement = hoisted`` with every variant, both operand modes and either network
    (unused); the request carries M tables of the in-array precompute's format; documented."""
    from tcgen.units.lut.layouts import serial_request as layout
    from tcgen.units.lut.rtl import ConvLutArray, precompute_entry
    spec = get_unit("conv_lut_array")
    for variant in ("unpu", "reinterpret", "offline_inversion"):
        for operands in ("internal", "external"):
            for network in ("gray", "naive"):
                for act, acc in (("int8", "int32"), ("int16", "int32"), ("fp16", "fp16"),
                                 ("fp8_e4m3", "fp32")):
                    p = spec.params(act=act, acc=acc, variant=variant, operands=operands,
                                    network=network, placement="hoisted", k=3)
                    arr = spec.interface(p)
                    assert p.table_entry == precompute_entry(arr.precompute_params())
                    assert p.table_entries == (8 if variant == "unpu" else 4)
                    lay = layout(p)
                    assert [n for n, _ in lay] == ["lut", "w", "c", "chain", "emit"]
                    assert arr.ROW == "lut" and ConvLutArray.ROW == "a"
                    assert arr.latency == p.w_bits + (operands == "internal")
    doc = {f.name: f.metadata["doc"] for f in spec.params.fields()}
    assert "hoisted" in doc["placement"] and "unused when hoisted" in doc["network"]
    assert "hoisted" in spec.params.__doc__
