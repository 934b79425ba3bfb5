"""`vlk-memact hook gemini`: process latency per event, and what the hooks cost and save in a real session.

    .venv/bin/python bench/hooks_gemini.py            # 10^3 and 10^5 stored slots, then the CLI scenario
    .venv/bin/python bench/hooks_gemini.py --quick    # 10^3 only, few iterations, no CLI scenario

1. Latency. Each sample is one hook process, started as Gemini CLI starts it (the installed command,
   the event on stdin), timed from spawn to exit, on a copy of a database built by bench/perf.py
   (real agent failures, mostly archived, many sessions and projects). Side by side in the same run:
   the floor `python3 -c pass` and a no-op hook (Python that reads and parses the event), as ratios.
   Events: BeforeTool of a call that never failed (the common case) and of a looping call (denied),
   AfterTool of a new failure (record + pipeline) and of a success, SessionStart of a new session,
   BeforeAgent. Targets (issue 11, for Claude Code's equivalents): tool events median <= 60 ms and
   p95 <= 150 ms at 10^5 slots, SessionStart p95 <= 300 ms.
2. The scenario with the real CLI (tests/gemini-cli) and the scripted model: a command fails three
   times and the model tries it a fourth time; without vlk-memact, with the hooks only, and with the
   hooks and the MCP server (whose instructions Gemini CLI puts in every request). Reported: how often
   the command ran, the characters vlk-memact injected, and the tokens (ceil(chars / 3.8), the
   project's estimator) of the conversation in every request the model received.

Figures go to bench/results/hooks-gemini.json and .md (hooks-gemini-quick.* with --quick). The machine
is shared: figures measured under other people's load are noisy, and the report says so.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from harness import hook_latency  # noqa: E402
from harness.database import ACTIVE_SESSION  # noqa: E402
from harness.hook_latency import FLOOR, LOOP_TEXT, NOOP, NOOP_CASE, VLK, hook_env, timed  # noqa: E402
from harness.log import speaker  # noqa: E402

FIXTURES = ROOT / "tests" / "data" / "gemini-hooks"
HOOK = [VLK, "hook", "gemini"]
say = speaker("hooks-gemini")


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


class Events:
    """Payloads shaped like the recorded ones, each a new call (fresh timestamp, session or command)."""

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.n = 0

    def _base(self, name: str, **changes: Any) -> dict[str, Any]:
        self.n += 1
        payload = fixture(name)
        payload.update(cwd=self.cwd, session_id=ACTIVE_SESSION, timestamp=f"2026-12-01T00:00:{self.n:08d}Z")
        payload.update(changes)
        return payload

    def before_new(self) -> dict[str, Any]:
        return self._base("BeforeTool-run_shell_command-failure", tool_input={"command": f"make target-{self.n}"})

    def before_looping(self) -> dict[str, Any]:
        return self._base("BeforeTool-run_shell_command-failure", tool_input={"command": "npm test"})

    def after_failure(self, text: str) -> dict[str, Any]:
        body = f"<untrusted_context>\nOutput: {text}\nExit Code: 1\nProcess Group PGID: 4242\n</untrusted_context>"
        return self._base("AfterTool-run_shell_command-failure", tool_input={"command": f"pytest -k case{self.n}"},
                          tool_response={"llmContent": body, "returnDisplay": text})

    def after_success(self) -> dict[str, Any]:
        return self._base("AfterTool-run_shell_command-success", tool_input={"command": f"echo ok {self.n}"})

    def session_start(self) -> dict[str, Any]:
        return self._base("SessionStart-startup", session_id=f"bench-new-{self.n}")

    def before_agent(self) -> dict[str, Any]:
        return self._base("BeforeAgent")


def latency(db: Path, iterations: int, pool: list[Any], rng: Any) -> dict[str, Any]:
    env = hook_env(db)
    events = Events(cwd=str(db.parent))
    # The looping call: three identical failures first, so BeforeTool meets an active anchor (and denies).
    for _ in range(3):
        timed(HOOK, json.dumps(events.after_failure(LOOP_TEXT) | {"tool_input": {"command": "npm test"}}), env)
    _, said = timed(HOOK, json.dumps(events.before_looping()), env)
    assert '"deny"' in said, f"the looping call was not denied: {said!r}"
    return hook_latency.sample({
        "floor: python3 -c pass": lambda: (FLOOR, ""),
        NOOP_CASE: lambda: (NOOP, json.dumps(events.before_new())),
        "BeforeTool (never failed)": lambda: (HOOK, json.dumps(events.before_new())),
        "BeforeTool (looping: denied)": lambda: (HOOK, json.dumps(events.before_looping())),
        "AfterTool (new failure)": lambda: (HOOK, json.dumps(events.after_failure(rng.choice(pool).text[:1500]))),
        "AfterTool (success)": lambda: (HOOK, json.dumps(events.after_success())),
        "SessionStart (new session)": lambda: (HOOK, json.dumps(events.session_start())),
        "BeforeAgent": lambda: (HOOK, json.dumps(events.before_agent())),
    }, iterations, env)


def injected_texts(request: Any) -> list[str]:
    """What vlk-memact put in this request: `<hook_context>` blocks, and the reasons of denied calls."""
    found: list[str] = []
    for part in request.parts():
        strings = [part.get("text")]
        response = part.get("functionResponse", {}).get("response", {})
        strings += [response.get("output"), response.get("error")]
        for value in strings:
            if not isinstance(value, str):
                continue
            found += re.findall(r"<hook_context>(vlk-memact:.*?)</hook_context>", value, re.DOTALL)
            if value.startswith("Tool execution blocked: vlk-memact:"):
                found.append(value.removeprefix("Tool execution blocked: "))
    return found


def cli_scenario() -> dict[str, Any]:
    """Scenario (a) with the real Gemini CLI, with and without the hooks."""
    from gemini_harness import ScriptedGemini, missing_cli, run_gemini, shell, text, write_settings

    problem = missing_cli()
    if problem:
        return {"skipped": problem}
    out: dict[str, Any] = {}
    variants = (("no vlk-memact", None), ("hooks only (install --no-mcp)", ["--no-mcp"]),
                ("hooks and MCP server (install)", []))
    for label, install_args in variants:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            home, project = work / "home", work / "project"
            write_settings(home)
            project.mkdir()
            subprocess.run(["git", "init", "-q", str(project)], check=True)
            env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "DATABASE_URL": f"sqlite:///{work}/v.db"}
            if install_args is not None:
                subprocess.run([*HOOK[:1], "install", "gemini", *install_args], env=env, check=True,
                               capture_output=True, cwd=project)
            marker = work / "runs.txt"
            command = f"echo ran >> {marker}; npm test 2>&1 | head -3; ls /srv/missing-module-express"
            with ScriptedGemini() as api:
                api.queue(*(shell(command) for _ in range(4)), text("stopped."))
                started = time.perf_counter()
                run = run_gemini("run the tests", home=home, cwd=project, base_url=api.base_url,
                                 env={"DATABASE_URL": env["DATABASE_URL"]})
                wall = time.perf_counter() - started
                if run.returncode != 0:
                    raise RuntimeError(run.stderr[-2000:])
                turns = api.agent_requests
            injected = injected_texts(turns[-1]) if turns else []
            request_chars = [len(json.dumps(r.body.get("contents", []), ensure_ascii=False)) for r in turns]
            out[label] = {
                "model_requests": len(turns),
                "command_runs": marker.read_text().count("ran") if marker.exists() else 0,
                "injected_chars": sum(len(m) for m in injected),
                "injected_texts": len(injected),
                "request_tokens_total": sum(math.ceil(c / 3.8) for c in request_chars),
                "last_request_tokens": math.ceil(request_chars[-1] / 3.8),
                "wall_seconds": round(wall, 2),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = hook_latency.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--sections", default="latency,cli", help="latency, cli or both (default)")
    args = parser.parse_args(argv)
    sections = set(args.sections.split(","))
    report = hook_latency.measure(args, "python bench/hooks_gemini.py" + (" --quick" if args.quick else ""),
                                  "gemini", latency, say, measured="latency" in sections)
    if not args.quick and "cli" in sections:
        say("the scenario with the real Gemini CLI ...")
        report["cli_scenario"] = cli_scenario()
    name = "hooks-gemini-quick" if args.quick else "hooks-gemini"
    if sections != {"latency", "cli"}:
        name += "-" + "-".join(sorted(sections))
    hook_latency.write_report(name, report, markdown)
    return 0


def markdown(report: dict[str, Any]) -> str:
    lines = hook_latency.latency_lines(report, "vlk-memact hook gemini", "SessionStart")
    scenario = report.get("cli_scenario")
    if scenario and "skipped" not in scenario:
        lines += ["", "## A command failing three times, then tried a fourth time (real Gemini CLI, scripted model)", "",
                  "| | model requests | command runs | vlk-memact texts in the last request | their characters | "
                  "conversation tokens, all requests | last request | wall s |", "| --- |" + " --- |" * 7]
        for label, row in scenario.items():
            lines.append(f"| {label} | {row['model_requests']} | {row['command_runs']} | {row['injected_texts']} | "
                         f"{row['injected_chars']} | {row['request_tokens_total']} | {row['last_request_tokens']} | "
                         f"{row['wall_seconds']} |")
    elif scenario:
        lines += ["", f"CLI scenario skipped: {scenario['skipped']}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
