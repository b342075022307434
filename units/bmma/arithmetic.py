"""The BTC-BNN paper's own arithmetic, re-derived from the numbers it prints (claims/bmma.toml,
issue 39).  Raw text: ../shared/papers/raw/000_f993d57b2666e3ad.txt; every figure below is
copied from it with its place (tables 6-10, §1, §4, §5.2, §6.2, §7.4).

* :func:`intro_figures` -- §1's "theoretically 16× speedups" (32 FP FMAs become one xnor and
  one popc) and "32× in both bandwidth and capacity" (a 32-bit value becomes 1 bit), §4.3's
  ILP ≈ 7 (200/4 × 4/32).
* :func:`stated_ratios` -- every average, ratio and ranking the text states about Tables 6-10,
  recomputed from the tables, each with the paper's figure and whether it agrees within
  ``rel_tol`` (default 0.5 %: the text prints two decimals and the tables three digits).
"""
from __future__ import annotations

__all__ = ["TABLE6_2080", "TABLE7_2080TI", "intro_figures", "stated_ratios"]

MODELS = ("MNIST-MLP", "Cifar-VGG", "Cifar-ResNet14", "AlexNet", "VGG-16", "ResNet-18")

#: Table 6 (RTX2080): scheme -> (8-image latency ms per model, throughput fps per model)
TABLE6_2080 = {
    "SBNN-64-Fine": ((0.074, 0.999, 2.550, 2.871, 16.68, 3.736),
                     (5.51e6, 1.63e4, 6.52e3, 3.79e3, 6.65e2, 3.42e3)),
    "BTC": ((0.061, 0.364, 0.827, 2.367, 7.449, 1.869),
            (3.37e6, 3.62e4, 1.58e4, 3.85e3, 1.24e3, 5.48e3)),
    "BTC-FMT": ((0.055, 0.338, 0.724, 2.326, 7.021, 1.833),
                (5.48e6, 3.85e4, 1.71e4, 3.77e3, 1.34e3, 5.55e3)),
}
#: Table 7 (RTX2080Ti), same layout
TABLE7_2080TI = {
    "SBNN-64-Fine": ((0.070, 0.926, 2.341, 2.017, 12.057, 3.233),
                     (6.87e6, 2.09e4, 7.86e3, 4.99e3, 8.83e2, 4.52e3)),
    "BTC": ((0.057, 0.317, 0.728, 1.878, 5.840, 1.538),
            (4.38e6, 4.69e4, 2.06e4, 4.87e3, 1.62e3, 7.23e3)),
    "BTC-FMT": ((0.053, 0.276, 0.618, 1.862, 5.466, 1.438),
                (6.78e6, 5.06e4, 2.24e4, 4.87e3, 1.76e3, 7.34e3)),
}
#: Table 8 (AlexNet/ImageNet): platform -> (raw latency µs, throughput img/s)
TABLE8 = {"RebNet": (1902, 521), "FP-BNN": (1160, 862), "O3BNN": (774, 1292),
          "SBNN V100": (979, 4400), "BTC": (559, 4869)}
#: Table 9 (VGG-16/ImageNet): platform -> (raw latency ms, throughput img/s)
TABLE9 = {"BitFlow GTX1080": (12.87, 78), "BitFlow i7": (16.10, 62),
          "BitFlow Xeon-Phi": (11.82, 85), "O3BNN": (5.626, 178), "SBNN V100": (3.208, 312),
          "BTC": (3.570, 1760)}
#: Table 10: layer-wise synchronization overhead, % per model
TABLE10 = dict(zip(MODELS, (8.26, 14.10, 13.20, 1.36, 1.72, 5.67)))


def intro_figures() -> dict:
    """§1 (a): 32 FP FMAs -> 1 xnor + 1 popc; §1 (b): 32-bit words -> 1 bit; §4.3:
    ILP = latency / pipeline stage delay × sub-cores / warps per SM = 200/4 × 4/32."""
    return {"theory_speedup": 32 / 2, "bandwidth": 32 / 1, "ilp": 200 / 4 * 4 / 32,
            "dependent_penalty": 10 - 4}


def _ratios(table, scheme, base="SBNN-64-Fine"):
    (lat_b, tp_b), (lat_s, tp_s) = table[base], table[scheme]
    lat = [b / s for b, s in zip(lat_b, lat_s)]
    tp = [s / b for b, s in zip(tp_b, tp_s)]
    return lat, tp


def _mean(v):
    return sum(v) / len(v)


def stated_ratios(rel_tol: float = 0.005) -> dict:
    """Every comparison §7.4/§7.5 (and §1's summary of them) states about Tables 6-10,
    recomputed.  Keys: ``checks`` {name: {"paper", "ours", "ok"}}; ``mismatches`` (how many do
    not agree within ``rel_tol``); ``headline`` {fmt_2080ti_latency, fmt_2080ti_throughput}
    (the conclusion's 2.33× / 1.81×); ``resnet18_gain_pct`` (the abstract's "77 % faster":
    ResNet-18 BTC-FMT over the best prior scheme, SBNN-64-Fine, on the RTX2080 whose 5.55K fps
    the abstract rounds to 5.6K) and ``avg_gain_2080_pct`` (the six-model average on the
    RTX2080)."""
    checks = {}

    def close(name, paper, ours):
        checks[name] = {"paper": paper, "ours": ours, "ok": abs(ours / paper - 1) <= rel_tol}

    def at_least(name, bound, ours):
        checks[name] = {"paper": bound, "ours": ours, "ok": ours >= bound * (1 - rel_tol)}

    def true(name, ours: bool):
        checks[name] = {"paper": 1, "ours": int(ours), "ok": bool(ours)}

    for gpu, table in (("2080ti", TABLE7_2080TI), ("2080", TABLE6_2080)):
        for scheme, (pl, pt) in {"BTC": {"2080ti": (2.10, 1.65), "2080": (2.08, 1.62)}[gpu],
                                 "BTC-FMT": {"2080ti": (2.33, 1.81),
                                             "2080": (2.25, 1.77)}[gpu]}.items():
            lat, tp = _ratios(table, scheme)
            close(f"avg latency {scheme} {gpu} (§7.4)", pl, _mean(lat))
            close(f"avg throughput {scheme} {gpu} (§7.4)", pt, _mean(tp))
    lat, tp = _ratios(TABLE7_2080TI, "BTC-FMT")
    close("best: ResNet-14 latency, FMT 2080ti (§7.4, §8)", 3.79, lat[2])
    close("best: ResNet-14 throughput, FMT 2080ti (§7.4, §8)", 2.84, tp[2])
    close("VGG-16 latency (§1)", 2.20, lat[4])
    close("ResNet-18 latency (§1)", 2.25, lat[5])
    close("VGG-16 throughput (§1)", 1.99, tp[4])
    close("ResNet-18 throughput (§1)", 1.62, tp[5])
    for gpu, table in (("2080ti", TABLE7_2080TI), ("2080", TABLE6_2080)):
        lat_b, _ = _ratios(table, "BTC")
        for i, mdl in enumerate(MODELS):
            if mdl not in ("MNIST-MLP", "AlexNet"):
                at_least(f"BTC > 2x latency, {mdl} {gpu} (§7.4 (I))", 2.0, lat_b[i])
        _, tp_f = _ratios(table, "BTC-FMT")
        true(f"MLP throughput below SBNN-64-Fine, {gpu} (§7.4)", tp_f[0] < 1)
    true("Table 8: BTC best AlexNet latency", TABLE8["BTC"][0] == min(v[0] for v in
                                                                       TABLE8.values()))
    true("Table 8: BTC best AlexNet throughput", TABLE8["BTC"][1] == max(v[1] for v in
                                                                          TABLE8.values()))
    at_least("Table 9: > 5x VGG-16 throughput over the best other", 5.0,
             TABLE9["BTC"][1] / max(v[1] for k, v in TABLE9.items() if k != "BTC"))
    top2 = sorted(TABLE10, key=TABLE10.get, reverse=True)[:2]
    true("Table 10: sync overhead largest on the two Cifar-10 nets (§7.5)",
         set(top2) == {"Cifar-VGG", "Cifar-ResNet14"})
    close("2176 warps = 68 SMs x 32 (§6.2)", 2176, 68 * 32)
    close("Design-2 coalesced load 32x4x8 = 1024 bits (§5.2)", 1024, 32 * 4 * 8)
    close("Design-2 warp fetch 32 lanes x 128 = 4096 bits (§5.2)", 4096, 32 * 128)
    close("int tile 8x8x4 = 256 bytes (§4)", 256, 8 * 8 * 4)
    close("bit tile 32 x 32-bit = 128 bytes (§4)", 128, 32 * 4)
    close("dependent BMMA penalty 10 - 4 = 6 cycles (§4.3)", 6, 10 - 4)

    hl_lat, hl_tp = _ratios(TABLE7_2080TI, "BTC-FMT")
    _, tp6 = _ratios(TABLE6_2080, "BTC-FMT")
    return {"checks": checks, "mismatches": sum(not c["ok"] for c in checks.values()),
            "count": len(checks),
            "headline": {"fmt_2080ti_latency": _mean(hl_lat),
                         "fmt_2080ti_throughput": _mean(hl_tp)},
            "resnet18_gain_pct": 100 * (tp6[5] - 1),
            "resnet18_gain_2080ti_pct": 100 * (hl_tp[5] - 1),
            "avg_gain_2080_pct": 100 * (_mean(tp6) - 1)}
