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

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Shape, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from tcgen.hw.dedup import shared
from tcgen.hw.generate import index_cases
from tcgen.hw.intarith import IntMul, IntMulParams, compress, int_dot
from tcgen.hw.layout import flat

from . import layouts

__all__ = ["BmmaArray", "Int8MacArray", "BnnEpilogue", "BmmaChannel", "Int8MacChannel",
           "ChannelParams", "EpilogueChannel", "EpilogueChannelParams", "BnnAffine",
           "AffineChannel", "AffineChannelParams", "BwnArray", "BwnChannel", "BwnChannelParams",
           "BnnLayer"]


@dataclass(frozen=True)
class ChannelParams:
    """What the logic of one output channel depends on (its content key, tcgen.hw.dedup)."""
    chunk: int            # elements of K reduced per cycle (K / fold)
    acc_width: int
    ops: str = ""         # BmmaChannel only: xor, and or xor_and


@dataclass(frozen=True)
class BwnChannelParams(ChannelParams):
    """:class:`BwnChannel`'s key: a ChannelParams and the activation width."""
    a_width: int = 8


class _Channel(wiring.Component):
    """One output channel of a folded array: ``nxt = base + partial``, ``base = take_c ? c : acc``.

    Attributes: a ``In(chunk·a_bits)``, b ``In(chunk·b_bits)`` (the A row's and B column's
    elements of this cycle; :meth:`a_bits` = :meth:`b_bits` = ``ELEM_BITS`` unless overridden),
    op ``In(1)`` (bmma ``ops = xor_and`` only), take_c ``In(1)``, c, acc ``In(acc_width)``,
    nxt ``Out(acc_width)`` (the next accumulator value, mod 2**acc_width).  Combinational.

    The bit columns of the partial sum (subclasses), then the base bits, then the bits of
    :meth:`partial_constant`, column by column, go into one Dadda tree
    (tcgen.hw.intarith.compress) and its carry-propagate adder.
    """

    ELEM_BITS = 1

    @classmethod
    def a_bits(cls, params) -> int:
        """Bits per element of A."""
        return cls.ELEM_BITS

    @classmethod
    def b_bits(cls, params) -> int:
        """Bits per element of B."""
        return cls.ELEM_BITS

    def __init__(self, params: ChannelParams):
        self.params = params
        w = params.acc_width
        sig = {"a": In(params.chunk * self.a_bits(params)),
               "b": In(params.chunk * self.b_bits(params))}
        if self.uses_op_for(params):
            sig["op"] = In(1)
        sig.update({"take_c": In(1), "c": In(w), "acc": In(w), "nxt": Out(w)})
        super().__init__(sig)

    @classmethod
    def uses_op_for(cls, params: ChannelParams) -> bool:
        """Whether the channel has the ``op`` input."""
        return False

    # subclasses: the bit columns (weights 2**i) of the chunk's partial sum
    def partial_columns(self, m):
        raise NotImplementedError

    def partial_constant(self) -> int:
        return 0

    def elaborate(self, platform):
        m = Module()
        w = self.params.acc_width
        base = Signal(w, name="base")
        m.d.comb += base.eq(Mux(self.take_c, self.c, self.acc))
        cols = self.partial_columns(m)
        cols = [list(c) for c in cols[:w]] + [[] for _ in range(w - len(cols))]
        const = self.partial_constant()
        for bit in range(w):
            cols[bit].append(base[bit])
            if (const >> bit) & 1:
                cols[bit].append(Const(1, 1))
        m.d.comb += self.nxt.eq(compress(m, cols, w, "ch"))
        return m


class BmmaChannel(_Channel):
    """A :class:`BmmaArray` channel: the partial sum is popc(a op b), all bits at weight 0."""

    @classmethod
    def uses_op_for(cls, params: ChannelParams) -> bool:
        return params.ops == "xor_and"

    def partial_columns(self, m):
        ops = self.params.ops
        prod = Signal(len(self.a), name="prod")
        if ops == "xor":
            m.d.comb += prod.eq(self.a ^ self.b)
        elif ops == "and":
            m.d.comb += prod.eq(self.a & self.b)
        else:
            m.d.comb += prod.eq(Mux(self.op, self.a & self.b, self.a ^ self.b))
        return [[prod[t] for t in range(len(prod))]]


class Int8MacChannel(_Channel):
    """An :class:`Int8MacArray` channel: the partial sum is Σ a_t·b_t over the chunk's signed
    INT8 pairs, each product a structural Baugh–Wooley multiplier (tcgen.hw.intarith.IntMul,
    one module for all of them); products enter the tree with their sign bit inverted and the
    constant −chunk·2**15 once."""

    ELEM_BITS = 8

    def partial_constant(self) -> int:
        return (-self.params.chunk * (1 << 15)) % (1 << self.params.acc_width)

    def partial_columns(self, m):
        cols = [[] for _ in range(16)]
        mp = IntMulParams(a_width=8, b_width=8, a_signed=True, b_signed=True)
        for t in range(self.params.chunk):
            mul = shared(m, f"mul{t}", IntMul(mp), connect={"a": self.a[8 * t:8 * t + 8],
                                                            "b": self.b[8 * t:8 * t + 8]})
            prod = mul.p
            for bit in range(15):
                cols[bit].append(prod[bit])
            cols[15].append(~prod[15])
        return cols


class BwnChannel(_Channel):
    """A :class:`BwnArray` channel: the partial sum is Σ_t (b_t ? a_t : −a_t) over the chunk's
    signed ``a_width``-bit activations a_t and weight bits b_t.  With s = ~b_t, the term is
    (a_t XOR s…s) + s: its bits enter the tree XORed with s, the sign bit inverted once more
    (Baugh–Wooley style: the constant −2**(a_width − 1) per term, added once for the chunk),
    and s at weight 0.  No multiplier: one XOR per activation bit."""

    @classmethod
    def a_bits(cls, params) -> int:
        return params.a_width

    @classmethod
    def b_bits(cls, params) -> int:
        return 1

    def partial_constant(self) -> int:
        aw = self.params.a_width
        return (-self.params.chunk * (1 << (aw - 1))) % (1 << self.params.acc_width)

    def partial_columns(self, m):
        aw = self.params.a_width
        cols = [[] for _ in range(aw)]
        for t in range(self.params.chunk):
            neg = Signal(name=f"neg{t}")
            m.d.comb += neg.eq(~self.b[t])
            term = Signal(aw, name=f"term{t}")
            m.d.comb += term.eq(self.a[aw * t:aw * (t + 1)] ^ neg.replicate(aw))
            for bit in range(aw - 1):
                cols[bit].append(term[bit])
            cols[aw - 1].append(~term[aw - 1])
            cols[0].append(neg)
        return cols


@dataclass(frozen=True)
class BlockParams:
    """A rows×cols block of identical channels (its content key, tcgen.hw.dedup)."""
    channel: str          # the channel class (qualified name)
    rows: int
    cols: int
    params: ChannelParams


#: A grid whose channels take more operand bits than this (rows·cols·chunk·(a_bits + b_bits)) is
#: split into quadrant blocks (recursively), so that the wiring one module elaborates stays
#: small: an m64n64k4096 array has 4096 channels of 8192 operand bits each.
GRID_WIRING_BITS = 1 << 16


class _Block(wiring.Component):
    """A rows×cols block of channels: the ports of a channel, scaled (a: rows chunks, b: cols
    chunks, c / acc / nxt: rows·cols accumulators, row-major within the block).  Pure wiring:
    :func:`_grid` instantiates the channels or smaller blocks."""

    def __init__(self, channel_cls, rows: int, cols: int, params: ChannelParams):
        self.channel_cls = channel_cls
        self.params = BlockParams(f"{channel_cls.__module__}.{channel_cls.__qualname__}",
                                  rows, cols, params)
        ka, kb = params.chunk * channel_cls.a_bits(params), params.chunk * channel_cls.b_bits(params)
        w = params.acc_width
        sig = {"a": In(rows * ka), "b": In(cols * kb)}
        if channel_cls.uses_op_for(params):
            sig["op"] = In(1)
        sig.update({"take_c": In(1), "c": In(rows * cols * w), "acc": In(rows * cols * w),
                    "nxt": Out(rows * cols * w)})
        super().__init__(sig)

    def elaborate(self, platform):
        m = Module()
        bp = self.params
        cp, rows, cols = bp.params, bp.rows, bp.cols
        ka, kb = cp.chunk * self.channel_cls.a_bits(cp), cp.chunk * self.channel_cls.b_bits(cp)
        w = cp.acc_width
        op = self.op if self.channel_cls.uses_op_for(cp) else None
        nxt = _grid(m, self.channel_cls, cp, rows, cols,
                    [self.a[i * ka:(i + 1) * ka] for i in range(rows)],
                    [self.b[j * kb:(j + 1) * kb] for j in range(cols)], op, self.take_c,
                    lambda i, j: self.c[(i * cols + j) * w:(i * cols + j + 1) * w],
                    lambda i, j: self.acc[(i * cols + j) * w:(i * cols + j + 1) * w])
        m.d.comb += self.nxt.eq(Cat(*(nxt[i][j] for i in range(rows) for j in range(cols))))
        return m


def _halves(n: int) -> list[tuple[int, int]]:
    return [(0, n)] if n == 1 else [(0, (n + 1) // 2), ((n + 1) // 2, n)]


def _grid(m, channel_cls, cp, rows, cols, a_rows, b_cols, op, take_c, c_of, acc_of):
    """rows×cols channels in ``m``: channel (i, j) reduces ``a_rows[i]`` with ``b_cols[j]`` onto
    ``c_of(i, j)`` / ``acc_of(i, j)``.  Returns the next accumulators, ``nxt[i][j]``.

    Each channel is one instance of ``channel_cls`` (tcgen.hw.dedup.shared), or, when the grid's
    operand wiring exceeds :data:`GRID_WIRING_BITS`, the grid is split in (up to) four quadrant
    blocks (:class:`_Block`, top-left the larger), each one instance of a shared module."""
    kab = cp.chunk * (channel_cls.a_bits(cp) + channel_cls.b_bits(cp))
    nxt = [[None] * cols for _ in range(rows)]
    if rows * cols == 1 or rows * cols * kab <= GRID_WIRING_BITS:
        for i in range(rows):
            for j in range(cols):
                conn = {"a": a_rows[i], "b": b_cols[j], "take_c": take_c, "c": c_of(i, j),
                        "acc": acc_of(i, j)}
                if op is not None:
                    conn["op"] = op
                ch = shared(m, f"ch{i}_{j}", channel_cls(cp), connect=conn)
                nxt[i][j] = ch.nxt
        return nxt
    w = cp.acc_width
    for bi, (r0, r1) in enumerate(_halves(rows)):
        for bj, (c0, c1) in enumerate(_halves(cols)):
            cells = [(i, j) for i in range(r0, r1) for j in range(c0, c1)]
            conn = {"a": Cat(*a_rows[r0:r1]), "b": Cat(*b_cols[c0:c1]), "take_c": take_c,
                    "c": Cat(*(c_of(i, j) for i, j in cells)),
                    "acc": Cat(*(acc_of(i, j) for i, j in cells))}
            if op is not None:
                conn["op"] = op
            blk = shared(m, f"blk{bi}_{bj}", _Block(channel_cls, r1 - r0, c1 - c0, cp),
                         connect=conn)
            for t, (i, j) in enumerate(cells):
                nxt[i][j] = blk.nxt[t * w:(t + 1) * w]
    return nxt


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

    Structure: the fold sequencer, the F-way operand selects (one per A row and B column) and the
    accumulator register here; each of the M·N outputs is one channel (:class:`_Channel`: base
    select + partial sum + compressor tree), all identical, added with tcgen.hw.dedup.shared so
    that generated Verilog holds one channel module instantiated M·N times.  Large arrays
    (operand wiring above :data:`GRID_WIRING_BITS`) group the channels in quadrant blocks,
    recursively (:func:`_grid`); the logic is the same.
    """

    CHANNEL: type = _Channel      # its a_bits / b_bits: bits per element of A and B

    def __init__(self, params):
        p = self.params = params
        self.req_layout = flat(layouts.array_request(p))
        self.latency = p.fold
        super().__init__({"req": In(stream.Signature(self.req_layout)),
                          "d": Out(stream.Signature(flat(layouts.array_result(p))))})

    def channel_params(self) -> ChannelParams:
        return ChannelParams(chunk=self.params.chunk, acc_width=self.params.acc_width)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        cp = self.channel_params()
        eb = {"a": self.CHANNEL.a_bits(cp), "b": self.CHANNEL.b_bits(cp)}
        w = p.acc_width
        req = self.req.payload
        bits = req.as_value()

        def field_bits(name, start, stop):
            """Bits [start, stop) of a payload field, as one slice of the payload signal (a
            slice of ``req.<field>`` is a slice of a slice, whose inner slice Amaranth
            re-emits at its full width at every use: seconds for a large array's fields)."""
            off = self.req_layout[name].offset
            return bits[off + start:off + stop]

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
        def chunk_of(name, index, kind):
            kc = p.chunk * eb[name]
            sig = Signal(kc, name=f"{kind}{index}_chunk")
            base = index * p.k * eb[name]
            if p.fold == 1:
                m.d.comb += sig.eq(field_bits(name, base, base + kc))
            else:
                for f in index_cases(m, step, p.fold):
                    m.d.comb += sig.eq(field_bits(name, base + f * kc, base + (f + 1) * kc))
            return sig

        a_rows = [chunk_of("a", i, "a") for i in range(p.m)]
        b_cols = [chunk_of("b", j, "b") for j in range(p.n)]

        # M×N channels: partial sum + base in one compressor tree --------------------------------
        acc = Signal(p.m * p.n * w)
        take_c = Signal()
        m.d.comb += take_c.eq(first & ~req.chain)
        grid = _grid(m, self.CHANNEL, cp, p.m, p.n, a_rows, b_cols,
                     req.op if self.CHANNEL.uses_op_for(cp) else None, take_c,
                     lambda i, j: field_bits("c", (i * p.n + j) * w, (i * p.n + j + 1) * w),
                     lambda i, j: acc[(i * p.n + j) * w:(i * p.n + j + 1) * w])
        nxt = [grid[i][j] for i in range(p.m) for j in range(p.n)]
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
    The channel is :class:`BmmaChannel`.
    """

    CHANNEL = BmmaChannel

    def channel_params(self) -> ChannelParams:
        return ChannelParams(chunk=self.params.chunk, acc_width=self.params.acc_width,
                             ops=self.params.ops)


class BwnArray(_FoldedArray):
    """``bwn_array``: D = (chain ? acc : C) + Σ_k (B[k, j] ? A[i, k] : −A[i, k]), the BWN first
    layer (notes §1.7 [P]: binary weights, non-binary input; "depending on whether [the weight
    bit] is 1 or 0, we add or subtract the corresponding element of the input").

    The same sequencer, streams and accumulators as :class:`BmmaArray`; A holds signed
    ``a_width``-bit activations (row i, element k at a-field bits [(i·K + k)·a_width, +a_width)),
    B one weight bit per element (column j contiguous: element k at b-field bit j·K + k; 1 = +1,
    0 = −1).  Each output is one Dadda tree over the K/F conditionally negated activations
    (:class:`BwnChannel`) and the base.  The code's first layer adds float32 inputs; this is
    the integer (fixed-point input) form, exact.  Its D goes to ``bnn_epilogue`` with
    fixup = false (v = D + residual).
    """

    CHANNEL = BwnChannel

    def channel_params(self) -> BwnChannelParams:
        return BwnChannelParams(chunk=self.params.chunk, acc_width=self.params.acc_width,
                                a_width=self.params.a_width)


class Int8MacArray(_FoldedArray):
    """``int8_mac_array``: D = (chain ? acc : C) + A·B with signed INT8 A (M×K) and B (K×N).

    The same sequencer, streams and accumulator as :class:`BmmaArray` (so the two compare like
    with like); each product is a structural Baugh–Wooley array multiplier
    (tcgen.hw.intarith.array_mul) and the K/F products of an output plus its base are summed in one
    Dadda tree (tcgen.hw.intarith.compress).  Products enter the tree with their sign bit inverted
    (p + 2**15 is unsigned) and the constant −(K/F)·2**15 is added once, which avoids
    sign-extension columns.  Payload: a element (i, k) at bits [(i·K + k)·8, +8); b column j
    contiguous; op is unused.  The channel is :class:`Int8MacChannel`.
    """

    CHANNEL = Int8MacChannel


@dataclass(frozen=True)
class EpilogueChannelParams:
    """What one :class:`BnnEpilogue` channel depends on (its content key, tcgen.hw.dedup)."""
    acc_width: int
    k_width: int
    res_width: int
    tau_width: int
    sense: bool
    v_width: int
    fixup: bool = True
    res_pool: bool = False
    save_width: int = 0       # 0: no saved v; else the exact v's width (emitted as res_width)


def _signed_columns(cols, bits, weight, negate):
    """Add a signed operand (bits LSB first, two's complement) · 2**weight, or its negation, to
    the columns; returns the constant to add (sign-extension by flipping the MSB and subtracting
    2**(msb weight); −x = ~x + 1)."""
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


def _add_constant(cols, const, width):
    const %= 1 << width
    for t in range(width):
        if (const >> t) & 1:
            cols[t].append(Const(1, 1))


def _signed_max(m, a, b, name):
    """max(a, b) of two signed values of equal width: the sign of a − b from one Dadda tree
    (tcgen.hw.intarith.compress) of width + 1 bits, then a select."""
    w = len(a)
    cols = [[] for _ in range(w + 1)]
    const = _signed_columns(cols, [a[t] for t in range(w)], 0, False)
    const += _signed_columns(cols, [b[t] for t in range(w)], 0, True)
    _add_constant(cols, const, w + 1)
    diff = compress(m, cols, w + 1, name)
    out = Signal(w, name=f"{name}_max")
    m.d.comb += out.eq(Mux(diff[w], b, a))
    return out


class EpilogueChannel(wiring.Component):
    """One output channel of :class:`BnnEpilogue`: ``bit`` from v − τ, v = k_eff − 2·acc + res
    (``fixup``) or acc + res.

    Attributes: acc ``In(acc_width)``, tau ``In(tau_width)``, res ``In(res_width)`` (if
    res_width > 0; ``In(4·res_width)`` with res_pool), k_eff ``In(k_width)`` (if fixup), sense
    ``In(2)`` (if sense), bit ``Out(1)``, v ``Out(res_width)`` (if save: v mod 2**res_width).
    Combinational.  Without save, v − τ is one Dadda tree (tcgen.hw.intarith.compress) of the
    four operands, exact in ``v_width`` bits; its sign is the compare (GE: v ≥ τ, then the
    sense).  With save, v is one tree (exact in ``save_width`` bits) and v − τ a second.  With
    res_pool, the residual is the maximum of its 4 values (three compare-selects, each one tree
    for the difference's sign)."""

    def __init__(self, params: EpilogueChannelParams):
        self.params = p = params
        sig = {"acc": In(p.acc_width), "tau": In(p.tau_width)}
        if p.res_width:
            sig["res"] = In(p.res_width * (4 if p.res_pool else 1))
        if p.fixup:
            sig["k_eff"] = In(p.k_width)
        if p.sense:
            sig["sense"] = In(2)
        sig["bit"] = Out(1)
        if p.save_width:
            sig["v"] = Out(p.res_width)
        super().__init__(sig)

    def _v_columns(self, m, cols):
        """v's operands into the columns; returns the constant to add."""
        p = self.params
        if p.fixup:
            const = _signed_columns(cols, [self.acc[t] for t in range(p.acc_width)], 1, True)
            for t in range(p.k_width):
                cols[t].append(self.k_eff[t])
        else:
            const = _signed_columns(cols, [self.acc[t] for t in range(p.acc_width)], 0, False)
        if p.res_width:
            rw = p.res_width
            if p.res_pool:
                r = [self.res[i * rw:(i + 1) * rw] for i in range(4)]
                res = _signed_max(m, _signed_max(m, r[0], r[1], "rmax01"),
                                  _signed_max(m, r[2], r[3], "rmax23"), "rmax")
            else:
                res = self.res
            const += _signed_columns(cols, [res[t] for t in range(rw)], 0, False)
        return const

    def elaborate(self, platform):
        m = Module()
        p = self.params
        vw = p.v_width
        cols = [[] for _ in range(vw)]
        if p.save_width:
            sw = p.save_width
            vcols = [[] for _ in range(sw)]
            _add_constant(vcols, self._v_columns(m, vcols), sw)
            v = compress(m, vcols, sw, "vsave")
            m.d.comb += self.v.eq(v[:p.res_width])
            const = _signed_columns(cols, [v[t] for t in range(sw)], 0, False)
        else:
            const = self._v_columns(m, cols)
        const += _signed_columns(cols, [self.tau[t] for t in range(p.tau_width)], 0, True)
        _add_constant(cols, const, vw)
        diff = compress(m, cols, vw, "v")
        ge = ~diff[vw - 1]
        if p.sense:
            m.d.comb += self.bit.eq(Mux(self.sense[1], self.sense[0], ge ^ self.sense[0]))
        else:                                   # paper-faithful: v >= tau only
            m.d.comb += self.bit.eq(ge)
        return m


class BnnEpilogue(wiring.Component):
    """``bnn_epilogue``: the fused BNN epilogue (notes §1.7, §2 design point d).

    Per item (one D row: n output channels of one image-pixel) and channel o::

        v_o   = k_eff − 2·acc_o + res_o                       (the ±1 fix-up + residual)
        bit_o = GE: v_o ≥ τ_o | LT: v_o < τ_o | ZERO: 0 | ONE: 1   (sense_o; γ>0, γ<0, γ=0)
        pool  = pool | bits; on ``last``: out = pool (channel 0 = MSB), pool = 0

    so a 2×2 (or ceil-mode partial) OR max-pool is the items of one window sent with ``last``
    on the final one; ``last`` on every item disables pooling.  v − τ is one Dadda tree
    (tcgen.hw.intarith.compress) of four operands, exact in ``v_width`` bits; its sign is the
    compare.  Each channel is one :class:`EpilogueChannel` (one module for all n).

    Options (issue 42, all off by default): ``fixup = false``: v = acc + res (no k_eff; the
    integer output of :class:`BwnArray`); ``res_pool``: res carries the 4 residuals of a 2×2
    window per channel and v adds their maximum (the code's downsampling blocks); ``save``:
    the output also carries v of the window's last item, mod 2**res_width (the pre-threshold
    value the next block adds as its residual).

    Attributes
    ----------
    req : In(stream.Signature(StructLayout))
        acc (n × acc_width, signed), res (n × res_width, signed, n × 4 × res_width with
        res_pool; absent if res_width = 0), tau (n × tau_width, signed), sense (n × 2; absent
        if sense = false: the paper's v ≥ τ only), k_eff (k_width, unsigned; absent if
        fixup = false), last (1).
    out : Out(stream.Signature(n)), or {bits (n), v (n × res_width)} with save
        packed bits of one pool window, channel 0 at the MSB; v channel 0 at the LSBs.
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

        cp = EpilogueChannelParams(acc_width=p.acc_width, k_width=p.k_width,
                                   res_width=p.res_width, tau_width=p.tau_width, sense=p.sense,
                                   v_width=vw, fixup=p.fixup, res_pool=p.res_pool,
                                   save_width=p.save_width if p.save else 0)
        rw = p.res_width * (4 if p.res_pool else 1)
        bits, saved = [], []
        for o in range(p.n):
            conn = {"acc": req.acc[o * p.acc_width:(o + 1) * p.acc_width],
                    "tau": req.tau[o * p.tau_width:(o + 1) * p.tau_width]}
            if p.fixup:
                conn["k_eff"] = req.k_eff
            if p.res_width:
                conn["res"] = req.res[o * rw:(o + 1) * rw]
            if p.sense:
                conn["sense"] = req.sense[2 * o:2 * o + 2]
            ch = shared(m, f"ch{o}", EpilogueChannel(cp), connect=conn)
            bits.append(ch.bit)
            if p.save:
                saved.append(ch.v)

        packed = Cat(*reversed(bits))          # channel 0 at the MSB
        pool = Signal(p.n)
        out_bits = self.out.payload.bits if p.save else self.out.payload
        with m.If(self.out.ready):
            m.d.sync += self.out.valid.eq(0)
        if p.pool_rows > 1:                     # item i pools into window i mod pool_rows
            row = Signal(range(p.pool_rows))
            pools = [Signal(p.n, name=f"pool{r}") for r in range(p.pool_rows)]
            m.d.comb += pool.eq(select(row, pools))
            with m.If(advance):
                m.d.sync += row.eq(Mux(row == p.pool_rows - 1, 0, row + 1))
            for r in range(p.pool_rows):
                with m.If(advance & (row == r)):
                    m.d.sync += pools[r].eq(Mux(req.last, 0, pool | packed))
        with m.If(advance):
            with m.If(req.last):
                m.d.sync += [out_bits.eq(pool | packed), self.out.valid.eq(1)]
                if p.pool_rows == 1:
                    m.d.sync += pool.eq(0)
                if p.save:
                    m.d.sync += self.out.payload.v.eq(Cat(*saved))
            with m.Else():
                if p.pool_rows == 1:
                    m.d.sync += pool.eq(pool | packed)
        return m


def select(sel, values):
    """``values[sel]`` as a balanced tree of 2-way multiplexers (one per bit of ``sel``), a
    plain expression: Yosys writes it as continuous assignments, so a simulator evaluates it
    at time 0 (a ``case`` in an ``always @*`` over registers that keep their initial values
    through reset stays X in Icarus until one of them changes).  Indices past the end repeat
    the last value."""
    level = list(values)
    for b in range(max(1, (len(level) - 1).bit_length())):
        if len(level) == 1:
            break
        if len(level) % 2:
            level.append(level[-1])
        level = [Mux(sel[b], level[i + 1], level[i]) for i in range(0, len(level), 2)]
    return level[0]


class BnnLayer(wiring.Component):
    """``bnn_layer``: :class:`BmmaArray` → a tile-to-row serializer → :class:`BnnEpilogue`, one
    design that runs whole binarized layers (issue 42).

    Parameters: :class:`~tcgen.units.bmma.params.BnnLayerParams`; the two components are
    instantiated at ``p.array_params()`` and ``p.epilogue_params()`` (their logic is theirs).

    Attributes
    ----------
    req : In(stream.Signature(StructLayout))
        :func:`.layouts.layer_request`: the array's request fields at the array's bits (a, b,
        c, op, chain, emit), then the side data of the D tile an ``emit`` request closes:
        k_eff, tau, sense, res (m rows), last.  The side data of a request with emit = 0 is
        ignored.
    out : Out(stream.Signature(...))
        the epilogue's output (:func:`.layouts.layer_result`): per closed pool window of a row
        (image), the packed bits, and with save the saved v.
    latency : int
        ``fold + 2``: an emitting request offered at cycle 0 is accepted at fold − 1, D is
        valid at fold and moves into the serializer's tile buffer that cycle; row 0 goes to the
        epilogue at fold + 1, its output at fold + 2.

    Serializer: when the array's D is valid and the tile buffer is free (empty, or its last
    row going to the epilogue this cycle) D and the side data captured with its emitting
    request move into the buffer, which frees the array's D register at once (the array
    waits only while D is not taken).  The buffer sends its m rows as epilogue items, row i
    = {acc: D row i, res: res row i, k_eff, tau, sense, last}, one per cycle while the
    epilogue is ready.  So an array operation chain of L requests per tile costs
    max(L·fold, m) cycles per tile in steady state (:func:`.throughput.layer_top_cycles`).
    Registers beyond the two components: the side data with the array's D, the tile buffer
    (D and side data), its valid bit and the row counter.
    """

    def __init__(self, params):
        p = self.params = params
        self.req_layout = flat(layouts.layer_request(p))
        self.latency = p.fold + 2
        super().__init__({"req": In(stream.Signature(self.req_layout)),
                          "out": Out(stream.Signature(flat(layouts.layer_result(p))))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        pa, pe = p.array_params(), p.epilogue_params()
        m.submodules.array = arr = BmmaArray(pa)
        m.submodules.epilogue = epi = BnnEpilogue(pe)
        req = self.req.payload
        bits = req.as_value()
        aw = Shape.cast(arr.req_layout).width
        m.d.comb += [arr.req.payload.eq(bits[:aw]), arr.req.valid.eq(self.req.valid),
                     self.req.ready.eq(arr.req.ready)]
        side_names = [n for n in layouts.LAYER_SIDE if n in self.req_layout.members]
        side_width = sum(Shape.cast(self.req_layout.members[n]).width for n in side_names)
        side_lo = self.req_layout[side_names[0]].offset

        # the side data of the tile the array is accumulating (captured with its emit request)
        side_a = Signal(side_width)
        with m.If(self.req.valid & arr.req.ready & req.emit):
            m.d.sync += side_a.eq(bits[side_lo:side_lo + side_width])

        # the tile buffer and its row counter
        w = p.acc_width
        buf_valid = Signal()
        buf_d = Signal(p.m * p.n * w)
        buf_side = Signal(side_width)
        row = Signal(range(p.m), name="row") if p.m > 1 else None    # m = 1: no counter
        row_last = Signal()
        m.d.comb += row_last.eq(row == p.m - 1 if row is not None else 1)
        item_taken = Signal()
        m.d.comb += item_taken.eq(epi.req.valid & epi.req.ready)
        take = Signal()
        m.d.comb += [take.eq(arr.d.valid & (~buf_valid | (item_taken & row_last))),
                     arr.d.ready.eq(take)]
        with m.If(take):
            m.d.sync += [buf_d.eq(arr.d.payload), buf_side.eq(side_a), buf_valid.eq(1)]
        with m.Elif(item_taken & row_last):
            m.d.sync += buf_valid.eq(0)
        if row is not None:
            with m.If(item_taken):
                m.d.sync += row.eq(Mux(row_last, 0, row + 1))

        def side(name):
            off = self.req_layout[name].offset - side_lo
            return buf_side[off:off + Shape.cast(self.req_layout.members[name]).width]

        item = epi.req.payload
        m.d.comb += epi.req.valid.eq(buf_valid)
        rw = Shape.cast(self.req_layout.members["res"]).width // p.m if "res" in side_names \
            else 0
        m.d.comb += item.acc.eq(select(row, [buf_d[i * p.n * w:(i + 1) * p.n * w]
                                             for i in range(p.m)]))
        if rw:
            m.d.comb += item.res.eq(select(row, [side("res")[i * rw:(i + 1) * rw]
                                                 for i in range(p.m)]))
        for name in side_names:
            if name != "res":
                m.d.comb += getattr(item, name).eq(side(name))
        m.d.comb += [self.out.payload.eq(epi.out.payload), self.out.valid.eq(epi.out.valid),
                     epi.out.ready.eq(self.out.ready)]
        return m


@dataclass(frozen=True)
class AffineChannelParams:
    """What one :class:`BnnAffine` channel depends on (its content key, tcgen.hw.dedup)."""
    acc_width: int
    k_width: int
    scale_width: int
    bias_width: int
    v_width: int
    out_width: int


class AffineChannel(wiring.Component):
    """One output channel of :class:`BnnAffine`: ``y = (k_eff − 2·acc)·scale + bias``, exact.

    Attributes: acc ``In(acc_width)``, k_eff ``In(k_width)``, scale ``In(scale_width)``, bias
    ``In(bias_width)``, y ``Out(out_width)`` (two's complement).  Combinational: v from one
    Dadda tree (tcgen.hw.intarith.compress, exact in v_width bits), then v·scale + bias through
    tcgen.hw.intarith.int_dot (a Baugh–Wooley array multiplier, its product and the bias summed
    by one tree)."""

    def __init__(self, params: AffineChannelParams):
        self.params = p = params
        super().__init__({"acc": In(p.acc_width), "k_eff": In(p.k_width),
                          "scale": In(p.scale_width), "bias": In(p.bias_width),
                          "y": Out(p.out_width)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        vw = p.v_width
        cols = [[] for _ in range(vw)]
        const = _signed_columns(cols, [self.acc[t] for t in range(p.acc_width)], 1, True)
        for t in range(p.k_width):
            cols[t].append(self.k_eff[t])
        _add_constant(cols, const, vw)
        v = compress(m, cols, vw, "v")
        bias = Signal(p.out_width, name="bias_ext")
        m.d.comb += bias.eq(self.bias.as_signed())          # sign extension
        m.d.comb += self.y.eq(int_dot(m, [v], [self.scale], bias, p.out_width, name="affine"))
        return m


class BnnAffine(wiring.Component):
    """``bnn_affine``: the last layer (notes §1.7 [C]: its BN stays an affine map, the output is
    real, there is no threshold), in fixed point.

    Per item (one D row: n output channels of one image) and channel o::

        y_o = (k_eff − 2·acc_o)·scale_o + bias_o          (exact, out_width bits)

    scale and bias are fixed-point integers of one binary point F chosen by the user
    (scale_q = scale·2^F, bias_q = bias·2^F); y·2^−F is then the exact real result, of which
    the code's float32 (and the model's float64 :func:`.model.last_layer_affine`) are roundings.
    Each channel is one :class:`AffineChannel` (one module for all n).

    Attributes
    ----------
    req : In(stream.Signature(StructLayout))
        acc (n × acc_width, signed), scale (n × scale_width, signed), bias (n × bias_width,
        signed), k_eff (k_width, unsigned).
    y : Out(stream.Signature(n × out_width))
        the n results, channel 0 at the LSBs.
    latency : int
        1.
    """

    def __init__(self, params):
        p = self.params = params
        self.req_layout = flat(layouts.affine_request(p))
        self.latency = 1
        super().__init__({"req": In(stream.Signature(self.req_layout)),
                          "y": Out(stream.Signature(flat(layouts.affine_result(p))))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        req = self.req.payload
        ready = ~self.y.valid | self.y.ready
        m.d.comb += self.req.ready.eq(ready)
        cp = AffineChannelParams(acc_width=p.acc_width, k_width=p.k_width,
                                 scale_width=p.scale_width, bias_width=p.bias_width,
                                 v_width=p.v_width, out_width=p.out_width)
        ys = []
        for o in range(p.n):
            conn = {"acc": req.acc[o * p.acc_width:(o + 1) * p.acc_width], "k_eff": req.k_eff,
                    "scale": req.scale[o * p.scale_width:(o + 1) * p.scale_width],
                    "bias": req.bias[o * p.bias_width:(o + 1) * p.bias_width]}
            ys.append(shared(m, f"ch{o}", AffineChannel(cp), connect=conn).y)
        with m.If(self.y.ready):
            m.d.sync += self.y.valid.eq(0)
        with m.If(self.req.valid & ready):
            m.d.sync += [self.y.payload.eq(Cat(*ys)), self.y.valid.eq(1)]
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
