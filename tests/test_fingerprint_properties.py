"""Fingerprint tests: the labelled corpus, properties of every key, and bounded time on hostile input."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_fingerprint import TRACEBACK
from vlk_memact.fingerprint import FINGERPRINT_VERSION, Fingerprint, fingerprint

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "fingerprint_corpus.jsonl"


# --------------------------------------------------------------------------- corpus


def _corpus() -> list[dict[str, object]]:
    return [json.loads(line) for line in CORPUS.open(encoding="utf-8")]


def _union_find_groups(texts: list[str]) -> list[int]:
    """The engine's grouping rule: records sharing any key are one group."""
    parent = list(range(len(texts)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, text in enumerate(texts):
        for key in fingerprint(text).keys:
            if key in owner:
                parent[find(i)] = find(owner[key])
            else:
                owner[key] = i
    return [find(i) for i in range(len(texts))]


def _pairs(counts: Counter) -> int:
    return sum(n * (n - 1) // 2 for n in counts.values())


def test_corpus_is_large_and_varied() -> None:
    records = _corpus()
    variants = Counter(r["group"] for r in records)
    assert len(variants) >= 60
    # every case has three variants; a case whose variants name different keys is three errors (issue 38)
    assert min(n for g, n in variants.items() if "#" not in g) >= 3
    assert len({r["ecosystem"] for r in records}) >= 10
    assert CORPUS.stat().st_size < 2_000_000


def test_corpus_pairwise_precision_and_recall() -> None:
    records = _corpus()
    truth = [str(r["group"]) for r in records]
    predicted = _union_find_groups([str(r["text"]) for r in records])
    same_both = _pairs(Counter(zip(truth, predicted, strict=True)))
    precision = same_both / _pairs(Counter(predicted))
    recall = same_both / _pairs(Counter(truth))
    assert precision == 1.0
    assert recall >= 0.98


# --------------------------------------------------------------------------- properties

LENGTH_CHANGING = "İßẞȺıſﬃŉǰΐ"
nasty_text = st.text(
    alphabet=st.one_of(
        st.characters(),  # includes lone surrogates and NUL
        st.sampled_from(list(LENGTH_CHANGING) + ["\x00", "\ud800", "\udfff", "\n", "\r", "'", '"', "`", ":"]),
    ),
    max_size=400,
)


def _assert_well_formed(fp: Fingerprint) -> None:
    assert isinstance(fp.kind, str) and fp.kind
    for key in fp.keys:
        assert key.startswith(f"{fp.kind}:")
        assert len(key) <= 200
        assert "\n" not in key and "\x00" not in key
        key.encode("utf-8")  # no lone surrogates: storable in SQLite/PostgreSQL
    assert fp.keys[0] == fp.key


@given(nasty_text)
@settings(max_examples=400, deadline=None)
def test_never_raises_and_keys_are_well_formed(text: str) -> None:
    _assert_well_formed(fingerprint(text))


@given(nasty_text)
@settings(max_examples=100, deadline=None)
def test_deterministic(text: str) -> None:
    assert fingerprint(text) == fingerprint(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "\x00",
        "\ud800",
        "İ" * 1000,
        "ẞẞẞ expected 5 but got 4",
        "İİİİİİ STOPITERATION: x",
        "Ⱥ" * 50 + "error[E0277]",
    ],
)
def test_edge_inputs(text: str) -> None:
    _assert_well_formed(fingerprint(text))


def test_an_internal_defect_degrades_to_a_text_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    module = sys.modules[fingerprint.__module__]

    def broken(text: str) -> Fingerprint:
        raise IndexError("a bug")

    monkeypatch.setattr(module, "_fingerprint", broken)
    fp = fingerprint("KeyError: 'a'\ud800")
    assert fp.kind == "fallback" and fp.key.startswith("fallback:unparsed ")
    assert fp == fingerprint("KeyError: 'a'\ud800") != fingerprint("KeyError: 'b'")


def test_empty_input_has_a_fixed_key() -> None:
    assert fingerprint("").key == fingerprint(" \n\t ").key == "empty:"
    assert fingerprint("").kind == "empty"


tmp_dirs = st.from_regex(r"/tmp/[a-z]{3,8}-[a-z0-9_]{8}", fullmatch=True)
line_numbers = st.integers(min_value=1, max_value=99_999)
uuids = st.uuids().map(str)
pids = st.integers(min_value=1, max_value=4_000_000)
timestamps = st.datetimes().map(lambda d: d.isoformat(sep=" ", timespec="milliseconds"))


@given(tmp_dirs, line_numbers, line_numbers)
def test_python_key_ignores_paths_and_lines(root: str, line: int, inner: int) -> None:
    reference = fingerprint(TRACEBACK.format(root="/tmp/a", line=1, inner=2, key="k")).key
    assert fingerprint(TRACEBACK.format(root=root, line=line, inner=inner, key="k")).key == reference


@given(timestamps, uuids, pids, line_numbers)
def test_log_key_ignores_timestamp_uuid_pid(ts: str, job: str, pid: int, retries: int) -> None:
    text = f"{ts} ERROR [{pid}] worker: job {job} failed after {retries} retries: upstream timeout"
    reference = "2020-01-01 00:00:00.000 ERROR [1] worker: job 00000000-0000-0000-0000-000000000000 failed after 1 retries: upstream timeout"
    assert fingerprint(text).key == fingerprint(reference).key


@given(pids, line_numbers, line_numbers)
def test_rust_panic_key_ignores_thread_id_and_position(pid: int, line: int, col: int) -> None:
    text = f"thread 'tests::adds' ({pid}) panicked at src/lib.rs:{line}:{col}:\nassertion `left == right` failed\n  left: {line}\n right: {col}\n"
    assert fingerprint(text).key == "rust:panic[tests::adds]: assertion `left == right` failed@lib.rs"


@given(tmp_dirs, line_numbers, st.integers(min_value=1, max_value=999))
def test_rustc_key_ignores_location(root: str, line: int, col: int) -> None:
    text = f"error[E0425]: cannot find value `foo` in this scope\n --> {root}/src/main.rs:{line}:{col}\n"
    assert fingerprint(text).key == "rust:error[E0425]: cannot find value `foo` in this scope"


@given(tmp_dirs, line_numbers)
def test_node_key_ignores_location(root: str, line: int) -> None:
    text = f"TypeError: x.map is not a function\n    at render ({root}/lib/app.js:{line}:7)\n"
    assert fingerprint(text).key == "javascript:TypeError: x.map is not a function@render"
    other_file = text.replace("lib/app.js", "src/view.js")
    assert fingerprint(other_file).key == fingerprint(text).key  # the location is noise, the function is not


def test_fingerprint_is_a_frozen_value() -> None:
    fp = fingerprint("KeyError: 'a'")
    assert isinstance(FINGERPRINT_VERSION, int) and FINGERPRINT_VERSION >= 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        fp.key = "x"  # type: ignore[misc]


# --------------------------------------------------------------------------- bounded time

ADVERSARIAL = [
    "a" * 100_000,
    "(" * 50_000,
    "1" * 100_000,
    "/" * 100_000,
    "a/" * 50_000,
    "x@" * 50_000,
    "error[E" + "0" * 100_000,
    'File "' * 20_000,
    '  File "/a.py", line 1, in f\n' * 20_000 + "KeyError: 'x'",
    "\tat a.b(" * 20_000,
    "thread '" * 20_000 + "panicked at",
    "-" * 100_000,
    "'" * 100_000,
    ("word " * 20 + "\n") * 10_000,
    "Jan 1 " * 20_000,
    "x" * 1_000_000,
    (
        "Traceback (most recent call last):\n"
        + '  File "/x/y.py", line 3, in g\n    g()\n' * 30_000
        + "RecursionError: maximum recursion depth exceeded\n"
    ),
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=lambda t: f"{t[:12]!r}x{len(t)}")
def test_bounded_time_on_adversarial_input(text: str) -> None:
    start = time.perf_counter()
    _assert_well_formed(fingerprint(text))
    assert time.perf_counter() - start < 5.0  # backtracking would take minutes; generous for loaded CI


# Every family's trigger, repeated or followed by long runs: each regex behind a trigger must
# stay linear (no nested quantifiers over the same characters).
CUES = [
    "error[E0001]: x",
    " --> a.rs:1:1",
    "error: ",
    "thread 'a' panicked at ",
    "panicked at '",
    "ERRORS:\n- ",
    "FAILED a.py::t",
    "E   ",
    'File "a.py", line 1, in f',
    "goroutine 1 [running]:",
    "panic: ",
    "fatal error: ",
    "--- FAIL: T",
    "\tat a.B(",
    "    at f (a.js:1:1)",
    "Caused by: a.B",
    ".java:1: error: ",
    "error TS1234: ",
    "Node.js v20",
    "● t",
    "HTTP/1.1 ",
    "status 404 ",
    "404 Not Found ",
    "ERROR:  ",
    "npm error code E",
    "curl: (7) ",
    "ECONNREFUSED ",
    "Connection refused",
    "command not found",
    "No such file or directory",
    "Permission denied",
    "Segmentation fault",
    ": Assertion `",
    "undefined reference to",
    "Error: in prepare, ",
    "exit status 1",
    "KeyError: ",
    "a.go:1:1: ",
    "symbol:",
    "Jan 1 ",
    ".com",
    "<*>",
    "=",
    "a1",
    "'",
    "`",
]


def _shapes(cue: str) -> list[str]:
    n = 40_000 // (len(cue) + 1) + 1
    return [
        cue * n,
        cue + "\n" * 40_000,
        cue + " " * 40_000,
        (cue + "x" * 30 + "\n") * (n // 30 + 1),
        ("\n" + cue) * n,
        (cue + " ") * n,
        "\n".join([cue] * 3_000) + "\n" + "\t" * 5_000,
    ]


@pytest.mark.parametrize("cue", CUES)
def test_bounded_time_on_repeated_triggers(cue: str) -> None:
    for text in _shapes(cue):
        start = time.perf_counter()
        _assert_well_formed(fingerprint(text))
        assert time.perf_counter() - start < 5.0, (cue, len(text))  # backtracking would take minutes


def test_huge_input_keeps_the_error_at_the_end() -> None:
    text = (
        "noise line\n" * 100_000
        + 'Traceback (most recent call last):\n  File "/w/app.py", line 9, in run\n    go()\nValueError: bad value\n'
    )
    start = time.perf_counter()
    assert fingerprint(text).key == "python:ValueError: bad value@run"
    assert time.perf_counter() - start < 5.0  # backtracking would take minutes; generous for loaded CI
