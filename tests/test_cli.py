"""The command line: exit codes and exact output, through main([...]) and as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vlk_memact.cli import main


@pytest.fixture
def url(db_path: Path) -> str:
    return f"sqlite:///{db_path}"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_record_context_history_search_summary_travel_revoke(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--database-url", url, "record", "Error 503: timeout", "--session", "t")
    assert code == 0 and out.startswith("📝 [VLK RECORD] PRESENT state recorded as timeline_id=1 (content_id=1) in session 't'.")
    code, out, _ = run(capsys, "--database-url", url, "context", "--session", "t")
    assert "[id:1] [ACTIVE PRESENT STATE]  | Log: Error 503: timeout" in out
    code, out, _ = run(capsys, "--database-url", url, "history", "--session", "t")
    assert [s["id"] for s in json.loads(out)] == [1]
    code, out, _ = run(capsys, "--database-url", url, "search", "TIMEOUT", "--session", "t")
    assert len(json.loads(out)) == 1
    code, out, _ = run(capsys, "--database-url", url, "time-travel", "1", "--learning", "Back off", "--evidence",
                       "503", "--session", "t")
    assert code == 0 and "FUTURE constraint #2 injected" in out
    code, out, _ = run(capsys, "--database-url", url, "summary", "--session", "t")
    assert out.startswith("Session 't': 2 total timeline slots | 0 PRESENT (active) | 1 PAST (archived) | 1 FUTURE")
    code, out, _ = run(capsys, "--database-url", url, "revoke", "2", "--session", "t")
    assert code == 0 and "#2 revoked" in out


def test_errors_go_to_stderr_with_exit_code_1(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--database-url", url, "revoke", "7")
    assert (code, out) == (1, "")
    assert err.endswith("Error: No FUTURE constraint found with id #7 in session 'default'. "
                        "Active constraint ids are the [id:N] tags of vlk_fetch_context.\n")


def test_a_bad_database_url_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--database-url", "mysql://x", "summary")
    assert code == 1 and "DATABASE_URL scheme 'mysql' is not supported" in err


def test_a_bad_setting_is_a_clear_error(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLK_LOOP_THRESHOLD", "three")
    code, _, err = run(capsys, "summary")
    assert code == 1 and "VLK_LOOP_THRESHOLD must be a whole number, got 'three'" in err


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_demo_runs_a_scripted_session_end_to_end(tmp_path: Path) -> None:
    env = {**os.environ, "VLK_LOG_LEVEL": "WARNING"}
    done = subprocess.run([sys.executable, "-m", "vlk_memact", "demo"], capture_output=True, text=True,
                          timeout=100, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "7 tools: vlk_time_travel" in out
    assert "[SYSTEM ANCHOR] Loop detected (fingerprint): the same error pattern appeared 3 times" in out
    assert "intercepted a loop of 3 (fingerprint: same error, details differ)" in out
    assert "Without vlk-memact the three failures stay in the model's context: ~" in out  # the token lines
    assert "CONFLICTING FUTURE CONSTRAINTS DETECTED" in out
    assert "tokens saved" in out
    assert not list(tmp_path.iterdir())  # nothing written to the working directory
