"""The package installs like a library: the user's Spark stays the user's, and what it needs is said.

pyspark and delta-spark are an extra (``spark_quarantine[local]``), never a requirement; the
version found is checked at import with a coded error; the wheel carries the demo's rules and
the log configuration. ``make matrix`` installs the same wheel into a venv holding the newest
tested pair and checks that nothing of Spark is reinstalled.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from spark_quarantine import SparkEnvironmentError
from spark_quarantine._requirements import UntestedSparkWarning, check_pyspark, parse_version

ROOT = Path(__file__).resolve().parents[1]


class TestTheSparkFoundIsChecked:
    @pytest.mark.parametrize("version", ["4.0.0", "4.0.5", "4.1.1", "4.2.0", "4.2.0.dev0", "4.0.0-databricks"])
    def test_a_supported_pyspark_passes_silently(self, version: str, recwarn: pytest.WarningsRecorder) -> None:
        assert check_pyspark(version) == version
        assert not [w for w in recwarn if issubclass(w.category, UntestedSparkWarning)]

    @pytest.mark.parametrize("version", ["3.5.3", "3.3.0", "2.4.8", "", "unknown"])
    def test_an_older_or_unreadable_pyspark_is_sq_v001_saying_what_is_needed(self, version: str) -> None:
        with pytest.raises(SparkEnvironmentError) as info:
            check_pyspark(version)
        assert info.value.code == "SQ-V001"
        assert "needs PySpark 4.0 or newer" in str(info.value)
        assert "pip install 'spark_quarantine[local]'" in str(info.value)
        assert isinstance(info.value, ImportError)

    def test_a_newer_pyspark_than_tested_is_a_warning_not_a_refusal(self) -> None:
        with pytest.warns(UntestedSparkWarning, match=r"SQ-V001.*PySpark 4\.3\.0 is newer.*tested on \(4\.2\.x\)"):
            assert check_pyspark("4.3.0") == "4.3.0"

    def test_versions_are_read_leniently(self) -> None:
        assert parse_version("4.1.0.dev0") == (4, 1, 0)
        assert parse_version("4.0") == (4, 0, 0)
        assert parse_version("x4") is None


def _without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter where ``import <module>`` fails as if not installed."""
    blocker = textwrap.dedent(
        f"""
        import sys
        class _Absent:
            def find_spec(self, name, path=None, target=None):
                if name == {module!r} or name.startswith({module!r} + "."):
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None
        sys.meta_path.insert(0, _Absent())
        """
    )
    return subprocess.run(
        [sys.executable, "-c", blocker + textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.subprocess
def test_importing_without_pyspark_is_a_coded_import_error_with_the_install_hint() -> None:
    done = _without(
        "pyspark",
        """
        try:
            import spark_quarantine
        except ImportError as exc:
            print(type(exc).__name__, exc.code)
            print(exc)
        """,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    first, message = done.stdout.splitlines()[:2]
    assert first == "SparkEnvironmentError SQ-V001"
    assert "found none" in message
    assert "pip install 'spark_quarantine[local]'" in message


@pytest.mark.subprocess
def test_local_spark_without_delta_spark_is_sq_v002_before_any_jvm_starts() -> None:
    done = _without(
        "delta",
        """
        from spark_quarantine import SparkEnvironmentError, local_spark
        try:
            local_spark("/nonexistent/never-created")
        except SparkEnvironmentError as exc:
            print(exc.code)
        """,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["SQ-V002"]
    assert not Path("/nonexistent/never-created").exists()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # A copy of the tracked files, so that building leaves no build/ folder in the work tree.
    git = shutil.which("git")
    assert git is not None, "the wheel is built from the tracked files of a git checkout"
    files = subprocess.run([git, "-C", str(ROOT), "ls-files"], check=True, capture_output=True, text=True)
    for name in files.stdout.splitlines():
        source = ROOT / name
        if source.is_symlink() or source.is_file():
            target = build / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_symlink():
                target.symlink_to(source.readlink())
            else:
                target.write_bytes(source.read_bytes())
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            str(build),
            "-w",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("spark_quarantine-*.whl")
    return built


@pytest.mark.subprocess
class TestTheWheel:
    def test_spark_is_an_extra_never_a_requirement(self, wheel: Path) -> None:
        with zipfile.ZipFile(wheel) as archive:
            meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            requires = [
                line.split(":", 1)[1].strip()
                for line in archive.read(meta).decode().splitlines()
                if line.startswith("Requires-Dist:")
            ]
        spark = [r for r in requires if r.startswith(("pyspark", "delta-spark"))]
        assert spark, requires
        assert all("extra ==" in r for r in spark), spark
        assert any(r.startswith("pyspark") and 'extra == "local"' in r for r in spark), spark
        assert any(r.startswith("delta-spark") and 'extra == "local"' in r for r in spark), spark

    def test_it_carries_the_demo_rules_the_log_configuration_and_the_license(self, wheel: Path) -> None:
        with zipfile.ZipFile(wheel) as archive:
            names = set(archive.namelist())
        assert "spark_quarantine/demo_rules/orders.yaml" in names
        assert "spark_quarantine/log4j2.properties" in names
        assert "spark_quarantine/py.typed" in names
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(names)

    def test_installing_it_beside_a_supported_pyspark_installs_nothing_else(self, wheel: Path) -> None:
        """pip's own resolution against this venv (pyspark of the oldest pair): only the library itself."""
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--report", "-", "--quiet", str(wheel)],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        report = json.loads(done.stdout)
        installed = [item["metadata"]["name"] for item in report["install"]]
        assert installed == ["spark_quarantine"] or installed == ["spark-quarantine"], installed
