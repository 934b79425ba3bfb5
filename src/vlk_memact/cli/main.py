"""The `vlk-memact` command: serve MCP (the default), run the demo, or call one engine method.

Each subcommand parses its arguments, opens Memory, calls one method and prints render.* or results.* output;
VlkError becomes `Error: <message>` on stderr and exit code 1. Logs go to stderr only.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from dataclasses import asdict

from ..config import Settings
from ..core import render, results
from ..core.errors import InvalidInput, VlkError
from ..engine import Memory, fix_memory

log = logging.getLogger("vlk_memact")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vlk-memact",
        description="Temporal memory for AI coding agents. With no command: serve MCP over stdio.",
    )
    parser.add_argument("--database-url", help="overrides DATABASE_URL (sqlite:PATH, sqlite:///ABS, sqlite::memory:, "
                        "postgresql://...)")
    parser.add_argument("--project", help="overrides VLK_PROJECT (default: the git repository of the working directory)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="-v for DEBUG logs on stderr")
    sub = parser.add_subparsers(dest="command")

    serve = sub.add_parser("serve", help="serve the MCP tools (default: stdio)")
    serve.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP: address to bind (default: %(default)s)")
    serve.add_argument("--port", type=int, default=8765, help="HTTP: port (default: %(default)s)")
    serve.add_argument("--tokens-file", help="HTTP: bearer tokens mapped to tenants (overrides VLK_AUTH_TOKENS_FILE)")
    serve.add_argument("--allowed-host", action="append", default=[],
                       help="HTTP: a Host name a reverse proxy forwards (repeatable); loopback is always allowed")

    sub.add_parser("demo", help="run a scripted agent session against a temporary database")

    session = argparse.ArgumentParser(add_help=False)
    session.add_argument("--session", default="default", help="session id (default: %(default)s)")

    record = sub.add_parser("record", parents=[session], help="record a log as a PRESENT slot")
    record.add_argument("raw_log", help="the log text, or - to read it from stdin")
    record.add_argument("--file-context")

    context = sub.add_parser("context", parents=[session], help="run the pipeline and print the active context")
    context.add_argument("--max-tokens", type=int, help="token budget (default VLK_CONTEXT_MAX_TOKENS)")

    history = sub.add_parser("history", parents=[session], help="print the timeline as JSON")
    history.add_argument("--limit", type=int, default=50)
    history.add_argument("--fixes", action="store_true",
                         help="print {\"slots\": [...], \"fixes\": [...]}: the timeline and the session's fixes")

    fixes = sub.add_parser("fixes", help="list what fixed errors (fix memory), newest first")
    fixes.add_argument("--session", help="only the fixes learned in this session")
    fixes.add_argument("--all-projects", action="store_true", help="every project of the tenant")
    fixes.add_argument("--limit", type=int, default=50)
    fixes.add_argument("--json", action="store_true", help="print a JSON array")

    search = sub.add_parser("search", parents=[session], help="search logs, lessons and evidence")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=20)

    sub.add_parser("summary", parents=[session], help="counts per temporal state")

    travel = sub.add_parser("time-travel", parents=[session], help="archive slots and inject a lesson")
    travel.add_argument("ids", type=int, nargs="+", help="PRESENT slot ids")
    travel.add_argument("--learning", required=True)
    travel.add_argument("--evidence", required=True, help="raw_log_excerpt grounding the lesson")
    travel.add_argument("--type", choices=["DERIVED", "PROSPECTIVE"], default="DERIVED")
    travel.add_argument("--scope", choices=["session", "project", "global"])

    export = sub.add_parser("export", help="write the memory as JSON Lines (all of it, or one tenant/project/session)")
    export.add_argument("-o", "--output", help="file to write (default: stdout)")
    export.add_argument("--tenant", help="only this tenant")
    export.add_argument("--only-project", dest="only_project", help="only this project")
    export.add_argument("--only-session", dest="only_session", help="only this session")

    load = sub.add_parser("import", help="load a JSON Lines export into this database (idempotent)")
    load.add_argument("file", help="the export file, or - for stdin")

    maintenance = sub.add_parser("maintenance", help="apply the retention policy to every session")
    maintenance.add_argument("--vacuum", action="store_true", help="also rebuild the file to return free space")

    revoke = sub.add_parser("revoke", parents=[session], help="revoke a FUTURE constraint")
    revoke.add_argument("id", type=int)

    # --- faults (issue 14): diagnosis and online backup, without opening Memory ---
    doctor = sub.add_parser("doctor", help="check the database, the configuration and the host integrations")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    backup = sub.add_parser(
        "backup", help="copy the live SQLite database to FILE, verified (PostgreSQL: use export)",
        description="Copy the live SQLite database to FILE with SQLite's online backup API while servers keep "
        "writing, then verify the copy with integrity_check. For PostgreSQL use `vlk-memact export -o FILE` "
        "(lossless; load it with `vlk-memact import FILE`) or pg_dump.")
    backup.add_argument("file", help="where to write the copy (replaced atomically)")

    from ..hosts.commands import register as register_hosts  # hook, install, uninstall

    register_hosts(sub)

    from .learn import register as register_learn

    register_learn(sub)

    ui = sub.add_parser("ui", help="serve a local web viewer (prints its URL, with a one-time token, on stdout)")
    ui.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    ui.add_argument("--open", action="store_true", help="open the URL in the default browser")
    ui.add_argument("--allow-write", action="store_true", help="offer revoking constraints (otherwise read-only)")
    ui.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    ui.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host (the token stays required)")
    ui.add_argument("--allowed-host", action="append", default=[], help="a further Host name to answer to (repeatable)")
    ui.add_argument("--tenant", default="local", help="the tenant to show (default: %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
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
        logging.basicConfig(
            stream=sys.stderr,
            level=logging.DEBUG if args.verbose else settings.log_level,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
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
            text = _one_call(memory, args)
            if text:
                print(text)
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

    # Under Claude Code the model's calls without session_id join the session its hooks write to.
    memory.default_session = settings.host_session_id
    log.info("vlk-memact serving MCP over stdio; database: %s; project: %s", memory.store.url, memory.project)
    build_server(memory, inline=True).run("stdio")
    return 0


def _one_call(memory: Memory, args: argparse.Namespace) -> str:
    sid = getattr(args, "session", "default")
    if args.command == "record":
        raw = sys.stdin.read() if args.raw_log == "-" else args.raw_log
        return results.record_text(memory.record_state(raw_log=raw, file_context=args.file_context, session_id=sid))
    if args.command == "context":
        return memory.fetch_context(session_id=sid, max_tokens=args.max_tokens).text
    if args.command == "history":
        slots = memory.get_history(limit=args.limit, session_id=sid).slots
        if not args.fixes:
            return results.slots_json(slots)
        found = fix_memory.list_fixes(memory, session=memory._key(sid).session, limit=args.limit)  # noqa: SLF001
        return render.structured_json({"slots": [asdict(s) for s in slots],
                                       "fixes": [fix_memory.fix_json(f) for f in found]})
    if args.command == "fixes":
        if args.limit < 1:
            raise InvalidInput(f"--limit must be at least 1, got {args.limit}")
        found = fix_memory.list_fixes(memory, session=args.session, limit=args.limit, every_project=args.all_projects)
        return (render.structured_json([fix_memory.fix_json(f) for f in found]) if args.json
                else fix_memory.fixes_text(found))
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
    if args.command == "export":
        from ..ops.transfer import export_memory

        def progress(n: int) -> None:
            print(f"exported {n} records...", file=sys.stderr, flush=True)

        if args.output:
            with open(args.output, "w", encoding="utf-8") as out:
                count = export_memory(memory, out, tenant=args.tenant, project=args.only_project,
                                      session=args.only_session, progress=progress)
            return f"Exported {count} records to {args.output}."
        count = export_memory(memory, sys.stdout, tenant=args.tenant, project=args.only_project,
                              session=args.only_session, progress=progress)
        print(f"Exported {count} records.", file=sys.stderr)
        return ""
    if args.command == "import":
        from ..ops.transfer import import_memory

        def progress_in(n: int) -> None:
            print(f"read {n} records...", file=sys.stderr, flush=True)

        try:
            stream = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(f"cannot read {args.file}: {exc.strerror}") from None
        with stream:
            imported = import_memory(memory, stream, progress=progress_in)
        return (f"Imported {imported.inserted} new records ({imported.skipped} already present) "
                f"of {imported.records}.")
    if args.command == "maintenance":
        done = memory.maintenance(vacuum=args.vacuum)
        return (
            f"Pruned {done.slots_deleted} PAST slots and {done.contents_deleted} unreferenced contents "
            f"(policy: PAST slots older than {done.retention_days} days or beyond the newest "
            f"{done.kept_past_per_session} per session)" + (", then vacuumed." if done.vacuumed else ".")
        )
    if args.command == "revoke":
        return results.revoke_text(memory.revoke_future(timeline_id=args.id, session_id=sid))
    raise AssertionError(f"unhandled command {args.command}")  # argparse restricts the choices


__all__ = ["main"]
