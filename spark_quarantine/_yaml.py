"""The library's one YAML reader: safe types only, line numbers kept, duplicate keys and alias bombs refused.

Every YAML document the library reads (rule files, other tools' rule files, CLI run files)
goes through :func:`load`. PyYAML's own loaders silently keep the last of two equal keys (a
second ``rules:`` discards the first list; ``action_if_failed: fail`` then ``ignore`` loads as
``ignore``) and expand aliases without limit (a few hundred bytes can stand for billions of
nodes); this reader refuses both, with the line.
"""

from __future__ import annotations

from typing import Any

import yaml

from spark_quarantine._text import shorten

__all__ = ["MAX_NODES", "LineDict", "YamlProblem", "load"]

#: Nodes a document may expand to, aliases counted each time they are used. Rule files are a
#: few thousand nodes at most; an alias bomb is billions.
MAX_NODES = 100_000


class YamlProblem(ValueError):
    """A document that is not valid YAML for the library; ``line`` is 1-based (None: unknown)."""

    def __init__(self, reason: str, line: int | None, *, code: str = "SQ-R002") -> None:
        super().__init__(reason)
        self.reason, self.line, self.code = reason, line, code


class LineDict(dict[str, Any]):
    """A mapping from YAML that remembers the line of itself and of each key."""

    line: int | None = None
    key_lines: dict[str, int]


class _SafeLineLoader(yaml.SafeLoader):
    def get_single_node(self) -> Any:
        node = super().get_single_node()
        if node is not None:
            _check_size(node)
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # a merge key's entries may be overridden by the mapping's own: that is its purpose
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
            if key is None:
                continue
            line = key_node.start_mark.line + 1
            if key in seen:
                raise YamlProblem(
                    f"duplicate key '{shorten(key, 60)}' (first at line {seen[key]}); each key may appear once "
                    "in a mapping (YAML would silently keep the last one)",
                    line,
                    code="SQ-R028",
                )
            seen[key] = line
        mapping = LineDict({str(k): v for k, v in super().construct_mapping(node, deep=deep).items()})
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value}
        return mapping


_SafeLineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _SafeLineLoader.construct_mapping)


def _check_size(root: yaml.Node) -> None:
    """Refuse a document that expands to more than :data:`MAX_NODES` nodes (aliases counted per use)."""
    sizes: dict[int, int] = {}
    visiting: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in visiting:  # a recursive alias: PyYAML builds a cycle, which no rule file needs
            raise YamlProblem("a recursive alias (an anchor used inside itself)", node.start_mark.line + 1)
        visiting.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            for child in node.value:
                total += size(child)
                if total > MAX_NODES:
                    break
        elif isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                total += size(key_node) + size(value_node)
                if total > MAX_NODES:
                    break
        visiting.discard(key)
        sizes[key] = total
        return total

    if size(root) > MAX_NODES:
        raise YamlProblem(
            f"the document expands to more than {MAX_NODES:,} values through its aliases (*name); "
            "write the values out or use fewer aliases",
            root.start_mark.line + 1,
        )


def load(text: str) -> Any:
    """Parse one YAML document (dicts are :class:`LineDict`); raise :class:`YamlProblem` with the line."""
    try:
        return yaml.load(text, Loader=_SafeLineLoader)  # noqa: S506 - _SafeLineLoader is a SafeLoader
    except YamlProblem:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        reason = getattr(exc, "problem", None) or str(exc)
        line = mark.line + 1 if mark is not None else None
        raise YamlProblem(f"not valid YAML: {shorten(str(reason))}", line) from None
    except RecursionError:
        raise YamlProblem("the document nests too deeply", None) from None
