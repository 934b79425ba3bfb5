"""bench/perf.py's report: its targets as pass/fail, and the Markdown tables of every section."""

from __future__ import annotations

from typing import Any

from harness.stats import fmt, ratio

from perf_sections.modes import Mode


def evaluate_targets(results: dict[str, Any], mode: Mode) -> list[dict[str, Any]]:
    targets = []
    engine = results.get("engine", {})

    def add(name: str, measured: str, threshold: str, passed: bool | None, note: str = "") -> None:
        targets.append({"target": name, "measured": measured, "threshold": threshold,
                        "result": "n/a" if passed is None else ("pass" if passed else "FAIL"), "note": note})

    for op, label in (("record_state", "record_state vs raw sqlite3 floor"),
                      ("fetch_context", "fetch_context vs raw queries of the same rows")):
        ratios = {n: engine[n][op]["ratio_median"] for n in engine if op in engine[n]}
        if ratios:
            worst_n = max(ratios, key=lambda k: ratios[k])
            add(label, ", ".join(f"10^{len(n) - 1}: x{fmt(r)}" for n, r in ratios.items()), "<= 3x (median, every size)",
                all(r <= 3 for r in ratios.values()), f"worst at {int(worst_n):,} slots")
    mcp_res = results.get("mcp", {})
    tool_ratios = {k: v["ratio_median"] for k, v in mcp_res.items() if isinstance(v, dict) and "ratio_median" in v}
    if tool_ratios:
        worst = max(tool_ratios, key=lambda k: tool_ratios[k])
        add("MCP round trip of any tool vs SDK no-op", f"worst {worst} x{fmt(tool_ratios[worst])}",
            "<= 1.5x (median)", all(r <= 1.5 for r in tool_ratios.values()),
            ", ".join(f"{k.removeprefix('vlk_')} x{fmt(v)}" for k, v in tool_ratios.items()))
    official = results.get("official", {})
    at = official.get("sizes", {}).get(str(10**4)) if isinstance(official, dict) else None
    if at:
        write = at["write"]["speedup_median"]
        reads = {k: at[k]["speedup_median"] for k in ("search", "read active memory")}
        add("faster than the official memory server at 10^4, writes", f"{fmt(write, 1)}x", ">= 10x",
            write >= 10, "vlk_record_state vs add_observations")
        add("faster than the official memory server at 10^4, reads",
            ", ".join(f"{k} {fmt(v, 1)}x" for k, v in reads.items()), ">= 10x", all(v >= 10 for v in reads.values()),
            "vlk_search_memory vs search_nodes; vlk_fetch_context vs read_graph")
    else:
        add("faster than the official memory server at 10^4", "not measured", ">= 10x", None,
            official.get("skipped", "") if isinstance(official, dict) else "")
    small, large = str(min(mode.sizes)), str(10**6)
    if large in engine and small in engine:
        a = engine[small]["fetch_context"]["engine"]["median_ms"]
        b = engine[large]["fetch_context"]["engine"]["median_ms"]
        add("fetch_context at 10^6 slots vs at 10^3", f"{fmt(b)} ms vs {fmt(a)} ms: x{fmt(ratio(b, a))}",
            "<= 1.5x", ratio(b, a) <= 1.5)
    else:
        add("fetch_context at 10^6 slots vs at 10^3", "not measured", "<= 1.5x", None, "10^6 runs in the full mode")
    growth = results.get("growth", {})
    if large in growth:
        rss = growth[large]["peak_rss_mb"]
        add("server resident memory at 10^6 slots", f"{fmt(rss, 1)} MB peak", "< 150 MB", rss < 150)
    else:
        add("server resident memory at 10^6 slots", "not measured", "< 150 MB", None, "10^6 runs in the full mode")
    return targets


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"# vlk-memact performance ({results['mode']} run)",
        "",
        f"Command: `{results['command']}`; {results['started']}, {results['seconds']:.0f} s in all.",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory']}; {m['os']}; Python {m['python']}, SQLite "
        f"{m['sqlite']}, mcp {m['mcp_sdk']}, Node {m['node'] or 'absent'}. Load average at start: "
        f"{', '.join(f'{x:.2f}' for x in m['load_average_at_start'])} (other work on the machine shows up as noise).",
        f"Texts: {results['texts']}. Times are milliseconds, median and p99 (nearest rank) of interleaved samples.",
        "",
        "## Targets",
        "",
        "| target | measured | threshold | result | note |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [f"| {t['target']} | {t['measured']} | {t['threshold']} | {t['result']} | {t['note']} |"
              for t in results["targets"]]
    lines += ["", "## 1. Engine in process vs the raw sqlite3 floor", "",
              "Floor: a raw `sqlite3` connection with the engine's PRAGMAs (WAL, synchronous=FULL, busy_timeout) "
              "writing or reading the same rows (record: BEGIN IMMEDIATE, INSERT content, INSERT slot with the "
              "MAX(sequence)+1 subquery, COMMIT; fetch_context: the PRESENT slots of the session joined to their "
              "content and the visible FUTURE constraints (each scope on its own index), in one transaction; "
              "search: the same filter with "
              "built-in lower(); the loop row reads the rows about to be intercepted).", "",
              "| slots | operation | engine median | engine p99 | floor median | floor p99 | ratio (median) | n |",
              "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for n, ops in results.get("engine", {}).items():
        for op, r in ops.items():
            lines.append(f"| {int(n):,} | {op} | {fmt(r['engine']['median_ms'], 3)} | {fmt(r['engine']['p99_ms'], 3)} "
                         f"| {fmt(r['floor']['median_ms'], 3)} | {fmt(r['floor']['p99_ms'], 3)} | "
                         f"x{fmt(r['ratio_median'])} | {r['engine']['n']} |")
    built = results.get("databases", {})
    if built:
        lines += ["", "Databases: " + "; ".join(
            f"{int(n):,}: {b['slots']:,} slots in {b['sessions']:,} sessions / {b['projects']} projects, active "
            f"session {b['active_present']} PRESENT + {b['active_past']} PAST, {b['active_visible_constraints']} "
            f"visible constraints (built in {b['build_seconds']:.0f} s)" for n, b in built.items()) + "."]
    mcp_res = results.get("mcp", {})
    lines += ["", "## 2. MCP over stdio vs the SDK's no-op tool", ""]
    if "skipped" in mcp_res:
        lines.append(f"Skipped: {mcp_res['skipped']}")
    elif mcp_res:
        lines += [f"Database: {mcp_res.get('database_slots', 0):,} slots; protocol {mcp_res.get('protocol_version')}; "
                  "one `mcp.Client` session per server; the no-op tool is a sync `def` on `MCPServer`, like the vlk "
                  "tools.", "",
                  "| tool | median | p99 | no-op median | no-op p99 | ratio (median) | minus no-op (ms) | n |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for tool, r in mcp_res.items():
            if isinstance(r, dict) and "ratio_median" in r:
                lines.append(f"| {tool} | {fmt(r['tool']['median_ms'], 3)} | {fmt(r['tool']['p99_ms'], 3)} | "
                             f"{fmt(r['noop']['median_ms'], 3)} | {fmt(r['noop']['p99_ms'], 3)} | "
                             f"x{fmt(r['ratio_median'])} | {fmt(r['tool']['median_ms'] - r['noop']['median_ms'], 3)}"
                             f" | {r['tool']['n']} |")
    official = results.get("official", {})
    lines += ["", "## 3. Against the official memory server", ""]
    if "skipped" in official:
        lines.append(f"Skipped: {official['skipped']}.")
    elif official:
        lines += [f"`{official['package']}` (Node), started with `MEMORY_FILE_PATH` on a temporary file preloaded "
                  "with the same logs (one entity per session, one observation per log), driven by the same client. "
                  "Speed-up = official median / vlk median.", "",
                  "| items | work | vlk tool | vlk median | official tool | official median | speed-up | "
                  "vlk RSS MB | official RSS MB |",
                  "| ---: | --- | --- | ---: | --- | ---: | ---: | ---: | ---: |"]
        for n, size in official["sizes"].items():
            for label in ("write", "search", "read active memory", "read one session"):
                if label not in size:
                    continue
                r = size[label]
                bound = ">" if r.get("timed_out") else ""
                lines.append(f"| {int(n):,} | {label} | {r['vlk_tool']} | {fmt(r['vlk']['median_ms'])} | "
                             f"{r['official_tool']} | {bound}{fmt(r['official']['median_ms'])} | "
                             f"{bound}{fmt(r['speedup_median'], 1)}x | {fmt(size['vlk_server']['peak_rss_mb'], 0)} | "
                             f"{fmt(size['official_server']['peak_rss_mb'], 0)} |")
            if size.get("note"):
                lines.append(f"| {int(n):,} | note | {size['note']} | | | | | | |")
    growth = results.get("growth", {})
    if growth:
        lines += ["", "## 4. Growth", "",
                  "| slots | file MB | bytes / slot | engine fetch_context median | MCP fetch_context median | "
                  "server RSS MB | server peak RSS MB |",
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for n, g in growth.items():
            eng = results.get("engine", {}).get(n, {}).get("fetch_context", {}).get("engine", {}).get("median_ms")
            lines.append(f"| {g['slots']:,} | {g['file_bytes'] / 1e6:.1f} | {g['bytes_per_slot']:.0f} | "
                         f"{fmt(eng, 3)} | {fmt(g['mcp_fetch_context']['median_ms'], 3)} | {fmt(g['rss_mb'], 1)} | "
                         f"{fmt(g['peak_rss_mb'], 1)} |")
    built = results.get("databases", {})
    if built:
        largest = max(built, key=int)
        storage = built[largest].get("storage") or {}
        if storage:
            lines += ["", f"Bytes per slot by table and index at {int(largest):,} slots (dbstat; the logs themselves "
                      f"are {storage.get('(raw_log bytes)', 0):.0f} bytes per slot on average):", "",
                      "| table or index | bytes / slot |", "| --- | ---: |"]
            lines += [f"| {name} | {size:.1f} |" for name, size in storage.items() if name != "(raw_log bytes)"]
    tp = results.get("throughput", {})
    if tp:
        w = tp["writers"]
        lines += ["", "## 5. Throughput (records per second, synchronous=FULL)", "",
                  f"On a file of {tp['database_slots']:,} slots, {tp['seconds']:.0f} s each.", "",
                  "| writer | records / s |", "| --- | ---: |",
                  f"| one process, library API | {tp['engine_one_process']['records_per_s']:.0f} |",
                  f"| one MCP client through one server | {tp['mcp_one_client']['records_per_s']:.0f} |",
                  f"| {w['processes']} processes, library API, one session each | {w['records_per_s']:.0f} "
                  f"({w['errors']} errors; per process {', '.join(str(x) for x in w['per_process_records_per_s'])}) |"]
    if results.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {note}" for note in results["notes"]]
    return "\n".join(lines) + "\n"

