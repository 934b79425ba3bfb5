"""The guard's two predicates, as the guard replay on real runs (bench/guard.py) refined them:
what counts as a change (a shell command that only reads does not) and what counts as the same call
(indentation and line breaks are part of it)."""

from __future__ import annotations

import pytest

from vlk_memact.hosts.shared import guard
from vlk_memact.hosts.shared.read_only import is_read_only

READERS = [
    "ls -la",
    "ls",
    "cat setup.py",
    "grep -rn 'def foo' src 2>/dev/null | head -20",
    "nl -ba django/forms/models.py | sed -n '50,55p'",
    "find . -name '*.py' -path '*tests*' | head",
    "find . -name '*.py' | xargs grep -l Foo",
    "git status && git diff",
    "git log --oneline -5",
    "echo done",
    "pwd; ls src",
    "wc -l a.py b.py",

    "X=1 grep a b || echo none",
    "cat < input.txt",
    "ls missing &>/dev/null",
    "grep x f 2>&1 | head",
]

WRITERS = [
    "sed -i 's/a/b/' f.py",
    "sed --in-place 's/a/b/' f.py",
    "cat <<'EOF' > reproduce.py\nprint(1)\nEOF",
    "echo x > f",
    "echo x >> f",
    "ls > listing.txt",
    "python reproduce.py",
    'python -c \'open("f", "w").write("x")\'',
    "cd src && ls",
    "git checkout django/forms/models.py",
    "git stash",
    "find . -name '*.pyc' -delete",
    "find . -name '*.py' -exec sed -i s/a/b/ {} +",
    "find . | xargs rm",
    "pip install -e .",
    "rm -rf build",
    "mkdir -p reproduce_app && touch reproduce_app/__init__.py",
    "ls\nrm x",
    "echo $(rm x)",
    "echo `touch x`",
    "cat 'unbalanced",
    "tee out.txt",
    "open pydantic/main.py",  # SWE-agent: changes the file its edit command writes to
    "pip show django",  # a package manager: what it sees changes between two runs
    "sleep 5",  # a wait
    "curl -s https://example.org",  # a network fetch
    "ls &",  # a background process
    "cat log.txt & wait",
    "create reproduce.py",
    "edit 12:12\n        url = x\nend_of_edit",
    "submit",
]


@pytest.mark.parametrize("command", READERS)
def test_commands_that_only_read(command: str) -> None:
    assert is_read_only(command)


@pytest.mark.parametrize("command", WRITERS)
def test_commands_that_may_change_state(command: str) -> None:
    assert not is_read_only(command)


def test_an_empty_command_reads_nothing_and_changes_nothing() -> None:
    assert is_read_only("")


def test_a_successful_read_is_no_change_but_a_write_or_an_edit_is() -> None:
    assert not guard.changes_state("Bash", tool_input={"command": "ls -la"})
    assert guard.changes_state("Bash", tool_input={"command": "sed -i s/a/b/ f"})
    assert guard.changes_state("Bash", tool_input={})  # no command: cannot tell, so it may change
    assert guard.changes_state("Bash")
    assert guard.changes_state("Edit", tool_input={"file_path": "a.py"})
    assert not guard.changes_state("Read", tool_input={"file_path": "a.py"})


def test_the_same_call_up_to_spacing_within_a_line() -> None:
    key = guard.call_key("Bash", {"command": "python  reproduce.py\t--fast  "})
    assert key == guard.call_key("Bash", {"command": "python reproduce.py --fast"})
    assert key == guard.call_key("Bash", {"command": "python reproduce.py --fast\r\n"})
    assert key == guard.call_key("Bash", {"command": "python reproduce.py --fast", "description": "run it"})


def test_indentation_and_line_breaks_are_part_of_the_call() -> None:
    # A real SWE-agent run: the same edit failed twice with an IndentationError, then succeeded with the
    # line indented four spaces more. Collapsing whitespace made the fix look like the failing call.
    failing = "edit 12:12\n    url = 'file://' + str(path)\nend_of_edit"
    fixed = "edit 12:12\n        url = 'file://' + str(path)\nend_of_edit"
    assert guard.call_key("Bash", {"command": failing}) != guard.call_key("Bash", {"command": fixed})
    assert guard.call_key("Bash", {"command": "ls\nrm x"}) != guard.call_key("Bash", {"command": "ls rm x"})
    edit = {"file_path": "a.py", "old_string": "x = 1", "new_string": "if a:\n    x = 2"}
    assert guard.call_key("Edit", edit) != guard.call_key("Edit", edit | {"new_string": "if a:\nx = 2"})


def test_reads_between_two_failures_do_not_unlock_the_call() -> None:
    key = guard.call_key("Bash", {"command": "python reproduce.py"})
    ls = guard.CallEvent(
        guard.call_key("Bash", {"command": "ls"}),
        "success",
        guard.changes_state("Bash", tool_input={"command": "ls"}),
    )
    sed = guard.CallEvent(
        guard.call_key("Bash", {"command": "sed -i s/a/b/ x.py"}),
        "success",
        guard.changes_state("Bash", tool_input={"command": "sed -i s/a/b/ x.py"}),
    )
    assert guard.decide("deny", key, True, [ls]) == guard.DENY
    assert guard.decide("deny", key, True, [ls, sed]) == guard.WARN
    assert guard.decide("warn", key, True, [ls]) == guard.WARN


@pytest.mark.parametrize(("command", "expected"), [
    ("sed -i s/a/b/ f.py && python t.py", True),
    ("pip install x; pytest", True),
    ("echo x > f && false", True),
    ("cat <<'EOF' > f.py\nprint(1)\nEOF\npython f.py", True),
    ("cd /testbed && python t.py", False),
    ("python t.py", False),
    ("grep x f 2>/dev/null | head", False),
    ("edit 12:12 << 'end_of_edit'\n    x = 1\nend_of_edit", False),  # SWE-agent's edit as its shell runs it
    ("edit 12:12\n    x = 1\nend_of_edit", True),  # the same lines as bash reads them: three commands
    ("sed -i s/a/b/ f.py\npython t.py", True),  # a line break separates two commands like `;`
])
def test_a_failed_command_line_may_have_written_before_it_failed(command: str, expected: bool) -> None:
    from vlk_memact.hosts.shared.read_only import may_change_before_failing

    assert may_change_before_failing(command) is expected
