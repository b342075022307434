"""tcgen's hardware library (``tcgen.hw``): number formats and the numeric reference, FP and
integer datapaths, the params machinery, the unit spec, payload layouts, pipelining and Verilog
emission.  It imports nothing else of tcgen (docs/architecture.md); keep this file free of
imports so that ``import tcgen.hw.numeric`` loads no Amaranth."""
