"""One end-to-end layer per paper (issue 42 §3; reports/layers.md, scripts/layers.py).

A :class:`Layer` is a real layer's request stream on one unit -- seeded operands of the real
shape (``size="full"``) or of a reduced one (``"reduced"``, make test) -- with what checks and
measures it:

* ``requests``: the payloads of the unit's input stream, in order (C chained through the golden
  model where the unit takes its accumulator from the request);
* ``expected``: the unit's golden model on the whole stream (the output payloads the RTL must
  give, bit for bit), and ``reference``: the layer computed by the family's layer-level model
  (GEMM-level, not per request) where one exists, which the tiles of ``expected`` must equal;
* ``interval``: the cycles a request is offered back to back (the unit's cycle model: the RTL
  run must show exactly this issue interval) -- or, for a unit whose interval is not constant
  (bnn_layer), ``chains`` and ``schedule``: the requests' D tiles and the cycle model giving the
  cycle each is accepted at (throughput.layer_top_schedule; the RTL run must show exactly its
  gaps and its cycles) -- so :meth:`Layer.trace` gives the cycle-by-cycle port stimulus of that
  run -- each payload held with valid high until it is accepted, the result stream always
  ready, then valid low until the last result (tcgen.hw.stimulus.held_stream) -- which drives
  the gate-level simulation of the mapped netlist (:func:`energy`, through :func:`tcgen.measure.measure`'s
  fixed ``stimulus``): energy per layer = the simulated power × the layer's cycles × the clock.

The RTL runs themselves (the cocotb stream bench, back to back) are made above this module
(tcgen.verify.layers.run_layer, used by tb/test_layers.py and scripts/layers.py): the
application layer's contract lets only tcgen.cli import tcgen.verify.

The five layers (:data:`LAYERS`; the baselines beside them in :data:`BASELINES`):

=========  ========================================================================  =========
name       layer                                                                     unit
=========  ========================================================================  =========
lut        LLaMA2-7B W2A16 GEMV tile: 64 outputs × K = 4096, one activation row      lut_array
sparse     GEMM tile 64×64×64, A 75 % vector-wise sparse (L = 16, K = 4: 4 of 16)    octet_sparse
           baseline: the same pruned GEMM run densely                                octet_dense
pacq       W4A16 GEMM tile m16 n16 k128 on the DP-4 stream                           dp4_pacq
           baseline: the same weights dequantized to FP16                            dp4_baseline
wino       ResNet-18 conv3_x (28×28, C = K = 128), F(2×2, 3×3) tiles (a window)      wino_conv
           baseline: the direct 3×3 convolution at equal DP-4 throughput            direct_conv3x3
bmma       binarized ResNet-18 basic block, conv2_x (56×56, C = 64, 8 images):       bnn_layer
           conv + BN + sign, conv + identity residual + BN + sign + save (a window)
=========  ========================================================================  =========

The BNN block's MACs are its useful binary multiply-accumulates (one 1-bit XNOR-popcount term
each: taps × images × C_out × C_in), K padding excluded.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import numpy as np

from tcgen.hw import numeric as num
from tcgen.hw.params import ParamError
from tcgen.hw.stimulus import held_stream, interval_accepts

from .measure import measure
from .registry import get_unit

__all__ = ["Layer", "LAYERS", "BASELINES", "SIZES", "layer", "energy", "energy_window",
           "UNBUILT"]

SIZES = ("reduced", "full")


@dataclass
class Layer:
    name: str                  # lut, sparse, sparse_dense, pacq, pacq_baseline
    title: str                 # what the layer is
    shape: str                 # its shape, as the report shows it
    unit: str
    params: dict
    size: str
    seed: int
    requests: np.ndarray       # input stream payloads (dtype object)
    in_stream: str
    out_stream: str
    interval: int | None       # cycles each request is offered back to back (None: schedule)
    macs: int                  # the layer's multiply-accumulates (dense equivalent)
    expected: np.ndarray       # the golden model's output payloads (dtype object)
    values_per_output: int     # numbers in one output payload
    reference: dict = field(default_factory=dict)   # layer-level model check (see module doc)
    notes: str = ""
    #: a layer too long to run whole: ``requests`` is a window of its stream, starting at
    #: request ``window_first`` of ``total_requests`` (None: the whole layer)
    total_requests: int | None = None
    window_first: int = 0
    #: a unit whose issue interval is not constant (bnn_layer): ``requests`` are D tiles of
    #: ``chains[j]`` consecutive requests and ``schedule(chains) -> (accepts, cycles)`` is the
    #: unit's cycle model of a back-to-back run of whole tiles -- the cycle each request is
    #: accepted at (the first offered at cycle 0) and the cycles first offered .. last result
    #: taken (throughput.layer_top_schedule); ``layer_chains``: the whole layer's tiles (for a
    #: window).  None: one request every ``interval`` cycles.
    chains: list | None = None
    schedule: Callable | None = None
    layer_chains: list | None = None
    #: a window made of several stretches of the layer's stream, in run order:
    #: [(first request, count)] (None: one stretch, from ``window_first``)
    window_spans: list | None = None
    #: the whole layer's MACs where they are not ``macs`` prorated by requests
    total_macs: int | None = None
    #: options of the PPA flow for the energy (tcgen.measure.measure's keywords, e.g. ABC's
    #: ``fraig_conflicts``), where the layer's netlist is one measured with them elsewhere
    flow: dict = field(default_factory=dict)

    @property
    def is_window(self) -> bool:
        return self.total_requests is not None and self.total_requests != len(self.requests)

    @property
    def layer_requests(self) -> int:
        return len(self.requests) if self.total_requests is None else self.total_requests

    @property
    def layer_macs(self) -> int:
        """The whole layer's MACs (``macs`` counts the requests in hand)."""
        if self.total_macs is not None:
            return self.total_macs
        return self.macs * self.layer_requests // len(self.requests)

    def layer_cycles(self, cycles: int) -> int:
        """The whole layer's cycles from the RTL run of ``requests`` (``cycles``): the
        requests not run, back to back at ``interval``, added -- or, on a schedule, the
        schedule's cycles of the whole layer less its cycles of the window."""
        if self.schedule is not None:
            if not self.is_window:
                return cycles
            return cycles + self.schedule(self.layer_chains)[1] - self.model_cycles()
        return cycles + (self.layer_requests - len(self.requests)) * self.interval

    def _tiles(self, first: int, n: int) -> list:
        """The chains of requests ``first`` .. ``first + n`` (ValueError unless whole tiles)."""
        starts = np.concatenate([[0], np.cumsum(self.chains)])
        i, j = np.searchsorted(starts, [first, first + n])
        if i >= len(starts) or j >= len(starts) or starts[i] != first or \
                starts[j] != first + n or n <= 0:
            raise ValueError(f"layer {self.name}: requests {first} .. {first + n - 1} are not "
                             "whole D tiles of the stream")
        return list(self.chains[i:j])

    def whole_tiles(self, first: int, count: int) -> tuple[int, int]:
        """(first, count) moved to whole tiles (the tile starting at or before ``first``, at
        least one tile, ending at or before ``first + count``); unchanged without a schedule."""
        if self.schedule is None:
            return first, count
        starts = [int(x) for x in np.concatenate([[0], np.cumsum(self.chains)])]
        a = max(s for s in starts[:-1] if s <= first)
        ends = [s for s in starts if a < s <= first + count]
        b = ends[-1] if ends else starts[starts.index(a) + 1]
        return a, b - a

    def accepts(self, first: int = 0, count: int | None = None) -> list[int]:
        """The cycle each of requests ``first`` .. ``first + count`` is accepted at when they
        are run on their own, back to back (the first offered at cycle 0): every ``interval``
        cycles, or the schedule's (whole tiles only)."""
        n = len(self.requests[first:None if count is None else first + count])
        if n == 0:
            raise ValueError(f"layer {self.name}: an empty window")
        if self.schedule is None:
            return interval_accepts(n, self.interval)
        return self.schedule(self._tiles(first, n))[0]

    def model_cycles(self) -> int | None:
        """The unit's cycle model of the run of ``requests`` (first offered .. last result
        taken), where it has one (a schedule); None for a constant interval (the RTL's latency
        is the unit's, not modelled here)."""
        if self.schedule is None:
            return None
        return self.schedule(self.chains)[1]

    def issue_gaps(self) -> list[int]:
        """The sorted distinct gaps between accepted requests the RTL run must show (the
        stream bench's ``issue_intervals``)."""
        if self.schedule is None:
            return [self.interval]
        acc = self.accepts()
        return sorted({b - a for a, b in zip(acc, acc[1:])})

    @property
    def spec(self):
        return get_unit(self.unit)

    def unit_params(self):
        return self.spec.params(**self.params)

    @property
    def values_checked(self) -> int:
        return len(self.expected) * self.values_per_output

    def min_cycles(self) -> int:
        """Cycles the requests take to be accepted back to back."""
        return self.accepts()[-1] + 1

    def trace(self, cycles: int | None = None, first: int = 0,
              count: int | None = None) -> dict:
        """The cycle-by-cycle port stimulus of requests ``first`` .. ``first + count`` run back
        to back: each payload on ``<in>__payload`` with ``<in>__valid`` high from the cycle
        after the previous one is accepted to the cycle it is (:meth:`accepts`: every
        ``interval`` cycles, or the schedule's), ``<out>__ready`` always high, then the last
        payload held with valid low up to ``cycles`` in all (default: the schedule's cycles of
        the whole stream, or the requests' cycles + 8); tcgen.hw.stimulus.held_stream."""
        reqs = self.requests[first:None if count is None else first + count]
        acc = self.accepts(first, count)
        if cycles is None:
            whole = self.schedule is not None and first == 0 and len(reqs) == len(self.requests)
            cycles = self.model_cycles() if whole else acc[-1] + 1 + 8
        return held_stream(reqs, acc, int(cycles), self.in_stream, self.out_stream)

    def check_outputs(self, observed) -> dict:
        """The RTL's output payloads against ``expected`` (bit for bit) and, where the layer
        has one, its layer-level reference: {outputs, values, mismatches, reference}."""
        got = [int(x) for x in observed]
        exp = [int(x) for x in self.expected]
        bad = sum(g != e for g, e in zip(got, exp)) + abs(len(got) - len(exp))
        return {"outputs": len(got), "values": len(got) * self.values_per_output,
                "mismatches": bad, "reference": dict(self.reference)}


# -- (a) LUT: a LLaMA2-7B-shaped W2A16 GEMV tile -----------------------------------------------
def _lut(size: str, seed: int) -> Layer:
    from tcgen.units.lut import model as lm
    from tcgen.units.lut.family import array_request, array_result
    n, k_total = (64, 4096) if size == "full" else (4, 64)
    unit = get_unit("lut_array")
    params = {"m": 1, "n": n}
    p = unit.params(**params)
    rng = np.random.default_rng(seed)
    A = num.from_float(rng.normal(0, 1, (1, k_total)), "fp16")          # one token's x
    Wq = rng.integers(0, 1 << p.w_bits, (n, k_total))                   # INT2 weight codes
    G = k_total // p.k
    reqs = []
    for g in range(G):
        T = lm.precompute(A[:, p.k * g:p.k * g + p.k], p.entry)
        sign, idx = lm.encode_plane(lm.bit_planes(Wq[:, p.k * g:p.k * g + p.k], p.w_bits))
        reqs.append(array_request(p, T, sign, idx, chain=g > 0, emit=g == G - 1))
    reqs = np.array(reqs, dtype=object)
    exp = unit.golden(p, req__payload=reqs)["d__payload"]
    d = num.to_float(np.concatenate([array_result(p, x) for x in exp]).astype(np.uint64),
                     p.acc)
    exact = num.to_float(A, "fp16") @ lm.reinterpret(Wq, p.w_bits).T.astype(np.float64)
    scale = np.abs(exact).max()
    ref = {"what": "float64 x·W′ᵀ (W′ = 2q − 3, the reinterpreted INT2 weights; the unit "
                   "accumulates in FP16)",
           "max_abs_err_vs_exact": float(np.abs(d - exact).max()),
           "max_abs_exact": float(scale)}
    return Layer(
        "lut", "LLaMA2-7B W2A16 GEMV tile (q_proj rows, batch 1)",
        f"1×{k_total} · {k_total}×{n} (x FP16, W INT2), {G} K-groups chained",
        "lut_array", params, size, seed, reqs, "req", "d", p.w_bits, n * k_total,
        np.asarray(exp, dtype=object), p.m * p.n, ref,
        notes="lut_array M1N%dK4 (the paper's M2N64K4 with the one activation row a GEMV has; "
              "FP16 tables and accumulator, W_INT2), tables precomputed from the activations "
              "(Gray-code network), D emitted once at the last K-group" % n)


# -- (b) Sparse: a 75 %-sparse GEMM tile, sparse octet vs dense octet --------------------------
def _sparse_operands(size: str, seed: int):
    from tcgen.units.sparse import model as sm
    M, N, K = (64, 64, 64) if size == "full" else (8, 16, 16)
    rng = np.random.default_rng(seed)
    W = rng.normal(0, 1, (M, K))
    enc = sm.encode(W, 16, 4)                                   # 4 of every 16 kept: 75 %
    B = num.from_float(rng.normal(0, 1, (K, N)), "fp16")
    return (M, N, K), enc, B


def _chain(unit, p, make, result, in_port, out_port, c0, steps):
    """Requests of one output tile chained through the golden model: ``make(step, c)`` the
    payload, ``result(p, payload)`` its D; returns (payloads, final D)."""
    c, reqs = c0, []
    for s in steps:
        r = make(s, c)
        reqs.append(r)
        c = result(p, unit.golden(p, **{in_port: np.array([r], dtype=object)})[out_port][0])
    return reqs, c


def _sparse(size: str, seed: int, dense: bool = False) -> Layer:
    from tcgen.units.sparse import model as sm
    from tcgen.units.sparse.family import (dense_request, dense_result, sparse_request,
                                           sparse_result)
    (M, N, K), enc, B = _sparse_operands(size, seed)
    name = "octet_dense" if dense else "octet_sparse"
    unit = get_unit(name)
    p = unit.params()
    zero = num.from_float(np.zeros((M, N)), p.acc)
    D = np.zeros((M, N), np.uint64)
    reqs = []
    if dense:
        A = sm.decode(enc, bits=True)[:, :K]                   # the pruned A, FP16, dense
        R, C = p.ROWS, p.COLS
        for m0 in range(0, M, R):
            for n0 in range(0, N, C):
                r, d = _chain(unit, p, lambda v, c: dense_request(
                    p, A[m0:m0 + R, 16 * v:16 * v + 16], B[16 * v:16 * v + 16, n0:n0 + C], c),
                    dense_result, "op__payload", "res__payload", zero[m0:m0 + R, n0:n0 + C],
                    range(K // 16))
                reqs += r
                D[m0:m0 + R, n0:n0 + C] = d
        per = R * C
        cyc = sm.cycle_model("dense", p.pingpong, dp_latency=p.latency)
    else:
        R, C = p.ROWS, 16
        for m0 in range(0, M, R):
            for n0 in range(0, N, C):
                r, d = _chain(unit, p, lambda v, c: sparse_request(
                    p, enc.values[m0:m0 + R, v, :], enc.offsets[m0:m0 + R, v, :],
                    B[16 * v:16 * v + 16, n0:n0 + C], c),
                    sparse_result, "op__payload", "res__payload", zero[m0:m0 + R, n0:n0 + C],
                    range(K // 16))
                reqs += r
                D[m0:m0 + R, n0:n0 + C] = d
        per = R * C
        cyc = sm.cycle_model("sparse", p.pingpong, L=p.L, K=p.K, dp_latency=p.latency)
    reqs = np.array(reqs, dtype=object)
    exp = unit.golden(p, op__payload=reqs)["res__payload"]
    whole = sm.spmm(enc, B, zero, acc=p.acc) if not dense else \
        sm.dense_wmma(sm.decode(enc, bits=True)[:, :K], B, zero, acc=p.acc)
    ref = {"what": ("model.spmm" if not dense else "model.dense_wmma") +
                   " on the whole GEMM (one call, no tiling) = the final D tiles",
           "equal": bool(np.array_equal(np.asarray(whole, np.uint64), D))}
    title = "GEMM tile, A 75 % vector-wise sparse (L = 16, K = 4)" + \
        (", run densely (baseline)" if dense else "")
    return Layer(
        "sparse_dense" if dense else "sparse", title,
        f"{M}×{K} · {K}×{N} (FP16, FP32 accumulation), {len(reqs)} "
        f"{'WMMA' if dense else 'SWMMA'} octet steps",
        name, {}, size, seed, reqs, "op", "res", cyc, M * N * K,
        np.asarray(exp, dtype=object), per, ref,
        notes=("the dense octet on the same pruned A (zeros multiplied): " if dense else
               "vector-wise sparse octet at the paper's L = 16, K = 4 (ping-pong B): ") +
              f"{cyc} cycles per request (cycle model); C chained through the golden model "
              "request by request, every partial D compared")


# -- (c) PacQ: a W4A16 DP-4 stream, PacQ vs its baseline -----------------------------------------
def _pacq(size: str, seed: int, baseline: bool = False) -> Layer:
    from tcgen.units.pacq import model as pm
    from tcgen.units.pacq.family import baseline_tile_ops, pacq_tile_ops
    from tcgen.units.pacq.params import lanes_of
    m, n, k = (16, 16, 128) if size == "full" else (2, 8, 8)
    rng = np.random.default_rng(seed)
    A = pm.activations(rng, (m, k))
    lo, hi = pm.WEIGHT_RANGE[4]
    Bq = rng.integers(lo, hi + 1, (k, n))
    name = "dp4_baseline" if baseline else "dp4_pacq"
    unit = get_unit(name)
    p = unit.params()
    if baseline:
        ops = baseline_tile_ops(p, A, num.from_float(Bq.astype(np.float64), "fp16"))
        interval, per = 1, 1
    else:
        ops = pacq_tile_ops(p, A, Bq, 4)
        interval, per = (16 // 4) // p.D, p.D
    ops = np.asarray(ops, dtype=object)
    exp = unit.golden(p, op__payload=ops)["res__payload"]
    return Layer(
        "pacq_baseline" if baseline else "pacq",
        "W4A16 GEMM tile on the DP-4 stream" + (", weights dequantized to FP16 (baseline)"
                                                 if baseline else ""),
        f"m{m} n{n} k{k} (A FP16, W INT4{' as FP16' if baseline else ''}, FP16 accumulation), "
        f"{len(ops)} DP-4 operations",
        name, {}, size, seed, ops, "op", "res", interval, m * n * k,
        np.asarray(exp, dtype=object), per, {},
        notes=("dp4_baseline: 4 FP16 multipliers, one operation per cycle" if baseline else
               f"dp4_pacq at its defaults (wbits=both, D={p.D}, paper mode): an INT4 operation "
               f"packs {lanes_of('4')} weights per word, held {interval} beats") +
              "; c chained through the golden model, every beat compared")


# -- (d) Winograd: ResNet-18 conv3_x, F(2×2, 3×3) tiles vs the direct convolution -----------------
#: the tile datapaths, one request per (filter group, tile position, channel chunk); the layer
#: tops (wino_layer: line buffers -> wino_conv) replace them by changing WINO_UNITS
WINO_UNITS = ("wino_conv", "direct_conv3x3")
WINO_PARAMS = {"m": 2, "mode": "fp16", "C": 8, "K": 4, "dps": 4}


def _wino(size: str, seed: int, direct: bool = False) -> Layer:
    from tcgen.units.winograd import model as wm
    from tcgen.units.winograd.family import conv_request, conv_result, direct_request
    from tcgen.units.winograd.params import WinoConvParams, equal_throughput_dps
    # conv3_x: 28×28 outputs, C = K = 128; reduced: 4×4, C = 16, K = 8
    H, Cin, Kout = (28, 128, 128) if size == "full" else (4, 16, 8)
    wp = WinoConvParams(**WINO_PARAMS)
    if direct:
        dp = equal_throughput_dps(wp)
        params = {k: v for k, v in dp.as_dict().items() if k in ("m", "mode", "C", "K", "dps")}
    else:
        params = dict(WINO_PARAMS)
    name = WINO_UNITS[1] if direct else WINO_UNITS[0]
    unit = get_unit(name)
    p = unit.params(**params)
    m, s = p.m, p.m + 2
    rng = np.random.default_rng(seed)
    x = wm.encode_input(np.abs(rng.normal(0, 1, (Cin, H + 2, H + 2))), p.mode)   # post-ReLU
    x[:, 0, :] = x[:, -1, :] = x[:, :, 0] = x[:, :, -1] = 0                     # pad 1
    g = wm.encode_input(rng.normal(0, np.sqrt(2 / (9 * Cin)), (Kout, Cin, 3, 3)), p.mode)
    T = H // m
    order = [(kg, ty, tx, cg) for kg in range(Kout // p.K) for ty in range(T)
             for tx in range(T) for cg in range(Cin // p.C)]
    total = len(order)
    if size == "full":             # a window: filter group 0, the middle tile row, every chunk
        first = order.index((0, T // 2, 0, 0))
        order = order[first:first + T * (Cin // p.C)]
    else:
        first = 0
    fh = {}
    reqs = []
    for kg, ty, tx, cg in order:
        d = x[cg * p.C:(cg + 1) * p.C, m * ty:m * ty + s, m * tx:m * tx + s]
        gk = g[kg * p.K:(kg + 1) * p.K, cg * p.C:(cg + 1) * p.C]
        if direct:
            reqs.append(direct_request(p, d, gk))
        else:
            if (kg, cg) not in fh:
                fh[(kg, cg)] = wm.ftf(gk, m, p.mode)
            reqs.append(conv_request(p, d, fh[(kg, cg)]))
    reqs = np.array(reqs, dtype=object)
    exp = unit.golden(p, op__payload=reqs)["res__payload"]
    # the layer: partial outputs of the channel chunks summed (float64) against float64 conv
    out_fmt = wm.formats(p.mode)["out"]
    got = {}
    for (kg, ty, tx, cg), r in zip(order, exp):
        y = num.to_float(conv_result(p, r)[0], out_fmt)
        got[(kg, ty, tx)] = got.get((kg, ty, tx), 0) + y
    xr, gr = num.to_float(x, wm.formats(p.mode)["data"]), num.to_float(g, wm.formats(p.mode)["data"])
    err, big = 0.0, 0.0
    for (kg, ty, tx), y in got.items():
        ex = wm.direct_conv(xr[:, m * ty:m * ty + s, m * tx:m * tx + s],
                            gr[kg * p.K:(kg + 1) * p.K], pad=0)
        err, big = max(err, float(np.abs(y - ex).max())), max(big, float(np.abs(ex).max()))
    ref = {"what": "float64 direct convolution of the same FP16 operands (the channel chunks' "
                   "partial outputs summed in float64)", "max_abs_err_vs_exact": err,
           "max_abs_exact": big}
    per_req = p.K * m * m
    return Layer(
        "wino_direct" if direct else "wino",
        "ResNet-18 conv3_x, " + ("direct 3×3 (baseline, equal DP-4 throughput)" if direct
                                 else "Winograd F(2×2, 3×3)"),
        f"{H}×{H} outputs, C = {Cin}, K = {Kout}, 3×3 pad 1 (FP16); {total:,} tile requests "
        f"(C {p.C} × K {p.K} each)" + (f", run: a window of {len(reqs)}" if len(reqs) < total
                                       else ""),
        name, params, size, seed, reqs, "op", "res", p.interval, len(reqs) * per_req * 9 * p.C,
        np.asarray(exp, dtype=object), per_req, ref,
        notes=(f"{name} {params}, one output tile position × {p.K} filters × {p.C} channels "
               f"per request, {p.interval} cycles each; the {Cin // p.C} channel chunks' "
               "partial outputs are summed outside the unit (the tile datapath has no Ô "
               "accumulation across requests without overlap; the layer top will)") +
              (f"; full size runs a window of the stream -- filter group 0, output tile row "
               f"{T // 2} (of {T}), all {T} positions × {Cin // p.C} chunks: requests "
               f"{first:,} .. {first + len(reqs) - 1:,} of {total:,} -- and the layer's "
               f"cycles and energy are extrapolated from it" if len(reqs) < total else ""),
        total_requests=total, window_first=first)

# -- (e) BMMA: a binarized ResNet-18 basic block on bnn_layer -----------------------------------
#: the full block's top is the default bnn_layer m8n8k128, whose flat netlists on osu018 and
#: nangate45 reports/bmma_ppa.md made with ABC's &fraig conflict limit 1,000 (about 15 CPU-min
#: each): the energy uses those netlists (the same flow setting), not a second synthesis
BMMA_FLOW = {"fraig_conflicts": 1000}

def _bmma(size: str, seed: int) -> Layer:
    from tcgen.units.bmma import model as bm
    from tcgen.units.bmma import throughput as tp
    from tcgen.units.bmma.stream import (block_operands, block_params, conv_requests,
                                         decode_conv)
    # full: ResNet-18 conv2_x (56×56, C = 64) on the default top m8n8k128 (K pads 64 -> 128);
    # reduced: 3×3, C = 8 on m8n8k32 (K pads 8 -> 32), as tb/test_bmma_rtl.py's block
    if size == "full":
        h, c, params = 56, 64, {}
    else:
        bp = block_params()
        h, c, params = 3, 8, {k: getattr(bp, k) for k in ("m", "n", "k", "res_width")}
    unit = get_unit("bnn_layer")
    p = unit.params(**params)
    ops = block_operands(h, c, p.m, seed)
    x, r_in, w1, w2, bn1, bn2 = (ops[k] for k in ("x", "r_in", "w1", "w2", "bn1", "bn2"))
    # the layer-level reference, float64: conv 1 + BN + sign; conv 2 on those bits + the
    # identity residual (the previous block's saved v) + BN + sign; v saved for the next block
    bits1 = bm.bn_sign_reference(bm.conv_pm1_reference(x, w1), **bn1)
    v2 = bm.conv_pm1_reference(bits1, w2) + r_in
    bits2 = bm.bn_sign_reference(v2, **bn2)
    conv = tp.Layer("conv", c, c, h, 3)
    tile = (p.m, p.n, p.k)
    whole = tp.layer_chains(conv, batch=p.m, tile=tile)         # one conv's tiles, in order
    rows = [h // 2] if size == "full" else None                  # full: each conv's middle row
    tau1, sense1 = bm.bn_threshold(**bn1)
    tau2, sense2 = bm.bn_threshold(**bn2)
    r1, ch1 = conv_requests(p, x, w1, tau1, sense1, np.zeros_like(r_in), rows=rows)
    r2, ch2 = conv_requests(p, bits1, w2, tau2, sense2, r_in, rows=rows)
    reqs = np.array(r1 + r2, dtype=object)
    exp = np.asarray(unit.golden(p, req__payload=reqs)["out__payload"], dtype=object)
    n_rows = h if rows is None else len(rows)
    out1 = len(ch1) * p.m                                        # one output per tile row
    b1, _ = decode_conv(p, exp[:out1], h, c, rows=n_rows)
    b2, s2 = decode_conv(p, exp[out1:], h, c, rows=n_rows)
    sel = slice(None) if rows is None else slice(rows[0], rows[0] + 1)
    ref = {"what": "float64 ±1 convolutions: conv 1 + BN + sign, conv 2 on those bits + the "
                   "identity residual + BN + sign, and conv 2's pre-threshold sum (the saved "
                   "v) -- the decoded output bits and v of both convs",
           "equal": bool(np.array_equal(b1, bits1[sel]) and np.array_equal(b2, bits2[sel])
                         and np.array_equal(s2, v2[sel])),
           "bits_not_constant": bool(0 < bits2[sel].sum() < bits2[sel].size)}
    per_tile = h * (c // p.n)                                    # tiles of one output row
    if rows is None:
        if ch1 + ch2 != whole + whole:
            raise AssertionError("bmma layer: the stream's tiles differ from layer_chains")
        first, spans = 0, None
    else:
        t0 = rows[0] * per_tile
        first = int(sum(whole[:t0]))
        spans = [(first, len(r1)), (int(sum(whole)) + first, len(r2))]
        if ch1 != whole[t0:t0 + per_tile] or ch2 != ch1:
            raise AssertionError("bmma layer: the window's tiles differ from layer_chains")
    useful = tp.layer_ops(conv, batch=p.m, tile=tile)["useful"]  # one conv's binary MACs
    chains = ch1 + ch2
    macs = sum(L // -(-c // p.k) for L in chains) * p.m * p.n * c   # taps × m·n·C a tile
    total = 2 * int(sum(whole))
    win = "" if rows is None else (
        f", run: a window of {len(reqs):,} (output row {rows[0]} of each conv)")
    return Layer(
        "bmma", "binarized ResNet-18 basic block" + (" (conv2_x)" if size == "full" else ""),
        f"{h}×{h}×{c}, {p.m} images: conv 3×3 {c}→{c} + BN + sign, then conv 3×3 + identity "
        f"residual + BN + sign + save (1-bit operands, s{p.res_width} residual); "
        f"{total:,} BMMA requests m{p.m}n{p.n}k{p.k}" + win,
        "bnn_layer", params, size, seed, reqs, "req", "out", None, macs, exp,
        p.n * (2 if p.save else 1), ref,
        notes=(f"bnn_layer m{p.m}n{p.n}k{p.k} F={p.fold} (bmma_array -> serializer -> "
               f"bnn_epilogue; res_width {p.res_width}, save), conv 1's requests then conv 2's "
               f"in one stream; a MAC here is one useful binary multiply-accumulate (a 1-bit "
               f"XNOR-popcount term: taps × images × C_out × C_in, {2 * useful:,} in the "
               f"layer), the array's padded bit-ops being {p.k // min(c, p.k)}× that "
               f"(K = {p.k} for C = {c}); the issue interval is not constant (a tile of L "
               f"chained requests costs max(L·F, m) cycles), so the trace and the cycles "
               f"follow throughput.layer_top_schedule of the stream's tiles; conv 2's input "
               f"bits are the float64 reference's sign(BN(conv 1)), which conv 1's outputs "
               f"run here equal bit for bit") +
              ("" if rows is None else
               f"; full size runs a window of whole tiles -- output row {rows[0]} (of {h}) "
               f"of conv 1 then of conv 2: requests {spans[0][0]:,} .. "
               f"{spans[0][0] + spans[0][1] - 1:,} and {spans[1][0]:,} .. "
               f"{spans[1][0] + spans[1][1] - 1:,} of {total:,} -- and the layer's cycles "
               f"(the schedule of all {2 * len(whole):,} tiles) and energy (the window's per "
               f"MAC) are extrapolated from it"),
        total_requests=total, window_first=first, chains=chains,
        schedule=partial(tp.layer_top_schedule, m=p.m, fold=p.fold),
        layer_chains=whole + whole, window_spans=spans, total_macs=2 * useful,
        flow=dict(BMMA_FLOW) if size == "full" else {})


LAYERS = {"lut": _lut, "sparse": _sparse, "pacq": _pacq, "wino": _wino, "bmma": _bmma}
BASELINES = {"sparse": ("sparse_dense", lambda s, seed: _sparse(s, seed, dense=True)),
             "pacq": ("pacq_baseline", lambda s, seed: _pacq(s, seed, baseline=True)),
             "wino": ("wino_direct", lambda s, seed: _wino(s, seed, direct=True))}

#: the layers not built here yet, with what they wait for (reports/layers.md says so)
UNBUILT: dict = {}


def layer(name: str, size: str = "reduced", seed: int = 1) -> Layer:
    """The layer ``name`` (a key of :data:`LAYERS`, or a baseline's name) at ``size``."""
    if size not in SIZES:
        raise ParamError(f"layers: size must be one of {', '.join(SIZES)}, got {size!r}")
    if name in LAYERS:
        return LAYERS[name](size, seed)
    for base_name, make in BASELINES.values():
        if name == base_name:
            return make(size, seed)
    known = list(LAYERS) + [b for b, _ in BASELINES.values()]
    raise ParamError(f"layers: layer must be one of {', '.join(known)}, got {name!r}")


def energy(lay: Layer, cycles: int, liberty: str = "osu018", *, clock_ns: float = 10.0,
           cache: bool = True, simulator: str = "auto") -> dict:
    """Energy of the whole layer: the mapped netlist's power with the activity of its
    gate-level simulation driven by :meth:`Layer.trace` over the layer's ``cycles`` (the RTL
    run's count), times those cycles and the clock.  {energy_pj, energy_pj_per_mac, power_mw,
    cycles, area_um2, ...}."""
    return _energy(lay, lay.trace(cycles), cycles, lay.macs, liberty, clock_ns, cache,
                   simulator, f"tcgen.layers.layer({lay.name!r}, {lay.size!r}, "
                              f"seed={lay.seed}).trace({cycles})")


def energy_window(lay: Layer, first: int, count: int, liberty: str = "osu018", *,
                  clock_ns: float = 10.0, cache: bool = True, simulator: str = "auto") -> dict:
    """Energy per MAC of a window of the layer's stream (requests ``first`` .. ``first +
    count`` back to back, the cycles they are offered: the steady state, no drain): for a
    layer too long to simulate whole, and to show that the per-MAC figure is stable."""
    n = len(lay.requests[first:first + count])
    cycles = lay.accepts(first, count)[-1] + 1
    macs = lay.macs * n / len(lay.requests)
    return _energy(lay, lay.trace(cycles, first, count), cycles, macs, liberty, clock_ns,
                   cache, simulator, f"tcgen.layers.layer({lay.name!r}, {lay.size!r}, "
                                     f"seed={lay.seed}).trace({cycles}, {first}, {count})")


def _energy(lay, stim, cycles, macs, liberty, clock_ns, cache, simulator, label) -> dict:
    r = measure(lay.unit, lay.params, liberty=liberty, clock_ns=clock_ns, activity="sim",
                stimulus=(stim, label), cache=cache, simulator=simulator, **lay.flow)
    p_mw = r["power_mw"]["total"]
    e = p_mw * cycles * clock_ns                       # mW × ns = pJ
    return {"liberty": r["liberty"]["name"], "clock_ns": clock_ns, "cycles": cycles,
            "macs": macs, "power_mw": r["power_mw"], "energy_pj": e,
            "energy_pj_per_mac": e / macs, "area_um2": r["area_um2"],
            "cell_count": r["cell_count"], "simulator": r.get("sim", {}).get("simulator"),
            "stimulus": label, "stimulus_sha256": r["workload"].get("sha256"),
            "flow": dict(lay.flow),
            "tools": r["tools"], "cached": r["cached"],
            "runtime_s": r["runtime_s"]}
