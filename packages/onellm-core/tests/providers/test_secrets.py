"""A key a server echoes back never reaches an error: not its text, its body, its arguments, a traceback that shows
local variables, a saved instance's `error.message` or an `error` record, whatever path built the error.

The echoing answers are written from the vendors' references: Anthropic's `error` stream event (`{"type": "error",
"error": {"type", "message"}}`, anthropic-sdk-python `src/anthropic/types/shared/error_response.py`); OpenAI's
Responses `error` and `response.failed` events and a `Response` with `status: "failed"` (openapi.yaml 2.3.0,
`ResponseErrorEvent`, `ResponseFailedEvent`, `Response.error`); a Chat Completions stream that sends an `error`
object in place of a chunk (the error body of the same document, as compatible servers send it mid-stream); Gemini's
`google.rpc.Status` under `error` (googleapis `google/rpc/status.proto`); and a 307 whose `Location` carries the key.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, quote_plus

import anyio
import httpx
import msgspec
import pytest

import onellm
from onellm.errors import OnellmError, ProviderError
from onellm.instances import MemoryInstanceStore
from onellm.messages import Message, TextPart
from onellm.providers import ChatRequest
from onellm.providers.anthropic import AnthropicProvider
from onellm.providers.gemini import GeminiProvider
from onellm.providers.openai import OpenAICompatibleProvider, OpenAIProvider
from onellm.records import EventRecordSink
from onellm.records._kinds import encode_record
from onellm.runtime import ProviderRegistry

KEY = "sk-echo/Key+9z=="
"""A key with characters that JSON and URLs escape, so every spelling of it is tried."""
FORMS = sorted({KEY, KEY.replace("/", "\\/"), quote(KEY, safe=""), quote(KEY), quote_plus(KEY)})
ESCAPED = KEY.replace("/", "\\/")
ECHO = f"bad key {ESCAPED} ({quote(KEY, safe='')}, {quote_plus(KEY)})"
"""The key as a JSON string holds it (slash escaped, so it decodes to the key itself) and percent-encoded twice."""

FORMATS = ("anthropic", "openai-responses", "openai-chat", "gemini")


def provider(fmt: str, handler: Callable[[httpx.Request], httpx.Response]) -> Any:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    if fmt == "anthropic":
        return AnthropicProvider(api_key=KEY, max_tokens=10, http_client=client)
    if fmt == "openai-responses":
        return OpenAIProvider(api_key=KEY, http_client=client)
    if fmt == "openai-chat":
        return OpenAICompatibleProvider(base_url="https://llm.example.test/v1", api_key=KEY, http_client=client)
    return GeminiProvider(api_key=KEY, http_client=client)


def request(fmt: str) -> ChatRequest:
    model = {"anthropic": "claude-sonnet-5-5", "gemini": "gemini-flash-latest"}.get(fmt, "gpt-6-luna")
    return ChatRequest(model, [Message(user=[TextPart("hi")])])


def stream_body(fmt: str) -> str:
    """A stream that starts well and then reports an error that echoes the key."""
    if fmt == "anthropic":
        start = {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "usage": {},
            },
        }
        return (
            f"event: message_start\ndata: {msgspec.json.encode(start).decode()}\n\n"
            'event: error\ndata: {"type": "error", "error": {"type": "authentication_error", "message": "'
            + ECHO
            + '"}}\n\n'
        )
    if fmt == "openai-responses":
        created = {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}
        return (
            f"event: response.created\ndata: {msgspec.json.encode(created).decode()}\n\n"
            'event: error\ndata: {"type": "error", "code": "invalid_api_key", "message": "'
            + ECHO
            + '", "param": null, "sequence_number": 1}\n\n'
        )
    if fmt == "openai-chat":
        chunk = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hi"}}]}
        return (
            f"data: {msgspec.json.encode(chunk).decode()}\n\n"
            'data: {"error": {"message": "' + ECHO + '", "type": "invalid_request_error"}}\n\n'
        )
    chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}, "index": 0}]}
    return (
        f"data: {msgspec.json.encode(chunk).decode()}\r\n\r\n"
        'data: {"error": {"code": 401, "message": "' + ECHO + '", "status": "UNAUTHENTICATED"}}\r\n\r\n'
    )


def texts(error: BaseException) -> list[str]:
    """Every text an error shows: its message, repr, body and arguments, its causes, and the local variables of every
    frame it passed through outside this test (the test's own locals hold the echoing body), as error trackers record
    them."""
    out = [str(error), repr(error), repr(error.args), repr(vars(error))]
    out.extend(traceback.format_exception(error))
    pending = [traceback.TracebackException.from_exception(error, capture_locals=True)]
    while pending:
        current = pending.pop()
        out.extend(
            f"{frame.filename}:{frame.lineno} {frame.locals!r}" for frame in current.stack if frame.filename != __file__
        )
        pending.extend(linked for linked in (current.__cause__, current.__context__) if linked is not None)
    return out


def assert_clean(error: BaseException) -> None:
    for text in texts(error):
        for form in FORMS:
            assert form not in text, f"{form!r} in {text[:300]!r}"


async def collect(events: Any) -> None:
    async for _ in events:
        pass


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_streamed_error_event_that_echoes_the_key_is_clean(fmt: str) -> None:
    body = stream_body(fmt).encode()
    llm = provider(fmt, lambda _: httpx.Response(200, content=body, headers={"content-type": "text/event-stream"}))
    with pytest.raises(ProviderError) as caught:
        anyio.run(collect, llm.stream(request(fmt)))
    assert "bad key" in caught.value.message
    assert_clean(caught.value)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_refused_redirect_to_a_location_with_the_key_is_clean(fmt: str) -> None:
    location = f"https://evil.example/steal?key={quote(KEY, safe='')}&raw={KEY}&plus={quote_plus(KEY)}"
    llm = provider(fmt, lambda _: httpx.Response(307, headers={"location": location}))
    with pytest.raises(ProviderError, match="redirect") as caught:
        anyio.run(llm.send, request(fmt))
    assert "evil.example" in caught.value.message
    assert_clean(caught.value)
    with pytest.raises(ProviderError, match="redirect") as streamed:
        anyio.run(collect, llm.stream(request(fmt)))
    assert_clean(streamed.value)


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_error_status_that_echoes_the_key_is_clean(fmt: str) -> None:
    body = {"error": {"message": ECHO.replace("\\/", "/"), "type": "invalid_request_error", "code": 401}}
    llm = provider(fmt, lambda _: httpx.Response(401, json=body))
    with pytest.raises(ProviderError) as caught:
        anyio.run(llm.send, request(fmt))
    assert_clean(caught.value)


def failed_response() -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": "failed",
        "model": "gpt-6-luna",
        "output": [],
        "error": {"code": "server_error", "message": ECHO.replace("\\/", "/")},
    }


def test_a_whole_responses_answer_with_status_failed_is_clean() -> None:
    llm = provider("openai-responses", lambda _: httpx.Response(200, json=failed_response()))
    with pytest.raises(ProviderError, match="bad key") as caught:
        anyio.run(llm.send, request("openai-responses"))
    assert_clean(caught.value)


def test_a_streamed_responses_failure_is_clean() -> None:
    created = {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}
    failed = {"type": "response.failed", "sequence_number": 1, "response": failed_response()}
    body = (
        f"event: response.created\ndata: {msgspec.json.encode(created).decode()}\n\n"
        f"event: response.failed\ndata: {msgspec.json.encode(failed).decode()}\n\n"
    ).encode()
    llm = provider("openai-responses", lambda _: httpx.Response(200, content=body))
    with pytest.raises(ProviderError, match="bad key") as caught:
        anyio.run(collect, llm.stream(request("openai-responses")))
    assert_clean(caught.value)


def test_a_batch_error_that_echoes_the_key_is_clean() -> None:
    answers = iter(
        [
            httpx.Response(200, json={"id": "batch_1", "status": "completed", "output_file_id": "file_9"}),
            httpx.Response(
                200,
                content=msgspec.json.encode(
                    {
                        "custom_id": "request-0",
                        "response": {"status_code": 401, "body": {"error": {"message": f"bad key {KEY}"}}},
                    }
                ),
            ),
        ]
    )
    llm = provider("openai-responses", lambda _: next(answers))
    with pytest.raises(ProviderError, match="bad key") as caught:
        anyio.run(llm.batch_results, "batch_1")
    assert_clean(caught.value)


def test_a_transport_failure_shows_no_header_in_its_traceback() -> None:
    """The request as sent (its headers) is in the frames of the code that fails; none of them stays on the error."""

    def refuse(request: httpx.Request) -> httpx.Response:
        headers = dict(request.headers)  # a frame that holds the key, as httpcore's do
        raise httpx.ConnectError(f"refused ({len(headers)} headers)", request=request)

    for fmt in FORMATS:
        llm = provider(fmt, refuse)
        llm._transport.retry = onellm.RetryPolicy(max_retries=0)
        with pytest.raises(OnellmError) as caught:
            anyio.run(llm.send, request(fmt))
        assert_clean(caught.value)


def test_the_call_object_hides_its_headers() -> None:
    llm = provider("anthropic", lambda _: httpx.Response(200))
    call = llm._call("POST", "/v1/messages", {"a": 1})
    assert call.headers["x-api-key"] == KEY
    for text in (repr(call), str(call), repr(call.headers), repr(llm), repr(llm._transport)):
        assert KEY not in text
    assert "x-api-key" in repr(call)


def test_a_credential_header_given_by_the_caller_is_a_secret_too() -> None:
    echo = "gw-token-12345"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": {"message": f"gateway refused {request.headers['x-gateway-token']}"}})

    llm = OpenAICompatibleProvider(
        base_url="https://gw.example.test/v1",
        headers={"x-gateway-token": echo},
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )
    with pytest.raises(ProviderError, match="gateway refused") as caught:
        anyio.run(llm.send, request("openai-chat"))
    assert echo not in str(caught.value)
    assert echo not in (caught.value.body or "")


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
def test_the_saved_instance_and_the_error_record_carry_no_key(fmt: str) -> None:
    body = stream_body(fmt).encode()
    client = httpx.AsyncClient(transport=httpx.MockTransport(lambda _: httpx.Response(200, content=body)))
    environ = {"ANTHROPIC_API_KEY": KEY, "GEMINI_API_KEY": KEY}
    records: list[Any] = []
    store = MemoryInstanceStore()
    runtime = onellm.Runtime(
        providers=ProviderRegistry(environ, http_client=client),
        store=store,
        records=[EventRecordSink(records.append)],
        environ=environ,
    )
    model = "claude-sonnet" if fmt == "anthropic" else "gemini-flash"

    async def run() -> str:
        with pytest.raises(ProviderError) as caught:
            await runtime.stream(model, "hi").result()
        assert_clean(caught.value)
        instance_id = (await store.list())[0].id
        loaded = await store.load(instance_id)
        assert loaded is not None
        assert loaded.error is not None
        assert "bad key" in (loaded.error.message or "")
        return store.text_of(instance_id) or ""

    saved = anyio.run(run)
    assert "bad key" in saved
    written = [encode_record(record).decode() for record in records]
    errors = [r for r in records if type(r).__name__ == "ErrorRecord"]
    assert errors
    for text in [saved, *written]:
        for form in FORMS:
            assert form not in text


def test_what_onellm_logs_about_a_retried_call_carries_no_key(caplog: pytest.LogCaptureFixture) -> None:
    """onellm's own log lines (a retry, with the error that caused it) never hold the key. httpcore's DEBUG lines
    print the headers as sent; the providers page says so."""
    answers = iter([httpx.Response(429, json={"error": {"message": ECHO.replace("\\/", "/")}}), httpx.Response(500)])
    llm = provider("openai-chat", lambda _: next(answers))
    llm._transport.retry = onellm.RetryPolicy(max_retries=1, base_delay=0, jitter=0)
    with caplog.at_level("DEBUG", logger="onellm"), pytest.raises(ProviderError):
        anyio.run(llm.send, request("openai-chat"))
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("onellm")]
    assert len(lines) == 1
    assert "retry 1 of POST https://llm.example.test/v1/chat/completions" in lines[0]
    assert "bad key" in lines[0]
    for form in FORMS:
        assert form not in lines[0]


def test_every_public_call_of_every_provider_passes_the_cleaning_boundary() -> None:
    """The boundary is not a habit each method must remember: `HttpProvider` puts it on every public call a subclass
    defines, a provider written later included."""
    from onellm.providers._base import GUARDED_METHODS, HttpProvider

    for cls in (AnthropicProvider, OpenAIProvider, OpenAICompatibleProvider, GeminiProvider):
        for name in GUARDED_METHODS:
            method = getattr(cls, name, None)
            if method is not None:
                assert getattr(method, "__onellm_guarded__", False), f"{cls.__name__}.{name}"

    class Later(HttpProvider):
        default_base_url = "https://later.example.test"

        async def send(self, request: ChatRequest) -> Any:
            raise ProviderError(f"the server said {KEY}", provider=self.name)

    with pytest.raises(ProviderError) as caught:
        anyio.run(Later(name="later", api_key=KEY).send, request("openai-chat"))
    assert_clean(caught.value)
