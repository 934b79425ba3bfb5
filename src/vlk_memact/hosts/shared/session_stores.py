"""Where each host keeps its past sessions on disk, and how many of them belong to a project.

What `vlk-memact learn` reads (learn/) and what `install` counts when it ends (learn_note). As the pinned
CLIs write them (tests/test_learn_*_cli.py run each and read what it left):

    Claude Code  $CLAUDE_CONFIG_DIR or ~/.claude, projects/<cwd, non-alphanumerics as '-'>/<session>.jsonl,
                 and a session's subagents in <session>/subagents/agent-*.jsonl
    Codex CLI    $CODEX_HOME or ~/.codex, sessions/YYYY/MM/DD/rollout-<time>-<session>.jsonl
    Gemini CLI   $GEMINI_CLI_HOME or ~, .gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl (older: .json),
                 <project>/.project_root naming the working directory
    OpenCode     $XDG_DATA_HOME or ~/.local/share, opencode/opencode*.db (SQLite, $OPENCODE_DB), read read-only;
                 older versions: opencode/storage/session/<project>/<session>.json and message/, part/ beside it

Session files may also be gzipped (`.jsonl.gz`): archived sessions read the same. Pure file reading, no
engine: the installers call learn_note() at their end.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from ...config import detect_project

HOSTS = ("claude-code", "codex", "gemini", "opencode")
LABELS = {"claude-code": "Claude Code", "codex": "Codex CLI", "gemini": "Gemini CLI", "opencode": "OpenCode"}
PEEK_LINES = 40  # lines read to find what a session file says about itself (its id, time, working directory)
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def store_root(host: str, env: Mapping[str, str] | None = None) -> Path:
    """The folder holding a host's past sessions (for OpenCode its data folder, holding the database)."""
    env = _env(env)
    home = _home(env)
    if host == "claude-code":
        return Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "projects"
    if host == "codex":
        return Path(env.get("CODEX_HOME") or home / ".codex") / "sessions"
    if host == "gemini":
        return Path(env.get("GEMINI_CLI_HOME") or home) / ".gemini" / "tmp"
    if host == "opencode":
        return Path(env.get("XDG_DATA_HOME") or home / ".local" / "share") / "opencode"
    raise ValueError(f"unknown host {host!r}; one of {', '.join(HOSTS)}")


def open_text(path: Path) -> IO[str]:
    """A session file as text, gzipped or not; undecodable bytes replaced (a cut multi-byte character)."""
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def first_records(path: Path, limit: int = PEEK_LINES) -> Iterator[dict[str, Any]]:
    """The JSON objects among the first `limit` lines of a JSON Lines file (others skipped)."""
    try:
        with open_text(path) as handle:
            for number, line in enumerate(handle):
                if number >= limit:
                    return
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    yield record
    except (OSError, EOFError, gzip.BadGzipFile):
        return


def _is_jsonl(path: Path) -> bool:
    return path.name.endswith((".jsonl", ".jsonl.gz"))


def guess_host(path: Path) -> str | None:
    """Which host wrote this session file (or database), from its first records; None when none did."""
    if path.name.endswith(".db"):
        from ...store.foreign import tables  # only the store touches database drivers

        return "opencode" if {"session", "message", "part"} <= tables(path) else None
    if path.suffix == ".json":
        if path.parent.parent.name == "session" and path.parent.parent.parent.name == "storage":
            return "opencode"
        return "gemini" if path.name.startswith("session-") else None
    for record in first_records(path, 5):
        if record.get("type") == "session_meta" or record.get("type") in ("response_item", "event_msg"):
            return "codex"
        if "projectHash" in record or record.get("type") in ("gemini", "info") or "$set" in record:
            return "gemini"
        if "sessionId" in record or record.get("type") in ("user", "assistant", "summary", "queue-operation"):
            return "claude-code"
    return None


def session_files(host: str, root: Path) -> list[Path]:
    """The host's session files under root (a folder, or one file), oldest first by modification time.

    OpenCode's are its databases and, for older versions, its session documents (storage/session/*/*.json).
    """
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    if host == "opencode":
        found = [p for p in root.rglob("opencode*.db") if p.is_file()]
        found += [p for p in root.rglob("*.json") if p.parent.parent.name == "session"
                  and p.parent.parent.parent.name == "storage"]
    elif host == "gemini":
        found = [p for p in root.rglob("session-*.json*") if p.is_file() and p.name.endswith((".json", ".jsonl"))]
    else:
        found = [p for p in root.rglob("*.jsonl*") if p.is_file() and _is_jsonl(p)]
    return sorted(found, key=_mtime)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def gemini_cwd(chat: Path) -> str | None:
    """The working directory of a Gemini CLI chat: <project>/.project_root (recent versions write it)."""
    for folder in (chat.parent.parent, chat.parent):
        try:
            return (folder / ".project_root").read_text(encoding="utf-8").strip() or None
        except OSError:
            continue
    return None


def session_cwd(host: str, path: Path) -> str | None:
    """The working directory a session file records, from its first lines (None when it names none)."""
    if host == "gemini":
        return gemini_cwd(path)
    for record in first_records(path):
        if host == "codex":
            payload = record.get("payload")
            cwd = payload.get("cwd") if isinstance(payload, dict) else None
        else:
            cwd = record.get("cwd")
        if isinstance(cwd, str) and cwd:
            return cwd
    return None


def project_of(cwd: str | None) -> str:
    """The project of a past session, as the live hooks key it: the git root of its working directory when that
    directory exists on this machine, else the directory as recorded ('default' when none was)."""
    if not cwd:
        return "default"
    folder = Path(cwd)
    try:
        exists = folder.is_dir()
    except OSError:
        exists = False
    return detect_project(folder) if exists else cwd


def _opencode_directories(data: Path) -> list[str]:
    from ...store.foreign import read_rows  # OpenCode's SQLite: only the store touches database drivers
    from ...core.errors import StoreError

    found: list[str] = []
    for db in data.glob("opencode*.db"):
        try:
            [rows] = read_rows(db, [("SELECT directory FROM session WHERE parent_id IS NULL", ())])
        except StoreError:
            continue
        found += [r[0] for r in rows if isinstance(r[0], str)]
    for doc in (data / "storage" / "session").glob("*/*.json"):
        try:
            value = json.loads(doc.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(value, dict) and not value.get("parentID") and isinstance(value.get("directory"), str):
            found.append(value["directory"])
    return found


def past_sessions(host: str, project_dir: Path, env: Mapping[str, str] | None = None) -> int:
    """How many past sessions of the host belong to the project of project_dir (its git root)."""
    project = project_of(str(project_dir))
    root = store_root(host, env)
    if host == "opencode":
        return sum(project_of(d) == project for d in _opencode_directories(root))
    if host == "claude-code":
        prefix = _NOT_ALNUM.sub("-", project)  # a session started in the project or below it
        files = [p for folder in root.glob(prefix + "*") if folder.is_dir() for p in folder.glob("*.jsonl*")
                 if _is_jsonl(p)]
    elif host == "gemini":
        legacy = hashlib.sha256(project.encode()).hexdigest()  # older versions named the folder by a hash
        files = [p for p in session_files(host, root)
                 if (gemini_cwd(p) and project_of(gemini_cwd(p)) == project) or legacy in p.parts]
        return len(files)
    else:
        files = session_files(host, root)
    return sum(project_of(session_cwd(host, p)) == project for p in files)


def learn_note(host: str, project_dir: Path, env: Mapping[str, str] | None = None) -> str:
    """The line an install ends with: the past sessions of this project found, and the command that learns them."""
    label = LABELS[host]
    try:
        found = past_sessions(host, project_dir, env)
    except OSError as exc:
        return (f"Past {label} sessions could not be counted ({exc.strerror or exc}); "
                f"`vlk-memact learn --host {host}` reads them.")
    if not found:
        return (f"No past {label} sessions of this project were found in {store_root(host, env)}: "
                "nothing to learn yet.")
    noun = "session" if found == 1 else "sessions"
    return (f"Found {found} past {label} {noun} of this project in {store_root(host, env)}: run "
            f"`vlk-memact learn --host {host}` to learn what failed and what fixed it "
            "(install does not learn by itself).")
