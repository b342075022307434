"""The tensor-core instructions the silicon probes run, and their register fragments.

One table (`OPS`) names every probed instruction: its PTX text, the shape m×n×k, the element
formats of A, B and C/D, and how many 32-bit registers each lane holds.  The fragment maps say,
for every lane, register and element slot, which matrix element it carries.  They are written
from the PTX ISA's fragment descriptions (PTX ISA 9.x, §9.7.14.5 "Matrix fragments for mma.m16nNk*"
and §9.7.14.6.2 for mma.sp); `run_probes.py` checks each one on the GPU with small integers
(exact products) and a negative control before any measured case runs.

Not part of the installed package and never imported by it (issue 40): the package keeps the
models (`tcgen.hw.numeric.fused_dot` and its presets) and tb/data's stored samples.

Matrix conventions: A is m×k (row-major in the probe's arrays), B is k×n, C and D are m×n.
An element slot of a 32-bit register holding `per` elements of `32 // per` bits: slot e is bits
[e·w, (e+1)·w) (the PTX ISA's "low to high").
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

WARP = 32


@dataclass(frozen=True)
class Op:
    name: str
    ptx: str            # the instruction up to its operands
    m: int
    n: int
    k: int
    a: str              # element format of A ('fp16', 'bf16', 'tf32', 'e4m3', 'e5m2', 's8', 'b1')
    b: str
    c: str              # format of C and D ('fp32', 'fp16', 's32')
    regs_a: int
    regs_b: int
    regs_c: int
    sparse: bool = False
    selector: int = 0
    note: str = ""
    meta_layout: str = ""   # sparse only: the metadata layout (below)
    # the maps, filled by `maps()`: [lane, reg, slot] -> (row, col)
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def bits_a(self) -> int:
        return ELEM_BITS[self.a]

    @property
    def bits_b(self) -> int:
        return ELEM_BITS[self.b]

    @property
    def bits_c(self) -> int:
        return ELEM_BITS[self.c]


ELEM_BITS = {"fp16": 16, "bf16": 16, "tf32": 32, "fp32": 32, "e4m3": 8, "e5m2": 8, "s8": 8,
             "s32": 32, "b1": 1}


def _lanes():
    lane = np.arange(WARP)
    return lane >> 2, lane & 3        # groupID, threadID_in_group


# ----------------------------------------------------------------------------------------------
# Dense fragments (PTX ISA §9.7.14.5.x).  Each returns an int array [32, regs, per, 2] of
# (row, col) in the operand's own matrix (A: m×k, B: k×n, C: m×n).

def _frag(regs, per, row, col):
    """[32, regs, per, 2] from the ISA's formulas: element i (register i // per, slot i % per)
    of every lane sits at (row(i, g, t), col(i, g, t)), g = groupID, t = threadID_in_group."""
    g, t = _lanes()
    out = np.zeros((WARP, regs, per, 2), dtype=np.int64)
    for i in range(regs * per):
        r, s = divmod(i, per)
        out[:, r, s, 0] = row(i, g, t)
        out[:, r, s, 1] = col(i, g, t)
    return out


def _acc_map(regs):
    """C/D of every m16n8 shape: f32/s32 in 4 registers, c0..c3 (§9.7.14.5.8 and siblings):
    row = groupID for c0, c1 and groupID + 8 for c2, c3; col = tig·2 + (i & 1).  f16 in 2
    registers of 2 halves: the same c0..c3, two to a register."""
    return _frag(regs, 4 // regs, lambda i, g, t: g + 8 * (i >= 2),
                 lambda i, g, t: t * 2 + (i & 1))


def _a_16bit_k16(k_total=16):
    """A of m16n8k16 .f16/.bf16 (§9.7.14.5.8): a0..a7 in 4 registers of 2;
    row = groupID for a0, a1, a4, a5, else groupID + 8; col = tig·2 + (i & 1), + 8 for i ≥ 4."""
    return _frag(4, 2, lambda i, g, t: g + 8 * (i in (2, 3, 6, 7)),
                 lambda i, g, t: t * 2 + (i & 1) + 8 * (i >= 4))


def _b_16bit_k16():
    """B of m16n8k16 .f16/.bf16: b0..b3 in 2 registers; row = tig·2 + (i & 1), + 8 for i ≥ 2;
    col = groupID."""
    return _frag(2, 2, lambda i, g, t: t * 2 + (i & 1) + 8 * (i >= 2), lambda i, g, t: g)


def _a_tf32_k8():
    """A of m16n8k8 .tf32 (§9.7.14.5.7): a0..a3, one per register; row = groupID for a0, a2,
    groupID + 8 for a1, a3; col = tig for a0, a1 and tig + 4 for a2, a3."""
    return _frag(4, 1, lambda i, g, t: g + 8 * (i & 1), lambda i, g, t: t + 4 * (i >= 2))


def _b_tf32_k8():
    """B of m16n8k8 .tf32: b0, b1; row = tig for b0, tig + 4 for b1; col = groupID."""
    return _frag(2, 1, lambda i, g, t: t + 4 * i, lambda i, g, t: g)


def _a_8bit_k32():
    """A of m16n8k32 .s8/.e4m3/.e5m2 (§9.7.14.5.9): a0..a15 in 4 registers of 4;
    row = groupID for a0..a3 and a8..a11, else groupID + 8; col = tig·4 + (i & 3), + 16 for
    i ≥ 8."""
    return _frag(4, 4, lambda i, g, t: g + 8 * (4 <= i < 8 or i >= 12),
                 lambda i, g, t: t * 4 + (i & 3) + 16 * (i >= 8))


def _b_8bit_k32():
    """B of m16n8k32 8-bit: b0..b7 in 2 registers of 4; row = tig·4 + (i & 3), + 16 for i ≥ 4;
    col = groupID."""
    return _frag(2, 4, lambda i, g, t: t * 4 + (i & 3) + 16 * (i >= 4), lambda i, g, t: g)


def _a_b1_k256():
    """A of m16n8k256 .b1 (§9.7.14.5.11): a0..a127 in 4 registers of 32 bits;
    row = groupID for a0..a31 and a64..a95, else groupID + 8; col = tig·32 + (i & 31), + 128
    for i ≥ 64."""
    return _frag(4, 32, lambda i, g, t: g + 8 * (32 <= i < 64 or i >= 96),
                 lambda i, g, t: t * 32 + (i & 31) + 128 * (i >= 64))


def _b_b1_k256():
    """B of m16n8k256 .b1: b0..b63 in 2 registers; row = tig·32 + (i & 31), + 128 for i ≥ 32;
    col = groupID."""
    return _frag(2, 32, lambda i, g, t: t * 32 + (i & 31) + 128 * (i >= 32), lambda i, g, t: g)


# ----------------------------------------------------------------------------------------------
# Sparse fragments (§9.7.14.6.2).  A is given compressed: its map is onto the compressed
# m × (k/2) matrix (the kept elements of each 4-wide chunk, in order).

def _a_sp_16bit_k32():
    """sparse m16n8k32 .f16/.bf16 A (§9.7.14.6.2.2): four registers of two kept elements;
    row = groupID for a0, a1, a4, a5, else + 8; the elements of chunk tig (cols tig·4..+3) for
    i < 4 and of chunk tig + 4 (cols 16 + tig·4..) for i ≥ 4.  Compressed column = chunk·2 +
    (i & 1)."""
    return _frag(4, 2, lambda i, g, t: g + 8 * (i in (2, 3, 6, 7)),
                 lambda i, g, t: (t + 4 * (i >= 4)) * 2 + (i & 1))


def _b_sp_16bit_k32():
    """sparse m16n8k32 .f16/.bf16 B: b0..b7 in 4 registers; row = tig·2 + (i & 1) + 8·(i >> 1);
    col = groupID (Figure 121)."""
    return _frag(4, 2, lambda i, g, t: t * 2 + (i & 1) + 8 * (i >> 1), lambda i, g, t: g)


def _a_sp_8bit_k64():
    """sparse m16n8k64 .e4m3/.e5m2/.s8 A (§9.7.14.6.2.6): four registers of four kept
    elements; row = groupID for a0..a3 and a8..a11, else + 8; cols tig·8..+7 (two chunks) for
    i < 8, + 32 for i ≥ 8.  Compressed column = chunk·2 + slot within the chunk."""
    return _frag(4, 4, lambda i, g, t: g + 8 * (4 <= i < 8 or i >= 12),
                 lambda i, g, t: (t * 2 + ((i % 4) >> 1) + 8 * (i >= 8)) * 2 + (i % 4 & 1))


def _b_sp_8bit_k64():
    """sparse m16n8k64 8-bit B: b0..b15 in 4 registers of 4; row = tig·4 + (i & 3) + 16·(i >> 2);
    col = groupID (Figures 132-135)."""
    return _frag(4, 4, lambda i, g, t: t * 4 + (i & 3) + 16 * (i >> 2), lambda i, g, t: g)


# Metadata: each 4-wide chunk of a row carries two 2-bit indices (the kept columns, ascending:
# `::ordered_metadata`), idx0 in the chunk's low 2 bits.  The PTX ISA gives the placement of
# the chunks in the lanes' metadata registers only as figures (122, 136, 137); two readings
# are checked on the GPU and the one that multiplies exactly is used (run_probes.py records
# which):
#   "cols": each contributing thread holds a 4-chunk column range of both rows, row groupID
#           in bits 0-15 and row groupID + 8 in bits 16-31;
#   "rows": each contributing thread holds one row's chunks (8 per register).
META_LAYOUTS = ("cols", "rows")


def meta_map(op: Op, layout: str):
    """[lane] -> list of (row, chunk, bit) for the lane's metadata register (empty for a lane
    that contributes none).  Contributing lanes: tig in [selector·T, selector·T + T) with T the
    threads per quad the shape needs (32 bits each)."""
    chunks = op.k // 4
    need_bits = 2 * chunks * 4          # two rows of the quad, 4 bits a chunk
    T = need_bits // 32
    g, t = _lanes()
    out = []
    for lane in range(WARP):
        gi, ti = int(g[lane]), int(t[lane])
        j = ti - op.selector * T
        entries = []
        if 0 <= j < T:
            if layout == "cols":
                per = chunks // T           # chunks per thread, both rows
                for cc in range(per):
                    entries.append((gi, j * per + cc, 4 * cc))
                    entries.append((gi + 8, j * per + cc, 16 + 4 * cc))
            elif layout == "rows":
                # thread j: row (j % 2 == 0 ? g : g+8), chunks (j // 2)·8 ..
                row = gi + 8 * (j & 1)
                for cc in range(8):
                    entries.append((row, (j >> 1) * 8 + cc, 4 * cc))
            else:
                raise ValueError(layout)
        out.append(entries)
    return out


# ----------------------------------------------------------------------------------------------
# wgmma (§9.7.15): a warpgroup of 4 warps, m64nNk*.  A from registers: warp w holds rows
# 16w..16w+15 in the layout of the m16n8 A fragment of the same K (§9.7.15.5.1); D likewise,
# rows 16w + the m16n8 accumulator rows.  B comes from shared memory (`wgmma_b_image`).

def _warpgroup(fmap):
    """an m16 fragment map [32, r, s, 2] -> the m64 map [128, r, s, 2] over a warpgroup"""
    out = np.concatenate([fmap.copy() for _ in range(4)], axis=0)
    for w in range(4):
        out[32 * w:32 * (w + 1), ..., 0] += 16 * w
    return out


def wgmma_b_image(B, k_elems_per_core: int, elem_bytes: int, lbo: int):
    """B [T, k, n] encodings -> the shared-memory image [T, bytes/4] uint32 of a K-major,
    unswizzled operand: 8×16-byte core matrices, n-row r at r·16 bytes inside its core matrix,
    core matrices along K every `lbo` bytes and along N every 8·16·(k / k_elems_per_core)
    bytes."""
    T, k, n = B.shape
    kcores = k // k_elems_per_core
    nbytes = max(lbo * kcores, 128 * kcores) * (n // 8)
    img = np.zeros((T, nbytes), dtype=np.uint8)
    for kk in range(k):
        for nn in range(n):
            off = ((kk // k_elems_per_core) * lbo + (nn // 8) * 128 * kcores
                   + (nn % 8) * 16 + (kk % k_elems_per_core) * elem_bytes)
            v = B[:, kk, nn].astype(np.uint64)
            for byte in range(elem_bytes):
                img[:, off + byte] = ((v >> np.uint64(8 * byte)) & np.uint64(0xFF)).astype(np.uint8)
    return img.view(np.uint32)


# ----------------------------------------------------------------------------------------------

def _op(name, ptx, shape, a, b, c, regs, maps, **kw):
    m, n, k = shape
    op = Op(name, ptx, m, n, k, a, b, c, *regs, **kw)
    op.extra.update(maps)
    return op


def _dense16(name, atype, ctype, cfmt):
    ptx = f"mma.sync.aligned.m16n8k16.row.col.{ctype}.{atype}.{atype}.{ctype}"
    regs_c = 4 if cfmt != "fp16" else 2
    return _op(name, ptx, (16, 8, 16), "fp16" if atype == "f16" else atype, "fp16" if atype == "f16" else atype,
               cfmt, (4, 2, regs_c),
               {"A": _a_16bit_k16(), "B": _b_16bit_k16(), "C": _acc_map(regs_c)})


def _dense8(name, at, bt, ctype, cfmt):
    ptx = f"mma.sync.aligned.m16n8k32.row.col.{ctype}.{at}.{bt}.{ctype}"
    regs_c = 4 if cfmt != "fp16" else 2
    return _op(name, ptx, (16, 8, 32), at, bt, cfmt, (4, 2, regs_c),
               {"A": _a_8bit_k32(), "B": _b_8bit_k32(), "C": _acc_map(regs_c)})


def _sparse16(name, atype, ctype, cfmt):
    ptx = (f"mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.{ctype}.{atype}.{atype}."
           f"{ctype}")
    regs_c = 4 if cfmt != "fp16" else 2
    f = "fp16" if atype == "f16" else atype
    return _op(name, ptx, (16, 8, 32), f, f, cfmt, (4, 4, regs_c),
               {"A": _a_sp_16bit_k32(), "B": _b_sp_16bit_k32(), "C": _acc_map(regs_c)},
               sparse=True)


def _sparse8(name, at, bt, ctype, cfmt):
    ptx = f"mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.{ctype}.{at}.{bt}.{ctype}"
    regs_c = 4 if cfmt != "fp16" else 2
    return _op(name, ptx, (16, 8, 64), at, bt, cfmt, (4, 4, regs_c),
               {"A": _a_sp_8bit_k64(), "B": _b_sp_8bit_k64(), "C": _acc_map(regs_c)},
               sparse=True)


OPS = [
    _dense16("f16_f32", "f16", "f32", "fp32"),
    _dense16("f16_f16", "f16", "f16", "fp16"),
    _dense16("bf16_f32", "bf16", "f32", "fp32"),
    _op("tf32_f32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", (16, 8, 8),
        "tf32", "tf32", "fp32", (4, 2, 4),
        {"A": _a_tf32_k8(), "B": _b_tf32_k8(), "C": _acc_map(4)},
        note="A and B are full FP32 bit patterns: the low 13 mantissa bits are random"),
    _dense8("e4m3_e4m3_f32", "e4m3", "e4m3", "f32", "fp32"),
    _dense8("e5m2_e5m2_f32", "e5m2", "e5m2", "f32", "fp32"),
    _dense8("e4m3_e5m2_f32", "e4m3", "e5m2", "f32", "fp32"),
    _dense8("e5m2_e4m3_f32", "e5m2", "e4m3", "f32", "fp32"),
    _dense8("e4m3_e4m3_f16", "e4m3", "e4m3", "f16", "fp16"),
    _dense8("e5m2_e5m2_f16", "e5m2", "e5m2", "f16", "fp16"),
    _op("s8_s32", "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", (16, 8, 32),
        "s8", "s8", "s32", (4, 2, 4),
        {"A": _a_8bit_k32(), "B": _b_8bit_k32(), "C": _acc_map(4)}),
    _op("s8_s32_sat", "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32", (16, 8, 32),
        "s8", "s8", "s32", (4, 2, 4),
        {"A": _a_8bit_k32(), "B": _b_8bit_k32(), "C": _acc_map(4)}),
    _op("b1_xor", "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc", (16, 8, 256),
        "b1", "b1", "s32", (4, 2, 4),
        {"A": _a_b1_k256(), "B": _b_b1_k256(), "C": _acc_map(4)}),
    _op("b1_and", "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc", (16, 8, 256),
        "b1", "b1", "s32", (4, 2, 4),
        {"A": _a_b1_k256(), "B": _b_b1_k256(), "C": _acc_map(4)}),
    _sparse16("sp_f16_f32", "f16", "f32", "fp32"),
    _sparse16("sp_f16_f16", "f16", "f16", "fp16"),
    _sparse16("sp_bf16_f32", "bf16", "f32", "fp32"),
    _sparse8("sp_e4m3_f32", "e4m3", "e4m3", "f32", "fp32"),
]



def _wg(name, ptx, k, at, bt, cfmt, steps_note=""):
    regs_c = 4 if cfmt != "fp16" else 2
    if at in ("fp16", "bf16"):
        amap = _warpgroup(_a_16bit_k16())
        core, eb = 8, 2
    else:
        amap = _warpgroup(_a_8bit_k32())
        core, eb = 16, 1
    return _op(name, ptx, (64, 8, k), at, bt, cfmt, (4, 0, regs_c),
               {"A": amap, "C": _warpgroup(_acc_map(regs_c)), "core_k": core, "elem_bytes": eb},
               note="wgmma: A from registers, B from shared memory (K-major, no swizzle)")


WGMMA = [
    _wg("wg_f16_f32", "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16", 16, "fp16", "fp16", "fp32"),
    _wg("wg_f16_f16", "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16", 16, "fp16", "fp16", "fp16"),
    _wg("wg_bf16_f32", "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16", 16, "bf16", "bf16", "fp32"),
    _wg("wg_e4m3_f32", "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3", 32, "e4m3", "e4m3", "fp32"),
    _wg("wg_e5m2_f32", "wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e5m2", 32, "e5m2", "e5m2", "fp32"),
    _wg("wg_e4m3_f16", "wgmma.mma_async.sync.aligned.m64n8k32.f16.e4m3.e4m3", 32, "e4m3", "e4m3", "fp16"),
    _wg("wg_e5m2_f16", "wgmma.mma_async.sync.aligned.m64n8k32.f16.e5m2.e5m2", 32, "e5m2", "e5m2", "fp16"),
    _wg("wg_e4m3_e5m2_f32", "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e5m2", 32, "e4m3", "e5m2", "fp32"),
]
OPS += WGMMA

BY_NAME = {op.name: op for op in OPS}


# ----------------------------------------------------------------------------------------------
# Packing: matrices of encodings -> per-lane registers, and back.

def pack(mat, fmap, bits):
    """mat [T, R, C] unsigned encodings -> regs [T, 32, nregs] uint32 by the map
    [32, nregs, per, 2]."""
    mat = np.asarray(mat)
    lanes, nregs, per, _ = fmap.shape
    vals = mat[:, fmap[..., 0], fmap[..., 1]].astype(np.uint64)     # [T, 32, nregs, per]
    mask = (1 << bits) - 1
    shifts = (np.arange(per, dtype=np.uint64) * np.uint64(bits))
    words = ((vals & np.uint64(mask)) << shifts).sum(axis=-1)
    return words.astype(np.uint32)


def unpack(regs, fmap, bits, shape):
    """regs [T, 32, nregs] -> matrix [T, *shape] of encodings."""
    regs = np.asarray(regs).astype(np.uint64)
    lanes, nregs, per, _ = fmap.shape
    shifts = (np.arange(per, dtype=np.uint64) * np.uint64(bits))
    vals = (regs[..., None] >> shifts) & np.uint64((1 << bits) - 1)
    out = np.zeros((regs.shape[0],) + tuple(shape), dtype=np.uint64)
    out[:, fmap[..., 0], fmap[..., 1]] = vals
    return out


def compress_24(a_dense, keep):
    """2:4 sparse A: a_dense [T, m, k] and keep [T, m, k/4, 2] (ascending column indices within
    each chunk) -> the compressed [T, m, k/2] matrix."""
    T, m, k = a_dense.shape
    chunks = k // 4
    cols = (np.arange(chunks)[None, None, :, None] * 4 + keep)          # [T, m, chunks, 2]
    rows = np.arange(m)[None, :, None, None]
    tt = np.arange(T)[:, None, None, None]
    return a_dense[tt, rows, cols].reshape(T, m, k // 2)


def pack_meta(keep, op: Op, layout: str):
    """keep [T, m, k/4, 2] -> metadata registers [T, 32] uint32."""
    T = keep.shape[0]
    nib = (keep[..., 0] | (keep[..., 1] << 2)).astype(np.uint64)       # [T, m, chunks]
    out = np.zeros((T, WARP), dtype=np.uint64)
    for lane, entries in enumerate(meta_map(op, layout)):
        for row, chunk, bit in entries:
            out[:, lane] |= nib[:, row, chunk] << np.uint64(bit)
    return out.astype(np.uint32)
