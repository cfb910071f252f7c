"""The reliability catalog: tests in this folder record what they tried, and a full run writes it.

Each test that tries a bad input, kills a run or checks a property records one line through the
session-scoped ``catalog`` fixture. When every test file under ``tests/reliability/`` ran
unfiltered (no ``-k``/``-m``) and every test passed, the session writes ``docs/reliability.md``
from those records (``make reliability`` runs just this folder). A partial or failing run leaves
the document alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
#: The figure the fault model counts: rows the oracle expected and the tables lacked, and rows written twice.
LOST = "fault model: rows lost / written twice (counted)"
DOC = HERE.parents[1] / "docs" / "reliability.md"


@dataclass(frozen=True)
class BadInput:
    """One bad input tried: what the user sees, and whether anything was written."""

    area: str  # "rules", "tables", "user_conf", "notifications", ...
    tried: str  # the bad input, in a few words
    code: str  # the SQ-... code raised (or logged, for warnings and notifier failures)
    message: str  # the first line of the message the user sees
    nothing_written: bool  # no table, file or row was created or changed
    written: str = ""  # when something was written: what, and whether that was expected


@dataclass(frozen=True)
class KillPoint:
    """One write boundary where a run was killed (SIGKILL) or crashed in-process, then rerun and checked."""

    mode: str  # "error table", "DLQ", "streaming DLQ"
    point: str  # the boundary name (SPARK_QUARANTINE_KILL_AT)
    runs: int  # processes started for this kill point (prepare, killed run, reruns, dump)
    checked: str  # what was compared after the rerun


@dataclass(frozen=True)
class Property:
    """One property checked with hypothesis, and how many generated examples it held for."""

    name: str
    examples: int
    seed: str


@dataclass
class Catalog:
    bad_inputs: list[BadInput] = field(default_factory=list)
    kill_points: list[KillPoint] = field(default_factory=list)
    properties: list[Property] = field(default_factory=list)
    figures: dict[str, str] = field(default_factory=dict)  # leaks and load: name -> measured figure
    lost: dict[str, tuple[int, int]] = field(default_factory=dict)  # fault model: mode -> (lost, twice)

    def bad_input(
        self, area: str, tried: str, code: str, message: str, *, nothing_written: bool, written: str = ""
    ) -> None:
        first = message.strip().splitlines()[0] if message.strip() else ""
        self.bad_inputs.append(BadInput(area, tried, code, first, nothing_written, written))

    def kill_point(self, mode: str, point: str, runs: int, checked: str) -> None:
        self.kill_points.append(KillPoint(mode, point, runs, checked))

    def property(self, name: str, examples: int, seed: str) -> None:
        self.properties.append(Property(name, examples, seed))

    def figure(self, name: str, value: str) -> None:
        self.figures[name] = value

    def rows_lost(self, mode: str, lost: int, twice: int) -> None:
        """The fault model's count for one mode; the ``LOST`` figure sums every mode recorded so far."""
        self.lost[mode] = (lost, twice)
        total = f"{sum(n for n, _ in self.lost.values())} / {sum(n for _, n in self.lost.values())}"
        parts = ", ".join(f"{m}: {n} / {t}" for m, (n, t) in self.lost.items())
        self.figure(LOST, f"{total} ({parts})")


_CATALOG = Catalog()
_OUTCOMES: dict[str, bool] = {}


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return _CATALOG


def _in_folder(nodeid: str) -> bool:
    return nodeid.startswith("tests/reliability/")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not _in_folder(report.nodeid):
        return
    if report.when == "call" or report.failed:
        _OUTCOMES[report.nodeid] = _OUTCOMES.get(report.nodeid, True) and report.passed


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    selected = [item.nodeid for item in session.items if _in_folder(item.nodeid)]
    files = {n.split("::")[0].rsplit("/", 1)[-1] for n in selected}
    every_file = files == {p.name for p in HERE.glob("test_*.py")}
    unfiltered = not session.config.option.keyword and not session.config.option.markexpr
    if not selected or not every_file or not unfiltered or not all(_OUTCOMES.get(n) for n in selected):
        return
    DOC.write_text(render(_CATALOG), encoding="utf-8")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(catalog: Catalog) -> str:
    """``docs/reliability.md`` from the records of one full run of ``tests/reliability/``."""
    safe = sum(1 for b in catalog.bad_inputs if b.nothing_written)
    runs = sum(k.runs for k in catalog.kill_points)
    examples = sum(p.examples for p in catalog.properties)
    lines = [
        "# Reliability",
        "",
        "<!-- Generated by running tests/reliability/ (make reliability); do not edit by hand. -->",
        "",
        "The promise of spark_quarantine is that a bad row never disappears and a bad input never does",
        "damage. Every figure on this page was produced by the last full run of `tests/reliability/`,",
        "which runs in `make test` on a real local Spark + Delta session.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| bad inputs tried | {len(catalog.bad_inputs)} ({safe} with nothing written) |",
        f"| write boundaries crashed (SIGKILL or in-process) and recovered | {len(catalog.kill_points)} "
        f"({runs} processes) |",
        f"| properties checked | {len(catalog.properties)} ({examples} generated examples) |",
        f"| rows lost (counted by the fault model) | {catalog.figures.get(LOST, 'not measured in this run')} |",
        "",
        "## Bad inputs",
        "",
        "Each line is one bad input a test tried, the error code and the first line of the message",
        "the user sees, and what the test found written: *nothing* (checked on the warehouse's files",
        "and the catalog), or, where the input is accepted or only warned about, what the run wrote.",
        "",
        "| area | bad input | code | message | written |",
        "|---|---|---|---|---|",
    ]
    for b in catalog.bad_inputs:
        lines.append(
            f"| {_cell(b.area)} | {_cell(b.tried)} | `{b.code}` | {_cell(b.message)} | "
            f"{'nothing' if b.nothing_written else _cell(b.written or 'something (see message)')} |"
        )
    lines += [
        "",
        "## Fault injection",
        "",
        "Each run is either started in its own process and killed with SIGKILL at a write boundary",
        "(`SPARK_QUARANTINE_KILL_AT`), or crashed in-process at the boundary (`_faults.crash_at`, a",
        '`BaseException` no `except` of the library catches; rows marked "in-process"), then rerun;',
        "the tables are then compared exactly with an uninterrupted run or the fault model's oracle:",
        "no quarantined row lost, no row in both the target and the inbox, no duplicate in either,",
        "each fixed row recycled once.",
        "",
        "| mode | kill point | processes | checked after the rerun |",
        "|---|---|---|---|",
    ]
    for k in catalog.kill_points:
        lines.append(f"| {_cell(k.mode)} | `{k.point}` | {k.runs} | {_cell(k.checked)} |")
    lines += [
        "",
        "## Properties",
        "",
        "Checked with hypothesis on random schemas, rows and rule sets; a failure prints the seed",
        "(`--hypothesis-seed=N` replays it).",
        "",
        "| property | examples | seed |",
        "|---|---|---|",
    ]
    for p in catalog.properties:
        lines.append(f"| {_cell(p.name)} | {p.examples} | `{p.seed}` |")
    if catalog.figures:
        lines += ["", "## Leaks and load", "", "| check | measured |", "|---|---|"]
        for name, value in catalog.figures.items():
            lines.append(f"| {_cell(name)} | {_cell(value)} |")
    return "\n".join(lines) + "\n"
