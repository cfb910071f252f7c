"""Crash points for the fault-injection tests: the process kills itself at a named write boundary.

Set ``SPARK_QUARANTINE_KILL_AT`` to a boundary name (``after_inbox``, ``after_target``, ...)
and the run SIGKILLs its own process there, as a machine failure would. Unset (always, outside
those tests) it does nothing.
"""

from __future__ import annotations

import os
import signal

__all__ = ["boundary"]

_VARIABLE = "SPARK_QUARANTINE_KILL_AT"


def boundary(name: str) -> None:
    """A write boundary: die here when the tests ask for it."""
    if os.environ.get(_VARIABLE) == name:
        os.kill(os.getpid(), signal.SIGKILL)
