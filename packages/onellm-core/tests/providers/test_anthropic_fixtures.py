"""Replays `testdata/providers/anthropic/*` through `AnthropicProvider`: the request onellm sends, the message it
decodes from the whole answer, and the same message built from the streamed answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import onellm.errors
from onellm.catalog import Catalog
from onellm.clock import FakeClock
from onellm.providers._request import ChatRequest, ChatResponse
from onellm.providers._retry import RetryPolicy
from onellm.providers._sse import iter_sse
from onellm.providers.anthropic import AnthropicProvider, collect

from ._fixtures import (
    KEY,
    UPDATE,
    Recorder,
    as_response,
    case_id,
    cases,
    chat_request,
    load,
    response_data,
    save,
    stream_response,
    whole_responses,
)

SHIPPED = Catalog.shipped()
ALL = cases("anthropic")
CHAT = [p for p in ALL if "operation" not in load(p)]


def provider_for(case: dict[str, Any], handler: Any, clock: FakeClock | None = None) -> AnthropicProvider:
    spec = case.get("provider", {})
    options: dict[str, Any] = {}
    if "apiVersion" in spec:
        options["api_version"] = spec["apiVersion"]
    if "retry" in spec:
        options["retry"] = RetryPolicy(max_retries=spec["retry"]["maxRetries"])
    return AnthropicProvider(
        base_url=spec.get("baseUrl", "https://api.anthropic.com"),
        api_key=KEY,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        clock=clock or FakeClock(),
        **options,
    )


def request_of(case: dict[str, Any], data: dict[str, Any] | None = None) -> ChatRequest:
    """The case's request; with `provider.catalog`, carrying its model's profile from the shipped catalog, as the
    runtime hands it over."""
    request = chat_request(case["request"] if data is None else data)
    if case.get("provider", {}).get("catalog"):
        request.profile = SHIPPED.resolve(request.model).profile
    return request


def outcome(result: ChatResponse) -> dict[str, Any]:
    actual: dict[str, Any] = dict(response_data(result))
    actual["finish"] = result.finish_reason.value if result.finish_reason is not None else None
    return actual


@pytest.mark.parametrize("path", [p for p in CHAT if not load(p).get("streamOnly")], ids=case_id)
def test_fixture_whole(path: Path) -> None:
    case = load(path)
    recorder = Recorder(case, whole_responses(case))
    clock = FakeClock()
    provider = provider_for(case, recorder, clock)

    async def go() -> ChatResponse:
        return await provider.send(request_of(case))

    result: ChatResponse | BaseException
    try:
        result = anyio.run(go)
    except onellm.errors.OnellmError as error:
        result = error
    problems = recorder.check_last(streamed=False)
    if "expectedSleeps" in case:
        assert [round(s, 3) for s in clock.sleeps] == case["expectedSleeps"]
    if isinstance(result, BaseException):
        actual: dict[str, Any] = {"error": type(result).__name__, "status": getattr(result, "status", None)}
        if UPDATE:
            case["expectedError"] = actual
        assert actual == case.get("expectedError"), f"{result!r}"
    else:
        actual = outcome(result)
        if result.extra:
            actual["extra"] = result.extra
        if UPDATE:
            case["expected"] = actual
        assert actual == case["expected"]
    if case.get("expectedAttempts") is not None:
        assert len(recorder.requests) == case["expectedAttempts"]
    if UPDATE:
        save(path, case)
    assert problems == [], "\n".join(problems)


def run_stream(case: dict[str, Any], content: bytes | None = None) -> tuple[ChatResponse, Recorder]:
    answer = (lambda: stream_response(case)) if content is None else (lambda: httpx.Response(200, content=content))
    recorder = Recorder(case, answer)
    provider = provider_for(case, recorder)

    async def go() -> ChatResponse:
        return await collect(provider.stream(request_of(case)))

    return anyio.run(go), recorder


@pytest.mark.parametrize("path", [p for p in CHAT if "stream" in load(p)], ids=case_id)
def test_fixture_stream_builds_the_same_message(path: Path) -> None:
    case = load(path)
    result, recorder = run_stream(case)
    assert recorder.requests[-1].headers["accept"] == "text/event-stream"
    assert recorder.requests[-1].headers["x-api-key"] == KEY
    if case.get("streamOnly"):
        actual = outcome(result)
        if UPDATE:
            case["expected"] = actual
            recorder.check_last(streamed=False)  # records the body sent
            case["expectedRequest"]["body"].pop("stream", None)
            save(path, case)
        assert actual == case["expected"]
        assert recorder.check_last(streamed=True) == []
        return
    assert recorder.check_last(streamed=True) == []
    expected = dict(case["expected"])
    actual = outcome(result)
    if result.extra:
        actual["extra"] = result.extra
    assert actual == expected


STREAMS = [load(p)["stream"].encode() for p in CHAT if "stream" in load(p)]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(STREAMS), st.lists(st.integers(min_value=0, max_value=8000), max_size=40))
def test_any_chunking_of_an_anthropic_stream_gives_the_same_events(stream: bytes, cuts: list[int]) -> None:
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert list(iter_sse(chunks)) == list(iter_sse([stream]))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([p for p in CHAT if "stream" in load(p)]), st.data())
def test_any_chunking_through_the_provider_builds_the_same_message(path: Path, data: st.DataObject) -> None:
    case = load(path)
    stream = case["stream"].encode()
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(stream)), max_size=30))))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]

    class Chunked(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            for chunk in chunks:
                yield chunk

    whole, _ = run_stream(case)
    recorder = Recorder(case, lambda: httpx.Response(200, stream=Chunked()))
    provider = provider_for(case, recorder)

    async def go() -> ChatResponse:
        return await collect(provider.stream(request_of(case)))

    assert outcome(anyio.run(go)) == outcome(whole)


def test_a_stream_cut_mid_event_is_malformed() -> None:
    case = load(cases("anthropic")[0].parent.parent / "basic" / "case.json")
    text = case["stream"]
    cut = text[: text.index(" there")]
    with pytest.raises(onellm.errors.MalformedResponseError):
        run_stream(case, cut.encode())


def test_a_stream_that_ends_before_message_stop_is_malformed() -> None:
    case = load(cases("anthropic")[0].parent.parent / "basic" / "case.json")
    text = case["stream"]
    cut = text[: text.index("event: message_delta")]
    with pytest.raises(onellm.errors.MalformedResponseError, match="message_stop"):
        run_stream(case, cut.encode())


def test_an_error_event_mid_stream_is_a_typed_error() -> None:
    case = load(cases("anthropic")[0].parent.parent / "basic" / "case.json")
    first = case["stream"].split("\n\n")[0]
    body = (
        first
        + '\n\nevent: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    )
    with pytest.raises(onellm.errors.OverloadedError, match="Overloaded"):
        run_stream(case, body.encode())


def test_the_key_appears_in_no_error_text() -> None:
    case = load(cases("anthropic")[0].parent.parent / "auth-error" / "case.json")
    body = (
        b'{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key sk-fixture-key"}}'
    )
    recorder = Recorder(case, lambda: httpx.Response(401, content=body))
    provider = provider_for(case, recorder)
    with pytest.raises(onellm.errors.AuthError) as caught:
        anyio.run(provider.send, request_of(case))
    for text in (str(caught.value), repr(caught.value), caught.value.body or "", repr(caught.value.args)):
        assert KEY not in text


def test_count_tokens_fixture() -> None:
    path = next(p for p in ALL if load(p).get("operation") == "count_tokens")
    case = load(path)
    recorder = Recorder(case, whole_responses(case))
    provider = provider_for(case, recorder)
    count = anyio.run(provider.count_tokens, request_of(case))
    problems = recorder.check_last(streamed=False)
    if UPDATE:
        save(path, case)
    assert problems == [], "\n".join(problems)
    assert count == case["expected"]["inputTokens"]


def test_batch_fixture() -> None:
    path = next(p for p in ALL if load(p).get("operation") == "batch")
    case = load(path)
    recorded = iter(case["responses"])
    recorder = Recorder(case, lambda: as_response(next(recorded)))
    provider = provider_for(case, recorder)
    requests = [request_of(case, r) for r in case["requests"]]

    async def go() -> tuple[str, dict[str, Any], list[ChatResponse]]:
        batch_id = await provider.submit_batch(requests)
        submitted = recorder.check_last(streamed=False)
        assert submitted == [], "\n".join(submitted)
        status = await provider.get_batch(batch_id)
        return batch_id, status, await provider.batch_results(batch_id)

    batch_id, status, results = anyio.run(go)
    assert batch_id == "msgbatch_01HkcTjaV5uDC8jWR4ZsDV8d"
    assert status["processing_status"] == "in_progress"
    paths = [(r.method, r.url.path) for r in recorder.requests]
    assert paths == [
        ("POST", "/v1/messages/batches"),
        ("GET", f"/v1/messages/batches/{batch_id}"),
        ("GET", f"/v1/messages/batches/{batch_id}"),
        ("GET", f"/v1/messages/batches/{batch_id}/results"),
    ]
    actual = [outcome(r) | {"extra": r.extra} for r in results]
    if UPDATE:
        case["expected"] = actual
        save(path, case)
    assert actual == case["expected"]
    assert results[0].message.text == "Hello again! It's nice to see you."
    assert results[1].provider_finish_reason == "errored"


@pytest.mark.parametrize("path", [p for p in ALL if load(p).get("operation") == "stream_cut"], ids=case_id)
def test_stream_cut_fixture(path: Path) -> None:
    case = load(path)
    with pytest.raises(onellm.errors.OnellmError) as caught:
        run_stream(case, case["stream"].encode())
    assert {"error": type(caught.value).__name__} == case["expectedError"]
