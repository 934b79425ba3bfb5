"""Dump every fingerprint and ``group()`` result on every text we have, and compare two dumps.

    .venv/bin/python bench/fingerprint_keys.py save PATH     # e.g. on main, before a speed-up
    .venv/bin/python bench/fingerprint_keys.py check PATH    # after it: exits 1 on any difference

A speed-up must not change a single key (stored keys would regroup silently). The texts: the committed
corpus, the diagnostics of bench/diagnostics.py (every tool, both views, with and without the message's file
varying), every Loghub line of ../shared/data/loghub-dev (Content and raw line), every observation of the
trajectories (failed or not) and the failures bench/grouping.py groups, every tool result of the Claude Code
transcripts, and seeded adversarial texts (random mixes of the characters and words the detectors look
for, long lines, huge outputs, colours, carriage returns). For each text: kind, key and keys; for each
set: ``group()`` labels (default parameters and keys only). The dump is gzipped JSON keyed by set name.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import diagnostics  # noqa: E402
from grouping import load_corpus, load_loghub, shared_data, trajectory_failures  # noqa: E402

from vlk_memact.fingerprint import FINGERPRINT_VERSION, fingerprint, group  # noqa: E402

# Pieces the detectors look for: a random mix of them reaches the branches that plain text never does.
_PIECES = (
    'File "/x/y.py", line 3, in f\n', "Traceback (most recent call last):\n", "error[E0277]: ", "--> src/a.rs:3:4\n",
    "error: ", "warning: ", "panicked at ", "goroutine 1 [running]:\n", "panic: ", "--- FAIL: TestX (0.01s)\n",
    "\tat com.x.Y.z(Y.java:3)\n", "Caused by: java.io.IOException: ", "error TS2304: ", "● ", "FAIL ", " > ",
    "    at f (/a/b.js:1:2)\n", "Node.js v20", "HTTP/1.1 404 ", "status: 503", "Not Found", "ERROR:  ",
    "npm ERR! code E404\n", "curl: (7) ", "ECONNREFUSED", "command not found", "No such file or directory",
    "Permission denied", "Segmentation fault", "ValueError: ", "KeyError: 'k'", "exit status 2", "Error 1",
    "FAILED tests/test_a.py::test_b - ", "ERRORS:\n- E501 ", "- F401 ", "a.c:3:4: error: ", "x.ts(3,4): ",
    "[ERROR] /a/B.java:[3,4] ", "e: file:///a/b.kt:3:4 ", "user=root ", "k=\"v 1\" ", "0x7ffe12 ", "12:34:56 ",
    "Jan 12 ", "ab:cd:ef:01:23:45 ", "http://h.example.com/p?q=1 ", "a@b.com ", "C:\\x\\y.txt ", "~/a/b ",
    "./a/b.c:1 ", "'quoted name' ", '"a b c d e f" ', "`code`", "<*> ", "()", "[]", "...", "3.5 MB ", "<1 sec ",
    "\x1b[31m", "\r", "\n", "\n\n", " ", ":", "(", ")", "[", "]", "'", '"', "=", ",", "/", "\\", "\t",
    "x1", "user_id", "Foo.bar", "12345", "E0602", "ORA-00942", "ERR_SSL_3", "ü", "\u2028", "\x00",
)


def adversarial(count: int, seed: int = 38) -> list[str]:
    """Seeded random texts: short mixes, long lines without delimiters, huge outputs past the window."""
    rng = random.Random(seed)
    texts = []
    for i in range(count):
        form = i % 10
        if form < 6:
            texts.append("".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 40))))
        elif form == 6:
            texts.append(rng.choice(_PIECES) + "".join(rng.choice("a1:/(.") for _ in range(rng.randint(500, 3000))))
        elif form == 7:
            texts.append("\n".join("".join(rng.choice(_PIECES) for _ in range(8)) for _ in range(rng.randint(50, 700))))
        elif form == 8:
            words = ["".join(rng.choice("abcdefghijklmnop0123") for _ in range(6)) for _ in range(40)]
            texts.append(" ".join(rng.choice(words) for _ in range(12)))
        else:
            texts.append("".join(chr(rng.randint(1, 0x3000)) for _ in range(rng.randint(1, 400))))
    return texts


def _transcript_results() -> dict[str, list[str]]:
    """Every tool result of the Claude Code transcripts, per session file, in file order."""
    out: dict[str, list[str]] = {}
    for path in sorted((shared_data() / "claude-code-sessions").glob("*/*.jsonl.gz")):
        results = []
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                try:
                    content = (json.loads(line).get("message") or {}).get("content")
                except (json.JSONDecodeError, AttributeError):
                    continue
                for block in content if isinstance(content, list) else ():
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        body = block.get("content")
                        if isinstance(body, list):
                            body = "\n".join(b.get("text", "") for b in body if isinstance(b, dict))
                        results.append(body if isinstance(body, str) else "")
        out[f"claude:{path.parent.name}/{path.name}"] = results
    return out


def _observations() -> dict[str, list[str]]:
    """Every user message of every trajectory (failed steps or not), per file."""
    base = shared_data() / "trajectories-dev"
    out: dict[str, list[str]] = {}
    for path in sorted((base / "mini-swe-agent").glob("*.json.gz")):
        with gzip.open(path) as fh:
            messages = json.load(fh)["messages"]
        out[f"mini:{path.name}"] = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
    for path in sorted((base / "swe-agent").glob("*.json.gz")):
        with gzip.open(path) as fh:
            steps = json.load(fh)["trajectory"]
        out[f"swe:{path.name}"] = [s["text"] for s in steps if s["role"] == "user"]
    return out


def text_sets() -> dict[str, list[str]]:
    """Every set of texts, by name; a set is also one ``group()`` batch."""
    sets: dict[str, list[str]] = {"corpus": load_corpus(None)[0]}
    for tool in diagnostics.TOOLS:
        for view in diagnostics.VIEWS:
            sets[f"diagnostics:{tool}:{view}"] = diagnostics.records(tool, view)[0]
            sets[f"diagnostics:{tool}:{view}:varied"] = diagnostics.records(tool, view, message_file_varies=True)[0]
    for path in sorted((shared_data() / "loghub-dev").glob("*_2k.log_structured_corrected.csv")):
        content, raw, _ = load_loghub(path, None)
        name = path.name.split("_")[0]
        sets[f"loghub:{name}:content"], sets[f"loghub:{name}:raw"] = content, raw
    for fmt, trajectories in trajectory_failures(None).items():
        for i, fails in enumerate(trajectories):
            if fails:
                sets[f"failures:{fmt}:{i}"] = fails
    sets.update(_observations())
    sets.update(_transcript_results())
    texts = adversarial(3000)
    for i in range(0, len(texts), 500):
        sets[f"adversarial:{i // 500}"] = texts[i : i + 500]
    return sets


def dump() -> dict:
    result: dict = {"fingerprint_version": FINGERPRINT_VERSION, "sets": {}}
    for name, texts in text_sets().items():
        result["sets"][name] = {
            "texts": [hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest() for t in texts],
            "fingerprints": [[fp.kind, fp.key, list(fp.keys)] for fp in map(fingerprint, texts)],
            "group": group(texts),
            "group_keys_only": group(texts, variants=0),
        }
    return result


def compare(expected: dict, actual: dict) -> list[str]:
    """Every difference, as a line; the texts must be the same for the comparison to mean anything."""
    diffs = []
    if expected["fingerprint_version"] != actual["fingerprint_version"]:
        diffs.append(f"version {expected['fingerprint_version']} -> {actual['fingerprint_version']}")
    for name in sorted(set(expected["sets"]) | set(actual["sets"])):
        old, new = expected["sets"].get(name), actual["sets"].get(name)
        if old is None or new is None:
            diffs.append(f"{name}: only in {'the new' if old is None else 'the saved'} dump")
            continue
        if old["texts"] != new["texts"]:
            diffs.append(f"{name}: other texts (the data changed)")
            continue
        for i, (a, b) in enumerate(zip(old["fingerprints"], new["fingerprints"], strict=True)):
            if a != b:
                diffs.append(f"{name}[{i}]: {a} -> {b}")
        for field in ("group", "group_keys_only"):
            if old[field] != new[field]:
                diffs.append(f"{name}: {field} labels differ")
    return diffs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("save", "check"))
    parser.add_argument("path", type=Path)
    args = parser.parse_args()
    actual = dump()
    texts = sum(len(s["texts"]) for s in actual["sets"].values())
    if args.action == "save":
        with gzip.open(args.path, "wt", encoding="utf-8") as fh:
            json.dump(actual, fh)
        print(f"saved {texts} texts in {len(actual['sets'])} sets to {args.path}")
        return
    with gzip.open(args.path, "rt", encoding="utf-8") as fh:
        expected = json.load(fh)
    diffs = compare(expected, actual)
    for line in diffs[:50]:
        print(line)
    print(f"compared {texts} texts in {len(actual['sets'])} sets (fingerprints and group labels): {len(diffs)} differences")
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
