"""Export and import: the whole memory (or one tenant, project or session) as JSON Lines.

The first line names the format; the records that follow name rows by uid and content hash, never
by database id, so a file loads into any store (SQLite or PostgreSQL) and loading it twice
changes nothing the second time. An import is one transaction: it lands whole or not at all.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TextIO

from ..engine.impact_outcomes import with_outcomes
from ..core.errors import InvalidInput
from ..engine import Memory

FORMAT = "vlk-memact-export"
VERSION = 1
PROGRESS_EVERY = 1000

Progress = Callable[[int], None]


@dataclass(frozen=True)
class ImportResult:
    """How many records a file held and how many were new to this store."""

    records: int
    inserted: int

    @property
    def skipped(self) -> int:
        return self.records - self.inserted


def export_memory(memory: Memory, out: TextIO, *, tenant: str | None = None, project: str | None = None,
                  session: str | None = None, progress: Progress | None = None) -> int:
    """Write the header and every matching record to `out`; return the number of records."""
    header = {"type": FORMAT, "version": VERSION,
              "filter": {"tenant": tenant, "project": project, "session": session}}
    out.write(json.dumps(header, sort_keys=True) + "\n")
    count = 0
    with memory.reading() as tx:
        for record in with_outcomes(tx, tx.dump(tenant, project, session)):
            out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
            if progress and count % PROGRESS_EVERY == 0:
                progress(count)
    return count


def import_memory(memory: Memory, lines: Iterable[str], *, progress: Progress | None = None) -> ImportResult:
    """Load an export into this store, skipping what is already there."""
    numbered = enumerate(lines, start=1)
    first = next(numbered, None)
    if first is None:
        raise InvalidInput("the import file is empty; expected a vlk-memact export")
    header = _parse(*first)
    if header.get("type") != FORMAT or not isinstance(header.get("version"), int):
        raise InvalidInput(f"line 1 is not a {FORMAT} header; is this a vlk-memact export?")
    if header["version"] > VERSION:
        raise InvalidInput(f"this export is format version {header['version']}; upgrade vlk-memact to import it")
    records = inserted = 0
    with memory.writing() as tx:
        for number, line in numbered:
            if not line.strip():
                continue
            try:
                inserted += tx.load(_parse(number, line))
            except (KeyError, TypeError, ValueError) as exc:
                raise InvalidInput(f"line {number}: {exc}; nothing was imported") from None
            records += 1
            if progress and records % PROGRESS_EVERY == 0:
                progress(records)
    return ImportResult(records, inserted)


def _parse(number: int, line: str) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"line {number} is not JSON ({exc.msg}); nothing was imported") from None
    if not isinstance(record, dict):
        raise InvalidInput(f"line {number} is not a JSON object; nothing was imported")
    return record
