"""Throughput of the golden numeric models (tcgen.hw.numeric) on one core.

For each case: 2**22 random input pairs (uniform over all encodings, specials included), one
untimed warm-up run, then the best of 3 runs timed with time.perf_counter; prints a markdown
table of M elements/s.

    python scripts/model_bench.py [--n-log2 22] [--repeat 3] [--json PATH]
"""
from __future__ import annotations

import json
import time

import numpy as np

from tcgen.hw import numeric as num
from tcgen.study import ScriptParser

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32}


def _rand(rng, fmt, n):
    return rng.integers(0, 1 << fmt.width, size=n, dtype=np.uint64).astype(_UINT[fmt.width])


def cases():
    """(name, format/mode label, function of (rng, n) -> zero-argument callable)."""
    out = []
    for op_name, op in (("fp_add", num.fp_add), ("fp_mul", num.fp_mul)):
        for fmt, mode in ((num.FP16, "rne"), (num.FP16, "rtz"), (num.BF16, "rne"),
                          (num.FP8_E4M3, "rne")):
            def make(rng, n, op=op, fmt=fmt, mode=mode):
                a, b = _rand(rng, fmt, n), _rand(rng, fmt, n)
                return lambda: op(a, b, fmt, mode)
            out.append((op_name, f"{fmt.name} {mode}", make))

    def make_cvt(rng, n):
        x = _rand(rng, num.FP32, n)
        return lambda: num.fp_convert(x, num.FP32, num.FP16, "rne")
    out.append(("fp_convert", "fp32->fp16 rne", make_cvt))
    return out


def bench(n, repeat, seed=1):
    rows = []
    for name, label, make in cases():
        fn = make(np.random.default_rng(seed), n)
        fn()                                    # warm-up (allocator, caches), not timed
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        rows.append({"op": name, "case": label, "n": n, "seconds": best,
                     "melem_per_s": n / best / 1e6})
    return rows


def main(argv=None):
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-log2", type=int, default=22, help="elements per run = 2**N (default 22)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case, best taken (default 3)")
    ap.add_argument("--json", metavar="PATH", help="also write the numbers as JSON to PATH")
    args = ap.parse_args(argv)
    if args.n_log2 < 0 or args.repeat < 1:
        ap.error("--n-log2 must be >= 0 and --repeat >= 1")
    rows = bench(1 << args.n_log2, args.repeat)
    print(f"golden-model throughput, one core, 2^{args.n_log2} random pairs, "
          f"best of {args.repeat}\n")
    print("| op | case | M elem/s |")
    print("|---|---|---:|")
    for r in rows:
        print(f"| {r['op']} | {r['case']} | {r['melem_per_s']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": 1 << args.n_log2, "repeat": args.repeat, "results": rows}, f,
                      indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
