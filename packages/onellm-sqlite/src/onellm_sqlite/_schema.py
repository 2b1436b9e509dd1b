"""The database file: opening it, checking it is ours, and bringing its schema up to date.

The schema is versioned with `PRAGMA user_version`. `MIGRATIONS` is an ordered list of named steps; a file at version
N has run the first N of them. Opening a file runs the steps it lacks in one write transaction (so two processes that
open a new file at once do not both create it), and refuses a file whose version is newer than this package knows:
an older package must not write into a layout it does not understand. `PRAGMA application_id` marks the file as
onellm's, so a SQLite file of another application is refused rather than filled with our tables.

Tables (times are integers: 100 ns ticks since the Unix epoch, UTC; costs are decimal text):

- `instances`: one row per instance, its file text in `text` (exactly what `Instance.dumps()` wrote, so a row
  exported to a file loads anywhere) and the header fields `list` filters on, beside it. `version` counts saves.
- `leases`: one row per held lease: who holds it, until when, and for how long it was taken.
- `records`: one row per record, its JSON line in `line` (the text `JsonlRecordSink` writes, without the newline)
  and the instance, kind, time, message and cost beside it for queries. `seq` keeps the order of writing.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from onellm.errors import StorageError

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION", "Database"]

T = TypeVar("T")

APPLICATION_ID = 0x6F6E6C6C  # "onll"
"""`PRAGMA application_id` of an onellm database file."""

MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "m001_initial",
        (
            """CREATE TABLE instances (
                id TEXT PRIMARY KEY NOT NULL,
                version INTEGER NOT NULL,
                name TEXT,
                name_folded TEXT,
                state TEXT,
                model TEXT,
                agent_definition TEXT,
                caller_instance_id TEXT,
                spawner_instance_id TEXT,
                modified_at INTEGER NOT NULL,
                text TEXT NOT NULL
            )""",
            "CREATE INDEX instances_modified_at ON instances (modified_at DESC, id)",
            "CREATE INDEX instances_caller ON instances (caller_instance_id)",
            "CREATE INDEX instances_spawner ON instances (spawner_instance_id)",
            """CREATE TABLE leases (
                instance_id TEXT PRIMARY KEY NOT NULL,
                holder TEXT NOT NULL,
                expires_at INTEGER NOT NULL,
                duration INTEGER NOT NULL
            )""",
            """CREATE TABLE records (
                seq INTEGER PRIMARY KEY,
                instance_id TEXT,
                kind TEXT NOT NULL,
                time INTEGER,
                message_id TEXT,
                cost TEXT,
                line TEXT NOT NULL
            )""",
            "CREATE INDEX records_instance ON records (instance_id, seq)",
            f"PRAGMA application_id = {APPLICATION_ID}",
        ),
    ),
)
"""The schema's steps, in order. Append new steps; never edit one that has shipped."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this package writes (`PRAGMA user_version`)."""


def storage_error(path: Path, operation: str, exc: sqlite3.Error) -> StorageError:
    """A `StorageError` for a failed SQLite call, saying in plain words what the usual causes mean."""
    text = str(exc)
    if isinstance(exc, sqlite3.DatabaseError) and "file is not a database" in text:
        message = f"{path} is not a SQLite database (cannot {operation})"
    elif "readonly" in text or "read-only" in text:
        message = f"{path} is read-only: cannot {operation} ({text})"
    elif "locked" in text or "busy" in text:
        message = f"{path} stayed locked by another writer past the timeout: cannot {operation} ({text})"
    else:
        message = f"{path}: cannot {operation}: {text}"
    error = StorageError(message, path=str(path), operation=operation)
    error.__cause__ = exc
    return error


class Database:
    """One SQLite file, one connection per thread that uses it (SQLite connections are not shared between threads).

    Args:
        path: The file; created (with its schema) when missing.
        timeout: Seconds a writer waits for another writer's transaction before giving up.
        durable: `synchronous=FULL` (every commit reaches the disk) when true, `NORMAL` (a power cut may lose the
            last commits, never corrupt the file) when false.
    """

    def __init__(self, path: str | Path, *, timeout: float = 10.0, durable: bool = True) -> None:
        if str(path) in ("", ":memory:") or str(path).startswith("file:"):
            raise ValueError(
                f"{str(path)!r} is not a database file: each thread would see a database of its own; give a path "
                "(or use MemoryInstanceStore for instances kept in the process)"
            )
        self.path = Path(path)
        self.timeout = timeout
        self.durable = durable
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._closed = False
        self._checked = False

    def connection(self, operation: str) -> sqlite3.Connection:
        """This thread's connection, opened (and the schema checked) on first use."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise StorageError(f"{self.path}: the store was closed", path=str(self.path), operation=operation)
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False, cached_statements=64
            )
        except sqlite3.Error as exc:
            raise storage_error(self.path, operation, exc) from exc
        try:
            self._prepare(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise storage_error(self.path, operation, exc) from exc
        except BaseException:
            conn.close()
            raise
        with self._lock:
            self._connections.append(conn)
        self._local.conn = conn
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        # Switching a new file to WAL needs it to itself for a moment, and SQLite does not wait for that: a first
        # open racing others gets "database is locked" at once (seen in about 1 of 40 races of eight threads), so it
        # asks again until the timeout.
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                mode = None
            if (mode is not None and str(mode[0]).lower() == "wal") or time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        if mode is None or str(mode[0]).lower() != "wal":
            raise StorageError(
                f"{self.path}: SQLite would not switch the file to write-ahead logging (journal mode {mode!r})",
                path=str(self.path),
                operation="open",
            )
        conn.execute(f"PRAGMA synchronous = {'FULL' if self.durable else 'NORMAL'}")
        if not self._checked:
            migrate(conn, self.path)
            self._checked = True

    def run(self, operation: str, work: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        """Run `work` in one transaction: `BEGIN IMMEDIATE` for writes (one writer at a time, waiting up to the
        timeout), a deferred one for reads (a consistent snapshot). SQLite errors become `StorageError`."""
        conn = self.connection(operation)
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                result = work(conn)
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            raise storage_error(self.path, operation, exc) from exc
        return result

    def close(self) -> None:
        """Close every connection. Later calls fail with `StorageError`."""
        with self._lock:
            self._closed = True
            connections, self._connections = self._connections, []
        for conn in connections:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local = threading.local()


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Bring the file's schema to `SCHEMA_VERSION`, or refuse a file that is newer or not onellm's."""
    version, app = _versions(conn)
    _check(path, version, app)
    if version == SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version, app = _versions(conn)  # another process may have migrated it while we waited
        _check(path, version, app)
        for _name, steps in MIGRATIONS[version:]:
            for statement in steps:
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise


def _versions(conn: sqlite3.Connection) -> tuple[int, int]:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    app = conn.execute("PRAGMA application_id").fetchone()[0]
    return int(version), int(app)


def _check(path: Path, version: int, app: int) -> None:
    if app not in (0, APPLICATION_ID):
        raise StorageError(
            f"{path} belongs to another application (SQLite application_id {app:#x}); onellm keeps its instances "
            "and records in a file of its own",
            path=str(path),
            operation="open",
        )
    if version > SCHEMA_VERSION:
        raise StorageError(
            f"{path} was written by a newer onellm-sqlite (schema version {version}; this one knows up to "
            f"{SCHEMA_VERSION}): upgrade onellm-sqlite to open it",
            path=str(path),
            operation="open",
        )
    if version > 0 and app != APPLICATION_ID:
        raise StorageError(
            f"{path} has schema version {version} but is not an onellm database: another application uses it",
            path=str(path),
            operation="open",
        )
