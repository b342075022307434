"""Figures and worked examples of the Sparse Tensor Core paper, cited, in one place (Zhu, Zhang,
Gu, Xie, "Sparse Tensor Core: Algorithm and Hardware Co-Design for Vector-wise Sparse Neural
Networks on Modern GPUs", MICRO-52 2019; ../shared/papers/001_sparse_tc.md).  Tests and studies
read them from here, never as literals of their own.  Tags as in the note: [P] stated in the
paper, [D] derived from its numbers, [A] an assumption of the note."""
from __future__ import annotations

__all__ = ["PAPER_L", "PAPER_K", "FIG5", "FIG7", "CR_DERIVED", "WMMA_CYCLES", "SPEEDUP_NO_PP",
           "SPEEDUP_PP", "FILL_BW", "SPARSITY_SWEEP", "ALGO1_ROUNDS_TO_PAPER_POINT"]

#: the chosen operating point: L = 16, K = 4 (75 % sparsity), 4-bit offsets (note §0, §1.5 [P])
PAPER_L = 16
PAPER_K = 4

#: Fig. 5: a 4×8 FP16 matrix, L = 8, K = 2, 3-bit offsets, CR = 128/38 = 3.37× (note §1.2 [P])
FIG5 = {"shape": (4, 8), "L": 8, "K": 2, "offset_bits": 3, "P": 16, "cr": 3.37,
        "cr_exact": (128, 38)}

#: Fig. 7: A 4×8 (row 0 non-zeros at columns 1 and 6), B 8×6: c0 = NZ0·b1 + NZ1·b6, 12
#: multiplies for row 0 instead of 48 (note §1.2 [P]); L = 8, K = 2 as in Fig. 5 [A]
FIG7 = {"a_shape": (4, 8), "b_shape": (8, 6), "L": 8, "K": 2, "row0_cols": (1, 6),
        "row0_multiplies": 12, "row0_dense_multiplies": 48}

#: CR = P·L / ((P + ⌈log2 L⌉)·K) for FP16 at other (L, K), rounded as the note gives them
#: (note §1.2 [D])
CR_DERIVED = {(16, 4): 3.2, (16, 8): 1.6, (16, 2): 6.4, (16, 1): 12.8, (8, 4): 1.68,
              (4, 2): 1.78}

#: cycles per 16×16×16 (S)WMMA by (mode, ping-pong): dense 40, dense + ping-pong 34 ("not worth
#: it"), sparse 26, sparse + ping-pong 20 (note §2.4 [P]; the per-phase split is the note's
#: reconstruction [D/A], Fig. 13 is missing from the extract)
WMMA_CYCLES = {("dense", False): 40, ("dense", True): 34, ("sparse", False): 26,
               ("sparse", True): 20}

#: 40/26 and 26/20 (note §2.4 [P])
SPEEDUP_NO_PP = 1.54
SPEEDUP_PP = 1.3

#: RF → operand-buffer fill bandwidth: 4×8 FP16 in 2 cycles = 16 FP16 per cycle per octet
#: (note §2.3, footnote 3 [P/D]; the sparse mode is assumed to have the same, §2.5 [A])
FILL_BW = 16

#: T12's sparsity sweep (note §4.3): (L, K) pairs
SPARSITY_SWEEP = ((16, 16), (16, 8), (16, 4), (16, 2), (16, 1), (8, 4), (8, 2), (4, 2))

#: Algorithm 1 takes 12 prune + fine-tune rounds per layer to reach L = 16, K = 4 (note §1.4 [P/D])
ALGO1_ROUNDS_TO_PAPER_POINT = 12
