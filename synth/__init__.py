"""The PPA flow (``tcgen.synth``; docs/ppa.md): Yosys synthesis to a liberty, OpenSTA timing
and power, vectorless or simulation-annotated activity.  It takes Verilog text, a top name, a
liberty, a clock and (for sim power) a stimulus, and knows nothing of units: the entry point is
:func:`tcgen.synth.ppa.measure_verilog`; ``tcgen.measure`` feeds it a unit."""
