"""What is left when no family recognised the output: an exit status keyed with the line that explains it,
else that most informative line alone, masked."""

from __future__ import annotations

import re

from .core import _LINE_CAP, Fingerprint, _make, _mask_log
from .line_search import _first_stem
from .located import _DETAIL


# Exit codes: only meaningful together with the line that explains them ---------------------
_EXIT = re.compile(
    r"(?:exit(?:ed with)? (?:status|code)|returned non-zero exit status|Error) (\d{1,3})\b",
    re.I,
)
_ERROR_WORD = re.compile(
    r"\b(?:error|errors|fail|failed|failure|fatal|exception|panic|panicked|traceback|denied|refused"
    r"|not found|cannot|can't|unable|invalid|timed? ?out|abort(?:ed)?|missing|undefined|unknown)\b",
    re.I,
)


# Every word of ``_ERROR_WORD`` starts with one of these (ignoring case): a case-insensitive regex led
# by ``\b`` is tried at every position, a fast string search finds where the first one could start. The
# most frequent first (on agent failures and log lines): once one is found, the others search only before it.
_ERROR_STEMS = (
    "error", "traceback", "not found", "fail", "time", "exception", "undefined", "invalid", "cannot", "can't",
    "fatal", "unknown", "missing", "unable", "abort", "denied", "refused", "panic",
)  # fmt: skip
_EXIT_STEMS = ("exit", "error")  # every _EXIT match holds one of them (ignoring case)


def _informative_line(lines: list[str]) -> str:
    """The line most likely to name the error: an error word that is not an exit-status line."""
    nonempty = [ln for ln in lines if ln.strip()]
    if len(nonempty) == 1:
        return nonempty[0][:_LINE_CAP]
    cuts = [line[:_LINE_CAP] for line in nonempty]
    # One search over the joined lines finds the next line with an error word: neither regex can
    # match across a line break, and a break is a non-word character like the end of a line.
    joined = "\n".join(cuts)
    first = _first_stem(joined, _ERROR_STEMS)
    found = _ERROR_WORD.search(joined, first) if first >= 0 else None
    while found:
        begin = joined.rfind("\n", 0, found.start()) + 1
        end = joined.find("\n", found.start())
        cut = joined[begin:] if end < 0 else joined[begin:end]
        if not _EXIT.search(cut):
            return cut
        found = _ERROR_WORD.search(joined, end + 1) if end >= 0 else None
    for cut in reversed(cuts):
        if not _EXIT.search(cut):
            return cut
    return cuts[-1] if cuts else ""


def _exit_code(text: str, lines: list[str]) -> Fingerprint | None:
    """A non-zero exit status, keyed with the line that explains it (alone it joins anything)."""
    if "xit" not in text and "Error " not in text and "exit" not in text:
        return None
    if not _two_nonempty(lines):
        return None
    match = _last_exit(text, lines)
    if match:
        return _make("shell", f"exit {match.group(1)}: {_mask_log(_informative_line(lines))}")
    return None


def _two_nonempty(lines: list[str]) -> bool:
    """Whether at least two lines hold more than blanks (counting stops at two)."""
    found = 0
    for line in lines:
        if line and not line.isspace():
            found += 1
            if found == 2:
                return True
    return False


def _last_exit(text: str, lines: list[str]) -> re.Match[str] | None:
    """``_EXIT`` searched in each line (cut) from the last one; the first match.

    In ASCII text only the lines holding a stem (``exit``, ``error``, ignoring case) can match, and a reverse
    search finds them: a case-insensitive regex is tried at every position of every line.
    """
    if not text.isascii():
        for line in reversed(lines):
            match = _EXIT.search(line[:_LINE_CAP])
            if match:
                return match
        return None
    lower = text.lower()
    end = len(text)
    while True:
        at = max(lower.rfind(stem, 0, end) for stem in _EXIT_STEMS)
        if at < 0:
            return None
        start = text.rfind("\n", 0, at) + 1
        stop = text.find("\n", at)
        match = _EXIT.search(text[start : len(text) if stop < 0 else stop][:_LINE_CAP])
        if match:
            return match
        end = start  # the lines before this one (no stem holds a line break)


def _with_details(text: str, line: str) -> str:
    """The line and the indented ``label: value`` lines under it (javac's ``symbol: variable x``)."""
    at = text.find(line) if "\n" in text else -1
    if at < 0:
        return line
    detail = _DETAIL.match(text, at + len(line))
    for _ in range(3):
        if not detail:
            break
        line += " | " + detail.group(1)[:_LINE_CAP]
        detail = _DETAIL.match(text, detail.end())
    return line


def _fallback(text: str, lines: list[str]) -> Fingerprint:
    """No family recognised: the masked most informative line, with its details."""
    return _make("fallback", _mask_log(_with_details(text, _informative_line(lines))))
