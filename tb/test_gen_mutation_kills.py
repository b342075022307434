"""Directed tests written for survivors of the generator-level mutation run
(reports/gen_mutation.md, docs/mutation.md "Generator mutation"): each names the mutant(s) it
kills.  They run in ``make test`` and are listed in their file's ``GEN_TARGETS`` tests
(tb/gen_mutation.py), so ``scripts/gen_mutation.py --recheck`` shows them killing it."""
from __future__ import annotations

import itertools
import random

import pytest

from tcgen.generate import verilog
from tcgen.registry import get_unit


def _comb_eval(m, ins, outs, vectors):
    """Evaluate a combinational Amaranth module on ``vectors`` (tuples of input values);
    returns the output values per vector."""
    from amaranth.sim import Simulator
    got = []
    sim = Simulator(m)

    async def bench(ctx):
        for v in vectors:
            for sig, x in zip(ins, v):
                ctx.set(sig, x)
            got.append(tuple(ctx.get(o) for o in outs))
    sim.add_testbench(bench)
    sim.run()
    return got


@pytest.mark.parametrize("topology", ["ripple", "sklansky", "kogge_stone", "brent_kung"])
def test_prefix_add_every_topology_and_width(topology):
    """``intarith.prefix_add`` (fp_mul/int_mul ``cpa=``) is a + b mod 2**n at every width
    1..9 (exhaustive to 4 bits, 300 random pairs above): kills ``intarith-584ac8`` (the sum's
    carry-in taken from G[i - 2]), which no make-test RTL run reached (the cpa variants' RTL
    runs are slow tests; the FP8 proofs cover only sklansky)."""
    from amaranth import Module, Signal
    from tcgen.hw.intarith import prefix_add
    rng = random.Random(41)
    for n in range(1, 10):
        m = Module()
        a, b = Signal(n, name="a"), Signal(n, name="b")
        s = prefix_add(m, a, b, topology)
        vecs = (list(itertools.product(range(1 << n), repeat=2)) if n <= 4 else
                [(rng.randrange(1 << n), rng.randrange(1 << n)) for _ in range(300)])
        got = _comb_eval(m, [a, b], [s], vecs)
        bad = [(x, y, g[0]) for (x, y), g in zip(vecs, got) if g[0] != (x + y) % (1 << n)]
        assert not bad, f"{topology} n={n}: {bad[:3]}"


def test_fp_mul_auto_multiplier():
    """``mult=auto`` builds Booth radix-4 from 11 significand bits and the AND array below
    (reports/fp_mul.md's choice): the Verilog of ``mult=auto`` equals that of the explicit
    choice, and differs from the other one.  Kills ``fparith-7a7065`` (``auto`` left
    unresolved, so FP16 got the array and an explicit ``booth4`` at FP8 got auto's choice):
    the same function, so no simulation notices; only the structure differs."""
    from tcgen.hw.fparith import resolved_mult
    from tcgen.hw.numeric import FORMATS
    assert resolved_mult("auto", FORMATS["fp16"]) == "booth4"
    assert resolved_mult("auto", FORMATS["fp8_e4m3"]) == "array"
    assert resolved_mult("array", FORMATS["fp16"]) == "array"
    assert resolved_mult("booth4", FORMATS["fp8_e4m3"]) == "booth4"
    u = get_unit("fp_mul")

    def v(fmt, mult):                   # the module, less the header naming the params
        text = verilog("fp_mul", u.params(fmt=fmt, mult=mult))
        return text[text.index("module "):]
    assert v("fp16", "auto") == v("fp16", "booth4")           # (FP16 builds are the slow ones)
    assert v("fp8_e4m3", "auto") == v("fp8_e4m3", "array") != v("fp8_e4m3", "booth4")


def test_dp4_rounded_product_needs_an_exact_widening_for_parsed_values():
    """A DP-4 with ``product=rounded`` needs ``acc`` = ``fmt`` or a format ``fmt`` widens to
    exactly -- also when the values come parsed (CLI ``-p``, a sweep spec's JSON), as strings
    that are equal to the choices but not the same objects.  Kills ``dot-036f33`` (``==``
    made ``is``: true only for interned literals, so a parsed ``rounded`` skipped the check
    and fp16 products rounded into bf16 were accepted)."""
    import json

    from tcgen.hw.params import ParamError
    u = get_unit("dp4")
    spec = json.loads('{"fmt": "fp16", "product": "rounded", "acc": "bf16"}')
    with pytest.raises(ParamError, match="widens to"):
        u.params.from_dict(spec)
    with pytest.raises(ParamError, match="widens to"):
        u.params.from_strings({k: "".join(v) for k, v in spec.items()})
    ok = u.params.from_dict(json.loads('{"fmt": "fp16", "product": "rounded", "acc": "fp32"}'))
    assert ok.product == "rounded" and ok.acc == "fp32"


def test_fused_product_dedup_key_names_its_formats():
    """``FusedProduct.params`` is the dedup key (one module per distinct key): the operand
    format's name when a and b share it, the pair when they differ -- two lanes of different
    formats in one design must not share a module.  Kills ``fused-1d6105`` (``not`` dropped:
    a single format keyed as a pair, a mixed pair keyed as a's format alone)."""
    from tcgen.hw.fused import FusedProduct
    want = {("fp16",): "fp16", ("fp8_e4m3", "fp8_e4m3"): "fp8_e4m3",
            ("fp8_e4m3", "fp8_e5m2"): ("fp8_e4m3", "fp8_e5m2")}
    for args, key in want.items():
        x = FusedProduct(*args)
        x._MustUse__silence = True                # built only for its key
        assert x.params == key, args


def test_layout_zero_width_fields_and_scalar_array_values():
    """``layout.pack``: a zero-width field packs to nothing (and unpacks to 0) -- kills
    ``layout-5679d2`` (``v * 0`` made ``v % 0``: ZeroDivisionError); a scalar for an
    ArrayLayout of one element is the one-line ValueError the docstring promises, not an
    IndexError -- kills ``layout-1e7f59`` (``ndim == 1`` made ``<= 1``)."""
    import numpy as np
    from amaranth import unsigned
    from amaranth.lib import data

    from tcgen.hw.layout import pack, unpack
    lay = data.StructLayout({"a": unsigned(4), "z": unsigned(0), "b": unsigned(3)})
    got = pack(lay, {"a": np.array([5, 15]), "z": np.array([1, 0]), "b": np.array([2, 7])})
    assert [int(x) for x in got] == [5 | 2 << 4, 15 | 7 << 4]
    back = unpack(lay, got)
    assert [int(x) for x in back["z"]] == [0, 0] and [int(x) for x in back["b"]] == [2, 7]
    with pytest.raises(ValueError, match="ArrayLayout of 1 elements"):
        pack(data.ArrayLayout(unsigned(4), 1), np.array(5))


def test_cut_points_of_a_unit_without_a_pipeline_field():
    """The DP-4 has cut points but no ``pipeline`` field: its ``cuts`` are accepted, give the
    latency, and ``auto`` is refused only when built (``enabled``/``sub_cuts``, which name the
    clock).  Kills ``pipeline-244de6`` (a missing ``pipeline`` read as -1: every cut refused
    as "empty when pipeline is set") and ``pipeline-cc022d`` (``sub_cuts`` of ``auto`` passed
    on as no cuts instead of the error)."""
    from tcgen.hw.params import ParamError
    u = get_unit("dp4")
    p = u.params(cuts="products+level0")
    assert p.latency == 2 and p.sub_cuts("mul") == ""
    q = u.params(cuts="mul.tree+products")
    assert q.sub_cuts("mul") == "tree" and q.latency == 2
    a = u.params(cuts="auto")
    for call in (a.enabled, lambda: a.sub_cuts("mul")):
        with pytest.raises(ParamError, match="cuts=auto"):
            call()


def test_variable_bit_select_is_emitted_widened_and_lint_clean(tmp_path):
    """A shift narrower than its operand (``x.bit_select(s, 1)``, as the octets' B buffers
    use) is emitted at the operand's width into a ``$tcgen_wide`` wire, lint-clean with the
    project's Verilator -- kills ``generate-bc1f7f`` (the widened cell's lines joined with
    ``|``: a TypeError on every such design), which no unit in the file's tests emits."""
    from amaranth import Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    from tcgen.hw.generate import component_verilog
    from tcgen.synth.lint import lint

    class Sel(wiring.Component):
        def __init__(self):
            super().__init__({"x": In(8), "s": In(3), "y": Out(1)})

        def elaborate(self, platform):
            m = Module()
            m.d.comb += self.y.eq(self.x.bit_select(self.s, 1))
            return m
    text = component_verilog(Sel(), "sel")
    assert "tcgen_wide" in text
    (tmp_path / "sel.v").write_text(text)
    res = lint(tmp_path / "sel.v")
    assert res.clean, (res.errors + res.warnings)[:5]


@pytest.mark.parametrize("kw", [{}, {"m": 2, "n": 4}, {"numerics": "qgmma_e4m3_f32"}])
def test_mma_sm90_ops_and_workload(kw):
    """mma_sm90's ``ops_per_cycle`` is m·n·k MACs (the PPA reports' throughput), and its
    default workload gives ``n`` packed tiles per input that the model takes: kills
    ``library-f4d439`` (``m * n ^ k``) and ``library-09e75e`` (c's tile ``m / n`` wide)."""
    import numpy as np
    u = get_unit("mma_sm90")
    p = u.params(**kw)
    assert u.ops_per_cycle(p) == p.m * p.n * p.k
    w = u.workload(p, np.random.default_rng(41), 3)
    sig = u.interface(p).signature.members
    assert set(w) == {"a", "b", "c"}
    for name, v in w.items():
        assert len(v) == 3 and all(0 <= int(x) < 1 << sig[name].shape.size for x in v), name
    d = u.model(p, w["a"], w["b"], w["c"])["d"]
    assert len(d) == 3


@pytest.mark.parametrize("unit,bits", [("int_dequant", 4), ("int_dequant", 2),
                                       ("pacq_mul", 4)])
def test_pacq_wbits_given_as_an_int_builds_the_same_rtl(unit, bits):
    """PacQ's ``wbits`` accepts the integers 4 and 2 from Python callers (params.py's
    ``_wbits_text``: ``str(v)``, a new string, not the interned literal): the RTL is the one
    the string gives.  Kills ``pacq_rtl-c6fcbd`` (``wbits == "4"`` made ``is "4"``: false for
    ``str(4)``, so an int-4 dequantizer was built as another lane layout; the multiplier's
    lanes, now hw/fpint.py, the same: ``fpint-f16be8``)."""
    u = get_unit(unit)
    literal = {4: "4", 2: "2"}[bits]           # the literal (str(bits) is another object)
    assert verilog(unit, u.params(wbits=bits)) == verilog(unit, u.params(wbits=literal))


@pytest.mark.parametrize("unit", ["add_dp4_array", "conv_lut_array"])
def test_serial_arrays_register_internal_operands(unit):
    """The bit-serial arrays take ``operands = internal`` into registers: one cycle more than
    ``external`` (latency w_bits + 1 vs w_bits) -- the PPA and the stream timing depend on it.
    Kills ``lut_rtl-a6bd35`` (the ADD baseline's ``operands == "internal"`` made ``>``: built
    as external, which its RTL runs cannot see, the bench taking the unit's own latency)."""
    spec = get_unit(unit)
    for operands in ("internal", "external"):
        for w_bits in (1, 3):
            p = spec.params(act="int8", acc="int32", w_bits=w_bits, operands=operands)
            arr = spec.interface(p)
            assert arr.internal == (operands == "internal"), (operands, w_bits)
            assert arr.latency == w_bits + (operands == "internal"), (operands, w_bits)


@pytest.mark.parametrize("wbits", ["8", "16"])
def test_parallel_int_mul_joined_lanes(wbits):
    """``fpint.parallel_int_mul`` at the joined lane configurations (wbits 8 and 16, added for
    Winograd's EWMM; no unit in make test built them yet): every lane equals the golden
    ``fpint_ref.parallel_int_mul`` on random and extreme operands (a = 11).  Kills
    ``fpint-27afcc`` and ``fpint-bcf9e5`` (the INT8 configuration's lane-active list
    ``[Const(1, 1)] * 2`` made ``/ 2`` and ``>> 2``: a TypeError wherever wbits=8 is built)."""
    import numpy as np
    from amaranth import Module, Signal

    from tcgen.hw import fpint_ref
    from tcgen.hw.fpint import parallel_int_mul
    m = Module()
    mA, word, int2 = Signal(11, name="mA"), Signal(16, name="word"), Signal(name="int2")
    lanes, active = parallel_int_mul(m, mA, word, wbits, int2)
    rng = np.random.default_rng(41)
    vecs = [(a, w) for a in (0, 1, 2047) for w in (0, 1, 0xFFFF, 0x8001)] + \
        [(int(rng.integers(0, 2048)), int(rng.integers(0, 1 << 16))) for _ in range(60)]
    got = _comb_eval(m, [mA, word], lanes + active, vecs)
    want_i, _, want_act = fpint_ref.parallel_int_mul([a for a, _ in vecs],
                                                     [w for _, w in vecs], wbits)
    L = len(lanes)
    assert L == fpint_ref.lanes_of(wbits)
    for k, g in enumerate(got):
        assert list(g[:L]) == [int(x) for x in want_i[k]], (wbits, vecs[k])
        assert list(g[L:]) == [int(x) for x in want_act[k]], (wbits, vecs[k])
