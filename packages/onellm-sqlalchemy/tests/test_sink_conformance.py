"""The record sink conformance suite, unchanged, on SQLite and on PostgreSQL, through sync and async engines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import MetaData, create_engine
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.orm import sessionmaker
from sqlalchemy.pool import NullPool
from sqlalchemy_databases import ensure_tables, postgres_tables, postgres_url, sqlite_engine, sqlite_url, wal

from onellm.clock import FakeClock
from onellm.instances import InstanceStore
from onellm.records import RecordSink
from onellm.testing.sink_conformance import RecordSinkConformance
from onellm_sqlalchemy import OnellmTables, SqlAlchemyInstanceStore, SqlAlchemyRecordSink, tables


class _Databases(RecordSinkConformance):
    """Opens engines per handle and disposes of them on close; the store shares the sink's tables."""

    engines: dict[int, Any]

    def _keep(self, handle: Any, engine: Any) -> Any:
        if not hasattr(self, "engines"):
            self.engines = {}
        self.engines[id(handle)] = engine
        return handle

    async def _dispose(self, handle: object) -> None:
        engine = self.engines.pop(id(handle), None)
        if isinstance(engine, AsyncEngine):
            await engine.dispose()
        elif engine is not None:
            engine.dispose()

    async def close_sink(self, sink: RecordSink) -> None:
        await self._dispose(sink)

    async def close_store(self, store: InstanceStore) -> None:
        await self._dispose(store)

    def tables_at(self, location: Path) -> OnellmTables:
        raise NotImplementedError

    def sync_engine(self, location: Path) -> Any:
        raise NotImplementedError

    def open_store(self, location: Path) -> InstanceStore:
        engine = self.sync_engine(location)
        found = ensure_tables(engine, self.tables_at(location))
        return self._keep(SqlAlchemyInstanceStore(engine, tables=found), engine)  # type: ignore[no-any-return]


class TestSqliteEngineSink(_Databases):
    def tables_at(self, location: Path) -> OnellmTables:
        return tables(MetaData())

    def sync_engine(self, location: Path) -> Any:
        return sqlite_engine(location)

    def open_sink(self, location: Path, *, clock: FakeClock) -> RecordSink:
        engine = self.sync_engine(location)
        found = ensure_tables(engine, self.tables_at(location))
        return self._keep(SqlAlchemyRecordSink(sessionmaker(engine), tables=found, clock=clock), engine)  # type: ignore[no-any-return]


class TestAioSqliteSink(TestSqliteEngineSink):
    def open_sink(self, location: Path, *, clock: FakeClock) -> RecordSink:
        ensure_tables(self.sync_engine(location), self.tables_at(location))
        engine = create_async_engine(sqlite_url(location).replace("sqlite:", "sqlite+aiosqlite:"))
        wal(engine.sync_engine)
        return self._keep(SqlAlchemyRecordSink(engine, tables=self.tables_at(location), clock=clock), engine)  # type: ignore[no-any-return]


@pytest.mark.usefixtures("postgres_schema")
class TestPostgresEngineSink(_Databases):
    def tables_at(self, location: Path) -> OnellmTables:
        return postgres_tables(location)

    def sync_engine(self, location: Path) -> Any:
        return create_engine(postgres_url(), poolclass=NullPool)

    def open_sink(self, location: Path, *, clock: FakeClock) -> RecordSink:
        engine = self.sync_engine(location)
        found = ensure_tables(engine, self.tables_at(location))
        return self._keep(SqlAlchemyRecordSink(engine, tables=found, clock=clock), engine)  # type: ignore[no-any-return]


@pytest.mark.usefixtures("postgres_schema")
class TestPostgresAsyncEngineSink(TestPostgresEngineSink):
    def open_sink(self, location: Path, *, clock: FakeClock) -> RecordSink:
        sync = self.sync_engine(location)
        found = ensure_tables(sync, self.tables_at(location))
        sync.dispose()
        engine = create_async_engine(postgres_url(), poolclass=NullPool)
        return self._keep(SqlAlchemyRecordSink(engine, tables=found, clock=clock), engine)  # type: ignore[no-any-return]
