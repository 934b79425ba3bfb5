"""`vlk-memact export`, `import` and `maintenance`: the commands over the whole memory rather than one session."""

from __future__ import annotations

import argparse
import sys

from ..core.errors import InvalidInput
from ..engine import Memory


def run_transfer(memory: Memory, args: argparse.Namespace) -> str:
    """Run export, import or maintenance; the line to print on stdout (progress goes to stderr)."""
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
        sys.stdout.flush()
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
    done = memory.maintenance(vacuum=args.vacuum)
    return (
        f"Pruned {done.slots_deleted} PAST slots and {done.contents_deleted} unreferenced contents "
        f"(policy: PAST slots older than {done.retention_days} days or beyond the newest "
        f"{done.kept_past_per_session} per session)" + (", then vacuumed." if done.vacuumed else ".")
    )
