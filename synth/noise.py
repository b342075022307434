"""The flow's own noise: semantically neutral perturbations of one design, and the band
(min / median / max) of its figures under them (``tcgen ppa --noise N``; docs/ppa.md, "Noise").

Yosys and ABC are deterministic, but not invariant: the same logic maps to a different
netlist when the Verilog text is laid out differently.  Yosys's hash containers are keyed by
``IdString`` *indices* (the order in which names were first created), so anything that changes
which names exist, or in which order they are read, changes the iteration order of passes and
the AIG ABC is handed.  Each perturbation below changes exactly that and nothing of the logic:

``order``  the modules of the text permuted (seeded; the top stays a module of the text, all
           modules are kept).  Module order carries no meaning in Verilog: every module is a
           separate definition, and ``hierarchy -top`` elaborates from the top whatever the
           order.  Needs two modules or more and a text without preprocessor directives.
``pad``    an unused module prepended: a small adder (``tcgen_noise_pad_<s>``, ``s`` internal
           wires, a name the text does not use).  Nothing instantiates it, so ``hierarchy
           -check -top TOP`` removes it before synthesis; only the names it created first
           remain.  (Appended it changes nothing at all: the design's names are created before
           it is read -- measured on fp_mul and lut_dp4 -- so it is always prepended.)
``decl``   the declarations at the head of every module (``input``/``output``/``wire``/
           ``reg`` lines, each with its attribute lines) permuted (seeded), except that the
           lines declaring one name keep their order (a port's direction before its net type,
           which Yosys requires).  A declaration carries no logic and every one of them
           precedes every statement, so every name is declared before use in any order; the
           port list in the module header is not touched.
``fraig``  ABC's SAT-sweeping conflict limit (``&fraig -x -C N``, :func:`.yosys.abc_script`):
           merges it cannot prove are left undone, so the netlist is the same function
           (docs/ppa.md, "ABC's SAT sweeping").  The limits are taken in the order of
           :data:`FRAIG_LIMITS`, skipping the run's own.

The perturbations of a design are numbered 1, 2, ... (0 is the unperturbed design) by a fixed
schedule: seed s = 1, 2, ... and for each seed the kinds in the order above, skipping a kind
that does not apply to the text (one module: no ``order``; two modules have one other order).
The same text and index always give the same perturbed text.  A text perturbation enters the
caches through the text itself (its sha256 keys synthesis and results, so a perturbed design
that happens to equal another is measured once); ``fraig`` through the limit, which the keys
already name.  Neutrality is by construction (above); ``tb/test_noise.py`` checks that the
perturbed texts are different text with the same modules and ports after ``hierarchy -top``.
"""
from __future__ import annotations

import random
import re
import statistics
from dataclasses import dataclass

__all__ = ["KINDS", "FRAIG_LIMITS", "MAX_NOISE", "Perturbation", "schedule", "perturb",
           "check_noise", "split_modules", "band", "BAND_FIELDS", "separation"]

KINDS = ("order", "pad", "decl", "fraig")
#: ABC conflict limits the ``fraig`` kind takes, in order (None: Yosys's own script)
FRAIG_LIMITS = (None, 1000, 10000, 100000, 300, 3000, 30000)
#: the most perturbations one measurement takes
MAX_NOISE = 64

_DIRECTIVE = re.compile(r"^\s*`", re.M)
_MODULE = re.compile(r"^\s*(?:\(\*.*\*\)\s*)?module\s+\\?([^\s(;#]+)")
_END = re.compile(r"^\s*endmodule\b")
_ATTR = re.compile(r"^\s*\(\*.*\*\)\s*$")
_DECL = re.compile(r"^\s+(?:input|output|inout|wire|reg|tri|integer)\b[^;]*;\s*$")


def check_noise(n) -> int:
    """``n`` if it is an integer in 0..MAX_NOISE (0: no perturbation), else ``ValueError``."""
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_NOISE:
        raise ValueError(f"noise must be an integer in 0..{MAX_NOISE} (the number of "
                         f"perturbed runs beside the unperturbed one), got {n!r}")
    return n


@dataclass(frozen=True)
class Perturbation:
    """Perturbation number ``index`` (1-based) of a design: ``kind`` at ``seed``;
    ``fraig_conflicts`` is the limit a ``fraig`` perturbation sets."""
    index: int
    kind: str
    seed: int
    fraig_conflicts: int | None = None

    def describe(self) -> str:
        if self.kind == "fraig":
            return ("ABC &fraig -x " + ("(Yosys's default limit)" if self.fraig_conflicts is None
                                       else f"-C {self.fraig_conflicts}"))
        return {"order": f"modules permuted (seed {self.seed})",
                "pad": f"unused module prepended (tcgen_noise_pad_{self.seed})",
                "decl": f"declarations permuted (seed {self.seed})"}[self.kind]

    def as_dict(self) -> dict:
        d = {"index": self.index, "kind": self.kind, "seed": self.seed,
             "what": self.describe()}
        if self.kind == "fraig":
            d["fraig_conflicts"] = self.fraig_conflicts
        return d


# -- the text -----------------------------------------------------------------------------------
def _blank_or_comment(line: str) -> bool:
    t = line.strip()
    return not t or t.startswith("//") or (t.startswith("/*") and t.endswith("*/")
                                           and "*/" not in t[2:-2])


def split_modules(text: str) -> tuple[str, list[tuple[str, str]], str] | None:
    """``(head, [(name, block), ...], tail)``: the text before the first module, each module
    (with the blank, comment and attribute lines right above it) and what follows the last;
    None when the text cannot be cut safely (a preprocessor directive, anything but blank
    lines, one-line comments and attributes between modules, an unterminated module)."""
    if _DIRECTIVE.search(text):
        return None
    head = None
    mods: list[tuple[str, str]] = []
    gap: list[str] = []
    cur: list[str] | None = None
    name = None
    for line in text.splitlines(keepends=True):
        if cur is not None:
            cur.append(line)
            if _END.match(line):
                mods.append((name, "".join(cur)))
                cur = None
            continue
        m = _MODULE.match(line)
        if m:
            if head is None:          # the file's header: stays first
                k = len(gap)
                while k and _ATTR.match(gap[k - 1]):
                    k -= 1
                head, gap = "".join(gap[:k]), gap[k:]
            cur, name, gap = gap + [line], m.group(1), []
            if _END.match(line):
                mods.append((name, "".join(cur)))
                cur = None
            continue
        if head is not None and not (_blank_or_comment(line) or _ATTR.match(line)):
            return None
        gap.append(line)
    if cur is not None or not mods:
        return None
    return head, mods, "".join(gap)


def _permutation(n: int, rng: random.Random) -> list[int]:
    order = list(range(n))
    rng.shuffle(order)
    if order == list(range(n)):             # never the identity: rotate
        order = order[1:] + order[:1]
    return order


def _module_orders(n: int, limit: int) -> list[list[int]]:
    """Up to ``limit`` distinct non-identity orders of ``n`` modules, seeded 1, 2, ..."""
    out: list[list[int]] = []
    seen = {tuple(range(n))}
    s = 0
    total = 1
    for i in range(2, n + 1):
        total *= i
        if total > limit + 1:
            break
    while len(out) < min(limit, total - 1) and s < 64 * limit:
        s += 1
        o = _permutation(n, random.Random(f"order:{s}"))
        if tuple(o) not in seen:
            seen.add(tuple(o))
            out.append(o)
    return out


def _order(text: str, seed: int) -> str | None:
    parts = split_modules(text)
    if parts is None or len(parts[1]) < 2:
        return None
    head, mods, tail = parts
    orders = _module_orders(len(mods), seed)
    if len(orders) < seed:
        return None
    return head + "".join(mods[i][1] for i in orders[seed - 1]) + tail


def _pad(text: str, seed: int, top: str) -> str:
    names = set(_module_names(text))
    name = f"tcgen_noise_pad_{seed}"
    while name in names or name in text:
        name += "_"
    wires = [f"t{i}" for i in range(seed)]
    body = [f"module {name}(a, b, y);", "  input [7:0] a;", "  input [7:0] b;",
            "  output [8:0] y;"]
    body += [f"  wire [8:0] {w};" for w in wires]
    prev = "a + b"
    for w in wires:
        body.append(f"  assign {w} = {prev};")
        prev = f"{w} ^ {{1'b0, a}}"
    body += [f"  assign y = {prev};", "endmodule", ""]
    lines = text.splitlines(keepends=True)
    i = 0                  # after the leading comment lines (the header naming the unit)
    while i < len(lines) and _blank_or_comment(lines[i]):
        i += 1
    return "".join(lines[:i]) + "\n".join(body) + "\n" + "".join(lines[i:])


def _decl(text: str, seed: int) -> str | None:
    """Each module's leading declarations permuted; None if no module has two."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    i, changed, mod = 0, False, 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if not _MODULE.match(line) or _END.match(line):
            continue
        # the header may span lines: up to the first line ending with ');'
        while not re.search(r"\)\s*;\s*$", out[-1]) and i < len(lines):
            out.append(lines[i])
            i += 1
        items: list[list[str]] = []
        pending: list[str] = []
        j = i
        while j < len(lines):
            if _ATTR.match(lines[j]):
                pending.append(lines[j])
                j += 1
                continue
            if _DECL.match(lines[j]) and lines[j].count(";") == 1:
                items.append(pending + [lines[j]])
                pending = []
                j += 1
                continue
            break
        j -= len(pending)                    # attribute lines of what follows stay with it
        mod += 1
        if len(items) >= 2:
            order = _same_name_in_order(
                _permutation(len(items), random.Random(f"decl:{seed}:{mod}")), items)
            out += [ln for k in order for ln in items[k]]
            changed = True
        else:
            out += [ln for it in items for ln in it]
        i = j
    return "".join(out) if changed else None


def _decl_name(item: list[str]) -> str:
    """The name a declaration line declares (``output [4:0] count;`` -> ``count``)."""
    body = item[-1].split(";")[0].split("=")[0].strip()
    return body.split()[-1] if body.split() else body


def _same_name_in_order(order: list[int], items: list[list[str]]) -> list[int]:
    """``order`` with the declarations of one name (a port's direction, then its net type)
    kept in their original relative order: Yosys wants a port's direction before its
    ``wire``/``reg`` line."""
    by_name: dict[str, list[int]] = {}
    for k in range(len(items)):
        by_name.setdefault(_decl_name(items[k]), []).append(k)
    queues = {name: list(ks) for name, ks in by_name.items()}
    return [queues[_decl_name(items[k])].pop(0) for k in order]


def _module_names(text: str) -> list[str]:
    return [m.group(1) for m in (_MODULE.match(x) for x in text.splitlines()) if m]


# -- the schedule -------------------------------------------------------------------------------
def schedule(text: str, n: int, fraig_conflicts: int | None = None) -> list[Perturbation]:
    """The first ``n`` perturbations of ``text`` (see the module doc); ``fraig_conflicts``: the
    limit of the unperturbed run (the ``fraig`` kind skips it)."""
    check_noise(n)
    limits = [x for x in FRAIG_LIMITS if x != fraig_conflicts]
    has_decl = _decl(text, 1) is not None
    applies = {"order": lambda s: _order(text, s) is not None,
               "pad": lambda s: True,
               "decl": lambda s: has_decl,
               "fraig": lambda s: s <= len(limits)}
    out: list[Perturbation] = []
    seed = 0
    while len(out) < n:
        seed += 1
        for kind in KINDS:
            if len(out) < n and applies[kind](seed):
                out.append(Perturbation(len(out) + 1, kind, seed,
                                        limits[seed - 1] if kind == "fraig" else None))
    return out


def perturb(text: str, top: str, p: Perturbation) -> str:
    """The text of perturbation ``p`` (for ``fraig``, the text itself)."""
    if p.kind == "fraig":
        return text
    if p.kind == "pad":
        return _pad(text, p.seed, top)
    out = _order(text, p.seed) if p.kind == "order" else _decl(text, p.seed)
    if out is None:
        raise ValueError(f"perturbation {p.kind} (seed {p.seed}) does not apply to this text")
    return out


# -- the band -----------------------------------------------------------------------------------
#: the figures a band is given for: name -> reader of a measure_verilog result
BAND_FIELDS = {
    "area_um2": lambda r: r.get("area_um2"),
    "cell_count": lambda r: r.get("cell_count"),
    "crit_path_ns": lambda r: r.get("crit_path_ns"),
    "fmax_mhz": lambda r: r.get("fmax_mhz"),
    "power_mw": lambda r: (r.get("power_mw") or {}).get("total"),
    "energy_pj_per_op": lambda r: r.get("energy_pj_per_op"),
    "energy_pj_per_op_zero_delay": lambda r: r.get("energy_pj_per_op_zero_delay"),
}


def band(results: list[dict]) -> dict:
    """{figure: {"min", "median", "max", "spread", "unperturbed"}} over ``results`` (the
    unperturbed result first); ``spread`` = (max - min) / median.  A figure some result lacks
    is None throughout."""
    out = {}
    for name, read in BAND_FIELDS.items():
        vals = [read(r) for r in results]
        if not vals or any(v is None for v in vals):
            out[name] = {"min": None, "median": None, "max": None, "spread": None,
                         "unperturbed": vals[0] if vals else None}
            continue
        vals = [float(v) for v in vals]
        med = statistics.median(vals)
        out[name] = {"min": min(vals), "median": med, "max": max(vals),
                     "spread": (max(vals) - min(vals)) / med if med else None,
                     "unperturbed": vals[0]}
    return out


def separation(a: tuple[float, float], b: tuple[float, float]) -> str:
    """Two designs' figures as noise bands ``(min, max)`` over their runs: ``"below"`` when
    ``a``'s band lies wholly under ``b``'s, ``"above"`` when wholly over it, ``"overlap"`` (the
    difference is within the flow's noise) otherwise."""
    (a0, a1), (b0, b1) = (sorted(map(float, a)), sorted(map(float, b)))
    if a1 < b0:
        return "below"
    if a0 > b1:
        return "above"
    return "overlap"
