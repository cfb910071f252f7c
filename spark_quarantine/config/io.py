"""The end-to-end API's configs: where to read, where to write, one table's run; plain data, checked at the edge.

The names and shapes follow the end-to-end API users of DQX know (``InputConfig``,
``OutputConfig``, ``RunConfig``); every value is checked when the config is made, so a bad
one is an :class:`~spark_quarantine.errors.InvalidParameterError` before anything is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spark_quarantine._identifiers import is_path, table_name_problem
from spark_quarantine.errors import InvalidParameterError
from spark_quarantine.result import RunResult

__all__ = ["InputConfig", "OutputConfig", "RunConfig", "TableRun"]

_MODES = ("append", "overwrite")
_TRIGGERS = ("availableNow", "once", "processingTime", "continuous")


def _str_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidParameterError(f"{what} must be a dict of option name to value, found {type(value).__name__}")
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}


def _names(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise InvalidParameterError(f"{what} must be a list of column names, found {value!r}")
    return tuple(value)


def _location(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameterError(f"{what}.location must be a table name or a path, found {value!r}")
    problem = None if is_path(value.strip()) else table_name_problem(value.strip())
    if problem is not None:
        raise InvalidParameterError(f"{what}.location: {problem}")
    return value.strip()


@dataclass(frozen=True)
class InputConfig:
    """Where to read: a table name (one, two or three parts) or a path, its format and options."""

    location: str
    format: str = "delta"
    options: Mapping[str, str] = field(default_factory=dict)
    is_streaming: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "location", _location(self.location, "input_config"))
        object.__setattr__(self, "options", _str_map(self.options, "input_config.options"))
        if not isinstance(self.is_streaming, bool):
            raise InvalidParameterError(f"input_config.is_streaming must be true or false, found {self.is_streaming!r}")


@dataclass(frozen=True)
class OutputConfig:
    """Where to write: table name or path, format, mode (append/overwrite), options, trigger, layout."""

    location: str
    format: str = "delta"
    mode: str = "append"
    options: Mapping[str, str] = field(default_factory=dict)
    trigger: Mapping[str, Any] = field(default_factory=dict)
    partition_by: Sequence[str] = field(default_factory=list)
    cluster_by: Sequence[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        object.__setattr__(self, "location", _location(self.location, "output_config"))
        object.__setattr__(self, "options", _str_map(self.options, "output_config.options"))
        object.__setattr__(self, "partition_by", _names(self.partition_by, "output_config.partition_by"))
        object.__setattr__(self, "cluster_by", _names(self.cluster_by, "output_config.cluster_by"))
        if self.mode not in _MODES:
            raise InvalidParameterError(f"output_config.mode must be one of {', '.join(_MODES)}, found {self.mode!r}")
        trigger = dict(self.trigger or {})
        unknown = [k for k in trigger if k not in _TRIGGERS]
        if unknown or len(trigger) > 1:
            raise InvalidParameterError(
                f"output_config.trigger takes one of {', '.join(_TRIGGERS)}, found {sorted(trigger)}"
            )
        object.__setattr__(self, "trigger", trigger)


@dataclass(frozen=True)
class RunConfig:
    """One table's run: input, outputs, and its checks (``checks`` or ``checks_location``, not both)."""

    name: str
    input_config: InputConfig
    output_config: OutputConfig | None = None
    quarantine_config: OutputConfig | None = None
    checks_location: str | None = None
    checks: Any = None

    def __post_init__(self) -> None:
        if self.checks is not None and self.checks_location is not None:
            raise InvalidParameterError(
                f"run '{self.name}': set either checks or checks_location, not both (one source of truth)"
            )


@dataclass(frozen=True)
class TableRun:
    """The outcome of one run of a multi-table call: a result, or the error that stopped it."""

    name: str
    result: RunResult | None = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.result is not None and self.result.passed
