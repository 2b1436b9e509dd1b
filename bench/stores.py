"""Instance stores and record sinks side by side: the file store, SQLite, and SQLAlchemy on SQLite and PostgreSQL.

    uv run python bench/stores.py [--tokens 200000] [--repeat 15] [--instances 1000] [--records 2000]

Rows, each the median of `--repeat` runs through the store's async API in one event loop:

- load of a 200,000-token instance (the agent transcript of `bench/formats.py`);
- append one turn and save it (the per-turn save of a run), flushed to disk and not;
- `list()` over 1,000 stored instances (small ones, a few turns each), all of them and filtered by state;

and record sinks: records per second through `write`, the path the runtime takes, beside `JsonlRecordSink`.

PostgreSQL rows run when `ONELLM_TEST_POSTGRES_URL` names a server (`eval "$(.ci/postgres start)"` starts one);
its server here runs with fsync off, so its "flushed" figures are not a disk's. Ratios are to `FileInstanceStore`
(for the sinks, to `JsonlRecordSink`) in the same run.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from formats import _turn, build

from onellm.instances import FileInstanceStore, Instance, InstanceStore
from onellm.messages import Message, TextPart
from onellm.records import InferenceRecord, JsonlRecordSink, Record, RunRecord, ToolCallRecord, parse_line

Timer = Callable[[], Awaitable[object]]


async def median_ms(fn: Timer, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def stores(base: Path, stack: AsyncExitStack) -> list[tuple[str, InstanceStore, InstanceStore]]:
    """(name, flushed store, unflushed store) for every store on this machine."""
    from onellm_sqlite import SqliteInstanceStore

    found: list[tuple[str, InstanceStore, InstanceStore]] = [
        ("FileInstanceStore", FileInstanceStore(base / "files"), FileInstanceStore(base / "files", durable=False)),
    ]
    sqlite_flushed = stack.enter_context(SqliteInstanceStore(base / "sqlite.db"))
    sqlite_fast = stack.enter_context(SqliteInstanceStore(base / "sqlite.db", durable=False))
    found.append(("SqliteInstanceStore", sqlite_flushed, sqlite_fast))
    for name, engine, tables in sqlalchemy_engines(base, stack):
        from onellm_sqlalchemy import SqlAlchemyInstanceStore

        store = SqlAlchemyInstanceStore(engine, tables=tables)
        found.append((name, store, store))
    return found


def sqlalchemy_engines(base: Path, stack: AsyncExitStack) -> list[tuple[str, Any, Any]]:
    from sqlalchemy import MetaData, create_engine, event

    from onellm_sqlalchemy import tables

    engines = []
    lite = create_engine(f"sqlite:///{base / 'sqlalchemy.db'}")

    @event.listens_for(lite, "connect")
    def _wal(conn: Any, _record: Any) -> None:
        conn.execute("PRAGMA journal_mode=WAL")

    lite_tables = tables(MetaData())
    lite_tables.create_all(lite)
    stack.callback(lite.dispose)
    engines.append(("SqlAlchemy, SQLite (pysqlite)", lite, lite_tables))
    url = os.environ.get("ONELLM_TEST_POSTGRES_URL")
    if url:
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
        pg = create_engine(url)
        pg_tables = tables(MetaData(), prefix=f"bench_{os.getpid()}_")
        pg_tables.create_all(pg)
        stack.callback(pg.dispose)
        stack.callback(pg_tables.drop_all, pg)
        engines.append(("SqlAlchemy, PostgreSQL (psycopg)", pg, pg_tables))
        from sqlalchemy.ext.asyncio import create_async_engine

        apg = create_async_engine(url)
        stack.push_async_callback(apg.dispose)
        engines.append(("SqlAlchemy, PostgreSQL (psycopg async)", apg, pg_tables))
    return engines


def small_instance(n: int, rng: random.Random) -> Instance:
    inst = Instance(
        id=f"listed-{n:05d}",
        name=rng.choice(["Court clerk", "Refactor helper", "Summarizer", "Triage"]),
        model="claude-sonnet-4-5",
        agent_definition="agents/clerk.yaml",
        state=rng.choice(["waiting", "stopped", "running", "error"]),
        caller_instance_id=rng.choice([None, "parent-1", "parent-2"]),
    )
    for turn in range(4):
        inst.messages.append(Message(id=f"m{turn}", user=[TextPart(text=f"turn {turn} " + "text " * 60)]))
    return inst


def sample_records(count: int) -> list[Record]:
    base: list[Record | None] = [
        parse_line(
            '{"kind":"inference","instanceId":"bench-1","messageId":"m2","provider":"anthropic","operation":"chat",'
            '"durationMs":1803,"finishReason":"toolUse","usage":{"inputTokens":1200,"outputTokens":85,'
            '"cacheReadInputTokens":4000,"cost":0.0050750,"costLines":[{"counter":"inputTokens","quantity":1200,'
            '"per":1000000,"unitPrice":3,"amount":0.0036}]}}'
        ),
        parse_line(
            '{"kind":"toolCall","instanceId":"bench-1","messageId":"m2","call":{"id":"toolu_01","tool":"get_docket",'
            '"inputs":{"caseNo":"24-1234"},"result":[{"text":"Docket 24-1234: hearing on 2026-12-14"}],"cost":0.001},'
            '"durationMs":190}'
        ),
        RunRecord(instance_id="bench-1", event="stateChanged", state="running", model="claude-sonnet"),
    ]
    kinds = [r for r in base if isinstance(r, InferenceRecord | ToolCallRecord | RunRecord)]
    return [kinds[n % len(kinds)] for n in range(count)]


async def bench_stores(args: argparse.Namespace, base: Path) -> None:
    inst, _raw = build(args.tokens)
    text = inst.dumps()
    print(f"instance: {len(inst.messages)} messages, {len(text.encode()):,} bytes, ~{len(text) // 4:,} tokens")
    rng = random.Random(5)
    counter = [len(inst.messages)]
    rows: list[tuple[str, str, float]] = []
    async with AsyncExitStack() as stack:
        for name, flushed, fast in stores(base, stack):
            await fast.save(Instance.loads(text))
            loaded = await fast.load(inst.id or "")
            assert loaded is not None
            assert loaded.dumps() == text

            async def load(store: InstanceStore = fast) -> None:
                await store.load("bench-200k")

            rows.append(("load 200k-token instance", name, await median_ms(load, args.repeat)))
            for label, store in (("append a turn + save, flushed", flushed), ("append a turn + save", fast)):

                async def save(store: InstanceStore = store, target: Instance = loaded) -> None:
                    counter[0] += 1
                    target.messages.append(Message.from_data(_turn(rng, counter[0], 200_000)))
                    await store.save(target)

                rows.append((label, name, await median_ms(save, args.repeat)))
            listing = random.Random(11)
            for n in range(args.instances):
                await fast.save(small_instance(n, listing))

            async def list_all(store: InstanceStore = fast) -> None:
                found = await store.list()
                assert len(found) >= args.instances

            async def list_waiting(store: InstanceStore = fast) -> None:
                await store.list(state="waiting", limit=50)

            rows.append((f"list() of {args.instances:,} instances", name, await median_ms(list_all, args.repeat)))
            rows.append(("list(state=, limit=50) of them", name, await median_ms(list_waiting, args.repeat)))
    table(rows, "FileInstanceStore", "ms")


async def bench_sinks(args: argparse.Namespace, base: Path) -> None:
    from onellm_sqlalchemy import SqlAlchemyRecordSink
    from onellm_sqlite import SqliteRecordSink

    records = sample_records(args.records)
    rows: list[tuple[str, str, float]] = []
    async with AsyncExitStack() as stack:
        sinks: list[tuple[str, Any]] = [
            ("JsonlRecordSink", JsonlRecordSink(base / "jsonl")),
            ("JsonlRecordSink, fsync", JsonlRecordSink(base / "jsonl-fsync", fsync=True)),
            ("SqliteRecordSink", stack.enter_context(SqliteRecordSink(base / "sink.db", durable=False))),
            ("SqliteRecordSink, flushed", stack.enter_context(SqliteRecordSink(base / "sink-flushed.db"))),
        ]
        for name, engine, tables in sqlalchemy_engines(base / "sinks", stack):
            sinks.append((f"{name}", SqlAlchemyRecordSink(engine, tables=tables)))
        for name, sink in sinks:
            started = time.perf_counter()
            for record in records:
                await sink.write(record)
            elapsed = time.perf_counter() - started
            rows.append(("records per second through write()", name, len(records) / elapsed))
            if hasattr(sink, "write_many"):
                started = time.perf_counter()
                await sink.write_many(records)
                rows.append(("... write_many() of them all", name, len(records) / (time.perf_counter() - started)))
    table(rows, "JsonlRecordSink", "/s")


def table(rows: list[tuple[str, str, float]], baseline: str, unit: str) -> None:
    base = {op: value for op, name, value in rows if name == baseline}
    width_op = max(len(op) for op, _, _ in rows)
    width_name = max(len(name) for _, name, _ in rows)
    print()
    print(f"{'operation':<{width_op}}  {'store':<{width_name}}  {'median' if unit == 'ms' else 'rate':>12}  ratio")
    for op, name, value in rows:
        ratio = f"{value / base[op]:5.2f}x" if base.get(op) else "    -"
        shown = f"{value:9.2f} ms" if unit == "ms" else f"{value:9,.0f} /s"
        print(f"{op:<{width_op}}  {name:<{width_name}}  {shown:>12}  {ratio}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--records", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="onellm-bench-stores-") as tmp:
        base = Path(tmp)
        (base / "sinks").mkdir()
        anyio.run(bench_stores, args, base)
        anyio.run(bench_sinks, args, base)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"\nmedians (rates: one pass); 1-minute load average {load:.2f} on {os.cpu_count()} CPUs; Python {sys.version.split()[0]}"
    )


if __name__ == "__main__":
    main()
