"""tcgen.verify: the cocotb verification harness, installed (``pip install 'tcgen-hdl[verify]'``).

* :mod:`tcgen.verify.harness` -- ``run`` / ``run_batch``: elaborate a unit, build it once per
  configuration with Icarus or Verilator, run a cocotb bench against the unit's golden model;
* :mod:`tcgen.verify.benches` -- the cocotb test modules (``fixed_latency``, ``stream``,
  ``batch``), loaded by the simulator as ``tcgen.verify.benches.<bench>``;
* :mod:`tcgen.verify.stimulus`, :mod:`~tcgen.verify.drivers`, :mod:`~tcgen.verify.batch`,
  :mod:`~tcgen.verify.bench_config`, :mod:`~tcgen.verify.coverage` -- what the benches use;
* :mod:`tcgen.verify.cli` -- ``tcgen verify UNIT -p ...`` (docs/plugins.md).

Layering (docs/architecture.md, .importlinter): this is application layer, beside
``tcgen.sweep``; it is the only part of tcgen that imports cocotb, and only ``tcgen.cli`` imports
it (lazily, for ``tcgen verify``).  Importing this package imports nothing else.

Where the builds go (:func:`build_dir`): ``TCGEN_BUILD_DIR`` if set; else, when tcgen runs from
its own checkout (an editable install), the checkout's ``build/``; else ``./build/tcgen`` under
the current folder -- never inside the installed package.  Simulations go to ``<that>/sim``,
functional coverage databases to ``<that>/coverage``.
"""
from __future__ import annotations

from pathlib import Path

from tcgen.hw.files import ENV_BUILD_DIR, build_root

__all__ = ["build_dir", "ENV_BUILD_DIR"]


def build_dir() -> Path:
    """The folder the harness builds and simulates in (absolute; see the module docstring):
    :func:`tcgen.hw.files.build_root`, the one rule for every build folder of tcgen."""
    return build_root()
