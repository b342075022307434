"""Figures and test vectors of the PacQ paper and of its engineering note, cited, in one place
(Yin, Li, Panda, "PacQ"; ../shared/papers/004_pacq.md).  Tests and studies read them from here,
never as literals of their own."""
from __future__ import annotations

__all__ = ["NOTES_VECTORS", "MUL_THROUGHPUT_PER_W", "MUL_POWER_VS_FP16", "DUP_THROUGHPUT_PER_W",
           "MUL_REUSE_PCT", "CLOCK_MHZ", "NODE", "DP4_M2N4K4_CYCLES"]

#: Throughput/W of the parallel multiplier against the FP16 multiplier, by weight width
#: (004_pacq.md §7, "Throughput/W vs FP16 MUL: 3.38× (INT4), 6.75× (INT2)")
MUL_THROUGHPUT_PER_W = {4: 3.38, 2: 6.75}

#: the parallel multiplier's power over the FP16 multiplier's that the above implies: 4 outputs
#: per cycle / 3.38 ≈ 1.18× (004_pacq.md §7 [D]; also the sanity target of §8)
MUL_POWER_VS_FP16 = 4 / MUL_THROUGHPUT_PER_W[4]

#: adder-tree duplication ablation, throughput/W of (D, D') = dup D over dup D', by weight width
#: (004_pacq.md §7, Fig 11 text, m16n16k16: 1.33× / 1.38× and 1.11× / 1.18×)
DUP_THROUGHPUT_PER_W = {(2, 1): {4: 1.33, 2: 1.38}, (4, 2): {4: 1.11, 2: 1.18}}

#: share of the parallel multiplier reused from the FP16 multiplier, % (004_pacq.md §7, Fig 9
#: text "about 75%" of the INT11 multiplier; the intro's "~73% of hardware resources")
MUL_REUSE_PCT = (73, 75)

#: the paper's synthesis: Synopsys Design Compiler, 32 nm, 400 MHz (004_pacq.md §6 Method)
CLOCK_MHZ = 400
NODE = "32 nm"

#: DP-4 on m2n4k4: (cycles, outputs) of dp4_baseline, dp4_pacq INT4, dp4_pacq INT2
#: (004_pacq.md §7: 11 cycles for 8 outputs, 19 for 32, 35 for 64)
DP4_M2N4K4_CYCLES = {"baseline": (11, 8), 4: (19, 32), 2: (35, 64)}

#: (A, word, int2, rounding, expected lanes): pacq_mul lanes worked by hand in the notes §8.3
NOTES_VECTORS = [
    (0x3C00, 0xF870, 0, "rne", [0x6400, 0x6407, 0x6408, 0x640F]),
    (0x3E00, 0x0005, 0, "rne", [0x6608]),
    (0x3E00, 0x0005, 0, "rtz", [0x6607]),
    (0xBE00, 0x0005, 0, "rne", [0xE608]),
    (0x3FFF, 0x01F0, 0, "rne", [0x67FF, 0x680E, 0x6800, 0x67FF]),
    (0x3FE2, 0x000F, 0, "rne", [0x6800]),
    (0x3C3F, 0x000F, 0, "rne", [0x644F]),
    (0x3C3F, 0x000F, 0, "rtz", [0x644E]),
    (0x5000, 0x000F, 0, "rne", [0x780F]),
    (0x53FF, 0x0010, 0, "rne", [0x7BFF, 0x7C00, 0x7BFF, 0x7BFF]),
    (0x53E2, 0x000F, 0, "rne", [0x7C00]),
    (0x0001, 0x00F0, 0, "rne", [0x0400, 0x040F, 0x0400, 0x0400]),
    (0x03FF, 0x000F, 0, "rne", [0x2C0E, 0x2BFE]),
    (0x03FF, 0x000F, 0, "rtz", [0x2C0D]),
    (0x8000, 0xFFFF, 0, "rne", [0x8000] * 4),
    (0xFC00, 0x0000, 0, "rne", [0xFC00] * 4),
    (0x7E00, 0x1234, 1, "rne", [0x7E00] * 8),
    (0x3C00, 0x1BE4, 1, "rne", [0x6400, 0x6401, 0x6402, 0x6403, 0x6403, 0x6402, 0x6401,
                                0x6400]),
]
