"""Integer arithmetic building blocks: compressor trees, array multipliers, popcount, LZC, shifters.

Each builder takes the Amaranth ``Module`` it adds combinational logic to and returns a value, so
units compose them inside their own ``elaborate`` (docs/architecture.md, "Style": helpers return expressions).
The components at the bottom wrap them as registered, generatable units.

Structure (so that areas compare like with like):

* :func:`compress` — a Dadda tree of full adders (3:2) and half adders (2:2) over bit columns,
  followed by one carry-propagate adder: Yosys's ``$add`` (``cpa="auto"``, the default) or a
  structural parallel-prefix adder (:func:`prefix_add`: ripple, Sklansky, Kogge–Stone,
  Brent–Kung).  Every multi-operand sum in tcgen goes through it.
* :func:`array_mul` — explicit AND partial products (Baugh–Wooley complemented terms plus a
  constant for signed operands) summed by :func:`compress`.
* :func:`int_dot` — c + Σ a_k·b_k modulo 2**width: :func:`array_mul` products sign-extended
  and summed with c by one :func:`compress` tree (the integer dot product / DP-k; the
  :class:`IntDot` component wraps it with the DP-4's port names).
* :func:`popcount` — the column tree with all bits at weight 0.
* :func:`lzc` — a balanced leading-zero-count tree.
* :func:`shift_right_sticky` / :func:`shift_left` — logarithmic barrel shifters.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .params import Params, param

__all__ = ["compress", "prefix_add", "CPA_TOPOLOGIES", "TREES", "tree_param", "sum_operands", "array_mul", "int_dot", "popcount", "lzc", "shift_right_sticky",
           "shift_left", "dadda_heights", "adder_census", "IntMul", "CSATree", "Popcount", "LZC",
           "BarrelShifter", "IntDot", "IntMulParams", "IntDotParams", "CSATreeParams", "PopcountParams", "LZCParams",
           "BarrelShiftParams"]

_censuses: list[dict] = []

#: final adders of :func:`compress`: ``auto`` = Yosys's ``$add`` (its techmap, then ABC), or
#: one of :func:`prefix_add`'s structural topologies
CPA_TOPOLOGIES = ("auto", "ripple", "sklansky", "kogge_stone", "brent_kung")


def prefix_add(m: Module, a, b, topology: str, name: str = "cpa"):
    """``(a + b) mod 2**len(a)`` (operands of equal width) by a structural parallel-prefix
    adder: bit generate g = a & b and propagate p = a ^ b, the prefix of the carry operator
    (g1, p1) o (g0, p0) = (g1 | p1 & g0, p1 & p0) over the positions, sum = p ^ carry-in.

    * ``ripple``: the prefix one position at a time (n - 1 levels, n - 1 operators);
    * ``sklansky``: divide and conquer, log2 n levels, fan-out up to n / 2;
    * ``kogge_stone``: log2 n levels, fan-out 2, n log2 n - n + 1 operators;
    * ``brent_kung``: an up-sweep and a down-sweep, 2 log2 n - 1 levels, 2n - 2 - log2 n ops.

    Returns an unsigned Signal of ``len(a)`` bits."""
    n = len(a)
    if len(b) != n:
        raise ValueError(f"prefix_add: operands of {n} and {len(b)} bits")
    if topology not in CPA_TOPOLOGIES[1:]:
        raise ValueError(f"prefix_add: topology must be one of {', '.join(CPA_TOPOLOGIES[1:])}"
                         f", got {topology!r}")
    g = [Signal(name=f"{name}_g{i}") for i in range(n)]
    p = [Signal(name=f"{name}_p{i}") for i in range(n)]
    for i in range(n):
        m.d.comb += [g[i].eq(a[i] & b[i]), p[i].eq(a[i] ^ b[i])]
    G, P = list(g), list(p)                 # (G, P)[i]: the group from some j up to i
    ops = [0]

    def combine(i: int, j: int):            # (G, P)[i] <- (G, P)[i] o (G, P)[j]
        ng, np_ = Signal(name=f"{name}_G{ops[0]}_{i}"), Signal(name=f"{name}_P{ops[0]}_{i}")
        m.d.comb += [ng.eq(G[i] | (P[i] & G[j])), np_.eq(P[i] & P[j])]
        ops[0] += 1
        return ng, np_
    if topology == "ripple":
        for i in range(1, n):
            G[i], P[i] = combine(i, i - 1)
    elif topology == "kogge_stone":
        d = 1
        while d < n:
            new = {i: combine(i, i - d) for i in range(d, n)}
            for i, v in new.items():
                G[i], P[i] = v
            d *= 2
    elif topology == "sklansky":
        d = 1
        while d < n:
            new = {}
            for i in range(n):
                if i & d:
                    new[i] = combine(i, (i // d) * d - 1)
            for i, v in new.items():
                G[i], P[i] = v
            d *= 2
    else:                                   # brent_kung
        d = 1
        while d < n:                        # up-sweep: blocks of 2d ending at i
            for i in range(2 * d - 1, n, 2 * d):
                G[i], P[i] = combine(i, i - d)
            d *= 2
        d //= 2
        while d >= 1:                       # down-sweep: the positions in between
            for i in range(3 * d - 1, n, 2 * d):
                G[i], P[i] = combine(i, i - d)
            d //= 2
    out = Signal(n, name=f"{name}_sum")
    m.d.comb += out.eq(Cat(p[0], *(p[i] ^ G[i - 1] for i in range(1, n))))
    return out


@contextlib.contextmanager
def adder_census():
    """Count the adders every :func:`compress` call builds inside the ``with`` block.

    Yields a dict that fills in as logic is built: ``tree_fa`` / ``tree_ha`` (the tree's full
    and half adders), ``cpa_fa`` / ``cpa_ha`` (the final carry-propagate adder read as a
    ripple-carry adder over the bit positions where an operand bit or a carry is live; the top
    column's carry-out is not built), ``fa`` / ``ha`` (totals) and ``compressors`` (calls).
    Gate counts over the full binary basis (every two-input function is one gate, the measure
    of Goncharov, Kulikov and Levtsov, STACS 2026): ``tree_gates`` (a full adder is 5 gates, a
    half adder 2, ``tree="gkl"``'s blocks as :func:`compress` lists), ``cpa_gates`` (the ripple
    reading: 5 per full adder, 2 per half adder) and ``gates``; ``bits_in`` / ``bits_out``: the
    bits the trees add (constant ones included) and the bits of their sums, the n and m of the
    bounds 5n - 3m (full and half adders) and 4.5n - 2m (``tree="gkl"``).
    Censuses nest; each sees everything built inside it::

        with adder_census() as c:
            popcount(Module(), Signal(128))
        c["fa"]   # 120
    """
    c = {"tree_fa": 0, "tree_ha": 0, "cpa_fa": 0, "cpa_ha": 0, "fa": 0, "ha": 0,
         "compressors": 0, "tree_gates": 0, "cpa_gates": 0, "gates": 0, "bits_in": 0,
         "bits_out": 0}
    _censuses.append(c)
    try:
        yield c
    finally:
        _censuses.remove(c)


def _record(built: dict, rows: list[list], width: int, bits_in: int):
    if not _censuses:
        return
    cpa_fa = cpa_ha = 0
    carry = False
    for i in range(width):
        k = sum(not isinstance(r[i], Const) for r in rows) + carry
        cpa_fa += k == 3
        cpa_ha += k == 2
        carry = k >= 2 and i < width - 1
    for c in _censuses:
        c["tree_fa"] += built["fa"]
        c["tree_ha"] += built["ha"]
        c["cpa_fa"] += cpa_fa
        c["cpa_ha"] += cpa_ha
        c["fa"] += built["fa"] + cpa_fa
        c["ha"] += built["ha"] + cpa_ha
        c["tree_gates"] += built["gates"]
        c["cpa_gates"] += 5 * cpa_fa + 2 * cpa_ha
        c["gates"] += built["gates"] + 5 * cpa_fa + 2 * cpa_ha
        c["bits_in"] += bits_in
        c["bits_out"] += width
        c["compressors"] += 1


def dadda_heights(max_height: int) -> list[int]:
    """Dadda's stage targets d_j (2, 3, 4, 6, 9, 13, ...) below ``max_height``, largest first."""
    ds = [2]
    while ds[-1] * 3 // 2 < max_height:
        ds.append(ds[-1] * 3 // 2)
    return [d for d in reversed(ds) if d < max_height]


#: the constructions of :func:`compress`'s tree: ``dadda`` (full and half adders, Dadda 1965),
#: ``gkl`` (Goncharov, Kulikov and Levtsov, "Smaller Circuits for Bit Addition", STACS 2026:
#: bit pairs carried as (x, x XOR y) and summed five at a time by their 8-gate MDFA block) or
#: ``tdm`` (Oklobdzija, Villeger and Liu, "A Method for Speed Optimized Partial Product
#: Reduction and Generation of Fast Parallel Multipliers Using an Algorithmic Approach", IEEE
#: Trans. Computers 45(3), 1996: full adders chosen column by column on estimated arrival
#: times, the latest input on the adder's fast path -- paths balanced, fewer glitches)
TREES = ("dadda", "gkl", "tdm")


def tree_param(doc: str):
    """The ``tree`` field of a parameter class whose datapath reduces partial products (one of
    :data:`TREES`; dadda, the default, stays off the cache key and the module names)."""
    return param("dadda", choices=TREES, key_default=False, doc=doc)

#: the unit-gate delays :func:`_tdm` schedules with: a full adder's sum is (x ^ y) ^ z and its
#: carry (x & y) | (z & (x ^ y)), so z -- the latest of the three -- passes one gate to each
#: output, x and y two
_TDM_XOR, _TDM_AO = 2, 1


def _tdm(m: Module, cols: list[list], width: int, name: str):
    """Three-greedy reduction (TDM) of ``cols`` to at most two bits per column: from the least
    significant column up, the three earliest-arriving bits (the column's own and the carries
    of the column below) go into a full adder, the latest of them on its fast input, until two
    remain; the sum stays in the column, the carry joins the next.  Every input bit arrives at
    0 (its own logic is not modelled).  No half adders."""
    fa = 0
    arrivals = [[(0, k, b) for k, b in enumerate(col)] for col in cols]
    out: list[list] = [[] for _ in range(width)]
    serial = len(cols) * 1000
    carry_in: list = []
    latest = 0                      # the schedule's latest output bit (unit-gate estimate)
    for i in range(width):
        items = arrivals[i] + carry_in if i < len(arrivals) else list(carry_in)
        carry_in = []
        while len(items) > 2:
            items.sort(key=lambda t: (t[0], t[1]))
            (ax, _, x), (ay, _, y), (az, _, z) = items[:3]
            items = items[3:]
            xy = Signal(name=f"{name}_t{i}_{fa}")
            s = Signal(name=f"{name}_s{i}_{fa}")
            c = Signal(name=f"{name}_c{i}_{fa}")
            m.d.comb += [xy.eq(x ^ y), s.eq(xy ^ z), c.eq((x & y) | (z & xy))]
            t_xy = max(ax, ay) + _TDM_XOR
            items.append((max(t_xy, az) + _TDM_XOR, serial, s))
            carry_in.append((max(t_xy, az) + _TDM_AO + _TDM_AO, serial + 1, c))
            serial += 2
            fa += 1
        out[i] = [b for _, _, b in sorted(items, key=lambda t: (t[0], t[1]))]
        latest = max([latest] + [t for t, _, _ in items])
    return out, {"fa": fa, "ha": 0, "gates": 5 * fa, "arrival": latest}


def _dadda(m: Module, cols: list[list], width: int, name: str):
    """Dadda reduction of ``cols`` to at most two bits per column with full and half adders."""
    fa = ha = 0
    for stage, d in enumerate(dadda_heights(max((len(c) for c in cols), default=0))):
        new = [[] for _ in range(width + 1)]
        for i, col in enumerate(cols):
            bits = list(col)
            h = len(bits) + len(new[i])
            while h > d:
                if h - d >= 2 and len(bits) >= 3:
                    x, y, z = bits.pop(0), bits.pop(0), bits.pop(0)
                    s = Signal(name=f"{name}_s{stage}_{i}_{fa}")
                    c = Signal(name=f"{name}_c{stage}_{i}_{fa}")
                    m.d.comb += [s.eq(x ^ y ^ z), c.eq((x & y) | (x & z) | (y & z))]
                    fa += 1
                    h -= 2
                elif len(bits) >= 2:
                    x, y = bits.pop(0), bits.pop(0)
                    s = Signal(name=f"{name}_hs{stage}_{i}_{ha}")
                    c = Signal(name=f"{name}_hc{stage}_{i}_{ha}")
                    m.d.comb += [s.eq(x ^ y), c.eq(x & y)]
                    ha += 1
                    h -= 1
                else:    # cannot happen for Dadda targets; kept for safety
                    break
                new[i].append(s)
                new[i + 1].append(c)
            new[i].extend(bits)
        cols = new[:width]
    return cols, {"fa": fa, "ha": ha, "gates": 5 * fa + 2 * ha}


class _GKL:
    """The blocks of ``tree="gkl"``, each built gate by gate (one two-input gate per Signal) so
    the census counts what the construction costs.  A *pair* (x, x ^ y) stands for two bits x
    and y of one weight; the blocks take and give pairs, which is where the gates are saved:

    * ``mdfa(z, (x1, x1^y1), (x2, x2^y2))`` -> (s, (c, c^d)) with z+x1+y1+x2+y2 = s + 2(c+d):
      8 gates for five bits (two full adders: 10);
    * ``mdfa0`` the same with z = 0: 6 gates for four bits;
    * ``fa_pair(z, (x, x^y))`` -> (s, c): a full adder given one input pair, 4 gates;
    * ``pair(a, b)`` = (a, a^b) and ``unpair`` its inverse, 1 gate each; ``ha_pair((x, x^y))``
      = (x^y, x & ~(x^y)): a half adder on a pair, 1 gate; ``fa``, ``ha``: 5 and 2 gates.

    The MDFA block's gate list is the paper's (its Section 3; checked on all 32 inputs in
    tb/test_int_rtl.py); the reduction schedule around it is tcgen's (:func:`_gkl`)."""

    def __init__(self, m: Module, name: str):
        self.m, self.name = m, name
        self.gates = self.fa = self.ha = 0

    def g(self, expr, tag: str = "g"):
        s = Signal(name=f"{self.name}_{tag}{self.gates}")
        self.m.d.comb += s.eq(expr)
        self.gates += 1
        return s

    def mdfa(self, z, p1, p2):
        (x1, xy1), (x2, xy2) = p1, p2
        g1 = self.g(x1 ^ z)
        g2 = self.g(xy1 | g1)
        g3 = self.g(xy1 ^ z)
        g4 = self.g(g2 ^ g3)
        g5 = self.g(x2 ^ g3)
        g6 = self.g(g3 ^ xy2, "s")
        g7 = self.g(g5 & ~xy2)
        g8 = self.g(g2 ^ g7)
        return g6, (g4, g8)

    def mdfa0(self, p1, p2):
        (x1, xy1), (x2, xy2) = p1, p2
        g2 = self.g(xy1 | x1)
        g4 = self.g(g2 ^ xy1)
        g5 = self.g(x2 ^ xy1)
        g6 = self.g(xy1 ^ xy2, "s")
        g7 = self.g(g5 & ~xy2)
        g8 = self.g(g2 ^ g7)
        return g6, (g4, g8)

    def fa_pair(self, z, p):
        x, xy = p
        return self.g(z ^ xy, "s"), self.g(self.g(x & ~xy) ^ self.g(z & xy), "c")

    def pair(self, a, b):
        return a, self.g(a ^ b, "p")

    def unpair(self, p):
        return [p[0], self.g(p[0] ^ p[1], "u")]

    def ha_pair(self, p):
        return p[1], self.g(p[0] & ~p[1], "c")

    def full(self, x, y, z):
        self.fa += 1
        t = self.g(x ^ y)
        return self.g(t ^ z, "s"), self.g(self.g(x & y) | self.g(t & z), "c")

    def half(self, x, y):
        self.ha += 1
        return self.g(x ^ y, "s"), self.g(x & y, "c")


def _gkl(m: Module, cols: list[list], width: int, name: str):
    """Reduce ``cols`` to at most two bits per column with :class:`_GKL`'s blocks.

    Stages as Dadda's: each stage takes every column down to the next Dadda height d (the
    largest below the tallest column, counting a pair as two bits) from the bits it holds plus
    the sums and carries this stage has already put there.  Per column, while the height is
    above d, the first block that applies:

    * an MDFA (three or more bits over d: a single bit and two pairs, the column down by four;
      measured, starting at three over rather than four saves 1-4 % of the tree's gates);
    * pairing two single bits, so that an MDFA can follow;
    * a full adder on a bit and a pair (two over), then on three bits;
    * an MDFA with z = 0 (three over, pairs only);
    * unpairing; a half adder on a pair or on two bits (one over).

    A pair left at the end would be unpaired into the rows (none is, for any multiplier up to
    24 x 24 bits or popcount up to 200 bits: the last stage, to height 2, builds no MDFA and
    takes the pairs before it)."""
    blk = _GKL(m, name)
    singles = [list(c) for c in cols]
    pairs: list[list] = [[] for _ in range(width)]

    def height(i):
        return len(singles[i]) + 2 * len(pairs[i])
    for _ in range(4 * width + 64):
        tallest = max((height(i) for i in range(width)), default=0)
        if tallest <= 2:
            break
        d = dadda_heights(tallest)[0]
        ns = [[] for _ in range(width + 1)]
        np_ = [[] for _ in range(width + 1)]
        for i in range(width):
            s, p = singles[i], pairs[i]
            while True:
                over = len(s) + 2 * len(p) + len(ns[i]) + 2 * len(np_[i]) - d
                if over <= 0:
                    break
                if over >= 3 and s and len(p) >= 2:
                    out, carry = blk.mdfa(s.pop(0), p.pop(0), p.pop(0))
                    ns[i].append(out)
                    np_[i + 1].append(carry)
                elif over >= 3 and (len(s) >= 3 and p or len(s) >= 5):
                    p.append(blk.pair(s.pop(0), s.pop(0)))
                elif over >= 2 and s and p:
                    out, carry = blk.fa_pair(s.pop(0), p.pop(0))
                    ns[i].append(out)
                    ns[i + 1].append(carry)
                elif over >= 2 and len(s) >= 3:
                    out, carry = blk.full(s.pop(0), s.pop(0), s.pop(0))
                    ns[i].append(out)
                    ns[i + 1].append(carry)
                elif over >= 3 and len(p) >= 2:
                    out, carry = blk.mdfa0(p.pop(0), p.pop(0))
                    ns[i].append(out)
                    np_[i + 1].append(carry)
                elif over >= 2 and p:
                    s.extend(blk.unpair(p.pop(0)))
                elif p:
                    out, carry = blk.ha_pair(p.pop(0))
                    ns[i].append(out)
                    ns[i + 1].append(carry)
                elif len(s) >= 2:
                    out, carry = blk.half(s.pop(0), s.pop(0))
                    ns[i].append(out)
                    ns[i + 1].append(carry)
                else:           # only this stage's outputs are left: the next stage takes them
                    break
            ns[i].extend(s)
            np_[i].extend(p)
        singles, pairs = ns[:width], np_[:width]
    else:
        raise RuntimeError(f"compress(tree='gkl'): {name} did not converge")
    for i in range(width):
        for p in pairs[i]:
            singles[i].extend(blk.unpair(p))
    return singles, {"fa": blk.fa, "ha": blk.ha, "gates": blk.gates}


def compress(m: Module, columns: list[list], width: int, name: str = "csa", *,
             rows_stage=None, cpa: str = "auto", tree: str = "dadda"):
    """Sum bit columns (``columns[i]`` holds 1-bit values of weight 2**i) modulo 2**width.

    A tree (``tree``: :data:`TREES`) reduces the columns to two rows, then one carry-propagate
    adder sums them.  ``rows_stage(row0, row1) -> (row0, row1)`` (optional) runs on the two
    rows before the carry-propagate adder (a pipeline cut).  ``cpa``: the final adder
    (:data:`CPA_TOPOLOGIES`).  Returns an ``unsigned(width)`` Signal.
    """
    if tree not in TREES:
        raise ValueError(f"compress: tree must be one of {', '.join(TREES)}, got {tree!r}")
    cols = [list(c) for c in columns[:width]] + [[] for _ in range(width - len(columns))]
    bits_in = sum(len(c) for c in cols)
    cols, built = {"dadda": _dadda, "gkl": _gkl, "tdm": _tdm}[tree](m, cols, width, name)
    rows = [[], []]
    for i, col in enumerate(cols):
        for r in range(2):
            rows[r].append(col[r] if r < len(col) else Const(0, 1))
    out = Signal(width, name=f"{name}_sum")
    if width and (rows_stage is not None or cpa != "auto"):
        r0, r1 = Signal(width, name=f"{name}_row0"), Signal(width, name=f"{name}_row1")
        m.d.comb += [r0.eq(Cat(*rows[0])), r1.eq(Cat(*rows[1]))]
        if rows_stage is not None:
            r0, r1 = rows_stage(r0, r1)
        m.d.comb += out.eq(r0 + r1 if cpa == "auto" else
                           prefix_add(m, r0, r1, cpa, name=f"{name}_cpa"))
    elif width:
        m.d.comb += out.eq(Cat(*rows[0]) + Cat(*rows[1]))
    _record(built, rows, width, bits_in)
    return out


def sum_operands(m: Module, operands, width: int, name: str = "csa", *, tree: str = "dadda"):
    """Sum unsigned operands (Values) modulo 2**width with one compressor tree (``tree``:
    :func:`compress`'s)."""
    cols = [[] for _ in range(width)]
    for op in operands:
        for i in range(min(len(op), width)):
            cols[i].append(op[i])
    return compress(m, cols, width, name, tree=tree)


def _const_bits(value: int, width: int, cols):
    for i in range(width):
        if (value >> i) & 1:
            cols[i].append(Const(1, 1))


def array_mul(m: Module, a, b, a_signed: bool = False, b_signed: bool = False,
              name: str = "mul", *, rows_stage=None, cpa: str = "auto", tree: str = "dadda"):
    """Structural multiplier: AND partial products summed by a compressor tree (``rows_stage``,
    ``cpa``, ``tree``: :func:`compress`'s, a pipeline cut before the carry-propagate adder, its
    topology and the tree's construction).

    Signed operands use the Baugh–Wooley form: a partial product of negative weight
    -x·2**w is entered as (~x)·2**w plus the constant -2**w, and the constants are folded into
    one constant row.  Returns a Signal of ``len(a) + len(b)`` bits, signed if either operand is.
    """
    na, nb = len(a), len(b)
    width = na + nb
    cols = [[] for _ in range(width)]
    const = 0
    for i in range(na):
        for j in range(nb):
            w = i + j
            pp = Signal(name=f"{name}_pp{i}_{j}")
            negative = (a_signed and i == na - 1) != (b_signed and j == nb - 1)
            if negative:
                m.d.comb += pp.eq(~(a[i] & b[j]))
                const -= 1 << w
            else:
                m.d.comb += pp.eq(a[i] & b[j])
            cols[w].append(pp)
    _const_bits(const % (1 << width), width, cols)
    p = compress(m, cols, width, name, rows_stage=rows_stage, cpa=cpa, tree=tree)
    if a_signed or b_signed:
        return p.as_signed()
    return p


def booth_mul(m: Module, a, b, name: str = "mul", *, rows_stage=None, cpa: str = "auto",
              tree: str = "dadda"):
    """Unsigned ``a × b`` with b recoded radix-4 (modified Booth): ⌈(len(b) + 1) / 2⌉ partial
    products of ``a`` times a digit in {-2, -1, 0, 1, 2} instead of len(b) AND rows, summed by
    the same Dadda tree as :func:`array_mul` (:func:`compress`).

    Digit k reads b[2k+1], b[2k], b[2k-1] (b[-1] = 0, b zero-extended: unsigned): neg =
    b[2k+1], one = b[2k] ^ b[2k-1], two = the other nonzero pair.  Row k is
    ``(one·a | two·2a) XOR neg`` (len(a) + 1 bits) at weight 2**2k, plus ``neg`` at its LSB
    (two's complement), and its sign, of weight -2**(2k + len(a) + 1), enters as ``~neg`` there
    plus a constant -2**(2k + len(a) + 1); the constants are folded into one row, as in
    :func:`array_mul`'s Baugh-Wooley form.  Exact modulo 2**(len(a) + len(b)), where the
    product always fits.  Returns an unsigned Signal of len(a) + len(b) bits."""
    na, nb = len(a), len(b)
    width = na + nb
    cols = [[] for _ in range(width)]
    const = 0

    def bit(i):
        return b[i] if 0 <= i < nb else Const(0, 1)
    for k in range((nb + 2) // 2):
        hi, mid, lo = bit(2 * k + 1), bit(2 * k), bit(2 * k - 1)
        neg = Signal(name=f"{name}_neg{k}")
        one = Signal(name=f"{name}_one{k}")
        two = Signal(name=f"{name}_two{k}")
        m.d.comb += [neg.eq(hi), one.eq(mid ^ lo),
                     two.eq((hi & ~mid & ~lo) | (~hi & mid & lo))]
        for i in range(na + 1):
            w = 2 * k + i
            if w >= width:
                break
            sel = Const(0, 1)
            if i < na:
                sel = sel | (one & a[i])
            if i > 0:
                sel = sel | (two & a[i - 1])
            pp = Signal(name=f"{name}_pp{k}_{i}")
            m.d.comb += pp.eq(sel ^ neg)
            cols[w].append(pp)
        w = 2 * k + na + 1
        if w < width:
            sgn = Signal(name=f"{name}_sgn{k}")
            m.d.comb += sgn.eq(~neg)
            cols[w].append(sgn)
            const -= 1 << w
        cols[2 * k].append(neg)
    _const_bits(const % (1 << width), width, cols)
    return compress(m, cols, width, name, rows_stage=rows_stage, cpa=cpa, tree=tree)


def int_dot(m: Module, a, b, c, width: int, *, a_signed: bool = True, b_signed: bool = True,
            name: str = "sum"):
    """``c + Σ_k a[k]·b[k]`` modulo 2**width (two's complement when the operands are signed):
    one :func:`array_mul` per pair (``mul{k}``), each product sign-extended into ``width``
    bits (``p{k}``), the products and ``c`` summed by one compressor tree (``name``).
    ``a`` and ``b`` are sequences of equal length (e.g. ``ArrayLayout`` views); exact whenever
    the true sum fits ``width`` bits."""
    if len(a) != len(b):
        raise ValueError(f"int_dot: {len(a)} a operands against {len(b)} b operands")
    ops = []
    for k in range(len(a)):
        ak = a[k].as_signed() if a_signed else a[k]
        bk = b[k].as_signed() if b_signed else b[k]
        prod = array_mul(m, ak, bk, a_signed=a_signed, b_signed=b_signed, name=f"mul{k}")
        ext = Signal(width, name=f"p{k}")
        m.d.comb += ext.eq(prod)                       # sign extension (mod 2^width)
        ops.append(ext)
    return sum_operands(m, ops + [c], width, name=name)


def popcount(m: Module, bits, name: str = "popc"):
    """Number of ones in ``bits`` as an unsigned Signal of ceil(log2(n+1)) bits."""
    n = len(bits)
    width = max(1, n.bit_length())
    return compress(m, [[bits[i] for i in range(n)]], width, name)


def lzc(m: Module, value, name: str = "lzc"):
    """Leading-zero count of ``value`` (MSB first); ``len(value)`` when it is zero.

    Balanced tree over a power-of-two padding (pad bits are ones below the LSB so they never
    count).  Returns an unsigned Signal of ``len(value).bit_length()`` bits.
    """
    n = len(value)
    size = 1
    while size < n:
        size *= 2
    padded = Cat(Const((1 << (size - n)) - 1, size - n), value) if size > n else value

    def tree(lo, hi):      # -> (all_zero, count) over bits [lo, hi) of padded, MSB = hi-1
        if hi - lo == 1:
            return ~padded[lo], Const(0, 0)
        mid = (lo + hi) // 2
        z_hi, c_hi = tree(mid, hi)
        z_lo, c_lo = tree(lo, mid)
        k = (hi - lo).bit_length() - 2
        z = Signal(name=f"{name}_z{lo}_{hi}")
        c = Signal(k + 1, name=f"{name}_c{lo}_{hi}")
        m.d.comb += [z.eq(z_hi & z_lo),
                     c.eq(Mux(z_hi, Cat(c_lo, Const(1, 1)), Cat(c_hi, Const(0, 1))))]
        return z, c

    out = Signal(n.bit_length(), name=f"{name}_count")
    if n == 1:
        m.d.comb += out.eq(~value[0])
        return out
    z, c = tree(0, size)
    m.d.comb += out.eq(Mux(z, n, c))
    return out


def shift_right_sticky(m: Module, value, amount, name: str = "shr"):
    """Logical right shift by ``amount`` (any width); returns (shifted, sticky).

    ``sticky`` is the OR of every bit shifted out; shifts >= len(value) give 0 and OR(value).
    """
    n = len(value)
    cur = value
    sticky = Const(0, 1)
    for k in range(min((n - 1).bit_length(), len(amount))):
        step = 1 << k                      # < n
        nxt = Signal(n, name=f"{name}_v{k}")
        st = Signal(name=f"{name}_st{k}")
        m.d.comb += [nxt.eq(Mux(amount[k], cur >> step, cur)),
                     st.eq(sticky | (amount[k] & cur[:step].any()))]
        cur, sticky = nxt, st
    if (1 << len(amount)) > n:             # amounts >= n shift everything out
        big = amount >= Const(n, len(amount))
    else:
        big = Const(0, 1)
    out = Signal(n, name=f"{name}_out")
    out_st = Signal(name=f"{name}_sticky")
    m.d.comb += [out.eq(Mux(big, 0, cur)), out_st.eq(Mux(big, value.any(), sticky))]
    return out, out_st


def shift_left(m: Module, value, amount, name: str = "shl"):
    """Logical left shift of ``value`` by ``amount`` keeping ``len(value)`` bits."""
    n = len(value)
    cur = value
    for k in range(len(amount)):
        step = 1 << k
        nxt = Signal(n, name=f"{name}_v{k}")
        m.d.comb += nxt.eq(Mux(amount[k], (cur << step)[:n] if step < n else 0, cur))
        cur = nxt
    return cur


# -- parameters of the components -------------------------------------------------------------
@dataclass(frozen=True)
class IntMulParams(Params):
    UNIT = "int_mul"
    a_width: int = param(8, range=(1, 32), doc="bits of a")
    b_width: int = param(8, range=(1, 32), doc="bits of b")
    a_signed: bool = param(False, doc="a is two's complement")
    b_signed: bool = param(False, doc="b is two's complement")
    mult: str = param("array", choices=("array", "booth4"), key_default=False,
                      doc="partial products: array (Baugh-Wooley AND rows) or booth4 (radix-4 "
                          "modified Booth, unsigned operands)")
    cpa: str = param("auto", choices=CPA_TOPOLOGIES, key_default=False,
                     doc="the final carry-propagate adder: auto (Yosys's $add) or a structural "
                         "ripple, sklansky, kogge_stone or brent_kung prefix adder")
    tree: str = tree_param("the compressor tree: dadda (full and half adders), gkl (Goncharov-"
                           "Kulikov-Levtsov MDFA blocks on bit pairs: fewer two-input gates) or "
                           "tdm (three-greedy on arrival times: paths balanced)")

    def check(self):
        if self.mult == "booth4" and (self.a_signed or self.b_signed):
            raise self.error("mult", self.mult, "array when an operand is signed (booth4 "
                                                "takes unsigned operands)")


@dataclass(frozen=True)
class IntDotParams(Params):
    UNIT = "int_dot"
    k: int = param(4, range=(1, 16), doc="products per dot product (4: the DP-4)")
    a_width: int = param(8, range=(1, 64), doc="bits of each a")
    b_width: int = param(8, range=(1, 64), doc="bits of each b")
    acc_width: int = param(32, range=(2, 128), doc="bits of c and y (sums wrap modulo 2^acc)")
    signed: bool = param(True, doc="a, b, c and y are two's complement")


@dataclass(frozen=True)
class CSATreeParams(Params):
    UNIT = "csa_tree"
    n: int = param(8, range=(2, 64), doc="number of operands")
    width: int = param(16, range=(1, 32), doc="bits per operand")
    tree: str = tree_param("the compressor tree: dadda (full and half adders), gkl (Goncharov-"
                           "Kulikov-Levtsov MDFA blocks on bit pairs: fewer two-input gates) or "
                           "tdm (three-greedy on arrival times: paths balanced)")


@dataclass(frozen=True)
class PopcountParams(Params):
    UNIT = "popcount"
    n: int = param(128, range=(1, 1024), doc="input bits")


@dataclass(frozen=True)
class LZCParams(Params):
    UNIT = "lzc"
    width: int = param(16, range=(1, 128), doc="input bits")


@dataclass(frozen=True)
class BarrelShiftParams(Params):
    UNIT = "barrel_shift"
    width: int = param(32, range=(2, 128), doc="data bits")
    direction: str = param("right", choices=("right", "left"), doc="shift direction")
    amount_width: int = param(0, range=(0, 16), doc="bits of the amount port (0 = enough "
                                                     "for 0..2*width-1)")

    @property
    def amount_bits(self) -> int:
        """Bits of the ``amount`` port."""
        return self.amount_width or max(1, (self.width - 1).bit_length() + 1)


# -- components ---------------------------------------------------------------------------------
class IntMul(wiring.Component):
    """Structural integer multiplier ``p = a × b`` (:func:`array_mul`).

    Parameters: ``IntMulParams`` (a_width, b_width, a_signed, b_signed, mult, cpa).
    Attributes: a ``In(a_width)``, b ``In(b_width)``, p ``Out(a_width + b_width)`` (two's
    complement if either operand is signed).  ``latency = 0``.
    """

    def __init__(self, params):
        self.params = params
        self.latency = 0
        super().__init__({"a": In(params.a_width), "b": In(params.b_width),
                          "p": Out(params.a_width + params.b_width)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        a = self.a.as_signed() if p.a_signed else self.a
        b = self.b.as_signed() if p.b_signed else self.b
        if p.mult == "booth4":
            m.d.comb += self.p.eq(booth_mul(m, a, b, cpa=p.cpa, tree=p.tree))
        else:
            m.d.comb += self.p.eq(array_mul(m, a, b, p.a_signed, p.b_signed, cpa=p.cpa,
                                            tree=p.tree))
        return m


class IntDot(wiring.Component):
    """Integer dot product ``y = c + Σ a[k]·b[k]`` modulo 2**acc_width (:func:`int_dot`), with
    the port names of :class:`tcgen.hw.dot.Dp4` so a DP-4 schedule drives either.

    Parameters: ``IntDotParams`` (k, a_width, b_width, acc_width, signed).  Attributes: a
    ``In(ArrayLayout(a_width, k))``, b ``In(ArrayLayout(b_width, k))``, c ``In(acc_width)``, y
    ``Out(acc_width)`` (bit vectors; two's complement when ``signed``).  ``latency = 0``.
    """

    def __init__(self, params):
        from amaranth.lib import data
        self.params = params
        self.latency = 0
        super().__init__({"a": In(data.ArrayLayout(params.a_width, params.k)),
                          "b": In(data.ArrayLayout(params.b_width, params.k)),
                          "c": In(params.acc_width), "y": Out(params.acc_width)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        m.d.comb += self.y.eq(int_dot(m, self.a, self.b, self.c, p.acc_width,
                                      a_signed=p.signed, b_signed=p.signed))
        return m


class CSATree(wiring.Component):
    """Carry-save sum of ``n`` unsigned ``width``-bit operands (:func:`sum_operands`).

    Attributes: x ``In(n*width)`` (operand i at bits [i*width, (i+1)*width)),
    sum ``Out(width + ceil(log2 n))``.  ``latency = 0``.
    """

    def __init__(self, params):
        self.params = params
        self.latency = 0
        self.out_width = params.width + (params.n - 1).bit_length()
        super().__init__({"x": In(params.n * params.width), "sum": Out(self.out_width)})

    def elaborate(self, platform):
        m = Module()
        w = self.params.width
        ops = [self.x[i * w:(i + 1) * w] for i in range(self.params.n)]
        m.d.comb += self.sum.eq(sum_operands(m, ops, self.out_width, tree=self.params.tree))
        return m


class Popcount(wiring.Component):
    """Population count of an ``n``-bit word.  Attributes: x ``In(n)``, count ``Out(bits(n))``."""

    def __init__(self, params):
        self.params = params
        self.latency = 0
        super().__init__({"x": In(params.n), "count": Out(params.n.bit_length())})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.count.eq(popcount(m, self.x))
        return m


class LZC(wiring.Component):
    """Leading-zero counter.  Attributes: x ``In(width)``, count ``Out(bits(width))``
    (``width`` when x is zero)."""

    def __init__(self, params):
        self.params = params
        self.latency = 0
        super().__init__({"x": In(params.width), "count": Out(params.width.bit_length())})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.count.eq(lzc(m, self.x))
        return m


class BarrelShifter(wiring.Component):
    """Logarithmic shifter.  Attributes: x ``In(width)``, amount ``In(amount_width)``,
    y ``Out(width)``, sticky ``Out(1)`` (OR of bits shifted out; right shifts only, else 0)."""

    def __init__(self, params):
        self.params = params
        self.latency = 0
        super().__init__({"x": In(params.width), "amount": In(params.amount_bits), "y": Out(params.width),
                          "sticky": Out(1)})

    def elaborate(self, platform):
        m = Module()
        if self.params.direction == "right":
            y, st = shift_right_sticky(m, self.x, self.amount)
            m.d.comb += [self.y.eq(y), self.sticky.eq(st)]
        else:
            m.d.comb += self.y.eq(shift_left(m, self.x, self.amount))
        return m
