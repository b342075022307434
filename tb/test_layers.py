"""The end-to-end layers of issue 42 §3 (tcgen.layers; reports/layers.md): each layer's request
stream through its unit's RTL, every output against the chained golden model, the issue
interval against the unit's cycle model (a constant interval, or bnn_layer's schedule: every gap
between accepted requests and the cycles exactly -- which is what makes the cycle-by-cycle trace
of the energy measurement the RTL run's), and measure()'s fixed stimulus that carries the trace
into the gate-level simulation.  Reduced sizes in make test; the full sizes and the energies are
slow."""
from __future__ import annotations

import numpy as np
import pytest

from tcgen.hw.params import ParamError
from tcgen.hw.stimulus import held_stream
from tcgen.layers import energy, energy_window, layer
from tcgen.measure import measure
from tcgen.registry import get_unit
from tcgen.units.bmma import throughput as tp
from tcgen.units.bmma.stream import cycle_drive
from tcgen.verify.layers import run_layer

ALL = ["lut", "sparse", "sparse_dense", "pacq", "pacq_baseline", "wino", "wino_direct", "bmma"]


def _check(lay, r):
    assert r["accepted"] == r["requests"] == len(lay.requests)
    assert lay.layer_cycles(r["cycles"]) >= r["cycles"] and lay.layer_macs >= lay.macs
    assert r["bench_mismatches"] == 0 and r["mismatches"] == 0, r
    assert r["outputs"] == len(lay.expected) and r["values"] == lay.values_checked
    assert r["issue_intervals"] == lay.issue_gaps() == r["model_gaps"], r   # the trace's
    if lay.schedule is None:                                                 # schedule is
        assert lay.min_cycles() < r["cycles"] <= lay.min_cycles() + r["latency"] + 1  # the RTL's
    else:                          # bnn_layer: the schedule's cycles exactly, and its whole
        assert r["cycles"] == lay.model_cycles() == r["model_cycles"], r     # layer's
        assert lay.min_cycles() < r["cycles"] <= lay.layer_cycles(r["cycles"])
        assert lay.layer_cycles(r["cycles"]) == lay.schedule(lay.layer_chains or lay.chains)[1]
    assert lay.reference.get("equal", True), lay.reference


#: make test runs the three cheap proposals (~1-2 s of CPU each; bmma: the block's 98 requests
#: on bnn_layer m8n8k32, both convs in one stream, 152 cycles); the rest is slow, make test being
#: at its budget: an octet runs ~7 cycles/s on Icarus (6-8 s each), a conv tile datapath
#: 640 cycles in 60-90 s -- their RTL against the model is in make test through
#: tb/test_sparse_rtl.py, test_pacq_rtl.py and test_winograd_rtl.py, their layer models below
REDUCED = ["lut", pytest.param("sparse", marks=pytest.mark.slow),
           pytest.param("sparse_dense", marks=pytest.mark.slow), "pacq",
           pytest.param("pacq_baseline", marks=pytest.mark.slow),
           pytest.param("wino", marks=pytest.mark.slow),
           pytest.param("wino_direct", marks=pytest.mark.slow), "bmma"]


@pytest.mark.parametrize("name", REDUCED)
def test_layer_reduced(name):
    lay = layer(name, "reduced")
    _check(lay, run_layer(lay))


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_layer_full(name):
    lay = layer(name, "full")
    _check(lay, run_layer(lay, sim="verilator"))


def test_layer_references():
    """The layer-level models: the sparse GEMM's tiles equal spmm / dense_wmma on the whole
    matrices, the LUT GEMV is within FP16 accumulation error of the exact product, and a
    corrupted output is counted."""
    for name in ("sparse", "sparse_dense"):
        assert layer(name, "reduced").reference["equal"]
    for name in ("wino", "wino_direct"):     # FP16 operands, FP32 accumulation
        ref = layer(name, "reduced").reference
        assert 0 < ref["max_abs_err_vs_exact"] < 2e-3 * ref["max_abs_exact"]
    lut = layer("lut", "reduced")
    ref = lut.reference
    assert 0 < ref["max_abs_err_vs_exact"] < 1e-2 * ref["max_abs_exact"]
    bad = list(lut.expected)
    bad[0] ^= 1
    assert lut.check_outputs(bad)["mismatches"] == 1
    assert lut.check_outputs(list(lut.expected))["mismatches"] == 0
    assert lut.check_outputs(list(lut.expected)[:-1] if len(lut.expected) > 1 else [])[
        "mismatches"] == 1
    with pytest.raises(ParamError):
        layer("lut", "huge")
    with pytest.raises(ParamError):
        layer("nope")


def test_trace_holds_each_request_its_interval():
    lay = layer("pacq", "reduced")
    t = lay.trace(lay.min_cycles() + 5)
    pay, valid = t["op__payload"], t["op__valid"]
    assert len(pay) == len(valid) == len(t["res__ready"]) == lay.min_cycles() + 5
    assert int(valid.sum()) == lay.min_cycles() and not valid[lay.min_cycles():].any()
    assert [int(x) for x in pay[:lay.min_cycles():lay.interval]] == \
        [int(x) for x in lay.requests]
    assert all(int(pay[i]) == int(pay[i - i % lay.interval]) for i in range(lay.min_cycles()))
    w = lay.trace(first=2, count=3)
    assert [int(x) for x in w["op__payload"][::lay.interval][:3]] == \
        [int(x) for x in lay.requests[2:5]]
    with pytest.raises(ValueError):
        lay.trace(lay.min_cycles() - 1)


def test_held_stream_by_hand():
    """The drive of a schedule, written out: request i held from the cycle after request i-1 was
    accepted to the cycle it is, then valid low with the last payload held."""
    d = held_stream([7, 8, 9], [0, 2, 3], 6, "op", "res")
    assert [int(x) for x in d["op__payload"]] == [7, 8, 8, 9, 9, 9]
    assert d["op__valid"].tolist() == [1, 1, 1, 1, 0, 0] and d["res__ready"].tolist() == [1] * 6
    for bad in (([7, 8], [1, 1], 4), ([7, 8], [0], 4), ([7, 8], [0, 2], 2), ([], [], 1)):
        with pytest.raises(ValueError):
            held_stream(*bad)


def test_measure_takes_a_fixed_stimulus():
    """measure(..., stimulus=(ports, label)) drives the gate-level simulation with exactly those
    vectors: the unit's own random workload given as a fixed stimulus measures what the
    workload does, and a constant stimulus measures less switching."""
    unit = get_unit("lzc")
    p = unit.params(width=16)
    n = 200
    stim = unit.workload(p, np.random.default_rng(1), n)
    a = measure("lzc", p, activity="sim", workload_cycles=n, seed=1)
    b = measure("lzc", p, activity="sim", stimulus=(stim, "lzc random"), seed=7)
    assert b["power_mw"] == a["power_mw"]
    assert b["workload"]["source"] == "lzc random" and b["workload"]["cycles"] == n
    flat = {k: np.full(n, v[0], dtype=np.uint64) for k, v in stim.items()}
    c = measure("lzc", p, activity="sim", stimulus=(flat, "constant"))
    assert c["power_mw"]["switching"] < b["power_mw"]["switching"]
    with pytest.raises(ParamError):
        measure("lzc", p, stimulus=(stim, "x"))                         # vectorless
    with pytest.raises(ParamError):
        measure("lzc", p, activity="sim", stimulus=stim)                # no label
    with pytest.raises(ParamError):
        measure("lzc", p, activity="sim", stimulus=({"x": np.zeros(20), "y": np.zeros(30)},
                                                    "x"))


@pytest.mark.slow
def test_layer_energy_reduced():
    """Energy per layer = simulated power × the layer's cycles × the clock; drained idle cycles
    draw less than the busy ones, so a longer drain lowers the mean power; a window of the
    stream is measured on its own cycles."""
    lay = layer("pacq_baseline", "reduced")
    r = run_layer(lay)
    e = energy(lay, r["cycles"])
    assert e["cycles"] == r["cycles"] and e["macs"] == lay.macs
    assert e["energy_pj"] == pytest.approx(e["power_mw"]["total"] * r["cycles"] * 10.0)
    idle = energy(lay, r["cycles"] + 200)
    assert idle["power_mw"]["total"] < e["power_mw"]["total"]
    assert idle["energy_pj"] > e["energy_pj"]
    w = energy_window(lay, 0, 16)
    assert w["cycles"] == 16 * lay.interval and w["macs"] == lay.macs / 2


def test_bmma_block_schedule_and_reference():
    """The BNN block (reduced): conv 1's tiles then conv 2's = throughput.layer_chains twice; the
    trace is the schedule's (the same drive as tcgen.units.bmma.stream.cycle_drive), one
    back-to-back stream of both convs takes fewer cycles than the two run apart (the second's
    first tiles overlap the first's drain); windows are whole tiles; the outputs equal the
    float64 block (conv + residual + BN + sign, saved v) and a corrupted one is counted."""
    lay = layer("bmma", "reduced")
    p = lay.unit_params()
    one = tp.layer_chains(tp.Layer("conv", 8, 8, 3, 3), batch=8, tile=(p.m, p.n, p.k))
    assert lay.chains == one + one and len(lay.requests) == sum(lay.chains) == 98
    assert lay.reference["equal"] and lay.reference["bits_not_constant"]
    assert lay.layer_macs == lay.macs == 2 * 49 * 8 * 8 * 8       # taps × m × n × C, 2 convs
    assert lay.model_cycles() == tp.layer_top_cycles(lay.chains, p.m) == 152 < 2 * 79
    assert lay.layer_cycles(152) == 152 and not lay.is_window
    t = lay.trace()
    d = cycle_drive(p, lay.requests, lay.chains)
    assert all(np.array_equal(t[k], d[k]) for k in d) and len(t["req__valid"]) == 152
    acc = lay.accepts()
    assert [int(t["req__payload"][a]) for a in acc] == [int(x) for x in lay.requests]
    assert int(t["req__valid"].sum()) == acc[-1] + 1 == lay.min_cycles()
    assert lay.issue_gaps() == [1, 3, 5]
    assert lay.chains[:4] == [4, 6, 4, 6]        # corner, edge, corner, edge: tiles at 0, 4, 10
    assert lay.whole_tiles(11, 30) == (10, 29) and lay.whole_tiles(0, 1) == (0, 4)
    with pytest.raises(ValueError):
        lay.accepts(1, 4)                          # not a whole tile
    w = lay.trace(first=4, count=6)                # the second tile: 6 chained operations
    assert int(w["req__valid"].sum()) == lay.accepts(4, 6)[-1] + 1
    bad = list(lay.expected)
    bad[-1] ^= 1 << 3
    assert lay.check_outputs(bad)["mismatches"] == 1
