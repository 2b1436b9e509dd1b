"""What the SQLite store and sink add to the conformance suites: the file itself, its rows, faults and leases."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import anyio
import pytest

from onellm.clock import FakeClock
from onellm.errors import BadDefinitionError, InstanceLockedError, StorageError
from onellm.instances import Instance
from onellm.messages import Message, TextPart
from onellm.records import InferenceRecord, RunRecord, parse_line
from onellm.testing.store_conformance import RICH_INSTANCE, make_instance
from onellm_sqlite import SCHEMA_VERSION, SqliteInstanceStore, SqliteRecordSink

pytestmark = pytest.mark.anyio


def rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


# -- the file ---------------------------------------------------------------------------------------------------------


async def test_the_file_holds_the_instance_text_and_the_header_columns(tmp_path: Path) -> None:
    db = tmp_path / "onellm.db"
    clock = FakeClock()
    with SqliteInstanceStore(db, clock=clock) as store:
        await store.save(Instance.loads(RICH_INSTANCE))
        clock.advance(2)
        inst = make_instance("plain", name="Ünïcode Clerk", state="running")
        await store.save(inst)
        await store.save(inst)
    assert rows(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert rows(db, "PRAGMA journal_mode") == [("wal",)]
    assert rows(db, "PRAGMA application_id") == [(0x6F6E6C6C,)]
    assert rows(
        db,
        "SELECT id, version, name, name_folded, state, model, agent_definition, caller_instance_id, "
        "spawner_instance_id, modified_at FROM instances ORDER BY id",
    ) == [
        ("plain", 2, "Ünïcode Clerk", "ünïcode clerk", "running", None, None, None, None, 17_938_800_020_000_010),
        (
            "rich-1",
            1,
            "Court clerk",
            "court clerk",
            "waiting_for_approval",
            "claude-sonnet-4-5",
            "agents/clerk.yaml",
            "parent-7",
            "parent-7",
            17_938_800_000_000_000,
        ),
    ]
    # The row is the file: written out, it loads anywhere and reads back as saved.
    ((text,),) = rows(db, "SELECT text FROM instances WHERE id = 'rich-1'")
    assert text == RICH_INSTANCE
    (tmp_path / "rich-1.yaml").write_text(str(text), encoding="utf-8")
    assert Instance.load(tmp_path / "rich-1.yaml").dumps() == RICH_INSTANCE


async def test_records_rows_keep_the_line_and_the_query_columns(tmp_path: Path) -> None:
    db = tmp_path / "onellm.db"
    line = (
        '{"kind":"inference","time":"2026-11-30T09:15:04.0100000Z","instanceId":"i1","messageId":"m2",'
        '"provider":"anthropic","usage":{"inputTokens":1,"outputTokens":2,"cost":0.0050750}}'
    )
    record = parse_line(line)
    assert isinstance(record, InferenceRecord)
    with SqliteRecordSink(db) as sink:
        await sink.write(record)
        await sink.write(RunRecord(event="started", model="m"))
        await sink.write_many([RunRecord(instance_id="i2", event="started"), RunRecord(instance_id="i2", event="x")])
        assert await sink.instance_ids() == ["i1", "i2"]
    found = rows(db, "SELECT seq, instance_id, kind, time, message_id, cost, line FROM records ORDER BY seq")
    assert found[0] == (1, "i1", "inference", 17_960_301_040_100_000, "m2", "0.0050750", line)
    assert found[1][1:3] == (None, "run")
    assert found[1][5] is None


async def test_store_and_sink_share_one_file_and_delete_keeps_the_trail(tmp_path: Path) -> None:
    db = tmp_path / "onellm.db"
    with SqliteInstanceStore(db) as store, SqliteRecordSink(db) as sink:
        await store.save(make_instance("kept-trail"))
        await sink.write(RunRecord(instance_id="kept-trail", event="started"))
        assert await store.delete("kept-trail") is True
        assert await store.load("kept-trail") is None
        assert [r.kind for r in await sink.read("kept-trail")] == ["run"]


async def test_a_file_that_is_not_sqlite_is_refused_by_name(tmp_path: Path) -> None:
    bad = tmp_path / "notes.db"
    bad.write_bytes(b"these are my notes, not a database\n" * 200)
    store = SqliteInstanceStore(bad)
    with pytest.raises(StorageError) as caught:
        await store.load("x")
    assert str(caught.value) == f"{bad} is not a SQLite database (cannot load)"
    assert caught.value.path == str(bad)
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)
    with pytest.raises(StorageError):
        await SqliteRecordSink(bad).write(RunRecord(instance_id="x", event="started"))
    assert bad.read_bytes() == b"these are my notes, not a database\n" * 200


async def test_a_file_from_a_newer_version_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "onellm.db"
    with SqliteInstanceStore(db) as store:
        await store.save(make_instance("from-the-future"))
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    store = SqliteInstanceStore(db)
    with pytest.raises(StorageError) as caught:
        await store.list()
    assert "newer onellm-sqlite" in str(caught.value)
    assert f"schema version {SCHEMA_VERSION + 1}" in str(caught.value)
    assert rows(db, "SELECT id FROM instances") == [("from-the-future",)]


async def test_another_applications_file_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "theirs.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA application_id = 42")
        conn.execute("CREATE TABLE theirs (x)")
    with pytest.raises(StorageError, match="belongs to another application"):
        await SqliteInstanceStore(db).list()
    assert rows(db, "SELECT name FROM sqlite_master") == [("theirs",)]


async def test_a_missing_directory_or_a_read_only_file_fails_typed(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as caught:
        await SqliteInstanceStore(tmp_path / "no" / "such" / "dir" / "x.db").list()
    assert caught.value.operation == "list"
    db = tmp_path / "ro.db"
    with SqliteInstanceStore(db) as store:
        await store.save(make_instance("frozen", state="waiting"))
    make_read_only(db)
    try:
        store = SqliteInstanceStore(db)
        with pytest.raises(StorageError) as caught:
            await store.save(make_instance("frozen", state="stopped"))
        assert caught.value.path == str(db)
        store.close()
    finally:
        make_writable(db)
    with SqliteInstanceStore(db) as store:
        loaded = await store.load("frozen")
        assert loaded is not None
        assert loaded.state == "waiting"


def make_read_only(path: Path) -> None:
    """Read-only for this process, even as root (which ignores file modes): the immutable attribute then."""
    if _euid() != 0:
        path.chmod(0o444)
        return
    try:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    except FileNotFoundError:
        pytest.skip("cannot make a file read-only for root here: no chattr")
    if done.returncode != 0:
        pytest.skip(f"cannot make a file read-only for root here: {done.stderr.decode().strip()}")


def make_writable(path: Path) -> None:
    if _euid() == 0:
        with contextlib.suppress(FileNotFoundError):
            subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
    path.chmod(0o644)


async def test_a_corrupt_row_names_its_instance_and_the_others_still_list(tmp_path: Path) -> None:
    db = tmp_path / "onellm.db"
    with SqliteInstanceStore(db) as store:
        await store.save(make_instance("good", state="waiting"))
        await store.save(make_instance("bad", state="waiting"))
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE instances SET text = 'instanceId: bad\nmessages: [unclosed' WHERE id = 'bad'")
        with pytest.raises(BadDefinitionError) as caught:
            await store.load("bad")
        assert caught.value.file == f"{db} (instance bad)"
        assert [s.id for s in await store.list()] == ["bad", "good"]
        good = await store.load("good")
        assert good is not None


async def test_a_corrupt_record_line_names_the_row(tmp_path: Path) -> None:
    db = tmp_path / "onellm.db"
    with SqliteRecordSink(db) as sink:
        await sink.write(RunRecord(instance_id="r", event="started"))
        with sqlite3.connect(db) as conn:
            conn.execute("""UPDATE records SET line = '{"kind":"run","event":7}'""")
        with pytest.raises(BadDefinitionError) as caught:
            await sink.read("r")
        assert (caught.value.file, caught.value.line) == (f"{db} (records)", 1)


async def test_a_closed_store_says_so_and_gives_its_leases_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SqliteInstanceStore(tmp_path / "onellm.db")
    await store.save(make_instance("x"))
    lease = await store.acquire("x")
    store.close()
    assert lease.released
    await lease.release()
    second = SqliteInstanceStore(tmp_path / "onellm.db")
    other_lease = await second.acquire("y")
    second._db.close()  # the connection goes away under a held lease
    await other_lease.release()  # reported, not raised: the row lapses by itself
    assert "could not give back the lease on instance 'y'" in caplog.text
    with pytest.raises(StorageError, match="closed"):
        await store.load("x")
    with SqliteInstanceStore(tmp_path / "onellm.db") as other:
        await (await other.acquire("x")).release()


def test_many_first_opens_at_once_create_the_schema_once(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    errors: list[BaseException] = []

    def open_and_save(n: int) -> None:
        try:
            with SqliteInstanceStore(db, durable=False) as store:
                store.save_sync(make_instance(f"first-{n}"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_and_save, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert rows(db, "SELECT count(*) FROM instances") == [(8,)]
    assert rows(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]


def test_a_writer_killed_mid_save_leaves_a_whole_instance(tmp_path: Path) -> None:
    db = tmp_path / "onellm.db"
    script = textwrap.dedent(
        """
        import sys
        from onellm.instances import Instance
        from onellm.messages import Message, TextPart
        from onellm_sqlite import SqliteInstanceStore
        store = SqliteInstanceStore(sys.argv[1])
        inst = Instance(id="victim", state="running")
        for n in range(100000):
            inst.messages.append(Message(id=f"m{n}", user=[TextPart(text=f"turn {n} " + "x" * 20000)]))
            store.save_sync(inst)
            if n == 3:
                print("saving", flush=True)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(db)], stdout=subprocess.PIPE, text=True, env=child_env()
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "saving"
        time.sleep(0.3)
    finally:
        child.kill()  # SIGKILL on POSIX, TerminateProcess on Windows
        child.wait(timeout=30)
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    with SqliteInstanceStore(db) as store:
        loaded = store.load_sync("victim")
        assert loaded is not None
        count = len(loaded.messages)
        assert count >= 4
        assert [m.id for m in loaded.messages] == [f"m{n}" for n in range(count)]
        assert rows(db, "SELECT version FROM instances") == [(count,)]
        loaded.messages.append(Message(id="after", user=[TextPart(text="still writable")]))
        store.save_sync(loaded)


# -- leases -----------------------------------------------------------------------------------------------------------


async def test_a_lease_lapses_by_the_stores_clock_and_its_old_holder_cannot_save(tmp_path: Path) -> None:
    db = tmp_path / "onellm.db"
    clock = FakeClock()
    first = SqliteInstanceStore(db, clock=clock, lease_seconds=60)
    second = SqliteInstanceStore(db, clock=clock, lease_seconds=60)
    try:
        await first.save(make_instance("job", state="running"))
        lease = await first.acquire("job")
        assert lease.expires_at == clock.now() + timedelta(seconds=60)
        clock.advance(59)
        with pytest.raises(InstanceLockedError) as caught:
            await second.acquire("job")
        assert "until 2026-11-05T12:01:00+00:00" in str(caught.value)
        clock.advance(2)
        taken = await second.acquire("job")
        # The first holder stalled past its expiry: it learns so, and its saves are refused, so nothing of the new
        # holder's work is overwritten.
        with pytest.raises(InstanceLockedError):
            await lease.renew()
        assert lease.lost
        with pytest.raises(InstanceLockedError, match="lapsed and was lost"):
            await first.save(make_instance("job", state="stale"))
        await second.save(make_instance("job", state="taken-over"))
        loaded = await first.load("job")
        assert loaded is not None
        assert loaded.state == "taken-over"
        await lease.release()  # harmless: the row is the new holder's
        with pytest.raises(InstanceLockedError):
            await first.acquire("job")
        await taken.release()
        await first.save(make_instance("job", state="free-again"))
    finally:
        first.close()
        second.close()


async def test_renewing_pushes_the_expiry_a_full_lease_ahead(tmp_path: Path) -> None:
    clock = FakeClock()
    with SqliteInstanceStore(tmp_path / "onellm.db", clock=clock, lease_seconds=30) as store:
        lease = await store.acquire("renewed")
        clock.advance(25)
        await lease.renew()
        assert lease.expires_at == clock.now() + timedelta(seconds=30)
        clock.advance(25)
        with pytest.raises(InstanceLockedError):
            await store.acquire("renewed")
        await lease.release()
        with pytest.raises(InstanceLockedError, match="no longer held"):
            await lease.renew()


async def test_a_clock_that_went_back_is_named_in_the_refusal(tmp_path: Path) -> None:
    ahead = FakeClock()
    behind = FakeClock(ahead.now() - timedelta(hours=2))
    with (
        SqliteInstanceStore(tmp_path / "onellm.db", clock=ahead) as holder,
        SqliteInstanceStore(tmp_path / "onellm.db", clock=behind) as taker,
    ):
        lease = await holder.acquire("skewed")
        with pytest.raises(InstanceLockedError, match="a clock went back"):
            await taker.acquire("skewed")
        await lease.release()
        await (await taker.acquire("skewed")).release()


async def test_the_holder_renews_its_lease_on_its_own(tmp_path: Path) -> None:
    db = tmp_path / "onellm.db"
    with SqliteInstanceStore(db, lease_seconds=0.3) as holder, SqliteInstanceStore(db, lease_seconds=0.3) as other:
        lease = await holder.acquire("kept")
        for _ in range(8):  # four lease durations
            await anyio.sleep(0.15)
            with pytest.raises(InstanceLockedError):
                await other.acquire("kept")
        assert not lease.lost
        await lease.release()
        await (await other.acquire("kept")).release()


def test_a_lease_of_a_killed_holder_lapses(tmp_path: Path) -> None:
    db = tmp_path / "onellm.db"
    script = textwrap.dedent(
        """
        import sys, time, anyio
        from onellm_sqlite import SqliteInstanceStore
        store = SqliteInstanceStore(sys.argv[1], lease_seconds=0.5)
        async def main():
            await store.acquire("orphan")
            print("held", flush=True)
            time.sleep(60)
        anyio.run(main)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(db)], stdout=subprocess.PIPE, text=True, env=child_env()
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "held"
    finally:
        child.kill()  # SIGKILL on POSIX, TerminateProcess on Windows
        child.wait(timeout=30)

    async def take() -> None:
        with SqliteInstanceStore(db, lease_seconds=0.5) as store:
            with pytest.raises(InstanceLockedError):
                await store.acquire("orphan")
            await anyio.sleep(0.6)
            lease = await store.acquire("orphan")
            await lease.release()

    anyio.run(take)


async def test_lease_seconds_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lease_seconds"):
        SqliteInstanceStore(tmp_path / "x.db", lease_seconds=0)


@pytest.mark.parametrize("where", [":memory:", "", "file:x.db?mode=memory"])
def test_a_database_only_in_memory_is_refused(where: str) -> None:
    with pytest.raises(ValueError, match="not a database file"):
        SqliteInstanceStore(where)


async def test_name_contains_takes_wildcards_literally(tmp_path: Path) -> None:
    with SqliteInstanceStore(tmp_path / "onellm.db") as store:
        await store.save(make_instance("pct", name="100% sure"))
        await store.save(make_instance("under", name="snake_case"))
        await store.save(make_instance("plain", name="Straße"))
        assert [s.id for s in await store.list(name_contains="%")] == ["pct"]
        assert [s.id for s in await store.list(name_contains="_")] == ["under"]
        assert [s.id for s in await store.list(name_contains="STRASSE")] == ["plain"]


# -- costs ------------------------------------------------------------------------------------------------------------


async def test_costs_are_kept_as_decimal_text_and_summed_exactly(tmp_path: Path) -> None:
    db = tmp_path / "onellm.db"
    with SqliteRecordSink(db) as sink:
        for cost in ("0.1", "0.2", "1E-7"):
            record = parse_line(f'{{"kind":"inference","instanceId":"c","usage":{{"cost":{cost}}}}}')
            assert record is not None
            await sink.write(record)
        assert sink.cost_sync("c") == Decimal("0.3000001")
    assert rows(db, "SELECT cost FROM records ORDER BY seq") == [("0.1",), ("0.2",), ("0.0000001",)]


def _euid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else -1
