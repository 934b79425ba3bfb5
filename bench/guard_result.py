"""What bench/guard.py records per trajectory and rule: its own module, so that the replay (guard.py) and the
report (guard_report.py) both import it and neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Denial:
    step: int
    command: str
    verdict: str  # identical | different | succeeded
    in_truth: bool
    reason_chars: int  # what the model read instead of the output
    output_chars: int  # the output the real step printed


@dataclass
class Result:
    name: str
    source: str
    split: str
    rule: str
    steps: int = 0
    tool_calls: int = 0
    failed_calls: int = 0
    denials: list[Denial] = field(default_factory=list)
    warnings: int = 0  # PreToolUse allowed with additionalContext
    post_injections: int = 0  # additionalContext after a call (loop announced, lesson recalled, ...)
    session_injections: int = 0  # SessionStart / UserPromptSubmit additionalContext
    injected_chars: int = 0
    largest_injected: int = 0
    largest_injected_event: str = ""
    truth: list[int] = field(default_factory=list)  # identical repeats after a loop, nothing changed
    truth_any_change: list[int] = field(default_factory=list)  # the same without "nothing changed"
    malformed_outputs: list[str] = field(default_factory=list)
    seconds: float = 0.0
    handle_ms: dict[str, list[float]] = field(default_factory=dict)
