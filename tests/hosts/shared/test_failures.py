"""The one classifier of error results (hosts/shared/failures.py): the host's refusals are not the agent's failures.

Texts are those of real Claude Code transcripts (../shared/data/claude-code-sessions, CLI 1.0.53 and 2.1.x)
and of the real CLI 2.1.328 (tests/hosts/claude_code/test_hooks_e2e.py)."""

from __future__ import annotations

import pytest

from vlk_memact.hosts.shared import failures

NON_FAILURES = [
    ("<tool_use_error>Sibling tool call errored</tool_use_error>", failures.SIBLING),
    ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
     "the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how "
     "to proceed.", failures.PERMISSION),
    ("Error: The user doesn't want to proceed with this tool use.", failures.PERMISSION),
    ("cd to '/tmp' was blocked. For security, Claude Code may only change directories to child directories of "
     "the allowed working directories for this session (including '/home/u/p').", failures.PERMISSION),
    ("Permission to use Bash has been denied.", failures.PERMISSION),
    ("<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
     failures.INPUT_CHECK),
    ("File has not been read yet. Read it first before writing to it.", failures.INPUT_CHECK),
    ("String to replace not found in file.\nString: foo", failures.INPUT_CHECK),
    ("Found 2 matches of the string to replace, but replace_all is false. To replace all occurrences, set "
     "replace_all to true.", failures.INPUT_CHECK),
    ("No changes to make: old_string and new_string are exactly the same.", failures.INPUT_CHECK),
    ("<tool_use_error>File has been modified since read, either by the user or by a linter.</tool_use_error>",
     failures.INPUT_CHECK),
    ("<tool_use_error>Error: No such tool available: Frobnicate</tool_use_error>", failures.INPUT_CHECK),
    ("<tool_use_error>File does not exist.</tool_use_error>", failures.INPUT_CHECK),
    ("[Request interrupted by user for tool use]", failures.INTERRUPT),
]

FAILURES = [
    "Exit code 1\nError: Cannot find module express",
    "File does not exist. Note: your current working directory is /work/project.",
    "Exit code 1\nbash: ./run.sh: Permission denied",
    "Exit code 128\nerror: cannot pull with rebase: You have unstaged changes.",
    "Command timed out after 2m 0.0s",
    "EISDIR: illegal operation on a directory, read",
    "Exit code 1\nThe test said: String to replace not found in file",  # quoted inside real output
    "",
]


@pytest.mark.parametrize(("text", "kind"), NON_FAILURES)
def test_host_refusals_are_not_failures(text: str, kind: str) -> None:
    assert failures.non_failure(text) == kind
    assert not failures.is_failure(text)


@pytest.mark.parametrize("text", FAILURES)
def test_errors_raised_while_a_tool_runs_are_failures(text: str) -> None:
    assert failures.non_failure(text) is None and failures.is_failure(text)


def test_an_interrupt_flag_is_never_a_failure() -> None:
    assert not failures.is_failure("Exit code 130", interrupted=True)


@pytest.mark.parametrize("text", ["Error", "Exit code 1", "Exit code 1\n", "File does not exist.", "failed",
                                  "File does not exist. Note: your current working directory is /w/p."])
def test_errors_that_name_nothing_are_generic(text: str) -> None:
    assert failures.is_generic(text)


@pytest.mark.parametrize("text", ["Exit code 1\nError: Cannot find module express",
                                  "make: *** No rule to make target 'clean'.  Stop."])
def test_specific_errors_are_not_generic(text: str) -> None:
    assert not failures.is_generic(text)


@pytest.mark.parametrize(("text", "kind"), [
    ("npm ERR! «lint» failed\nSibling tool call errored", failures.SIBLING),
    ("Ünïcode first, then <TOOL_USE_ERROR>String to replace not found</tool_use_error>", failures.INPUT_CHECK),
    ("Opération refusée: the user DOESN'T want to proceed with this tool use", failures.PERMISSION),
    ("Erreur: « was blocked. For security, Claude Code »", failures.PERMISSION),
    ("Fehler: écrit, then cancelled: parallel tool call", failures.SIBLING),
])
def test_phrases_held_anywhere_are_found_in_any_case_in_ascii_and_other_text(text: str, kind: str) -> None:
    assert failures.non_failure(text) == kind  # non-ASCII text takes the case-insensitive pattern
    ascii_only = text.encode("ascii", "ignore").decode()
    assert failures.non_failure(ascii_only) == kind  # ASCII text takes the lowered substring test
    assert failures.non_failure("x" + ascii_only.swapcase()) == kind


def test_a_real_failure_that_quotes_no_host_phrase_is_a_failure_in_any_script() -> None:
    assert failures.non_failure("Exit code 1\nTypeError: Cannot read properties of undefined (reading 'map')") is None
    assert failures.non_failure("Exit code 1\nОшибка: модуль не найден — tool_use") is None


@pytest.mark.parametrize(("error", "kind"), [
    ("bash: line 1: nvcc: command not found", "tool"),
    ("zsh: command not found: jq", "tool"),
    ("sh: 1: python3.11: not found", "tool"),
    ("/bin/bash: line 387: find.: command not found", None),  # a typo glued to its argument: no tool to install
    ("/bin/bash: line 243: open.gitignore: command not found", None),
    ("Traceback (most recent call last):\nModuleNotFoundError: No module named 'numpy'", "module"),
    ("Error: Cannot find module 'express'", "module"),
    ("KeyError: 'OPENAI_API_KEY'", "variable"),
    ("KeyError: 'a'", None),
    ("./run.sh: line 3: DB_URL: unbound variable", "variable"),
    ("psql: error: connection to server at \"127.0.0.1\", port 5432 failed: Connection refused", "service"),
    ("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?", "service"),
    ("FAILED tests/test_x.py::test_y - AssertionError: assert 1 == 2", None),
    ("", None),
])
def test_a_broken_environment_is_told_from_the_error_alone(error: str, kind: str | None) -> None:
    assert failures.broken_environment(error) == kind


@pytest.mark.parametrize(("error", "nothing"), [
    ("Error", True), ("Exit code 1\nError", True), ("Exit code 2", True), ("failed.", True),
    ("File does not exist. Note: your current working directory is /work/project.", False),  # a file was missing
    ("Exit code 1\ncat: x: No such file or directory", False),
])
def test_says_nothing_is_a_bare_error_not_a_missing_file(error: str, nothing: bool) -> None:
    assert failures.says_nothing(error) is nothing
    assert failures.is_generic(error) or not nothing  # what says nothing is generic too
