"""The Spark the library runs on is the user's: check what is there, say what is needed.

pyspark and delta-spark are not requirements of the package (a platform such as Databricks,
EMR, Glue or Dataproc brings its own, and a second 400 MB pyspark beside it breaks things), so
``import spark_quarantine`` checks that a pyspark of a supported version is importable and
says how to get one when it is not. ``local_spark`` checks for delta-spark the same way; a
session from a platform or a Spark Connect server has Delta on the server side already.

The range: the API level the library uses is Spark 4.0 (``DataFrame.mergeInto``, VARIANT,
``try_*`` functions, ``CLUSTER BY``); the newest pair tested is in ``TESTED_UP_TO``. A newer
pyspark is not refused (platforms move ahead of us), it is warned about once.
"""

from __future__ import annotations

import re
import warnings

from spark_quarantine.errors import SparkEnvironmentError

__all__ = ["MINIMUM_SPARK", "TESTED_UP_TO", "check_delta", "check_pyspark", "parse_version"]

#: The oldest Spark the library runs on (major, minor).
MINIMUM_SPARK = (4, 0)
#: The newest Spark minor version the test suite runs on (CI's second pair).
TESTED_UP_TO = (4, 2)

_INSTALL_HINT = (
    "on a laptop or in CI: pip install 'spark_quarantine[local]' (pyspark and delta-spark of a tested pair); "
    "on Databricks, EMR, Glue or Dataproc: use the platform's own Spark, do not install a second one"
)


class UntestedSparkWarning(UserWarning):
    """The pyspark found is newer than the newest version the library is tested on."""


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``"4.0.1"``, ``"4.1.0.dev0"``, ``"4.0.0-databricks"`` -> (4, 0, 1) ...; None if unreadable."""
    match = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", text)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def check_pyspark(version: str | None = None) -> str:
    """Return pyspark's version, or raise ``SQ-V001`` when it is missing or too old.

    ``version`` stands in for the installed one (for tests); None reads ``pyspark.__version__``.
    """
    if version is None:
        try:
            import pyspark
        except ImportError as exc:
            raise SparkEnvironmentError(
                f"spark_quarantine needs PySpark {_dotted(MINIMUM_SPARK)} or newer, found none "
                f"({exc.__class__.__name__}: {exc}); {_INSTALL_HINT}",
                code="SQ-V001",
            ) from None
        version = str(getattr(pyspark, "__version__", ""))
    parsed = parse_version(version)
    if parsed is None or parsed[:2] < MINIMUM_SPARK:
        raise SparkEnvironmentError(
            f"spark_quarantine needs PySpark {_dotted(MINIMUM_SPARK)} or newer, found {version or 'no version'}; "
            f"{_INSTALL_HINT}",
            code="SQ-V001",
        )
    if parsed[:2] > TESTED_UP_TO:
        warnings.warn(
            f"[SQ-V001] PySpark {version} is newer than the newest version spark_quarantine is tested on "
            f"({_dotted(TESTED_UP_TO)}.x); it should work, and a failure is a bug to report",
            UntestedSparkWarning,
            stacklevel=3,
        )
    return version


def check_delta() -> None:
    """Raise ``SQ-V002`` unless delta-spark (the ``delta`` package) is importable."""
    try:
        import delta  # noqa: F401
    except ImportError as exc:
        raise SparkEnvironmentError(
            f"local_spark needs delta-spark (the 'delta' package) to start a local Spark with Delta Lake, "
            f"found none ({exc.__class__.__name__}: {exc}); {_INSTALL_HINT}",
            code="SQ-V002",
        ) from None


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)
