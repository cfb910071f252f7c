"""load_rules: every accepted source, the rule model's defaults, and static validation."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from spark_quarantine import Action, Priority, Rule, RuleValidationError, load_rules

GOOD = """\
rules:
  - name: id_present
    expectation: id IS NOT NULL
    action_if_failed: drop
    tag: completeness
    description: ids are required
    priority: high
    enable_error_drop_alert: true
    error_drop_threshold: 5
  - name: amount_positive
    expectation: amount > ${min_amount}  -- a trailing comment
    action_if_failed: ignore
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


class TestSources:
    def test_a_yaml_file_gives_typed_frozen_rules(self, tmp_path: Path) -> None:
        """A rule file is read into frozen Rule objects with every field typed."""
        rules = load_rules(write(tmp_path, "r.yaml", GOOD), params={"min_amount": 0})
        first, second = rules
        assert first.name == "id_present"
        assert first.action_if_failed is Action.DROP
        assert first.priority is Priority.HIGH
        assert first.enable_error_drop_alert is True
        assert first.error_drop_threshold == 5
        assert second.expectation == "amount > 0  -- a trailing comment"
        with pytest.raises(dataclasses.FrozenInstanceError):
            first.name = "other"  # type: ignore[misc]

    def test_defaults_are_documented_ones(self) -> None:
        """priority medium, enabled, no alert, threshold 100, empty tag and description."""
        (rule,) = load_rules([{"name": "a", "expectation": "x > 1", "action_if_failed": "fail"}])
        assert rule.priority is Priority.MEDIUM
        assert rule.enabled is True
        assert rule.enable_error_drop_alert is False
        assert rule.error_drop_threshold == 100
        assert (rule.tag, rule.description) == ("", "")

    def test_a_folder_reads_every_yaml_file_in_name_order(self, tmp_path: Path) -> None:
        """A folder of .yaml/.yml files is one rule set; other files are ignored."""
        write(tmp_path, "b.yml", "rules:\n  - {name: b, expectation: 'y > 0', action_if_failed: drop}\n")
        write(tmp_path, "a.yaml", "rules:\n  - {name: a, expectation: 'x > 0', action_if_failed: drop}\n")
        write(tmp_path, "notes.txt", "not rules")
        assert [r.name for r in load_rules(tmp_path)] == ["a", "b"]

    def test_rule_objects_and_dicts_mix(self) -> None:
        """A list may hold Rule objects and dicts together."""
        rule = Rule(name="a", expectation="x > 0", action_if_failed=Action.DROP)
        rules = load_rules([rule, {"name": "b", "expectation": "y > 0", "action_if_failed": "ignore"}])
        assert rules[0] is rule
        assert rules[1].action_if_failed is Action.IGNORE

    def test_rule_from_python_accepts_plain_strings(self) -> None:
        """Rule(action_if_failed='drop', priority='high') is coerced to the enums."""
        rule = Rule(name="a", expectation="x", action_if_failed="drop", priority="high")  # type: ignore[arg-type]
        assert rule.action_if_failed is Action.DROP and rule.priority is Priority.HIGH

    def test_criticality_words_map_to_actions(self) -> None:
        """criticality: error means drop and warn means ignore."""
        rules = load_rules(
            [
                {"name": "a", "expectation": "x > 0", "criticality": "error"},
                {"name": "b", "expectation": "x > 0", "criticality": "warn"},
            ]
        )
        assert [r.action_if_failed for r in rules] == [Action.DROP, Action.IGNORE]

    def test_placeholders_come_from_user_conf(self) -> None:
        """${name} is filled from user_conf['spark.quarantine.rules.params']."""
        (rule,) = load_rules(
            [{"name": "a", "expectation": "x > ${low}", "action_if_failed": "drop"}],
            user_conf={"spark.quarantine.rules.params": {"low": 7}},
        )
        assert rule.expectation == "x > 7"


class TestValidation:
    def test_unknown_placeholder_is_an_error(self) -> None:
        """An unknown ${name} is SQ-R013 and names the known parameters."""
        with pytest.raises(RuleValidationError) as info:
            load_rules([{"name": "a", "expectation": "x > ${nope}", "action_if_failed": "drop"}], params={"low": 1})
        assert info.value.code == "SQ-R013"
        assert "nope" in str(info.value) and "low" in str(info.value)

    def test_every_problem_of_a_file_is_reported_at_once_with_file_and_line(self, tmp_path: Path) -> None:
        """One error lists every problem, each with code, file, line and rule name."""
        path = write(
            tmp_path,
            "bad.yaml",
            """\
rules:
  - name: a
    expectation: x > 0
    action_if_failed: explode
  - name: a
    expectation: "   "
    action_if_failed: drop
    priority: urgent
  - name: c
    expectation: y > 0
    action_if_failed: drop
    colour: red
    error_drop_threshold: 150
  - name: d
    action_if_failed: drop
    enabled: "yes"
""",
        )
        with pytest.raises(RuleValidationError) as info:
            load_rules(path)
        error = info.value
        assert isinstance(error, ValueError)
        by_code = {p.code: p for p in error.problems}
        assert set(by_code) >= {"SQ-R005", "SQ-R006", "SQ-R007", "SQ-R008", "SQ-R009", "SQ-R011", "SQ-R012"}
        assert by_code["SQ-R008"].line == 4 and by_code["SQ-R008"].rule == "a"
        assert by_code["SQ-R009"].line == 8
        assert by_code["SQ-R005"].line == 12 and "colour" in by_code["SQ-R005"].message
        assert by_code["SQ-R012"].line == 13
        assert by_code["SQ-R006"].rule == "d"
        assert all(p.file == str(path) for p in error.problems)
        assert f"{path}:4" in str(error)
        assert error.code == error.problems[0].code

    def test_duplicate_names_are_reported_with_both_places(self, tmp_path: Path) -> None:
        """Two rules with one name: SQ-R010 at the second, naming the first's line."""
        path = write(
            tmp_path,
            "dup.yaml",
            "rules:\n"
            "  - {name: a, expectation: 'x > 0', action_if_failed: drop}\n"
            "  - {name: a, expectation: 'y > 0', action_if_failed: drop}\n",
        )
        with pytest.raises(RuleValidationError) as info:
            load_rules(path)
        (problem,) = info.value.problems
        assert problem.code == "SQ-R010" and problem.line == 3
        assert f"{path}:2" in problem.message

    @pytest.mark.parametrize(
        ("text", "code"),
        [
            ("rules: [\n  - {name: a", "SQ-R002"),
            ("- name: a\n  expectation: x\n", "SQ-R003"),
            ("just a scalar\n", "SQ-R003"),
            ("other: []\n", "SQ-R003"),
            ("rules: []\n", "SQ-R014"),
            ("rules:\n  - just a string\n", "SQ-R004"),
            ("rules:\n  - {name: a, expectation: 5, action_if_failed: drop}\n", "SQ-R007"),
            ("rules:\n  - {name: a, expectation: x, action_if_failed: drop, error_drop_threshold: true}\n", "SQ-R007"),
        ],
    )
    def test_malformed_files_get_a_code(self, tmp_path: Path, text: str, code: str) -> None:
        """Bad YAML, a list or scalar at the top, no rules, or wrong types each get their code."""
        with pytest.raises(RuleValidationError) as info:
            load_rules(write(tmp_path, "r.yaml", text))
        assert info.value.code == code

    def test_yaml_is_loaded_safely(self, tmp_path: Path) -> None:
        """Python object tags are refused by the safe loader instead of being constructed."""
        text = "rules:\n  - !!python/object/apply:os.system ['echo hacked']\n"
        with pytest.raises(RuleValidationError) as info:
            load_rules(write(tmp_path, "evil.yaml", text))
        assert info.value.code == "SQ-R002"

    def test_missing_path_and_wrong_source_type(self, tmp_path: Path) -> None:
        """A path that does not exist is SQ-R001; a number is SQ-R015."""
        with pytest.raises(RuleValidationError) as info:
            load_rules(tmp_path / "nope.yaml")
        assert info.value.code == "SQ-R001"
        with pytest.raises(RuleValidationError) as info:
            load_rules(42)  # type: ignore[arg-type]
        assert info.value.code == "SQ-R015"

    def test_missing_action_is_reported(self) -> None:
        """action_if_failed (or criticality) is required."""
        with pytest.raises(RuleValidationError) as info:
            load_rules([{"name": "a", "expectation": "x > 0"}])
        assert info.value.code == "SQ-R006"
        assert "action_if_failed" in str(info.value)


class TestNames:
    """A name made from a check is unique within its rule set; a name someone wrote is never changed."""

    @staticmethod
    def unnamed(column: str) -> dict[str, object]:
        return {"check": {"function": "is_not_null", "arguments": {"column": column}}, "action_if_failed": "drop"}

    def test_two_unnamed_checks_of_one_column_get_a_stable_suffix(self) -> None:
        rules = load_rules([self.unnamed("id"), self.unnamed("id"), self.unnamed("amount"), self.unnamed("id")])
        assert [r.name for r in rules] == [
            "id_is_not_null",
            "id_is_not_null_2",
            "amount_is_not_null",
            "id_is_not_null_3",
        ]
        again = load_rules([self.unnamed("id"), self.unnamed("id"), self.unnamed("amount"), self.unnamed("id")])
        assert [r.name for r in again] == [r.name for r in rules]

    def test_a_written_name_keeps_its_name_and_the_automatic_one_moves_aside(self) -> None:
        written = {"name": "id_is_not_null", "expectation": "id > 0", "action_if_failed": "drop"}
        rules = load_rules([self.unnamed("id"), written])
        assert [r.name for r in rules] == ["id_is_not_null_2", "id_is_not_null"]
        assert rules[1].expectation == "id > 0"

    def test_two_written_names_are_still_a_duplicate(self) -> None:
        written = {"name": "a", "expectation": "id > 0", "action_if_failed": "drop"}
        with pytest.raises(RuleValidationError) as info:
            load_rules([written, written])
        assert [p.code for p in info.value.problems] == ["SQ-R010"]

    def test_a_foreign_format_that_allows_repeated_names_converts_them_unique_with_a_note(self) -> None:
        from spark_quarantine.formats import convert

        check = {"function": "is_not_null", "arguments": {"column": "id"}}
        dqx = [
            {"name": "id_ok", "criticality": "error", "check": check},
            {"name": "id_ok", "criticality": "warn", "check": check},
            {"criticality": "error", "check": check},
            {"criticality": "error", "check": check},
        ]
        conversion = convert(dqx, "dqx")
        assert [r.get("name") for r in conversion.rules][:2] == ["id_ok", "id_ok_2"]
        assert any("'id_ok'" in note and "'id_ok_2'" in note for note in conversion.notes)
        rules = load_rules(dqx, format="dqx")
        assert [r.name for r in rules] == ["id_ok", "id_ok_2", "id_is_not_null", "id_is_not_null_2"]
