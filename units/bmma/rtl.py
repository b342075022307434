"""BMMA RTL: the bit tensor-core array, its INT8 MAC counterpart and the fused BNN epilogue.

Paper 000 (BTC-BNN, Li & Su): §1.1 ``bmma m8n8k128`` (D = C + POPC(A XOR B)); notes §2 design
points (a) fully parallel, (b) folded like Turing, (c) output-stationary accumulators that chain
without the GPU's +6-cycle accumulator-dependency penalty, (d) fused epilogue (§1.7).

Deviations from the paper, all deliberate and named:

* ``ops``: Turing has XOR only (``ops=xor`` is the faithful build); ``and`` (Ampere's
  ``.and.popc``) and a run-time select (``xor_and``) are added.
* Output-stationary chaining: a request with ``chain=1`` adds onto the accumulator (the previous
  request's D) instead of its C field, so K-chaining on one accumulator issues back to back.
* The epilogue handles γ < 0 and γ = 0 channels (a 2-bit per-channel *sense*), which neither the
  paper nor its code does (notes §1.7 [D]).
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from tcgen.hw.intarith import array_mul, compress
from tcgen.hw.layout import flat

from . import layouts

__all__ = ["BmmaArray", "Int8MacArray", "BnnEpilogue"]


class _FoldedArray(wiring.Component):
    """Output-stationary M×N array of K-long reductions, folded over ``fold`` cycles.

    Interface (streams, valid/ready)::

        req  In(stream)  payload = {a, b, c, op, chain, emit}   (field order = bit order, a at
                         the LSBs; described in :func:`.layouts.array_request`, the port is
                         its flat view)
        d    Out(stream) payload = D (M·N accumulators of acc_width bits, row-major, (0,0) at
                         the LSBs)

    Operation: a request occupies the array for ``fold`` cycles.  In cycle f (0 ≤ f < fold) the
    array reduces elements ``[f·K/F, (f+1)·K/F)`` of every A row and B column (in payload bit
    order; a sum does not depend on the order) and adds them, in the same compressor tree, to the
    base: the C field in cycle 0 of a request with ``chain = 0``, else the accumulator.  The
    request's payload must stay stable while valid is high (the amaranth.lib.stream rule); the
    array takes the request (ready = 1) in its last cycle.

    Timing: ``latency = fold`` cycles from valid to D valid when nothing stalls; one request
    every ``fold`` cycles, chained (same-accumulator) requests included: there is no dependency
    penalty.  The accumulator is the D register, so a request waits (ready = 0) while an emitted
    D has not been taken; ``emit = 0`` requests update the accumulator without output.
    Sync reset clears the accumulator (chain after reset adds onto 0) and any pending output.
    """

    ELEM_BITS = 1

    def __init__(self, params):
        p = self.params = params
        self.req_layout = flat(layouts.array_request(p))
        self.latency = p.fold
        super().__init__({"req": In(stream.Signature(self.req_layout)),
                          "d": Out(stream.Signature(flat(layouts.array_result(p))))})

    # subclasses: the bit columns (weights 2**i) of one output's K/F-element partial sum
    def partial_columns(self, m, a_row, b_col, op, name):
        raise NotImplementedError

    def partial_constant(self) -> int:
        return 0

    def elaborate(self, platform):
        m = Module()
        p = self.params
        eb, w, kc = self.ELEM_BITS, p.acc_width, p.chunk * self.ELEM_BITS
        req = self.req.payload

        # fold sequencer -------------------------------------------------------------------
        can_advance = ~self.d.valid | self.d.ready          # the D register can be written
        advance = Signal()
        first = Signal()
        last = Signal()
        if p.fold > 1:
            step = Signal(range(p.fold))
            m.d.comb += [first.eq(step == 0), last.eq(step == p.fold - 1)]
            with m.If(advance):
                m.d.sync += step.eq(Mux(last, 0, step + 1))
        else:
            step = Const(0, 1)
            m.d.comb += [first.eq(1), last.eq(1)]
        m.d.comb += [advance.eq(self.req.valid & can_advance),
                     self.req.ready.eq(can_advance & last)]

        # operand chunks: the F-way select is shared by all outputs of a row / column ---------
        def chunk_of(field, index, kind):
            sig = Signal(kc, name=f"{kind}{index}_chunk")
            base = index * p.k * eb
            if p.fold == 1:
                m.d.comb += sig.eq(field[base:base + kc])
            else:
                with m.Switch(step):
                    for f in range(p.fold):
                        with m.Case(f):
                            m.d.comb += sig.eq(field[base + f * kc:base + (f + 1) * kc])
            return sig

        a_rows = [chunk_of(req.a, i, "a") for i in range(p.m)]
        b_cols = [chunk_of(req.b, j, "b") for j in range(p.n)]

        # M×N channels: partial sum + base in one compressor tree --------------------------------
        acc = Signal(p.m * p.n * w)
        take_c = Signal()
        m.d.comb += take_c.eq(first & ~req.chain)
        nxt = []
        const = self.partial_constant()
        for i in range(p.m):
            for j in range(p.n):
                e = i * p.n + j
                name = f"ch{i}_{j}"
                base = Signal(w, name=f"{name}_base")
                m.d.comb += base.eq(Mux(take_c, req.c[e * w:(e + 1) * w], acc[e * w:(e + 1) * w]))
                cols = self.partial_columns(m, a_rows[i], b_cols[j], req.op, name)
                cols = [list(c) for c in cols[:w]] + [[] for _ in range(w - len(cols))]
                for bit in range(w):
                    cols[bit].append(base[bit])
                    if (const >> bit) & 1:
                        cols[bit].append(Const(1, 1))
                nxt.append(compress(m, cols, w, name))
        with m.If(advance):
            m.d.sync += acc.eq(Cat(*nxt))

        # output ---------------------------------------------------------------------------------
        with m.If(self.d.ready):
            m.d.sync += self.d.valid.eq(0)
        with m.If(advance & last & req.emit):
            m.d.sync += self.d.valid.eq(1)
        m.d.comb += self.d.payload.eq(acc)
        return m


class BmmaArray(_FoldedArray):
    """``bmma_array``: D = (chain ? acc : C) + popc(A op B) over M×N outputs, K bits each.

    Parameters: :class:`~tcgen.units.bmma.params.BmmaArrayParams` (m, n, k, fold, acc_width, ops).

    Attributes
    ----------
    req : In(stream.Signature(StructLayout))
        a: M·K bits, row i at [i·K, (i+1)·K) as K/32 MSB-first little-endian words (the A tile's
        memory image; FSB for K = 128); b: N·K bits, column j likewise; c: M·N·acc_width;
        op: 0 = XOR, 1 = AND (ignored unless ops = xor_and); chain; emit.
    d : Out(stream.Signature(M·N·acc_width))
        D, row-major, two's complement, wrapped to acc_width bits.
    latency : int
        ``fold`` (cycles from request valid to D valid, no stalls).

    Each output is one Dadda tree (tcgen.hw.intarith.compress) over its K/F product bits at weight 0
    plus the acc_width base bits, then one carry-propagate adder: the popcount and the
    accumulation share the tree (the sum is exact mod 2**acc_width, so order is immaterial).
    """

    def partial_columns(self, m, a_row, b_col, op, name):
        ops = self.params.ops
        prod = Signal(len(a_row), name=f"{name}_prod")
        if ops == "xor":
            m.d.comb += prod.eq(a_row ^ b_col)
        elif ops == "and":
            m.d.comb += prod.eq(a_row & b_col)
        else:
            m.d.comb += prod.eq(Mux(op, a_row & b_col, a_row ^ b_col))
        return [[prod[t] for t in range(len(prod))]]


class Int8MacArray(_FoldedArray):
    """``int8_mac_array``: D = (chain ? acc : C) + A·B with signed INT8 A (M×K) and B (K×N).

    The same sequencer, streams and accumulator as :class:`BmmaArray` (so the two compare like
    with like); each product is a structural Baugh–Wooley array multiplier
    (tcgen.hw.intarith.array_mul) and the K/F products of an output plus its base are summed in one
    Dadda tree (tcgen.hw.intarith.compress).  Products enter the tree with their sign bit inverted
    (p + 2**15 is unsigned) and the constant −(K/F)·2**15 is added once, which avoids
    sign-extension columns.  Payload: a element (i, k) at bits [(i·K + k)·8, +8); b column j
    contiguous; op is unused.
    """

    ELEM_BITS = 8

    def partial_constant(self) -> int:
        return (-self.params.chunk * (1 << 15)) % (1 << self.params.acc_width)

    def partial_columns(self, m, a_row, b_col, op, name):
        cols = [[] for _ in range(16)]
        for t in range(self.params.chunk):
            a = a_row[8 * t:8 * t + 8].as_signed()
            b = b_col[8 * t:8 * t + 8].as_signed()
            prod = array_mul(m, a, b, True, True, name=f"{name}_mul{t}")
            for bit in range(15):
                cols[bit].append(prod[bit])
            cols[15].append(~prod[15])
        return cols


class BnnEpilogue(wiring.Component):
    """``bnn_epilogue``: the fused BNN epilogue (notes §1.7, §2 design point d).

    Per item (one D row: n output channels of one image-pixel) and channel o::

        v_o   = k_eff − 2·acc_o + res_o                       (the ±1 fix-up + residual)
        bit_o = GE: v_o ≥ τ_o | LT: v_o < τ_o | ZERO: 0 | ONE: 1   (sense_o; γ>0, γ<0, γ=0)
        pool  = pool | bits; on ``last``: out = pool (channel 0 = MSB), pool = 0

    so a 2×2 (or ceil-mode partial) OR max-pool is the items of one window sent with ``last``
    on the final one; ``last`` on every item disables pooling.  v − τ is one Dadda tree
    (tcgen.hw.intarith.compress) of four operands, exact in ``v_width`` bits; its sign is the
    compare.

    Attributes
    ----------
    req : In(stream.Signature(StructLayout))
        acc (n × acc_width, signed), res (n × res_width, signed; absent if res_width = 0),
        tau (n × tau_width, signed), sense (n × 2; absent if sense = false: the paper's
        v ≥ τ only), k_eff (k_width, unsigned), last (1).
    out : Out(stream.Signature(n))
        packed bits of one pool window, channel 0 at the MSB.
    latency : int
        1 (the window's last item to its output).
    """

    def __init__(self, params):
        p = self.params = params
        self.req_layout = flat(layouts.epilogue_request(p))
        self.latency = 1
        super().__init__({"req": In(stream.Signature(self.req_layout)),
                          "out": Out(stream.Signature(flat(layouts.epilogue_result(p))))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        req = self.req.payload
        vw = p.v_width
        ready = ~self.out.valid | self.out.ready
        advance = Signal()
        m.d.comb += [self.req.ready.eq(ready), advance.eq(self.req.valid & ready)]

        def signed_columns(cols, bits, weight, negate):
            """Add a signed operand (bits LSB first, two's complement) · 2**weight, or its
            negation, to the columns; returns the constant to add (sign-extension by flipping
            the MSB and subtracting 2**(msb weight); −x = ~x + 1)."""
            n = len(bits)
            const = 0
            for t, b in enumerate(bits):
                v = ~b if negate else b
                if t == n - 1:
                    v = ~v
                    const -= 1 << (weight + t)
                cols[weight + t].append(v)
            if negate:
                const += 1
                for t in range(weight):          # ~ of the implicit zero bits below weight
                    cols[t].append(Const(1, 1))
            return const

        bits = []
        for o in range(p.n):
            cols = [[] for _ in range(vw)]
            const = 0
            acc = req.acc[o * p.acc_width:(o + 1) * p.acc_width]
            const += signed_columns(cols, [acc[t] for t in range(p.acc_width)], 1, True)
            tau = req.tau[o * p.tau_width:(o + 1) * p.tau_width]
            const += signed_columns(cols, [tau[t] for t in range(p.tau_width)], 0, True)
            if p.res_width:
                res = req.res[o * p.res_width:(o + 1) * p.res_width]
                const += signed_columns(cols, [res[t] for t in range(p.res_width)], 0, False)
            for t in range(p.k_width):
                cols[t].append(req.k_eff[t])
            const %= 1 << vw
            for t in range(vw):
                if (const >> t) & 1:
                    cols[t].append(Const(1, 1))
            diff = compress(m, cols, vw, f"v{o}")
            ge = ~diff[vw - 1]
            bit = Signal(name=f"bit{o}")
            if p.sense:
                sense = req.sense[2 * o:2 * o + 2]
                m.d.comb += bit.eq(Mux(sense[1], sense[0], ge ^ sense[0]))
            else:                                   # paper-faithful: v >= tau only
                m.d.comb += bit.eq(ge)
            bits.append(bit)

        packed = Cat(*reversed(bits))          # channel 0 at the MSB
        pool = Signal(p.n)
        with m.If(self.out.ready):
            m.d.sync += self.out.valid.eq(0)
        with m.If(advance):
            with m.If(req.last):
                m.d.sync += [pool.eq(0), self.out.payload.eq(pool | packed),
                             self.out.valid.eq(1)]
            with m.Else():
                m.d.sync += pool.eq(pool | packed)
        return m


# -- full-adder census (PPA study: popcount-128 against the 128 − 8 = 120 full-adder bound) ----
def compressor_census(build) -> dict:
    """Count the full adders (3:2) and half adders (2:2) that ``build(m)`` instantiates through
    tcgen.hw.intarith.compress (its Dadda trees plus each final carry-propagate adder read as a
    ripple-carry adder); see :func:`tcgen.hw.intarith.adder_census`."""
    from tcgen.hw.intarith import adder_census
    m = Module()
    m._MustUse__silence = True          # inspected, never elaborated
    with adder_census() as census:
        build(m)
    return {k: census[k] for k in ("tree_fa", "tree_ha", "cpa_fa", "cpa_ha", "fa", "ha")}


def popcount_census(n: int = 128) -> dict:
    """Census of tcgen.hw.intarith.popcount over ``n`` bits, with the lower bound n − bits(n)."""
    from tcgen.hw.intarith import popcount
    census = compressor_census(lambda m: popcount(m, Signal(n, name="x")))
    census["bound"] = n - n.bit_length()
    return census
