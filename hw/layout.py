"""Payload layouts: one description, both views (docs/architecture.md, "Payloads").

A stream payload (or any packed port) is described once, as an ``amaranth.lib.data`` layout
(``StructLayout``, ``ArrayLayout``, nested).  The RTL uses it as the port's shape
(``op.payload.a[k]``); tests, workloads and studies pack and unpack numpy arrays of payloads
through the same description with :func:`pack` and :func:`unpack`, so there is no second,
hand-written bit map to keep in step.

Field values in numpy: a plain field is an array of shape ``[n]``; an ``ArrayLayout`` field of
``count`` elements is ``[n, count]`` (nested arrays add axes); a nested ``StructLayout`` field is
a dict.  Integers are bit patterns: ``pack`` keeps the low ``width`` bits of each value (so
negative numbers are taken in two's complement); ``unpack`` returns them unsigned, or sign-
extended for signed shapes.  Values up to 64 bits are ``uint64``/``int64`` arrays, wider ones
object arrays of Python ints; payloads are object arrays of Python ints (any width).

Golden models do not import this module (they stay free of Amaranth): a family's ``UnitSpec``
unpacks the input payloads, calls its model on the fields, and packs the result.
"""
from __future__ import annotations

import numpy as np
from amaranth.hdl import Shape
from amaranth.lib import data

__all__ = ["pack", "unpack", "field_names", "width_of", "flat"]


def width_of(layout) -> int:
    """Bits of a layout or shape."""
    return Shape.cast(layout).width


def flat(layout):
    """The same bits with no inner structure: a StructLayout's fields as plain unsigned vectors
    of their widths (same names, same offsets), any other layout or shape as its plain width.

    For RTL that reads a payload at the bit level (operand chunks that cut across elements):
    the port keeps the field names of the description, and :func:`pack`/:func:`unpack` of the
    structured layout address exactly the same bits."""
    if isinstance(layout, data.StructLayout):
        return data.StructLayout({name: width_of(f.shape) for name, f in layout})
    return width_of(layout)


def field_names(layout) -> list[str]:
    """Names of a StructLayout's fields, LSB first."""
    return [name for name, _ in layout]


def _elements(layout):
    """(key, offset, shape) of the direct members of a Struct/ArrayLayout."""
    if isinstance(layout, data.ArrayLayout):
        w = Shape.cast(layout.elem_shape).width
        return [(i, i * w, layout.elem_shape) for i in range(layout.length)]
    return [(name, f.offset, f.shape) for name, f in layout]


def _is_aggregate(shape) -> bool:
    return isinstance(shape, (data.StructLayout, data.ArrayLayout))


def _as_object(values, n=None) -> np.ndarray:
    a = np.asarray(values)
    if a.dtype != object:
        a = a.astype(np.int64) if a.dtype.kind == "i" else a
        a = a.astype(object)
    return a


def pack(layout, fields, n: int | None = None) -> np.ndarray:
    """Payload integers (object array, shape ``[n]``) from field values.

    ``fields``: a dict for a StructLayout (every field must be given), an array of shape
    ``[n, count, ...]`` for an ArrayLayout, or an array ``[n]`` for a plain shape.  A scalar
    value (shape ``[]``) is broadcast to every payload if ``n`` is given or known."""
    return _pack(layout, fields, n)


def _pack(shape, values, n):
    if not _is_aggregate(shape):
        width = Shape.cast(shape).width
        v = _as_object(values)
        if v.ndim == 0:
            if n is None:
                raise ValueError("pack: cannot broadcast a scalar without a payload count n")
            v = np.full(n, v.item(), dtype=object)
        return v & ((1 << width) - 1) if width else v * 0
    if isinstance(shape, data.StructLayout):
        if not isinstance(values, dict):
            raise TypeError(f"pack: a StructLayout takes a dict of fields, got "
                            f"{type(values).__name__}")
        missing = [name for name, _ in shape if name not in values]
        extra = [k for k in values if k not in dict(iter(shape))]
        if missing or extra:
            raise KeyError(f"pack: fields {missing} missing, {extra} unknown; the layout has "
                           f"{field_names(shape)}")
        if n is None:
            for name, _ in shape:
                a = np.asarray(values[name]) if not isinstance(values[name], dict) else None
                if a is not None and a.ndim >= 1:
                    n = a.shape[0]
                    break
        parts = [(off, _pack(fshape, values[name], n)) for name, off, fshape in
                 _elements(shape)]
    else:                                         # ArrayLayout: axis 1 indexes the elements
        arr = _as_object(values)
        if arr.ndim == 1 and shape.length == 1:
            arr = arr[:, None]
        if arr.ndim < 2 or arr.shape[1] != shape.length:
            raise ValueError(f"pack: an ArrayLayout of {shape.length} elements takes values of "
                             f"shape [n, {shape.length}, ...], got {arr.shape}")
        parts = [(off, _pack(eshape, arr[:, i], n)) for i, off, eshape in _elements(shape)]
    out = None
    for off, v in parts:
        out = (v << off) if out is None else out | (v << off)
    return out


def unpack(layout, payloads) -> dict | np.ndarray:
    """Field values from payload integers (the inverse of :func:`pack`)."""
    pl = _as_object(payloads)
    if pl.ndim == 0:
        pl = pl.reshape(1)
    return _unpack(layout, pl)


def _unpack(shape, pl):
    if not _is_aggregate(shape):
        s = Shape.cast(shape)
        v = pl & ((1 << s.width) - 1)
        if s.signed and s.width:
            v = np.where(v >= (1 << (s.width - 1)), v - (1 << s.width), v)
        if s.width <= 63 or (s.width == 64 and not s.signed):
            return v.astype(np.int64 if s.signed else np.uint64)
        return v
    if isinstance(shape, data.StructLayout):
        return {name: _unpack(fshape, pl >> off) for name, off, fshape in _elements(shape)}
    cols = [_unpack(eshape, pl >> off) for _, off, eshape in _elements(shape)]
    return np.stack(cols, axis=1)
