"""Runs against the seeds: message sources, `run` records for chat turns, the lease held while a run saves,
`rawTurn` records for `llmTurnLogs`, and the model names on telemetry spans."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from onellm import Runtime
from onellm.errors import InstanceLockedError
from onellm.instances import FileInstanceStore, Instance, MemoryInstanceStore
from onellm.messages import MessageSource
from onellm.records import JsonlRecordSink, Record, read_records
from onellm.testing import ScriptedProvider, ScriptStep

pytestmark = pytest.mark.anyio

TESTDATA = Path(__file__).resolve().parents[4] / "testdata"


class Keep:
    def __init__(self) -> None:
        self.records: list[Record] = []

    async def write(self, record: Record) -> None:
        self.records.append(record)

    def kinds(self) -> list[tuple[str, str | None, str | None]]:
        return [(r.kind, getattr(r, "event", None), getattr(r, "state", None)) for r in self.records]


def _runtime(**options: Any) -> tuple[Runtime, ScriptedProvider, Keep]:
    keep = Keep()
    provider = ScriptedProvider("openai")
    store = options.pop("store", None)
    runtime = Runtime(store=MemoryInstanceStore() if store is None else store, records=[keep], environ={}, **options)
    runtime.providers.set("openai", provider)
    return runtime, provider, keep


# ---------------------------------------------------------------------------------------------------------- sources
async def test_each_message_says_where_it_came_from(tmp_path: Path) -> None:
    sink = JsonlRecordSink(tmp_path / "records")
    runtime = Runtime(store=FileInstanceStore(tmp_path / "runs", durable=False), records=[sink], environ={})
    runtime.providers.set("openai", ScriptedProvider("openai").enqueue_text("2", "3", "5"))
    r = await runtime.generate("gpt-6-luna", "Name a prime.")
    assert r.message.source == MessageSource(kind="api")
    text = (tmp_path / "runs" / f"{r.instance.id}.yaml").read_text()
    assert "  source:\n    kind: api\n" in text
    [line] = [
        json.loads(x)
        for x in (tmp_path / "records" / f"{r.instance.id}.jsonl").read_text().splitlines()
        if json.loads(x)["kind"] == "message"
    ]
    assert line["message"]["source"] == {"kind": "api"}
    chat = runtime.chat("gpt-6-luna")
    await chat.ask("Name a prime.")
    streamed = await chat.stream("And the next?").result()
    assert [m.source for m in chat.instance.messages] == [MessageSource(kind="api")] * 2
    assert streamed.message.source == MessageSource(kind="api")


async def test_a_script_marks_its_prompts_api_and_its_scripted_answers_runtime(tmp_path: Path) -> None:
    flow = tmp_path / "p.flow"
    flow.write_text(
        "model: gpt-6-luna\ninitialPrompts:\n  - user:\n      - text: Name a prime.\n"
        "  - assistant:\n      - text: '2'\n  - user:\n      - text: And the next?\n",
        encoding="utf-8",
    )
    runtime, provider, _ = _runtime()
    provider.enqueue_text("3", "5")
    result = await runtime.run_script(flow)
    assert [(m.source.kind if m.source else None) for m in result.instance.messages] == ["api", "runtime", "api"]


# ------------------------------------------------------------------------------------------------------ run records
async def test_chat_turns_write_run_records_like_other_runs() -> None:
    runtime, provider, keep = _runtime()
    provider.enqueue_text("2", "3")
    chat = runtime.chat("gpt-6-luna")
    await chat.ask("Name a prime.")
    await chat.stream("And the next?").result()
    assert keep.kinds() == [
        ("run", "started", "running"),
        ("message", None, None),
        ("inference", None, None),
        ("run", "stopped", "waiting"),
        ("run", "resumed", "running"),
        ("message", None, None),
        ("inference", None, None),
        ("run", "stopped", "waiting"),
    ]
    assert {r.instance_id for r in keep.records} == {chat.instance.id}


async def test_a_script_is_one_run_and_a_failing_turn_closes_it_in_error(tmp_path: Path) -> None:
    from onellm.errors import RateLimitError

    flow = tmp_path / "p.flow"
    flow.write_text(
        "model: gpt-6-luna\ninitialPrompts:\n  - user:\n      - text: a\n  - user:\n      - text: b\n",
        encoding="utf-8",
    )
    runtime, provider, keep = _runtime()
    provider.enqueue(ScriptStep.text("one"), ScriptStep.failure(RateLimitError("slow down", provider="openai")))
    with pytest.raises(RateLimitError):
        await runtime.run_script(flow)
    assert keep.kinds() == [
        ("run", "started", "running"),
        ("message", None, None),
        ("inference", None, None),
        ("error", None, None),
        ("run", "stopped", "error"),
    ]
    [summary] = await runtime.store.list()
    assert summary.state == "error"


# ------------------------------------------------------------------------------------------------------------ leases
class WatchingStore(MemoryInstanceStore):
    """Notes, at every save, whether the instance's lease was held."""

    def __init__(self) -> None:
        super().__init__()
        self.held_at_save: list[bool] = []

    async def save(self, instance: Instance) -> None:
        self.held_at_save.append(instance.id in self._held)
        await super().save(instance)


async def test_every_run_holds_the_lease_while_it_saves(tmp_path: Path) -> None:
    flow = tmp_path / "p.flow"
    flow.write_text("model: gpt-6-luna\ninitialPrompts:\n  - user:\n      - text: a\n", encoding="utf-8")
    store = WatchingStore()
    runtime, provider, _ = _runtime(store=store)
    provider.enqueue_text("1", "2", "3", "4")
    r = await runtime.generate("gpt-6-luna", "x")
    await runtime.stream("gpt-6-luna", "x").result()
    chat = runtime.chat("gpt-6-luna")
    await chat.ask("x")
    await runtime.run_script(flow)
    assert store.held_at_save == [True, True, True, True]
    assert not store._held  # every lease given back
    lease = await store.acquire(r.instance.id or "")
    await lease.release()


async def test_a_chat_turn_refuses_while_another_handle_holds_the_lease(tmp_path: Path) -> None:
    store = FileInstanceStore(tmp_path / "runs", durable=False)
    runtime, provider, keep = _runtime(store=store)
    provider.enqueue_text("2", "3")
    chat = runtime.chat("gpt-6-luna")
    await chat.ask("Name a prime.")
    other = FileInstanceStore(tmp_path / "runs", durable=False)  # another handle on the same directory
    lease = await other.acquire(chat.instance.id or "")
    try:
        with pytest.raises(InstanceLockedError):
            await chat.ask("And the next?")
        with pytest.raises(InstanceLockedError):
            await chat.stream("And the next?").result()
        assert len(provider.requests) == 1  # nothing was sent
        assert [m.text for m in chat.instance.messages] == ["2"]  # the refused turns were taken out
        assert chat.instance.state == "waiting"
        saved = await store.load(chat.instance.id or "")
        assert saved is not None
        assert len(saved.messages) == 1
        with pytest.raises(InstanceLockedError):
            await chat.save()
    finally:
        await lease.release()
    assert await chat.ask("And the next?") == "3"
    assert keep.kinds()[-1] == ("run", "stopped", "waiting")


# ---------------------------------------------------------------------------------------------------------- rawTurn
async def test_llm_turn_logs_write_raw_turn_records_for_each_turn(tmp_path: Path) -> None:
    flow = tmp_path / "p.flow"
    flow.write_text(
        "model: gpt-6-luna\nllmTurnLogs: true\nsystemPrompt: Be brief.\ninitialPrompts:\n"
        "  - user:\n      - text: a\n  - user:\n      - text: b\n",
        encoding="utf-8",
    )
    runtime, provider, keep = _runtime()
    provider.enqueue(ScriptStep.text_with_usage("one", 3, 1), ScriptStep.text_with_usage("two", 5, 1))
    result = await runtime.run_script(flow)
    raw = [r for r in keep.records if r.kind == "rawTurn"]
    assert [r.message_id for r in raw] == [t.message.id for t in result.turns]
    first = raw[0].to_data()
    assert first["request"]["model"] == "gpt-6-luna"
    assert first["request"]["system"] == "Be brief."
    assert first["request"]["messages"][0]["user"] == [{"text": "a"}]
    assert first["response"]["message"]["assistant"] == [{"text": "one"}]
    assert first["response"]["usage"]["inputTokens"] == 3
    off = tmp_path / "off.flow"
    off.write_text("model: gpt-6-luna\ninitialPrompts:\n  - user:\n      - text: a\n", encoding="utf-8")
    keep.records.clear()
    provider.enqueue_text("x")
    await runtime.run_script(off)
    assert "rawTurn" not in [r.kind for r in keep.records]


def _responses_case() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((TESTDATA / "providers/openai-responses/basic/case.json").read_text())
    return data


async def test_raw_turn_records_keep_the_http_bodies_with_the_key_masked(tmp_path: Path) -> None:
    from onellm.providers.openai import OpenAIProvider

    key = "sk-raw-turn-secret-0123456789"
    case = _responses_case()
    body = copy.deepcopy(case["response"]["body"])
    body["output"][0]["content"][0]["text"] = f"Your key is {key}."  # a server that echoes the key
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=body)

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    provider = OpenAIProvider(api_key=key, http_client=client)
    sink = JsonlRecordSink(tmp_path / "records")
    runtime = Runtime(records=[sink], environ={}, llm_turn_logs=True)
    runtime.providers.set("openai", provider)
    r = await runtime.generate("gpt-6-luna", "Hello!")
    assert r.text == f"Your key is {key}."  # the answer as the model gave it; the raw bodies are masked
    [raw] = read_records(sink.path_for(r.instance.id), kind="rawTurn")
    assert raw.request == json.loads(sent[0].content)  # type: ignore[attr-defined]
    assert raw.response["id"] == body["id"]  # type: ignore[attr-defined]
    [line] = [x for x in sink.path_for(r.instance.id).read_text().splitlines() if '"kind":"rawTurn"' in x]
    assert key not in line
    assert raw.response["output"][0]["content"][0]["text"] == "Your key is ****."  # type: ignore[attr-defined]
    await client.aclose()


async def test_raw_turn_records_of_a_stream_keep_the_event_stream(tmp_path: Path) -> None:
    from onellm.providers.openai import OpenAIProvider

    case = _responses_case()
    stream: str = case["stream"]

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=stream.encode(), headers={"content-type": "text/event-stream"})

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    runtime, _, keep = _runtime(llm_turn_logs=True)
    runtime.providers.set("openai", OpenAIProvider(api_key="sk-x", http_client=client))
    r = await runtime.stream("gpt-6-luna", "Hello!").result()
    [raw] = [x for x in keep.records if x.kind == "rawTurn"]
    assert raw.response == stream  # type: ignore[attr-defined]
    assert raw.request["stream"] is True  # type: ignore[attr-defined]
    assert r.text
    await client.aclose()


# -------------------------------------------------------------------------------------------------------- telemetry
@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    from onellm import telemetry

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(tracer_provider=tracer_provider)
    yield exporter
    telemetry.configure()


async def test_spans_carry_the_name_asked_for_and_the_model_that_answered(spans: InMemorySpanExporter) -> None:
    runtime = Runtime(environ={})
    runtime.providers.set("anthropic", ScriptedProvider("anthropic").enqueue_text("a", "b", "c"))
    await runtime.ask("claude-sonnet", "x")
    await runtime.stream("claude-sonnet", "x").result()
    await runtime.chat("claude-sonnet").ask("x")
    named = [
        (s.name, (s.attributes or {})["gen_ai.request.model"], (s.attributes or {})["gen_ai.response.model"])
        for s in spans.get_finished_spans()
    ]
    assert named == [("chat claude-sonnet", "claude-sonnet", "claude-sonnet-5-5")] * 3
