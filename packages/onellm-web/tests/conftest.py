"""A loopback server for the web tests, and egress clients that reach it under a public name.

The `public` fixture gives `WebOptions` whose egress client resolves names to a public address (a table sends a few
to private or loopback ones) and dials the loopback server instead, so pages are fetched under
`Capabilities.any_public_hosts()` exactly as a public site would be, with stable URLs. The grant's checks all run: a
loopback or private address, literal or resolved, is refused before anything is dialled.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpcore
import pytest

from onellm.capabilities import Capabilities, EgressClient
from onellm_web import WebOptions

PAGES = Path(__file__).resolve().parents[3] / "testdata" / "web" / "pages"
PUBLIC = "93.184.216.34"
"""The address every test name resolves to: a public address (the backend dials the loopback server instead)."""

BIG = 50 * 1024 * 1024
"""Bytes of the long bodies the server offers."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | Callable[[BaseHTTPRequestHandler], None] = b""


class Site:
    """What the server answers, by path, and what it was asked and sent."""

    def __init__(self) -> None:
        self.routes: dict[str, Answer] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.sent: dict[str, int] = {}
        self.answered: dict[str, threading.Event] = {}
        self.port = 0

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def paths(self) -> list[str]:
        return [path for _host, path, _headers in self.requests]

    def written(self, path: str, timeout: float = 30) -> int:
        """The bytes of `path`'s body the server wrote, once its handler has finished (the client may hang up first)."""
        assert self.answered[path].wait(timeout), f"the server is still answering {path}"
        return self.sent.get(path, 0)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        site = self.server.site
        site.requests.append((self.headers.get("Host", ""), self.path, {k.lower(): v for k, v in self.headers.items()}))
        path = self.path.split("?", 1)[0]
        done = site.answered.setdefault(path, threading.Event())
        try:
            self._answer(site, path)
        finally:
            done.set()

    def _answer(self, site: Site, path: str) -> None:
        answer = site.routes.get(path)
        if answer is None:
            answer = Answer(404, {"Content-Type": "text/html"}, b"<title>Not found</title><h1>Not found</h1>")
        self.send_response(answer.status)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if isinstance(answer.body, bytes):
            if "Content-Length" not in answer.headers:
                self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)
            return
        self.end_headers()
        try:
            answer.body(self)
        except (BrokenPipeError, ConnectionResetError):
            return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    site: Site


def stream(total: int, chunk: bytes, path: str) -> Callable[[BaseHTTPRequestHandler], None]:
    """A body of `total` bytes written `chunk` at a time, counting what was written before the client went away."""

    def write(handler: BaseHTTPRequestHandler) -> None:
        site: Site = handler.server.site  # type: ignore[attr-defined]
        site.sent[path] = 0
        while site.sent[path] < total:
            piece = chunk[: total - site.sent[path]]
            handler.wfile.write(piece)
            site.sent[path] += len(piece)

    return write


def drip(first: bytes, every: float, path: str) -> Callable[[BaseHTTPRequestHandler], None]:
    """Send `first`, then one byte every `every` seconds for at most ten seconds."""

    def write(handler: BaseHTTPRequestHandler) -> None:
        site: Site = handler.server.site  # type: ignore[attr-defined]
        handler.wfile.write(first)
        handler.wfile.flush()
        site.sent[path] = len(first)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            time.sleep(every)
            handler.wfile.write(b" ")
            handler.wfile.flush()
            site.sent[path] += 1

    return write


def gzip_bomb(size: int) -> bytes:
    """A gzip body that expands to `size` bytes of one repeated line of HTML (about 1,000 times smaller)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"<p>" + b"a" * 1020 + b"</p>\n"
    parts = [compressor.compress(b"<!doctype html><title>Bomb</title>")]
    written = 0
    while written < size:
        parts.append(compressor.compress(block * 1024))
        written += len(block) * 1024
    parts.append(compressor.flush())
    return b"".join(parts)


def _routes() -> dict[str, Answer]:
    html = {"Content-Type": "text/html; charset=utf-8"}
    routes: dict[str, Answer] = {}
    for folder in sorted(PAGES.iterdir()):
        # The pages say their own charset in a <meta> (or not at all): the header names none.
        routes[f"/pages/{folder.name}/"] = Answer(
            200, {"Content-Type": "text/html"}, (folder / "page.html").read_bytes()
        )
    sjis = (PAGES / "shift-jis" / "page.html").read_bytes()
    without_meta = sjis.replace(b'<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">', b"")
    assert without_meta != sjis
    routes["/sjis-header-only"] = Answer(200, {"Content-Type": "text/html; charset=Shift_JIS"}, without_meta)
    routes["/sjis-header-wins"] = Answer(
        200, {"Content-Type": "text/html; charset=shift_jis"}, sjis.replace(b"charset=Shift_JIS", b"charset=utf-8")
    )
    page = (PAGES / "news-article" / "page.html").read_bytes()
    routes["/gzip"] = Answer(200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}, gzip.compress(page))
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    routes["/deflate-raw"] = Answer(
        200,
        {"Content-Type": "text/html", "Content-Encoding": "deflate"},
        raw_deflate.compress(page) + raw_deflate.flush(),
    )
    routes["/deflate-zlib"] = Answer(
        200, {"Content-Type": "text/html", "Content-Encoding": "deflate"}, zlib.compress(page)
    )
    routes["/gzip-corrupt"] = Answer(
        200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}, gzip.compress(page)[:40] + b"\xff" * 64
    )
    routes["/brotli"] = Answer(200, {"Content-Type": "text/html", "Content-Encoding": "br"}, b"\x0b\x03\x80abc\x03")
    routes["/big-html"] = Answer(
        200,
        {"Content-Type": "text/html", "Content-Length": str(BIG)},
        stream(BIG, (b"<p>" + b"word " * 200 + b"</p>\n") * 64, "/big-html"),
    )
    routes["/big-text"] = Answer(
        200, {"Content-Type": "text/plain; charset=utf-8"}, stream(BIG, b"0123456789abcdef" * 4096, "/big-text")
    )
    routes["/gzip-bomb"] = Answer(200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}, gzip_bomb(BIG))
    routes["/slow"] = Answer(200, {"Content-Type": "text/html"}, drip(b"<title>Slow</title><p>first", 0.05, "/slow"))
    routes["/notes.txt"] = Answer(200, {"Content-Type": "text/plain; charset=utf-8"}, "Grüße\nline two\n".encode())
    routes["/data.json"] = Answer(200, {"Content-Type": "application/json"}, b'{"name": "caf\xc3\xa9", "n": 2}')
    routes["/feed.xml"] = Answer(
        200,
        {"Content-Type": "application/rss+xml"},
        b'<?xml version="1.0" encoding="ISO-8859-1"?><rss><channel><title>Caf\xe9 news</title></channel></rss>',
    )
    routes["/photo.png"] = Answer(200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n" + bytes(5000))
    routes["/report.pdf"] = Answer(
        200,
        {"Content-Type": "application/pdf", "Content-Length": str(BIG)},
        stream(BIG, b"%PDF-1.7 " + bytes(4096), "/report.pdf"),
    )
    routes["/no-type-binary"] = Answer(200, {}, b"\x7fELF\x02\x01\x01\x00" + bytes(300))
    routes["/no-type-html"] = Answer(200, {}, b"  <!DOCTYPE html><title>Untyped</title><p>Served without a type.</p>")
    routes["/mislabelled"] = Answer(200, {"Content-Type": "text/plain"}, b"GIF89a\x01\x00\x01\x00\x00\x00\x00;")
    routes["/utf16"] = Answer(200, {"Content-Type": "text/html"}, "<title>Wide</title><p>ütf-16 text".encode("utf-16"))
    routes["/gone"] = Answer(410, html, b"<h1>Gone</h1>")
    routes["/broken"] = Answer(503, html, b"<h1>Down for maintenance</h1>")
    routes["/not-modified"] = Answer(304, {}, b"")
    routes["/moved"] = Answer(301, {"Location": "/pages/docs-page/"}, b"")
    routes["/loop"] = Answer(302, {"Location": "/loop"}, b"")
    routes["/secret"] = Answer(200, {"Content-Type": "text/plain"}, b"internal only")
    return routes


@pytest.fixture(scope="session")
def site() -> Iterator[Site]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.site = Site()
    server.site.routes = _routes()
    server.site.port = port = server.server_address[1]
    for path, location in {
        "/to-loopback": f"http://127.0.0.1:{port}/secret",
        "/to-localhost": f"http://localhost:{port}/secret",
        "/to-mapped-loopback": f"http://[::ffff:127.0.0.1]:{port}/secret",
        "/to-private": "http://10.0.0.7/secret",
        "/to-metadata": "http://169.254.169.254/latest/meta-data/",
        "/to-intranet": "http://intranet.test/secret",
        "/to-rebind": "http://rebind.test/secret",
        "/to-file": "file:///etc/passwd",
        "/to-public": "http://docs.example-two.test/pages/docs-page/",
        "/hop-1": "/hop-2",
        "/hop-2": "http://www.other-site.test/to-private",
    }.items():
        server.site.routes[path] = Answer(302, {"Location": location}, b"")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.site
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def fresh(site: Site) -> Site:
    site.requests.clear()
    site.sent.clear()
    site.answered.clear()
    return site


class Forwarding(httpcore.AsyncNetworkBackend):
    """Dials the loopback server whatever address the guard allowed, and records the addresses."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.dialled: list[str] = []
        self.inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.dialled.append(host)
        return await self.inner.connect_tcp("127.0.0.1", self.port, timeout=timeout)

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class Names:
    """A resolver: every name is public unless the table says otherwise."""

    def __init__(self, table: dict[str, list[str]] | None = None) -> None:
        self.table = table or {}
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        return self.table.get(host, [PUBLIC])


@dataclass
class Public:
    options: WebOptions
    backend: Forwarding
    names: Names
    clients: list[EgressClient]

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()


@pytest.fixture
async def public(fresh: Site) -> Any:
    """`WebOptions` whose client reaches the loopback server under public names (see the module docstring)."""
    backend = Forwarding(fresh.port)
    names = Names({"intranet.test": ["10.20.30.40"], "rebind.test": ["127.0.0.1"], "localhost": ["127.0.0.1", "::1"]})
    clients: list[EgressClient] = []

    def factory(capabilities: Capabilities) -> EgressClient:
        client = EgressClient(capabilities, resolver=names, network_backend=backend)
        clients.append(client)
        return client

    made = Public(WebOptions(client_factory=factory), backend, names, clients)
    yield made
    await made.aclose()
