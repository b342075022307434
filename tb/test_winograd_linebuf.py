"""The Winograd input line buffer ``wino_linebuf`` (tcgen.units.winograd.linebuf) against the
golden model's tiling (tcgen.units.winograd.model.tile_input, pad 1).

* the input order (``linebuf_beats``): every pixel in exactly one beat, at the place the
  docstring gives, and nothing else in the beats; its inverse;
* a software walk of the documented order that keeps only 2 stored rows and the (m+2)-column
  window gives exactly ``model.tile_input``'s tiles, in order, at the beats ``tiles_after``
  says (so the order makes a 2-row line buffer sufficient, and the model adapter's prefix rule
  is the schedule);
* the RTL on the generic stream bench (back to back, random idle / stall cycles, reset with
  tiles in flight), m = 2 and 4, FP32 / FP16 / FP16acc / integer, maps with H or W = 1, 2, 3
  and not multiples of m (the flush band and the tail step), two or three maps back to back,
  junk in the lanes that carry no pixel; cycles per map, latency and issue intervals as the
  docstring's schedule gives them;
* the generated Verilog: deterministic, lint-clean, and its only memory is the 2×W line memory
  (flip-flops: the window and a few counter bits), whatever H.

Expected tiles come only from the model (the bench applies the UnitSpec's adapter, itself
checked here against ``model.tile_input``).  Seeds printed; ``TCGEN_SEED`` overrides them.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from tcgen.verify import harness
from tcgen.verify.bench_config import run_stream
from tcgen.generate import verilog
from tcgen.hw.layout import pack, unpack
from tcgen.hw.params import ParamError
from tcgen.registry import get_unit
from tcgen.units.winograd import model as wm
from tcgen.units.winograd.linebuf import (WinoLinebufParams, col_layout, linebuf_beats,
                                          linebuf_map, linebuf_model, linebuf_workload,
                                          random_maps, tile_layout, tiles_after)
from tcgen.synth.lint import lint

UNIT = "wino_linebuf"
_slow = pytest.mark.slow


# -- the documented schedule, written out independently of the unit's code ---------------------
def _row(m, b, k):
    """Image row of lane k of band b: m·b − m + 1 + k."""
    return m * b - m + 1 + k


def _schedule(H, W, m):
    """The unit's steps for one map, per the docstring: a list of (band, column, takes input,
    tiles emitted) -- band 0 (W beats), bands 1 .. T_h (W steps each; band T_h without input
    when its rows are all >= H), a tail step after each band b >= 1 when W ≡ 1 (mod m)."""
    Th, Tw = -(-H // m), -(-W // m)
    steps = []
    for b in range(Th + 1):
        takes = any(0 <= _row(m, b, k) < H for k in range(m))
        for c in range(W):
            done = 0 if b == 0 else sum(1 for j in range(Tw) if min(m * (j + 1), W - 1) == c)
            tail = b > 0 and c == W - 1 and (W - 1) % m == 0
            steps.append((b, c, takes, done - int(tail)))
        if b > 0 and (W - 1) % m == 0:
            steps.append((b, W, False, 1))
    return steps


def _walk(x, m):
    """A software line buffer over linebuf_beats(x): 2 stored rows of W values (``lines``)
    and the current beat are all it reads, and every tile it emits lies in the last m + 2
    columns seen (the window) -- or, when a band's last beat completes two tiles, m columns
    before (the tail step).  Returns (tiles [T, m+2, m+2], beats taken when each is emitted)."""
    H, W = x.shape
    n, Tw = m + 2, -(-W // m)
    beats = iter(linebuf_beats(x, m))
    lines = np.zeros((2, W), dtype=np.int64)
    written = np.zeros(W, dtype=bool)                 # never read before written
    taken, tiles, when = 0, [], []
    for b, c, takes, _ in _schedule(H, W, m):
        if c == W:
            continue                                  # the tail step: no input, no read
        beat = next(beats) if takes else np.zeros(m, dtype=np.int64)
        taken += bool(takes)
        lanes = [beat[k] if 0 <= _row(m, b, k) < H else 0 for k in range(m)]
        if b > 0:
            assert written[c]
        column = [lines[0, c], lines[1, c]] + lanes
        lines[:, c], written[c] = (lanes[m - 2], lanes[m - 1]), True
        if b == 0:
            continue
        if c == 0:
            band, j = [[0] * n], 0                    # padded column 0: the left padding
        band.append(column)
        if c == W - 1:
            band += [[0] * n] * (m * Tw + 2 - len(band))
        while j < Tw and len(band) >= m * j + n:
            assert len(band) - (m * j + n) in ((0, m) if c == W - 1 else (0,))
            tiles.append(np.array(band[m * j:m * j + n]).T)
            when.append(taken)
            j += 1
    return np.array(tiles), when


def _maps(p, rng, count):
    return random_maps(p, rng, count)


def _payloads(p, maps, junk_rng=None):
    """The beats of ``maps`` back to back as payloads; ``junk_rng``: random values in the lanes
    that carry no pixel (the unit must not read them)."""
    beats = linebuf_beats(maps, p.m)
    if junk_rng is not None:
        H, W = p.H, p.W
        mask = linebuf_beats(np.ones((len(maps), H, W), dtype=np.int64), p.m) == 0
        lo, hi = (-(1 << (p.bits - 1)), 1 << (p.bits - 1)) if p.is_int else (0, 1 << p.bits)
        junk = junk_rng.integers(lo, hi, beats.shape).astype(beats.dtype)
        beats = np.where(mask, junk, beats)
    return np.array(pack(col_layout(p), beats), dtype=object)


def _golden_tiles(p, maps):
    """model.tile_input of each map, row-major, back to back: [N·T, (m+2)²]."""
    return np.concatenate([wm.tile_input(x, p.m).reshape(-1, p.n * p.n) for x in maps])


def _run(p, maps, name, scenarios=("back_to_back",), junk=None, **cfg):
    payloads = _payloads(p, maps, junk)
    want = _golden_tiles(p, maps)
    assert np.array_equal(unpack(tile_layout(p), linebuf_model(p, payloads)["d__payload"]),
                          want)                  # the adapter the bench applies is the model's
    s = run_stream(UNIT, p, {"col__payload": payloads}, name=name, scenarios=scenarios, **cfg)
    assert s["mismatches"] == 0, s
    for sc in scenarios:
        assert s[f"{sc}_inputs"] == len(payloads)
        assert s[f"{sc}_vectors"] == len(want)
    return s


# == params =======================================================================================
@pytest.mark.parametrize("kw,field,words", [
    ({"m": 3}, "m", "one of 2, 4"),
    ({"mode": "bf16"}, "mode", "one of fp32, fp16, fp16acc, int"),
    ({"mode": "int", "data_bits": 1}, "data_bits", "an integer in 2..32"),
    ({"mode": "int", "data_bits": 33}, "data_bits", "an integer in 2..32"),
    ({"data_bits": 4}, "data_bits", "unless mode=int"),
    ({"mode": "fp16", "data_bits": 16}, "data_bits", "unless mode=int"),
    ({"H": 0}, "H", "an integer in 1..256"),
    ({"W": 257}, "W", "an integer in 1..256"),
    ({"H": 2.0}, "H", "an integer in 1..256"),
    ({"W": True}, "W", "an integer in 1..256"),
])
def test_params_errors(kw, field, words):
    with pytest.raises(ParamError) as e:
        WinoLinebufParams(**kw)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"wino_linebuf: {field} must be ") and words in msg
    assert msg.endswith(f", got {kw[field]!r}")


def test_params_from_strings_and_derived():
    u = get_unit(UNIT)
    assert u.params is WinoLinebufParams
    p = u.make_params({"m": "4", "mode": "int", "data_bits": "12", "H": "5", "W": "9"})
    assert (p.m, p.mode, p.data_bits, p.H, p.W, p.bits) == (4, "int", 12, 5, 9, 12)
    with pytest.raises(ParamError, match="wino_linebuf: H must be an integer in 1..256, got"):
        u.make_params({"H": "300"})
    for mode, bits in (("fp32", 32), ("fp16", 16), ("fp16acc", 16)):
        assert WinoLinebufParams(mode=mode).bits == bits
    assert WinoLinebufParams(mode="int").bits == 8
    for m in (2, 4):
        for H in range(1, 12):
            for W in (1, 2, 3, 5, 8):
                p = WinoLinebufParams(m=m, H=H, W=W)
                x = np.zeros((H, W), dtype=np.int64)
                t = wm.tile_input(x, m)
                steps = _schedule(H, W, m)
                assert (p.Th, p.Tw) == t.shape[:2] and p.tiles == t.shape[0] * t.shape[1]
                assert p.beats == len(linebuf_beats(x, m)) == sum(s[2] for s in steps)
                assert p.cycles == len(steps) and sum(s[3] for s in steps) == p.tiles
                assert p.flush == (H % m == 1 % m) and p.tail == (W % m == 1 % m)
                assert p.last_lanes == sum(0 <= _row(m, p.Th, k) < H for k in range(m))


# == the input order and the model adapter =======================================================
@pytest.mark.parametrize("m", [2, 4])
def test_beats_hold_every_pixel_once(m):
    """Beat b·W + c lane k is x[m·b − m + 1 + k, c] (0 outside the map); every pixel is in
    exactly one beat; linebuf_map inverts; maps concatenate."""
    for H in range(1, 11):
        for W in range(1, 7):
            x = np.arange(1, H * W + 1, dtype=np.int64).reshape(H, W)
            beats = linebuf_beats(x, m)
            B = -(-(H + m - 1) // m)
            assert beats.shape == (B * W, m) and beats.dtype == x.dtype
            for b in range(B):
                for c in range(W):
                    for k in range(m):
                        r = _row(m, b, k)
                        assert beats[b * W + c, k] == (x[r, c] if 0 <= r < H else 0)
            vals = beats[beats != 0]
            assert sorted(vals.tolist()) == list(range(1, H * W + 1))    # once each
            assert np.array_equal(linebuf_map(beats, m, H, W), x)
            assert np.all(beats[:W, :m - 1] == 0)      # band 0: row 0 only, in lane m − 1
    two = np.arange(2 * 3 * 5).reshape(2, 3, 5)
    assert np.array_equal(linebuf_beats(two, m),
                          np.concatenate([linebuf_beats(two[0], m), linebuf_beats(two[1], m)]))
    with pytest.raises(ValueError, match="linebuf_beats"):
        linebuf_beats(np.zeros(4), m)
    with pytest.raises(ValueError, match="linebuf_map"):
        linebuf_map(np.zeros((3, m)), m, 4, 4)


@pytest.mark.parametrize("m", [2, 4])
def test_two_row_walk_gives_the_models_tiles(m):
    """The documented order, walked with 2 stored rows and the current beat only, gives
    model.tile_input's tiles in row-major order, each emitted once the beats tiles_after counts
    are in."""
    rng = np.random.default_rng(harness.seed(1510))
    for H in range(1, 12):
        for W in range(1, 12):
            p = WinoLinebufParams(m=m, H=H, W=W, mode="int", data_bits=16)
            x = rng.integers(-(1 << 15), 1 << 15, (H, W))
            tiles, when = _walk(x, m)
            assert np.array_equal(tiles, wm.tile_input(x, m).reshape(-1, m + 2, m + 2)), (H, W)
            for k in range(p.beats + 1):
                assert tiles_after(p, k) == sum(w <= k for w in when), (H, W, k)


@pytest.mark.parametrize("mode", ["fp32", "int"])
def test_model_adapter_on_prefixes(mode):
    """The adapter on any prefix of the beats of three maps: the model's tiles of the maps
    started, as many as tiles_after gives (a prefix of model.tile_input's, in order); lanes
    that carry no pixel do not matter."""
    rng = np.random.default_rng(harness.seed(1511))
    p = WinoLinebufParams(m=2, H=5, W=3, mode=mode)
    maps = _maps(p, rng, 3)
    pay, junk = _payloads(p, maps), _payloads(p, maps, rng)
    want = _golden_tiles(p, maps)
    assert not np.array_equal(pay, junk)
    for k in range(len(pay) + 1):
        got = unpack(tile_layout(p), linebuf_model(p, pay[:k])["d__payload"])
        full, part = divmod(k, p.beats)
        count = full * p.tiles + tiles_after(p, part) if part else full * p.tiles
        assert len(got) == count and np.array_equal(got, want[:count])
        assert np.array_equal(linebuf_model(p, junk[:k])["d__payload"],
                              linebuf_model(p, pay[:k])["d__payload"])


def test_workload_schedule():
    """The sim-power workload: random maps whose beats arrive in the cycles the unit takes
    input (the schedule, output always ready) and valid 0 in its tail / flush steps."""
    for kw in ({}, {"m": 4, "H": 5, "W": 5, "mode": "int"}, {"H": 3, "W": 1, "mode": "fp16"}):
        p = WinoLinebufParams(**kw)
        n = 3 * p.cycles + 5
        wl = get_unit(UNIT).workload(p, np.random.default_rng(1), n)
        assert set(wl) == {"col__payload", "col__valid", "d__ready"}
        assert all(len(v) == n for v in wl.values()) and np.all(wl["d__ready"] == 1)
        takes = [s[2] for s in _schedule(p.H, p.W, p.m)] * 4
        assert wl["col__valid"].tolist() == [int(t) for t in takes[:n]]
        beats = unpack(col_layout(p), wl["col__payload"][wl["col__valid"] == 1])
        maps = random_maps(p, np.random.default_rng(1), 4)
        assert np.array_equal(beats, linebuf_beats(maps, p.m)[:len(beats)])
        assert get_unit(UNIT).ops_per_cycle(p) == pytest.approx(p.H * p.W / p.cycles)
    assert linebuf_workload is get_unit(UNIT).workload


# == RTL on the stream bench =====================================================================
CONFIGS = [
    {},                                                         # 8×8 F(2,3) FP32
    {"m": 4, "mode": "fp16", "H": 6, "W": 9},                   # tail step (W ≡ 1 mod 4)
    {"m": 2, "mode": "int", "data_bits": 5, "H": 3, "W": 5},    # flush band and tail step
    {"m": 4, "mode": "int", "data_bits": 32, "H": 5, "W": 7},   # flush band
    {"m": 2, "mode": "fp16acc", "H": 1, "W": 1},                # one pixel: flush + tail
    {"m": 4, "mode": "fp32", "H": 2, "W": 3},                   # smaller than one tile
    {"m": 2, "mode": "fp16", "H": 2, "W": 2},
    {"m": 4, "mode": "int", "H": 3, "W": 1},                    # one column
    {"m": 4, "mode": "fp16", "H": 9, "W": 9},     # 3×3 tiles: every pad position (coverage)
    {"m": 2, "mode": "fp32", "H": 1, "W": 6},                   # one row
    {"m": 4, "mode": "fp16", "H": 8, "W": 8},                   # multiples of m
    {"m": 2, "mode": "int", "data_bits": 3, "H": 7, "W": 4},    # odd H
]


def _id(kw):
    return "-".join(f"{k}{v}" for k, v in kw.items()) or "default"


@pytest.mark.parametrize("kw", CONFIGS, ids=[_id(k) for k in CONFIGS])
def test_rtl_maps_back_to_back(kw):
    """Two maps back to back (then idle / stall cycles, then a reset with tiles in flight):
    the model's tiles in order; back to back params.cycles per map, one beat per input cycle,
    the gaps the schedule has, latency 1 from a tile's last beat."""
    rng = np.random.default_rng(harness.seed(1520))
    p = WinoLinebufParams(**kw)
    s = _run(p, _maps(p, rng, 2), f"maps_{_id(kw)}"[:60],
             scenarios=("back_to_back", "backpressure", "reset_mid_operation"),
             idle=0.3, stall=0.4)
    assert s["back_to_back_cycles"] == 2 * p.cycles + 1      # first beat .. last tile taken
    steps = _schedule(p.H, p.W, p.m) * 2
    cyc = [i for i, st in enumerate(steps) if st[2]]
    assert s["back_to_back_issue_intervals"] == sorted(set(np.diff(cyc).tolist()))
    if p.H > 1 and p.W > 1:                      # the first tile completes on a beat
        assert s["back_to_back_latency"] == 1
    assert s["reset_leaked"] == 0


@pytest.mark.parametrize("kw,pattern", [
    ({"m": 2, "mode": "fp32", "H": 5, "W": 5}, {"idle": 0.6, "stall": 0.0}),
    ({"m": 4, "mode": "int", "data_bits": 9, "H": 6, "W": 5},
     {"idle": 0.0, "stall": 0.7}),
    ({"m": 2, "mode": "fp16", "H": 4, "W": 3},
     {"idle": 0.2, "stall": 0.2, "valid_pattern": "1101", "ready_pattern": "0001"}),
])
def test_rtl_gaps_and_backpressure(kw, pattern):
    """Three maps under heavy input gaps, heavy output stalls, and scripted patterns on both
    (the output taken one cycle in four), with junk in every lane that carries no pixel: the
    model's tiles, none lost or repeated."""
    rng = np.random.default_rng(harness.seed(1521))
    p = WinoLinebufParams(**kw)
    _run(p, _maps(p, rng, 3), f"gaps_{_id(kw)}"[:60], scenarios=("backpressure",),
         junk=rng, **pattern)


def _nonzero_maps(p, rng, count):
    """Random maps without a 0 value (so a stale value is never mistaken for padding)."""
    x = random_maps(p, rng, count)
    return np.where(x == 0, 1, x)


def test_rtl_reset_at_band_ends_then_fresh_maps():
    """Two maps of nonzero values back to back, reset (nothing valid after it) as the counters
    turn over -- at each band's last column and tail step (m = 2, 3×5: the priming band, band
    1, the flush band) and the next map's first beat -- then both maps again from the clean
    state: the model's tiles (padding zero, nothing of the interrupted map, the line memory
    refilled by the priming band).  Then the maps under scripted gaps (input valid dropped
    every third cycle, the output stalled in a 9-cycle pattern, junk in the lanes without a
    pixel): the model's tiles.  (~5 s.)"""
    rng = np.random.default_rng(harness.seed(1525))
    p = WinoLinebufParams(m=2, mode="int", data_bits=5, H=3, W=5)
    assert p.flush and p.tail
    maps = _nonzero_maps(p, rng, 2)
    ends = [i for i, st in enumerate(_schedule(p.H, p.W, p.m)) if st[1] >= p.W - 1]
    for at in [i + 1 for i in ends] + [p.cycles + 1]:
        s = _run(p, maps, f"reset_band_end_{at}", scenarios=("reset_mid_operation",),
                 idle=0.0, stall=0.0, reset_ops=2 * p.beats, reset_at=at)
        assert s["reset_leaked"] == 0
    _run(p, maps, "scripted_gaps_3x5", scenarios=("backpressure",), junk=rng,
         idle=0.0, stall=0.0, valid_pattern="110", ready_pattern="0111_0011_1")


@pytest.mark.parametrize("m", [2, 4])
def test_rtl_special_values_pass_through(m):
    """FP16 maps of specials (±0, ±inf, NaNs with payloads, subnormals, max): bit patterns
    out as in, zero padding +0."""
    rng = np.random.default_rng(harness.seed(1522))
    p = WinoLinebufParams(m=m, mode="fp16", H=5, W=6)
    sp = np.array([0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFFFF, 0x0001, 0x83FF,
                   0x7BFF], dtype=np.uint64)
    maps = sp[rng.integers(0, len(sp), (2, p.H, p.W))]
    _run(p, maps, f"specials_{m}", scenarios=("back_to_back", "backpressure"))


@_slow
@pytest.mark.parametrize("m", [2, 4])
def test_rtl_every_small_size(m):
    """Every H, W in 1..6 (both flush / tail cases and none), two maps each under idle and
    stall cycles (~80 s per m on Icarus)."""
    rng = np.random.default_rng(harness.seed(1523))
    for H in range(1, 7):
        for W in range(1, 7):
            p = WinoLinebufParams(m=m, mode="int", data_bits=6, H=H, W=W)
            _run(p, _maps(p, rng, 2), f"size_{m}_{H}_{W}", scenarios=("backpressure",),
                 junk=rng)


@_slow
def test_rtl_large_map_batch():
    """A 56×56 FP16 map (ResNet's conv2 size), F(4,3), eight maps on the batch bench with
    stalls on both streams (the in-simulation source and sink)."""
    rng = np.random.default_rng(harness.seed(1524))
    p = WinoLinebufParams(m=4, mode="fp16", H=56, W=56)
    maps = _maps(p, rng, 8)
    s = harness.run_batch(UNIT, p, stimulus={"col__payload": _payloads(p, maps)},
                          depth=2 * p.beats, stall=0.25, name="large_map", sim="verilator")
    assert s["mismatches"] == 0, s["first_mismatches"]
    assert s["checked"] == 8 * p.tiles


# == generated Verilog ============================================================================
_VERILATOR = shutil.which("verilator")
_YOSYS = shutil.which("yosys")
SHAPES = [{}, {"m": 4, "mode": "int", "data_bits": 32, "H": 5, "W": 7},
          {"m": 2, "mode": "fp16acc", "H": 1, "W": 1}, {"m": 4, "mode": "fp16", "H": 3, "W": 2},
          {"m": 2, "mode": "fp32", "H": 200, "W": 16}]


@pytest.mark.skipif(_VERILATOR is None, reason="verilator not installed")
@pytest.mark.parametrize("kw", SHAPES, ids=[_id(k) for k in SHAPES])
def test_verilog_is_lint_clean(kw):
    path = harness.verilog_file(UNIT, WinoLinebufParams(**kw))          # shared build cache
    res = lint(path)                   # the project's Verilator (tcgen lint)
    assert res.clean, (res.errors + res.warnings)[:20]


def _storage(text: str, tmp_path) -> dict:
    """Yosys' count of the design's memories and flip-flop bits (after proc, no mapping)."""
    src = tmp_path / "u.v"
    src.write_text(text)
    out = tmp_path / "stat.txt"
    subprocess.run([_YOSYS, "-q", "-p", f"read_verilog {src}; proc; opt_clean; "
                    f"tee -q -o {out} stat -width"], check=True, capture_output=True)
    stat = out.read_text()
    ff = sum(int(w) * int(c) for w, c in re.findall(r"\$\w*dff\w*_(\d+)\s+(\d+)", stat))
    mems = int(re.search(r"Number of memories:\s+(\d+)", stat).group(1))
    bits = int(re.search(r"Number of memory bits:\s+(\d+)", stat).group(1))
    return {"ff": ff, "memories": mems, "memory_bits": bits}


@pytest.mark.skipif(_YOSYS is None, reason="yosys not installed")
@pytest.mark.parametrize("kw", SHAPES, ids=[_id(k) for k in SHAPES])
def test_verilog_deterministic_and_two_rows(kw, tmp_path):
    """The same text twice; the only memory is 2 rows of W values (W = 1: a 2-value register),
    and besides it only the (m+2)² window and the counters are flip-flops -- none of it grows
    with H."""
    p = WinoLinebufParams(**kw)
    text = verilog(UNIT, p)
    assert verilog(UNIT, p) == text
    st = _storage(text, tmp_path)
    row = p.W * p.bits
    counters = (p.Th).bit_length() + (max(p.W, 2) - 1).bit_length() + 2   # band, column,
    window = p.n * p.n * p.bits                                           # tail, out_valid
    if p.W == 1:
        assert st["memories"] == 0 and st["ff"] == 2 * row + window + counters
    else:
        assert st["memories"] == 1 and st["memory_bits"] == 2 * row
        assert st["ff"] == window + counters
    if kw.get("H", 8) > 8:                       # a tall map: the same storage as a short one
        short = _storage(verilog(UNIT, WinoLinebufParams(**{**kw, "H": 8})), tmp_path)
        assert short["memory_bits"] == st["memory_bits"]
        assert st["ff"] - short["ff"] == p.Th.bit_length() - \
            WinoLinebufParams(**{**kw, "H": 8}).Th.bit_length()       # the band counter only
