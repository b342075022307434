"""Hopper (sm_90) tensor-core instructions as the silicon computes them.

Golden models of every probed ``mma.sync``, ``mma.sp`` and ``wgmma.mma_async`` (numpy and
:mod:`tcgen.hw.numeric` only), fitted to and checked against 27.3 M outputs measured on an
NVIDIA H200 (scripts/silicon/, reports/silicon.md, docs/silicon.md): every op's preset here
reproduces every measured output bit for bit.

Four rules cover all 26 instructions:

``fused``     one fused dot product per instruction (:func:`numeric.fused_dot`): exact
              products, one alignment to the largest exponent, every addend truncated to a
              ``window``-bit window, one rounding (FP32: toward zero; FP16: to nearest-even),
              every zero result +0, overflow ±inf.  FP16, BF16 and TF32 (whose operands lose
              their 13 low fraction bits: truncated, not rounded) at window 27; the FP8 wgmma
              (QGMMA) at window 15 with an accumulator of 13 fraction bits (``acc_man``) for an
              FP32 C and result, window 15 with an FP16 C and result.  A chain of K-steps
              (wgmma over long K, or mma's C) feeds each result in as the next C.
``fp8_hmma``  mma.sync / mma.sp with FP8 operands: no FP8 tensor-core path; the compiler emits
              exact FP8 -> FP16 conversions (F2FP.F16.E4M3/E5M2.UNPACK_B) and two HMMA steps
              from +0 -- the products whose k mod 4 is 0 or 1 first, then 2 or 3 -- each the
              ``fused`` FP16 rule, then one IEEE addition (FADD / HADD2, round to nearest-even)
              of C; a NaN result is the all-ones NaN.
``int``       s8 × s8 + s32: exact, wrapping modulo 2^32, or clamped (``.satfinite``).
``b1``        popc(a AND b) or popc(a XOR b) summed, + C, wrapping (XOR is compiled to AND:
              popc(a ^ b) = popc(a) + popc(b) − 2·popc(a & b)).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import numeric as num

__all__ = ["Sm90Op", "INSTRUCTIONS", "NEGATIVE_CONTROLS", "mma", "FP8_FORMATS", "TF32",
           "operand_format", "rounding", "silicon_sample"]

#: the probes' short FP8 names -> tcgen.hw.numeric's
FP8_FORMATS = {"e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2"}
#: TF32: FP32's exponent, 10 fraction bits (the operands' low 13 bits are dropped)
TF32 = num.TF32


@dataclass(frozen=True)
class Sm90Op:
    """One tensor-core instruction and the rule that reproduces it (module docstring)."""

    name: str
    ptx: str
    m: int
    n: int
    k: int
    a: str                      # fp16, bf16, tf32, e4m3, e5m2, s8, b1
    b: str
    c: str                      # fp32, fp16, s32 (C and D)
    rule: str                   # fused, fp8_hmma, int, b1
    sass: str = ""              # the matrix opcode the compiler emitted (cuobjdump)
    window: int = 27
    acc_man: int | None = None
    mode: str = "auto"
    zero: str = "pos"
    overflow: str = "inf"
    tf32_inputs: str = "truncate"   # tf32: "truncate" (measured) or "rne"
    fp8_split: str = "mod4"          # fp8_hmma: "mod4" (measured) or "halves"
    fp8_c: str = "fadd"              # fp8_hmma: "fadd" (measured) or "chain" (C into the HMMA)
    saturate: bool = False
    popc: str = "and"
    sparse: bool = False

    def with_(self, **kw) -> "Sm90Op":
        return replace(self, **kw)


def _fused(name, ptx, shape, a, c, sass, **kw):
    m, n, k = shape
    return Sm90Op(name, ptx, m, n, k, a, a, c, "fused", sass, **kw)


def _fp8(name, ptx, shape, a, b, c, sass, **kw):
    m, n, k = shape
    return Sm90Op(name, ptx, m, n, k, a, b, c, "fp8_hmma", sass, **kw)


_MMA = "mma.sync.aligned"
_SP = "mma.sp::ordered_metadata.sync.aligned"
_WG = "wgmma.mma_async.sync.aligned"
_OPS = [
    _fused("f16_f32", f"{_MMA}.m16n8k16.row.col.f32.f16.f16.f32", (16, 8, 16), "fp16", "fp32",
           "HMMA.16816.F32"),
    _fused("f16_f16", f"{_MMA}.m16n8k16.row.col.f16.f16.f16.f16", (16, 8, 16), "fp16", "fp16",
           "HMMA.16816.F16"),
    _fused("bf16_f32", f"{_MMA}.m16n8k16.row.col.f32.bf16.bf16.f32", (16, 8, 16), "bf16",
           "fp32", "HMMA.16816.F32.BF16"),
    _fused("tf32_f32", f"{_MMA}.m16n8k8.row.col.f32.tf32.tf32.f32", (16, 8, 8), "tf32", "fp32",
           "HMMA.1688.F32.TF32"),
    _fp8("e4m3_e4m3_f32", f"{_MMA}.m16n8k32.row.col.f32.e4m3.e4m3.f32", (16, 8, 32), "e4m3",
         "e4m3", "fp32", "HMMA.16816.F32"),
    _fp8("e5m2_e5m2_f32", f"{_MMA}.m16n8k32.row.col.f32.e5m2.e5m2.f32", (16, 8, 32), "e5m2",
         "e5m2", "fp32", "HMMA.16816.F32"),
    _fp8("e4m3_e5m2_f32", f"{_MMA}.m16n8k32.row.col.f32.e4m3.e5m2.f32", (16, 8, 32), "e4m3",
         "e5m2", "fp32", "HMMA.16816.F32"),
    _fp8("e5m2_e4m3_f32", f"{_MMA}.m16n8k32.row.col.f32.e5m2.e4m3.f32", (16, 8, 32), "e5m2",
         "e4m3", "fp32", "HMMA.16816.F32"),
    _fp8("e4m3_e4m3_f16", f"{_MMA}.m16n8k32.row.col.f16.e4m3.e4m3.f16", (16, 8, 32), "e4m3",
         "e4m3", "fp16", "HMMA.16816.F16"),
    _fp8("e5m2_e5m2_f16", f"{_MMA}.m16n8k32.row.col.f16.e5m2.e5m2.f16", (16, 8, 32), "e5m2",
         "e5m2", "fp16", "HMMA.16816.F16"),
    Sm90Op("s8_s32", f"{_MMA}.m16n8k32.row.col.s32.s8.s8.s32", 16, 8, 32, "s8", "s8", "s32",
           "int", "IMMA.16832.S8.S8"),
    Sm90Op("s8_s32_sat", f"{_MMA}.m16n8k32.row.col.satfinite.s32.s8.s8.s32", 16, 8, 32, "s8",
           "s8", "s32", "int", "IMMA.16832.S8.S8.SAT", saturate=True),
    Sm90Op("b1_xor", f"{_MMA}.m16n8k256.row.col.s32.b1.b1.s32.xor.popc", 16, 8, 256, "b1", "b1",
           "s32", "b1", "BMMA.168256.AND.POPC", popc="xor"),
    Sm90Op("b1_and", f"{_MMA}.m16n8k256.row.col.s32.b1.b1.s32.and.popc", 16, 8, 256, "b1", "b1",
           "s32", "b1", "BMMA.168256.AND.POPC", popc="and"),
    _fused("sp_f16_f32", f"{_SP}.m16n8k32.row.col.f32.f16.f16.f32", (16, 8, 32), "fp16", "fp32",
           "HMMA.SP.16832.F32", sparse=True),
    _fused("sp_f16_f16", f"{_SP}.m16n8k32.row.col.f16.f16.f16.f16", (16, 8, 32), "fp16", "fp16",
           "HMMA.SP.16832.F16", sparse=True),
    _fused("sp_bf16_f32", f"{_SP}.m16n8k32.row.col.f32.bf16.bf16.f32", (16, 8, 32), "bf16",
           "fp32", "HMMA.SP.16832.F32.BF16", sparse=True),
    _fp8("sp_e4m3_f32", f"{_SP}.m16n8k64.row.col.f32.e4m3.e4m3.f32", (16, 8, 64), "e4m3", "e4m3",
         "fp32", "HMMA.SP.16832.F32", sparse=True),
    _fused("wg_f16_f32", f"{_WG}.m64n8k16.f32.f16.f16", (64, 8, 16), "fp16", "fp32", "HGMMA.64"),
    _fused("wg_f16_f16", f"{_WG}.m64n8k16.f16.f16.f16", (64, 8, 16), "fp16", "fp16", "HGMMA.64"),
    _fused("wg_bf16_f32", f"{_WG}.m64n8k16.f32.bf16.bf16", (64, 8, 16), "bf16", "fp32",
           "HGMMA.64"),
    _fused("wg_e4m3_f32", f"{_WG}.m64n8k32.f32.e4m3.e4m3", (64, 8, 32), "e4m3", "fp32",
           "QGMMA.64", window=15, acc_man=13),
    _fused("wg_e5m2_f32", f"{_WG}.m64n8k32.f32.e5m2.e5m2", (64, 8, 32), "e5m2", "fp32",
           "QGMMA.64", window=15, acc_man=13),
    _fused("wg_e4m3_f16", f"{_WG}.m64n8k32.f16.e4m3.e4m3", (64, 8, 32), "e4m3", "fp16",
           "QGMMA.64", window=15),
    _fused("wg_e5m2_f16", f"{_WG}.m64n8k32.f16.e5m2.e5m2", (64, 8, 32), "e5m2", "fp16",
           "QGMMA.64", window=15),
    Sm90Op("wg_e4m3_e5m2_f32", f"{_WG}.m64n8k32.f32.e4m3.e5m2", 64, 8, 32, "e4m3", "e5m2",
           "fp32", "fused", "QGMMA.64", window=15, acc_man=13),
]
#: every probed instruction, by the probes' name
INSTRUCTIONS = {op.name: op for op in _OPS}


def _controls(op: Sm90Op):
    """one-parameter-off variants of ``op`` that the measured data must refute"""
    if op.rule == "int":
        return [("saturate" if not op.saturate else "wrap", op.with_(saturate=not op.saturate))]
    if op.rule == "b1":
        return [("popc " + ("and" if op.popc == "xor" else "xor"),
                 op.with_(popc="and" if op.popc == "xor" else "xor"))]
    if op.rule == "fp8_hmma":
        return [("C into the HMMA chain", op.with_(fp8_c="chain")),
                ("k split in halves", op.with_(fp8_split="halves")),
                ("zero sign kept", op.with_(zero="sign"))]
    out = [(f"window {op.window + 1}", op.with_(window=op.window + 1))]
    lo = num.fused_window_bounds(_fmt(op.a), _acc_fmt(op), _fmt(op.b))[0]
    if op.window - 1 >= lo:
        out.append((f"window {op.window - 1}", op.with_(window=op.window - 1)))
    out.append(("rounding rne" if _mode(op) == "rtz" else "rounding rtz",
                op.with_(mode="rne" if _mode(op) == "rtz" else "rtz")))
    out.append(("zero sign kept (IEEE)", op.with_(zero="sign")))
    if op.c == "fp32":
        out.append(("RTZ overflow to max", op.with_(overflow="mode")))
    if op.acc_man is not None:
        out.append((f"accumulator {op.acc_man - 1} fraction bits",
                    op.with_(acc_man=op.acc_man - 1)))
        out.append(("full FP32 accumulator", op.with_(acc_man=None, window=25)))
    if op.a == "tf32":
        out.append(("tf32 operands rounded (rne)", op.with_(tf32_inputs="rne")))
    return out


def operand_format(f):
    """a probe operand name -> the tcgen.hw.numeric format (tf32: :data:`TF32`)"""
    return TF32 if f == "tf32" else FP8_FORMATS.get(f, f)


def rounding(op: Sm90Op) -> str:
    """the op's final rounding: its ``mode``, or auto: rtz to FP32, rne to FP16"""
    if op.mode != "auto":
        return op.mode
    return "rtz" if op.c == "fp32" else "rne"


_fmt, _mode = operand_format, rounding


def _acc_fmt(op):
    return op.c


#: op name -> [(label, one-parameter-off Sm90Op)]
NEGATIVE_CONTROLS = {name: _controls(op) for name, op in INSTRUCTIONS.items()}


def _kept(op, A, B, keep):
    """per output: the operand lanes of its dot products -> a, b [T, S, m, n, kk]"""
    if op.sparse:
        T, S, m, ch, _ = keep.shape
        cols = (np.arange(ch)[None, None, None, :, None] * 4 + keep).reshape(T, S, m, ch * 2)
        a = np.take_along_axis(A, cols, axis=-1)                          # [T,S,m,kk]
        Bt = np.swapaxes(B, -1, -2)                                       # [T,S,n,k]
        idx = np.broadcast_to(cols[:, :, :, None, :], (T, S, m, op.n, ch * 2))
        b = np.take_along_axis(np.broadcast_to(Bt[:, :, None], (T, S, m, op.n, op.k)), idx, -1)
        return np.broadcast_to(a[:, :, :, None, :], b.shape), b
    shape = A.shape[:3] + (op.n, op.k)
    return (np.broadcast_to(A[:, :, :, None, :], shape),
            np.broadcast_to(np.swapaxes(B, -1, -2)[:, :, None, :, :], shape))


def _int_mma(op, A, B, C):
    A, B = A.astype(np.int64), B.astype(np.int64)
    if op.rule == "int":
        A, B = np.where(A >= 128, A - 256, A), np.where(B >= 128, B - 256, B)
    C = C.astype(np.int64)
    acc = np.where(C >= (1 << 31), C - (1 << 32), C)
    for s in range(A.shape[1]):
        if op.rule == "b1":
            x = A[:, s, :, None, :], np.swapaxes(B[:, s], -1, -2)[:, None, :, :]
            p = (x[0] ^ x[1] if op.popc == "xor" else x[0] & x[1]).sum(axis=-1)
        else:
            p = np.einsum("tmk,tkn->tmn", A[:, s], B[:, s])
        acc = acc + p
        acc = (np.clip(acc, -(1 << 31), (1 << 31) - 1) if op.saturate
               else ((acc + (1 << 31)) % (1 << 32)) - (1 << 31))
    return (acc & 0xFFFFFFFF).astype(np.uint64)


def mma(op: Sm90Op | str, A, B, C, keep=None):
    """D = the instruction ``op`` applied along a chain of S steps (each result the next C).

    ``A`` [T, S, m, k] and ``B`` [T, S, k, n] operand encodings (s8: two's-complement bytes;
    b1: 0/1; tf32: full FP32 patterns), ``C`` [T, m, n] encodings of ``op.c``; a sparse op's
    ``A`` is dense (its pruned places ignored) and ``keep`` [T, S, m, k/4, 2] names the two
    kept columns of every 4-wide chunk, ascending.  Returns D [T, m, n] (uint64)."""
    op = INSTRUCTIONS[op] if isinstance(op, str) else op
    A, B = np.asarray(A, dtype=np.uint64), np.asarray(B, dtype=np.uint64)
    C = np.asarray(C, dtype=np.uint64)
    if op.rule in ("int", "b1"):
        return _int_mma(op, A, B, C)
    a, b = _kept(op, A, B, keep)
    fa, fb = _fmt(op.a), _fmt(op.b)
    if op.a == "tf32":
        if op.tf32_inputs == "truncate":
            a, b = a >> np.uint64(13), b >> np.uint64(13)
        else:
            a = num.fp_convert(a, "fp32", TF32, "rne")
            b = num.fp_convert(b, "fp32", TF32, "rne")
    if op.rule == "fp8_hmma":
        a, b = num.fp_convert(a, fa, "fp16"), num.fp_convert(b, fb, "fp16")   # exact
        fa = fb = "fp16"
    kw = dict(fmt=fa, acc=op.c, out=op.c, mode=_mode(op), zero=op.zero,
              overflow=op.overflow, fmt_b=None if fb == fa else fb)
    acc = C
    if op.rule == "fused":
        for s in range(a.shape[1]):
            acc = num.fused_dot(a[:, s], b[:, s], acc, window=op.window, acc_man=op.acc_man,
                                **kw)
        return acc
    # fp8_hmma: two HMMA steps from +0, then an IEEE add of C
    kk = a.shape[-1]
    k = np.arange(kk)
    blocks = ([k[k % 4 < 2], k[k % 4 >= 2]] if op.fp8_split == "mod4"
              else [k[:kk // 2], k[kk // 2:]])
    outf = num.get_format(op.c)
    for s in range(a.shape[1]):
        h = np.zeros_like(acc) if op.fp8_c == "fadd" else acc
        for idx in blocks:
            h = num.fused_dot(np.take(a[:, s], idx, -1), np.take(b[:, s], idx, -1), h,
                              window=27, **kw)
        if op.fp8_c == "fadd":
            h = num.fp_add(h, acc, op.c, "rne")
            e = (h >> np.uint64(outf.man_bits)) & np.uint64(outf.exp_all_ones)
            isnan = (e == outf.exp_all_ones) & ((h & np.uint64(outf.man_mask)) != 0)
            h = np.where(isnan, np.uint64(outf.sign_mask - 1), h)
        acc = h
    return acc


def silicon_sample(path=None) -> tuple[dict, dict]:
    """The stored H200 sample (hw/data/sm90_silicon.npz, chosen by scripts/silicon/sample.py):
    ``(arrays, info)`` with arrays ``"<op>/<class>/<A|B|C|D|keep>"`` (A [T, S, m, k], B, C and
    the measured D [T, m, n]) and info the run's metadata (GPU, driver, CUDA, date, counts)."""
    import json
    from pathlib import Path

    path = Path(path) if path else Path(__file__).resolve().parent / "data" / "sm90_silicon.npz"
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files if k != "meta"}
        info = json.loads(bytes(z["meta"]).decode())
    return arrays, info
