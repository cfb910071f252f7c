"""spark_quarantine: row-level data quality for PySpark that never loses a row.

Put :func:`with_quarantine` on a function that returns a DataFrame; every row is checked
against rules (Spark SQL boolean expressions in YAML), failing rows are dropped, kept or
fail the job as each rule says, and every failing row is written to an error table.
"""

from spark_quarantine._version import __version__
from spark_quarantine.decorator import with_quarantine
from spark_quarantine.errors import (
    ConfigError,
    InvalidParameterError,
    Problem,
    QuarantineFailure,
    RuleValidationError,
    SchemaConflictError,
    SparkQuarantineError,
    TableWriteError,
)
from spark_quarantine.loading import load_rules
from spark_quarantine.result import RunResult
from spark_quarantine.rules import Action, Priority, Rule
from spark_quarantine.session import local_spark

__all__ = [
    "Action",
    "ConfigError",
    "InvalidParameterError",
    "Priority",
    "Problem",
    "QuarantineFailure",
    "Rule",
    "RuleValidationError",
    "RunResult",
    "SchemaConflictError",
    "SparkQuarantineError",
    "TableWriteError",
    "__version__",
    "load_rules",
    "local_spark",
    "with_quarantine",
]
