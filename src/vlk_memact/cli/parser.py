"""The `vlk-memact` argument parser: every subcommand, its options and their help.

The global options (--database-url, --project, -v) belong to every subcommand as much as to the program:
`vlk-memact doctor --database-url URL` and `vlk-memact --database-url URL doctor` are the same command. A
subcommand gets them from the parser's own add_parser (GlobalSubcommands), so one added later (by
hosts/commands.register or anyone else) takes them, and shows them in its --help, without a line of its own.
"""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version
from typing import Any

PROGRAM = "vlk-memact"
READ_NOTE = ("Without --session: the session the host runs this from (CLAUDE_CODE_SESSION_ID or VLK_HOST_SESSION_ID), "
             "else the current project's latest session (`vlk-memact sessions` lists them); which one is said on "
             "stderr. The project is the git repository of the working directory (or --project / VLK_PROJECT).")


def package_version() -> str:
    """The installed distribution's version (0.0.0 from a bare source tree)."""
    try:
        return version("vlk-memact")
    except PackageNotFoundError:
        return "0.0.0"


def _global_options(subcommand: bool) -> argparse.ArgumentParser:
    """The options every command takes. On a subcommand they default to SUPPRESS, so that a value given
    before the subcommand's name is not replaced by the subcommand's default."""
    holder = argparse.ArgumentParser(add_help=False)
    group = holder.add_argument_group("global options (before or after the command)")
    unset: dict[str, Any] = {"default": argparse.SUPPRESS} if subcommand else {}
    group.add_argument("--database-url", metavar="URL", **unset,
                       help="the database (overrides DATABASE_URL): sqlite:PATH, sqlite:///ABS/PATH, sqlite::memory: "
                       "or postgresql://USER@HOST/DB; default: vlk.db in your user data directory")
    group.add_argument("--project", metavar="NAME", **unset,
                       help="the project (overrides VLK_PROJECT); default: the git repository of the working "
                       "directory, as the hooks use")
    group.add_argument("-v", "--verbose", action="count", **({"default": argparse.SUPPRESS} if subcommand else
                                                            {"default": 0}),
                       help="log more on stderr: -v INFO, -vv DEBUG (default: warnings only; the server: INFO)")
    return holder


class GlobalSubcommands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """add_subparsers' action: each subcommand it adds takes the global options too."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        # global_options=False: a command that takes its settings from the environment alone (`hook`: the host
        # runs it, with the environment `install` wrote)
        if kwargs.pop("global_options", True):
            kwargs["parents"] = [*kwargs.get("parents", []), _global_options(subcommand=True)]
        if "help" in kwargs and "description" not in kwargs:
            kwargs["description"] = kwargs["help"][:1].upper() + kwargs["help"][1:] + "."
        return super().add_parser(name, **kwargs)  # type: ignore[no-any-return]


def _session_options(every: str | None) -> argparse.ArgumentParser:
    """--session (and --all, saying what it covers) of the commands that read or write one session."""
    holder = argparse.ArgumentParser(add_help=False)
    holder.add_argument("--session", metavar="ID",
                        help="the session (default: the host's, else the project's latest; see below)")
    if every:
        holder.add_argument("--all", action="store_true", help=every)
    return holder


def build_parser() -> argparse.ArgumentParser:
    """The whole command line."""
    parser = argparse.ArgumentParser(
        prog=PROGRAM, parents=[_global_options(subcommand=False)],
        description="Temporal memory for AI coding agents. With no command: serve MCP over stdio (what an MCP host "
        "starts; `vlk-memact demo` shows what it does).",
        epilog="`vlk-memact COMMAND --help` for a command's options. Documentation: docs/cli.md.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    parser.register("action", "parsers", GlobalSubcommands)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser("serve", help="serve the MCP tools (what an MCP host starts; the default command)")
    serve.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio",
                       help="stdio: the host starts this process and talks over stdin/stdout; streamable-http: "
                       "a long-running HTTP server several agents share (default: %(default)s)")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP: address to bind (default: %(default)s)")
    serve.add_argument("--port", type=int, default=8765, help="HTTP: port (default: %(default)s)")
    serve.add_argument("--tokens-file", help="HTTP: bearer tokens mapped to tenants (overrides VLK_AUTH_TOKENS_FILE)")
    serve.add_argument("--allowed-host", action="append", default=[],
                       help="HTTP: a Host name a reverse proxy forwards (repeatable); loopback is always allowed")

    sub.add_parser("demo", help="play a scripted agent session against a temporary database")

    sessions = sub.add_parser("sessions", help="list the project's sessions, newest first: host, start, counts",
                              epilog="The project is the git repository of the working directory (--project, "
                              "VLK_PROJECT). HOST is the agent host whose hooks wrote the session (- when none did: "
                              "the MCP tools or this command line).")
    sessions.add_argument("--all", action="store_true", help="every project's sessions")
    sessions.add_argument("--limit", type=int, default=20, help="at most this many (default: %(default)s)")
    sessions.add_argument("--json", action="store_true", help="print a JSON array")

    plain = _session_options(None)
    record = sub.add_parser("record", parents=[plain], help="record a log as a PRESENT slot", epilog=READ_NOTE)
    record.add_argument("raw_log", help="the log text, or - to read it from stdin")
    record.add_argument("--file-context", metavar="PATH",
                        help="the file or directory the error is about (shown beside the log)")

    context = sub.add_parser("context", parents=[plain], help="run the pipeline and print the session's context",
                             epilog=READ_NOTE)
    context.add_argument("--max-tokens", type=int, help="token budget (default: VLK_CONTEXT_MAX_TOKENS, 4000)")

    every = "every session of every project, newest first"
    history = sub.add_parser("history", parents=[_session_options(every)], help="print the timeline as JSON",
                             epilog=READ_NOTE)
    history.add_argument("--limit", type=int, default=50, help="at most this many slots (default: %(default)s)")
    history.add_argument("--fixes", action="store_true",
                         help="print {\"slots\": [...], \"fixes\": [...]}: the timeline and the session's fixes")

    fixes = sub.add_parser("fixes", help="list what fixed errors (fix memory), newest first")
    fixes.add_argument("--session", metavar="ID", help="only the fixes learned in this session")
    fixes.add_argument("--all", "--all-projects", dest="all_projects", action="store_true",
                       help="every project of the tenant")
    fixes.add_argument("--limit", type=int, default=50, help="at most this many (default: %(default)s)")
    fixes.add_argument("--json", action="store_true", help="print a JSON array")

    search = sub.add_parser("search", parents=[_session_options("every project")],
                            help="search logs, lessons and evidence (every session of the project)",
                            epilog="Literal and case-insensitive. Without --session: every session of the current "
                            "project, newest first.")
    search.add_argument("query", help="the text to find (literal, case-insensitive)")
    search.add_argument("--limit", type=int, default=20, help="at most this many slots (default: %(default)s)")

    sub.add_parser("summary", parents=[_session_options("every session of every project, added up")],
                   help="counts per temporal state", epilog=READ_NOTE)

    travel = sub.add_parser("time-travel", parents=[plain], help="archive slots and inject a lesson",
                            epilog=READ_NOTE)
    travel.add_argument("ids", type=int, nargs="+", help="PRESENT slot ids (the [id:N] tags of `context`)")
    travel.add_argument("--learning", required=True, metavar="TEXT",
                        help="the lesson, as the model should read it next time")
    travel.add_argument("--evidence", required=True, metavar="TEXT",
                        help="an excerpt of the log that grounds the lesson")
    travel.add_argument("--type", choices=["DERIVED", "PROSPECTIVE"], default="DERIVED",
                        help="DERIVED: learned from what happened; PROSPECTIVE: a rule for what comes next "
                        "(default: %(default)s)")
    travel.add_argument("--scope", choices=["session", "project", "global"],
                        help="who sees the lesson: this session, every session of the project, or every project "
                        "(default: project)")

    export = sub.add_parser("export", help="write the memory as JSON Lines (all of it, or one tenant/project/session)")
    export.add_argument("-o", "--output", help="file to write (default: stdout)")
    export.add_argument("--tenant", help="only this tenant")
    export.add_argument("--only-project", dest="only_project", help="only this project")
    export.add_argument("--only-session", dest="only_session", help="only this session")

    load = sub.add_parser("import", help="load a JSON Lines export into this database (idempotent)")
    load.add_argument("file", help="the export file, or - for stdin")

    maintenance = sub.add_parser("maintenance", help="apply the retention policy to every session")
    maintenance.add_argument("--vacuum", action="store_true", help="also rebuild the file to return free space")

    revoke = sub.add_parser("revoke", parents=[plain], help="revoke a FUTURE constraint", epilog=READ_NOTE)
    revoke.add_argument("id", type=int, help="the constraint's id (its [id:N] tag in `context`)")

    # --- faults (issue 14): diagnosis and online backup, without opening Memory ---
    doctor = sub.add_parser("doctor", help="check the database, the configuration and every installed host")
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

    from .impact import register as register_impact

    register_impact(sub)

    ui = sub.add_parser("ui", help="serve a local web viewer (prints its URL, with a one-time token, on stdout)")
    ui.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    ui.add_argument("--open", action="store_true", help="open the URL in the default browser")
    ui.add_argument("--allow-write", action="store_true", help="offer revoking constraints (otherwise read-only)")
    ui.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    ui.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host (the token stays required)")
    ui.add_argument("--allowed-host", action="append", default=[], help="a further Host name to answer to (repeatable)")
    ui.add_argument("--tenant", default="local", help="the tenant to show (default: %(default)s)")
    return parser
