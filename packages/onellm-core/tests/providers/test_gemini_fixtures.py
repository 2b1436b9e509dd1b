"""Replays `testdata/providers/gemini/*` through `GeminiProvider`: what is sent, what is decoded, and that a streamed
answer builds the same message as the whole one."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import onellm.errors
from onellm.clock import FakeClock
from onellm.providers._request import ChatResponse
from onellm.providers._sse import iter_sse
from onellm.providers.gemini import GeminiProvider, collect

from ._fixtures import (
    KEY,
    PROVIDERS,
    UPDATE,
    Recorder,
    case_id,
    cases,
    chat_request,
    load,
    response_data,
    save,
    stream_response,
    whole_responses,
)

CASES = [p for p in cases("gemini") if "operation" not in load(p)]
STREAMED = [p for p in CASES if "stream" in load(p)]


def provider_for(case: dict[str, Any], handler: Recorder, clock: FakeClock | None = None) -> GeminiProvider:
    spec = case["provider"]
    return GeminiProvider(
        base_url=spec["baseUrl"],
        api_key=KEY,
        properties=spec.get("properties", {}),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        clock=clock or FakeClock(),
    )


def streamed_case(case: dict[str, Any]) -> dict[str, Any]:
    """The case as a stream sends it: the same body to `:streamGenerateContent`."""
    streamed = copy.deepcopy(case)
    expected = streamed["expectedRequest"]
    expected["path"] = expected["path"].replace(":generateContent", ":streamGenerateContent")
    return streamed


def run_stream(case: dict[str, Any], body: str | None = None) -> tuple[ChatResponse, Recorder]:
    streamed = streamed_case(case)
    answer = (lambda: httpx.Response(200, content=body.encode())) if body is not None else lambda: stream_response(case)
    recorder = Recorder(streamed, answer)
    provider = provider_for(case, recorder)

    async def go() -> ChatResponse:
        return await collect(provider.stream(chat_request(case["request"])))

    return anyio.run(go), recorder


@pytest.mark.parametrize("path", CASES, ids=case_id)
def test_fixture_whole(path: Path) -> None:
    case = load(path)
    assert case.get("source"), "every case names the reference it was written from"
    recorder = Recorder(case, whole_responses(case))
    clock = FakeClock()
    provider = provider_for(case, recorder, clock)

    async def go() -> ChatResponse:
        return await provider.send(chat_request(case["request"]))

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
        actual = response_data(result)
        if UPDATE:
            case["expected"] = actual
        assert actual == case["expected"]
    if "expectedAttempts" in case:
        assert len(recorder.requests) == case["expectedAttempts"]
    if UPDATE:
        save(path, case)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("path", STREAMED, ids=case_id)
def test_fixture_stream_builds_the_same_message(path: Path) -> None:
    case = load(path)
    result, recorder = run_stream(case)
    assert recorder.check_last(streamed=True) == []
    assert recorder.requests[-1].url.params.get("alt") == "sse"
    assert recorder.requests[-1].headers["accept"] == "text/event-stream"
    expected = dict(case["expected"])
    assert response_data(result) == expected


STREAMS = [load(p)["stream"].encode() for p in STREAMED]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(STREAMS), st.lists(st.integers(min_value=0, max_value=5000), max_size=40))
def test_any_chunking_of_a_gemini_stream_gives_the_same_events(stream: bytes, cuts: list[int]) -> None:
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert list(iter_sse(chunks)) == list(iter_sse([stream]))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(STREAMED), st.lists(st.integers(min_value=0, max_value=5000), max_size=12))
def test_any_chunking_of_a_gemini_stream_builds_the_same_message(path: Path, cuts: list[int]) -> None:
    case = load(path)
    stream = case["stream"].encode()
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]

    async def body() -> Any:
        for chunk in chunks:
            yield chunk

    recorder = Recorder(streamed_case(case), lambda: httpx.Response(200, content=body()))
    provider = provider_for(case, recorder)

    async def go() -> ChatResponse:
        return await collect(provider.stream(chat_request(case["request"])))

    expected = dict(case["expected"])
    assert response_data(anyio.run(go)) == expected


def test_a_stream_cut_mid_event_is_malformed() -> None:
    case = load(PROVIDERS / "gemini" / "stream-text" / "case.json")
    cut = case["stream"][: case["stream"].index("晴れ")]
    with pytest.raises(onellm.errors.MalformedResponseError, match="inside an event"):
        run_stream(case, cut)


def test_a_stream_cut_between_events_is_malformed() -> None:
    case = load(PROVIDERS / "gemini" / "basic" / "case.json")
    events = case["stream"].split("\r\n\r\n")
    cut = "\r\n\r\n".join(events[:2]) + "\r\n\r\n"  # whole events, but the finishing chunk never came
    with pytest.raises(onellm.errors.MalformedResponseError, match="before the answer finished"):
        run_stream(case, cut)


def test_an_error_object_mid_stream_is_a_provider_error() -> None:
    case = load(PROVIDERS / "gemini" / "basic" / "case.json")
    first = case["stream"].split("\r\n\r\n")[0]
    body = (
        first
        + '\r\n\r\ndata: {"error": {"code": 500, "message": "Internal error encountered.", "status": "INTERNAL"}}\r\n\r\n'
    )
    with pytest.raises(onellm.errors.ProviderError, match="Internal error encountered"):
        run_stream(case, body)


def test_an_overloaded_error_mid_stream_is_typed() -> None:
    case = load(PROVIDERS / "gemini" / "basic" / "case.json")
    first = case["stream"].split("\r\n\r\n")[0]
    error = '{"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}'
    with pytest.raises(onellm.errors.OverloadedError, match="overloaded"):
        run_stream(case, f"{first}\r\n\r\ndata: {error}\r\n\r\n")


def test_only_the_first_candidate_builds_the_message() -> None:
    from onellm.providers.gemini import decode_generate_content

    answer = {
        "candidates": [
            {"index": 1, "content": {"parts": [{"text": "second"}]}, "finishReason": "STOP"},
            {"content": {"parts": [{"text": "first"}]}, "finishReason": "STOP"},
        ]
    }
    message = decode_generate_content(json.dumps(answer).encode()).message
    assert message.text == "first"
    assert message.extra["gemini"]["candidates"][0]["content"]["parts"] == [{"text": "second"}]


def test_invalid_json_in_a_chunk_is_malformed() -> None:
    case = load(PROVIDERS / "gemini" / "basic" / "case.json")
    with pytest.raises(onellm.errors.MalformedResponseError):
        run_stream(case, 'data: {"candidates": [\r\n\r\n')


def test_the_key_appears_in_no_error_text() -> None:
    case = load(PROVIDERS / "gemini" / "auth-error" / "case.json")
    body = (
        b'{"error": {"code": 400, "message": "API key not valid: sk-fixture-key", "status": "INVALID_ARGUMENT", '
        b'"details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}'
    )
    recorder = Recorder(case, lambda: httpx.Response(400, content=body))
    provider = provider_for(case, recorder)

    async def go() -> ChatResponse:
        return await provider.send(chat_request(case["request"]))

    with pytest.raises(onellm.errors.AuthError) as caught:
        anyio.run(go)
    for text in (str(caught.value), repr(caught.value), caught.value.body or "", repr(caught.value.args)):
        assert KEY not in text
