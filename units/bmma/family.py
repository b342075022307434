"""The BMMA family's units: ``UNITS``, the target of the ``bmma`` entry point of the group
``tcgen.families`` (no side effect on import), and the random workloads of the three units."""
from __future__ import annotations

import numpy as np

from tcgen.hw.spec import UnitSpec

from . import model
from .params import BmmaArrayParams, BnnEpilogueParams, Int8MacArrayParams
from .rtl import BmmaArray, BnnEpilogue, Int8MacArray

__all__ = ["UNITS", "workload_requests"]


def workload_requests(unit_name: str, p, rng, n: int) -> list[int]:
    """``n`` random requests of a unit: random operands and C; for the arrays, half the requests
    chain onto the accumulator and the op is random when selectable; for the epilogue, random
    accumulators around K/2 (so thresholds flip), random τ near 0 and 2×2 pool windows."""
    out = []
    if unit_name == "bmma_array":
        ops = ("xor", "and") if p.ops == "xor_and" else (p.ops,)
        for _ in range(n):
            a = rng.integers(0, 2, (p.m, p.k), dtype=np.uint8)
            b = rng.integers(0, 2, (p.k, p.n), dtype=np.uint8)
            c = rng.integers(-(1 << 20), 1 << 20, (p.m, p.n))
            out.append(model.array_request(p, a, b, c, op=ops[rng.integers(len(ops))],
                                           chain=bool(rng.integers(2)), emit=True))
    elif unit_name == "int8_mac_array":
        for _ in range(n):
            a = rng.integers(-128, 128, (p.m, p.k))
            b = rng.integers(-128, 128, (p.k, p.n))
            c = rng.integers(-(1 << 20), 1 << 20, (p.m, p.n))
            out.append(model.int8_request(p, a, b, c, chain=bool(rng.integers(2))))
    else:
        k_eff = min(128, (1 << p.k_width) - 1)
        for i in range(n):
            acc = rng.integers(0, k_eff + 1, p.n)
            tau = rng.integers(-8, 9, p.n)
            res = rng.integers(-16, 17, p.n) if p.res_width >= 6 else None
            sense = rng.integers(0, 4, p.n) if p.sense else None
            out.append(model.epilogue_request(p, acc, k_eff, tau, sense,
                                              res, last=(i % 4 == 3)))
    return out


def _stream_workload(unit_name, out_stream):
    def workload(p, rng, n):
        return {"req__payload": np.array(workload_requests(unit_name, p, rng, n), dtype=object),
                "req__valid": np.ones(n, dtype=np.uint64),
                f"{out_stream}__ready": np.ones(n, dtype=np.uint64)}
    return workload


BMMA_ARRAY = UnitSpec(
    name="bmma_array", family="bmma",
    summary="M×N×K bit tensor-core array: D = C + popc(A xor/and B), fold F, chained s32 "
            "accumulators, streams (BTC-BNN bmma m8n8k128)",
    params=BmmaArrayParams, build=BmmaArray,
    model=lambda p, req: model.bmma_array_model(p, req),
    ops_per_cycle=lambda p: p.m * p.n * p.k / p.fold, ops_unit="bit-op",
    workload=_stream_workload("bmma_array", "d"))

INT8_MAC_ARRAY = UnitSpec(
    name="int8_mac_array", family="bmma",
    summary="M×N×K INT8 MAC array (structural multipliers, same sequencer) for cost comparison "
            "with bmma_array",
    params=Int8MacArrayParams, build=Int8MacArray,
    model=lambda p, req: model.int8_mac_model(p, req),
    ops_per_cycle=lambda p: p.m * p.n * p.k / p.fold, ops_unit="MAC",
    workload=_stream_workload("int8_mac_array", "d"))

BNN_EPILOGUE = UnitSpec(
    name="bnn_epilogue", family="bmma",
    summary="fused BNN epilogue: K_eff − 2·acc + residual ≥ τ (per-channel flip), OR-pool, "
            "MSB-first packing",
    params=BnnEpilogueParams, build=BnnEpilogue,
    model=lambda p, req: model.bnn_epilogue_model(p, req),
    ops_per_cycle=lambda p: float(p.n), ops_unit="result",
    workload=_stream_workload("bnn_epilogue", "out"))

UNITS = (BMMA_ARRAY, INT8_MAC_ARRAY, BNN_EPILOGUE)
