"""The tables, defined on the application's own `MetaData` so its migrations (Alembic autogenerate) see them.

`tables(metadata, prefix="onellm_", schema=None)` adds three tables: `<prefix>instances`, `<prefix>records` and
`<prefix>leases`, with the columns the seeds' Entity Framework mapping has. The package ships no migrations and no
driver: create the tables with `metadata.create_all(engine)` or your own migrations.

- Times are integers, 100 ns ticks since the Unix epoch in UTC, so they sort the same on every database.
- Costs are `Money`: `NUMERIC(28, 12)` on databases that have exact decimals, and decimal text on SQLite (whose
  NUMERIC would pass them through a binary float). Totals are summed in Python, as `Decimal`.
- An instance row keeps the instance's file text in `text`, exactly as `Instance.dumps()` wrote it, and the header
  fields `list` filters on beside it; `version` is bumped on every save (optimistic concurrency).
- A record row keeps the record's JSON line in `line`, exactly as `JsonlRecordSink` writes it (without the newline).
- On PostgreSQL 14 and later (built with lz4, as the common packages are), creating the instances table sets its
  `text` column's compression to lz4: a long instance is rewritten on every save, and the default compression (pglz)
  takes about three times as long as the rest of the save. Migrations do not see this; add the same statement to
  yours (`ALTER TABLE onellm_instances ALTER COLUMN text SET COMPRESSION lz4`).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    DDL,
    BigInteger,
    Column,
    Connection,
    Dialect,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    event,
    text,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.types import TypeDecorator, TypeEngine

__all__ = ["Money", "OnellmTables", "tables"]


class Money(TypeDecorator[Decimal]):
    """An exact amount of money: `NUMERIC(28, 12)`, or decimal text on SQLite; always a `Decimal` in Python."""

    impl = Numeric(28, 12, asdecimal=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(64))
        return dialect.type_descriptor(Numeric(28, 12, asdecimal=True))

    def process_bind_param(self, value: Decimal | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if not isinstance(value, Decimal):
            raise TypeError(f"Money takes a Decimal, not {type(value).__name__}")
        return format(value, "f") if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        if value is None or isinstance(value, Decimal):
            return value
        return Decimal(str(value))


Money.__module__ = "onellm_sqlalchemy"  # migrations that autogenerate name the public path


@dataclass(frozen=True, slots=True)
class OnellmTables:
    """The three tables of one `tables()` call."""

    instances: Table
    """One row per instance."""
    records: Table
    """One row per record."""
    leases: Table
    """One row per held lease."""

    @property
    def metadata(self) -> MetaData:
        """The `MetaData` the tables belong to."""
        return self.instances.metadata

    def create_all(self, bind: Any) -> None:
        """Create the three tables where missing (a convenience for tests and scripts; use migrations in
        production). `bind` is an `Engine` or `Connection`."""
        self.metadata.create_all(bind, tables=[self.instances, self.records, self.leases])

    def drop_all(self, bind: Any) -> None:
        """Drop the three tables (and every instance and record in them)."""
        self.metadata.drop_all(bind, tables=[self.instances, self.records, self.leases])


_ID = 128  # instance ids are at most 128 characters


def _big_text() -> TypeEngine[str]:
    # An instance or a record can run to megabytes; MySQL's TEXT stops at 64 KiB.
    return Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def tables(metadata: MetaData, *, prefix: str = "onellm_", schema: str | None = None) -> OnellmTables:
    """Add onellm's tables to `metadata` (or return them, when this prefix and schema were added before).

    Args:
        metadata: The application's `MetaData`.
        prefix: Put before each table's name (`onellm_instances`, `onellm_records`, `onellm_leases`).
        schema: The database schema the tables live in (None: the default one).

    Raises:
        ValueError: `metadata` already has a table of one of these names that is not onellm's.
    """
    names = (f"{prefix}instances", f"{prefix}records", f"{prefix}leases")
    keys = [name if schema is None else f"{schema}.{name}" for name in names]
    existing = [metadata.tables.get(key) for key in keys]
    instances, records, leases = existing
    if (
        instances is not None
        and records is not None
        and leases is not None
        and {"id", "version", "text"} <= set(instances.c.keys())
        and {"line", "cost"} <= set(records.c.keys())
    ):
        return OnellmTables(instances, records, leases)
    taken = [key for key, table in zip(keys, existing, strict=True) if table is not None]
    if taken:
        raise ValueError(f"the metadata already has tables named {', '.join(taken)}; choose another prefix")
    instances = Table(
        names[0],
        metadata,
        Column("id", String(_ID), primary_key=True),
        Column("version", BigInteger, nullable=False),
        Column("name", Text),
        Column("name_folded", Text),
        Column("state", Text),  # free text: a newer writer's state must not be cut short
        Column("model", Text),
        Column("agent_definition", Text),
        Column("caller_instance_id", String(_ID)),
        Column("spawner_instance_id", String(_ID)),
        Column("modified_at", BigInteger, nullable=False),
        Column("text", _big_text(), nullable=False),
        Index(f"ix_{names[0]}_modified_at", "modified_at"),
        Index(f"ix_{names[0]}_caller", "caller_instance_id"),
        Index(f"ix_{names[0]}_spawner", "spawner_instance_id"),
        Index(f"ix_{names[0]}_state", "state", mysql_length=191),
        schema=schema,
    )
    records = Table(
        names[1],
        metadata,
        Column("seq", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True),
        Column("instance_id", String(_ID)),
        Column("kind", String(64), nullable=False),
        Column("time", BigInteger),
        Column("message_id", Text),
        Column("cost", Money()),
        Column("line", _big_text(), nullable=False),
        Index(f"ix_{names[1]}_instance", "instance_id", "seq"),
        schema=schema,
    )
    leases = Table(
        names[2],
        metadata,
        Column("instance_id", String(_ID), primary_key=True),
        Column("holder", String(255), nullable=False),
        Column("expires_at", BigInteger, nullable=False),
        Column("duration", BigInteger, nullable=False),
        schema=schema,
    )
    event.listen(
        instances,
        "after_create",
        DDL('ALTER TABLE %(fullname)s ALTER COLUMN "text" SET COMPRESSION lz4').execute_if(  # type: ignore[no-untyped-call]
            dialect="postgresql", callable_=_has_lz4
        ),
    )
    return OnellmTables(instances, records, leases)


def _has_lz4(
    ddl: Any,
    target: Any,
    bind: Connection | None,
    tables: Any = None,
    state: Any = None,
    *,
    dialect: Dialect,
    compiler: Any = None,
    checkfirst: bool = False,
) -> bool:
    """PostgreSQL 14 or later, built with lz4."""
    version = getattr(dialect, "server_version_info", None) or (0,)
    if bind is None or version < (14,):
        return False
    found = bind.execute(
        text("SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)")
    ).first()
    return found is not None
