"""The run report: real runs write the tables, headless Chromium opens the page, the page shows the tables' numbers.

Two pipelines run for real (an error-table pipeline twice, with a rule that starts failing and
one that stops; a DLQ pipeline that quarantines, is fixed by an operator and recycles), then
``report`` draws their stats, error and DLQ tables. Debian's Chromium loads each page from disk
with every request refused but the page's own, and the tests read the charts' marks and the
tables' cells from its DOM.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import ReportError, create_dlq_tables, report, with_quarantine
from spark_quarantine.dlq import mark_fixed
from tests.browser import Visit, visit

pytestmark = pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian's chromium is not installed")

RULES = [
    {"name": "id_present", "expectation": "id IS NOT NULL", "action_if_failed": "drop"},
    {"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "ignore"},
    {"name": "name_short", "expectation": "length(name) < 8", "action_if_failed": "drop"},
]
USER_CONF = {
    "spark.quarantine.notifications.error.drop.threshold": 10.0,
    "spark.quarantine.notifications.sample.exclude_columns": ["email"],
}
SCHEMA = "id long, amount double, name string, email string"
#: Run 1 breaks id_present and amount_positive; run 2 breaks amount_positive and name_short.
FIRST = [(1, 5.0, "a", "a@x.io"), (None, 2.0, "b", "b@x.io"), (3, -1.0, "c", "c@x.io"), (4, 1.0, "d", "d@x.io")]
SECOND = [(5, 1.0, "e", "e@x.io"), (6, -2.0, "f", "f@x.io"), (7, 3.0, "much too long", "g@x.io")]

# The page's tables as {id: [[cell, ...], ...]}: a number cell's exact data-value, else its text.
TABLES_JS = """() => Object.fromEntries([...document.querySelectorAll('table[id]')].map(t => [t.id,
  [...t.querySelectorAll('tbody tr')].map(r => [...r.cells].map(c =>
     c.dataset.value !== undefined ? c.dataset.value : c.textContent))]))"""
MARKS_JS = """() => ({
  ids: [...document.querySelectorAll('svg [id]')].map(e => e.id),
  drawn: [...document.querySelectorAll('svg g[id] path')].filter(p => (p.getAttribute('d') || '').length > 10)
          .map(p => p.closest('g[id]').id),
  labelled: [...document.querySelectorAll('figure svg')].map(s => s.getAttribute('aria-label')),
  figures: document.querySelectorAll('figure').length,
  fallbacks: document.querySelectorAll('figure details table').length,
  scripts: document.scripts.length,
  cards: Object.fromEntries([...document.querySelectorAll('[data-card]')].map(c =>
     [c.dataset.card, c.querySelector('.value').textContent])),
  lists: Object.fromEntries([...document.querySelectorAll('ul[id]')].map(u =>
     [u.id, [...u.querySelectorAll('li')].map(l => l.textContent)])),
})"""

_names = itertools.count()


@dataclass(frozen=True)
class Built:
    stats: str
    errors: str
    dlq: str
    source: str
    page: Path
    dlq_page: Path
    visit: Visit
    dlq_visit: Visit


def _pipeline(spark: SparkSession, df: DataFrame, **kwargs: Any) -> Any:
    @with_quarantine(rules=RULES, user_conf=USER_CONF, **kwargs)
    def run() -> DataFrame:
        return df

    return run


@pytest.fixture(scope="module")
def built(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Built:
    name = f"rp{next(_names)}"
    stats, target = f"{name}_stats", f"{name}_orders"
    for rows in (FIRST, SECOND):
        _pipeline(spark, spark.createDataFrame(rows, SCHEMA), target_table=target, write_to_table=True,
                  stats_table=stats, product_id="shop")()  # fmt: skip
    # The DLQ pipeline: one run quarantines, an operator fixes one row, the next run recycles it.
    dlq, source = f"{name}_dlq", f"src.{name}"
    create_dlq_tables(spark, dlq)
    dlq_stats = f"{name}_dlq_stats"
    dlq_run = _pipeline(spark, spark.createDataFrame(FIRST, SCHEMA), target_table=f"{name}_dlq_target",
                        stats_table=dlq_stats, quarantine={"dlq_table": dlq, "source_table": source})  # fmt: skip
    dlq_run()
    (row,) = spark.read.table(dlq).filter("_dlq_status = 'quarantined'").orderBy("_dlq_sk").limit(1).collect()
    payload = json.loads(spark.sql(f"SELECT to_json(_row_data) AS j FROM {dlq} WHERE _dlq_sk = '{row['_dlq_sk']}'")
                         .collect()[0]["j"])  # fmt: skip
    payload.update({"id": 99, "amount": 9.0, "name": "fixed"})
    mark_fixed(spark, dlq, source, {row["_dlq_sk"]: payload})
    dlq_run()
    folder = tmp_path_factory.mktemp("report")
    page = report(stats, folder / "report.html", spark=spark, product_id="shop", error_table=f"{target}_error",
                  user_conf=USER_CONF)  # fmt: skip
    dlq_page = report(dlq_stats, folder / "dlq.html", spark=spark, dlq_table=dlq, source_table=source,
                      user_conf=USER_CONF)  # fmt: skip
    scripts = {"tables": TABLES_JS, "marks": MARKS_JS}
    return Built(
        stats, f"{target}_error", dlq, source, page, dlq_page,
        visit(page, folder / "report.png", scripts), visit(dlq_page, folder / "dlq.png", scripts),
    )  # fmt: skip


def _screenshot_is_not_blank(path: Path) -> None:
    from PIL import Image

    with Image.open(path) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1_000_000) or []
    assert image.size[0] >= 1000 and len(colours) > 50  # text, lines and bars, not an empty page


class TestThePageInChromium:
    def test_it_loads_from_disk_without_any_request_and_logs_nothing(self, built: Built) -> None:
        """Self-contained: the only request is the file itself; no console message, no page error, no script."""
        for seen, page in ((built.visit, built.page), (built.dlq_visit, built.dlq_page)):
            assert seen.requests == [page.as_uri()]
            assert seen.console == [] and seen.page_errors == []
            assert seen.evaluated["marks"]["scripts"] == 0
            _screenshot_is_not_blank(page.with_suffix(".png"))

    def test_every_chart_is_drawn_labelled_and_has_a_table(self, built: Built) -> None:
        marks = built.visit.evaluated["marks"]
        drawn = set(marks["drawn"])
        assert {"runs-rows-input", "runs-rows-output", "runs-rows-dropped", "runs-rows-error"} <= drawn
        assert {"runs-drop-dropped", "runs-drop-threshold"} <= drawn
        assert {"rules-rate-amount-positive", "rules-rate-id-present", "rules-rate-name-short"} <= drawn
        # The last run's top failing rules: one bar per failing rule (name_short and amount_positive).
        assert sorted(i for i in marks["ids"] if i.startswith("rules-last-bar-")) == [
            "rules-last-bar-0",
            "rules-last-bar-1",
        ]
        assert marks["figures"] == marks["fallbacks"] == len(marks["labelled"]) == 4
        assert all(marks["labelled"])

    def test_the_dlq_charts_are_drawn(self, built: Built) -> None:
        marks = built.dlq_visit.evaluated["marks"]
        assert {"dlq-status-bar-0", "dlq-status-bar-1", "dlq-status-bar-2"} <= set(marks["ids"])
        assert any(i.startswith("dlq-age-quarantined-") for i in marks["ids"])
        assert "dlq-recycled-recycled" in marks["drawn"]


class TestTheNumbersAreTheTables:
    def test_runs_match_the_stats_table(self, spark: SparkSession, built: Built) -> None:
        stats = spark.read.table(built.stats).orderBy("started_at").collect()
        shown = built.visit.evaluated["tables"]["runs-table"]
        assert [(r[0], r[2], int(r[3]), int(r[4]), int(r[5]), int(r[6])) for r in shown] == [
            (s["run_id"], s["status"], s["input_rows"], s["output_rows"], s["dropped_rows"], s["error_rows"])
            for s in stats
        ]
        assert [float(r[7]) for r in shown] == [round(100 * s["dropped_rows"] / s["input_rows"], 4) for s in stats]
        cards = built.visit.evaluated["marks"]["cards"]
        last = stats[-1]
        assert (cards["last run"], cards["input rows"], cards["dropped rows"]) == (
            last["run_id"],
            str(last["input_rows"]),
            str(last["dropped_rows"]),
        )
        assert cards["drop threshold"] == "10%"  # the pipeline's user_conf

    def test_rules_new_and_resolved_failures_match(self, spark: SparkSession, built: Built) -> None:
        stats = spark.read.table(built.stats).orderBy("started_at").collect()
        rules = {r[0]: (int(r[1]), int(r[3]), int(r[4])) for r in built.visit.evaluated["tables"]["rules-table"]}
        for rule in ("id_present", "amount_positive", "name_short"):
            totals = [s["rule_failures"][rule] for s in stats]
            assert rules[rule] == (totals[-1], sum(totals), sum(1 for t in totals if t))
        lists = built.visit.evaluated["marks"]["lists"]
        assert lists["new-failures"] == ["name_short"]
        assert lists["resolved-failures"] == ["id_present"]

    def test_the_sample_is_the_last_runs_failing_rows_without_the_pii_column(
        self, spark: SparkSession, built: Built
    ) -> None:
        last = spark.read.table(built.stats).orderBy("started_at").collect()[-1]["run_id"]
        expected = {
            (str(r["id"]), ", ".join(m["rule"] for m in r["meta_row_dq_results"]))
            for r in spark.read.table(built.errors).filter(f"meta_dq_run_id = '{last}'").collect()
        }
        shown = built.visit.evaluated["tables"]["sample-table"]
        assert {(r[0], r[-1]) for r in shown} == expected
        html = built.page.read_text(encoding="utf-8")
        assert "@x.io" not in html and "Left out (PII): email" in html

    def test_dlq_health_matches_the_inbox_and_the_stats(self, spark: SparkSession, built: Built) -> None:
        inbox = spark.read.table(built.dlq).filter(f"_dlq_source_table = '{built.source}'")
        by_status = {r["_dlq_status"]: r["count"] for r in inbox.groupBy("_dlq_status").count().collect()}
        tables = built.dlq_visit.evaluated["tables"]
        assert {r[0]: int(r[1]) for r in tables["dlq-status-table"] if int(r[1])} == by_status
        assert by_status["recycled"] == 1
        recycled = [r["recycled_rows"] for r in spark.read.table(f"{built.dlq}_stats").orderBy("started_at").collect()]
        assert [int(r[2]) for r in tables["dlq-recycled-table"]] == recycled == [0, 1]
        cards = built.dlq_visit.evaluated["marks"]["cards"]
        assert cards["fixed, not recycled"] == "0" and cards["quarantined"] == str(by_status["quarantined"])
        assert sum(int(r[1]) for r in tables["dlq-age-table"]) == by_status["quarantined"]
        # Without an error table the sample is the newest quarantined rows, PII left out.
        assert tables["sample-table"] and "@x.io" not in built.dlq_page.read_text(encoding="utf-8")


class TestAYearOfHourlyRuns:
    def test_it_is_drawn_per_day_from_one_read_of_the_stats(
        self, spark: SparkSession, table: str, tmp_path: Path
    ) -> None:
        """8,760 runs: one point per day (sums), and the stats rows are read by one collect, never sorted by Spark."""
        from spark_quarantine.sinks.stats import STATS_SCHEMA
        from tests.conftest import count_jobs

        start = datetime(2025, 12, 1, tzinfo=timezone.utc)
        rows = [
            (f"r{i}", "p", "t", "t_error", 100, 100 - i % 5, i % 5, i % 5, {"rule_a": i % 5}, "passed",
             start + timedelta(hours=i), start + timedelta(hours=i, seconds=5), 5.0, "4", "0", [], None)
            for i in range(24 * 365)
        ]  # fmt: skip
        spark.createDataFrame(rows, STATS_SCHEMA).write.format("delta").saveAsTable(table)
        report(table, tmp_path / "year.html", spark=spark)  # the first read also builds Delta's snapshot
        with count_jobs(spark) as jobs:
            page = report(table, tmp_path / "year.html", spark=spark)
        # One collect, sorted in Python (a Spark sort would add a sampling job and a shuffle), and
        # Delta's own job for the table's state.
        assert jobs.data <= 2
        seen = visit(page, scripts={"tables": TABLES_JS})
        days = seen.evaluated["tables"]["runs-table"]
        assert len(days) == 365 and days[0][0] == "24 runs"
        assert sum(int(d[3]) for d in days) == 100 * 24 * 365
        assert sum(int(d[5]) for d in days) == sum(i % 5 for i in range(24 * 365))
        assert seen.console == [] and seen.page_errors == []


class TestRefusals:
    def test_bad_arguments_are_sq_g001_before_any_job(self, spark: SparkSession, built: Built, tmp_path: Path) -> None:
        from tests.conftest import count_jobs

        cases: list[dict[str, Any]] = [
            {"since": "2026-02-01", "until": "2026-01-01"},
            {"since": "last tuesday"},
            {"output": tmp_path / "report.txt"},
            {"output": tmp_path / "missing" / "report.html"},
            {"sample_rows": -1},
            {"drop_threshold": 140},
        ]
        for case in cases:
            arguments = {"output": tmp_path / "r.html", **case}
            with count_jobs(spark) as jobs, pytest.raises(ReportError) as info:
                report(built.stats, spark=spark, **arguments)
            assert info.value.code == "SQ-G001", case
            assert jobs.value == 0
        assert not (tmp_path / "r.html").exists()

    def test_a_missing_table_or_a_table_that_is_not_a_stats_table_is_sq_g002(
        self, spark: SparkSession, built: Built, tmp_path: Path
    ) -> None:
        for name in ("no_such_stats", built.errors):
            with pytest.raises(ReportError) as info:
                report(name, tmp_path / "r.html", spark=spark)
            assert info.value.code == "SQ-G002" and name in str(info.value)
        assert not (tmp_path / "r.html").exists()

    def test_no_run_in_the_period_is_a_page_that_says_so(
        self, spark: SparkSession, built: Built, tmp_path: Path
    ) -> None:
        page = report(built.stats, tmp_path / "none.html", spark=spark, until="2000-01-01")
        assert 'id="no-runs"' in page.read_text(encoding="utf-8")


class TestCommandLine:
    def test_spark_quarantine_report_writes_the_page(
        self, spark: SparkSession, built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from spark_quarantine.cli import main

        out = tmp_path / "cli.html"
        code = main(["report", built.stats, "-o", str(out), "--product-id", "shop", "--error-table", built.errors,
                     "--exclude-columns", "email", "--drop-threshold", "12.5", "--json"])  # fmt: skip
        assert code == 0 and json.loads(capsys.readouterr().out) == {"report": str(out.resolve())}
        text = out.read_text(encoding="utf-8")
        assert "threshold 12.5%" in text and "@x.io" not in text
        assert main(["report", built.stats, "-o", str(tmp_path / "x.html"), "--since", "soon"]) == 2
        assert "SQ-G001" in capsys.readouterr().err
        assert main(["report", "no_such_stats", "-o", str(tmp_path / "y.html")]) == 1
        assert "SQ-G002" in capsys.readouterr().err


class TestNotebookSummary:
    def test_a_run_result_renders_as_a_summary_with_a_bar_per_failing_rule(
        self, spark: SparkSession, table: str
    ) -> None:
        run = _pipeline(spark, spark.createDataFrame(FIRST, SCHEMA), target_table=table)
        run()
        result = run.last_run
        html = result._repr_html_()
        assert 'id="summary-bar-0"' in html and 'id="summary-bar-1"' in html and 'id="summary-bar-2"' not in html
        assert f'data-value="{result.input_rows}"' in html and result.run_id in html
        seen = visit_html(html)
        assert seen.console == [] and seen.page_errors == []
        assert seen.evaluated["bars"] == 2


def visit_html(fragment: str) -> Visit:
    """A fragment as a notebook shows it: inside a page, from disk."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "cell.html"
        page.write_text(f"<!DOCTYPE html><html><body>{fragment}</body></html>", encoding="utf-8")
        return visit(page, scripts={"bars": "() => document.querySelectorAll('[id^=summary-bar-] path').length"})
