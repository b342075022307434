"""Whole binarized layers as ``bnn_layer`` request streams (issue 42), numpy only: the requests
of a 3×3 convolution or a fully connected layer from bit operands, the decoding of their
outputs, the seeded operands of a binarized ResNet-18 basic block, and the inputs of a
back-to-back run cycle by cycle from the throughput model's schedule.

The RTL runs of these streams are above the family (tb/bnn_layer_runs.py, tcgen.layers'
``bmma`` layer: the cocotb stream bench).

Layouts: an input map is (H, W, images, C) bits (HWNC), a filter (3, 3, C, O) bits (KKCO), a
residual or saved map (H, W, images, O) integers; images = the array's m (one batch tile).
"""
from __future__ import annotations

import numpy as np

from tcgen.hw.stimulus import held_stream

from . import family as bf
from . import model as bm
from . import throughput as tp
from .params import BnnLayerParams

__all__ = ["bn_params", "block_params", "block_operands", "conv_requests", "decode_conv",
           "fc_requests", "cycle_drive", "schedule_gaps"]


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


def block_operands(h: int, c: int, m: int, rng_seed: int) -> dict:
    """The seeded operands of one binarized basic block (h×h map, c → c channels, m images),
    drawn in this order from ``default_rng(rng_seed)``: x (h, h, m, c) bits, r_in (h, h, m, c)
    in [−60, 60] (the previous block's saved v: the identity residual), w1 and w2 (3, 3, c, c)
    bits, bn1 and bn2 (:func:`bn_params`)."""
    rng = np.random.default_rng(rng_seed)
    x = rng.integers(0, 2, (h, h, m, c), dtype=np.uint8)
    r_in = rng.integers(-60, 61, (h, h, m, c))
    w1 = rng.integers(0, 2, (3, 3, c, c), dtype=np.uint8)
    w2 = rng.integers(0, 2, (3, 3, c, c), dtype=np.uint8)
    bn1, bn2 = bn_params(rng, c), bn_params(rng, c)
    return {"x": x, "r_in": r_in, "w1": w1, "w2": w2, "bn1": bn1, "bn2": bn2}


def _windows(h, pool):
    """Output pixels in issue order: row-major without pooling; window by window (ceil mode,
    row-major inside) with a pool × pool OR-pool.  Returns [(pixels of the window)]."""
    if pool == 1:
        return [[(py, px)] for py in range(h) for px in range(h)]
    n = -(-h // pool)
    return [[(wy * pool + i, wx * pool + j) for i in range(pool) for j in range(pool)
             if wy * pool + i < h and wx * pool + j < h] for wy in range(n) for wx in range(n)]


def conv_requests(p, inp, w, tau, sense, residual=None, pool: int = 1, rows=None):
    """The request stream of one 3×3 stride-1 binarized convolution (pad 1) on ``bnn_layer``:
    per output pixel, per output-channel tile of n (with ``pool``: per window, per tile, the
    window's pixels, so that the tiles of one window and channel tile are consecutive), the
    in-frame taps' ⌈C/K⌉ chunks chained (A = the m images' C bits at the tap, zero-padded to
    K; B = the filter's tap), the last emitting with the tile's side data: k_eff = C·taps,
    τ and sense of its n channels, the residual (m images × n channels; res_pool: 4 each),
    last = the pixel closes its pool window.  ``rows``: only these output rows (pool = 1;
    None: all) -- a window of the stream, whole tiles.  Returns (requests, chains): chains =
    operations per tile, in order (= throughput.layer_chains without pooling)."""
    h, _, imgs, c = inp.shape
    o = w.shape[3]
    if imgs != p.m or o % p.n:
        raise ValueError(f"bnn_layer run: images must be m = {p.m} and output channels a "
                         f"multiple of n = {p.n}, got {imgs} and {o}")
    if rows is not None and pool != 1:
        raise ValueError("bnn_layer run: rows select output rows of an unpooled convolution")
    chunks = -(-c // p.k)
    reqs, chains = [], []
    for window in _windows(h, pool):
        if rows is not None and window[0][0] not in rows:
            continue
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


def decode_conv(p, out, h, o, pool: int = 1, rows: int | None = None):
    """Output payloads of :func:`conv_requests`' stream -> (bits (P, Q, m, O), saved v
    (P, Q, m, O) or None): one output per closed window, tile and image, in issue order.
    ``rows``: the number of output rows the stream has (a ``rows`` window of it; P = rows)."""
    n_win = -(-h // pool)
    n_rows = n_win if rows is None else rows

    def grid(vals):
        return np.array(vals).reshape(n_rows, n_win, o // p.n, p.m, p.n).transpose(
            0, 1, 3, 2, 4).reshape(n_rows, n_win, p.m, o)
    bits = grid([bf.layer_result(p, y) for y in out])
    if not p.save:
        return bits, None
    return bits, grid([bf.layer_saved(p, y) for y in out])


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


def cycle_drive(p, reqs, chains) -> dict:
    """The inputs of ``bnn_layer`` cycle by cycle in a back-to-back run of ``reqs`` (tiles of
    ``chains`` operations): {"req__payload", "req__valid", "out__ready": one value a cycle},
    cycle 0 = the first request offered, until the last output is taken.  A request is
    offered (valid high, payload held) from the cycle after the previous one was accepted to
    the cycle it is (throughput.layer_top_schedule; its gaps are checked against the bench's
    issue intervals and its length against the bench's cycles); after the last, valid is low
    and the payload holds (tcgen.hw.stimulus.held_stream).  For gate-level activity of the
    exact run (the ppa flow's ``workload``: {input port: n values})."""
    accepts, cycles = tp.layer_top_schedule(chains, p.m, p.fold)
    return held_stream(reqs, accepts, cycles, "req", "out")


def schedule_gaps(p, chains) -> list[int]:
    """Sorted unique gaps between accepted requests in the back-to-back schedule (the stream
    bench's ``issue_intervals``)."""
    accepts, _ = tp.layer_top_schedule(chains, p.m, p.fold)
    return sorted({b - a for a, b in zip(accepts, accepts[1:])})
