"""Whole binarized layers on ``bnn_layer`` (issue 42): request streams, one stream run through
the shared harness (tcgen.verify.bench_config.run_stream, the generic stream bench), and the
decoding of its outputs.  Used by tb/test_bmma_rtl.py and by reports/layers.md (gate-level
activity of the exact run: :func:`run_resnet_block` returns the stimulus it drove).

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

__all__ = ["BlockRun", "bn_params", "block_params", "layer_stream", "conv_requests",
           "decode_conv", "run_conv", "run_resnet_block", "fc_requests", "run_fc",
           "cycle_drive", "schedule_gaps"]


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


def bn_params(rng, o):
    """Random BN parameters of ``o`` channels, channel 0 with γ < 0 and channel 1 with γ = 0
    (the flipped and the constant sense)."""
    gamma = rng.normal(0, 1, o)
    gamma[0], gamma[1] = -abs(gamma[0]), 0.0
    return dict(mean=rng.normal(0, 20, o), var=rng.uniform(1, 300, o), eps=1e-5, gamma=gamma,
                beta=rng.normal(0, 1, o))


def block_params(k: int = 32, **kw) -> BnnLayerParams:
    """The top the basic block runs on: m8n8 (8 images, 8 output channels a tile), ``k`` bits
    per operation, s20 residual and saved v (every value of a ResNet-18 block fits s17)."""
    return BnnLayerParams(**{"m": 8, "n": 8, "k": k, "res_width": 20, "save": True, **kw})


def layer_stream(p, reqs, name, scenario="back_to_back", sim=None, **cfg):
    """``reqs`` through ``bnn_layer`` at ``p`` in one scenario of the stream bench (golden
    model on the accepted requests, scoreboard).  Returns (summary, output payloads)."""
    from tcgen.verify.bench_config import run_stream
    s = run_stream("bnn_layer", p, {"req__payload": np.array(reqs, dtype=object)}, name=name,
                   scenarios=(scenario,), sim=sim, **cfg)
    (out,) = json.loads(Path(s[f"{scenario}_observed"]).read_text()).values()
    return s, [int(x) for x in out]


def _windows(h, pool):
    """Output pixels in issue order: row-major without pooling; window by window (ceil mode,
    row-major inside) with a pool × pool OR-pool.  Returns [(pixels of the window)]."""
    if pool == 1:
        return [[(py, px)] for py in range(h) for px in range(h)]
    n = -(-h // pool)
    return [[(wy * pool + i, wx * pool + j) for i in range(pool) for j in range(pool)
             if wy * pool + i < h and wx * pool + j < h] for wy in range(n) for wx in range(n)]


def conv_requests(p, inp, w, tau, sense, residual=None, pool: int = 1):
    """The request stream of one 3×3 stride-1 binarized convolution (pad 1) on ``bnn_layer``:
    per output pixel, per output-channel tile of n (with ``pool``: per window, per tile, the
    window's pixels, so that the tiles of one window and channel tile are consecutive), the
    in-frame taps' ⌈C/K⌉ chunks chained (A = the m images' C bits at the tap, zero-padded to
    K; B = the filter's tap), the last emitting with the tile's side data: k_eff = C·taps,
    τ and sense of its n channels, the residual (m images × n channels; res_pool: 4 each),
    last = the pixel closes its pool window.  Returns (requests, chains): chains = operations
    per tile, in order (= throughput.layer_chains without pooling)."""
    h, _, imgs, c = inp.shape
    o = w.shape[3]
    if imgs != p.m or o % p.n:
        raise ValueError(f"bnn_layer run: images must be m = {p.m} and output channels a "
                         f"multiple of n = {p.n}, got {imgs} and {o}")
    chunks = -(-c // p.k)
    reqs, chains = [], []
    for window in _windows(h, pool):
        for ot in range(o // p.n):                  # a window's pixels consecutive per tile:
            sl = slice(ot * p.n, (ot + 1) * p.n)     # each row pools one image's n channels
            for wi, (py, px) in enumerate(window):
                taps = [(dy, dx) for dy in range(3) for dx in range(3)
                        if 0 <= py + dy - 1 < h and 0 <= px + dx - 1 < h]
                res = None if residual is None else residual[py, px][:, sl]
                steps = [(t, s) for t in taps for s in range(chunks)]
                chains.append(len(steps))
                for i, ((dy, dx), s) in enumerate(steps):
                    a = np.zeros((p.m, p.k), np.uint8)
                    part = inp[py + dy - 1, px + dx - 1][:, s * p.k:(s + 1) * p.k]
                    a[:, :part.shape[1]] = part
                    b = np.zeros((p.k, p.n), np.uint8)
                    wp = w[dy, dx][s * p.k:(s + 1) * p.k, sl]
                    b[:wp.shape[0]] = wp
                    reqs.append(bf.layer_request(
                        p, a, b, chain=i > 0, emit=i == len(steps) - 1, k_eff=c * len(taps),
                        tau=tau[sl], sense=sense[sl], residual=res,
                        last=wi == len(window) - 1))
    return reqs, chains


def decode_conv(p, out, h, o, pool: int = 1):
    """Output payloads of :func:`conv_requests`' stream -> (bits (P, Q, m, O), saved v
    (P, Q, m, O) or None): one output per closed window, tile and image, in issue order."""
    n_win = -(-h // pool)
    bits = np.array([bf.layer_result(p, y) for y in out]).reshape(n_win, n_win, o // p.n,
                                                                 p.m, p.n)
    bits = bits.transpose(0, 1, 3, 2, 4).reshape(n_win, n_win, p.m, o)
    if not p.save:
        return bits, None
    v = np.array([bf.layer_saved(p, y) for y in out]).reshape(n_win, n_win, o // p.n, p.m, p.n)
    return bits, v.transpose(0, 1, 3, 2, 4).reshape(n_win, n_win, p.m, o)


def cycle_drive(p, reqs, chains) -> dict:
    """The inputs of ``bnn_layer`` cycle by cycle in a back-to-back run of ``reqs`` (tiles of
    ``chains`` operations): {"req__payload", "req__valid", "out__ready": one value a cycle},
    cycle 0 = the first request offered, until the last output is taken.  A request is
    offered (valid high, payload held) from the cycle after the previous one was accepted to
    the cycle it is (throughput.layer_top_schedule; its gaps are checked against the bench's
    issue intervals and its length against the bench's cycles); after the last, valid is low
    and the payload holds.  For gate-level activity of the exact run (the ppa flow's
    ``workload``: {input port: n values})."""
    accepts, cycles = tp.layer_top_schedule(chains, p.m, p.fold)
    payload, valid = [], []
    r = 0
    for c in range(cycles):
        while r < len(reqs) and accepts[r] < c:
            r += 1
        payload.append(int(reqs[min(r, len(reqs) - 1)]))
        valid.append(int(r < len(reqs)))
    return {"req__payload": np.array(payload, dtype=object),
            "req__valid": np.array(valid, dtype=np.uint64),
            "out__ready": np.ones(cycles, dtype=np.uint64)}


def schedule_gaps(p, chains) -> list[int]:
    """Sorted unique gaps between accepted requests in the back-to-back schedule (the stream
    bench's ``issue_intervals``)."""
    accepts, _ = tp.layer_top_schedule(chains, p.m, p.fold)
    return sorted({b - a for a, b in zip(accepts, accepts[1:])})


def run_conv(p, inp, w, bn, name, residual=None, pool: int = 1, scenario="back_to_back",
             sim=None, **cfg):
    """One convolution on RTL: returns (bits, v, run dict as in :class:`BlockRun`)."""
    h, c, o = inp.shape[0], inp.shape[3], w.shape[3]
    tau, sense = bm.bn_threshold(**bn)
    reqs, chains = conv_requests(p, inp, w, tau, sense, residual, pool)
    s, out = layer_stream(p, reqs, name, scenario, sim, **cfg)
    bits, v = decode_conv(p, out, h, o, pool)
    ops = tp.layer_ops(tp.Layer("conv", c, o, h, 3), batch=p.m, tile=(p.m, p.n, p.k))["ops"]
    run = {"name": name, "params": p, "scenario": scenario,
           "stimulus": {"req__payload": np.array(reqs, dtype=object)},
           "cycles": s[f"{scenario}_cycles"], "ops": len(reqs), "model_ops": ops,
           "model_cycles": tp.layer_top_cycles(chains, p.m, p.fold),
           "array_cycles": ops * p.fold + 1,
           "issue_intervals": s[f"{scenario}_issue_intervals"],
           "model_intervals": schedule_gaps(p, chains),
           "drive": cycle_drive(p, reqs, chains) if scenario == "back_to_back" else None,
           "checks": {"scoreboard": s["mismatches"] == 0 and s[f"{scenario}_inputs"] == len(reqs),
                      "ops": len(reqs) == ops}}
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
    rng = np.random.default_rng(rng_seed)
    x = rng.integers(0, 2, (h, h, p.m, c), dtype=np.uint8)
    r_in = rng.integers(-60, 61, (h, h, p.m, c))          # the previous block's saved v
    w1 = rng.integers(0, 2, (3, 3, c, c), dtype=np.uint8)
    w2 = rng.integers(0, 2, (3, 3, c, c), dtype=np.uint8)
    bn1, bn2 = bn_params(rng, c), bn_params(rng, c)
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


def fc_requests(p, inp, w, tau, sense):
    """The request stream of one binarized fully connected layer (``inp`` (m, K_in) bits,
    ``w`` (K_in, N_out) bits) on ``bnn_layer``: per output tile of n, the ⌈K_in/K⌉ chunks
    chained, the last emitting with k_eff = K_in and the tile's τ/sense (no residual, last
    on every tile).  Returns (requests, chains)."""
    k_in, n_out = w.shape
    chunks, n_t = -(-k_in // p.k), -(-n_out // p.n)
    ip = np.zeros((p.m, chunks * p.k), np.uint8)
    ip[:, :k_in] = inp
    wp = np.zeros((chunks * p.k, n_t * p.n), np.uint8)
    wp[:k_in, :n_out] = w
    tp_, sp_ = np.zeros(n_t * p.n, np.int64), np.zeros(n_t * p.n, np.int64)
    tp_[:n_out], sp_[:n_out] = tau, sense
    reqs = [bf.layer_request(p, ip[:, p.k * s:p.k * (s + 1)],
                             wp[p.k * s:p.k * (s + 1), p.n * t:p.n * (t + 1)], chain=s > 0,
                             emit=s == chunks - 1, k_eff=k_in, tau=tp_[p.n * t:p.n * (t + 1)],
                             sense=sp_[p.n * t:p.n * (t + 1)], last=True)
            for t in range(n_t) for s in range(chunks)]
    return reqs, [chunks] * n_t


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
    run = {"name": name, "params": p, "scenario": scenario,
           "stimulus": {"req__payload": np.array(reqs, dtype=object)},
           "cycles": s[f"{scenario}_cycles"], "ops": len(reqs), "model_ops": ops,
           "model_cycles": tp.layer_top_cycles(chains, p.m, p.fold),
           "array_cycles": ops * p.fold + 1,
           "issue_intervals": s[f"{scenario}_issue_intervals"],
           "model_intervals": schedule_gaps(p, chains),
           "drive": cycle_drive(p, reqs, chains) if scenario == "back_to_back" else None,
           "checks": {"scoreboard": s["mismatches"] == 0 and s[f"{scenario}_inputs"] == len(reqs),
                      "ops": len(reqs) == ops}}
    return bits, run
