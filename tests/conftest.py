"""Fixtures named after what they give: a fresh Memory, a database file, the anyio backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from vlk_memact import Memory, Settings


PROJECT = "test-project"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def settings() -> Settings:
    return Settings()


@pytest.fixture
def memory(settings: Settings) -> Iterator[Memory]:
    with Memory("sqlite::memory:", settings=settings, project=PROJECT) as m:
        yield m


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "vlk.db"


@pytest.fixture
def file_memory(db_path: Path, settings: Settings) -> Iterator[Memory]:
    with Memory(f"sqlite:///{db_path}", settings=settings, project=PROJECT) as m:
        yield m
