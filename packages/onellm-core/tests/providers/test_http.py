from __future__ import annotations

import datetime as dt
import socket
import threading
from collections.abc import Callable, Iterator

import anyio
import httpx
import pytest

from onellm.clock import FakeClock
from onellm.errors import (
    AuthError,
    BadRequestError,
    OverloadedError,
    ProviderError,
    Secret,
    TransportError,
)
from onellm.providers import RetryPolicy
from onellm.providers._base import pick_base_url
from onellm.providers._http import HttpCall, HttpTransport, default_error_detail

KEY = Secret("sk-test-secret-0123456789")


def transport_for(handler: Callable[[httpx.Request], httpx.Response], **options: object) -> HttpTransport:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return HttpTransport(client, clock=FakeClock(), **options)  # type: ignore[arg-type]


def call(url: str = "https://api.example.test/v1/thing") -> HttpCall:
    return HttpCall(
        "POST",
        url,
        "example",
        headers={"authorization": f"Bearer {KEY.reveal()}"},
        body=b"{}",
        secrets=(KEY,),
    )


def test_send_returns_the_body_of_a_2xx() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"ok": True})

    response = anyio.run(transport_for(handler).send, call())
    assert response.json() == {"ok": True}
    assert seen[0].content == b"{}"
    assert seen[0].headers["authorization"] == f"Bearer {KEY.reveal()}"


def test_a_redirect_is_an_error_and_is_not_followed() -> None:
    hits: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        hits.append(str(request.url))
        return httpx.Response(307, headers={"location": "https://evil.example/steal"})

    with pytest.raises(ProviderError, match="redirect") as caught:
        anyio.run(transport_for(handler).send, call())
    assert caught.value.status == 307
    assert hits == ["https://api.example.test/v1/thing"]


def test_errors_are_typed_and_carry_no_key() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            401,
            json={"error": {"message": f"Incorrect API key provided: {KEY.reveal()}", "code": "invalid_api_key"}},
        )

    with pytest.raises(AuthError) as caught:
        anyio.run(transport_for(handler).send, call())
    error = caught.value
    assert error.status == 401
    for text in (str(error), repr(error), error.body or "", error.message):
        assert KEY.reveal() not in text


def test_retries_a_429_with_retry_after_then_succeeds() -> None:
    answers = iter(
        [
            httpx.Response(429, headers={"retry-after": "2"}, json={"error": {"message": "slow down"}}),
            httpx.Response(529, json={"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
            httpx.Response(200, json={"ok": 1}),
        ]
    )
    transport = transport_for(lambda request: next(answers))
    response = anyio.run(transport.send, call())
    assert response.json() == {"ok": 1}
    assert isinstance(transport.clock, FakeClock)
    assert transport.clock.sleeps[0] == 2.0
    assert 1.0 <= transport.clock.sleeps[1] <= 1.25


def test_a_400_is_never_retried() -> None:
    count = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal count
        count += 1
        return httpx.Response(400, json={"error": {"message": "unknown field 'x'", "type": "invalid_request_error"}})

    with pytest.raises(BadRequestError, match="unknown field"):
        anyio.run(transport_for(handler).send, call())
    assert count == 1


def test_overload_retry_after_as_http_date_is_kept_on_the_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, headers={"Retry-After": "Thu, 05 Nov 2026 12:10:00 GMT"})

    transport = transport_for(handler, retry=RetryPolicy(max_retries=0))
    with pytest.raises(OverloadedError) as caught:
        anyio.run(transport.send, call())
    assert caught.value.retry_after == dt.timedelta(minutes=10)


def test_connection_failure_is_a_transport_error_and_is_retried() -> None:
    count = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal count
        count += 1
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(TransportError, match="ConnectError"):
        anyio.run(transport_for(handler).send, call())
    assert count == 3


def test_a_classifier_has_the_last_word() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": {"message": "API key not valid", "status": "INVALID_ARGUMENT"}})

    def classify(error: ProviderError, detail: object) -> ProviderError:
        return AuthError(error.message, provider=error.provider, status=error.status)

    c = call()
    c.classify = classify
    with pytest.raises(AuthError):
        anyio.run(transport_for(handler).send, c)


def test_stream_is_retried_before_output_only() -> None:
    answers = iter([httpx.Response(503), httpx.Response(200, content=b"data: 1\n\ndata: 2\n\n")])
    transport = transport_for(lambda request: next(answers))

    async def read() -> bytes:
        async with transport.stream(call()) as response:
            return b"".join([chunk async for chunk in transport.aiter_bytes(call(), response)])

    assert anyio.run(read) == b"data: 1\n\ndata: 2\n\n"


@pytest.mark.parametrize(
    ("body", "message", "code"),
    [
        (b'{"error": {"message": "m", "code": "c"}}', "m", "c"),
        (b'{"error": {"message": "m", "type": "t", "code": null}}', "m", "t"),
        (b'{"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}', "busy", "overloaded_error"),
        (b'{"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}', "bad", "INVALID_ARGUMENT"),
        (
            b'[{"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}]',
            "quota",
            "RESOURCE_EXHAUSTED",
        ),
        (b'{"error": "plain"}', "plain", None),
    ],
)
def test_default_error_detail(body: bytes, message: str, code: str | None) -> None:
    detail = default_error_detail(body)
    assert detail is not None
    assert (detail.message, detail.code) == (message, code)


@pytest.mark.parametrize("body", [b"<html>bad gateway</html>", b"", b"42", b"{}"])
def test_default_error_detail_declines_other_bodies(body: bytes) -> None:
    assert default_error_detail(body) is None


def test_base_url_order() -> None:
    default = "https://api.openai.com/v1/"
    assert pick_base_url(None, "OPENAI_BASE_URL", default, {}) == "https://api.openai.com/v1"
    environ = {"OPENAI_BASE_URL": "http://127.0.0.1:9999/v1"}
    assert pick_base_url(None, "OPENAI_BASE_URL", default, environ) == "http://127.0.0.1:9999/v1"
    assert pick_base_url("", "OPENAI_BASE_URL", default, {"OPENAI_BASE_URL": ""}) == "https://api.openai.com/v1"
    assert pick_base_url("https://gw.example/v1", "OPENAI_BASE_URL", default, environ) == "https://gw.example/v1"


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A loopback server that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def run() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/v1/thing"
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    server.close()


def test_a_server_that_never_answers_times_out_per_attempt(silent_server: str) -> None:
    async def run() -> None:
        async with HttpTransport(header_timeout=0.2, retry=RetryPolicy(max_retries=0)) as transport:
            await transport.send(call(silent_server))

    with pytest.raises(TransportError, match=r"no response headers within 0.2 s"):
        anyio.run(run)


@pytest.fixture
def stalling_server() -> Iterator[str]:
    """A loopback server that sends the headers and one event of a stream, then goes quiet."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()
    held: list[socket.socket] = []

    def run() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            held.append(connection)
            connection.recv(65536)
            connection.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                b'10\r\ndata: {"a": 1}\n\n\r\n'
            )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/v1/stream"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()


def test_a_stream_that_stalls_ends_in_a_transport_error(stalling_server: str) -> None:
    received: list[bytes] = []

    async def run() -> None:
        async with HttpTransport(header_timeout=0.3, retry=RetryPolicy(max_retries=0)) as transport:
            c = call(stalling_server)
            async with transport.stream(c) as response:
                async for chunk in transport.aiter_bytes(c, response):
                    received.append(chunk)  # noqa: PERF401 - keep what arrived before the failure

    with pytest.raises(TransportError, match="ReadTimeout"):
        anyio.run(run)
    assert b"".join(received) == b'data: {"a": 1}\n\n'
