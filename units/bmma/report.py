"""What the BMMA study's report (studies/bmma_ppa.md.j2) shows beside the sweep's rows: the
popcount full-adder census against its bound, the full adders of one output channel, the
request field a timing path starts at, and the throughput model of the notes' networks.
Everything here is computed from the generator and the family's models; nothing is measured.
"""
from __future__ import annotations

import re

from . import paper
from . import throughput as tp

__all__ = ["context", "popcount_census_rows", "channel_census", "request_field",
           "throughput_rows", "resnet18"]


def popcount_census_rows(sizes=(32, 64, 128, 256)) -> list[dict]:
    """tcgen.hw.intarith.popcount's full and half adders against the n − bits(n) bound."""
    from .rtl import popcount_census
    out = []
    for n in sizes:
        c = dict(popcount_census(n))
        c["n"] = n
        c["over_pct"] = 100 * (c["fa"] / c["bound"] - 1)
        out.append(c)
    return out


def channel_census(k: int = 128, acc_width: int = 32) -> dict:
    """Full and half adders of one bmma_array output channel: ``k`` product bits and the
    ``acc_width``-bit base in one compressor tree, then the carry-propagate adder."""
    from amaranth import Signal

    from tcgen.hw.intarith import compress

    from .rtl import compressor_census
    return dict(compressor_census(lambda m: compress(
        m, [[Signal(name=f"p{i}") for i in range(k)] + [Signal(name="c0")]] +
        [[Signal(name=f"c{i}")] for i in range(1, acc_width)], acc_width, "ch")))


def request_field(pin: str | None, params: dict | None = None) -> str:
    """Which request field a ``req__payload[i]`` bit of bmma_array is (``params``: the array's
    parameters, default m8n8k128): the payload with only bit i set, unpacked through the
    request layout."""
    from tcgen.hw.layout import flat, unpack, width_of

    from . import layouts
    from .params import BmmaArrayParams
    mt = re.fullmatch(r"req__payload\[(\d+)\]", pin or "")
    if not mt:
        return "an internal register"
    i = int(mt.group(1))
    layout = flat(layouts.array_request(BmmaArrayParams(**(params or {}))))
    for name, value in unpack(layout, [1 << i]).items():
        if int(value[0]):
            label = name.upper() if name in ("a", "b", "c") else name
            bit = f" bit {int(value[0]).bit_length() - 1}" \
                if width_of(layout[name].shape) > 1 else ""
            return f"request field {label}{bit}"
    return "a request bit"


def throughput_rows(clocks_mhz) -> list[dict]:
    """Per network of the notes: BMMA operations per 8 images, tile utilization, the BWN
    first layer's add/sub count, the paper's 2080 Ti images/s (Table 7) and one m8n8k128
    F=1 array's images/s at each clock."""
    out = []
    for name in tp.NETWORKS:
        tot = tp.network_ops(name)
        ips = [tp.images_per_second(name, (8, 8, 128), 1, c) for c in clocks_mhz]
        ref = paper.PAPER_2080TI["BTC-FMT"][name][1]
        out.append({"network": name, "ops": tot["ops"], "utilization": tot["utilization"],
                    "bwn_addsub": tot["bwn_addsub"], "paper_ips": ref, "ips": ips,
                    "arrays_to_match": ref / ips[0]})
    return out


def resnet18(clock_mhz: float = 100.0) -> dict:
    """ResNet-18 on one m8n8k128 F=1 array against the paper's GPU and its issue-model peak."""
    ips = tp.images_per_second("ResNet-18", (8, 8, 128), 1, clock_mhz)
    gpu = paper.PAPER_2080TI["BTC-FMT"]["ResNet-18"][1]
    peak = tp.gpu_peak()
    peak_ips = 8 * peak / paper.NOTES_BMMA_PER_8["ResNet-18"]
    return {"ips": ips, "gpu_ips": gpu, "arrays": gpu / ips, "peak_bmma_per_s": peak,
            "peak_ips": peak_ips, "gpu_pct_of_peak": 100 * gpu / peak_ips,
            "batch1_utilization": tp.network_ops("ResNet-18", batch=1)["utilization"]}


def context() -> dict:
    """The names the report template uses."""
    return {"popcount_census_rows": popcount_census_rows, "channel_census": channel_census,
            "request_field": request_field, "throughput_rows": throughput_rows,
            "resnet18": resnet18}
