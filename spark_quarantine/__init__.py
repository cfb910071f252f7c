"""spark_quarantine: row-level data quality for PySpark that never loses a row.

Put :func:`with_quarantine` on a function that returns a DataFrame; every row is checked
against rules (Spark SQL boolean expressions in YAML), failing rows are dropped, kept or
fail the job as each rule says, and every failing row is written to an error table.
"""

# The Spark is the user's (not a requirement of the package): say what is needed before the
# first `import pyspark` below can fail with a bare ModuleNotFoundError.
from spark_quarantine._requirements import check_pyspark as _check_pyspark

_check_pyspark()

from spark_quarantine._version import __version__  # noqa: E402
from spark_quarantine.alerts import (  # noqa: E402
    Alert,
    NotificationSettings,
    Notifier,
    RuleBreach,
    parse_notification_conf,
    register_notifier,
)
from spark_quarantine.checks import CheckError, register_check  # noqa: E402
from spark_quarantine.decorator import with_quarantine  # noqa: E402
from spark_quarantine.end_to_end import (  # noqa: E402
    InputConfig,
    OutputConfig,
    RunConfig,
    TableRun,
    apply_checks_and_save_in_table,
    apply_checks_and_save_in_tables,
    apply_checks_and_save_in_tables_for_patterns,
    apply_checks_by_metadata_and_save_in_table,
)
from spark_quarantine.errors import (  # noqa: E402
    ConfigError,
    InvalidParameterError,
    NotificationError,
    Problem,
    QuarantineFailure,
    ReportError,
    RuleValidationError,
    RunProtocolError,
    RunsFailedError,
    SchemaConflictError,
    SparkEnvironmentError,
    SparkQuarantineError,
    TableWriteError,
)
from spark_quarantine.in_memory import apply_checks, apply_checks_and_split  # noqa: E402
from spark_quarantine.loading import load_rules  # noqa: E402
from spark_quarantine.reporting import report  # noqa: E402
from spark_quarantine.result import DatasetRuleResult, RunResult  # noqa: E402
from spark_quarantine.rules import Action, Priority, Rule  # noqa: E402
from spark_quarantine.run.protocol import close_unfinished_run  # noqa: E402
from spark_quarantine.session import local_spark  # noqa: E402
from spark_quarantine.sinks.dlq import create_dlq_tables  # noqa: E402

__all__ = [
    "Action",
    "Alert",
    "CheckError",
    "ConfigError",
    "DatasetRuleResult",
    "InputConfig",
    "InvalidParameterError",
    "NotificationError",
    "NotificationSettings",
    "Notifier",
    "OutputConfig",
    "Priority",
    "Problem",
    "QuarantineFailure",
    "ReportError",
    "Rule",
    "RuleBreach",
    "RuleValidationError",
    "RunConfig",
    "RunProtocolError",
    "RunResult",
    "RunsFailedError",
    "SchemaConflictError",
    "SparkEnvironmentError",
    "SparkQuarantineError",
    "TableRun",
    "TableWriteError",
    "__version__",
    "apply_checks",
    "apply_checks_and_save_in_table",
    "apply_checks_and_save_in_tables",
    "apply_checks_and_save_in_tables_for_patterns",
    "apply_checks_and_split",
    "apply_checks_by_metadata_and_save_in_table",
    "close_unfinished_run",
    "create_dlq_tables",
    "load_rules",
    "local_spark",
    "parse_notification_conf",
    "register_check",
    "register_notifier",
    "report",
    "with_quarantine",
]
