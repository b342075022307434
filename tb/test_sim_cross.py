"""Cross-simulator subset: the same vectors on Icarus and on Verilator, through the same bench;
both must agree with the golden model (and so with each other), vector for vector.

The whole regression on both simulators is ``make test-sims`` (slow; reports/sim_regression.md).
"""
from __future__ import annotations

import numpy as np
import pytest

from tcgen.verify import harness
from tcgen.registry import get_unit
from tcgen.verify.stimulus import concat_pairs, cross, random_fp_pairs, specials

SIMS = ("icarus", "verilator")


@pytest.mark.parametrize("sim", [s if s == "icarus" else pytest.param(s, marks=pytest.mark.slow)
                                 for s in SIMS])      # Verilator: make test-slow
def test_fp_add_batch_on_both(sim):
    rng = np.random.default_rng(harness.seed(401))
    a, b = concat_pairs(cross(specials("fp16")), random_fp_pairs("fp16", rng, 20_000))
    s = harness.run_batch("fp_add", get_unit("fp_add").params(), stimulus={"a": a, "b": b},
                          lanes=4, depth=4096, sim=sim, name=f"cross-{sim}")
    assert (s["vectors"], s["checked"], s["mismatches"]) == (len(a), len(a), 0)


@pytest.mark.parametrize("sim", [s if s == "icarus" else pytest.param(s, marks=pytest.mark.slow)
                                 for s in SIMS])      # Verilator's build: 12.5 s (make test-slow)
def test_stream_bench_on_both(sim):
    """The cocotb stream bench (back-to-back, backpressure, reset mid-operation) on the
    BNN epilogue (two channels: the stream bench is the subject, and Verilator builds a small
    model sooner): same stimulus, same scenarios, same outcome on both simulators."""
    from tcgen.verify.bench_config import run_stream
    unit = get_unit("bnn_epilogue")
    p = unit.params(n=2)
    stim = unit.workload(p, np.random.default_rng(harness.seed(402)), 64)
    s = run_stream("bnn_epilogue", p, {"req__payload": stim["req__payload"]},
                   name=f"cross-{sim}", sim=sim, seed=3)
    assert s["reset_leaked"] == 0
    for sc in ("back_to_back", "backpressure", "reset_mid_operation"):
        assert s[f"{sc}_vectors"] > 0 and s[f"{sc}_mismatches"] == 0, sc
