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
    for fmt, auto_is, other in (("fp16", "booth4", "array"), ("fp8_e4m3", "array", "booth4")):
        assert v(fmt, "auto") == v(fmt, auto_is), fmt
        assert v(fmt, "auto") != v(fmt, other), fmt


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
