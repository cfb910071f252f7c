"""Bad inputs: every one is refused with a stable code and a clear message, and does no damage.

Each test tries one bad input through the public API (the decorator, ``load_rules``, the
end-to-end call, the DLQ helpers) on a real local Spark + Delta session, checks the code the
user gets, and checks that nothing was written where it says so: the warehouse folder (every
file under it) and the catalog's tables are the same before and after. Every input is recorded
in the reliability catalog (``docs/reliability.md``).

A bad input that is not refused (a non-deterministic expectation, a notifier that fails when
``fail_on_error`` is off, a DLQ ``source_table`` full of SQL) must leave the run correct: it is
recorded with the code that was logged, and the test checks what was written.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import (
    InputConfig,
    OutputConfig,
    apply_checks_and_save_in_table,
    with_quarantine,
)
from spark_quarantine import user_config as uc
from spark_quarantine.errors import (
    ConfigError,
    DLQError,
    InvalidParameterError,
    NotificationError,
    RuleValidationError,
    SchemaConflictError,
    TableWriteError,
)
from spark_quarantine.sinks.dlq import INBOX_COLUMNS, OUTBOX_COLUMNS, create_dlq_tables, outbox_name
from tests.alerts.helpers import RecordingServer, Reply, free_port
from tests.conftest import count_jobs
from tests.reliability.conftest import Catalog

N = uc.NOTIFICATIONS_PREFIX
VICTIM = "victim"
RULES: list[dict[str, Any]] = [{"name": "even", "expectation": "id % 2 = 0", "action_if_failed": "drop"}]
GOOD_RULE = "  - name: even\n    expectation: id % 2 = 0\n    action_if_failed: drop\n"


# ---------------------------------------------------------------------------------------- helpers


def shown(error: BaseException | str, *, tmp: Path | None = None) -> str:
    """What the user sees, on one line, without this run's temp paths and random ids (stable docs)."""
    text = " ".join(line.strip() for line in str(error).strip().splitlines())
    if tmp is not None:
        text = text.replace(str(tmp), "<tmp>")
    text = re.sub(r"/tmp/[^\s:'\"]*", "<tmp>", text)
    text = re.sub(r"\bsq-[0-9a-f]{32}\b", "sq-<dedup-key>", text)
    text = re.sub(r"\b[0-9a-f]{32}\b", "<run-id>", text)
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", text)
    return text if len(text) <= 240 else text[:239] + "…"


@dataclass(frozen=True)
class Store:
    """The warehouse folder and the catalog: a snapshot of both proves that nothing was written."""

    spark: SparkSession
    root: Path

    def state(self) -> tuple[frozenset[tuple[str, int, int]], frozenset[str]]:
        """Every folder and file with its size and modification time (a rewritten file counts), and every table."""
        files = frozenset(
            (str(path.relative_to(self.root)), stat.st_size if path.is_file() else 0, stat.st_mtime_ns)
            for folder, dirs, names in os.walk(self.root)
            for path in (Path(folder, name) for name in (*dirs, *names))
            for stat in [path.stat()]
        )
        tables = frozenset(f"{r.namespace}.{r.tableName}" for r in self.spark.sql("SHOW TABLES").collect())
        return files, tables


_numbers = itertools.count(1)


@pytest.fixture
def table() -> str:
    """A fresh table name; short and numbered in test order, so the catalog's messages are stable."""
    return f"bad_input_{next(_numbers)}"


@pytest.fixture
def store(spark: SparkSession, warehouse: Path) -> Store:
    return Store(spark, warehouse)


@pytest.fixture(scope="module")
def victim(spark: SparkSession) -> Callable[[], bool]:
    """A table named ``victim`` that injection attempts aim at; the callable says it is untouched."""
    spark.range(3).write.format("delta").mode("overwrite").saveAsTable(VICTIM)
    version = DeltaTable.forName(spark, VICTIM).history(1).first()["version"]  # type: ignore[index]

    def intact() -> bool:
        if not spark.catalog.tableExists(VICTIM):
            return False
        latest = DeltaTable.forName(spark, VICTIM).history(1).first()["version"]  # type: ignore[index]
        return bool(latest == version)  # a DELETE, UPDATE or overwrite would make a new version

    return intact


def rule_file(tmp_path: Path, text: str, name: str = "rules.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def version(spark: SparkSession, table: str) -> int:
    return int(DeltaTable.forName(spark, table).history(1).first()["version"])  # type: ignore[index]


# ---------------------------------------------------------------------------------------- rule files

# (id, what was tried, the file's text, the code)
RULE_FILES: list[tuple[str, str, str, str]] = [
    ("malformed", "malformed YAML (an unclosed bracket)", "rules:\n  - name: a\n    expectation: [id > 0\n", "SQ-R002"),
    ("bad-indent", "malformed YAML (a key indented wrongly)", "rules:\n  - name: a\n   expectation: x\n", "SQ-R002"),
    (
        "python-tag",
        "YAML with a python/object tag that would run a command",
        "!!python/object/apply:os.system ['touch {pwned}']\n",
        "SQ-R002",
    ),
    (
        "top-list",
        "YAML that is a list instead of a mapping",
        "- name: a\n  expectation: id > 0\n  action_if_failed: drop\n",
        "SQ-R003",
    ),
    ("top-scalar", "YAML that is a scalar (a string)", "just some text\n", "SQ-R003"),
    ("top-number", "YAML that is a scalar (a number)", "42\n", "SQ-R003"),
    ("empty-file", "an empty rule file", "", "SQ-R003"),
    (
        "rules-mapping",
        "'rules:' holding a mapping instead of a list",
        "rules:\n  name: a\n  expectation: id > 0\n",
        "SQ-R003",
    ),
    ("extra-top-key", "an unknown top-level key next to 'rules:'", "rules:\n" + GOOD_RULE + "owner: me\n", "SQ-R003"),
    ("entry-scalar", "a rule entry that is a string", "rules:\n  - just a string\n", "SQ-R004"),
    ("empty-list", "an empty rule set ('rules: []')", "rules: []\n", "SQ-R014"),
    ("null-rules", "an empty rule set ('rules:' with nothing under it)", "rules:\n", "SQ-R014"),
    ("duplicate", "two rules with the same name in one file", "rules:\n" + GOOD_RULE + GOOD_RULE, "SQ-R010"),
    (
        "anchor-duplicate",
        "a rule repeated through a YAML alias",
        "rules:\n  - &r {name: a, expectation: id > 0, action_if_failed: drop}\n  - *r\n",
        "SQ-R010",
    ),
]


class TestRuleFiles:
    """A bad rule file fails when the decorator is applied: before any data is read or written."""

    @pytest.mark.parametrize(("tried", "text", "code"), [c[1:] for c in RULE_FILES], ids=[c[0] for c in RULE_FILES])
    def test_a_bad_rule_file_is_refused_with_its_code_and_line(
        self, tried: str, text: str, code: str, tmp_path: Path, store: Store, table: str, catalog: Catalog
    ) -> None:
        pwned = tmp_path / "PWNED"
        path = rule_file(tmp_path, text.replace("{pwned}", str(pwned)))
        before = store.state()
        with pytest.raises(RuleValidationError) as info:
            with_quarantine(rules=str(path), target_table=table, write_to_table=True)
        assert info.value.code == code
        assert f"{path}" in str(info.value), "the message names the file"
        assert not pwned.exists(), "a YAML tag ran a command"
        assert store.state() == before
        catalog.bad_input("rules", tried, info.value.code, shown(info.value, tmp=tmp_path), nothing_written=True)

    def test_a_rule_file_that_is_not_utf8_is_refused(
        self, tmp_path: Path, store: Store, table: str, catalog: Catalog
    ) -> None:
        path = tmp_path / "rules.yaml"
        path.write_bytes(b"rules:\n  - name: \xff\xfe\n")
        before = store.state()
        with pytest.raises(RuleValidationError) as info:
            with_quarantine(rules=str(path), target_table=table, write_to_table=True)
        assert info.value.code == "SQ-R001"
        assert store.state() == before
        catalog.bad_input(
            "rules",
            "a rule file that is not UTF-8 text",
            "SQ-R001",
            shown(info.value, tmp=tmp_path),
            nothing_written=True,
        )

    @pytest.mark.parametrize(
        ("tried", "layout", "code"),
        [
            ("a rule file path that does not exist", {}, "SQ-R001"),
            ("a rule folder with no .yaml files", {"README.txt": "no rules here"}, "SQ-R001"),
            (
                "two files of one folder defining the same rule name",
                {"a.yaml": GOOD_RULE, "b.yaml": GOOD_RULE},
                "SQ-R010",
            ),
        ],
        ids=["missing-path", "empty-folder", "duplicate-across-files"],
    )
    def test_a_bad_rule_folder_is_refused(
        self,
        tried: str,
        layout: dict[str, str],
        code: str,
        tmp_path: Path,
        store: Store,
        table: str,
        catalog: Catalog,
    ) -> None:
        folder = tmp_path / "rules"
        if layout:
            folder.mkdir()
            for name, body in layout.items():
                (folder / name).write_text("rules:\n" + body if name.endswith(".yaml") else body, encoding="utf-8")
        before = store.state()
        with pytest.raises(RuleValidationError) as info:
            with_quarantine(rules=str(folder), target_table=table, write_to_table=True)
        assert info.value.code == code
        assert store.state() == before
        catalog.bad_input("rules", tried, code, shown(info.value, tmp=tmp_path), nothing_written=True)

    @pytest.mark.parametrize("source", [42, b"rules:", None], ids=["int", "bytes", "none"])
    def test_a_rule_source_of_the_wrong_type_is_refused(
        self, source: Any, store: Store, table: str, catalog: Catalog
    ) -> None:
        before = store.state()
        with pytest.raises(RuleValidationError) as info:
            with_quarantine(rules=source, target_table=table, write_to_table=True)
        assert info.value.code == "SQ-R015"
        assert store.state() == before
        catalog.bad_input(
            "rules",
            f"rules={source!r} (not a path, list or mapping)",
            "SQ-R015",
            shown(info.value),
            nothing_written=True,
        )


# ---------------------------------------------------------------------------------------- rule fields

BASE_RULE: dict[str, Any] = {"name": "a", "expectation": "id > 0", "action_if_failed": "drop"}

# (id, what was tried, changes to BASE_RULE (None removes the key), the code)
RULE_FIELDS: list[tuple[str, str, dict[str, Any], str]] = [
    ("name-int", "name given as a number", {"name": 123}, "SQ-R007"),
    ("expectation-int", "expectation given as a number", {"expectation": 5}, "SQ-R007"),
    ("action-list", "action_if_failed given as a list", {"action_if_failed": ["drop"]}, "SQ-R007"),
    ("priority-int", "priority given as a number", {"priority": 1}, "SQ-R007"),
    ("enabled-str", "enabled given as the string 'yes'", {"enabled": "yes"}, "SQ-R007"),
    ("alert-str", "enable_error_drop_alert given as the string 'no'", {"enable_error_drop_alert": "no"}, "SQ-R007"),
    ("threshold-str", "error_drop_threshold given as a string", {"error_drop_threshold": "ten"}, "SQ-R007"),
    ("tag-list", "tag given as a list", {"tag": ["a"]}, "SQ-R007"),
    ("description-dict", "description given as a mapping", {"description": {"a": 1}}, "SQ-R007"),
    ("unknown-key", "an unknown key (typo 'expecation')", {"expecation": "id > 0"}, "SQ-R005"),
    ("both-actions", "both action_if_failed and criticality", {"criticality": "error"}, "SQ-R005"),
    ("no-name", "a rule without a name", {"name": None}, "SQ-R006"),
    ("empty-name", "a rule with an empty name", {"name": ""}, "SQ-R006"),
    ("no-expectation", "a rule without an expectation", {"expectation": None}, "SQ-R006"),
    ("no-action", "a rule without action_if_failed", {"action_if_failed": None}, "SQ-R006"),
    ("bad-action", "action_if_failed 'explode'", {"action_if_failed": "explode"}, "SQ-R008"),
    ("bad-priority", "priority 'urgent'", {"priority": "urgent"}, "SQ-R009"),
    ("empty-expectation", "an expectation of only spaces", {"expectation": "   "}, "SQ-R011"),
    ("threshold-range", "error_drop_threshold 150", {"error_drop_threshold": 150}, "SQ-R012"),
    ("placeholder", "an unknown ${max} placeholder", {"expectation": "id > ${max}"}, "SQ-R013"),
    (
        "unknown-check",
        "a check naming an unregistered function",
        {"expectation": None, "check": {"function": "no_such_check", "arguments": {}}},
        "SQ-R016",
    ),
    (
        "check-args",
        "a check with an unknown argument",
        {"expectation": None, "check": {"function": "is_in_range", "arguments": {"column": "id", "bogus": 1}}},
        "SQ-R017",
    ),
]


class TestRuleFields:
    """A rule with a field of the wrong type or value fails when the decorator is applied."""

    @pytest.mark.parametrize(
        ("tried", "changes", "code"), [c[1:] for c in RULE_FIELDS], ids=[c[0] for c in RULE_FIELDS]
    )
    def test_a_bad_rule_field_is_refused_with_its_code(
        self, tried: str, changes: dict[str, Any], code: str, store: Store, table: str, catalog: Catalog
    ) -> None:
        rule = {**BASE_RULE, **changes}
        rule = {k: v for k, v in rule.items() if v is not None}
        before = store.state()
        with pytest.raises(RuleValidationError) as info:
            with_quarantine(rules=[rule], target_table=table, write_to_table=True)
        assert info.value.code == code
        assert store.state() == before
        catalog.bad_input("rules", tried, code, shown(info.value), nothing_written=True)

    @pytest.mark.parametrize("entry", ["not a rule", 42, ["a", "list"]], ids=["str", "int", "list"])
    def test_a_rule_entry_that_is_not_a_mapping_is_refused(
        self, entry: Any, store: Store, table: str, catalog: Catalog
    ) -> None:
        before = store.state()
        with pytest.raises(RuleValidationError) as info:
            with_quarantine(rules=[entry], target_table=table, write_to_table=True)
        assert info.value.code == "SQ-R004"
        assert store.state() == before
        catalog.bad_input("rules", f"a rule given as {entry!r}", "SQ-R004", shown(info.value), nothing_written=True)

    def test_an_empty_list_of_rules_is_refused(self, store: Store, table: str, catalog: Catalog) -> None:
        before = store.state()
        with pytest.raises(RuleValidationError) as info:
            with_quarantine(rules=[], target_table=table, write_to_table=True)
        assert info.value.code == "SQ-R014"
        assert store.state() == before
        catalog.bad_input("rules", "rules=[] (an empty rule set)", "SQ-R014", shown(info.value), nothing_written=True)


# ---------------------------------------------------------------------------------------- expressions

# (id, what was tried, the expectation, the code)
EXPRESSIONS: list[tuple[str, str, str, str]] = [
    ("no-parse", "an expectation that does not parse", "id >", "SQ-R020"),
    ("statement", "an expectation carrying a second statement", f"id > 0; DROP TABLE {VICTIM}", "SQ-R020"),
    ("missing-column", "an expectation naming a column the DataFrame lacks", "amount > 0", "SQ-R021"),
    ("field-of-scalar", "a field of a column that is not a struct", "id.amount > 0", "SQ-R026"),
    ("not-boolean", "an expectation that is a number, not a boolean", "id + 1", "SQ-R022"),
    ("string", "an expectation that is a string", "'yes'", "SQ-R022"),
    ("aggregate", "an aggregate in a row rule", "id > avg(id)", "SQ-R023"),
    ("count", "count(*) in a row rule", "count(*) > 0", "SQ-R023"),
    ("window", "a window function in a row rule", "id > lag(id) OVER (ORDER BY id)", "SQ-R023"),
    ("generator", "a generator in a row rule", "explode(array(id)) > 0", "SQ-R023"),
    ("subquery-in", "an IN subquery reading another table", f"id IN (SELECT id FROM {VICTIM})", "SQ-R024"),
    ("subquery-scalar", "a scalar subquery", f"id > (SELECT max(id) FROM {VICTIM})", "SQ-R024"),
    ("subquery-exists", "an EXISTS subquery", f"EXISTS (SELECT 1 FROM {VICTIM})", "SQ-R024"),
]


class TestExpressions:
    """Expectations are checked against the DataFrame when the function runs, before any Spark job."""

    @pytest.mark.parametrize(
        ("tried", "expectation", "code"), [c[1:] for c in EXPRESSIONS], ids=[c[0] for c in EXPRESSIONS]
    )
    def test_a_bad_expectation_is_refused_before_any_spark_job(
        self,
        tried: str,
        expectation: str,
        code: str,
        spark: SparkSession,
        store: Store,
        table: str,
        victim: Callable[[], bool],
        catalog: Catalog,
    ) -> None:
        rules = [{"name": "r", "expectation": expectation, "action_if_failed": "drop"}]

        @with_quarantine(rules=rules, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return spark.range(4)

        before = store.state()
        with count_jobs(spark) as jobs, pytest.raises(RuleValidationError) as info:
            pipeline()
        assert info.value.code == code, str(info.value)
        assert jobs.value == 0
        assert store.state() == before
        assert victim()
        catalog.bad_input(
            "expressions", f"{tried}: `{expectation}`", info.value.code, shown(info.value), nothing_written=True
        )

    def test_a_non_deterministic_expectation_is_a_warning_and_the_run_goes_on(
        self, spark: SparkSession, table: str, caplog: pytest.LogCaptureFixture, catalog: Catalog
    ) -> None:
        caplog.set_level(logging.WARNING, logger="spark_quarantine")
        rules = [*RULES, {"name": "coin", "expectation": "rand() < 2", "action_if_failed": "ignore"}]

        @with_quarantine(rules=rules, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return spark.range(4)

        pipeline()
        run = pipeline.last_run
        assert run is not None and run.status == "passed"
        (warning,) = run.warnings
        assert warning.code == "SQ-R025" and warning.rule == "coin"
        logged = [r.getMessage() for r in caplog.records if "SQ-R025" in r.getMessage()]
        assert logged, "the warning is logged"
        assert sorted(r.id for r in spark.read.table(table).collect()) == [0, 2]
        assert spark.read.table(f"{table}_error").count() == 2
        catalog.bad_input(
            "expressions",
            "a non-deterministic expectation `rand() < 2` (a warning: the run goes on and writes its rows)",
            warning.code,
            shown(warning),
            nothing_written=False,
            written="the run's own rows, as expected",
        )


# ---------------------------------------------------------------------------------------- table names

INJECTION = f"x; DROP TABLE {VICTIM}"
# (id, what was tried, the name)
BAD_NAMES: list[tuple[str, str, str]] = [
    ("semicolon", "a name carrying a second statement", INJECTION),
    ("comment", "a name ending in a SQL comment", f"t; DROP TABLE {VICTIM}; --"),
    ("quote", "a name with a single quote", "orders' OR '1'='1"),
    ("double-quote", "a name with double quotes", 'orders"; DROP TABLE victim; "'),
    ("keywords", "SQL keywords separated by spaces", f"orders DROP TABLE {VICTIM}"),
    ("backtick-inside", "a stray backtick inside a name", "a`b"),
    ("unterminated", "an unterminated backtick", f"`x; DROP TABLE {VICTIM}"),
    ("backtick-escape", "a backtick that closes early", f"`x`; DROP TABLE {VICTIM}; --`"),
    ("paren", "a name with parentheses", f"t) ; DELETE FROM {VICTIM} WHERE (1=1"),
    ("empty-part", "an empty part between dots", "default..t"),
    ("blank", "a blank name", "   "),
]
# Every bad name as target_table; the first three as error_table and stats_table too.
NAMED = [(f"target_table-{i}", "target_table", t, n) for i, t, n in BAD_NAMES] + [
    (f"{arg}-{i}", arg, t, n) for arg in ("error_table", "stats_table") for i, t, n in BAD_NAMES[:3]
]
# The end-to-end call: each of its four table names with one bad name.
CONFIGS = [
    (f"{config}-{i}", config, t, n)
    for config, (i, t, n) in zip(
        ("input_config", "output_config", "quarantine_config", "stats_table"), BAD_NAMES, strict=False
    )
]


class TestTableNames:
    """A table name is a name: it is quoted or refused, and can never run SQL."""

    @pytest.mark.parametrize(("argument", "tried", "name"), [c[1:] for c in NAMED], ids=[c[0] for c in NAMED])
    def test_a_name_that_is_not_an_identifier_is_refused_when_decorating(
        self,
        argument: str,
        tried: str,
        name: str,
        store: Store,
        table: str,
        victim: Callable[[], bool],
        catalog: Catalog,
    ) -> None:
        names = {"target_table": table, argument: name}
        before = store.state()
        with pytest.raises(ConfigError) as info:
            with_quarantine(rules=RULES, write_to_table=True, **names)
        assert info.value.code == "SQ-C006" and info.value.key == argument
        assert store.state() == before
        assert victim()
        catalog.bad_input(
            "tables", f"{argument} = {name!r} ({tried})", "SQ-C006", shown(info.value), nothing_written=True
        )

    @pytest.mark.parametrize(("config", "tried", "name"), [c[1:] for c in CONFIGS], ids=[c[0] for c in CONFIGS])
    def test_the_end_to_end_call_refuses_them_too(
        self,
        config: str,
        tried: str,
        name: str,
        store: Store,
        table: str,
        victim: Callable[[], bool],
        catalog: Catalog,
    ) -> None:
        def call() -> None:
            kwargs: dict[str, Any] = {
                "input_config": InputConfig(location=table),
                "output_config": OutputConfig(location=f"{table}_out"),
                "quarantine_config": OutputConfig(location=f"{table}_q"),
            }
            if config == "stats_table":
                kwargs["stats_table"] = name
            elif config == "input_config":
                kwargs[config] = InputConfig(location=name)
            else:
                kwargs[config] = OutputConfig(location=name)
            apply_checks_and_save_in_table(RULES, **kwargs)

        before = store.state()
        with pytest.raises(InvalidParameterError) as info:
            call()
        assert info.value.code == "SQ-P001"
        assert store.state() == before
        assert victim()
        catalog.bad_input(
            "tables", f"end-to-end {config} {name!r} ({tried})", "SQ-P001", shown(info.value), nothing_written=True
        )

    @pytest.mark.parametrize("name", ["drop"])
    def test_a_plain_sql_keyword_is_just_a_table_name(
        self, name: str, spark: SparkSession, victim: Callable[[], bool], catalog: Catalog
    ) -> None:
        """``select`` is a valid identifier: the table of that name is written, nothing else happens."""
        spark.sql(f"DROP TABLE IF EXISTS `{name}`")
        spark.sql(f"DROP TABLE IF EXISTS `{name}_error`")

        @with_quarantine(rules=RULES, target_table=name, write_to_table=True)
        def pipeline() -> DataFrame:
            return spark.range(4)

        pipeline()
        assert sorted(r.id for r in spark.read.table(f"`{name}`").collect()) == [0, 2]
        assert victim()
        catalog.bad_input(
            "tables",
            f"target_table = {name!r} (a bare SQL keyword)",
            "none",
            f"no error: `{name}` is a valid identifier; table `{name}` was written, `{VICTIM}` untouched",
            nothing_written=False,
            written="the table it names, as asked; nothing else",
        )

    def test_a_target_in_a_database_that_does_not_exist_is_refused_before_any_row_is_written(
        self, spark: SparkSession, store: Store, catalog: Catalog
    ) -> None:
        name = "no_such_database.orders"

        @with_quarantine(rules=RULES, target_table=name, write_to_table=True)
        def pipeline() -> DataFrame:
            return spark.range(4)

        before = store.state()
        with pytest.raises(TableWriteError) as info:
            pipeline()
        assert info.value.code == "SQ-W001" and "SCHEMA_NOT_FOUND" in str(info.value)
        assert store.state() == before
        catalog.bad_input("tables", f"target_table = {name!r} (a database that does not exist)", info.value.code,
                          shown(info.value), nothing_written=True)  # fmt: skip

    def test_a_quoted_name_is_taken_literally_and_the_catalog_refuses_it(
        self, spark: SparkSession, store: Store, victim: Callable[[], bool], catalog: Catalog
    ) -> None:
        """Backticks make the whole string one name: no SQL runs; the local catalog refuses the name.

        Delta writes the table's files before the catalog refuses the name, so files are left in
        the warehouse folder (no table is registered).
        """
        name = f"`{INJECTION}`"

        @with_quarantine(rules=RULES, target_table=name, write_to_table=True)
        def pipeline() -> DataFrame:
            return spark.range(4)

        _, tables_before = store.state()
        with pytest.raises(TableWriteError) as info:
            pipeline()
        assert info.value.code == "SQ-W001"
        assert "INVALID_SCHEMA_OR_RELATION_NAME" in str(info.value)
        assert store.state()[1] == tables_before, "no table is registered"
        assert victim()
        catalog.bad_input(
            "tables",
            f"target_table = {name!r} (quoted: one literal name; Delta leaves the refused table's files behind)",
            info.value.code,
            shown(info.value),
            nothing_written=False,
            written="orphan files of the refused table (no SQL ran, no table registered)",
        )


# ---------------------------------------------------------------------------------------- the DLQ


class TestDLQNames:
    """DLQ tables are always quoted; source_table is only ever a value."""

    def test_a_dlq_table_name_carrying_sql_is_one_quoted_name_that_does_not_exist(
        self, spark: SparkSession, store: Store, table: str, victim: Callable[[], bool], catalog: Catalog
    ) -> None:
        @with_quarantine(rules=RULES, target_table=table, quarantine={"dlq_table": INJECTION, "source_table": "src"})
        def pipeline() -> DataFrame:
            return spark.range(4)

        before = store.state()
        with pytest.raises(DLQError) as info:
            pipeline()
        assert info.value.code == "SQ-D001"
        assert f"`{INJECTION}`" in str(info.value)
        assert store.state() == before
        assert victim()
        catalog.bad_input("dlq", f"dlq_table = {INJECTION!r}", "SQ-D001", shown(info.value), nothing_written=True)

    def test_a_dlq_table_with_an_unterminated_backtick_is_refused(
        self, spark: SparkSession, store: Store, table: str, catalog: Catalog
    ) -> None:
        name = "`ops.orders_dlq"

        @with_quarantine(rules=RULES, target_table=table, quarantine={"dlq_table": name, "source_table": "src"})
        def pipeline() -> DataFrame:
            return spark.range(4)

        before = store.state()
        with pytest.raises(InvalidParameterError) as info:
            pipeline()
        assert info.value.code == "SQ-P001"
        assert store.state() == before
        catalog.bad_input("dlq", f"dlq_table = {name!r}", "SQ-P001", shown(info.value), nothing_written=True)

    def test_create_dlq_tables_quotes_the_name_and_reports_the_catalog_refusal(
        self, spark: SparkSession, store: Store, victim: Callable[[], bool], catalog: Catalog
    ) -> None:
        """The name is one quoted identifier; the local catalog refuses it (Delta leaves its log behind)."""
        _, tables_before = store.state()
        with pytest.raises(TableWriteError) as info:
            create_dlq_tables(spark, INJECTION)
        assert info.value.code == "SQ-W001"
        assert store.state()[1] == tables_before, "no table is registered"
        assert victim()
        catalog.bad_input(
            "dlq",
            f"create_dlq_tables(spark, {INJECTION!r}) (quoted; Delta leaves the refused table's log behind)",
            info.value.code,
            shown(info.value),
            nothing_written=False,
            written="an orphan Delta log of the refused table (no SQL ran, no table registered)",
        )

    def test_a_source_table_full_of_sql_is_stored_as_a_plain_value(
        self, spark: SparkSession, table: str, victim: Callable[[], bool], catalog: Catalog
    ) -> None:
        """Quotes, backticks, a semicolon and keywords in one value: every DLQ statement uses it as a literal."""
        source = f"x' OR '1'='1'; DROP TABLE {VICTIM}; -- `a`b`"
        dlq = f"{table}_dlq"
        create_dlq_tables(spark, dlq)

        @with_quarantine(rules=RULES, target_table=table, quarantine={"dlq_table": dlq, "source_table": source})
        def pipeline() -> DataFrame:
            return spark.range(4)

        pipeline()
        rows = spark.sql(f"SELECT _dlq_source_table AS source, count(*) AS n FROM {dlq} GROUP BY 1").collect()
        stored = {(r.source, r.n) for r in rows}  # fmt: skip
        assert stored == {(source, 2)}
        assert sorted(r.id for r in spark.read.table(table).collect()) == [0, 2]
        assert victim()
        catalog.bad_input(
            "dlq",
            f"source_table = {source!r}",
            "none",
            f"no error: the 2 failing rows are in the inbox with _dlq_source_table = {source!r}; `{VICTIM}` untouched",
            nothing_written=False,
            written="the run's own rows, the value stored as data",
        )


def _create(spark: SparkSession, name: str, columns: list[tuple[str, str]], properties: list[str]) -> None:
    body = ", ".join(f"{c} {t}" for c, t in columns)
    props = ", ".join(f"'{p}' = 'true'" for p in properties)
    spark.sql(f"CREATE TABLE {name} ({body}) USING DELTA CLUSTER BY (_dlq_source_table) TBLPROPERTIES ({props})")


INBOX_PROPS = ["delta.enableChangeDataFeed", "delta.enableRowTracking", "delta.enableDeletionVectors"]
OUTBOX_PROPS = ["delta.enableRowTracking", "delta.enableDeletionVectors"]


def _without(columns: tuple[tuple[str, str], ...], name: str) -> list[tuple[str, str]]:
    return [c for c in columns if c[0] != name]


def _retyped(columns: tuple[tuple[str, str], ...], name: str, type_: str) -> list[tuple[str, str]]:
    return [(c, type_ if c == name else t) for c, t in columns]


# (id, what was tried, inbox columns, inbox properties, outbox columns, outbox properties); None: not created
DLQ_TABLES: list[tuple[str, str, Any, Any, Any, Any]] = [
    ("missing", "DLQ tables never created", None, None, None, None),
    ("no-outbox", "the outbox missing", list(INBOX_COLUMNS), INBOX_PROPS, None, None),
    (
        "inbox-no-status",
        "the inbox without its _dlq_status column",
        _without(INBOX_COLUMNS, "_dlq_status"),
        INBOX_PROPS,
        list(OUTBOX_COLUMNS),
        OUTBOX_PROPS,
    ),
    (
        "inbox-no-payload",
        "the inbox without its _row_data column",
        _without(INBOX_COLUMNS, "_row_data"),
        INBOX_PROPS,
        list(OUTBOX_COLUMNS),
        OUTBOX_PROPS,
    ),
    (
        "inbox-wrong-type",
        "the inbox with _dlq_timestamp as STRING",
        _retyped(INBOX_COLUMNS, "_dlq_timestamp", "STRING"),
        INBOX_PROPS,
        list(OUTBOX_COLUMNS),
        OUTBOX_PROPS,
    ),
    (
        "inbox-no-cdf",
        "the inbox without change data feed",
        list(INBOX_COLUMNS),
        INBOX_PROPS[1:],
        list(OUTBOX_COLUMNS),
        OUTBOX_PROPS,
    ),
    (
        "outbox-no-row-tracking",
        "the outbox without row tracking",
        list(INBOX_COLUMNS),
        INBOX_PROPS,
        list(OUTBOX_COLUMNS),
        OUTBOX_PROPS[1:],
    ),
    (
        "outbox-no-recycled-at",
        "the outbox without _dlq_recycled_at",
        list(INBOX_COLUMNS),
        INBOX_PROPS,
        _without(OUTBOX_COLUMNS, "_dlq_recycled_at"),
        OUTBOX_PROPS,
    ),
]


class TestDLQTables:
    """A DLQ whose tables are missing, or lack a column, a type or a property, is refused before any write."""

    @pytest.mark.parametrize(
        ("tried", "inbox", "inbox_props", "outbox", "outbox_props"),
        [c[1:] for c in DLQ_TABLES],
        ids=[c[0] for c in DLQ_TABLES],
    )
    def test_a_dlq_that_is_not_ready_is_refused_and_nothing_is_written(
        self,
        tried: str,
        inbox: list[tuple[str, str]] | None,
        inbox_props: list[str] | None,
        outbox: list[tuple[str, str]] | None,
        outbox_props: list[str] | None,
        spark: SparkSession,
        store: Store,
        table: str,
        catalog: Catalog,
    ) -> None:
        dlq = f"{table}_dlq"
        if inbox is not None:
            _create(spark, dlq, inbox, inbox_props or [])
        if outbox is not None:
            _create(spark, outbox_name(dlq), outbox, outbox_props or [])

        @with_quarantine(rules=RULES, target_table=table, quarantine={"dlq_table": dlq, "source_table": "src"})
        def pipeline() -> DataFrame:
            return spark.range(4)

        before = store.state()
        with count_jobs(spark) as jobs, pytest.raises(DLQError) as info:
            pipeline()
        assert info.value.code == "SQ-D001"
        assert store.state() == before
        assert jobs.value == 0 or inbox is not None, "a missing DLQ is refused before any job"
        catalog.bad_input("dlq", tried, "SQ-D001", shown(info.value), nothing_written=True)

    def test_a_property_turned_off_after_creation_is_refused(
        self, spark: SparkSession, store: Store, table: str, catalog: Catalog
    ) -> None:
        dlq = f"{table}_dlq"
        create_dlq_tables(spark, dlq)
        spark.sql(f"ALTER TABLE {dlq} SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'false')")

        @with_quarantine(rules=RULES, target_table=table, quarantine={"dlq_table": dlq, "source_table": "src"})
        def pipeline() -> DataFrame:
            return spark.range(4)

        before, inbox_version = store.state(), version(spark, dlq)
        with pytest.raises(DLQError) as info:
            pipeline()
        assert info.value.code == "SQ-D001" and "enableChangeDataFeed" in str(info.value)
        assert store.state() == before and version(spark, dlq) == inbox_version
        catalog.bad_input(
            "dlq",
            "change data feed turned off on the inbox with ALTER TABLE after create_dlq_tables",
            "SQ-D001",
            shown(info.value),
            nothing_written=True,
        )

    def test_a_dlq_that_is_not_a_delta_table_is_refused(
        self, spark: SparkSession, store: Store, table: str, catalog: Catalog
    ) -> None:
        dlq = f"{table}_dlq"
        spark.sql(f"CREATE TABLE {dlq} (_dlq_sk STRING) USING PARQUET")
        create_dlq_tables(spark, dlq)  # IF NOT EXISTS: the parquet inbox stays, the outbox is created

        @with_quarantine(rules=RULES, target_table=table, quarantine={"dlq_table": dlq, "source_table": "src"})
        def pipeline() -> DataFrame:
            return spark.range(4)

        before = store.state()
        with pytest.raises(DLQError) as info:
            pipeline()
        assert info.value.code == "SQ-D001" and "not a Delta table" in str(info.value)
        assert store.state() == before
        catalog.bad_input("dlq", "an inbox that is a parquet table", "SQ-D001", shown(info.value), nothing_written=True)


# ---------------------------------------------------------------------------------------- existing tables


class TestExistingTables:
    """A table that exists with a schema the rows do not fit is refused before anything is written."""

    @pytest.mark.parametrize(
        ("tried", "which", "ddl"),
        [
            ("the target exists with id as STRING, the rows have BIGINT", "target", "id STRING"),
            ("the target exists without a column the rows have", "target", "other INT"),
            ("the error table exists with another schema", "error", "id STRING, note STRING"),
        ],
        ids=["target-type", "target-columns", "error-table"],
    )
    def test_a_table_with_another_schema_is_refused_and_left_unchanged(
        self, tried: str, which: str, ddl: str, spark: SparkSession, store: Store, table: str, catalog: Catalog
    ) -> None:
        existing = table if which == "target" else f"{table}_error"
        spark.sql(f"CREATE TABLE {existing} ({ddl}) USING DELTA")

        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return spark.range(4)

        before, at = store.state(), version(spark, existing)
        with pytest.raises(SchemaConflictError) as info:
            pipeline()
        assert info.value.code == "SQ-S003" and "Nothing was written" in str(info.value)
        assert store.state() == before and version(spark, existing) == at
        catalog.bad_input("tables", tried, "SQ-S003", shown(info.value), nothing_written=True)

    def test_the_end_to_end_call_refuses_an_output_with_another_schema(
        self, spark: SparkSession, store: Store, table: str, catalog: Catalog
    ) -> None:
        spark.range(4).write.format("delta").saveAsTable(f"{table}_in")
        spark.sql(f"CREATE TABLE {table}_out (id STRING) USING DELTA")
        before, at = store.state(), version(spark, f"{table}_out")
        with pytest.raises(SchemaConflictError) as info:
            apply_checks_and_save_in_table(
                RULES,
                InputConfig(location=f"{table}_in"),
                OutputConfig(location=f"{table}_out"),
                OutputConfig(location=f"{table}_q"),
            )
        assert info.value.code == "SQ-S003"
        assert store.state() == before and version(spark, f"{table}_out") == at
        catalog.bad_input(
            "tables",
            "end-to-end output exists with id as STRING, the rows have BIGINT",
            "SQ-S003",
            shown(info.value),
            nothing_written=True,
        )

    def test_a_function_that_returns_no_dataframe_is_refused(
        self, spark: SparkSession, store: Store, table: str, catalog: Catalog
    ) -> None:
        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def pipeline() -> Any:
            return [{"id": 1}]

        before = store.state()
        with pytest.raises(SchemaConflictError) as info:
            pipeline()
        assert info.value.code == "SQ-S002"
        assert store.state() == before
        catalog.bad_input(
            "tables",
            "the decorated function returns a list, not a DataFrame",
            "SQ-S002",
            shown(info.value),
            nothing_written=True,
        )

    def test_an_input_column_named_like_a_library_column_is_refused(
        self, spark: SparkSession, store: Store, table: str, catalog: Catalog
    ) -> None:
        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return spark.range(4).withColumnRenamed("id", "meta_dq_run_id").selectExpr("meta_dq_run_id", "0 AS id")

        before = store.state()
        with pytest.raises(SchemaConflictError) as info:
            pipeline()
        assert info.value.code == "SQ-S001"
        assert store.state() == before
        catalog.bad_input(
            "tables", "an input column named meta_dq_run_id", "SQ-S001", shown(info.value), nothing_written=True
        )


class TestUnwritableStorage:
    def test_a_database_whose_folder_cannot_be_written_fails_the_run_cleanly(
        self, spark: SparkSession, tmp_path: Path, store: Store, table: str, catalog: Catalog
    ) -> None:
        """The tables' folder cannot be written: the run fails with SQ-W001 and no table appears.

        As a regular user the database folder is made read-only (chmod 555). As root, chmod does
        not stop writes, so the folder is replaced by a regular file of the same name: nothing
        can be created below it.
        """
        database = f"{table}_db"
        folder = tmp_path / "readonly_db"
        spark.sql(f"CREATE DATABASE {database} LOCATION '{folder}'")
        folder.mkdir(exist_ok=True)
        as_root = os.geteuid() == 0
        if as_root:
            folder.rmdir()
            folder.write_text("a file where the database folder should be\n", encoding="utf-8")
            how = "a database whose folder is a regular file (running as root, where chmod does not stop writes)"
        else:
            folder.chmod(0o555)
            how = "a database whose folder is read-only (chmod 555)"
        try:

            @with_quarantine(rules=RULES, target_table=f"{database}.orders", write_to_table=True)
            def pipeline() -> DataFrame:
                return spark.range(4)

            before = store.state()
            listing = folder.read_text(encoding="utf-8") if as_root else sorted(os.listdir(folder))
            with pytest.raises(TableWriteError) as info:
                pipeline()
            assert info.value.code == "SQ-W001"
            assert store.state() == before
            assert (folder.read_text(encoding="utf-8") if as_root else sorted(os.listdir(folder))) == listing
            assert not spark.catalog.tableExists(f"{database}.orders")
            assert not spark.catalog.tableExists(f"{database}.orders_error")
        finally:
            if not as_root:
                folder.chmod(0o755)
        catalog.bad_input("storage", how, "SQ-W001", shown(info.value, tmp=tmp_path), nothing_written=True)


# ---------------------------------------------------------------------------------------- user_conf

#: A value of the wrong type for each key type of the registry; a new type must be added here.
WRONG_VALUE: dict[str, Any] = {
    "bool": "maybe",
    "int": "many",
    "float": "fast",
    "str": 123,
    "dict": ["not", "a", "dict"],
    "list": 42,
    "object": object(),
}


class TestUserConf:
    """Every user_conf key, given a value of the wrong type, is refused when the decorator is applied."""

    @pytest.mark.parametrize("key", sorted(uc.KEYS))
    def test_every_key_refuses_a_value_of_the_wrong_type(
        self, key: str, store: Store, table: str, catalog: Catalog
    ) -> None:
        spec = uc.KEYS[key]
        assert spec.type in WRONG_VALUE, f"add a wrong value for key type {spec.type!r} to WRONG_VALUE"
        value = WRONG_VALUE[spec.type]
        before = store.state()
        with pytest.raises(ConfigError) as info:
            with_quarantine(rules=RULES, target_table=table, write_to_table=True, user_conf={key: value})
        assert info.value.code == "SQ-C002" and info.value.key == key
        assert key in str(info.value)
        assert store.state() == before
        shown_value = "object()" if spec.type == "object" else repr(value)
        catalog.bad_input(
            "user_conf",
            f"{key} = {shown_value} (expects {spec.type})",
            "SQ-C002",
            shown(info.value),
            nothing_written=True,
        )

    @pytest.mark.parametrize(
        ("tried", "user_conf", "code"),
        [
            ("an unknown key (typo)", {"spark.quarantine.error_table.enable": False}, "SQ-C001"),
            ("an unknown notification key", {N + "slack.webhook": "https://hooks.example.com/x"}, "SQ-C001"),
            ("a key that is not a string", {42: True}, "SQ-C001"),
            ("user_conf given as a list", ["spark.quarantine.input.cache"], "SQ-C002"),
            ("input.cache 'sometimes'", {uc.INPUT_CACHE: "sometimes"}, "SQ-C003"),
            ("timeout.seconds 0", {uc.NOTIFICATIONS_TIMEOUT_SECONDS: 0}, "SQ-N002"),
            ("max.retries 1000", {uc.NOTIFICATIONS_MAX_RETRIES: 1000}, "SQ-N002"),
            ("error.drop.threshold 150", {uc.NOTIFICATIONS_ERROR_DROP_THRESHOLD: 150}, "SQ-N002"),
            ("timeout.seconds NaN", {uc.NOTIFICATIONS_TIMEOUT_SECONDS: float("nan")}, "SQ-C002"),
            ("min.priority 'urgent'", {uc.NOTIFICATIONS_MIN_PRIORITY: "urgent"}, "SQ-N002"),
            ("slack enabled without a webhook URL", {uc.SLACK_ENABLED: True}, "SQ-N002"),
            (
                "an http:// webhook URL",
                {uc.WEBHOOK_ENABLED: True, uc.WEBHOOK_URL: "http://hooks.example.com/x"},
                "SQ-N002",
            ),
            (
                "a webhook URL with a script scheme",
                {uc.WEBHOOK_ENABLED: True, uc.WEBHOOK_URL: "javascript:alert(1)"},
                "SQ-N002",
            ),
            (
                "an unset ${env:...} token",
                {uc.SLACK_ENABLED: True, uc.SLACK_WEBHOOK_URL: "${env:SQ_RELIABILITY_UNSET}"},
                "SQ-C005",
            ),
        ],
        ids=[
            "typo",
            "notification-typo",
            "int-key",
            "list",
            "cache-choice",
            "timeout-zero",
            "retries-range",
            "threshold-range",
            "nan",
            "priority",
            "missing-url",
            "http",
            "scheme",
            "unset-env",
        ],
    )
    def test_a_bad_setting_is_refused_with_its_code(
        self, tried: str, user_conf: Any, code: str, store: Store, table: str, catalog: Catalog
    ) -> None:
        before = store.state()
        with pytest.raises(ConfigError) as info:
            with_quarantine(rules=RULES, target_table=table, write_to_table=True, user_conf=user_conf)
        assert info.value.code == code
        assert store.state() == before
        catalog.bad_input("user_conf", tried, code, shown(info.value), nothing_written=True)


# ---------------------------------------------------------------------------------------- notifiers


def _alerting(endpoint: dict[str, Any], *, fail_on_error: bool) -> dict[str, Any]:
    """A start alert (sent before any row is written) to one failing endpoint, small timeouts."""
    return {
        N + "on.start": True,
        N + "allow_http": True,
        N + "timeout.seconds": 0.3,
        N + "max.retries": 1,
        N + "retry.backoff.seconds": 0.01,
        N + "fail_on_error": fail_on_error,
        **endpoint,
    }


def _webhook(url: str) -> dict[str, Any]:
    return {uc.WEBHOOK_ENABLED: True, uc.WEBHOOK_URL: url}


ENDPOINTS = ["refused", "hangs", "http-500", "http-429", "redirect", "smtp-refused"]


class TestNotifiers:
    """A notifier that fails never fails the run, unless fail_on_error asks for it before anything is written."""

    def _endpoint(self, kind: str, make_server: Callable[[], RecordingServer]) -> tuple[str, dict[str, Any], Any]:
        """(what was tried, the channel's settings, a server that must receive nothing, or None)."""
        if kind == "refused":
            return (
                "a webhook on a closed port (connection refused)",
                _webhook(f"http://127.0.0.1:{free_port()}/hook"),
                None,
            )
        if kind == "smtp-refused":
            conf = {uc.EMAIL_ENABLED: True, uc.EMAIL_SMTP_HOST: "127.0.0.1", uc.EMAIL_SMTP_PORT: free_port(),
                    uc.EMAIL_FROM: "dq@example.com", uc.EMAIL_TO: "ops@example.com"}  # fmt: skip
            return "an SMTP server on a closed port", conf, None
        server = make_server()
        if kind == "hangs":
            server.reply(*[Reply(delay=10.0)] * 4)
            return "a webhook that never answers (timeout 0.3 s)", _webhook(server.url + "/hook"), None
        if kind == "http-500":
            server.reply(*[Reply(status=500, body=b"boom")] * 4)
            return "a webhook answering 500", _webhook(server.url + "/hook"), None
        if kind == "http-429":
            server.reply(*[Reply(status=429, headers={"Retry-After": "0"})] * 4)
            return "a webhook answering 429 (Retry-After: 0)", _webhook(server.url + "/hook"), None
        other = make_server()
        server.reply(*[Reply(status=302, headers={"Location": other.url + "/stolen"})] * 4)
        return "a webhook redirecting (302) to another host", _webhook(server.url + "/hook"), other

    @pytest.mark.parametrize("kind", ENDPOINTS)
    def test_with_fail_on_error_the_run_stops_before_writing_anything(
        self,
        kind: str,
        spark: SparkSession,
        store: Store,
        table: str,
        make_server: Callable[[], RecordingServer],
        catalog: Catalog,
    ) -> None:
        tried, endpoint, other = self._endpoint(kind, make_server)

        @with_quarantine(
            rules=RULES, target_table=table, write_to_table=True, user_conf=_alerting(endpoint, fail_on_error=True)
        )
        def pipeline() -> DataFrame:
            return spark.range(4)

        before = store.state()
        with pytest.raises(NotificationError) as info:
            pipeline()
        assert info.value.code == "SQ-N001" and info.value.channels
        assert store.state() == before
        assert other is None or other.requests == [], "the redirect was not followed"
        catalog.bad_input(
            "notifications", f"{tried}, fail_on_error on", "SQ-N001", shown(info.value), nothing_written=True
        )

    @pytest.mark.parametrize("kind", ENDPOINTS)
    def test_without_fail_on_error_the_run_succeeds_and_the_failure_is_logged(
        self,
        kind: str,
        spark: SparkSession,
        table: str,
        make_server: Callable[[], RecordingServer],
        caplog: pytest.LogCaptureFixture,
        catalog: Catalog,
    ) -> None:
        caplog.set_level(logging.INFO, logger="spark_quarantine")
        tried, endpoint, other = self._endpoint(kind, make_server)

        @with_quarantine(
            rules=RULES, target_table=table, write_to_table=True, user_conf=_alerting(endpoint, fail_on_error=False)
        )
        def pipeline() -> DataFrame:
            return spark.range(4)

        pipeline()
        run = pipeline.last_run
        assert run is not None and run.status == "passed"
        assert sorted(r.id for r in spark.read.table(table).collect()) == [0, 2], "the target got its rows, once"
        assert spark.read.table(f"{table}_error").count() == 2
        assert other is None or other.requests == [], "the redirect was not followed"
        (logged,) = [r.getMessage() for r in caplog.records if "notification_failed" in r.getMessage()]
        assert "code='SQ-N001'" in logged
        assert "127.0.0.1" not in logged, "the endpoint (a credential) is not logged"
        catalog.bad_input(
            "notifications",
            f"{tried}, fail_on_error off (the run passes and writes its rows once)",
            "SQ-N001",
            shown(logged),
            nothing_written=False,
            written="the run's own rows, once",
        )
