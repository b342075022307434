"""PacQ (paper 004): the parallel FP-INT multiplier, its DP-4, and their baselines.

Units (declared in :mod:`tcgen.units.pacq.family`): ``fp16_mul``, ``int_dequant``,
``dequant_mul``, ``pacq_mul``, ``dp4_baseline``, ``dp4_pacq``.  Golden models:
:mod:`tcgen.units.pacq.model` (numpy only); RTL: :mod:`tcgen.units.pacq.rtl`; the octet
dataflow model: :mod:`tcgen.units.pacq.dataflow`; the paper's figures and the notes' test
vectors: :mod:`tcgen.units.pacq.paper`.  See docs/pacq.md.
"""
