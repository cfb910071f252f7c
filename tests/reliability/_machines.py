"""What the fault-model machines share: the figures they count, and the first step they skip."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import assume
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule


@dataclass
class Figures:
    """What one mode's machine did and found, for docs/reliability.md."""

    steps: int = 0
    kills: set[str] = field(default_factory=set)
    crashes: int = 0
    sigkills: int = 0
    interleavings: int = 0
    refusals: int = 0
    closes: int = 0
    resets: int = 0
    drifts: int = 0
    rows_compared: int = 0
    rows_lost: int = 0
    rows_twice: int = 0


class Machine(RuleBasedStateMachine):
    """A fault-model machine; subclasses count their steps in ``checks``."""

    @precondition(lambda self: getattr(self, "checks", 0) <= 1)
    @rule()
    def a_first_step_that_is_skipped(self) -> None:
        """Not a step: it rejects the all-simplest sequence Hypothesis tries first (one step repeated).

        At this budget that sequence would take minutes to say little; as a first step this rule
        makes it (and any sequence that picks it first) invalid, so Hypothesis generates others.
        """
        assume(False)
