"""Small text helpers for messages that quote user data."""

from __future__ import annotations

__all__ = ["shorten"]


def shorten(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out (for messages quoting data)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"
