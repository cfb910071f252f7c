"""Results: JSON, a markdown table and a PNG chart per scenario, and the summary in README.md."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["summary", "write_scenario", "write_summary"]

Record = dict[str, Any]
ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def _s(record: Record, side: str, key: str = "median_s") -> Any:
    return record["sides"][side][key]


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def markdown(scenario: str, records: list[Record]) -> str:
    if scenario in ("split", "expensive"):
        return _table(
            ["rows", "rules", "library (s)", "baseline reread (s)", "baseline persist (s)", "ratio vs best",
             "with stats table: s (ratio)", "jobs: library / reread / persist", "peak heap MiB: library / best"],
            [
                [f"{r['rows']:,}", r["rules"], _s(r, "library"), _s(r, "baseline_reread"), _s(r, "baseline_persist"),
                 f"{r['ratio_vs_best_baseline']}x",
                 f"{_s(r, 'library_with_stats')} ({r['with_stats_ratio_vs_best_baseline']}x, "
                 f"{_s(r, 'library_with_stats', 'spark_jobs')} jobs)" if "library_with_stats" in r["sides"] else "-",
                 f"{_s(r, 'library', 'spark_jobs')} / {_s(r, 'baseline_reread', 'spark_jobs')} / "
                 f"{_s(r, 'baseline_persist', 'spark_jobs')}",
                 f"{_s(r, 'library', 'peak_heap_mib')} / {_s(r, _best(r), 'peak_heap_mib')}"]
                for r in records
            ],
        )  # fmt: skip
    if scenario in ("rules", "rows"):
        key = "library_vs_4_rules" if scenario == "rules" else "library_vs_smallest"
        label = "library vs 4 rules" if scenario == "rules" else "library vs smallest N"
        return _table(
            ["rows", "rules", "library (s)", "baseline reread (s)", "ratio vs baseline", label,
             "jobs: library / baseline", "peak heap MiB: library / baseline"],
            [
                [f"{r['rows']:,}", r["rules"], _s(r, "library"), _s(r, "baseline_reread"), f"{r['ratio_vs_baseline']}x",
                 f"{r[key]}x" + (f" (rows x{r['rows_vs_smallest']:g})" if scenario == "rows" else ""),
                 f"{_s(r, 'library', 'spark_jobs')} / {_s(r, 'baseline_reread', 'spark_jobs')}",
                 f"{_s(r, 'library', 'peak_heap_mib')} / {_s(r, 'baseline_reread', 'peak_heap_mib')}"]
                for r in records
            ],
        )  # fmt: skip
    if scenario == "dlq":
        return _table(
            ["inbox rows before", "batch rows", "bad rows", "DLQ call (s)", "hand-written MERGE + append (s)",
             "ratio", "jobs: call / hand-written", "call vs empty inbox", "peak heap MiB: call / hand-written"],
            [
                [f"{r['inbox_rows_before']:,}", f"{r['rows']:,}", f"{r['bad_rows']:,}", _s(r, "dlq_call"),
                 _s(r, "handwritten"), f"{r['ratio_vs_handwritten']}x",
                 f"{_s(r, 'dlq_call', 'spark_jobs')} / {_s(r, 'handwritten', 'spark_jobs')}",
                 f"{r['call_vs_empty_inbox']}x",
                 f"{_s(r, 'dlq_call', 'peak_heap_mib')} / {_s(r, 'handwritten', 'peak_heap_mib')}"]
                for r in records
            ],
        )  # fmt: skip
    if scenario == "streaming":
        return _table(
            ["rows", "micro-batches", "library (s)", "hand-written foreachBatch (s)", "ratio", "stream copy (s)",
             "ratio vs copy", "library rows/s", "jobs: library / hand-written / copy"],
            [
                [f"{r['rows']:,}", r["micro_batches"], _s(r, "library"), _s(r, "handwritten"),
                 f"{r['ratio_vs_handwritten']}x", _s(r, "stream_copy"), f"{r['ratio_vs_stream_copy']}x",
                 f"{r['library_rows_per_s']:,}",
                 f"{_s(r, 'library', 'spark_jobs')} / {_s(r, 'handwritten', 'spark_jobs')} / "
                 f"{_s(r, 'stream_copy', 'spark_jobs')}"]
                for r in records
            ],
        )  # fmt: skip
    if scenario == "connect":
        return _table(
            ["rows", "rules", "Connect: library (s)", "Connect: hand-written (s)", "ratio on Connect",
             "classic: library (s)", "classic: hand-written (s)", "ratio on classic", "Connect library vs classic"],
            [
                [f"{r['rows']:,}", r["rules"], _s(r, "connect_library"), _s(r, "connect_baseline"),
                 f"{r['ratio_on_connect']}x", _s(r, "classic_library"), _s(r, "classic_baseline"),
                 f"{r['ratio_on_classic']}x", f"{r['connect_vs_classic']}x"]
                for r in records
            ],
        )  # fmt: skip
    if scenario == "peers":
        from benchmarks.peers import markdown as peers_markdown

        return peers_markdown(records)
    raise ValueError(f"unknown scenario {scenario!r}")


def _best(record: Record) -> str:
    reread, persist = _s(record, "baseline_reread"), _s(record, "baseline_persist")
    return "baseline_reread" if reread <= persist else "baseline_persist"


def chart(scenario: str, records: list[Record], path: Path) -> None:
    """A PNG chart of the scenario (matplotlib, headless)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    if scenario in ("split", "expensive"):
        sides = ["library", "baseline_reread", "baseline_persist"]
        width = 0.25
        for k, side in enumerate(sides):
            xs = [i + (k - 1) * width for i in range(len(records))]
            ax.bar(xs, [_s(r, side) for r in records], width, label=side.replace("_", " "))
        ax.set_xticks(range(len(records)), [f"{r['rows'] / 1e6:g}M rows" for r in records])
        ax.set_ylabel("seconds (median)")
    elif scenario in ("rules", "rows"):
        x = [r["rules"] if scenario == "rules" else r["rows"] / 1e6 for r in records]
        for side in ("library", "baseline_reread"):
            ax.plot(x, [_s(r, side) for r in records], marker="o", label=side.replace("_", " "))
        ax.set_xlabel("rules" if scenario == "rules" else "rows (millions)")
        ax.set_ylabel("seconds (median)")
    elif scenario == "dlq":
        labels = [f"{r['inbox_rows_before']:,}" for r in records]
        xs = range(len(records))
        ax.bar([i - 0.2 for i in xs], [_s(r, "dlq_call") for r in records], 0.4, label="DLQ call")
        ax.bar([i + 0.2 for i in xs], [_s(r, "handwritten") for r in records], 0.4, label="hand-written MERGE + append")
        ax.set_xticks(list(xs), labels)
        ax.set_xlabel("rows already in the inbox (other sources)")
        ax.set_ylabel("seconds (median)")
    elif scenario == "streaming":
        r = records[0]
        sides = {
            "library (DLQ path)": "library",
            "hand-written foreachBatch": "handwritten",
            "stream copy": "stream_copy",
        }
        ax.bar(list(sides), [_s(r, side) for side in sides.values()])
        ax.set_ylabel("seconds (median)")
    else:  # connect, peers: one bar per side of each record
        names = list(records[0]["sides"])
        width = 0.8 / len(names)
        for k, name in enumerate(names):
            xs = [i + (k - (len(names) - 1) / 2) * width for i in range(len(records))]
            ax.bar(xs, [_s(r, name) for r in records], width, label=name.replace("_", " "))
        ax.set_xticks(range(len(records)), [f"{r['rows'] / 1e6:g}M rows" for r in records])
        ax.set_ylabel("seconds (median)")
    ax.set_title(f"{scenario} (2-core local Spark)")
    if scenario != "streaming":
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_scenario(results: Path, scenario: str, records: list[Record], environment: dict[str, Any]) -> str:
    results.mkdir(parents=True, exist_ok=True)
    payload = {"scenario": scenario, "environment": environment, "records": records}
    (results / f"{scenario}.json").write_text(json.dumps(payload, indent=2) + "\n")
    table = markdown(scenario, records)
    load = ""
    if "load_1m_at_start" in environment:
        load = (
            f"Measured {environment['date']} on {environment['cpus']} cores; machine load (1-minute average) "
            f"{environment['load_1m_at_start']} at the start, {environment['load_1m_at_end']} at the end.\n\n"
        )
    (results / f"{scenario}.md").write_text(f"## {scenario}\n\n{load}{table}")
    chart(scenario, records, results / f"{scenario}.png")
    return table


TARGETS = {
    "split": "≤ 1.05x best baseline at 4M x 4",
    "expensive": "≤ 1.15x best baseline at 4M x 4",
    "rules": "100 rules ≤ 1.5x 4 rules; no cliff 40-100 rules",
    "rows": "16M ≤ 4.4x 4M",
    "dlq": "≤ 1.3x hand-written MERGE + append; jobs ≤ 2x",
    "streaming": "≤ 1.5x hand-written foreachBatch",
    "connect": "≤ 1.2x on the split",
    "peers": "ahead of Spark Expectations and DQX",
}


def summary(results: Path) -> str:
    """One line per scenario present in ``results``: the headline figure against its target."""
    rows: list[list[Any]] = []
    for scenario in TARGETS:
        path = results / f"{scenario}.json"
        if not path.exists():
            continue
        records: list[Record] = json.loads(path.read_text())["records"]
        if scenario in ("split", "expensive"):
            r = records[-1]
            measured = f"{r['ratio_vs_best_baseline']}x best baseline ({r['rows'] / 1e6:g}M x {r['rules']})"
        elif scenario == "rules":
            r = records[-1]
            many = [x for x in records if x["rules"] >= 40]
            steps = "/".join(f"{x['library_vs_4_rules']}x" for x in many)
            counts = "/".join(str(x["rules"]) for x in many)
            vs = ", ".join(f"{x['ratio_vs_baseline']}x hand-written at {x['rules']}" for x in many[-2:])
            measured = f"{counts} rules: {steps} 4 rules ({vs}; {r['rows'] / 1e6:g}M rows)"
        elif scenario == "rows":
            big = records[-1]
            prev = records[-2] if len(records) > 1 else records[-1]
            ratio = round(_s(big, "library") / _s(prev, "library"), 2)
            measured = f"{big['rows'] / 1e6:g}M: {ratio}x {prev['rows'] / 1e6:g}M"
        elif scenario == "dlq":
            r = records[0]
            jobs = f"{_s(r, 'dlq_call', 'spark_jobs')} / {_s(r, 'handwritten', 'spark_jobs')} jobs"
            measured = f"{r['ratio_vs_handwritten']}x hand-written, {jobs} ({r['rows'] / 1e6:g}M rows)"
        elif scenario == "streaming":
            r = records[-1]
            measured = f"{r['ratio_vs_handwritten']}x hand-written foreachBatch ({r['ratio_vs_stream_copy']}x a copy)"
        elif scenario == "connect":
            r = records[-1]
            measured = (
                f"{r['ratio_on_connect']}x hand-written on Connect, {r['connect_vs_classic']}x classic "
                f"({r['rows'] / 1e6:g}M x {r['rules']})"
            )
        else:
            r = records[-1]
            peers = ", ".join(f"{k.replace('_', ' ')} {v}x" for k, v in r.get("ratio_vs_baseline", {}).items())
            measured = f"vs hand-written: {peers} ({r['rows'] / 1e6:g}M x {r.get('rules', 4)})"
        rows.append([scenario, measured, TARGETS[scenario], f"[table]({scenario}.md), [chart]({scenario}.png)"])
    return _table(["scenario", "measured", "target", "details"], rows)


def write_summary(results: Path) -> str:
    table = summary(results)
    notes = results.parent / "NOTES.md"  # hand-written: how the numbers were taken, where targets are missed
    extra = "\n" + notes.read_text() if notes.exists() else ""
    (results / "README.md").write_text("# Benchmark results\n\nWritten by `make bench`.\n\n" + table + extra)
    readme = README.read_text()
    linked = table.replace("](", "](benchmarks/results/")
    if START in readme and END in readme:
        readme = re.sub(re.escape(START) + ".*?" + re.escape(END), START + "\n" + linked + END, readme, flags=re.S)
        README.write_text(readme)
    return table
