"""Recording formal results for ``scripts/formal_report.py`` (docs/formal.md).

With ``TCGEN_FORMAL_OUT=<folder>`` set, every proof or property check of the formal tests
(tb/test_formal*.py) writes one JSON record there: the test, the kind of proof, the
configuration, what it was proved against, the expected verdict and the result.  Without it,
nothing is written.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

__all__ = ["record"]


def record(request, kind: str, config: dict, result, *, expect: str, reference: str,
           rtl: str = "", section: str = "combinational") -> None:
    """Write ``result`` (an object with ``to_dict()``) for the running pytest ``request``.
    ``section``: the report's part (combinational, generation, pipeline, protocol)."""
    out = os.environ.get("TCGEN_FORMAL_OUT")
    if not out:
        return
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    if section != "combinational":
        name = f"{section}-{name}"
    rec = {"test": request.node.nodeid, "kind": kind, "section": section, "config": config,
           "reference": reference, "rtl": rtl, "expect": expect,
           "slow": request.node.get_closest_marker("slow") is not None,
           "doc": " ".join((request.function.__doc__ or "").strip().split("\n\n")[0].split())
                  .removeprefix("Negative control: "),
           "result": result.to_dict()}
    Path(out, f"{name}.json").write_text(json.dumps(rec, indent=1, default=str))
