"""Every relative link and image of the README and docs/ resolves (anchors included), every docs page is
reachable from the README, and every file of this repository a page names in inline code exists."""

from __future__ import annotations

import re
from pathlib import Path

from docs_pages import PAGES, ROOT, inline_code, prose, relative


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"\]\([^)]*\)", "", text).replace("[", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    for line in prose(path).split("\n"):
        match = re.match(r"#{1,6}\s+(.*)", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            if count:
                seen[f"{base}-{count}"] = 1
    return set(seen)


def links(path: Path) -> list[tuple[int, str]]:
    text = re.sub(r"(`+).+?\1", lambda m: " " * len(m.group(0)), prose(path), flags=re.S)
    return [(text.count("\n", 0, m.start()) + 1, m.group(1))
            for m in re.finditer(r"\]\(\s*([^)\s]+)(?:\s+\"[^\"]*\")?\s*\)", text)]


def test_relative_links_and_images_resolve() -> None:
    checked, broken = 0, []
    for path in PAGES:
        for number, target in links(path):
            if re.match(r"[a-z][a-z+.-]*:", target):
                continue  # http:, https:, mailto:
            checked += 1
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            where = f"{relative(path)}:{number}: {target}"
            if not resolved.exists():
                broken.append(f"{where} names no file")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{where}: no such heading in {relative(resolved)}")
    assert checked > 40
    assert not broken, "\n".join(broken)


def test_every_docs_page_and_image_is_reachable_from_the_readme() -> None:
    reached, todo = set(), [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        if page in reached:
            continue
        reached.add(page)
        for _, target in links(page):
            file = target.partition("#")[0]
            if file and not re.match(r"[a-z][a-z+.-]*:", file):
                resolved = (page.parent / file).resolve()
                if resolved.suffix == ".md" and resolved.exists():
                    todo.append(resolved)
                else:
                    reached.add(resolved)
    docs = {p.resolve() for p in (ROOT / "docs").iterdir() if p.suffix in {".md", ".png"}}
    assert not docs - reached, sorted(relative(p) for p in docs - reached)


REPOSITORY_PATH = r"(?<![\w./-])((?:bench|tests|scripts|hooks|\.ci|vlk_memact)/[\w./-]*\w)"


def test_paths_the_pages_name_exist() -> None:
    """A file of this repository named in inline code (`bench/guard.py`, `vlk_memact/hosts/shared/guard.py`) exists."""
    for path in PAGES:
        for number, code in inline_code(path):
            for token in re.findall(REPOSITORY_PATH, code):
                if token.startswith("hooks/") and "." not in token:
                    continue  # Codex's `hooks/list` is a method of its app-server, not a file
                where = ROOT / "src" / token if token.startswith("vlk_memact/") else ROOT / token
                assert where.exists(), f"{relative(path)}:{number}: `{token}` does not exist"
