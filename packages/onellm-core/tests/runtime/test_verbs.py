from __future__ import annotations

import dataclasses
from decimal import Decimal
from pathlib import Path
from typing import TypedDict

import anyio
import msgspec
import pytest

import onellm
from onellm import Runtime
from onellm.errors import (
    AuthError,
    CapabilityMissingError,
    MalformedResponseError,
    ModelNotFoundError,
    RateLimitError,
    RunCancelledError,
    UnsupportedParameterError,
)
from onellm.instances import MemoryInstanceStore
from onellm.messages import TextDelta
from onellm.providers._request import FinishReason
from onellm.testing import ScriptedProvider, ScriptedToolCall, ScriptStep

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Invoice:
    customer: str
    total: Decimal


class InvoiceStruct(msgspec.Struct):
    customer: str
    total: Decimal


class InvoiceDict(TypedDict):
    customer: str
    total: Decimal


class Setup:
    def __init__(self, **options: object) -> None:
        self.store = MemoryInstanceStore()
        self.openai = ScriptedProvider("openai")
        self.anthropic = ScriptedProvider("anthropic")
        self.runtime = Runtime(store=self.store, environ={}, **options)  # type: ignore[arg-type]
        self.runtime.providers.set("openai", self.openai)
        self.runtime.providers.set("anthropic", self.anthropic)


@pytest.fixture
def setup() -> Setup:
    return Setup()


async def test_generate_prices_from_the_catalog_and_saves_the_instance(setup: Setup) -> None:
    setup.openai.enqueue(ScriptStep.text_with_usage("2, 3 and 5.", 13, 7))
    r = await setup.runtime.generate("gpt-6-luna", "Name three prime numbers.")
    assert r.text == "2, 3 and 5."
    assert r.cost.total == Decimal("0.0000048")
    assert [(line.counter, line.quantity, line.amount) for line in r.cost.lines] == [
        ("inputTokens", 13, Decimal("0.0000013")),
        ("outputTokens", 7, Decimal("0.0000035")),
    ]
    assert r.finish is FinishReason.STOP
    assert r.model == "openai:gpt-6-luna"
    saved = await setup.store.load(r.instance.id or "")
    assert saved is not None
    assert saved.state == "stopped"
    assert saved.model == "openai:gpt-6-luna"
    [message] = saved.messages
    assert message.user_text == "Name three prime numbers."
    assert message.text == "2, 3 and 5."
    assert message.usage is not None
    assert message.usage.cost == Decimal("0.0000048")
    assert setup.openai.requests[0].model == "gpt-6-luna"
    setup.openai.assert_complete()


async def test_ask_returns_text_and_aliases_resolve(setup: Setup) -> None:
    setup.anthropic.enqueue(ScriptStep.text_with_usage("A monad wraps a value.", 14, 15))
    answer = await setup.runtime.ask("claude-sonnet", "What is a monad?", system="Be brief.")
    assert answer == "A monad wraps a value."
    request = setup.anthropic.requests[0]
    assert request.model == "claude-sonnet-5-5"
    assert request.system == "Be brief."


@pytest.mark.parametrize("kind", [Invoice, InvoiceStruct, InvoiceDict])
async def test_structured_output_types(setup: Setup, kind: type) -> None:
    setup.openai.enqueue(ScriptStep.text_with_usage('{"customer":"ACME Ltd","total":120.50}', 60, 12))
    value = await setup.runtime.ask("gpt-6-luna", "ACME Ltd billed 120.50.", output=kind)
    if kind is InvoiceDict:
        assert value == {"customer": "ACME Ltd", "total": Decimal("120.50")}
    else:
        assert value == kind(customer="ACME Ltd", total=Decimal("120.50"))
    fmt = setup.openai.requests[0].response_format
    assert fmt is not None
    assert fmt.type == "json_schema"
    assert fmt.schema is not None
    assert fmt.schema["required"] == ["customer", "total"]


async def test_structured_output_mismatch_names_the_path_and_saves_an_error(setup: Setup) -> None:
    setup.openai.enqueue(ScriptStep.text('{"customer": 5, "total": 1}'))
    with pytest.raises(MalformedResponseError, match="customer"):
        await setup.runtime.ask("gpt-6-luna", "x", output=Invoice)
    [summary] = await setup.store.list()
    assert summary.state == "error"


async def test_output_type_must_be_an_object(setup: Setup) -> None:
    with pytest.raises(TypeError, match="JSON object"):
        await setup.runtime.ask("gpt-6-luna", "x", output=int)


async def test_stream_gives_events_then_the_same_result(setup: Setup) -> None:
    pieces = ("Green lights at midnight, ", "the queue drains, ", "dawn finds the build red.")
    setup.anthropic.enqueue(ScriptStep.text(*pieces), ScriptStep.text(*pieces))
    answer = setup.runtime.stream("claude-haiku", "Write a haiku.")
    seen = [event.text async for event in answer if isinstance(event, TextDelta)]
    streamed = await answer.result()
    whole = await setup.runtime.generate("claude-haiku", "Write a haiku.")
    assert seen == list(pieces)
    assert streamed.text == "".join(pieces) == whole.text
    assert streamed.message.assistant == whole.message.assistant
    assert streamed.instance.state == "stopped"
    assert streamed.instance.id in setup.store
    assert [w.kind for w in streamed.warnings] == ["pricing"]  # no usage reported: not priced, and said so


async def test_stream_text_and_result_without_reading(setup: Setup) -> None:
    setup.anthropic.enqueue(ScriptStep.text("a", "b"), ScriptStep.text_with_usage(["c", "d"], 3, 2))
    with onellm.use_runtime(setup.runtime):
        assert [p async for p in onellm.stream_text("claude-haiku", "x")] == ["a", "b"]
        result = await onellm.stream("claude-haiku", "y").result()
    assert result.text == "cd"
    assert result.cost.total > 0


async def test_tool_calls_come_back_in_the_message(setup: Setup) -> None:
    setup.anthropic.enqueue(ScriptStep.calls(ScriptedToolCall("c1", "get_docket", {"caseNo": "1"})))
    r = await setup.runtime.generate("claude-sonnet", "look it up")
    assert r.finish is FinishReason.TOOL_CALLS
    assert [c.tool for c in r.message.tool_calls] == ["get_docket"]


async def test_provider_failure_saves_an_error_instance(setup: Setup) -> None:
    setup.openai.enqueue(ScriptStep.failure(RateLimitError("slow down", provider="openai")))
    with pytest.raises(RateLimitError):
        await setup.runtime.generate("gpt-6-luna", "x")
    [summary] = await setup.store.list()
    saved = await setup.store.load(summary.id)
    assert saved is not None
    assert saved.state == "error"
    assert saved.error is not None
    assert saved.error.type == "RateLimitError"


async def test_embed_one_and_many_priced_without_instance(setup: Setup) -> None:
    from onellm.records import EventRecordSink, Record

    seen: list[Record] = []

    async def keep(record: Record) -> None:
        seen.append(record)

    setup.runtime.records.add(EventRecordSink(keep))
    setup.openai.enqueue(ScriptStep.embedding([0.5, 0.5], input_tokens=1000))
    one = await setup.runtime.embed("embedding-small", "reset my password")
    many = await setup.runtime.embed("embedding-small", ["a", "b"])
    assert one == [0.5, 0.5]
    assert len(many) == 2
    assert len(many[0]) == 8
    assert len(setup.store) == 0
    [first, _] = seen
    assert first.kind == "inference"
    assert first.operation == "embeddings"  # type: ignore[attr-defined]
    assert first.usage.cost == Decimal("0.00002")  # type: ignore[attr-defined]


async def test_chat_keeps_one_instance_waiting_between_turns(setup: Setup) -> None:
    setup.anthropic.enqueue(
        ScriptStep.text_with_usage("2", 10, 1), ScriptStep.text_with_usage("3", 20, 1), ScriptStep.text("5")
    )
    async with setup.runtime.chat("claude-sonnet", system="Be brief.") as chat:
        assert await chat.ask("Name a prime.") == "2"
        second = await chat.send("And the next one?")
        third = await chat.stream("And the next?").result()
    assert second.text == "3"
    assert third.text == "5"
    assert second.instance is chat.instance is third.instance
    assert chat.instance.state == "waiting"
    assert [m.text for m in chat.instance.messages] == ["2", "3", "5"]
    history = setup.anthropic.requests[1].messages
    assert [m.user_text for m in history] == ["Name a prime.", "And the next one?"]
    assert history[0].text == "2"
    saved = await setup.store.load(chat.instance.id or "")
    assert saved is not None
    assert len(saved.messages) == 3
    assert saved.state == "waiting"


async def test_cancelled_whole_call_saves_stopped_and_cancelled(setup: Setup) -> None:
    setup.openai.enqueue(ScriptStep.paused("never"))
    with pytest.raises(RunCancelledError) as caught, anyio.move_on_after(0.05):
        await setup.runtime.generate("gpt-6-luna", "x")
    instance = caught.value.instance
    assert instance.state == "stopped"
    assert instance.cancelled is True
    saved = await setup.store.load(instance.id)
    assert saved is not None
    assert saved.cancelled is True


async def test_cancelled_stream_keeps_the_partial_answer(setup: Setup) -> None:
    setup.anthropic.enqueue(ScriptStep.paused("Green lights ", "at midnight"))
    pieces: list[str] = []

    async def read() -> None:
        async for piece in setup.runtime.stream("claude-haiku", "haiku").text():
            pieces.append(piece)  # noqa: PERF401

    # Half a second: time enough on a loaded machine for what comes before the wait.
    with pytest.raises(RunCancelledError) as caught, anyio.move_on_after(0.5):
        await read()
    assert pieces == ["Green lights ", "at midnight"]
    saved = await setup.store.load(caught.value.instance.id)
    assert saved is not None
    assert saved.state == "stopped"
    assert saved.cancelled is True
    assert saved.messages[-1].text == "Green lights at midnight"


async def test_closing_a_stream_early_saves_it_cancelled(setup: Setup) -> None:
    setup.anthropic.enqueue(ScriptStep.text("a", "b", "c"))
    async with setup.runtime.stream("claude-haiku", "x") as answer:
        async for _ in answer:
            break
    assert answer.instance is not None
    assert answer.instance.cancelled is True
    with pytest.raises(RunCancelledError):
        await answer.result()


async def test_missing_key_is_an_auth_error_naming_the_variable() -> None:
    runtime = Runtime(environ={})
    with pytest.raises(AuthError, match="OPENAI_API_KEY") as caught:
        await runtime.ask("gpt-6-luna", "x")
    assert str(caught.value).startswith("openai: No API key. Set the environment variable OPENAI_API_KEY.")
    assert "openai" not in runtime.providers
    with pytest.raises(AuthError, match="ANTHROPIC_API_KEY"):
        await runtime.ask("claude-sonnet", "x")


async def test_provider_created_from_the_catalog_when_the_key_is_set() -> None:
    from onellm.providers.openai import OpenAICompatibleProvider, OpenAIProvider

    runtime = Runtime(environ={"OPENAI_API_KEY": "sk-test"})
    _resolved, provider = runtime.services.route("gpt-6-luna")
    assert isinstance(provider, OpenAIProvider)
    assert runtime.services.route("openai:gpt-6-luna")[1] is provider
    _, local = runtime.services.route("ollama:llama3")  # a local preset needs no key
    assert isinstance(local, OpenAICompatibleProvider)
    assert local.base_url == "http://localhost:11434/v1"


async def test_unknown_model_and_missing_provider() -> None:
    runtime = Runtime(environ={"TYPESAFE_API_KEY": "k"})
    with pytest.raises(ModelNotFoundError):
        await runtime.ask("no-such-model-anywhere", "x")
    with pytest.raises(UnsupportedParameterError, match="decisions only"):
        await runtime.ask("jev-latest", "x")  # a decisions engine takes no chat; nothing is sent
    from onellm.catalog import Catalog

    runtime.catalog = Catalog.shipped().with_layers(
        {"name": "acme", "protocol": "acme-wire", "models": [{"name": "acme-1", "kind": "chat"}]}
    )
    with pytest.raises(CapabilityMissingError, match=r"runtime\.providers\.set\('acme'"):
        await runtime.ask("acme:acme-1", "x")


async def test_registry_lookup_by_preset_then_provider_then_protocol() -> None:
    runtime = Runtime(environ={})
    by_protocol = ScriptedProvider("openai-compatible").enqueue_text("via protocol")
    runtime.providers.set("openai-compatible", by_protocol)
    assert await runtime.ask("ollama:llama3", "x") == "via protocol"
    preset = ScriptedProvider("ollama").enqueue_text("via preset")
    runtime.providers.set("ollama", preset)
    assert await runtime.ask("ollama:llama3", "x") == "via preset"


async def test_bad_arguments_are_type_errors(setup: Setup) -> None:
    with pytest.raises(TypeError, match="unknown option"):
        await setup.runtime.ask("gpt-6-luna", "x", temprature=0.5)
    with pytest.raises(TypeError, match=r"content\[1\]"):
        await setup.runtime.ask("gpt-6-luna", "x", 5)
    with pytest.raises(TypeError, match="float"):
        Runtime(spend_cap=0.5)  # type: ignore[arg-type]


async def test_default_runtime_is_a_context_variable(setup: Setup) -> None:
    other = Setup()
    setup.openai.enqueue_text("first")
    other.openai.enqueue_text("second")
    with onellm.use_runtime(setup.runtime):
        assert onellm.current_runtime() is setup.runtime
        assert await onellm.ask("gpt-6-luna", "x") == "first"
        with onellm.use_runtime(other.runtime):
            assert await onellm.ask("gpt-6-luna", "x") == "second"
        assert onellm.current_runtime() is setup.runtime


def test_runtime_from_environment(tmp_path: Path) -> None:
    from onellm.instances import FileInstanceStore
    from onellm.records import JsonlRecordSink

    runtime = Runtime.from_environment(
        {"ONELLM_INSTANCES": str(tmp_path / "runs"), "ONELLM_RECORDS": str(tmp_path / "records")}
    )
    assert isinstance(runtime.store, FileInstanceStore)
    assert runtime.store.directory == tmp_path / "runs"
    [sink] = runtime.records.sinks
    assert isinstance(sink, JsonlRecordSink)
    plain = Runtime.from_environment({})
    assert isinstance(plain.store, MemoryInstanceStore)


def test_set_default_runtime() -> None:
    rt = Runtime(environ={})
    onellm.set_default_runtime(rt)
    try:
        assert onellm.current_runtime() is rt
    finally:
        onellm.set_default_runtime(None)
    assert onellm.current_runtime() is not rt


async def test_pydantic_output(setup: Setup) -> None:
    pydantic = pytest.importorskip("pydantic")

    class Person(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        name: str
        age: int

    setup.openai.enqueue(ScriptStep.text('{"name": "Ada", "age": 36}'), ScriptStep.text('{"name": "Ada"}'))
    person = await setup.runtime.ask("gpt-6-luna", "who?", output=Person)
    assert (person.name, person.age) == ("Ada", 36)
    fmt = setup.openai.requests[0].response_format
    assert fmt is not None
    assert fmt.schema is not None
    assert fmt.schema["properties"]["age"]["type"] == "integer"
    with pytest.raises(MalformedResponseError, match="age"):
        await setup.runtime.ask("gpt-6-luna", "who?", output=Person)


def test_chat_sync_twins(setup: Setup) -> None:
    setup.anthropic.enqueue_text("2", "3")
    with setup.runtime.chat("claude-sonnet") as chat:
        assert chat.ask_sync("Name a prime.") == "2"
        assert chat.send_sync("And the next?").text == "3"
    assert len(chat.instance.messages) == 2


async def test_assets_are_stored_once_and_sent_inline(setup: Setup, tmp_path: Path) -> None:
    from onellm import Asset
    from onellm.messages import AssetPart

    scan = tmp_path / "scan.png"
    scan.write_bytes(b"\x89PNG fake image")
    setup.anthropic.enqueue_text("An invoice.", "From ACME.")
    chat = setup.runtime.chat("claude-sonnet")
    assert await chat.ask("What is this?", Asset.file(scan)) == "An invoice."
    assert await chat.ask("From whom?") == "From ACME."
    stored = chat.instance.messages[0].user[1]
    assert isinstance(stored, AssetPart)
    assert stored.data is None
    assert stored.key is not None
    assert stored.content_type == "image/png"
    assert setup.store.assets(chat.instance.id or "").get(stored.key) == b"\x89PNG fake image"
    resent = setup.anthropic.requests[1].messages[0].user[1]
    assert isinstance(resent, AssetPart)
    assert resent.data == b"\x89PNG fake image"
    with pytest.raises(FileNotFoundError, match=r"missing\.png"):
        Asset.file(tmp_path / "missing.png")
    assert Asset.from_bytes(b"%PDF", "application/pdf").size == 4


async def test_own_catalog_and_an_unpriced_model() -> None:
    from onellm.catalog import Catalog

    catalog = Catalog.from_layers(
        {"providers": [{"name": "scripted", "protocol": "scripted", "models": [{"name": "echo-1"}]}]}
    )
    provider = ScriptedProvider().enqueue(ScriptStep.text_with_usage("hello", 3, 1))
    runtime = Runtime(catalog=catalog, environ={})
    runtime.providers.set("scripted", provider)
    r = await runtime.generate("echo-1", "Say hello.")
    assert r.text == "hello"
    assert r.cost.total == 0
    assert not r.cost.priced
    assert [w.kind for w in r.warnings] == ["pricing"]
    assert r.message.usage is not None
    assert r.message.usage.cost is None  # not priced: no cost written, never a guess
    provider.assert_complete()


async def test_instances_round_trip_through_a_file_store(tmp_path: Path) -> None:
    from onellm.instances import FileInstanceStore

    store = FileInstanceStore(tmp_path / "runs", durable=False)
    provider = ScriptedProvider("anthropic").enqueue(
        ScriptStep.text_with_usage("2", 10, 1), ScriptStep.paused("Green ", "lights")
    )
    runtime = Runtime(store=store, environ={})
    runtime.providers.set("anthropic", provider)
    done = await runtime.generate("claude-sonnet", "Name a prime.", system="Be brief.")
    with pytest.raises(RunCancelledError) as caught, anyio.move_on_after(0.05):
        await runtime.stream("claude-haiku", "haiku").result()
    loaded = await store.load(done.instance.id or "")
    assert loaded is not None
    assert loaded.state == "stopped"
    assert loaded.system_prompt == "Be brief."
    assert loaded.requested_model == "claude-sonnet"
    assert loaded.messages[0].usage is not None
    assert loaded.messages[0].usage.cost_lines == list(done.cost.lines)
    assert loaded.messages == done.instance.messages
    cancelled = await store.load(caught.value.instance.id)
    assert cancelled is not None
    assert cancelled.cancelled is True
    assert cancelled.messages[-1].text == "Green lights"


async def test_closing_the_runtime_closes_the_providers_it_created() -> None:
    scripted = ScriptedProvider("anthropic")
    async with Runtime(environ={"OPENAI_API_KEY": "sk-test"}) as runtime:
        runtime.providers.set("anthropic", scripted)
        _, created = runtime.services.route("gpt-6-luna")
        client = created._transport.client
        assert "openai" in runtime.providers
    assert "openai" not in runtime.providers
    assert runtime.providers.get("anthropic") is scripted
    assert client.is_closed


class _RunsProvider:
    """A provider whose stream hands its events over in runs (`next_batch`), as an `EventStream` does."""

    name = "anthropic"

    def __init__(self, runs: list[list[object]]) -> None:
        self.runs = runs
        self.closed = False

    def stream(self, request: object) -> _RunsProvider:
        return self

    async def next_batch(self) -> list[object]:
        return self.runs.pop(0) if self.runs else []

    async def aclose(self) -> None:
        self.closed = True


async def test_a_stream_read_in_runs_gives_every_event_in_order(setup: Setup) -> None:
    from onellm.messages import Done, MessageStart, Usage, UsageEvent

    runs: list[list[object]] = [
        [MessageStart(model="m")],
        [TextDelta(0, "Green "), TextDelta(0, "lights")],
        [TextDelta(0, " at"), UsageEvent(Usage(input_tokens=3, output_tokens=4)), Done("stop")],
    ]
    expected = [event for run in runs for event in run]
    setup.runtime.providers.set("anthropic", _RunsProvider(runs))
    answer = setup.runtime.stream("claude-haiku", "haiku")
    seen = [event async for event in answer]
    assert seen == expected
    result = await answer.result()
    assert result.text == "Green lights at"
    assert result.usage is not None
    assert result.usage.output_tokens == 4


async def test_an_event_the_answer_refuses_fails_the_stream_after_the_events_before_it(setup: Setup) -> None:
    """A run whose third event the message cannot take (a tool call's arguments at a text block's index): the two
    events before it are given out, then the stream fails and the instance is saved in error with what it holds."""
    from onellm.messages import MessageStart, ToolCallArgumentsDelta

    provider = _RunsProvider([[MessageStart(model="m"), TextDelta(0, "kept"), ToolCallArgumentsDelta(0, "{")]])
    setup.runtime.providers.set("anthropic", provider)
    answer = setup.runtime.stream("claude-haiku", "x")
    seen: list[object] = []

    async def read() -> None:
        async for event in answer:
            seen.append(event)  # noqa: PERF401

    with pytest.raises(MalformedResponseError, match="stream block 0 is a text block"):
        await read()
    assert [type(e).__name__ for e in seen] == ["MessageStart", "TextDelta"]
    assert provider.closed
    assert answer.instance is not None
    saved = await setup.store.load(answer.instance.id)
    assert saved is not None
    assert saved.state == "error"
    assert saved.messages[-1].text == "kept"
    with pytest.raises(MalformedResponseError):
        await answer.result()


async def test_a_call_is_priced_at_the_runtime_clocks_time_when_its_model_has_pricing_periods() -> None:
    import datetime as dt

    from onellm.catalog import Catalog
    from onellm.clock import FakeClock

    catalog = Catalog.from_layers(
        {
            "providers": [
                {
                    "name": "scripted",
                    "protocol": "scripted",
                    "models": [
                        {
                            "name": "dated",
                            "pricing": {"inputPerMillion": 2},
                            "pricingPeriods": [{"until": "2026-06-01", "pricing": {"inputPerMillion": 3}}],
                        },
                        {"name": "flat", "pricing": {"inputPerMillion": 2}},
                    ],
                }
            ]
        }
    )
    clock = FakeClock(dt.datetime(2026, 5, 31, 23, 0, tzinfo=dt.UTC))
    provider = ScriptedProvider().enqueue(*(ScriptStep.text_with_usage("ok", 1_000_000, 0) for _ in range(4)))
    runtime = Runtime(catalog=catalog, environ={}, clock=clock)
    runtime.providers.set("scripted", provider)
    assert (await runtime.generate("dated", "Hi.")).cost.total == 3  # the period in force on the clock's day
    assert (await runtime.generate("flat", "Hi.")).cost.total == 2
    clock.advance(3600)  # 1 June: the period is over
    assert (await runtime.generate("dated", "Hi.")).cost.total == 2
    assert (await runtime.generate("flat", "Hi.")).cost.total == 2
    provider.assert_complete()
