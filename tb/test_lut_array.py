"""lut_array and the MAC baseline mac_dp4_array against their transaction models (tcgen.units.lut.model.lut_array_model) on the
stream bench (tcgen/verify/benches/stream.py): back to back with the documented latency and one
operation every w_bits cycles, random stalls on both streams, reset in the middle of an
operation; INT and FP tables, internal and external tables, W_BIT = 1..4, K = 2..6, and the
paper's M2N64K4."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tcgen.verify.bench_config import run_stream
from tcgen.verify.harness import seed
from tcgen.registry import get_unit
from tcgen.units.lut import model as lm
from tcgen.units.lut.family import (array_request, array_result, mac_request,
                                    random_mac_requests, random_requests)


def _simulate(p, requests, name, scenario="back_to_back", timing=False, **cfg):
    summary = run_stream("lut_array", p, {"req__payload": np.array(requests, dtype=object)},
                         name=name, scenarios=(scenario,), **cfg)
    assert summary["mismatches"] == 0, summary
    assert summary[f"{scenario}_inputs"] == len(requests)
    if scenario == "reset_mid_operation":
        assert summary["reset_leaked"] == 0
    if timing:
        assert summary["back_to_back_latency"] == get_unit("lut_array").interface(p).latency
        assert summary["back_to_back_issue_intervals"] == [p.w_bits], summary
    observed = json.loads(Path(summary[f"{scenario}_observed"]).read_text())
    (out,) = observed.values()
    return [int(x) for x in out]


_slow = pytest.mark.slow
# make test keeps one configuration per kind (FP internal, INT internal, external + FP8 + K=2);
# the others run in make test-slow
CONFIGS = [
    dict(m=2, n=4, entry="fp16", acc="fp16", w_bits=2),
    pytest.param(dict(m=2, n=3, entry="int11", acc="int32", w_bits=3), marks=_slow),  # budget
    dict(m=2, n=2, k=2, entry="fp8_e4m3", acc="fp16", w_bits=2, table="external"),
    pytest.param(dict(m=2, n=4, entry="fp16", acc="fp32", w_bits=4, table="external"),
                 marks=_slow),
    pytest.param(dict(m=1, n=4, entry="int8", acc="int24", w_bits=1), marks=_slow),
    pytest.param(dict(m=1, n=2, k=6, entry="int16", acc="int32", w_bits=2), marks=_slow),
    pytest.param(dict(m=2, n=4, entry="fp16", acc="fp16", w_bits=2, scale="rtl"), marks=_slow),
]


def _id(cfg):
    if not isinstance(cfg, dict):
        return None
    return "-".join(f"{k}={v}" for k, v in cfg.items())


@pytest.mark.parametrize("cfg", CONFIGS, ids=_id)
def test_lut_array_back_to_back_and_stalls(cfg):
    p = get_unit("lut_array").params(**cfg)
    rng = np.random.default_rng(seed(1400))
    reqs = random_requests(p, rng, 40)
    _simulate(p, reqs, "b2b", timing=True)
    _simulate(p, reqs, "stall", scenario="backpressure", idle=0.3, stall=0.4)


@pytest.mark.parametrize("table", ["internal", pytest.param("external", marks=_slow)])
def test_lut_array_reset_mid_operation(table):
    p = get_unit("lut_array").params(m=2, n=4, entry="int11", acc="int32", w_bits=4,
                                     table=table)
    rng = np.random.default_rng(seed(1401))
    reqs = random_requests(p, rng, 4)
    for at in (p.w_bits + 1, p.w_bits + 2, 2 * p.w_bits + 1):   # operations in flight
        _simulate(p, reqs, f"reset{at}", scenario="reset_mid_operation", reset_ops=4,
                  reset_at=at, ready_pattern="00000001")


def test_lut_array_m2n64k4_gemm_slice():
    """The paper's M2N64K4 at its defaults (FP16 tables and accumulator, W_INT2): a 2×64 output
    tile over 16 K-groups of real tables (the precompute of FP16 activations), chained through
    the accumulator; the RTL's D equals the model's, and the model's value is within FP16
    accumulation error of the exact dot products."""
    p = get_unit("lut_array").params()
    rng = np.random.default_rng(seed(1402))
    from tcgen.hw import numeric as num
    G = 16
    A = num.from_float(rng.normal(0, 1, (p.m, 4 * G)), "fp16")
    Wq = rng.integers(0, 4, (p.n, 4 * G))
    reqs = []
    for g in range(G):
        T = lm.precompute(A[:, 4 * g:4 * g + 4], "fp16")
        sign, idx = lm.encode_plane(lm.bit_planes(Wq[:, 4 * g:4 * g + 4], 2))
        reqs.append(array_request(p, T, sign, idx, chain=g > 0, emit=g == G - 1))
    out = _simulate(p, reqs, "gemm", timing=False)
    assert len(out) == 1
    d = num.to_float(array_result(p, out[0]).astype(np.uint64), "fp16")
    exact = num.to_float(A, "fp16") @ lm.reinterpret(Wq, 2).T
    err = np.abs(d - exact)
    # 2·G FP16 adds (plus 8·G precompute adds in the tables): bounded by the sum of their
    # half-ulps at the largest magnitude reached, generously 3·G ulps of max|partial sums|
    bound = 3 * G * 2.0 ** -10 * (np.abs(num.to_float(A, "fp16")).sum() * 3 + 1)
    assert err.max() <= bound and err.max() > 0


# -- the MAC baseline -------------------------------------------------------------------------
MAC_CONFIGS = [
    pytest.param(dict(m=2, n=3, act="fp16", acc="fp16", w_bits=2), marks=_slow),  # budget
    dict(m=2, n=3, act="int8", acc="int32", w_bits=4),
    dict(m=2, n=2, act="fp16", acc="fp16", w_bits=2, dequant="outside"),
    pytest.param(dict(m=2, n=2, act="fp16", acc="fp32", w_bits=4), marks=_slow),
    pytest.param(dict(m=1, n=3, k=3, act="fp8_e4m3", acc="fp16", w_bits=8, rounding="rtz"),
                 marks=_slow),
    pytest.param(dict(m=1, n=2, k=5, act="int16", acc="int32", w_bits=1), marks=_slow),
    pytest.param(dict(m=2, n=2, act="int8", acc="int32", w_bits=4, dequant="outside"),
                 marks=_slow),
]


def _mac_simulate(p, requests, name, scenario, **cfg):
    summary = run_stream("mac_dp4_array", p, {"req__payload": np.array(requests, dtype=object)},
                         name=name, scenarios=(scenario,), **cfg)
    assert summary["mismatches"] == 0, summary
    assert summary[f"{scenario}_inputs"] == len(requests)
    return summary


@pytest.mark.parametrize("cfg", MAC_CONFIGS, ids=_id)
def test_mac_array_matches_model(cfg):
    p = get_unit("mac_dp4_array").params(**cfg)
    rng = np.random.default_rng(seed(1410))
    reqs = random_mac_requests(p, rng, 60)
    s = _mac_simulate(p, reqs, "b2b", "back_to_back")
    assert s["back_to_back_latency"] == 1 and s["back_to_back_issue_intervals"] == [1]
    _mac_simulate(p, reqs, "stall", "backpressure", idle=0.3, stall=0.4)


def test_mac_and_lut_compute_the_same_function():
    """At integer activations every rounding is exact, so the MAC baseline and the LUT array
    give the same D for the same activations and weight codes (the LUT's table from the
    precompute, the MAC's activations raw)."""
    pl = get_unit("lut_array").params(m=2, n=3, entry="int11", acc="int32", w_bits=3)
    pm = get_unit("mac_dp4_array").params(m=2, n=3, act="int8", acc="int32", w_bits=3)
    rng = np.random.default_rng(seed(1411))
    lut_reqs, mac_reqs = [], []
    for r in range(20):
        A = rng.integers(-128, 128, (2, 4))
        q = rng.integers(0, 8, (3, 4))
        c = rng.integers(-1000, 1000, (2, 3))
        sign, idx = lm.encode_plane(lm.bit_planes(q, 3))
        lut_reqs.append(array_request(pl, lm.precompute(A, "int8"), sign, idx, c, chain=r % 3 > 0))
        mac_reqs.append(mac_request(pm, A, q, c, chain=r % 3 > 0))
    dl = get_unit("lut_array").golden(pl, req__payload=np.array(lut_reqs, dtype=object))
    dm = get_unit("mac_dp4_array").golden(pm, req__payload=np.array(mac_reqs, dtype=object))
    assert list(dl["d__payload"]) == list(dm["d__payload"])
    out = _simulate(pl, lut_reqs, "same_fn")
    assert out == [int(x) for x in dm["d__payload"]]
    _mac_simulate(pm, mac_reqs, "same_fn", "back_to_back")
