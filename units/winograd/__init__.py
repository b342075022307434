"""Winograd convolution (paper 002, Yan, Wang, Chu, "Optimizing batched Winograd convolution on
GPUs", PPoPP'20): F(2×2,3×3) and F(4×4,3×3) transforms (ITF, FTF, OTF), the element-wise stage
as 16 / 36 independent GEMM lanes, against direct 3×3 convolution.  Golden models:
:mod:`tcgen.units.winograd.model` (numpy only); the paper's figures:
:mod:`tcgen.units.winograd.paper`.  Units so far: the transforms ``wino_itf``, ``wino_ftf``,
``wino_otf`` (issue 15: the convolution datapaths next).  See docs/winograd.md.
"""
