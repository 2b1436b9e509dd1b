"""Opens the store under test in another process (the conformance suite's cross-process lease case)."""

from __future__ import annotations

from pathlib import Path

from onellm_sqlite import SqliteInstanceStore


def open_store(location: str) -> SqliteInstanceStore:
    """The store the tests keep at `location` (a directory)."""
    return SqliteInstanceStore(Path(location) / "onellm.db", durable=False)
