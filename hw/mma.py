"""A Hopper tensor-core instruction in RTL: one m16n8kK matrix multiply-accumulate built from
:class:`tcgen.hw.fused.FusedDot` blocks, with the numerics measured on an H200 (docs/silicon.md).

``D = A·B + C`` for an m×k A, a k×n B and an m×n C: every output is one fused dot product of
a row of A and a column of B with its C, exactly as the instruction computes it (one block per
K-step: 16 products for FP16/BF16, 32 for FP8).  ``numerics`` names the instruction:

========================  =================================  ====  =========================
numerics                  the measured instruction           k     fused_dot preset
========================  =================================  ====  =========================
``f16_f32``               mma.sync m16n8k16 .f32.f16.f16     16    fused16_sm90
``f16_f16``               mma.sync m16n8k16 .f16.f16.f16     16    fused16_sm90_fp16
``bf16_f32``              mma.sync m16n8k16 .f32.bf16.bf16   16    fused16_sm90, fmt bf16
``tf32_f32``              mma.sync m16n8k8 .f32.tf32.tf32    8     tf32_sm90
``qgmma_e4m3_f32``        wgmma m64n8k32 .f32.e4m3.e4m3      32    qgmma_sm90
``qgmma_e5m2_f32``        wgmma m64n8k32 .f32.e5m2.e5m2      32    qgmma_sm90, fmt e5m2
``qgmma_e4m3_f16``        wgmma m64n8k32 .f16.e4m3.e4m3      32    qgmma_sm90_fp16
``qgmma_e5m2_f16``        wgmma m64n8k32 .f16.e5m2.e5m2      32    qgmma_sm90_fp16, e5m2
``qgmma_e4m3_e5m2_f32``   wgmma m64n8k32 .f32.e4m3.e5m2      32    qgmma_sm90, fmt_b e5m2
========================  =================================  ====  =========================

(The FP8 ``mma.sync`` of sm_90 is not a tensor-core instruction: the compiler emulates it
with FP16 HMMAs, so its hardware is the ``f16_*`` unit plus an adder; the QGMMA rows are the
FP8 K-step of a wgmma, one m16 slice of its m64.)  ``m`` and ``n`` default to the instruction's
16 × 8; smaller tiles build the same numerics with fewer blocks.

TF32 operands arrive as the instruction's FP32 register patterns; the unit drops their low 13
fraction bits, as the silicon does.

Ports (row-major, lane i·k + j of ``a`` is A[i][j]): ``a`` ``In(ArrayLayout(fmt.width, m·k))``,
``b`` ``In(ArrayLayout(fmt.width, k·n))`` (lane j·n + l is B[j][l]), ``c``/``d``
``ArrayLayout(acc.width, m·n)``.  Fixed latency = ``pipeline``.  Golden model:
:func:`tcgen.hw.sm90.mma`.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, Module, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from . import numeric as num
from .dedup import shared
from .fused import FusedDot, FusedDotParams
from .params import Params, param

__all__ = ["MmaSm90Params", "MmaSm90", "NUMERICS"]

#: numerics -> (the sm90 instruction whose rule it is, the fused_dot parameters of one block)
NUMERICS = {
    "f16_f32": ("f16_f32", dict(n=16, fmt="fp16", acc="fp32", out="fp32", window=27)),
    "f16_f16": ("f16_f16", dict(n=16, fmt="fp16", acc="fp16", out="fp16", window=27)),
    "bf16_f32": ("bf16_f32", dict(n=16, fmt="bf16", acc="fp32", out="fp32", window=27)),
    "tf32_f32": ("tf32_f32", dict(n=8, fmt="tf32", acc="fp32", out="fp32", window=27)),
    "qgmma_e4m3_f32": ("wg_e4m3_f32", dict(n=32, fmt="fp8_e4m3", acc="fp32", out="fp32",
                                           window=15, acc_man=13)),
    "qgmma_e5m2_f32": ("wg_e5m2_f32", dict(n=32, fmt="fp8_e5m2", acc="fp32", out="fp32",
                                           window=15, acc_man=13)),
    "qgmma_e4m3_f16": ("wg_e4m3_f16", dict(n=32, fmt="fp8_e4m3", acc="fp16", out="fp16",
                                           window=15)),
    "qgmma_e5m2_f16": ("wg_e5m2_f16", dict(n=32, fmt="fp8_e5m2", acc="fp16", out="fp16",
                                           window=15)),
    "qgmma_e4m3_e5m2_f32": ("wg_e4m3_e5m2_f32", dict(n=32, fmt="fp8_e4m3", fmt_b="fp8_e5m2",
                                                     acc="fp32", out="fp32", window=15,
                                                     acc_man=13)),
}


@dataclass(frozen=True)
class MmaSm90Params(Params):
    """Defaults: one ``mma.sync.m16n8k16.f32.f16.f16.f32`` as an H200 computes it."""
    UNIT = "mma_sm90"
    numerics: str = param("f16_f32", choices=tuple(NUMERICS),
                          doc="the instruction (module docstring): f16_f32, f16_f16, bf16_f32, "
                              "tf32_f32, qgmma_e4m3_f32, qgmma_e5m2_f32, qgmma_e4m3_f16, "
                              "qgmma_e5m2_f16, qgmma_e4m3_e5m2_f32")
    m: int = param(16, choices=(1, 2, 4, 8, 16), doc="rows of A, C and D (16: the instruction)")
    n: int = param(8, choices=(1, 2, 4, 8), doc="columns of B, C and D (8: the instruction)")
    pipeline: int = param(0, range=(0, 2), doc="pipeline register stages of every block")

    @property
    def block(self) -> FusedDotParams:
        """The fused_dot parameters of one output's block."""
        return FusedDotParams(**NUMERICS[self.numerics][1], pipeline=self.pipeline)

    @property
    def k(self) -> int:
        return self.block.n

    @property
    def instruction(self) -> str:
        """The tcgen.hw.sm90 instruction whose measured rule this is."""
        return NUMERICS[self.numerics][0]

    @property
    def latency(self) -> int:
        return self.pipeline


class MmaSm90(wiring.Component):
    """m × n fused blocks, one per output (module docstring)."""

    def __init__(self, params: MmaSm90Params):
        self.params = params
        self.latency = params.latency
        bp = params.block
        fw = 32 if bp.fmt == "tf32" else num.get_format(bp.fmt).width   # TF32: FP32 patterns
        fwb = 32 if bp.fmt == "tf32" else num.get_format(bp.fmt_b or bp.fmt).width
        cw = num.get_format(bp.acc).width
        m, n, k = params.m, params.n, params.k
        super().__init__({"a": In(data.ArrayLayout(fw, m * k)),
                          "b": In(data.ArrayLayout(fwb, k * n)),
                          "c": In(data.ArrayLayout(cw, m * n)),
                          "d": Out(data.ArrayLayout(cw, m * n))})

    def elaborate(self, platform):
        mod = Module()
        p = self.params
        m, n, k = p.m, p.n, p.k
        lo = 13 if p.block.fmt == "tf32" else 0      # TF32: the low 13 fraction bits dropped
        for i in range(m):
            row = Cat(*(Value.cast(self.a[i * k + j])[lo:] for j in range(k)))
            for col in range(n):
                column = Cat(*(Value.cast(self.b[j * n + col])[lo:] for j in range(k)))
                blk = shared(mod, f"blk{i}_{col}", FusedDot(p.block),
                             connect={"a": row, "b": column, "c": self.c[i * n + col]})
                mod.d.comb += self.d[i * n + col].eq(blk.y)
        return mod
