"""Which project a folder belongs to: its git repository, named the same on every machine.

Why: a project keyed by the absolute path of a checkout is an island: two teammates' checkouts of one
repository (or one checkout moved, re-cloned, or a worktree) never share a lesson or a fix. The key is
the normalised URL of the repository's `origin` remote (else its first remote), so that
`https://host/acme/app.git`, `git@host:acme/app.git` and `ssh://git@host/acme/app` are one project;
a repository with no remote keeps the path of its main checkout (what every earlier release used).
Everything is read from the files git writes (`.git`, `gitdir:`, `commondir`, `config`): no git process
runs, so a hook stays fast and works where git is not installed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT = "default"  # the project outside any repository (and without VLK_PROJECT)
_SECTION = re.compile(r'^\s*\[\s*remote\s+"((?:[^"\\]|\\.)*)"\s*\]')
_OTHER_SECTION = re.compile(r"^\s*\[")
_URL = re.compile(r"^\s*url\s*=\s*(.*?)\s*$", re.IGNORECASE)
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)://(?:[^@/]*@)?([^/:]*)(?::\d*)?(/.*)?$", re.IGNORECASE)
_SCP = re.compile(r"^(?:[^@/:]+@)?([^/:]+):(?!/)(.+)$")  # git@host:acme/app.git (not C:/… nor /a:b)


@dataclass(frozen=True, slots=True)
class Identity:
    """A folder's project: the key memories are stored under, the checkout's root, and why."""

    key: str  # the project key: a normalised remote ("host/acme/app"), a repository path, or "default"
    root: str | None  # the top folder of the checkout (a worktree's own folder); None outside a repository
    remote: str | None  # the remote URL as configured (userinfo removed), when the key comes from one
    why: str  # one sentence for `vlk-memact doctor`
    main_root: str | None = None  # the root of the main checkout (a worktree's repository): the old key

    @property
    def path_key(self) -> str | None:
        """The key every earlier release used for this checkout (its main repository's root path), when it
        differs from the key now: memories stored under it are merged into the key (engine/projects.py)."""
        return self.main_root if self.remote and self.main_root and self.main_root != self.key else None


def normalise_remote(url: str) -> str | None:
    """host/owner/name for a remote URL in any of git's forms (scheme, port, user, password and `.git` dropped,
    the host lower-cased); a local path or file:// remote: its absolute path without `.git`; None when empty."""
    text = url.strip()
    if not text:
        return None
    scheme = _SCHEME.match(text)
    if scheme and scheme.group(1).lower() != "file":
        host, path = scheme.group(2).lower(), (scheme.group(3) or "")
    elif scheme:  # file:///srv/git/app.git
        host, path = "", text.split("://", 1)[1]
    elif (scp := _SCP.match(text)) and not re.match(r"^[A-Za-z]:[\\/]", text):
        host, path = scp.group(1).lower(), scp.group(2)
    else:  # a local path
        host, path = "", text
    path = re.sub(r"/+", "/", path.replace("\\", "/")).strip("/")
    path = path.removesuffix(".git").removesuffix("/")
    if path.startswith("~"):  # ssh://host/~user/app: the user's home on that host
        path = path[1:]
    if not host:
        return "/" + path if path else None
    return f"{host}/{path}" if path else host


def _remote_url(config: Path) -> tuple[str, str] | None:
    """(remote name, url) of `origin`, else of the first remote with a url, in a git config file."""
    try:
        lines = config.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    found: list[tuple[str, str]] = []
    current: str | None = None
    for line in lines:
        section = _SECTION.match(line)
        if section:
            current = section.group(1)
            continue
        if _OTHER_SECTION.match(line):
            current = None
            continue
        url = _URL.match(line) if current is not None else None
        if url and current is not None and not any(name == current for name, _ in found):
            value = url.group(1)
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            found.append((current, value))
    for name, value in found:
        if name == "origin":
            return name, value
    return found[0] if found else None


def _git_dirs(folder: Path, marker: Path) -> tuple[Path, Path]:
    """(the checkout's own git dir, the repository's common git dir) of a `.git` file or folder."""
    if marker.is_dir():
        return marker, marker
    gitdir = marker.read_text(encoding="utf-8").strip().removeprefix("gitdir:").strip()
    own = (folder / gitdir).resolve()
    common = own / "commondir"
    if common.is_file():
        return own, (own / common.read_text(encoding="utf-8").strip()).resolve()
    return own, own


def _without_userinfo(url: str) -> str:
    return re.sub(r"^([a-z][a-z0-9+.-]*://)[^@/]*@", r"\1", url, flags=re.IGNORECASE)


def identify(start: Path | str | None = None) -> Identity:
    """The project of the folder `start` (the working directory when None)."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        marker = folder / ".git"
        if not (marker.is_dir() or marker.is_file()):
            continue
        root = str(folder)
        try:
            own, common = _git_dirs(folder, marker)
        except (OSError, ValueError):  # unreadable, not UTF-8, or a path the system refuses
            return Identity(root, root, None, f"the git repository at {root} (its .git file is unreadable: the path)")
        # A worktree's main repository is the folder above the common git dir (what earlier releases keyed by).
        main = str(common.parent) if own != common else root
        remote = _remote_url(common / "config") or (_remote_url(own / "config") if own != common else None)
        key = normalise_remote(remote[1]) if remote else None
        if remote and key:
            shown = _without_userinfo(remote[1])
            return Identity(key, root, shown, f"the remote {remote[0]!r} ({shown}) of the git repository at {root}",
                            main)
        return Identity(main, root, None, f"the git repository at {main} has no remote: its path "
                        "(add an `origin` remote to share its memories across checkouts)", main)
    return Identity(DEFAULT, None, None, f"{here} is in no git repository")
