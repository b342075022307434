"""One end-to-end layer per paper (issue 42 §3) -> reports/layers.md (+ .json).

    .venv/bin/python scripts/layers.py [--size full|reduced] [--layers lut,sparse,pacq,wino,bmma]
        [--libs osu018,nangate45] [--clock-ns 10] [--sim icarus|verilator]
        [--windows N] [--out reports/layers.md]

Per layer of :mod:`tcgen.layers` (and its baseline where the issue names one):

1. the request stream of the real layer (seeded operands of its shape) runs back to back on the
   unit's RTL (cocotb stream bench, :func:`tcgen.verify.layers.run_layer`): every output
   compared bit for bit with the unit's golden model and with the layer's chained golden
   outputs, the issue interval checked against the unit's cycle model (a constant interval, or
   bnn_layer's schedule: every gap between accepted requests and the cycles equal to
   throughput.layer_top_schedule's), the cycles counted (first request offered .. last result
   taken);
2. its energy per layer on each liberty: the mapped netlist's gate-level simulation driven by the
   cycle-by-cycle trace of that run (:meth:`tcgen.layers.Layer.trace`, the layer's measured
   cycles), power × cycles × clock (:func:`tcgen.layers.energy`); ``--windows N``: also the
   energy per MAC of N windows of the stream (its first and last quarter, ...), to show the
   per-op figure is stable.

A liberty that is not present (nangate45 lives in ../shared/liberty/) is skipped with a note.
Bad input: one line on stderr, exit 2; a tool failure: exit 1.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LAYERS = "lut,sparse,pacq,wino,bmma"


def _args(argv):
    from tcgen.study import ScriptParser
    ap = ScriptParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="full", choices=("full", "reduced"))
    ap.add_argument("--layers", default=DEFAULT_LAYERS)
    ap.add_argument("--libs", default="osu018,nangate45")
    ap.add_argument("--clock-ns", type=float, default=10.0)
    ap.add_argument("--sim", default=None, choices=("icarus", "verilator"))
    ap.add_argument("--windows", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "reports" / "layers.md"))
    ap.add_argument("--parts", default=str(ROOT / "build" / "layers" / "parts"),
                    help="folder of each layer's result as it is measured (reused with --reuse)")
    ap.add_argument("--no-baselines", action="store_true",
                    help="the layers named, without their baselines")
    ap.add_argument("--fresh", action="store_true",
                    help="ignore the results in --parts (by default a layer measured there at "
                         "this size is not run again)")
    ap.add_argument("--no-run", action="store_true",
                    help="run and measure nothing: the report of what --reuse holds")
    ap.add_argument("--reuse", default="",
                    help="JSON files of earlier runs (this script's): a layer found there at "
                         "this size with every liberty asked is taken from it, not run again")
    return ap.parse_args(argv)


def _bad(msg: str):
    print(f"layers: {msg}", file=sys.stderr)
    sys.exit(2)


def _liberties(names):
    from tcgen.synth.liberty import KNOWN, LibertyError, resolve
    libs, notes = [], []
    for n in names:
        if n in KNOWN and not KNOWN[n][0].is_file():
            notes.append(f"{n} skipped: its liberty ({KNOWN[n][0].name}) is not present "
                         f"(../shared/liberty/ is absent on this machine)")
            continue
        try:
            resolve(n)
        except LibertyError as e:
            _bad(str(e))
        libs.append(n)
    return libs, notes


def rtl_part(lay, sim) -> dict:
    """The layer through its unit's RTL: the result dict (no energies yet)."""
    from tcgen.verify.layers import run_layer
    t0 = time.monotonic()
    rtl = run_layer(lay, sim=sim)
    rtl["wall_total_s"] = round(time.monotonic() - t0, 1)
    ok = rtl["mismatches"] == 0 and rtl["bench_mismatches"] == 0 and \
        rtl["issue_intervals"] == lay.issue_gaps() and rtl["accepted"] == len(lay.requests) and \
        lay.model_cycles() in (None, rtl["cycles"]) and lay.reference.get("equal", True)
    return {"name": lay.name, "title": lay.title, "shape": lay.shape, "unit": lay.unit,
            "params": lay.params, "size": lay.size, "seed": lay.seed, "notes": lay.notes,
            "requests": len(lay.requests), "interval": lay.interval, "macs": lay.macs,
            "window": ({"first": lay.window_first, "requests": len(lay.requests),
                        "layer_requests": lay.layer_requests,
                        "spans": lay.window_spans} if lay.is_window else None),
            "layer_cycles": lay.layer_cycles(rtl["cycles"]), "layer_macs": lay.layer_macs,
            "rtl": rtl, "ok": bool(ok), "energy": {}, "windows": {}, "windows_steady": True}


def energy_part(lay, out: dict, lib: str, clock_ns, windows):
    """The layer's energy on ``lib`` (whole run, and its windows) into ``out``."""
    from tcgen.layers import energy
    e = energy(lay, out["rtl"]["cycles"], lib, clock_ns=clock_ns)
    e["energy_layer_pj"] = e["energy_pj_per_mac"] * lay.layer_macs   # = energy_pj if whole
    out["energy"][lib] = e
    out["windows"].update(stream_windows(lay, [lib], clock_ns, windows))


def stream_windows(lay, libs, clock_ns, windows) -> dict:
    """{liberty: [window]}: ``windows`` stretches of the stream, first to last, each a quarter
    (2 windows) of it or at least 16 cycles, measured on their own (steady state)."""
    from tcgen.layers import energy_window
    out = {}
    if windows < 2:
        return out
    n = len(lay.requests)
    count = min(n, max(n // (2 * windows), -(-16 // (lay.interval or 1))))   # >= 16 cycles
    spans = sorted({lay.whole_tiles(round(i * (n - count) / (windows - 1)), count)
                    for i in range(windows)})                 # whole tiles on a schedule
    for lib in libs:
        out[lib] = [dict(first=f, count=c, **_small(energy_window(
            lay, f, c, lib, clock_ns=clock_ns))) for f, c in spans]
    return out


def _small(e):
    return {k: e[k] for k in ("cycles", "macs", "energy_pj", "energy_pj_per_mac", "power_mw")}


def _fmt_mac(x):
    return f"{x:.2f}" if x >= 1 else f"{x:.3f}"


def _fmt_pj(x):
    if x >= 1e9:
        return f"{x / 1e9:,.3f} mJ"
    if x >= 1e6:
        return f"{x / 1e6:,.3f} µJ"
    if x >= 1e3:
        return f"{x / 1e3:,.2f} nJ"
    return f"{x:,.1f} pJ"


def report(results, libs, notes, args, wall_s) -> str:
    from tcgen.layers import UNBUILT
    from tcgen.study import report_header, tool_versions
    cmd = "python scripts/layers.py" + (f" --size {args.size}" if args.size != "full" else "") \
        + (f" --layers {args.layers}" if args.layers != DEFAULT_LAYERS else "") \
        + (f" --libs {args.libs}" if args.libs != "osu018,nangate45" else "") \
        + (f" --sim {args.sim}" if args.sim else "") \
        + (f" --clock-ns {args.clock_ns:g}" if args.clock_ns != 10.0 else "")
    lib_objs = []
    for r in results:
        for lib in libs:
            e = r["energy"].get(lib)
            if e and all(lib != x.get("name") for x in lib_objs):
                lib_objs.append({"name": lib})
    L = ["# End-to-end layers, one per paper (issue 42 §3)", "",
         report_header(cmd, wall_s=wall_s, liberties=libs, seed=args.seed,
                       tools=tool_versions(packages=("numpy", "amaranth", "cocotb")),
                       notes=notes), "",
         "Each layer is a real layer's request stream (seeded operands of its shape) run back "
         "to back through the unit's RTL (cocotb stream bench, "
         f"{args.sim or 'the harness default simulator'}): every output compared bit for bit "
         "with the unit's golden model and with the layer's chained golden outputs; the "
         "cycles from the first request offered to the last result taken. **Energy per "
         "layer** = the power of the mapped netlist (Yosys + OpenSTA, flat, "
         f"{args.clock_ns:g} ns clock) with the activity of a zero-delay gate-level "
         "simulation of that netlist driven cycle by cycle by the same request stream "
         "(`tcgen.layers.Layer.trace`: each request held with valid high until the unit's "
         "cycle model accepts it -- a constant issue interval, or bnn_layer's schedule "
         "(`throughput.layer_top_schedule`) -- results always ready, then drained), times "
         "the layer's cycles × the "
         "clock -- the **whole** layer simulated where the table says so, a stated window of "
         "its stream otherwise (the Winograd pair and the BNN block at full size; energy "
         "per layer = the "
         "window's energy per MAC × the layer's MACs) (docs/ppa.md, activity "
         "`sim`: functional transitions only, no glitches). The windows below are stretches "
         "of the same stream (its first and last), simulated on their own over the cycles "
         "their requests are offered (the steady state, no drain): their energy per MAC "
         "against the whole layer's shows how stable the per-MAC figure is, i.e. what a "
         "window of a layer too long to simulate whole would give. MACs are the layer's "
         "dense-equivalent multiply-accumulates (the sparse GEMM's pruned zeros counted, the "
         "Winograd layer's as the direct convolution's; the BNN block's are its useful binary "
         "MACs, one 1-bit XNOR-popcount term each, K padding excluded), so a layer and its "
         "baseline divide by the same number; the last column is the layer's energy and "
         "cycles over its baseline's.", ""]
    head = "| layer | shape | unit | cycles | outputs checked | " + " | ".join(
        f"energy / layer {lib}" for lib in libs) + " | " + " | ".join(
        f"pJ / MAC {lib}" for lib in libs) + " | ×baseline |"
    L += [head, "|" + "---|" * (head.count("|") - 1)]
    by = {r["name"]: r for r in results}
    for r in results:
        rtl = r["rtl"]
        chk = f"{rtl['values']:,} values in {rtl['outputs']:,} result" + \
            ("s" if rtl["outputs"] != 1 else "") + ", " + \
            ("0 mismatches" if r["ok"] else f"**{rtl['mismatches']} mismatches**")
        en = [(_fmt_pj(r["energy"][lib]["energy_layer_pj"]) if lib in r["energy"] else "–")
              for lib in libs]
        pm = [(_fmt_mac(r['energy'][lib]['energy_pj_per_mac']) if lib in r["energy"] else "–")
              for lib in libs]
        base = {"sparse": "sparse_dense", "pacq": "pacq_baseline",
                "wino": "wino_direct"}.get(r["name"])
        ratio = "–"
        if base in by:
            parts = []
            for lib in libs:
                a, b = r["energy"].get(lib), by[base]["energy"].get(lib)
                if a and b:
                    parts.append(f"{a['energy_layer_pj'] / b['energy_layer_pj']:.2f}× energy, "
                                 f"{r['layer_cycles'] / by[base]['layer_cycles']:.2f}× cycles "
                                 f"({lib})")
            ratio = "; ".join(parts) or "–"
        cyc = f"{r['layer_cycles']:,}" + (f" (window run: {rtl['cycles']:,})" if r["window"]
                                            else "")
        L.append(f"| {r['name']}: {r['title']} | {r['shape']} | `{r['unit']}` | "
                 f"{cyc} | {chk} | " + " | ".join(en) + " | " + " | ".join(pm) +
                 f" | {ratio} |")
    missing = [f"{r['name']} on {lib}" for r in results for lib in libs
               if r["ok"] and lib not in r["energy"]]
    if missing:
        L += ["", "–: not measured by this report's deadline (" + ", ".join(missing) +
              "); the command above measures them (results already made are reused from "
              "build/layers/parts/)."]
    L += ["", "## Per layer", ""]
    for r in results:
        rtl = r["rtl"]
        L += [f"### {r['name']}: {r['title']}", "",
              f"- Shape: {r['shape']}; {r['macs']:,} MACs; {r['requests']:,} requests, " +
              _issue_text(r),
              f"- Unit: `{r['unit']}` {r['params'] or '(defaults)'}; {r['notes']}.",
              *([f"- **A window of the layer**: requests {_spans_text(r['window'])} of "
                 f"{r['window']['layer_requests']:,} ran; the layer's {r['layer_cycles']:,} "
                 f"cycles are the window's plus " +
                 ("the rest of the layer's by the schedule (its cycles for the whole "
                  "layer less its cycles for the window)" if r["interval"] is None else
                  "the other requests at the issue interval") +
                 f", its energy the window's energy per MAC × its {r['layer_macs']:,} MACs."]
                if r["window"] else []),
              f"- RTL: {rtl['cycles']:,} cycles; {rtl['values']:,} output values in "
              f"{rtl['outputs']:,} result{'s' if rtl['outputs'] != 1 else ''} against the "
              f"chained golden outputs: "
              f"{rtl['mismatches']} mismatches (stream bench against the unit's model: "
              f"{rtl['bench_mismatches']} of {rtl['bench_vectors']:,}); "
              f"{rtl['wall_total_s']} s of simulation."]
        if r["rtl"]["reference"]:
            L.append(f"- Layer-level model: {_ref_text(r['rtl']['reference'])}.")
        for lib in libs:
            e = r["energy"].get(lib)
            if not e:
                continue
            p = e["power_mw"]
            flow = "".join(f", ABC &fraig -C {v:,}" if k == "fraig_conflicts" else f", {k} {v}"
                           for k, v in (e.get("flow") or {}).items())
            L.append(f"- {lib}: {e['cell_count']:,} cells, {e['area_um2']:,.0f} µm²{flow}; "
                     f"simulated power {p['total']:.3f} mW (internal {p['internal']:.3f}, "
                     f"switching {p['switching']:.3f}, leakage {p['leakage']:.2e}) over "
                     f"{e['cycles']:,} cycles ({e['simulator']} engine) → "
                     f"**{_fmt_pj(e['energy_layer_pj'])} per layer, "
                     f"{e['energy_pj_per_mac']:.3f} pJ per MAC**.")
            for w in r["windows"].get(lib, []):
                L.append(f"  - window: requests {w['first']:,} .. {w['first'] + w['count'] - 1:,}"
                         f" ({w['cycles']:,} cycles): {w['energy_pj_per_mac']:.3f} pJ per MAC "
                         f"({100 * (w['energy_pj_per_mac'] / e['energy_pj_per_mac'] - 1):+.1f} % "
                         f"against the whole layer)")
        L += ["", "Reproduce this layer alone:", "", "```sh",
              f".venv/bin/python scripts/layers.py --size {r['size']} --layers "
              f"{r['name'].split('_')[0]} --libs {','.join(libs)}" +
              (f" --sim {args.sim}" if args.sim else ""), "```", ""]
    if UNBUILT:
        L += ["## Not measured here yet", ""]
        for k, why in UNBUILT.items():
            L.append(f"- **{k}**: {why}.")
        L.append("")
    L += ["Tests: `tb/test_layers.py` (reduced sizes in make test; the full sizes and the "
          "energies are `@pytest.mark.slow`)."]
    return "\n".join(L) + "\n"


def _issue_text(r: dict) -> str:
    """How the requests were issued: a constant interval, or the unit's schedule."""
    rtl = r["rtl"]
    if r["interval"] is not None:
        return (f"one every {r['interval']} cycle{'s' if r['interval'] > 1 else ''} "
                f"(RTL issue intervals {rtl['issue_intervals']}, latency {rtl['latency']}).")
    return (f"accepted on the unit's schedule (throughput model: gaps {rtl['model_gaps']} "
            f"between accepted requests, {rtl['model_cycles']:,} cycles for the requests run; "
            f"RTL: issue intervals {rtl['issue_intervals']}, {rtl['cycles']:,} cycles, "
            f"latency {rtl['latency']}).")


def _spans_text(w: dict) -> str:
    spans = w.get("spans") or [(w["first"], w["requests"])]
    return " and ".join(f"{a:,} .. {a + n - 1:,}" for a, n in spans)


def _ref_text(ref: dict) -> str:
    if "equal" in ref:
        return f"{ref['what']}: {'equal, bit for bit' if ref['equal'] else '**differs**'}"
    return (f"{ref['what']}: the RTL's result is within {ref['max_abs_err_vs_exact']:.3g} "
            f"of it (largest |value| {ref['max_abs_exact']:.3g})")


def _earlier(args) -> dict:
    """{layer name: its result} from the ``--reuse`` files (same size and seed)."""
    import json
    out = {}
    files = [x for x in args.reuse.split(",") if x]
    if not args.fresh:
        files += [str(f) for f in sorted(Path(args.parts).glob(f"{args.size}-*.json"))]
    for f in files:
        try:
            data = json.loads(Path(f).read_text())
        except (OSError, ValueError) as e:
            _bad(f"--reuse {f}: {e}")
        if data.get("size") != args.size or data.get("clock_ns") != args.clock_ns:
            continue
        for r in data.get("layers", []):
            if r.get("seed") == args.seed:
                r.setdefault("window", None)          # a whole-layer run of an earlier version
                r.setdefault("layer_cycles", r["rtl"]["cycles"])
                r.setdefault("layer_macs", r["macs"])
                for e in r["energy"].values():
                    e.setdefault("energy_layer_pj", e["energy_pj"])
                if "windows_steady" not in r:         # windows of an earlier version (drained)
                    r["windows"] = {}
                r["windows_steady"] = True
                prev = out.get(r["name"])
                if prev is None:
                    out[r["name"]] = r
                else:                                 # the union of the liberties measured
                    for lib, e in r["energy"].items():
                        prev["energy"].setdefault(lib, e)
                    for lib, w in r.get("windows", {}).items():
                        prev["windows"].setdefault(lib, w)
    return out


def main(argv=None) -> int:
    args = _args(argv)
    from tcgen.hw.params import ParamError
    from tcgen.layers import BASELINES, LAYERS, layer
    from tcgen.study import write_json, write_report
    from tcgen.synth.tools import ToolError
    names = [x for x in args.layers.split(",") if x]
    known = list(LAYERS) + [b for b, _ in BASELINES.values()]
    bad = [x for x in names if x not in known]
    if bad or not names:
        _bad(f"--layers must be a list of {', '.join(known)}, got {args.layers!r}")
    if args.windows < 0 or args.clock_ns <= 0:
        _bad("--windows must be >= 0 and --clock-ns > 0")
    libs, notes = _liberties([x for x in args.libs.split(",") if x])
    earlier = _earlier(args)
    parts = Path(args.parts)
    t0 = time.monotonic()
    todo = [x for n in names for x in [n] + ([BASELINES[n][0]] if n in BASELINES and
                                               not args.no_baselines else [])]
    results: dict = {}
    lays: dict = {}

    def lay_of(name):
        if name not in lays:
            lays[name] = layer(name, args.size, args.seed)
        return lays[name]

    def save(r):
        if not args.no_run:
            write_json(parts / f"{args.size}-{r['name']}.json",
                           {"size": args.size, "clock_ns": args.clock_ns, "layers": [r]},
                           strip=ROOT)
    try:
        for name in todo:                     # the RTL runs first, then one liberty at a time
            r = earlier.get(name)
            if r is None and not args.no_run:
                lay = lay_of(name)
                print(f"layers: {name} ({len(lay.requests):,} requests on {lay.unit}) RTL",
                      file=sys.stderr, flush=True)
                r = rtl_part(lay, args.sim)
                save(r)
            if r is not None:
                results[name] = r
        for lib in libs:
            for name, r in results.items():
                if not r["ok"] or args.no_run:
                    continue
                if lib not in r["energy"]:
                    print(f"layers: {name} energy on {lib}", file=sys.stderr, flush=True)
                    energy_part(lay_of(name), r, lib, args.clock_ns, args.windows)
                    save(r)
                elif lib not in r.get("windows", {}) and args.windows >= 2:
                    r.setdefault("windows", {}).update(stream_windows(
                        lay_of(name), [lib], args.clock_ns, args.windows))
                    save(r)
    except ParamError as e:
        _bad(str(e))
    except ToolError as e:
        print(f"layers: {e}", file=sys.stderr)
        return 1
    results = [results[n] for n in todo if n in results]
    wall = None if args.no_run else time.monotonic() - t0
    text = report(results, libs, notes, args, wall)
    out = Path(args.out)
    write_report(out, text, {"size": args.size, "libs": libs, "notes": notes,
                             "clock_ns": args.clock_ns, "layers": results}, strip=ROOT)
    print(f"layers: wrote {out}", file=sys.stderr)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
