"""Study reports rendered from a sweep's results: a Jinja2 template beside the spec, filled with
the sweep's rows.  The spec names it::

    [[report]]
    template = "bmma_ppa.md.j2"            # beside the spec
    output = "bmma_ppa.md"                 # written into the sweep's output folder (-o)
    context = "tcgen.units.bmma.report"    # optional: a module whose context() adds names

A template reads measured figures only through the rows (metrics and derived columns of the
spec; ``row.result`` is the whole :func:`tcgen.measure.measure` result) and formats them; it
holds no measurement and no ratio code of its own (ratios are the spec's derived columns).

Names available in a template:

``header``        the provenance paragraph (command, run time, CPU time, liberties, tools, date)
``flow_notes``    the flow choices that change conclusions (list of str)
``row(**where)``  the one row whose columns equal ``where`` (``group``, ``label``, ``liberty``,
                  ``activity``, parameters, ``workload``); an error if none or several match;
                  ``row.get(key)``, ``row[key]``, ``row.result``, ``row.ok``
``rows(**where)`` every matching row, in the spec's order (may be empty)
``values(col, **where)``  the column over the matching rows (None where a point failed)
``value(col, **where)``   the column of the one matching row, None if no row matches
``spread(vals)``  ``lo–hi×`` (or ``lo×``) over the present values
``fmt(v, spec, scale)``  also a filter: ``{{ x | fmt("{:.3e}", 1e9) }}``; None and NaN print ``–``
``libraries``, ``activities``  the sweep's liberties and activity tags in the spec's order
plus every name the ``context`` module's ``context()`` returns.
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tcgen.errors import UsageError
from tcgen.study import spread as _spread

__all__ = ["Report", "ReportError", "render", "check"]


class ReportError(UsageError):
    """A template that does not render (a bad ``row()`` query, an undefined name, a syntax
    error): nothing is written; the points stay cached, so a rerun after the fix is quick."""


@dataclass(frozen=True)
class Report:
    template: Path
    output: str
    context: str | None = None


class Row(dict):
    """A sweep row; ``row.result`` is the stored measure() result, ``row.ok`` its status."""

    @property
    def result(self) -> dict:
        return self.get("_result") or {}

    @property
    def ok(self) -> bool:
        return self.get("status") == "ok"


def fmt(v: Any, spec: str = "{}", scale: float | None = None) -> str:
    """``spec.format(v * scale)``; ``–`` for a missing value (a failed point, an absent ref)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return spec.format(v * scale if scale is not None else v)


def _match(r: dict, where: dict) -> bool:
    return all(str(r.get(k)).lower() == str(v).lower() for k, v in where.items())


def check(rep: Report, err, key: str):
    """Spec-time checks: the template file exists, the context module has ``context()``."""
    if not rep.template.is_file():
        raise err(key + ".template", f"no file {rep.template}")
    if rep.context is not None:
        try:
            mod = importlib.import_module(rep.context)
        except ImportError as e:
            raise err(key + ".context", f"cannot import {rep.context}: {e}") from None
        if not callable(getattr(mod, "context", None)):
            raise err(key + ".context", f"{rep.context} has no context() function")


def render(rep: Report, rows: list[dict], *, header: str, flow_notes) -> str:
    """The report's text (``ReportError`` if the template does not render)."""
    import jinja2
    import jinja2.sandbox
    table = [Row(r) for r in rows]

    def rows_(**where):
        return [r for r in table if _match(r, where)]

    def row(**where):
        hits = rows_(**where)
        if len(hits) != 1:
            raise ReportError(f"report {rep.template.name}: row({where}) matches {len(hits)} "
                              f"rows (exactly one expected)")
        return hits[0]

    def values(col, **where):
        return [r.get(col) for r in rows_(**where)]

    def value(col, **where):
        hits = rows_(**where)
        if len(hits) > 1:
            raise ReportError(f"report {rep.template.name}: value({col!r}, {where}) matches "
                              f"{len(hits)} rows (at most one expected)")
        return hits[0].get(col) if hits else None

    # sandboxed: a template comes with a spec (user input); the plain environment lets it reach
    # Python's internals ({{ cycler.__init__.__globals__.os.popen(...) }}: a shell)
    env = jinja2.sandbox.SandboxedEnvironment(
        loader=jinja2.FileSystemLoader(str(rep.template.parent)),
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True,
        lstrip_blocks=True, autoescape=False)
    env.filters["fmt"] = fmt
    names = {"header": header, "flow_notes": list(flow_notes), "row": row, "rows": rows_,
             "values": values, "value": value, "spread": lambda v: _spread(v, missing="–"), "fmt": fmt,
             "libraries": list(dict.fromkeys(r["liberty"] for r in table)),
             "activities": list(dict.fromkeys(r["activity"] for r in table))}
    if rep.context is not None:
        names.update(importlib.import_module(rep.context).context())
    try:
        return env.get_template(rep.template.name).render(**names)
    except jinja2.TemplateSyntaxError as e:
        raise ReportError(f"report {rep.template.name}:{e.lineno}: {e.message}") from None
    except jinja2.TemplateError as e:
        raise ReportError(f"report {rep.template.name}: {type(e).__name__}: {e}") from None
