"""tcgen: generate, verify and measure the arithmetic units of low-precision tensor-core papers.

This package is the application layer (registry, CLI, measure a unit); the library is
``tcgen.hw``, the paper families are ``tcgen.units.<family>`` and the PPA flow is
``tcgen.synth`` (docs/architecture.md).  Importing ``tcgen`` imports nothing else.
"""
__version__ = "0.2.0"
