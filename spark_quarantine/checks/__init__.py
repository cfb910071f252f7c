"""Named row checks: argument-checked functions that compile to Spark SQL text.

A rule may name a check instead of writing its expectation::

    - name: amount_in_range
      check:
        function: is_in_range
        arguments: {column: amount, min_limit: 0, max_limit: 1000}
      action_if_failed: drop

Every built-in check returns a :class:`CheckSql`: a Spark SQL boolean ``condition`` that is
TRUE when the row passes (never NULL), and a Spark SQL ``message`` that says why a row failed,
naming the column, its value and the limit. The built-ins import no Spark and use only Spark
SQL built-in functions (no Python UDFs). Column names go through :func:`quote_ident` and
values through :func:`sql_literal`, so no argument can break out of the expression.

Check names and argument names follow Databricks DQX's ``check_funcs``, and so does the way
each check judges NULL (most checks let a NULL value pass; the ``is_not_null*`` checks do
not). Differences from DQX:

* ``column`` is a column name, not an expression: ``"a.b"`` is field ``b`` of struct ``a``,
  and a top-level column whose name contains a dot is written in backticks (``"`a.b`"``).
  For an expression, use ``sql_expression``.
* Limits and list items are literal values (numbers, strings, dates, timestamps); a string
  is always a string, never a column name. Compare two columns with ``sql_expression``. A
  string in single quotes (DQX's way to write a string literal, ``"'active'"``) is read
  without its quotes.
* ``sql_expression`` is judged like any rule expectation: NULL fails.

:func:`register_check` adds a custom check, a function that takes the check's arguments and
returns a boolean pyspark ``Column`` (TRUE when the row passes).
"""

from __future__ import annotations

import datetime
import decimal
import difflib
import functools
import inspect
import ipaddress
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from spark_quarantine.checks.iso import iso_codes
from spark_quarantine.errors import SparkQuarantineError

__all__ = [
    "ROW_CHECKS",
    "CheckDefinition",
    "CheckError",
    "CheckSql",
    "bind_arguments",
    "compile_check",
    "get_check",
    "quote_ident",
    "register_check",
    "registered_checks",
    "sql_literal",
]

UNKNOWN_CHECK = "SQ-R016"
BAD_ARGUMENTS = "SQ-R017"


class CheckError(SparkQuarantineError, ValueError):
    """A check is unknown (``SQ-R016``) or its arguments are missing, unknown or invalid (``SQ-R017``)."""

    code = BAD_ARGUMENTS

    def __init__(self, message: str, *, code: str = BAD_ARGUMENTS, check: str | None = None) -> None:
        self.check = check
        super().__init__(message, code=code)

    def __reduce__(self) -> tuple[Any, ...]:
        return (functools.partial(type(self), code=self.code, check=self.check), (self.message,))


@dataclass(frozen=True)
class CheckSql:
    """A compiled built-in check: Spark SQL text for the pass condition and the failure message."""

    condition: str
    """Spark SQL boolean, TRUE when the row passes; never NULL, except ``sql_expression``'s (the user's SQL)."""
    message: str
    """Spark SQL string expression: why the row failed, naming the column, the value and the limit."""


@dataclass(frozen=True)
class CheckDefinition:
    """A registered check: its function, whether it is built in, and its one-paragraph doc."""

    name: str
    func: Callable[..., Any]
    builtin: bool
    doc: str
    kind: str = "row"
    nulls: str = ""
    """How the check judges a NULL value (built-ins: "passes" or "fails", with any detail)."""
    shown_as_call: bool = False
    """Results show the rule as its call, not its SQL (a check whose SQL embeds a long list)."""
    requires: tuple[str, ...] = ()
    """SQL functions the compiled check calls that Spark itself lacks (the geometry checks' ``st_*``)."""

    @property
    def signature(self) -> str:
        """The check's call form without type hints, e.g. ``is_in_range(column, min_limit=None, max_limit=None)``."""
        signature = inspect.signature(self.func)
        plain = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()]
        return self.name + str(signature.replace(parameters=plain, return_annotation=inspect.Signature.empty))


_REGISTRY: dict[str, CheckDefinition] = {}

_C = TypeVar("_C", bound=Callable[..., Any])


# ---------------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------------


def get_check(name: str) -> CheckDefinition:
    """The registered check called ``name``; raise :class:`CheckError` ``SQ-R016`` naming close matches."""
    definition = _REGISTRY.get(name) if isinstance(name, str) else None
    if definition is not None:
        return definition
    known = sorted(_REGISTRY)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6) if isinstance(name, str) else []
    hint = (
        f"did you mean {_either(close)}?"
        if close
        else f"expected one of {', '.join(known)} or a check added with register_check"
    )
    raise CheckError(f"unknown check function {name!r}; {hint}", code=UNKNOWN_CHECK, check=str(name))


def registered_checks() -> dict[str, CheckDefinition]:
    """Every registered check by name, built-ins first, in registration order (a copy)."""
    return dict(_REGISTRY)


@overload
def register_check(func: _C, *, name: str | None = None) -> _C: ...


@overload
def register_check(func: None = None, *, name: str | None = None) -> Callable[[_C], _C]: ...


def register_check(func: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """Register a custom row check; use as ``@register_check`` or ``@register_check(name="...")``.

    The function takes the check's arguments (as a rule's ``check.arguments`` gives them) and
    returns a boolean pyspark ``Column`` that is TRUE when the row passes. It is returned
    unchanged. Registering a name again replaces the earlier custom check; a built-in name is
    refused (:class:`CheckError` ``SQ-R017``).

    Example::

        @register_check
        def is_even(column: str) -> Column:
            \"\"\"Passes when ``column`` is an even number.\"\"\"
            return F.col(column) % 2 == 0
    """

    def register(function: _C) -> _C:
        if not callable(function):
            raise CheckError(f"register_check expects a function, found {_found(function)}")
        check_name = getattr(function, "__name__", None) if name is None else name
        if not isinstance(check_name, str) or not check_name.isidentifier():
            raise CheckError(
                f"a check name must be a Python identifier (letters, digits, underscores), found {check_name!r}; "
                "pass name='...' to register_check"
            )
        existing = _REGISTRY.get(check_name)
        if existing is not None and existing.builtin:
            raise CheckError(
                f"cannot register a custom check named {check_name!r}: it is a built-in check; choose another name",
                check=check_name,
            )
        _REGISTRY[check_name] = CheckDefinition(
            name=check_name, func=function, builtin=False, doc=_first_paragraph(function), kind="row", nulls=""
        )
        return function

    if func is None:
        return register
    return register(func)


def bind_arguments(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``arguments`` against the check's signature; return every argument, defaults filled in.

    Raises :class:`CheckError` ``SQ-R016`` for an unknown check and ``SQ-R017`` naming the
    missing and unknown arguments and the expected signature.
    """
    definition = get_check(name)
    expected = f"usage: {definition.signature}"
    if not isinstance(arguments, Mapping):
        raise CheckError(
            f"check {name!r}: arguments must be a mapping of argument names to values, found "
            f"{_found(arguments)}; {expected}",
            check=name,
        )
    signature = inspect.signature(definition.func)
    parameters = signature.parameters
    by_keyword = {
        p.name: p
        for p in parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    unknown = [str(k) for k in arguments if not isinstance(k, str) or (k not in by_keyword and not open_ended)]
    missing = [
        p.name
        for p in parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind is not inspect.Parameter.VAR_POSITIONAL
        and p.kind is not inspect.Parameter.VAR_KEYWORD
        and (p.name not in arguments or p.kind is inspect.Parameter.POSITIONAL_ONLY)
    ]
    if unknown or missing:
        problems = []
        if missing:
            problems.append(f"missing required argument(s) {_quoted(missing)}")
        if unknown:
            described = []
            for key in unknown:
                close = difflib.get_close_matches(key, list(by_keyword), n=1, cutoff=0.6)
                described.append(f"'{key}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
            problems.append(f"unknown argument(s) {', '.join(described)}")
        raise CheckError(f"check {name!r}: {'; '.join(problems)}; {expected}", check=name)
    try:
        bound = signature.bind(**arguments)
    except TypeError as exc:
        raise CheckError(f"check {name!r}: {exc}; {expected}", check=name) from None
    bound.apply_defaults()
    result: dict[str, Any] = {}
    for key, value in bound.arguments.items():
        kind = parameters[key].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            result.update(value)
        elif kind is not inspect.Parameter.VAR_POSITIONAL:
            result[key] = value
    return result


def compile_check(name: str, arguments: Mapping[str, Any]) -> Any:
    """Bind ``arguments`` and call the check: a :class:`CheckSql` for a built-in, a ``Column`` for a custom check.

    Typed ``Any`` so callers can use either result without a cast; test ``definition.builtin``.

    Raises :class:`CheckError` (``SQ-R016`` or ``SQ-R017``) when the check is unknown or an
    argument is missing, unknown or not acceptable.
    """
    bound = bind_arguments(name, arguments)
    return get_check(name).func(**bound)


def _first_paragraph(func: Callable[..., Any]) -> str:
    doc = inspect.getdoc(func) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def _either(names: Sequence[str]) -> str:
    quoted = [f"'{n}'" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" or {quoted[-1]}"


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(f"'{n}'" for n in names)


def _found(value: Any) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(value).__name__} {text}"


# ---------------------------------------------------------------------------------------------
# Quoting
# ---------------------------------------------------------------------------------------------


def quote_ident(name: str) -> str:
    """Quote a column name, or a dotted path to a nested field, for Spark SQL.

    Each dot-separated part is put in backticks, backticks inside it doubled; ``a.b`` is field
    ``b`` of struct ``a``. A part the caller already wrote in backticks is kept as written,
    which is how a top-level column whose name contains a dot is named. Raises
    :class:`CheckError` ``SQ-R017`` for an empty name or part or an unclosed backtick.

    Example::

        quote_ident("order id")      # `order id`
        quote_ident("address.city")  # `address`.`city`
        quote_ident("`a.b`")         # `a.b`
    """
    return ".".join("`" + part.replace("`", "``") + "`" for part in _name_parts(name))


def _name_parts(name: Any) -> list[str]:
    if not isinstance(name, str) or not name:
        raise _ArgumentError("a column name (a non-empty string)", name)
    parts: list[str] = []
    i, n = 0, len(name)
    while True:
        if i < n and name[i] == "`":
            j, chars = i + 1, []
            while True:
                if j >= n:
                    raise _ArgumentError("a column name whose backticks are closed", name)
                if name[j] == "`":
                    if j + 1 < n and name[j + 1] == "`":
                        chars.append("`")
                        j += 2
                        continue
                    break
                chars.append(name[j])
                j += 1
            part, i = "".join(chars), j + 1
            if i < n and name[i] != ".":
                raise _ArgumentError("a column name with a dot after each closing backtick", name)
        else:
            end = name.find(".", i)
            end = n if end == -1 else end
            part, i = name[i:end], end
        if not part:
            raise _ArgumentError("a column name without empty parts (check the dots)", name)
        parts.append(part)
        if i >= n:
            return parts
        i += 1
        if i >= n:
            raise _ArgumentError("a column name that does not end with a dot", name)


def sql_literal(value: Any) -> str:
    """A Spark SQL literal for ``value``, safe to splice into an expression.

    ``str`` becomes a quoted string with quotes and backslashes escaped (Spark's default
    ``spark.sql.parser.escapedStringLiterals=false``); ``int`` an integer; ``float`` a DOUBLE
    (``0.5D``; NaN and infinities as ``CAST('NaN' AS DOUBLE)``); ``decimal.Decimal`` a DECIMAL
    (``1.50BD``); ``bool`` TRUE/FALSE; ``None`` NULL; ``datetime.date`` ``DATE'2024-01-31'``;
    ``datetime.datetime`` ``TIMESTAMP'2024-01-31 12:00:00'`` (a naive value is read in the
    session time zone). Anything else raises :class:`CheckError` ``SQ-R017``.
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        if len(str(abs(value))) > 38:
            raise _ArgumentError("an integer of at most 38 digits", value)
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(value):
            return "CAST('Infinity' AS DOUBLE)" if value > 0 else "CAST('-Infinity' AS DOUBLE)"
        return repr(value) + "D"
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise _ArgumentError("a finite decimal", value)
        text = format(value, "f")
        if len(text.lstrip("-").replace(".", "")) > 38:
            raise _ArgumentError("a decimal of at most 38 digits", value)
        return text + "BD"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, datetime.datetime):
        return "TIMESTAMP'" + value.isoformat(sep=" ") + "'"
    if isinstance(value, datetime.date):
        return "DATE'" + value.isoformat() + "'"
    raise _ArgumentError("a string, number, boolean, date, timestamp or None", value)


class _ArgumentError(CheckError):
    """An argument value a check cannot use; the check's wrapper adds the check and argument names."""

    def __init__(self, expected: str, value: Any, argument: str | None = None) -> None:
        self.expected = expected
        self.value = value
        self.argument = argument
        super().__init__(f"expected {expected}, found {_found(value)}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.expected, self.value, self.argument))

    def for_argument(self, argument: str) -> _ArgumentError:
        return self if self.argument is not None else _ArgumentError(self.expected, self.value, argument)


# ---------------------------------------------------------------------------------------------
# Helpers shared by the built-ins
# ---------------------------------------------------------------------------------------------


class _Sql(str):
    """SQL text spliced into a message as is; a plain ``str`` part becomes a string literal."""


def _concat(*parts: str) -> str:
    pieces: list[str] = []
    pending = ""
    for part in parts:
        if isinstance(part, _Sql):
            if pending:
                pieces.append(sql_literal(pending))
                pending = ""
            pieces.append(part)
        else:
            pending += part
    if pending:
        pieces.append(sql_literal(pending))
    return pieces[0] if len(pieces) == 1 else "concat(" + ", ".join(pieces) + ")"


def _text(sql: str) -> _Sql:
    """A SQL value as message text: its string form, or 'NULL'."""
    return _Sql(f"coalesce(CAST({sql} AS STRING), 'NULL')")


def _said(column: _Col, text: str) -> str:
    """``<column> = <value> <text>``, the standard failure message."""
    return _concat(f"{column.display} = ", _text(column.sql), f" {text}")


def _case(when: str, then: str, otherwise: str) -> str:
    return f"CASE WHEN {when} THEN {then} ELSE {otherwise} END"


@dataclass(frozen=True)
class _Col:
    sql: str
    display: str


def sql_argument(value: Any, argument: str = "sql") -> str | None:
    """The SQL text of an argument written ``{sql: "<expression>"}``, else None.

    That form makes a column, a limit, a value or a reference time a Spark SQL expression of
    the row (``{sql: col2 * 2}``, ``{sql: "try_element_at(col7, 'key1')"}``); every other value
    is a literal. The expression is spliced in parentheses and analysed against the
    DataFrame's schema with the rest of the rule, before any job.
    """
    if isinstance(value, Mapping) and set(value) == {"sql"}:
        text = value["sql"]
        if isinstance(text, str) and text.strip():
            return text.strip()
        raise _ArgumentError("{sql: <a non-empty Spark SQL expression>}", value, argument)
    return None


def _column(value: Any, argument: str = "column") -> _Col:
    try:
        expression = sql_argument(value, argument)
        if expression is not None:
            return _Col(f"({expression})", expression)
        return _Col(quote_ident(value), value)
    except _ArgumentError as exc:
        raise exc.for_argument(argument) from None


def _unquoted(value: Any) -> Any:
    """DQX writes a string literal in single quotes (``"'active'"``); read it as the string inside."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == "'" and "'" not in value[1:-1]:
        return value[1:-1]
    return value


def _literal(value: Any, argument: str, expected: str, types: tuple[type, ...]) -> str:
    expression = sql_argument(value, argument)
    if expression is not None:
        return f"({expression})"
    if value is None or (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        raise _ArgumentError(expected, value, argument)
    try:
        return sql_literal(_unquoted(value))
    except _ArgumentError as exc:
        raise exc.for_argument(argument) from None


_LIMIT_TYPES = (int, float, decimal.Decimal, str, datetime.date)
_LIMIT = "a number, a date, a timestamp or a string"
_VALUE_TYPES = (bool, int, float, decimal.Decimal, str, datetime.date)
_VALUE = "a number, a string, a boolean, a date or a timestamp"


def _limit(value: Any, argument: str) -> str:
    return _literal(value, argument, _LIMIT, _LIMIT_TYPES)


def _show(value: Any) -> str:
    """How a literal (or a ``{sql: ...}`` expression, by its text) reads in a message."""
    expression = sql_argument(value)
    if expression is not None:
        return expression
    value = _unquoted(value)
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    return str(value)


def _bool(value: Any, argument: str) -> bool:
    if not isinstance(value, bool):
        raise _ArgumentError("true or false", value, argument)
    return value


def _int(value: Any, argument: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or (minimum is not None and value < minimum):
        expected = "an integer" if minimum is None else f"an integer of at least {minimum}"
        raise _ArgumentError(expected, value, argument)
    return value


def _text_arg(value: Any, argument: str) -> str:
    if not isinstance(value, str) or not value:
        raise _ArgumentError("a non-empty string", value, argument)
    return value


def _items(value: Any, argument: str, types: tuple[type, ...], expected: str) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        raise _ArgumentError(f"a non-empty list of {expected}", value, argument)
    for item in value:
        if item is None or (isinstance(item, bool) and bool not in types) or not isinstance(item, types):
            raise _ArgumentError(f"a non-empty list of {expected} (no nulls)", item, argument)
    return list(value)


def _in_list(column: _Col, items: list[Any], argument: str, case_sensitive: bool) -> tuple[str, str]:
    """``(<column> IN (...) text, list shown in messages)``."""
    literals = []
    for item in items:
        try:
            literals.append(sql_literal(_unquoted(item)))
        except _ArgumentError as exc:
            raise exc.for_argument(argument) from None
    subject = column.sql
    if not case_sensitive:
        subject = f"lower({subject})"
        literals = [f"lower({lit})" for lit in literals]
    shown = "[" + ", ".join(_show(i) for i in items) + "]"
    return f"{subject} IN ({', '.join(literals)})", shown


def _null_passes(column: _Col, condition: str) -> str:
    return f"({column.sql} IS NULL OR {condition})"


def _timestamp(value: Any, argument: str) -> tuple[str, str]:
    """(SQL, shown) for a reference timestamp: a literal, or the current timestamp when None."""
    if value is None:
        return "current_timestamp()", "the current timestamp"
    expression = _sql_of(value, argument)
    if expression is not None:
        return f"try_to_timestamp({expression})", expression
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value)
        except ValueError:
            raise _ArgumentError("an ISO timestamp such as '2024-01-31 12:00:00'", value, argument) from None
    if isinstance(value, datetime.datetime):
        return sql_literal(value), _show(value)
    if isinstance(value, datetime.date):
        return sql_literal(datetime.datetime.combine(value, datetime.time())), _show(value)
    raise _ArgumentError("a timestamp, a date or an ISO timestamp string", value, argument)


def _sql_of(value: Any, argument: str) -> str | None:
    expression = sql_argument(value, argument)
    return None if expression is None else f"({expression})"


def _date(value: Any, argument: str) -> tuple[str, str]:
    """(SQL, shown) for a reference date: a literal, or the current date when None."""
    if value is None:
        return "current_date()", "the current date"
    expression = _sql_of(value, argument)
    if expression is not None:
        return f"CAST(try_to_timestamp({expression}) AS DATE)", expression
    if isinstance(value, str):
        try:
            value = datetime.date.fromisoformat(value)
        except ValueError:
            raise _ArgumentError("an ISO date such as '2024-01-31'", value, argument) from None
    if isinstance(value, datetime.datetime):
        value = value.date()
    if isinstance(value, datetime.date):
        return sql_literal(value), _show(value)
    raise _ArgumentError("a date or an ISO date string", value, argument)


def _as_timestamp(column: _Col) -> str:
    # try_to_timestamp reads strings, dates and timestamps alike and yields NULL, not an
    # error, for a string that is no timestamp (a plain comparison raises under ANSI mode).
    return f"try_to_timestamp({column.sql})"


# Pattern letters Spark 4 accepts when parsing, with the run lengths it accepts (checked against
# Spark 4.0; E, F, Q, u, w, W, Y, e and c parse differently or not at all and raise at run time).
_DATETIME_LETTERS: dict[str, frozenset[int]] = {
    "G": frozenset(range(1, 5)),
    "y": frozenset(range(1, 7)),
    "D": frozenset(range(1, 4)),
    "M": frozenset(range(1, 5)),
    "L": frozenset(range(1, 5)),
    "d": frozenset({1, 2}),
    "a": frozenset({1}),
    "h": frozenset({1, 2}),
    "K": frozenset({1, 2}),
    "k": frozenset({1, 2}),
    "H": frozenset({1, 2}),
    "m": frozenset({1, 2}),
    "s": frozenset({1, 2}),
    "S": frozenset(range(1, 10)),
    "V": frozenset({2}),
    "z": frozenset(range(1, 5)),
    "O": frozenset({1, 4}),
    "X": frozenset(range(1, 6)),
    "x": frozenset(range(1, 6)),
    "Z": frozenset(range(1, 6)),
}


def _datetime_format(value: Any, argument: str) -> str:
    """Check a Spark datetime pattern now, since a bad one makes the run fail when it is first used."""
    fmt = _text_arg(value, argument)
    i, n, depth = 0, len(fmt), 0
    while i < n:
        char = fmt[i]
        if char == "'":
            end = i + 1
            while True:
                end = fmt.find("'", end)
                if end == -1:
                    raise _ArgumentError("a datetime pattern whose quoted text is closed", fmt, argument)
                if end + 1 < n and fmt[end + 1] == "'":
                    end += 2
                    continue
                break
            i = end + 1
            continue
        if char.isascii() and char.isalpha():
            run = 1
            while i + run < n and fmt[i + run] == char:
                run += 1
            allowed = _DATETIME_LETTERS.get(char)
            if allowed is None or run not in allowed:
                raise _ArgumentError(
                    f"a Spark datetime pattern ({char * run!r} is not a pattern Spark parses; letters "
                    "such as T are quoted: yyyy-MM-dd'T'HH:mm:ss)",
                    fmt,
                    argument,
                )
            i += run
            continue
        if char in "#{}":
            raise _ArgumentError(f"a Spark datetime pattern ({char!r} is reserved; quote it)", fmt, argument)
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise _ArgumentError("a datetime pattern whose optional sections [ ] are balanced", fmt, argument)
        i += 1
    if depth:
        raise _ArgumentError("a datetime pattern whose optional sections [ ] are balanced", fmt, argument)
    return fmt


def _rlike(subject: str, pattern: str) -> str:
    return f"{subject} RLIKE {sql_literal(pattern)}"


# Java regular expressions for RLIKE (which finds a match anywhere, hence the anchors; \z, not $,
# so a trailing newline does not slip through).
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_HEX = "[0-9A-Fa-f]{1,4}"


def _ipv6_body() -> str:
    """IPv6 text forms as Python's ipaddress accepts them: full, '::'-compressed, IPv4-suffixed."""
    forms = [rf"(?:{_HEX}:){{7}}{_HEX}", rf"(?:{_HEX}:){{6}}{_IPV4}"]
    for groups, suffix in ((8, ""), (6, _IPV4)):
        for left in range(groups):
            room = groups - 1 - left  # '::' stands for at least one group
            head = "" if left == 0 else rf"(?:{_HEX}:){{{left - 1}}}{_HEX}"
            if suffix:
                tail = rf"(?:{_HEX}:){{0,{room}}}" if room else ""
            else:
                tail = rf"(?:{_HEX}(?::{_HEX}){{0,{room - 1}}})?" if room else ""
            forms.append(f"{head}::{tail}{suffix}")
    return "(?:" + "|".join(forms) + ")"


IPV4_PATTERN = rf"^{_IPV4}\z"
IPV6_PATTERN = rf"^{_ipv6_body()}(?:%[^%/\s]+)?\z"
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = rf"(?:{_LABEL}\.)+[A-Za-z]{{2,63}}"
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
EMAIL_PATTERN = (
    r"^(?=.{1,254}\z)(?=.{1,64}@[^@]+\z)"
    rf"(?:{_ATEXT}+(?:\.{_ATEXT}+)*"
    r'|"(?:[\x20\x21\x23-\x5B\x5D-\x7E]|\\[\x20-\x7E])*")'
    rf"@(?:{_HOSTNAME}|\[(?:{_IPV4}|IPv6:[0-9A-Fa-f:.]+)\])\z"
)
UUID_PATTERN = r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\z"
STRICT_UUID_PATTERN = r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[1-8][0-9A-Fa-f]{3}-[89ABab][0-9A-Fa-f]{3}-[0-9A-Fa-f]{12}\z"
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


def url_pattern(schemes: Sequence[str]) -> str:
    """The Java regex ``is_valid_url`` uses for the given URL schemes (matched ignoring case)."""
    alternatives = "|".join(re.escape(s) for s in schemes)
    host = rf"(?:{_HOSTNAME}|localhost|{_IPV4}|\[[0-9A-Fa-f:.]+\])"
    return rf"^(?i:{alternatives})://(?:[^\s/?#@\[\]]+@)?{host}(?::[0-9]{{1,5}})?(?:[/?#]\S*)?\z"


_STRING_CASES = {
    "upper": (r"\p{Ll}", "is not upper case"),
    "lower": (r"[\p{Lu}\p{Lt}]", "is not lower case"),
    "title": (r"(?:^| )\p{Ll}", "is not title case (a word starts with a lower-case letter)"),
    "sentence": (r"(?:^|\.)\s*\p{Ll}", "is not sentence case (a sentence starts with a lower-case letter)"),
}


# ---------------------------------------------------------------------------------------------
# Built-in row checks
# ---------------------------------------------------------------------------------------------


def _builtin(
    nulls: str, shown_as_call: bool = False, requires: tuple[str, ...] = ()
) -> Callable[[Callable[..., CheckSql]], Callable[..., CheckSql]]:
    """Register a built-in row check; its argument errors become CheckError SQ-R017 naming the check."""

    def register(func: Callable[..., CheckSql]) -> Callable[..., CheckSql]:
        name = func.__name__

        @functools.wraps(func)
        def checked(*args: Any, **kwargs: Any) -> CheckSql:
            try:
                return func(*args, **kwargs)
            except _ArgumentError as exc:
                where = f"argument '{exc.argument}': " if exc.argument else ""
                raise CheckError(
                    f"check {name!r}: {where}{exc.message}; usage: {definition.signature}", check=name
                ) from None

        definition = CheckDefinition(
            name=name,
            func=checked,
            builtin=True,
            doc=_first_paragraph(func),
            kind="row",
            nulls=nulls,
            shown_as_call=shown_as_call,
            requires=requires,
        )
        _REGISTRY[name] = definition
        return checked

    return register


# Nulls and emptiness -------------------------------------------------------------------------


@_builtin(nulls="fails")
def is_not_null(column: str) -> CheckSql:
    """Passes when ``column`` is not NULL."""
    col = _column(column)
    return CheckSql(f"{col.sql} IS NOT NULL", _concat(f"{col.display} is NULL"))


@_builtin(nulls="passes (only NULL passes)")
def is_null(column: str) -> CheckSql:
    """Passes when ``column`` is NULL."""
    col = _column(column)
    return CheckSql(f"{col.sql} IS NULL", _said(col, "is not NULL"))


def _emptiness(column: _Col, trim_strings: Any) -> tuple[str, str]:
    """(the value as a string, trimmed when asked; how an empty one is described)."""
    text = f"CAST({column.sql} AS STRING)"
    if trim_strings is not None and _bool(trim_strings, "trim_strings"):
        return f"trim({text})", "is empty after trimming spaces"
    return text, "is empty"


def _empty_message(column: _Col, problem: str) -> str:
    return _concat(f"{column.display} = '", _text(column.sql), f"' {problem}")


@_builtin(nulls="passes")
def is_not_empty(column: str, trim_strings: bool | None = False) -> CheckSql:
    """Passes when ``column``, read as a string, is not the empty string; with ``trim_strings``, not blank.

    Any type is read as a string (an empty array reads ``[]`` and passes).
    """
    col = _column(column)
    text, problem = _emptiness(col, trim_strings)
    return CheckSql(_null_passes(col, f"{text} <> ''"), _empty_message(col, problem))


@_builtin(nulls="passes")
def is_empty(column: str, trim_strings: bool | None = False) -> CheckSql:
    """Passes when ``column``, read as a string, is the empty string; with ``trim_strings``, blank."""
    col = _column(column)
    text, _ = _emptiness(col, trim_strings)
    return CheckSql(_null_passes(col, f"{text} = ''"), _empty_message(col, "is not empty"))


@_builtin(nulls="passes")
def is_null_or_empty(column: str, trim_strings: bool | None = False) -> CheckSql:
    """Passes when ``column`` is NULL or, read as a string, empty; with ``trim_strings``, NULL or blank."""
    col = _column(column)
    text, _ = _emptiness(col, trim_strings)
    return CheckSql(f"({col.sql} IS NULL OR {text} = '')", _empty_message(col, "is neither NULL nor empty"))


@_builtin(nulls="fails")
def is_not_null_and_not_empty(column: str, trim_strings: bool | None = False) -> CheckSql:
    """Passes when ``column`` is not NULL and, read as a string, not empty; with ``trim_strings``, not blank."""
    col = _column(column)
    text, problem = _emptiness(col, trim_strings)
    return CheckSql(
        f"({col.sql} IS NOT NULL AND {text} <> '')",
        _case(f"{col.sql} IS NULL", _concat(f"{col.display} is NULL"), _empty_message(col, problem)),
    )


@_builtin(nulls="fails")
def is_not_null_and_not_empty_array(column: str) -> CheckSql:
    """Passes when the array (or map) ``column`` is not NULL and has at least one element."""
    col = _column(column)
    return CheckSql(
        f"({col.sql} IS NOT NULL AND size({col.sql}) > 0)",
        _case(f"{col.sql} IS NULL", _concat(f"{col.display} is NULL"), _said(col, "is empty")),
    )


# Sets and ranges ------------------------------------------------------------------------------

_ITEM = "numbers, strings, booleans, dates or timestamps"


@_builtin(nulls="passes")
def is_in_list(column: str, allowed: list[Any], case_sensitive: bool = True) -> CheckSql:
    """Passes when ``column`` equals one of the ``allowed`` values; ignoring case when ``case_sensitive`` is false."""
    col = _column(column)
    items = _items(allowed, "allowed", _VALUE_TYPES, _ITEM)
    member, shown = _in_list(col, items, "allowed", _bool(case_sensitive, "case_sensitive"))
    ignoring = "" if case_sensitive else " (ignoring case)"
    return CheckSql(_null_passes(col, member), _said(col, f"is not in the allowed list {shown}{ignoring}"))


@_builtin(nulls="fails")
def is_not_null_and_is_in_list(column: str, allowed: list[Any], case_sensitive: bool = True) -> CheckSql:
    """Passes when ``column`` is not NULL and equals one of the ``allowed`` values."""
    col = _column(column)
    items = _items(allowed, "allowed", _VALUE_TYPES, _ITEM)
    member, shown = _in_list(col, items, "allowed", _bool(case_sensitive, "case_sensitive"))
    ignoring = "" if case_sensitive else " (ignoring case)"
    return CheckSql(
        f"({col.sql} IS NOT NULL AND {member})",
        _said(col, f"is NULL or not in the allowed list {shown}{ignoring}"),
    )


@_builtin(nulls="passes")
def is_not_in_list(column: str, forbidden: list[Any], case_sensitive: bool = True) -> CheckSql:
    """Passes when ``column`` equals none of the ``forbidden`` values."""
    col = _column(column)
    items = _items(forbidden, "forbidden", _VALUE_TYPES, _ITEM)
    member, shown = _in_list(col, items, "forbidden", _bool(case_sensitive, "case_sensitive"))
    ignoring = "" if case_sensitive else " (ignoring case)"
    return CheckSql(_null_passes(col, f"NOT {member}"), _said(col, f"is in the forbidden list {shown}{ignoring}"))


def _comparable(a: Any, b: Any) -> bool:
    """Both numbers, both timestamps or both dates: limits whose order Python knows as Spark does."""
    numbers = (int, float, decimal.Decimal)
    if isinstance(a, numbers) and isinstance(b, numbers):
        return not isinstance(a, bool) and not isinstance(b, bool)
    if isinstance(a, datetime.datetime) or isinstance(b, datetime.datetime):
        return (
            isinstance(a, datetime.datetime)
            and isinstance(b, datetime.datetime)
            and (a.tzinfo is None) == (b.tzinfo is None)
        )
    return isinstance(a, datetime.date) and isinstance(b, datetime.date)


def _range(column: Any, min_limit: Any, max_limit: Any) -> tuple[_Col, str | None, str | None]:
    col = _column(column)
    if min_limit is None and max_limit is None:
        raise _ArgumentError("at least one of min_limit and max_limit", None, "min_limit")
    low = None if min_limit is None else _limit(min_limit, "min_limit")
    high = None if max_limit is None else _limit(max_limit, "max_limit")
    if low is not None and high is not None and _comparable(min_limit, max_limit) and min_limit > max_limit:
        raise _ArgumentError(f"a min_limit not greater than max_limit {_show(max_limit)}", min_limit, "min_limit")
    return col, low, high


@_builtin(nulls="passes")
def is_in_range(column: str, min_limit: Any = None, max_limit: Any = None) -> CheckSql:
    """Passes when ``min_limit <= column <= max_limit`` (both ends included); leave one limit out for one side.

    Limits are numbers, dates, timestamps or strings, compared in the column's type (a string
    limit against a date column is read as a date).
    """
    col, low, high = _range(column, min_limit, max_limit)
    if low is not None and high is not None:
        return CheckSql(
            _null_passes(col, f"{col.sql} BETWEEN {low} AND {high}"),
            _said(col, f"is not in the range [{_show(min_limit)}, {_show(max_limit)}]"),
        )
    if low is not None:
        return CheckSql(_null_passes(col, f"{col.sql} >= {low}"), _said(col, f"is less than {_show(min_limit)}"))
    return CheckSql(_null_passes(col, f"{col.sql} <= {high}"), _said(col, f"is greater than {_show(max_limit)}"))


@_builtin(nulls="passes")
def is_not_in_range(column: str, min_limit: Any = None, max_limit: Any = None) -> CheckSql:
    """Passes when ``column`` is outside ``[min_limit, max_limit]`` (both ends belong to the range).

    With only ``min_limit`` the range is everything from it up; with only ``max_limit``,
    everything up to it.
    """
    col, low, high = _range(column, min_limit, max_limit)
    if low is not None and high is not None:
        return CheckSql(
            _null_passes(col, f"{col.sql} NOT BETWEEN {low} AND {high}"),
            _said(col, f"is in the range [{_show(min_limit)}, {_show(max_limit)}]"),
        )
    if low is not None:
        return CheckSql(_null_passes(col, f"{col.sql} < {low}"), _said(col, f"is not less than {_show(min_limit)}"))
    return CheckSql(_null_passes(col, f"{col.sql} > {high}"), _said(col, f"is not greater than {_show(max_limit)}"))


@_builtin(nulls="passes")
def is_not_less_than(column: str, limit: Any) -> CheckSql:
    """Passes when ``column >= limit`` (a number, date, timestamp or string)."""
    col = _column(column)
    lit = _limit(limit, "limit")
    return CheckSql(_null_passes(col, f"{col.sql} >= {lit}"), _said(col, f"is less than the limit {_show(limit)}"))


@_builtin(nulls="passes")
def is_not_greater_than(column: str, limit: Any) -> CheckSql:
    """Passes when ``column <= limit`` (a number, date, timestamp or string)."""
    col = _column(column)
    lit = _limit(limit, "limit")
    return CheckSql(_null_passes(col, f"{col.sql} <= {lit}"), _said(col, f"is greater than the limit {_show(limit)}"))


def _tolerances(value: Any, abs_tolerance: Any, rel_tolerance: Any) -> tuple[float, float]:
    found = []
    for argument, tolerance in (("abs_tolerance", abs_tolerance), ("rel_tolerance", rel_tolerance)):
        if tolerance is None:
            found.append(0.0)
            continue
        number = (
            float(tolerance)
            if not isinstance(tolerance, bool) and isinstance(tolerance, (int, float, decimal.Decimal))
            else math.nan
        )
        if not math.isfinite(number) or number < 0:
            raise _ArgumentError("a number of at least 0, or null", tolerance, argument)
        found.append(number)
    numeric = sql_argument(value) is not None or (
        not isinstance(value, bool) and isinstance(value, (int, float, decimal.Decimal))
    )
    if any(found) and not numeric:
        raise _ArgumentError("a number when a tolerance is given (or {sql: ...})", value, "value")
    return found[0], found[1]


def _within(col: _Col, value: Any, abs_tol: float, rel_tol: float) -> str:
    """SQL: the column is within either tolerance of ``value`` (in DOUBLE; NULL for a non-number)."""
    number = f"try_cast({col.sql} AS DOUBLE)"
    expression = sql_argument(value)
    target = f"try_cast(({expression}) AS DOUBLE)" if expression is not None else sql_literal(float(value))
    diff = f"abs({number} - {target})"
    tests = []
    if abs_tol:
        tests.append(f"{diff} <= {sql_literal(abs_tol)}")
    if rel_tol:
        tests.append(f"{diff} <= {sql_literal(rel_tol)} * greatest(abs({number}), abs({target}))")
    return " OR ".join(tests)


def _tolerance_text(abs_tol: float, rel_tol: float) -> str:
    parts = [f"abs_tolerance {abs_tol:g}"] if abs_tol else []
    parts += [f"rel_tolerance {rel_tol:g}"] if rel_tol else []
    return f" (within {' or '.join(parts)})" if parts else ""


@_builtin(nulls="passes")
def is_equal_to(
    column: str, value: Any, abs_tolerance: float | None = None, rel_tolerance: float | None = None
) -> CheckSql:
    """Passes when ``column`` equals ``value``; for numbers, within ``abs_tolerance`` or ``rel_tolerance`` if given.

    ``abs_tolerance``: ``abs(column - value) <= abs_tolerance``. ``rel_tolerance``:
    ``abs(column - value) <= rel_tolerance * greatest(abs(column), abs(value))``. Either one
    suffices. With a tolerance, a value that is not a number fails.
    """
    return _equality(column, value, abs_tolerance, rel_tolerance, equal=True)


@_builtin(nulls="passes")
def is_not_equal_to(
    column: str, value: Any, abs_tolerance: float | None = None, rel_tolerance: float | None = None
) -> CheckSql:
    """Passes when ``column`` differs from ``value``; for numbers, by more than the tolerances if given.

    The tolerances work as in :func:`is_equal_to`: a value within either one counts as equal.
    """
    return _equality(column, value, abs_tolerance, rel_tolerance, equal=False)


def _equality(
    column: str, value: Any, abs_tolerance: float | None, rel_tolerance: float | None, *, equal: bool
) -> CheckSql:
    """is_equal_to (``equal``) or is_not_equal_to: exact, or within the tolerances for numbers."""
    col = _column(column)
    lit = _literal(value, "value", _VALUE, _VALUE_TYPES)
    abs_tol, rel_tol = _tolerances(value, abs_tolerance, rel_tolerance)
    if abs_tol or rel_tol:
        within = f"coalesce({_within(col, value, abs_tol, rel_tol)}, FALSE)"
        condition = within if equal else f"NOT {within}"
    else:
        condition = f"{col.sql} {'=' if equal else '<>'} {lit}"
    failure = "is not equal to" if equal else "is equal to"
    return CheckSql(
        _null_passes(col, condition),
        _said(col, f"{failure} {_show(value)}{_tolerance_text(abs_tol, rel_tol)}"),
    )


@_builtin(nulls="passes")
def has_num_decimal_places(column: str, max_decimal_places: int) -> CheckSql:
    """Passes when the number in ``column`` has at most ``max_decimal_places`` digits after the point.

    Trailing zeros do not count (``1.50`` has one decimal place); digits are counted up to
    the 18th decimal place, and a number of 1e20 or more passes (a DOUBLE that large holds no
    fraction). A string column is read as a number; a value that is not a number (or NaN or
    infinite) fails. A DOUBLE counts the digits it really holds (``0.1 + 0.2`` has 17).
    """
    col = _column(column)
    places = _int(max_decimal_places, "max_decimal_places", minimum=0)
    exact = f"CAST(try_cast({col.sql} AS DECIMAL(38, 18)) AS STRING)"
    decimals = f"length(regexp_replace(substring_index({exact}, '.', -1), '0+$', ''))"
    # Beyond DECIMAL(38, 18) (|x| >= 1e20) a DOUBLE holds no fraction digits at all.
    huge = f"abs(try_cast({col.sql} AS DOUBLE)) BETWEEN 1e20D AND 1.7976931348623157E308D"
    return CheckSql(
        _null_passes(col, f"coalesce({decimals} <= {places}, {huge}, FALSE)"),
        _said(col, f"is not a number with at most {places} decimal places"),
    )


# Text -----------------------------------------------------------------------------------------


@_builtin(nulls="passes")
def regex_match(column: str, regex: str, negate: bool = False) -> CheckSql:
    """Passes when ``column`` matches the Java regular expression ``regex`` anywhere; with ``negate``, when it does not.

    Anchor the pattern (``^...$``) to match the whole value. The pattern is not checked before
    the run: an invalid one makes the run fail when the rule is evaluated.
    """
    col = _column(column)
    pattern = _text_arg(regex, "regex")
    if _bool(negate, "negate"):
        return CheckSql(
            _null_passes(col, f"NOT {_rlike(col.sql, pattern)}"), _said(col, f"matches the regex {pattern}")
        )
    return CheckSql(_null_passes(col, _rlike(col.sql, pattern)), _said(col, f"does not match the regex {pattern}"))


def _pattern_check(column: Any, pattern: str, problem: str) -> CheckSql:
    col = _column(column)
    return CheckSql(_null_passes(col, _rlike(col.sql, pattern)), _said(col, problem))


@_builtin(nulls="passes")
def is_valid_email(column: str) -> CheckSql:
    """Passes when ``column`` is an email address (a pragmatic RFC 5322 subset, as in DQX).

    Local part: dot-atom or quoted string, at most 64 characters; domain: host name with an
    alphabetic top-level domain, or ``[IPv4]``/``[IPv6:...]``; at most 254 characters in all.
    Comments, folding whitespace and internationalised addresses are not accepted.
    """
    return _pattern_check(column, EMAIL_PATTERN, "is not a valid email address")


@_builtin(nulls="passes")
def is_valid_url(column: str, schemes: Sequence[str] = ("http", "https")) -> CheckSql:
    """Passes when ``column`` is an absolute URL with one of ``schemes`` and a host name, IPv4 or [IPv6] host.

    Form: ``scheme://[user@]host[:port][/path][?query][#fragment]`` with no whitespace; the
    host is ``localhost`` or a dotted name with an alphabetic top-level domain (ASCII only).
    """
    if isinstance(schemes, str) or not isinstance(schemes, Sequence) or not schemes:
        raise _ArgumentError("a non-empty list of URL schemes", schemes, "schemes")
    for scheme in schemes:
        if not isinstance(scheme, str) or not _SCHEME.fullmatch(scheme):
            raise _ArgumentError("a non-empty list of URL schemes such as 'https'", scheme, "schemes")
    return _pattern_check(column, url_pattern(schemes), f"is not a valid URL ({', '.join(schemes)})")


@_builtin(nulls="passes")
def is_valid_uuid(column: str, strict: bool = False) -> CheckSql:
    """Passes when ``column`` is a UUID in 8-4-4-4-12 hex form, any case; ``strict`` also checks version and variant.

    With ``strict`` the version digit must be 1-8 and the variant digit 8, 9, a or b (RFC
    9562); without it the Nil and Max UUIDs and legacy GUIDs pass, as in DQX.
    """
    if _bool(strict, "strict"):
        return _pattern_check(column, STRICT_UUID_PATTERN, "is not a valid UUID (RFC 9562 version and variant)")
    return _pattern_check(column, UUID_PATTERN, "is not a valid UUID")


#: National id formats by ISO 3166 alpha-2 country, as DQX documents them (format and number
#: ranges only, never whether a number was issued): US SSN (AAA-GG-SSSS, separators all
#: hyphens, all single spaces or none; areas 000, 666 and 9xx, group 00 and serial 0000 are
#: invalid), GB National Insurance number (two letters of the allocated prefixes, six digits,
#: A-D), IN PAN (three letters, a holder-type letter, a letter, four digits, a letter).
NATIONAL_ID_PATTERNS = {
    "US": r"\A(?!000|666|9\d{2})\d{3}([- ]?)(?!00)\d{2}\1(?!0000)\d{4}\z",
    "GB": r"\A(?!(?:BG|GB|KN|NK|NT|TN|ZZ))(?!(?:[DFIQUV]))[A-Z](?![DFIOQUV])[A-Z] ?\d{2} ?\d{2} ?\d{2} ?[ABCD]\z",
    "IN": r"\A[A-Z]{3}[ABCFGHJLPT][A-Z]\d{4}[A-Z]\z",
}


@_builtin(nulls="passes")
def is_valid_national_id(column: str, country: str = "US") -> CheckSql:
    """Passes when ``column`` has the format of a national id of ``country`` (``US``, ``GB`` or ``IN``).

    US: a Social Security Number; GB: a National Insurance number; IN: a PAN. Format and number
    ranges only (not whether the number was issued); the patterns are DQX's.
    """
    code = _text_arg(country, "country").upper()
    if code not in NATIONAL_ID_PATTERNS:
        raise _ArgumentError(f"one of {', '.join(NATIONAL_ID_PATTERNS)}", country, "country")
    col = _column(column)
    return CheckSql(
        _null_passes(col, f"CAST({col.sql} AS STRING) RLIKE {sql_literal(NATIONAL_ID_PATTERNS[code])}"),
        _said(col, f"is not a valid {code} national id"),
    )


@_builtin(nulls="passes")
def is_older_than_col2_for_n_days(column1: str, column2: str, days: int = 0, negate: bool = False) -> CheckSql:
    """Passes when the date in ``column1`` is more than ``days`` days before the date in ``column2``.

    With ``negate``, passes when it is not. Both are read as dates (through ``try_to_timestamp``); a NULL or
    unreadable value on either side passes.
    """
    first, second = _column(column1, "column1"), _column(column2, "column2")
    n = _int(days, "days", minimum=0)
    d1, d2 = (f"CAST(try_to_timestamp({c.sql}) AS DATE)" for c in (first, second))
    older = f"{d1} < date_sub({d2}, {n})"
    passes = f"NOT ({older})" if _bool(negate, "negate") else older
    shown = "is not" if not negate else "is"
    return CheckSql(
        f"({d1} IS NULL OR {d2} IS NULL OR {passes})",
        _concat(f"{first.display} = ", _text(d1), f" {shown} more than {n} days before {second.display} = ", _text(d2)),
    )


def _coordinate(column: str, bound: float, what: str) -> CheckSql:
    col = _column(column)
    number = f"try_cast({col.sql} AS DOUBLE)"
    return CheckSql(
        f"({number} IS NULL OR {number} BETWEEN -{bound:.1f}D AND {bound:.1f}D)",
        _said(col, f"is not a valid {what} (must be between -{bound:g} and {bound:g})"),
    )


@_builtin(nulls="passes")
def is_latitude(column: str) -> CheckSql:
    """Passes when ``column`` read as a number is between -90 and 90; a value that is no number passes (DQX)."""
    return _coordinate(column, 90.0, "latitude")


@_builtin(nulls="passes")
def is_longitude(column: str) -> CheckSql:
    """Passes when ``column`` read as a number is between -180 and 180; a value that is no number passes (DQX)."""
    return _coordinate(column, 180.0, "longitude")


@_builtin(nulls="passes")
def is_valid_json(column: str) -> CheckSql:
    """Passes when the string ``column`` parses as JSON (Spark's ``try_parse_json``).

    Like Spark's parser (and DQX), text after the first complete JSON value is ignored.
    """
    col = _column(column)
    return CheckSql(_null_passes(col, f"try_parse_json({col.sql}) IS NOT NULL"), _said(col, "is not valid JSON"))


_CORRUPT = "__sq_corrupt_record"


def _top_level_fields(ddl: str, argument: str) -> list[tuple[str, str, bool]]:
    """``(name, field DDL without NOT NULL, required)`` for each top-level field of a struct DDL.

    Takes ``a BIGINT, b STRUCT<c: INT> NOT NULL`` or ``STRUCT<a: BIGINT, ...>``; commas inside
    ``<>``, ``()`` and quotes do not split. Spark checks the types when the rule is analysed.
    """
    text = ddl.strip()
    if re.match(r"(?is)^struct\s*<.*>$", text):
        text = text[text.index("<") + 1 : -1]
    fields, depth, quote, start = [], 0, "", 0
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'`\"":
            quote = char
        elif char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        elif char == "," and depth == 0:
            fields.append(text[start:i])
            start = i + 1
    fields.append(text[start:])
    parsed = []
    for field in (f.strip() for f in fields):
        if not field:
            raise _ArgumentError("a struct schema in DDL, such as 'a BIGINT, b STRING NOT NULL'", ddl, argument)
        required = bool(re.search(r"(?i)\bNOT\s+NULL\s*$", field))
        name_and_type = re.sub(r"(?i)\s+NOT\s+NULL\s*$", "", field)
        name_and_type = re.sub(r"^(`[^`]+`|[A-Za-z_]\w*)\s*:\s*", r"\1 ", name_and_type)
        name = re.match(r"`[^`]+`|\S+", name_and_type)
        if name is None or name.group(0) == name_and_type:
            raise _ArgumentError("a struct schema in DDL, such as 'a BIGINT, b STRING NOT NULL'", ddl, argument)
        parsed.append((name.group(0).strip("`"), name_and_type, required))
    return parsed


@_builtin(nulls="passes")
def has_valid_json_schema(column: str, schema: str) -> CheckSql:
    """Passes when the JSON string in ``column`` fits ``schema`` (a struct in DDL), as Spark parses it.

    As in DQX: the text must be valid JSON, a JSON object whose values Spark can read as the
    fields' types (a number read as a STRING is fine), extra keys are ignored, a missing key is
    NULL, and a top-level field marked ``NOT NULL`` must be present and not null.
    """
    col = _column(column)
    fields = _top_level_fields(_text_arg(schema, "schema"), "schema")
    ddl = ", ".join([f for _, f, _ in fields] + [f"{_CORRUPT} STRING"])
    parsed = f"from_json(CAST({col.sql} AS STRING), {sql_literal(ddl)}, map('columnNameOfCorruptRecord', '{_CORRUPT}'))"
    tests = [f"try_parse_json(CAST({col.sql} AS STRING)) IS NOT NULL", f"{parsed} IS NOT NULL"]
    tests.append(f"{parsed}.{_CORRUPT} IS NULL")  # Spark could not read a value as its field's type
    tests += [f"{parsed}.{quote_ident(name)} IS NOT NULL" for name, _, needed in fields if needed]
    return CheckSql(
        _null_passes(col, "(" + " AND ".join(tests) + ")"),
        _said(col, f"does not conform to the JSON schema {schema}"),
    )


@_builtin(nulls="passes")
def has_json_keys(column: str, keys: list[str], require_all: bool = True) -> CheckSql:
    """Passes when the JSON object in ``column`` has all of ``keys`` at its top level (without ``require_all``, any).

    A value that is not a JSON object fails.
    """
    col = _column(column)
    names = _items(keys, "keys", (str,), "key names")
    wanted = "array(" + ", ".join(sql_literal(k) for k in names) + ")"
    present = f"json_object_keys({col.sql})"
    shown = "[" + ", ".join(names) + "]"
    if _bool(require_all, "require_all"):
        test = f"coalesce(size(array_except({wanted}, {present})) = 0, FALSE)"
        return CheckSql(_null_passes(col, test), _said(col, f"is not a JSON object with all of the keys {shown}"))
    test = f"coalesce(arrays_overlap({wanted}, {present}), FALSE)"
    return CheckSql(_null_passes(col, test), _said(col, f"is not a JSON object with any of the keys {shown}"))


@_builtin(nulls="passes")
def has_valid_string_case(column: str, case: str) -> CheckSql:
    """Passes when ``column`` is in the letter ``case``: ``upper``, ``lower``, ``title`` or ``sentence``.

    ``upper``: no lower-case letter. ``lower``: no upper- or title-case letter. ``title``: no
    word (split on spaces) starts with a lower-case letter. ``sentence``: no sentence (split
    on periods) starts, after white space, with a lower-case letter. Characters without case
    (digits, punctuation, most scripts) always pass.
    """
    col = _column(column)
    if not isinstance(case, str) or case.lower() not in _STRING_CASES:
        raise _ArgumentError(f"one of {', '.join(_STRING_CASES)}", case, "case")
    pattern, problem = _STRING_CASES[case.lower()]
    return CheckSql(_null_passes(col, f"NOT {_rlike(f'CAST({col.sql} AS STRING)', pattern)}"), _said(col, problem))


# Time -----------------------------------------------------------------------------------------


def _parses(column: Any, fmt: Any, argument: str, what: str) -> CheckSql:
    col = _column(column)
    if fmt is None:
        return CheckSql(
            _null_passes(col, f"try_to_timestamp({col.sql}) IS NOT NULL"), _said(col, f"is not a valid {what}")
        )
    pattern = _datetime_format(fmt, argument)
    return CheckSql(
        _null_passes(col, f"try_to_timestamp({col.sql}, {sql_literal(pattern)}) IS NOT NULL"),
        _said(col, f"is not a valid {what} in the format {pattern}"),
    )


@_builtin(nulls="passes")
def is_valid_date(column: str, date_format: str | None = None) -> CheckSql:
    """Passes when ``column`` reads as a date, in the Spark datetime pattern ``date_format`` if given.

    Without a format Spark's default parsing applies (``2024-01-31``, also with a time part).
    The pattern is checked when the rule is compiled (letters such as ``T`` must be quoted:
    ``yyyy-MM-dd'T'HH:mm``). Invalid values fail; nothing raises under ANSI mode.
    """
    return _parses(column, date_format, "date_format", "date")


@_builtin(nulls="passes")
def is_valid_timestamp(column: str, timestamp_format: str | None = None) -> CheckSql:
    """Passes when ``column`` reads as a timestamp, in the Spark datetime pattern ``timestamp_format`` if given."""
    return _parses(column, timestamp_format, "timestamp_format", "timestamp")


def _shifted(base: str, unit: str, amount: int) -> str:
    return base if amount == 0 else f"timestampadd({unit}, {amount}, {base})"


@_builtin(nulls="passes (so does a value that is not a timestamp)")
def is_not_in_future(column: str, offset: int = 0, curr_timestamp: Any = None) -> CheckSql:
    """Passes when ``column`` is not later than ``curr_timestamp`` (default: now) plus ``offset`` seconds.

    ``curr_timestamp`` is a timestamp, date or ISO string. Values are read with
    ``try_to_timestamp``, so a string column works and a string that is no timestamp passes
    (catch those with ``is_valid_timestamp``).
    """
    col = _column(column)
    seconds = _int(offset, "offset")
    base, shown = _timestamp(curr_timestamp, "curr_timestamp")
    limit = _shifted(base, "SECOND", seconds)
    value = _as_timestamp(col)
    return CheckSql(
        f"({value} IS NULL OR {value} <= {limit})",
        _concat(
            f"{col.display} = ",
            _text(col.sql),
            " is in the future: later than ",
            _text(limit),
            f" ({shown} + {seconds} seconds)",
        ),
    )


@_builtin(nulls="passes (so does a value that is not a timestamp)")
def is_not_in_near_future(column: str, offset: int = 0, curr_timestamp: Any = None) -> CheckSql:
    """Fails when ``column`` is after ``curr_timestamp`` (default: now) but before it plus ``offset`` seconds."""
    col = _column(column)
    seconds = _int(offset, "offset")
    base, shown = _timestamp(curr_timestamp, "curr_timestamp")
    limit = _shifted(base, "SECOND", seconds)
    value = _as_timestamp(col)
    return CheckSql(
        f"({value} IS NULL OR {value} <= {base} OR {value} >= {limit})",
        _concat(
            f"{col.display} = ",
            _text(col.sql),
            " is in the near future: between ",
            _text(base),
            " and ",
            _text(limit),
            f" ({shown} + {seconds} seconds)",
        ),
    )


@_builtin(nulls="passes (so does a value that is not a date)")
def is_older_than_n_days(column: str, days: int, curr_date: Any = None, negate: bool = False) -> CheckSql:
    """Passes when the date of ``column`` is more than ``days`` days before ``curr_date`` (default: today).

    Precisely: passes when ``date(column) < curr_date - days``; with ``negate`` the test
    flips, passing when ``date(column) >= curr_date - days``. ``curr_date`` is a date or ISO
    string.
    """
    col = _column(column)
    count = _int(days, "days")
    base, shown = _date(curr_date, "curr_date")
    limit = f"date_sub({base}, {count})"
    day = f"CAST({_as_timestamp(col)} AS DATE)"
    if _bool(negate, "negate"):
        condition, problem = f"{day} >= {limit}", "is before "
    else:
        condition, problem = f"{day} < {limit}", "is not before "
    return CheckSql(
        f"({day} IS NULL OR {condition})",
        _concat(f"{col.display} = ", _text(col.sql), f" {problem}", _text(limit), f" ({shown} - {count} days)"),
    )


@_builtin(nulls="passes (so does a value that is not a timestamp)")
def is_data_fresh(column: str, max_age_minutes: int, base_timestamp: Any = None) -> CheckSql:
    """Passes when ``column`` is at most ``max_age_minutes`` minutes older than ``base_timestamp`` (default: now)."""
    col = _column(column)
    minutes = _int(max_age_minutes, "max_age_minutes", minimum=0)
    base, shown = _timestamp(base_timestamp, "base_timestamp")
    limit = _shifted(base, "MINUTE", -minutes)
    value = _as_timestamp(col)
    return CheckSql(
        f"({value} IS NULL OR {value} >= {limit})",
        _concat(
            f"{col.display} = ",
            _text(col.sql),
            " is stale: earlier than ",
            _text(limit),
            f" ({shown} - {minutes} minutes)",
        ),
    )


# Network --------------------------------------------------------------------------------------


@_builtin(nulls="passes")
def is_valid_ipv4_address(column: str) -> CheckSql:
    """Passes when ``column`` is a dotted-quad IPv4 address (octets 0-255, no leading zeros)."""
    return _pattern_check(column, IPV4_PATTERN, "is not a valid IPv4 address")


_CIDR = re.compile(rf"{_IPV4}/(?:3[0-2]|[12]?[0-9])")


@_builtin(nulls="passes")
def is_ipv4_address_in_cidr(column: str, cidr_block: str) -> CheckSql:
    """Passes when ``column`` is an IPv4 address inside ``cidr_block`` (e.g. ``192.168.1.0/24``); other values fail.

    Host bits in the block are ignored, as in DQX (``10.1.2.3/8`` means ``10.0.0.0/8``).
    """
    col = _column(column)
    if not isinstance(cidr_block, str) or not _CIDR.fullmatch(cidr_block):
        raise _ArgumentError("an IPv4 CIDR block such as '192.168.1.0/24'", cidr_block, "cidr_block")
    network = ipaddress.IPv4Network(cidr_block, strict=False)
    octets = [f"try_cast(split_part({col.sql}, '.', {i}) AS BIGINT) * {256 ** (4 - i)}" for i in range(1, 5)]
    as_number = " + ".join(octets)
    valid = _rlike(col.sql, IPV4_PATTERN)
    first, last = int(network.network_address), int(network.broadcast_address)
    return CheckSql(
        _null_passes(col, f"({valid} AND {as_number} BETWEEN {first} AND {last})"),
        _case(
            valid,
            _said(col, f"is not in the CIDR block {cidr_block}"),
            _said(col, "is not a valid IPv4 address"),
        ),
    )


@_builtin(nulls="passes")
def is_valid_ipv6_address(column: str) -> CheckSql:
    """Passes when ``column`` is an IPv6 address in any standard text form, as Python's ``ipaddress`` reads it.

    Full, ``::``-compressed and IPv4-suffixed forms (``::ffff:192.0.2.1``) and a ``%zone``
    suffix are accepted; brackets and prefix lengths are not. Pure SQL, no Python UDF.
    """
    return _pattern_check(column, IPV6_PATTERN, "is not a valid IPv6 address")


_CIDR6 = re.compile(r"[0-9A-Fa-f:.]+/(?:12[0-8]|1[01][0-9]|[1-9]?[0-9])")


def _let(value: str, name: str, body: str) -> str:
    """``body`` with ``name`` bound to ``value``, which is evaluated once (SQL has no LET)."""
    return f"element_at(transform(array({value}), {name} -> {body}), 1)"


def _ipv6_bits_test(sql: str, network: ipaddress.IPv6Network) -> str:
    """SQL, TRUE when the valid IPv6 text ``sql`` lies in ``network``.

    The zone is cut, an IPv4 suffix becomes two hex groups and ``::`` is expanded to the missing
    zero groups; the eight groups are then compared with the network's, as far as its prefix
    reaches. Lambda bindings keep each intermediate form evaluated, and written, once.
    """
    a, o, b, p, n = "__sq_a", "__sq_o", "__sq_b", "__sq_p", "__sq_n"
    octets = [f"CAST({o}[{i}] AS BIGINT)" for i in range(4)]
    ipv4_suffix = _let(
        f"split(substring_index({a}, ':', -1), '[.]')",
        o,
        f"concat(substring({a}, 1, length({a}) - length(substring_index({a}, ':', -1))), "
        f"hex({octets[0]} * 256 + {octets[1]}), ':', hex({octets[2]} * 256 + {octets[3]}))",
    )
    with_hex_tail = _let(
        f"regexp_replace(lower({sql}), '%.*$', '')",
        a,
        f"CASE WHEN instr({a}, '.') > 0 THEN {ipv4_suffix} ELSE {a} END",
    )
    none = "CAST(array() AS ARRAY<STRING>)"

    def side(part: str) -> str:
        return f"CASE WHEN {part} = '' THEN {none} ELSE split({part}, ':') END"

    halves = f"named_struct('h', {side(f'substring_index({b}, {chr(39)}::{chr(39)}, 1)')}, " + (
        f"'t', {side(f'substring_index({b}, {chr(39)}::{chr(39)}, -1)')})"
    )
    expanded = _let(halves, p, f"concat({p}.h, array_repeat('0', 8 - size({p}.h) - size({p}.t)), {p}.t)")
    groups = _let(
        with_hex_tail,
        b,
        f"transform(CASE WHEN instr({b}, '::') > 0 THEN {expanded} ELSE split({b}, ':') END, "
        f"__sq_x -> CAST(conv(__sq_x, 16, 10) AS BIGINT))",
    )
    wanted = [(int(network.network_address) >> (16 * (7 - i))) & 0xFFFF for i in range(8)]
    tests = []
    for i in range(8):
        bits = min(16, max(0, network.prefixlen - 16 * i))
        if bits == 16:
            tests.append(f"{n}[{i}] = {wanted[i]}")
        elif bits:
            tests.append(f"shiftright({n}[{i}], {16 - bits}) = {wanted[i] >> (16 - bits)}")
    return _let(groups, n, " AND ".join(tests)) if tests else "TRUE"


@_builtin(nulls="passes", shown_as_call=True)
def is_ipv6_address_in_cidr(column: str, cidr_block: str) -> CheckSql:
    """Passes when ``column`` is an IPv6 address inside ``cidr_block`` (e.g. ``2001:db8::/32``); other values fail.

    Any text form ``is_valid_ipv6_address`` accepts is compared by its 128 bits; host bits in the
    block are ignored. Pure SQL, no Python UDF (DQX uses a pandas UDF).
    """
    col = _column(column)
    if not isinstance(cidr_block, str) or not _CIDR6.fullmatch(cidr_block):
        raise _ArgumentError("an IPv6 CIDR block such as '2001:db8::/32'", cidr_block, "cidr_block")
    try:
        network = ipaddress.IPv6Network(cidr_block, strict=False)
    except ValueError:
        raise _ArgumentError("an IPv6 CIDR block such as '2001:db8::/32'", cidr_block, "cidr_block") from None
    valid = _rlike(col.sql, IPV6_PATTERN)
    inside = _ipv6_bits_test(col.sql, network)
    return CheckSql(
        _null_passes(col, f"CASE WHEN {valid} THEN coalesce({inside}, FALSE) ELSE FALSE END"),
        _case(
            valid,
            _said(col, f"is not in the CIDR block {cidr_block}"),
            _said(col, "is not a valid IPv6 address"),
        ),
    )


# ISO codes ----------------------------------------------------------------------------------
# The code lists come from checks/iso.py (pycountry). A list can hold thousands of codes, so
# these checks show as their call in the error table and the DLQ, not as their SQL.


def _format(value: Any, formats: tuple[str, ...]) -> str:
    text = _text_arg(value, "code_format").lower()  # DQX matches the format name ignoring case
    if text not in formats:
        raise _ArgumentError(f"one of {', '.join(formats)}", value, "code_format")
    return text


def _membership(col: _Col, codes: tuple[str, ...], case_sensitive: bool, numeric: bool) -> str:
    """``<column> IN (<codes>)``; numeric codes compare as strings so '004' never matches 4."""
    if numeric:
        subject, listed = f"CAST({col.sql} AS STRING)", codes
    elif case_sensitive:
        subject, listed = col.sql, codes
    else:
        subject, listed = f"lower({col.sql})", tuple(sorted({c.lower() for c in codes}))
    return f"{subject} IN ({', '.join(sql_literal(c) for c in listed)})"


def _iso_check(
    column: Any, standard: str, kind: str, code_format: Any, formats: tuple[str, ...], case_sensitive: Any
) -> CheckSql:
    fmt = _format(code_format, formats)
    sensitive = _bool(case_sensitive, "case_sensitive")
    col = _column(column)
    condition = _membership(col, iso_codes(standard, fmt), sensitive, fmt == "numeric")
    return CheckSql(_null_passes(col, condition), _said(col, f"is not a valid ISO {standard} {fmt} {kind} code"))


@_builtin(nulls="passes", shown_as_call=True)
def is_valid_country_code(column: str, code_format: str = "alpha-2", case_sensitive: bool = True) -> CheckSql:
    """Passes when ``column`` is an ISO 3166-1 country code: ``alpha-2`` (``US``), ``alpha-3`` (``USA``) or ``numeric``.

    Officially assigned codes only (no user-assigned ``XK``); numeric codes are the zero-padded
    three-digit text (``004``), compared as strings. ``case_sensitive`` does not apply to
    numeric codes. Codes from pycountry, embedded when the rule is compiled.
    """
    return _iso_check(column, "3166-1", "country", code_format, ("alpha-2", "alpha-3", "numeric"), case_sensitive)


@_builtin(nulls="passes", shown_as_call=True)
def is_valid_currency_code(column: str, code_format: str = "alphabetic", case_sensitive: bool = True) -> CheckSql:
    """Passes when ``column`` is an ISO 4217 currency code: ``alphabetic`` (``USD``) or ``numeric`` (``840``).

    Every assigned code passes, including ``XXX``, ``XTS``, the metals and ``XDR``; numeric codes
    are zero-padded text. Codes from pycountry, embedded when the rule is compiled.
    """
    return _iso_check(column, "4217", "currency", code_format, ("alphabetic", "numeric"), case_sensitive)


@_builtin(nulls="passes", shown_as_call=True)
def is_valid_language_code(column: str, code_format: str = "alpha-2", case_sensitive: bool = True) -> CheckSql:
    """Passes when ``column`` is an ISO 639 language code: ``alpha-2`` (ISO 639-1, ``en``) or ``alpha-3`` (ISO 639-3).

    ISO 639-2 bibliographic codes that differ from the terminology code (``ger``) do not pass.
    Codes are lower case as registered; ``case_sensitive=False`` accepts any case. Codes from
    pycountry, embedded when the rule is compiled.
    """
    return _iso_check(column, "639", "language", code_format, ("alpha-2", "alpha-3"), case_sensitive)


@_builtin(nulls="passes (so does a NULL country_column)", shown_as_call=True)
def is_valid_subdivision_code(column: str, case_sensitive: bool = True, country_column: str | None = None) -> CheckSql:
    """Passes when ``column`` is an ISO 3166-2 subdivision code (``US-CA``, ``GB-ENG``).

    With ``country_column``, the code's country prefix must also equal that column's value in
    the same row (compared with the same case rule). Codes from pycountry, embedded when the
    rule is compiled.
    """
    sensitive = _bool(case_sensitive, "case_sensitive")
    col = _column(column)
    condition = _membership(col, iso_codes("3166-2", "code"), sensitive, numeric=False)
    message = _said(col, "is not a valid ISO 3166-2 subdivision code")
    if country_column is None:
        return CheckSql(_null_passes(col, condition), message)
    country = _column(country_column, "country_column")

    def folded(sql: str) -> str:
        return sql if sensitive else f"lower({sql})"

    prefix = f"split_part({folded(col.sql)}, '-', 1)"
    matches = f"({country.sql} IS NULL OR {prefix} = {folded(country.sql)})"
    mismatch = _concat(
        f"{col.display} = ", _text(col.sql), f" is not a subdivision of {country.display} = ", _text(country.sql)
    )
    return CheckSql(
        _null_passes(col, f"({condition} AND {matches})"),
        f"CASE WHEN {condition} THEN {mismatch} ELSE {message} END",
    )


# Custom SQL -----------------------------------------------------------------------------------


@_builtin(nulls="fails, as for any rule expectation (DQX lets NULL pass)")
def sql_expression(
    expression: str,
    msg: str | None = None,
    name: str | None = None,
    negate: bool = False,
    columns: list[str] | None = None,
) -> CheckSql:
    """Passes when the Spark SQL boolean ``expression`` is TRUE (with ``negate``, when it is FALSE).

    The expression is the user's own SQL, used as given, like a rule's ``expectation``. ``msg``
    replaces the failure message; ``columns`` adds those columns' values to the default one;
    ``name`` names the rule when the rule gives none.
    """
    text = _text_arg(expression, "expression").strip()
    if not text:
        raise _ArgumentError("a non-empty string", expression, "expression")
    if msg is not None:
        _text_arg(msg, "msg")
    if name is not None:
        _text_arg(name, "name")
    shown = [] if columns is None else _items(columns, "columns", (str,), "column names")
    cols = [_column(c, "columns") for c in shown]
    if _bool(negate, "negate"):
        # A newline before the closing parenthesis keeps a trailing -- comment from swallowing it.
        condition = f"NOT ({text}{chr(10) if '--' in text else ''})"
        problem = f"expression {text} is true"
    else:
        condition, problem = text, f"expression {text} is not true"
    if msg is not None:
        return CheckSql(condition, sql_literal(msg))
    parts: list[str] = [problem]
    for i, col in enumerate(cols):
        parts += [(" (" if i == 0 else ", ") + f"{col.display} = ", _text(col.sql)]
    if cols:
        parts.append(")")
    return CheckSql(condition, _concat(*parts))


# ---------------------------------------------------------------------------- geometry
#
# DQX's geometry checks, with DQX's names, arguments and NULL behaviour.
#
# Each compiles to Spark SQL over the session's spatial functions, as DQX's do:
# ``try_to_geometry`` and the ``st_*`` functions of Databricks Runtime 17.1+ and serverless (and
# the ``h3_*`` functions for the approximate ``is_geo_covers`` / ``is_geo_intersects``). A
# session without them cannot run these checks: the run refuses such a rule at validation, with
# ``SQ-R031`` naming the functions it lacks, before any job (see
# :func:`spark_quarantine.evaluate.check_rules_against`). On a session with Apache Sedona the
# SQL is adapted to Sedona's functions (:func:`spark_quarantine.evaluate.adapt_rules`), except
# geographies, SRID transforms and H3, which Sedona has no equivalent of (refused, SQ-R031).
#
# ``has_x_coordinate_between`` and ``has_y_coordinate_between`` need nothing extra: they read
# the coordinates out of the WKT text in plain Spark SQL, like ``is_latitude`` and ``is_longitude``.
#
# A NULL value passes every check, as in DQX. A value that is no geometry fails every check but
# ``is_not_null_island`` and the ``is_geo_*`` relationships (DQX: their verdict is then NULL,
# and a NULL verdict passes there).

#: The spatial functions each family of checks calls; the refusal names the missing ones.
_GEOMETRY = ("try_to_geometry", "st_geometrytype")

_TYPES = {
    "point": "ST_Point",
    "linestring": "ST_LineString",
    "polygon": "ST_Polygon",
    "multipoint": "ST_MultiPoint",
    "multilinestring": "ST_MultiLineString",
    "multipolygon": "ST_MultiPolygon",
    "geometrycollection": "ST_GeometryCollection",
}


def _geom(col: _Col) -> str:
    return f"try_to_geometry({col.sql})"


def _parsed_and(col: _Col, condition: str, text: str, kind: str = "geometry") -> CheckSql:
    """Passes a NULL; else the value must parse as a geometry and meet ``condition``."""
    parsed = f"try_to_{kind}({col.sql})"
    return CheckSql(_null_passes(col, f"coalesce({parsed} IS NOT NULL AND {condition}, false)"), _said(col, text))


@_builtin(nulls="passes", requires=("try_to_geometry",))
def is_geometry(column: str) -> CheckSql:
    """Passes when ``column`` parses as a geometry (WKT, WKB, EWKT, EWKB, GeoJSON): ``try_to_geometry``."""
    return _parsed_and(_column(column), "true", "is not a geometry")


@_builtin(nulls="passes", requires=("try_to_geography",))
def is_geography(column: str) -> CheckSql:
    """Passes when ``column`` parses as a geography: ``try_to_geography``."""
    return _parsed_and(_column(column), "true", "is not a geography", kind="geography")


def _typed(column: str, kind: str) -> CheckSql:
    col = _column(column)
    return _parsed_and(col, f"st_geometrytype({_geom(col)}) = '{_TYPES[kind]}'", f"is not a {kind} geometry")


@_builtin(nulls="passes", requires=_GEOMETRY)
def is_point(column: str) -> CheckSql:
    """Passes when ``column`` is a point geometry."""
    return _typed(column, "point")


@_builtin(nulls="passes", requires=_GEOMETRY)
def is_linestring(column: str) -> CheckSql:
    """Passes when ``column`` is a linestring geometry."""
    return _typed(column, "linestring")


@_builtin(nulls="passes", requires=_GEOMETRY)
def is_polygon(column: str) -> CheckSql:
    """Passes when ``column`` is a polygon geometry."""
    return _typed(column, "polygon")


@_builtin(nulls="passes", requires=_GEOMETRY)
def is_multipoint(column: str) -> CheckSql:
    """Passes when ``column`` is a multipoint geometry."""
    return _typed(column, "multipoint")


@_builtin(nulls="passes", requires=_GEOMETRY)
def is_multilinestring(column: str) -> CheckSql:
    """Passes when ``column`` is a multilinestring geometry."""
    return _typed(column, "multilinestring")


@_builtin(nulls="passes", requires=_GEOMETRY)
def is_multipolygon(column: str) -> CheckSql:
    """Passes when ``column`` is a multipolygon geometry."""
    return _typed(column, "multipolygon")


@_builtin(nulls="passes", requires=_GEOMETRY)
def is_geometrycollection(column: str) -> CheckSql:
    """Passes when ``column`` is a geometry collection."""
    return _typed(column, "geometrycollection")


@_builtin(nulls="passes", requires=("try_to_geometry", "st_isvalid"))
def is_ogc_valid(column: str) -> CheckSql:
    """Passes when ``column`` is a valid geometry in the OGC sense: ``st_isvalid``."""
    col = _column(column)
    return _parsed_and(col, f"st_isvalid({_geom(col)})", "is not a valid geometry (in the OGC sense)")


@_builtin(nulls="passes", requires=("try_to_geometry", "st_isempty"))
def is_non_empty_geometry(column: str) -> CheckSql:
    """Passes when ``column`` is a geometry that is not empty: ``st_isempty``."""
    col = _column(column)
    return _parsed_and(col, f"NOT st_isempty({_geom(col)})", "is an empty geometry")


@_builtin(
    nulls="passes; so does a value that is no geometry (DQX)",
    requires=("try_to_geometry", "st_geometrytype", "st_x", "st_y", "st_z", "st_m"),
)
def is_not_null_island(column: str) -> CheckSql:
    """Fails a point at (0, 0) (with Z and M 0 or absent), the "null island"; anything else passes (DQX)."""
    col = _column(column)
    g = _geom(col)
    island = (
        f"{g} IS NOT NULL AND st_geometrytype({g}) = 'ST_Point' AND st_x({g}) = 0.0 AND st_y({g}) = 0.0 "
        f"AND coalesce(nanvl(st_z({g}), 0.0D), 0.0D) = 0.0D AND coalesce(nanvl(st_m({g}), 0.0D), 0.0D) = 0.0D"
    )
    return CheckSql(_null_passes(col, f"NOT coalesce({island}, false)"), _said(col, "is the null island (0, 0)"))


@_builtin(nulls="passes", requires=("try_to_geometry", "st_dimension"))
def has_dimension(column: str, dimension: int) -> CheckSql:
    """Passes when ``column`` is a geometry of ``dimension`` (0 point, 1 line, 2 area): ``st_dimension``."""
    if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension not in (0, 1, 2):
        raise _ArgumentError("0, 1 or 2", dimension, "dimension")
    col = _column(column)
    return _parsed_and(
        col, f"st_dimension({_geom(col)}) = {dimension}", f"does not have the required dimension ({dimension})"
    )


# The coordinate checks read WKT in plain SQL: the text after the type, split at parentheses
# and commas into coordinate tuples, each "x y [z [m]]". Text that is not WKT fails, as a value
# try_to_geometry cannot parse fails DQX's check; an EMPTY geometry has no coordinates and passes.
_WKT = r"^\s*[A-Za-z]+(\s+(Z|M|ZM))?\s*(\(.*\)|EMPTY)\s*$"


def _coordinates(col: _Col, index: int) -> str:
    tuples = f"filter(split(regexp_replace({col.sql}, '^[^(]*', ''), '[(),]'), t -> trim(t) <> '')"
    return f"transform({tuples}, t -> try_cast(try_element_at(split(trim(t), '\\\\s+'), {index + 1}) AS DOUBLE))"


def _number(value: Any, argument: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _ArgumentError("a number", value, argument)
    return sql_literal(float(value))


def _coordinate_between(column: str, min_value: Any, max_value: Any, axis: str) -> CheckSql:
    col = _column(column)
    low, high = _number(min_value, "min_value"), _number(max_value, "max_value")
    values = _coordinates(col, 0 if axis == "x" else 1)
    within = (
        f"upper({col.sql}) LIKE '%EMPTY%' OR (size({values}) > 0 AND "
        f"forall({values}, v -> v IS NOT NULL AND v BETWEEN {low} AND {high}))"
    )
    condition = f"coalesce({col.sql} RLIKE {sql_literal(_WKT)} AND ({within}), false)"
    return CheckSql(
        _null_passes(col, condition),
        _said(col, f"has {axis} coordinates outside the range [{min_value}, {max_value}] or is not WKT"),
    )


@_builtin(nulls="passes")
def has_x_coordinate_between(column: str, min_value: float, max_value: float) -> CheckSql:
    """Passes when every x coordinate of the WKT geometry in ``column`` is within [min_value, max_value].

    Plain SQL over the WKT text: no spatial functions needed.
    """
    return _coordinate_between(column, min_value, max_value, "x")


@_builtin(nulls="passes")
def has_y_coordinate_between(column: str, min_value: float, max_value: float) -> CheckSql:
    """Passes when every y coordinate of the WKT geometry in ``column`` is within [min_value, max_value].

    Plain SQL over the WKT text: no spatial functions needed.
    """
    return _coordinate_between(column, min_value, max_value, "y")


_COMPARE = {
    "equal_to": ("=", "not equal to"),
    "not_equal_to": ("<>", "equal to"),
    "not_greater_than": ("<=", "greater than"),
    "not_less_than": (">=", "less than"),
}


def _measured(
    column: str, value: Any, function: str, label: str, op: str, srid: Any = None, geodesic: bool = False
) -> CheckSql:
    col = _column(column)
    if isinstance(geodesic, bool) is False:
        raise _ArgumentError("true or false", geodesic, "geodesic")
    if srid is not None and (isinstance(srid, bool) or not isinstance(srid, int) or srid <= 0):
        raise _ArgumentError("a positive SRID such as 3857, or null", srid, "srid")
    if geodesic:
        shape, kind = f"try_to_geography({col.sql})", "geography"
    elif srid:
        shape, kind = f"st_transform(st_setsrid({_geom(col)}, 4326), {srid})", "geometry"
    else:
        shape, kind = _geom(col), "geometry"
    limit = _limit(value, "value")
    comparison, failed = _COMPARE[op]
    condition = f"coalesce({shape} IS NOT NULL AND {function}({shape}) {comparison} {limit}, false)"
    message = (
        f"CASE WHEN {shape} IS NULL THEN {_said(col, f'is not a valid {kind}')} "
        f"ELSE {_concat(f'{col.display} = ', _text(col.sql), f' has {label} {failed} ', _show(value))} END"
    )
    return CheckSql(_null_passes(col, condition), message)


_AREA = ("try_to_geometry", "st_area", "st_transform", "st_setsrid")


@_builtin(nulls="passes", requires=_AREA)
def is_area_equal_to(column: str, value: Any, srid: int | None = 3857, geodesic: bool = False) -> CheckSql:
    """Passes when the area of ``column`` (in ``srid``'s units, or geodesic) equals ``value``."""
    return _measured(column, value, "st_area", "area", "equal_to", srid, geodesic)


@_builtin(nulls="passes", requires=_AREA)
def is_area_not_equal_to(column: str, value: Any, srid: int | None = 3857, geodesic: bool = False) -> CheckSql:
    """Passes when the area of ``column`` differs from ``value``."""
    return _measured(column, value, "st_area", "area", "not_equal_to", srid, geodesic)


@_builtin(nulls="passes", requires=_AREA)
def is_area_not_greater_than(column: str, value: Any, srid: int | None = 3857, geodesic: bool = False) -> CheckSql:
    """Passes when the area of ``column`` is at most ``value``."""
    return _measured(column, value, "st_area", "area", "not_greater_than", srid, geodesic)


@_builtin(nulls="passes", requires=_AREA)
def is_area_not_less_than(column: str, value: Any, srid: int | None = 3857, geodesic: bool = False) -> CheckSql:
    """Passes when the area of ``column`` is at least ``value``."""
    return _measured(column, value, "st_area", "area", "not_less_than", srid, geodesic)


_POINTS = ("try_to_geometry", "st_npoints")


@_builtin(nulls="passes", requires=_POINTS)
def is_num_points_equal_to(column: str, value: Any) -> CheckSql:
    """Passes when the geometry in ``column`` has exactly ``value`` coordinate pairs: ``st_npoints``."""
    return _measured(column, value, "st_npoints", "number of coordinates", "equal_to")


@_builtin(nulls="passes", requires=_POINTS)
def is_num_points_not_equal_to(column: str, value: Any) -> CheckSql:
    """Passes when the geometry in ``column`` has other than ``value`` coordinate pairs."""
    return _measured(column, value, "st_npoints", "number of coordinates", "not_equal_to")


@_builtin(nulls="passes", requires=_POINTS)
def is_num_points_not_greater_than(column: str, value: Any) -> CheckSql:
    """Passes when the geometry in ``column`` has at most ``value`` coordinate pairs."""
    return _measured(column, value, "st_npoints", "number of coordinates", "not_greater_than")


@_builtin(nulls="passes", requires=_POINTS)
def is_num_points_not_less_than(column: str, value: Any) -> CheckSql:
    """Passes when the geometry in ``column`` has at least ``value`` coordinate pairs."""
    return _measured(column, value, "st_npoints", "number of coordinates", "not_less_than")


_RELATIONS = {
    "contains": "is not in the reference geometry",
    "covers": "is not covered by the reference geometry",
    "intersects": "does not intersect the reference geometry",
    "touches": "does not touch the reference geometry",
    "within": "does not contain the reference geometry",
}


def _reference(value: Any) -> str:
    expression = sql_argument(value, "reference_geometry")
    if expression is not None:
        return f"({expression})"
    if not isinstance(value, str) or not value.strip():
        raise _ArgumentError("a WKT/EWKT text or {sql: <expression>}", value, "reference_geometry")
    return sql_literal(value)


def _flag(value: Any, argument: str) -> bool:
    if not isinstance(value, bool):
        raise _ArgumentError("true or false", value, argument)
    return value


def _related(
    column: str,
    reference_geometry: Any,
    relation: str,
    convert_column: Any = False,
    convert_reference_geometry: Any = False,
) -> CheckSql:
    """DQX's precise relationship: ``st_<relation>(reference, value)`` must be TRUE."""
    col = _column(column)
    reference = _reference(reference_geometry)
    value = _geom(col) if _flag(convert_column, "convert_column") else col.sql
    ref = (
        f"try_to_geometry({reference})"
        if _flag(convert_reference_geometry, "convert_reference_geometry")
        else reference
    )
    # DQX: a value that is no geometry makes the relationship NULL, and a NULL verdict passes there.
    condition = f"coalesce(st_{relation}({ref}, {value}), true)"
    return CheckSql(_null_passes(col, condition), _said(col, _RELATIONS[relation]))


def _approximate(column: str, reference_geometry: Any, resolution: Any, relation: str) -> CheckSql:
    """DQX's approximate relationship: the H3 cells at ``resolution`` of the value against the reference's."""
    if isinstance(resolution, bool) or not isinstance(resolution, int) or not 0 <= resolution <= 15:
        raise _ArgumentError("an H3 resolution from 0 to 15 (required unless precise: true)", resolution, "resolution")
    col = _column(column)
    reference = _reference(reference_geometry)

    def cells(shape: str) -> str:
        point = f"st_geometrytype(try_to_geometry({shape})) = 'ST_Point'"
        return (
            f"array_distinct(coalesce(h3_try_coverash3({shape}, {resolution}), "
            f"CASE WHEN {point} THEN array(h3_pointash3({shape}, {resolution})) END))"
        )

    mine, theirs = cells(col.sql), cells(reference)
    shared = f"size(array_intersect({mine}, {theirs}))"
    inside = f"{shared} > 0" if relation == "intersects" else f"{shared} = size({mine})"
    condition = f"({mine} IS NULL OR coalesce({inside}, false))"
    return CheckSql(_null_passes(col, condition), _said(col, _RELATIONS[relation] + " (approximately, by H3 cells)"))


_PRECISE = ("try_to_geometry",)


@_builtin(nulls="passes; so does a value that is no geometry (DQX)", requires=(*_PRECISE, "st_contains"))
def is_geo_contains(
    column: str, reference_geometry: Any, convert_column: bool = False, convert_reference_geometry: bool = False
) -> CheckSql:
    """Passes when the reference geometry contains the value (``st_contains``; a boundary point is not contained)."""
    return _related(column, reference_geometry, "contains", convert_column, convert_reference_geometry)


@_builtin(
    nulls="passes; so does a value that is no geometry (DQX)",
    requires=(*_PRECISE, "st_covers", "h3_try_coverash3", "h3_pointash3"),
)
def is_geo_covers(
    column: str,
    reference_geometry: Any,
    precise: bool = False,
    resolution: int | None = None,
    convert_column: bool = False,
    convert_reference_geometry: bool = False,
) -> CheckSql:
    """Passes when the reference covers the value: ``st_covers`` when precise, else by H3 cells at ``resolution``."""
    if _flag(precise, "precise"):
        return _related(column, reference_geometry, "covers", convert_column, convert_reference_geometry)
    return _approximate(column, reference_geometry, resolution, "covers")


@_builtin(
    nulls="passes; so does a value that is no geometry (DQX)",
    requires=(*_PRECISE, "st_intersects", "h3_try_coverash3", "h3_pointash3"),
)
def is_geo_intersects(
    column: str,
    reference_geometry: Any,
    precise: bool = False,
    resolution: int | None = None,
    convert_column: bool = False,
    convert_reference_geometry: bool = False,
) -> CheckSql:
    """Passes when the value intersects the reference: ``st_intersects`` when precise, else by H3 cells."""
    if _flag(precise, "precise"):
        return _related(column, reference_geometry, "intersects", convert_column, convert_reference_geometry)
    return _approximate(column, reference_geometry, resolution, "intersects")


@_builtin(nulls="passes; so does a value that is no geometry (DQX)", requires=(*_PRECISE, "st_touches"))
def is_geo_touches(
    column: str, reference_geometry: Any, convert_column: bool = False, convert_reference_geometry: bool = False
) -> CheckSql:
    """Passes when the value touches the reference geometry: ``st_touches``."""
    return _related(column, reference_geometry, "touches", convert_column, convert_reference_geometry)


@_builtin(nulls="passes; so does a value that is no geometry (DQX)", requires=(*_PRECISE, "st_within"))
def is_geo_within(
    column: str, reference_geometry: Any, convert_column: bool = False, convert_reference_geometry: bool = False
) -> CheckSql:
    """Passes when the reference geometry lies within the value: ``st_within(reference, value)``, as DQX calls it."""
    return _related(column, reference_geometry, "within", convert_column, convert_reference_geometry)


#: Names of the built-in row checks, in the order of the reference page.
ROW_CHECKS: tuple[str, ...] = tuple(name for name, d in _REGISTRY.items() if d.builtin)
