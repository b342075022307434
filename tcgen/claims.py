"""The claims ledger (``tcgen claims``, docs/claims.md): every quantitative claim of the papers
that hardware can check, one TOML file per family under ``claims/``, judged against the sweep
results committed under ``reports/`` (``<sweep>.json``, written by ``tcgen sweep ... -o
reports``) or against a family model, and written as ``reports/claims.md``.

A claim says where the paper makes it, the paper's value, how we measure it, the kind of
evidence that judges it and the tolerance; the verdict is computed, never typed:

* **holds** -- within tolerance on every judged cell, outside the flow's noise band;
* **holds as a ratio** -- the same, for a ratio between two designs measured with our flow on
  each library (``evidence = "hardware"``; absolute values from another node are never
  compared);
* **within noise** -- the margin to the criterion's edge is inside the flow's measured noise
  band (reports/noise.json) on a judged cell: neither holds nor fails;
* **mixed** -- holds on some judged cells and fails on others, outside noise (which, is listed);
* **fails** -- outside the tolerance everywhere it is judged; a failing claim says why
  (``cause``, ``why_fails``);
* **untestable here** -- with the reason; **pending** -- not measured yet.

Integrity (issue 39): a claim's comparison is pre-registered -- :func:`history` reads the
ledger's git history and lists every change of ``tolerance``, ``compare``, ``paper_value`` or
``judge_on`` made once the claim had a measured value; ``tcgen claims --strict`` fails on any
without a written ``[[claim.revision]]``.  A method used for one claim is declared
(``[[method]]``) with every claim of the paper it can judge; what the ledger leaves out is a
``[[left_out]]`` entry with its reason.
"""
from __future__ import annotations

import ast
import datetime
import importlib
import inspect
import json
import math
import re
import string
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tcgen.errors import UsageError
from tcgen.study import EXPR_FUNCTIONS, evaluate_expr, today

__all__ = ["ClaimError", "Claim", "Cell", "Ledger", "Change", "load", "load_ledger", "judge",
           "render", "history", "strict_problems", "VERDICTS", "EVIDENCE", "CAUSES"]

VERDICTS = ("holds", "holds as a ratio", "within noise", "mixed", "fails", "untestable here",
            "pending")
_CLAIM = {"id", "where", "claim", "paper_value", "paper_text", "unit", "kind", "status",
          "measure", "note", "source", "sweep", "rows", "value", "judge_on", "compare",
          "tolerance", "call", "args", "why", "fmt", "evidence", "method", "views", "noise",
          "noise_units", "cause", "why_fails", "revision", "margin", "flow_views",
          "renamed_from"}
#: what judges a claim (docs/claims.md, "Evidence"): only ``hardware`` can hold "as a ratio"
EVIDENCE = ("hardware", "conformance", "arithmetic", "proxy", "note")
#: why a claim fails (docs/claims.md, "Attribution")
CAUSES = ("design", "flow", "paper", "open")
NOISE_METRICS = ("area", "delay", "power", "energy")
_FILE_KEYS = ("claims", "claim", "method", "left_out")
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
    evidence: str = ""
    method: str = ""
    views: dict = field(default_factory=dict)
    noise: list = field(default_factory=list)
    noise_units: list = field(default_factory=list)
    margin: str = ""           # the relative move of the measured figures that flips the verdict
    flow_views: list = field(default_factory=list)   # the views that are flow choices
    renamed_from: str = ""     # the id this claim had before (its history carries over)
    cause: str = ""
    why_fails: str = ""
    revision: list = field(default_factory=list)
    # filled by judge()
    cells: list = field(default_factory=list)      # Cell(label, value, judged, ok, ...)
    command: str = ""                               # what made the figures
    verdict: str = ""
    reason: str = ""
    decided: str = ""          # the verdict before the noise band was applied
    crossing: str = ""         # flow choices under which a failing value meets the criterion


class Cell(NamedTuple):
    """One (liberty, activity) cell of a claim, or ``model``."""
    label: str
    value: float | None
    judged: bool
    ok: bool
    views: tuple = ()          # ((label, value), ...)
    band: float | None = None  # relative noise band of the value (None: not measured)
    band_text: str = ""
    state: str = ""            # holds | fails | noise (judged cells with a value)
    liberty: str = ""
    margin: float | None = None  # how far (relative) the figures must move to flip the cell


@dataclass
class Method:
    id: str
    what: str
    judges: list


@dataclass
class LeftOut:
    what: str
    where: str
    why: str
    method: str = ""


@dataclass
class FileInfo:
    file: str
    family: str
    paper: str = ""
    methods: list = field(default_factory=list)
    left_out: list = field(default_factory=list)


@dataclass
class Ledger:
    claims: list
    files: list                # FileInfo per file, in file order
    folder: Path


# -- loading ---------------------------------------------------------------------------------
def load(folder: str | Path) -> list[Claim]:
    """Every claim of every ``*.toml`` under ``folder`` (sorted by file name), checked."""
    return load_ledger(folder).claims


def load_ledger(folder: str | Path) -> Ledger:
    """The claims, methods and left-out statements of every ``*.toml`` under ``folder``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ClaimError(f"claims: no folder {folder}")
    out: list[Claim] = []
    files: list[FileInfo] = []
    seen: dict[str, str] = {}
    for path in sorted(folder.glob("*.toml")):
        raw = _read_toml(path)
        extra = sorted(set(raw) - set(_FILE_KEYS))
        if extra:
            raise ClaimError(f"claims: {path}: unknown key {extra[0]} (known: "
                             f"{', '.join(_FILE_KEYS)})")
        head = raw.get("claims", {})
        if not isinstance(head, dict):
            raise ClaimError(f"claims: {path}: [claims] must be a table")
        family = head.get("family") or path.stem
        if not isinstance(family, str):
            raise ClaimError(f"claims: {path}: claims.family must be a string")
        items = raw.get("claim", [])
        if not isinstance(items, list):
            raise ClaimError(f"claims: {path}: claim must be an array of tables ([[claim]])")
        mine = []
        for i, d in enumerate(items):
            c = _claim(d, family, path, i)
            if c.id in seen:
                raise ClaimError(f"claims: {path}: claim {c.id} also in {seen[c.id]}")
            seen[c.id] = path.name
            mine.append(c)
        info = FileInfo(path.name, family, str(head.get("paper", "")),
                        _methods(raw.get("method", []), path),
                        _left_out(raw.get("left_out", []), path))
        _check_siblings(info, mine, path)
        out += mine
        files.append(info)
    return Ledger(out, files, folder)


def _read_toml(path: Path) -> dict:
    try:
        if not path.is_file():                 # a FIFO named x.toml would block
            raise ClaimError(f"claims: {path} is not a regular file")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ClaimError(f"claims: {path} is larger than {MAX_FILE_BYTES:,} bytes; not "
                             "a ledger file")
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise ClaimError(f"claims: {path} is not UTF-8 text (byte {e.start})") from None
    except ValueError as e:        # TOMLDecodeError, or an integer of > 4300 digits
        raise ClaimError(f"claims: {path}: not valid TOML: {e}") from None
    except RecursionError:
        raise ClaimError(f"claims: {path}: nested too deeply") from None
    except OSError as e:
        raise ClaimError(f"claims: cannot read {path}: {e.strerror or e}") from None


def _tables(items, path: Path, what: str, keys: dict) -> list[dict]:
    """``[[what]]`` tables with string keys ``keys`` ({name: required}); lists where noted."""
    if not isinstance(items, list) or not all(isinstance(d, dict) for d in items):
        raise ClaimError(f"claims: {path}: {what} must be an array of tables ([[{what}]])")
    for i, d in enumerate(items):
        extra = sorted(set(d) - set(keys))
        if extra:
            raise ClaimError(f"claims: {path}: {what}[{i}]: unknown key {extra[0]} (known: "
                             f"{', '.join(sorted(keys))})")
        for k, required in keys.items():
            v = d.get(k)
            if k == "judges":
                if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
                    raise ClaimError(f"claims: {path}: {what}[{i}]: judges must be a list of "
                                     "claim ids")
            elif (required and not (isinstance(v, str) and v.strip())) or \
                    (v is not None and not isinstance(v, str)):
                raise ClaimError(f"claims: {path}: {what}[{i}]: {k} missing (a string)"
                                 if required else f"claims: {path}: {what}[{i}]: {k} must be "
                                 "a string")
    return items


def _methods(items, path: Path) -> list[Method]:
    out = [Method(d["id"], d["what"], list(d["judges"]))
           for d in _tables(items, path, "method", {"id": True, "what": True, "judges": True})]
    ids = [m.id for m in out]
    dup = sorted({x for x in ids if ids.count(x) > 1})
    if dup:
        raise ClaimError(f"claims: {path}: method {dup[0]} declared twice")
    return out


def _left_out(items, path: Path) -> list[LeftOut]:
    return [LeftOut(d["what"], d["where"], d["why"], d.get("method", ""))
            for d in _tables(items, path, "left_out",
                             {"what": True, "where": True, "why": True, "method": False})]


def _check_siblings(info: FileInfo, claims: list[Claim], path: Path):
    """The sibling rule, as far as a file can state it: every claim judged with a method is
    listed by that method's ``judges`` and every claim listed there uses it; a left-out
    sibling names a declared method."""
    methods = {m.id: m for m in info.methods}
    by_id = {c.id: c for c in claims}
    for c in claims:
        if c.method and c.method not in methods:
            raise ClaimError(f"claims: {path}: {c.id}: method {c.method!r} is not declared "
                             "([[method]] id = ...)")
        if c.method and c.id not in methods[c.method].judges:
            raise ClaimError(f"claims: {path}: {c.id}: uses method {c.method} but is not in "
                             "its judges (the sibling rule: a method lists every claim it "
                             "judges)")
    for m in info.methods:
        for cid in m.judges:
            if cid not in by_id:
                raise ClaimError(f"claims: {path}: method {m.id} judges {cid}, which is not a "
                                 "claim of this file")
            if by_id[cid].method != m.id:
                raise ClaimError(f"claims: {path}: method {m.id} judges {cid}, but {cid} does "
                                 f"not say method = {m.id!r}")
    for lo in info.left_out:
        if lo.method and lo.method not in methods:
            raise ClaimError(f"claims: {path}: left_out {lo.what[:40]!r}: method "
                             f"{lo.method!r} is not declared")


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
    if c.evidence and c.evidence not in EVIDENCE:
        raise err(f"evidence {c.evidence!r} (one of {', '.join(EVIDENCE)})")
    if c.cause and c.cause not in CAUSES:
        raise err(f"cause {c.cause!r} (one of {', '.join(CAUSES)})")
    if bool(c.cause) != bool(c.why_fails):
        raise err("cause and why_fails go together (why the claim fails, and what shows it)")
    bad = [m for m in c.noise if m not in NOISE_METRICS]
    if bad:
        raise err(f"noise {bad[0]!r} (a list of {', '.join(NOISE_METRICS)})")
    if bool(c.noise) != bool(c.noise_units):
        raise err("noise and noise_units go together (the metrics and the designs whose flow "
                  "noise enters the value)")
    if c.noise_units:
        from tcgen.registry import families
        known = {u for names in families().values() for u in names}
        bad = [u for u in c.noise_units if u not in known]
        if bad:
            raise err(f"noise_units: {bad[0]!r} is not a unit (tcgen list)")
    c.revision = [_revision(r, err) for r in c.revision]
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
    allowed = set(c.rows) if c.source == "sweep" else {"x"}
    bad = [v for v in c.flow_views if v not in c.views]
    if bad:
        raise err(f"flow_views names {bad[0]!r}, which is not one of its views")
    if c.margin and not c.noise:
        raise err("margin is the distance the noise band is compared with: it needs noise and "
                  "noise_units")
    exprs = [("value", c.value)] + [(f"views.{k}", v) for k, v in c.views.items()] + \
        ([("margin", c.margin)] if c.margin else [])
    for label, expr in exprs:
        if len(expr) > MAX_EXPR_CHARS:
            raise err(f"{label} is longer than {MAX_EXPR_CHARS} characters")
        names = _names(expr, err, label)
        if names - allowed:
            raise err(f"{label} uses {sorted(names - allowed)[0]!r} (known: {sorted(allowed)})")
    return c


_REVISION = {"field", "old", "new", "date", "why"}
PREREGISTERED = ("tolerance", "compare", "paper_value", "judge_on", "status", "noise",
                 "noise_units", "margin")


def _revision(r, err) -> dict:
    """One ``[[claim.revision]]``: a justified change of a pre-registered field."""
    if not isinstance(r, dict):
        raise err("revision must be an array of tables ([[claim.revision]])")
    extra = sorted(set(r) - _REVISION)
    if extra:
        raise err(f"revision: unknown key {extra[0]} (known: {', '.join(sorted(_REVISION))})")
    if r.get("field") not in PREREGISTERED:
        raise err(f"revision: field {r.get('field')!r} (one of {', '.join(PREREGISTERED)})")
    if "new" not in r:
        raise err("revision: new missing (the value the field changed to)")
    if not isinstance(r.get("why", ""), str) or not isinstance(r.get("date", ""), str):
        raise err("revision: why and date are strings")
    if isinstance(r.get("date"), str) and r["date"] and \
            not re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["date"]):
        raise err(f"revision: date {r['date']!r} (YYYY-MM-DD)")
    return dict(r)


# -- expressions -----------------------------------------------------------------------------
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Add, ast.Sub, ast.Mult, ast.Div,
          ast.Pow, ast.USub, ast.UAdd, ast.Constant, ast.Name, ast.Attribute, ast.Load,
          ast.Subscript, ast.Call)
_FUNCS = EXPR_FUNCTIONS


_STRINGS = ("where", "claim", "paper_text", "unit", "kind", "status", "measure", "note",
            "source", "sweep", "value", "call", "why", "fmt", "evidence", "method", "cause",
            "why_fails", "margin", "renamed_from")
_TABLES = ("rows", "judge_on", "args", "views")
_LISTS = ("noise", "noise_units", "revision", "flow_views")


def _check_types(d: dict, err):
    """Every key of a claim has its type (strings, tables, numbers); ``fmt`` formats one number
    with a plain ``{:spec}`` field."""
    for k in _STRINGS:
        if k in d and not isinstance(d[k], str):
            raise err(f"{k} must be a string, got {d[k]!r}")
    for k in _TABLES:
        if k in d and not isinstance(d[k], dict):
            raise err(f"{k} must be a table, got {d[k]!r}")
    for k in _LISTS:
        if k in d and not isinstance(d[k], list):
            raise err(f"{k} must be an array, got {d[k]!r}")
    for k in ("noise", "noise_units", "flow_views"):
        if not all(isinstance(x, str) for x in d.get(k, [])):
            raise err(f"{k} must be an array of strings")
    if not all(isinstance(v, str) for v in d.get("views", {}).values()):
        raise err("views must map labels to expressions (strings)")
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


def _names(expr: str, err, label: str = "value") -> set[str]:
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        raise err(f"{label} {expr!r} is not an expression") from None
    except (RecursionError, ValueError, MemoryError):
        raise err(f"{label} {expr!r} is not an expression (nested too deeply)") from None
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise err(f"{label} {expr!r}: {type(node).__name__} is not allowed")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _FUNCS):
            raise err(f"{label} {expr!r}: only {', '.join(sorted(_FUNCS))} may be called")
        if isinstance(node, ast.Name) and node.id not in _FUNCS:
            names.add(node.id)
    return names


def _eval(expr: str, env: dict) -> float | None:
    return evaluate_expr(expr, env)


# -- judging -----------------------------------------------------------------------------------
def _match(r: dict, where: dict) -> bool:
    return all(str(r.get(k)).lower() == str(v).lower() for k, v in where.items())


def _ok(c: Claim, v: float) -> bool:
    p, t = float(c.paper_value), c.tolerance
    if c.compare == "at_least":
        return v >= p - t * abs(p)
    if c.compare == "at_most":
        return v <= p + t * abs(p)
    return abs(v - p) <= t * abs(p) if p else abs(v) <= t


def _edges(c: Claim) -> list[float]:
    """The values at which the criterion changes its answer."""
    p, t = float(c.paper_value), c.tolerance
    if c.compare == "at_least":
        return [p - t * abs(p)]
    if c.compare == "at_most":
        return [p + t * abs(p)]
    return [p - t * abs(p), p + t * abs(p)] if p else [-t, t]


def _margin(c: Claim, v: float) -> float:
    """How far ``v`` may move, relative to itself, before the verdict of its cell changes
    (inf for a value of 0)."""
    d = min(abs(v - e) for e in _edges(c))
    return d / abs(v) if v else math.inf


def criterion(c: Claim) -> str:
    """The pre-registered criterion, as text: '≥ 2.02 (tolerance 10 %: ≥ 1.82)'."""
    fp = _fmt_paper(c)
    t = 100 * c.tolerance
    if c.compare == "within":
        if not c.tolerance:
            return f"= {fp} exactly"
        if not c.paper_value:
            return f"within ±{c.tolerance:g} of 0"
        return f"within ±{t:g} % of {fp} ({c.fmt.format(_edges(c)[0])}..." \
               f"{c.fmt.format(_edges(c)[1])})"
    sign = "≥" if c.compare == "at_least" else "≤"
    if not c.tolerance:
        return f"{sign} {fp}"
    return f"{sign} {fp} with {t:g} % tolerance ({sign} {c.fmt.format(_edges(c)[0])})"


def _fmt_paper(c: Claim) -> str:
    return _f(c, float(c.paper_value))


def outcome(c: Claim, v: float) -> str:
    """One cell's outcome with its margin: 'ours 1.90 vs ≥ 2.02: holds within 6 % slack'."""
    p = float(c.paper_value)
    fv, fp = _f(c, v), _fmt_paper(c)
    ok = _ok(c, v)
    dev = (v / p - 1) * 100 if p else None
    devs = f"{dev:+.1f} %" if dev is not None else f"{v - p:+g}"
    if c.compare == "within":
        if not c.tolerance:
            return f"ours {fv} {'=' if ok else '≠'} {fp}: {'holds' if ok else 'fails'}"
        return f"ours {fv} vs {fp} ({devs}): {'holds' if ok else 'fails'}"
    sign = "≥" if c.compare == "at_least" else "≤"
    strict = v >= p if c.compare == "at_least" else v <= p
    if ok and strict:
        return f"ours {fv} {sign} {fp}: holds"
    if ok:
        return f"ours {fv} vs {sign} {fp}: holds within {abs(dev) if dev is not None else 0:.1f}" \
               f" % (relative) slack (tolerance {100 * c.tolerance:g} %)"
    return f"ours {fv} vs {sign} {fp} ({devs}): fails"


def judge(claims: list[Claim], results: str | Path, noise: dict | None = None) -> list[Claim]:
    """Fill every claim's cells and verdict from the sweep results in ``results`` (a folder of
    ``<sweep>.json``) or its model.  A sweep that is missing is an error naming the command
    that makes it.  ``noise``: the flow's noise bands (:func:`load_noise`; default: the
    ``noise.json`` of ``results`` when there is one)."""
    results = Path(results)
    if noise is None:
        noise = load_noise(results / "noise.json")
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
            env = {"x": _plain(x)}
            v = _eval(c.value, env)
            c.cells = [_cell_of(c, "model", "", v, True, env, noise)]
            c.command = f"{c.call}({', '.join(f'{k}={v!r}' for k, v in c.args.items())})"
        else:
            if c.sweep not in sweeps:
                path = results / f"{c.sweep}.json"
                if not path.is_file():
                    raise ClaimError(f"claims: {c.file}: {c.id}: no results {path} (make them "
                                     f"with: tcgen sweep studies/{c.sweep}.toml -o {results})")
                sweeps[c.sweep] = _results(path, c)
            c.cells = _sweep_cells(c, sweeps[c.sweep]["rows"], noise)
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


def _sweep_cells(c: Claim, rows: list[dict], noise: dict) -> list[Cell]:
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
        out.append(_cell_of(c, f"{lib} {act.split('@')[0]}", lib, v, judged, env, noise))
    if not out:
        raise ClaimError(f"claims: {c.file}: {c.id}: rows {first} match nothing in "
                         f"{c.sweep}.json")
    return out


def _cell_of(c: Claim, label: str, lib: str, v, judged: bool, env: dict, noise: dict) -> Cell:
    ok = v is not None and _ok(c, v)
    views = tuple((k, _eval(e, env) if all(x is not None for x in env.values()) else None)
                  for k, e in c.views.items())
    band, text = _band(c, lib, noise)
    state, m = "", None
    if judged and v is not None:
        m = _eval(c.margin, env) if c.margin and all(x is not None for x in env.values()) \
            else None
        if m is None and not _discrete(c):
            m = _margin(c, v)
        m = abs(m) if m is not None else None
        if band is not None and m is None:
            text += " (a discrete value without a margin expression: not applied)"
        state = "noise" if band is not None and m is not None and m <= band else \
            ("holds" if ok else "fails")
    return Cell(label, v, judged, ok, views, band, text, state, lib, m)


def _discrete(c: Claim) -> bool:
    """A value built from argmax/above/below (a K, a count of limits), or judged by exact
    equality: it has no continuous distance to the criterion, so only a ``margin`` expression
    can be compared with noise."""
    return bool(re.search(r"\b(argmax|above|below)\s*\(", c.value)) or \
        (c.compare == "within" and not c.tolerance)


def _verdict(c: Claim):
    judged = [x for x in c.cells if x.judged]
    if not judged or any(x.value is None for x in judged):
        c.verdict, c.reason = "untestable here", "a measurement it needs is missing or failed"
        return
    good = [x.label for x in judged if x.ok]
    holds = "holds as a ratio" if c.kind == "ratio" and c.evidence == "hardware" else "holds"
    if len(good) == len(judged):
        c.decided = holds
    elif not good:
        c.decided = "fails"
    else:
        c.decided = "mixed"
    states = {x.state for x in judged}
    if "noise" in states and not {"holds", "fails"} <= states:
        c.verdict = "within noise"
    else:
        c.verdict = c.decided
    parts = [f"criterion {criterion(c)}"]
    for x in judged:
        s = f"{x.label}: {outcome(c, x.value)}"
        if x.band is not None and x.margin is not None:
            s += (f", margin {100 * x.margin:.1f} % " if math.isfinite(x.margin) else
                  ", margin ∞ ") + ("inside" if x.state == "noise" else "outside") + \
                f" the noise band {100 * x.band:.1f} %"
        parts.append(s)
    c.reason = "; ".join(parts)
    if c.decided in ("fails", "mixed"):
        # another flow choice: a cell that is not judged (library, activity), or a view the
        # claim declares a flow choice (clock basis, synthesis mode) of a cell that fails
        passing = [f"{x.label} {_f(c, x.value)}" for x in c.cells
                   if not x.judged and x.value is not None and x.ok]
        passing += [f"{x.label} {lab} {_f(c, v)}" for x in c.cells for lab, v in x.views
                    if lab in c.flow_views and v is not None and _ok(c, v)
                    and not (x.judged and x.ok)]
        c.crossing = ", ".join(passing)
        # or: the paper's value lies between ours under two flow choices
        alts = [(x.value, f"{x.label}") for x in c.cells if x.value is not None] + \
            [(v, f"{x.label} {lab}") for x in c.cells for lab, v in x.views
             if lab in c.flow_views and v is not None]
        p = float(c.paper_value)
        lo, hi = min(alts, default=None), max(alts, default=None)
        if lo and hi and lo[0] < p < hi[0]:
            c.crossing += ("; " if c.crossing else "") + \
                f"the paper's {_fmt_paper(c)} lies between ours {_f(c, lo[0])} ({lo[1]}) and " \
                f"{_f(c, hi[0])} ({hi[1]})"


# -- noise -------------------------------------------------------------------------------------


def load_noise(path: str | Path) -> dict:
    """The flow's noise bands (reports/noise.json, written by ``tcgen ppa --noise`` / the noise
    study): ``{(unit, liberty): {metric: relative spread (max - min) / median}}``, the largest
    over the unit's measured configurations.  Empty when the file does not exist."""
    path = Path(path)
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ClaimError(f"claims: cannot read noise bands {path}: "
                         f"{getattr(e, 'strerror', None) or e}") from None
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise ClaimError(f"claims: {path} is not a noise report (no 'rows' list)")
    out: dict = {}
    for r in rows:
        if not isinstance(r, dict) or not isinstance(r.get("unit"), str):
            continue
        bands = out.setdefault((r["unit"], str(r.get("liberty", ""))), {})
        for m in NOISE_METRICS:
            lo, mid, hi = (r.get(f"{m}_{k}") for k in ("min", "median", "max"))
            if all(isinstance(x, (int, float)) and math.isfinite(x) for x in (lo, mid, hi)) \
                    and mid:
                bands[m] = max(bands.get(m, 0.0), (hi - lo) / abs(mid))
    return out


def _band(c: Claim, lib: str, noise: dict) -> tuple[float | None, str]:
    """The relative band of the claim's value on liberty ``lib``: the sum over the designs and
    metrics it depends on of each one's measured spread (max - min) / median -- a neutral
    perturbation may move each design anywhere within its spread, and a ratio of two designs
    moves by at most the sum.  None (with the missing designs named) when a band is not
    measured."""
    if not c.noise or not lib:
        return None, ""
    total, parts, missing = 0.0, [], []
    for u in c.noise_units:
        bands = noise.get((u, lib))
        for m in c.noise:
            if bands is None or m not in bands:
                missing.append(f"{u} {m}")
                continue
            total += bands[m]
            parts.append(f"{u} {m} {100 * bands[m]:.1f} %")
    if missing:
        return None, "not measured: " + ", ".join(missing)
    return total, f"{100 * total:.1f} % ({', '.join(parts)})"


# -- pre-registration: the ledger's history ------------------------------------------------------
@dataclass
class Change:
    """A pre-registered field of a claim changed once the claim had a measured value."""
    id: str
    file: str
    commit: str                # short hash, or "working tree"
    date: str
    field: str
    old: Any
    new: Any
    value_then: str            # our figure in the ledger at the time ('' if none was shown)
    why: str = ""              # the matching [[claim.revision]]'s justification
    status: str = "in force"   # in force | superseded (changed again later) | reverted (the
    #                            field is back at its registered value)


_DEFAULTS = {"tolerance": 0.1, "compare": "within", "paper_value": None, "judge_on": {},
             "status": "measured"}
#: declared after measurement: listed in the report, not refused (they do not move the
#: criterion; they say which noise band and margin apply)
_DECLARED = {"noise": [], "noise_units": [], "margin": ""}


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        r = subprocess.run(["git", "-C", str(root), *args], input=stdin, capture_output=True,
                           timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        raise ClaimError(f"claims: git {args[0]} failed: {e}") from None
    if r.returncode:
        last = (r.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
        raise ClaimError(f"claims: git {args[0]} failed: {last}")
    return r.stdout


def _fields(d) -> dict | None:
    if not isinstance(d, dict) or not isinstance(d.get("id"), str):
        return None
    out = {k: d.get(k, v) for k, v in {**_DEFAULTS, **_DECLARED}.items()}
    out["explicit"] = {k for k in _DEFAULTS if k in d}
    out["renamed_from"] = d.get("renamed_from", "")
    return out


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
    return a == b


def _report_values(text: str) -> dict[str, str]:
    """{claim id: our figure} from a rendered ledger (any version of render()'s tables): the
    claims that showed a measured figure (not '–', not untestable or pending)."""
    out, cols = {}, None
    for line in text.splitlines():
        if not line.startswith("|"):
            cols = None if not line.strip() else cols
            continue
        cells = [x.strip() for x in re.split(r"(?<!\\)\|", line)[1:-1]]
        if cells and cells[0] == "id":
            cols = {name: i for i, name in enumerate(cells)}
            continue
        if not cells or set(cells[0]) <= set("-: "):
            continue
        if not cols or "ours" not in cols or len(cells) <= max(cols.values()):
            continue
        ours = cells[cols["ours"]]
        verdict = cells[cols["verdict"]] if "verdict" in cols else ""
        if ours not in ("", "–", "-") and "untestable" not in verdict and \
                "pending" not in verdict:
            out[cells[0]] = ours
    return out


def history(folder: str | Path, report: str | Path, claims: list[Claim] | None = None
            ) -> list[Change]:
    """Every change of a pre-registered field (``tolerance``, ``compare``, ``paper_value``,
    ``judge_on``) of a claim made in a commit (or, with ``claims`` judged, in the working
    tree) at which the ledger ``report`` already showed the claim's measured figure -- the
    value was in view when the comparison changed.  Setting a field that a pending claim left
    at its default is its registration, not a change.  Each change carries the matching
    ``[[claim.revision]]`` justification, if any.  ``ClaimError`` when ``folder`` has no git
    history (not a repository, or a shallow clone)."""
    folder, report = Path(folder).resolve(), Path(report).resolve()
    try:
        root = Path(_git(folder, "rev-parse", "--show-toplevel").decode().strip())
        shallow = _git(root, "rev-parse", "--is-shallow-repository").decode().strip()
    except (OSError, subprocess.SubprocessError, ClaimError) as e:
        raise ClaimError(f"claims: no git history for {folder} "
                         f"({str(e).removeprefix('claims: ')})") from None
    if shallow == "true":
        raise ClaimError(f"claims: {root} is a shallow clone; the pre-registration check "
                         "needs the ledger's whole history (git fetch --unshallow)")
    try:
        crel = folder.relative_to(root).as_posix()
        rrel = report.relative_to(root).as_posix()
    except ValueError:
        raise ClaimError(f"claims: {folder} and {report} must be in one git repository") \
            from None
    log = _git(root, "log", "--reverse", "--format=%H %cs", "--", crel, rrel).decode()
    commits = [tuple(x.split()) for x in log.splitlines() if x.strip()]
    versions = []                      # (commit, date, {id: (file, fields)}, {id: value})
    for h, date in commits:
        prefix = "" if crel == "." else crel + "/"
        names = _git(root, "ls-tree", "-z", "--name-only", h, "--", prefix or ".") \
            .decode(errors="replace").split("\0")
        blobs = [f"{h}:{n}" for n in names if n.endswith(".toml") and "/" not in
                 n[len(prefix):] and n.startswith(prefix)]
        texts = _cat(root, blobs + [f"{h}:{rrel}"])
        fields: dict = {}
        for spec in blobs:
            for d in _claim_tables(texts.get(spec) or ""):
                f = _fields(d)
                if f:
                    fields[d["id"]] = (spec.rsplit("/", 1)[-1], f)
        versions.append((h[:7], date, fields, _report_values(texts.get(f"{h}:{rrel}") or "")))
    if claims is not None:
        now = {}
        for c in claims:
            d = {k: getattr(c, k) for k in list(_DEFAULTS) + list(_DECLARED)}
            d["id"], d["renamed_from"] = c.id, c.renamed_from
            f = _fields(d)
            f["explicit"] = set(_DEFAULTS)
            now[c.id] = (c.file, f)
        values = {c.id: "; ".join(f"{x.label} {_f(c, x.value)}" for x in c.cells
                                  if x.value is not None)
                  for c in claims if c.verdict not in ("untestable here", "pending", "")}
        versions.append(("working tree", datetime.date.today().isoformat(), now,
                         {k: v for k, v in values.items() if v}))
    return _changes(versions, {c.id: c for c in claims or ()})


def _claim_tables(text: str) -> list:
    """The ``[[claim]]`` tables of a ledger file as committed.  A version that is not valid
    TOML (a key given twice, as one commit had) is read claim by claim and line by line, the
    last value of a key winning: its fields still count in the history."""
    try:
        raw = tomllib.loads(text)
        items = raw.get("claim", [])
        return items if isinstance(items, list) else []
    except ValueError:
        pass
    out = []
    for block in re.split(r"^\[\[claim\]\]\s*$", text, flags=re.M)[1:]:
        d: dict = {}
        for line in block.splitlines():
            if line.startswith("["):
                break
            try:
                d.update(tomllib.loads(line))
            except ValueError:
                continue
        out.append(d)
    return out


def _cat(root: Path, specs: list[str]) -> dict[str, str]:
    """The text of each ``commit:path`` (None for a path missing at that commit)."""
    out = _git(root, "cat-file", "--batch", stdin="".join(s + "\n" for s in specs).encode())
    texts, pos = {}, 0
    for spec in specs:
        nl = out.index(b"\n", pos)
        head = out[pos:nl].decode(errors="replace").split()
        pos = nl + 1
        if len(head) < 3 or head[1] == "missing":
            texts[spec] = None
            continue
        size = int(head[2])
        texts[spec] = out[pos:pos + size].decode("utf-8", errors="replace")
        pos += size + 1
    return texts


def _changes(versions, current: dict) -> list[Change]:
    seen: dict = {}                    # id -> last fields
    measured: set = set()              # ids that have shown a measured figure
    out: list[Change] = []
    for commit, date, fields, values in versions:
        before = set(measured)         # measured before this version
        measured |= set(values)
        for cid, (file, f) in fields.items():
            prev = seen.get(cid)
            if prev is None and f["renamed_from"] in seen:     # a renamed claim: its history
                prev = seen[f["renamed_from"]]
                if f["renamed_from"] in measured:
                    measured.add(cid)
                    before.add(cid) if f["renamed_from"] in before else None
            seen[cid] = f
            if prev is None or cid not in measured:
                continue
            for k in list(_DEFAULTS) + list(_DECLARED):
                if _same(prev[k], f[k]):
                    continue
                # a pending claim that never showed a figure sets a field it had left at its
                # default: that is its registration
                if k in _DEFAULTS and prev["status"] != "measured" and cid not in before \
                        and k not in prev["explicit"]:
                    continue
                # being judged is not a change of criterion; leaving judgement is
                if k == "status" and prev[k] != "measured":
                    continue
                out.append(Change(cid, file, commit, date, k, prev[k], f[k],
                                  values.get(cid, "")))
    chains: dict = {}
    for ch in out:
        chains.setdefault((ch.id, ch.field), []).append(ch)
    for (cid, k), chain in chains.items():
        c = current.get(cid)
        if k in _DECLARED:
            for ch in chain:
                ch.status = "declared"
        elif c is None:
            for ch in chain:
                ch.status = "removed"
        elif _same(getattr(c, k), chain[0].old):
            for ch in chain:
                ch.status = "reverted"
        else:
            for ch in chain[:-1]:
                ch.status = "superseded"
    for ch in out:                     # the written justifications
        c = current.get(ch.id)
        for r in (c.revision if c else []):
            if r["field"] == ch.field and _same(r["new"], ch.new) and \
                    ("old" not in r or _same(r["old"], ch.old)) and r.get("why", "").strip():
                ch.why = r["why"].strip()
                break
    return out


def strict_problems(ledger: Ledger, changes: list[Change]) -> list[str]:
    """What ``tcgen claims --strict`` refuses, one line each: a measured claim without its
    kind of evidence, a failing or mixed claim without its cause, a pre-registered field
    changed after measurement, and still in force, without a written justification (a change
    later reverted to the registered value, or superseded, stays listed in the report)."""
    out = []
    for c in ledger.claims:
        if c.status == "measured" and not c.evidence:
            out.append(f"{c.file}: {c.id}: evidence missing ({', '.join(EVIDENCE)})")
        if c.noise and not c.margin and _discrete(c):
            out.append(f"{c.file}: {c.id}: a discrete value (argmax/above/below, or an exact "
                       "criterion) with noise needs a margin expression (how far the figures "
                       "must move to change it)")
        if c.evidence == "proxy" and not c.method:
            out.append(f"{c.file}: {c.id}: a proxy names its method ([[method]], the sibling "
                       "rule)")
        if c.verdict in ("fails", "mixed") or c.decided in ("fails", "mixed"):
            if not c.cause:
                out.append(f"{c.file}: {c.id}: {c.decided or c.verdict} without cause and "
                           "why_fails")
    for ch in changes:
        if not ch.why and ch.status == "in force":
            out.append(f"{ch.file}: {ch.id}: {ch.field} changed {ch.old!r} -> {ch.new!r} at "
                       f"{ch.commit} ({ch.date}) after it was measured, without a "
                       "[[claim.revision]] justification")
    return out


# -- the report ------------------------------------------------------------------------------
_EVIDENCE_TEXT = {
    "hardware": "measured hardware (PPA of generated RTL, our flow)",
    "conformance": "conformance (built to the paper's timing or structure)",
    "arithmetic": "arithmetic (the paper's own numbers re-derived)",
    "proxy": "model proxy (a model standing in for the paper's measurement)",
    "note": "note-derived (a figure of the engineering notes, not stated by the paper)",
    "": "evidence not stated",
}


def render(claims: list[Claim], command: str, ledger: Ledger | None = None,
           changes: list[Change] | None = None, noise_note: str = "") -> str:
    """``reports/claims.md``: the headline by verdict and by kind of evidence, then per family
    the claims (criterion and margin, noise band, why a claim fails), the methods and what is
    left out, then the pre-registration record (``changes``; None: not checked)."""
    fams = list(dict.fromkeys(c.family for c in claims))
    counts = {v: sum(c.verdict == v for c in claims) for v in VERDICTS}
    L = ["# Claims ledger", "",
         f"Regenerate: `.venv/bin/{command}`.  Date {today()}.  Claims: `claims/*.toml`; "
         "measured figures: the sweep results under reports/ (`<sweep>.json`, each with its "
         "own command, liberties and tool versions) and the family models named per claim; "
         "noise bands: reports/noise.json. Verdicts are computed (tcgen/claims.py, "
         "docs/claims.md): each claim's criterion was fixed before its measurement (changes "
         "made later are listed under *Pre-registration* with their written reasons); *holds "
         "as a ratio* = a ratio between the same two designs, measured hardware, on each "
         "library, within the criterion; *within noise* = the margin to the criterion's edge "
         "is inside the flow's measured noise band; absolute figures of another process node "
         "are never compared.", "",
         f"**{len(claims)} claims**: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n)
         + "."]
    moved = [c for c in claims if c.verdict == "within noise"]
    unmeasured = [c for c in claims if c.noise and c.cells and
                  any(x.judged and x.band is None for x in c.cells)]
    L += ["", f"Noise: {len(moved)} verdict(s) within the flow's noise band" +
          (" (" + ", ".join(f"{c.id}: {c.decided} without noise" for c in moved) + ")"
           if moved else "") + f"; {sum(bool(c.noise) for c in claims)} claims name the "
          "designs and metrics their value depends on, " +
          f"{len(unmeasured)} of them on a design whose band is not measured yet." +
          (f" {noise_note}" if noise_note else "")]
    kinds = list(EVIDENCE) + [""]
    L += ["", "By kind of evidence (docs/claims.md, \"Evidence\"):", "",
          "| evidence | claims | " + " | ".join(VERDICTS) + " |",
          "|---|---:|" + "---:|" * len(VERDICTS)]
    for k in kinds:
        cs = [c for c in claims if c.evidence == k]
        if cs:
            L.append(f"| {_EVIDENCE_TEXT[k]} | {len(cs)} | " + " | ".join(
                str(sum(c.verdict == v for c in cs)) for v in VERDICTS) + " |")
    L += ["", "By family:", "",
          "| family | claims | " + " | ".join(VERDICTS) + " | left out |",
          "|---|---:|" + "---:|" * (len(VERDICTS) + 1)]
    infos = {f.family: f for f in (ledger.files if ledger else [])}
    for f in fams:
        cs = [c for c in claims if c.family == f]
        lo = len(infos[f].left_out) if f in infos else 0
        L.append(f"| {f} | {len(cs)} | " + " | ".join(
            str(sum(c.verdict == v for c in cs)) for v in VERDICTS) + f" | {lo} |")
    fails = [c for c in claims if c.decided in ("fails", "mixed")]
    if fails:
        L += ["", "Why each claim fails (cause: *design* = ours against the authors' design, "
              "*flow* = node, library, activity, clock basis or synthesis choices, *paper* = "
              "the paper's own numbers, *open* = not settled yet):", "",
              "| id | verdict | cause | why | meets the criterion under another flow choice "
              "(a cell not judged, or a view declared a flow choice) |", "|---|---|---|---|---|"]
        for c in fails:
            L.append(f"| {c.id} | {c.verdict} | {c.cause or '**not stated**'} | "
                     f"{_cell(c.why_fails) or '–'} | {_cell(c.crossing) or 'no'} |")
    for f in fams:
        L += ["", f"## {f}", "",
              "| id | where | claim | evidence | paper | ours | verdict | noise band | "
              "how measured |", "|---|---|---|---|---|---|---|---|---|"]
        for c in (c for c in claims if c.family == f):
            paper = c.paper_text or (f"{c.paper_value:g}{c.unit}" if c.paper_value is not None
                                     else "")
            ours = "; ".join(_ours(c, x) for x in c.cells) or "–"
            how = c.measure or (f"sweep {c.sweep}: `{c.value}`" if c.source == "sweep"
                                else f"`{c.call}`: `{c.value}`" if c.call else "–")
            if c.method:
                how += f" (method {c.method})"
            if c.command:
                how += f" — `{c.command}`"
            verdict = f"**{c.verdict}**" + (f" ({c.reason})" if c.reason else "")
            if c.decided in ("fails", "mixed") and c.why_fails:
                verdict += f"; why ({c.cause}): {c.why_fails}"
            note = f" Note: {c.note}" if c.note else ""
            bands = "; ".join(f"{x.label} {x.band_text}" for x in c.cells
                              if x.judged and x.band_text) or "–"
            L.append(f"| {c.id} | {c.where} | {_cell(c.claim)}{_cell(note)} | "
                     f"{c.evidence or '–'} | {_cell(paper)} | {_cell(ours)} | "
                     f"{_cell(verdict)} | {_cell(bands)} | {_cell(how)} |")
        info = infos.get(f)
        if info and info.methods:
            L += ["", f"Methods of {f} (the sibling rule: a method judges every claim of the "
                  "paper it can; the siblings it cannot judge are left out below with the "
                  "reason):", "", "| method | what | judges | siblings left out |",
                  "|---|---|---|---|"]
            for m in info.methods:
                sib = [lo.what for lo in info.left_out if lo.method == m.id]
                L.append(f"| {m.id} | {_cell(m.what)} | {', '.join(m.judges)} | "
                         f"{_cell('; '.join(sib)) or 'none'} |")
        if info and info.left_out:
            L += ["", f"Left out of {f}'s ledger ({len(info.left_out)} statements of the "
                  "paper, each with the reason):", "", "| where | statement | why not judged |",
                  "|---|---|---|"]
            for lo in info.left_out:
                why = lo.why + (f" (method {lo.method})" if lo.method else "")
                L.append(f"| {_cell(lo.where)} | {_cell(lo.what)} | {_cell(why)} |")
    L += ["", "## Pre-registration", ""]
    if changes is None:
        L.append("Not checked (no git history given).")
    declared = [ch for ch in changes or [] if ch.status == "declared"]
    changes = None if changes is None else [ch for ch in changes if ch.status != "declared"]
    if changes is None:
        pass
    elif not changes:
        L.append("No tolerance, comparison, paper value, judged cell or status of any claim "
                 "changed after the claim had a measured value (git history of claims/ and "
                 "this ledger).")
    else:
        L += [f"{len(changes)} change(s) of a pre-registered field (tolerance, compare, "
              "paper_value, judge_on, or a measured claim's status) made once the claim had "
              "a measured value (git history of claims/ and this ledger; `tcgen claims "
              "--strict` refuses one still in force without a written `[[claim.revision]]`):",
              "",
              "| id | commit | date | field | old → new | ours at the time | status | "
              "justification |", "|---|---|---|---|---|---|---|---|"]
        for ch in changes:
            L.append(f"| {ch.id} | {ch.commit} | {ch.date} | {ch.field} | "
                     f"{_cell(_show(ch.old))} → {_cell(_show(ch.new))} | "
                     f"{_cell(ch.value_then) or '–'} | {ch.status} | "
                     f"{_cell(ch.why) or ('**none**' if ch.status == 'in force' else '–')} |")
    if declared:
        by: dict = {}
        for ch in declared:
            by.setdefault((ch.id, ch.commit, ch.date), []).append(ch.field)
        L += ["", f"Declared after measurement ({len(by)} claim versions): the designs and "
              "metrics whose noise band applies (`noise`, `noise_units`) and the `margin` of a "
              "discrete value. They do not move a criterion; they decide whether a margin is "
              "inside the flow's measured noise, and are listed here so that a reader can "
              "see when each was set:", "", "| id | commit | date | fields |", "|---|---|---|---|"]
        for (cid, commit, date), fields in by.items():
            L.append(f"| {cid} | {commit} | {date} | {', '.join(fields)} |")
    return "\n".join(L) + "\n"


def _show(v) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {v[k]!r}" for k in v) + "}"
    return "–" if v is None else (f"{v:g}" if isinstance(v, float) else str(v))


def _ours(c: Claim, x: Cell) -> str:
    s = f"{x.label} {_f(c, x.value)}"
    if x.views:
        s += " (" + ", ".join(f"{lab}: {_f(c, v)}" for lab, v in x.views) + ")"
    return s + ("" if x.judged else " (not judged)")


def _f(c: Claim, v):
    return "–" if v is None else c.fmt.format(v) + (c.unit if c.unit in ("×", "%") else "")


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")
