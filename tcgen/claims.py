"""The claims ledger (``tcgen claims``, docs/claims.md): every quantitative claim of the papers
that hardware can check, one TOML file per family under ``claims/``, judged against the sweep
results committed under ``reports/`` (``<sweep>.json``, written by ``tcgen sweep ... -o
reports``) or against a family model, and written as ``reports/claims.md``.

A claim says where the paper makes it, the paper's value, how we measure it and the tolerance;
the verdict is computed, never typed:

* **holds** -- a node-independent figure (cycles, counts, a model's output) within tolerance;
* **holds as a ratio** -- a ratio between two designs, measured with our flow on each library,
  within tolerance of the paper's (absolute values from another node are never compared);
* **mixed** -- holds on some libraries/activities and not on others (which, is listed);
* **fails** -- outside the tolerance everywhere it is judged;
* **untestable here** -- with the reason; **pending** -- not measured yet (``why`` may say what
  is missing).
"""
from __future__ import annotations

import ast
import importlib
import inspect
import json
import math
import re
import string
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcgen.errors import UsageError
from tcgen.study import EXPR_FUNCTIONS, evaluate_expr, today

__all__ = ["ClaimError", "Claim", "load", "judge", "render", "VERDICTS"]

VERDICTS = ("holds", "holds as a ratio", "mixed", "fails", "untestable here", "pending")
_CLAIM = {"id", "where", "claim", "paper_value", "paper_text", "unit", "kind", "status",
          "measure", "note", "source", "sweep", "rows", "value", "judge_on", "compare",
          "tolerance", "call", "args", "why", "fmt"}
KINDS = ("ratio", "absolute", "bound", "accuracy", "exact", "count", "model")
#: a model claim calls a function of a family (never anything else: a ledger is data)
_CALL = re.compile(r"tcgen\.units\.[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)+:[A-Za-z][A-Za-z0-9_]*")
_SWEEP_NAME = re.compile(r"[A-Za-z0-9_-]+")
MAX_FILE_BYTES = 1 << 20
MAX_EXPR_CHARS = 10_000
COMPARES = ("within", "at_least", "at_most")


class ClaimError(UsageError):
    """A ledger file that cannot be read or checked: one line naming the file and the claim."""


@dataclass
class Claim:
    family: str
    file: str
    id: str
    where: str
    claim: str
    paper_value: float | None = None
    paper_text: str = ""
    unit: str = ""
    kind: str = "ratio"
    status: str = "measured"          # measured | untestable | pending
    measure: str = ""
    note: str = ""
    source: str = ""                   # sweep | model
    sweep: str = ""
    rows: dict = field(default_factory=dict)
    value: str = ""
    judge_on: dict = field(default_factory=dict)
    compare: str = "within"
    tolerance: float = 0.1
    call: str = ""
    args: dict = field(default_factory=dict)
    why: str = ""
    fmt: str = "{:.2f}"
    # filled by judge()
    cells: list = field(default_factory=list)      # (cell label, value, judged, ok)
    command: str = ""                               # what made the figures
    verdict: str = ""
    reason: str = ""


# -- loading ---------------------------------------------------------------------------------
def load(folder: str | Path) -> list[Claim]:
    """Every claim of every ``*.toml`` under ``folder`` (sorted by file name), checked."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ClaimError(f"claims: no folder {folder}")
    out: list[Claim] = []
    seen: dict[str, str] = {}
    for path in sorted(folder.glob("*.toml")):
        try:
            if not path.is_file():                 # a FIFO named x.toml would block
                raise ClaimError(f"claims: {path} is not a regular file")
            if path.stat().st_size > MAX_FILE_BYTES:
                raise ClaimError(f"claims: {path} is larger than {MAX_FILE_BYTES:,} bytes; not "
                                 "a ledger file")
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as e:
            raise ClaimError(f"claims: {path} is not UTF-8 text (byte {e.start})") from None
        except ValueError as e:        # TOMLDecodeError, or an integer of > 4300 digits
            raise ClaimError(f"claims: {path}: not valid TOML: {e}") from None
        except RecursionError:
            raise ClaimError(f"claims: {path}: nested too deeply") from None
        except OSError as e:
            raise ClaimError(f"claims: cannot read {path}: {e.strerror or e}") from None
        extra = sorted(set(raw) - {"claims", "claim"})
        if extra:
            raise ClaimError(f"claims: {path}: unknown key {extra[0]} (known: claims, claim)")
        head = raw.get("claims", {})
        if not isinstance(head, dict):
            raise ClaimError(f"claims: {path}: [claims] must be a table")
        family = head.get("family") or path.stem
        if not isinstance(family, str):
            raise ClaimError(f"claims: {path}: claims.family must be a string")
        items = raw.get("claim", [])
        if not isinstance(items, list):
            raise ClaimError(f"claims: {path}: claim must be an array of tables ([[claim]])")
        for i, d in enumerate(items):
            c = _claim(d, family, path, i)
            if c.id in seen:
                raise ClaimError(f"claims: {path}: claim {c.id} also in {seen[c.id]}")
            seen[c.id] = path.name
            out.append(c)
    return out


def _claim(d: dict, family: str, path: Path, i: int) -> Claim:
    def err(msg):
        ident = d.get("id") if isinstance(d, dict) and isinstance(d.get("id"), str) else ""
        return ClaimError(f"claims: {path}: claim[{i}]{' ' + ident if ident else ''}: {msg}")
    if not isinstance(d, dict):
        raise err("must be a table")
    extra = sorted(set(d) - _CLAIM)
    if extra:
        raise err(f"unknown key {extra[0]} (known: {', '.join(sorted(_CLAIM))})")
    for k in ("id", "where", "claim"):
        if not isinstance(d.get(k), str) or not d[k]:
            raise err(f"{k} missing (a string)")
    _check_types(d, err)
    c = Claim(family, path.name, **{k: v for k, v in d.items()})
    if c.kind not in KINDS:
        raise err(f"kind {c.kind!r} (one of {', '.join(KINDS)})")
    if c.compare not in COMPARES:
        raise err(f"compare {c.compare!r} (one of {', '.join(COMPARES)})")
    if c.status == "pending" or c.status == "untestable":
        if c.status == "untestable" and not c.why:
            raise err("an untestable claim says why")
        return c
    if c.status != "measured":
        raise err(f"status {c.status!r} (measured, untestable or pending)")
    if c.paper_value is None or isinstance(c.paper_value, bool) \
            or not isinstance(c.paper_value, (int, float)):
        raise err("a measured claim needs paper_value (a number)")
    if c.source == "sweep":
        if not c.sweep or not isinstance(c.rows, dict) or not c.rows:
            raise err("source sweep needs sweep = NAME and rows = {name = {column = value}}")
        if not _SWEEP_NAME.fullmatch(c.sweep):
            raise err(f"sweep {c.sweep!r}: a sweep name (letters, digits, '-' and '_'), the "
                      "<name>.json of the results folder")
        bad = [k for k, v in c.rows.items() if not isinstance(v, dict)]
        if bad:
            raise err(f"rows.{bad[0]} must be a table of column = value")
    elif c.source == "model":
        if not _CALL.fullmatch(c.call):
            raise err(f"call {c.call!r}: a function of a family, "
                      "'tcgen.units.<family>.<module>:<function>'")
    else:
        raise err(f"source {c.source!r} (sweep or model)")
    if not c.value:
        raise err("value missing (an expression over the rows or the model's output x)")
    if len(c.value) > MAX_EXPR_CHARS:
        raise err(f"value is longer than {MAX_EXPR_CHARS} characters")
    names = _names(c.value, err)
    allowed = set(c.rows) if c.source == "sweep" else {"x"}
    if names - allowed:
        raise err(f"value uses {sorted(names - allowed)[0]!r} (known: {sorted(allowed)})")
    return c


# -- expressions -----------------------------------------------------------------------------
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Add, ast.Sub, ast.Mult, ast.Div,
          ast.Pow, ast.USub, ast.UAdd, ast.Constant, ast.Name, ast.Attribute, ast.Load,
          ast.Subscript, ast.Call)
_FUNCS = EXPR_FUNCTIONS


_STRINGS = ("where", "claim", "paper_text", "unit", "kind", "status", "measure", "note",
            "source", "sweep", "value", "call", "why", "fmt")
_TABLES = ("rows", "judge_on", "args")


def _check_types(d: dict, err):
    """Every key of a claim has its type (strings, tables, numbers); ``fmt`` formats one number
    with a plain ``{:spec}`` field."""
    for k in _STRINGS:
        if k in d and not isinstance(d[k], str):
            raise err(f"{k} must be a string, got {d[k]!r}")
    for k in _TABLES:
        if k in d and not isinstance(d[k], dict):
            raise err(f"{k} must be a table, got {d[k]!r}")
    for k in ("paper_value", "tolerance"):
        v = d.get(k, 0.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise err(f"{k} must be a finite number, got {v!r}")
    if d.get("tolerance", 0.0) < 0:
        raise err(f"tolerance must be >= 0, got {d['tolerance']!r}")
    fmt = d.get("fmt", "{:.2f}")
    try:
        fields = [f for f in string.Formatter().parse(fmt) if f[1] is not None]
        ok = len(fields) == 1 and fields[0][1] == "" and fields[0][3] is None \
            and not re.search(r"[{}]|[0-9]{4,}", fields[0][2] or "")
        if ok:
            fmt.format(1.5)
    except (ValueError, TypeError, IndexError, KeyError):
        ok = False
    if not ok:
        raise err(f"fmt {fmt!r} must format one number ('{{:.2f}}', '{{:g}} ops', ...)")


def _names(expr: str, err) -> set[str]:
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        raise err(f"value {expr!r} is not an expression") from None
    except (RecursionError, ValueError, MemoryError):
        raise err(f"value {expr!r} is not an expression (nested too deeply)") from None
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise err(f"value {expr!r}: {type(node).__name__} is not allowed")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _FUNCS):
            raise err(f"value {expr!r}: only min, max, abs may be called")
        if isinstance(node, ast.Name) and node.id not in _FUNCS:
            names.add(node.id)
    return names


def _eval(expr: str, env: dict) -> float | None:
    return evaluate_expr(expr, env)


# -- judging -----------------------------------------------------------------------------------
def _match(r: dict, where: dict) -> bool:
    return all(str(r.get(k)).lower() == str(v).lower() for k, v in where.items())


def _ok(c: Claim, v: float) -> bool:
    p = float(c.paper_value)
    if c.compare == "at_least":
        return v >= p * (1 - c.tolerance)
    if c.compare == "at_most":
        return v <= p * (1 + c.tolerance)
    return abs(v / p - 1) <= c.tolerance if p else abs(v) <= c.tolerance


def judge(claims: list[Claim], results: str | Path) -> list[Claim]:
    """Fill every claim's cells and verdict from the sweep results in ``results`` (a folder of
    ``<sweep>.json``) or its model.  A sweep that is missing is an error naming the command
    that makes it."""
    results = Path(results)
    sweeps: dict[str, dict] = {}
    for c in claims:
        if c.status == "pending":
            c.verdict, c.reason = "pending", c.why or "not measured yet"
            continue
        if c.status == "untestable":
            c.verdict, c.reason = "untestable here", c.why
            continue
        if c.source == "model":
            mod, fn = c.call.split(":")
            try:
                f = getattr(importlib.import_module(mod), fn)
                if not callable(f):
                    raise AttributeError(f"{fn} is not a function")
                inspect.signature(f).bind(**c.args)
            except (ImportError, AttributeError, TypeError, ValueError) as e:
                raise ClaimError(f"claims: {c.file}: {c.id}: cannot call {c.call}: {e}") \
                    from None
            x = f(**c.args)
            v = _eval(c.value, {"x": _plain(x)})
            c.cells = [("model", v, True, v is not None and _ok(c, v))]
            c.command = f"{c.call}({', '.join(f'{k}={v!r}' for k, v in c.args.items())})"
        else:
            if c.sweep not in sweeps:
                path = results / f"{c.sweep}.json"
                if not path.is_file():
                    raise ClaimError(f"claims: {c.file}: {c.id}: no results {path} (make them "
                                     f"with: tcgen sweep studies/{c.sweep}.toml -o {results})")
                sweeps[c.sweep] = _results(path, c)
            c.cells = _sweep_cells(c, sweeps[c.sweep]["rows"])
            c.command = str(sweeps[c.sweep].get("command", ""))
        _verdict(c)
    return claims


def _results(path: Path, c: Claim) -> dict:
    """A sweep's ``<name>.json``: {"rows": [{column: value}, ...], "command": ...}."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ClaimError(f"claims: {c.file}: {c.id}: cannot read results {path}: "
                         f"{getattr(e, 'strerror', None) or e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list) \
            or not all(isinstance(r, dict) for r in data["rows"]):
        raise ClaimError(f"claims: {c.file}: {c.id}: {path} is not a sweep's results (no "
                         "'rows' list; written by tcgen sweep ... -o DIR)")
    return data


def _plain(x):
    """Model output with string keys (so ``x['INT4']`` and ``x['4']`` both read dicts)."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return {str(i): _plain(v) for i, v in enumerate(x)}
    return x


def _sweep_cells(c: Claim, rows: list[dict]) -> list:
    first = next(iter(c.rows.values()))
    cells = list(dict.fromkeys((r["liberty"], r["activity"]) for r in rows
                               if _match(r, first)))
    out = []
    for lib, act in cells:
        env = {}
        for name, where in c.rows.items():
            hits = [r for r in rows if _match(r, {**where, "liberty": lib, "activity": act})]
            if len(hits) > 1:        # e.g. two synthesis modes or fraig limits of one point
                cols = [k for k in ("group", "clock_ns", "synthesis", "fraig_conflicts",
                                    "workload") if len({str(h.get(k)) for h in hits}) > 1]
                raise ClaimError(f"claims: {c.file}: {c.id}: rows {name} = {where} match "
                                 f"{len(hits)} rows of {c.sweep}.json on {lib} {act}; name "
                                 f"{', '.join(cols) or 'its parameters'} in the rows' where")
            env[name] = hits[0] if len(hits) == 1 and hits[0].get("status") == "ok" else None
        v = _eval(c.value, env) if all(e is not None for e in env.values()) else None
        judged = _match({"liberty": lib, "activity": act}, c.judge_on)
        out.append((f"{lib} {act.split('@')[0]}", v, judged, v is not None and _ok(c, v)))
    if not out:
        raise ClaimError(f"claims: {c.file}: {c.id}: rows {first} match nothing in "
                         f"{c.sweep}.json")
    return out


def _verdict(c: Claim):
    judged = [x for x in c.cells if x[2]]
    if not judged or any(x[1] is None for x in judged):
        c.verdict, c.reason = "untestable here", "a measurement it needs is missing or failed"
        return
    good = [x[0] for x in judged if x[3]]
    if len(good) == len(judged):
        c.verdict = "holds as a ratio" if c.kind == "ratio" else "holds"
    elif not good:
        c.verdict = "fails"
    else:
        c.verdict, c.reason = "mixed", "holds on " + ", ".join(good)
    rel = {"within": f"within ±{100 * c.tolerance:g} % of", "at_least": "at least",
           "at_most": "at most"}[c.compare]
    c.reason = (c.reason + "; " if c.reason else "") + f"judged: ours {rel} the paper's, on " + \
        ", ".join(x[0] for x in judged)


# -- the report ------------------------------------------------------------------------------
def render(claims: list[Claim], command: str) -> str:
    fams = list(dict.fromkeys(c.family for c in claims))
    counts = {v: sum(c.verdict == v for c in claims) for v in VERDICTS}
    L = ["# Claims ledger", "",
         f"Regenerate: `.venv/bin/{command}`.  Date {today()}.  Claims: `claims/*.toml`; "
         "measured figures: the sweep results under reports/ (`<sweep>.json`, each with its "
         "own command, liberties and tool versions) and the family models named per claim. "
         "Verdicts are computed (tcgen/claims.py, docs/claims.md): *holds as a ratio* = our "
         "ratio between the same two designs, on each library, within the tolerance of the "
         "paper's; absolute figures of another process node are never compared.", "",
         f"**{len(claims)} claims**: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n)
         + ".", "",
         "| family | claims | " + " | ".join(VERDICTS) + " |",
         "|---|---:|" + "---:|" * len(VERDICTS)]
    for f in fams:
        cs = [c for c in claims if c.family == f]
        L.append(f"| {f} | {len(cs)} | " + " | ".join(
            str(sum(c.verdict == v for c in cs)) for v in VERDICTS) + " |")
    for f in fams:
        L += ["", f"## {f}", "",
              "| id | where | claim | paper | ours | verdict | how measured |",
              "|---|---|---|---|---|---|---|"]
        for c in (c for c in claims if c.family == f):
            paper = c.paper_text or (f"{c.paper_value:g}{c.unit}" if c.paper_value is not None
                                     else "")
            ours = "; ".join(f"{lab} {_f(c, v)}{'' if j else ' (not judged)'}"
                             for lab, v, j, _ in c.cells) or "–"
            how = c.measure or (f"sweep {c.sweep}: `{c.value}`" if c.source == "sweep"
                                else f"`{c.call}`: `{c.value}`")
            if c.command:
                how += f" — `{c.command}`"
            verdict = f"**{c.verdict}**" + (f" ({c.reason})" if c.reason else "")
            note = f" Note: {c.note}" if c.note else ""
            L.append(f"| {c.id} | {c.where} | {_cell(c.claim)}{_cell(note)} | {_cell(paper)} | "
                     f"{ours} | {_cell(verdict)} | {_cell(how)} |")
    return "\n".join(L) + "\n"


def _f(c: Claim, v):
    return "–" if v is None else c.fmt.format(v) + (c.unit if c.unit in ("×", "%") else "")


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")
