"""`http_request`, `read_file` of a URL (loopback server) and `search_web` (Brave fixture through MockTransport)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from onellm.capabilities import Capabilities
from onellm.errors import Secret

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "fixtures"


def ok(result: Any) -> str:
    assert not result.is_error, result.text
    return str(result.text)


def err(result: Any) -> str:
    assert result.is_error, result.text
    return str(result.text)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return

    def _answer(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/text":
            self._answer(200, "héllo wörld".encode(), "text/plain; charset=utf-8")
        elif self.path == "/long":
            self._answer(200, b"a" * 5000 + b"END", "text/plain")
        elif self.path == "/binary":
            self._answer(200, bytes(range(256)), "application/octet-stream")
        elif self.path == "/redirect":
            self._answer(302, b"", "text/plain", {"Location": "/text"})
        elif self.path == "/headers":
            body = json.dumps({k.lower(): v for k, v in self.headers.items()}).encode()
            self._answer(200, body, "application/json")
        elif self.path == "/missing":
            self._answer(404, b"no such page", "text/plain")
        else:
            self._answer(500, b"?", "text/plain")

    do_HEAD = do_GET

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        data = self.rfile.read(length)
        self._answer(201, b"got " + data, "text/plain")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def net(root: Path) -> Capabilities:
    return Capabilities.files(root) + Capabilities.network("127.0.0.1")


# ---------------------------------------------------------------------------------------------------- http_request


async def test_http_request_get(run: Any, root: Path, server: str) -> None:
    text = ok(await run("http_request", {"url": f"{server}/text"}, net(root)))
    lines = text.splitlines()
    assert lines[0] == "HTTP 200 OK"
    assert "content-type: text/plain; charset=utf-8" in lines
    assert lines[-1] == "héllo wörld"


async def test_http_request_post_head_and_redirect(run: Any, root: Path, server: str) -> None:
    posted = ok(await run("http_request", {"url": f"{server}/echo", "method": "POST", "body": "abc"}, net(root)))
    assert posted.splitlines()[0] == "HTTP 201 Created"
    assert posted.endswith("got abc")
    head = ok(await run("http_request", {"url": f"{server}/text", "method": "HEAD"}, net(root)))
    assert "héllo" not in head
    moved = ok(await run("http_request", {"url": f"{server}/redirect"}, net(root)))
    assert moved.splitlines()[:2] == ["HTTP 200 OK", f"final URL: {server}/text"]
    missing = ok(await run("http_request", {"url": f"{server}/missing"}, net(root)))
    assert missing.splitlines()[0] == "HTTP 404 Not Found"


async def test_http_request_sends_headers(run: Any, root: Path, server: str) -> None:
    text = ok(await run("http_request", {"url": f"{server}/headers", "headers": {"X-Probe": "1"}}, net(root)))
    body = json.loads(text.split("\n\n", 1)[1])
    assert body["x-probe"] == "1"


async def test_http_request_limits_the_body(make_runner: Callable[..., Any], root: Path, server: str) -> None:
    run = make_runner(http_response_limit_chars=100, http_request_body_limit_bytes=10)
    text = ok(await run("http_request", {"url": f"{server}/long"}, net(root)))
    assert "elided" in text
    assert text.endswith("END")
    binary = ok(await run("http_request", {"url": f"{server}/binary"}, net(root)))
    assert binary.endswith("[binary body: 256 bytes of application/octet-stream]")
    big = err(await run("http_request", {"url": f"{server}/echo", "method": "POST", "body": "x" * 11}, net(root)))
    assert "above the limit of 10" in big


async def test_network_bodies_are_read_up_to_a_cap(make_runner: Callable[..., Any], root: Path, server: str) -> None:
    run = make_runner(max_file_bytes=1000)
    text = ok(await run("http_request", {"url": f"{server}/long"}, net(root)))
    assert text.endswith("[the body was cut after 1000 bytes]")
    assert "END" not in text
    assert "larger than 1000 bytes" in err(await run("read_file", {"path": f"{server}/long"}, net(root)))


async def test_http_request_refusals(run: Any, root: Path, server: str) -> None:
    assert "no network grant" in err(await run("http_request", {"url": f"{server}/text"}))
    other = Capabilities.network("example.com")
    assert "not in the network grant" in err(await run("http_request", {"url": f"{server}/text"}, other))
    # A public-hosts grant never reaches a loopback address.
    public = Capabilities.any_public_hosts()
    assert "CapabilityDeniedError" in err(await run("http_request", {"url": f"{server}/text"}, public))
    assert "only http and https" in err(await run("http_request", {"url": "file:///etc/passwd"}, net(root)))


async def test_http_request_bad_arguments(run: Any, root: Path, server: str) -> None:
    assert "Argument 'method'" in err(
        await run("http_request", {"url": f"{server}/text", "method": "TRACE"}, net(root))
    )
    bad_header = {"url": f"{server}/text", "headers": {"X-A": "1\r\nInjected: yes"}}
    assert "line breaks" in err(await run("http_request", bad_header, net(root)))
    assert "Argument 'url'" in err(await run("http_request", {}, net(root)))


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        ({"X-A": "\u00e9"}, "non-ASCII text"),
        ({"X-A": "\U0001f600"}, "non-ASCII text"),
        ({"X-A": "a\x01b"}, "control characters"),
        ({"X-\u00e9": "a"}, "is not valid"),
        ({"X Y": "a"}, "is not valid"),
        ({"X:Y": "a"}, "is not valid"),
        ({"": "a"}, "is not valid"),
    ],
)
async def test_http_request_refuses_headers_http_cannot_carry_before_sending(
    run: Any, root: Path, server: str, headers: dict[str, str], says: str
) -> None:
    text = err(await run("http_request", {"url": f"{server}/headers", "headers": headers}, net(root)))
    assert text.startswith("Tool 'http_request' failed: ValueError: header")
    assert says in text


async def test_read_file_of_a_url(run: Any, root: Path, server: str) -> None:
    assert ok(await run("read_file", {"path": f"{server}/text"}, net(root))) == "héllo wörld"
    assert "not text" in err(await run("read_file", {"path": f"{server}/binary"}, net(root)))
    assert "404" in err(await run("read_file", {"path": f"{server}/missing"}, net(root)))
    assert "CapabilityDeniedError" in err(await run("read_file", {"path": f"{server}/text"}, Capabilities.files(root)))


# ------------------------------------------------------------------------------------------------------ search_web

KEY = "brave-test-key-0123456789"


class Brave:
    """A MockTransport playing the Brave endpoint: records requests, answers with the fixture or a given status."""

    def __init__(self, status: int = 200, body: bytes | None = None) -> None:
        self.sent: list[httpx.Request] = []
        self.status = status
        self.body = body if body is not None else (FIXTURES / "brave_web_search.json").read_bytes()
        self.transport = httpx.MockTransport(self.answer)

    def answer(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        return httpx.Response(self.status, content=self.body, headers={"content-type": "application/json"})


BRAVE_GRANT = Capabilities.network("api.search.brave.com")


async def test_search_web_sends_the_query_and_renders_results(make_runner: Callable[..., Any]) -> None:
    brave = Brave()
    run = make_runner(search_transport=brave.transport, environment={"BRAVE_API_KEY": KEY})
    result = await run("search_web", {"query": "python linear time regex", "count": 2}, BRAVE_GRANT)
    text = ok(result)
    assert text.splitlines() == [
        "Results for 'python linear time regex':",
        "1. Regular Expression Matching Can Be Simple And Fast",
        "   https://swtch.com/~rsc/regexp/regexp1.html",
        "   Thompson's construction gives a linear time matcher for regex search.",
        "   (January 1, 2007)",
        "2. re — Regular expression operations",
        "   https://docs.python.org/3/library/re.html",
        "   This module provides regular expression matching operations similar to those found in Perl.",
    ]
    (request,) = brave.sent
    assert request.url.host == "api.search.brave.com"
    assert request.url.path == "/res/v1/web/search"
    assert dict(request.url.params) == {"q": "python linear time regex", "count": "2"}
    assert request.headers["x-subscription-token"] == KEY
    assert request.headers["accept"] == "application/json"
    (line,) = result.cost_lines
    assert line.counter == "search_queries"
    assert line.quantity == 1
    assert line.amount == Decimal("0.005")
    assert line.source == "https://brave.com/search/api/"


async def test_search_web_key_from_options_and_pricing(make_runner: Callable[..., Any]) -> None:
    from onellm.tools.builtin import SearchPricing

    brave = Brave()
    run = make_runner(
        search_transport=brave.transport,
        brave_api_key=Secret("other-key"),
        environment={},
        search_pricing=SearchPricing(unit_price=Decimal("9"), per=1000),
    )
    result = await run("search_web", {"query": "x"}, BRAVE_GRANT)
    ok(result)
    assert brave.sent[0].headers["x-subscription-token"] == "other-key"
    assert result.cost_lines[0].amount == Decimal("0.009")


async def test_search_web_failure_is_costed_and_scrubs_the_key(make_runner: Callable[..., Any]) -> None:
    brave = Brave(status=429, body=f'{{"error": "rate limited for token {KEY}"}}'.encode())
    run = make_runner(search_transport=brave.transport, environment={"BRAVE_API_KEY": KEY})
    result = await run("search_web", {"query": "x"}, BRAVE_GRANT)
    text = err(result)
    assert "429" in text
    assert KEY not in text
    assert "****" in text
    assert len(result.cost_lines) == 1


async def test_search_web_transport_failure_scrubs_the_key(make_runner: Callable[..., Any]) -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"cannot connect with {request.headers['x-subscription-token']}")

    run = make_runner(search_transport=httpx.MockTransport(fail), environment={"BRAVE_API_KEY": KEY})
    result = await run("search_web", {"query": "x"}, BRAVE_GRANT)
    text = err(result)
    assert "ConnectError" in text
    assert KEY not in text
    assert result.cost_lines == []


async def test_search_web_refusals(make_runner: Callable[..., Any], root: Path) -> None:
    brave = Brave()
    run = make_runner(search_transport=brave.transport, environment={"BRAVE_API_KEY": KEY})
    assert "needs api.search.brave.com" in err(await run("search_web", {"query": "x"}, Capabilities.files(root)))
    elsewhere = Capabilities.network("example.com")
    assert "CapabilityDeniedError" in err(await run("search_web", {"query": "x"}, elsewhere))
    assert brave.sent == []
    keyless = make_runner(search_transport=brave.transport, environment={})
    text = err(await keyless("search_web", {"query": "x"}, BRAVE_GRANT))
    assert "CapabilityMissingError" in text
    assert "BRAVE_API_KEY" in text


async def test_search_web_bad_arguments(make_runner: Callable[..., Any]) -> None:
    brave = Brave()
    run = make_runner(search_transport=brave.transport, environment={"BRAVE_API_KEY": KEY})
    assert "Argument 'count' must be at most 20" in err(
        await run("search_web", {"query": "x", "count": 21}, BRAVE_GRANT)
    )
    assert "query is empty" in err(await run("search_web", {"query": "  "}, BRAVE_GRANT))
    assert "400 characters" in err(await run("search_web", {"query": "x" * 401}, BRAVE_GRANT))
    assert "400 characters" in err(await run("search_web", {"query": "w " * 51}, BRAVE_GRANT))
    assert "Argument 'count'" in err(await run("search_web", {"query": "x", "count": "3"}, BRAVE_GRANT))
    assert brave.sent == []


async def test_search_web_no_results(make_runner: Callable[..., Any]) -> None:
    brave = Brave(body=b'{"type": "search", "query": {"original": "zzz"}}')
    run = make_runner(search_transport=brave.transport, environment={"BRAVE_API_KEY": KEY})
    assert ok(await run("search_web", {"query": "zzz"}, BRAVE_GRANT)) == "No results for 'zzz'."
