"""The batch path (tcgen/verify/batch.py, tcgen/verify/benches/batch.py): vectors checked inside
the simulation.

Fixed-latency and stream units, lanes, chunks, and the checker's own test: expectations
corrupted on purpose must be reported, at the right vectors, with their inputs.
"""
from __future__ import annotations

import numpy as np
import pytest

from tcgen.verify import harness
from tcgen.hw import numeric as num
from tcgen.registry import get_unit
from tcgen.verify.stimulus import random_fp_pairs


def test_fixed_latency_lanes_and_chunks():
    """fp_mul FP16: 3 lanes × depth 1000 (chunks of 3,000; the last one partial)."""
    rng = np.random.default_rng(harness.seed(301))
    a, b = random_fp_pairs("fp16", rng, 10_007)
    s = harness.run_batch("fp_mul", get_unit("fp_mul").params(), stimulus={"a": a, "b": b},
                          lanes=3, depth=1000)
    assert (s["vectors"], s["checked"], s["mismatches"], s["chunks"]) == (10_007, 10_007, 0, 4)


def test_checker_reports_corrupted_expectations():
    """Flip the LSB of the expected value at four indices (in different chunks and lanes): the
    bench reports exactly those four, with the operands that produced them."""
    rng = np.random.default_rng(harness.seed(302))
    a, b = random_fp_pairs("fp16", rng, 5_000)
    bad = [0, 7, 2_049, 4_999]
    p = get_unit("fp_add").params()
    s = harness.run_batch("fp_add", p, stimulus={"a": a, "b": b}, lanes=4, depth=512,
                          corrupt=bad)
    assert s["mismatches"] == len(bad)
    assert [m["index"] for m in s["first_mismatches"]] == bad
    for m in s["first_mismatches"]:
        i = m["index"]
        assert m["inputs"] == {"a": hex(int(a[i])), "b": hex(int(b[i]))}
        exp = int(num.fp_add(a[i:i + 1], b[i:i + 1], "fp16")[0])
        assert int(m["got"], 16) == exp and int(m["expected"], 16) == exp ^ 1


def test_exhaustive_pair_range():
    """The pairs source: a contiguous range of the 2**32 FP16 operand pairs (a = i >> 16),
    here across a boundary of a (b from 0xFC00 up, then a + 1 from b = 0) in two chunks, the
    last one a single vector.  (The whole 2**32 are scripts/fp_exhaustive.py's.)"""
    p = get_unit("fp_mul").params(rounding="rtz")
    start, stop = (0x3C00 << 16) + 0xFC00, (0x3C01 << 16) + 0x0401
    s = harness.run_batch("fp_mul", p, pairs={"a": "a", "b": "b", "width": 16,
                                               "start": start, "stop": stop},
                          lanes=8, depth=256, sim="icarus")
    assert (s["vectors"], s["mismatches"], s["chunks"]) == (2_049, 0, 2)


def test_pipelined_unit():
    """Latency 2: the wrapper compares each output two cycles after its input."""
    rng = np.random.default_rng(harness.seed(303))
    a, b = random_fp_pairs("fp16", rng, 3_000)
    s = harness.run_batch("fp_add", get_unit("fp_add").params(pipeline=2),
                          stimulus={"a": a, "b": b}, lanes=2, depth=800)
    assert (s["checked"], s["mismatches"]) == (3_000, 0)


@pytest.mark.parametrize("stall", [0.0, 0.4])
def test_stream_unit(stall):
    """A stream unit (PacQ baseline DP-4, multi-beat results) with the in-simulation source and
    sink, valid/ready held back with probability ``stall``."""
    unit = get_unit("dp4_baseline")
    p = unit.params()
    ops = unit.workload(p, np.random.default_rng(harness.seed(304)), 300)
    s = harness.run_batch("dp4_baseline", p, stimulus=ops, depth=512, stall=stall,
                          name=f"stream{stall}")
    n_res = len(unit.golden(p, op__payload=ops["op__payload"])["res__payload"])
    assert (s["checked"], s["mismatches"]) == (n_res, 0)
    assert s["cycles"] >= n_res


def test_stream_checker_reports_corruption():
    unit = get_unit("dp4_baseline")
    p = unit.params()
    ops = unit.workload(p, np.random.default_rng(harness.seed(305)), 50)
    s = harness.run_batch("dp4_baseline", p, stimulus=ops, depth=128, stall=0.2,
                          corrupt=[3, 10], name="stream_corrupt")
    assert s["mismatches"] == 2
    assert [m["index"] for m in s["first_mismatches"]] == [3, 10]


def test_bitslice_gate_netlist():
    """The bit-sliced path: fp_mul FP16 lowered to gates by Yosys, 64 vectors per net word;
    specials and random pairs (a partial last group), and corrupted expectations in two groups
    reported with their exact vectors and operands."""
    from tcgen.verify.stimulus import concat_pairs, cross, specials
    rng = np.random.default_rng(harness.seed(306))
    a, b = concat_pairs(cross(specials("fp16")), random_fp_pairs("fp16", rng, 6_000))
    p = get_unit("fp_mul").params()
    s = harness.run_batch("fp_mul", p, stimulus={"a": a, "b": b}, depth=32, bitslice=True,
                          name="bitslice")
    assert (s["vectors"], s["checked"], s["mismatches"]) == (len(a), len(a), 0)
    bad = [5, 64 * 40 + 3]
    s = harness.run_batch("fp_mul", p, stimulus={"a": a, "b": b}, depth=32, bitslice=True,
                          corrupt=bad, name="bitslice_corrupt")
    assert s["mismatches"] == 2                      # mismatching groups of 64
    assert [m["index"] for m in s["first_mismatches"]] == bad
    for m in s["first_mismatches"]:
        assert m["inputs"] == {"a": hex(int(a[m["index"]])), "b": hex(int(b[m["index"]]))}


@pytest.mark.parametrize("width", [16, 64, 65, 130])
def test_bitslice_planes_roundtrip(width):
    from tcgen.verify.batch import SLICE, from_plane_word, to_planes
    from tcgen.hw.library import random_words
    rng = np.random.default_rng(307)
    x = random_words(rng, 2 * SLICE, width)
    x = x.astype(np.uint64) if width <= 64 else x
    raw = to_planes(x, width)
    assert raw.shape == (2, width * 8)
    for g in range(2):
        word = int.from_bytes(raw[g].tobytes(), "big")
        assert list(from_plane_word(word, width)) == list(x[g * SLICE:(g + 1) * SLICE])


def test_elaborated_bytes_count_every_instance():
    """The cost model's size: a module's text plus its instances' elaborated sizes, however
    deep; a module instantiated twice counts twice; a cell that is not a module of the file
    (none in tcgen's Verilog, but a hand-written wrapper could) counts only its own lines."""
    leaf = "module leaf(a, y);\n  input a;\n  output y;\n  assign y = a;\nendmodule\n"
    mid = ("module mid(a, y);\n  input a;\n  output y;\n  wire t;\n"
           "  leaf u0 (\n    .a(a),\n    .y(t)\n  );\n  leaf u1 (\n    .a(t),\n    .y(y)\n  );\n"
           "endmodule\n")
    top = ("module top(a, y);\n  input a;\n  output y;\n  wire t;\n  mid m0 (\n    .a(a),\n"
           "    .y(t)\n  );\n  mid m1 (\n    .a(t),\n    .y(y)\n  );\n  ext x0 (\n  );\n"
           "endmodule\n")
    text = "// header\n" + top + mid + leaf
    assert harness.elaborated_bytes(text, "leaf") == len(leaf)
    assert harness.elaborated_bytes(text, "mid") == len(mid) + 2 * len(leaf)
    assert harness.elaborated_bytes(text, "top") == len(top) + 2 * (len(mid) + 2 * len(leaf))
    assert harness.elaborated_bytes(text, "absent") == len(text)
    dp4 = harness.verilog_file("dp4", get_unit("dp4").params())        # 4 FPMul + 4 FPAdd
    text = dp4.read_text()
    assert harness.elaborated_bytes(text, "dp4") > 3 * len(text)


def test_default_simulator_follows_the_cost_model(monkeypatch):
    """Icarus while its expected time (vectors x Verilog bytes) stays under one Verilator build,
    Verilator beyond; Icarus whenever Verilator is not usable."""
    from tcgen.synth import tools

    class V:
        usable = True
    monkeypatch.setattr(tools, "verilator", lambda: V())
    for size in (13_000, 60_000, 300_000):
        per_build = harness.verilator_build_estimate_s(size) / (
            harness.ICARUS_NS_PER_VECTOR_BYTE * 1e-9 * size)          # vectors for one build
        assert harness.batch_default_sim(int(per_build) + 1, size) == "verilator"
        assert harness.batch_default_sim(int(per_build) - 1, size) == "icarus"
    assert harness.batch_default_sim(1000, 60_000) == "icarus"
    assert harness.batch_default_sim(100_000, 60_000) == "verilator"     # fp16 fp_mul random
    assert harness.batch_default_sim(9_000, 294_000) == "verilator"      # fp32 fp_mul, 9k
    assert harness.batch_default_sim(1_000, 294_000) == "icarus"
    n = int(harness.verilator_build_estimate_s(10_000) * harness.ICARUS_BITSLICE_VECTORS_PER_S)
    assert harness.batch_default_sim(n + 1, 10_000, bitslice=True) == "verilator"
    assert harness.batch_default_sim(n - 1, 10_000, bitslice=True) == "icarus"
    V.usable = False
    assert harness.batch_default_sim(10**9, 10**6) == "icarus"
    monkeypatch.setattr(tools, "verilator", lambda: None)
    assert harness.batch_default_sim(10**9, 10**6) == "icarus"
