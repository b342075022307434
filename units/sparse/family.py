"""The Sparse Tensor Core family's units (target of the ``sparse`` entry point of
``tcgen.families``): the dense Volta-style octet (the paper's baseline) and the vector-wise sparse
octet (its proposal).  Models adapt stream payloads to :mod:`tcgen.units.sparse.model` and back
through the payload layouts (:mod:`.layouts`); workloads are real tiles (N(0, 1) values, the
sparse A pruned by :func:`~tcgen.units.sparse.model.encode`'s top-K)."""
from __future__ import annotations

import numpy as np

from tcgen.hw import numeric as num
from tcgen.hw.layout import pack, unpack
from tcgen.hw.spec import UnitSpec, Workload, fp_add_cells, fp_mul_cells

from . import layouts, model
from .params import (OctetDenseParams, OctetSparseBSParams, OctetSparseParams, WarpMmaParams,
                     WarpSmmaParams)
from .rtl import OctetDense, OctetSparse, OctetSparseBS, WarpMma

__all__ = ["UNITS", "dense_request", "sparse_request", "dense_result", "sparse_result",
           "random_dense_requests", "random_sparse_requests", "sparse_tile", "bstat_request",
           "random_bstat_requests"]


def _u64(x) -> np.ndarray:
    return np.asarray(x, dtype=object).astype(np.uint64)


# -- size estimates (hw/spec.py; docs/robustness.md): cells after flat synthesis, osu018 ------
# An octet is 8 DP-4s (FP16 products, FP32 adds; Hopper's fused block ~0.6 of it) and its
# operand buffers; the warp wrappers are 4 octets (fitted to reports/sparse.json: octet_dense
# 95.7k, octet_sparse 100.6k, octet_sparse_bs 123.8k cells).
def _dp4_cells(numerics: str) -> float:
    cells = 4 * fp_mul_cells("fp16") + 4 * fp_add_cells("fp32")
    return 0.6 * cells if numerics == "fused_sm90" else cells


def _est_octet_dense(p) -> float:
    buffers = 16 * 16 * 16 * 2 * (2 if p.pingpong else 1) + 8 * 4 * 32 * 2
    return 0.93 * (8 * _dp4_cells(p.numerics) + buffers)


def _est_octet_sparse(p) -> float:
    buffers = p.K * 16 * 16 * 2 * (2 if p.pingpong else 1) + 8 * 8 * 32 * 2 + p.L * 16 * 2
    return 1.02 * (8 * _dp4_cells(p.numerics) * (1.2 if p.split else 1.0) + buffers
                   + 8 * p.K * 16 * 16 / 4)


def _est_octet_sparse_bs(p) -> float:
    buffers = p.L * 16 * 16 * 2 + 8 * 8 * 32 * 2
    return 1.09 * (8 * _dp4_cells(p.numerics) * (1.2 if p.split else 1.0) + buffers
                   + 8 * p.K * 16 * p.L / 2)


def _est_warp_mma(p) -> float:
    return 4 * _est_octet_dense(p)


def _est_warp_smma(p) -> float:
    return 4 * _est_octet_sparse(p)


# -- octet_dense ---------------------------------------------------------------------------------
def dense_request(p, a, b, c) -> int:
    """Payload of one dense WMMA: a [8, 16], b [16, 8] FP16 encodings, c [8, 8] acc encodings."""
    return int(pack(layouts.dense_op(p), {"a": _u64(a)[None], "b": _u64(b)[None],
                                          "c": _u64(c)[None]})[0])


def dense_result(p, payload: int) -> np.ndarray:
    """D [8, 8] (acc encodings) of one result payload."""
    return unpack(layouts.dense_res(p), [int(payload)])["d"][0].astype(np.uint64)


def _dense_model(p, op__payload):
    f = unpack(layouts.dense_op(p), op__payload)
    d = np.stack([model.dense_wmma(f["a"][i].astype(np.uint64), f["b"][i].astype(np.uint64),
                                   f["c"][i].astype(np.uint64), acc=p.acc, semantics=p.numerics,
                                   rounding=p.rounding)
                  for i in range(len(op__payload))]) if len(op__payload) else \
        np.zeros((0, p.ROWS, p.COLS), dtype=np.uint64)
    return {"res__payload": pack(layouts.dense_res(p), {"d": d})}


def _random_c(p, rng, shape):
    return num.from_float(rng.normal(0, 4, shape), p.acc)


def random_dense_requests(p, rng, count: int, keep: int = 16) -> list[int]:
    """``count`` WMMAs with N(0, 1) A and B (FP16) and N(0, 4) C; ``keep`` < 16: A pruned to
    its top-``keep`` per 16-wide row vector (the sparse octet's tiles, run densely)."""
    out = []
    for _ in range(count):
        a = rng.normal(0, 1, (p.ROWS, 16))
        if keep < 16:
            a = model.prune_vectorwise(a, 16, keep)[0]
        out.append(dense_request(p, num.from_float(a, "fp16"),
                                 num.from_float(rng.normal(0, 1, (16, p.COLS)), "fp16"),
                                 _random_c(p, rng, (p.ROWS, p.COLS))))
    return out


def _stream_workload(requests):
    def workload(p, rng, n):
        return {"op__payload": np.array(requests(p, rng, n), dtype=object),
                "op__valid": np.ones(n, dtype=np.uint64),
                "res__ready": np.ones(n, dtype=np.uint64)}
    return workload


def _pruned_workload(keep: int) -> Workload:
    def stimulus(p, rng, n):
        return _stream_workload(lambda p, rng, n: random_dense_requests(p, rng, n, keep))(
            p, rng, n)
    return Workload(stimulus, doc=f"A pruned to {keep} of 16 per row vector "
                                  f"({100 * (16 - keep) / 16:g} % sparsity), run densely")


#: the dense octet on the sparse octet's pruned tiles: 50 / 75 / 87.5 % sparsity
DENSE_WORKLOADS = {"sparse50": _pruned_workload(8), "sparse75": _pruned_workload(4),
                   "sparse875": _pruned_workload(2)}

OCTET_DENSE = UnitSpec(
    estimate=_est_octet_dense,
    name="octet_dense", family="sparse",
    summary="dense Volta-style octet (baseline): 8 DP-4s, A/B/C buffers, STEP0-3 sets, "
            "16x16x16 WMMA share in 40 cycles (34 ping-pong), streams",
    params=OctetDenseParams, build=OctetDense, model=_dense_model,
    ops_per_cycle=lambda p: 8 * 16 * 8 / model.cycle_model("dense", p.pingpong,
                                                           dp_latency=p.latency),
    ops_unit="MAC", workload=_stream_workload(random_dense_requests),
    workloads=DENSE_WORKLOADS)


# -- octet_sparse --------------------------------------------------------------------------------
def _op_fields(p, values, offsets, b, c, kmode) -> dict:
    words = model.pack_offsets(np.asarray(offsets, dtype=np.int64), p.L)
    f = {"a": _u64(values)[None], "off": np.asarray(words, dtype=object)[None],
         "b": _u64(b)[None], "c": _u64(c)[None]}
    if p.split:
        f["kmode"] = np.array([int(kmode)])
    elif kmode:
        raise ValueError("kmode needs split=true")
    return f


def sparse_request(p, values, offsets, b, c, kmode: int = 0) -> int:
    """Payload of one SWMMA: values [R, K] FP16 encodings, offsets [R, K] in [0, L) (any slot
    contents), b [L, 16] FP16 encodings, c [R, 16] acc encodings; ``kmode`` (split octets):
    k = 4, 2, 1, 1 for 0..3, each row's first k slots read."""
    return int(pack(layouts.sparse_op(p), _op_fields(p, values, offsets, b, c, kmode))[0])


def _encoded(p, values, words, kmode) -> model.Encoded:
    """One request's A rows as an encoding: all K slots, or with ``split`` the request's first
    k (:data:`~.params.KMODES`)."""
    k = p.kmodes[int(kmode)] if p.split else p.K
    values = np.asarray(values).astype(np.uint64)[:, None, :]
    offs = model.unpack_offsets(np.asarray(words, dtype=object)[:, None], p.L, p.K)
    return model.Encoded(values[..., :k], offs[..., :k], p.L, p.L)


def sparse_result(p, payload: int) -> np.ndarray:
    """D [4, 16] (acc encodings) of one result payload."""
    return unpack(layouts.sparse_res(p), [int(payload)])["d"][0].astype(np.uint64)


def _sparse_model(p, op__payload):
    f = unpack(layouts.sparse_op(p), op__payload)
    out = []
    for i in range(len(op__payload)):
        enc = _encoded(p, f["a"][i], f["off"][i], f["kmode"][i] if p.split else 0)
        out.append(model.sparse_wmma(enc, f["b"][i].astype(np.uint64),
                                     f["c"][i].astype(np.uint64), acc=p.acc,
                                     semantics=p.numerics, rounding=p.rounding,
                                     zero_slot=p.zero_slot, split=p.split))
    d = np.stack(out) if out else np.zeros((0, p.ROWS, layouts.SPARSE_COLS), dtype=np.uint64)
    return {"res__payload": pack(layouts.sparse_res(p), {"d": d})}


def sparse_tile(p, rng, density: float = 1.0, k: int | None = None):
    """One real tile: A [R, L] ~ N(0, 1) with a ``density`` share of non-zeros, pruned to the
    top-k per row (default K) and encoded in K slots by
    :func:`~tcgen.units.sparse.model.encode` -> (values [R, K], offsets [R, K]); with k < K
    the slots k.. are padded (+0, offset 0), or, for a split octet, hold random junk values
    and offsets (it must not read them)."""
    k = p.K if k is None else min(k, p.K)
    W = rng.normal(0, 1, (p.ROWS, p.L)) * (rng.random((p.ROWS, p.L)) < density)
    enc = model.encode(model.prune_vectorwise(W, p.L, k)[0], p.L, p.K)
    vals, offs = enc.values[:, 0, :].copy(), enc.offsets[:, 0, :].copy()
    if p.split and k < p.K:
        vals[:, k:] = num.from_float(rng.normal(0, 1, (p.ROWS, p.K - k)), "fp16")
        offs[:, k:] = rng.integers(0, p.L, (p.ROWS, p.K - k))
    return vals, offs


def random_sparse_requests(p, rng, count: int, density: float = 1.0,
                           kmodes=None, keep: int | None = None) -> list[int]:
    """``count`` SWMMAs: pruned N(0, 1) A rows (:func:`sparse_tile`), N(0, 1) B, N(0, 4) C;
    split octets: request i has kmode ``kmodes[i % len]`` (default 0, 1, 2, 3 in turn), its A
    pruned to that k; ``keep`` (unsplit): A pruned to ``keep`` non-zeros in the K slots."""
    kmodes = _kmodes(p, kmodes)
    out = []
    for i in range(count):
        km = kmodes[i % len(kmodes)]
        vals, offs = sparse_tile(p, rng, density, p.kmodes[km] if p.split else keep)
        out.append(sparse_request(p, vals, offs,
                                  num.from_float(rng.normal(0, 1, (p.L, 16)), "fp16"),
                                  _random_c(p, rng, (p.ROWS, 16)), km))
    return out


def _kmodes(p, kmodes):
    if kmodes is None:
        return (0, 1, 2, 3) if p.split else (0,)
    if not p.split and tuple(kmodes) != (0,):
        raise ValueError("kmodes need split=true")
    return tuple(kmodes)


def _sparse_ops(p, kmodes=None) -> float:
    """Dense-equivalent MACs per cycle (R·L·16 per SWMMA) back to back, the requests' kmodes
    in turn; with pipelined DP units (``cuts=dp.*``) at the cycle model's ``dp_latency``."""
    ks = [p.kmodes[km] for km in _kmodes(p, kmodes)]
    cycles = [model.cycle_model("sparse", p.pingpong, L=p.L, K=k, split=p.split,
                                dp_latency=p.latency) for k in ks]
    return p.ROWS * p.L * 16 / (sum(cycles) / len(cycles))


def _k_workloads(requests, ops) -> dict:
    """Named workloads k4, k2, k1: every A row pruned to k non-zeros -- a split octet runs
    each request at that k (kmode), an unsplit one in its K slots (padded, its K's cycles)."""
    def one(km):
        k = (4, 2, 1)[km]

        def stimulus(p, rng, n):
            kw = {"kmodes": (km,)} if p.split else {"keep": k}
            return _stream_workload(lambda p, rng, n: requests(p, rng, n, **kw))(p, rng, n)
        return Workload(stimulus, ops_per_cycle=lambda p: ops(p, (km,) if p.split else None),
                        doc=f"A pruned to {k} non-zero{'s' if k > 1 else ''} per row: "
                            f"split=true runs k = {k} "
                            f"(kmode {km}), unsplit its K slots padded")
    return {f"k{(4, 2, 1)[km]}": one(km) for km in range(3)}


OCTET_SPARSE = UnitSpec(
    estimate=_est_octet_sparse,
    name="octet_sparse", family="sparse",
    summary="vector-wise sparse octet: offset register (FETCHIDX), decode, K-row B buffer x2 "
            "(ping-pong), A broadcast, EXEC; L in {4,8,16,32}, K 1..L; 26/20 cycles at L16 K4",
    params=OctetSparseParams, build=OctetSparse, model=_sparse_model,
    ops_per_cycle=_sparse_ops, ops_unit="MAC", workload=_stream_workload(random_sparse_requests),
    workloads=_k_workloads(random_sparse_requests, _sparse_ops))

# -- the warp wrapper: 4 octets, one full 16×16×16 (S)WMMA ---------------------------------------
WARP_MMA = UnitSpec(
    estimate=_est_warp_mma,
    name="warp_mma", family="sparse",
    summary="warp wrapper, dense: 4 octets (2 TCs), worktuple i = octet i -> one 8x8 D tile; "
            "a full 16x16x16 WMMA in 40 cycles (34 ping-pong)",
    params=WarpMmaParams, build=WarpMma, model=_dense_model,
    ops_per_cycle=lambda p: 16 * 16 * 16 / model.cycle_model("dense", p.pingpong,
                                                              dp_latency=p.latency),
    ops_unit="MAC", workload=_stream_workload(random_dense_requests),
    workloads=DENSE_WORKLOADS)

WARP_SMMA = UnitSpec(
    estimate=_est_warp_smma,
    name="warp_smma", family="sparse",
    summary="warp wrapper, vector-wise sparse: 4 octets, octet i -> D rows 4i..4i+3; a full "
            "16xLx16 SWMMA in 20 cycles (26 without ping-pong) at L16 K4",
    params=WarpSmmaParams, build=WarpMma, model=_sparse_model,
    ops_per_cycle=_sparse_ops, ops_unit="MAC", workload=_stream_workload(random_sparse_requests),
    workloads=_k_workloads(random_sparse_requests, _sparse_ops))

# -- octet_sparse_bs: B-stationary (beyond the paper) ---------------------------------------------
def bstat_request(p, bload: bool, values, offsets, b, c, kmode: int = 0) -> int:
    """Payload of one B-stationary SWMMA: :func:`sparse_request`'s fields and ``bload`` (load
    ``b`` into the held tile first; else ``b`` is not read)."""
    f = _op_fields(p, values, offsets, b, c, kmode)
    f["bload"] = np.array([int(bool(bload))])
    return int(pack(layouts.bstat_op(p), f)[0])


def _bstat_model(p, op__payload):
    """The held tile is state: it starts at +0 (the reset value) and each ``bload`` request
    replaces it before its SWMMA; the SWMMA is :func:`~tcgen.units.sparse.model.sparse_wmma` on
    the held tile (the request's ``b`` is ignored without ``bload``)."""
    f = unpack(layouts.bstat_op(p), op__payload)
    held = np.zeros((p.L, layouts.SPARSE_COLS), dtype=np.uint64)
    out = []
    for i in range(len(op__payload)):
        if int(f["bload"][i]):
            held = f["b"][i].astype(np.uint64)
        enc = _encoded(p, f["a"][i], f["off"][i], f["kmode"][i] if p.split else 0)
        out.append(model.sparse_wmma(enc, held, f["c"][i].astype(np.uint64), acc=p.acc,
                                     semantics=p.numerics, rounding=p.rounding,
                                     zero_slot=p.zero_slot, split=p.split))
    d = np.stack(out) if out else np.zeros((0, p.ROWS, layouts.SPARSE_COLS), dtype=np.uint64)
    return {"res__payload": pack(layouts.sparse_res(p), {"d": d})}


def random_bstat_requests(p, rng, count: int, reuse: int = 4, density: float = 1.0,
                          kmodes=None, keep: int | None = None) -> list[int]:
    """``count`` SWMMAs, one new B tile (bload) every ``reuse``: pruned N(0, 1) A rows, N(0, 1)
    B, N(0, 4) C; the requests that reuse the tile carry a different, never-read ``b`` (so
    a design that reloaded it would be caught); split octets: request i has kmode
    ``kmodes[i % len]`` (default 0, 1, 2, 3 in turn); ``keep`` (unsplit): A pruned to
    ``keep`` non-zeros in the K slots."""
    kmodes = _kmodes(p, kmodes)
    out = []
    for i in range(count):
        km = kmodes[i % len(kmodes)]
        vals, offs = sparse_tile(p, rng, density, p.kmodes[km] if p.split else keep)
        b = num.from_float(rng.normal(0, 1, (p.L, 16)), "fp16")
        out.append(bstat_request(p, i % reuse == 0, vals, offs, b,
                                 _random_c(p, rng, (p.ROWS, 16)), km))
    return out


def _bstat_ops(reuse: int):
    """Dense-equivalent MACs per cycle back to back: request i loads B when i % reuse == 0 and
    has the i-th kmode in turn (exact over one period of both)."""
    def ops(p, kmodes=None):
        kms = _kmodes(p, kmodes)
        period = reuse * len(kms) // np.gcd(reuse, len(kms))
        t = {km: model.bstationary_timing(p.L, p.kmodes[km], reuse, split=p.split,
                                          dp_latency=p.latency)
             for km in set(kms)}
        cycles = sum(t[kms[i % len(kms)]]["reused" if i % reuse else "first"]
                     for i in range(period))
        return 4 * p.L * 16 * period / cycles
    return ops


def _bstat_workload(reuse: int) -> Workload:
    def stimulus(p, rng, n):
        return _stream_workload(lambda p, rng, n: random_bstat_requests(p, rng, n, reuse))(
            p, rng, n)
    return Workload(stimulus, ops_per_cycle=_bstat_ops(reuse),
                    doc=f"one B tile per {reuse} SWMMA{'s' if reuse > 1 else ''} (A row-tiles "
                        f"sharing it)")


OCTET_SPARSE_BS = UnitSpec(
    estimate=_est_octet_sparse_bs,
    name="octet_sparse_bs", family="sparse",
    summary="B-stationary sparse octet (beyond the paper): L x 16 B tile held, K local L:1 row "
            "selects, reused across A row-tiles; 10 cycles per SWMMA on a held tile (24 with "
            "its load) at L16 K4",
    params=OctetSparseBSParams, build=OctetSparseBS, model=_bstat_model,
    ops_per_cycle=_bstat_ops(4), ops_unit="MAC",
    workload=_stream_workload(lambda p, rng, n: random_bstat_requests(p, rng, n, 4)),
    workloads={"reuse1": _bstat_workload(1), "reuse16": _bstat_workload(16),
               **_k_workloads(lambda p, rng, n, **kw: random_bstat_requests(p, rng, n, 4, **kw),
                              _bstat_ops(4))})

UNITS = (OCTET_DENSE, OCTET_SPARSE, OCTET_SPARSE_BS, WARP_MMA, WARP_SMMA)
