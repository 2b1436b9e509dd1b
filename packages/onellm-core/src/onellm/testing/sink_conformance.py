"""The record sink conformance suite: what every record sink that keeps records must do, run unchanged against each.

Subclass `RecordSinkConformance` in a test module and say how to open the sink under test::

    from onellm.testing.sink_conformance import RecordSinkConformance

    class TestSqliteSink(RecordSinkConformance):
        def open_sink(self, location, *, clock):
            return SqliteRecordSink(location / "onellm.db", clock=clock)

`open_sink(location, clock=...)` is called with a fresh directory per test and the `FakeClock` that stamps records
arriving without a time; calling it twice with the same location must give two handles on the same storage. Override
`close_sink` when a handle needs closing. A sink's `read(instance_id, kind=...)` and `cost(instance_id)` may be plain
or async methods; override `read` and `cost` here when a sink spells them differently.

Every sink is checked against the same expected values (the JSON lines it gives back, byte for byte, and exact
decimal costs), so sinks that pass give the same results for the same records. A sink that sums costs over a subtree
(`cost(instance_id, include_subtree=True)`, following `callerInstanceId` and `spawnerInstanceId` through an instance
store on the same storage) says how to open that store in `open_store`; the subtree cases are skipped otherwise.

The suite needs pytest and anyio's pytest plugin (`@pytest.mark.anyio`); it brings its own `anyio_backend` fixture.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from onellm.clock import FakeClock
from onellm.instances import Instance, InstanceStore
from onellm.messages import Timestamp
from onellm.records import (
    CompactionRecord,
    InferenceRecord,
    Record,
    RecordSink,
    RunRecord,
    ToolCallRecord,
    encode_record,
    parse_line,
)

__all__ = ["RUN_LINES", "RecordSinkConformance", "run_records"]

# One run of instance `inst-clerk-1` with every kind, money with trailing zeros, unknown fields at every level,
# text that is not ASCII, and a NUL character (escaped in JSON; some databases refuse it raw).
RUN_LINES: tuple[bytes, ...] = (
    b'{"kind":"run","time":"2026-11-30T09:15:02.1234567Z","instanceId":"inst-clerk-1","event":"started",'
    b'"state":"running","model":"claude-sonnet","region":"eu-west"}\n',
    b'{"kind":"message","time":"2026-11-30T09:15:02.2000000Z","instanceId":"inst-clerk-1","messageId":"m1",'
    b'"message":{"id":"m1","user":[{"text":"Akte 24-1234, bitte: \xc3\xa4\xc3\xb6\xc3\xbc \xe2\x82\xac \xf0\x9f\x93\x81 '
    b'\\u0000 end"}],"source":{"kind":"user","name":"maria"}}}\n',
    b'{"kind":"inference","time":"2026-11-30T09:15:04.0100000Z","instanceId":"inst-clerk-1","messageId":"m2",'
    b'"provider":"anthropic","operation":"chat","durationMs":1803,"finishReason":"toolUse","usage":{"inputTokens":1200,'
    b'"outputTokens":85,"cacheReadInputTokens":4000,"cost":0.0050750,"costLines":[{"counter":"inputTokens",'
    b'"quantity":1200,"per":1000000,"unitPrice":3,"amount":0.0036}],"futureUsageKey":true}}\n',
    b'{"kind":"approval","time":"2026-11-30T09:15:09.5000000Z","instanceId":"inst-clerk-1","messageId":"m2",'
    b'"toolCallId":"toolu_01","tool":"get_docket","decision":"approved","by":"host"}\n',
    b'{"kind":"toolCall","time":"2026-11-30T09:15:09.7000000Z","instanceId":"inst-clerk-1","messageId":"m2",'
    b'"call":{"id":"toolu_01","tool":"get_docket","inputs":{"caseNo":"24-1234"},"result":[{"text":"Docket 24-1234: '
    b'hearing on 2026-12-14"}],"cost":0.001,"futureField":{"x":1}},"durationMs":190}\n',
    b'{"kind":"hook","time":"2026-11-30T09:15:09.8000000Z","instanceId":"inst-clerk-1","point":"beforeToolCall",'
    b'"hook":"hooks/audit.js","decision":"modify","reason":"masked a case number"}\n',
    b'{"kind":"compaction","time":"2026-11-30T09:15:10.0000000Z","instanceId":"inst-clerk-1","strategy":"summarize",'
    b'"at":"2026-11-30T09:15:10Z","replacedMessageIds":["m1"],"summaryMessageId":"m3","cost":0.0021}\n',
    b'{"kind":"inference","time":"2026-11-30T09:15:10.0500000Z","instanceId":"inst-clerk-1","messageId":"m3",'
    b'"provider":"anthropic","operation":"chat","durationMs":400,"usage":{"inputTokens":900,"outputTokens":40,'
    b'"cost":0.00176425}}\n',
    b'{"kind":"taskCompletion","time":"2026-11-30T09:15:10.9000000Z","instanceId":"inst-clerk-1","tool":"finish",'
    b'"result":{"summary":"hearing on 2026-12-14","pages":[1,2]}}\n',
    b'{"kind":"error","time":"2026-11-30T09:15:11.0000000Z","instanceId":"inst-clerk-1","errorType":"RateLimitError",'
    b'"message":"slow down","where":"inference"}\n',
    b'{"kind":"rawTurn","time":"2026-11-30T09:15:11.0100000Z","instanceId":"inst-clerk-1","messageId":"m3",'
    b'"request":{"model":"claude-sonnet","headers":{"x-api-key":"***"}},"response":{"id":"msg_1"}}\n',
    b'{"kind":"run","time":"2026-11-30T09:15:11.0200000Z","instanceId":"inst-clerk-1","event":"stopped",'
    b'"state":"stopped","model":"claude-sonnet"}\n',
)
"""A run's records as JSON lines, in the order a sink receives them."""

_RUN_COST = Decimal("0.0050750") + Decimal("0.001") + Decimal("0.00176425")
"""What `RUN_LINES` spent: two inference records and one tool call (the compaction's cost is not added)."""


def run_records() -> list[Record]:
    """`RUN_LINES` as records."""
    records = [parse_line(line) for line in RUN_LINES]
    return [record for record in records if record is not None]


@dataclass(kw_only=True)
class _FutureRecord(Record):
    """A kind a newer writer might add: sinks keep it, readers of this version skip it."""

    kind: ClassVar[str] = "futureKind"


def _inference(instance_id: str, cost: str, *, time: str = "2026-11-30T10:00:00Z") -> InferenceRecord:
    line = (
        f'{{"kind":"inference","time":"{time}","instanceId":"{instance_id}","provider":"openai",'
        f'"operation":"chat","usage":{{"inputTokens":10,"outputTokens":2,"cost":{cost}}}}}'
    )
    record = parse_line(line)
    assert isinstance(record, InferenceRecord)
    return record


def _tool_call(instance_id: str, cost: str) -> ToolCallRecord:
    line = (
        f'{{"kind":"toolCall","time":"2026-11-30T10:00:01Z","instanceId":"{instance_id}",'
        f'"call":{{"id":"c1","tool":"search","inputs":{{}},"cost":{cost}}}}}'
    )
    record = parse_line(line)
    assert isinstance(record, ToolCallRecord)
    return record


class RecordSinkConformance:
    """The behaviour every record sink that keeps records shares. Subclass it and implement `open_sink`."""

    def open_sink(self, location: Path, *, clock: FakeClock) -> RecordSink:
        """A handle on the sink kept at `location` (a fresh directory per test), stamping records with `clock`."""
        raise NotImplementedError("subclasses say how to open the sink under test")

    async def close_sink(self, sink: RecordSink) -> None:
        """Release a handle opened by `open_sink` (nothing by default)."""

    def open_store(self, location: Path) -> InstanceStore | None:
        """An instance store on the sink's storage, whose instances `cost(..., include_subtree=True)` follows; None
        (the default) when the sink has no subtree costs, which skips those cases."""
        return None

    async def close_store(self, store: InstanceStore) -> None:
        """Release a handle opened by `open_store` (nothing by default)."""

    async def read(self, sink: RecordSink, instance_id: str | None, *, kind: str | None = None) -> list[Record]:
        """The sink's records of one instance, of one kind when given (calls `sink.read`, awaiting it if async)."""
        return list(await _maybe_await(sink.read(instance_id, kind=kind)))  # type: ignore[attr-defined]

    async def cost(self, sink: RecordSink, instance_id: str, *, include_subtree: bool = False) -> Decimal:
        """What the sink says an instance spent (calls `sink.cost`, awaiting it if async)."""
        method: Any = sink.cost  # type: ignore[attr-defined]
        if include_subtree:
            return Decimal(await _maybe_await(method(instance_id, include_subtree=True)))
        return Decimal(await _maybe_await(method(instance_id)))

    # -- fixtures -------------------------------------------------------------------------------------------------

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def location(self, tmp_path: Path) -> Path:
        where = tmp_path / "sink"
        where.mkdir()
        return where

    @pytest.fixture
    def clock(self) -> FakeClock:
        return FakeClock()

    @pytest.fixture
    async def sink(self, location: Path, clock: FakeClock) -> AsyncIterator[RecordSink]:
        handle = self.open_sink(location, clock=clock)
        try:
            yield handle
        finally:
            await self.close_sink(handle)

    # -- reading back ---------------------------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_records_come_back_as_their_json_lines(self, sink: RecordSink) -> None:
        for record in run_records():
            await sink.write(record)
        back = await self.read(sink, "inst-clerk-1")
        assert [encode_record(record) for record in back] == list(RUN_LINES)

    @pytest.mark.anyio
    async def test_read_filters_by_kind(self, sink: RecordSink) -> None:
        for record in run_records():
            await sink.write(record)
        inference = await self.read(sink, "inst-clerk-1", kind="inference")
        assert [encode_record(r) for r in inference] == [RUN_LINES[2], RUN_LINES[7]]
        runs = await self.read(sink, "inst-clerk-1", kind="run")
        assert [r.event for r in runs if isinstance(r, RunRecord)] == ["started", "stopped"]
        assert await self.read(sink, "inst-clerk-1", kind="noSuchKind") == []

    @pytest.mark.anyio
    async def test_instances_and_the_runtime_keep_their_own_records(self, sink: RecordSink) -> None:
        await sink.write(RunRecord(instance_id="a", event="started", time=Timestamp("2026-11-30T10:00:00Z")))
        await sink.write(RunRecord(event="started", model="runtime-level", time=Timestamp("2026-11-30T10:00:01Z")))
        await sink.write(RunRecord(instance_id="b", event="started", time=Timestamp("2026-11-30T10:00:02Z")))
        await sink.write(RunRecord(instance_id="a", event="stopped", time=Timestamp("2026-11-30T10:00:03Z")))
        assert [_event(r) for r in await self.read(sink, "a")] == [("a", "started"), ("a", "stopped")]
        assert [_event(r) for r in await self.read(sink, "b")] == [("b", "started")]
        runtime = await self.read(sink, None)
        assert [encode_record(r) for r in runtime] == [
            b'{"kind":"run","time":"2026-11-30T10:00:01Z","event":"started","model":"runtime-level"}\n'
        ]
        assert await self.read(sink, "nobody") == []

    @pytest.mark.anyio
    async def test_unknown_kinds_are_skipped_and_unknown_fields_kept(self, sink: RecordSink) -> None:
        await sink.write(_FutureRecord(instance_id="f", time=Timestamp("2026-11-30T10:00:00Z"), extra={"x": 1}))
        line = b'{"kind":"run","time":"2026-11-30T10:00:01Z","instanceId":"f","event":"started","later":{"y":[1]}}\n'
        record = parse_line(line)
        assert record is not None
        await sink.write(record)
        back = await self.read(sink, "f")
        assert [encode_record(r) for r in back] == [line]
        assert back[0].extra == {"later": {"y": [1]}}

    @pytest.mark.anyio
    async def test_a_record_without_a_time_is_stamped_with_the_clock(self, sink: RecordSink, clock: FakeClock) -> None:
        await sink.write(RunRecord(instance_id="stamp", event="started"))
        clock.advance(1.5)
        await sink.write(RunRecord(instance_id="stamp", event="stopped", time=Timestamp("2026-01-01T00:00:00Z")))
        back = await self.read(sink, "stamp")
        assert [None if r.time is None else r.time.text for r in back] == [
            "2026-11-05T12:00:00.0000000Z",
            "2026-01-01T00:00:00Z",
        ]

    @pytest.mark.anyio
    async def test_a_record_is_copied_when_written(self, sink: RecordSink) -> None:
        record = RunRecord(instance_id="copy", event="started", time=Timestamp("2026-11-30T10:00:00Z"))
        await sink.write(record)
        record.event = "stopped"
        record.extra["late"] = True
        back = await self.read(sink, "copy")
        assert [encode_record(r) for r in back] == [
            b'{"kind":"run","time":"2026-11-30T10:00:00Z","instanceId":"copy","event":"started"}\n'
        ]

    @pytest.mark.anyio
    async def test_a_long_record_survives(self, sink: RecordSink) -> None:
        text = "".join(f"line {n}: {'x' * (n % 97)} ✓\n" for n in range(4000))
        line = (
            b'{"kind":"toolCall","time":"2026-11-30T10:00:00Z","instanceId":"long","call":{"id":"c","tool":"read_file",'
            b'"inputs":{"path":"big.txt"},"result":[{"text":' + _json_string(text) + b"}]}}\n"
        )
        record = parse_line(line)
        assert record is not None
        await sink.write(record)
        (back,) = await self.read(sink, "long")
        assert encode_record(back) == line

    @pytest.mark.anyio
    async def test_invalid_instance_ids_are_refused(self, sink: RecordSink) -> None:
        for bad in ("", "../up", "a/b", "x" * 129, "naïve"):
            with pytest.raises(ValueError):
                await sink.write(RunRecord(instance_id=bad, event="started"))

    @pytest.mark.anyio
    async def test_another_handle_on_the_same_storage_reads_the_records(
        self, sink: RecordSink, location: Path, clock: FakeClock
    ) -> None:
        for record in run_records()[:3]:
            await sink.write(record)
        other = self.open_sink(location, clock=clock)
        try:
            assert [encode_record(r) for r in await self.read(other, "inst-clerk-1")] == list(RUN_LINES[:3])
            await other.write(run_records()[3])
        finally:
            await self.close_sink(other)
        assert [encode_record(r) for r in await self.read(sink, "inst-clerk-1")] == list(RUN_LINES[:4])

    @pytest.mark.anyio
    async def test_concurrent_writers_lose_nothing_and_keep_each_ones_order(self, sink: RecordSink) -> None:
        async def writer(n: int) -> None:
            for i in range(30):
                await sink.write(
                    RunRecord(instance_id="busy", event=f"w{n}-{i}", time=Timestamp("2026-11-30T10:00:00Z"))
                )

        async with anyio.create_task_group() as tg:
            for n in range(4):
                tg.start_soon(writer, n)
        events = [_event(r)[1] for r in await self.read(sink, "busy")]
        assert sorted(events) == sorted(f"w{n}-{i}" for n in range(4) for i in range(30))
        for n in range(4):
            mine = [e for e in events if e.startswith(f"w{n}-")]
            assert mine == [f"w{n}-{i}" for i in range(30)]

    # -- costs ----------------------------------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_cost_sums_inference_and_tool_calls_but_not_compactions(self, sink: RecordSink) -> None:
        for record in run_records():
            await sink.write(record)
        assert await self.cost(sink, "inst-clerk-1") == _RUN_COST == Decimal("0.00783925")

    @pytest.mark.anyio
    async def test_cost_is_exact_decimal_money(self, sink: RecordSink) -> None:
        for cost in ("0.1", "0.2", "0.000000000001", "123456789.123456789012", "0"):
            await sink.write(_inference("money", cost))
        await sink.write(_tool_call("money", "0.7"))
        await sink.write(_inference("money-other", "5"))
        assert await self.cost(sink, "money") == Decimal("123456790.123456789013")
        assert await self.cost(sink, "money-other") == Decimal(5)

    @pytest.mark.anyio
    async def test_cost_of_an_instance_without_costs_is_zero(self, sink: RecordSink) -> None:
        assert await self.cost(sink, "never-ran") == 0
        await sink.write(RunRecord(instance_id="free", event="started"))
        await sink.write(CompactionRecord(instance_id="free", strategy="clearToolResults", cost=Decimal("0.5")))
        assert await self.cost(sink, "free") == 0

    @pytest.mark.anyio
    async def test_cost_of_a_subtree_follows_callers_and_spawners(self, location: Path, sink: RecordSink) -> None:
        store = self.open_store(location)
        if store is None:
            pytest.skip("this sink has no subtree costs")
        try:
            await store.save(Instance(id="root", state="waiting"))
            await store.save(Instance(id="child", spawner_instance_id="root"))
            await store.save(Instance(id="grandchild", caller_instance_id="child"))
            await store.save(Instance(id="sibling", caller_instance_id="root", spawner_instance_id="root"))
            await store.save(Instance(id="loop-a", caller_instance_id="loop-b", spawner_instance_id="grandchild"))
            await store.save(Instance(id="loop-b", caller_instance_id="loop-a"))
            await store.save(Instance(id="stranger", caller_instance_id="elsewhere"))
            costs = {
                "root": "1.1",
                "child": "0.02",
                "grandchild": "0.003",
                "sibling": "0.0004",
                "loop-a": "0.00005",
                "loop-b": "0.000006",
                "stranger": "70",
            }
            for instance_id, cost in costs.items():
                await sink.write(_inference(instance_id, cost))
                await sink.write(_tool_call(instance_id, cost))
            assert await self.cost(sink, "root") == Decimal("2.2")
            assert await self.cost(sink, "root", include_subtree=True) == Decimal("2.246912")
            assert await self.cost(sink, "child", include_subtree=True) == Decimal("0.046112")
            assert await self.cost(sink, "loop-a", include_subtree=True) == Decimal("0.000112")
            assert await self.cost(sink, "stranger", include_subtree=True) == Decimal(140)
            assert await self.cost(sink, "nobody", include_subtree=True) == 0
        finally:
            await self.close_store(store)


def _event(record: Record) -> tuple[str | None, str]:
    assert isinstance(record, RunRecord)
    return record.instance_id, record.event or ""


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _json_string(text: str) -> bytes:
    import msgspec

    return msgspec.json.encode(text)
