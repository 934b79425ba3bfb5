"""Fingerprint keys are stored with each row: a speed-up or a clean-up must not change one of them.

Nor may it change how ``group()`` joins them: ``tests/data/group_labels.json`` holds its labels of the corpus
and the lines (written from version 4's code before the speed-ups of issue 38; a whole check of 63,410 texts
is ``bench/fingerprint_keys.py``).

``tests/data/fingerprint_keys.json`` holds the kind and key of every corpus record and of a set of
log and tool lines that exercise every masking class (version 3's, and since version 4 located
diagnostics, names with digits, quoted types, options and paths inside messages). When the keys are
meant to change, ``FINGERPRINT_VERSION`` is bumped and the file is written again from the new
version, with a migration for the stored rows (version 4: ``engine/rekey.py``, ``tests/test_rekey.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlk_memact.fingerprint import FINGERPRINT_VERSION, fingerprint, group

DATA = Path(__file__).parent / "data"
EXPECTED = json.loads((DATA / "fingerprint_keys.json").read_text(encoding="utf-8"))
CORPUS = [json.loads(line)["text"] for line in (DATA / "fingerprint_corpus.jsonl").open(encoding="utf-8")]


def test_the_stored_keys_are_of_this_version() -> None:
    assert EXPECTED["fingerprint_version"] == FINGERPRINT_VERSION


def test_every_corpus_key_is_unchanged() -> None:
    assert len(EXPECTED["corpus"]) == len(CORPUS) > 400
    changed = [
        (i, expected, [fp.kind, fp.key])
        for i, (text, expected) in enumerate(zip(CORPUS, EXPECTED["corpus"], strict=True))
        if [(fp := fingerprint(text)).kind, fp.key] != expected
    ]
    assert changed == []


@pytest.mark.parametrize(("text", "kind", "key"), EXPECTED["lines"], ids=[k for _, _, k in EXPECTED["lines"]])
def test_line_key_is_unchanged(text: str, kind: str, key: str) -> None:
    fp = fingerprint(text)
    assert (fp.kind, fp.key, fp.keys) == (kind, key, (key,))


GROUPS = json.loads((DATA / "group_labels.json").read_text(encoding="utf-8"))
LINES = [text for text, _, _ in EXPECTED["lines"]]


def test_group_labels_are_unchanged() -> None:
    assert GROUPS["fingerprint_version"] == FINGERPRINT_VERSION
    assert group(CORPUS) == GROUPS["corpus"]
    assert group(CORPUS, variants=0) == GROUPS["corpus_keys_only"]
    assert group(LINES) == GROUPS["lines"]
    assert group(CORPUS + LINES + CORPUS[::-1]) == GROUPS["corpus_and_lines_twice"]  # repeated texts
