"""The Sparse Tensor Core's checkable figures, computed from the family's models (the claims
ledger's ``source = "model"`` calls and the study template's context).  The cycle counts come
from :func:`tcgen.units.sparse.model.cycle_timing`, which tb/test_sparse_rtl.py asserts the
octets and the warp wrapper reproduce cycle for cycle; storage bits from the octets' parameters
and payload layouts; the Fig. 7 multiply count from an encoding of its matrix."""
from __future__ import annotations

import numpy as np

from . import model, paper

__all__ = ["figures", "gemm_speedup", "context", "paper_arithmetic", "RESNET50_3X3"]

#: ResNet-50's 3×3 convolutions as GEMMs (note §4.3 [X]): weights C_out × (C_in·9), and the
#: output pixels per image (the GEMM's third dimension)
RESNET50_3X3 = ({"name": "conv2_x", "m": 64, "n": 576, "p": 56 * 56},
                {"name": "conv3_x", "m": 128, "n": 1152, "p": 28 * 28},
                {"name": "conv4_x", "m": 256, "n": 2304, "p": 14 * 14},
                {"name": "conv5_x", "m": 512, "n": 4608, "p": 7 * 7})

_DPS_PER_OCTET, _DP_WIDTH, _OCTETS_PER_TC, _TCS_PER_SM, _V100_SMS = 8, 4, 2, 8, 80
_FP16 = 16


def figures(L: int = paper.PAPER_L, K: int = paper.PAPER_K) -> dict:
    """Every model-checked figure of the paper at (L, K): cycles of the four designs and their
    ratios, the sparse set's phases and DP utilisation, Fig. 7's multiplies, the tensor core's
    FMA rate, the V100 peak at the stated clock, the B-buffer and offset-register bits."""
    t = {(mode, pp): model.cycle_timing(mode, pp, L=L, K=K) for mode in ("dense", "sparse")
         for pp in (False, True)}
    cyc = {f"{mode}{'_pp' if pp else ''}": v["cycles"] for (mode, pp), v in t.items()}
    sp = t[("sparse", True)]
    # Fig. 7: A 4×8 with row 0's non-zeros at columns 1 and 6, B 8×6; L = 8, K = 2
    f7 = paper.FIG7
    A = np.zeros(f7["a_shape"])
    A[0, list(f7["row0_cols"])] = 1.0
    enc = model.encode(A[:1], f7["L"], f7["K"])
    mul_sparse, mul_dense = model.multiplies(enc, f7["b_shape"][1])
    fma_tc = _OCTETS_PER_TC * _DPS_PER_OCTET * _DP_WIDTH
    dense_b = _DP_WIDTH * 8 * _FP16                      # the shared 4×8 FP16 B buffer
    sparse_b = 2 * K * 16 * _FP16                        # K gathered rows of 16, ping-pong
    off_bits = K * model.offset_bits(L)
    return {
        "cycles": cyc,
        "speedup_nopp": cyc["dense"] / cyc["sparse"],
        "speedup_pp": cyc["sparse"] / cyc["sparse_pp"],
        "speedup_total": cyc["dense"] / cyc["sparse_pp"],
        "dense_pp_gain": cyc["dense"] / cyc["dense_pp"],
        "sparse_load": sp["load"], "sparse_compute": sp["compute"],
        "sparse_prologue": sp["prologue"], "sparse_utilisation": sp["utilisation"],
        "fig7": {"sparse": mul_sparse, "dense": mul_dense,
                 "reduction_pct": 100.0 * (1 - mul_sparse / mul_dense)},
        "cr_fig5": model.compression_ratio(paper.FIG5["P"], paper.FIG5["L"], paper.FIG5["K"]),
        "fma_per_cycle_tc": fma_tc,
        "v100_tflops_at_1530": 640 * fma_tc * 2 * 1.53e9 / 1e12,
        "v100_clock_for_112_ghz": 112e12 / (640 * fma_tc * 2) / 1e9,
        "bbuf_bits": {"dense": dense_b, "sparse": sparse_b, "ratio": sparse_b / dense_b},
        "offset_reg_bits": off_bits,
        "offset_regs_per_sm": _OCTETS_PER_TC * _TCS_PER_SM,
    }


def gemm_speedup(layers=RESNET50_3X3, L: int = paper.PAPER_L, K: int = paper.PAPER_K,
                 dense_pingpong: bool = False, sparse_pingpong: bool = True) -> dict:
    """GEMM-level cycles of dense (S)WMMAs on the octets' cycle model over layer shapes: every
    16×16 output tile needs ⌈n/16⌉ k-tiles (dense) or ⌈n/L⌉ vectors (sparse, 16×L×16 per
    SWMMA); returns {"layers": [{name, dense, sparse, speedup}], "speedup": total ratio}.
    Non-GEMM work (the paper's network-level figure includes it) is not modelled."""
    d_c = model.cycle_model("dense", dense_pingpong)
    s_c = model.cycle_model("sparse", sparse_pingpong, L=L, K=K)
    rows, td, ts = [], 0, 0
    for ly in layers:
        tiles = -(-ly["m"] // 16) * -(-ly["p"] // 16)
        dense = tiles * -(-ly["n"] // 16) * d_c
        sparse = tiles * -(-ly["n"] // L) * s_c
        rows.append({"name": ly["name"], "dense": dense, "sparse": sparse,
                     "speedup": dense / sparse})
        td, ts = td + dense, ts + sparse
    return {"layers": rows, "speedup": td / ts}


def split_cycles(L: int = paper.PAPER_L) -> list[dict]:
    """Cycles per SWMMA of the K = 4 octets running k = 4 / 2 / 1 non-zeros per row: unsplit
    (padded to 4 slots: K = 4's cycles), split (packed sets), and an unsplit octet built for
    K = k; the sparse octet with ping-pong, the B-stationary one per reused SWMMA and at one B
    tile per 4 SWMMAs; with the DP utilisation of each."""
    out = []
    for k in (4, 2, 1):
        sp = {name: model.cycle_timing("sparse", True, L=L, K=kk, split=sp_)
              for name, kk, sp_ in (("padded", 4, False), ("split", k, True),
                                    ("static", k, False))}
        bs = {name: model.bstationary_timing(L, kk, split=sp_)
              for name, kk, sp_ in (("padded", 4, False), ("split", k, True),
                                    ("static", k, False))}
        out.append({"k": k, "sparsity": 1 - k / L,
                    "sparse": {n: t["cycles"] for n, t in sp.items()},
                    # lane utilisation: unsplit DP-4s use k of their 4 lanes
                    "sparse_util": {n: t["utilisation"] * (1 if n == "split" else k / 4)
                                    for n, t in sp.items()},
                    "bs_reused": {n: t["reused"] for n, t in bs.items()},
                    "bs_reuse4": {n: t["cycles"] for n, t in bs.items()}})
    return out


def context() -> dict:
    """Names the study template (studies/sparse_ppa.md.j2) shows beside the sweep's rows:
    ``fig`` (:func:`figures`), ``gemm`` (:func:`gemm_speedup`), the cycles and DP utilisation
    of every (L, K) of the study with ping-pong (``cycles_lk``, ``util_lk``) and the storage
    note."""
    lk = [(16, 8), (16, 4), (16, 2), (16, 1), (8, 4), (8, 2), (4, 2), (32, 8)]
    t = {k: model.cycle_timing("sparse", True, L=k[0], K=k[1]) for k in lk}
    f = figures()
    note = (f"Storage per octet: dense B buffer {f['bbuf_bits']['dense']} b (4×8 FP16), A "
            f"buffers 8×4 FP16, C/D 8×8 FP32; sparse B buffer {f['bbuf_bits']['sparse']} b "
            f"(2 × 4×16 FP16, ping-pong), A buffers 2 × 4 FP16, D 4×16 FP32, offset register "
            f"{f['offset_reg_bits']} b.")
    bs_lk = {k: model.bstationary_timing(*k)["cycles"] for k in [(16, 4), (16, 8), (4, 2)]}
    return {"fig": f, "gemm": gemm_speedup(), "paper": paper,
            "bs": model.bstationary_timing(), "bs_lk": bs_lk, "split": split_cycles(),
            "cycles_lk": {k: v["cycles"] for k, v in t.items()},
            "util_lk": {k: v["utilisation"] for k, v in t.items()}, "storage_note": note}


# -- the paper's own arithmetic (issue 39: the claims ledger's "arithmetic" evidence) ----------
#: the simulated V100 of §5 [P]: SMs, tensor cores, FP32 CUDA cores, the clock of §6.3 (0.65 ns
#: at 1530 MHz) and the die of §6.3 (815 mm²); and §1's peak figures (112 vs 14 TFLOPs)
_V100 = {"sms": 80, "tcs": 640, "cuda_cores": 5120, "clock_ghz": 1.53, "die_mm2": 815.0,
         "tc_tflops": 112.0, "cuda_tflops": 14.0}
#: the V100 PCIe card's boost clock, 1.38 GHz [X]: NVIDIA's 112 / 14 TFLOPs datasheet figures
_V100_PCIE_GHZ = 1.38
#: §6.3 / Table 1 [P]: the 4 KB SRAM per SM, 0.019 mm² (0.069 × 0.275 mm) at 22 nm, 0.4 ns
#: (CACTI7), scaled to 0.007 mm² at 12 nm
_TABLE1 = {"area_22nm_mm2": 0.019, "w_mm": 0.069, "h_mm": 0.275, "cycle_ns": 0.4,
           "area_12nm_mm2": 0.007, "kbytes": 4}


def paper_arithmetic() -> dict:
    """The paper's own numbers re-derived (none of them measured here): the V100 peak per cycle
    (640 TCs × a 4×4×4 MMA per cycle against 5120 FP32 cores × 1 FMA: 8×, clock-free) and at a
    clock; the clock 112 TFLOPs needs; the die-level overhead of §6.3 (80 SMs × 0.007 mm² of
    815 mm², and unscaled at 22 nm); Table 1's footprint, its 22→12 nm factor against ideal
    (12/22)², the buffer bits per SM (8 TCs × 4 Kb) and V100's period at 1530 MHz."""
    v, t = _V100, _TABLE1
    fma_tc = _OCTETS_PER_TC * _DPS_PER_OCTET * _DP_WIDTH
    tc_flop = v["tcs"] * fma_tc * 2
    cuda_flop = v["cuda_cores"] * 2

    def tflops(flop, ghz):
        return flop * ghz * 1e9 / 1e12

    return {
        "tc_flop_per_cycle": tc_flop, "cuda_flop_per_cycle": cuda_flop,
        "tc_over_cuda": tc_flop / cuda_flop,
        "paper_ratio": v["tc_tflops"] / v["cuda_tflops"],
        "tc_tflops_at_1530": tflops(tc_flop, v["clock_ghz"]),
        "cuda_tflops_at_1530": tflops(cuda_flop, v["clock_ghz"]),
        "tc_tflops_at_1380": tflops(tc_flop, _V100_PCIE_GHZ),
        "cuda_tflops_at_1380": tflops(cuda_flop, _V100_PCIE_GHZ),
        "clock_for_112_ghz": v["tc_tflops"] * 1e12 / tc_flop / 1e9,
        "clock_for_14_ghz": v["cuda_tflops"] * 1e12 / cuda_flop / 1e9,
        "die_overhead_pct": 100 * v["sms"] * t["area_12nm_mm2"] / v["die_mm2"],
        "die_overhead_pct_22nm": 100 * v["sms"] * t["area_22nm_mm2"] / v["die_mm2"],
        "die_overhead_mm2": v["sms"] * t["area_12nm_mm2"],
        "table1_footprint_mm2": t["w_mm"] * t["h_mm"],
        "scale_22_to_12": t["area_12nm_mm2"] / t["area_22nm_mm2"],
        "scale_ideal": (12 / 22) ** 2,
        "bbuf_bits_per_sm": _TCS_PER_SM * 4 * 1024,
        "bbuf_kbytes_per_sm": _TCS_PER_SM * 4 * 1024 / 8 / 1024,
        "period_ns": 1 / v["clock_ghz"],
        "sram_cycle_over_period": t["cycle_ns"] * v["clock_ghz"],
    }
