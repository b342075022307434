"""The batch bench (tcgen/verify/batch.py): vectors checked inside the simulation, chunk by chunk.

Runs on the generated wrapper ``tcgen_batch``.  For each chunk: the stimulus (from the source
in ``TCGEN_BATCH``: a saved stimulus file or an exhaustive operand-pair range) and the golden
model's expected outputs are written as binary port files, ``go`` is toggled, and the bench
waits for ``done``; the counts and the first mismatches are read back.  The next chunk's
stimulus and expected values are computed in a worker thread while the simulator runs (numpy
releases the GIL), so the model and the simulation overlap.
"""
from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cocotb
import numpy as np
from cocotb.triggers import Timer

from tcgen.verify import coverage
from tcgen.verify.batch import (MAXMIS, SLICE, bitslice_shape, chunks_of, from_plane_word,
                                shape_of, to_planes, write_raw, write_words)
from tcgen.verify.drivers import Context


def _expected(ctx, shape, stim: dict) -> dict:
    if shape.is_stream:
        kwargs = {f"{k}__payload": v for k, v in stim.items()}
        out = ctx.unit.golden(ctx.params, **kwargs)
        return {k.removesuffix("__payload"): np.asarray(v) for k, v in out.items()}
    return ctx.unit.golden(ctx.params, **stim)


@cocotb.test()
async def batch(dut):
    ctx = Context.from_env()
    cfg = json.loads(os.environ["TCGEN_BATCH"])
    comp = ctx.unit.interface(ctx.params)
    shape = shape_of(comp)
    run_dir = Path(ctx.run_dir)
    lanes, words = cfg["lanes"], cfg["lanes"] * cfg["depth"]
    ins = [s for s in shape.streams if s.flow == "In"] if shape.is_stream else shape.inputs()
    outs = [s for s in shape.streams if s.flow == "Out"] if shape.is_stream else shape.outputs()
    sliced = bool(cfg.get("bitslice"))          # 64 vectors per memory word (tcgen/verify/batch.py)
    if sliced:
        bitslice_shape(shape)                   # combinational units only
    src = chunks_of(cfg["source"], ctx, words * (SLICE if sliced else 1))

    corrupt = sorted(int(i) for i in cfg.get("corrupt", ()))   # bench self-test: wrong
    #                                  expectations at these output indices must be reported

    def prepare(item):
        t0 = time.perf_counter()
        stim, offset = item
        if sliced:                               # pad to whole groups with copies of vector 0
            n = len(next(iter(stim.values())))
            pad = (-n) % SLICE
            stim = {k: np.concatenate([np.asarray(v, np.uint64),
                                       np.full(pad, np.asarray(v, np.uint64)[0])])
                    for k, v in stim.items()}
            stim["__n"] = n
        exp = _expected(ctx, shape, {k: v for k, v in stim.items() if k != "__n"})
        n_real = stim.get("__n")                  # coverage of the real vectors (not the pad)
        coverage.sample(ctx.unit.name, ctx.params,
                        {k: v[:n_real] for k, v in stim.items() if k != "__n"},
                        {k: v[:n_real] for k, v in exp.items()})
        for i in corrupt:
            for p in outs:
                if offset <= i < offset + len(exp[p.name]):
                    e = np.array(exp[p.name], copy=True)
                    e[i - offset] = type(e[i - offset])(int(e[i - offset]) ^ 1)
                    exp[p.name] = e
                    break
        return stim, offset, exp, time.perf_counter() - t0

    totals = {"vectors": 0, "checked": 0, "mismatches": 0, "cycles": 0, "chunks": 0,
              "model_s": 0.0, "sim_s": 0.0, "io_s": 0.0}
    first: list[dict] = []
    dut.stall.value = int(round(cfg.get("stall", 0.0) * 256))
    dut.seed.value = int(cfg.get("seed", 1))
    pool = ThreadPoolExecutor(1)
    it = iter(src)
    nxt = next(it, None)
    fut = pool.submit(prepare, nxt) if nxt is not None else None
    while fut is not None:
        stim, offset, exp, model_s = fut.result()
        t0 = time.perf_counter()
        n_in = {p.name: len(stim[p.name]) for p in ins}
        n = max(n_in.values()) if n_in else 0
        n_out = {}
        if sliced:
            for p in ins:
                write_raw(run_dir / f"{p.name}.bin", to_planes(stim[p.name], p.width))
            for p in outs:
                write_raw(run_dir / f"{p.name}.bin", to_planes(exp[p.name], p.width))
            groups, n = n // SLICE, stim["__n"]
        for p in ([] if sliced else ins):
            write_words(run_dir / f"{p.name}.bin", stim[p.name], p.width)
        for p in ([] if sliced else outs):
            e = exp[p.name]
            n_out[p.name] = len(e)
            if len(e) > words:
                raise AssertionError(f"batch: {len(e)} expected items exceed the depth {words}")
            write_words(run_dir / f"{p.name}.bin", e, p.width)
        if shape.is_stream:
            counts = [n_in[p.name] for p in ins] + [n_out[p.name] for p in outs]
            write_words(run_dir / "counts.bin", np.array(counts, np.uint64), 32)
            limit = cfg.get("max_cycles") or 50 * (max(counts) + 1) * max(1, shape.latency + 1)
            dut.max_cycles.value = int(limit)
        dut.n.value = groups if sliced else n
        io_s = time.perf_counter() - t0
        nxt = next(it, None)                          # overlap: the next chunk's model
        fut = pool.submit(prepare, nxt) if nxt is not None else None
        t1 = time.perf_counter()
        await Timer(1, "ns")
        dut.go.value = int(not int(dut.go.value))
        await dut.done.value_change
        sim_s = time.perf_counter() - t1
        checked, mism = int(dut.checked.value), int(dut.mismatches.value)
        if sliced:        # the wrapper counts groups of 64: vectors checked, mismatching groups
            checked = n if checked == groups else checked * SLICE
            totals["mismatching_groups"] = totals.get("mismatching_groups", 0) + mism
        expected_total = sum(n_out.values()) if shape.is_stream else n
        totals["vectors"] += n
        totals["checked"] += checked
        totals["mismatches"] += mism + max(0, expected_total - checked)   # sliced: groups
        totals["cycles"] += int(dut.cycles.value)
        totals["chunks"] += 1
        totals["model_s"] += model_s
        totals["sim_s"] += sim_s
        totals["io_s"] += io_s
        if checked != expected_total:
            dut._log.error(f"chunk at {offset}: checked {checked} of {expected_total} outputs "
                           f"(cycle limit hit?)")
        for k in range(min(mism, MAXMIS)):
            if len(first) >= cfg.get("max_report", 10):
                break
            i, lane, port = (int(dut.mis_index[k].value), int(dut.mis_lane[k].value),
                             int(dut.mis_port[k].value))
            got = dut.mis_got[k].value
            got = int(got) if got.is_resolvable else str(got)
            o = outs[port]
            if sliced:                            # the group's 64 vectors: which differ
                vals = from_plane_word(got, o.width)
                bad = [g for g in range(SLICE) if i * SLICE + g < n and
                       int(vals[g]) != int(exp[o.name][i * SLICE + g])]
                for g in bad[:max(0, cfg.get("max_report", 10) - len(first))]:
                    j = i * SLICE + g
                    rec = {"index": offset + j, "output": o.name, "got": hex(int(vals[g])),
                           "expected": hex(int(exp[o.name][j])),
                           "inputs": {p.name: hex(int(stim[p.name][j])) for p in ins}}
                    first.append(rec)
                    dut._log.error(f"mismatch: {rec}")
                continue
            rec = {"index": offset + i, "output": o.name,
                   "got": hex(got) if isinstance(got, int) else got,
                   "expected": hex(int(exp[o.name][i]))}
            if not shape.is_stream:
                rec["inputs"] = {p.name: hex(int(stim[p.name][i])) for p in ins}
            first.append(rec)
            dut._log.error(f"mismatch: {rec}")
    pool.shutdown()
    coverage.save(ctx.run_dir, "batch")
    totals = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in totals.items()}
    ctx.write_summary(**totals, first_mismatches=first, lanes=lanes, depth=cfg["depth"])
    dut._log.info(f"batch: {totals}")
    want = len({i // SLICE for i in corrupt}) if sliced else len(corrupt)
    assert totals["mismatches"] == want, \
        f"{totals['mismatches']} of {totals['checked']} outputs differ from the model" + \
        (f" ({len(corrupt)} corrupted on purpose)" if corrupt else "")
    assert totals["vectors"] > 0, "batch: the source produced no vectors"
