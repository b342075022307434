"""Figures of the BTC/BNN paper (Li et al., "Accelerating Binarized Neural Networks via Bit-Tensor-
Cores in Turing GPUs") and of its engineering notes, cited, in one place
(../shared/papers/000_btc_bnn.md).  The throughput model, its tests and the study read them from
here, never as literals of their own."""
from __future__ import annotations

__all__ = ["NOTES_BMMA_PER_8", "PAPER_2080TI", "GPU_SMS", "GPU_BOOST_GHZ",
           "BMMA_LATENCY_CYCLES", "BMMA_CHAIN_SAME_ACC", "BMMA_CHAIN_INDEPENDENT"]

#: the notes' BMMA totals per 8 images (000_btc_bnn.md §3.4, per network), which
#: :func:`tcgen.units.bmma.throughput.network_ops` must reproduce
NOTES_BMMA_PER_8 = {"MNIST-MLP": 2_960, "Cifar-VGG": 539_600, "Cifar-ResNet14": 1_498_280,
                    "AlexNet": 911_104, "VGG-16": 17_222_848, "ResNet-18": 2_017_252}

#: Table 7 (RTX 2080 Ti; 000_btc_bnn.md §3.5): (8-image latency ms, throughput images/s)
PAPER_2080TI = {"BTC": {"MNIST-MLP": (0.057, 4.38e6), "Cifar-VGG": (0.317, 4.69e4),
                        "Cifar-ResNet14": (0.728, 2.06e4), "AlexNet": (1.878, 4.87e3),
                        "VGG-16": (5.840, 1.62e3), "ResNet-18": (1.538, 7.23e3)},
                "BTC-FMT": {"MNIST-MLP": (0.053, 6.78e6), "Cifar-VGG": (0.276, 5.06e4),
                            "Cifar-ResNet14": (0.618, 2.24e4), "AlexNet": (1.862, 4.87e3),
                            "VGG-16": (5.466, 1.76e3), "ResNet-18": (1.438, 7.34e3)}}

#: RTX 2080 Ti streaming multiprocessors (000_btc_bnn.md, the GPU table of §3)
GPU_SMS = 68
#: its boost clock, GHz: an assumption, the paper gives no clocks (000_btc_bnn.md §2 [D])
GPU_BOOST_GHZ = 1.545

#: one BMMA's measured latency in cycles (RTX 2080) and the extra cycles per back-to-back BMMA
#: on the same accumulator tile / on independent ones (000_btc_bnn.md §2 [P])
BMMA_LATENCY_CYCLES = 201
BMMA_CHAIN_SAME_ACC = 10
BMMA_CHAIN_INDEPENDENT = 4
