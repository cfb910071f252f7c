"""Exception types of spark_quarantine, one per concern, each with a stable ``SQ-`` code.

Every exception subclasses :class:`SparkQuarantineError` and the builtin that fits
(:class:`ValueError` for bad input, :class:`RuntimeError` for a run that could not
complete), so callers may catch either. ``exc.code`` is stable across releases;
the message may be reworded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spark_quarantine._text import shorten
from spark_quarantine.problems import Problem
from spark_quarantine.tokens import redact

if TYPE_CHECKING:
    from spark_quarantine.result import RunResult

__all__ = [
    "CODES",
    "ConfigError",
    "DLQError",
    "InvalidParameterError",
    "NotificationError",
    "Problem",
    "QuarantineFailure",
    "ReportError",
    "RuleValidationError",
    "RunProtocolError",
    "RunsFailedError",
    "SchemaConflictError",
    "SparkEnvironmentError",
    "SparkQuarantineError",
    "TableWriteError",
]

#: Every code the library raises or reports, with a one-line meaning.
CODES: dict[str, str] = {
    # Rule files and rule definitions (static checks, no Spark needed).
    "SQ-R001": "rule source not found or not readable",
    "SQ-R002": "rule file is not valid YAML",
    "SQ-R003": "rule file is not a mapping with a 'rules:' list",
    "SQ-R004": "a rule entry is not a mapping",
    "SQ-R005": "unknown key in a rule",
    "SQ-R006": "required key missing from a rule",
    "SQ-R007": "a rule field has the wrong type",
    "SQ-R008": "action_if_failed is not one of drop, ignore, fail",
    "SQ-R009": "priority is not one of low, medium, high",
    "SQ-R010": "two rules share a name",
    "SQ-R011": "expectation is empty",
    "SQ-R012": "error_drop_threshold is outside 0..100",
    "SQ-R013": "a ${name} placeholder has no value in spark.quarantine.rules.params",
    "SQ-R014": "the rule set is empty",
    "SQ-R015": "rule source is of a type load_rules does not accept",
    "SQ-R016": "a check names a function that is not registered",
    "SQ-R017": "a check's arguments do not fit its function",
    "SQ-R018": "rule source unreadable or in no known format",
    "SQ-R019": "a whole-dataset aggregate rule cannot drop rows",
    # Rules checked against the DataFrame (analysis only, no Spark job).
    "SQ-R020": "expectation does not parse as Spark SQL",
    "SQ-R021": "expectation names a column the DataFrame lacks",
    "SQ-R022": "expectation is not a boolean expression",
    "SQ-R023": "expectation contains an aggregate or window function",
    "SQ-R024": "expectation contains a subquery",
    "SQ-R025": "expectation is non-deterministic (warning)",
    "SQ-R026": "expectation could not be analysed",
    "SQ-R027": "every rule of the rule set is disabled: the run checks nothing (warning)",
    "SQ-R028": "a YAML mapping repeats a key",
    "SQ-R029": "a ${name} value in an expectation is neither a SQL literal's type nor a valid identifier",
    "SQ-R030": "in DLQ mode every rule acts as drop (warning)",
    "SQ-R031": "a geometry check needs spatial SQL functions the session lacks",
    # user_conf and decorator arguments.
    "SQ-C001": "unknown spark.quarantine.* key in user_conf",
    "SQ-C002": "a user_conf value has the wrong type",
    "SQ-C003": "a user_conf value is out of range or not allowed",
    "SQ-C004": "a required setting is missing",
    "SQ-C005": "a ${env:...} or ${secret:...} token could not be resolved",
    "SQ-C006": "a decorator argument is missing or inconsistent",
    # DataFrames and tables.
    "SQ-S001": "an input column collides with a column the library adds",
    "SQ-S002": "the decorated function did not return a DataFrame",
    "SQ-S003": "an existing table's schema does not accept the rows",
    "SQ-S004": "a streaming DataFrame where the mode takes a batch one",
    "SQ-S005": "the input has duplicate column names",
    # Runs.
    "SQ-F001": "a rule with action_if_failed: fail had failing rows",
    "SQ-W001": "a table write failed",
    # End-to-end API.
    "SQ-P001": "invalid parameter to an end-to-end call",
    "SQ-P002": "one or more runs of a multi-table call failed",
    # Dead-letter queue.
    "SQ-D001": "DLQ table missing, or missing a column, type or property",
    "SQ-D002": "two quarantine actions share a DLQ and source_table",
    "SQ-D003": "a DLQ fix does not match the source columns or still fails the rules",
    "SQ-D004": "a Delta write conflict persisted after retries",
    "SQ-D005": "mark_fixed on a row that was already recycled",
    "SQ-D006": "a fixed row no longer fits the source schema (requeued, the run goes on)",
    "SQ-E001": "an unfinished run of this action had other input: refused before writing",
    "SQ-E002": "another run of this action is in progress: refused before writing",
    # The command line.
    "SQ-X001": "a command-line argument or input file is missing or malformed",
    "SQ-X002": "a table named on the command line does not exist",
    "SQ-X003": "--warehouse names a folder that does not exist",
    "SQ-X009": "a command failed for a reason the message gives (no traceback)",
    # Notifications.
    "SQ-N001": "a notification channel failed (logged; raised when fail_on_error is set)",
    "SQ-N002": "a notification setting is missing, wrong or not allowed",
    # The run report.
    "SQ-G001": "a report argument is invalid (filters, time range, sample size, output path)",
    "SQ-G002": "a table the report reads is missing or lacks a column it needs",
    "SQ-G003": "the report needs matplotlib, which is not installed (the report extra)",
    # The Spark the library runs on.
    "SQ-V001": "pyspark is missing or older than the supported range (newer than tested: a warning)",
    "SQ-V002": "local_spark needs delta-spark, which is not installed",
    "SQ-V003": "the session refuses persist and the input must be computed once: no staging table given",
}


#: The longest message an exception keeps (the rest is cut, saying how much).
MAX_MESSAGE = 20_000


class SparkQuarantineError(Exception):
    """Base of every spark_quarantine exception; ``code`` is the stable ``SQ-`` code."""

    code: str = "SQ-000"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        if code is not None:
            self.code = code
        # A message may quote user data or Spark's text: it never carries a secret, nor megabytes.
        message = redact(shorten(message, MAX_MESSAGE))
        super().__init__(f"[{self.code}] {message}")
        self.message = message


class SparkEnvironmentError(SparkQuarantineError, ImportError):
    """The Spark found cannot run the library: pyspark missing or too old, delta-spark missing,
    or a session that refuses what a run needs (``SQ-V...``)."""

    code = "SQ-V001"


class RuleValidationError(SparkQuarantineError, ValueError):
    """Rules are invalid; ``problems`` lists every problem found, each with its code and place."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        count = len(self.problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        noun = "problem" if count == 1 else "problems"
        super().__init__(
            f"{count} rule {noun} found:\n{lines}",
            code=self.problems[0].code if self.problems else "SQ-R000",
        )

    @property
    def codes(self) -> tuple[str, ...]:
        """The codes of all problems, in order."""
        return tuple(p.code for p in self.problems)


class ConfigError(SparkQuarantineError, ValueError):
    """A ``user_conf`` value or a decorator argument is missing, unknown or of the wrong type."""

    code = "SQ-C001"

    def __init__(self, message: str, *, code: str = "SQ-C001", key: str | None = None) -> None:
        self.key = key
        super().__init__(message, code=code)


class InvalidParameterError(SparkQuarantineError, ValueError):
    """An end-to-end call was given parameters that cannot work together."""

    code = "SQ-P001"


class RunsFailedError(SparkQuarantineError, RuntimeError):
    """Some runs of a multi-table call failed; ``outcomes`` holds every run's outcome, failed or not."""

    code = "SQ-P002"

    def __init__(self, message: str, outcomes: Sequence[Any]) -> None:
        self.outcomes = tuple(outcomes)
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.outcomes))


class SchemaConflictError(SparkQuarantineError, ValueError):
    """A DataFrame's schema conflicts with the columns the library adds or with an existing table."""

    code = "SQ-S001"


class TableWriteError(SparkQuarantineError, RuntimeError):
    """Writing a Delta table failed; the message names the table and Spark's reason."""

    code = "SQ-W001"

    def __init__(self, message: str, *, table: str, code: str = "SQ-W001") -> None:
        self.table = table
        super().__init__(message, code=code)


class DLQError(SparkQuarantineError, RuntimeError):
    """A dead-letter-queue table is missing, or lacks a column, a type or a property."""

    code = "SQ-D001"


class NotificationError(SparkQuarantineError, RuntimeError):
    """One or more notification channels failed and ``fail_on_error`` is set; ``channels`` names them."""

    code = "SQ-N001"

    def __init__(self, message: str, *, channels: Sequence[str] = ()) -> None:
        self.channels: tuple[str, ...] = tuple(channels)
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message,), {"channels": self.channels})


class QuarantineFailure(SparkQuarantineError, RuntimeError):
    """Rows failed a rule whose action is ``fail``: the target was not written.

    ``result`` is the run's :class:`~spark_quarantine.RunResult` (status ``failed``) and
    ``failed_rules`` maps each failing ``fail`` rule to its failed-row count. A target-phase
    ``agg_dq`` / ``query_dq`` rule is judged after the write: then ``target_written`` is True
    and the rows are in the target, as in Spark Expectations.
    """

    code = "SQ-F001"

    def __init__(self, result: RunResult, failed_rules: dict[str, int], *, target_written: bool = False) -> None:
        self.result = result
        self.failed_rules = dict(failed_rules)
        self.target_written = target_written
        rules = ", ".join(f"'{name}' ({count} rows)" for name, count in failed_rules.items())
        if target_written:
            where = (
                f"the target '{result.target_table}' was written before these target-phase rules were judged "
                f"({result.output_rows} rows)"
            )
        elif result.error_table:
            where = f"the target was not written; the failing rows are in error table '{result.error_table}'"
        else:
            where = "the target was not written; the error table is disabled, so the failing rows were not recorded"
        super().__init__(
            f"run {result.run_id} failed: rule(s) with action_if_failed=fail had failing rows: {rules}; {where}."
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_failure, (self.result, self.failed_rules, self.target_written))


def _rebuild_failure(result: RunResult, failed_rules: dict[str, int], target_written: bool) -> QuarantineFailure:
    return QuarantineFailure(result, failed_rules, target_written=target_written)


class RunProtocolError(SparkQuarantineError, RuntimeError):
    """A run was refused before writing anything: an unfinished or concurrent run of the same action.

    ``run_id`` names the other run; ``table`` is the table whose Delta log holds its record.
    """

    code = "SQ-E001"

    def __init__(self, message: str, *, code: str = "SQ-E001", run_id: str | None = None, table: str = "") -> None:
        self.run_id = run_id
        self.table = table
        super().__init__(message, code=code)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message,), {"code": self.code, "run_id": self.run_id, "table": self.table})


class ReportError(SparkQuarantineError, ValueError):
    """A run report could not be made: a bad argument, a missing table or column, or no plotting library."""

    code = "SQ-G001"
