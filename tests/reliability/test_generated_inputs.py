"""Generated bad inputs: whatever a user hands the library, the answer is a result or a coded error.

hypothesis generates rule files (YAML text: random structure, keys repeated, odd types and
strings), ``user_conf`` dicts, ``spark-quarantine run`` files, and DataFrames with odd column
names (reserved words, dots, backticks, spaces, unicode) of every Spark type. Each is given to
the public API or the CLI. An input may be accepted; anything raised must be a
:class:`SparkQuarantineError` (the CLI: a coded line, never a traceback, never ``SQ-X009``, the
code for an error that is not ours), and a refused run must leave the warehouse's files as they
were (paths, sizes and modification times, so a rewritten file counts).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from spark_quarantine import SparkQuarantineError, load_rules, with_quarantine
from spark_quarantine.config import parse_user_conf
from tests.reliability.conftest import Catalog

#: Generated inputs per kind (the Spark-backed kind is slower: each example is a run).
EXAMPLES = {"rule files": 150, "user_conf": 150, "run files": 40, "columns and types": 25}
TRIED: Counter[str] = Counter()
UNCODED: Counter[str] = Counter()
_tables = itertools.count(1)

_ODD_TEXT = st.sampled_from(
    ["", " ", "id", "select", "`x`", "a.b", "a b", "ü", "名前", "${x}", "${env:NOPE}", "${secret:a/b}", "-", "\t"]
)
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(allow_nan=True), _ODD_TEXT, st.text(max_size=8)
)
_RULE_KEYS = st.sampled_from(
    [
        "name",
        "expectation",
        "action_if_failed",
        "priority",
        "enabled",
        "filter",
        "check",
        "tag",
        "description",
        "criticality",
        "error_drop_threshold",
        "unknown",
    ]
)


def _values(depth: int = 2) -> st.SearchStrategy[Any]:
    if depth == 0:
        return _SCALARS
    inner = _values(depth - 1)
    return st.one_of(_SCALARS, st.lists(inner, max_size=3), st.dictionaries(_RULE_KEYS, inner, max_size=4))


def _yaml_mapping(pairs: list[tuple[str, Any]], indent: int = 0) -> str:
    """A YAML mapping written by hand, so keys may repeat (a dict could not hold them)."""
    pad = " " * indent
    lines = []
    for key, value in pairs:
        dumped = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
        dumped = dumped.removesuffix("...").strip()
        lines.append(f"{pad}{key}: {dumped}")
    return "\n".join(lines)


@st.composite
def rule_files(draw: st.DrawFn) -> str:
    rules = []
    for _ in range(draw(st.integers(0, 3))):
        pairs = draw(st.lists(st.tuples(_RULE_KEYS, _values(1)), max_size=6))
        if draw(st.booleans()):
            pairs = [("name", draw(_ODD_TEXT)), ("expectation", draw(_ODD_TEXT)), *pairs]
        body = _yaml_mapping(pairs, indent=4)
        rules.append("  -\n" + body if body else "  - {}")
    top = "rules:\n" + "\n".join(rules) if rules else "rules:"
    extra = draw(st.sampled_from(["", "\nrules: []", "\nowner: me", "\n- stray", "\nrules: *nope", "\n\t bad"]))
    return top + extra


@st.composite
def user_confs(draw: st.DrawFn) -> dict[Any, Any]:
    known = [
        "spark.quarantine.error_table.enabled",
        "spark.quarantine.input.cache",
        "spark.quarantine.rules.params",
        "spark.quarantine.checkpoint_location",
        "spark.quarantine.trigger",
        "spark.quarantine.reference_dataframes",
        "spark.quarantine.notifications.slack.enabled",
        "spark.quarantine.notifications.slack.webhook.url",
        "spark.quarantine.notifications.on.failure",
        "spark.quarantine.notifications.email.smtp.port",
        "spark.quarantine.notifications.suppress.minutes",
        "spark.quarantine.notifications.fail_on_error",
        "spark.quarantine.unknown",
        "se.notifications.enable.slack",
    ]
    keys = st.one_of(st.sampled_from(known), _ODD_TEXT, st.integers(0, 3))
    return draw(st.dictionaries(keys, _values(1), max_size=5))


@st.composite
def run_files(draw: st.DrawFn) -> str:
    run = draw(
        st.dictionaries(
            st.sampled_from(["name", "input", "output", "quarantine", "checks", "rules", "mode", "x"]),
            st.one_of(_values(1), st.just({"location": "no_such_table_gen"}), st.just("no_such_rules.yaml")),
            max_size=5,
        )
    )
    top = draw(st.sampled_from(["runs", "run", "rules"]))
    doc = f"{top}:\n  - " + (yaml.safe_dump(run, default_flow_style=True, width=10_000).strip() if run else "{}")
    return doc + draw(st.sampled_from(["", "\nmax_parallelism: -1", "\nwarehouse: 7", "\nruns: []", "\nuser_conf: 3"]))


_NAMES = st.one_of(
    st.sampled_from(["id", "select", "from", "a.b", "a b", "`q`", "ü", "名前", "x-y", "order", "NULL", "_", "1a"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6),
)
_TYPES = st.sampled_from(
    [
        T.StringType(),
        T.IntegerType(),
        T.LongType(),
        T.DoubleType(),
        T.FloatType(),
        T.BooleanType(),
        T.DateType(),
        T.TimestampType(),
        T.TimestampNTZType(),
        T.DecimalType(38, 10),
        T.BinaryType(),
        T.ByteType(),
        T.ShortType(),
        T.ArrayType(T.StringType()),
        T.MapType(T.StringType(), T.IntegerType()),
        T.StructType([T.StructField("inner", T.LongType())]),
    ]
)


def _files(root: Path) -> frozenset[tuple[str, int, int]]:
    """Every file under ``root`` with its size and modification time: a rewrite changes the snapshot."""
    out = set()
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            with contextlib.suppress(FileNotFoundError):
                stat = path.stat()
                out.add((str(path.relative_to(root)), stat.st_size, stat.st_mtime_ns))
    return frozenset(out)


def _count(kind: str, action: Any) -> None:
    """Run ``action``: a result or a coded error passes; anything else is counted as uncoded."""
    TRIED[kind] += 1
    try:
        action()
    except SparkQuarantineError:
        pass
    except Exception:
        UNCODED[kind] += 1
        raise


_SETTINGS = settings(deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("kind", ["rule files"])
def test_a_generated_rule_file_loads_or_is_refused_with_a_code(kind: str, tmp_path_factory: Any) -> None:
    folder = tmp_path_factory.mktemp("generated_rules")

    @settings(_SETTINGS, max_examples=EXAMPLES[kind])
    @given(text=rule_files(), params=st.dictionaries(_ODD_TEXT, _SCALARS, max_size=2))
    def check(text: str, params: dict[str, Any]) -> None:
        path = folder / "rules.yaml"
        path.write_text(text, encoding="utf-8")
        _count(kind, lambda: load_rules(path, params=params))

    check()


def test_a_generated_user_conf_parses_or_is_refused_with_a_code() -> None:
    @settings(_SETTINGS, max_examples=EXAMPLES["user_conf"])
    @given(conf=user_confs())
    def check(conf: dict[Any, Any]) -> None:
        _count("user_conf", lambda: parse_user_conf(conf))

    check()


def test_a_generated_run_file_exits_with_a_coded_line_and_no_traceback(
    spark: SparkSession, tmp_path_factory: Any
) -> None:
    from spark_quarantine.cli import main

    folder = tmp_path_factory.mktemp("generated_runs")

    @settings(_SETTINGS, max_examples=EXAMPLES["run files"])
    @given(text=run_files())
    def check(text: str) -> None:
        path = folder / "runs.yaml"
        path.write_text(text, encoding="utf-8")
        err = io.StringIO()
        TRIED["run files"] += 1
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["run", str(path)])
        said = err.getvalue()
        if code != 0 and ("Traceback" in said or "[SQ-X009]" in said or "[SQ-" not in said):
            UNCODED["run files"] += 1
            raise AssertionError(f"exit {code} without our own coded message for:\n{text}\n{said}")

    check()


def test_generated_column_names_and_types_run_or_are_refused_with_a_code_and_nothing_written(
    spark: SparkSession, warehouse: Path
) -> None:
    kind = "columns and types"

    @settings(_SETTINGS, max_examples=EXAMPLES[kind])
    @given(
        fields=st.lists(st.tuples(_NAMES, _TYPES), min_size=1, max_size=4),
        check=st.sampled_from(["is_not_null", "expression"]),
    )
    def run(fields: list[tuple[str, T.DataType]], check: str) -> None:
        schema = T.StructType([T.StructField(name, data_type) for name, data_type in fields])
        df = spark.createDataFrame([tuple(None for _ in fields)], schema)
        first = fields[0][0]
        if check == "is_not_null":
            rule: dict[str, Any] = {
                "name": "present",
                "check": {"function": "is_not_null", "arguments": {"column": first}},
            }
        else:
            rule = {"name": "present", "expectation": "`" + first.replace("`", "``") + "` IS NOT NULL"}
        rule["action_if_failed"] = "drop"
        table = f"generated_{next(_tables)}"
        before = _files(warehouse)

        @with_quarantine(rules=[rule], error_table=f"{table}_errors", target_table=table, write_to_table=True)
        def checked() -> Any:
            return df

        TRIED[kind] += 1
        try:
            checked()
        except SparkQuarantineError:
            assert _files(warehouse) == before, f"a refused run wrote files, for {fields}"
        except Exception:
            UNCODED[kind] += 1
            raise

    run()


def test_zz_the_figure_counts_every_generated_input(catalog: Catalog) -> None:
    """The catalog's figure: inputs tried per kind, and how many raised anything but a coded error (goal 0)."""
    tried = sum(TRIED.values())
    parts = ", ".join(f"{kind}: {TRIED[kind]}" for kind in EXAMPLES)
    catalog.figure(
        "generated inputs tried (raised anything but a coded error)", f"{tried} ({sum(UNCODED.values())}): {parts}"
    )
    assert tried >= sum(EXAMPLES.values()) // 2
    assert sum(UNCODED.values()) == 0
