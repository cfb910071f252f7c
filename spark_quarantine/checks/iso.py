"""Row checks against ISO reference data: countries, subdivisions, currencies, languages.

The code lists come from pycountry (which packages the ISO 3166, 4217 and 639 tables) when a
rule is compiled, and are embedded in the condition as literals: ``<column> IN (...)``, which
Spark turns into a hash-set lookup. Nothing is typed by hand here and nothing is looked up
per row. Because a list can hold thousands of codes, these checks show as their call
(``is_valid_language_code(column='lang', code_format='alpha-3')``) in the error table and the
DLQ, not as the SQL they compile to.

Imported by :mod:`spark_quarantine.checks` to register the checks; it uses that module's
private argument helpers, so it is part of it, split out only by concern.
"""

from __future__ import annotations

import functools
from typing import Any

from spark_quarantine.checks import (
    CheckSql,
    _ArgumentError,
    _bool,
    _builtin,
    _Col,
    _column,
    _concat,
    _null_passes,
    _said,
    _text,
    _text_arg,
    sql_literal,
)

__all__ = ["iso_codes"]


@functools.cache
def iso_codes(standard: str, code_format: str) -> tuple[str, ...]:
    """The sorted codes of ``standard`` ("3166-1", "3166-2", "4217", "639") in ``code_format``, from pycountry.

    ``3166-1``: ``alpha-2``, ``alpha-3``, ``numeric``; ``3166-2``: ``code``; ``4217``:
    ``alphabetic``, ``numeric``; ``639``: ``alpha-2`` (ISO 639-1), ``alpha-3`` (ISO 639-3).
    """
    import pycountry

    table, attribute = {
        ("3166-1", "alpha-2"): (pycountry.countries, "alpha_2"),
        ("3166-1", "alpha-3"): (pycountry.countries, "alpha_3"),
        ("3166-1", "numeric"): (pycountry.countries, "numeric"),
        ("3166-2", "code"): (pycountry.subdivisions, "code"),
        ("4217", "alphabetic"): (pycountry.currencies, "alpha_3"),
        ("4217", "numeric"): (pycountry.currencies, "numeric"),
        ("639", "alpha-2"): (pycountry.languages, "alpha_2"),
        ("639", "alpha-3"): (pycountry.languages, "alpha_3"),
    }[(standard, code_format)]
    return tuple(sorted({str(getattr(entry, attribute)) for entry in table if hasattr(entry, attribute)}))


def iso_data_version() -> str:
    """The pycountry release the code lists come from (shown on the checks reference page)."""
    from importlib.metadata import version

    return version("pycountry")


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
