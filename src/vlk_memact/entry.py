"""The `vlk-memact` console script: `hook` goes straight to the hook runner, everything else to cli.main.

A host runs `vlk-memact hook ...` on every tool call, so that path skips the command-line parser and the
engine's imports that it does not need (see bench/hooks.py for what start-up costs). `hook --help` (or -h,
anywhere after `hook`) is a person asking: the parser prints the usage, and nothing is read or started.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # no typing or collections.abc at start-up: the hook path comes through here
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"] and not asks_help(args[1:]):
        try:
            from .hosts.commands import hook_main

            return hook_main(args[1:])
        except BaseException as exc:  # noqa: BLE001 - even a broken installation must not break the host
            print(f"vlk-memact hook: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 0
    from .cli import main as cli_main

    return cli_main(args)


def asks_help(args: list[str]) -> bool:
    """Does a `hook` command line ask for its usage rather than answer an event?"""
    return "-h" in args or "--help" in args


__all__ = ["asks_help", "main"]
