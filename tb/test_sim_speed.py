"""Throughput of the simulation paths, for reports/sim_bench.md (marked ``bench``; run by
scripts/sim_bench.py, never in ``make test``).  Each measurement is still a check: every
vector is compared with the golden model and must match.

``TCGEN_SIM_BENCH_OUT``: a folder; each test writes ``<test>.json`` there with its figures.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from tcgen.verify import harness
from tcgen.registry import get_unit
from tcgen.verify.stimulus import random_fp_pairs

pytestmark = pytest.mark.bench

OUT = os.environ.get("TCGEN_SIM_BENCH_OUT")


def _record(name: str, **values):
    if OUT:
        Path(OUT).mkdir(parents=True, exist_ok=True)
        (Path(OUT) / f"{name}.json").write_text(json.dumps(values, sort_keys=True))


def _fp_stim(unit, fmt, n, rng):
    if unit == "pacq_mul":
        return {"a": random_fp_pairs("fp16", rng, n)[0],
                "w": rng.integers(0, 1 << 16, n, dtype=np.uint64),
                "int2": rng.integers(0, 2, n, dtype=np.uint64)}
    a, b = random_fp_pairs(fmt, rng, n)
    return {"a": a, "b": b}


CASES = [("fp_mul", "fp16"), ("fp_mul", "bf16"), ("fp_add", "fp16"), ("fp_add", "bf16"),
         ("pacq_mul", "fp16")]


@pytest.mark.parametrize("sim,lanes,n,bitslice,depth", [
    ("icarus", 1, 50_000, False, 4096), ("verilator", 16, 2_000_000, False, 4096),
    ("icarus", 1, 50_000, True, 1024), ("verilator", 1, 16_777_216, True, 4096)])
@pytest.mark.parametrize("unit,fmt", CASES)
def test_batch_throughput(unit, fmt, sim, lanes, n, bitslice, depth):
    u = get_unit(unit)
    p = u.params() if unit == "pacq_mul" else u.params(fmt=fmt)
    stim = _fp_stim(unit, fmt, n, np.random.default_rng(7))
    kw = dict(lanes=lanes, depth=depth, sim=sim, bitslice=bitslice, optimize=True)
    harness.run_batch(unit, p, stimulus={k: v[:64] for k, v in stim.items()}, name="warm",
                      **kw)                                       # build outside the timing
    t0 = time.perf_counter()
    s = harness.run_batch(unit, p, stimulus=stim, name="bench", **kw)
    wall = time.perf_counter() - t0
    assert (s["checked"], s["mismatches"]) == (n, 0)
    path = "bitslice" if bitslice else "batch"
    _record(f"{path}-{unit}-{fmt}-{sim}", unit=unit, fmt=fmt, sim=sim, lanes=lanes, vectors=n,
            path=path, wall_s=wall, sim_s=s["sim_s"], model_s=s["model_s"], io_s=s["io_s"],
            per_s=n / wall, sim_per_s=n / s["sim_s"])


@pytest.mark.parametrize("unit,fmt", [("fp_mul", "fp16")])
def test_per_vector_cocotb_throughput(unit, fmt):
    """The per-vector cocotb path (one await per vector, Icarus): the baseline of the batch."""
    u = get_unit(unit)
    n = 20_000
    stim = _fp_stim(unit, fmt, n, np.random.default_rng(8))
    harness.run(unit, u.params(fmt=fmt), stimulus={k: v[:64] for k, v in stim.items()},
                name="warm", sim="icarus")
    t0 = time.perf_counter()
    s = harness.run(unit, u.params(fmt=fmt), stimulus=stim, name="bench", sim="icarus")
    wall = time.perf_counter() - t0
    assert (s["vectors"], s["mismatches"]) == (n, 0)
    _record(f"pervector-{unit}-{fmt}-icarus", unit=unit, fmt=fmt, sim="icarus", vectors=n,
            wall_s=wall, per_s=n / wall)


def test_bmma_tile_batch_throughput():
    """A BMMA m8n8k128 request stream on both simulators (stream batch path)."""
    u = get_unit("bmma_array")
    p = u.params()
    reqs = u.workload(p, np.random.default_rng(9), 2_000)
    for sim in ("verilator",):
        harness.run_batch("bmma_array", p, stimulus={"req": reqs["req__payload"][:4]},
                          depth=2048, sim=sim, name="warm", optimize=True)
        t0 = time.perf_counter()
        s = harness.run_batch("bmma_array", p, stimulus={"req": reqs["req__payload"]},
                              depth=2048, sim=sim, name="bench", optimize=True)
        wall = time.perf_counter() - t0
        assert s["mismatches"] == 0 and s["checked"] > 0
        _record(f"batch-bmma_array-{sim}", unit="bmma_array", sim=sim, vectors=2_000,
                wall_s=wall, sim_s=s["sim_s"], model_s=s["model_s"], per_s=2_000 / wall)
