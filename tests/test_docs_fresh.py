"""The committed reference tables (error codes, user_conf keys, built-in checks) are what the code gives."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_committed_generated_tables_match_the_code() -> None:
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stale = [
        name
        for name, text in module.tables().items()
        if not (DOCS / "_generated" / name).exists() or (DOCS / "_generated" / name).read_text(encoding="utf-8") != text
    ]
    assert stale == [], f"run `python docs/generate.py` and commit docs/_generated/: {stale} differ from the code"


def test_the_api_page_documents_every_public_name() -> None:
    import spark_quarantine

    page = (DOCS / "api.md").read_text(encoding="utf-8")
    missing = [
        name for name in spark_quarantine.__all__ if name != "__version__" and f"spark_quarantine.{name}" not in page
    ]
    assert missing == [], f"docs/api.md lacks {missing}"
