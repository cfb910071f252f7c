"""docs/notifications.md cannot rot: it names every key, and its Python examples run and parse."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from spark_quarantine import user_config as uc
from spark_quarantine.alerts import parse_notification_conf
from spark_quarantine.alerts import webhook as webhook_channel
from tests.alerts.helpers import golden_alert

DOC = Path(__file__).resolve().parents[2] / "docs" / "notifications.md"
TEXT = DOC.read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, flags=re.DOTALL)
JSON_BLOCKS = re.findall(r"```json\n(.*?)```", TEXT, flags=re.DOTALL)


def test_every_notification_key_is_documented() -> None:
    """Each spark.quarantine.notifications.* key of the registry has a row in the table."""
    for key in uc.KEYS:
        if key.startswith(uc.NOTIFICATIONS_PREFIX):
            short = key[len(uc.NOTIFICATIONS_PREFIX) :]
            assert f"| `{short}` |" in TEXT, f"{short} is not documented"


def test_every_error_code_is_named() -> None:
    """The notification codes are explained."""
    assert "SQ-N001" in TEXT and "SQ-N002" in TEXT


def test_python_examples_run_and_their_conf_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Python block runs in order, and every user_conf it defines parses."""
    for scope, key in re.findall(r"\$\{secret:([^/}]+)/([^}]+)\}", TEXT):
        variable = "SPARK_QUARANTINE_SECRET_" + re.sub(r"[^A-Za-z0-9]", "_", f"{scope}_{key}").upper()
        monkeypatch.setenv(variable, f"https://hooks.example.com/{key}-docs-value")
    assert len(PYTHON_BLOCKS) >= 8
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    parsed = 0
    for block in PYTHON_BLOCKS:
        exec(compile(block, str(DOC), "exec"), namespace)  # noqa: S102 - our own documentation
        if "user_conf = " in block:
            parse_notification_conf(namespace["user_conf"])
            parsed += 1
    assert parsed >= 8


def test_json_examples_are_json() -> None:
    """The JSON blocks parse, and the document example has the fields to_dict() produces."""
    documents = [json.loads(block) for block in JSON_BLOCKS]
    document = next(d for d in documents if "schema_version" in d)
    assert set(document) == set(golden_alert().to_dict())
    assert document["dedup_key"] == golden_alert().dedup_key


def test_signature_recipe_matches_the_library() -> None:
    """The documented verification accepts what the webhook channel signs."""
    namespace: dict[str, Any] = {}
    recipe = next(block for block in PYTHON_BLOCKS if "def verify" in block)
    exec(compile(recipe, str(DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    body = b'{"kind":"failure"}'
    header = webhook_channel.sign(body, "docs-secret")
    assert namespace["verify"](body, header, "docs-secret")
    assert not namespace["verify"](body, header, "other-secret")
