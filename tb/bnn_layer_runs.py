"""Whole binarized layers on ``bnn_layer`` (issue 42) run on RTL: one request stream through
the shared harness (tcgen.verify.bench_config.run_stream, the generic stream bench) and the
checks of its outputs and cycles.  The streams themselves (requests from numpy operands, the
decoding of their outputs, the block's seeded operands, the inputs cycle by cycle) are the
family's (:mod:`tcgen.units.bmma.stream`).  Used by tb/test_bmma_rtl.py;
the end-to-end layer of reports/layers.md is tcgen.layers' ``bmma``.

Layouts: an input map is (H, W, images, C) bits (HWNC), a filter (3, 3, C, O) bits (KKCO), a
residual or saved map (H, W, images, O) integers; images = the array's m (one batch tile).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import numpy as np

from tcgen.units.bmma import family as bf
from tcgen.units.bmma import model as bm
from tcgen.units.bmma import throughput as tp
from tcgen.units.bmma.params import BnnLayerParams
from tcgen.units.bmma.stream import (block_operands, block_params, conv_requests, cycle_drive,
                                     decode_conv, fc_requests, schedule_gaps)

__all__ = ["BlockRun", "layer_stream", "run_conv", "run_resnet_block", "run_fc"]


class BlockRun(NamedTuple):
    """What :func:`run_resnet_block` returns: ``ok`` (every output equal to the golden model
    and to the float64 reference), ``cycles`` (both convolutions' stream cycles, first request
    offered .. last output taken, summed) and ``runs``: per convolution a dict {name, params
    (BnnLayerParams), stimulus ({"req__payload": object array of request payloads}: exactly
    what the harness drove, in order, valid every cycle), scenario, cycles, model_cycles
    (throughput.layer_top_cycles), array_cycles (the array alone), ops (requests), model_ops
    (throughput.layer_ops), issue_intervals (the bench's) and model_intervals (the schedule's),
    drive (back_to_back: :func:`cycle_drive`, the inputs cycle by cycle), checks ({name:
    bool})}."""
    ok: bool
    cycles: int
    runs: list


def layer_stream(p, reqs, name, scenario="back_to_back", sim=None, **cfg):
    """``reqs`` through ``bnn_layer`` at ``p`` in one scenario of the stream bench (golden
    model on the accepted requests, scoreboard).  Returns (summary, output payloads)."""
    from tcgen.verify.bench_config import run_stream
    s = run_stream("bnn_layer", p, {"req__payload": np.array(reqs, dtype=object)}, name=name,
                   scenarios=(scenario,), sim=sim, **cfg)
    (out,) = json.loads(Path(s[f"{scenario}_observed"]).read_text()).values()
    return s, [int(x) for x in out]


def _run_dict(p, name, scenario, reqs, chains, s, ops) -> dict:
    """The run dict of :class:`BlockRun` for ``reqs`` (tiles of ``chains`` operations) run in
    ``scenario`` (the stream bench's summary ``s``), ``ops`` the throughput model's count."""
    return {"name": name, "params": p, "scenario": scenario,
            "stimulus": {"req__payload": np.array(reqs, dtype=object)},
            "cycles": s[f"{scenario}_cycles"], "ops": len(reqs), "model_ops": ops,
            "model_cycles": tp.layer_top_cycles(chains, p.m, p.fold),
            "array_cycles": ops * p.fold + 1,
            "issue_intervals": s[f"{scenario}_issue_intervals"],
            "model_intervals": schedule_gaps(p, chains),
            "drive": cycle_drive(p, reqs, chains) if scenario == "back_to_back" else None,
            "checks": {"scoreboard": s["mismatches"] == 0 and
                       s[f"{scenario}_inputs"] == len(reqs), "ops": len(reqs) == ops}}


def run_conv(p, inp, w, bn, name, residual=None, pool: int = 1, scenario="back_to_back",
             sim=None, **cfg):
    """One convolution on RTL: returns (bits, v, run dict as in :class:`BlockRun`)."""
    h, c, o = inp.shape[0], inp.shape[3], w.shape[3]
    tau, sense = bm.bn_threshold(**bn)
    reqs, chains = conv_requests(p, inp, w, tau, sense, residual, pool)
    s, out = layer_stream(p, reqs, name, scenario, sim, **cfg)
    bits, v = decode_conv(p, out, h, o, pool)
    ops = tp.layer_ops(tp.Layer("conv", c, o, h, 3), batch=p.m, tile=(p.m, p.n, p.k))["ops"]
    run = _run_dict(p, name, scenario, reqs, chains, s, ops)
    return bits, v, run


def run_resnet_block(h: int = 3, c: int = 8, p: BnnLayerParams | None = None,
                     rng_seed: int = 585, scenario: str = "back_to_back", sim=None,
                     **cfg) -> BlockRun:
    """One binarized ResNet-18 basic block end to end on ``bnn_layer`` (RTL): 8 images (m),
    an h×h map of c channels, conv3×3 c→c + BN + sign (the top thresholds; its saved v
    unused), then conv3×3 c→c on the first conv's RTL bits + the identity residual (the
    previous block's saved integer v, random here) + BN + sign, saving v (the next block's
    residual).  Checked against float64 conv + residual + BN + sign (and the saved v against
    the exact float64 sum); cycles against throughput.layer_top_cycles.  ``p``: default
    :func:`block_params` (m8n8k32); ``scenario``/``cfg``: the stream bench's (back_to_back:
    valid and ready always high).  Returns :class:`BlockRun` (ok, cycles, runs)."""
    p = p or block_params()
    ops = block_operands(h, c, p.m, rng_seed)
    x, r_in, w1, w2, bn1, bn2 = (ops[k] for k in ("x", "r_in", "w1", "w2", "bn1", "bn2"))
    res_shape = (h, h, p.m, c, 4) if p.res_pool else (h, h, p.m, c)
    zero = np.zeros(res_shape, np.int64) if p.res_width else None
    r2 = (np.repeat(r_in[..., None], 4, -1) if p.res_pool else r_in) if p.res_width else None
    bits1, _, run1 = run_conv(p, x, w1, bn1, "block_conv1", zero, 1, scenario, sim, **cfg)
    ref1 = bm.conv_pm1_reference(x, w1)
    run1["checks"]["bits"] = bool(np.array_equal(bits1, bm.bn_sign_reference(ref1, **bn1)))
    bits2, v2, run2 = run_conv(p, bits1, w2, bn2, "block_conv2", r2, 1, scenario, sim, **cfg)
    ref2 = bm.conv_pm1_reference(bits1, w2) + (r_in if p.res_width else 0)
    run2["checks"]["bits"] = bool(np.array_equal(bits2, bm.bn_sign_reference(ref2, **bn2)))
    run2["checks"]["not_constant"] = bool(0 < bits2.sum() < bits2.size)
    if p.save:
        run2["checks"]["saved_v"] = bool(np.array_equal(v2, ref2))
    runs = [run1, run2]
    ok = all(all(r["checks"].values()) for r in runs)
    return BlockRun(ok, sum(r["cycles"] for r in runs), runs)


def run_fc(p, inp, w, bn, name, scenario="back_to_back", sim=None, **cfg):
    """One hidden FC layer on RTL: returns (bits (m, N_out), run dict as in :class:`BlockRun`)."""
    k_in, n_out = w.shape
    tau, sense = bm.bn_threshold(**bn)
    reqs, chains = fc_requests(p, inp, w, tau, sense)
    s, out = layer_stream(p, reqs, name, scenario, sim, **cfg)
    n_t = -(-n_out // p.n)
    bits = np.array([bf.layer_result(p, y) for y in out]).reshape(n_t, p.m, p.n)
    bits = bits.transpose(1, 0, 2).reshape(p.m, n_t * p.n)[:, :n_out]
    ops = tp.layer_ops(tp._fc(k_in, n_out), batch=p.m, tile=(p.m, p.n, p.k))["ops"]
    run = _run_dict(p, name, scenario, reqs, chains, s, ops)
    return bits, run
