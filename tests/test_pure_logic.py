"""Pure modules without a database: loops, consolidation, conflicts, rendering, input validation."""

from __future__ import annotations

import pytest

from vlk_memact.core import inputs
from vlk_memact.core.conflicts import find_conflicts
from vlk_memact.core.consolidate import plan_consolidation
from vlk_memact.core.errors import InvalidInput
from vlk_memact.fingerprint import fingerprint
from vlk_memact.core.loops import ANCHOR_TEMPLATE, detect_loops, error_excerpt
from vlk_memact.core.model import ConstraintType, Origin, Slot, TemporalState
from vlk_memact.core.render import CONTEXT_HEADER, EMPTY_CONTEXT, estimate_tokens, render_context


def context_text(constraints: list[Slot], present: list[Slot], *rest: list) -> str:
    return render_context("s", constraints, present, [], [], [], 4000).text


def present(id_: int, raw: str) -> Slot:
    fp = fingerprint(raw)
    return Slot(id=id_, session_id="s", sequence_order=id_, temporal_state=TemporalState.PRESENT,
                origin=Origin.RECORD, created_at="", raw_log=raw, fingerprint=fp.key, fingerprint_keys=fp.keys)


def lesson(id_: int, text: str, kind: ConstraintType = ConstraintType.DERIVED, origin: Origin = Origin.LESSON,
           lessons: tuple[str, ...] = ()) -> Slot:
    return Slot(id=id_, session_id="s", sequence_order=id_, temporal_state=TemporalState.FUTURE, origin=origin,
                created_at="", learning_summary=text, constraint_type=kind, lessons=lessons)


# ---- loops ----

def test_loop_detection_is_fingerprint_group_over_the_present_slots() -> None:
    line = "deploy failed: could not reach service {} on the staging cluster after retries"
    varied = [present(i, line.format(name)) for i, name in enumerate(("billing", "search", "checkout"), 1)]
    [found] = detect_loops(varied, 3)
    assert found.slot_ids == (1, 2, 3) and found.method == "fingerprint"
    # Two values repeated are two errors, each a loop on its own: a parameter takes three different values.
    twice = [present(i, line.format("billing" if i <= 3 else "search")) for i in range(1, 7)]
    assert [g.slot_ids for g in detect_loops(twice, 3)] == [(1, 2, 3), (4, 5, 6)]
    assert detect_loops(twice, 4) == []


def test_two_different_errors_make_no_loop() -> None:
    assert detect_loops([present(1, "error A"), present(2, "completely different failure")], 3) == []


def test_three_exact_repeats_make_one_exact_loop_with_every_id() -> None:
    [group] = detect_loops([present(i, "error msg") for i in (1, 2, 3)], 3)
    assert group.slot_ids == (1, 2, 3)
    assert group.method == "exact"
    assert group.anchor_text().startswith("[SYSTEM ANCHOR] Loop detected (exact): the same error pattern appeared 3 times (identical logs).")


def test_repeats_that_differ_only_in_noise_make_a_fingerprint_loop() -> None:
    slots = [present(i, f"Error 503: timeout at 14:32:0{i}") for i in (1, 4, 7)]
    [group] = detect_loops(slots, 3)
    assert group.method == "fingerprint"
    assert group.slot_ids == (1, 4, 7)


def test_every_group_that_reached_the_threshold_is_reported_oldest_first() -> None:
    slots = [present(i, "error B") for i in (2, 4, 6)] + [present(i, "error A") for i in (1, 3, 5, 7)]
    groups = detect_loops(slots, 3)
    assert [g.slot_ids for g in groups] == [(1, 3, 5, 7), (2, 4, 6)]


def test_anchor_signature_is_one_line_and_bounded() -> None:
    raw = "line one\nline two " + "x" * 500
    [group] = detect_loops([present(i, raw) for i in (1, 2, 3)], 3)
    assert "\n" not in group.anchor_text()
    assert len(group.signature) <= 80


def test_error_excerpt_keeps_the_lines_that_carry_the_error() -> None:
    log = "running 1 test\nthread 'main' panicked at src/a.rs:1:2:\nboom happened\nnote: backtrace"
    assert error_excerpt(log, 300) == "thread 'main' panicked at src/a.rs:1:2: | boom happened"


# ---- consolidation ----

def test_five_constraints_are_not_consolidated_six_are() -> None:
    five = [lesson(i, f"Rule {i}") for i in range(5)]
    assert plan_consolidation(five, above=5, max_chars=2000) == []
    [plan] = plan_consolidation([*five, lesson(5, "Rule 5")], above=5, max_chars=2000)
    assert plan.text == "[CONSOLIDATED CONSTRAINTS from 6 prior lessons]: " + " | ".join(f"Rule {i}" for i in range(6))


def test_duplicates_are_merged_case_and_whitespace_insensitively() -> None:
    items = [lesson(1, "Use  the cache"), lesson(2, "use the CACHE"), *[lesson(i, f"Rule {i}") for i in range(3, 8)]]
    [plan] = plan_consolidation(items, above=5, max_chars=2000)
    assert plan.total == 6
    assert sum("cache" in text.casefold() for text in plan.lessons) == 1


def test_cap_counts_characters_and_keeps_the_newest_that_fit() -> None:
    items = [lesson(1, "é" * 1500), lesson(2, "short old"), *[lesson(i, f"Rule {i}" + "ß" * 90) for i in range(3, 8)]]
    [plan] = plan_consolidation(items, above=5, max_chars=2000)
    body = " | ".join(plan.lessons)
    assert len(body) <= 2000
    assert "short old" in plan.lessons  # an older lesson that fits is kept after a bigger one is skipped
    assert plan.text.startswith("[CONSOLIDATED CONSTRAINTS from 7 lessons, truncated to 6 newest]:")


def test_a_single_overlong_lesson_is_truncated_not_dropped() -> None:
    items = [*[lesson(i, f"Rule {i}") for i in range(5)], lesson(9, "z" * 3000)]
    [plan] = plan_consolidation(items, above=5, max_chars=2000)
    assert plan.lessons[-1].startswith("zzz") and plan.lessons[-1].endswith("…")
    assert len(plan.lessons[-1]) == 2000


def test_an_earlier_consolidation_is_flattened_not_nested() -> None:
    earlier = lesson(1, "[CONSOLIDATED CONSTRAINTS from 2 prior lessons]: a | b", origin=Origin.CONSOLIDATED,
                     lessons=("a", "b"))
    items = [earlier, *[lesson(i, f"Rule {i}") for i in range(2, 8)]]
    [plan] = plan_consolidation(items, above=5, max_chars=2000)
    assert plan.text.count("[CONSOLIDATED") == 1
    assert plan.lessons[:2] == ("a", "b")


def test_prospective_constraints_stay_prospective() -> None:
    items = [lesson(i, f"Rule {i}") for i in range(4)] + [
        lesson(i, f"Deadline {i}", ConstraintType.PROSPECTIVE) for i in range(4, 7)
    ]
    plans = {p.constraint_type: p for p in plan_consolidation(items, above=5, max_chars=2000)}
    assert plans[ConstraintType.PROSPECTIVE].lessons == ("Deadline 4", "Deadline 5", "Deadline 6")
    assert plans[ConstraintType.DERIVED].total == 4


def test_one_prior_lesson_reads_singular() -> None:
    items = [lesson(i, "same") for i in range(6)]
    [plan] = plan_consolidation(items, above=5, max_chars=2000)
    assert plan.text == "[CONSOLIDATED CONSTRAINTS from 1 prior lesson]: same"


def test_conflicting_constraints_are_kept_apart() -> None:
    items = [lesson(i, f"Rule {i}") for i in range(6)]
    [plan] = plan_consolidation(items, above=5, max_chars=2000, keep_apart={0, 1})
    assert plan.merged_ids == (2, 3, 4, 5)


# ---- conflicts ----

@pytest.mark.parametrize(
    ("first", "second", "description"),
    [
        ("Always retry on 503 with exponential backoff", "Never retry on 503 — use cache instead", "retry vs. never retry"),
        ("Use cache for API responses", "Do not cache API responses", "cache vs. do not cache"),
        ("Use cache for API responses", "Don't cache API responses", "cache vs. do not cache"),
        ("Prefer exponential backoff", "Use linear backoff", "exponential vs. linear backoff"),
        ("Connect directly to the DB", "Use proxy for the DB", "direct connection vs. proxy"),
        ("Use format! for strings", "Avoid format! in hot loops", "format! vs. avoid format!"),
    ],
)
def test_opposite_directives_conflict(first: str, second: str, description: str) -> None:
    [conflict] = find_conflicts([lesson(1, first), lesson(2, second)])
    assert (conflict.first_id, conflict.second_id, conflict.description) == (1, 2, description)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Never retry on 503", "Never retry on 503"),
        ("Avoid format! here", "avoid format! there"),
        ("Always retry on 503", "Use format!() for string concat"),
        ("Retrying is logged", "Never retry the migration"),  # "retrying" is not the word "retry"
        ("Do not retry writes", "Never retry writes"),
        ("Check .len() before indexing", "Always retry on 503"),
    ],
)
def test_agreeing_or_unrelated_directives_do_not_conflict(first: str, second: str) -> None:
    assert find_conflicts([lesson(1, first), lesson(2, second)]) == []


def test_a_consolidated_constraint_conflicts_through_its_lessons() -> None:
    merged = lesson(1, "[CONSOLIDATED ...]", origin=Origin.CONSOLIDATED, lessons=("Use cache for reads", "Rule 2"))
    [conflict] = find_conflicts([merged, lesson(2, "Never cache user data")])
    assert conflict.description == "cache vs. never cache"


# ---- rendering ----

def test_token_estimate_is_characters_over_3_8_rounded_up() -> None:
    assert estimate_tokens("A" * 3800) == 1000
    assert estimate_tokens("é") == 1
    assert estimate_tokens("") == 0


def test_empty_context_shows_the_placeholder() -> None:
    text = context_text([], [], [], [], [])
    assert text.startswith(CONTEXT_HEADER + EMPTY_CONTEXT)


def test_constraints_come_before_present_slots_and_every_slot_has_its_id() -> None:
    text = context_text([lesson(5, "Rule")], [present(2, "boom")], [], [], [])
    assert text.index("[id:5] [PREVENTIVE FUTURE CONSTRAINT]: Rule") < text.index("[id:2] [ACTIVE PRESENT STATE]")
    assert "[id:2] [ACTIVE PRESENT STATE]  | Log: boom" in text


def test_prospective_constraints_get_their_own_tag() -> None:
    text = context_text([lesson(1, "Deploy freeze on Friday", ConstraintType.PROSPECTIVE)], [], [], [], [])
    assert "[id:1] [PROSPECTIVE CONSTRAINT]: Deploy freeze on Friday" in text


# ---- inputs ----

@pytest.mark.parametrize("value", [None, "", "   ", "\t\n"])
def test_missing_or_blank_session_ids_mean_default(value: object) -> None:
    assert inputs.session_id(value) == "default"


def test_session_ids_are_trimmed_and_bounded() -> None:
    assert inputs.session_id("  task-1 ") == "task-1"
    with pytest.raises(InvalidInput, match="session_id"):
        inputs.session_id("x" * 300)
    with pytest.raises(InvalidInput, match="session_id"):
        inputs.session_id(5)


@pytest.mark.parametrize("ids", [[0], [-3], ["5"], [1.5], [True], "1,2", 7])
def test_ids_must_be_positive_integers(ids: object) -> None:
    with pytest.raises(InvalidInput, match="target_timeline_ids"):
        inputs.timeline_ids("target_timeline_ids", ids)


def test_duplicate_ids_collapse_in_order() -> None:
    assert inputs.timeline_ids("ids", [3, 1, 3, 2]) == [3, 1, 2]


def test_lone_surrogates_and_nul_are_replaced_not_rejected() -> None:
    assert inputs.clean_text("a\ud800b\x00c") == "a\ufffdb\ufffdc"


def test_an_overlong_raw_log_keeps_head_and_tail_around_a_marker() -> None:
    text, truncated = inputs.truncate_log("HEAD" + "x" * 10_000 + "TAIL", 1000)
    assert truncated and text.startswith("HEAD") and text.endswith("TAIL")
    assert "characters truncated by vlk-memact" in text


@pytest.mark.parametrize(("value", "expected"), [(None, 50), (10, 10), (10_000, 500)])
def test_limits_default_and_cap(value: object, expected: int) -> None:
    assert inputs.limit(value, 50, 500) == expected


@pytest.mark.parametrize("value", [0, -1, "5", 2.5])
def test_bad_limits_are_rejected(value: object) -> None:
    with pytest.raises(InvalidInput, match="limit"):
        inputs.limit(value, 50, 500)


def test_tool_payload_objects_are_stored_as_json() -> None:
    assert inputs.tool_payload({"b": 1, "a": [1, "é"]}, 1000) == '{"a":[1,"é"],"b":1}'


def test_constraint_type_is_validated() -> None:
    assert inputs.constraint_type("prospective") is ConstraintType.PROSPECTIVE
    with pytest.raises(InvalidInput, match="constraint_type"):
        inputs.constraint_type("SOMETIMES")


def test_anchor_template_keeps_the_prototype_wording() -> None:
    assert "CURRENT STRATEGY EXHAUSTED. Mandatory: completely change approach." in ANCHOR_TEMPLATE


# ---- render: the shortcuts equal their definitions ----

def _fold_by_definition(slots: list[Slot]) -> dict[int, list[int]]:
    """fold_repeats as first written: the newest slot of a fingerprint after a stable sort by sequence."""
    newest: dict[str, Slot] = {}
    for slot in sorted(slots, key=lambda s: s.sequence_order):
        if slot.fingerprint:
            newest[slot.fingerprint] = slot
    folded: dict[int, list[int]] = {s.id: [] for s in slots}
    for slot in slots:
        head = newest.get(slot.fingerprint or "")
        if head is not None and head.id != slot.id:
            folded.pop(slot.id)
            folded[head.id].append(slot.id)
    return folded


@pytest.mark.parametrize("seed", range(40))
def test_fold_repeats_and_the_early_budget_check_equal_their_definitions(seed: int) -> None:
    import random
    from dataclasses import replace

    from vlk_memact.core.render import _exceeds, _least_cut_tokens, fold_repeats

    rng = random.Random(seed)
    slots = [replace(present(i, "x" * rng.randrange(1, 3000)), fingerprint=rng.choice(["", "a", "b", "c", None]),
                     sequence_order=rng.randrange(1, 30)) for i in range(1, rng.randrange(2, 60))]
    rng.shuffle(slots)
    assert fold_repeats(slots) == _fold_by_definition(slots)
    costs = [rng.randrange(0, 400) for _ in range(rng.randrange(0, 6))]
    chars = [len(s.raw_log or "") for s in slots]
    for left in (0, 50, 500, 3000, 10**6):
        assert _exceeds(left, costs, iter(chars)) is (sum(costs) + sum(map(_least_cut_tokens, chars)) > left)
