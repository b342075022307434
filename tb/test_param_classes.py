"""Parameter-space classes (tb/param_classes.py, docs/coverage.md "Parameter classes").

* The checker (instant): for every unit of the registry, every class of every field (every
  choice, both bools, min / max / powers of two and their neighbours for widths, min / mid /
  max for counts) is held by a configuration of the unit's covering set, or has a written
  exclusion; a stale exclusion fails too.  A new unit, field or choice gets classes and
  configurations by itself; one that no valid, simulable configuration can hold fails here,
  naming the unit, the field and the class.
* The class tests: each configuration of each covering set elaborated and run RTL against
  the golden model (the unit's workload plus directed corners, tb/param_classes.py
  ``corner_stimulus``); the cheapest configuration of each small unit in make test, the rest
  ``slow`` (reports/param_classes.md).
"""
from __future__ import annotations

import dataclasses
import os
import signal
import time
import zlib
from dataclasses import dataclass

import numpy as np
import pytest

import param_classes as pc
from tcgen.hw.params import Params, ParamError, param
from tcgen.hw.spec import UnitSpec
from tcgen.registry import all_units, get_unit
from tcgen.verify import harness

UNITS = [u.name for u in all_units()]

#: random vectors per configuration (the corners come on top)
VECTORS = 64
#: make test runs each unit's cheapest configuration when it is at most this many estimated
#: cells; everything else is ``slow``.  0: none -- make test keeps the checker (every class
#: has a configuration), the RTL runs of the 413 configurations are make test-slow's
#: (10,000 put 36 units in make test, 1,000 29, and either kept it over its 10-min budget)
FAST_CELLS = 0


# -- the checker -------------------------------------------------------------------------------
def test_every_class_is_covered_or_excluded():
    problems = pc.check_coverage(UNITS)
    assert not problems, "parameter classes without a test:\n" + "\n".join(problems)


def test_every_configuration_is_valid_and_under_its_cap():
    """The covering sets are what the class tests run: valid Params, under the simulation cap,
    and no two alike."""
    for name in UNITS:
        cv = pc.covering(name)
        cap = pc.UNIT_CAPS.get(name, (pc.SIM_CAP_CELLS, ""))[0]
        keys = [p.key() for p in cv.configs]
        assert len(set(keys)) == len(keys), name
        for p in cv.configs:
            assert type(p) is get_unit(name).params
            assert pc.cost(name, p) <= cap, (name, p)


def test_excluded_classes_have_no_valid_configuration():
    """Every written exclusion is a value no configuration can take: constructing the unit's
    smallest configuration with it raises ParamError (so it is no silent gap in the tests)."""
    for (name, field, value) in pc.EXCLUSIONS:
        cv = pc.covering(name)
        c = next(c for c in cv.classes if c.field == field and c.value == value)
        assert cv.infeasible[c].startswith("no valid configuration: "), (name, field, value)
        with pytest.raises(ParamError):
            get_unit(name).params(**{field: value})


def test_class_derivation():
    """The rule on a few fields whose classes are known by hand."""
    def values(unit, field):
        f = next(f for f in dataclasses.fields(get_unit(unit).params) if f.name == field)
        return [c.value for c in pc.field_classes(unit, f)]
    assert values("lzc", "width") == [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64,
                                      65, 127, 128]
    assert values("int8_mac_array", "acc_width") == [8, 9, 15, 16, 17, 31, 32]
    assert values("fp16_mul", "pipeline") == [0, 1, 2]                   # a count: lo, mid, hi
    assert values("bmma_array", "k") == [1, 64, 4096]                    # geometric mid
    assert values("fp_add", "fmt") == ["fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2"]
    assert values("fp_add", "ftz") == [False, True]
    assert values("fp_add", "cuts") == [""]                              # free text
    assert values("dp4_pacq", "D") == [1, 2, 4]                          # int choices


def test_a_range_narrowed_by_check_has_its_valid_boundary_as_a_class():
    """bmma_array's k range starts at 1, its check() at 32 (whole words); fused_dot's window
    range ends at 600, its bounds at 528 (tf32): 32 and 528 are classes, held by a
    configuration."""
    for name, field, value, label in [("bmma_array", "k", 32, "min valid"),
                                      ("fused_dot", "window", 528, "max valid"),
                                      ("int8_mac_array", "acc_width", 16, "min valid")]:
        cv = pc.covering(name)
        c = next(c for c in cv.classes if c.field == field and c.value == value)
        assert label in c.labels
        assert any(getattr(p, field) == value for p in cv.configs)


def test_covering_is_small():
    """A covering set grows with the richest field's classes, not with their sum: at most
    1.7x the richest field's count (plus one) for every unit."""
    for name in UNITS:
        cv = pc.covering(name)
        per_field = {}
        for c in cv.classes:
            per_field[c.field] = per_field.get(c.field, 0) + 1
        assert len(cv.configs) <= 1.7 * max(per_field.values()) + 1, \
            (name, len(cv.configs), per_field)


# the checker's own test: a unit with a class no configuration can hold, and one with a
# class that is only too big
@dataclass(frozen=True)
class _ToyParams(Params):
    UNIT = "toy"
    width: int = param(4, range=(1, 8))
    mode: str = param("a", choices=("a", "b", "never"))

    def check(self):
        if self.mode == "never":
            raise self.error("mode", self.mode, "a or b")


_TOY = UnitSpec(name="toy", family="hw", summary="toy", params=_ToyParams, build=None,
                model=None, estimate=lambda p: 1000.0 * p.width)


def test_checker_names_the_unit_field_and_class():
    problems = pc.check_coverage([_TOY], exclusions={})
    assert len(problems) == 1
    assert problems[0].startswith("toy: mode='never' (choice) has no test: no valid "
                                  "configuration: toy: mode must be a or b, got 'never'")
    assert pc.check_coverage([_TOY], exclusions={("toy", "mode", "never"): "refused"}) == []
    # too big: widths 7 and 8 are 7,000 and 8,000 cells, over a cap of 6,000
    problems = pc.check_coverage([_TOY], exclusions={("toy", "mode", "never"): "refused"},
                                 cap=6_000)
    assert [p.split(" has no test")[0] for p in problems] == \
        ["toy: width=7 (2^3-1)", "toy: width=8 (2^3, max)"]
    assert "too big to simulate" in problems[-1]
    # a stale exclusion
    problems = pc.check_coverage([_TOY], exclusions={("toy", "mode", "never"): "refused",
                                                     ("toy", "mode", "a"): "stale"})
    assert problems == ["toy: mode='a' is excluded but a configuration holds it: remove the "
                        "exclusion"]


# -- the class tests ---------------------------------------------------------------------------
def _fast(name: str) -> int | None:
    """The index of the configuration of ``name`` that make test runs (None: all slow)."""
    cv = pc.covering(name)
    costs = [pc.cost(name, p) for p in cv.configs]
    i = int(np.argmin(costs))
    return i if costs[i] <= FAST_CELLS else None


#: Configurations whose RTL disagrees with the golden model (generator bugs found here, not
#: fixed yet): a predicate on the unit and its Params, and the reason.  strict: a fix makes
#: the test XPASS, which fails until the entry goes.
KNOWN_MISMATCHES: list = [
    # (wino_conv int at 31/32 bits was the model's int64 wrapping, fixed in issue 42; its
    # regression test: tb/test_winograd_model.py::test_int_stages_exact_for_wide_operands)
]


def _cases():
    for name in UNITS:
        fast = _fast(name)
        for i, p in enumerate(pc.covering(name).configs):
            marks = [] if i == fast else [pytest.mark.slow]
            marks += [pytest.mark.xfail(strict=True, reason=why)
                      for known, why in KNOWN_MISMATCHES if known(name, p)]
            yield pytest.param(name, i, marks=marks, id=f"{name}-{i}")


@pytest.mark.parametrize("name,index", list(_cases()))
def test_class_configuration(name, index):
    """One configuration of the unit's covering set, RTL against the golden model."""
    r = run_configuration(name, index)
    assert r["mismatches"] == 0, \
        f"{name} {r['params']}: {r['mismatches']} mismatches; first: {r['first_mismatch']}"
    assert r["checked"] == r["expected"] and r["checked"] > 0, r


def run_configuration(name: str, index: int) -> dict:
    """Simulate configuration ``index`` of ``name``'s covering set; the result (also appended
    to :data:`param_classes.RESULTS` for the report)."""
    unit = get_unit(name)
    cv = pc.covering(name)
    p = cv.configs[index]
    t0 = time.time()
    base = {"unit": name, "index": index, "params": p.key(), "values": p.as_dict(),
            "classes": [str(c) for c in cv.covers[index]], "cells": round(pc.cost(name, p)),
            "source": harness.source_hash()}
    corners, expected = None, 0
    limit = int(os.environ.get("TCGEN_CLASS_TIMEOUT", "0"))     # the report run's bound, s

    def overtime(signum, frame):
        raise TimeoutError(f"not finished in TCGEN_CLASS_TIMEOUT={limit} s")
    if limit:
        signal.signal(signal.SIGALRM, overtime)
        signal.alarm(limit)
    try:                   # a workload, elaboration or simulation failure: recorded, raised
        rng = np.random.default_rng(harness.seed(zlib.crc32(f"{name}:{p.key()}".encode())))
        # wino_layer takes its K*C filters one per beat before any output: at least 2*K*C
        # vectors (C = 256, K = 1 makes none in 64), and its first result comes `latency`
        # cycles in (a 64x64 map: 100; none in 64)
        # and wino_linebuf's first tile needs a band's priming, about W beats (W = 256: none
        # in 64)
        n_vec = max(VECTORS, 2 * p.K * p.C, unit.interface(p).latency + VECTORS) \
            if name == "wino_layer" else max(VECTORS, 3 * p.W) if name == "wino_linebuf" \
            else VECTORS
        stim = unit.workload(p, rng, n_vec)
        corners = pc.corner_stimulus(unit, p)
        if corners is not None:
            assert set(corners) == set(stim), (name, set(corners), set(stim))
            stim = {k: np.concatenate([np.asarray(corners[k], dtype=object),
                                       np.asarray(stim[k], dtype=object)])
                    if (np.asarray(stim[k]).dtype == object or corners[k].dtype == object)
                    else np.concatenate([corners[k], stim[k]]).astype(np.uint64)
                    for k in stim}
        n = len(next(iter(stim.values())))
        base["vectors"] = n
        if any(k.endswith("__payload") for k in stim):        # a stream unit: its results
            out = unit.golden(p, **{k: v for k, v in stim.items() if k.endswith("__payload")})
            expected = sum(len(v) for k, v in out.items() if k.endswith("__payload"))
        else:
            expected = n
        s = harness.run_batch(name, p, stimulus=stim, depth=max(256, n, expected),
                              name=f"classes{index}")
    except Exception as e:
        summary = getattr(e, "summary", None) or {}          # SimulationFailed: the bench's
        pc.record({"vectors": 0, **base, "corners": 0, "checked": summary.get("checked", 0),
                   "expected": expected, "mismatches": summary.get("mismatches", 0),
                   "first_mismatch": (summary.get("first_mismatches") or [None])[0],
                   "wall_s": round(time.time() - t0, 2),
                   "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"})
        raise
    finally:
        if limit:
            signal.alarm(0)
    result = {**base, "corners": 0 if corners is None else len(next(iter(corners.values()))),
              "checked": s.get("checked", 0), "expected": expected,
              "mismatches": s.get("mismatches", 0),
              "first_mismatch": (s.get("first_mismatches") or [None])[0],
              "sim": s.get("sim") or "", "wall_s": round(time.time() - t0, 2)}
    pc.record(result)
    return result
