"""A call's target (file or program) and summary: what fix memory names as a step and what tells a changed
version of a failing call from another call (hosts/shared/steps.py)."""

from __future__ import annotations

import pytest

from vlk_memact.hosts.shared import steps
from vlk_memact.hosts.shared.guard import EDIT_TOOLS, SHELL_TOOLS


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("sh check_env.sh", "sh check_env.sh"),
        ("cd /repo && python reproduce.py --fast", "python reproduce.py"),
        ("python3 -m pytest tests/test_x.py -q", "python -m pytest"),
        ("python3 reproduce.py", "python reproduce.py"),
        ("pip3 install numpy", "pip install"),
        ("FOO=1 timeout 30 npm run build", "npm run"),
        ("cp .env.example .env", "cp"),
        ("/usr/bin/make -j2 all", "make all"),
        ("python3.11 -c 'print(1)'", "python print(1)"),
        ("sudo apt-get install -y jq", "apt-get"),
        ("cd /tmp", None),
        ("", None),
        ("echo 'unbalanced", "echo"),
    ],
)
def test_the_program_of_a_command_line(command: str, program: str | None) -> None:
    assert steps.program_of(command) == program


def test_the_target_of_a_file_tool_is_its_file_and_of_a_shell_call_its_program() -> None:
    assert steps.target_of("Edit", {"file_path": "/r/config.py", "old_string": "a"}, SHELL_TOOLS) == "/r/config.py"
    assert steps.target_of("Read", {"file_path": " /r/a.py "}, SHELL_TOOLS) == "/r/a.py"
    assert steps.target_of("Bash", {"command": "git status"}, SHELL_TOOLS) == "git status"
    assert steps.target_of("WebFetch", {"url": "https://x"}, SHELL_TOOLS) is None
    assert steps.target_of("Bash", "not a mapping", SHELL_TOOLS) is None


def test_a_command_is_summarised_by_its_first_line_and_an_edit_by_its_diff() -> None:
    assert steps.summary_of("Bash", {"command": "cp .env.example .env\necho done"}, SHELL_TOOLS,
                            EDIT_TOOLS) == "cp .env.example .env …"
    edit = {"file_path": "config.py", "old_string": "x = 1\nDEBUG = False\ny = 2",
            "new_string": "x = 1\nDEBUG = True\nPORT = 80\ny = 2"}
    assert steps.summary_of("Edit", edit, SHELL_TOOLS, EDIT_TOOLS) == (
        "Edit config.py: -'DEBUG = False' +'DEBUG = True / PORT = 80'")
    assert steps.summary_of("Write", {"file_path": "a.txt", "content": "1\n2\n"}, SHELL_TOOLS,
                            EDIT_TOOLS) == "Write a.txt (2 lines)"
    multi = {"file_path": "m.py", "edits": [{"old_string": str(i), "new_string": str(i + 1)} for i in range(5)]}
    assert steps.summary_of("MultiEdit", multi, SHELL_TOOLS, EDIT_TOOLS) == (
        "MultiEdit m.py: -'0' +'1'; -'1' +'2'; -'2' +'3' (+2 more edits)")


def test_a_summary_is_redacted_capped_and_never_raises() -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    text = steps.summary_of("Bash", {"command": f"curl -H 'Authorization: token {secret}' https://x"},
                            SHELL_TOOLS, EDIT_TOOLS)
    assert secret not in text
    huge = steps.summary_of("Bash", {"command": "echo " + "x" * 100_000}, SHELL_TOOLS, EDIT_TOOLS)
    assert len(huge) <= steps.SUMMARY_CHARS and huge.startswith("echo xxx")
    for odd in (None, [], {"old_string": b"bytes"}, {"command": 3}, {"file_path": "\x00bin", "content": "\udcff"}):
        assert isinstance(steps.summary_of("Edit", odd, SHELL_TOOLS, EDIT_TOOLS), str)
