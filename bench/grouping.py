"""Grouping benchmark: ``vlk_memact.fingerprint.group`` vs Drain3 (defaults), a generic mask and the prototype.

    .venv/bin/python bench/grouping.py [--quick]

Data: the committed corpus (tests/data/fingerprint_corpus.jsonl), loghub-dev (8 labelled log
sets, on ``Content`` and on the raw line = header fields + Content, one global
configuration) and the failed steps of trajectories-dev (no labels: we count groups). Shared
data is found at ``<repo>/../shared/data`` or ``$VLK_SHARED_DIR/data``.

Metrics: GA (fraction of records whose true group equals exactly one predicted group) and
pairwise precision/recall (pairs of records put in one group). ``ours`` is ``group()``, exactly
what the loop detector runs; ``keys only`` is its first stage alone (the v2 behaviour).

Leave-one-system-out: the three parameters of ``group`` (variants, agree, key_fields) are chosen on
seven systems (highest mean GA over Content and raw lines, subject to pairwise precision >= 0.99
on every one of the seven in both views and precision 1.0 on the corpus), then reported on the
eighth, for each of the eight. Timing: fingerprinting per record, and grouping 500 slots
(stored fingerprints, as the engine does, and from text), with Drain3 timed on the same records
in the same run. Writes bench/results/grouping.json and bench/results/grouping.md.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gzip
import io
import itertools
import json
import os
import platform
import random
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import diagnostics  # noqa: E402
from diagnostics_report import METHODS as DIAGNOSTIC_METHODS  # noqa: E402
from drain3 import TemplateMiner  # noqa: E402
from grouping_report import markdown  # noqa: E402
from prototype_fingerprint import fingerprint_log  # noqa: E402

from vlk_memact.fingerprint import FINGERPRINT_VERSION, fingerprint, group  # noqa: E402
from vlk_memact.fingerprint.grouping import AGREE, KEY_FIELDS, VARIANTS  # noqa: E402

LOGHUB_META = ("LineId", "Content", "EventId", "EventTemplate")
METHODS = ("ours", "keys only", "generic mask", "drain3", "prototype")
# 0 = stage 2 off. 2 is excluded by design, not by a score: two values cannot tell a parameter from two
# sibling events (opened/closed), and two errors that are each a loop must stay two loops (the rule the
# loop detector had before, as its stability bound). With 2 in the grid the Spark fold picks it (P 0.984).
VARIANTS_GRID = (0, 3, 4, 5, 6)
AGREE_GRID = (1, 2, 3, 4)
KEY_FIELDS_GRID = (True, False)
PRECISION_FLOOR = 0.99


def shared_data() -> Path:
    base = os.environ.get("VLK_SHARED_DIR")
    return (Path(base) if base else ROOT.parent / "shared") / "data"


# ------------------------------------------------------------------------- grouping methods


def group_ours(texts: list[str], times: list[float]) -> list[int]:
    """``group()`` over the texts; fingerprinting is timed per record."""
    fps = []
    for text in texts:
        start = time.perf_counter()
        fps.append(fingerprint(text))
        times.append(time.perf_counter() - start)
    return group(texts, fingerprints=fps)


def group_keys_only(texts: list[str], times: list[float]) -> list[int]:
    return group(texts, fingerprints=[fingerprint(t) for t in texts], variants=0)


_DELIM = r"\s,;:()\[\]{}\"'`=<>|"
_GENERIC = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # URL, e-mail
    r"|(?:[A-Za-z]:\\|~/|\.{1,2}/|/)[^\s'\"()<>\[\]{},;:|`]+|[\w.-]+/[\w./-]+"  # paths
    rf"|(?<![^{_DELIM}])[^{_DELIM}\d]*\d[^{_DELIM}]*"  # any token holding a digit: numbers, ids, hex, IPs
)
_RUN = re.compile(r"<\*>(?:[\s,;:./#_+-]*<\*>)+")


def generic_key(text: str) -> str:
    """The generic masking key (mask_v2 of the research notes): URLs, e-mails, paths and every token holding a
    digit masked, runs of placeholders collapsed, then exact match. Not the fingerprint's own masking."""
    return " ".join(_RUN.sub("<*>", _GENERIC.sub("<*>", " ".join(text.split()))).split())


def group_generic_mask(texts: list[str], times: list[float]) -> list[str]:
    return [generic_key(text) for text in texts]


def group_prototype(texts: list[str], times: list[float]) -> list[str]:
    labels = []
    for text in texts:
        start = time.perf_counter()
        labels.append(fingerprint_log(text))
        times.append(time.perf_counter() - start)
    return labels


def new_miner() -> TemplateMiner:
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):  # "config file not found"
        return TemplateMiner()  # default settings, no config file: the published baseline


def group_drain(texts: list[str], times: list[float]) -> list[int]:
    miner = new_miner()
    labels = []
    for text in texts:
        start = time.perf_counter()
        labels.append(miner.add_log_message(text)["cluster_id"])
        times.append(time.perf_counter() - start)
    return labels


GROUPERS: dict[str, Callable[[list[str], list[float]], list]] = {
    "ours": group_ours,
    "keys only": group_keys_only,
    "drain3": group_drain,
    "generic mask": group_generic_mask,
    "prototype": group_prototype,
}


# ------------------------------------------------------------------------- metrics


def pairs(counts: Iterable[int]) -> int:
    return sum(n * (n - 1) // 2 for n in counts)


def scores(truth: list[str], predicted: list) -> dict[str, float]:
    """GA and pairwise precision/recall of a predicted labelling against the truth."""
    true_sizes, pred_sizes = Counter(truth), Counter(predicted)
    joint = Counter(zip(truth, predicted, strict=True))
    same_both, same_pred, same_true = (
        pairs(joint.values()),
        pairs(pred_sizes.values()),
        pairs(true_sizes.values()),
    )
    exact = {t for (t, p), n in joint.items() if n == true_sizes[t] == pred_sizes[p]}
    return {
        "ga": sum(true_sizes[t] for t in exact) / len(truth),
        "precision": same_both / same_pred if same_pred else 1.0,
        "recall": same_both / same_true if same_true else 1.0,
        "groups_true": len(true_sizes),
        "groups_found": len(pred_sizes),
        "records": len(truth),
    }


# ------------------------------------------------------------------------- data sets


def load_corpus(limit: int | None) -> tuple[list[str], list[str]]:
    records = [
        json.loads(line) for line in (ROOT / "tests/data/fingerprint_corpus.jsonl").open(encoding="utf-8")
    ]
    records = records[:limit] if limit else records
    return [r["text"] for r in records], [r["group"] for r in records]


def load_loghub(path: Path, limit: int | None) -> tuple[list[str], list[str], list[str]]:
    """Content, raw line (header fields joined back in front of Content) and EventId."""
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))[:limit]
    header = [f for f in rows[0] if f not in LOGHUB_META]
    raw = [" ".join([*(r[f] for f in header), r["Content"]]) for r in rows]
    return [r["Content"] for r in rows], raw, [r["EventId"] for r in rows]


_MINI_OBS = re.compile(r"<returncode>(-?\d+)</returncode>\s*(?:<output>\n?(.*?)</output>)?", re.S)
_SWE_TRAILER = re.compile(r"\n*\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)\n?bash-\$\s*$")
_SWE_FAILURE = re.compile(
    r"Traceback \(most recent call last\)|^\w*(?:Error|Exception): |command not found|No such file or directory"
    r"|Your proposed edit has introduced new syntax error|^E\s+\w+Error|^FAILED ",
    re.M,
)


def trajectory_failures(limit: int | None) -> dict[str, list[list[str]]]:
    """Per format, one list of failed observations per trajectory."""
    base = shared_data() / "trajectories-dev"
    out: dict[str, list[list[str]]] = {"mini-swe-agent": [], "swe-agent": []}
    for path in sorted((base / "mini-swe-agent").glob("*.json.gz"))[:limit]:
        with gzip.open(path) as fh:
            messages = json.load(fh)["messages"]
        fails = []
        for msg in messages:
            match = _MINI_OBS.match(str(msg.get("content", ""))) if msg.get("role") == "user" else None
            if match and match.group(1) != "0":
                fails.append(match.group(2) or "")
        out["mini-swe-agent"].append(fails)
    for path in sorted((base / "swe-agent").glob("*.json.gz"))[:limit]:
        with gzip.open(path) as fh:
            steps = json.load(fh)["trajectory"]
        fails = []
        for prev, step in zip(steps, steps[1:], strict=False):
            if prev["role"] == "ai" and step["role"] == "user" and _SWE_FAILURE.search(step["text"]):
                fails.append(_SWE_TRAILER.sub("", step["text"]))
        out["swe-agent"].append(fails)
    return out


# ------------------------------------------------------------------------- runs


def evaluate(
    texts: list[str], truth: list[str], times: dict[str, list[float]]
) -> dict[str, dict[str, float]]:
    return {m: scores(truth, GROUPERS[m](texts, times[m])) for m in METHODS}


def count_groups(trajectories: list[list[str]], times: dict[str, list[float]]) -> dict[str, int]:
    """Groups are formed per trajectory (a session), then summed."""
    return {
        m: sum(len(set(GROUPERS[m](fails, times[m]))) for fails in trajectories if fails) for m in METHODS
    }


def timing(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_us": ordered[len(ordered) // 2] * 1e6,
        "p99_us": ordered[int(len(ordered) * 0.99)] * 1e6,
        "records": len(ordered),
    }


Config = tuple[int, int, bool]  # variants, agree, key_fields


def grid_scores(
    sets: dict[str, dict[str, tuple[list[str], list[str]]]], corpus: tuple[list[str], list[str]]
) -> tuple[dict[Config, dict[str, dict[str, dict[str, float]]]], dict[Config, dict[str, float]]]:
    """Scores of every (variants, agree, key_fields) configuration on every system and view, and on the corpus."""
    prints = {
        (name, view): [fingerprint(t) for t in texts]
        for name, views in sets.items()
        for view, (texts, _) in views.items()
    }
    corpus_prints = [fingerprint(t) for t in corpus[0]]
    per: dict[Config, dict[str, dict[str, dict[str, float]]]] = {}
    on_corpus: dict[Config, dict[str, float]] = {}
    for config in itertools.product(VARIANTS_GRID, AGREE_GRID, KEY_FIELDS_GRID):
        if config[0] == 0 and config[1:] != (AGREE_GRID[0], KEY_FIELDS_GRID[0]):
            continue  # stage 2 off: the other two are irrelevant
        variants, agree, key_fields = config
        per[config] = {
            name: {
                view: scores(truth, group(texts, fingerprints=prints[name, view], variants=variants,
                                          agree=agree, key_fields=key_fields))
                for view, (texts, truth) in views.items()
            }
            for name, views in sets.items()
        }
        on_corpus[config] = scores(
            corpus[1],
            group(corpus[0], fingerprints=corpus_prints, variants=variants, agree=agree, key_fields=key_fields),
        )
    return per, on_corpus


def choose(
    per: dict[Config, dict[str, dict[str, dict[str, float]]]],
    on_corpus: dict[Config, dict[str, float]],
    systems: list[str],
) -> Config:
    """The configuration with the best mean GA on ``systems`` whose precision holds on every one of them.

    Ties go to the stricter configuration (stage 2 off, then more variants, more agreeing tokens,
    ``key=`` words kept as categories): precision first.
    """
    def admissible(config: Config) -> bool:
        return on_corpus[config]["precision"] >= 1.0 and all(
            per[config][s][v]["precision"] >= PRECISION_FLOOR for s in systems for v in per[config][s]
        )

    def value(config: Config) -> tuple[float, int, int, bool]:
        ga = statistics.fmean(per[config][s][v]["ga"] for s in systems for v in per[config][s])
        return (round(ga, 6), config[0] or 99, config[1], config[2])

    candidates = [c for c in per if admissible(c)] or list(per)
    return max(candidates, key=value)


def leave_one_out(
    per: dict[Config, dict[str, dict[str, dict[str, float]]]], on_corpus: dict[Config, dict[str, float]]
) -> dict:
    """Choose on seven systems, report on the eighth, for each; and the choice on all eight."""
    systems = sorted(next(iter(per.values())))
    held: dict[str, dict] = {}
    for out in systems:
        config = choose(per, on_corpus, [s for s in systems if s != out])
        held[out] = {"variants": config[0], "agree": config[1], "key_fields": config[2], **per[config][out]}
    full = choose(per, on_corpus, systems)
    views = ("content", "raw")
    summary = {
        view: {
            "loso_mean_ga": statistics.fmean(held[s][view]["ga"] for s in systems),
            "loso_min_precision": min(held[s][view]["precision"] for s in systems),
            "loso_mean_recall": statistics.fmean(held[s][view]["recall"] for s in systems),
            "tuned_on_all_mean_ga": statistics.fmean(per[full][s][view]["ga"] for s in systems),
        }
        for view in views
    }
    for view in views:
        summary[view]["ga_drop"] = summary[view]["tuned_on_all_mean_ga"] - summary[view]["loso_mean_ga"]
    # A second held-out protocol: choose on one half of the systems, report on the other half.
    halves = {}
    first = [s for s in ("BGL", "Hadoop", "Linux", "Spark") if s in systems]
    second = [s for s in systems if s not in first]
    for chosen_on, reported_on in ((first, second), (second, first)):
        if not chosen_on or not reported_on:
            continue
        config = choose(per, on_corpus, chosen_on)
        halves["+".join(reported_on)] = {
            "chosen_on": chosen_on,
            "variants": config[0],
            "agree": config[1],
            "key_fields": config[2],
            **{
                view: {
                    "mean_ga": statistics.fmean(per[config][s][view]["ga"] for s in reported_on),
                    "min_precision": min(per[config][s][view]["precision"] for s in reported_on),
                }
                for view in views
            },
        }
    return {
        "halves": halves,
        "held_out": held,
        "chosen_on_all": {"variants": full[0], "agree": full[1], "key_fields": full[2]},
        "shipped": {"variants": VARIANTS, "agree": AGREE, "key_fields": KEY_FIELDS},
        "summary": summary,
        "corpus_at_choice": on_corpus[full],
    }


def time_group(texts: list[str], rounds: int) -> dict[str, float]:
    """Median ms to group these slots: from stored fingerprints, from text, and Drain3 on the same records."""
    prints = [fingerprint(t) for t in texts]
    stored, from_text, drain = [], [], []
    for _ in range(rounds):
        start = time.perf_counter()
        group(texts, fingerprints=prints)
        stored.append(time.perf_counter() - start)
        start = time.perf_counter()
        group(texts)
        from_text.append(time.perf_counter() - start)
        miner = new_miner()
        start = time.perf_counter()
        for text in texts:
            miner.add_log_message(text)
        drain.append(time.perf_counter() - start)
    return {
        "slots": len(texts),
        "ours_stored_fingerprints_ms": statistics.median(stored) * 1e3,
        "ours_from_text_ms": statistics.median(from_text) * 1e3,
        "drain3_ms": statistics.median(drain) * 1e3,
    }


def run(quick: bool) -> dict:
    limit = 300 if quick else None
    times: dict[str, list[float]] = {m: [] for m in METHODS}
    short: dict[str, list[float]] = {m: [] for m in METHODS}
    result: dict = {
        "fingerprint_version": FINGERPRINT_VERSION,
        "quick": quick,
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}",
        "load_at_start": os.getloadavg()[0],
        "loghub": {},
    }
    corpus = load_corpus(150 if quick else None)
    result["corpus"] = evaluate(*corpus, times)

    files = sorted((shared_data() / "loghub-dev").glob("*_2k.log_structured_corrected.csv"))
    sets: dict[str, dict[str, tuple[list[str], list[str]]]] = {}
    for path in files[:3] if quick else files:
        content, raw, truth = load_loghub(path, limit)
        name = path.name.split("_")[0]
        sets[name] = {"content": (content, truth), "raw": (raw, truth)}
        result["loghub"][name] = {
            "content": evaluate(content, truth, times),
            "raw": evaluate(raw, truth, times),
        }
        around_100 = [t for t in content if 80 <= len(t) <= 120]
        for m in METHODS:
            GROUPERS[m](around_100, short[m])
    result["diagnostics"] = diagnostics.run({m: GROUPERS[m] for m in DIAGNOSTIC_METHODS}, scores)
    per, on_corpus = grid_scores(sets, corpus)
    result["loso"] = leave_one_out(per, on_corpus)

    failures = trajectory_failures(5 if quick else None)
    result["trajectories"] = {
        fmt: {"failures": sum(map(len, trajs)), "groups": count_groups(trajs, times)}
        for fmt, trajs in failures.items()
    }
    result["timing"] = {
        m: {**timing(times[m]), "median_us_80_120_chars": timing(short[m])["median_us"]}
        for m in ("ours", "drain3", "prototype")
    }
    # 500 slots of a session: real agent failures first, then log lines of every system in turn.
    mixed = [t for trajs in failures.values() for fails in trajs for t in fails]
    lines = [t for views in sets.values() for t in views["content"][0]]
    mixed = (mixed + lines[::7])[:500]
    result["group_500"] = time_group(mixed, 5 if quick else 21)
    # 500 log lines: every 7th Content line of the eight systems (mostly unanchored: stage 2's input).
    result["group_500_log_lines"] = time_group(lines[::7][:500], 5 if quick else 21)
    # Adversarial for stage 2: 500 distinct unanchored lines of one length, nothing joins.
    rng = random.Random(12)
    vocabulary = ["".join(rng.choice("abcdefghijklmnop") for _ in range(6)) for _ in range(3000)]
    distinct = [" ".join(rng.choice(vocabulary) for _ in range(12)) for _ in range(500)]
    result["group_500_distinct"] = time_group(distinct, 5 if quick else 21)
    result["load_at_end"] = os.getloadavg()[0]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run on a small subset")
    args = parser.parse_args()
    result = run(args.quick)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    suffix = "-quick" if args.quick else ""
    (out / f"grouping{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result, METHODS, PRECISION_FLOOR)
    (out / f"grouping{suffix}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
