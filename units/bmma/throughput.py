"""Throughput model of BNN inference on BMMA arrays (paper 000 §6–7; notes §2, §3.4, §3.5).

Counts the array operations a network needs, layer by layer, with the same mapping as the
paper's kernels (Listing 6 / released code):

* a binarized convolution is, per output pixel and in-frame filter tap, an
  (images × C_in)·(C_in × C_out) bit GEMM; out-of-frame taps are skipped (the ``exclude`` count),
  so border pixels cost fewer operations;
* a fully connected layer is an (images × K)·(K × N) bit GEMM;
* each dimension is padded to the array's tile: images to M (8 on Turing), output channels to N
  (8), the reduction to K (128).  With the Turing tile this reproduces the notes' totals exactly
  (ResNet-18 2,017,252 and VGG-16 17,222,848 BMMA per 8 images; MNIST-MLP 2,960).

The first layer of the image networks is not binary (BWN, full-precision input) and is not a
BMMA; it is listed with its add/sub count and excluded from the array cycles, as stated in every
result.  An array of M×N×K folded F times finishes one operation every F cycles, chained
operations included (the GPU pays +6 cycles on an accumulator dependency), so its cycles are
``ops · F`` when operand delivery keeps up (an assumption, stated in the report).
"""
from __future__ import annotations

from dataclasses import dataclass

from .model import conv_out_size, exclude_counts
from .paper import (BMMA_CHAIN_INDEPENDENT, BMMA_CHAIN_SAME_ACC, BMMA_LATENCY_CYCLES,
                    GPU_BOOST_GHZ, GPU_SMS, NOTES_BMMA_PER_8, PAPER_2080TI)

__all__ = ["Layer", "NETWORKS", "PAPER_2080TI", "NOTES_BMMA_PER_8", "bwn_ops", "layer_chains",
           "layer_top_cycles", "layer_top_schedule",
           "layer_ops", "network_ops", "images_per_second", "gpu_peak", "gpu_chain_cycles",
           "accumulator_bits"]


@dataclass(frozen=True)
class Layer:
    kind: str            # "conv", "fc" or "bwn" (non-binary first layer)
    cin: int
    cout: int
    h: int = 1           # input height = width (conv)
    k: int = 1           # filter size (conv)
    stride: int = 1
    pool: int = 1        # OR-pool after the layer (does not change the BMMA count)
    repeat: int = 1

    @property
    def pad(self) -> int:
        return self.k // 2

    @property
    def out(self) -> int:
        return conv_out_size(self.h, self.k, self.stride, self.pad) if self.kind != "fc" else 1


def _c(cin, cout, h, k=3, stride=1, pool=1, repeat=1):
    return Layer("conv", cin, cout, h, k, stride, pool, repeat)


def _fc(cin, cout):
    return Layer("fc", cin, cout)


#: layer lists as the released code runs them (notes §3.4)
NETWORKS: dict[str, list[Layer]] = {
    "MNIST-MLP": [_fc(784, 1024), _fc(1024, 1024), _fc(1024, 1024), _fc(1024, 10)],
    "Cifar-VGG": [Layer("bwn", 3, 128, 32, 3), _c(128, 128, 32, pool=2), _c(128, 256, 16),
                  _c(256, 256, 16, pool=2), _c(256, 512, 8), _c(512, 512, 8, pool=2),
                  _fc(8192, 1024), _fc(1024, 1024), _fc(1024, 10)],
    "Cifar-ResNet14": [Layer("bwn", 3, 128, 32, 3), _c(128, 128, 32, repeat=4),
                       _c(128, 256, 32, stride=2), _c(256, 256, 16, repeat=3),
                       _c(256, 512, 16, stride=2), _c(512, 512, 8, repeat=3),
                       _fc(32768, 512), _fc(512, 10)],
    "AlexNet": [Layer("bwn", 3, 64, 224, 11, 4, pool=2), _c(64, 192, 28, k=5, pool=2),
                _c(192, 384, 14), _c(384, 256, 14), _c(256, 256, 14, pool=2),
                _fc(12544, 4096), _fc(4096, 4096), _fc(4096, 1000)],
    "VGG-16": [Layer("bwn", 3, 64, 224, 3), _c(64, 64, 224, pool=2), _c(64, 128, 112),
               _c(128, 128, 112, pool=2), _c(128, 256, 56), _c(256, 256, 56, repeat=2, pool=2),
               _c(256, 512, 28), _c(512, 512, 28, repeat=2, pool=2),
               _c(512, 512, 14, repeat=3, pool=2),
               _fc(25088, 4096), _fc(4096, 4096), _fc(4096, 1000)],
    "ResNet-18": [Layer("bwn", 3, 64, 224, 7, 4), _c(64, 64, 56, repeat=4),
                  _c(64, 128, 56, stride=2), _c(128, 128, 28, repeat=3),
                  _c(128, 256, 28, stride=2), _c(256, 256, 14, repeat=3),
                  _c(256, 512, 14, stride=2), _c(512, 512, 7, repeat=3),
                  _fc(25088, 512), _fc(512, 1000)],
}

def _ceil(a, b):
    return -(-a // b)


def layer_ops(layer: Layer, batch: int = 8, tile=(8, 8, 128)) -> dict:
    """Array operations of one layer (one repeat) for ``batch`` images on an M×N×K tile.

    Returns ops, useful bit-MACs (true sizes, in-frame taps only) and the padded bit-MACs the
    operations perform; their ratio is the tile utilization (K-padding of 64-channel layers,
    N-padding of the 10-way output, M-padding at batch 1 are the waste the notes list).
    """
    m, n, k = tile
    if layer.kind == "bwn":
        p = layer.out
        return {"ops": 0, "useful": 0, "padded": 0,
                "bwn_addsub": batch * p * p * layer.cout * layer.k * layer.k * layer.cin}
    if layer.kind == "fc":
        ops = _ceil(batch, m) * _ceil(layer.cout, n) * _ceil(layer.cin, k)
        useful = batch * layer.cout * layer.cin
    else:
        taps = int(layer.k * layer.k * layer.out ** 2 -
                   exclude_counts(layer.h, layer.h, layer.k, layer.k, layer.stride,
                                  layer.pad).sum())
        ops = taps * _ceil(batch, m) * _ceil(layer.cout, n) * _ceil(layer.cin, k)
        useful = taps * batch * layer.cout * layer.cin
    return {"ops": ops, "useful": useful, "padded": ops * m * n * k, "bwn_addsub": 0}


def layer_chains(layer: Layer, batch: int = 8, tile=(8, 8, 128)) -> list[int]:
    """The chained array operations of each D tile of a binary layer, in the order
    ``bnn_layer`` runs them (tb/bnn_layer_runs.py): for a convolution, output pixels row-major,
    then image tiles, then output-channel tiles, each tile in-frame taps · ⌈C_in/K⌉ operations;
    for a fully connected layer, image tiles, then output tiles, ⌈C_in/K⌉ each.  Their sum is
    :func:`layer_ops`' ops."""
    m, n, k = tile
    tiles = _ceil(batch, m) * _ceil(layer.cout, n)
    if layer.kind == "fc":
        return [_ceil(layer.cin, k)] * tiles
    taps = layer.k * layer.k - exclude_counts(layer.h, layer.h, layer.k, layer.k, layer.stride,
                                              layer.pad)
    return [int(t) * _ceil(layer.cin, k) for t in taps.reshape(-1) for _ in range(tiles)]


def layer_top_schedule(chains, m: int = 8, fold: int = 1) -> tuple[list[int], int]:
    """The cycle each request of ``bnn_layer`` is accepted at, and the cycles of the run (first
    request offered at cycle 0 .. last output taken, as :func:`layer_top_cycles`), requests
    always offered and outputs always taken.  Within a chain there is no stall (request i of a
    chain starting at t is accepted at t + (i + 1)·fold − 1); a chain starts when the array's
    D register is free (see :func:`layer_top_cycles`)."""
    t = 0                 # first cycle the array may work on the next chain
    buf_free = 0          # first cycle the tile buffer may load a D
    x = None
    accepts = []
    for length in chains:
        accepts += [t + (i + 1) * fold - 1 for i in range(length)]
        d_valid = t + length * fold          # accepted at t + L·F − 1, D valid one cycle later
        x = max(d_valid, buf_free)           # D moves into the buffer (the array's d.ready)
        t = x                                # the array's D register is free that cycle
        buf_free = x + m                     # rows at x + 1 .. x + m, the last frees it
    if x is None:
        return [], 0
    return accepts, x + m + 2                # last row at x + m, its output taken at x + m + 1


def layer_top_cycles(chains, m: int = 8, fold: int = 1) -> int:
    """Cycles of ``bnn_layer`` (issue 42) from the first request offered to the last output
    taken, requests and outputs never stalled, for D tiles of ``chains[j]`` chained operations
    each (the last emitting; every tile closes its pool windows).

    The array does a chain in L·fold cycles; its D moves into the serializer's tile buffer the
    cycle it is valid if the buffer is free (empty, or sending its last row), else the array
    waits (its D register holds the accumulator) until it is; the buffer sends m rows to the
    epilogue, one a cycle; the epilogue's output is registered (1 cycle).  So a tile costs
    max(L·fold, m) cycles in steady state, and the run ops·fold + m + 2 cycles when every tile
    has L·fold ≥ m, against the array alone's ops·fold + 1 (its latency fold, at fold = 1):
    the top adds m + 1 cycles of drain (the buffer load, m rows; the epilogue's register
    replaces the array's output cycle) and, per tile with L·fold < m, m − L·fold cycles of
    serializer stall."""
    return layer_top_schedule(chains, m, fold)[1]


def bwn_ops(layer: Layer, batch: int = 8, tile=(8, 8, 8)) -> dict:
    """Operations of the BWN first layer on a ``bwn_array`` M×N×K tile (issue 42), mapped as
    the tests run it: per output pixel, the in-frame taps' C_in activations concatenated
    (im2col, zero activations padding the last chunk) and chained in K-chunks, images in
    M-tiles, output channels in N-tiles.  Returns ops (whole layer, one repeat), per_pixel
    ((P, Q) ops of each output pixel), useful add/subs and padded ones; the array takes
    ops · fold cycles like the BMMA arrays."""
    m, n, k = tile
    taps = layer.k * layer.k - exclude_counts(layer.h, layer.h, layer.k, layer.k, layer.stride,
                                              layer.pad)
    tiles = _ceil(batch, m) * _ceil(layer.cout, n)
    per_pixel = -(-(taps * layer.cin) // k) * tiles
    ops = int(per_pixel.sum())
    return {"ops": ops, "per_pixel": per_pixel,
            "useful": int(taps.sum()) * layer.cin * batch * layer.cout,
            "padded": ops * m * n * k}


def network_ops(name: str, batch: int = 8, tile=(8, 8, 128)) -> dict:
    """Totals over a network: ops, useful and padded bit-MACs, utilization, BWN add/subs."""
    tot = {"ops": 0, "useful": 0, "padded": 0, "bwn_addsub": 0}
    for layer in NETWORKS[name]:
        for key, v in layer_ops(layer, batch, tile).items():
            tot[key] += v * layer.repeat
    tot["utilization"] = tot["useful"] / tot["padded"] if tot["padded"] else 0.0
    return tot


def accumulator_bits(networks=None) -> int:
    """Signed bits that hold every binary layer's result v = K − 2·popc ∈ [−K, K] over the
    networks (K = cin·k² for a convolution, cin for a fully connected layer; notes §2 [D])."""
    k_max = max(layer.cin * (layer.k * layer.k if layer.kind == "conv" else 1)
                for name in (networks or NETWORKS) for layer in NETWORKS[name]
                if layer.kind != "bwn")
    return k_max.bit_length() + 1


def images_per_second(name: str, tile=(8, 8, 128), fold: int = 1, clock_mhz: float = 100.0,
                      batch: int = 8, arrays: int = 1) -> float:
    """Images/s of ``arrays`` M×N×K arrays folded ``fold`` times at ``clock_mhz`` on the binary
    layers (BWN first layer excluded), one operation per ``fold`` cycles per array, batches
    spread over arrays with no stalls (operand bandwidth assumed sufficient)."""
    ops = network_ops(name, batch, tile)["ops"]
    cycles = ops * fold / arrays
    return batch * clock_mhz * 1e6 / cycles


def gpu_peak(clock_ghz: float = GPU_BOOST_GHZ, sms: int = GPU_SMS) -> float:
    """BMMA/s of the RTX 2080 Ti by the notes' issue model: 4 sub-cores per SM, one BMMA per
    4 cycles each (notes §2 [D]; the boost clock is an assumption, the paper gives none)."""
    return sms * 4 * 0.25 * clock_ghz * 1e9


def gpu_chain_cycles(length: int, same_accumulator: bool = True) -> int:
    """Cycles of ``length`` back-to-back BMMAs in one warp (notes §2 [P]: ~201 cycles for one,
    +10 per extra when C/D is the same tile, +4 when independent)."""
    if length <= 0:
        return 0
    return BMMA_LATENCY_CYCLES + (length - 1) * (BMMA_CHAIN_SAME_ACC if same_accumulator
                                                 else BMMA_CHAIN_INDEPENDENT)


def _check_notes():
    return {k: network_ops(k)["ops"] - v for k, v in NOTES_BMMA_PER_8.items()}


def summary_table(clock_mhz: float, tiles=((8, 8, 128, 1), (8, 8, 128, 4)), batch: int = 8):
    """Rows for the report: per network, BMMA count, utilization and images/s per tile/fold,
    beside the paper's 2080 Ti BTC-FMT throughput."""
    rows = []
    for name in NETWORKS:
        tot = network_ops(name, batch)
        row = {"network": name, "bmma_per_8": network_ops(name, 8)["ops"],
               "utilization": tot["utilization"], "bwn_addsub": tot["bwn_addsub"],
               "paper_2080ti": PAPER_2080TI["BTC-FMT"][name][1]}
        for m, n, k, f in tiles:
            row[f"m{m}n{n}k{k}F{f}"] = images_per_second(name, (m, n, k), f, clock_mhz, batch)
        rows.append(row)
    return rows


if __name__ == "__main__":        # quick look: python -m tcgen.units.bmma.throughput
    print(_check_notes())
    for r in summary_table(100.0):
        print(r)

