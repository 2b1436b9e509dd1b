"""`SqlAlchemyInstanceStore`: one row per instance in the application's own database (tables in `_tables`).

The row keeps the instance's file text exactly as `Instance.dumps()` wrote it, so `load` gives back what was saved
byte for byte and a row copied out to `<id>.yaml` loads in every onellm. Each save is one transaction. The row's
`version` is bumped on every save and the update names the version it read, so two writers that race on one row
cannot interleave: the one that finds the row changed under it reads it again and retries, and the last save wins,
the same rule as the file store. Leases are rows with an expiry (see `onellm.instances.leases`).
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from onellm.clock import Clock
from onellm.errors import InstanceLockedError, StorageError
from onellm.instances import Instance, InstanceQuery, InstanceSummary, validate_instance_id
from onellm.instances.leases import LeaseRenewer, RowLease, from_ticks, new_holder, to_ticks
from onellm_sqlalchemy._bind import Bind, BindLike
from onellm_sqlalchemy._tables import OnellmTables, tables

__all__ = ["SqlAlchemyInstanceLease", "SqlAlchemyInstanceStore"]

_log = logging.getLogger("onellm.instances")
_RETRIES = 50


class _Raced(Exception):
    """Another writer changed the row between our read and our write; read again."""


class SqlAlchemyInstanceLease(RowLease):
    """A lease kept as a row in the leases table, renewed by its holder every third of its duration."""

    def __init__(
        self, store: SqlAlchemyInstanceStore, instance_id: str, holder: str, expires_at: int, token: Any
    ) -> None:
        super().__init__(instance_id, holder, expires_at, store.lease_seconds)
        self._store = store
        self._token = token

    async def _renew_row(self) -> bool:
        return await self._store._renew(self)

    async def _release_row(self) -> None:
        await self._store._release(self)


class SqlAlchemyInstanceStore:
    """Instances as rows of the application's database, through SQLAlchemy 2, on a sync or an async engine.

    Args:
        bind: An `Engine` or `sessionmaker` (the work then runs on worker threads), or an `AsyncEngine` or
            `async_sessionmaker`. Each call uses one short transaction.
        tables: The tables from `onellm_sqlalchemy.tables(metadata, ...)`; default: the default names
            (`onellm_instances`, ...) in the default schema. The store does not create them.
        lease_seconds: How long a lease lasts unless its holder renews it (every third of this). A holder that dies
            keeps others out for at most this long.
        clock: Where save times and lease expiries come from (default: the system clock, UTC).
    """

    def __init__(
        self,
        bind: BindLike,
        *,
        tables: OnellmTables | None = None,
        lease_seconds: float = 60.0,
        clock: Clock | None = None,
    ) -> None:
        if not lease_seconds > 0:
            raise ValueError(f"lease_seconds must be more than zero, not {lease_seconds!r}")
        self.tables = tables if tables is not None else _default_tables()
        self._bind = Bind(bind, _hint(self.tables))
        self.lease_seconds = float(lease_seconds)
        self._lease_ticks = round(self.lease_seconds * 10_000_000)
        self._clock = clock
        self._last = 0
        self._stamp_lock = threading.Lock()
        self._held: dict[str, SqlAlchemyInstanceLease] = {}
        self._renewer = LeaseRenewer(self._bind.name, self._renew_from_thread)

    def __repr__(self) -> str:
        return f"SqlAlchemyInstanceStore({self._bind.name!r}, table={self.tables.instances.fullname!r})"

    def _now(self) -> int:
        return to_ticks(self._clock.now() if self._clock is not None else datetime.now(UTC))

    def _stamp(self) -> int:
        with self._stamp_lock:
            now = max(self._now(), self._last + 10)
            self._last = now
            return now

    # -- save and load ---------------------------------------------------------------------------------------------

    async def save(self, instance: Instance) -> None:
        await anyio.lowlevel.checkpoint_if_cancelled()
        instance_id = validate_instance_id(instance.id)
        name = instance.name
        values = {
            "name": name,
            "name_folded": None if name is None else name.casefold(),
            "state": instance.state,
            "model": instance.model,
            "agent_definition": instance.agent_definition,
            "caller_instance_id": instance.caller_instance_id,
            "spawner_instance_id": instance.spawner_instance_id,
            "text": instance.dumps(),
        }
        lease = self._held.get(instance_id)
        t = self.tables.instances
        leases = self.tables.leases

        def work(conn: Connection) -> None:
            if lease is not None:
                found = conn.execute(
                    select(leases.c.holder).where(leases.c.instance_id == instance_id).with_for_update()
                ).first()
                if found is None or found[0] != lease.holder:
                    lease.lost = True
                    raise _lost(instance_id, None if found is None else str(found[0]))
            current = conn.execute(select(t.c.version).where(t.c.id == instance_id)).scalar_one_or_none()
            stamped = {**values, "modified_at": self._stamp()}
            if current is None:
                try:
                    conn.execute(insert(t).values(id=instance_id, version=1, **stamped))
                except IntegrityError:
                    raise _Raced from None
                return
            done = conn.execute(
                update(t).where(t.c.id == instance_id, t.c.version == current).values(version=current + 1, **stamped)
            )
            if done.rowcount != 1:
                raise _Raced

        for attempt in range(_RETRIES):
            try:
                await self._bind.run("save", work)
                return
            except _Raced:
                await anyio.lowlevel.checkpoint()
            except StorageError as exc:
                # SQLite refuses a writer whose snapshot another writer has moved on ("database is locked") instead
                # of waiting; that is the same race, so read again, after a pause.
                if "database is locked" not in str(exc) or attempt == _RETRIES - 1:
                    raise
                await anyio.sleep(0.005 * (attempt + 1))
        raise StorageError(
            f"{self._bind.name}: instance {instance_id!r} changed under {_RETRIES} saves in a row; gave up",
            path=self._bind.name,
            operation="save",
        )

    async def load(self, instance_id: str) -> Instance | None:
        key = validate_instance_id(instance_id)
        t = self.tables.instances

        def work(conn: Connection) -> str | None:
            found = conn.execute(select(t.c.text).where(t.c.id == key)).scalar_one_or_none()
            return None if found is None else str(found)

        text = await self._bind.run("load", work)
        if text is None:
            return None
        return Instance.loads(text, file=f"{self._bind.name} {t.fullname} (instance {key})")

    async def text_of(self, instance_id: str) -> str | None:
        """The stored file text of `instance_id`, or None."""
        key = validate_instance_id(instance_id)
        t = self.tables.instances
        return await self._bind.run(
            "load", lambda conn: conn.execute(select(t.c.text).where(t.c.id == key)).scalar_one_or_none()
        )

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
        t = self.tables.instances
        statement = select(
            t.c.id,
            t.c.name,
            t.c.state,
            t.c.model,
            t.c.agent_definition,
            t.c.caller_instance_id,
            t.c.spawner_instance_id,
            t.c.modified_at,
        )
        if query.state is not None:
            statement = statement.where(t.c.state == query.state)
        if query.caller is not None:
            statement = statement.where(t.c.caller_instance_id == query.caller)
        if query.name_contains is not None:
            statement = statement.where(t.c.name_folded.contains(query.name_contains.casefold(), autoescape=True))
        if query.modified_since is not None:
            statement = statement.where(t.c.modified_at >= to_ticks(query.modified_since))
        statement = statement.order_by(t.c.modified_at.desc(), t.c.id)
        if query.limit is not None:
            statement = statement.limit(query.limit)

        def work(conn: Connection) -> builtins.list[InstanceSummary]:
            return [
                InstanceSummary(
                    id=row[0],
                    name=row[1],
                    state=row[2],
                    model=row[3],
                    agent_definition=row[4],
                    caller_instance_id=row[5],
                    spawner_instance_id=row[6],
                    modified_at=from_ticks(row[7]),
                )
                for row in conn.execute(statement)
            ]

        return await self._bind.run("list", work)

    # -- leases ----------------------------------------------------------------------------------------------------

    async def acquire(self, instance_id: str) -> SqlAlchemyInstanceLease:
        key = validate_instance_id(instance_id)
        holder = new_holder()
        duration = self._lease_ticks
        t = self.tables.leases

        def work(conn: Connection) -> int:
            now = self._now()
            found = conn.execute(select(t.c.holder, t.c.expires_at, t.c.duration).where(t.c.instance_id == key)).first()
            if found is not None and found[1] > now:
                raise _locked(key, found[0], found[1], found[2], now)
            expires = now + duration
            if found is None:
                try:
                    conn.execute(
                        insert(t).values(instance_id=key, holder=holder, expires_at=expires, duration=duration)
                    )
                except IntegrityError:
                    raise InstanceLockedError(
                        f"instance {key!r} was leased by another holder at the same moment", instance_id=key
                    ) from None
                return expires
            taken = conn.execute(
                update(t)
                .where(t.c.instance_id == key, t.c.holder == found[0], t.c.expires_at == found[1])
                .values(holder=holder, expires_at=expires, duration=duration)
            )
            if taken.rowcount != 1:
                raise InstanceLockedError(
                    f"instance {key!r} was taken over by another holder at the same moment", instance_id=key
                )
            return expires

        expires = await self._bind.run("acquire", work)
        token = anyio.lowlevel.current_token() if self._bind.is_async else None
        lease = SqlAlchemyInstanceLease(self, key, holder, expires, token)
        self._held[key] = lease
        self._renewer.add(lease, self.lease_seconds / 3)
        return lease

    def _renew_work(self, lease: SqlAlchemyInstanceLease) -> Callable[[Connection], int | None]:
        t = self.tables.leases

        def work(conn: Connection) -> int | None:
            expires = self._now() + self._lease_ticks
            done = conn.execute(
                update(t)
                .where(t.c.instance_id == lease.instance_id, t.c.holder == lease.holder)
                .values(expires_at=expires)
            )
            return expires if done.rowcount == 1 else None

        return work

    def _renewed(self, lease: SqlAlchemyInstanceLease, expires: int | None) -> bool:
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

    async def _renew(self, lease: SqlAlchemyInstanceLease) -> bool:
        if lease.released or lease.lost:
            return False
        expires = await self._bind.run("renew a lease", self._renew_work(lease))
        return self._renewed(lease, expires)

    def _renew_from_thread(self, lease: object) -> bool:
        assert isinstance(lease, SqlAlchemyInstanceLease)
        if lease.released or lease.lost:
            return False
        if not self._bind.is_async:
            return self._renewed(lease, self._bind.run_sync("renew a lease", self._renew_work(lease)))
        try:
            return anyio.from_thread.run(self._renew, lease, token=lease._token)
        except anyio.RunFinishedError:
            return False  # the event loop that took the lease has ended: nobody is left to hold it

    async def _release(self, lease: SqlAlchemyInstanceLease) -> None:
        self._renewer.discard(lease)
        if self._held.get(lease.instance_id) is lease:
            del self._held[lease.instance_id]
        t = self.tables.leases
        await self._bind.run(
            "release a lease",
            lambda conn: conn.execute(
                delete(t).where(t.c.instance_id == lease.instance_id, t.c.holder == lease.holder)
            ),
        )

    # -- delete ----------------------------------------------------------------------------------------------------

    async def delete(self, instance_id: str) -> bool:
        key = validate_instance_id(instance_id)
        t = self.tables.instances
        return await self._bind.run("delete", lambda conn: conn.execute(delete(t).where(t.c.id == key)).rowcount > 0)


_DEFAULT: OnellmTables | None = None


def _default_tables() -> OnellmTables:
    global _DEFAULT
    if _DEFAULT is None:
        from sqlalchemy import MetaData

        _DEFAULT = tables(MetaData())
    return _DEFAULT


def _hint(t: OnellmTables) -> str:
    return (
        f"create the tables {t.instances.fullname}, {t.records.fullname} and {t.leases.fullname} first: "
        "onellm_sqlalchemy.tables(metadata) adds them to your MetaData, then metadata.create_all(engine) or your "
        "migrations"
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


def _lost(instance_id: str, holder: str | None) -> InstanceLockedError:
    who = "nobody holds it now" if holder is None else f"{holder} holds it now"
    return InstanceLockedError(
        f"the lease on instance {instance_id!r} held through this store lapsed and was lost ({who}); the save was "
        "refused so the other holder's work is not overwritten",
        instance_id=instance_id,
    )
