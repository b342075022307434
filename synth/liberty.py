"""Liberty libraries: resolve a name or path, hash it, decompress it for Yosys, describe its cells.

``resolve("osu018")`` (the default, Debian package ``qflow-tech-osu018``), ``resolve("nangate45")``
and ``resolve("sky130hd")`` (from ``<repo>/../shared/liberty/`` when that folder exists) or
``resolve("path/to/any.lib[.gz]")``.  The result holds

- ``path``: a plain-text copy (a ``.lib.gz`` is decompressed once into ``build/ppa/lib/``,
  because Yosys 0.23 cannot read gzip), and ``sha256`` of that text (the cache key);
- ``map_path``: the copy Yosys maps to: the same text with ``dont_use : true;`` added to cells
  that must not appear in ordinary logic (sky130's ``lpflow_*`` power-domain cells and
  ``probe*`` cells; ABC honours ``dont_use``, Yosys 0.23's ``abc`` has no ``-dont_use``);
- ``models``: the vendor Verilog cell models for gate-level simulation, or ``()``;
- ``cells``: name -> :class:`Cell` (area, pins with direction/function, flip-flop groups),
  from a small line scanner (enough for the attributes the flow needs; Yosys and OpenSTA parse
  the file in full and any error they report is raised as one line).
"""
from __future__ import annotations

import gzip
import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from tcgen.hw.files import (build_root, locked, usable_dir,  # noqa: F401  (re-exported)
                            write_atomic)

from .tools import FlowInputError

ROOT = Path(__file__).resolve().parent.parent
#: the flow's cache (netlists, results, liberty copies, locks): ``TCGEN_PPA_CACHE`` if set (a
#: private cache, e.g. for a test), else ``ppa/`` under tcgen's build folder
#: (tcgen.hw.files.build_root: the checkout's build/, TCGEN_BUILD_DIR, or ./build/tcgen)
BUILD = Path(os.environ.get("TCGEN_PPA_CACHE") or build_root() / "ppa").absolute()
SHARED_LIBERTY = ROOT.parent / "shared" / "liberty"
_CHECKED: set = set()


def cache_root() -> Path:
    """:data:`BUILD`, checked once per process to be a folder the flow can write in (made if
    absent): :class:`tcgen.hw.files.StorageError` naming ``TCGEN_PPA_CACHE`` where it is set
    (one line, exit 2), before any tool runs or any file is written."""
    if BUILD not in _CHECKED:
        usable_dir(BUILD, "the flow cache (TCGEN_PPA_CACHE)" if os.environ.get("TCGEN_PPA_CACHE")
                   else "the flow cache")
        _CHECKED.add(BUILD)
    return BUILD
OSU018_DIR = Path("/usr/share/qflow/tech/osu018")

__all__ = ["Liberty", "LibertyError", "Cell", "Pin", "resolve", "KNOWN",
           "shared_liberty_available"]


class LibertyError(FlowInputError):
    """A liberty that is unknown, missing, unreadable or does not parse; the message names it
    as the user gave it (a known name or the path as typed), never as a resolved path."""

# name -> (liberty file, Verilog cell model files in compile order, dont_use patterns)
KNOWN = {
    "osu018": (OSU018_DIR / "osu018_stdcells.lib", (OSU018_DIR / "osu018_stdcells.v",), ()),
    "nangate45": (SHARED_LIBERTY / "nangate45_typ.lib.gz", (), ()),
    "sky130hd": (SHARED_LIBERTY / "sky130hd_tt.lib.gz",
                 (SHARED_LIBERTY / "sky130_hd_primitives.v.gz",
                  SHARED_LIBERTY / "sky130_hd_cells.v.gz"),
                 ("*__lpflow_*", "*__probe_p_*", "*__probec_p_*")),
}
# Verilog defines the vendor models need (sky130: the functional, unpowered views).
MODEL_DEFINES = {"sky130hd": ("FUNCTIONAL",)}


def shared_liberty_available() -> bool:
    return all(KNOWN[n][0].is_file() for n in ("nangate45", "sky130hd"))


@dataclass(frozen=True)
class Pin:
    name: str
    direction: str                 # input, output, inout, internal
    function: str | None = None
    clock: bool = False
    capacitance: float | None = None   # input pin capacitance, library units


@dataclass(frozen=True)
class Cell:
    name: str
    area: float
    pins: tuple[Pin, ...]
    ff: dict | None = None         # {"outputs": (IQ, IQN), next_state, clocked_on, clear, preset}
    latch: dict | None = None
    dont_use: bool = False

    @property
    def inputs(self):
        return [p for p in self.pins if p.direction == "input"]

    @property
    def outputs(self):
        return [p for p in self.pins if p.direction == "output"]

    @property
    def sequential(self) -> bool:
        return self.ff is not None or self.latch is not None


@dataclass(frozen=True)
class Liberty:
    name: str                       # short name (known name or file stem)
    source: Path                    # the file as given / resolved
    path: Path                      # plain-text copy (readable by Yosys and OpenSTA)
    map_path: Path                  # plain-text copy with dont_use marks (for Yosys mapping)
    sha256: str
    models: tuple[Path, ...]        # plain-text Verilog cell models, () if none
    model_defines: tuple[str, ...]
    library: str                    # the library's own name
    time_unit: str
    cells: dict = field(repr=False, compare=False, default_factory=dict)
    cap_unit_ff: float = 1000.0     # one library capacitance unit in fF (capacitive_load_unit)
    flow_dont_use: frozenset = field(repr=False, compare=False, default=frozenset())

    def buffer_cell(self) -> tuple[str, float]:
        """(name, input capacitance in fF) of the smallest non-inverting buffer ABC may use.

        It is the driving cell and, ×4, the output load of the ``abc -constr`` file that turns
        on ABC's buffering and gate sizing (:mod:`tcgen.synth.yosys`).  Clock and delay buffers are
        taken only if the library has no plain one; ``ValueError`` if it has none at all."""
        found = []
        for c in self.cells.values():
            if c.sequential or c.dont_use or c.name in self.flow_dont_use:
                continue
            if not _is_buffer(c):
                continue
            ins = c.inputs
            special = any(t in c.name.lower() for t in ("clk", "dly", "dlygate", "probe"))
            found.append((special, c.area, c.name, ins[0].capacitance * self.cap_unit_ff))
        if not found:
            raise LibertyError(f"liberty {self.name!r}: no buffer cell (one input, function = "
                             "that input); ABC's buffering needs one")
        _, _, name, cap = min(found)
        return name, cap

    def describe(self) -> dict:
        return {"name": self.name, "path": str(self.source), "sha256": self.sha256,
                "library": self.library, "cell_models": [str(m) for m in self.models]}


def _is_buffer(c: Cell) -> bool:
    ins, outs = c.inputs, c.outputs
    return (len(ins) == 1 and len(outs) == 1 and ins[0].capacitance is not None
            and (outs[0].function or "").replace(" ", "").strip("()") == ins[0].name)


def check_mappable(name: str, cells: dict, dont: set = frozenset()):
    """Refuse (:class:`LibertyError`, before any tool runs) a liberty ABC cannot map logic onto.
    ABC reads only the combinational cells whose output has a ``function``; it needs a buffer
    (the driving cell of tcgen's ``abc -constr``), an inverter and at least one gate of two or
    more inputs.  Without them Yosys stops with "Can't open ABC output file" and names neither
    the cause nor the cells."""
    comb = [c for c in cells.values() if not c.sequential and not c.dont_use
            and c.name not in dont and c.outputs]
    with_fn = [c for c in comb if len(c.outputs) >= 1 and all(o.function for o in c.outputs)]
    lacking = sorted(c.name for c in comb if c not in with_fn)
    buffers = [c for c in with_fn if _is_buffer(c)]
    inverters = [c for c in with_fn if len(c.inputs) == 1 and not _is_buffer(c)]
    gates = [c for c in with_fn if len(c.inputs) >= 2]
    missing = [what for what, found in (("buffer cell (one input, function = that input, with "
                                         "an input capacitance)", buffers),
                                        ("inverter", inverters),
                                        ("gate of two or more inputs", gates)) if not found]
    if not missing:
        return
    have = ", ".join(sorted(c.name for c in with_fn)[:6]) or "none"
    lack = (f"; {len(lacking)} lack a `function` ({', '.join(lacking[:5])}"
            f"{', ...' if len(lacking) > 5 else ''})" if lacking else "")
    raise LibertyError(f"liberty {name!r}: ABC cannot map logic onto it: it has no "
                       f"{', no '.join(missing)} among its {len(with_fn)} combinational "
                       f"cells with a `function` ({have}){lack}")


# -- resolution ------------------------------------------------------------------------------
def resolve(spec: str | os.PathLike | None = None) -> Liberty:
    """A :class:`Liberty` from a known name or a path; ``LibertyError`` naming the problem."""
    spec = "osu018" if spec is None else spec
    if isinstance(spec, Liberty):
        return spec
    text_spec = str(spec)
    if text_spec in KNOWN:
        src, models, dont_use = KNOWN[text_spec]
        if not src.is_file():
            where = ("install the Debian package qflow-tech-osu018 (scripts/setup.sh)"
                     if text_spec == "osu018" else f"expected {src}; the folder ../shared/liberty/"
                     " next to the repository is not present")
            raise LibertyError(f"liberty {text_spec!r} is not available: {where}")
        name = text_spec
    else:
        src = Path(text_spec)
        looks_like_path = os.sep in text_spec or text_spec.endswith((".lib", ".lib.gz"))
        if not looks_like_path:
            raise LibertyError(f"unknown liberty {text_spec!r}; use one of "
                             f"{', '.join(KNOWN)} or a path to a .lib or .lib.gz file")
        if not text_spec.endswith((".lib", ".lib.gz")):
            raise LibertyError(f"liberty {text_spec!r}: a liberty file must end in .lib or .lib.gz")
        if not src.is_file():
            raise LibertyError(f"liberty file {text_spec} does not exist")
        src = src.resolve()
        name, models, dont_use = _stem(src), (), ()
        for kname, (kpath, kmodels, kdont) in KNOWN.items():   # a known file given by path
            if kpath.is_file() and kpath.resolve() == src:
                name, models, dont_use = kname, kmodels, kdont
    return _load(name, src, models, dont_use, shown=text_spec)


def _stem(p: Path) -> str:
    n = p.name
    for suffix in (".lib.gz", ".lib"):
        if n.endswith(suffix):
            return n[: -len(suffix)]
    return n


def _read_text(src: Path, shown: str | None = None) -> str:
    try:
        raw = src.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return raw.decode("utf-8", errors="replace")
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise LibertyError(f"liberty file {shown or src} cannot be read: "
                           f"{getattr(e, 'strerror', None) or e}") from None


_memo: dict = {}


def _load(name: str, src: Path, models, dont_use, shown: str | None = None) -> Liberty:
    st = src.stat()
    memo_key = (str(src), st.st_size, st.st_mtime_ns)
    if memo_key in _memo:
        return _memo[memo_key]
    text = _read_text(src, shown)
    sha = hashlib.sha256(text.encode()).hexdigest()
    library, time_unit, cells, cap_unit_ff = parse(text, shown or src)
    dont = {c for c in cells if any(fnmatchcase(c, pat) for pat in dont_use)}
    check_mappable(name, cells, dont)      # refused before anything is copied into the cache
    lib_dir = cache_root() / "lib" / sha[:16]
    # The copies are named by tools' scripts (Yosys, OpenSTA's Tcl): a file name the user chose
    # ("my lib}; exec ...".lib) must not reach them.  The copy's name is made of safe characters.
    safe = _safe_name(name)
    plain = lib_dir / f"{safe}.lib"
    mapped = lib_dir / f"{safe}.map.lib"
    with locked(lib_dir / ".lock"):
        if not plain.is_file():
            write_atomic(plain, text)
        if not mapped.is_file():
            write_atomic(mapped, mark_dont_use(text, dont) if dont else text)
        plain_models = []
        for m in models:
            if not m.is_file():
                raise LibertyError(f"liberty {name!r}: cell model {m} is missing")
            out = lib_dir / _stem_v(m)
            if not out.is_file():
                write_atomic(out, _read_text(m))
            plain_models.append(out)
    lib = Liberty(name=name, source=src, path=plain, map_path=mapped, sha256=sha,
                  models=tuple(plain_models), model_defines=MODEL_DEFINES.get(name, ()),
                  library=library, time_unit=time_unit, cells=cells, cap_unit_ff=cap_unit_ff,
                  flow_dont_use=frozenset(dont))
    _memo[memo_key] = lib
    return lib


def _safe_name(name: str) -> str:
    """``name`` with every character but ASCII letters, digits, ``.``, ``-`` and ``_`` replaced
    by ``_`` (a file name a Yosys or Tcl script can hold without quoting)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".-") or "liberty"


def _stem_v(p: Path) -> str:
    return p.name[:-3] if p.name.endswith(".gz") else p.name


# -- a small liberty scanner -----------------------------------------------------------------
_STMT = re.compile(r'([^{};]*)([{};])')
_HEAD = re.compile(r'^([A-Za-z_]\w*)\s*\((.*)\)$', re.S)
_ATTR = re.compile(r'^([A-Za-z_]\w*)\s*:\s*(.*)$', re.S)
_CAP_UNIT = re.compile(r'^capacitive_load_unit\s*\(\s*([0-9.eE+-]+)\s*,\s*"?(\w+)"?\s*\)$')
_CAP_SCALE = {"ff": 1.0, "pf": 1000.0}
_TIME_UNIT = re.compile(r"^[0-9]+(\.[0-9]*)?\s*(fs|ps|ns|us)$")


def _unquote(v: str) -> str:
    v = v.strip()
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] == '"' else v


def parse(text: str, src: Path | str = "<liberty>"):
    """(library name, time unit, {cell name: Cell}, capacitance unit in fF); ``ValueError`` if
    it is not a liberty.

    Splits the text into statements (``head {``, ``attr : value ;``, ``}``) and keeps the
    attributes the flow needs; everything else (tables, templates) is skipped."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S).replace("\\\n", " ")
    stack: list[str] = []
    library, time_unit = None, "1ns"
    cap_unit_ff = 1000.0                       # liberty default: 1 pF
    cells: dict[str, Cell] = {}
    cur = pin = seq = None
    pos = 0
    for m in _STMT.finditer(text):
        body, delim = m.group(1).strip(), m.group(2)
        pos = m.end()
        if delim == "{":
            h = _HEAD.match(body)
            if not h:
                raise LibertyError(f"liberty {src}: cannot parse group header {body[:60]!r}; "
                                 "the file does not parse")
            kind, args = h.group(1), [_unquote(a) for a in h.group(2).split(",")]
            depth = len(stack)
            if depth == 0:
                if kind != "library":
                    raise LibertyError(f"liberty {src}: top-level group is {kind!r}, not "
                                     "'library'; not a liberty file")
                library = args[0]
            elif depth == 1 and kind == "cell":
                cur = {"name": args[0], "area": 0.0, "pins": [], "ff": None, "latch": None,
                       "dont_use": False}
            elif depth == 2 and cur is not None and kind in ("pin", "pg_pin"):
                pin = {"name": args[0], "direction": "internal", "function": None,
                       "clock": False, "pg": kind == "pg_pin", "capacitance": None}
            elif depth == 2 and cur is not None and kind in ("ff", "latch"):
                seq = {"outputs": tuple(args)}
                cur[kind] = seq
            stack.append(kind)
        elif delim == "}":
            if body:
                raise LibertyError(f"liberty {src}: statement {body[:60]!r} lacks a ';'")
            if not stack:
                raise LibertyError(f"liberty {src}: unbalanced '}}'; the file does not parse")
            kind = stack.pop()
            depth = len(stack)
            if depth == 1 and kind == "cell" and cur is not None:
                cells[cur["name"]] = Cell(name=cur["name"], area=cur["area"],
                                          pins=tuple(cur["pins"]), ff=cur["ff"],
                                          latch=cur["latch"], dont_use=cur["dont_use"])
                cur = None
            elif depth == 2 and pin is not None:
                if not pin["pg"]:
                    cur["pins"].append(Pin(pin["name"], pin["direction"], pin["function"],
                                           pin["clock"], pin["capacitance"]))
                pin = None
            elif depth == 2 and kind in ("ff", "latch"):
                seq = None
            if not stack:
                break
        else:   # ';'
            if not body:
                continue
            if not stack:
                raise LibertyError(f"liberty {src}: {body[:60]!r} is outside a library group; "
                                 "not a liberty file")
            a = _ATTR.match(body)
            if not a:
                u = _CAP_UNIT.match(body) if len(stack) == 1 else None
                if u:
                    unit = u.group(2).lower()
                    if unit not in _CAP_SCALE:
                        raise LibertyError(f"liberty {src}: capacitive_load_unit {unit!r} is not "
                                         "ff or pf")
                    try:
                        cap_unit_ff = float(u.group(1)) * _CAP_SCALE[unit]
                    except ValueError:
                        cap_unit_ff = math.nan
                    if not (math.isfinite(cap_unit_ff) and cap_unit_ff > 0):
                        raise LibertyError(f"liberty {src}: capacitive_load_unit "
                                           f"{u.group(1)!r} is not a positive number")
                continue                      # other complex attributes: name (args) ;
            key, val = a.group(1), _unquote(a.group(2))
            depth = len(stack)
            if depth == 1 and key == "time_unit":
                if not _TIME_UNIT.match(val):
                    raise LibertyError(f"liberty {src}: time_unit {val!r} is not a time unit "
                                       "(1ps, 10ps, 100ps, 1ns, ...)")
                time_unit = val
            elif depth == 2 and cur is not None:
                if key == "area":
                    try:
                        cur["area"] = float(val)
                    except ValueError:
                        cur["area"] = math.nan
                    if not (math.isfinite(cur["area"]) and cur["area"] >= 0):
                        raise LibertyError(f"liberty {src}: area {val!r} of cell {cur['name']} "
                                           "is not a non-negative number")
                elif key == "dont_use":
                    cur["dont_use"] = val.lower() == "true"
            elif depth == 3 and pin is not None:
                if key in ("direction", "function"):
                    pin[key] = val
                elif key == "clock":
                    pin["clock"] = val.lower() == "true"
                elif key == "capacitance":
                    try:
                        pin["capacitance"] = float(val)
                    except ValueError:
                        pass                  # not a plain number: leave it unknown
            elif depth == 3 and seq is not None:
                seq[key] = val
    if library is None:
        raise LibertyError(f"liberty {src}: no 'library (...) {{' group; not a liberty file")
    if stack:
        raise LibertyError(f"liberty {src}: {len(stack)} group(s) not closed at end of file "
                         f"(innermost: {stack[-1]}); the file does not parse")
    if text[pos:].strip():
        raise LibertyError(f"liberty {src}: text after the end of the library group; "
                         "the file does not parse")
    if not cells:
        raise LibertyError(f"liberty {src}: library {library} defines no cells")
    return library, time_unit, cells, cap_unit_ff


def mark_dont_use(text: str, names: set[str]) -> str:
    """``text`` with ``dont_use : true ;`` added as the first attribute of each cell in ``names``."""
    def add(m):
        name = m.group(2)
        return m.group(0) + ("\n    dont_use : true ;" if name in names else "")
    return re.sub(r'(^|\n)\s*cell\s*\(\s*"?([^")\s]+)"?\s*\)\s*\{', add, text)
