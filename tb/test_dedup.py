"""Generate once per distinct module (tcgen.hw.dedup): determinism, one definition per distinct
module, and formal equivalence of the deduplicated and the flat (``--flat``) Verilog.

Equivalence (Yosys, ``_prove_equal``): both files are read, flattened, their registers turned
into cut points matched by name (``expose -evert-dff``: a register's output becomes an input of
both designs, its next value an output), then a miter of the two combinational functions is
proven with SAT.  Equal next-state and output functions and the same registers mean the two
designs are equal from any common state (and both start from the same Amaranth reset values).
"""
from __future__ import annotations

import contextlib
import gc
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from amaranth import Module, Signal
from amaranth.hdl import UnusedElaboratable
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tcgen.generate import verilog
from tcgen.hw import dedup
from tcgen.hw.fparith import FPAdd, FPAddParams
from tcgen.hw.generate import VERILOG_KEYWORDS, component_verilog
from tcgen.hw.params import ParamError
from tcgen.registry import get_unit
from tcgen.synth.lint import lint

ROOT = Path(__file__).resolve().parent.parent
YOSYS = shutil.which("yosys")


def _gen(unit, top=None, flat=False, **params):
    return verilog(unit, get_unit(unit).make_params({k: str(v) for k, v in params.items()}),
                   top=top, flat=flat)


@contextlib.contextmanager
def _quietly():
    """Components left unelaborated on purpose (error paths, inspected modules) are collected
    here, without Amaranth's warning about them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        yield
        gc.collect()


def _modules(text: str) -> list[str]:
    return [re.match(r"module\s+(\\\S+|[A-Za-z_]\w*)", ln).group(1)
            for ln in text.splitlines() if ln.startswith("module ")]


# -- determinism ---------------------------------------------------------------------------------
@pytest.mark.parametrize("unit,params", [("bmma_array", {"m": 2, "n": 3, "k": 64, "fold": 2}),
                                         ("dp4_pacq", {})])
def test_dedup_verilog_is_byte_identical_across_runs(unit, params):
    a = _gen(unit, **params)
    assert _gen(unit, **params) == a
    # another process, another string hash seed: module names and order do not move
    args = [a for k, v in params.items() for a in ("-p", f"{k}={v}")]
    r = subprocess.run([sys.executable, "-m", "tcgen.cli", "generate", unit, *args],
                       capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert r.returncode == 0, r.stderr
    assert r.stdout == a


# -- one definition per distinct module --------------------------------------------------------
@pytest.mark.parametrize("unit,params,expect", [
    # top + the channel (the 16 channels are one module)
    ("bmma_array", {"m": 4, "n": 4, "k": 64}, ["bmma_array", "BmmaChannel"]),
    # top + channel + the INT8 multiplier (4 channels x 16 multipliers)
    ("int8_mac_array", {}, ["int8_mac_array", "Int8MacChannel", "IntMul"]),
    # top + FPMul (4 instances) + FPAdd (4 instances)
    ("dp4_baseline", {}, ["dp4_baseline", "FPAdd", "FPMul"]),
    # top + PacqMul (4 instances) + FPAdd (D trees of 4 + the ΣA tree)
    ("dp4_pacq", {}, ["dp4_pacq", "FPAdd", "PacqMul"]),
    # top + the epilogue channel (8 instances)
    ("bnn_epilogue", {}, ["bnn_epilogue", "EpilogueChannel"]),
])
def test_one_module_definition_per_distinct_module(unit, params, expect):
    text = _gen(unit, **params)
    mods = _modules(text)
    assert len(mods) == len(set(mods)) == len(expect)
    assert mods[0] == unit
    assert sorted(re.sub(r"_[0-9a-f]{10}$", "", m.split("__", 1)[1]) for m in mods[1:]) == \
        sorted(expect[1:])
    for name in mods:                       # plain identifiers, never keywords
        assert re.fullmatch(r"[A-Za-z_]\w*", name) and name not in VERILOG_KEYWORDS
    if unit == "bmma_array":                # M·N instances of the one channel module
        assert len(re.findall(rf"^\s+{mods[1]} ch\d+_\d+ \(", text, re.M)) == 16


def test_flat_keeps_one_elaborated_hierarchy():
    text = _gen("bmma_array", flat=True, m=2, n=2, k=32)
    assert sorted(_modules(text)) == ["\\bmma_array.ch0_0", "\\bmma_array.ch0_1",
                                      "\\bmma_array.ch1_0", "\\bmma_array.ch1_1", "bmma_array"]


def test_large_arrays_are_grouped_in_blocks(monkeypatch):
    from tcgen.units.bmma import rtl
    monkeypatch.setattr(rtl, "GRID_WIRING_BITS", 256)     # m3n5k32: 15·64 bits > 256
    mods = _modules(_gen("bmma_array", m=3, n=5, k=32))
    kinds = sorted(re.sub(r"_[0-9a-f]{10}$", "", m.split("__", 1)[1]) for m in mods[1:])
    assert kinds.count("BmmaChannel") == 1 and "Block" in kinds


def test_too_wide_a_module_is_a_parameter_error():
    with pytest.raises(ParamError, match="input bits"):
        _gen("bmma_array", m=64, n=64, k=4096)


# -- the helper ----------------------------------------------------------------------------------
class _Two(wiring.Component):
    """Two FP16 adders through shared(): one module, two instances."""

    def __init__(self, connect):
        self.use_connect = connect
        super().__init__({"a": In(16), "b": In(16), "y": Out(16), "z": Out(16)})

    def elaborate(self, platform):
        m = Module()
        p = FPAddParams()
        for name, out in (("add0", self.y), ("add1", self.z)):
            if self.use_connect:
                add = dedup.shared(m, name, FPAdd(p), connect={"a": self.a, "b": self.b})
            else:
                add = dedup.shared(m, name, FPAdd(p))
                m.d.comb += [add.a.eq(self.a), add.b.eq(self.b)]
            m.d.comb += out.eq(add.y)
        return m


@pytest.mark.parametrize("connect", [False, True])
def test_shared_emits_one_module_and_flat_mode_none(connect):
    text = component_verilog(_Two(connect), "two")
    assert len(_modules(text)) == 2 and text.count("two__FPAdd_") == 3   # definition + 2 uses
    flat = component_verilog(_Two(connect), "two", flat=True)
    assert sorted(_modules(flat)) == ["\\two.add0", "\\two.add1", "two"]
    with _quietly():
        m = Module()                               # no emission in progress: a submodule
        add = dedup.shared(m, "x", FPAdd(FPAddParams()))
        assert dedup.current() is None and m.submodules["x"] is add
        del m, add


def test_content_key_is_canonical_and_checked():
    with _quietly():
        k1 = dedup.content_key(FPAdd(FPAddParams()), key={"s": frozenset("abc"), "t": (1, 2)})
        k2 = dedup.content_key(FPAdd(FPAddParams()), key={"t": [1, 2], "s": {"c", "b", "a"}})
        assert k1 == k2
        assert dedup.content_key(FPAdd(FPAddParams()))[:2] == ("tcgen.hw.fparith", "FPAdd")
        with pytest.raises(TypeError, match="key must be built of"):
            dedup.content_key(FPAdd(FPAddParams()), key=object())

    class NoParams(wiring.Component):
        def __init__(self):
            super().__init__({"x": In(1)})

        def elaborate(self, platform):
            return Module()

    comp = NoParams()
    comp._MustUse__silence = True
    with pytest.raises(TypeError, match="pass key="):
        dedup.content_key(comp)


def test_same_key_other_ports_is_an_error():
    class W(wiring.Component):
        def __init__(self, width):
            self.params = ()                       # a wrong key: the width is left out
            super().__init__({"x": In(width), "y": Out(width)})

        def elaborate(self, platform):
            m = Module()
            m.d.comb += self.y.eq(self.x)
            return m

    class Top(wiring.Component):
        def __init__(self):
            super().__init__({"y": Out(3)})

        def elaborate(self, platform):
            m = Module()
            a = dedup.shared(m, "a", W(1))
            b = dedup.shared(m, "b", W(2))
            m.d.comb += self.y.eq(a.y + b.y)
            return m

    with _quietly(), pytest.raises(RuntimeError, match="other ports"):
        component_verilog(Top(), "top")


def test_connect_checks_port_and_width():
    for conn, msg in (({"y": Signal(16)}, "no input port 'y'"),
                      ({"a": Signal(8)}, "16 bits wide, connected to 8")):
        class Top(wiring.Component):
            def __init__(self):
                super().__init__({"y": Out(16)})

            def elaborate(self, platform):
                m = Module()
                m.d.comb += self.y.eq(dedup.shared(m, "add", FPAdd(FPAddParams()),
                                                   connect=conn).y)
                return m

        for flat in (False, True):
            with _quietly(), pytest.raises(ValueError, match=msg):
                component_verilog(Top(), "top", flat=flat)


# -- formal equivalence: dedup == flat ---------------------------------------------------------
_EQUIV = """\
read_verilog {gold}
read_verilog {gate}
proc
flatten
opt_clean -purge
expose -evert-dff gold/t:$*dff* gate/t:$*dff*
opt_clean
miter -equiv -flatten -make_assert gold gate miter
hierarchy -top miter
opt -fast
sat -verify -prove-asserts miter
"""


def _prove_equal(gold: str, gate: str, tmp_path: Path) -> tuple[bool, str]:
    """Yosys: are designs ``gold`` and ``gate`` (tops named so) equal?  (ok, log tail)"""
    # write_verilog's time-0 trigger register is named with a global counter; it is no logic
    fix = lambda t: re.sub(r"dump_module\$\d+", "dump_module$0", t)      # noqa: E731
    (tmp_path / "gold.v").write_text(fix(gold))
    (tmp_path / "gate.v").write_text(fix(gate))
    (tmp_path / "equiv.ys").write_text(_EQUIV.format(gold=tmp_path / "gold.v",
                                                     gate=tmp_path / "gate.v"))
    r = subprocess.run([YOSYS, "-q", "-l", str(tmp_path / "equiv.log"), str(tmp_path / "equiv.ys")],
                       capture_output=True, text=True, timeout=600)
    log = (tmp_path / "equiv.log").read_text()
    return r.returncode == 0 and "SUCCESS!" in log, (r.stderr + log)[-3000:]


_SLOW = pytest.mark.slow        # the same mechanisms at larger sizes (~20 s each): make test-slow
EQUIV_CONFIGS = [
    ("bmma_array", {"m": 2, "n": 2, "k": 32}),
    ("bmma_array", {"m": 2, "n": 3, "k": 64, "fold": 2, "ops": "xor"}),
    pytest.param("int8_mac_array", {"m": 1, "n": 2, "k": 4}, marks=_SLOW),
    pytest.param("int8_mac_array", {"m": 2, "n": 2, "k": 4, "fold": 2}, marks=_SLOW),
    pytest.param("dp4_pacq", {"D": 1, "wbits": 4}, marks=_SLOW),      # 6 s: make test's budget
    ("bnn_epilogue", {}),
    pytest.param("int8_mac_array", {"m": 2, "n": 2, "k": 4}, marks=_SLOW),
    pytest.param("dp4_pacq", {}, marks=_SLOW),
]


def _equiv_id(c):
    u, p = (c.values if hasattr(c, "values") else c)
    return f"{u}-{'-'.join(f'{k}={v}' for k, v in p.items()) or 'defaults'}"


@pytest.mark.skipif(YOSYS is None, reason="yosys not installed")
@pytest.mark.parametrize("unit,params", EQUIV_CONFIGS,
                         ids=[_equiv_id(c) for c in EQUIV_CONFIGS])
def test_dedup_equals_flat(unit, params, tmp_path):
    ok, log = _prove_equal(_gen(unit, top="gold", flat=True, **params),
                           _gen(unit, top="gate", **params), tmp_path)
    assert ok, log


@pytest.mark.skipif(YOSYS is None, reason="yosys not installed")
def test_blocks_equal_the_plain_grid(monkeypatch, tmp_path):
    """Quadrant blocks (forced on a small array) against the flat, unblocked grid."""
    from tcgen.units.bmma import rtl
    gold = _gen("bmma_array", top="gold", flat=True, m=3, n=5, k=32)
    monkeypatch.setattr(rtl, "GRID_WIRING_BITS", 256)
    gate = _gen("bmma_array", top="gate", m=3, n=5, k=32)
    assert "Block" in gate
    ok, log = _prove_equal(gold, gate, tmp_path)
    assert ok, log


@pytest.mark.skipif(YOSYS is None, reason="yosys not installed")
def test_equivalence_check_finds_a_difference(tmp_path):
    """The check is not vacuous: XOR and AND arrays (same ports) differ."""
    ok, _ = _prove_equal(_gen("bmma_array", top="gold", flat=True, m=1, n=2, k=32, ops="xor"),
                         _gen("bmma_array", top="gate", m=1, n=2, k=32, ops="and"), tmp_path)
    assert not ok


@pytest.mark.skipif(not shutil.which("verilator"), reason="verilator not installed")
def test_block_verilog_is_lint_clean(monkeypatch, tmp_path):
    from tcgen.units.bmma import rtl
    monkeypatch.setattr(rtl, "GRID_WIRING_BITS", 256)
    path = tmp_path / "bmma_array.v"
    path.write_text(_gen("bmma_array", m=3, n=5, k=32, fold=2))
    res = lint(path)                   # the project's Verilator (tcgen lint)
    assert res.clean, (res.errors + res.warnings)[:20]
