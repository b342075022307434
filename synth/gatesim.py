"""Levelized zero-delay simulation of a mapped netlist, vectorized over the cells of each level.

The ``levelized`` engine of ``--activity sim`` (:func:`tcgen.synth.activity.simulate_levelized`
drives it on the Icarus testbench's schedule).  A mapped netlist is flat and bit-level: every
cell is a small boolean function of a few nets.  So instead of compiling it (Verilator spends
minutes on the front end and the C++ of a 100k-cell netlist) or interpreting it event by event
(Icarus, ~1 s per cycle of m8n8k128), the netlist is compiled once into *levels*: every output
pin of a combinational cell becomes a node ``out = table >> (in0 | in1 << 1 | ...) & 1`` whose
truth table comes from the cell's liberty ``function``, nodes are grouped by logic depth, and
one evaluation of the circuit is a few numpy operations per level.  Flip-flops follow their
liberty ``ff`` group (``next_state``, ``clocked_on`` rising, ``clear`` / ``preset``
asynchronous, ``clear_preset_var1`` when both); their outputs are functions of the state
variables ``IQ`` / ``IQN``.  Latches and ``statetable`` cells are refused (use Icarus).

Two-state: every net starts at 0 (Icarus starts at X and counts no X transition); after the
reset cycles of the schedule the two agree, which ``tb/test_ppa.py`` checks net by net.

Liberty boolean syntax (Liberty Reference Manual, "function"): operands are pin names and the
constants 0 / 1; ``'`` (postfix) and ``!`` invert, then ``^`` (xor), then ``&``, ``*`` or
juxtaposition (and), then ``+`` / ``|`` (or); parentheses group.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["GateSim", "GateSimError", "truth_table", "expr_pins"]


class GateSimError(ValueError):
    """The netlist cannot be simulated by this engine (a latch, a loop, a cell without a
    function); the message names the cause."""


_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_\[\].]*)|([01])|(.))")


def _tokens(expr: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    expr = expr.strip().strip('"')
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            break
        pos = m.end()
        if m.group(1):
            out.append(("id", m.group(1)))
        elif m.group(2):
            out.append(("const", m.group(2)))
        elif m.group(3) and not m.group(3).isspace():
            out.append(("op", m.group(3)))
    return out


class _Parser:
    """Recursive descent over the tokens; evaluates on numpy bool arrays (one per operand)."""

    def __init__(self, expr: str, env: dict):
        self.expr, self.toks, self.i, self.env = expr, _tokens(expr), 0, env

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self):
        t = self.peek()
        self.i += 1
        return t

    def parse(self):
        v = self.or_()
        if self.i != len(self.toks):
            raise GateSimError(f"cannot read liberty function {self.expr!r}")
        return v

    def or_(self):
        v = self.and_()
        while self.peek() in (("op", "+"), ("op", "|")):
            self.take()
            v = v | self.and_()
        return v

    def _starts_primary(self):
        k, t = self.peek()
        return k in ("id", "const") or (k == "op" and t in ("(", "!"))

    def and_(self):
        v = self.xor_()
        while True:
            if self.peek() in (("op", "&"), ("op", "*")):
                self.take()
            elif not self._starts_primary():
                return v
            v = v & self.xor_()

    def xor_(self):
        v = self.unary()
        while self.peek() == ("op", "^"):
            self.take()
            v = v ^ self.unary()
        return v

    def unary(self):
        if self.peek() == ("op", "!"):
            self.take()
            return ~self.unary()
        v = self.primary()
        while self.peek() == ("op", "'"):
            self.take()
            v = ~v
        return v

    def primary(self):
        k, t = self.take()
        if k == "id":
            if t not in self.env:
                raise GateSimError(f"liberty function {self.expr!r} names {t!r}, which is not "
                                   f"a pin of the cell")
            return self.env[t]
        if k == "const":
            return self.env["__one__"] if t == "1" else ~self.env["__one__"]
        if (k, t) == ("op", "("):
            v = self.or_()
            if self.take() != ("op", ")"):
                raise GateSimError(f"unbalanced parentheses in liberty function {self.expr!r}")
            return v
        raise GateSimError(f"cannot read liberty function {self.expr!r}")


@functools.lru_cache(maxsize=None)
def _expr_pins(expr: str) -> tuple[str, ...]:
    seen = []
    for k, t in _tokens(expr):
        if k == "id" and t not in seen:
            seen.append(t)
    return tuple(seen)


def expr_pins(expr: str) -> list[str]:
    """The operands of a liberty function, in order of first appearance."""
    return list(_expr_pins(expr))


def truth_table(expr: str, pins: list[str]) -> int:
    """Bit ``i`` of the result is ``expr`` with pin ``j`` = bit ``j`` of ``i``."""
    k = len(pins)
    if k > 6:
        raise GateSimError(f"liberty function {expr!r} has {k} operands (at most 6 supported)")
    idx = np.arange(1 << k)
    env = {p: ((idx >> j) & 1).astype(bool) for j, p in enumerate(pins)}
    env["__one__"] = np.ones(1 << k, dtype=bool)
    v = np.broadcast_to(_Parser(expr, env).parse(), (1 << k,))
    return int(sum(1 << i for i in range(1 << k) if v[i]))


@dataclass
class _Level:
    out: np.ndarray        # net index per node
    ins: np.ndarray        # (nodes, k) net indices
    weights: np.ndarray    # (k,) 1 << j
    table: np.ndarray      # uint64 truth table per node
    nodes: np.ndarray      # index of each node in :attr:`GateSim.node_pins`


class GateSim:
    """A compiled netlist.  ``nets``: name -> index (every net bit of the netlist plus internal
    state variables, which :attr:`visible` excludes).  :meth:`step` applies input values,
    clocks the flip-flops whose clock rose, and settles the logic."""

    def __init__(self, instances: dict, assigns: list, cells: dict, net_names: list[str]):
        self.nets: dict[str, int] = {}
        self.internal: set[int] = {0, 1}          # the constants and the flip-flops' states
        for name in ["1'b0", "1'b1", *net_names]:
            self._net(name)
        comb: list[tuple[int, list[int], int]] = []      # (out, ins, table)
        # per comb node: (instance, output pin, operand pins); an operand that is a flip-flop's
        # state variable is named by the flip-flop's clock pin prefixed "@" (its arc is
        # clock -> output: tcgen.synth.timedsim); an assign is (None, None, [None])
        self.node_pins: list[tuple] = []
        ffs = []
        tables: dict = {}
        for inst, (cell_name, conns) in instances.items():
            cell = cells.get(cell_name)
            if cell is None:
                raise GateSimError(f"cell {cell_name} (instance {inst}) is not in the liberty")
            if cell.latch is not None:
                raise GateSimError(f"cell {cell_name} is a latch; the levelized engine "
                                   "simulates flip-flops only (use simulator icarus)")
            env_pins = {p.name: conns.get(p.name) for p in cell.pins}
            state, clock_pin = {}, None
            if cell.ff is not None:
                clock_pin = "".join(expr_pins(cell.ff["clocked_on"])[:1])
                iq, iqn = cell.ff["outputs"]
                state = {iq: self._net(f"{inst}/{iq}"), iqn: self._net(f"{inst}/{iqn}")}
                self.internal.update(state.values())
                ffs.append((inst, cell, conns, state))
            for pin in cell.outputs:
                net = conns.get(pin.name)
                if net is None or net.startswith("1'b"):
                    continue
                if not pin.function:
                    raise GateSimError(f"output {pin.name} of cell {cell_name} has no liberty "
                                       "function (use simulator icarus)")
                ops = expr_pins(pin.function)
                key = (cell_name, pin.name)
                if key not in tables:
                    tables[key] = truth_table(pin.function, ops)
                srcs, opins = [], []
                for op in ops:
                    opins.append(f"@{clock_pin}" if op in state else op)
                    if op in state:
                        srcs.append(state[op])
                    elif op in env_pins:
                        srcs.append(self._net(env_pins[op] or "1'b0"))
                    else:
                        raise GateSimError(f"function of {cell_name}.{pin.name} names {op!r}")
                comb.append((self._net(net), srcs, tables[key]))
                self.node_pins.append((inst, pin.name, opins))
        for lhs, rhs in assigns:
            comb.append((self._net(lhs), [self._net(rhs)], 0b10))     # identity
            self.node_pins.append((None, None, [None]))
        self._levelize(comb)
        self._compile_ffs(ffs, tables)
        driven = {out for out, _, _ in comb}
        clock_ins = self.ff_fn["clock"][0] if len(self.ff_iq) else np.zeros((0, 1), np.int64)
        self.gated_clock = bool(driven & set(np.unique(clock_ins).tolist()))
        self.values = np.zeros(len(self.nets), dtype=np.uint8)
        self.values[1] = 1
        self.settle()

    def _net(self, name: str) -> int:
        idx = self.nets.get(name)
        if idx is None:
            idx = self.nets[name] = len(self.nets)
        return idx

    def _levelize(self, comb):
        n_nets = len(self.nets)
        driver = np.full(n_nets, -1, dtype=np.int64)
        for i, (out, _, _) in enumerate(comb):
            if driver[out] >= 0:
                name = next(k for k, v in self.nets.items() if v == out)
                raise GateSimError(f"net {name} has more than one driver")
            driver[out] = i
        level = np.zeros(len(comb), dtype=np.int64)
        # Kahn's algorithm over nodes: a node waits for the nodes driving its inputs
        users: list[list[int]] = [[] for _ in range(n_nets)]
        waiting = np.zeros(len(comb), dtype=np.int64)
        for i, (_, ins, _) in enumerate(comb):
            for s in set(ins):
                if driver[s] >= 0:
                    users[s].append(i)
                    waiting[i] += 1
        ready = [i for i in range(len(comb)) if waiting[i] == 0]
        done = 0
        while ready:
            nxt = []
            for i in ready:
                done += 1
                out = comb[i][0]
                for u in users[out]:
                    level[u] = max(level[u], level[i] + 1)
                    waiting[u] -= 1
                    if waiting[u] == 0:
                        nxt.append(u)
            ready = nxt
        if done != len(comb):
            raise GateSimError("the netlist has a combinational loop (use simulator icarus)")
        self.levels: list[_Level] = []
        order = np.argsort(level, kind="stable")
        bounds = np.searchsorted(level[order], np.arange(level.max() + 2 if len(comb) else 1))
        for lv in range(len(bounds) - 1):
            nodes = order[bounds[lv]:bounds[lv + 1]]
            if not len(nodes):
                continue
            k = max(len(comb[i][1]) for i in nodes)
            ins = np.zeros((len(nodes), max(k, 1)), dtype=np.int64)    # padding: net 1'b0
            for r, i in enumerate(nodes):
                ins[r, :len(comb[i][1])] = comb[i][1]
            self.levels.append(_Level(
                out=np.array([comb[i][0] for i in nodes], dtype=np.int64), ins=ins,
                weights=(1 << np.arange(ins.shape[1])).astype(np.int64),
                table=np.array([comb[i][2] for i in nodes], dtype=np.uint64),
                nodes=np.asarray(nodes, dtype=np.int64)))

    def _compile_ffs(self, ffs, tables):
        def fn_node(expr, cell, conns, state, what):
            ops = expr_pins(expr)
            key = (cell.name, what, expr)
            if key not in tables:
                tables[key] = truth_table(expr, ops)
            srcs = [state[o] if o in state else self._net(conns.get(o) or "1'b0") for o in ops]
            return srcs, tables[key]

        groups = {"next": [], "clock": [], "clear": [], "preset": []}
        self.ff_iq, self.ff_iqn, both = [], [], []
        for inst, cell, conns, state in ffs:
            ff = cell.ff
            iq, iqn = ff["outputs"]
            self.ff_iq.append(state[iq])
            self.ff_iqn.append(state[iqn])
            groups["next"].append(fn_node(ff["next_state"], cell, conns, state, "next"))
            groups["clock"].append(fn_node(ff["clocked_on"], cell, conns, state, "clock"))
            for g in ("clear", "preset"):
                groups[g].append(fn_node(ff[g], cell, conns, state, g) if ff.get(g)
                                 else ([0], 0))                    # constant 0: never active
            both.append({"L": 0, "H": 1}.get(ff.get("clear_preset_var1", "L"), 0))
        self.ff_iq = np.array(self.ff_iq, dtype=np.int64)
        self.ff_iqn = np.array(self.ff_iqn, dtype=np.int64)
        self.ff_both = np.array(both, dtype=np.uint8)
        self.ff_fn = {g: self._fn_arrays(v) for g, v in groups.items()}
        self.ff_clock_prev = None

    @staticmethod
    def _fn_arrays(nodes):
        k = max([len(s) for s, _ in nodes] or [1])
        ins = np.zeros((len(nodes), k), dtype=np.int64)
        for r, (s, _) in enumerate(nodes):
            ins[r, :len(s)] = s
        return ins, (1 << np.arange(k)).astype(np.int64), np.array([t for _, t in nodes],
                                                                     dtype=np.uint64)

    def _lookup(self, ins, weights, table) -> np.ndarray:
        """Truth-table nodes on the current values: ``table >> (in0 | in1 << 1 | ...) & 1``."""
        ix = self.values[ins].astype(np.int64) @ weights
        return ((table >> ix.astype(np.uint64)) & np.uint64(1)).astype(np.uint8)

    def _eval_fn(self, g):
        return self._lookup(*self.ff_fn[g])

    def _combinational(self):
        for lv in self.levels:
            self.values[lv.out] = self._lookup(lv.ins, lv.weights, lv.table)

    def _set_state(self, q: np.ndarray):
        self.values[self.ff_iq] = q
        self.values[self.ff_iqn] = 1 - q

    def _async(self) -> bool:
        """Apply active clears/presets; True if a state changed."""
        if not len(self.ff_iq):
            return False
        clr, pre = self._eval_fn("clear"), self._eval_fn("preset")
        if not (clr.any() or pre.any()):
            return False
        q = self.values[self.ff_iq].copy()
        new = np.where(clr & pre, self.ff_both, np.where(clr, 0, np.where(pre, 1, q)))
        new = new.astype(np.uint8)
        if np.array_equal(new, q):
            return False
        self._set_state(new)
        return True

    def settle(self):
        for _ in range(8):
            self._combinational()
            if not self._async():
                if len(self.ff_iq):
                    self.ff_clock_prev = self._eval_fn("clock")
                return
        raise GateSimError("asynchronous set/reset did not settle")

    def step(self, net_idx: np.ndarray, vals: np.ndarray):
        """Set nets ``net_idx`` (input port bits) to ``vals``; flip-flops whose ``clocked_on``
        rose load ``next_state`` (from the values before this step); settle."""
        if not len(self.ff_iq):
            self.values[net_idx] = vals
            self.settle()
            return
        nxt = self._eval_fn("next")                 # before the step: D as the edge sees it
        self.values[net_idx] = vals
        if self.gated_clock:                        # a clock through logic: settle it first
            self._combinational()
        clk_now = self._eval_fn("clock")
        rose = (clk_now == 1) & (self.ff_clock_prev == 0)
        if rose.any():
            q = self.values[self.ff_iq].copy()
            q[rose] = nxt[rose]
            self._set_state(q)
        self.settle()
