"""The one shell reader (hosts/shared/shell.py) and what the guard and the step summaries make of it: commands
split as bash splits them (line breaks included), writers that look like readers, SWE-agent's own
commands kept in its adapter (bench/swe_agent.py)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from vlk_memact.hosts.shared import read_only, shell, steps

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))

import swe_agent  # noqa: E402


def test_a_line_break_ends_a_command() -> None:
    assert steps.program_of("cd /repo\npython run.py") == "python run.py"
    assert steps.program_of("cd /repo\n\n  python -m pytest -x tests") == "python -m pytest"
    assert steps.program_of("export X=1\nnpm test") == "npm test"
    assert [c.words for c in shell.parse("ls\nrm -rf x").commands] == [("ls",), ("rm", "-rf", "x")]
    assert not read_only.is_read_only("ls\nrm -rf x")
    assert read_only.is_read_only("ls\ncat a.py\n")


def test_a_continued_line_is_one_command() -> None:
    assert [c.words for c in shell.parse("ls \\\n  -la src").commands] == [("ls", "-la", "src")]
    assert steps.program_of("python \\\n  reproduce.py") == "python reproduce.py"


def test_a_comment_ends_at_its_line_break() -> None:
    assert not read_only.is_read_only("ls # look first\nrm -rf build")
    assert read_only.is_read_only("ls # rm -rf build")
    assert read_only.is_read_only("grep '#include' a.c")  # quoted: text, not a comment
    assert [c.words for c in shell.parse("echo a#b").commands] == [("echo", "a#b")]


def test_a_heredoc_body_is_content_not_commands() -> None:
    line = shell.parse("cat <<'EOF' > f.py\nrm -rf /\nEOF\npython f.py")
    assert [c.words for c in line.commands] == [("cat",), ("python", "f.py")]
    assert line.heredoc and line.commands[0].writes and line.commands[0].heredoc
    assert steps.program_of("cat <<EOF > f.py\nimport os\nEOF\npython f.py") == "cat"
    assert read_only.may_change_before_failing("cat <<EOF > f.py\nx\nEOF\npython f.py")
    assert not read_only.is_read_only("cat <<EOF\nhello\nEOF")  # a heredoc feeds a program: unknown


@pytest.mark.parametrize("command", [
    "sort -o f x.txt", "sort -of x.txt", "sort --output=f x.txt", "uniq in out", "uniq -c in out",
    "tree -o f", "tree -R", "date -s '2020-01-01'", "date --set=tomorrow", "date 010112002020", "hostname X",
    "hostname -F /etc/hostname", "xxd in out", "git diff --output=d.patch", "git log --output=x",
    "printf -v X %s 1", "file -C -m magic",
])
def test_readers_that_write_with_these_arguments(command: str) -> None:
    assert not read_only.is_read_only(command)


@pytest.mark.parametrize("command", [
    "sort x.txt", "sort -u -k2 x.txt | uniq -c", "uniq -f 2 in", "uniq in", "tree -L 2", "date", "date +%s",
    "date -d yesterday +%F", "hostname", "hostname -f", "hostname --short", "xxd f | head", "git diff",
    "printf '%s\\n' a", "file a.py",
])
def test_the_same_readers_reading(command: str) -> None:
    assert read_only.is_read_only(command)


@pytest.mark.parametrize("command", ["goto 583", "scroll_down", "scroll_up", 'search_file "def snoop"',
                                     'search_dir "a > b" src', 'find_file "tracer.py"'])
def test_swe_agent_commands_are_not_generic_readers(command: str) -> None:
    assert not read_only.is_read_only(command)  # a shell with no SWE-agent does not know them
    tool, tool_input = swe_agent.tool_call(command)
    assert tool in ("Read", "Grep", "Glob") and tool_input == {"command": command}


def test_swe_agent_edit_is_sent_as_its_shell_runs_it() -> None:
    action = "edit 12:12\n    x = 1\nend_of_edit"
    tool, tool_input = swe_agent.tool_call(action)
    assert tool == "Bash" and tool_input["command"] == "edit 12:12 << 'end_of_edit'\n    x = 1\nend_of_edit"
    assert not read_only.may_change_before_failing(tool_input["command"])
    assert read_only.may_change_before_failing(action)  # as bash would read the raw lines
    assert swe_agent.tool_call("open a.py") == ("Bash", {"command": "open a.py"})
    assert swe_agent.tool_call("goto 5 > x")[0] == "Bash"


def test_unbalanced_quotes_never_raise() -> None:
    line = shell.parse("cat 'unbalanced\nls")
    assert not line.complete and [c.words for c in line.commands] == [("cat", "'unbalanced"), ("ls",)]
    assert not read_only.is_read_only("cat 'unbalanced")
    assert read_only.may_change_before_failing("echo 'x")
    assert steps.program_of("python 'x.py") == "python 'x.py"


def test_one_tokeniser_in_the_hooks() -> None:
    """Only shell.py tokenises command lines (the three differing readers of issue 37); the installers'
    shlex.split/join read and write our own hook commands, not an agent's."""
    hosts = ROOT / "src" / "vlk_memact" / "hosts"
    lexers = sorted(p.relative_to(hosts).as_posix() for p in hosts.rglob("*.py") if "shlex.shlex(" in p.read_text())
    assert lexers == ["shared/shell.py"]
    for name in ("read_only.py", "steps.py", "guard.py", "capture.py"):
        tree = ast.parse((hosts / "shared" / name).read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert "shlex" not in imported, name
