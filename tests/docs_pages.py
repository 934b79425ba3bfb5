"""The README and the docs/ pages as the docs tests read them: their fenced blocks, and their prose with its
inline code, each with the page and line it comes from."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = {"bash", "sh", "shell", "console"}


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    body: str


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def blocks(path: Path) -> list[Block]:
    found, language, start, body = [], None, 0, []
    for number, line in enumerate(path.read_text().split("\n"), 1):
        fence = line.strip()
        if fence.startswith("```"):
            if language is None:
                language, start, body = fence[3:].strip(), number, []
            else:
                found.append(Block(relative(path), start, language, "\n".join(body)))
                language = None
        elif language is not None:
            body.append(line)
    assert language is None, f"{path}: a fence opened on line {start} is never closed"
    return found


def prose(path: Path) -> str:
    """The page with its fenced blocks blanked, line numbers kept."""
    lines, inside = [], False
    for line in path.read_text().split("\n"):
        if line.strip().startswith("```"):
            inside = not inside
            lines.append("")
        else:
            lines.append("" if inside else line)
    return "\n".join(lines)


def inline_code(path: Path) -> list[tuple[int, str]]:
    text = prose(path)
    return [(text.count("\n", 0, m.start()) + 1, " ".join(m.group(2).split()))
            for m in re.finditer(r"(`+)(.+?)\1", text, re.S)]
