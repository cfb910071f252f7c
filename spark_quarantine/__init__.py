"""spark_quarantine: row-level data quality for PySpark that never loses a row.

Put :func:`with_quarantine` on a function that returns a DataFrame; every row is checked
against rules (Spark SQL boolean expressions in YAML), failing rows are dropped, kept or
fail the job as each rule says, and every failing row is written to an error table.
"""

from spark_quarantine._version import __version__
from spark_quarantine.alerts import (
    Alert,
    NotificationSettings,
    Notifier,
    RuleBreach,
    parse_notification_conf,
    register_notifier,
)
from spark_quarantine.checks import CheckError, register_check
from spark_quarantine.decorator import with_quarantine
from spark_quarantine.end_to_end import (
    InputConfig,
    OutputConfig,
    RunConfig,
    TableRun,
    apply_checks_and_save_in_table,
    apply_checks_and_save_in_tables,
    apply_checks_and_save_in_tables_for_patterns,
    apply_checks_by_metadata_and_save_in_table,
)
from spark_quarantine.errors import (
    ConfigError,
    InvalidParameterError,
    NotificationError,
    Problem,
    QuarantineFailure,
    RuleValidationError,
    RunProtocolError,
    RunsFailedError,
    SchemaConflictError,
    SparkQuarantineError,
    TableWriteError,
)
from spark_quarantine.loading import load_rules
from spark_quarantine.result import RunResult
from spark_quarantine.rules import Action, Priority, Rule
from spark_quarantine.run.protocol import close_unfinished_run
from spark_quarantine.session import local_spark
from spark_quarantine.sinks.dlq import create_dlq_tables

__all__ = [
    "Action",
    "Alert",
    "CheckError",
    "ConfigError",
    "InputConfig",
    "InvalidParameterError",
    "NotificationError",
    "NotificationSettings",
    "Notifier",
    "OutputConfig",
    "Priority",
    "Problem",
    "QuarantineFailure",
    "Rule",
    "RuleBreach",
    "RuleValidationError",
    "RunConfig",
    "RunProtocolError",
    "RunResult",
    "RunsFailedError",
    "SchemaConflictError",
    "SparkQuarantineError",
    "TableRun",
    "TableWriteError",
    "__version__",
    "apply_checks_and_save_in_table",
    "apply_checks_and_save_in_tables",
    "apply_checks_and_save_in_tables_for_patterns",
    "apply_checks_by_metadata_and_save_in_table",
    "close_unfinished_run",
    "create_dlq_tables",
    "load_rules",
    "local_spark",
    "parse_notification_conf",
    "register_check",
    "register_notifier",
    "with_quarantine",
]
