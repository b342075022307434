"""BMMA family (paper 000, BTC-BNN): the bit tensor-core array, an INT8 MAC array for
comparison, and the fused BNN epilogue.

Units (declared in :mod:`tcgen.units.bmma.family`): ``bmma_array``, ``int8_mac_array``,
``bnn_epilogue``, ``bnn_affine``, ``bwn_array`` and ``bnn_layer`` (the array, a tile-to-row
serializer and the epilogue in one design).  Golden models: :mod:`tcgen.units.bmma.model`
(numpy only); RTL: :mod:`tcgen.units.bmma.rtl`; throughput model: :mod:`tcgen.units.bmma.throughput`.  See
docs/bmma.md.
"""
