"""Paper unit families (``tcgen.units.<family>``).  Each family imports only ``tcgen.hw`` and
declares its units in ``family.py`` as a tuple ``UNITS`` of :class:`tcgen.hw.spec.UnitSpec`,
named by an entry point of the group ``tcgen.families`` (pyproject.toml)."""
