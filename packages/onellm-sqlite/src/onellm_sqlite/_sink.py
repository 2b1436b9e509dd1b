"""`SqliteRecordSink`: one row per record in a SQLite file (`spec/records.md`, "Sinks").

Each row keeps the record's JSON line exactly as `JsonlRecordSink` writes it (without the newline), read back with
`parse_line`, and beside it the columns a query needs: instance, kind, time (100 ns ticks since the Unix epoch, UTC),
message and cost (decimal text, only for the two kinds a total adds: `inference` usage cost and `toolCall` call cost).
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from types import TracebackType

import anyio

from onellm.clock import Clock
from onellm.errors import BadDefinitionError
from onellm.instances import validate_instance_id
from onellm.messages import Timestamp
from onellm.records import InferenceRecord, Record, ToolCallRecord, encode_record, parse_line
from onellm_sqlite._schema import Database

__all__ = ["SqliteRecordSink", "record_row"]

_CHUNK = 500  # ids per IN (...) list, well under SQLite's limit on bound parameters


def record_row(record: Record) -> tuple[str | None, str, int | None, str | None, str | None, str]:
    """The columns of a record's row: instance, kind, time ticks, message, cost text, JSON line."""
    cost: Decimal | None = None
    if isinstance(record, InferenceRecord):
        cost = None if record.usage is None else record.usage.cost
    elif isinstance(record, ToolCallRecord):
        cost = None if record.call is None else record.call.cost
    line = encode_record(record)[:-1].decode("utf-8")
    ticks = None if record.time is None else record.time.ticks
    cost_text = None if cost is None else format(cost, "f")
    return record.instance_id, record.kind, ticks, record.message_id, cost_text, line


class SqliteRecordSink:
    """Records as rows of a SQLite file, queryable, and summed into exact costs.

    Args:
        path: The database file; created with its schema when missing. A `SqliteInstanceStore` may share it, and
            must, for `cost(..., include_subtree=True)` to find the instances a run called or spawned.
        clock: Stamps records that arrive without a time (default: the system clock, UTC).
        timeout: Seconds to wait for another process's write transaction before failing with `StorageError`.
        durable: Flush every commit to disk (default).
    """

    def __init__(
        self, path: str | Path, *, clock: Clock | None = None, timeout: float = 10.0, durable: bool = True
    ) -> None:
        self._db = Database(path, timeout=timeout, durable=durable)
        self.clock = clock

    @property
    def path(self) -> Path:
        """The database file."""
        return self._db.path

    def __repr__(self) -> str:
        return f"SqliteRecordSink({str(self._db.path)!r})"

    # -- writing ---------------------------------------------------------------------------------------------------

    async def write(self, record: Record) -> None:
        """Append the record (stamped with the clock's time when it has none), in one write transaction.

        Raises:
            InvalidInstanceIdError: the record's instance id is not a valid id.
            StorageError: the file cannot be written.
        """
        row = self._row(record)
        await anyio.to_thread.run_sync(self._insert, [row])

    def write_sync(self, record: Record) -> None:
        """The blocking form of `write`, for code that is not async."""
        self._insert([self._row(record)])

    async def write_many(self, records: Iterable[Record]) -> None:
        """Append several records in one transaction: all of them, or none when it fails."""
        rows = [self._row(record) for record in records]
        if rows:
            await anyio.to_thread.run_sync(self._insert, rows)

    def write_many_sync(self, records: Iterable[Record]) -> None:
        """Append several records in one transaction: all of them, or none when it fails."""
        self._insert([self._row(record) for record in records])

    def _row(self, record: Record) -> tuple[str | None, str, int | None, str | None, str | None, str]:
        if record.instance_id is not None:
            validate_instance_id(record.instance_id)
        if record.time is None:
            record = record.stamped(self.clock.now() if self.clock is not None else Timestamp.now())
        return record_row(record)

    def _insert(self, rows: builtins.list[tuple[str | None, str, int | None, str | None, str | None, str]]) -> None:
        self._db.run(
            "append a record",
            lambda conn: conn.executemany(
                "INSERT INTO records (instance_id, kind, time, message_id, cost, line) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            ),
            write=True,
        )

    # -- reading ---------------------------------------------------------------------------------------------------

    async def read(self, instance_id: str | None, *, kind: str | None = None) -> builtins.list[Record]:
        """The records of one instance (None: the runtime's own), optionally of one kind, in the order written.

        Kinds this version does not know are skipped; fields it does not know are kept in each record's `extra`.

        Raises:
            BadDefinitionError: a stored line is not a valid record (it names the file and the row).
        """
        return await anyio.to_thread.run_sync(self.read_sync, instance_id, kind)

    def read_sync(self, instance_id: str | None, kind: str | None = None) -> builtins.list[Record]:
        """Blocking form of `read`."""
        where = "instance_id IS NULL" if instance_id is None else "instance_id = ?"
        args: builtins.list[object] = [] if instance_id is None else [validate_instance_id(instance_id)]
        if kind is not None:
            where += " AND kind = ?"
            args.append(kind)
        sql = f"SELECT seq, line FROM records WHERE {where} ORDER BY seq"
        rows = self._db.run("read records", lambda conn: conn.execute(sql, args).fetchall(), write=False)
        found: builtins.list[Record] = []
        file = f"{self._db.path} (records)"
        for seq, line in rows:
            record = parse_line(line, file=file, line_number=seq)
            if record is not None:
                found.append(record)
        return found

    async def cost(self, instance_id: str, *, include_subtree: bool = False) -> Decimal:
        """What an instance spent: its `inference` usage costs plus its `toolCall` costs, exact.

        With `include_subtree`, also every instance it called or spawned, found by following `callerInstanceId` and
        `spawnerInstanceId` downward through the instances saved in this file. A `compaction` record's cost is not
        added: the summarizing call is already counted as its own inference record.
        """
        return await anyio.to_thread.run_sync(self.cost_sync, instance_id, include_subtree)

    def cost_sync(self, instance_id: str, include_subtree: bool = False) -> Decimal:
        """Blocking form of `cost`."""
        root = validate_instance_id(instance_id)

        def work(conn: sqlite3.Connection) -> Decimal:
            ids = subtree(conn, root) if include_subtree else [root]
            total = Decimal(0)
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                marks = ", ".join("?" * len(chunk))
                for (text,) in conn.execute(
                    f"SELECT cost FROM records WHERE instance_id IN ({marks}) AND cost IS NOT NULL", chunk
                ):
                    total += _decimal(text, self._db.path)
            return total

        return self._db.run("sum costs", work, write=False)

    async def instance_ids(self) -> builtins.list[str]:
        """The instances this sink holds records for, sorted."""
        return await anyio.to_thread.run_sync(self.instance_ids_sync)

    def instance_ids_sync(self) -> builtins.list[str]:
        """Blocking form of `instance_ids`."""
        sql = "SELECT DISTINCT instance_id FROM records WHERE instance_id IS NOT NULL ORDER BY instance_id"
        return [row[0] for row in self._db.run("list records", lambda conn: conn.execute(sql).fetchall(), write=False)]

    # -- lifetime --------------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the sink's connections."""
        self._db.close()

    def __enter__(self) -> SqliteRecordSink:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> SqliteRecordSink:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def subtree(conn: sqlite3.Connection, root: str) -> builtins.list[str]:
    """`root` and every instance reached from it by following `callerInstanceId` and `spawnerInstanceId` downward."""
    seen = {root}
    order = [root]
    frontier = [root]
    while frontier:
        found: builtins.list[str] = []
        for start in range(0, len(frontier), _CHUNK):
            chunk = frontier[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            for (child,) in conn.execute(
                f"SELECT id FROM instances WHERE caller_instance_id IN ({marks}) OR spawner_instance_id IN ({marks}) "
                "ORDER BY id",
                chunk + chunk,
            ):
                if child not in seen:
                    seen.add(child)
                    order.append(child)
                    found.append(child)
        frontier = found
    return order


def _decimal(text: object, path: Path) -> Decimal:
    try:
        return Decimal(str(text))
    except ArithmeticError:
        raise BadDefinitionError(f"a record's cost column holds {text!r}, not a decimal", file=str(path)) from None
