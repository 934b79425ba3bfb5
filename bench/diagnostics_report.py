"""The diagnostics section of bench/results/grouping.md: per tool and view, each method's GA and pairwise precision."""

from __future__ import annotations

from diagnostic_templates import DEVELOPMENT, LATE

METHODS = ("ours", "keys only", "generic mask", "drain3")


def markdown(result: dict) -> list[str]:
    """Lines of the section; ``result`` is diagnostics.run()'s."""
    fmt = lambda x: f"{x:.3f}"  # noqa: E731
    held = [t for t, r in result["tools"].items() if r["split"] == "held-out"]
    lines = [
        "",
        "## Compiler and linter diagnostics (bench/diagnostics.py)",
        "",
        "Real diagnostic templates of each tool (bench/diagnostic_templates.py), each filled with two different sets",
        "of names (two errors) and each error met twice with other noise (line, column, file and form of its path,",
        "counts). View `message`: the message alone, no tool id; view `printed`: the line as the tool prints it.",
        "A tool's records are grouped together. GA / P = grouping accuracy / pairwise precision.",
        f"Rules chosen on: {', '.join(DEVELOPMENT)}. Held out: {', '.join(held)} (looked at once the rules were",
        "built: see docs/grouping.md). Late held-out, written after the rules were frozen and measured once before",
        f"any change: {', '.join(LATE)}.",
        "",
        "| tool | split | records | " + " | ".join(f"{v} {m} GA | {v} {m} P" for v in ("message", "printed")
                                                  for m in METHODS) + " |",
        "|---|---|---|" + "---|" * (4 * len(METHODS)),
    ]
    for tool, r in result["tools"].items():
        cells = [f"{fmt(r['views'][v][m]['ga'])} | {fmt(r['views'][v][m]['precision'])}"
                 for v in ("message", "printed") for m in METHODS]
        lines.append(f"| {tool} | {r['split']} | {r['records']} | " + " | ".join(cells) + " |")
    lines += ["", "| split | view | " + " | ".join(f"{m} mean GA | {m} min GA | {m} min P" for m in METHODS) + " |",
              "|---|---|" + "---|" * (3 * len(METHODS))]
    for part, views in result["summary"].items():
        for view, by in views.items():
            cells = [f"{fmt(by[m]['mean_ga'])} | {fmt(by[m]['min_ga'])} | {fmt(by[m]['min_precision'])}"
                     for m in METHODS]
            lines.append(f"| {part} | {view} | " + " | ".join(cells) + " |")
    varied = [(t, r["ours_message_file_varies"]) for t, r in result["tools"].items()
              if any(r["ours_message_file_varies"][v]["ga"] < r["views"][v]["ours"]["ga"] for v in ("message", "printed"))]
    lines += ["", "Sensitivity: when a path inside a message names another file each time (not only another directory),",
              "ours changes on " + (", ".join(f"{t} (message GA {fmt(v['message']['ga'])}, printed GA "
                                               f"{fmt(v['printed']['ga'])}, P {fmt(min(v['message']['precision'], v['printed']['precision']))})"
                                               for t, v in varied) or "no tool") + "."]
    return lines
