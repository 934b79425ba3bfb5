"""Texts of real agent failures (shared/data/trajectories-dev), cut to the lengths agents record."""

from __future__ import annotations

import gzip
import json
import math
import random
import re
from dataclasses import dataclass

from harness.paths import DATA, SHARED
from vlk_memact.fingerprint import fingerprint

LESSONS = (
    "Run the test suite with `pytest -x -q` from the repository root, not from the package folder.",
    "Install the package in editable mode before running its tests: `pip install -e .`.",
    "The settings module is `tests.settings`; export DJANGO_SETTINGS_MODULE before running manage.py.",
    "Pin numpy below 2.0 for this package; its C extension is built against the 1.x ABI.",
    "Use the virtualenv's python (`.venv/bin/python`), not the system interpreter.",
    "Regenerate migrations after editing models; the test database is built from them.",
    "Read the whole traceback: the failing frame is in the project, not in site-packages.",
    "Edit the source under src/, never the copy installed in site-packages.",
    "Quote paths with spaces in shell commands; the workspace path contains one.",
    "Check the function signature before calling it; keyword-only arguments are required here.",
)



_SWE_FOOTER = re.compile(r"\n*\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)\n?bash-\$\s*$")
_SWE_FAILURE = re.compile(  # as bench/replay.py recognises a failed SWE-agent step
    r"Traceback \(most recent call last\)|^\w*(?:Error|Exception): |command not found|No such file or directory"
    r"|Your proposed edit has introduced new syntax error|syntax error|not found|^usage: |Usage: |"
    r"Error: |FAILED|fatal: |E\d{3} ",
    re.MULTILINE,
)
_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")


def load_observations() -> tuple[list[str], str]:
    """Failed steps of real agents (what an agent records; both formats of trajectories-dev), else a
    synthetic stand-in."""
    texts: list[str] = []
    if DATA.is_dir():
        for path in sorted((DATA / "swe-agent").glob("*.json.gz")):
            turns = json.load(gzip.open(path)).get("trajectory", [])
            for before, turn in zip(turns, turns[1:], strict=False):
                if before.get("role") == "ai" and turn.get("role") == "user":
                    text = _SWE_FOOTER.sub("", turn.get("text") or "").strip()
                    if _SWE_FAILURE.search(text):
                        texts.append(text)
        for path in sorted((DATA / "mini-swe-agent").glob("*.json.gz")):
            messages = json.load(gzip.open(path)).get("messages", [])
            for before, message in zip(messages, messages[1:], strict=False):
                if before.get("role") == "assistant" and message.get("role") == "user":
                    text = message.get("content")
                    text = text if isinstance(text, str) else json.dumps(text)
                    code = _RETURNCODE.search(text)
                    if code is None or int(code.group(1)) != 0:
                        texts.append(re.sub(r"</?output>|<returncode>-?\d+</returncode>", "", text).strip())
    texts = [t for t in texts if len(t) >= 80]
    if texts:
        return texts, f"{DATA.relative_to(SHARED.parent) if SHARED.parent in DATA.parents else DATA}"
    rng = random.Random(7)
    synthetic = []
    for i in range(500):
        mod = rng.choice(["core", "api", "db", "cli", "utils"])
        exc = rng.choice(["KeyError", "ValueError", "TypeError", "AttributeError", "ImportError"])
        frames = "".join(
            f'  File "/repo/src/pkg/{mod}/f{j}.py", line {rng.randint(1, 900)}, in fn_{rng.randint(0, 40)}\n'
            f"    result = call_{j}(arg{j})\n"
            for j in range(rng.randint(1, 12))
        )
        synthetic.append(f"Traceback (most recent call last):\n{frames}{exc}: bad value {rng.randint(0, 10**6)} "
                         f"for option '{mod}_{i % 37}'")
    return synthetic, "synthetic (trajectories-dev not found)"


@dataclass(frozen=True)
class PoolText:
    text: str
    key: str
    keys: tuple[str, ...]
    keys_json: str


def make_pool(observations: list[str], size: int, rng: random.Random) -> list[PoolText]:
    """Texts of 200-2000 characters (log-uniform) of real failed steps: short ones joined, long ones cut
    to their head and tail."""
    pool = []
    for _ in range(size):
        length = int(math.exp(rng.uniform(math.log(200), math.log(2000))))
        text = observations[rng.randrange(len(observations))]
        while len(text) < length:
            text += "\n" + observations[rng.randrange(len(observations))]
        if len(text) > length:  # head and tail, as the engine keeps an over-long log (the cause, the error)
            head = length * 2 // 5
            text = text[:head] + "\n...\n" + text[-(length - head):]
        fp = fingerprint(text)
        pool.append(PoolText(text, fp.key, tuple(fp.keys), json.dumps(list(fp.keys), ensure_ascii=False)))
    return pool


def distinct_errors(pool: list[PoolText], count: int) -> list[PoolText]:
    """Pool texts whose fingerprint keys are pairwise disjoint: recorded together they form no loop."""
    chosen: list[PoolText] = []
    seen: set[str] = set()
    for item in pool:
        if len(item.text) > 1200 or seen.intersection(item.keys) or item.key in seen:
            continue
        chosen.append(item)
        seen.update(item.keys)
        seen.add(item.key)
        if len(chosen) == count:
            break
    return chosen


def loop_text(i: int) -> str:
    """The same error each time, with volatile parts (paths, line numbers, ids) that change."""
    return (
        "Traceback (most recent call last):\n"
        f'  File "/tmp/run_{i}/repo/src/app/handlers.py", line {40 + i % 50}, in handle\n'
        f"    value = registry[key_{i}]\n"
        f"KeyError: 'session-{1000 + i}'"
    )


class TextSource:
    """Unique texts: a pool text behind a header line that differs every time (as real runs do)."""

    def __init__(self, pool: list[PoolText], rng: random.Random, label: str) -> None:
        self.pool = pool
        self.rng = rng
        self.label = label
        self.count = 0

    def next(self) -> tuple[str, PoolText]:
        self.count += 1
        item = self.pool[self.rng.randrange(len(self.pool))]
        return f"$ {self.label} step {self.count} pid={self.rng.randrange(1, 99999)}\n{item.text}", item

