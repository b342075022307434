"""The PacQ octet dataflow model (tcgen.units.pacq.dataflow): DP-4 cycle counts, RF accesses and
speedup of n-packing vs k-packing on m16n16k16 (paper: 11/19/35 cycles, up to 54.3% fewer RF
accesses, 1.99× speedup).  The RTL's own cycle counts are checked in test_pacq_rtl.py."""
import pytest

from tcgen.units.pacq import dataflow as D


def test_dp4_cycle_counts_match_paper():
    assert D.dp4_cycles(8, 1) == 11            # baseline m2n4k4: 8 FP16 outputs
    assert D.dp4_cycles(32, 2) == 19           # PacQ INT4: 32 outputs, 2 trees
    assert D.dp4_cycles(64, 2) == 35           # PacQ INT2: 64 outputs
    with pytest.raises(ValueError):
        D.dp4_cycles(8, 0)


def test_k_packing_needs_more_a_fetches_and_no_a_reuse():
    k4 = D.simulate(D.FLOWS["P(B4)_k"])
    n4 = D.simulate(D.FLOWS["PacQ P(B4)_n"])
    w16 = D.simulate(D.FLOWS["W16A16"])
    assert k4["a_fetch_instr"] == 4 * n4["a_fetch_instr"]          # Fig. 4a: 4 fetches per step
    assert k4["rf_a"] == w16["rf_a"] == 4 * n4["rf_a"]              # A reused by every lane
    assert k4["rf_b"] == n4["rf_b"] == w16["rf_b"] // 4            # same packed words
    k8 = D.simulate(D.FLOWS["P(B8)_k"])
    assert k8["rf_b"] == k4["rf_b"] // 2


def test_rf_reduction_and_speedup_near_paper():
    c = D.compare(16, 16, 16)
    for w in ("INT4", "INT2"):
        assert 0.40 < c[w]["rf_reduction"] < 0.60          # paper: up to 54.3%
        assert 1.9 < c[w]["speedup"] < 2.2                   # paper: 1.99× (≈ D = 2)
    assert c["INT2"]["rf_reduction"] > c["INT4"]["rf_reduction"]


def test_shapes_that_do_not_tile_are_rejected():
    with pytest.raises(ValueError, match="does not tile"):
        D.simulate(D.FLOWS["PacQ P(B4)_n"], m=6)
