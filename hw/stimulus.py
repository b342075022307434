"""The cycle-by-cycle stimulus of a stream unit's run, for gate-level activity of that exact run.

A request stream run back to back is, at the ports, each payload held with valid high from the
cycle after the previous request was accepted to the cycle it is, the output always ready.
Given the acceptance cycles (a unit's cycle model: a constant issue interval, or a schedule
such as ``tcgen.units.bmma.throughput.layer_top_schedule``), :func:`held_stream` writes those
port values; the PPA flow's fixed ``stimulus`` (tcgen.measure) replays them in the gate-level
simulation of the mapped netlist.
"""
from __future__ import annotations

import numpy as np

__all__ = ["held_stream", "interval_accepts"]


def interval_accepts(n: int, interval: int) -> list[int]:
    """Acceptance cycles of ``n`` requests offered back to back to a unit that takes one every
    ``interval`` cycles (the first offered at cycle 0)."""
    return [(i + 1) * interval - 1 for i in range(n)]


def held_stream(payloads, accepts, cycles: int, in_stream: str = "req",
                out_stream: str = "out") -> dict:
    """``{<in>__payload, <in>__valid, <out>__ready}``, one value a cycle for ``cycles`` cycles
    (cycle 0 = the first request offered): request i held with valid high from cycle
    ``accepts[i - 1] + 1`` (0 for the first) to ``accepts[i]``, the cycle it is accepted; after
    the last, valid low and the last payload held; the output always ready.  ``accepts``
    strictly increasing, one per payload; ``cycles`` at least ``accepts[-1] + 1``
    (ValueError otherwise)."""
    pays = np.asarray(payloads, dtype=object)
    acc = np.asarray(accepts, dtype=np.int64)
    if len(pays) == 0 or len(acc) != len(pays):
        raise ValueError(f"held_stream: {len(pays)} payloads and {len(acc)} acceptance cycles "
                         "(one each, at least one)")
    if acc[0] < 0 or np.any(np.diff(acc) <= 0):
        raise ValueError("held_stream: acceptance cycles must be >= 0 and strictly increasing")
    busy = int(acc[-1]) + 1
    if cycles < busy:
        raise ValueError(f"held_stream: {cycles} cycles < the {busy} its {len(pays)} "
                         "requests take")
    idx = np.searchsorted(acc, np.arange(cycles), side="left")   # requests accepted before
    valid = (idx < len(pays)).astype(np.uint64)
    return {f"{in_stream}__payload": pays[np.minimum(idx, len(pays) - 1)],
            f"{in_stream}__valid": valid,
            f"{out_stream}__ready": np.ones(cycles, dtype=np.uint64)}
