"""The fingerprint's two fallbacks (a defect degrades a key, or a grouping, to a hash of the exact text) say
so on the log, once per place and process, never on every text (issue 37)."""

from __future__ import annotations

import logging

import pytest

from vlk_memact.fingerprint import core, dispatch, fingerprint, group, grouping


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "_DEGRADED", set())


def broken(*_: object, **__: object) -> None:
    raise RuntimeError("a defect")


def test_a_key_degraded_to_a_hash_logs_once(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(dispatch, "_fingerprint", broken)
    with caplog.at_level(logging.WARNING, logger="vlk_memact.fingerprint"):
        first, second, third = fingerprint("KeyError: 'a'"), fingerprint("KeyError: 'a'"), fingerprint("other")
    assert first == second and first.key.startswith("fallback:unparsed ") and third != first
    records = [r for r in caplog.records if r.name == "vlk_memact.fingerprint"]
    assert len(records) == 1 and "fingerprint()" in records[0].getMessage() and "RuntimeError" in records[0].getMessage()


def test_a_grouping_degraded_to_exact_text_logs_once(monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(grouping, "_join_by_keys", broken)
    with caplog.at_level(logging.WARNING, logger="vlk_memact.fingerprint"):
        assert group(["a", "b", "a"]) == [0, 1, 0]
        assert group(["x", "x"]) == [0, 0]
    records = [r for r in caplog.records if r.name == "vlk_memact.fingerprint"]
    assert len(records) == 1 and "group()" in records[0].getMessage()


def test_no_log_line_when_nothing_degrades(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="vlk_memact.fingerprint"):
        fingerprint("ValueError: x")
        group(["ValueError: x", "ValueError: y"])
    assert [r for r in caplog.records if r.name == "vlk_memact.fingerprint"] == []
