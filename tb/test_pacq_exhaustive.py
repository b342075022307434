"""Exhaustive pacq_mul sweep (slow): all 65,536 FP16 activations × 16 INT4 words + 4 INT2 words
that put every code in every lane (1,310,720 vectors per configuration), for every output mode
and both rounding modes, RTL vs golden model.

cocotb 2.1 needs Verilator >= 5.036 (tcgen/verify/harness.py refuses 5.006), and Icarus through
cocotb runs
~1,000 vectors/s on this unit, so this sweep drives the harness's Verilog with a plain Verilog
testbench compiled by ``verilator --binary`` (≈ 10^6 vectors/s) that writes every output; the
comparison against the golden model is done here in Python.  Results go to
reports/pacq_exhaustive.md.

Run: ``.venv/bin/pytest -m slow tb/test_pacq_exhaustive.py`` (or ``make test-slow``).
"""
from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from tcgen.verify import harness
from tcgen.registry import get_unit
from tcgen.verify.stimulus import WORDS2, WORDS4

CONFIGS = [dict(), dict(rounding="rtz"), dict(mode="exact"), dict(mode="offset8"),
           dict(mode="literal", rounding="rtz")]
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "exhaustive"
REPORT = ROOT / "reports" / "pacq_exhaustive.md"


def _outputs(comp):
    from amaranth import Shape
    return [(k, Shape.cast(v.shape).width)
            for k, v in comp.signature.members.items() if v.flow.name == "Out"]


def _testbench(outs, n_words):
    decl = "\n".join(f"  wire [{w - 1}:0] {k};" for k, w in outs)
    conns = ", ".join(f".{k}({k})" for k, _ in outs)
    fmt = " ".join("%h" for _ in outs)
    args = ", ".join(k for k, _ in outs)
    return f"""`timescale 1ns/1ps
module tb;
  reg [15:0] a; reg [15:0] w; reg int2;
  reg [16:0] words [0:{n_words - 1}];
{decl}
  integer i, j, fd;
  pacq_mul dut(.a(a), .w(w), .int2(int2), {conns});
  initial begin
    $readmemh("words.hex", words);
    fd = $fopen("out.txt", "w");
    for (j = 0; j < {n_words}; j = j + 1) begin
      for (i = 0; i < 65536; i = i + 1) begin
        a = i[15:0]; w = words[j][15:0]; int2 = words[j][16];
        #1;
        $fwrite(fd, "{fmt}\\n", {args});
      end
    end
    $fclose(fd);
    $finish;
  end
endmodule
"""


@pytest.mark.slow
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(
    f"{k}={v}" for k, v in c.items()) or "default")
def test_pacq_mul_exhaustive(cfg):
    if shutil.which("verilator") is None:
        pytest.skip("verilator not installed")
    unit = get_unit("pacq_mul")
    p = unit.params(**cfg)
    comp = unit.component(p)
    outs = _outputs(comp)
    words = [(0, w) for w in WORDS4] + [(1, w) for w in WORDS2]
    d = OUT / p.key()
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    src = harness.verilog_file("pacq_mul", p, top="pacq_mul")
    (d / "tb.v").write_text(_testbench(outs, len(words)))
    (d / "words.hex").write_text("".join(f"{(i2 << 16) | w:05x}\n" for i2, w in words))
    t0 = time.time()
    subprocess.run(["verilator", "--binary", "-Wno-fatal", "-O2", "--top-module", "tb",
                    "tb.v", str(src), "-o", "simv"], cwd=d, check=True, capture_output=True)
    t_build = time.time() - t0
    t0 = time.time()
    subprocess.run(["./obj_dir/simv"], cwd=d, check=True, capture_output=True)
    t_sim = time.time() - t0
    t0 = time.time()
    lines = (d / "out.txt").read_text().split("\n")[:-1]
    n = len(words) * 65536
    assert len(lines) == n
    a = np.tile(np.arange(65536, dtype=np.uint64), len(words))
    w = np.repeat(np.array([x for _, x in words], dtype=np.uint64), 65536)
    int2 = np.repeat(np.array([s for s, _ in words], dtype=np.uint64), 65536)
    expected = unit.golden(p, a=a, w=w, int2=int2)
    cols = list(zip(*(ln.split() for ln in lines)))
    bad_any = np.zeros(n, bool)
    for (k, _), col in zip(outs, cols):
        got = np.array([int(x, 16) for x in col], dtype=object)
        bad = got != np.asarray(expected[k]).astype(object)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            print(f"first mismatch {k}: a=0x{int(a[i]):04x} w=0x{int(w[i]):04x} "
                  f"int2={int(int2[i])}: got 0x{int(got[i]):x} "
                  f"expected 0x{int(expected[k][i]):x}")
        bad_any |= bad
    mismatches = int(bad_any.sum())
    t_check = time.time() - t0
    _record(p, n, mismatches, t_build, t_sim, t_check)
    (d / "out.txt").unlink()
    assert mismatches == 0


def _record(p, n, mismatches, t_build, t_sim, t_check):
    res_file = OUT / "results.json"
    res = json.loads(res_file.read_text()) if res_file.exists() else {}
    res[p.key()] = {"params": p.as_dict(), "vectors": n, "mismatches": mismatches,
                    "build_s": round(t_build, 1), "sim_s": round(t_sim, 2),
                    "check_s": round(t_check, 1),
                    "date": datetime.date.today().isoformat()}
    res_file.write_text(json.dumps(res, indent=1, sort_keys=True))
    ver = subprocess.run(["verilator", "--version"], capture_output=True, text=True).stdout
    rows = "\n".join(
        f"| {r['params']['mode']} | {r['params']['rounding']} | {r['vectors']:,} | "
        f"{r['mismatches']} | {r['build_s']} | {r['sim_s']} | {r['check_s']} | {r['date']} |"
        for _, r in sorted(res.items()))
    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text(f"""# pacq_mul exhaustive sweep (RTL vs golden model)

Regenerate: `.venv/bin/pytest -m slow -n 2 tb/test_pacq_exhaustive.py` (appends/updates rows).

Every FP16 activation (65,536 encodings: ±0, subnormals, normals, ±inf, NaNs) × 16 INT4 words
(lane j of word t = (t + 5j) mod 16: every code in every lane, lanes distinct) and 4 INT2 words
(lane j of word t = (t + j) mod 4), on the `wbits=both` hardware with `int2` switching between
them: {n:,} vectors per configuration.  The harness's Verilog is driven by a plain Verilog
testbench compiled with {ver.strip()} (`--binary`; cocotb 2.1 needs Verilator >= 5.036), and
every output port is compared with `tcgen.units.pacq.model` (via the registry) in Python.

| mode | rounding | vectors | mismatches | verilator build s | sim s | check s | date |
|---|---|---|---|---|---|---|---|
{rows}
""")
