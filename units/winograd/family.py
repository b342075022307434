"""The Winograd family's units (target of the ``winograd`` entry point of ``tcgen.families``).
Being built (issue 15): the golden models are :mod:`tcgen.units.winograd.model`."""
from __future__ import annotations

__all__ = ["UNITS"]

UNITS = ()
