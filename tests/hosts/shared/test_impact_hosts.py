"""Each host's hooks record what they said (issue 33), in the host-neutral code they share: the same kinds, the
characters of the text the host received, the host's name; a warning a pre-call event cannot carry is recorded
once, when the post-call event says it."""

from __future__ import annotations

from typing import Any

from test_hooks_gemini import before as gemini_before
from test_hooks_gemini import context_of, event, fail
from test_hooks_opencode import SESSION
from test_hooks_opencode import after as opencode_after
from test_hooks_opencode import before as opencode_before

from vlk_memact import Memory
from vlk_memact.hosts.gemini import adapter as gemini
from vlk_memact.hosts.opencode import adapter as opencode


def _said(memory: Memory, session: str) -> list[tuple[str, int, str | None]]:
    with memory.store.read() as tx:
        return [(r.kind, r.chars, r.host) for r in tx.interventions(memory.tenant, None, session=session)]


def test_gemini_cli_hooks_record_the_repeat_loop_denial_and_warning(memory: Memory) -> None:
    said: list[str] = []
    for _ in range(3):
        text = context_of(gemini.handle(fail(), memory))
        said += [text] if text else []
    denied: Any = gemini.handle(gemini_before(), memory)
    assert gemini.handle(event("AfterTool-write_file"), memory) is None
    assert gemini.handle(gemini_before(), memory) is None  # allowed; BeforeTool cannot carry the warning
    warned = context_of(gemini.handle(fail(), memory))
    assert warned and "something has changed since it last failed" in warned
    session = fail()["session_id"]
    kinds = _said(memory, session)
    assert [k for k, _, _ in kinds[:3]] == ["repeat", "loop", "deny"]
    assert [c for _, c, _ in kinds[:3]] == [len(said[0]), len(said[1]), len(denied["reason"])]
    assert sum(k == "warn" for k, _, _ in kinds) == 1 and all(h == "gemini" for _, _, h in kinds)


def test_opencode_hooks_record_the_repeat_loop_and_denial(memory: Memory) -> None:
    answers = [opencode.handle(opencode_after(), memory) for _ in range(3)]
    denied: Any = opencode.handle(opencode_before(), memory)
    kinds = _said(memory, SESSION)
    assert kinds == [("repeat", len(answers[1]["append"]), "opencode"), ("loop", len(answers[2]["append"]), "opencode"),
                     ("deny", len(denied["deny"]), "opencode")]
