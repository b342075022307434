"""tcgen.hw.layout against Amaranth: pack/unpack of numpy field arrays agree with
``layout.const(...).as_bits()`` for the families' real payload layouts (nested ArrayLayouts,
signed elements, optional fields), and unpack(pack(x)) == x."""
from __future__ import annotations

import numpy as np
import pytest
from amaranth.hdl import Shape
from amaranth.lib import data

from tcgen.hw.layout import flat, pack, unpack, width_of
from tcgen.units.bmma import layouts as bmma_layouts
from tcgen.units.bmma.params import BmmaArrayParams, BnnEpilogueParams, Int8MacArrayParams
from tcgen.units.pacq import layouts as pacq_layouts
from tcgen.units.pacq.params import Dp4BaselineParams, Dp4PacqParams

N = 5          # payloads per case


def _random(shape, rng, n):
    """Random field values of a layout for n payloads (signed shapes in their signed range)."""
    if isinstance(shape, data.StructLayout):
        return {name: _random(f.shape, rng, n) for name, f in shape}
    if isinstance(shape, data.ArrayLayout):
        cols = [_random(shape.elem_shape, rng, n) for _ in range(shape.length)]
        if isinstance(shape.elem_shape, data.StructLayout):
            raise NotImplementedError("no family has arrays of structs")
        return np.stack(cols, axis=1)
    s = Shape.cast(shape)
    lo, hi = (-(1 << (s.width - 1)), 1 << (s.width - 1)) if s.signed else (0, 1 << s.width)
    vals = [int(rng.integers(0, 1 << 62)) % (hi - lo) + lo for _ in range(n)]
    if s.width > 62:
        vals = [lo + (sum(int(rng.integers(0, 1 << 32)) << (32 * j)
                          for j in range(-(-s.width // 32))) % (hi - lo)) for _ in range(n)]
        return np.array(vals, dtype=object)
    return np.array(vals, dtype=np.int64)


def _init(shape, values, i):
    """The ``layout.const`` initializer of payload i."""
    if isinstance(shape, data.StructLayout):
        return {name: _init(f.shape, values[name], i) for name, f in shape}
    if isinstance(shape, data.ArrayLayout):
        return [_init(shape.elem_shape, values[:, j], i) for j in range(shape.length)]
    return int(values[i])


def _equal(shape, got, want):
    if isinstance(shape, data.StructLayout):
        assert set(got) == set(want)
        for name, f in shape:
            _equal(f.shape, got[name], want[name])
        return
    assert [int(x) for x in np.asarray(got).reshape(-1)] == \
        [int(x) for x in np.asarray(want).reshape(-1)]
    assert np.asarray(got).shape == np.asarray(want).shape


CASES = {
    "dp4_baseline.op fp16": pacq_layouts.dp4_baseline_op(Dp4BaselineParams()),
    "dp4_baseline.res fp32": pacq_layouts.dp4_baseline_res(Dp4BaselineParams(acc="fp32")),
    "dp4_pacq.op both": pacq_layouts.dp4_pacq_op(Dp4PacqParams()),
    "dp4_pacq.op w4 no sa": pacq_layouts.dp4_pacq_op(Dp4PacqParams(wbits="4", sum_a=False)),
    "dp4_pacq.res D4 fp32": pacq_layouts.dp4_pacq_res(Dp4PacqParams(D=4, acc="fp32")),
    "dp4_pacq.res D1 w2": pacq_layouts.dp4_pacq_res(Dp4PacqParams(wbits="2", D=1)),
    "pacq_mul.p_lanes": pacq_layouts.pacq_mul_lanes(22, 8),
    "bmma_array.req m2n3k64": bmma_layouts.array_request(BmmaArrayParams(m=2, n=3, k=64)),
    "bmma_array.req default": bmma_layouts.array_request(BmmaArrayParams()),
    "bmma_array.d acc12": bmma_layouts.array_result(BmmaArrayParams(m=2, n=2, k=32,
                                                                    acc_width=12)),
    "int8_mac_array.req": bmma_layouts.array_request(Int8MacArrayParams(m=2, n=3, k=4)),
    "bnn_epilogue.req": bmma_layouts.epilogue_request(BnnEpilogueParams(n=4)),
    "bnn_epilogue.req no res/sense": bmma_layouts.epilogue_request(
        BnnEpilogueParams(n=3, res_width=0, sense=False)),
    "bnn_epilogue.out": bmma_layouts.epilogue_result(BnnEpilogueParams(n=8)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_pack_agrees_with_amaranth_const_and_round_trips(case):
    layout = CASES[case]
    rng = np.random.default_rng(sum(map(ord, case)))
    fields = _random(layout, rng, N)
    payloads = pack(layout, fields)
    assert payloads.shape == (N,)
    for i in range(N):
        assert int(payloads[i]) == layout.const(_init(layout, fields, i)).as_bits(), \
            f"{case}: payload {i}"
        assert 0 <= int(payloads[i]) < (1 << width_of(layout))
    _equal(layout, unpack(layout, payloads), fields)
    # the flat (RTL port) view addresses the same bits
    flat_view = flat(layout)
    assert width_of(flat_view) == width_of(layout)
    if isinstance(layout, data.StructLayout):
        assert [(name, f.offset) for name, f in flat_view] == \
            [(name, f.offset) for name, f in layout]
        assert int(pack(flat_view, unpack(flat_view, payloads))[0]) == int(payloads[0])


def test_unpack_of_random_payloads_round_trips():
    """Any payload integer (not only packed ones) survives unpack then pack."""
    layout = bmma_layouts.epilogue_request(BnnEpilogueParams(n=3, tau_width=12, k_width=8))
    rng = np.random.default_rng(7)
    w = width_of(layout)
    pl = np.array([int(rng.integers(0, 1 << 62)) << (w - 62) | int(rng.integers(0, 1 << 62))
                   for _ in range(N)], dtype=object) % (1 << w)
    assert [int(x) for x in pack(layout, unpack(layout, pl))] == [int(x) for x in pl]


def test_pack_rejects_missing_and_unknown_fields():
    layout = pacq_layouts.dp4_baseline_op(Dp4BaselineParams())
    f = {"a": np.zeros((2, 4)), "b": np.zeros((2, 4))}
    with pytest.raises(KeyError, match="missing"):
        pack(layout, f)
    with pytest.raises(KeyError, match="unknown"):
        pack(layout, dict(f, c=np.zeros(2), d=np.zeros(2)))
