"""Sparse Tensor Core (paper 001, Zhu, Zhang, Gu, Xie, MICRO-52 2019): the VectorSparse
encoding (L-dim row vectors, at most K non-zeros, ⌈log2 L⌉-bit offsets), the vector-wise sparse
octet against the dense Volta-style octet, and their cycle model.  Golden models:
:mod:`tcgen.units.sparse.model` (numpy only); the paper's figures: :mod:`tcgen.units.sparse.paper`.
See docs/sparse.md.  No units yet (issue 14: models first).
"""
