"""The one reader of shell command lines: simple commands, their words, redirections and separators.

The guard (which commands only read: read_only.py) and the step summaries (which program ran: steps.py)
must see the same commands in a command line, so both read it here, with the standard library's
`shlex` in one configuration and bash's rules where they matter: a line break, `;`, `&&`, `||`, `|` and
`&` end a command; a comment runs to the end of its line (never past it); a heredoc's body is content,
not commands; `$(...)`, backquotes and `<(...)` run commands of their own (`substitution`). A line with
unbalanced quotes is `complete=False` and split on white space, one command per line. Limits, on
purpose: no alias, function or variable expansion, and a quoted operator (`grep ';' f`) reads as one
(callers that decide "only reads" treat anything unusual as a change, so this errs on the safe side).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from functools import lru_cache

_PUNCTUATION = ";&|<>()\n"
_SEPARATORS = frozenset(";&|")
_WORD_BREAK = frozenset(" \t\r\n;&|()<>")
_NULL_TARGETS = frozenset({"/dev/null"})


@dataclass(frozen=True, slots=True)
class Simple:
    """One simple command: its words (assignments, program, arguments; no redirection, no parenthesis)."""

    words: tuple[str, ...]
    writes: bool = False  # output redirected to a file (not /dev/null, not a descriptor copy like 2>&1)
    heredoc: bool = False  # fed by a heredoc (`cat <<EOF > f`)
    background: bool = False  # ended by `&`

    @property
    def program(self) -> str | None:
        """The program's name without its directory, after environment assignments; None when empty."""
        for word in self.words:
            if not is_assignment(word):
                return word.rsplit("/", 1)[-1]
        return None


@dataclass(frozen=True, slots=True)
class CommandLine:
    commands: tuple[Simple, ...]
    complete: bool = True  # False: unbalanced quotes, split on white space
    substitution: bool = False  # $(...), `...`, <(...) or >(...) outside single quotes
    heredoc: bool = False


def is_assignment(word: str) -> bool:
    """`NAME=value` before a program (an environment assignment, not an argument)."""
    name, equals, _ = word.partition("=")
    return bool(equals) and bool(name) and (name[0].isalpha() or name[0] == "_") and \
        all(c.isalnum() or c == "_" for c in name)


def _heredoc_delimiter(text: str, i: int) -> tuple[str, int]:
    """After `<<` at i-2: the delimiter word (quotes removed) and where it ends."""
    if i < len(text) and text[i] == "-":
        i += 1
    while i < len(text) and text[i] in " \t":
        i += 1
    start = i
    while i < len(text) and text[i] not in _WORD_BREAK:
        i += 1
    return text[start:i].replace("'", "").replace('"', "").replace("\\", ""), i


def _prepare(text: str) -> tuple[str, bool, bool]:
    """The text with comments and heredoc bodies removed; whether it substitutes a command or has a heredoc.
    Quote-aware: a `#` or `<<` inside quotes is text."""
    out: list[str] = []
    pending: list[str] = []  # heredoc delimiters whose bodies start at the next line break
    substitution = heredoc = False
    quote = ""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if quote == "'":
            if c == "'":
                quote = ""
        elif c == "\\" and i + 1 < n:
            out.append(" " if text[i + 1] == "\n" else text[i : i + 2])  # a continued line is one line
            i += 2
            continue
        elif quote == '"':
            if c == '"':
                quote = ""
            elif c == "`" or text.startswith("$(", i):
                substitution = True
        elif c in "'\"":
            quote = c
        elif c == "`" or text.startswith(("$(", "<(", ">("), i):
            substitution = True
        elif c == "#" and (i == 0 or text[i - 1] in _WORD_BREAK):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif text.startswith("<<", i) and not text.startswith("<<<", i):
            heredoc = True
            delimiter, end = _heredoc_delimiter(text, i + 2)
            out.append("<< " + (delimiter or "EOF"))
            pending.append(delimiter)
            i = end
            continue
        elif c == "\n" and pending:
            out.append("\n")
            lines = text[i + 1 :].split("\n")
            skipped = 0
            for line in lines:
                skipped += len(line) + 1
                if pending and line.lstrip("\t").rstrip() == pending[0]:
                    pending.pop(0)
                    if not pending:
                        break
            i += 1 + skipped
            pending.clear()
            continue
        out.append(c)
        i += 1
    return "".join(out), substitution, heredoc


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t\r"  # a line break is a separator, not white space
    lexer.whitespace_split = True
    lexer.commenters = ""  # removed before, up to (not including) the line break
    return list(lexer)


def _separator(token: str) -> str | None:
    """The separator a punctuation token stands for (`&&`, `;`, `\\n`...), or None when it is not one."""
    if not token or not set(token) <= _SEPARATORS | {"\n"}:
        return None
    stripped = token.replace("\n", "")
    return stripped or "\n"


def _build(tokens: list[str]) -> list[Simple]:
    commands: list[Simple] = []
    words: list[str] = []
    writes = heredoc = False
    i = 0
    while i < len(tokens):
        token = tokens[i]
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        separator = _separator(token)
        if separator is not None:
            if words or writes or heredoc:
                commands.append(Simple(tuple(words), writes, heredoc, background=separator == "&"))
            words, writes, heredoc = [], False, False
        elif token in ("<<", "<<-"):
            heredoc = True
            i += 1  # the delimiter
        elif token.startswith("<") and ">" not in token:
            i += 1  # input from a file (`<`), a here-string (`<<<`)
        elif set(token) <= set("<>&|") and ">" in token:
            if token.endswith("&") and after.isdigit() or after in _NULL_TARGETS or after == "-":
                pass  # 2>&1, >&2: a descriptor copied; >/dev/null: nothing kept
            else:
                writes = True
            i += 1
        elif token in ("(", ")", "<(", ">("):
            pass  # a subshell's parentheses (a substitution is flagged by _prepare)
        elif token.isdigit() and after[:1] in ("<", ">"):
            pass  # the descriptor of a redirection (2>)
        else:
            words.append(token)
        i += 1
    if words or writes or heredoc:
        commands.append(Simple(tuple(words), writes, heredoc))
    return commands


@lru_cache(maxsize=256)  # one event asks about its command several times (change? target? wrote first?)
def parse(command: str) -> CommandLine:
    """The simple commands of a command line, in order; never raises. The result is immutable (cached)."""
    text, substitution, heredoc = _prepare(command)
    try:
        tokens = _tokens(text)
    except ValueError:  # unbalanced quotes
        lines = (line.split() for line in command.splitlines())
        return CommandLine(tuple(Simple(tuple(w)) for w in lines if w), complete=False,
                           substitution=substitution, heredoc=heredoc)
    return CommandLine(tuple(_build(tokens)), substitution=substitution, heredoc=heredoc)
