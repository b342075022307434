"""tcgen's shared hardware library: number formats, FP and integer datapaths, the unit
protocol and registry, Verilog generation and the CLI."""
__version__ = "0.1.0"
