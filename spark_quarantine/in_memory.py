"""Checks on a DataFrame without writing anything: ``apply_checks`` and ``apply_checks_and_split``.

For notebooks and unit tests, as DQX users know them. The rules, their NULL and raising-row
semantics and the one projection are the decorator's (:func:`~spark_quarantine.evaluate.flag_rows`);
the rows come out with the same ``meta_`` columns as the error table. Nothing runs until the
caller runs an action on what is returned: no job, no table, no run protocol, no alert.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_quarantine._logging import get_logger
from spark_quarantine.checks.dataset import PHASED_CHECKS
from spark_quarantine.config import parse_user_conf
from spark_quarantine.errors import InvalidParameterError
from spark_quarantine.evaluate import DROP_FLAG, Flagged, check_rules_against, col, flag_rows
from spark_quarantine.loading import RuleSource, load_rules
from spark_quarantine.rules import Action
from spark_quarantine.run.engine import check_input_columns, new_run_id
from spark_quarantine.sinks.error_table import annotated_rows, error_rows

__all__ = ["apply_checks", "apply_checks_and_split"]


def apply_checks(df: DataFrame, checks: RuleSource | Any, user_conf: Mapping[str, Any] | None = None) -> DataFrame:
    """``df`` with the ``meta_`` columns: every row, an empty ``meta_row_dq_results`` for a clean one.

    ``checks`` is anything :func:`~spark_quarantine.load_rules` takes (a rule file or folder,
    dicts in our format or DQX's, :class:`~spark_quarantine.Rule` objects). ``user_conf`` gives
    ``spark.quarantine.rules.params`` and ``spark.quarantine.reference_dataframes``. The rules
    are checked against ``df``'s schema first (:class:`~spark_quarantine.RuleValidationError`).
    """
    flagged, run_id, run_at = _flag(df, checks, user_conf)
    return annotated_rows(flagged, flagged.df, run_id=run_id, run_at=run_at)


def apply_checks_and_split(
    df: DataFrame, checks: RuleSource | Any, user_conf: Mapping[str, Any] | None = None
) -> tuple[DataFrame, DataFrame]:
    """``(valid, invalid)``, the two outputs of the end-to-end API with both tables, unwritten.

    ``valid``: the rows that failed no ``drop`` (or ``fail``) rule, with ``df``'s columns only;
    rows failing ``ignore`` rules are among them. ``invalid``: every row that failed any rule,
    with the ``meta_`` columns. So a row failing only ``ignore`` rules is in both, as in DQX
    (warnings). A ``fail`` rule cannot stop a job that is not run here: its rows are invalid.
    """
    flagged, run_id, run_at = _flag(df, checks, user_conf)
    passing = ~F.col(DROP_FLAG)
    for rule, flag in zip(flagged.rules, flagged.flags, strict=True):
        if rule.action_if_failed is Action.FAIL:
            passing = passing & ~F.col(flag)
    valid = flagged.df.filter(passing).select(*[col(c) for c in flagged.columns])
    invalid = error_rows(flagged, flagged.df, run_id=run_id, run_at=run_at)
    return valid, invalid


def _flag(df: DataFrame, checks: Any, user_conf: Mapping[str, Any] | None) -> tuple[Flagged, str, datetime]:
    if not isinstance(df, DataFrame):  # classic and Spark Connect DataFrames both are
        raise InvalidParameterError(f"df must be a DataFrame, found {type(df).__name__}")
    check_input_columns(df.columns)  # an input column named like a meta_ column: SQ-S001, as in every mode
    settings = parse_user_conf(user_conf)
    rules = load_rules(checks, params=settings.rules_params)
    run_id, run_at = new_run_id(), datetime.now(timezone.utc)
    log = get_logger(run_id=run_id)
    for warning in check_rules_against(df, rules, references=settings.reference_dataframes):
        log.warning("rule_warning", code=warning.code, rule=warning.rule, message=warning.message)
    flagged = flag_rows(df, rules, references=settings.reference_dataframes)
    phased = [r.name for r in flagged.rules if r.check is not None and r.check.function in PHASED_CHECKS]
    if flagged.dataset_metrics or phased:
        names = ", ".join([rule.name for rule, _ in flagged.dataset_metrics] + phased)
        raise InvalidParameterError(
            f"rule(s) {names} judge the whole dataset by an aggregate, which needs a run to compute; "
            "apply_checks flags rows only. Use the decorator or apply_checks_and_save_in_table for them"
        )
    return flagged, run_id, run_at
