"""Validated parameters of the BMMA family (docs/architecture.md, "The unit protocol"; paper notes 000 §1, §2, §4).

Defaults are the paper's configuration: the Turing ``bmma m8n8k128`` tile (A 8×128 bits,
B 128×8 bits, C/D 8×8 s32), unfolded (one tile per cycle).
"""
from __future__ import annotations

from dataclasses import dataclass

from tcgen.hw.params import Params, param

__all__ = ["BmmaArrayParams", "Int8MacArrayParams", "BnnEpilogueParams", "BnnAffineParams",
           "BwnArrayParams", "BnnLayerParams", "OPS", "FOLDS",
           "SENSE_GE", "SENSE_LT", "SENSE_ZERO", "SENSE_ONE"]

OPS = ("xor_and", "xor", "and")
FOLDS = (1, 2, 4, 8)

#: per-channel threshold sense codes of ``bnn_epilogue`` (2 bits per channel)
SENSE_GE, SENSE_LT, SENSE_ZERO, SENSE_ONE = 0, 1, 2, 3


#: the fields bnn_epilogue and bnn_layer share (same default, range and meaning; the layer
#: hands them to its epilogue, :meth:`BnnLayerParams.epilogue_params`): one definition each
_EPILOGUE_FIELDS = {
    "k_width": (16, dict(range=(1, 24)), "bits of k_eff (unsigned; the true K of an item / "
                                         "tile: C·(R·S − exclude) for a convolution pixel)"),
    "res_width": (32, dict(range=(0, 32)), "bits of the signed integer residual and of the "
                                           "saved v (0 = no residual input)"),
    "tau_width": (32, dict(range=(2, 40)), "bits of the signed integer threshold τ"),
    "sense": (True, {}, "per-channel 2-bit sense (γ > 0: v ≥ τ, γ < 0: v < τ, γ = 0: "
                        "constant); false = the paper/code's v ≥ τ only"),
    "res_pool": (False, {}, "the residual is the maximum of a 2×2 window of the saved map (the "
                            "res field carries its 4 values per channel; the code's "
                            "downsampling blocks)"),
}


def _epilogue_field(name: str):
    """A new dataclass field for ``name`` of :data:`_EPILOGUE_FIELDS`."""
    default, kw, doc = _EPILOGUE_FIELDS[name]
    return param(default, doc=doc, **kw)


def _check_residual(p) -> None:
    """The residual options of bnn_epilogue and bnn_layer (one rule for both)."""
    if p.res_width == 1:
        raise p.error("res_width", p.res_width, "0 (no residual) or 2..32")
    if p.res_pool and not p.res_width:
        raise p.error("res_pool", p.res_pool, "false when res_width = 0 (no residual to pool)")
    if p.save and not p.res_width:
        raise p.error("save", p.save, "false when res_width = 0 (the saved value is "
                                      "res_width bits wide)")


@dataclass(frozen=True)
class _ArrayParams(Params):
    m: int = param(8, range=(1, 64), doc="rows of A and D (images of the batch tile)")
    n: int = param(8, range=(1, 64), doc="columns of B and D (output channels)")
    k: int = param(128, range=(1, 4096), doc="reduction length per operation, in elements")
    fold: int = param(1, choices=FOLDS, doc="cycles per operation (K/fold elements per output "
                                            "per cycle)")
    acc_width: int = param(32, range=(8, 32), doc="accumulator bits (two's complement, wraps)")

    def check(self):
        if self.k % self.fold:
            raise self.error("k", self.k, f"a multiple of fold ({self.fold})")

    @property
    def chunk(self) -> int:
        """Elements of K reduced per cycle and output."""
        return self.k // self.fold


@dataclass(frozen=True)
class BmmaArrayParams(_ArrayParams):
    """``bmma_array``: M×N×K bit tensor-core array (paper §1.1; notes §2 design points a–c)."""
    UNIT = "bmma_array"
    ops: str = param("xor_and", choices=OPS,
                     doc="bit products built: xor_and = run-time select (Ampere-like), "
                         "xor = Turing only (paper-faithful), and = AND only")

    def check(self):
        if self.k % 32:
            raise self.error("k", self.k, "a multiple of 32 (whole 32-bit MSB-first words)")
        super().check()
        need = self.k.bit_length() + 1
        if self.acc_width < need:
            raise self.error("acc_width", self.acc_width,
                             f"at least {need} (a signed value of ±k={self.k} must fit)")


@dataclass(frozen=True)
class Int8MacArrayParams(_ArrayParams):
    """``int8_mac_array``: the INT8 MAC array of the same structure, for cost comparison.

    Default m2n2k16 (64 MACs per cycle, the equal-work partner of bmma_array m2n2k128 F=8 in
    the PPA study): an m8n8 default would put 1024 multipliers in every `generate --all` and
    `make run`."""
    UNIT = "int8_mac_array"
    m: int = param(2, range=(1, 64), doc="rows of A and D")
    n: int = param(2, range=(1, 64), doc="columns of B and D")
    k: int = param(16, range=(1, 1024), doc="reduction length per operation (INT8 elements)")

    def check(self):
        super().check()
        need = 16 + (self.k - 1).bit_length()
        if self.acc_width < need:
            raise self.error("acc_width", self.acc_width,
                             f"at least {need} (one operation's sum of {self.k} INT8 products "
                             f"must fit)")


@dataclass(frozen=True)
class BnnEpilogueParams(Params):
    """``bnn_epilogue``: fused K_eff − 2·acc (+ residual) ≥ τ -> bit, OR-pool, MSB-first pack."""
    UNIT = "bnn_epilogue"
    n: int = param(8, range=(1, 64), doc="output channels per item (one D-tile row)")
    acc_width: int = param(32, range=(8, 32), doc="bits of each accumulator (signed)")
    k_width: int = _epilogue_field("k_width")
    res_width: int = _epilogue_field("res_width")
    tau_width: int = _epilogue_field("tau_width")
    sense: bool = _epilogue_field("sense")
    fixup: bool = param(True, doc="v = k_eff − 2·acc + res (the ±1 fix-up of a popcount); false "
                                  "= v = acc + res, no k_eff field (an integer input: the BWN "
                                  "first layer)")
    res_pool: bool = _epilogue_field("res_pool")
    save: bool = param(False, doc="also emit v (the pre-threshold value, residual included) of "
                                  "the window's last item, wrapped to res_width bits: the next "
                                  "block's residual")
    pool_rows: int = param(1, range=(1, 64), key_default=False,
                           doc="interleaved pool windows: item i pools into window i mod "
                               "pool_rows (the rows of a D tile, one image each, as bnn_layer "
                               "serializes them); 1 = consecutive items pool together")

    def check(self):
        _check_residual(self)

    @property
    def v_width(self) -> int:
        """Bits of the exact signed k_eff − 2·acc + residual − τ (or acc + residual − τ)."""
        return max(self.k_width, self.acc_width, self.res_width - 1, self.tau_width - 1) + 3

    @property
    def save_width(self) -> int:
        """Bits of the exact signed v = k_eff − 2·acc + residual (or acc + residual)."""
        if not self.fixup:
            return max(self.acc_width, self.res_width) + 1
        return max(self.k_width + 1, self.acc_width + 1, self.res_width) + 1


@dataclass(frozen=True)
class BnnAffineParams(Params):
    """``bnn_affine``: the last layer's BN kept as an affine map, in fixed point:
    y = (K_eff − 2·acc)·scale + bias, exact (notes §1.7 [C])."""
    UNIT = "bnn_affine"
    n: int = param(8, range=(1, 64), doc="output channels per item (one D-tile row)")
    acc_width: int = param(32, range=(8, 32), doc="bits of each accumulator (signed)")
    k_width: int = param(16, range=(1, 24), doc="bits of k_eff (unsigned; the true K)")
    scale_width: int = param(16, range=(2, 32), doc="bits of the signed fixed-point scale "
                                                    "(the binary point is the user's: scale_q = "
                                                    "scale·2^F)")
    bias_width: int = param(32, range=(2, 64), doc="bits of the signed fixed-point bias "
                                                   "(bias_q = bias·2^F, the same F)")

    @property
    def v_width(self) -> int:
        """Bits of the exact signed v = k_eff − 2·acc."""
        return max(self.k_width, self.acc_width) + 2

    @property
    def out_width(self) -> int:
        """Bits of the exact signed y = v·scale + bias."""
        return max(self.v_width + self.scale_width, self.bias_width) + 1


@dataclass(frozen=True)
class BwnArrayParams(_ArrayParams):
    """``bwn_array``: the BWN first layer (binary weights, signed integer input) on the arrays'
    sequencer: D = C + Σ (w ? x : −x)."""
    UNIT = "bwn_array"
    k: int = param(8, range=(1, 1024), doc="reduction length per operation (activations; the "
                                           "stem's im2col K is R·S·C, 147 for ResNet-18)")
    a_width: int = param(8, range=(2, 16), doc="bits of each signed activation (8: an INT8 "
                                               "image; unsigned 8-bit pixels need 9)")

    def check(self):
        super().check()
        need = self.a_width + max(1, (self.k - 1).bit_length()) + 1
        if self.acc_width < need:
            raise self.error("acc_width", self.acc_width,
                             f"at least {need} (one operation's sum of {self.k} ±{self.a_width}"
                             f"-bit activations must fit)")


@dataclass(frozen=True)
class BnnLayerParams(Params):
    """``bnn_layer``: ``bmma_array`` → a tile-to-row serializer → ``bnn_epilogue`` in one
    design (issue 42): whole binarized layers, streaming.  The array's fields and checks are
    :class:`BmmaArrayParams`', the epilogue's :class:`BnnEpilogueParams`' (its n = the array's
    n, its acc_width the array's, fixup on, pool_rows = m)."""
    UNIT = "bnn_layer"
    m: int = param(8, range=(1, 64), doc="rows of the D tile (images of the batch tile)")
    n: int = param(8, range=(1, 64), doc="columns of the D tile (output channels)")
    k: int = param(128, range=(1, 4096), doc="reduction length per array operation, in bits "
                                             "(a multiple of 32)")
    fold: int = param(1, choices=FOLDS, doc="cycles per array operation")
    acc_width: int = param(32, range=(8, 32), doc="accumulator bits (two's complement, wraps)")
    ops: str = param("xor_and", choices=OPS, doc="bit products built (as bmma_array)")
    k_width: int = _epilogue_field("k_width")
    res_width: int = _epilogue_field("res_width")
    tau_width: int = _epilogue_field("tau_width")
    sense: bool = _epilogue_field("sense")
    res_pool: bool = _epilogue_field("res_pool")
    save: bool = param(True, doc="also emit v (pre-threshold, residual included): the next "
                                 "block's residual")

    def check(self):
        if self.k % 32:
            raise self.error("k", self.k, "a multiple of 32 (whole 32-bit MSB-first words)")
        if self.k % self.fold:
            raise self.error("k", self.k, f"a multiple of fold ({self.fold})")
        need = self.k.bit_length() + 1
        if self.acc_width < need:
            raise self.error("acc_width", self.acc_width,
                             f"at least {need} (a signed value of ±k={self.k} must fit)")
        _check_residual(self)

    @property
    def chunk(self) -> int:
        return self.k // self.fold

    def array_params(self) -> BmmaArrayParams:
        """The ``bmma_array`` inside."""
        return BmmaArrayParams(m=self.m, n=self.n, k=self.k, fold=self.fold,
                               acc_width=self.acc_width, ops=self.ops)

    def epilogue_params(self) -> BnnEpilogueParams:
        """The ``bnn_epilogue`` inside: one item per D row, m interleaved pool windows."""
        return BnnEpilogueParams(n=self.n, acc_width=self.acc_width, k_width=self.k_width,
                                 res_width=self.res_width, tau_width=self.tau_width,
                                 sense=self.sense, fixup=True, res_pool=self.res_pool,
                                 save=self.save, pool_rows=self.m)
