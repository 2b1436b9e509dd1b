"""Replays `testdata/providers/openai-chat/*`, `openai-responses/*` and `compatible/*` through `OpenAIProvider` and
`OpenAICompatibleProvider`."""

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
from onellm.providers._protocols import EmbeddingRequest
from onellm.providers._request import ChatResponse
from onellm.providers._sse import iter_sse
from onellm.providers.openai import OpenAICompatibleProvider, OpenAIProvider, collect

from ._fixtures import (
    KEY,
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
from ._fixtures import (
    PROVIDERS as PROVIDERS_DIR,
)

SHIPPED = Catalog.shipped()
CASES = cases("openai-chat", "openai-responses", "compatible")


def provider_for(case: dict[str, Any], handler: Recorder, clock: FakeClock | None = None) -> OpenAICompatibleProvider:
    spec = case["provider"]
    if "preset" in spec:  # a compatible server: base URL, key variable and quirks from the shipped catalog
        resolved = SHIPPED.resolve(spec["preset"])
        assert resolved.base_url is not None
        return OpenAICompatibleProvider(
            base_url=resolved.base_url,
            api_key=KEY if resolved.api_key_env_var else None,
            name=spec["preset"].split(":", 1)[0],
            properties=resolved.properties,
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
            clock=clock or FakeClock(),
        )
    if "api" in spec:
        return OpenAIProvider(
            base_url=spec["baseUrl"],
            api_key=KEY,
            api=spec["api"],
            properties=spec.get("properties", {}),
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
            clock=clock or FakeClock(),
        )
    return OpenAICompatibleProvider(
        base_url=spec["baseUrl"],
        api_key=None if spec.get("noKey") else KEY,
        name=spec["name"],
        properties=spec.get("properties", {}),
        first_party=spec.get("firstParty", False),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        clock=clock or FakeClock(),
    )


def run_whole(case: dict[str, Any]) -> tuple[ChatResponse | BaseException, Recorder, FakeClock]:
    recorder = Recorder(case, whole_responses(case))
    clock = FakeClock()
    provider = provider_for(case, recorder, clock)

    async def go() -> ChatResponse:
        return await provider.send(chat_request(case["request"]))

    try:
        return anyio.run(go), recorder, clock
    except onellm.errors.OnellmError as error:
        return error, recorder, clock


def run_stream(case: dict[str, Any]) -> tuple[ChatResponse, Recorder]:
    recorder = Recorder(case, lambda: stream_response(case))
    provider = provider_for(case, recorder)

    async def go() -> ChatResponse:
        return await collect(provider.stream(chat_request(case["request"])))

    return anyio.run(go), recorder


@pytest.mark.parametrize("path", CASES, ids=case_id)
def test_fixture_whole(path: Path) -> None:
    case = load(path)
    result, recorder, clock = run_whole(case)
    problems = recorder.check_last(streamed=False)
    if "expectedSleeps" in case:
        assert [round(s, 3) for s in clock.sleeps] == case["expectedSleeps"]
    expected = case.get("expected")
    if isinstance(result, BaseException):
        actual: dict[str, Any] = {"error": type(result).__name__, "status": getattr(result, "status", None)}
        if UPDATE:
            case["expectedError"] = actual
        assert actual == case.get("expectedError"), f"{result!r}"
    else:
        actual = response_data(result)
        if UPDATE:
            case["expected"] = expected = actual
        assert actual == expected
    attempts = case.get("expectedAttempts")
    if attempts is not None:
        assert len(recorder.requests) == attempts
    if UPDATE:
        save(path, case)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("path", [p for p in CASES if "stream" in load(p)], ids=case_id)
def test_fixture_stream_builds_the_same_message(path: Path) -> None:
    case = load(path)
    result, recorder = run_stream(case)
    assert recorder.check_last(streamed=True) == []
    expected = dict(case["expected"])
    assert response_data(result) == expected


STREAMS = [load(p)["stream"].encode() for p in CASES if "stream" in load(p)]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(STREAMS), st.lists(st.integers(min_value=0, max_value=5000), max_size=40))
def test_any_chunking_of_a_fixture_stream_gives_the_same_events(stream: bytes, cuts: list[int]) -> None:
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert list(iter_sse(chunks)) == list(iter_sse([stream]))


def test_a_stream_cut_mid_event_is_malformed() -> None:
    case = load(PROVIDERS_DIR / "openai-chat" / "stream-text" / "case.json")
    cut = case["stream"][: case["stream"].index("help")]
    recorder = Recorder(case, lambda: httpx.Response(200, content=cut.encode()))
    provider = provider_for(case, recorder)

    async def go() -> ChatResponse:
        return await collect(provider.stream(chat_request(case["request"])))

    with pytest.raises(onellm.errors.MalformedResponseError):
        anyio.run(go)


def test_an_error_object_mid_stream_is_a_provider_error() -> None:
    case = load(PROVIDERS_DIR / "openai-chat" / "stream-text" / "case.json")
    first = case["stream"].split("\n\n")[0]
    body = first + '\n\ndata: {"error": {"message": "The server had an error", "type": "server_error"}}\n\n'
    recorder = Recorder(case, lambda: httpx.Response(200, content=body.encode()))
    provider = provider_for(case, recorder)

    async def go() -> ChatResponse:
        return await collect(provider.stream(chat_request(case["request"])))

    with pytest.raises(onellm.errors.ProviderError, match="server had an error"):
        anyio.run(go)


def test_invalid_json_in_a_data_line_is_malformed() -> None:
    case = load(PROVIDERS_DIR / "openai-chat" / "stream-text" / "case.json")
    recorder = Recorder(case, lambda: httpx.Response(200, content=b'data: {"id": "x", \xff}\n\n'))
    provider = provider_for(case, recorder)

    async def go() -> ChatResponse:
        return await collect(provider.stream(chat_request(case["request"])))

    with pytest.raises(onellm.errors.MalformedResponseError):
        anyio.run(go)


def test_the_key_appears_in_no_error_text() -> None:
    case = load(PROVIDERS_DIR / "openai-chat" / "auth-error" / "case.json")
    body = b'{"error": {"message": "Incorrect API key provided: sk-fixture-key.", "code": "invalid_api_key"}}'
    recorder = Recorder(case, lambda: httpx.Response(401, content=body))
    provider = provider_for(case, recorder)

    async def go() -> ChatResponse:
        return await provider.send(chat_request(case["request"]))

    with pytest.raises(onellm.errors.AuthError) as caught:
        anyio.run(go)
    for text in (str(caught.value), repr(caught.value), caught.value.body or "", repr(caught.value.args)):
        assert KEY not in text


@pytest.mark.parametrize("path", cases("openai-embeddings"), ids=case_id)
def test_embeddings_fixture(path: Path) -> None:
    case = load(path)
    recorder = Recorder(case, whole_responses(case))
    provider = provider_for(case, recorder)
    request = EmbeddingRequest(
        model=case["request"]["model"], inputs=case["request"]["inputs"], dimensions=case["request"].get("dimensions")
    )
    result = anyio.run(provider.embed, request)
    assert recorder.check_last(streamed=False) == []
    assert result.vectors == [[float(x) for x in v] for v in case["expected"]["vectors"]]
    assert result.usage is not None
    assert result.usage.to_data() == case["expected"]["usage"]
