"""The PPA flow (DESIGN.md §6): Yosys synthesis to a liberty, OpenSTA timing and power,
vectorless or simulation-annotated activity.  Entry point: :func:`synth.ppa.measure`."""
