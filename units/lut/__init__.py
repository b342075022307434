"""LUT Tensor Core (paper 003, Mo et al., ISCA'25): table precompute, the LUT DP-4 with
symmetric tables, offline index inversion and bit-serial weights, the M×N×K array and its
baselines.  Golden models: :mod:`tcgen.units.lut.model` (numpy only).  See docs/lut.md.
"""
