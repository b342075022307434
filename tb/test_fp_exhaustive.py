"""Exhaustive FP16/BF16 verification of the generated fp_add and fp_mul: all 2**32 operand
pairs against tcgen.hw.numeric, on the bit-sliced batch path (tcgen/verify/batch.py).

Marked ``slow``; driven range by range by scripts/fp_exhaustive.py (resumable, results in
reports/hw_verification_exhaustive.md).  One test checks one range ``[TCGEN_EXH_START,
TCGEN_EXH_STOP)`` of the flat pair index ``i`` (``a = i >> 16``, ``b = i & 0xffff``) of one
configuration ``TCGEN_EXH_CONFIG`` = ``op:fmt:mode[:name=value,...]``, built from the
parameters the script parsed it to (``TCGEN_EXH_PARAMS``, JSON: the design it hashed); without
the variables it checks the first 2**24 pairs of every configuration at its defaults.
"""
from __future__ import annotations

import json
import os

import pytest

from tcgen.verify import harness
from tcgen.registry import get_unit

pytestmark = pytest.mark.slow

CONFIGS = ["fp_add:fp16:rne", "fp_add:fp16:rtz", "fp_add:bf16:rne",
           "fp_mul:fp16:rne", "fp_mul:fp16:rtz", "fp_mul:bf16:rne"]


def _configs():
    env = os.environ.get("TCGEN_EXH_CONFIG")
    return [env] if env else CONFIGS


@pytest.mark.parametrize("config", _configs())
def test_exhaustive_range(config):
    start = int(os.environ.get("TCGEN_EXH_START", 0))
    stop = int(os.environ.get("TCGEN_EXH_STOP", 1 << 24))
    assert 0 <= start < stop <= 1 << 32
    op, fmt, mode, *extra = config.split(":", 3)
    given = os.environ.get("TCGEN_EXH_PARAMS")
    assert given or not extra, f"{config}: run it through scripts/fp_exhaustive.py"
    p = get_unit(op).make_params(json.loads(given) if given else {"fmt": fmt, "rounding": mode})
    assert (p.fmt, p.rounding) == (fmt, mode), (config, p)
    s = harness.run_batch(op, p, pairs={"a": "a", "b": "b", "width": 16, "start": start,
                                        "stop": stop},
                          depth=4096, sim=os.environ.get("SIM") or "verilator", bitslice=True,
                          name=f"exh-{start:x}")
    out = os.environ.get("TCGEN_EXH_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump({k: s[k] for k in ("vectors", "checked", "mismatches", "sim_s",
                                         "model_s", "io_s", "wall_s", "first_mismatches")},
                      fh)
    assert (s["vectors"], s["checked"], s["mismatches"]) == (stop - start, stop - start, 0)
