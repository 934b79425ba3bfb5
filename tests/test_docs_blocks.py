"""Every fenced block of the README and docs/ names a language this suite knows; JSON blocks parse and
Python blocks run (the shell blocks' commands are checked by tests/test_docs_commands.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from docs_pages import PAGES, SHELLS, blocks

CHECKED_LANGUAGES = SHELLS | {"json", "python"}
UNCHECKED_LANGUAGES = {
    "text": "output or pictures, not input",
    "nginx": "a reverse-proxy snippet: nginx is not part of the test environment; the server it forwards to is "
    "started by tests/test_http.py",
}


def test_every_fence_names_a_known_language() -> None:
    for path in PAGES:
        for block in blocks(path):
            assert block.language in CHECKED_LANGUAGES | set(UNCHECKED_LANGUAGES), (
                f"{block.page}:{block.line}: a fence without a language this test knows ({block.language!r})")


def test_json_blocks_parse() -> None:
    found = [b for p in PAGES for b in blocks(p) if b.language == "json"]
    assert found
    for block in found:
        json.loads(block.body)


@pytest.mark.slow
def test_python_blocks_run(tmp_path: Path) -> None:
    """The library example, against a temporary database instead of /tmp/agent.db."""
    found = [b for p in PAGES for b in blocks(p) if b.language == "python"]
    assert found
    for number, block in enumerate(found):
        source = re.sub(r"sqlite:///[^\"']+", f"sqlite:///{tmp_path}/example{number}.db", block.body)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VLK_", "DATABASE_URL"))}
        done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, f"{block.page}:{block.line}:\n{done.stderr[-2000:]}"
