"""Helper of the wino_conv tests (tb/test_winograd_rtl.py, tb/test_winograd_pacq.py): one stream
run of the tile datapath against its golden model."""
from __future__ import annotations

import numpy as np

__all__ = ["conv_run"]


def conv_run(p, reqs, name, scenario="back_to_back", results=None, w=None, **cfg):
    """``reqs`` through ``wino_conv`` at ``p`` in one stream scenario: no mismatch, every
    request in and ``results`` results out (default one per request; accumulate=true: one per
    request with last = 1); ``w``: the filter sets of wsource=stream, one per request."""
    from tcgen.verify.bench_config import run_stream
    stim = {"op__payload": np.array(reqs, dtype=object)}
    if w is not None:
        stim["w__payload"] = np.array(w, dtype=object)
    s = run_stream("wino_conv", p, stim, name=name, scenarios=(scenario,), **cfg)
    assert s["mismatches"] == 0, s
    want = len(reqs) if results is None else results
    assert s[f"{scenario}_inputs"] == len(reqs) and s["vectors"] == want, s
    return s
