"""Run a layer of :mod:`tcgen.layers` through its unit's RTL: the generic stream bench, back to
back (valid and ready always high), the whole request stream; the bench checks every output
against the unit's golden model, and this checks the outputs against the layer's expected
payloads (its chained golden model); the issue intervals and cycles are returned beside the
layer's cycle model (``model_gaps``: :meth:`~tcgen.layers.Layer.issue_gaps`; ``model_cycles``:
its schedule's cycles, where the unit has one) for the caller to compare.

    from tcgen.layers import layer
    from tcgen.verify.layers import run_layer
    r = run_layer(layer("lut", "reduced"))
    r["cycles"], r["mismatches"], r["values"]
"""
from __future__ import annotations

import json
from pathlib import Path

from .bench_config import run_stream

__all__ = ["run_layer"]


def run_layer(lay, sim: str | None = None) -> dict:
    """{cycles, latency, issue_intervals, model_gaps, model_cycles, outputs, values,
    mismatches, bench_mismatches, wall_s, reference}: the layer ``lay`` (a :class:`tcgen.layers.Layer`) run back to
    back on its unit's RTL.  ``cycles``: first request offered .. last result taken."""
    p = lay.unit_params()
    s = run_stream(lay.unit, p, {f"{lay.in_stream}__payload": lay.requests},
                   name=f"layer-{lay.name}-{lay.size}", scenarios=("back_to_back",), sim=sim)
    observed = json.loads(Path(s["back_to_back_observed"]).read_text())[lay.out_stream]
    out = lay.check_outputs(observed)
    out.update(cycles=s["back_to_back_cycles"], latency=s["back_to_back_latency"],
               issue_intervals=s["back_to_back_issue_intervals"],
               accepted=s["back_to_back_inputs"], bench_mismatches=s["mismatches"],
               bench_vectors=s["back_to_back_vectors"], wall_s=s.get("wall_s"),
               requests=len(lay.requests), model_gaps=lay.issue_gaps(),
               model_cycles=lay.model_cycles())
    return out
