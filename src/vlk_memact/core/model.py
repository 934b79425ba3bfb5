"""Value objects shared by the engine, the stores and the edges; no I/O here."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class TemporalState(StrEnum):
    """Where a slot sits on the timeline (spec §2.2)."""

    PRESENT = "PRESENT"
    PAST = "PAST"
    FUTURE = "FUTURE"


class ConstraintType(StrEnum):
    """DERIVED: scar tissue from a failure. PROSPECTIVE: foresight (deadlines, windows)."""

    DERIVED = "DERIVED"
    PROSPECTIVE = "PROSPECTIVE"


class Origin(StrEnum):
    """How a slot came to exist."""

    RECORD = "record"  # vlk_record_state
    LESSON = "lesson"  # vlk_time_travel
    ANCHOR = "anchor"  # loop interception
    CONSOLIDATED = "consolidated"  # consolidation of several constraints


class Scope(StrEnum):
    """Who sees a FUTURE constraint."""

    SESSION = "session"  # only the session that learned it
    PROJECT = "project"  # every session of the same project
    GLOBAL = "global"  # every project of this database (same tenant)


class Retired(StrEnum):
    """Why a slot left PRESENT or FUTURE for PAST."""

    TIME_TRAVEL = "time_travel"
    LOOP = "loop"
    REVOKED = "revoked"
    CONSOLIDATED = "consolidated"
    RESOLVED = "resolved"  # a host hook saw the same call succeed: the fix worked


@dataclass(frozen=True, slots=True)
class SessionKey:
    """A session is named within a project, and a project within a tenant."""

    tenant: str
    project: str
    session: str


@dataclass(frozen=True, slots=True)
class Slot:
    """One row of the timeline joined to its (immutable) content."""

    id: int
    session_id: str
    sequence_order: int
    temporal_state: TemporalState
    origin: Origin
    created_at: str
    content_id: int | None = None
    raw_log: str | None = None
    file_context: str | None = None
    tool_payload: str | None = None
    learning_summary: str | None = None
    constraint_type: ConstraintType | None = None
    evidence: str | None = None
    fingerprint: str | None = None
    fingerprint_keys: tuple[str, ...] = ()
    fingerprint_version: int | None = None
    retired_reason: Retired | None = None
    retired_by: int | None = None
    lessons: tuple[str, ...] = ()
    tenant: str = "local"
    project: str = "default"
    scope: Scope | None = None
    fire_count: int = 0
    last_fired_at: str | None = None
    uid: str = ""  # stable across databases: what export and import match on

    @property
    def error_keys(self) -> tuple[str, ...]:
        """The keys this slot's error is matched by: its fingerprint keys, else its primary fingerprint."""
        return self.fingerprint_keys or ((self.fingerprint,) if self.fingerprint else ())


@dataclass(frozen=True, slots=True)
class NewSlot:
    """What the engine asks a store to insert; the store assigns id and sequence."""

    key: SessionKey
    temporal_state: TemporalState
    origin: Origin
    scope: Scope | None = None
    content_id: int | None = None
    learning_summary: str | None = None
    constraint_type: ConstraintType | None = None
    evidence: str | None = None
    fingerprint: str | None = None
    fingerprint_keys: tuple[str, ...] = ()
    fingerprint_version: int | None = None
    lessons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HostCall:
    """A tool call a host hook reported: its identity, outcome and the slot its failure was recorded as.

    The guard and resolution read these; the timeline itself never depends on them.
    """

    id: int
    session_id: str
    tool_use_id: str | None
    call_key: str  # same tool and same (whitespace-normalised) input: the same key
    outcome: str  # "failure" or "success"
    changes_state: bool  # a success that can change what the next call sees (an edit, a command)
    slot_id: int | None  # the PRESENT slot a failure was recorded as
    claimed: bool  # a model's vlk_record_state of the same error was folded into this capture
    created_at: str
    tool: str | None = None  # the host's tool name (None on rows written before schema 6)
    target: str | None = None  # what the call acts on: the file of an edit or read, the program of a command
    summary: str | None = None  # a compact, redacted account of what ran (a command, an edit's diff), capped


@dataclass(frozen=True, slots=True)
class NewHostCall:
    """What a hook asks the store to remember about one call."""

    tool_use_id: str | None
    call_key: str
    outcome: str
    changes_state: bool = False
    tool: str | None = None
    target: str | None = None
    summary: str | None = None
    host: str | None = None  # the host whose hook saw the call (claude-code, gemini, ...): the session's host


@dataclass(frozen=True, slots=True)
class FixStep:
    """One successful call that ran between a failure and the success that resolved it (or the changed call)."""

    tool_use_id: str | None
    tool: str | None
    summary: str  # the host call's redacted, capped summary: what ran, never the model's words
    call_key: str | None = None  # the call's identity: what tells the fix was applied again (not its summary)


@dataclass(frozen=True, slots=True)
class NewFix:
    """What resolution asks a store to keep: the failures a success resolved, and what ran in between."""

    key: SessionKey
    kind: str  # "fix" (steps ran in between, or the call changed) or "retry" (the same call passed on retry)
    fingerprint: str | None
    fingerprint_keys: tuple[str, ...]
    error: str  # the head of the resolved error as stored (already redacted)
    failed: str  # summary of the call that failed
    passed: str  # summary of the call that then passed
    steps: tuple[FixStep, ...] = ()
    left_out: int = 0  # steps older than the kept ones
    slot_uids: tuple[str, ...] = ()  # the failures (timeline slots) it resolved
    scope: str = "project"  # "global" when a global lesson covers the error


@dataclass(frozen=True, slots=True)
class Fix:
    """A stored fix: evidence of what resolved an error in one session, keyed on the error's fingerprint."""

    id: int
    uid: str
    tenant: str
    project: str
    session_id: str
    kind: str
    fingerprint: str | None
    fingerprint_keys: tuple[str, ...]
    error: str
    failed: str
    passed: str
    steps: tuple[FixStep, ...]
    left_out: int
    slot_uids: tuple[str, ...]
    scope: str
    demoted: int  # times it was recalled, applied, and the error came back anyway
    created_at: str


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two active constraints that give opposite directives."""

    first_id: int
    second_id: int
    description: str
    keyword_a: str
    keyword_b: str


# ---- results returned by the library API (and, as structuredContent, by the MCP tools) ----


@dataclass(frozen=True)
class RecallView:
    """A constraint learned earlier whose evidence matches the error just recorded."""

    constraint_id: int
    learned_in_session: str
    scope: str
    constraint_type: str
    lesson: str
    evidence: str | None
    fire_count: int


@dataclass(frozen=True)
class RecordResult:
    """A PRESENT slot was recorded."""

    session_id: str
    project: str
    timeline_id: int
    content_id: int
    sequence_order: int
    fingerprint: str
    fingerprint_kind: str
    repeats: int  # PRESENT slots of this session sharing the fingerprint, this one included
    repeat_ids: list[int] = field(default_factory=list)
    truncated: bool = False
    recalled: list[RecallView] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)  # kinds of secrets replaced before storing
    # Set when nothing new was stored: "call" = this tool call was already captured (hook retried),
    # "hook" = a host hook recorded the same error moments ago (same evidence, not a second occurrence).
    already_recorded_by: str | None = None
    # Fix memory: what fixed this error in other sessions of the project, one line each, latest working first.
    fixed_before: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TimeTravelResult:
    """PRESENT slots were archived and a FUTURE constraint injected."""

    session_id: str
    constraint_id: int
    constraint_type: str
    scope: str
    learning: str
    evidence: str
    moved_ids: list[int]
    ignored_ids: list[int]
    tokens_saved: int


@dataclass(frozen=True)
class SlotView:
    """A slot as the listing tools show it (key order follows the prototype's JSON)."""

    id: int
    content_id: int | None
    session_id: str
    sequence_order: int
    temporal_state: str
    learning_summary: str | None
    created_at: str
    constraint_type: str | None
    raw_log: str | None
    file_context: str | None
    tool_payload: str | None
    evidence: str | None
    origin: str
    fingerprint: str | None
    retired_reason: str | None
    retired_by: int | None
    project: str
    scope: str | None
    fire_count: int
    last_fired_at: str | None


@dataclass(frozen=True)
class HistoryResult:
    """Slots of a session, newest first."""

    session_id: str
    limit: int
    slots: list[SlotView]
    complete: bool = True  # False when VLK_MAX_LISTING_CHARS cut the list short


@dataclass(frozen=True)
class SearchResult:
    """Slots of a session whose text contains the query, newest first."""

    session_id: str
    query: str
    limit: int
    slots: list[SlotView]
    complete: bool = True  # False when VLK_MAX_LISTING_CHARS cut the list short


@dataclass(frozen=True)
class SummaryResult:
    """Counts per temporal state and the token weight of live and archived logs."""

    session_id: str
    project: str
    total: int
    present: int
    past: int
    future: int
    active_tokens: int
    archived_tokens: int
    visible_constraints: int  # active constraints this session sees: its own, its project's and global ones


@dataclass(frozen=True)
class LoopReport:
    """One loop the pipeline intercepted."""

    anchor_id: int
    method: str  # "exact" or "fingerprint"
    occurrences: int
    archived_ids: list[int]
    signature: str
    tokens_saved: int
    superseded_ids: list[int] = field(default_factory=list)  # older anchors of the same error, replaced


@dataclass(frozen=True)
class MergeReport:
    """One consolidation the pipeline performed."""

    consolidated_id: int
    constraint_type: str
    scope: str
    merged_ids: list[int]
    lessons: int
    kept: int


@dataclass(frozen=True)
class ConflictView:
    """A conflict as reported to clients."""

    first_id: int
    second_id: int
    description: str


@dataclass(frozen=True)
class ContextResult:
    """The rendered active context plus what the pipeline did to produce it."""

    session_id: str
    project: str
    tokens: int
    max_tokens: int
    constraint_ids: list[int]
    present_ids: list[int]
    omitted_constraint_ids: list[int]
    omitted_present_ids: list[int]
    loops: list[LoopReport]
    merges: list[MergeReport]
    conflicts: list[ConflictView]
    tokens_saved: int
    text: str = ""


# ---- the structured results of the MCP tools where they differ from the library's ----
# Hosts such as Claude Code show the model structuredContent instead of the text block, so these carry
# every text the block carries, once: the readable part first, then the data, no text repeated.


@dataclass(frozen=True)
class RecalledConstraint:
    """A recalled constraint's provenance; its lesson and evidence are in the record's `notice`."""

    constraint_id: int
    learned_in_session: str
    scope: str
    constraint_type: str
    fire_count: int


@dataclass(frozen=True)
class RecordView:
    """A PRESENT slot was recorded. `notice` holds what the model must read (secrets replaced, log
    truncated, a lesson recalled with its evidence, the same error repeated); empty when all is quiet."""

    notice: str
    session_id: str
    project: str
    timeline_id: int
    content_id: int
    sequence_order: int
    fingerprint: str
    fingerprint_kind: str
    repeats: int
    repeat_ids: list[int]
    truncated: bool
    recalled: list[RecalledConstraint]
    redacted: list[str]
    fixed_before: list[str]  # what fixed this error in other sessions, latest first (always present)
    already_recorded_by: str | None = None  # "hook": the host's hook captured this error moments ago


@dataclass(frozen=True)
class LoopView:
    """A loop intercepted by this fetch (its anchor's text, with the error's signature, is in `context`)."""

    anchor_id: int
    method: str
    occurrences: int
    archived_ids: list[int]
    tokens_saved: int
    superseded_ids: list[int]


@dataclass(frozen=True)
class ConflictPair:
    """Two active constraints in conflict (the warning itself is in `context`)."""

    first_id: int
    second_id: int


@dataclass(frozen=True)
class ContextView:
    """The active context: `context` is the rendered text (constraints, [SYSTEM ANCHOR]s with their evidence,
    PRESENT errors, conflicts, each tagged [id:N]); the rest reports which ids it shows and what the
    pipeline did. The whole object, as compact JSON, stays within max_tokens."""

    context: str
    session_id: str
    project: str
    tokens: int  # of the context text
    max_tokens: int
    constraint_ids: list[int]
    present_ids: list[int]
    omitted_constraint_ids: list[int]
    omitted_present_ids: list[int]
    loops: list[LoopView]
    merges: list[MergeReport]
    conflicts: list[ConflictPair]
    tokens_saved: int


@dataclass(frozen=True)
class MaintenanceResult:
    """What a retention pass removed."""

    slots_deleted: int
    contents_deleted: int
    retention_days: int
    kept_past_per_session: int
    vacuumed: bool


@dataclass(frozen=True)
class RevokeResult:
    """A FUTURE constraint was moved to PAST."""

    session_id: str
    constraint_id: int
