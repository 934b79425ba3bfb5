"""The `vlk-memact` command: serve MCP (the default), run the demo, or call one engine method.

Each subcommand parses its arguments (cli/parser.py), opens Memory, calls one method and prints render.* or
results.* output on stdout; which session a command used when none was named, logs and errors go to stderr
(`Error: <message>`, exit code 1). A reader that closes the pipe early (`vlk-memact export | head`) ends the
command quietly, as it ends `git log | head`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict

from ..config import Settings
from ..core import render, results
from ..core.errors import InvalidInput, VlkError
from ..engine import Memory, fix_memory
from . import sessions as session_choice
from .parser import build_parser

log = logging.getLogger("vlk_memact")
_parser = build_parser  # the name tests and docs checks use
SERVERS = (None, "serve", "ui")
STDIO_HINT = ("vlk-memact: serving MCP over stdio, waiting for an MCP host on stdin (Ctrl-C to stop). Connect a host "
              "with `vlk-memact install HOST`, or try `vlk-memact demo` or `vlk-memact --help`.")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except KeyboardInterrupt:
        return 130


def _quiet_stdout() -> None:
    """The reader of stdout went away: nothing more can be said there, and Python's own flush at exit must not
    print a traceback either (the Python documentation's recipe for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _log_level(args: argparse.Namespace, settings: Settings) -> int | str:
    verbose = getattr(args, "verbose", 0) or 0
    if verbose:
        return logging.DEBUG if verbose > 1 or args.command in SERVERS else logging.INFO
    return settings.logging_level(server=args.command in SERVERS)


def _run(args: argparse.Namespace) -> int:
    if args.command in ("hook", "install", "uninstall"):
        from ..hosts.commands import run as run_host_command

        try:
            return run_host_command(args)  # a hook never fails: runner.run always returns 0
        except VlkError as exc:
            print(f"Error: {exc}", file=sys.stderr)
            return 1
    if args.command == "doctor":  # before the settings are read: a bad one is one of its checks
        from ..ops import commands as ops_commands

        return ops_commands.doctor(args)
    try:
        settings = Settings.from_env()
        logging.basicConfig(stream=sys.stderr, level=_log_level(args, settings),
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        if args.command == "demo":
            from .demo import run_demo

            return run_demo()
        if args.command == "backup":
            from ..ops import commands as ops_commands

            return ops_commands.backup(args, settings)
        if args.command == "learn":
            from .learn import run as run_learn

            return run_learn(args, settings)
        with Memory(args.database_url, settings=settings, project=args.project) as memory:
            if args.command in (None, "serve"):
                return _serve(memory, args, settings)
            if args.command == "ui":
                from ..viewer import serve_ui

                serve_ui(memory.for_tenant(args.tenant), host=args.host, port=args.port, allow_write=args.allow_write,
                         allow_remote=args.allow_remote, extra_hosts=tuple(args.allowed_host), open_browser=args.open)
                return 0
            text = _one_call(memory, args, settings)
            if text:
                print(text)
                sys.stdout.flush()  # a closed pipe is met here, inside the BrokenPipeError handler's reach
        return 0
    except VlkError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1


def _serve(memory: Memory, args: argparse.Namespace, settings: Settings) -> int:
    if getattr(args, "transport", "stdio") == "streamable-http":
        from ..server.transports import load_tokens, serve_http

        tokens = load_tokens(args.tokens_file or settings.auth_tokens_file, settings.auth_tokens)
        serve_http(memory, tokens, args.host, args.port, args.allowed_host)
        return 0
    from ..server import build_server
    from ..server.stdio_pipes import serve_stdio

    # Under Claude Code the model's calls without session_id join the session its hooks write to.
    memory.default_session = settings.host_session_id
    log.info("vlk-memact serving MCP over stdio; database: %s; project: %s", memory.database_url, memory.project)
    if sys.stdin.isatty() and sys.stderr.isatty():  # a person ran it by hand: say what it is waiting for
        print(STDIO_HINT, file=sys.stderr, flush=True)
    serve_stdio(build_server(memory, inline=True))
    return 0


def _one_call(memory: Memory, args: argparse.Namespace, settings: Settings) -> str:
    if args.command == "sessions":
        return session_choice.sessions_text(memory, args)
    if args.command == "fixes":
        if args.limit < 1:
            raise InvalidInput(f"--limit must be at least 1, got {args.limit}")
        found = fix_memory.list_fixes(memory, session=args.session, limit=args.limit, every_project=args.all_projects)
        return (render.structured_json([fix_memory.fix_json(f) for f in found]) if args.json
                else fix_memory.fixes_text(found))
    if args.command == "search" and not args.session:
        return results.slots_json(memory.search_sessions(query=args.query, limit=args.limit,
                                                         every_project=args.all).slots)
    if args.command == "history" and args.all:
        return results.slots_json(memory.recent_history(limit=args.limit, every_project=True).slots)
    if args.command == "summary" and args.all:
        return session_choice.total_text(memory)
    if args.command == "impact":
        from .impact import run as run_impact

        return run_impact(memory, args)
    if args.command in ("export", "import", "maintenance"):
        from .transfer import run_transfer

        return run_transfer(memory, args)
    return _session_call(memory, args, session_choice.session_for(memory, args, settings))


def _session_call(memory: Memory, args: argparse.Namespace, sid: str) -> str:
    """The commands of one session."""
    if args.command == "record":
        raw = sys.stdin.read() if args.raw_log == "-" else args.raw_log
        return results.record_text(memory.record_state(raw_log=raw, file_context=args.file_context, session_id=sid))
    if args.command == "context":
        return memory.fetch_context(session_id=sid, max_tokens=args.max_tokens).text
    if args.command == "history":
        slots = memory.get_history(limit=args.limit, session_id=sid).slots
        if not args.fixes:
            return results.slots_json(slots)
        found = fix_memory.list_fixes(memory, session=memory.session_key(sid).session, limit=args.limit)  # noqa: SLF001
        return render.structured_json({"slots": [asdict(s) for s in slots],
                                       "fixes": [fix_memory.fix_json(f) for f in found]})
    if args.command == "search":
        return results.slots_json(memory.search_memory(query=args.query, limit=args.limit, session_id=sid).slots)
    if args.command == "summary":
        return results.summary_text(memory.summarize_session(session_id=sid))
    if args.command == "time-travel":
        return results.time_travel_text(
            memory.time_travel(
                target_timeline_ids=args.ids,
                learning=args.learning,
                raw_log_excerpt=args.evidence,
                constraint_type=args.type,
                session_id=sid,
                scope=args.scope,
            )
        )
    if args.command == "revoke":
        return results.revoke_text(memory.revoke_future(timeline_id=args.id, session_id=sid))
    raise AssertionError(f"unhandled command {args.command}")  # argparse restricts the choices


__all__ = ["main"]
