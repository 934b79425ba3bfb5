"""Fixtures named after what they give: a fresh Memory on each store, a database file, the anyio backend,
the viewer on a seeded memory; and what keeps tests independent of order and worker (pytest-xdist runs
them in parallel): each test its own user folders, each worker its own PostgreSQL database."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# Each host's tests live together in tests/hosts/<host>/ (rootless modules, unique basenames). A module of one folder
# imports helpers of another's (test_impact_hosts.py uses test_hooks_gemini.py's events), so every folder is on the
# path whatever pytest happens to import first (a single file, -k, any worker's share).
for _folder in sorted((Path(__file__).resolve().parent / "hosts").iterdir()):
    if _folder.is_dir() and str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from worker_isolation import USER_FOLDERS, drop_worker_database, make_worker_database, user_folders

from vlk_memact import Memory, Settings

if TYPE_CHECKING:
    from viewer_site import Site

PROJECT = "test-project"

# A user who installed vlk-memact has it on PATH: committed project installs run `vlk-memact` from PATH
# (hosts/shared/install_files.executable), so this environment's console scripts go first, as an activated virtualenv's.
_SCRIPTS = str(Path(__import__("sys").executable).parent)
if _SCRIPTS not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _SCRIPTS + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin")


# ---- PostgreSQL ----
# VLK_TEST_POSTGRES_URL names the server (default below). Without a reachable server PostgreSQL
# tests are skipped, except when CI is set: then they fail, so CI can never pass by skipping.
# The `memory` and `database_url` fixtures run every test on both stores; VLK_TEST_BACKEND=sqlite
# (or postgres) limits them to one.

POSTGRES_URL = os.environ.get("VLK_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
WORKERS_PER_CORE = 1
TARGETED_FILES = 3  # at most this many test files (or tests in them) named on the command line: one process
_SERVER_URL = POSTGRES_URL  # the database named there; POSTGRES_URL becomes this worker's own (pytest_configure)
_ONLY = os.environ.get("VLK_TEST_BACKEND", "").strip().lower()
if _ONLY not in ("", "sqlite", "postgres"):
    raise pytest.UsageError(f"VLK_TEST_BACKEND must be sqlite or postgres, got {_ONLY!r}")
BACKENDS = [_ONLY] if _ONLY else ["sqlite", "postgres"]

_postgres_problem: list[str | None] = []  # cached: [None] if reachable, [reason] if not


def require_postgres() -> None:
    """Skip the calling test if no PostgreSQL is reachable; fail instead when CI is set."""
    if not _postgres_problem:
        try:
            import psycopg
        except ImportError as exc:
            _postgres_problem.append(f"psycopg is not installed (pip install 'vlk-memact[postgres]'): {exc}")
        else:
            try:
                with psycopg.connect(POSTGRES_URL, connect_timeout=3):
                    pass
                _postgres_problem.append(None)
            except psycopg.Error as exc:
                _postgres_problem.append(f"PostgreSQL at {POSTGRES_URL} is not reachable: {exc}")
    problem = _postgres_problem[0]
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(problem + " (CI is set, so this fails instead of skipping)")
        pytest.skip(problem)


def with_query(url: str, **params: str) -> str:
    """The URL with query parameters appended (values must not need percent-encoding)."""
    extra = "&".join(f"{k}={v}" for k, v in params.items())
    return url + ("&" if "?" in url else "?") + extra


@contextmanager
def fresh_postgres_schema() -> Iterator[tuple[str, str]]:
    """(URL selecting a new empty schema, schema name); the schema is dropped afterwards."""
    import psycopg

    schema = "vlk_test_" + uuid.uuid4().hex[:12]
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield with_query(POSTGRES_URL, schema=schema), schema
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """How many workers `-n auto` (the default, pyproject.toml) starts: WORKERS_PER_CORE per core
    (bench/results/ci-time.md has the measurement that chose it), or PYTEST_XDIST_AUTO_NUM_WORKERS.
    A run of a few named files or tests stays in one process: starting workers would cost it more than
    it gains."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    if config.args and len(config.args) <= TARGETED_FILES and all(".py" in a for a in config.args):
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, round(WORKERS_PER_CORE * cores))


def pytest_configure(config: pytest.Config) -> None:
    """Each pytest process (an xdist worker, or the only one) gets its own database on the server, so
    that a test's schemas, roles and connections never meet another worker's; schemas per test inside it."""
    global POSTGRES_URL
    if _wants_postgres(config):
        POSTGRES_URL = make_worker_database(_SERVER_URL) or _SERVER_URL


def pytest_unconfigure(config: pytest.Config) -> None:
    if POSTGRES_URL != _SERVER_URL:
        drop_worker_database(_SERVER_URL, POSTGRES_URL)


def _wants_postgres(config: pytest.Config) -> bool:
    """Not in the xdist controller (it runs no test), nor when only SQLite is asked for."""
    controller = not hasattr(config, "workerinput") and bool(config.getoption("numprocesses", None))
    return _ONLY != "sqlite" and not controller


@pytest.fixture(scope="session", autouse=True)
def _worker_user_folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """HOME, the XDG folders and the runtime directory of this worker: module- and session-scoped fixtures
    (which start before any test's own folders exist) never touch the real user's."""
    saved = {name: os.environ.get(name) for name in USER_FOLDERS}
    os.environ.update(user_folders(tmp_path_factory.mktemp("worker-user")))
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def _own_user_folders(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own HOME, XDG folders and runtime directory (so its own warm hook server, whose socket
    is named after them), and no DATABASE_URL of the developer's shell: whichever worker runs it, and
    whatever ran before, a test starts from an empty user."""
    for name, value in user_folders(tmp_path_factory.mktemp("user", numbered=True)).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("DATABASE_URL", raising=False)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A DATABASE_URL pointing to a fresh PostgreSQL schema, dropped after the test."""
    require_postgres()
    with fresh_postgres_schema() as (url, _):
        yield url


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def settings() -> Settings:
    return Settings()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "vlk.db"


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, db_path: Path) -> str:
    """A fresh database on each store: a SQLite file, or a new PostgreSQL schema."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{db_path}"


@pytest.fixture
def memory(database_url: str, settings: Settings) -> Iterator[Memory]:
    with Memory(database_url, settings=settings, project=PROJECT) as m:
        yield m


@pytest.fixture
def file_memory(db_path: Path, settings: Settings) -> Iterator[Memory]:
    """Always SQLite: for tests that open the file themselves."""
    with Memory(f"sqlite:///{db_path}", settings=settings, project=PROJECT) as m:
        yield m


# ---- the viewer ----
# Imported inside the fixtures: Starlette and the viewer load only for the tests that use them.


@pytest.fixture
def site(memory: Memory) -> Iterator[Site]:
    """The viewer on a seeded memory (tests/viewer_site.py), read-only as `vlk-memact ui` starts."""
    from viewer_site import open_site

    yield open_site(memory, allow_write=False)


@pytest.fixture
def writable(memory: Memory) -> Iterator[Site]:
    """The same viewer started with --allow-write."""
    from viewer_site import open_site

    yield open_site(memory, allow_write=True)
