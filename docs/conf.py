"""Sphinx configuration: Markdown pages (MyST) plus API reference from the docstrings."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spark_quarantine._version import __version__  # noqa: E402

project = "spark_quarantine"
author = "spark_quarantine developers"
release = __version__
extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_generated/README.md", "generate.py"]
html_theme = "alabaster"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
myst_heading_anchors = 3
suppress_warnings = ["myst.xref_missing"]


# The generated reference tables (committed; tests/test_docs_fresh.py keeps them fresh).
sys.path.insert(0, str(Path(__file__).resolve().parent))
import generate  # noqa: E402

generate.write()
