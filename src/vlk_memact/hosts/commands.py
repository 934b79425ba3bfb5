"""The `hook`, `install` and `uninstall` subcommands (registered by cli/main.py in a few lines)."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # the hook path imports this module: no typing, no pathlib at start-up
if TYPE_CHECKING:
    import argparse
    from typing import Any

# Host name -> the module with its HOST, handle(event, memory) and STORE_ONLY_EVENTS (a new host adds a line).
HANDLERS = {"claude-code": "vlk_memact.hosts.claude_code.adapter", "gemini": "vlk_memact.hosts.gemini.adapter",
            "opencode": "vlk_memact.hosts.opencode.adapter", "codex": "vlk_memact.hosts.codex.adapter"}
# Hosts whose install and uninstall live in a module of their own (run_command(args)).
INSTALLERS = {"gemini": "vlk_memact.hosts.gemini.install", "opencode": "vlk_memact.hosts.opencode.install",
              "codex": "vlk_memact.hosts.codex.install"}
HOSTS = tuple(HANDLERS)


def host_module(host: str) -> Any:
    """The adapter module of a host named in HANDLERS."""
    from importlib import import_module

    return import_module(HANDLERS[host])


def register(sub: Any) -> None:
    """Add the three subcommands to the vlk-memact parser."""
    import argparse

    hook = sub.add_parser(
        "hook", help="answer one host hook event read from stdin (what `install` sets up)",
        description="Answer one hook event of HOST: read its JSON from stdin, print the answer for the host on "
        "stdout (or nothing). The host runs this on every tool call once `vlk-memact install HOST` has set it up; "
        "you do not run it yourself. It always exits 0, and says what went wrong (if anything) on stderr and in "
        "hooks.log in the user data directory. Its settings come from the environment (DATABASE_URL, VLK_*).",
        global_options=False)
    hook.add_argument("host", choices=HOSTS, help="the host whose event this is")
    hook.add_argument("--from-plugin", action="store_true", help=argparse.SUPPRESS)

    install = sub.add_parser(
        "install", help="install the hooks and the MCP server entry into a host's settings",
        epilog="A project install (--scope project, Claude Code's local, OpenCode's default) writes into the root of "
        "the git repository of the working directory; outside any repository into the working directory, with a "
        "warning; never into your home folder. A file that exists is backed up first into backups/HOST/ in the "
        "user data directory (beside the default database), under a name no later backup takes. Run again, it "
        "changes nothing; `vlk-memact uninstall HOST` removes what it wrote, and a file it created.")
    install.add_argument("host", choices=HOSTS, help="the agent host to install into")
    install.add_argument("--scope", choices=["local", "project", "user"],
                         help="local: .claude/settings.local.json (default); project: .claude/settings.json and "
                         ".mcp.json; user: ~/.claude/settings.json. Gemini CLI: user (default, "
                         "~/.gemini/settings.json) or project (.gemini/settings.json). OpenCode: project (default, "
                         ".opencode/plugins/) or user (~/.config/opencode/plugins/). Codex: user only "
                         "($CODEX_HOME/hooks.json)")
    install.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    install.add_argument("--no-mcp", action="store_true", help="hooks only, no MCP server entry")
    install.add_argument("--trust", action="store_true",
                         help="Codex: also trust the installed hooks (Codex's own hashes, from `codex app-server`)")

    uninstall = sub.add_parser("uninstall", help="remove exactly what install added")
    uninstall.add_argument("host", choices=HOSTS, help="the agent host to remove vlk-memact from")
    uninstall.add_argument("--scope", choices=["local", "project", "user"], help="only this scope (default: all)")
    uninstall.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")


def run(args: argparse.Namespace) -> int:
    """Run one of the three subcommands; InvalidInput propagates to the CLI's `Error:` line."""
    if args.command == "hook":
        return _hook(args)
    from .shared import install_files

    if args.command == "install" and not getattr(args, "trust", False):  # --trust says it itself, as an error
        note = install_files.missing_program(args.host)
        if note:
            print(f"note: {note}", file=sys.stderr)
    status = _install_or_uninstall(args)
    if args.command == "install" and status == 0 and not getattr(args, "dry_run", False):
        print_learn_note(args.host)  # after the status line: what to do next
    return status


def print_learn_note(host: str) -> None:
    """An install ends by saying how many past sessions of this project the host kept, and how to learn them."""
    from pathlib import Path

    from .shared.session_stores import learn_note

    try:
        note = learn_note(host, Path.cwd().resolve())
    except Exception as exc:  # noqa: BLE001 - counting past sessions must never fail an install that worked
        note = (f"Past sessions could not be counted ({type(exc).__name__}); "
                f"`vlk-memact learn --host {host}` reads them.")
    print(note)


def _install_or_uninstall(args: argparse.Namespace) -> int:
    if args.host in INSTALLERS:
        from importlib import import_module

        return int(import_module(INSTALLERS[args.host]).run_command(args))
    return _claude_code(args)


def _claude_code(args: argparse.Namespace) -> int:
    """install|uninstall claude-code: plan every file's change, then write them (or, in a dry run, say them)."""
    from pathlib import Path

    from ..core.errors import InvalidInput
    from .claude_code import install
    from .shared import install_files

    home = install.home_dir()
    scopes = (args.scope or install.DEFAULT_SCOPE,) if args.command == "install" else (
        (args.scope,) if args.scope else install.SCOPES)
    project_dir = Path.cwd().resolve()
    if any(s != "user" for s in scopes):
        try:
            project_dir = install_files.project_folder(home=home, quiet=args.command == "uninstall")
        except InvalidInput:
            if args.command == "install" or args.scope:
                raise
            scopes = ("user",)  # uninstall from the home folder: the user's files alone
    if args.command == "install":
        changes = install.plan_install(scopes[0], project_dir, home, with_server=not args.no_mcp)
        looked_at = [install.settings_path(scopes[0], project_dir, home), install.mcp_path(scopes[0], project_dir, home)]
    else:
        changes = install.plan_uninstall(scopes, project_dir, home)
        looked_at = [install.settings_path(s, project_dir, home) for s in scopes]
    if args.dry_run:
        reports = [install.report_of(c, dry_run=True) for c in changes]
    else:
        reports = install.apply(changes, roots=(project_dir, home))
    if not reports:
        reports = [install_files.FileReport(p) for p in dict.fromkeys(looked_at) if p.exists()]
    note = install_files.path_note(scopes[0]) if args.command == "install" else None
    if note and reports:
        reports[0].notes.append(note)
    install_files.print_reports(install.HOST, args.command, reports, args.dry_run)
    return 0


def plugin_doubled(event: dict[str, Any]) -> str | None:
    """The plugin's copy of the hook stays silent when settings hooks are installed too (Claude Code would
    run both, and every failure would be recorded twice)."""
    from pathlib import Path

    from .claude_code import install
    from .shared import install_files

    cwd = event.get("cwd")
    here = (Path(cwd) if isinstance(cwd, str) and cwd else Path.cwd()).resolve()
    if install.hook_installations(install_files.git_root(here) or here, install.home_dir()):
        return ("vlk-memact is installed twice (the plugin and settings hooks); the plugin's copy did nothing. "
                "Keep one: `vlk-memact uninstall claude-code`, or remove the plugin.")
    return None


def _hook(args: argparse.Namespace) -> int:  # `vlk-memact hook` reached through cli.main
    return hook_main([args.host, *(["--from-plugin"] if args.from_plugin else [])])


def hook_main(argv: list[str]) -> int:
    """`vlk-memact hook HOST [--from-plugin]`, parsed by hand: it runs on every tool call (entry.py).

    The warm server answers when it runs (warm.py); otherwise, and whenever it cannot be reached, the
    event is answered in this process.
    """
    host = argv[0] if argv else ""
    flags = argv[1:]
    if host not in HOSTS or [a for a in flags if a != "--from-plugin"]:
        from .shared import runner

        runner.report(host or "?", "-", f"usage: vlk-memact hook {{{','.join(HOSTS)}}} (got {' '.join(argv)!r}); "
                      "nothing was done")
        return 0  # a hook never fails the host, even misconfigured
    raw = None
    from .shared import warm

    if warm.enabled():
        raw = warm.read_event()  # the script's warm.hook() may have read it already
        try:
            reply = warm.ask(host, flags, raw)
        except OSError:
            reply = None  # no private socket directory: answer here
        if reply is not None:
            return warm.emit(host, reply)
    from .shared import runner

    adapter = host_module(host)
    skip = plugin_doubled if "--from-plugin" in flags else None
    return runner.run(adapter.HOST, adapter.handle, skip=skip, store_only=adapter.STORE_ONLY_EVENTS, raw=raw)
