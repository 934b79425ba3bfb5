"""What the harnesses of the real host CLIs share: a scripted model server on loopback, a headless run.

Each host speaks its own wire format (tests/scripted_anthropic.py: Anthropic Messages, for Claude Code;
gemini_harness.py: the Gemini API; scripted_openai.py: chat/completions and responses, for OpenCode and
Codex) and starts its own CLI (claude_code_harness.py, codex_harness.py, ...). The plumbing around them is
the same and lives here:
- `LoopbackServer`: an HTTP server on 127.0.0.1 at a port chosen at run time, in a daemon thread;
- `ScriptedServer`: one that answers agent turns from a queued script and records every request;
- `clean_env`, `run_headless`, `json_events`: a CLI run with nothing of the caller's environment;
- `Workspace`, `git_project`, `failing_command`, `requires_cli`: what an end-to-end test of a host uses;
- `Loop`, `run_loop`: the loop session a module runs once and several of its tests read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Generic, Self, TypeVar

import pytest

VLK = str(Path(sys.executable).with_name("vlk-memact"))


# ---------------------------------------------------------------- the model's side


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 (the CLIs keep connections alive), no access log (the test output is the report)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_body(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def read_json(self) -> Any:
        """The request body as JSON, or {} when it is not JSON."""
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}


class LoopbackServer:
    """An HTTP server on 127.0.0.1 (port 0: the kernel picks one) serving `handler()` in a daemon thread."""

    url_path = ""  # what base_url adds after host and port (e.g. "/v1")

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class, bound to this server's state."""
        raise NotImplementedError

    def start(self) -> Any:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name=type(self).__name__, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, f"start the {type(self).__name__} first"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.url_path}"


@dataclass
class RecordedRequest:
    """One request the CLI sent: its path and JSON body. A request that offers tools is an agent turn."""

    path: str
    body: dict[str, Any]

    @property
    def is_agent_turn(self) -> bool:
        return bool(self.body.get("tools"))


RequestT = TypeVar("RequestT", bound=RecordedRequest)
ReplyT = TypeVar("ReplyT")


class ScriptedServer(LoopbackServer, Generic[RequestT, ReplyT]):
    """A loopback model that answers each agent turn (a request offering tools) with the next queued reply,
    `done` once the script is used up, and any other request (a title, a summary) with `side`."""

    def __init__(self, done: ReplyT, side: ReplyT) -> None:
        super().__init__()
        self.script: deque[ReplyT] = deque()
        self.requests: list[RequestT] = []
        self._lock = threading.Lock()
        self._done = done
        self._side = side

    def queue(self, *replies: ReplyT) -> None:
        with self._lock:
            self.script.extend(replies)

    @property
    def agent_requests(self) -> list[RequestT]:
        with self._lock:
            return [r for r in self.requests if r.is_agent_turn]

    def take(self, request: RequestT) -> tuple[ReplyT, int]:
        """Record `request`; its reply, and its position among all requests (1-based, for ids)."""
        with self._lock:
            self.requests.append(request)
            if not request.is_agent_turn:
                return self._side, len(self.requests)
            return (self.script.popleft() if self.script else self._done), len(self.requests)


# ---------------------------------------------------------------- the CLI's side


def clean_env(home: Path, extra: Mapping[str, str] | None = None, **host: str) -> dict[str, str]:
    """A CLI's environment: PATH, a temporary HOME, plain output, the host's own variables, then `extra`."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        **host,
    }
    env.update(extra or {})
    return env


def run_headless(command: list[str], *, cwd: Path, env: Mapping[str, str],
                 timeout: float) -> subprocess.CompletedProcess[str]:
    """One headless CLI run: no stdin (a CLI that asks would hang), its output captured as text."""
    return subprocess.run(command, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def json_events(result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """The JSON objects a CLI printed one a line (other lines skipped)."""
    out = []
    for line in result.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


# ---------------------------------------------------------------- an end-to-end test module


def requires_cli(missing_cli: Callable[[], str | None]) -> Any:
    """A module-wide autouse fixture: skip without the pinned CLI on a dev machine, fail when CI is set."""

    @pytest.fixture(scope="module", autouse=True)
    def _cli_present() -> None:
        require_cli(missing_cli())

    return _cli_present


def require_cli(problem: str | None) -> None:
    """Skip the test for `problem` (a pinned CLI is missing) on a dev machine; fail it when CI is set."""
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem + " (CI is set, so this fails instead of skipping)")
        pytest.skip(problem)


def failing_command(marker: Path) -> str:
    """A shell command that appends a line to `marker` each time it really runs, then fails the same way."""
    return f"echo ran >> {marker}; ls /nonexistent-vlk-e2e-dir"


def git_project(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


@dataclass
class Workspace(Generic[RequestT, ReplyT]):
    """One host's temporary HOME and git project, the vlk-memact database, and the scripted model.

    `run_cli(prompt, *, home, cwd, env, [args])` is the host harness's run (run_codex, run_opencode, ...);
    `vlk_env` is what `vlk-memact` needs, besides HOME and DATABASE_URL, to find the host's files.
    """

    host: str
    home: Path
    project: Path
    database: Path
    api: ScriptedServer[RequestT, ReplyT]
    run_cli: Callable[..., subprocess.CompletedProcess[str]]
    vlk_env: Mapping[str, str] = field(default_factory=dict)
    last: list[RequestT] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"sqlite:///{self.database}"

    def run(self, prompt: str, *replies: ReplyT, cwd: Path | None = None, args: Iterable[str] | None = None,
            **env: str) -> subprocess.CompletedProcess[str]:
        """One CLI session answered by `replies`; `last` holds its agent turns. `args=None`: the run's default."""
        before = len(self.api.requests)
        self.api.queue(*replies)
        extra = {} if args is None else {"args": tuple(args)}
        result = self.run_cli(prompt, home=self.home, cwd=cwd or self.project,
                              env={"DATABASE_URL": self.url, **env}, **extra)
        assert result.returncode == 0, f"{self.host} exited {result.returncode}\n{result.stderr[-3000:]}"
        self.last = [r for r in self.api.requests[before:] if r.is_agent_turn]
        self.api.script.clear()  # what the session did not ask for must not answer the next one
        return result

    def installed(self) -> Self:
        """This workspace after `vlk-memact install HOST` succeeded in it."""
        done = self.vlk("install", self.host)
        assert done.returncode == 0, done.stderr
        return self

    def vlk(self, *args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        """`vlk-memact ARGS` as the user would run it in this workspace."""
        full = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.home), "DATABASE_URL": self.url,
                **self.vlk_env, **env}
        return subprocess.run([VLK, *args], env=full, capture_output=True, text=True, timeout=120,
                              cwd=cwd or self.project)


@dataclass
class Loop:
    """Three identical failures and an unchanged fourth call (then `extra` replies) in one session, as observed
    right after it: a module-scoped fixture runs it once, and the tests read it (the loop test) or go on from it
    (a new session of the same project starts with its lesson)."""

    ws: Workspace
    root: Path
    turns: list[Any]
    history: list[dict[str, Any]]  # `vlk-memact history` of the session, when the host names it
    runs: str  # the marker file: one line per real run of the command


def run_loop(ws: Workspace, root: Path, shell: Callable[[str], Any], text: Any, *extra: Any,
             session_id: Callable[[subprocess.CompletedProcess[str]], str | None] | None = None) -> Loop:
    """The loop session in `ws` (`shell(command)` is the host's shell call, `text` the closing reply)."""
    marker = root / "runs.txt"
    cmd = failing_command(marker)
    result = ws.run("build it", shell(cmd), shell(cmd), shell(cmd), shell(cmd), *extra, text)
    history = [] if session_id is None else json.loads(
        ws.vlk("history", "--limit", "50", "--session", session_id(result) or "").stdout)
    return Loop(ws, root, ws.last, history, marker.read_text(encoding="utf-8"))
