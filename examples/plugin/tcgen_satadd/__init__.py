"""tcgen_satadd: an example third-party tcgen family (docs/plugins.md).

* :mod:`tcgen_satadd.params` -- :class:`SatAddParams` (``UNIT = "sat_add"``; width, signed);
* :mod:`tcgen_satadd.model`  -- the bit-exact golden model (numpy only);
* :mod:`tcgen_satadd.rtl`    -- the Amaranth component;
* :mod:`tcgen_satadd.family` -- ``UNITS``, the tuple of ``UnitSpec`` the entry point names.
"""
