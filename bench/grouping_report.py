"""bench/grouping.py's report: every data set's scores per method, the leave-one-system-out choice, timings."""

from __future__ import annotations

import statistics

from diagnostics_report import markdown as diagnostics_markdown


def mean(rows: list[dict[str, dict[str, float]]], method: str, metric: str) -> float:
    return statistics.fmean(r[method][metric] for r in rows)


def markdown(result: dict, methods: tuple[str, ...], precision_floor: float) -> str:
    """The report; `methods` in column order, `precision_floor` the bound the parameters were chosen under."""
    fmt = lambda x: f"{x:.3f}"  # noqa: E731
    head = "| data | " + " | ".join(f"{m} GA | {m} P | {m} R" for m in methods) + " |"
    lines = [
        f"# Grouping benchmark (fingerprint v{result['fingerprint_version']}{', --quick' if result['quick'] else ''})",
        "",
        "GA = grouping accuracy; P/R = pairwise precision/recall. Ours = `vlk_memact.fingerprint.group` (what the loop",
        "detector runs); keys only = its first stage alone (exact text and shared fingerprint keys: how v2 grouped,",
        "with this version's masking);",
        "generic mask = a generic masking key (URLs, e-mails, paths and every token holding a digit masked: mask_v2 of",
        "the research notes) on the whole text, then exact match; drain3 = `TemplateMiner()` with default settings;",
        "prototype = the reference `fingerprint_log` (spec §6.1).",
        "",
        head,
        "|" + "---|" * (1 + 3 * len(methods)),
    ]

    def row(name: str, res: dict) -> str:
        return (
            f"| {name} | "
            + " | ".join(
                f"{fmt(res[m]['ga'])} | {fmt(res[m]['precision'])} | {fmt(res[m]['recall'])}" for m in methods
            )
            + " |"
        )

    corpus = result["corpus"]
    lines.append(
        row(f"corpus ({corpus['ours']['records']} records, {corpus['ours']['groups_true']} groups)", corpus)
    )
    for view in ("content", "raw"):
        rows = [sets[view] for sets in result["loghub"].values()]
        for name, sets in result["loghub"].items():
            lines.append(row(f"loghub {name} ({view})", sets[view]))
        means = {m: {k: mean(rows, m, k) for k in ("ga", "precision", "recall")} for m in methods}
        lines.append(row(f"**loghub mean ({view})**", means))
    lines += [
        "",
        "| trajectories-dev failures | records | " + " | ".join(f"{m} groups" for m in methods) + " |",
        "|---|---|" + "---|" * len(methods),
    ]
    for fmt_name, traj in result["trajectories"].items():
        lines.append(
            f"| {fmt_name} | {traj['failures']} | "
            + " | ".join(str(traj["groups"][m]) for m in methods)
            + " |"
        )
    lines += [
        "",
        "| time per record | median µs | p99 µs | median µs, 80-120 chars | records |",
        "|---|---|---|---|---|",
    ]
    for m, t in result["timing"].items():
        lines.append(
            f"| {m} | {t['median_us']:.1f} | {t['p99_us']:.1f} | {t['median_us_80_120_chars']:.1f} | {t['records']} |"
        )
    g = result["group_500"]
    lines += [
        "",
        f"Grouping {g['slots']} slots of a session (median of runs): `group()` from stored fingerprints "
        f"{g['ours_stored_fingerprints_ms']:.2f} ms, from text (fingerprinting included) {g['ours_from_text_ms']:.2f} ms; "
        f"Drain3 on the same records {g['drain3_ms']:.2f} ms "
        f"(ratio ours stored / Drain3: {g['ours_stored_fingerprints_ms'] / g['drain3_ms']:.2f}).",
        "",
    ]
    g = result["group_500_log_lines"]
    lines += [
        f"Grouping {g['slots']} log lines (every 7th Content line of the eight systems): "
        f"{g['ours_stored_fingerprints_ms']:.2f} ms from stored fingerprints, {g['ours_from_text_ms']:.2f} ms "
        f"from text; Drain3 {g['drain3_ms']:.2f} ms.",
        "",
    ]
    g = result["group_500_distinct"]
    lines.append(
        f"Worst case for stage 2, {g['slots']} distinct 12-word lines of one length: "
        f"{g['ours_stored_fingerprints_ms']:.2f} ms from stored fingerprints, {g['ours_from_text_ms']:.2f} ms "
        f"from text; Drain3 {g['drain3_ms']:.2f} ms."
    )
    loso = result["loso"]
    lines += [
        "",
        "## Leave-one-system-out",
        "",
        "Variants (values a position must show to be a parameter; off = keys only), agreeing tokens and the `key=` category rule",
        "chosen on the seven other systems (best mean GA over Content and raw,",
        f"pairwise precision >= {precision_floor} on each of the seven in both views, corpus precision 1.0), reported on the held-out one.",
        "",
        "| held out | variants | agree | key= categories | Content GA | Content P | Content R | raw GA | raw P | raw R |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, h in loso["held_out"].items():
        var = h["variants"] or "off"
        c, r = h["content"], h["raw"]
        lines.append(
            f"| {name} | {var} | {h['agree']} | {h['key_fields']} | {fmt(c['ga'])} | {fmt(c['precision'])} | {fmt(c['recall'])} "
            f"| {fmt(r['ga'])} | {fmt(r['precision'])} | {fmt(r['recall'])} |"
        )
    lines += ["", "| view | LOSO mean GA | LOSO min P | LOSO mean R | GA tuned on all 8 | drop |", "|---|---|---|---|---|---|"]
    for view, v in loso["summary"].items():
        lines.append(
            f"| {view} | {fmt(v['loso_mean_ga'])} | {fmt(v['loso_min_precision'])} | {fmt(v['loso_mean_recall'])} "
            f"| {fmt(v['tuned_on_all_mean_ga'])} | {fmt(v['ga_drop'])} |"
        )
    lines += ["", "Split halves (chosen on one half of the systems, reported on the other):", "",
              "| reported on | chosen on | variants | agree | key= categories | Content GA | Content min P | raw GA | raw min P |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name, h in loso["halves"].items():
        var = h["variants"] or "off"
        lines.append(
            f"| {name} | {'+'.join(h['chosen_on'])} | {var} | {h['agree']} | {h['key_fields']} | {fmt(h['content']['mean_ga'])} "
            f"| {fmt(h['content']['min_precision'])} | {fmt(h['raw']['mean_ga'])} | {fmt(h['raw']['min_precision'])} |"
        )
    chosen, shipped = loso["chosen_on_all"], loso["shipped"]
    lines += [
        "",
        f"Chosen on all eight: variants {chosen['variants']}, agree {chosen['agree']}, key= categories "
        f"{chosen['key_fields']}; shipped in `grouping.py`: variants {shipped['variants']}, agree "
        f"{shipped['agree']}, key= categories {shipped['key_fields']}"
        + ("." if chosen == shipped else " (MISMATCH: update grouping.py)."),
    ]
    if "diagnostics" in result:
        lines += diagnostics_markdown(result["diagnostics"])
    lines += [
        "",
        f"Machine: {result['machine']}; load average (1 min) {result['load_at_start']:.2f} at the start of the run, "
        f"{result['load_at_end']:.2f} at its end. Timings are noisy when other work shares the machine.",
    ]
    return "\n".join(lines) + "\n"
