"""`SqliteInstanceStore`: one row per instance in a SQLite file (schema in `_schema`).

The row keeps the instance's file text exactly as `Instance.dumps()` wrote it, so `load` gives back what was saved
byte for byte and a row copied out to `<id>.yaml` loads in every onellm. Each save is one write transaction (an
upsert that bumps the row's `version`); readers in other connections see the old row or the new one. Database work
runs on worker threads, one connection per thread, so a slow disk or a writer holding the file does not stall the
event loop.
"""

from __future__ import annotations

import builtins
import logging
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import anyio.lowlevel

from onellm.clock import Clock
from onellm.errors import InstanceLockedError, StorageError
from onellm.instances import Instance, InstanceQuery, InstanceSummary, validate_instance_id
from onellm.instances.leases import LeaseRenewer, RowLease, from_ticks, new_holder, to_ticks
from onellm_sqlite._schema import Database

__all__ = ["SqliteInstanceLease", "SqliteInstanceStore"]

_log = logging.getLogger("onellm.instances")
_SUMMARY = (
    "SELECT id, name, state, model, agent_definition, caller_instance_id, spawner_instance_id, modified_at "
    "FROM instances"
)
_UPSERT = (
    "INSERT INTO instances (id, version, name, name_folded, state, model, agent_definition, caller_instance_id, "
    "spawner_instance_id, modified_at, text) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET version = version + 1, name = excluded.name, name_folded = excluded.name_folded, "
    "state = excluded.state, model = excluded.model, agent_definition = excluded.agent_definition, "
    "caller_instance_id = excluded.caller_instance_id, spawner_instance_id = excluded.spawner_instance_id, "
    "modified_at = excluded.modified_at, text = excluded.text"
)


class SqliteInstanceLease(RowLease):
    """A lease kept as a row in the leases table, renewed by its holder every third of its duration."""

    def __init__(self, store: SqliteInstanceStore, instance_id: str, holder: str, expires_at: int) -> None:
        super().__init__(instance_id, holder, expires_at, store.lease_seconds)
        self._store = store

    async def _renew_row(self) -> bool:
        return await anyio.to_thread.run_sync(self._store._renew, self)

    async def _release_row(self) -> None:
        await anyio.to_thread.run_sync(self._store._release, self)


class SqliteInstanceStore:
    """Instances as rows of one SQLite file: many instances in one file you can query, shared by processes.

    Args:
        path: The database file; created with its schema when missing. A `SqliteRecordSink` may share it.
        lease_seconds: How long a lease lasts unless its holder renews it (every third of this). A holder that dies
            keeps others out for at most this long.
        clock: Where save times and lease expiries come from (default: the system clock, UTC).
        timeout: Seconds to wait for another process's write transaction before failing with `StorageError`.
        durable: Flush every commit to disk (default). False may lose the latest saves on a power cut, never the
            file.

    Raises:
        StorageError: (on first use) the file is not a SQLite database, belongs to another application, or was
            written by a newer onellm-sqlite.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        lease_seconds: float = 60.0,
        clock: Clock | None = None,
        timeout: float = 10.0,
        durable: bool = True,
    ) -> None:
        if not lease_seconds > 0:
            raise ValueError(f"lease_seconds must be more than zero, not {lease_seconds!r}")
        self._db = Database(path, timeout=timeout, durable=durable)
        self.lease_seconds = float(lease_seconds)
        self._lease_ticks = round(self.lease_seconds * 10_000_000)
        self._clock = clock
        self._last = 0
        self._stamp_lock = threading.Lock()
        self._held: dict[str, SqliteInstanceLease] = {}
        self._renewer = LeaseRenewer(str(self._db.path), self._renew_from_thread)

    @property
    def path(self) -> Path:
        """The database file."""
        return self._db.path

    def __repr__(self) -> str:
        return f"SqliteInstanceStore({str(self._db.path)!r})"

    def _now(self) -> int:
        moment = self._clock.now() if self._clock is not None else datetime.now(UTC)
        return to_ticks(moment)

    def _stamp(self) -> int:
        # Saves through one handle are strictly ordered in time, even within one clock tick (a microsecond apart, the
        # resolution `InstanceSummary.modified_at` shows).
        with self._stamp_lock:
            now = max(self._now(), self._last + 10)
            self._last = now
            return now

    # -- save and load ---------------------------------------------------------------------------------------------

    async def save(self, instance: Instance) -> None:
        await anyio.lowlevel.checkpoint_if_cancelled()
        instance_id = validate_instance_id(instance.id)
        text = instance.dumps()
        row = _row(instance_id, instance, text)
        await anyio.to_thread.run_sync(self._save, instance_id, row)

    def save_sync(self, instance: Instance) -> None:
        """Blocking form of `save`, for scripts and command-line tools."""
        instance_id = validate_instance_id(instance.id)
        self._save(instance_id, _row(instance_id, instance, instance.dumps()))

    def _save(self, instance_id: str, row: tuple[Any, ...]) -> None:
        lease = self._held.get(instance_id)

        def work(conn: sqlite3.Connection) -> None:
            if lease is not None:
                found = conn.execute("SELECT holder FROM leases WHERE instance_id = ?", (instance_id,)).fetchone()
                if found is None or found[0] != lease.holder:
                    lease.lost = True
                    raise _lost(instance_id, found)
            conn.execute(_UPSERT, (instance_id, *row[:-1], self._stamp(), row[-1]))

        self._db.run("save", work, write=True)

    async def load(self, instance_id: str) -> Instance | None:
        key = validate_instance_id(instance_id)
        text = await anyio.to_thread.run_sync(self._text, key)
        return None if text is None else Instance.loads(text, file=self._where(key))

    def load_sync(self, instance_id: str) -> Instance | None:
        """Blocking form of `load`."""
        key = validate_instance_id(instance_id)
        text = self._text(key)
        return None if text is None else Instance.loads(text, file=self._where(key))

    def text_of(self, instance_id: str) -> str | None:
        """The stored file text of `instance_id`, or None (blocking)."""
        return self._text(validate_instance_id(instance_id))

    def _text(self, instance_id: str) -> str | None:
        def work(conn: sqlite3.Connection) -> str | None:
            found = conn.execute("SELECT text FROM instances WHERE id = ?", (instance_id,)).fetchone()
            return None if found is None else str(found[0])

        return self._db.run("load", work, write=False)

    def _where(self, instance_id: str) -> str:
        return f"{self._db.path} (instance {instance_id})"

    # -- list ------------------------------------------------------------------------------------------------------

    async def list(
        self,
        *,
        state: str | None = None,
        caller: str | None = None,
        name_contains: str | None = None,
        modified_since: datetime | None = None,
        limit: int | None = None,
    ) -> builtins.list[InstanceSummary]:
        query = InstanceQuery(
            state=state, caller=caller, name_contains=name_contains, modified_since=modified_since, limit=limit
        )
        return await anyio.to_thread.run_sync(self.list_sync, query)

    def list_sync(self, query: InstanceQuery | None = None) -> builtins.list[InstanceSummary]:
        """Blocking form of `list`, taking the filters as an `InstanceQuery`."""
        query = query or InstanceQuery()
        where: builtins.list[str] = []
        args: builtins.list[object] = []
        if query.state is not None:
            where.append("state = ?")
            args.append(query.state)
        if query.caller is not None:
            where.append("caller_instance_id = ?")
            args.append(query.caller)
        if query.name_contains is not None:
            where.append("instr(name_folded, ?) > 0")
            args.append(query.name_contains.casefold())
        if query.modified_since is not None:
            where.append("modified_at >= ?")
            args.append(to_ticks(query.modified_since))
        sql = _SUMMARY
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY modified_at DESC, id"
        if query.limit is not None:
            sql += " LIMIT ?"
            args.append(query.limit)

        def work(conn: sqlite3.Connection) -> builtins.list[InstanceSummary]:
            return [_summary(row) for row in conn.execute(sql, args)]

        return self._db.run("list", work, write=False)

    # -- leases ----------------------------------------------------------------------------------------------------

    async def acquire(self, instance_id: str) -> SqliteInstanceLease:
        key = validate_instance_id(instance_id)
        return await anyio.to_thread.run_sync(self._acquire, key)

    def _acquire(self, instance_id: str) -> SqliteInstanceLease:
        holder = new_holder()
        duration = self._lease_ticks

        def work(conn: sqlite3.Connection) -> int:
            now = self._now()
            found = conn.execute(
                "SELECT holder, expires_at, duration FROM leases WHERE instance_id = ?", (instance_id,)
            ).fetchone()
            if found is not None and found[1] > now:
                raise _locked(instance_id, found[0], found[1], found[2], now)
            expires = now + duration
            conn.execute(
                "INSERT INTO leases (instance_id, holder, expires_at, duration) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (instance_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at, "
                "duration = excluded.duration",
                (instance_id, holder, expires, duration),
            )
            return expires

        expires = self._db.run("acquire", work, write=True)
        lease = SqliteInstanceLease(self, instance_id, holder, expires)
        self._held[instance_id] = lease
        self._renewer.add(lease, self.lease_seconds / 3)
        return lease

    def _renew(self, lease: SqliteInstanceLease) -> bool:
        if lease.released or lease.lost:
            return False

        def work(conn: sqlite3.Connection) -> int | None:
            expires = self._now() + self._lease_ticks
            cursor = conn.execute(
                "UPDATE leases SET expires_at = ? WHERE instance_id = ? AND holder = ?",
                (expires, lease.instance_id, lease.holder),
            )
            return expires if cursor.rowcount == 1 else None

        expires = self._db.run("renew a lease", work, write=True)
        if expires is None:
            if not lease.released:
                lease.lost = True
                _log.warning(
                    "the lease on instance %r lapsed and another holder took it; saves through it are refused",
                    lease.instance_id,
                )
            self._renewer.discard(lease)
            return False
        lease._expires_at = expires
        return True

    def _renew_from_thread(self, lease: object) -> bool:
        assert isinstance(lease, SqliteInstanceLease)
        return self._renew(lease)

    def _release(self, lease: SqliteInstanceLease) -> None:
        self._renewer.discard(lease)
        if self._held.get(lease.instance_id) is lease:
            del self._held[lease.instance_id]
        self._db.run(
            "release a lease",
            lambda conn: conn.execute(
                "DELETE FROM leases WHERE instance_id = ? AND holder = ?", (lease.instance_id, lease.holder)
            ),
            write=True,
        )

    # -- delete ----------------------------------------------------------------------------------------------------

    async def delete(self, instance_id: str) -> bool:
        key = validate_instance_id(instance_id)
        return await anyio.to_thread.run_sync(self._delete, key)

    def _delete(self, instance_id: str) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            return conn.execute("DELETE FROM instances WHERE id = ?", (instance_id,)).rowcount > 0

        return self._db.run("delete", work, write=True)

    # -- lifetime --------------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Give back the leases still held through this store, and close its connections."""
        for lease in builtins.list(self._held.values()):
            lease._released = True
            try:
                self._release(lease)
            except StorageError as exc:  # the row lapses on its own after its duration
                _log.warning("could not give back the lease on %r while closing: %s", lease.instance_id, exc)
        self._db.close()

    def __enter__(self) -> SqliteInstanceStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> SqliteInstanceStore:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _row(instance_id: str, instance: Instance, text: str) -> tuple[Any, ...]:
    name = instance.name
    return (
        name,
        None if name is None else name.casefold(),
        instance.state,
        instance.model,
        instance.agent_definition,
        instance.caller_instance_id,
        instance.spawner_instance_id,
        text,
    )


def _summary(row: tuple[Any, ...]) -> InstanceSummary:
    return InstanceSummary(
        id=row[0],
        name=row[1],
        state=row[2],
        model=row[3],
        agent_definition=row[4],
        caller_instance_id=row[5],
        spawner_instance_id=row[6],
        modified_at=from_ticks(row[7]),
    )


def _locked(instance_id: str, holder: str, expires: int, duration: int, now: int) -> InstanceLockedError:
    until = from_ticks(expires).isoformat()
    message = f"instance {instance_id!r} is leased by {holder} until {until}"
    if expires - now > duration + 10_000_000:
        message += (
            f", further ahead than its {duration / 10_000_000:g} s lease allows: a clock went back, or the holders' "
            "clocks disagree; it is kept out until then all the same"
        )
    return InstanceLockedError(message, instance_id=instance_id)


def _lost(instance_id: str, found: tuple[Any, ...] | None) -> InstanceLockedError:
    who = "nobody holds it now" if found is None else f"{found[0]} holds it now"
    return InstanceLockedError(
        f"the lease on instance {instance_id!r} held through this store lapsed and was lost ({who}); the save was "
        "refused so the other holder's work is not overwritten",
        instance_id=instance_id,
    )
