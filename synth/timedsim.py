"""Timing-aware gate-level simulation: every transition of every net, glitches included.

The ``timed`` engine of ``--activity sim-timed`` (:func:`tcgen.synth.activity.simulate_timed`
drives it).  The zero-delay engines (:mod:`tcgen.synth.gatesim`, Icarus and Verilator on the
cell functions) let each net change at most once per clock edge: the functional transitions.
Real gates see their inputs arrive at different times and can switch several times before
they settle -- glitches, which a multiplier's partial-product tree produces in numbers.  Here
each net carries, per clock cycle, its *waveform*: its value when the cycle opens and the
times of its transitions.

**Delays.**  Each cell arc's delay is OpenSTA's, from the flow's own timing of the same
netlist (``write_sdf`` after the flow's constraints: :func:`tcgen.synth.sta.write_sdf`), read
from the SDF by :func:`read_sdf`: per arc (input pin -> output pin) a rise delay and a fall
delay (of the output), at each instance's own load and input slew.  A flip-flop's output
follows its state with the clock -> output arc.  A conditional arc (``COND``) takes the
largest of its conditions; ``INTERCONNECT`` delays (zero without parasitics) are added to the
load pin's arcs.  A negative delay -- OpenSTA extrapolating a cell's NLDM table below its
first input slew, which the flow's ideal input transitions reach (nangate45's NOR2_X1 fall:
-4 ps) -- is taken as 0, as a Verilog simulator takes it (:attr:`TimedSim.negative_arcs`
counts them).

**Model.**  Verilog's, for a cell with specify path delays:

* a cell evaluates its function on its input pins the instant one changes;
* each change of that evaluated value schedules, after the delay of the arc from the input
  that changed (rise or fall by the new value; inputs changing at the same instant: the
  smallest of their delays), an update of the output to the value the cell evaluates *at that
  time* (Icarus's vvp ``modpath``).  With equal delays a pulse narrower than the delay does not
  pass; with unequal ones an output pulse can be as narrow as two arcs' difference;
* ``pulse="inertial"`` (the default) adds IEEE 1364's default pulse limits (§14.6: reject
  limit = error limit = the path delay): an output pulse narrower than the path delay of its
  trailing transition is rejected, both its transitions vanish.  A real gate does not swing
  fully on a pulse much shorter than its own delay, which is what this models;
  ``pulse="icarus"`` omits it -- Icarus implements no pulse limits, and in that mode the engine
  and Icarus on the vendor models with the same SDF (:func:`tcgen.synth.activity.simulate`
  with ``sdf``) agree on every net's transition count (``tb/test_timed.py``): the reference
  the engine is checked against.  The two bracket the glitch count a gate-level simulator
  gives; docs/ppa.md reports both.

**Clock cycles.**  The testbench's schedule (:mod:`tcgen.synth.activity`): inputs change at
the falling edge (t = 0 of a cycle of ``period``), the clock rises at ``period / 2`` and the
flip-flops load.  A cycle opens from the settled values of the zero-delay simulation, which
also gives the sources' values: the input ports' before and after the falling edge, the
flip-flops' states before and after the rising edge.  So the engine assumes the netlist meets
timing (every flip-flop loads its zero-delay value); transitions that arrive after the cycle's
end are still counted in the cycle that caused them (:attr:`TimedSim.late` counts them: a
unit far over its clock has many).  A cycle's last value of every net must equal the next
cycle's settled opening value; the engine checks that itself.

Vectorized with numpy over the cells of a logic level and the cycles of a batch; the event
scan runs over the candidate positions of a level (at most inputs x transitions per input).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["read_sdf", "SdfDelays", "TimedSim", "TimedSimError", "PULSE_MODELS"]

#: how narrow output pulses are treated (module doc)
PULSE_MODELS = ("inertial", "icarus")

FS_PER_NS = 1_000_000
INF = np.int64(1) << np.int64(60)


class TimedSimError(ValueError):
    """The SDF cannot be read, or the netlist cannot be simulated with delays (a clock
    through logic); the message names the cause."""


@dataclass
class SdfDelays:
    """``arcs``: (instance, input pin, output pin) -> (rise ns, fall ns) of the output;
    ``interconnect``: "instance/pin" of a load -> its largest interconnect delay (ns)."""
    arcs: dict
    interconnect: dict
    timescale_ns: float


_SDF_TOKEN = re.compile(r'\s*(?:(\()|(\))|("(?:[^"\\]|\\.)*")|([^\s()]+))')


def _sexpr(text: str):
    """The SDF as nested lists of strings (quotes kept off)."""
    stack: list[list] = [[]]
    pos, n = 0, len(text)
    while pos < n:
        m = _SDF_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip():
                raise TimedSimError(f"SDF: cannot read at offset {pos}: {text[pos:pos + 40]!r}")
            break
        pos = m.end()
        if m.group(1):
            stack.append([])
        elif m.group(2):
            if len(stack) < 2:
                raise TimedSimError("SDF: unbalanced parentheses")
            done = stack.pop()
            stack[-1].append(done)
        elif m.group(3):
            stack[-1].append(m.group(3)[1:-1])
        else:
            stack[-1].append(m.group(4))
    if len(stack) != 1 or len(stack[0]) != 1:
        raise TimedSimError("SDF: unbalanced parentheses")
    return stack[0][0]


def _triple(v) -> float:
    """An SDF value ``(min:typ:max)``, ``(min::max)`` or ``(v)``: typ if given, else max."""
    if not isinstance(v, list) or len(v) != 1:
        raise TimedSimError(f"SDF: cannot read delay value {v!r}")
    parts = v[0].split(":")
    if len(parts) == 3:
        pick = parts[1] or parts[2] or parts[0]
    elif len(parts) == 1:
        pick = parts[0]
    else:
        raise TimedSimError(f"SDF: cannot read delay value {v[0]!r}")
    try:
        return float(pick)
    except ValueError:
        raise TimedSimError(f"SDF: cannot read delay value {v[0]!r}") from None


def _port(p) -> str:
    """An IOPATH port: ``A`` or ``(posedge CLK)`` -> the pin name."""
    if isinstance(p, list):
        return p[-1]
    return p


_UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0, "ps": 1e-3, "fs": 1e-6}


def read_sdf(text: str) -> SdfDelays:
    """The delays of an SDF file (OpenSTA's ``write_sdf``: ABSOLUTE IOPATH and INTERCONNECT,
    optionally under COND), scaled to ns by its TIMESCALE."""
    top = _sexpr(text)
    if not top or top[0] != "DELAYFILE":
        raise TimedSimError("SDF: not a DELAYFILE")
    scale = 1.0
    arcs: dict = {}
    inter: dict = {}
    for item in top[1:]:
        if not isinstance(item, list) or not item:
            continue
        if item[0] == "TIMESCALE":
            m = re.fullmatch(r"(1|10|100)(?:\.0*)?\s*(s|ms|us|ns|ps|fs)", "".join(item[1:]))
            if not m:
                raise TimedSimError(f"SDF: cannot read TIMESCALE {' '.join(item[1:])!r}")
            scale = int(m.group(1)) * _UNITS[m.group(2)]
        elif item[0] == "CELL":
            inst = ""
            for sub in item[1:]:
                if isinstance(sub, list) and sub and sub[0] == "INSTANCE":
                    inst = sub[1] if len(sub) > 1 else ""
            for sub in item[1:]:
                if not (isinstance(sub, list) and sub and sub[0] == "DELAY"):
                    continue
                for kind in sub[1:]:
                    if not (isinstance(kind, list) and kind):
                        continue
                    if kind[0] != "ABSOLUTE":
                        raise TimedSimError(f"SDF: {kind[0]} delays are not supported")
                    for entry in kind[1:]:
                        _sdf_entry(entry, inst, scale, arcs, inter)
    return SdfDelays(arcs, inter, scale)


def _sdf_entry(entry, inst, scale, arcs, inter):
    if not isinstance(entry, list) or not entry:
        return
    if entry[0] == "COND":                     # (COND expr (IOPATH ...)): the largest condition
        for sub in entry[1:]:
            if isinstance(sub, list):
                _sdf_entry(sub, inst, scale, arcs, inter)
        return
    if entry[0] == "IOPATH":
        src, dst, vals = _port(entry[1]), entry[2], entry[3:]
        if not vals:
            raise TimedSimError(f"SDF: IOPATH {src} {dst} of {inst} has no delay")
        rise = _triple(vals[0]) * scale
        fall = _triple(vals[1]) * scale if len(vals) > 1 else rise
        key = (inst, src, dst)
        old = arcs.get(key)
        arcs[key] = (rise, fall) if old is None else (max(old[0], rise), max(old[1], fall))
    elif entry[0] == "INTERCONNECT":
        load = entry[2]
        vals = [_triple(v) * scale for v in entry[3:]]
        if vals:
            inter[load] = max(inter.get(load, 0.0), max(vals))


class TimedSim:
    """A compiled netlist (:class:`tcgen.synth.gatesim.GateSim`) with delays: :meth:`run`
    takes the sources' values per cycle and returns every net's transition count.

    ``period_ns`` is the clock period; ``resolution_fs`` rounds every delay (1 fs: the SDF's
    digits; Icarus with the vendor models' ``timescale 1ns/10ps`` rounds to 10 ps).
    ``pulse``: ``inertial`` (the default: IEEE 1364's default pulse limits) or ``icarus``
    (no pulse limit: Icarus's behaviour; see the module doc)."""

    def __init__(self, sim, sdf: SdfDelays, period_ns: float, resolution_fs: int = 1,
                 pulse: str = "inertial"):
        if pulse not in PULSE_MODELS:
            raise TimedSimError(f"pulse model must be one of {', '.join(PULSE_MODELS)}, "
                                f"got {pulse!r}")
        self.pulse = pulse
        if getattr(sim, "gated_clock", False):
            raise TimedSimError("the netlist clocks flip-flops through logic (a gated clock); "
                                "the timed engine needs the clock port on every clock pin")
        self.sim = sim
        self.resolution = int(resolution_fs)
        self.period = self._fs(period_ns)
        self.half = self._fs(period_ns / 2)
        n_nets = len(sim.nets)
        driven = np.zeros(n_nets, dtype=bool)
        for lv in sim.levels:
            driven[lv.out] = True
        self.sources = np.flatnonzero(~driven)
        self.missing_arcs = 0
        self.negative_arcs = 0
        self.delays = [self._level_delays(lv, sdf) for lv in sim.levels]
        self.late = 0
        self.n_nets = n_nets
        self.kept = None        # keep=True: the last batch's waveforms (:meth:`waveform`)
        self.keep = False

    def _fs(self, ns: float) -> int:
        r = self.resolution
        return int(round(ns * FS_PER_NS / r)) * r

    def _level_delays(self, lv, sdf: SdfDelays) -> np.ndarray:
        n, k = lv.ins.shape
        d = np.zeros((n, k, 2), dtype=np.int64)
        for r, node in enumerate(lv.nodes.tolist()):
            inst, out_pin, ops = self.sim.node_pins[node]
            if inst is None:
                continue                           # an assign: no cell, no delay
            for j, op in enumerate(ops):
                pin = op[1:] if op.startswith("@") else op
                arc = sdf.arcs.get((inst, pin, out_pin))
                if arc is None:                    # no arc from this pin: the output's slowest
                    cands = [v for (i, _, o), v in sdf.arcs.items()
                             if i == inst and o == out_pin] if self.missing_arcs < 10000 else []
                    arc = (max(c[0] for c in cands), max(c[1] for c in cands)) if cands \
                        else (0.0, 0.0)
                    self.missing_arcs += 1
                extra = 0.0 if op.startswith("@") else sdf.interconnect.get(f"{inst}/{pin}",
                                                                               0.0)
                for k in (0, 1):
                    v = arc[k] + extra
                    if v < 0:                      # an NLDM table extrapolated below its
                        self.negative_arcs += 1    # first slew: causality needs >= 0
                        v = 0.0
                    d[r, j, k] = self._fs(v)
        return d

    def run(self, pre: np.ndarray, mid: np.ndarray, post: np.ndarray,
            batch: int | None = None) -> np.ndarray:
        """Transitions of every net over the cycles.  ``pre`` / ``mid`` / ``post``: (sources,
        cycles) values of :attr:`sources` before the falling edge, after it, and after the
        rising edge.  Returns (nets,) int64 counts (sources included: their changes at the
        two edges); :attr:`late` adds the transitions at or after the cycle's end."""
        n_src, n = pre.shape
        if n_src != len(self.sources) or mid.shape != pre.shape or post.shape != pre.shape:
            raise ValueError("TimedSim.run: pre/mid/post must be (len(sources), cycles)")
        if batch is None:
            batch = int(max(1, min(256, (1 << 22) // max(1, self.n_nets))))
        counts = np.zeros(self.n_nets, dtype=np.int64)
        self.late = 0
        for s in range(0, n, batch):
            sl = slice(s, min(n, s + batch))
            counts += self._batch(pre[:, sl], mid[:, sl], post[:, sl])
        return counts

    def _batch(self, pre, mid, post) -> np.ndarray:
        b = pre.shape[1]
        n_nets = self.n_nets
        counts = np.zeros(n_nets, dtype=np.int64)
        # storage: per net, its group (0 = sources, L + 1 = level L) and row in that group
        group = np.zeros(n_nets, dtype=np.int64)
        row = np.zeros(n_nets, dtype=np.int64)
        group[self.sources] = 0
        row[self.sources] = np.arange(len(self.sources))
        st = np.stack([np.where(pre != mid, 0, INF), np.where(mid != post, self.half, INF)],
                      axis=-1).astype(np.int64)
        st.sort(axis=-1)
        inits: list[np.ndarray] = [pre.astype(np.uint8)]          # (rows, b)
        waves: list[np.ndarray] = [st]                             # (rows, b, E)
        counts[self.sources] = (st < INF).sum(axis=(1, 2))
        for li, (lv, d) in enumerate(zip(self.sim.levels, self.delays)):
            group[lv.out] = li + 1
            row[lv.out] = np.arange(len(lv.out))
            v0, t_in = self._gather(lv.ins, group, row, inits, waves, b)
            init_out, t_out = self._level(lv, d, v0, t_in)
            inits.append(init_out)
            waves.append(t_out)
            c = (t_out < INF)
            counts[lv.out] = c.sum(axis=(1, 2))
            self.late += int(((t_out >= self.period) & c).sum())
            # a cycle ends where the next one opens: the last value == the next settled one
            final = init_out ^ (c.sum(axis=-1) & 1).astype(np.uint8)
            if b > 1 and not np.array_equal(final[:, :-1], init_out[:, 1:]):
                bad = np.argwhere(final[:, :-1] != init_out[:, 1:])[0]
                raise RuntimeError(f"timed simulation: net {int(lv.out[bad[0]])} ends a cycle "
                                   "at a value other than its settled one (engine bug)")
        if self.keep:
            self.kept = (group, row, inits, waves)
        return counts

    def waveform(self, net: int, cycle: int) -> tuple[int, list[float]]:
        """(opening value, transition times in ns) of ``net`` in ``cycle`` of the last batch
        run with :attr:`keep` set (for tests and debugging)."""
        group, row, inits, waves = self.kept
        g, r = group[net], row[net]
        t = waves[g][r, cycle]
        return int(inits[g][r, cycle]), [float(x) / FS_PER_NS for x in t[t < INF]]

    @staticmethod
    def _gather(ins, group, row, inits, waves, b):
        n, k = ins.shape
        g, r = group[ins], row[ins]
        e = max(waves[x].shape[-1] for x in np.unique(g).tolist())
        v0 = np.zeros((n, k, b), dtype=np.uint8)
        t = np.full((n, k, b, e), INF, dtype=np.int64)
        for x in np.unique(g).tolist():
            m = g == x
            v0[m] = inits[x][r[m]]
            w = waves[x]
            t[m, :, :w.shape[-1]] = w[r[m]]
        return v0, t

    def _level(self, lv, d, v0, t_in):
        """One level: (init (nodes, b), waveforms (nodes, b, E_out)) from the inputs'."""
        n, k, b, e = t_in.shape
        weights = lv.weights.astype(np.int64)
        table = lv.table
        idx0 = np.tensordot(v0.astype(np.int64), weights, axes=([1], [0]))        # (n, b)
        init_out = ((table[:, None] >> idx0.astype(np.uint64)) & np.uint64(1)).astype(np.uint8)
        per_node = (t_in < INF).sum(axis=-1).max(axis=(1, 2))          # events per input
        used = int(per_node.max(initial=0))
        if used == 0:
            return init_out, np.full((n, b, 1), INF, dtype=np.int64)
        # nodes in order of their inputs' event counts, in chunks that pad each to its chunk's
        # largest (a glitchy net does not widen the whole level) and bound the work arrays
        order = np.argsort(per_node, kind="stable")
        bucket = np.ceil(np.log2(np.maximum(per_node[order], 1))).astype(np.int64)
        parts = []
        starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
        for s0, s1 in zip(starts, list(starts[1:]) + [n]):
            e = max(1, int(per_node[order[s1 - 1]]))
            step = max(1, (1 << 22) // max(1, b * k * e))
            for s in range(s0, s1, step):
                sel = order[s:min(s1, s + step)]
                parts.append((sel, self._scan(t_in[sel, :, :, :e], v0[sel], init_out[sel],
                                              d[sel], table[sel], weights, self.pulse)))
        width = max(p.shape[-1] for _, p in parts)
        out_t = np.full((n, b, width), INF, dtype=np.int64)
        for sel, p in parts:
            out_t[sel, :, :p.shape[-1]] = p
        return init_out, out_t

    @staticmethod
    def _scan(t_in, v0, init_out, d, table, weights, pulse):
        n, k, b, e = t_in.shape
        m_len = k * e
        cand = t_in.transpose(0, 2, 1, 3).reshape(n, b, m_len)
        pin = np.broadcast_to(np.repeat(np.arange(k), e), (n, b, m_len))
        order = np.argsort(cand, axis=-1, kind="stable")
        cand = np.take_along_axis(cand, order, axis=-1)
        pin = np.take_along_axis(pin, order, axis=-1)
        valid = cand < INF
        # the truth-table index just after each candidate instant: each transition flips one
        # input, so it is the opening index xor the running xor of the flipped inputs' bits
        idx0 = (v0.transpose(0, 2, 1).astype(np.int64) * weights).sum(axis=-1)   # (n, b)
        flip = np.where(valid, np.left_shift(1, pin), 0).astype(np.int64)
        idx = np.bitwise_xor.accumulate(flip, axis=-1) ^ idx0[..., None]
        out = ((table[:, None, None] >> idx.astype(np.uint64)) & np.uint64(1)).astype(np.uint8)
        # only the last candidate of a group of equal instants evaluates
        last = np.ones_like(valid)
        last[..., :-1] = cand[..., :-1] != cand[..., 1:]
        ev = valid & last
        ar = np.arange(m_len)
        p = np.maximum.accumulate(np.where(ev, ar, -1), axis=-1)
        pp = np.full_like(p, -1)
        pp[..., 1:] = p[..., :-1]
        prev = np.where(pp >= 0, np.take_along_axis(out, np.maximum(pp, 0), axis=-1),
                        init_out[..., None])
        change = ev & (out != prev)
        # the arc delay of each candidate's pin, both output directions; a group's smallest
        node = np.arange(n)[:, None, None]
        dr = d[node, pin, 0]
        df = d[node, pin, 1]
        for s in range(1, k):
            same = np.zeros_like(valid)
            same[..., s:] = cand[..., s:] == cand[..., :-s]
            sr = np.full_like(dr, INF)
            sf = np.full_like(df, INF)
            sr[..., s:] = dr[..., :-s]
            sf[..., s:] = df[..., :-s]
            dr = np.where(same, np.minimum(dr, sr), dr)
            df = np.where(same, np.minimum(df, sf), df)
        dsel = np.where(out == 1, dr, df)
        # each change sends, after its delay, the cell's evaluated value *at that time* (vvp's
        # modpath): merge the changes (kind 0) and the sends (kind 1) in time order, a change
        # before a send at the same instant, and carry the last evaluated value to each send
        send = np.where(change, cand + dsel, INF)
        key = np.concatenate([np.where(change, cand, INF) * 2, send * 2 + 1], axis=-1)
        val = np.concatenate([out, out], axis=-1)
        order = np.argsort(key, axis=-1, kind="stable")
        key = np.take_along_axis(key, order, axis=-1)
        val = np.take_along_axis(val, order, axis=-1)
        live = key < INF * 2
        is_change = live & (key % 2 == 0)
        at = np.maximum.accumulate(np.where(is_change, np.arange(key.shape[-1]), -1), axis=-1)
        sampled = np.where(at >= 0, np.take_along_axis(val, np.maximum(at, 0), axis=-1),
                           init_out[..., None])
        is_send = live & (key % 2 == 1)
        # the output after each send: the sampled value there, held between sends
        last = np.maximum.accumulate(np.where(is_send, np.arange(key.shape[-1]), -1), axis=-1)
        held = np.where(last >= 0, np.take_along_axis(sampled, np.maximum(last, 0), axis=-1),
                        init_out[..., None])
        before = np.concatenate([init_out[..., None], held[..., :-1]], axis=-1)
        flips = is_send & (sampled != before)
        if pulse == "inertial":
            delay = np.take_along_axis(np.concatenate([np.zeros_like(dsel), dsel], axis=-1),
                                       order, axis=-1)
            return TimedSim._reject(flips, key // 2, delay)
        slots = np.where(flips, key // 2, INF)
        slots.sort(axis=-1)
        width = max(1, int((slots < INF).sum(axis=-1).max(initial=0)))
        return slots[..., :width]

    @staticmethod
    def _reject(flips, times, delay):
        """IEEE 1364's default pulse limits on the output's transitions (in time order): a
        pulse narrower than the path delay of its trailing transition is rejected -- both of
        its transitions vanish, and the transitions around it are compared in turn (a stack)."""
        n, b, _ = flips.shape
        cols = np.flatnonzero(flips.any(axis=(0, 1)))
        kept = np.full((n, b, max(1, len(cols))), INF, dtype=np.int64)
        top = np.full((n, b), -1, dtype=np.int64)
        ii, jj = np.indices((n, b))
        for m in cols.tolist():
            f = flips[..., m]
            t = times[..., m]
            prev = kept[ii, jj, np.maximum(top, 0)]
            narrow = f & (top >= 0) & (t - prev < delay[..., m])
            push = f & ~narrow
            top = np.where(narrow, top - 1, top)
            top = np.where(push, top + 1, top)
            slot = np.maximum(top, 0)
            kept[ii, jj, slot] = np.where(push, t, kept[ii, jj, slot])
        kept = np.where(np.arange(kept.shape[-1]) <= top[..., None], kept, INF)
        width = max(1, int((top + 1).max(initial=0)))
        return kept[..., :width]
