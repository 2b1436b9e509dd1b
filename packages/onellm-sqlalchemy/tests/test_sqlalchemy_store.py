"""What the SQLAlchemy store and sink add to the conformance suites: tables in the application's metadata, optimistic
concurrency, faults, and leases, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import Engine, MetaData, create_engine, event, inspect, select, text, update
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from sqlalchemy_databases import postgres_tables, postgres_url, sqlite_engine

import onellm_sqlalchemy
from onellm.clock import FakeClock
from onellm.errors import BadDefinitionError, InstanceLockedError, StorageError
from onellm.instances import Instance
from onellm.messages import Message, TextPart
from onellm.records import RunRecord, parse_line
from onellm.testing.store_conformance import RICH_INSTANCE, make_instance
from onellm_sqlalchemy import Money, OnellmTables, SqlAlchemyInstanceStore, SqlAlchemyRecordSink, tables

pytestmark = pytest.mark.anyio


@pytest.fixture
def pg(postgres_schema: str, tmp_path: Path) -> Iterator[tuple[Engine, OnellmTables]]:
    engine = create_engine(postgres_url(), poolclass=NullPool)
    found = postgres_tables(tmp_path)
    found.create_all(engine)
    try:
        yield engine, found
    finally:
        engine.dispose()


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[tuple[Engine, OnellmTables]]:
    engine = sqlite_engine(tmp_path)
    found = tables(MetaData())
    found.create_all(engine)
    try:
        yield engine, found
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest) -> tuple[Engine, OnellmTables]:
    found: tuple[Engine, OnellmTables] = request.getfixturevalue("lite" if request.param == "sqlite" else "pg")
    return found


# -- tables -----------------------------------------------------------------------------------------------------------


def test_tables_join_the_applications_metadata() -> None:
    metadata = MetaData()
    own = onellm_sqlalchemy.tables(metadata, prefix="app_", schema="audit")
    assert sorted(metadata.tables) == ["audit.app_instances", "audit.app_leases", "audit.app_records"]
    assert own.metadata is metadata
    assert onellm_sqlalchemy.tables(metadata, prefix="app_", schema="audit") == own
    assert [c.name for c in own.instances.c] == [
        "id",
        "version",
        "name",
        "name_folded",
        "state",
        "model",
        "agent_definition",
        "caller_instance_id",
        "spawner_instance_id",
        "modified_at",
        "text",
    ]
    assert [c.name for c in own.records.c] == ["seq", "instance_id", "kind", "time", "message_id", "cost", "line"]
    assert [c.name for c in own.leases.c] == ["instance_id", "holder", "expires_at", "duration"]
    assert isinstance(own.records.c.cost.type, Money)
    assert Money.__module__ == "onellm_sqlalchemy"  # what a migration that autogenerates imports
    default = onellm_sqlalchemy.tables(metadata)
    assert default.instances.fullname == "onellm_instances"


def test_a_name_taken_by_the_application_is_refused() -> None:
    from sqlalchemy import Column, Integer, Table

    metadata = MetaData()
    Table("onellm_records", metadata, Column("x", Integer, primary_key=True))
    with pytest.raises(ValueError, match="onellm_records"):
        onellm_sqlalchemy.tables(metadata)


def test_the_postgresql_schema_has_exact_money(pg: tuple[Engine, OnellmTables]) -> None:
    engine, found = pg
    columns = {c["name"]: c for c in inspect(engine).get_columns(found.records.name, schema=found.records.schema)}
    assert str(columns["cost"]["type"]) == "NUMERIC(28, 12)"
    assert str(columns["time"]["type"]) == "BIGINT"
    with engine.connect() as conn:
        compression = conn.execute(
            text("SELECT attcompression FROM pg_attribute WHERE attrelid = CAST(:t AS regclass) AND attname = 'text'"),
            {"t": f'"{found.instances.schema}"."{found.instances.name}"'},
        ).scalar_one()
    assert compression == "l"  # lz4: a long instance is rewritten on every save


async def test_a_missing_table_says_how_to_create_it_and_hides_the_password(postgres_schema: str) -> None:
    url = postgres_url().replace("postgres@", "postgres:hunter2secret@")
    engine = create_engine(url, poolclass=NullPool)
    store = SqlAlchemyInstanceStore(engine, tables=tables(MetaData(), prefix="never_created_"))
    try:
        with pytest.raises(StorageError) as caught:
            await store.load("x")
    finally:
        engine.dispose()
    message = str(caught.value)
    assert "hunter2secret" not in message
    assert "hunter2secret" not in repr(caught.value.path)
    assert "never_created_instances" in message
    assert "metadata.create_all(engine)" in message
    assert caught.value.operation == "load"


async def test_long_and_unusual_header_values_are_kept(db: tuple[Engine, OnellmTables]) -> None:
    engine, found = db
    store = SqlAlchemyInstanceStore(engine, tables=found)
    state = "a_state_from_a_newer_writer_" + "x" * 400
    await store.save(make_instance("odd", state=state, name="名前 " * 200, model="m" * 500))
    (summary,) = await store.list(state=state)
    assert (summary.state, summary.name, summary.model) == (state, "名前 " * 200, "m" * 500)


async def test_name_contains_takes_wildcards_literally(db: tuple[Engine, OnellmTables]) -> None:
    engine, found = db
    store = SqlAlchemyInstanceStore(engine, tables=found)
    await store.save(make_instance("pct", name="100% sure"))
    await store.save(make_instance("under", name="snake_case"))
    await store.save(make_instance("plain", name="Straße"))
    assert [s.id for s in await store.list(name_contains="%")] == ["pct"]
    assert [s.id for s in await store.list(name_contains="_")] == ["under"]
    assert [s.id for s in await store.list(name_contains="STRASSE")] == ["plain"]


def test_an_unknown_bind_is_refused() -> None:
    with pytest.raises(TypeError, match="Engine, sessionmaker, AsyncEngine or async_sessionmaker"):
        SqlAlchemyInstanceStore("sqlite:///x.db")


# -- rows and versions ------------------------------------------------------------------------------------------------


async def test_the_row_holds_the_file_text_and_its_version_counts_saves(db: tuple[Engine, OnellmTables]) -> None:
    engine, found = db
    clock = FakeClock()
    store = SqlAlchemyInstanceStore(engine, tables=found, clock=clock)
    inst = Instance.loads(RICH_INSTANCE)
    await store.save(inst)
    inst.messages.append(Message(id="m3", user=[TextPart(text="next")]))
    await store.save(inst)
    with engine.connect() as conn:
        row = conn.execute(select(found.instances).where(found.instances.c.id == "rich-1")).mappings().one()
    assert dict(row) == {
        "id": "rich-1",
        "version": 2,
        "name": "Court clerk",
        "name_folded": "court clerk",
        "state": "waiting_for_approval",
        "model": "claude-sonnet-4-5",
        "agent_definition": "agents/clerk.yaml",
        "caller_instance_id": "parent-7",
        "spawner_instance_id": "parent-7",
        "modified_at": 17_938_800_000_000_010,
        "text": inst.dumps(),
    }
    assert Instance.loads(row["text"]).dumps() == inst.dumps()


async def test_racing_writers_each_bump_the_version_once_and_the_last_save_wins(
    db: tuple[Engine, OnellmTables],
) -> None:
    engine, found = db
    stores = [SqlAlchemyInstanceStore(engine, tables=found) for _ in range(4)]
    await stores[0].save(make_instance("contended", state="start"))
    written: set[str] = set()

    async def writer(n: int) -> None:
        for i in range(10):
            inst = make_instance("contended", state=f"w{n}-{i}")
            written.add(inst.dumps())
            await stores[n].save(inst)

    async with anyio.create_task_group() as tg:
        for n in range(4):
            tg.start_soon(writer, n)
    with engine.connect() as conn:
        version = conn.execute(select(found.instances.c.version)).scalar_one()
    assert version == 41
    final = await stores[0].text_of("contended")
    assert final in written


async def test_a_writer_that_finds_the_row_changed_reads_it_again(lite: tuple[Engine, OnellmTables]) -> None:
    engine, found = lite
    store = SqlAlchemyInstanceStore(engine, tables=found)
    await store.save(make_instance("moved", state="one"))
    bumped = []

    # Another writer slips in between this save's read of the version and its update, once.
    @event.listens_for(engine, "before_cursor_execute")
    def slip_in(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("UPDATE onellm_instances") and not bumped:
            bumped.append(True)
            other = engine.raw_connection()
            try:
                other.execute("UPDATE onellm_instances SET version = version + 1, state = 'other'")  # type: ignore[attr-defined]
                other.commit()
            finally:
                other.close()

    await store.save(make_instance("moved", state="two"))
    event.remove(engine, "before_cursor_execute", slip_in)
    assert bumped
    with engine.connect() as conn:
        assert conn.execute(select(found.instances.c.version, found.instances.c.state)).one() == (3, "two")


async def test_a_connection_dropped_mid_save_keeps_the_old_row(pg: tuple[Engine, OnellmTables]) -> None:
    engine, found = pg
    store = SqlAlchemyInstanceStore(engine, tables=found)
    await store.save(make_instance("dropped", state="saved-before"))
    killer = create_engine(postgres_url(), poolclass=NullPool)

    @event.listens_for(engine, "before_cursor_execute")
    def cut(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith(f"UPDATE {found.instances.fullname}"):
            pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
            with killer.begin() as other:
                other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})

    try:
        with pytest.raises(StorageError) as caught:
            await store.save(make_instance("dropped", state="never-committed"))
    finally:
        event.remove(engine, "before_cursor_execute", cut)
        killer.dispose()
    assert caught.value.operation == "save"
    loaded = await store.load("dropped")
    assert loaded is not None
    assert loaded.state == "saved-before"


async def test_a_corrupt_row_names_its_instance_and_the_others_still_list(db: tuple[Engine, OnellmTables]) -> None:
    engine, found = db
    store = SqlAlchemyInstanceStore(engine, tables=found)
    await store.save(make_instance("good"))
    await store.save(make_instance("bad"))
    with engine.begin() as conn:
        conn.execute(
            update(found.instances).where(found.instances.c.id == "bad").values(text="instanceId: bad\nstate: [\n")
        )
    with pytest.raises(BadDefinitionError) as caught:
        await store.load("bad")
    assert caught.value.file is not None
    assert caught.value.file.endswith(f"{found.instances.fullname} (instance bad)")
    assert [s.id for s in await store.list()] == ["bad", "good"]
    assert await store.load("good") is not None


async def test_sync_methods_refuse_an_async_engine(tmp_path: Path) -> None:
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}")
    try:
        sink = SqlAlchemyRecordSink(engine)
        with pytest.raises(TypeError, match="AsyncEngine"):
            sink.read_sync("x")
    finally:
        await engine.dispose()


# -- leases -----------------------------------------------------------------------------------------------------------


async def test_a_lease_lapses_by_the_stores_clock_and_its_old_holder_cannot_save(
    db: tuple[Engine, OnellmTables],
) -> None:
    engine, found = db
    clock = FakeClock()
    first = SqlAlchemyInstanceStore(engine, tables=found, clock=clock)
    second = SqlAlchemyInstanceStore(engine, tables=found, clock=clock)
    await first.save(make_instance("job", state="running"))
    lease = await first.acquire("job")
    assert lease.expires_at == clock.now() + timedelta(seconds=60)
    clock.advance(59)
    with pytest.raises(InstanceLockedError):
        await second.acquire("job")
    clock.advance(2)
    taken = await second.acquire("job")
    with pytest.raises(InstanceLockedError):
        await lease.renew()
    assert lease.lost
    with pytest.raises(InstanceLockedError, match="lapsed and was lost"):
        await first.save(make_instance("job", state="stale"))
    await second.save(make_instance("job", state="taken-over"))
    loaded = await first.load("job")
    assert loaded is not None
    assert loaded.state == "taken-over"
    await lease.release()
    with pytest.raises(InstanceLockedError):
        await first.acquire("job")
    await taken.release()


async def test_a_clock_that_went_back_is_named_in_the_refusal(db: tuple[Engine, OnellmTables]) -> None:
    engine, found = db
    ahead = FakeClock()
    behind = FakeClock(ahead.now() - timedelta(hours=2))
    holder = SqlAlchemyInstanceStore(engine, tables=found, clock=ahead)
    taker = SqlAlchemyInstanceStore(engine, tables=found, clock=behind)
    lease = await holder.acquire("skewed")
    with pytest.raises(InstanceLockedError, match="a clock went back"):
        await taker.acquire("skewed")
    await lease.release()
    await (await taker.acquire("skewed")).release()


async def test_takers_racing_for_a_free_lease_get_one_holder(db: tuple[Engine, OnellmTables]) -> None:
    engine, found = db
    stores = [SqlAlchemyInstanceStore(engine, tables=found) for _ in range(6)]
    won: list[Any] = []
    lost: list[int] = []

    def take(n: int) -> None:
        try:
            won.append(anyio.run(stores[n].acquire, "prize"))
        except InstanceLockedError:
            lost.append(n)

    threads = [threading.Thread(target=take, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1
    assert len(lost) == 5
    await won[0].release()  # else its renewer outlives the test's tables


@pytest.fixture
async def async_pg(postgres_schema: str, tmp_path: Path) -> AsyncIterator[tuple[Any, OnellmTables]]:
    sync = create_engine(postgres_url(), poolclass=NullPool)
    found = postgres_tables(tmp_path)
    found.create_all(sync)
    sync.dispose()
    engine = create_async_engine(postgres_url(), poolclass=NullPool)
    try:
        yield engine, found
    finally:
        await engine.dispose()


async def test_the_holder_renews_on_an_async_engine_while_the_loop_runs(
    async_pg: tuple[Any, OnellmTables],
) -> None:
    engine, found = async_pg
    holder = SqlAlchemyInstanceStore(engine, tables=found, lease_seconds=0.3)
    other = SqlAlchemyInstanceStore(engine, tables=found, lease_seconds=0.3)
    lease = await holder.acquire("kept")
    for _ in range(8):  # four lease durations
        await anyio.sleep(0.15)
        with pytest.raises(InstanceLockedError):
            await other.acquire("kept")
    assert not lease.lost
    await lease.release()
    await (await other.acquire("kept")).release()


async def test_the_holder_renews_on_a_sync_engine(db: tuple[Engine, OnellmTables]) -> None:
    engine, found = db
    holder = SqlAlchemyInstanceStore(engine, tables=found, lease_seconds=0.3)
    other = SqlAlchemyInstanceStore(engine, tables=found, lease_seconds=0.3)
    lease = await holder.acquire("kept")
    for _ in range(8):
        await anyio.sleep(0.15)
        with pytest.raises(InstanceLockedError):
            await other.acquire("kept")
    await lease.release()
    await (await other.acquire("kept")).release()


# -- records ----------------------------------------------------------------------------------------------------------


async def test_record_rows_keep_the_line_and_exact_costs(db: tuple[Engine, OnellmTables]) -> None:
    engine, found = db
    sink = SqlAlchemyRecordSink(engine, tables=found)
    line = (
        '{"kind":"toolCall","time":"2026-11-30T09:15:09.7000000Z","instanceId":"r1","messageId":"m2",'
        '"call":{"id":"t1","tool":"get_docket","inputs":{},"cost":0.001}}'
    )
    record = parse_line(line)
    assert record is not None
    await sink.write(record)
    await sink.write_many([RunRecord(instance_id="r1", event="stopped"), RunRecord(event="runtime")])
    with engine.connect() as conn:
        rows = conn.execute(select(found.records).order_by(found.records.c.seq)).mappings().all()
    first = dict(rows[0])
    assert first["seq"] >= 1
    del first["seq"]
    assert first == {
        "instance_id": "r1",
        "kind": "toolCall",
        "time": 17_960_301_097_000_000,
        "message_id": "m2",
        "cost": Decimal("0.001"),
        "line": line,
    }
    assert [(r["instance_id"], r["kind"], r["cost"]) for r in rows[1:]] == [("r1", "run", None), (None, "run", None)]
    assert sink.cost_sync("r1") == Decimal("0.001")
    assert await sink.instance_ids() == ["r1"]
