"""The databases the SQLAlchemy tests run on: SQLite files, and a real PostgreSQL server.

PostgreSQL comes from `ONELLM_TEST_POSTGRES_URL` (`.ci/postgres start` installs and starts one and prints it). When it
is not set, the PostgreSQL tests skip with a message saying how to start one, except in CI (`CI` set), where they
fail: CI must run them (a CI job without a server to give, such as a macOS or Windows runner, says
`ONELLM_TEST_POSTGRES=skip`). When it is set and the server cannot be reached, they fail.

Each test session works in a schema of its own (`ONELLM_TEST_POSTGRES_SCHEMA`, dropped at the end), and each test in
tables named after its temporary directory, so tests never see each other's rows. Another process (the conformance
suite's cross-process lease case, the four-runner race) finds the same tables through `open_postgres(location)`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, MetaData, create_engine, event, text
from sqlalchemy.pool import NullPool

from onellm_sqlalchemy import OnellmTables, SqlAlchemyInstanceStore, tables

URL_VARIABLE = "ONELLM_TEST_POSTGRES_URL"
SCHEMA_VARIABLE = "ONELLM_TEST_POSTGRES_SCHEMA"
OPT_OUT_VARIABLE = "ONELLM_TEST_POSTGRES"  # "skip": a CI job that has no PostgreSQL to give (macOS, Windows runners)
HOW = (
    f"PostgreSQL tests need a server: set {URL_VARIABLE}=postgresql://user@127.0.0.1:5432/db, or, as root on "
    'Debian or Ubuntu, run `eval "$(.ci/postgres start)"`, which installs PostgreSQL and starts a throwaway server'
)


def postgres_url(driver: str = "psycopg") -> str:
    """The test server's URL for SQLAlchemy with `driver`; skips (fails in CI) when there is none."""
    url = os.environ.get(URL_VARIABLE, "").strip()
    if not url:
        in_ci = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
        if in_ci and os.environ.get(OPT_OUT_VARIABLE, "").strip().lower() != "skip":
            pytest.fail(f"CI runs the PostgreSQL tests, but {URL_VARIABLE} is not set. {HOW}")
        pytest.skip(HOW)
    for scheme in ("postgresql://", "postgres://"):
        if url.startswith(scheme):
            return f"postgresql+{driver}://" + url[len(scheme) :]
    return url


def prefix_for(location: str | Path) -> str:
    """Table names of one test: `t<hash of its directory>_`."""
    return "t" + hashlib.sha256(str(location).encode()).hexdigest()[:12] + "_"


def sqlite_url(location: str | Path) -> str:
    return f"sqlite:///{Path(location) / 'onellm.db'}"


def wal(engine: Engine) -> Engine:
    """SQLite in write-ahead-log mode, so readers never wait for a writer (as the SQLite package does)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()

    return engine


def sqlite_engine(location: str | Path) -> Engine:
    return wal(create_engine(sqlite_url(location), connect_args={"timeout": 30}))


def postgres_tables(location: str | Path) -> OnellmTables:
    schema = os.environ.get(SCHEMA_VARIABLE) or None
    return tables(MetaData(), prefix=prefix_for(location), schema=schema)


def ensure_tables(engine: Engine, found: OnellmTables) -> OnellmTables:
    found.create_all(engine)
    return found


def open_sqlite(location: str) -> SqlAlchemyInstanceStore:
    """For another process: the store the tests keep in `location/onellm.db`."""
    engine = sqlite_engine(location)
    return SqlAlchemyInstanceStore(engine, tables=ensure_tables(engine, tables(MetaData())))


def open_postgres(location: str) -> SqlAlchemyInstanceStore:
    """For another process: the PostgreSQL store of the test whose directory is `location`."""
    engine = create_engine(postgres_url(), poolclass=NullPool)
    return SqlAlchemyInstanceStore(engine, tables=ensure_tables(engine, postgres_tables(location)))


def create_schema(url: str) -> str:
    """A schema of this test session's own."""
    name = f"onellm_test_{os.getpid()}_{os.urandom(3).hex()}"
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{name}"'))
    finally:
        engine.dispose()
    return name


def drop_schema(url: str, name: str) -> None:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))
    finally:
        engine.dispose()
