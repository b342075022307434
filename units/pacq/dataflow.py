"""A transparent tile-step model of one Volta-style warp's tensor-core dataflow (PacQ §II-B,
§III-A, Figs. 3-4, 7, 11), for k-packed ``P(B)_k`` versus n-packed ``P(B)_n`` weights.

The paper's numbers come from an unreleased Python simulator whose loop bounds are only in
figures; this model states every assumption so its results can be checked and varied.

Machine (Table I, scaled as in the paper): a warp's m16n16k16 MMA runs on 4 octets; each octet
has 2 DP-4 units, each fed by a thread group (4 threads) with its own A buffer (m2 × k4 FP16)
and the octet's shared B buffer (4 × 4 16-bit entries: FP16 values, or packed INT16 words).
DP-4 timing is that of the RTL (tcgen.units.pacq.rtl): one result beat per cycle per tree, 3-cycle
pipeline fill, D trees per DP-4 (1 in the baseline, 2 in PacQ).

Tile step (one B-buffer load): the B buffer holds 4 × 4 entries, i.e.

    W16A16:   k4  × n4  FP16 values
    P(B)_k:   k16 × n4  (INT4) or k32 × n4 (INT2) weights -- packed along k
    P(B)_n:   k4  × n16 (INT4) or k4 × n32 (INT2) weights -- packed along n

and each thread group computes its m2 rows × all of the step's n columns over the step's k.

RF accesses (16-bit operand slots read from / written to the register file):
  * B: one per buffer entry loaded;
  * A: one per FP16 value loaded into an A buffer.  With k-packing the buffer holds only k4,
    so a step needs k16/k4 = 4 (INT4) or 8 (INT2) A fetches per thread group ("4 separate
    A-fetch instructions", Fig. 4a), and A is evicted between B tiles (no reuse, Fig. 4b);
    with n-packing the m2 × k4 A tile is fetched once per step and reused by every lane;
  * C: ``tile_movement='weight'`` (the Volta baseline, Fig. 3c): partial sums are read and
    written back to the RF at every step; ``'output'`` (PacQ: output-stationary tile movement):
    C stays in the accumulators across k and is read once and written once.

Cycles: per step, each DP-4 issues (m2 × n_step outputs × k_step/4 DP-4 ops) / D beats, plus
one cycle per extra A-fetch instruction beyond the first (k-packing); steps of the 4 octets run
in parallel; +3 pipeline fill at the end.  The DP-4 alone (m2n4k4 as in the paper) gives
``outputs / D + 3`` = 11 / 19 / 35 cycles for 8 / 32 / 64 outputs.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["dp4_cycles", "Flow", "FLOWS", "simulate", "compare"]

PIPELINE_FILL = 3      # Dp4Baseline / Dp4Pacq: result 3 cycles after its beat issues


def dp4_cycles(outputs: int, trees: int, fill: int = PIPELINE_FILL) -> int:
    """Cycles of one DP-4 producing ``outputs`` results with ``trees`` adder trees."""
    if outputs <= 0 or trees <= 0:
        raise ValueError("pacq dataflow: outputs and trees must be positive")
    return -(-outputs // trees) + fill


@dataclass(frozen=True)
class Flow:
    name: str
    packing: str            # "none" (FP16 B), "k" or "n"
    wbits: int              # 16 for W16A16
    trees: int              # adder trees per DP-4 (D)
    tile_movement: str      # "weight" or "output" stationary


FLOWS = {
    "W16A16": Flow("W16A16", "none", 16, 1, "weight"),
    "P(B4)_k": Flow("P(B4)_k", "k", 4, 1, "weight"),
    "P(B8)_k": Flow("P(B8)_k", "k", 2, 1, "weight"),
    "PacQ P(B4)_n": Flow("PacQ P(B4)_n", "n", 4, 2, "output"),
    "PacQ P(B8)_n": Flow("PacQ P(B8)_n", "n", 2, 2, "output"),
}


def _step_shape(flow: Flow):
    """(k, n) covered by one 4 × 4-entry B buffer."""
    lanes = 16 // flow.wbits if flow.wbits < 16 else 1
    if flow.packing == "k":
        return 4 * lanes, 4
    if flow.packing == "n":
        return 4, 4 * lanes
    return 4, 4


def simulate(flow: Flow, m=16, n=16, k=16, octets=4, groups_per_octet=2):
    """RF accesses and cycles of an m×n×k MMA.  Returns a dict of counts."""
    ks, ns = _step_shape(flow)
    ks, ns = min(ks, k), min(ns, n)                    # a partly filled buffer (INT2 at k16)
    lanes = 16 // flow.wbits if flow.wbits < 16 else 1
    mg = 2                                             # rows per thread group
    rows_per_octet = mg * groups_per_octet
    if m % rows_per_octet or n % ns or k % ks:
        raise ValueError(f"pacq dataflow: m{m}n{n}k{k} does not tile into steps of "
                         f"m{rows_per_octet} n{ns} k{ks}")
    steps = (m // rows_per_octet) * (n // ns) * (k // ks)
    a_fetches = ks // 4                                # A buffer holds k4
    rf_b = steps * ks * ns // lanes                    # buffer entries loaded
    rf_a = steps * groups_per_octet * mg * ks          # every k of the step, once per group
    if flow.tile_movement == "weight":
        rf_c = steps * 2 * rows_per_octet * ns         # read + write every step
    else:
        rf_c = 2 * m * n                               # once in, once out
    outputs_per_group_step = mg * ns * (ks // 4)       # DP-4 operations per group per step
    beats = -(-outputs_per_group_step // flow.trees)
    cyc_step = beats + (a_fetches - 1)
    cycles = -(-steps // octets) * cyc_step + PIPELINE_FILL
    return {"flow": flow.name, "steps": steps, "rf_a": rf_a, "rf_b": rf_b, "rf_c": rf_c,
            "rf_total": rf_a + rf_b + rf_c, "a_fetch_instr": steps * groups_per_octet * a_fetches,
            "cycles": cycles}


def compare(m=16, n=16, k=16):
    """PacQ P(B)_n vs the k-packed baseline of the same width on the same m×n×k: RF-access
    reduction (all operands, and A+B only) and speedup."""
    out = {}
    for w, kn, nn in ((4, "P(B4)_k", "PacQ P(B4)_n"), (2, "P(B8)_k", "PacQ P(B8)_n")):
        a, b = simulate(FLOWS[kn], m, n, k), simulate(FLOWS[nn], m, n, k)
        out[f"INT{w}"] = {"baseline": a, "pacq": b,
                          "rf_reduction": 1 - b["rf_total"] / a["rf_total"],
                          "rf_reduction_ab": 1 - (b["rf_a"] + b["rf_b"]) /
                          (a["rf_a"] + a["rf_b"]),
                          "speedup": a["cycles"] / b["cycles"]}
    return out
