"""Validated, frozen parameter dataclasses (docs/architecture.md, "The unit protocol").

A unit's parameters are a frozen dataclass deriving from :class:`Params`; each field is declared
with :func:`param`, which records its type, what is allowed and an optional ``convert`` applied
before validation.  ``__post_init__`` validates every field and raises :class:`ParamError` (a
``ValueError``) naming the unit, the field, the value and what is allowed::

    @dataclass(frozen=True)
    class FPAddParams(Params):
        UNIT = "fp_add"
        fmt: str = param("fp16", choices=FORMAT_NAMES, doc="number format")
        pipeline: int = param(0, range=(0, 3), doc="pipeline register stages")
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["Params", "ParamError", "param", "describe_field", "parse_value", "parse_seed",
           "SEED_MAX"]

#: the largest seed: numpy's ``default_rng`` and cocotb's ``random`` take 0 .. 2**32-1
SEED_MAX = 2**32 - 1

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class ParamError(ValueError):
    """A parameter value (or another user-given value such as a top-module name) that is not
    allowed.  The message is one line: ``<unit>: <field> must be <allowed>, got <value>``."""


def param(default, *, choices=None, range=None, doc: str = "", convert=None,
          key_default: bool = True):
    """Declare a parameter field: ``choices`` (a tuple) or ``range`` ((lo, hi), inclusive).

    ``convert`` (optional) maps a value given from Python to the field's canonical form before
    it is validated (e.g. the integer 4 to the choice ``"4"``); it must return the value
    unchanged when it does not apply.

    ``key_default=False``: an off-by-default extension added to an existing block -- at its
    default the field is left out of the block's module content key
    (:func:`tcgen.hw.dedup.content_key`), so the modules built before it existed keep their
    names, their Verilog and every cached result.
    """
    return dataclasses.field(default=default,
                             metadata={"choices": tuple(choices) if choices else None,
                                       "range": range, "doc": doc, "convert": convert,
                                       "key_default": key_default})


def _type_of(f: dataclasses.Field) -> type:
    t = f.type if isinstance(f.type, type) else {"int": int, "bool": bool, "str": str,
                                                 "float": float}[str(f.type)]
    return t


def describe_field(f: dataclasses.Field) -> str:
    """What is allowed for a field, in words (used by errors and ``tcgen list``)."""
    t = _type_of(f)
    md = f.metadata
    if md.get("choices"):
        return "one of " + ", ".join(str(c) for c in md["choices"])
    if md.get("range"):
        lo, hi = md["range"]
        return f"an integer in {lo}..{hi}" if t is int else f"a number in {lo}..{hi}"
    if t is bool:
        return "true or false"
    return f"a{'n' if t is int else ''} {t.__name__}"


@dataclass(frozen=True)
class Params:
    """Base class of every unit's parameters."""

    UNIT: ClassVar[str] = "unit"

    def __post_init__(self):
        for f in dataclasses.fields(self):
            convert = f.metadata.get("convert")
            if convert is not None:
                object.__setattr__(self, f.name, convert(getattr(self, f.name)))
            self._check_field(f, getattr(self, f.name))
        self.check()

    def check(self):
        """Cross-field checks; raise :meth:`error` on violation."""

    def error(self, field: str, value: Any, allowed: str) -> ParamError:
        return ParamError(f"{self.UNIT}: {field} must be {allowed}, got {_shown(value)}")

    def _check_field(self, f, value):
        t = _type_of(f)
        ok_type = isinstance(value, t) and not (t is int and isinstance(value, bool))
        if not ok_type:
            raise self.error(f.name, value, describe_field(f))
        md = f.metadata
        if md.get("choices") and value not in md["choices"]:
            raise self.error(f.name, value, describe_field(f))
        if md.get("range"):
            lo, hi = md["range"]
            if not lo <= value <= hi:
                raise self.error(f.name, value, describe_field(f))

    # -- construction from strings (CLI) -------------------------------------------------------
    @classmethod
    def from_strings(cls, values: dict[str, str]) -> "Params":
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kwargs = {}
        for name, text in values.items():
            if name not in fields:
                allowed = ", ".join(fields) or "(none)"
                raise ParamError(f"{cls.UNIT}: unknown parameter {_shown(name)}; parameters "
                                 f"are: {allowed}")
            f = fields[name]
            t = _type_of(f)
            try:
                kwargs[name] = parse_value(t, text)
            except ValueError:
                raise ParamError(f"{cls.UNIT}: {name} must be {describe_field(f)}, got "
                                 f"{_shown(text)}") from None
        return cls(**kwargs)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "Params":
        """Params from Python values (a JSON object, a sweep point); unknown names are a
        :class:`ParamError` as in :meth:`from_strings`."""
        names = {f.name for f in dataclasses.fields(cls)}
        for name in values:
            if name not in names:
                raise ParamError(f"{cls.UNIT}: unknown parameter {name!r}; parameters are: "
                                 f"{', '.join(sorted(names)) or '(none)'}")
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def keyed(self) -> dict[str, Any]:
        """The values that name this configuration: :meth:`as_dict` without the fields declared
        ``param(key_default=False)`` that are at their default (Verilog headers, cache keys,
        module content keys)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.metadata.get("key_default", True) or getattr(self, f.name) != f.default}

    def key(self) -> str:
        """A short, stable, filesystem-safe text of the values (cache keys, file names)."""
        return "_".join(f"{k}-{v}" for k, v in self.keyed().items()) or "default"

    @classmethod
    def fields(cls):
        return dataclasses.fields(cls)


def _shown(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters (a megabyte of bad input is not echoed)."""
    try:
        text = repr(value)
    except ValueError:                   # an int of more digits than Python will print
        text = f"<{type(value).__name__} of {value.bit_length()} bits>"
    return text if len(text) <= limit else text[: limit - 5] + "[...]"


_INT = re.compile(r"-?(0|[1-9][0-9]*)")
_FLOAT = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def parse_value(t: type, text: str):
    """A field value from its text, strictly (README, "Errors"): an integer is written in
    decimal ASCII digits with an optional leading ``-`` -- no ``+``, no ``0x``/``0o``/``0b``
    prefix, no ``_`` separator, no leading zero, no surrounding whitespace (Python's ``int()``
    would take ``'١'``, ``' 3 '``, ``'1_0'``); a number is a decimal or exponent form that is
    finite (``1e400``, ``inf`` and ``nan`` are refused).  ``ValueError`` if malformed."""
    if t is bool:
        low = text.lower()
        if text != text.strip() or low not in _TRUE | _FALSE:
            raise ValueError(text)
        return low in _TRUE
    if t is int:
        if not _INT.fullmatch(text) or len(text) > 4300:
            raise ValueError(text)
        return int(text)
    if t is float:
        if not _FLOAT.fullmatch(text):
            raise ValueError(text)
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(text)
        return value
    return text


def parse_seed(text: str, what: str = "TCGEN_SEED") -> int:
    """A random seed from its text (``TCGEN_SEED``, ``--seed``): a decimal integer in
    0..:data:`SEED_MAX`, else a one-line :class:`ParamError` naming ``what``.  The one seed
    parser of the command line and the verification harness."""
    try:
        value = parse_value(int, str(text))
    except ValueError:
        value = -1
    if not 0 <= value <= SEED_MAX:
        raise ParamError(f"{what} must be an integer in 0..{SEED_MAX}, got {_shown(str(text))}")
    return value
