"""Figures of the Winograd paper and of its note, cited, in one place (Yan, Wang, Chu,
"Optimizing batched Winograd convolution on GPUs", PPoPP'20; ../shared/papers/002_winograd.md).
Tests and studies read them from here, never as literals of their own.  Tags as in the note:
[paper] stated in the seed, [derived] the note's arithmetic on it, [ext] outside knowledge
(Lavin & Gray's matrices), [exp] the note's own numpy experiment, [A] an assumption of ours.

The matrices are kept here as the note prints them (exact :class:`fractions.Fraction` entries);
:mod:`tcgen.units.winograd.model` has its own copy (it imports nothing of the family), and the
tests check that the two agree and that the model's pinned adder networks compute them."""
from __future__ import annotations

from fractions import Fraction as Fr

__all__ = ["BT", "G", "AT", "OP_COUNTS_F23", "MULTIPLIES", "INT8_ITF", "INT8_FTF_2G",
           "LOWBIT_FTF_2G", "INT8_PRODUCT_BITS", "OTF_EXTRA_BITS", "GROWTH_F43", "AMPLIFICATION", "TOLERANCE",
           "EMPIRICAL", "EMPIRICAL_SETUP", "WINDOW_LIMIT", "WINDOW_VERIFIED", "WINDOW_OUTSIDE_EXACT",
           "F43_WINDOW_ERROR", "FP16_ITF_OVERFLOW", "BOUND_RATIO_MAX", "TEST_SWEEP",
           "CONV5_WASTE"]

#: Bᵀ, G, Aᵀ by output tile m: F(2x2,3x3) (note §1.1 [paper], Eq. 1) and F(4x4,3x3)
#: (note §1.1 [ext], Lavin & Gray; the 1/6, 1/12, 1/24 entries are not exact in binary)
BT = {
    2: ((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1)),
    4: ((4, 0, -5, 0, 1, 0), (0, -4, -4, 1, 1, 0), (0, 4, -4, -1, 1, 0),
        (0, -2, -1, 2, 1, 0), (0, 2, -1, -2, 1, 0), (0, 4, 0, -5, 0, 1)),
}
G = {
    2: ((1, 0, 0), (Fr(1, 2), Fr(1, 2), Fr(1, 2)), (Fr(1, 2), Fr(-1, 2), Fr(1, 2)), (0, 0, 1)),
    4: ((Fr(1, 4), 0, 0), (Fr(-1, 6), Fr(-1, 6), Fr(-1, 6)), (Fr(-1, 6), Fr(1, 6), Fr(-1, 6)),
        (Fr(1, 24), Fr(1, 12), Fr(1, 6)), (Fr(1, 24), Fr(-1, 12), Fr(1, 6)), (0, 0, 1)),
}
AT = {
    2: ((1, 1, 1, 0), (0, 1, -1, -1)),
    4: ((1, 1, 1, 1, 1, 0), (0, 1, -1, 2, -2, 0), (0, 1, 1, 4, 4, 0), (0, 1, -1, 8, -8, 1)),
}

#: F(2x2,3x3) operation counts per 4x4 tile (note §1.1 [paper]): FTF 28 float instructions, ITF
#: 32 FADD, EWMM 16 multiplies (direct 2·2·3·3 = 36), OTF 24 FADD.  [derived] FTF = 7 vectors
#: (3 columns + 4 rows) × 4 instructions (t = g0 + g2, h = ½g1, FFMA(½, t, ±h))
OP_COUNTS_F23 = {"ftf_instructions": 28, "ftf_vectors": 7, "ftf_per_vector": 4, "itf_adds": 32,
                 "ewmm_muls": 16, "direct_muls": 36, "otf_adds": 24}

#: multiplies per m×m output tile per (c, k): (direct, Winograd) (note §4.2)
MULTIPLIES = {2: (36, 16), 4: (144, 36)}

#: INT8 F(2,3) bit growth (note §4.3 [derived, exhaustive sign-extreme check]): ITF ×4 →
#: [−512, 510], 10 bits; FTF with 2G ×9 → [−1152, 1147], 12 bits; product ≤ 21 bits; the
#: accumulator 21 + ⌈log2 C⌉ bits; OTF ×9 → "+4 bits", then an exact >>2
INT8_ITF = (-512, 510, 10)
INT8_FTF_2G = (-1152, 1147, 12)

#: 2G-transformed low-bit weights (note §4.1 [derived]): INT4 → [−72, 67], 8 bits (a match for
#: PacQ's FP-INT multiplier); INT2 → [−18, 13], 6 bits (LUT tables explode)
LOWBIT_FTF_2G = {4: (-72, 67, 8), 2: (-18, 13, 6)}
INT8_PRODUCT_BITS = 21
OTF_EXTRA_BITS = 4

#: F(4,3) integer growth (note §4.3): ×100 at the ITF, ×361 at the OTF, G scaled by 24 per
#: dimension
GROWTH_F43 = {"itf": 100, "otf": 361, "g_scale": 24}

#: Σ|coefficients| of |Aᵀ|(|G||g| ⊙ |Bᵀ||d|) per output (note §4.3 [derived]): (1-D, 2-D);
#: direct convolution 3 and 9
AMPLIFICATION = {2: (8, 64), 4: (48, 2304), "direct": (3, 9)}

#: rel-RMS tolerances against float64 direct convolution (note §4.3): FP32 F(2,3) 2e-6, FP16
#: transforms with FP32 accumulation 2e-3, "~10× looser for F(4,3)".  FP16 accumulation has no
#: tolerance in the note [A]: 2.5× its worst F(2,3) figure (4.0e-3 at C = 256), and 10× that
#: for F(4,3)
TOLERANCE = {("fp32", 2): 2e-6, ("fp32", 4): 2e-5, ("fp16", 2): 2e-3, ("fp16", 4): 2e-2,
             ("fp16acc", 2): 1e-2, ("fp16acc", 4): 1e-1}

#: the note's measured rel-RMS, (variant, m, C) -> error (note §4.3 [exp]: N=1, K=8, 24×24
#: output, N(0,1) inputs, He-init weights, against float64 direct on the unrounded data)
EMPIRICAL_SETUP = {"N": 1, "K": 8, "HW": 24, "pad": 1}
EMPIRICAL = {("direct_fp32", 64): 1.6e-7, ("direct_fp32", 256): 3.0e-7,
             ("fp32", 2, 64): 2.7e-7, ("fp32", 2, 256): 5.0e-7,
             ("fp32", 4, 64): 1.7e-6, ("fp32", 4, 256): 3.3e-6,
             ("direct_fp16", 64): 2.9e-4, ("direct_fp16", 256): 2.9e-4,
             ("fp16", 2, 64): 6.1e-4, ("fp16", 2, 256): 6.3e-4,
             ("fp16", 4, 64): 3.2e-3, ("fp16", 4, 256): 3.5e-3,
             ("fp16acc", 2, 64): 2.0e-3, ("fp16acc", 2, 256): 4.0e-3,
             ("fp16acc", 4, 64): 1.4e-2, ("fp16acc", 4, 256): 2.5e-2}

#: the exactness window (note §4.3 [exp]): integer data |x| ≤ r, FP32 F(2,3) is bit-exact with
#: direct convolution whenever 81·r²·C < 2^22; verified at (r, C) = (8, 64), (8, 256); (16, 512)
#: lies outside the guarantee but was still exact on random data; F(4,3) is never exact (max
#: error 0.0078 at r = 8, C = 64)
WINDOW_LIMIT = 2 ** 22
WINDOW_VERIFIED = ((8, 64), (8, 256))
WINDOW_OUTSIDE_EXACT = (16, 512)
F43_WINDOW_ERROR = 0.0078

#: FP16 ITF overflow thresholds |x| > 16376 (F(2,3)) and > 655 (F(4,3)) (note §4.3)
FP16_ITF_OVERFLOW = {2: 16376, 4: 655}

#: the note's largest measured error / rigorous bound, C = 16..256 (note §4.3 [exp])
BOUND_RATIO_MAX = 0.0074

#: the random sweep of note §4.4 test case 3
TEST_SWEEP = {"N": (1, 2), "C": (8, 16, 64), "K": (8, 64), "HW": (4, 7, 8, 14), "pad": 1}

#: Conv5 (7×7 output) with F(2,3): 8×8 computed, 7×7 kept, 23.4 % waste (note §3.1 [derived])
CONV5_WASTE = 0.234
