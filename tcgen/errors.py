"""The error contract of the command line (README, "Errors").

Bad input is reported as one line on stderr with exit status 2, and nothing partial is
written.  Bad input is exactly: a :class:`UsageError` (command-line usage, an unknown unit, an
unwritable output), a :class:`tcgen.hw.params.ParamError` (a parameter value) and a
:class:`tcgen.synth.liberty.LibertyError` (a liberty that does not exist or does not parse).
A failing external tool is :class:`tcgen.synth.tools.ToolError` (one line, exit 1).  Any other
exception is a bug and is shown as one, with its traceback.
"""
from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(Exception):
    """Bad command-line input: one line on stderr, exit status 2."""
