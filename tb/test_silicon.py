"""Hopper's tensor cores as measured: the models of tcgen.hw.sm90 and the fused_dot RTL against
outputs an NVIDIA H200 computed (issue 40; docs/silicon.md, reports/silicon.md).

CI has no GPU: the expected values are the stored sample (hw/data/sm90_silicon.npz), measured by
scripts/silicon/run_probes.py on the device machine and chosen by scripts/silicon/sample.py:
every op, every case class, and the tiles on which each negative control differs from the
silicon.  The full data's comparison (27.3 M outputs) is reports/silicon.md.
"""
from __future__ import annotations

import numpy as np
import pytest

from tcgen.verify import harness
from tcgen.hw import numeric as num
from tcgen.hw import sm90
from tcgen.hw.layout import pack
from tcgen.registry import get_unit

ARRAYS, INFO = sm90.silicon_sample()
KEYS = sorted({k.rsplit("/", 1)[0] for k in ARRAYS})        # "<op>/<class>"
CLASSES_FLOAT = {"uniform", "wide", "cancel", "subnormal", "bigc", "overflow", "special",
                 "zeros", "raw", "chain"}
CLASSES_INT = {"raw", "extremes", "bigc", "chain"}


def _case(key):
    g = lambda x: ARRAYS.get(f"{key}/{x}")  # noqa: E731
    keep = g("keep")
    return (g("A").astype(np.uint64), g("B").astype(np.uint64), g("C").astype(np.uint64),
            None if keep is None else keep.astype(np.int64), g("D").astype(np.uint64))


def test_sample_covers_every_op_and_class():
    """26 instructions, every case class of each, ≥ 1,000 measured outputs per op, from one
    H200 run whose GPU and toolchain the sample records."""
    ops = {k.split("/")[0] for k in KEYS}
    assert ops == set(sm90.INSTRUCTIONS), ops ^ set(sm90.INSTRUCTIONS)
    for op in ops:
        classes = {k.split("/")[1] for k in KEYS if k.startswith(op + "/")}
        want = CLASSES_INT if sm90.INSTRUCTIONS[op].a in ("s8", "b1") else CLASSES_FLOAT
        assert classes == want, (op, classes ^ want)
        assert sum(INFO["outputs"][k] for k in KEYS if k.startswith(op + "/")) >= 1000, op
    assert INFO["env"]["device"] == "NVIDIA H200"
    assert INFO["total_outputs"] == sum(int(ARRAYS[f"{k}/D"].size) for k in KEYS)


@pytest.mark.parametrize("op", sorted(sm90.INSTRUCTIONS))
def test_model_matches_silicon(op):
    """The op's model reproduces every stored output bit for bit (the full data: reports/
    silicon.md)."""
    bad = []
    for key in (k for k in KEYS if k.startswith(op + "/")):
        A, B, C, keep, D = _case(key)
        got = sm90.mma(op, A, B, C, keep)
        if (got != D).any():
            i = np.argwhere(got != D)[0]
            bad.append(f"{key}: {int((got != D).sum())} of {D.size}, first at {tuple(i)}: "
                       f"model {int(got[tuple(i)]):#x} silicon {int(D[tuple(i)]):#x}")
    assert not bad, bad


@pytest.mark.parametrize("op", sorted(sm90.INSTRUCTIONS))
def test_negative_controls_are_refuted(op):
    """Every one-parameter-off variant that the full run refuted (reports/silicon.md) also
    differs from the silicon on the stored tiles: the sample sits on the rules' boundaries."""
    refuted = INFO.get("refuted", {}).get(op, [])
    controls = dict(sm90.NEGATIVE_CONTROLS[op])
    assert set(refuted) <= set(controls), set(refuted) - set(controls)
    keys = sorted((k for k in KEYS if k.startswith(op + "/")), key=lambda k: k.endswith("chain"))
    for label in refuted:                  # the long chains last: most controls fail earlier
        differs = 0
        for key in keys:
            A, B, C, keep, D = _case(key)
            differs += int((sm90.mma(controls[label], A, B, C, keep) != D).sum())
            if differs:
                break
        assert differs, f"{op}: control {label!r} matches the stored silicon outputs"


def test_zero_sign_rule_is_in_the_sample():
    """The defect the measurement found: FP16 results that the IEEE reading makes -0 and the
    silicon +0 (f16_f16, rounded-away negative sums) are in the stored sample."""
    hits = 0
    for key in (k for k in KEYS if k.startswith("f16_f16/")):
        A, B, C, keep, D = _case(key)
        ieee = sm90.mma(sm90.INSTRUCTIONS["f16_f16"].with_(zero="sign"), A, B, C, keep)
        hits += int(((ieee == 0x8000) & (D == 0)).sum())
    assert hits >= 3, hits


def _vectors(op, limit):
    """one fused_dot vector per stored output of a single-step (S = 1) case: a [N, k],
    b [N, k], c [N], silicon y [N]"""
    a, b, c, y = [], [], [], []
    for key in (k for k in KEYS if k.startswith(op + "/")):
        A, B, C, keep, D = _case(key)
        if A.shape[1] != 1:
            continue
        T, _, m, k = A.shape
        n = B.shape[-1]
        a.append(np.broadcast_to(A[:, 0, :, None, :], (T, m, n, k)).reshape(-1, k))
        b.append(np.broadcast_to(np.swapaxes(B[:, 0], 1, 2)[:, None], (T, m, n, k)).reshape(-1, k))
        c.append(C.reshape(-1))
        y.append(D.reshape(-1))
    a, b, c, y = (np.concatenate(x) for x in (a, b, c, y))
    if sm90.INSTRUCTIONS[op].a == "tf32":          # TF32 encodings: the FP32 patterns' top 19 bits
        a, b = a >> np.uint64(13), b >> np.uint64(13)
    # first, for every negative control, an equal share of the vectors on which it differs
    # from the silicon (the rules' boundaries), then random ones up to the limit
    rng = np.random.default_rng(harness.seed(4000))
    controls = [ctl for _, ctl in sm90.NEGATIVE_CONTROLS[op] if ctl.rule == "fused"]
    share = limit // (len(controls) + 1)
    chosen = []
    for ctl in controls:
        differ = num.fused_dot(a, b, c, sm90.operand_format(ctl.a), ctl.c, ctl.c, ctl.window,
                               sm90.rounding(ctl), zero=ctl.zero, overflow=ctl.overflow,
                               acc_man=ctl.acc_man,
                               fmt_b=None if ctl.b == ctl.a else sm90.operand_format(ctl.b)) != y
        chosen.append(rng.permutation(np.flatnonzero(differ))[:share])
    first = np.unique(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)
    rest = rng.permutation(np.setdiff1d(np.arange(len(c)), first))
    pick = np.sort(np.concatenate([first, rest])[:limit])
    return a[pick], b[pick], c[pick], y[pick]


QGMMA = {"n": 32, "fmt": "fp8_e4m3", "window": 15, "acc_man": 13}
RTL_CASES = [   # (op, fused_dot params, vectors in make test)
    ("f16_f16", {"n": 16, "acc": "fp16", "out": "fp16"}, 500),
    ("wg_e4m3_f32", QGMMA, 400),
    pytest.param("wg_e5m2_f32", {**QGMMA, "fmt": "fp8_e5m2"}, 2000, marks=pytest.mark.slow),
    pytest.param("tf32_f32", {"n": 8, "fmt": "tf32"}, 3000, marks=pytest.mark.slow),
    pytest.param("wg_e4m3_e5m2_f32", {**QGMMA, "fmt_b": "fp8_e5m2"}, 2000,
                 marks=pytest.mark.slow),
    pytest.param("wg_e5m2_f16", {"n": 32, "fmt": "fp8_e5m2", "acc": "fp16", "out": "fp16",
                                 "window": 15}, 2000, marks=pytest.mark.slow),
    pytest.param("wg_e4m3_f16", {"n": 32, "fmt": "fp8_e4m3", "acc": "fp16", "out": "fp16",
                                 "window": 15}, 2000, marks=pytest.mark.slow),
    pytest.param("f16_f32", {"n": 16}, 3000, marks=pytest.mark.slow),
    pytest.param("bf16_f32", {"n": 16, "fmt": "bf16"}, 3000, marks=pytest.mark.slow),
    pytest.param("f16_f16", {"n": 16, "acc": "fp16", "out": "fp16"}, 3000,
                 marks=pytest.mark.slow),
]


@pytest.mark.parametrize("op,params,count", RTL_CASES)
def test_rtl_matches_silicon(op, params, count, request):
    """The fused_dot RTL (one m16n8k16 output = one 16-term fused dot product; one wgmma FP8
    output of a K-step = one 32-term block, preset qgmma_sm90) on stored silicon vectors, the
    rules' boundary vectors first: the model equals the silicon on them (asserted here), and
    the batch bench checks the RTL against the model, so the RTL computes the silicon's
    encodings.  The f16_f16 vectors include the zero-sign cases."""
    a, b, c, y = _vectors(op, count)
    p = get_unit("fused_dot").params(**params)
    model = num.fused_dot(a, b, c, p.fmt, p.acc, p.out, p.window, p.mode,
                          acc_man=p.acc_man or None, fmt_b=p.fmt_b or None)
    assert (model == y).all(), int((model != y).sum())
    if op == "f16_f16":
        assert ((y == 0) & (num.fused_dot(a, b, c, p.fmt, p.acc, p.out, p.window, p.mode,
                                          zero="sign") == 0x8000)).any()
    sig = get_unit("fused_dot").interface(p).signature.members
    s = harness.run_batch("fused_dot", p, stimulus={"a": pack(sig["a"].shape, a),
                                                    "b": pack(sig["b"].shape, b), "c": c},
                          name=request.node.name[:80], depth=1 << 14)
    assert s["checked"] == s["vectors"] == len(c)
    assert s["mismatches"] == 0, s["first_mismatches"]


# -- the warp-level unit: a Hopper instruction in RTL (tcgen.hw.mma, unit mma_sm90) ------------
MMA_UNITS = [("f16_f32", "f16_f32"), ("f16_f16", "f16_f16"), ("bf16_f32", "bf16_f32"),
             ("tf32_f32", "tf32_f32"),
             ("qgmma_e4m3_f32", "wg_e4m3_f32"), ("qgmma_e5m2_f32", "wg_e5m2_f32"),
             ("qgmma_e4m3_f16", "wg_e4m3_f16"), ("qgmma_e5m2_f16", "wg_e5m2_f16"),
             ("qgmma_e4m3_e5m2_f32", "wg_e4m3_e5m2_f32")]


def _tiles16(op):
    """the stored single-step tiles of ``op`` as m16n8 tiles (a wgmma m64 tile gives four)"""
    out = []
    for key in (k for k in KEYS if k.startswith(op + "/")):
        A, B, C, keep, D = _case(key)
        if A.shape[1] != 1:
            continue
        for r in range(0, A.shape[2], 16):
            out.append((A[:, :, r:r + 16], B, C[:, r:r + 16], D[:, r:r + 16]))
    return [np.concatenate(x) for x in zip(*out)]


@pytest.mark.parametrize("numerics,op", MMA_UNITS)
def test_mma_unit_model_matches_silicon(numerics, op):
    """The unit's golden model (UnitSpec.model on packed m16n8 tiles) gives the measured D of
    every stored tile."""
    from tcgen.hw.layout import unpack
    u = get_unit("mma_sm90")
    p = u.params(numerics=numerics)
    A, B, C, D = _tiles16(op)
    sig = u.interface(p).signature.members
    got = u.model(p, pack(sig["a"].shape, A.reshape(len(A), -1)),
                  pack(sig["b"].shape, B.reshape(len(B), -1)),
                  pack(sig["c"].shape, C.reshape(len(C), -1)))["d"]
    got = unpack(sig["d"].shape, got).astype(np.uint64).reshape(D.shape)
    assert (got == D).all(), int((got != D).sum())


@pytest.mark.parametrize("numerics,op,m,n,tiles", [
    ("f16_f16", "f16_f16", 1, 2, 30),
    pytest.param("f16_f32", "f16_f32", 16, 8, 6, marks=pytest.mark.slow),
    pytest.param("tf32_f32", "tf32_f32", 16, 8, 6, marks=pytest.mark.slow),
    pytest.param("qgmma_e4m3_f32", "wg_e4m3_f32", 16, 8, 6, marks=pytest.mark.slow)])
def test_mma_unit_rtl_on_silicon_tiles(numerics, op, m, n, tiles, request):
    """The unit's RTL on stored silicon tiles (their top-left m × n outputs): the batch bench
    checks it against the model, which equals the silicon there (asserted)."""
    u = get_unit("mma_sm90")
    p = u.params(numerics=numerics, m=m, n=n)
    A, B, C, D = _tiles16(op)
    A, B, C, D = A[:tiles, 0, :m], B[:tiles, 0, :, :n], C[:tiles, :m, :n], D[:tiles, :m, :n]
    want = sm90.mma(sm90.INSTRUCTIONS[op].with_(m=m, n=n), A[:, None], B[:, None], C)
    assert (want == D).all()
    sig = u.interface(p).signature.members
    stim = {"a": pack(sig["a"].shape, A.reshape(len(A), -1)),
            "b": pack(sig["b"].shape, B.reshape(len(B), -1)),
            "c": pack(sig["c"].shape, C.reshape(len(C), -1))}
    s = harness.run_batch("mma_sm90", p, stimulus=stim, name=request.node.name[:80],
                          depth=1 << 10)
    assert s["checked"] == s["vectors"] == len(A)
    assert s["mismatches"] == 0, s["first_mismatches"]
