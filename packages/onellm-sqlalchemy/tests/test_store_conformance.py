"""The instance store conformance suite, unchanged, on SQLite and on PostgreSQL, through sync and async engines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import MetaData, create_engine
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.orm import sessionmaker
from sqlalchemy.pool import NullPool
from sqlalchemy_databases import (
    ensure_tables,
    postgres_tables,
    postgres_url,
    sqlite_engine,
    sqlite_url,
    wal,
)

from onellm.instances import InstanceStore
from onellm.testing.store_conformance import InstanceStoreConformance
from onellm_sqlalchemy import SqlAlchemyInstanceStore, tables


class _Closing(InstanceStoreConformance):
    """Disposes of the engine each handle opened."""

    engines: dict[int, Any]

    def _keep(self, store: SqlAlchemyInstanceStore, engine: Any) -> SqlAlchemyInstanceStore:
        if not hasattr(self, "engines"):
            self.engines = {}
        self.engines[id(store)] = engine
        return store

    async def close_store(self, store: InstanceStore) -> None:
        engine = self.engines.pop(id(store), None)
        if isinstance(engine, AsyncEngine):
            await engine.dispose()
        elif engine is not None:
            engine.dispose()


class TestSqliteEngine(_Closing):
    other_process_factory = "sqlalchemy_databases:open_sqlite"

    def open_store(self, location: Path) -> InstanceStore:
        engine = sqlite_engine(location)
        found = ensure_tables(engine, tables(MetaData()))
        return self._keep(SqlAlchemyInstanceStore(engine, tables=found), engine)


class TestSqliteSessionmaker(_Closing):
    def open_store(self, location: Path) -> InstanceStore:
        engine = sqlite_engine(location)
        found = ensure_tables(engine, tables(MetaData(), prefix="app_onellm_"))
        return self._keep(SqlAlchemyInstanceStore(sessionmaker(engine), tables=found), engine)


class TestAioSqliteAsyncEngine(_Closing):
    def open_store(self, location: Path) -> InstanceStore:
        ensure_tables(sqlite_engine(location), tables(MetaData()))
        engine = create_async_engine(sqlite_url(location).replace("sqlite:", "sqlite+aiosqlite:"))
        wal(engine.sync_engine)
        return self._keep(SqlAlchemyInstanceStore(engine, tables=tables(MetaData())), engine)


@pytest.mark.usefixtures("postgres_schema")
class TestPostgresEngine(_Closing):
    other_process_factory = "sqlalchemy_databases:open_postgres"

    def open_store(self, location: Path) -> InstanceStore:
        engine = create_engine(postgres_url(), poolclass=NullPool)
        found = ensure_tables(engine, postgres_tables(location))
        return self._keep(SqlAlchemyInstanceStore(engine, tables=found), engine)


@pytest.mark.usefixtures("postgres_schema")
class TestPostgresAsyncSessionmaker(_Closing):
    other_process_factory = "sqlalchemy_databases:open_postgres"

    def open_store(self, location: Path) -> InstanceStore:
        sync = create_engine(postgres_url(), poolclass=NullPool)
        found = ensure_tables(sync, postgres_tables(location))
        sync.dispose()
        engine = create_async_engine(postgres_url(), poolclass=NullPool)
        return self._keep(SqlAlchemyInstanceStore(async_sessionmaker(engine), tables=found), engine)
