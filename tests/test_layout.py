"""The package layout shows the design: each module imports only from its own layer or the ones below.

Layers, lowest first (see docs/design.md): the shared basics; typed settings, rules and alert
channels (no Spark); the check library and foreign formats; evaluation; where outcomes go;
one run, exactly once; the front doors; the console script and the public face. Module-level
imports only: an import inside a function is a deliberate late binding.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "spark_quarantine"

LAYERS: dict[str, int] = {
    **dict.fromkeys(["errors", "problems", "result", "session", "_identifiers", "_logging", "_faults", "_version"], 1),
    **dict.fromkeys(["_text", "_yaml", "_sqlguard", "_plans", "_requirements"], 1),
    **dict.fromkeys(["user_config", "tokens"], 1),
    **dict.fromkeys(["config", "rules", "alerts", "reporting"], 2),
    **dict.fromkeys(["checks", "formats", "loading"], 3),
    **dict.fromkeys(["evaluate", "dataset_checks"], 4),
    "sinks": 5,
    "run": 6,
    **dict.fromkeys(["decorator", "end_to_end", "dlq", "testing", "in_memory"], 7),
    "cli": 8,
}
FACE = 9  # spark_quarantine/__init__.py and the demo script


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("spark_quarantine", *path.relative_to(PACKAGE).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.parse(path.read_text()).body:
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("spark_quarantine")):
                continue
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                graph[name].add(child if child in modules else node.module)
            parts = node.module.split(".")
            for depth in range(2, len(parts)):  # importing a submodule runs its packages' __init__ first
                package = ".".join(parts[:depth])
                if package in modules and not name.startswith(package):
                    graph[name].add(package)
    return graph


def _layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "_demo":
        return FACE
    return LAYERS[parts[1]]


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = sorted({m.split(".")[1] for m in _modules() if "." in m} - set(LAYERS) - {"_demo"})
    assert unplaced == [], f"add these to LAYERS (and docs/design.md): {unplaced}"


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    graph = _imports(_modules())
    upward = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets if _layer(t) > _layer(m))
    assert upward == []


def test_there_are_no_import_cycles() -> None:
    graph = _imports(_modules())
    cycles: set[tuple[str, ...]] = set()

    def walk(node: str, path: list[str]) -> None:
        for target in graph[node]:
            if target in path:
                cycle = path[path.index(target) :]
                start = cycle.index(min(cycle))
                cycles.add(tuple(cycle[start:] + cycle[:start]))
            elif len(path) < 12:
                walk(target, [*path, target])

    for module in graph:
        walk(module, [module])
    assert sorted(cycles) == []
