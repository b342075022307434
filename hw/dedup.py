"""Generate once per distinct module: identical sub-components elaborated and emitted once.

A datapath adds a replicated sub-component through :func:`shared` instead of
``m.submodules[name] = component``::

    mul = shared(m, f"mul{k}", FPMul(FPMulParams(fmt="fp16")))   # key: class + mul.params
    m.d.comb += [mul.a.eq(x), mul.b.eq(y)]                         # ports used as ever

What it does depends on the *mode* of the emission in progress (a :mod:`contextvars` variable
that :func:`tcgen.hw.generate.component_verilog` sets around the elaboration; nothing else does):

* **flat** (no emission in progress -- the Amaranth simulator, a bare ``rtlil.convert`` -- or
  ``component_verilog(..., flat=True)``): ``m.submodules[name] = component``, exactly what the
  datapath did before; every instance is elaborated and emitted again.
* **dedup** (``component_verilog``'s default): the component's *content key* is its class
  (module and qualified name) plus ``key`` (default: the component's ``params``).  The first
  time a key is seen, the component is converted on its own (``rtlil.convert``, recursively:
  a shared module may contain shared modules) into a module named
  ``<top>__<Class>_<10 hex digits of sha256(key)>`` -- a plain Verilog identifier, never a
  keyword, unique per distinct configuration, prefixed by the top so that two generated files
  can be compiled together.  Every use, the first included, then adds an Amaranth ``Instance`` of
  that module named ``name``, wiring the component's flattened ``wiring.Signature`` members
  (``In`` -> ``i_<path>``, ``Out`` -> ``o_<path>``, paths joined by ``__`` as Amaranth names the
  module's ports) and, if the module has them, ``clk`` / ``rst`` (``<domain>_clk`` / ``_rst``)
  to the parent's clock domains.  The parent keeps using the component object's port signals;
  the object itself is never elaborated in the parent.

So the key must determine the component's logic: everything its constructor takes.  A key is
made canonical (dataclasses field by field, sets sorted, no ``repr`` with an address) so that
names are the same in every run.  Two uses of one key must have the same ports (checked).

``connect={port: value}`` drives input ports without the intermediate port signal: flat mode
assigns them (``m.d.comb += port.eq(value)``), dedup mode wires the values to the instance.
Amaranth's cost is per bit of every value it emits, and an assignment emits its bits more than
once, so for wide, many-times-replicated ports (an array's operand rows) this cuts the parent's
elaboration several times (about 4x on 256 instances of a 1024-bit port).

A module Amaranth cannot emit (more than :data:`MAX_INPUT_BITS` input bits) is refused up
front by :func:`check_port_bits` with a :class:`~tcgen.hw.params.ParamError`, for the top
(``component_verilog``) and for every distinct shared module.

:func:`Emission.modules` gives the recorded modules' RTLIL in a deterministic order (sorted by
module name); ``component_verilog`` appends them to the top's RTLIL and emits the lot in one
Yosys ``write_verilog``.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import enum
import hashlib
import re
from dataclasses import dataclass, field

from amaranth import ClockSignal, Instance, Module, ResetSignal, Value
from amaranth.hdl import ValueCastable
from amaranth.lib import wiring

__all__ = ["shared", "emission", "Emission", "content_key", "module_name", "current",
           "check_port_bits", "port_bits", "emittable", "MAX_INPUT_BITS"]

#: Amaranth 0.5 numbers a module's input bits 2..65535 (a net is cell << 16 | bit), so a module
#: takes at most 65534 input bits, and no port can be wider than 65536 bits.
MAX_INPUT_BITS = 65534
MAX_PORT_BITS = 65536

_CURRENT: contextvars.ContextVar["Emission | None"] = contextvars.ContextVar(
    "tcgen_hw_dedup", default=None)


@dataclass
class _Module:
    name: str
    key: tuple
    rtlil: str
    ports: dict            # port name -> "input" | "output" (the module's, clk/rst included)
    sig_ports: tuple       # ((path, flow, width, signed), ...) of the representative


@dataclass
class Emission:
    """The distinct modules recorded while one top is elaborated (dedup mode)."""
    top: str
    by_key: dict = field(default_factory=dict)      # canonical key -> _Module
    names: dict = field(default_factory=dict)       # module name -> canonical key
    instances: int = 0                               # shared() calls (uses of the modules)

    def modules(self) -> list[_Module]:
        """The recorded modules, sorted by name (the emission order after the top)."""
        return [self.by_key[self.names[n]] for n in sorted(self.names)]


def current() -> Emission | None:
    """The emission in progress in dedup mode, else None (flat)."""
    return _CURRENT.get()


@contextlib.contextmanager
def emission(top: str):
    """Dedup mode for the elaboration inside the ``with`` block; yields the :class:`Emission`."""
    em = Emission(top)
    token = _CURRENT.set(em)
    try:
        yield em
    finally:
        _CURRENT.reset(token)


def _canon(obj):
    """A deterministic, hashable, repr-stable form of a key (raises TypeError if there is none)."""
    if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        return obj
    if isinstance(obj, enum.Enum):
        return (type(obj).__qualname__, obj.name)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # a field declared with param(key_default=False) is left out at its default
        return (type(obj).__module__, type(obj).__qualname__,
                tuple((f.name, _canon(getattr(obj, f.name))) for f in dataclasses.fields(obj)
                      if f.metadata.get("key_default", True) or getattr(obj, f.name) != f.default))
    if isinstance(obj, (tuple, list)):
        return tuple(_canon(x) for x in obj)
    if isinstance(obj, dict):
        return tuple(sorted(((repr(_canon(k)), _canon(v)) for k, v in obj.items())))
    if isinstance(obj, (set, frozenset)):
        return tuple(sorted((_canon(x) for x in obj), key=repr))
    raise TypeError(f"shared(): a key must be built of dataclasses, tuples, dicts, sets, enums "
                    f"and scalars, got {type(obj).__qualname__}")


def content_key(component, key=None) -> tuple:
    """The canonical content key of ``component``: its class and ``key`` (default: its
    ``params``)."""
    if key is None:
        if not hasattr(component, "params"):
            raise TypeError(f"shared(): {type(component).__qualname__} has no `params`; pass "
                            f"key= (everything its constructor takes)")
        key = component.params
    cls = type(component)
    return (cls.__module__, cls.__qualname__, _canon(key))


def module_name(top: str, component, key: tuple) -> str:
    """``<top>__<Class>_<hash>``: deterministic, a plain identifier, never a keyword."""
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:10]
    cls = re.sub(r"[^A-Za-z0-9_]", "_", type(component).__name__).strip("_") or "module"
    return f"{top}__{cls}_{digest}"


def port_bits(component) -> tuple[int, tuple[str, int] | None]:
    """(input bits of ``component``'s signature, (name, width) of its widest port or None):
    what :func:`check_port_bits` bounds, read from the signature alone (nothing elaborated)."""
    ports = _signature_ports(component)
    widest = max(ports, key=lambda p: p[2], default=None)
    return (sum(p[2] for p in ports if p[1] == wiring.In),
            None if widest is None else (widest[0], widest[2]))


def emittable(n_in: int, widest: tuple[str, int] | None) -> bool:
    """Whether Amaranth can emit a module of ``n_in`` input bits (clock and reset added) whose
    widest port is ``widest``."""
    return n_in + 2 <= MAX_INPUT_BITS and (widest is None or widest[1] <= MAX_PORT_BITS)


def check_port_bits(component, what: str):
    """:class:`~tcgen.hw.params.ParamError` if Amaranth cannot emit ``component`` as a module
    (more than :data:`MAX_INPUT_BITS` input bits, or a port wider than 65536 bits)."""
    from .params import ParamError
    ports = _signature_ports(component)
    n_in = sum(p[2] for p in ports if p[1] == wiring.In)
    widest = max(ports, key=lambda p: p[2], default=None)
    if not emittable(n_in, None if widest is None else (widest[0], widest[2])):
        raise ParamError(f"generate: {what} has {n_in} input bits (widest port {widest[0]}: "
                         f"{widest[2]}); Amaranth can emit at most {MAX_INPUT_BITS} input bits "
                         f"(clock and reset included) and {MAX_PORT_BITS} bits per port in "
                         f"one module: choose smaller parameters")


def _signature_ports(component) -> tuple:
    out = []
    for path, member, value in component.signature.flatten(component):
        if isinstance(value, ValueCastable):
            value = value.as_value()
        shape = value.shape()
        out.append(("__".join(map(str, path)), member.flow, shape.width, shape.signed, value))
    return tuple(out)


_PORT = re.compile(r"\s*wire\b.*?\b(input|output|inout)\s+\d+\s+\\(\S+)\s*$")


def _module_ports(text: str, name: str) -> dict:
    """Ports (name -> direction) of RTLIL module ``name`` in ``text``."""
    ports, inside = {}, False
    head = f"module \\{name}"
    for line in text.splitlines():
        if not inside:
            inside = line.rstrip() == head
            continue
        if line.startswith("end"):
            break
        mt = _PORT.match(line)
        if mt:
            ports[mt.group(2)] = mt.group(1)
    return ports


def _domain_signal(port: str):
    """The parent's signal for a clock/reset port Amaranth added to a module."""
    if port == "clk":
        return ClockSignal("sync")
    if port == "rst":
        return ResetSignal("sync")
    if port.endswith("_clk"):
        return ClockSignal(port[:-4])
    if port.endswith("_rst"):
        return ResetSignal(port[:-4])
    return None


def _check_connect(component, ports: dict, port: str, value):
    if port not in ports or ports[port][1] != wiring.In:
        raise ValueError(f"shared(): {type(component).__qualname__} has no input port {port!r}")
    if len(Value.cast(value)) != ports[port][2]:
        raise ValueError(f"shared(): {type(component).__qualname__} port {port!r} is "
                         f"{ports[port][2]} bits wide, connected to {len(Value.cast(value))}")


def shared(m: Module, name: str, component: wiring.Component, key=None, *, connect=None):
    """Add ``component`` to ``m`` as submodule ``name``: once per distinct module in dedup mode,
    as ``m.submodules[name] = component`` in flat mode (see the module doc).  Returns
    ``component``, whose port signals the caller drives and reads as usual.

    ``connect`` (optional) maps input ports (flattened paths, ``"a"``, ``"req__payload"``) to
    the values that drive them: flat mode assigns them (``m.d.comb += port.eq(value)``), dedup
    mode wires them to the instance directly, without the intermediate signal (faster to
    elaborate for wide ports; same logic)."""
    connect = dict(connect or {})
    em = _CURRENT.get()
    if em is None:
        m.submodules[name] = component
        if connect:
            ports = {p[0]: p for p in _signature_ports(component)}
            for port, value in connect.items():
                _check_connect(component, ports, port, value)
                m.d.comb += ports[port][4].eq(value)
        return component
    from amaranth.back import rtlil          # only when emitting

    ck = content_key(component, key)
    ports = _signature_ports(component)
    shape_of = tuple(p[:4] for p in ports)
    rec = em.by_key.get(ck)
    if rec is None:
        mod = module_name(em.top, component, ck)
        if mod in em.names:                  # a 40-bit prefix collision: never silently merge
            raise RuntimeError(f"shared(): module name {mod} for two different keys")
        check_port_bits(component, f"{type(component).__qualname__} {name!r}")
        text = rtlil.convert(component, name=mod, emit_src=False)
        rec = _Module(mod, ck, text, _module_ports(text, mod), shape_of)
        em.by_key[ck] = rec
        em.names[mod] = ck
    else:
        component._MustUse__silence = True   # never elaborated: its twin was
        if rec.sig_ports != shape_of:
            raise RuntimeError(f"shared(): {type(component).__qualname__} {name!r} has the key "
                               f"of module {rec.name} but other ports; the key must determine "
                               f"the component (pass key=)")
    conns = {}
    by_name = {p[0]: p for p in ports}
    for port, value in connect.items():
        _check_connect(component, by_name, port, value)
    for port, direction in rec.ports.items():
        if port in by_name:
            _, flow, _, _, value = by_name[port]
            conns[("i_" if flow == wiring.In else "o_") + port] = connect.get(port, value)
        else:
            sig = _domain_signal(port)
            if sig is None or direction != "input":
                raise RuntimeError(f"shared(): module {rec.name} has port {port!r}, which is "
                                   f"neither a signature member nor a clock or reset")
            conns["i_" + port] = sig
    missing = set(by_name) - set(rec.ports)
    if missing:
        raise RuntimeError(f"shared(): module {rec.name} lacks ports {sorted(missing)}")
    em.instances += 1
    m.submodules[name] = Instance(rec.name, **conns)
    return component
