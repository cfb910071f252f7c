"""ISO reference data for the code checks: countries, subdivisions, currencies, languages.

The code lists come from pycountry, which packages the ISO 3166, 4217 and 639 tables; nothing
is typed by hand here. :mod:`spark_quarantine.checks` embeds them in a rule's condition as
literals when the rule is compiled (``<column> IN (...)``, which Spark turns into a hash-set
lookup), so nothing is looked up per row.
"""

from __future__ import annotations

import functools

__all__ = ["iso_codes", "iso_data_version"]


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
