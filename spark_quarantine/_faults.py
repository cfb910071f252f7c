"""Crash points for the fault-injection tests: the process kills itself at a named write boundary.

Set ``SPARK_QUARANTINE_KILL_AT`` to a boundary name (``after_inbox``, ``after_target``, ...)
and the run SIGKILLs its own process there, as a machine failure would. The boundaries are
before and after every commit the library makes: the Delta writer
(:func:`spark_quarantine.sinks.delta.written`, which the DLQ MERGEs also go through) is the only
caller of :func:`seam`, so orchestration code holds no fault points. A name may be scoped,
``stream-main:after_target`` or ``stream-recycle:after_outbox``, to die only inside the
micro-batches of one query (the streaming driver sets the scope). Unset (always, outside those
tests) it does nothing.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["SimulatedCrash", "boundary", "crash_at", "fault_scope", "seam"]

_VARIABLE = "SPARK_QUARANTINE_KILL_AT"
_scope: ContextVar[str | None] = ContextVar("spark_quarantine_fault_scope", default=None)
_crash: ContextVar[str | None] = ContextVar("spark_quarantine_simulated_crash", default=None)


class SimulatedCrash(BaseException):
    """Raised at a boundary inside :func:`crash_at`: the in-process model of a process dying there.

    A BaseException, so no ``except Exception`` of the library runs after it: the commits made
    before the boundary stay, nothing after it happens (the fault-model tests rely on this).
    """


@contextmanager
def crash_at(point: str) -> Iterator[None]:
    """Boundaries named ``point`` reached inside this block raise :class:`SimulatedCrash`."""
    token = _crash.set(point)
    try:
        yield
    finally:
        _crash.reset(token)


@contextmanager
def fault_scope(scope: str) -> Iterator[None]:
    """Boundaries reached inside this block also answer to ``<scope>:<name>``."""
    token = _scope.set(scope)
    try:
        yield
    finally:
        _scope.reset(token)


def boundary(name: str) -> None:
    """A write boundary: die here when the tests ask for it."""
    if _crash.get() == name:
        raise SimulatedCrash(name)
    wanted = os.environ.get(_VARIABLE)
    if not wanted:
        return
    scope = _scope.get()
    if wanted == name or (scope is not None and wanted == f"{scope}:{name}"):
        os.kill(os.getpid(), signal.SIGKILL)


@contextmanager
def seam(point: str | None) -> Iterator[None]:
    """Around one commit (the writers' only fault seam): ``before_<point>`` and ``after_<point>``."""
    if point is not None:
        boundary(f"before_{point}")
    yield
    if point is not None:
        boundary(f"after_{point}")
