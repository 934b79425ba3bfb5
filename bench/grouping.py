"""Grouping benchmark: our fingerprint vs Drain3 (defaults) vs the prototype's fingerprint.

    .venv/bin/python bench/grouping.py [--quick]

Data: the committed corpus (tests/data/fingerprint_corpus.jsonl), loghub-dev (8 labelled log
sets, on ``Content`` and on the raw line = header fields + Content, one global
configuration) and the failed steps of trajectories-dev (no labels: we count groups). Shared
data is found at ``<repo>/../shared/data`` or ``$VLK_SHARED_DIR/data``.

Metrics: GA (fraction of records whose true group equals exactly one predicted group) and
pairwise precision/recall (pairs of records put in one group). Our grouping is union-find over
shared keys; the prototype and Drain3 give one label per record. Timing is per record.
Writes bench/results/grouping.json and bench/results/grouping.md.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gzip
import io
import json
import os
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

from drain3 import TemplateMiner  # noqa: E402
from prototype_fingerprint import fingerprint_log  # noqa: E402

from vlk_memact.fingerprint import FINGERPRINT_VERSION, fingerprint  # noqa: E402

LOGHUB_META = ("LineId", "Content", "EventId", "EventTemplate")
METHODS = ("ours", "drain3", "prototype")


def shared_data() -> Path:
    base = os.environ.get("VLK_SHARED_DIR")
    return (Path(base) if base else ROOT.parent / "shared") / "data"


# ------------------------------------------------------------------------- grouping methods


class UnionFind:
    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, x: int) -> int:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


def group_ours(texts: list[str], times: list[float]) -> list[int]:
    """Records sharing any key are one group (the engine's rule)."""
    uf, owner = UnionFind(), {}
    for i, text in enumerate(texts):
        start = time.perf_counter()
        keys = fingerprint(text).keys
        times.append(time.perf_counter() - start)
        uf.find(i)
        for key in keys:
            if key in owner:
                uf.union(i, owner[key])
            else:
                owner[key] = i
    return [uf.find(i) for i in range(len(texts))]


def group_prototype(texts: list[str], times: list[float]) -> list[str]:
    labels = []
    for text in texts:
        start = time.perf_counter()
        labels.append(fingerprint_log(text))
        times.append(time.perf_counter() - start)
    return labels


def group_drain(texts: list[str], times: list[float]) -> list[int]:
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):  # "config file not found"
        miner = TemplateMiner()  # default settings, no config file: the published baseline
    labels = []
    for text in texts:
        start = time.perf_counter()
        labels.append(miner.add_log_message(text)["cluster_id"])
        times.append(time.perf_counter() - start)
    return labels


GROUPERS: dict[str, Callable[[list[str], list[float]], list]] = {
    "ours": group_ours,
    "drain3": group_drain,
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


def mean(rows: list[dict[str, dict[str, float]]], method: str, metric: str) -> float:
    return statistics.fmean(r[method][metric] for r in rows)


def timing(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_us": ordered[len(ordered) // 2] * 1e6,
        "p99_us": ordered[int(len(ordered) * 0.99)] * 1e6,
        "records": len(ordered),
    }


def run(quick: bool) -> dict:
    limit = 300 if quick else None
    times: dict[str, list[float]] = {m: [] for m in METHODS}
    short: dict[str, list[float]] = {m: [] for m in METHODS}
    result: dict = {"fingerprint_version": FINGERPRINT_VERSION, "quick": quick, "loghub": {}}

    result["corpus"] = evaluate(*load_corpus(150 if quick else None), times)

    files = sorted((shared_data() / "loghub-dev").glob("*_2k.log_structured_corrected.csv"))
    for path in files[:2] if quick else files:
        content, raw, truth = load_loghub(path, limit)
        name = path.name.split("_")[0]
        result["loghub"][name] = {
            "content": evaluate(content, truth, times),
            "raw": evaluate(raw, truth, times),
        }
        around_100 = [t for t in content if 80 <= len(t) <= 120]
        for m in METHODS:
            GROUPERS[m](around_100, short[m])

    failures = trajectory_failures(5 if quick else None)
    result["trajectories"] = {
        fmt: {"failures": sum(map(len, trajs)), "groups": count_groups(trajs, times)}
        for fmt, trajs in failures.items()
    }
    result["timing"] = {
        m: {**timing(times[m]), "median_us_80_120_chars": timing(short[m])["median_us"]} for m in METHODS
    }
    return result


# ------------------------------------------------------------------------- report


def markdown(result: dict) -> str:
    fmt = lambda x: f"{x:.3f}"  # noqa: E731
    head = "| data | " + " | ".join(f"{m} GA | {m} P | {m} R" for m in METHODS) + " |"
    lines = [
        f"# Grouping benchmark (fingerprint v{result['fingerprint_version']}{', --quick' if result['quick'] else ''})",
        "",
        "GA = grouping accuracy; P/R = pairwise precision/recall. Ours = union-find over fingerprint keys;",
        "drain3 = `TemplateMiner()` with default settings; prototype = the reference `fingerprint_log` (spec §6.1).",
        "",
        head,
        "|" + "---|" * (1 + 3 * len(METHODS)),
    ]

    def row(name: str, res: dict) -> str:
        return (
            f"| {name} | "
            + " | ".join(
                f"{fmt(res[m]['ga'])} | {fmt(res[m]['precision'])} | {fmt(res[m]['recall'])}" for m in METHODS
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
        means = {m: {k: mean(rows, m, k) for k in ("ga", "precision", "recall")} for m in METHODS}
        lines.append(row(f"**loghub mean ({view})**", means))
    lines += [
        "",
        "| trajectories-dev failures | records | " + " | ".join(f"{m} groups" for m in METHODS) + " |",
        "|---|---|" + "---|" * len(METHODS),
    ]
    for fmt_name, traj in result["trajectories"].items():
        lines.append(
            f"| {fmt_name} | {traj['failures']} | "
            + " | ".join(str(traj["groups"][m]) for m in METHODS)
            + " |"
        )
    lines += [
        "",
        "| time per record | median µs | p99 µs | median µs, 80-120 chars | records |",
        "|---|---|---|---|---|",
    ]
    for m in METHODS:
        t = result["timing"][m]
        lines.append(
            f"| {m} | {t['median_us']:.1f} | {t['p99_us']:.1f} | {t['median_us_80_120_chars']:.1f} | {t['records']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run on a small subset")
    args = parser.parse_args()
    result = run(args.quick)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    suffix = "-quick" if args.quick else ""
    (out / f"grouping{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / f"grouping{suffix}.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
