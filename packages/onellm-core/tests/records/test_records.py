"""Records: the JSON-lines shape, the reader's tolerance, and the sinks' failure rules."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest

from onellm.clock import FakeClock
from onellm.errors import BadDefinitionError
from onellm.messages import Message, TextPart, ToolCall, Usage
from onellm.records import (
    RECORD_KINDS,
    CompactionRecord,
    ErrorRecord,
    EventRecordSink,
    InferenceRecord,
    JsonlRecordSink,
    MessageRecord,
    Record,
    RecordSinkFailure,
    RecordSinks,
    RunRecord,
    ToolCallRecord,
    encode_record,
    parse_line,
    read_records,
    total_cost,
)

CORPUS = Path(__file__).resolve().parents[4] / "testdata" / "formats" / "records"
LINES = [
    (path.name, number, line)
    for path in sorted(CORPUS.glob("*.jsonl"))
    for number, line in enumerate(path.read_bytes().splitlines(keepends=True), start=1)
    if line.strip()
]


def test_every_kind_of_the_spec_is_known() -> None:
    assert set(RECORD_KINDS) == {
        "run",
        "message",
        "inference",
        "toolCall",
        "taskCompletion",
        "approval",
        "compaction",
        "hook",
        "error",
        "rawTurn",
    }


@pytest.mark.parametrize(("name", "number", "line"), LINES, ids=[f"{n}:{i}" for n, i, _ in LINES])
def test_known_lines_write_back_byte_for_byte(name: str, number: int, line: bytes) -> None:
    record = parse_line(line, file=name, line_number=number)
    if record is None:
        assert b'"budgetWarning"' in line  # the one kind this version does not know
        return
    assert encode_record(record) == line


def test_reader_skips_unknown_kinds_and_keeps_unknown_fields() -> None:
    records = list(read_records(CORPUS / "forward-compatible.jsonl"))
    assert [r.kind for r in records] == ["run", "toolCall", "inference"]
    run, call, inference = records
    assert run.extra == {"region": "eu-west", "attempt": 2}
    assert isinstance(call, ToolCallRecord)
    assert call.extra == {"sandbox": "js"}
    assert call.call is not None
    assert call.call.extra == {"futureField": {"x": 1}}
    assert isinstance(inference, InferenceRecord)
    assert inference.usage is not None
    assert inference.usage.cost == Decimal("1E-7")


def test_a_byte_order_mark_and_crlf_line_ends_are_read(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"kind":"run","event":"started"}\r\n{"kind":"run","event":"stopped"}\r\n')
    assert [r.event for r in read_records(path) if isinstance(r, RunRecord)] == ["started", "stopped"]


def test_kind_filter_and_money_are_exact() -> None:
    records = list(read_records(CORPUS / "inst-clerk-1.jsonl"))
    inference = list(read_records(CORPUS / "inst-clerk-1.jsonl", kind="inference"))
    assert len(inference) == 2
    assert total_cost(records) == Decimal("0.0050750") + Decimal("0.001") + Decimal("0.00176425")
    first = inference[0]
    assert isinstance(first, InferenceRecord)
    assert first.usage is not None
    assert [line.amount for line in first.usage.cost_lines] == [
        Decimal("0.0036"),
        Decimal("0.001275"),
        Decimal("0.0002"),
    ]


def test_compaction_cost_is_not_counted_twice() -> None:
    records = list(read_records(CORPUS / "inst-long-1.jsonl"))
    compaction = next(r for r in records if isinstance(r, CompactionRecord))
    assert compaction.cost == Decimal("0.0021")
    assert compaction.replaced_message_ids == ["m1", "m2", "m3"]
    assert total_cost(records) == Decimal("0.0021")


@pytest.mark.parametrize(
    ("line", "detail"),
    [
        (b'{"kind": "run", "time": ', "not a JSON line"),
        (b"[1, 2]", "JSON object"),
        (b'{"kind": "run", "event": 3}', "expected a string"),
        (b'{"kind": "inference", "usage": {"inputTokens": "many"}}', "whole number"),
        (b'{"kind": "run", "time": "yesterday"}', "time"),
    ],
)
def test_malformed_lines_fail_typed_with_the_line_number(line: bytes, detail: str) -> None:
    with pytest.raises(BadDefinitionError) as info:
        list(read_records([b"\n", b'{"kind":"run"}\n', line + b"\n"], strict=True))
    assert info.value.line == 3
    assert detail.lower() in str(info.value).lower()


def test_a_torn_append_is_reported_skipped_and_not_glued_to_the_next(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "i.jsonl"
    path.write_bytes(b'{"kind":"run","event":"started"}\n{"kind":"run","ev')
    assert [r.kind for r in read_records(path)] == ["run"]
    assert f"{path}:2" in caplog.text
    with pytest.raises(BadDefinitionError) as info:
        list(read_records(path, strict=True))
    assert info.value.line == 2
    # The next append starts on a new line, so only the torn one is lost.
    JsonlRecordSink(tmp_path).write_sync(RunRecord(instance_id="i", event="stopped"))
    events = [r.event for r in read_records(path) if isinstance(r, RunRecord)]
    assert events == ["started", "stopped"]


def test_records_built_in_code_write_the_spec_shape() -> None:
    record = InferenceRecord(
        time=datetime(2026, 11, 30, 9, 0, 0, 123456, tzinfo=UTC),
        instance_id="i1",
        message_id="m1",
        provider="openai",
        operation="chat",
        duration_ms=12,
        finish_reason="stop",
        usage=Usage(input_tokens=3, output_tokens=4, cost=Decimal("0.000012300")),
    )
    assert encode_record(record) == (
        b'{"kind":"inference","time":"2026-11-30T09:00:00.1234560Z","instanceId":"i1","messageId":"m1",'
        b'"provider":"openai","operation":"chat","durationMs":12,"finishReason":"stop",'
        b'"usage":{"inputTokens":3,"outputTokens":4,"cost":0.000012300}}\n'
    )


@pytest.mark.anyio
async def test_jsonl_sink_writes_one_file_per_instance(tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 11, 30, 12, 0, tzinfo=UTC))
    sink = JsonlRecordSink(tmp_path / "records", clock=clock)
    await sink.write(RunRecord(instance_id="a", event="started", state="running"))
    await sink.write(MessageRecord(instance_id="a", message=Message(id="m1", user=[TextPart("hi")])))
    await sink.write(ErrorRecord(error_type="X", message="runtime-level"))
    await sink.write(ToolCallRecord(instance_id="b", call=ToolCall(id="c", tool="t", cost=Decimal("0.5"))))
    assert sorted(p.name for p in (tmp_path / "records").iterdir()) == ["_runtime.jsonl", "a.jsonl", "b.jsonl"]
    records = sink.read("a")
    assert [r.kind for r in records] == ["run", "message"]
    assert records[0].time is not None
    assert records[0].time.text.startswith("2026-11-30T12:00:00")
    assert sink.read(None)[0].kind == "error"
    assert sink.cost("b") == Decimal("0.5")
    assert sorted(sink.instance_ids()) == ["a", "b"]
    assert sink.read("never-written") == []


@pytest.mark.anyio
async def test_jsonl_sink_with_fsync(tmp_path: Path) -> None:
    sink = JsonlRecordSink(tmp_path, fsync=True)
    await sink.write(RunRecord(instance_id="d", event="started"))
    assert [r.kind for r in sink.read("d")] == ["run"]


@pytest.mark.parametrize("bad", ["../escape", "", "a/b", "x" * 129, "sp ace"])
def test_jsonl_sink_refuses_ids_that_are_not_instance_ids(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="instance id"):
        JsonlRecordSink(tmp_path).write_sync(RunRecord(instance_id=bad, event="started"))


def test_jsonl_sink_lines_stay_whole_under_concurrent_writers(tmp_path: Path) -> None:
    sink = JsonlRecordSink(tmp_path)
    text = "x" * 5000

    def writer(n: int) -> None:
        for i in range(50):
            sink.write_sync(ErrorRecord(instance_id="shared", error_type=f"w{n}", message=f"{i}:{text}"))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = sink.read("shared")
    assert len(records) == 200
    assert all(isinstance(r, ErrorRecord) and r.message and r.message.endswith(text) for r in records)


class _Boom:
    def __init__(self) -> None:
        self.calls = 0

    async def write(self, record: Record) -> None:
        self.calls += 1
        raise RuntimeError("disk full")


@pytest.mark.anyio
async def test_fan_out_reports_a_failing_sink_and_goes_on() -> None:
    seen: list[tuple[str, Record]] = []
    failures: list[RecordSinkFailure] = []
    first = EventRecordSink(lambda r: seen.append(("first", r)))
    boom = _Boom()

    async def later(record: Record) -> None:
        seen.append(("last", record))

    sinks = RecordSinks(first, boom, EventRecordSink(later), on_error=failures.append)
    record = RunRecord(instance_id="i", event="started")
    await sinks.write(record)
    await sinks.write(RunRecord(instance_id="i", event="stopped"))
    assert [name for name, _ in seen] == ["first", "last", "first", "last"]
    assert boom.calls == 2
    assert len(failures) == 2
    assert isinstance(failures[0].error, RuntimeError)
    assert failures[0].sink is boom
    # One time for every sink: the fan-out stamps the record once.
    assert seen[0][1].time is not None
    assert seen[0][1].time == seen[1][1].time


@pytest.mark.anyio
async def test_a_failing_error_callback_does_not_fail_the_run(caplog: pytest.LogCaptureFixture) -> None:
    def bad_callback(failure: RecordSinkFailure) -> None:
        raise ValueError("callback broke")

    sinks = RecordSinks(_Boom(), on_error=bad_callback)
    await sinks.write(RunRecord(instance_id="i", event="started"))
    assert "disk full" in caplog.text


@pytest.mark.anyio
async def test_default_error_report_is_a_log_warning(caplog: pytest.LogCaptureFixture) -> None:
    await RecordSinks(_Boom()).write(RunRecord(instance_id="i", event="started"))
    assert any(r.levelname == "WARNING" and r.name == "onellm.records" for r in caplog.records)


@pytest.mark.anyio
async def test_cancellation_reaches_the_caller() -> None:
    class Slow:
        async def write(self, record: Record) -> None:
            await anyio.sleep(10)

    after: list[Any] = []
    sinks = RecordSinks(Slow(), EventRecordSink(after.append))
    with anyio.move_on_after(0.05) as scope:
        await sinks.write(RunRecord(instance_id="i", event="started"))
    assert scope.cancelled_caught
    assert after == []


@pytest.mark.anyio
async def test_event_sink_unsubscribe() -> None:
    got: list[Record] = []
    sink = EventRecordSink()
    stop = sink.subscribe(got.append)
    await sink.write(RunRecord(event="started"))
    stop()
    await sink.write(RunRecord(event="stopped"))
    assert len(got) == 1


def test_compaction_round_trip_through_data() -> None:
    record = CompactionRecord(
        instance_id="i", strategy="clearToolResults", at="m9", replaced_message_ids=[], cost=Decimal("0")
    )
    again = parse_line(encode_record(record))
    assert again == record


def test_the_spec_example_lines_read_and_write_back_unchanged() -> None:
    spec = Path(__file__).resolve().parents[4] / "spec" / "records.md"
    block = spec.read_text(encoding="utf-8").split("```json\n", 1)[1].split("```", 1)[0]
    lines = block.encode().splitlines(keepends=True)
    assert len(lines) >= 5
    for line in lines:
        record = parse_line(line)
        assert record is not None
        assert encode_record(record) == line
