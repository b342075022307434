"""The functional-coverage machinery (tcgen/verify/coverage.py, docs/coverage.md): the
classification
functions against hand-made values and an independent Fraction reference, the bulk sampler
against plain counting, and the merge/report's verdict on an unhit bin (a subprocess of
scripts/coverage_report.py, as ``make coverage`` runs it)."""
from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from tcgen.verify import coverage as cov
from tcgen.hw import numeric as num

ROOT = Path(__file__).resolve().parent.parent


# -- FP classes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt,bits,cls", [
    ("fp16", 0x0000, "zero"), ("fp16", 0x8000, "zero"), ("fp16", 0x0001, "subnormal"),
    ("fp16", 0x03FF, "subnormal"), ("fp16", 0x0400, "normal"), ("fp16", 0x3C00, "normal"),
    ("fp16", 0x7BFF, "max"), ("fp16", 0xFBFF, "max"), ("fp16", 0x7BFE, "normal"),
    ("fp16", 0x7C00, "inf"), ("fp16", 0xFC00, "inf"), ("fp16", 0x7C01, "nan"),
    ("fp16", 0x7E00, "nan"), ("fp32", 0x7F7FFFFF, "max"), ("fp32", 0x00000001, "subnormal"),
    ("fp32", 0x7F800000, "inf"), ("bf16", 0x7F7F, "max"), ("bf16", 0x7FC0, "nan"),
    ("fp8_e4m3", 0x7E, "max"), ("fp8_e4m3", 0x7F, "nan"), ("fp8_e4m3", 0xFF, "nan"),
    ("fp8_e4m3", 0x78, "normal"), ("fp8_e4m3", 0x07, "subnormal"),
    ("fp8_e5m2", 0x7B, "max"), ("fp8_e5m2", 0x7C, "inf"), ("fp8_e5m2", 0x7D, "nan")])
def test_fp_class_hand_made(fmt, bits, cls):
    assert cov.CLASSES[cov.fp_class([bits], fmt)[0]] == cls


def test_fp_class_agrees_with_the_numeric_decoder():
    """Every FP16 encoding: the class from tcgen.hw.numeric's exact values (inf / NaN / 0 /
    below the smallest normal / equal to the largest finite)."""
    bits = np.arange(1 << 16, dtype=np.uint64)
    x = num.to_float(bits, "fp16")
    f = num.get_format("fp16")
    want = np.select([np.isnan(x), np.isinf(x), x == 0, np.abs(x) < 2.0 ** f.emin,
                      np.abs(x) == float(f.max_value())],
                     [5, 4, 0, 1, 3], 2)
    np.testing.assert_array_equal(cov.fp_class(bits, "fp16"), want)
    assert cov.format_classes("fp8_e4m3") == ("zero", "subnormal", "normal", "max", "nan")


# -- rounding events -----------------------------------------------------------------------------
def _events(values, fmt):
    rnd, rng = cov.rounding_events(np.array(values, dtype=np.float64), fmt)
    return [cov.ROUNDING[i] if i >= 0 else None for i in rnd], \
        [cov.RANGE[i] if i >= 0 else None for i in rng]


def test_rounding_events_hand_made():
    rnd, rng = _events([1 + 2 ** -11, 1 + 2 ** -10, 1 + 2 ** -12, 65504.0, 65520.0,
                        2.0 ** -25, 1.5 * 2 ** -24, 0.75 * 2 ** -24, 2.0 ** -14, 0.0, np.nan],
                       "fp16")
    assert rnd == ["tie", "exact", "inexact", "exact", None, "tie", "tie", "inexact", "exact",
                   "exact", None]
    assert rng == ["in_range", "in_range", "in_range", "in_range", "overflow", "underflow",
                   "underflow", "underflow", "in_range", "in_range", None]
    rnd, rng = _events([448.0, 464.0, 2.0 ** -10, -3 * 2.0 ** -11], "fp8_e4m3")
    assert rnd == ["exact", None, "tie", "inexact"] and rng[1] == "overflow"


@pytest.mark.parametrize("fmt", ["fp8_e5m2", "fp8_e4m3"])
def test_ties_against_a_fraction_reference(fmt):
    """Every third FP8 product (21,846 pairs): a tie exactly when the exact product (Fraction)
    is the midpoint of its round-toward-zero neighbour and the next encoding up -- found
    without frexp."""
    v = np.arange(256, dtype=np.uint64)
    a, b = np.repeat(v, 256)[::3], np.tile(v, 256)[::3]
    with np.errstate(invalid="ignore"):
        x = num.to_float(a, fmt) * num.to_float(b, fmt)
    rnd, rng = cov.rounding_events(x, fmt)
    lo = num.fp_mul(a, b, fmt, "rtz")
    f = num.get_format(fmt)
    want = np.zeros(len(a), bool)
    for i in np.flatnonzero(np.isfinite(x) & (x != 0)):
        lo_v = num.to_fraction(int(lo[i]) & (f.sign_mask - 1), fmt)
        hi_v = num.to_fraction((int(lo[i]) & (f.sign_mask - 1)) + 1, fmt)
        ex = abs(Fraction(float(x[i])))
        if isinstance(hi_v, Fraction) and ex <= f.max_value():
            want[i] = ex == (lo_v + hi_v) / 2
    np.testing.assert_array_equal(rnd == cov.ROUNDING.index("tie"), want)
    assert want.sum() > 30 and (rng == cov.RANGE.index("overflow")).sum() > 30


# -- the sampler ---------------------------------------------------------------------------------
def test_bulk_hits_equal_plain_counts():
    from cocotb_coverage.coverage import coverage_db
    rng = np.random.default_rng(1)
    idx = rng.integers(-1, 4, 10_000)
    s = cov.Sampler()
    bins = ("a", "b", "c", "d", "e")
    s.hit("covtest_bulk.g.p", bins, idx)
    s.hit("covtest_bulk.g.p", bins, idx[:10])
    cp = coverage_db["covtest_bulk.g.p"]
    want = np.bincount(idx[idx >= 0], minlength=5) + np.bincount(idx[:10][idx[:10] >= 0],
                                                                 minlength=5)
    assert [cp.detailed_coverage[b] for b in bins] == want.tolist()
    assert cp.coverage == 4 and cp.size == 5                  # "e" never hit
    with pytest.raises(ValueError, match="out of"):
        s.hit("covtest_bulk.g.p", bins, [7])
    with pytest.raises(ValueError, match="redefined"):
        s.hit("covtest_bulk.g.p", ("a",), [0])
    s.hit_labels("covtest_bulk.g.q", ("x", "y"), ["y", "y", "x"])
    assert dict(coverage_db["covtest_bulk.g.q"].detailed_coverage) == {"x": 1, "y": 2}


def test_fp_add_model_on_specials_hits_every_class():
    """The fp_add coverage model on every pair of fp16 specials + edge values: every operand
    and result class and every rounding and range event."""
    from tcgen.verify.stimulus import cross, edge_values
    from cocotb_coverage.coverage import coverage_db
    from tcgen.registry import get_unit
    a, b = cross(edge_values("fp16"))
    unit = get_unit("fp_add")
    p = unit.params(fmt="fp16")
    y = unit.golden(p, a=a, b=b)
    s = cov.Sampler()
    cov.MODELS["fp_add"](s, "fp_add", p, cov.Fields({"a": 16, "b": 16}, {"a": a, "b": b}),
                         cov.Fields({"y": 16}, y))
    for point in ("a", "b", "result", "rounding", "range"):
        cp = coverage_db[f"fp_add.fp16.{point}"]
        assert cp.coverage == cp.size, (point, dict(cp.detailed_coverage))


def test_handshake_patterns():
    """Per-cycle (valid, ready) of one input and one output stream -> the stall bins."""
    from cocotb_coverage.coverage import coverage_db
    #        cycle:  0  1  2  3  4  5  6  7
    ins = {"op": [2, 3, 3, 1, 0, 2, 3, 0]}     # stall, transfer, back-to-back, idle ...
    outs = {"res": [1, 0, 1, 2, 3, 0, 0, 1]}   # ready idle, stall while busy, held, taken
    cov.sample_handshakes("covtest_hs", ins, outs)
    got_in = dict(coverage_db["covtest_hs.stream.in_op"].detailed_coverage)
    got_out = dict(coverage_db["covtest_hs.stream.out_res"].detailed_coverage)
    assert got_in == {"valid_not_ready": 2, "ready_not_valid": 1, "back_to_back": 1}
    assert got_out == {"valid_not_ready": 1, "ready_not_valid": 3, "back_to_back": 0,
                       "stall_while_busy": 3}


# -- merge and report ----------------------------------------------------------------------------
def _db(tmp_path, name, hits: dict, bins):
    """A run database as a bench writes it (cocotb-coverage YAML export)."""
    import yaml
    total = len(bins)
    cover = sum(1 for b in bins if hits.get(b, 0) > 0)
    unit, group, _ = name.split(".", 2)
    entry = {"type": "<class 'cocotb_coverage.coverage.CoverPoint'>", "size": total,
             "coverage": cover, "cover_percentage": round(100 * cover / total, 2),
             "weight": 1, "at_least": 1, "bins:_hits": {b: hits.get(b, 0) for b in bins}}
    parent = {"type": "<class 'cocotb_coverage.coverage.CoverItem'>", "size": total,
              "coverage": cover, "cover_percentage": round(100 * cover / total, 2)}
    db = {unit: dict(parent), f"{unit}.{group}": dict(parent), name: entry}
    f = tmp_path / f"{len(list(tmp_path.glob('*.yml')))}.yml"
    f.write_text(yaml.dump(db))
    (f.with_suffix(".json")).write_text(json.dumps({"test": f"t{f.stem}", "units": [unit]}))


def _report(tmp_path):
    out = tmp_path / "report.md"
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "coverage_report.py"),
                        "--dir", str(tmp_path), "--out", str(out), "--no-required"],
                       capture_output=True, text=True, cwd=ROOT)
    return p, out


def test_report_fails_on_an_unhit_bin_and_passes_once_merged(tmp_path):
    bins = ["zero", "tie", "nan"]
    _db(tmp_path, "covtest.fp16.result", {"zero": 5, "tie": 1}, bins)
    p, out = _report(tmp_path)
    assert p.returncode == 1, p.stderr
    assert "unhit: covtest.fp16.result: nan" in p.stderr
    assert "covtest.fp16.result: nan" in out.read_text()
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["holes"] == ["covtest.fp16.result: nan"]
    _db(tmp_path, "covtest.fp16.result", {"nan": 2, "zero": 1}, bins)     # a second run
    p, out = _report(tmp_path)
    assert p.returncode == 0, p.stderr
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["points"]["covtest.fp16.result"] == {"zero": 6, "tie": 1, "nan": 2}
    assert "Every defined bin is hit" in out.read_text()


def test_a_required_group_that_no_run_sampled_is_a_hole():
    assert cov.holes({"u.g.p": {"b": 1}}, required=("u.g", "u.other")) == \
        ["u.other: no run sampled this group"]


def test_unreachable_bins_are_excused_only_where_declared(monkeypatch):
    """A bin declared unreachable at some params: excused if every run that sampled its point
    was at such params, a hole otherwise, and a violation if a run hits it anyway."""
    monkeypatch.setitem(cov.UNREACHABLE, "covtest_unr.g.p",
                        {"b": (lambda p: p == "slow", "by design")})
    s = cov.Sampler()
    s.params = "slow"
    s.hit("covtest_unr.g.p", ("a", "b"), [0, 0])
    assert s.excused == {"covtest_unr.g.p": {"b"}} and s.violations == []
    s.hit("covtest_unr.g.p", ("a", "b"), [1])
    assert s.violations == ["covtest_unr.g.p: b was hit, but is declared unreachable here "
                            "(by design)"]
    run_slow = {"points": ["u.g.p"], "excused": {"u.g.p": ["b"]}}
    run_fast = {"points": ["u.g.p"], "excused": {}}
    pts = {"u.g.p": {"a": 3, "b": 0}}
    assert cov.holes(pts, required=(), runs=[run_slow]) == []
    assert cov.holes(pts, required=(), runs=[run_slow, run_fast]) == ["u.g.p: b"]
    assert cov.holes(pts, required=(), runs=[{**run_slow, "violations": ["v"]}]) == ["v"]


def test_merge_leaves_out_a_stale_database(tmp_path):
    """A database whose bins of a point differ from the newest one's (an older
    tcgen/verify/coverage.py) is left out of the merge and named."""
    import os
    _db(tmp_path, "covtest.g.p", {"a": 1}, ["a", "b"])             # 0.yml: older bins
    _db(tmp_path, "covtest.g.p", {"a": 2, "c": 1}, ["a", "c"])      # 1.yml: newer
    os.utime(tmp_path / "0.yml", (1, 1))
    skipped = []
    points = cov.merge(sorted(tmp_path.glob("*.yml")), tmp_path / "m" / "m.yml", skipped)
    assert points == {"covtest.g.p": {"a": 2, "c": 1}}
    assert skipped == [str(tmp_path / "0.yml")]
