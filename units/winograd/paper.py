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
           "CONV5_WASTE", "RESNET_LAYERS", "BATCHES", "TABLE2_V100", "TABLE2_MEAN", "TABLE6",
           "SPEEDUP_CLAIMS", "HEATMAP_V100", "IMPLICIT_PRECOMP_CLAIM", "GPUS", "BREAKEVEN_K",
           "NONFUSED_TRAFFIC_WORDS", "BLOCKING", "INTENSITY", "EWMM_INTENSITY", "THREAD_GEMM",
           "ITF_PRESSURE", "WORKSPACE_MB", "SOL_MAINLOOP", "FTF_NETWORK_PAPER"]

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

# -- the evaluation (§2.2, §7, §8.1; note §2.1, §3) ----------------------------------------------
#: ResNet's 3×3 convolutions (Table 1 [paper]): output H = W (stride 1, pad 1, so the input's
#: too), C input channels, K filters; "ConvxNn" is layer x at batch n
RESNET_LAYERS = ({"name": "Conv2", "HW": 56, "C": 64, "K": 64},
                 {"name": "Conv3", "HW": 28, "C": 128, "K": 128},
                 {"name": "Conv4", "HW": 14, "C": 256, "K": 256},
                 {"name": "Conv5", "HW": 7, "C": 512, "K": 512})
#: the batch sizes of every table (§2.2, §7 [paper])
BATCHES = (32, 64, 96, 128)

#: Table 2 [paper]: cuDNN 7.6.1's Winograd over cuDNN's GEMM convolution on V100, per layer,
#: N = 32, 64, 96, 128; the text's average 1.4× (the table's mean is 1.401 [derived])
TABLE2_V100 = {"Conv2": (1.57, 1.54, 1.59, 1.55), "Conv3": (1.53, 1.50, 1.53, 1.48),
               "Conv4": (1.62, 1.57, 1.58, 1.67), "Conv5": (1.10, 0.91, 0.81, 0.86)}
TABLE2_MEAN = 1.4

#: Table 6 [paper]: this kernel over cuDNN's fused Winograd (CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD)
#: per device and layer, N = 32, 64, 96, 128 (means [derived]: RTX2070 1.957, V100 1.492)
TABLE6 = {"RTX2070": {"Conv2": (1.67, 1.65, 1.68, 1.67), "Conv3": (1.85, 1.83, 1.83, 1.82),
                      "Conv4": (1.73, 1.79, 1.74, 1.77), "Conv5": (2.59, 2.47, 2.65, 2.57)},
          "V100": {"Conv2": (1.32, 1.24, 1.24, 1.23), "Conv3": (1.42, 1.40, 1.38, 1.38),
                   "Conv4": (1.31, 1.41, 1.34, 1.38), "Conv5": (1.95, 1.77, 2.13, 1.97)}}
#: the text's figures for Table 6 (abstract, §1, §7.1 [paper]; §1 says 1.96× for RTX2070's mean)
SPEEDUP_CLAIMS = {"V100": {"max": 2.13, "mean": 1.5}, "RTX2070": {"max": 2.65, "mean": 1.95}}

#: the one surviving heat-map (next to the Fig. 13 caption; V100 by note §3.6's check that
#: Table 6 (V100) × Table 2 gives its IMPLICIT_PRECOMP column): speedup of this kernel over each
#: cuDNN algorithm, per layer, N = 32, 64, 96, 128
HEATMAP_V100 = {
    "FFT": {"Conv2": (2.84, 2.61, 2.42, 2.33), "Conv3": (2.14, 1.32, 1.19, 1.16),
            "Conv4": (2.05, 1.39, 1.14, 1.12), "Conv5": (5.82, 3.15, 3.22, 2.87)},
    "FFT_TILING": {"Conv2": (1.93, 1.68, 1.67, 1.85), "Conv3": (1.51, 1.16, 1.08, 1.00),
                   "Conv4": (4.01, 3.60, 3.07, 3.10), "Conv5": (10.45, 8.11, 8.74, 7.87)},
    "GEMM": {"Conv2": (5.13, 5.66, 4.84, 4.85), "Conv3": (3.21, 3.26, 3.33, 3.21),
             "Conv4": (2.63, 2.89, 2.73, 2.85), "Conv5": (1.98, 1.85, 1.97, 1.93)},
    "IMPLICIT_GEMM": {"Conv2": (16.06, 2.71, 2.71, 2.71), "Conv3": (2.56, 2.46, 2.45, 2.40),
                      "Conv4": (2.44, 2.67, 2.45, 2.70), "Conv5": (2.27, 1.88, 1.97, 1.94)},
    "IMPLICIT_PRECOMP": {"Conv2": (2.09, 1.93, 1.98, 1.91), "Conv3": (2.19, 2.10, 2.13, 2.04),
                         "Conv4": (2.13, 2.23, 2.12, 2.31), "Conv5": (2.16, 1.63, 1.73, 1.71)},
    "WINOGRAD_NONFUSED": {"Conv2": (1.56, 1.92, 1.98, 2.01), "Conv3": (1.15, 1.09, 1.05, 1.05),
                          "Conv4": (0.98, 1.06, 0.97, 1.00), "Conv5": (0.79, 0.69, 0.78, 0.72)},
}
#: §7.3 obs. 1 [paper]: over IMPLICIT_PRECOMP "1.6× to 2.31×, and on average 1.99×" (the V100
#: column's mean is 2.02, its minimum 1.63 [derived])
IMPLICIT_PRECOMP_CLAIM = {"min": 1.6, "max": 2.31, "mean": 1.99}

#: the two GPUs (§7 [paper] / [ext]): FP32 peak FLOP/s and DRAM bandwidth B/s.  V100: 15.7 T
#: [paper, Fig. 2], 900 GB/s [ext]; RTX2070: 2304 FP32 lanes × 2 × 1.62 GHz (reference boost)
#: to 1.71 GHz (Founders Edition) [ext], 448 GB/s [ext] -- the paper gives no bandwidths
GPUS = {"V100": {"flops": 15.7e12, "bw": 900e9},
        "RTX2070": {"flops": (2304 * 2 * 1.62e9, 2304 * 2 * 1.71e9), "bw": 448e9}}

#: §8.1 [paper]: fused F(2,3) beats non-fused F(4,3) below K = 129 (V100), 127 (RTX2070), from
#: T_fused = 2NCHWKRS/(2.25·FLOPS) and T_nonfused = 2NCHWKRS/(4·FLOPS) + NCHW·(1 + 2.25)·2·4 B/BW
#: (R = S = 3); [derived] K* = 26·FLOPS/(3.5·BW) ≈ 7.43 × the machine balance
BREAKEVEN_K = {"V100": 129, "RTX2070": 127}
#: the non-fused traffic of that model in words per input pixel: (1 + 2.25) × 2 -- [A] the ITF
#: pass (read the input, write Î: 1 + 2.25) and the OTF pass (read Ô, write O: 2.25 + 1) with
#: K = C; the GEMM's own reads of Î and writes of Ô are taken as hidden under its compute
NONFUSED_TRAFFIC_WORDS = (1 + 2.25) * 2

#: cache blocking (bk, bn, bc) (§3.3, Table 7 [paper]): this kernel, and cuDNN / Neon
BLOCKING = {"paper": (64, 32, 8), "cudnn": (32, 32, 8)}
#: §3.3 [paper]: arithmetic intensity (op/B, FP32) by bk at bn = 32: 8 → 10.67 (+33 %);
#: [derived] AI = bk·bn/(2(bk + bn))
INTENSITY = {32: 8.0, 64: 10.67}
#: §4.3 [paper]: one 4×4 element-wise multiply (16·2)/(32·4) = 0.25 op/B; two 8×8×bc GEMMs per
#: thread 2 op/B
EWMM_INTENSITY = {"tile": 0.25, "gemm": 2.0}
#: the per-thread GEMM block (bk, bn) of §4.3 [paper]: 8 × 8 (×bc = 8), two of them
THREAD_GEMM = (8, 8)
#: §4.2 [paper]: 32 FADDs (one input tile's ITF) against 1024 FFMAs per thread per iteration:
#: 32/1024 = 3.1 %
ITF_PRESSURE = {"adds": 32, "ffma": 1024, "percent": 3.1}
#: §7.3 [paper]: the only workspace, 16·K·C FP32 transformed filters, in MB per layer
WORKSPACE_MB = {"Conv2": 0.25, "Conv3": 1, "Conv4": 4, "Conv5": 16}
#: §7.2 [paper]: Nsight "SOL SM %" of the main loop: above 87.5 %, up to 93 % at large N
SOL_MAINLOOP = {"min": 87.5, "max": 93.0}

#: the paper's FTF per 1-D vector as the note reconstructs it (note §1.1 [derived]): t = g0 +
#: g2, h = ½g1, y1 = FFMA(½, t, h), y2 = FFMA(½, t, −h) -- 4 GPU instructions (FADD, FMUL, two
#: FFMA) -- in the model's network form: (dst, op, operands); "fma" is a·b + c with one rounding,
#: "mul" a·b; the constant ½ is "h"; y0 = x0 and y3 = x2 are wires
FTF_NETWORK_PAPER = ((("t", "add", ("x0", "x2")), ("hx", "mul", ("h", "x1")),
                      ("y1", "fma", ("h", "t", "hx")), ("y2", "fma", ("h", "t", "-hx"))),
                     ("x0", "y1", "y2", "x2"))
