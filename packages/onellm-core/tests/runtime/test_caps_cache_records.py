from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import onellm
from onellm import Runtime
from onellm.errors import BudgetExceededError, BudgetKind, RateLimitError
from onellm.instances import MemoryInstanceStore
from onellm.records import EventRecordSink, Record
from onellm.testing import Pause, ScriptedProvider, ScriptStep

pytestmark = pytest.mark.anyio


def _runtime(**options: object) -> tuple[Runtime, ScriptedProvider]:
    provider = ScriptedProvider("openai")
    runtime = Runtime(store=MemoryInstanceStore(), environ={}, **options)  # type: ignore[arg-type]
    runtime.providers.set("openai", provider)
    return runtime, provider


# ------------------------------------------------------------------------------------------------------ spend caps
async def test_max_cost_per_call_refuses_before_sending() -> None:
    runtime, provider = _runtime(max_cost_per_call=Decimal("0.01"))
    provider.enqueue_text("never sent")
    with pytest.raises(BudgetExceededError) as caught:
        await runtime.ask("gpt-6-luna", "x")  # worst case: 128000 output tokens at $0.50 per million
    assert caught.value.kind is BudgetKind.CALL_COST
    assert provider.requests == []
    assert len(runtime.store) == 0  # type: ignore[arg-type]
    assert await runtime.ask("gpt-6-luna", "x", max_output_tokens=1000) == "never sent"


async def test_spend_cap_counts_real_cost() -> None:
    runtime, provider = _runtime(spend_cap="0.001")
    provider.enqueue(ScriptStep.text_with_usage("a", 1000, 1000))
    await runtime.ask("gpt-6-luna", "x", max_output_tokens=1000)
    assert runtime.spent == Decimal("0.0006")
    provider.enqueue_text("b")
    with pytest.raises(BudgetExceededError) as caught:  # 0.0006 spent + worst case 0.0005 > 0.001
        await runtime.ask("gpt-6-luna", "x", max_output_tokens=1000)
    assert caught.value.kind is BudgetKind.SPEND
    assert len(provider.requests) == 1


async def test_two_concurrent_calls_cannot_pass_the_cap_together() -> None:
    runtime, provider = _runtime(spend_cap="0.0008")
    gate = anyio.Event()
    provider.enqueue(ScriptStep.text("first", Pause(event=gate)))
    outcome: list[str] = []

    async def first() -> None:
        outcome.append(await runtime.ask("gpt-6-luna", "x", max_output_tokens=1000))

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        await anyio.wait_all_tasks_blocked()
        assert len(provider.requests) == 1  # the first call is in flight, its worst case held
        with pytest.raises(BudgetExceededError, match="held for calls in flight"):
            await runtime.ask("gpt-6-luna", "y", max_output_tokens=1000)
        assert len(provider.requests) == 1  # the second was never sent
        gate.set()
    assert outcome == ["first"]


async def test_instance_spend_cap_counts_earlier_turns() -> None:
    runtime, provider = _runtime(instance_spend_cap="0.001")
    provider.enqueue(ScriptStep.text_with_usage("2", 1000, 1000))
    chat = runtime.chat("gpt-6-luna", max_output_tokens=1000)
    assert await chat.ask("Name a prime.") == "2"
    with pytest.raises(BudgetExceededError) as caught:
        await chat.ask("And the next?")
    assert caught.value.kind is BudgetKind.INSTANCE_SPEND
    assert len(chat.instance.messages) == 1  # the refused turn left the conversation as it was
    # a fresh instance has the whole cap
    provider.enqueue_text("3")
    assert await runtime.chat("gpt-6-luna", max_output_tokens=1000).ask("Name a prime.") == "3"


# ---------------------------------------------------------------------------------------------------- result cache
async def test_cache_hit_sends_nothing_and_costs_nothing() -> None:
    runtime, provider = _runtime(cache=True)
    provider.enqueue(ScriptStep.text_with_usage("2, 3 and 5.", 13, 7), ScriptStep.text_with_usage("7", 5, 1))
    first = await runtime.generate("gpt-6-luna", "Name three primes.")
    second = await runtime.generate("gpt-6-luna", "Name three primes.")
    streamed = await runtime.stream("gpt-6-luna", "Name three primes.").result()
    assert first.cost.total == Decimal("0.0000048")
    assert not first.cached
    assert second.cached
    assert streamed.cached
    assert second.text == streamed.text == "2, 3 and 5."
    assert second.cost.total == 0
    assert second.instance.id != first.instance.id
    assert len(provider.requests) == 1
    other = await runtime.generate("gpt-6-luna", "Name three primes.", temperature=0.2)  # another option: a miss
    assert other.text == "7"
    assert len(provider.requests) == 2
    assert runtime.cache is not None
    assert runtime.cache.hits == 2


# --------------------------------------------------------------------------------------------------------- records
async def test_records_for_run_message_inference_and_error() -> None:
    seen: list[Record] = []

    async def keep(record: Record) -> None:
        seen.append(record)

    runtime, provider = _runtime(records=[EventRecordSink(keep)])
    provider.enqueue(ScriptStep.text_with_usage("ok", 13, 7))
    r = await runtime.generate("gpt-6-luna", "x")
    assert [(x.kind, getattr(x, "event", None)) for x in seen] == [
        ("run", "started"),
        ("message", None),
        ("inference", None),
        ("run", "stopped"),
    ]
    assert {x.instance_id for x in seen} == {r.instance.id}
    inference = seen[2]
    assert inference.usage.cost == Decimal("0.0000048")  # type: ignore[attr-defined]
    seen.clear()
    provider.enqueue(ScriptStep.failure(RateLimitError("slow", provider="openai")))
    with pytest.raises(RateLimitError):
        await runtime.generate("gpt-6-luna", "x")
    assert [x.kind for x in seen] == ["run", "error", "run"]
    assert seen[1].error_type == "RateLimitError"  # type: ignore[attr-defined]


async def test_jsonl_records_from_the_environment(tmp_path: Path) -> None:
    runtime = Runtime.from_environment(
        {"ONELLM_RECORDS": str(tmp_path / "records"), "ONELLM_INSTANCES": str(tmp_path / "runs")}
    )
    provider = ScriptedProvider("openai").enqueue(ScriptStep.text_with_usage("ok", 13, 7))
    runtime.providers.set("openai", provider)
    r = await runtime.generate("gpt-6-luna", "x")
    lines = (tmp_path / "records" / f"{r.instance.id}.jsonl").read_text().splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["run", "message", "inference", "run"]
    assert (tmp_path / "runs" / f"{r.instance.id}.yaml").is_file()


# ------------------------------------------------------------------------------------------------------- telemetry
@pytest.fixture
def otel() -> Iterator[tuple[InMemorySpanExporter, InMemoryMetricReader]]:
    from onellm import telemetry

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    telemetry.configure(tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader]))
    yield spans, reader
    telemetry.configure()


async def test_one_client_span_per_call_with_genai_attributes(
    otel: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    spans, reader = otel
    runtime, provider = _runtime()
    provider.enqueue(ScriptStep.text_with_usage("secret answer", 13, 7, cache_read_input_tokens=4))
    await runtime.ask("gpt-6-luna", "secret prompt")
    [span] = spans.get_finished_spans()
    assert span.name == "chat gpt-6-luna"
    assert span.kind is SpanKind.CLIENT
    attrs = dict(span.attributes or {})
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "gpt-6-luna"
    assert attrs["gen_ai.response.model"] == "gpt-6-luna"
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs["gen_ai.usage.input_tokens"] == 17
    assert attrs["gen_ai.usage.output_tokens"] == 7
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 4
    assert "gen_ai.usage.cache_creation.input_tokens" not in attrs
    assert not any("secret" in str(v) for v in attrs.values())
    data = reader.get_metrics_data()
    assert data is not None
    metrics = {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert set(metrics) == {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"}
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in metrics["gen_ai.client.token.usage"].data.data_points}  # type: ignore[index,union-attr]
    assert tokens == {"input": 17, "output": 7}
    assert metrics["gen_ai.client.operation.duration"].unit == "s"


async def test_failed_call_span_has_error_type(otel: tuple[InMemorySpanExporter, InMemoryMetricReader]) -> None:
    spans, _ = otel
    runtime, provider = _runtime()
    provider.enqueue(ScriptStep.failure(RateLimitError("slow", provider="openai")))
    with pytest.raises(RateLimitError):
        await runtime.ask("gpt-6-luna", "x")
    provider.enqueue(ScriptStep.embedding([1.0]))
    await runtime.embed("embedding-small", "x")
    failed, embedded = spans.get_finished_spans()
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "RateLimitError"
    assert embedded.name == "embeddings embedding-small"  # the name asked for; the resolved one answered
    assert (embedded.attributes or {})["gen_ai.request.model"] == "embedding-small"
    assert (embedded.attributes or {})["gen_ai.response.model"] == "text-embedding-3-small"


# ------------------------------------------------------------------------------------------------------ sync twins
def test_sync_twins_outside_a_loop() -> None:
    runtime, provider = _runtime()
    provider.enqueue_text("one", "two")
    provider.enqueue(ScriptStep.text("a", "b"))
    with onellm.use_runtime(runtime):
        assert onellm.ask_sync("gpt-6-luna", "x") == "one"
        assert onellm.generate_sync("gpt-6-luna", "x").text == "two"
        assert list(onellm.stream_text_sync("gpt-6-luna", "x")) == ["a", "b"]
        assert len(onellm.embed_sync("embedding-small", ["p", "q"])) == 2


async def test_sync_twin_refuses_inside_a_running_loop() -> None:
    with pytest.raises(RuntimeError, match=r"await onellm\.ask"):
        onellm.ask_sync("gpt-6-luna", "x")


async def test_sync_twin_refuses_in_a_worker_thread() -> None:
    def call() -> None:
        onellm.ask_sync("gpt-6-luna", "x")

    with pytest.raises(RuntimeError, match="worker thread"):
        await anyio.to_thread.run_sync(call)


async def test_a_refused_streamed_chat_turn_leaves_the_conversation() -> None:
    runtime, provider = _runtime(max_cost_per_call="0.001")
    provider.enqueue(ScriptStep.text_with_usage("2", 10, 1))
    chat = runtime.chat("gpt-6-luna")
    assert await chat.ask("Name a prime.", max_output_tokens=100) == "2"
    answer = chat.stream("And the next?")  # worst case with the model's full output allowance: refused
    with pytest.raises(BudgetExceededError):
        await answer.result()
    with pytest.raises(BudgetExceededError):
        await answer.result()
    assert len(chat.instance.messages) == 1
    assert chat.instance.state == "waiting"
    assert len(provider.requests) == 1


async def test_spans_follow_a_global_provider_and_cost_nothing_without_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace as trace_api
    from opentelemetry.metrics import _internal as metrics_api

    from onellm import telemetry
    from onellm.telemetry import _genai

    telemetry.configure()
    monkeypatch.setattr(trace_api, "_TRACER_PROVIDER", None)
    monkeypatch.setattr(metrics_api, "_METER_PROVIDER", None)
    monkeypatch.setattr(_genai, "_FROM_ENVIRONMENT", False)
    runtime, provider = _runtime()
    provider.enqueue(ScriptStep.text_with_usage("a", 1, 1), ScriptStep.text_with_usage("b", 1, 1))
    assert _genai.start_model_call("chat", "openai", "m") is _genai._UNOBSERVED
    await runtime.ask("gpt-6-luna", "x")
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    monkeypatch.setattr(trace_api, "_TRACER_PROVIDER", tracer_provider)
    await runtime.ask("gpt-6-luna", "x")
    assert [s.name for s in spans.get_finished_spans()] == ["chat gpt-6-luna"]
