"""What a session start carried and what the failure hook said, judged against what happened next; for the benches.

bench/transcripts.py (real Claude Code sessions) and bench/fixes.py (agent runs) replay a project's sessions in
order; each feeds a `Ledger` the start text of a session, every failure of it (its error text and what the hook
said right after it) and, at the session's end, the ids the start text named. The identity of "the same error"
is the bench's own, never the memory's fingerprint: the last line of the output that reads as an error, numbers
and paths masked (bench/fixes.py `error_line_error`), so the figures measure the rule, not agree with it.

- facts told: the `- ` lines of start texts; a fact *met again* names a constraint whose recorded errors have the
  identity of an error of that very session (the fact was worth its characters).
- recurrences: the first failure, in a session, of an error met in an earlier session of the project; *answered*
  when the hook said anything right after it; *fix told* (of those whose error an earlier session resolved, the
  ledger is told which by the bench) when what it said names a fix ("fixed by", "fixed in").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_FACT_ID = re.compile(r"^- \[id:(\d+)\]", re.M)


@dataclass
class Split:
    """The figures of one half of the data (tune or held-out)."""

    sessions: int = 0
    start_chars: int = 0
    injected_chars: int = 0
    sessions_with_start_text: int = 0
    facts_told: int = 0
    facts_met_again: int = 0
    recurrences: int = 0
    recurrences_answered: int = 0
    recurrences_fixed_before: int = 0
    fixes_told_on_them: int = 0
    unanswered: list[str] = field(default_factory=list)
    start_texts: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        n = max(self.sessions, 1)
        return {
            "sessions": self.sessions,
            "sessions_with_start_text": self.sessions_with_start_text,
            "mean_start_chars_per_session": round(self.start_chars / n, 1),
            "mean_injected_chars_per_session": round(self.injected_chars / n, 1),
            "facts_told": self.facts_told,
            "facts_met_again": self.facts_met_again,
            "recurrences": self.recurrences,
            "recurrences_answered": self.recurrences_answered,
            "recurrences_fixed_before": self.recurrences_fixed_before,
            "fixes_told_on_them": self.fixes_told_on_them,
            "unanswered_examples": self.unanswered[:8],
            "start_text_examples": self.start_texts[:4],
        }


class Ledger:
    """One project's sessions, in order: what earlier sessions failed with, what each start said."""

    def __init__(self, identity: Any) -> None:
        self.identity = identity  # error text -> the bench's identity of the error
        self.earlier: set[str] = set()  # identities failed in earlier sessions
        self.resolved_earlier: set[str] = set()  # identities an earlier session resolved (the bench's truth)
        self._session: set[str] = set()
        self._start = ""

    def start(self, split: Split, text: str) -> None:
        split.sessions += 1
        split.start_chars += len(text)
        split.sessions_with_start_text += bool(text)
        if text and len(split.start_texts) < 4:
            split.start_texts.append(text[:600])
        self._start = text
        self._session = set()

    def failure(self, split: Split, error: str, said: str) -> None:
        error_id = self.identity(error)
        if not error_id or error_id in self._session:
            self._session.add(error_id)
            return
        self._session.add(error_id)
        if error_id not in self.earlier:
            return
        split.recurrences += 1
        split.recurrences_answered += bool(said.strip())
        if not said.strip() and len(split.unanswered) < 40:
            split.unanswered.append(error_id[:160])
        if error_id in self.resolved_earlier:
            split.recurrences_fixed_before += 1
            split.fixes_told_on_them += "fixed by" in said or "fixed in" in said

    def end(self, split: Split, fact_errors: Any) -> None:
        """fact_errors(constraint id) -> the error texts recorded for that constraint (its loop's failures)."""
        for match in _FACT_ID.finditer(self._start):
            split.facts_told += 1
            ids = {self.identity(e) for e in fact_errors(int(match.group(1)))}
            split.facts_met_again += bool(ids & self._session)
        split.facts_told += sum(1 for line in self._start.splitlines()
                                if line.startswith("- ") and not _FACT_ID.match(line))
        self.earlier |= self._session


def fact_errors(memory: Any, session_id: str) -> Any:
    """The error texts a constraint stands for: its own evidence, and those of the failures its loop archived
    (followed through consolidations)."""
    key = memory.session_key(session_id)

    def errors(constraint_id: int, depth: int = 4) -> list[str]:
        with memory.reading() as tx:
            found = tx.tenant_slots(key.tenant, [constraint_id])
            archived = tx.tenant_slots(key.tenant, tx.sources(constraint_id, "archived"))
            merged = tx.sources(constraint_id, "merged")
        texts = [s.raw_log or "" for s in archived] + [s.evidence or "" for s in found]
        if depth:
            for other in merged:
                texts += errors(other, depth - 1)
        return [t for t in texts if t]

    return errors
