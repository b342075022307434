#!/usr/bin/env python3
"""PacQ numerics study -> reports/pacq_numerics.md.

    .venv/bin/python scripts/pacq_numerics.py            # full study (a few minutes)
    .venv/bin/python scripts/pacq_numerics.py --quick    # smaller sizes, for a smoke test

Flows (tcgen.units.pacq.model.gemm, bit-exact to chains of the RTL DP-4s plus the general-core
correction): dequant + FP16 GEMM; PacQ literal datapath; PacQ paper (FP16 products, FP16
accumulation and correction); PacQ paper with FP32 accumulation/correction; exact (22-bit) lane
products + FP32; offset8 (A·(B+8), 8·ΣA) + FP32.  Error = |out − exact| / ‖A[m,:]∘B[:,n]‖₂ per
output, exact = integer arithmetic.  A ~ N(0, σ) rounded to FP16, B uniform INT4 (INT2 rows
marked), scales 1 unless stated.  Then a dp4_pacq sample: chained m4n16k16 tiles run on the
unit's golden model (the beats the RTL produces: tb/test_pacq_rtl.py::test_numerics_configs_on_rtl
runs the same tiles on the RTL with zero mismatches, in `make test`), and the error of the
corrected outputs is reported.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from tcgen.hw import numeric as num
from tcgen.registry import get_unit
from tcgen.study import ScriptParser, report_header, tool_versions, write_report
from tcgen.hw.layout import unpack
from tcgen.units.pacq import layouts
from tcgen.units.pacq import model as M
from tcgen.units.pacq.family import pacq_tile_ops

ROOT = Path(__file__).resolve().parent.parent

#: dp4_pacq configurations of the sample (the same two run on the RTL by
#: tb/test_pacq_rtl.py::test_numerics_configs_on_rtl)
SAMPLE_CONFIGS = (dict(), dict(mode="offset8", acc="fp32"))

FLOWS = [("dequant", "dequant + FP16 GEMM (FP16 products, FP16 accumulation)"),
         ("literal", "PacQ literal text datapath (6-bit adder, truncation), FP16"),
         ("paper", "PacQ paper: FP16 products, FP16 accumulation + correction"),
         ("paper_fp32", "PacQ paper products, FP32 accumulation + correction"),
         ("exact", "PacQ exact 22-bit lane products, FP32"),
         ("offset8", "offset8: A·(B+8) fixed point, 8·ΣA, FP32")]


def out_format(flow):
    return "fp16" if flow in ("dequant", "literal", "paper") else "fp32"


def run_case(rng, m, k, n, sigma, wbits=4, group=None, scales=False):
    group = group or (k, 1)
    gk, gn = group
    A = num.from_float(rng.normal(0.0, sigma, (m, k)), "fp16")
    lo, hi = M.WEIGHT_RANGE[wbits]
    B = rng.integers(lo, hi + 1, (k, n))
    if scales:
        s = num.from_float(rng.uniform(0.005, 0.02, (k // gk, n // gn)), "fp16")
    else:
        s = num.from_float(np.ones((k // gk, n // gn)), "fp16")
    exact = M.gemm_exact(A, B, s, group=group)
    s_full = np.repeat(np.repeat(num.to_float(s, "fp16"), gk, 0), gn, 1)
    norm = np.sqrt((num.to_float(A, "fp16") ** 2) @ ((B * s_full) ** 2))
    rows = {}
    for flow, _ in FLOWS:
        t0 = time.time()
        out, st = M.gemm(A, B, s, wbits=wbits, group=group, flow=flow, return_stats=True)
        v = num.to_float(out, out_format(flow))
        fin = np.isfinite(v)
        rel = np.abs(v[fin] - exact[fin]) / np.where(norm[fin] > 0, norm[fin], 1)
        rows[flow] = {"median": float(np.median(rel)) if rel.size else float("nan"),
                      "max": float(rel.max()) if rel.size else float("nan"),
                      "nonfinite": float(1 - fin.mean()), "n": int(v.size),
                      "ovf_products": st["overflow_products"], "ovf_KS": st["overflow_S"],
                      "ovf_P": st["overflow_psum"],
                      "s": round(time.time() - t0, 1)}
    return rows


def fmt_cell(r):
    if r["nonfinite"] >= 1:
        return "all inf/NaN"
    med = f"{r['median']:.1e}" if r["median"] > 0 else "0"
    mx = f"{r['max']:.1e}" if r["max"] > 0 else "0"
    s = f"{med} ({mx})"
    if r["nonfinite"] > 0:
        s += f", {100 * r['nonfinite']:.0f}% inf/NaN"
    return s


def dp4_sample(rng):
    """Chained tiles through dp4_pacq's golden model (bit-identical to the RTL: proven by
    tb/test_pacq_rtl.py::test_numerics_configs_on_rtl) and the error of the corrected outputs."""
    out = []
    for cfg in SAMPLE_CONFIGS:
        unit = get_unit("dp4_pacq")
        p = unit.params(**cfg)
        m, k, n = 4, 16, 16
        A = num.from_float(rng.normal(0, 1, (m, k)), "fp16")
        B = rng.integers(-8, 8, (k, n))
        ops = pacq_tile_ops(p, A, B, 4)
        beats = unit.golden(p, op__payload=ops)["res__payload"]
        f = unpack(layouts.dp4_pacq_res(p), beats)
        q = n // 4
        last = f["y"].reshape(k // 4, m, q, 4)[-1].reshape(m, n)     # final k-step = P
        S = f["sa"].reshape(k // 4, m, q, 4 // p.D)[-1, :, 0, 0]
        fmt = num.get_format(p.acc)
        K = M.correction_constant(p.mode, 4)
        t = num.fp_mul(num.from_float(np.full(m, float(K)), fmt), S, fmt)
        res = num.fp_add(last, t[:, None] ^ np.uint64(1 << (fmt.width - 1)), fmt)
        exact = M.gemm_exact(A, B, num.from_float(np.ones((1, n)), "fp16"), group=(k, 1))
        norm = np.sqrt((num.to_float(A, "fp16") ** 2) @ (B.astype(float) ** 2))
        v = num.to_float(res, fmt)
        ref = num.to_float(M.gemm(A, B, num.from_float(np.ones((1, n)), "fp16"), wbits=4,
                                  group=(k, 1), flow="paper" if p.mode == "paper"
                                  else "offset8"), fmt)
        rel = np.abs(v - exact) / norm
        out.append((p, len(beats), float(np.median(rel)), float(rel.max()),
                    bool(np.array_equal(v, ref))))
    return out


def main():
    ap = ScriptParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--out", default=str(ROOT / "reports" / "pacq_numerics.md"))
    ap.add_argument("--no-rtl", action="store_true", help="skip the dp4_pacq sample")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    sizes = {16: (16, 64), 128: (16, 64), 4096: (4, 16)}
    if args.quick:
        sizes = {16: (4, 16), 128: (4, 16), 4096: (1, 8)}
    cases = [(k, 1.0) for k in (16, 128, 4096)] + [(16, 10.0), (16, 40.0), (128, 10.0),
                                                    (128, 40.0)]
    t_start = time.time()
    results = {}
    for k, sigma in cases:
        m, n = sizes[k]
        print(f"k={k} sigma={sigma} ({m}x{n} outputs)", flush=True)
        results[(k, sigma)] = run_case(rng, m, k, n, sigma)
    int2 = run_case(rng, 16, 128, 64, 1.0, wbits=2)
    grouped = {g: run_case(rng, 8, 256, 16, 1.0, group=M.GROUPS[g], scales=True)
               for g in M.GROUPS}
    rtl = [] if args.no_rtl else dp4_sample(rng)
    report(args, results, int2, grouped, rtl, sizes, time.time() - t_start)


def report(args, results, int2, grouped, rtl, sizes, wall):
    cmd = "python scripts/pacq_numerics.py" + (" --quick" if args.quick else "") + \
        (f" --seed {args.seed}" if args.seed != 2024 else "")
    hdr = "| flow | " + " | ".join(f"k={k}, σ={s:g}" for k, s in results) + " |"
    sep = "|---" * (len(results) + 1) + "|"
    lines = [hdr, sep]
    for flow, desc in FLOWS:
        lines.append(f"| {desc} | " + " | ".join(fmt_cell(results[c][flow]) for c in results)
                     + " |")
    ovf = ["| flow | " + " | ".join(f"k={k}, σ={s:g}" for k, s in results) + " |", sep]
    for flow, desc in FLOWS:
        ovf.append(f"| {flow} | " + " | ".join(
            f"{results[c][flow]['ovf_products']} / {results[c][flow]['ovf_P']} / "
            f"{results[c][flow]['ovf_KS']}" for c in results)
            + " |")
    i2 = ["| flow | INT2, k=128, σ=1 |", "|---|---|"] + [
        f"| {desc} | {fmt_cell(int2[flow])} |" for flow, desc in FLOWS]
    gr = ["| flow | " + " | ".join(grouped) + " |", "|---" * (len(grouped) + 1) + "|"] + [
        f"| {desc} | " + " | ".join(fmt_cell(grouped[g][flow]) for g in grouped) + " |"
        for flow, desc in FLOWS]
    rt = ["| dp4_pacq params | beats | corrected-output error median (max) | "
          "equals the model's GEMM |", "|---|---|---|---|"]
    for p, beats, med, mx, same in rtl:
        rt.append(f"| {p.key()} | {beats} | {med:.1e} ({mx:.1e}) | {same} |")
    header = report_header(cmd, seed=args.seed, wall_s=wall,
                           tools=tool_versions(flow=False, packages=("numpy", "amaranth")))
    text = f"""# PacQ numerics study

{header}  No liberty is involved (pure numerics).

Every flow is `tcgen.units.pacq.model.gemm`: chains of DP-4 operations with the pinned tree order
`((p0+p1)+(p2+p3))+C` (bit-exact to the `dp4_baseline` / `dp4_pacq` RTL), then the general-core
correction `out = Σ_g s·(P_g − K·S_g)` in the accumulation format (K = 1032 for the +1024 flows,
8 for offset8).  Error metric: |out − exact| / ‖A[m,:]∘B[:,n]‖₂ per output (exact = integer
arithmetic); cells give **median (max)** over the finite outputs and the share of outputs that
are inf/NaN.  A ~ N(0, σ) rounded to FP16, B uniform INT4 in [−8, 7], scales 1.  Outputs per
case: {', '.join(f'k={k}: {m}×{n}' for k, (m, n) in sizes.items())}.

## Relative error (INT4)

{chr(10).join(lines)}

## Overflows: inf products / inf-or-NaN partial sums P_g / inf K·ΣA terms (counts over the GEMM)

{chr(10).join(ovf)}

## INT2 (K = 1026 / offset 2)

{chr(10).join(i2)}

## Group-wise correction with random FP16 scales (k = 256, σ = 1; Table II group shapes)

{chr(10).join(gr)}

## The RTL's own outputs (sample)

Chained m4n16k16 INT4 tiles through `dp4_pacq`, result beats from the unit's golden model.  The
RTL produces the same beats bit for bit: `tb/test_pacq_rtl.py::test_numerics_configs_on_rtl` (in
`make test`) runs these two configurations' tiles on the RTL (cocotb, Icarus) and checks zero
mismatches over every beat.  So the corrected outputs below are the RTL's; the general-core
correction is applied with `tcgen.hw.numeric` in the unit's accumulation format.

{chr(10).join(rt) if rtl else '(skipped: --no-rtl)'}

## Reading

- **The paper's FP16 pipeline cannot be "no approximation"**: each FP16 product of ≈1032·A keeps 11 bits, so
  its rounding error (≤ ½ ulp of ≈1032·|A|, i.e. up to ≈0.5·|A|) is as large as A·B itself;
  subtracting 1032·ΣA then cancels catastrophically.  Its error is 2–3 orders of magnitude above
  the dequant flow, and FP16 overflow (|A| ≥ 63.06 in a product, |ΣA| ≳ 63.5 in K·ΣA) turns
  outputs into inf/NaN as σ and k grow.
- FP32 accumulation (paper_fp32) removes the accumulation part of the error but not the product
  rounding: still ~1e-2.  Only wider products help: `exact` (22-bit products) brings it to the
  FP32 accumulation level, and `offset8` (A·(B+8) needs ≤ 15 bits, no +1024) is exact up to FP32
  accumulation rounding -- better than the dequant FP16 baseline, with no overflow until FP32's.
- The literal text datapath (6-bit adder with a dropped carry, no normalization, truncation) adds
  errors of up to ≈2^-5 relative per product on top (35% of (mA, y) pairs are wrong).
"""
    write_report(args.out, text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
