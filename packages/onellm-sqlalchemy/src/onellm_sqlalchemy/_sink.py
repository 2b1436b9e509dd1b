"""`SqlAlchemyRecordSink`: one row per record in the application's own database (`spec/records.md`, "Sinks").

Each row keeps the record's JSON line exactly as `JsonlRecordSink` writes it (without the newline), read back with
`parse_line`, and beside it the columns a query needs: instance, kind, time (100 ns ticks since the Unix epoch, UTC),
message and cost (`Money`, only for the two kinds a total adds: `inference` usage cost and `toolCall` call cost).
Costs are summed in Python as `Decimal`, because some databases cannot add exact decimals.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, insert, or_, select

from onellm.clock import Clock
from onellm.instances import validate_instance_id
from onellm.messages import Timestamp
from onellm.records import InferenceRecord, Record, ToolCallRecord, encode_record, parse_line
from onellm_sqlalchemy._bind import Bind, BindLike
from onellm_sqlalchemy._store import _default_tables, _hint
from onellm_sqlalchemy._tables import OnellmTables

__all__ = ["SqlAlchemyRecordSink"]

_CHUNK = 500  # ids per IN (...) list


def _row(record: Record) -> dict[str, Any]:
    cost: Decimal | None = None
    if isinstance(record, InferenceRecord):
        cost = None if record.usage is None else record.usage.cost
    elif isinstance(record, ToolCallRecord):
        cost = None if record.call is None else record.call.cost
    return {
        "instance_id": record.instance_id,
        "kind": record.kind,
        "time": None if record.time is None else record.time.ticks,
        "message_id": record.message_id,
        "cost": cost,
        "line": encode_record(record)[:-1].decode("utf-8"),
    }


class SqlAlchemyRecordSink:
    """Records as rows of the application's database, queryable, and summed into exact costs.

    Args:
        bind: An `Engine` or `sessionmaker` (the work then runs on worker threads, and the `_sync` methods work), or
            an `AsyncEngine` or `async_sessionmaker`.
        tables: The tables from `onellm_sqlalchemy.tables(metadata, ...)`; default: the default names. Give the
            same tables as the `SqlAlchemyInstanceStore`, so `cost(..., include_subtree=True)` finds the instances a
            run called or spawned.
        clock: Stamps records that arrive without a time (default: the system clock, UTC).
    """

    def __init__(self, bind: BindLike, *, tables: OnellmTables | None = None, clock: Clock | None = None) -> None:
        self.tables = tables if tables is not None else _default_tables()
        self._bind = Bind(bind, _hint(self.tables))
        self.clock = clock

    def __repr__(self) -> str:
        return f"SqlAlchemyRecordSink({self._bind.name!r}, table={self.tables.records.fullname!r})"

    # -- writing ---------------------------------------------------------------------------------------------------

    def _rows(self, records: Iterable[Record]) -> builtins.list[dict[str, Any]]:
        rows = []
        for record in records:
            if record.instance_id is not None:
                validate_instance_id(record.instance_id)
            if record.time is None:
                record = record.stamped(self.clock.now() if self.clock is not None else Timestamp.now())
            rows.append(_row(record))
        return rows

    def _insert(self, rows: builtins.list[dict[str, Any]]) -> Callable[[Connection], object]:
        t = self.tables.records
        return lambda conn: conn.execute(insert(t), rows)

    async def write(self, record: Record) -> None:
        """Append the record (stamped with the clock's time when it has none), in one transaction.

        Raises:
            InvalidInstanceIdError: the record's instance id is not a valid id.
            StorageError: the database refused it.
        """
        await self._bind.run("append a record", self._insert(self._rows([record])))

    async def write_many(self, records: Iterable[Record]) -> None:
        """Append several records in one transaction: all of them, or none when it fails."""
        rows = self._rows(records)
        if rows:
            await self._bind.run("append records", self._insert(rows))

    def write_sync(self, record: Record) -> None:
        """The blocking form of `write` (an `Engine` or `sessionmaker` only)."""
        self._bind.run_sync("append a record", self._insert(self._rows([record])))

    # -- reading ---------------------------------------------------------------------------------------------------

    def _read_work(self, instance_id: str | None, kind: str | None) -> Callable[[Connection], builtins.list[Record]]:
        t = self.tables.records
        statement = select(t.c.seq, t.c.line)
        if instance_id is None:
            statement = statement.where(t.c.instance_id.is_(None))
        else:
            statement = statement.where(t.c.instance_id == validate_instance_id(instance_id))
        if kind is not None:
            statement = statement.where(t.c.kind == kind)
        statement = statement.order_by(t.c.seq)
        file = f"{self._bind.name} {t.fullname}"

        def work(conn: Connection) -> builtins.list[Record]:
            found = []
            for seq, line in conn.execute(statement):
                record = parse_line(line, file=file, line_number=seq)
                if record is not None:
                    found.append(record)
            return found

        return work

    async def read(self, instance_id: str | None, *, kind: str | None = None) -> builtins.list[Record]:
        """The records of one instance (None: the runtime's own), optionally of one kind, in the order written.

        Raises:
            BadDefinitionError: a stored line is not a valid record (it names the table and the row's `seq`).
        """
        return await self._bind.run("read records", self._read_work(instance_id, kind))

    def read_sync(self, instance_id: str | None, kind: str | None = None) -> builtins.list[Record]:
        """Blocking form of `read` (an `Engine` or `sessionmaker` only)."""
        return self._bind.run_sync("read records", self._read_work(instance_id, kind))

    def _cost_work(self, instance_id: str, include_subtree: bool) -> Callable[[Connection], Decimal]:
        root = validate_instance_id(instance_id)
        records = self.tables.records
        instances = self.tables.instances

        def work(conn: Connection) -> Decimal:
            ids = [root]
            if include_subtree:
                seen = {root}
                frontier = [root]
                while frontier:
                    found = []
                    for start in range(0, len(frontier), _CHUNK):
                        chunk = frontier[start : start + _CHUNK]
                        statement = select(instances.c.id).where(
                            or_(instances.c.caller_instance_id.in_(chunk), instances.c.spawner_instance_id.in_(chunk))
                        )
                        for (child,) in conn.execute(statement):
                            if child not in seen:
                                seen.add(child)
                                found.append(child)
                    ids.extend(found)
                    frontier = found
            total = Decimal(0)
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                statement = select(records.c.cost).where(records.c.instance_id.in_(chunk), records.c.cost.is_not(None))
                for (cost,) in conn.execute(statement):
                    total += cost
            return total

        return work

    async def cost(self, instance_id: str, *, include_subtree: bool = False) -> Decimal:
        """What an instance spent: its `inference` usage costs plus its `toolCall` costs, exact.

        With `include_subtree`, also every instance it called or spawned, found by following `callerInstanceId` and
        `spawnerInstanceId` downward through the instances table. A `compaction` record's cost is not added: the
        summarizing call is already counted as its own inference record.
        """
        return await self._bind.run("sum costs", self._cost_work(instance_id, include_subtree))

    def cost_sync(self, instance_id: str, include_subtree: bool = False) -> Decimal:
        """Blocking form of `cost` (an `Engine` or `sessionmaker` only)."""
        return self._bind.run_sync("sum costs", self._cost_work(instance_id, include_subtree))

    async def instance_ids(self) -> builtins.list[str]:
        """The instances this sink holds records for, sorted."""
        t = self.tables.records
        statement = select(t.c.instance_id).where(t.c.instance_id.is_not(None)).distinct().order_by(t.c.instance_id)
        return await self._bind.run("list records", lambda conn: [row[0] for row in conn.execute(statement)])
