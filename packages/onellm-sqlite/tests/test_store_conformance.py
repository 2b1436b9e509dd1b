"""The instance store conformance suite, unchanged, on a SQLite file."""

from __future__ import annotations

from pathlib import Path

from onellm.instances import InstanceStore
from onellm.testing.store_conformance import InstanceStoreConformance
from onellm_sqlite import SqliteInstanceStore


class TestSqliteInstanceStore(InstanceStoreConformance):
    other_process_factory = "sqlite_store_factory:open_store"

    def open_store(self, location: Path) -> InstanceStore:
        return SqliteInstanceStore(location / "onellm.db", durable=False)

    async def close_store(self, store: InstanceStore) -> None:
        assert isinstance(store, SqliteInstanceStore)
        store.close()


class TestDurableSqliteInstanceStore(InstanceStoreConformance):
    def open_store(self, location: Path) -> InstanceStore:
        return SqliteInstanceStore(location / "onellm.db")

    async def close_store(self, store: InstanceStore) -> None:
        assert isinstance(store, SqliteInstanceStore)
        store.close()
