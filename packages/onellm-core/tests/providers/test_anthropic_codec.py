"""The Anthropic codec beyond the replayed fixtures: what is replayed on the next turn, where cache breakpoints go,
the sampling rule, keys and base URLs from the environment, max_tokens from the catalog, and pricing of the cache
write counters."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import anyio
import httpx
import msgspec
import pytest

import onellm.errors
from onellm.catalog import Catalog, ModelProfile
from onellm.clock import FakeClock
from onellm.messages import (
    AssetPart,
    HostedToolCallPart,
    Message,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCall,
    Usage,
)
from onellm.providers._request import (
    CacheOptions,
    ChatRequest,
    ChatResponse,
    FinishReason,
    HostedToolDefinition,
    ResponseFormat,
    ToolDefinition,
)
from onellm.providers.anthropic import AnthropicProvider, collect
from onellm.providers.anthropic._codec import decode_message, encode_messages_request

from ._fixtures import KEY, PROVIDERS, load

SHIPPED = Catalog.shipped()


def fixture(name: str) -> dict[str, Any]:
    return load(PROVIDERS / "anthropic" / name / "case.json")


def whole(name: str) -> ChatResponse:
    return decode_message(msgspec.json.encode(fixture(name)["response"]["body"]))


def streamed(name: str) -> ChatResponse:
    case = fixture(name)
    provider = AnthropicProvider(
        api_key=KEY,
        max_tokens=100,
        http_client=httpx.AsyncClient(
            transport=httpx.MockTransport(lambda _: httpx.Response(200, content=case["stream"].encode()))
        ),
    )
    request = ChatRequest("claude-sonnet-5-5", [Message(user=[TextPart("hi")])])
    return anyio.run(collect, provider.stream(request))


def next_turn_body(message: Message, **options: Any) -> dict[str, Any]:
    """The body of the request that continues after `message`, as a runtime sends it."""
    history = [Message(user=[TextPart("first question")]), message, Message(user=[TextPart("go on")])]
    return encode_messages_request(ChatRequest("claude-sonnet-5-5", history, **options), max_tokens=1000)[0]


def plain(value: Any) -> Any:
    return msgspec.json.decode(msgspec.json.encode(value))


@pytest.mark.parametrize("name", ["web-search-citations", "thinking-replay", "pause-turn", "adaptive-effort"])
def test_the_answer_is_replayed_block_for_block(name: str) -> None:
    original = fixture(name)["response"]["body"]["content"]
    sent = [b for b in original if not (b["type"] == "text" and not b["text"])]
    for response in (whole(name), *([streamed(name)] if "stream" in fixture(name) else [])):
        body = next_turn_body(response.message)
        assert body["messages"][1]["role"] == "assistant"
        assert plain(body["messages"][1]["content"]) == plain(sent)


@pytest.mark.parametrize("name", ["web-search-citations", "thinking-replay", "pause-turn"])
def test_the_replay_survives_saving_the_message(name: str) -> None:
    message = whole(name).message
    reloaded = Message.from_data(msgspec.json.decode(msgspec.json.encode(message.to_data())))
    assert next_turn_body(reloaded) == next_turn_body(message)


def test_another_providers_reasoning_and_hosted_calls_are_not_sent() -> None:
    message = Message(
        assistant=[
            ReasoningPart("hidden", "openai", None, {"type": "reasoning", "id": "rs_1"}),
            HostedToolCallPart(
                "web_search", "openai", "ws_1", "completed", None, None, None, {"type": "web_search_call"}
            ),
            TextPart("visible"),
        ]
    )
    assert next_turn_body(message)["messages"][1] == {"role": "assistant", "content": "visible"}


def test_an_unknown_block_is_kept_and_sent_back_as_it_came() -> None:
    block = {"type": "container_upload", "file_id": "file_1"}
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [block, {"type": "text", "text": "done"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    message = decode_message(msgspec.json.encode(body)).message
    assert message.assistant[0] == ProviderPart(type="container_upload", raw=block)
    assert next_turn_body(message)["messages"][1]["content"] == [block, {"type": "text", "text": "done"}]


def test_cache_breakpoint_skips_a_trailing_thinking_block() -> None:
    thinking = {"type": "thinking", "thinking": "t", "signature": "s"}
    message = Message(
        user=[TextPart("q")], assistant=[TextPart("a"), ReasoningPart("t", "anthropic", None, thinking)], cache=True
    )
    body, _ = encode_messages_request(ChatRequest("m", [message]), max_tokens=10)
    user, assistant = body["messages"]
    assert assistant["content"][0] == {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}
    assert "cache_control" not in assistant["content"][1]
    assert user["content"] == "q"


def test_cache_breakpoint_lands_on_the_last_tool_result() -> None:
    call = ToolCall(id="t1", tool="f", inputs={}, result=[TextPart("r")])
    message = Message(user=[TextPart("q")], tool_calls=[call], cache=True)
    request = ChatRequest("m", [message], cache=CacheOptions(ttl=dt.timedelta(minutes=5)))
    body, _ = encode_messages_request(request, max_tokens=10)
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["cache_control"] == {"type": "ephemeral"}


def test_caching_turned_off_sends_no_breakpoint_and_a_key_is_reported() -> None:
    message = Message(user=[TextPart("q")], cache=True)
    request = ChatRequest("m", [message], cache=CacheOptions(enabled=False, key="k"))
    body, warnings = encode_messages_request(request, max_tokens=10)
    assert "cache_control" not in str(body)
    assert [w.detail for w in warnings] == [{"parameter": "cache.key"}]
    assert request.warnings == []  # the request is not changed


def test_sampling_parameters_are_kept_before_the_cutoff_version() -> None:
    request = ChatRequest("m", [], temperature=0.5, top_p=0.9, extra_parameters={"top_k": 5})
    body, warnings = encode_messages_request(request, max_tokens=10, api_version="2026-10-20")
    assert (body["temperature"], body["top_p"], body["top_k"]) == (0.5, 0.9, 5)
    assert warnings == []


def test_sampling_parameters_are_stripped_from_the_cutoff_version_on() -> None:
    request = ChatRequest("m", [], temperature=0.5, extra_parameters={"top_k": 5})
    body, warnings = encode_messages_request(request, max_tokens=10, api_version="2027-01-01")
    assert "temperature" not in body
    assert "top_k" not in body
    assert {w.kind for w in warnings} == {"parameter_stripped"}
    assert [w.detail["parameter"] for w in warnings if w.detail] == ["temperature", "top_k"]


def test_a_strict_tool_that_cannot_be_strict_is_sent_without_strict_and_reported() -> None:
    schema = {"type": "object", "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}}}
    request = ChatRequest("m", [], tools=[ToolDefinition("tag", "", schema, strict=True)])
    body, warnings = encode_messages_request(request, max_tokens=10)
    assert body["tools"] == [{"name": "tag", "input_schema": schema}]
    assert "strict mode" in warnings[0].message
    assert "additionalProperties" in warnings[0].message


def test_structured_output_uses_output_config_and_free_json_is_refused() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0}},
        "required": ["n"],
        "additionalProperties": False,
    }
    body, warnings = encode_messages_request(
        ChatRequest("m", [], response_format=ResponseFormat.json_schema(schema)), max_tokens=9
    )
    assert warnings[0].kind == "parameter_stripped"
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert "minimum" not in str(body["output_config"]["format"]["schema"])
    with pytest.raises(onellm.errors.UnsupportedParameterError):
        encode_messages_request(ChatRequest("m", [], response_format=ResponseFormat("json")), max_tokens=9)


def test_hosted_tool_types_get_a_version_and_a_name() -> None:
    request = ChatRequest(
        "m",
        [],
        hosted_tools=[
            HostedToolDefinition("web_fetch"),
            HostedToolDefinition("code_execution_20260120"),
            HostedToolDefinition("web_search", name="search", options={"max_uses": 2}),
        ],
    )
    tools = encode_messages_request(request, max_tokens=9)[0]["tools"]
    assert tools == [
        {"type": "web_fetch_20250910", "name": "web_fetch"},
        {"type": "code_execution_20260120", "name": "code_execution"},
        {"type": "web_search_20250305", "name": "search", "max_uses": 2},
    ]


def test_audio_is_refused_with_the_part_path() -> None:
    message = Message(user=[TextPart("listen"), AssetPart(content_type="audio/wav", data=b"RIFF")])
    with pytest.raises(onellm.errors.UnsupportedParameterError, match=r"messages\[0\]\.user\[1\]"):
        encode_messages_request(ChatRequest("m", [message]), max_tokens=9)


def test_a_tool_result_with_an_image_is_sent_as_blocks() -> None:
    image = AssetPart(content_type="image/png", data=b"\x89PNG")
    call = ToolCall(id="t1", tool="shot", inputs={}, result=[TextPart("here"), image])
    body, _ = encode_messages_request(ChatRequest("m", [Message(tool_calls=[call])]), max_tokens=9)
    result = body["messages"][-1]["content"][0]
    assert result["content"] == [
        {"type": "text", "text": "here"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
    ]


def test_parallel_calls_come_back_in_order_with_their_results_in_one_user_turn() -> None:
    message = whole("parallel-tools").message
    for n, call in enumerate(message.tool_calls):
        call.result = [TextPart(f"result {n}")]
    body = next_turn_body(message)
    results = body["messages"][2]["content"]
    assert [r["tool_use_id"] for r in results[:4]] == ["toolu_01A", "toolu_01B", "toolu_01C", "toolu_01D"]
    assert results[4] == {"type": "text", "text": "go on"}


def test_finish_reasons() -> None:
    assert whole("pause-turn").finish_reason is FinishReason.PAUSE_TURN
    assert whole("refusal").finish_reason is FinishReason.REFUSAL
    assert whole("tools-stream").finish_reason is FinishReason.TOOL_CALLS
    assert whole("sampling-old-version").extra["stop_sequence"] == "END"


# -- provider ------------------------------------------------------------------------------------------------------


def recording_provider(**options: Any) -> tuple[AnthropicProvider, list[httpx.Request]]:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=fixture("basic")["response"]["body"])

    options.setdefault("clock", FakeClock())
    return AnthropicProvider(http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)), **options), sent


def ask(provider: AnthropicProvider, model: str = "claude-sonnet-5-5") -> ChatResponse:
    return anyio.run(provider.send, ChatRequest(model, [Message(user=[TextPart("hi")])]))


def test_a_missing_key_fails_before_anything_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    provider, sent = recording_provider()
    with pytest.raises(onellm.errors.AuthError, match="ANTHROPIC_API_KEY"):
        ask(provider)
    assert sent == []


def test_key_and_base_url_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://gateway.example.com/anthropic/")
    provider, sent = recording_provider()
    ask(provider)
    assert str(sent[0].url) == "https://gateway.example.com/anthropic/v1/messages"
    assert sent[0].headers["x-api-key"] == "sk-env-key"
    assert sent[0].headers["anthropic-version"] == "2026-10-21"
    assert "authorization" not in sent[0].headers


def test_betas_are_sent_as_one_header() -> None:
    provider, sent = recording_provider(api_key=KEY, betas=["files-api-2025-04-14", "context-1m-2025-08-07"])
    ask(provider)
    assert sent[0].headers["anthropic-beta"] == "files-api-2025-04-14,context-1m-2025-08-07"


def test_max_tokens_comes_from_the_requests_profile() -> None:
    provider, sent = recording_provider(api_key=KEY)
    resolved = SHIPPED.resolve("claude-haiku-5-5")
    request = ChatRequest(resolved.name, [Message(user=[TextPart("hi")])], profile=resolved.profile)
    response = anyio.run(provider.send, request)
    expected = resolved.entry.max_output_tokens
    assert expected is not None
    assert msgspec.json.decode(sent[0].content)["max_tokens"] == expected
    assert response.warnings == []


def test_the_profile_wins_over_what_the_shipped_catalog_says() -> None:
    """A provider never looks the model up again: a profile from another catalog (a user layer) is what counts."""
    provider, sent = recording_provider(api_key=KEY)
    profile = ModelProfile(model="anthropic:claude-haiku-5-5", max_output_tokens=777)
    anyio.run(provider.send, ChatRequest("claude-haiku-5-5", [Message(user=[TextPart("hi")])], profile=profile))
    assert msgspec.json.decode(sent[0].content)["max_tokens"] == 777


def test_without_a_profile_max_tokens_falls_back_with_a_warning() -> None:
    provider, sent = recording_provider(api_key=KEY)
    request = ChatRequest("claude-sonnet-5-5", [Message(user=[TextPart("hi")])])
    response = anyio.run(provider.send, request)
    assert msgspec.json.decode(sent[0].content)["max_tokens"] == 4096
    assert [w.kind for w in response.warnings] == ["parameter_defaulted"]
    assert request.warnings == []  # the notice is the response's; the request is not changed


def test_from_resolved_takes_the_base_url_and_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env-key")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    resolved = SHIPPED.resolve("claude-sonnet")
    provider = AnthropicProvider.from_resolved(resolved)
    assert provider.base_url == "https://api.anthropic.com"
    assert provider.secrets == (onellm.errors.Secret("sk-env-key"),)
    assert provider.max_tokens is None  # per-model limits travel with each request


def test_a_batch_id_that_would_change_the_path_is_refused() -> None:
    provider, sent = recording_provider(api_key=KEY)
    with pytest.raises(ValueError, match="batch id"):
        anyio.run(provider.get_batch, "../../v1/messages")
    assert sent == []


# -- usage and pricing ---------------------------------------------------------------------------------------------


def test_cache_write_counters_are_priced_without_an_unpriced_counter() -> None:
    usage = whole("cache-write-counters").usage
    assert usage is not None
    assert usage.counters == {"cacheCreation5mInputTokens": 188, "cacheCreation1hInputTokens": 4000}
    cost = SHIPPED.resolve("claude-sonnet-5-5").price(usage)
    assert cost.priced, cost.warnings
    lines = {line.counter: line for line in cost.lines}
    assert lines["cacheCreation1hInputTokens"].quantity == 4000
    assert lines["cacheCreationInputTokens"].quantity == 188  # the 5-minute writes, at the standard write price
    assert lines["cacheReadInputTokens"].quantity == 2050
    assert lines["inputTokens"].quantity == 21


def test_stream_usage_takes_the_final_counts_even_when_zero() -> None:
    usage = streamed("refusal").usage
    assert usage == Usage(model="claude-opus-4-7", input_tokens=20, output_tokens=0)


def test_web_search_requests_are_counted() -> None:
    usage = whole("web-search-citations").usage
    assert usage is not None
    assert usage.counters == {"toolCalls.web_search": 1}
    assert Decimal(usage.input_tokens) == Decimal(6039)


def test_another_providers_url_citations_are_not_sent_as_anthropic_citations() -> None:
    from onellm.messages import Annotation

    cited = TextPart(
        "Rain today.", [Annotation(type="url_citation", url="https://x.example", start_index=0, end_index=4)]
    )
    body = next_turn_body(Message(assistant=[cited]))
    assert body["messages"][1] == {"role": "assistant", "content": "Rain today."}


def test_a_streamed_block_of_an_unknown_kind_is_kept_whole_whatever_deltas_it_gets() -> None:
    from onellm.messages._events import MessageAccumulator
    from onellm.providers.anthropic._codec import MessagesStreamDecoder

    start = {"type": "future_block", "value": 1}
    events = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "model": "x", "content": [], "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": start},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ignored"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "ok"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    decoder = MessagesStreamDecoder()
    accumulator = MessageAccumulator()
    for event in events:
        for item in decoder.feed(msgspec.json.encode(event)):
            accumulator.add(item)
    message = accumulator.message()
    assert message.assistant == [ProviderPart(type="future_block", raw=start), TextPart("ok")]
    assert decoder.finished


def test_stop_details_and_the_container_are_kept_beside_the_message() -> None:
    from onellm.providers._sse import iter_sse
    from onellm.providers.anthropic._codec import MessagesStreamDecoder

    decoder = MessagesStreamDecoder()
    for event in iter_sse([fixture("refusal")["stream"].encode()]):
        decoder.feed(event.data)
    assert decoder.extra == whole("refusal").extra
    assert decoder.extra["stop_details"]["category"] == "cyber"

    body = dict(fixture("basic")["response"]["body"])
    body["container"] = {"id": "container_011CZ", "expires_at": "2026-12-02T12:30:00Z"}
    assert decode_message(msgspec.json.encode(body)).extra["container"]["id"] == "container_011CZ"


def test_media_in_an_assistant_turn_is_left_out_with_a_warning() -> None:
    message = Message(assistant=[TextPart("Here it is."), AssetPart(content_type="image/png", data=b"\x89PNG")])
    request = ChatRequest("m", [Message(user=[TextPart("draw")]), message, Message(user=[TextPart("thanks")])])
    body, warnings = encode_messages_request(request, max_tokens=9)
    assert body["messages"][1] == {"role": "assistant", "content": "Here it is."}
    assert [w.kind for w in warnings] == ["content_omitted"]
    assert "messages[1]" in warnings[0].message
    assert request.warnings == []
