"""``Problem``: one thing wrong with a rule or a setting (below the exceptions and the run result)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Problem"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a rule or a setting: what, where, and its stable code."""

    code: str
    message: str
    file: str | None = None
    line: int | None = None
    rule: str | None = None
    severity: str = "error"

    def __post_init__(self) -> None:
        # A problem may quote a rule or a value from a file: never a secret, never more than a screenful.
        from spark_quarantine._text import shorten
        from spark_quarantine.tokens import redact

        object.__setattr__(self, "message", redact(shorten(self.message, 2_000)))

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file + (f":{self.line}" if self.line is not None else "")
        parts = [self.code]
        if where:
            parts.append(where)
        if self.rule is not None:
            parts.append(f"rule '{self.rule}'")
        return f"{' '.join(parts)}: {self.message}"
