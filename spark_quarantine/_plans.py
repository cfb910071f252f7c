"""A DataFrame's plan as Spark prints it: the one way the library looks inside a plan.

A Spark Connect session has no JVM handle, so nothing here walks JVM objects: both kinds of
session print the same ``explain`` text, and that text is read instead. Only what the text
shows reliably is used: operator names, the subqueries hung under an operator, function
names in expressions, and each file scan's index.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["Plan", "expected_errors", "plan_of"]

_SECTIONS = re.compile(r"^== (Parsed|Analyzed|Optimized) Logical Plan ==$|^== Physical Plan ==$", re.MULTILINE)
_SUBQUERY = re.compile(r"\b(?:scalar-subquery|exists|list|lateral-subquery)#\d+ \[")
# Functions whose value may differ from one computation of the same row to the next.
_NON_DETERMINISTIC = re.compile(
    r"\b(?:rand|randn|random|randstr|uniform|uuid|shuffle|monotonically_increasing_id|spark_partition_id|"
    r"input_file_name|input_file_block_start|input_file_block_length|reflect|java_method|try_reflect)\("
)


@dataclass(frozen=True)
class _Node:
    name: str
    line: str
    in_subquery: bool


@dataclass(frozen=True)
class Plan:
    """The analysed logical plan and the physical plan of a DataFrame, as text."""

    analyzed: str
    physical: str
    parsed: str = ""
    #: False when planning raised a runtime error (ANSI constant folding of a literal that
    #: cannot be cast or divided): the plan is then unknown, and callers assume the worst.
    known: bool = True

    def nodes(self, *, subqueries: bool = False) -> list[str]:
        """Operator names of the analysed plan (those of subquery plans only with ``subqueries``)."""
        return [n.name for n in self._nodes() if subqueries or not n.in_subquery]

    def lines(self) -> list[str]:
        """The operator lines of the main plan (without the subquery plans)."""
        return [n.line for n in self._nodes() if not n.in_subquery]

    def has_subquery(self) -> bool:
        return any(n.in_subquery for n in self._nodes()) or bool(_SUBQUERY.search(self.analyzed))

    def non_deterministic(self) -> bool:
        """Whether an expression of the main plan calls a function that is not deterministic."""
        return any(_NON_DETERMINISTIC.search(line) for line in self.lines())

    def runs_python(self) -> bool:
        return "EvalPython" in self.physical or "FlatMapGroupsInPandas" in self.physical

    def file_indexes(self) -> list[str]:
        """The index kind of every file scan (``InMemoryFileIndex``, ``PreparedDeltaFileIndex``, ...)."""
        return re.findall(r"Location: (\w+)", self.physical)

    def _nodes(self) -> list[_Node]:
        # Each tree level indents by three characters. A subquery's plan hangs two levels under
        # the operator that holds it, an ordinary child one level.
        found: list[_Node] = []
        stack: list[tuple[int, bool]] = []
        for raw in self.analyzed.splitlines()[1:]:  # the first line is the output schema
            match = re.match(r"^[ :+\-|]*", raw)
            start = match.end() if match else 0
            name_match = re.match(r"[A-Za-z]\w*", raw[start:])
            if name_match is None:
                continue
            depth = start // 3
            while stack and stack[-1][0] >= depth:
                stack.pop()
            inner = bool(stack) and (stack[-1][1] or depth - stack[-1][0] >= 2)
            stack.append((depth, inner))
            found.append(_Node(name_match.group(), raw[start:], inner))
        return found


# explain() prints and returns nothing on both kinds of session, so its text is caught from
# stdout; the lock keeps two of our threads from catching each other's.
_STDOUT = threading.Lock()


def plan_of(df: DataFrame) -> Plan:
    """``df``'s plans from ``DataFrame.explain`` (analysis and planning, no job)."""
    from pyspark.errors import AnalysisException, PySparkException

    out = io.StringIO()
    try:
        with _STDOUT, contextlib.redirect_stdout(out):
            df.explain(extended=True)
    except AnalysisException:
        raise
    except PySparkException:
        return Plan(analyzed="", physical="", known=False)
    text = out.getvalue()
    parts: dict[str, str] = {}
    marks = list(_SECTIONS.finditer(text))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        parts[mark.group(1) or "Physical"] = text[mark.end() : end].strip("\n")
    return Plan(analyzed=parts.get("Analyzed", ""), physical=parts.get("Physical", ""), parsed=parts.get("Parsed", ""))


# PySpark logs every analysis error that carries a query context at ERROR, through two loggers
# of its own, before the caller sees the exception. A rule check provokes such errors on
# purpose (a typo in a rule is found by analysing it) and reports them itself with a code, so
# the log line is noise. Those records are dropped only while this thread is inside
# expected_errors(): the user's own failing queries, and other threads, log as before.
_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
_PROBING = threading.local()
_FILTERS = threading.Lock()
_ACTIVE = [0]


class _ProbeFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_PROBING, "depth", 0)


_FILTER = _ProbeFilter()


@contextlib.contextmanager
def expected_errors() -> Iterator[None]:
    """Within this block, PySpark's own log line for an analysis error of this thread is dropped."""
    from pyspark.logger import PySparkLogger

    # PySpark's class, never a plain Logger: PySpark calls them with its own keyword arguments.
    loggers = [PySparkLogger.getLogger(name) for name in _CONTEXT_LOGGERS]
    with _FILTERS:
        if _ACTIVE[0] == 0:
            for logger in loggers:
                logger.addFilter(_FILTER)
        _ACTIVE[0] += 1
    _PROBING.depth = getattr(_PROBING, "depth", 0) + 1
    try:
        yield
    finally:
        _PROBING.depth -= 1
        with _FILTERS:
            _ACTIVE[0] -= 1
            if _ACTIVE[0] == 0:
                for logger in loggers:
                    logger.removeFilter(_FILTER)
