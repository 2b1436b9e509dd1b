"""The network grant and `EgressClient`: URLs checked before sending, addresses checked when the connection opens
(with a fake resolver), and redirects followed by hand against a loopback server."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpcore
import httpx
import pytest

from onellm import Capabilities, CapabilityDeniedError, EgressClient
from onellm.capabilities import NetworkEntry
from onellm.capabilities._network import embedded_ipv4, is_loopback, is_public, parse_address

PUBLIC = "93.184.216.34"


class Dialled(Exception):
    """Raised by the fake backend instead of connecting: the guard let this address through."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(f"{host}:{port}")
        self.host = host
        self.port = port


class RecordingBackend(httpcore.AsyncNetworkBackend):
    """Dials nothing: records the checked address, then either refuses or connects to a loopback server."""

    def __init__(self, forward_port: int | None = None) -> None:
        self.dialled: list[tuple[str, int]] = []
        self.forward_port = forward_port
        self.inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.dialled.append((host, port))
        if self.forward_port is None:
            raise Dialled(host, port)
        return await self.inner.connect_tcp("127.0.0.1", self.forward_port, timeout=timeout)

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class FakeResolver:
    def __init__(self, table: dict[str, list[str]] | None = None, default: Sequence[str] = (PUBLIC,)) -> None:
        self.table = table or {}
        self.default = list(default)
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        return self.table.get(host, self.default)


NAMES = Capabilities.network("api.example.com", "*.docs.example.com", "svc.example.com:8443")
ANY = Capabilities.any_public_hosts()
LOCAL = Capabilities.network("localhost")
ADDRS = Capabilities.network("10.0.0.5", "192.168.1.0/24", "[fd00::1]:8080", "127.0.0.1")
NONE = Capabilities.files()

REFUSED_HOST = {"host-not-granted", "scheme", "bad-url"}

# (grants, url, addresses the name resolves to (None: the default public address), expected): expected is
# "dial <address>" when the connection is allowed, or the refusal rule.
URL_CASES: list[tuple[str, Capabilities, str, list[str] | None, str]] = [
    ("name", NAMES, "http://api.example.com/", None, f"dial {PUBLIC}"),
    ("name-https", NAMES, "https://api.example.com/x", None, f"dial {PUBLIC}"),
    ("name-case-dot", NAMES, "http://API.Example.COM./", None, f"dial {PUBLIC}"),
    ("name-other-port", NAMES, "http://api.example.com:8080/", None, f"dial {PUBLIC}"),
    ("rebind-loopback", NAMES, "http://api.example.com/", ["127.0.0.1"], "address-not-allowed"),
    ("rebind-10", NAMES, "http://api.example.com/", ["10.1.2.3"], "address-not-allowed"),
    ("rebind-192", NAMES, "http://api.example.com/", ["192.168.0.1"], "address-not-allowed"),
    ("rebind-172", NAMES, "http://api.example.com/", ["172.16.0.1"], "address-not-allowed"),
    ("rebind-metadata", NAMES, "http://api.example.com/", ["169.254.169.254"], "address-not-allowed"),
    ("rebind-v6-loopback", NAMES, "http://api.example.com/", ["::1"], "address-not-allowed"),
    ("rebind-mapped", NAMES, "http://api.example.com/", ["::ffff:127.0.0.1"], "address-not-allowed"),
    ("rebind-mapped-10", NAMES, "http://api.example.com/", ["::ffff:10.0.0.1"], "address-not-allowed"),
    ("rebind-nat64", NAMES, "http://api.example.com/", ["64:ff9b::7f00:1"], "address-not-allowed"),
    ("rebind-nat64-10", NAMES, "http://api.example.com/", ["64:ff9b::a00:1"], "address-not-allowed"),
    ("rebind-nat64-local", NAMES, "http://api.example.com/", ["64:ff9b:1::808:808"], "address-not-allowed"),
    ("rebind-6to4", NAMES, "http://api.example.com/", ["2002:7f00:1::"], "address-not-allowed"),
    ("rebind-6to4-192", NAMES, "http://api.example.com/", ["2002:c0a8:101::1"], "address-not-allowed"),
    ("rebind-compat", NAMES, "http://api.example.com/", ["::127.0.0.1"], "address-not-allowed"),
    ("rebind-translated", NAMES, "http://api.example.com/", ["::ffff:0:127.0.0.1"], "address-not-allowed"),
    ("rebind-link-local6", NAMES, "http://api.example.com/", ["fe80::1"], "address-not-allowed"),
    ("rebind-ula", NAMES, "http://api.example.com/", ["fd12:3456::1"], "address-not-allowed"),
    ("rebind-site-local", NAMES, "http://api.example.com/", ["fec0::1"], "address-not-allowed"),
    ("rebind-zero", NAMES, "http://api.example.com/", ["0.0.0.0"], "address-not-allowed"),
    ("rebind-cgnat", NAMES, "http://api.example.com/", ["100.64.0.1"], "address-not-allowed"),
    ("rebind-multicast", NAMES, "http://api.example.com/", ["224.0.0.1"], "address-not-allowed"),
    ("rebind-broadcast", NAMES, "http://api.example.com/", ["255.255.255.255"], "address-not-allowed"),
    ("rebind-doc6", NAMES, "http://api.example.com/", ["2001:db8::1"], "address-not-allowed"),
    (
        "rebind-teredo",
        NAMES,
        "http://api.example.com/",
        ["2001:0:4136:e378:8000:63bf:3fff:fdd2"],
        "address-not-allowed",
    ),
    ("rebind-unspecified6", NAMES, "http://api.example.com/", ["::"], "address-not-allowed"),
    ("no-address", NAMES, "http://api.example.com/", [], "address-not-allowed"),
    ("mixed-skips-private", NAMES, "http://api.example.com/", ["127.0.0.1", PUBLIC], f"dial {PUBLIC}"),
    ("public-v6", NAMES, "http://api.example.com/", ["2606:4700::1111"], "dial 2606:4700::1111"),
    ("public-mapped", NAMES, "http://api.example.com/", ["::ffff:8.8.8.8"], "dial ::ffff:8.8.8.8"),
    ("public-nat64", NAMES, "http://api.example.com/", ["64:ff9b::808:808"], "dial 64:ff9b::808:808"),
    ("suffix", NAMES, "http://www.docs.example.com/", None, f"dial {PUBLIC}"),
    ("suffix-deep", NAMES, "http://a.b.docs.example.com/", None, f"dial {PUBLIC}"),
    ("suffix-rebind", NAMES, "http://x.docs.example.com/", ["10.0.0.1"], "address-not-allowed"),
    ("suffix-apex", NAMES, "http://docs.example.com/", None, "host-not-granted"),
    ("suffix-glued", NAMES, "http://evildocs.example.com/", None, "host-not-granted"),
    ("suffix-as-prefix", NAMES, "http://docs.example.com.evil.com/", None, "host-not-granted"),
    ("name-as-prefix", NAMES, "http://api.example.com.evil.com/", None, "host-not-granted"),
    ("name-in-query", NAMES, "http://evil.com/?api.example.com", None, "host-not-granted"),
    ("name-as-userinfo", NAMES, "http://api.example.com@evil.com/", None, "host-not-granted"),
    ("name-sub", NAMES, "http://x.api.example.com/", None, "host-not-granted"),
    ("port-entry", NAMES, "http://svc.example.com:8443/", None, f"dial {PUBLIC}"),
    ("port-entry-default", NAMES, "https://svc.example.com/", None, "host-not-granted"),
    ("port-entry-other", NAMES, "http://svc.example.com:8444/", None, "host-not-granted"),
    ("names-literal", NAMES, "http://127.0.0.1/", None, "host-not-granted"),
    ("names-decimal", NAMES, "http://2130706433/", None, "host-not-granted"),
    ("names-v6-literal", NAMES, "http://[::1]/", None, "host-not-granted"),
    ("names-localhost", NAMES, "http://localhost/", None, "host-not-granted"),
    ("scheme-ftp", NAMES, "ftp://api.example.com/", None, "scheme"),
    ("scheme-file", NAMES, "file:///etc/passwd", None, "scheme"),
    ("scheme-gopher", NAMES, "gopher://api.example.com/", None, "scheme"),
    ("public", ANY, "http://example.org/", None, f"dial {PUBLIC}"),
    ("public-rebind", ANY, "http://example.org/", ["127.0.0.1"], "address-not-allowed"),
    ("public-rebind-10", ANY, "http://example.org/", ["10.0.0.1"], "address-not-allowed"),
    ("public-rebind-mapped", ANY, "http://example.org/", ["::ffff:192.168.0.1"], "address-not-allowed"),
    ("public-literal", ANY, "http://8.8.8.8/", None, "dial 8.8.8.8"),
    ("public-literal-v6", ANY, "http://[2606:4700::1111]/", None, "dial 2606:4700::1111"),
    ("public-loopback-literal", ANY, "http://127.0.0.1/", None, "host-not-granted"),
    ("public-hex", ANY, "http://0x7f.1/", None, "host-not-granted"),
    ("public-octal", ANY, "http://0177.0.0.1/", None, "bad-url"),
    ("public-short", ANY, "http://127.1/", None, "host-not-granted"),
    ("public-decimal", ANY, "http://2130706433/", None, "host-not-granted"),
    ("public-mapped-literal", ANY, "http://[::ffff:127.0.0.1]/", None, "host-not-granted"),
    ("public-nat64-literal", ANY, "http://[64:ff9b::7f00:1]/", None, "host-not-granted"),
    ("public-metadata", ANY, "http://169.254.169.254/latest/meta-data", None, "host-not-granted"),
    ("public-zero", ANY, "http://0.0.0.0:8080/", None, "host-not-granted"),
    ("public-localhost", ANY, "http://localhost/", ["127.0.0.1"], "address-not-allowed"),
    ("public-private-literal", ANY, "http://192.168.1.1/", None, "host-not-granted"),
    ("local-name", LOCAL, "http://localhost:8080/", ["127.0.0.1"], "dial 127.0.0.1"),
    ("local-name-v6", LOCAL, "http://localhost/", ["::1"], "dial ::1"),
    ("local-name-elsewhere", LOCAL, "http://localhost/", [PUBLIC], "address-not-allowed"),
    ("local-literal", LOCAL, "http://127.0.0.1:9/", None, "dial 127.0.0.1"),
    ("local-literal-v6", LOCAL, "http://[::1]/", None, "dial ::1"),
    ("local-127-2", LOCAL, "http://127.0.0.2/", None, "dial 127.0.0.2"),
    ("local-sub", LOCAL, "http://app.localhost/", ["127.0.0.1"], "dial 127.0.0.1"),
    ("local-private", LOCAL, "http://10.0.0.1/", None, "host-not-granted"),
    ("local-public", LOCAL, "http://example.com/", None, "host-not-granted"),
    ("addr", ADDRS, "http://10.0.0.5/", None, "dial 10.0.0.5"),
    ("addr-other", ADDRS, "http://10.0.0.6/", None, "host-not-granted"),
    ("cidr", ADDRS, "http://192.168.1.77/", None, "dial 192.168.1.77"),
    ("cidr-outside", ADDRS, "http://192.168.2.1/", None, "host-not-granted"),
    ("addr6-port", ADDRS, "http://[fd00::1]:8080/", None, "dial fd00::1"),
    ("addr6-other-port", ADDRS, "http://[fd00::1]:8081/", None, "host-not-granted"),
    ("addr-mapped", ADDRS, "http://[::ffff:10.0.0.5]/", None, "dial ::ffff:10.0.0.5"),
    ("addr-loopback", ADDRS, "http://127.0.0.1:5000/", None, "dial 127.0.0.1"),
    ("addr-name", ADDRS, "http://internal.corp/", ["10.0.0.5"], "host-not-granted"),
    ("off", NONE, "http://example.com/", None, "network-off"),
]


def test_the_suite_is_large_enough() -> None:
    assert len(URL_CASES) >= 80


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("grants", "url", "addresses", "expected"), [c[1:] for c in URL_CASES], ids=[c[0] for c in URL_CASES]
)
async def test_url_case(grants: Capabilities, url: str, addresses: list[str] | None, expected: str) -> None:
    backend = RecordingBackend()
    try:
        host = httpx.URL(url).host
    except httpx.InvalidURL:
        host = ""
    resolver = FakeResolver({host: addresses} if addresses is not None else {})
    async with EgressClient(grants, resolver=resolver, network_backend=backend) as client:
        if expected.startswith("dial "):
            with pytest.raises(Dialled) as dialled:
                await client.get(url)
            assert parse_address(dialled.value.host) == parse_address(expected[5:])
        else:
            with pytest.raises(CapabilityDeniedError) as info:
                await client.get(url)
            assert info.value.rule == expected, str(info.value)
            assert backend.dialled == []
            if expected in REFUSED_HOST | {"network-off"}:
                assert resolver.asked == [], "a refused host must not even be resolved"


# ------------------------------------------------------------------------------------------ pure checks and entries


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("api.example.com", NetworkEntry("name", "api.example.com")),
        ("API.example.com.", NetworkEntry("name", "api.example.com")),
        ("*.example.com", NetworkEntry("suffix", "example.com")),
        ("api.example.com:8443", NetworkEntry("name", "api.example.com", 8443)),
        ("10.0.0.5", NetworkEntry("address", "10.0.0.5/32")),
        ("10.0.0.0/8", NetworkEntry("address", "10.0.0.0/8")),
        ("10.1.2.3/8", NetworkEntry("address", "10.0.0.0/8")),
        ("::1", NetworkEntry("address", "::1/128")),
        ("[::1]:8080", NetworkEntry("address", "::1/128", 8080)),
        ("fd00::/8", NetworkEntry("address", "fd00::/8")),
        ("localhost", NetworkEntry("localhost", "localhost")),
        ("localhost:3000", NetworkEntry("localhost", "localhost", 3000)),
        ("bücher.example", NetworkEntry("name", "xn--bcher-kva.example")),
    ],
)
def test_entry_forms(text: str, expected: NetworkEntry) -> None:
    assert NetworkEntry.parse(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "http://api.example.com",
        "user@host",
        "*",
        "a.*.example.com",
        "*example.com",
        "host:0",
        "host:99999",
        "host:x",
        "[::1",
        "bad host",
        "10.0.0.0/33",
        "0x7f.1",
    ],
)
def test_bad_entries_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        Capabilities.network(text)


@pytest.mark.parametrize(
    ("address", "embedded"),
    [
        ("::ffff:127.0.0.1", "127.0.0.1"),
        ("::127.0.0.1", "127.0.0.1"),
        ("::ffff:0:127.0.0.1", "127.0.0.1"),
        ("64:ff9b::7f00:1", "127.0.0.1"),
        ("2002:7f00:1::", "127.0.0.1"),
        ("2002:a00:1:1::5", "10.0.0.1"),
    ],
)
def test_ipv6_forms_that_carry_ipv4(address: str, embedded: str) -> None:
    parsed = parse_address(address)
    assert parsed is not None
    assert parsed.version == 6
    assert embedded in {str(a) for a in embedded_ipv4(parsed)}  # type: ignore[arg-type]
    assert not is_public(parsed)


def test_loopback_classification_sees_through_embedding() -> None:
    for text in ("127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::"):
        addr = parse_address(text)
        assert addr is not None
        assert is_loopback(addr), text
    for text in ("8.8.8.8", "::ffff:8.8.8.8", "10.0.0.1"):
        addr = parse_address(text)
        assert addr is not None
        assert not is_loopback(addr), text


def test_allows_connection_is_the_address_check() -> None:
    assert NAMES.allows_connection("api.example.com", 443, PUBLIC)
    assert not NAMES.allows_connection("api.example.com", 443, "127.0.0.1")
    assert not NAMES.allows_connection("evil.com", 443, PUBLIC)
    assert LOCAL.allows_connection("localhost", 80, "::1")
    assert not LOCAL.allows_connection("localhost", 80, "10.0.0.1")
    assert ADDRS.allows_connection("10.0.0.5", 80, "10.0.0.5")
    assert not ADDRS.allows_connection("10.0.0.5", 80, "10.0.0.6"), "a literal host dials only itself"
    assert not ADDRS.allows_connection("internal.corp", 80, "10.0.0.5")
    assert ANY.allows_connection("anything.example", 80, PUBLIC)
    assert not ANY.allows_connection("anything.example", 80, "not an address")
    assert not NONE.allows_connection("example.com", 80, PUBLIC)
    internal = Capabilities.network("api.internal", "10.0.0.0/8", "localhost:3000")
    assert internal.allows_connection("api.internal", 80, "10.1.2.3")
    assert internal.allows_connection("api.internal", 80, PUBLIC)
    assert not internal.allows_connection("api.internal", 80, "192.168.0.1")
    assert internal.allows_connection("api.internal", 3000, "127.0.0.1")
    assert not internal.allows_connection("api.internal", 80, "127.0.0.1")
    assert not internal.allows_connection("other.internal", 80, "10.1.2.3"), "the host must be granted too"


def test_intersection_never_reaches_a_kind_of_address_one_side_lacks() -> None:
    both = ANY.intersect(LOCAL)
    assert not both.network_enabled
    assert not both.allows_connection("localhost", 80, "127.0.0.1")
    mixed = ANY.intersect(Capabilities.network("api.example.com", "10.0.0.0/8", "localhost"))
    assert mixed.network_grant.entries == {NetworkEntry("name", "api.example.com")}
    assert not mixed.network_grant.any_public
    narrowed = NAMES.intersect(Capabilities.network("*.example.com"))
    assert narrowed.allows_connection("api.example.com", 80, PUBLIC)
    assert narrowed.allows_connection("x.docs.example.com", 80, PUBLIC)
    assert not narrowed.allows_connection("other.example.com", 80, PUBLIC)
    cidr = Capabilities.network("10.0.0.0/8").intersect(Capabilities.network("10.1.0.0/16", "192.168.0.0/16"))
    assert {str(e) for e in cidr.network_grant.entries} == {"10.1.0.0/16"}
    ports = Capabilities.network("a.example:80").intersect(Capabilities.network("a.example:81"))
    assert not ports.network_enabled
    assert ANY.intersect(ANY).network_grant.any_public


def test_union_adds_entries() -> None:
    union = NAMES + LOCAL
    assert union.allows_connection("localhost", 80, "127.0.0.1")
    assert union.allows_connection("api.example.com", 80, PUBLIC)
    assert (NAMES + ANY).allows_connection("whatever.example", 80, PUBLIC)


# ---------------------------------------------------------------------------------------- loopback server: redirects


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.server.seen.append(
            {"method": self.command, "path": parts.path, "headers": dict(self.headers), "body": body}
        )
        if parts.path == "/loop":
            query = {"status": "302", "to": "/loop"}
        if parts.path in ("/redirect", "/loop"):
            self.send_response(int(query.get("status", "302")))
            self.send_header("Location", query["to"])
            self.send_header("Set-Cookie", "session=abc; Path=/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        payload = json.dumps(
            {
                "method": self.command,
                "path": parts.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode("latin-1"),
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    seen: list[dict[str, Any]]


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[_Server, _Server]]:
    started: list[_Server] = []
    for _ in range(2):
        server = _Server(("127.0.0.1", 0), _Handler)
        server.seen = []
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
    yield started[0], started[1]
    for server in started:
        server.shutdown()
        server.server_close()


@pytest.fixture
def origins(servers: tuple[_Server, _Server]) -> tuple[str, str]:
    for server in servers:
        server.seen.clear()
    return (f"http://127.0.0.1:{servers[0].server_port}", f"http://127.0.0.1:{servers[1].server_port}")


LOOPBACK = Capabilities.network("127.0.0.1")


@pytest.mark.anyio
async def test_loopback_request_under_an_address_entry(origins: tuple[str, str]) -> None:
    async with EgressClient(LOOPBACK) as client:
        response = await client.get(f"{origins[0]}/echo")
    assert response.status_code == 200
    assert response.json()["method"] == "GET"


@pytest.mark.anyio
async def test_loopback_refused_for_a_name_that_resolves_there(origins: tuple[str, str]) -> None:
    port = origins[0].rsplit(":", 1)[1]
    grants = Capabilities.network("api.test")
    resolver = FakeResolver({"api.test": ["127.0.0.1"]})
    async with EgressClient(grants, resolver=resolver) as client:
        with pytest.raises(CapabilityDeniedError) as info:
            await client.get(f"http://api.test:{port}/echo")
    assert info.value.rule == "address-not-allowed"
    assert resolver.asked == ["api.test"]


@pytest.mark.anyio
async def test_dns_rebinding_between_requests_fails(origins: tuple[str, str]) -> None:
    """The first lookup answers a public address, the second a loopback one: the second connection is refused."""
    port = int(origins[0].rsplit(":", 1)[1])
    answers = iter([[PUBLIC], ["127.0.0.1"]])

    async def resolver(host: str, p: int) -> list[str]:
        return next(answers)

    backend = RecordingBackend(forward_port=port)
    grants = Capabilities.network("api.example.com")
    async with EgressClient(grants, resolver=resolver, network_backend=backend) as first:
        assert (await first.get("http://api.example.com/echo")).status_code == 200
    async with EgressClient(grants, resolver=resolver, network_backend=backend) as second:
        with pytest.raises(CapabilityDeniedError):
            await second.get("http://api.example.com/echo")
    assert backend.dialled == [(PUBLIC, 80)]


@pytest.mark.anyio
async def test_same_origin_redirect_keeps_headers(origins: tuple[str, str]) -> None:
    a, _ = origins
    async with EgressClient(LOOPBACK) as client:
        response = await client.get(
            f"{a}/redirect?status=302&to=/echo", headers={"Authorization": "Bearer t", "X-Custom": "1"}
        )
    echoed = response.json()
    assert echoed["path"] == "/echo"
    assert echoed["headers"]["authorization"] == "Bearer t"
    assert echoed["headers"]["x-custom"] == "1"


@pytest.mark.anyio
async def test_cross_origin_redirect_drops_caller_headers(origins: tuple[str, str]) -> None:
    a, b = origins
    headers = {
        "Authorization": "Bearer t",
        "Cookie": "c=1",
        "X-Api-Key": "k",
        "Accept": "application/json",
        "Accept-Language": "en",
        "User-Agent": "tester",
    }
    async with EgressClient(LOOPBACK) as client:
        response = await client.get(f"{a}/redirect?status=302&to={b}/echo", headers=headers)
    echoed = response.json()["headers"]
    assert "authorization" not in echoed
    assert "cookie" not in echoed
    assert "x-api-key" not in echoed
    assert echoed["accept"] == "application/json"
    assert echoed["accept-language"] == "en"
    assert echoed["user-agent"] == "tester"


@pytest.mark.anyio
async def test_redirect_to_an_ungranted_host_is_refused_before_it_is_requested(origins: tuple[str, str]) -> None:
    a, _ = origins
    resolver = FakeResolver()
    async with EgressClient(LOOPBACK, resolver=resolver) as client:
        for target in ("http://evil.example/", "http://127.0.0.2/", "http://[::1]/", "file:///etc/passwd"):
            with pytest.raises(CapabilityDeniedError) as info:
                await client.get(f"{a}/redirect?status=302&to={target}")
            assert info.value.rule in ("host-not-granted", "scheme")
    assert resolver.asked == []


@pytest.mark.anyio
async def test_redirect_to_a_name_resolving_to_loopback_is_refused(origins: tuple[str, str]) -> None:
    a, b = origins
    port_a = a.rsplit(":", 1)[1]
    port = b.rsplit(":", 1)[1]
    grants = Capabilities.network(f"127.0.0.1:{port_a}", "api.test")
    async with EgressClient(grants, resolver=FakeResolver({"api.test": ["127.0.0.1"]})) as client:
        with pytest.raises(CapabilityDeniedError) as info:
            await client.get(f"{a}/redirect?status=302&to=http://api.test:{port}/echo")
    assert info.value.rule == "address-not-allowed"


@pytest.mark.anyio
async def test_a_name_reaches_a_private_address_only_when_an_address_entry_grants_it(origins: tuple[str, str]) -> None:
    _, b = origins
    port = b.rsplit(":", 1)[1]
    resolver = FakeResolver({"svc.internal": ["127.0.0.1"]})
    async with EgressClient(Capabilities.network("svc.internal"), resolver=resolver) as client:
        with pytest.raises(CapabilityDeniedError):
            await client.get(f"http://svc.internal:{port}/echo")
    granted = Capabilities.network("svc.internal", f"127.0.0.1:{port}")
    async with EgressClient(granted, resolver=resolver) as client:
        response = await client.get(f"http://svc.internal:{port}/echo")
    assert response.json()["headers"]["host"] == f"svc.internal:{port}"


@pytest.mark.anyio
async def test_303_turns_post_into_get(origins: tuple[str, str], servers: tuple[_Server, _Server]) -> None:
    a, _ = origins
    async with EgressClient(LOOPBACK) as client:
        response = await client.post(f"{a}/redirect?status=303&to=/echo", content=b"payload")
    echoed = response.json()
    assert echoed["method"] == "GET"
    assert echoed["body"] == ""


@pytest.mark.anyio
@pytest.mark.parametrize("status", [307, 308])
async def test_307_308_keep_the_body_on_the_same_origin(origins: tuple[str, str], status: int) -> None:
    a, _ = origins
    async with EgressClient(LOOPBACK) as client:
        response = await client.post(f"{a}/redirect?status={status}&to=/echo", content=b"payload")
    assert response.json()["method"] == "POST"
    assert response.json()["body"] == "payload"


@pytest.mark.anyio
@pytest.mark.parametrize("status", [307, 308])
async def test_307_308_with_a_body_are_refused_across_origins(
    origins: tuple[str, str], servers: tuple[_Server, _Server], status: int
) -> None:
    a, b = origins
    async with EgressClient(LOOPBACK) as client:
        with pytest.raises(CapabilityDeniedError) as info:
            await client.post(f"{a}/redirect?status={status}&to={b}/echo", content=b"payload")
        assert info.value.rule == "redirect-body"
        assert servers[1].seen == []
        response = await client.get(f"{a}/redirect?status={status}&to={b}/echo")
    assert response.json()["method"] == "GET"


@pytest.mark.anyio
async def test_redirect_loops_stop(origins: tuple[str, str]) -> None:
    a, _ = origins
    async with EgressClient(LOOPBACK, max_redirects=3) as client:
        with pytest.raises(httpx.TooManyRedirects):
            await client.get(f"{a}/loop")


@pytest.mark.anyio
async def test_system_proxies_are_not_used(origins: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with EgressClient(LOOPBACK) as client:
        response = await client.get(f"{origins[0]}/echo")
    assert response.status_code == 200


@pytest.mark.anyio
async def test_cookies_are_never_kept(origins: tuple[str, str], servers: tuple[_Server, _Server]) -> None:
    a, _ = origins
    async with EgressClient(LOOPBACK) as client:
        await client.get(f"{a}/redirect?status=302&to=/echo")
        response = await client.get(f"{a}/echo")
    assert "cookie" not in response.json()["headers"]


@pytest.mark.anyio
async def test_a_caller_host_header_is_ignored(origins: tuple[str, str]) -> None:
    async with EgressClient(LOOPBACK) as client:
        response = await client.get(f"{origins[0]}/echo", headers={"Host": "internal.admin"})
    assert response.json()["headers"]["host"] == origins[0].removeprefix("http://")


@pytest.mark.anyio
async def test_streaming_response(origins: tuple[str, str]) -> None:
    async with EgressClient(LOOPBACK) as client, client.stream("GET", f"{origins[0]}/echo") as response:
        chunks = [chunk async for chunk in response.aiter_bytes()]
    assert json.loads(b"".join(chunks))["path"] == "/echo"


@pytest.mark.anyio
async def test_one_pool_per_network_policy() -> None:
    first = EgressClient.shared(Capabilities.network("a.example", "b.example"))
    same = EgressClient.shared(Capabilities.network("b.example", "a.example") + Capabilities.files())
    other = EgressClient.shared(Capabilities.network("a.example"))
    wider = EgressClient.shared(Capabilities.network("a.example", "b.example", "localhost"))
    assert first is same
    assert first is not other
    assert first is not wider
    for client in (first, other, wider):
        await client.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("status", [301, 302])
async def test_301_302_after_post_continue_as_get(origins: tuple[str, str], status: int) -> None:
    a, _ = origins
    async with EgressClient(LOOPBACK) as client:
        response = await client.post(f"{a}/redirect?status={status}&to=/echo", json={"k": 1})
    echoed = response.json()
    assert echoed["method"] == "GET"
    assert echoed["body"] == ""
    assert "content-type" not in echoed["headers"]


@pytest.mark.anyio
async def test_json_body_and_head_through_303(origins: tuple[str, str]) -> None:
    a, _ = origins
    async with EgressClient(LOOPBACK) as client:
        posted = await client.post(f"{a}/echo", json={"k": [1, 2]})
        head = await client.request("HEAD", f"{a}/redirect?status=303&to=/echo")
    assert posted.json()["body"] == '{"k":[1,2]}'
    assert posted.json()["headers"]["content-type"] == "application/json"
    assert head.status_code == 200
    assert head.request.method == "HEAD"


def test_invalid_hosts_are_not_allowed() -> None:
    assert not NAMES.allows_host("", 80)
    assert not NAMES.allows_connection("bad host", 80, PUBLIC)
    assert not ANY.allows_connection("example.org", 80, "")


@pytest.mark.anyio
async def test_a_plain_resolver_taking_only_the_host_works() -> None:
    backend = RecordingBackend()
    async with EgressClient(NAMES, resolver=lambda host: ["127.0.0.1", PUBLIC], network_backend=backend) as client:
        with pytest.raises(Dialled) as dialled:
            await client.get("http://api.example.com/")
    assert dialled.value.host == PUBLIC


def test_every_ipv4_embedding_is_judged_like_the_ipv4_address() -> None:
    import ipaddress
    import random

    rng = random.Random(7)
    special = [int(ipaddress.IPv4Address(a)) for a in ("127.0.0.1", "10.0.0.1", "169.254.1.1", "8.8.8.8", "0.0.0.0")]
    for value in special + [rng.getrandbits(32) for _ in range(3000)]:
        v4 = ipaddress.IPv4Address(value)
        forms = [
            ipaddress.IPv6Address((0xFFFF << 32) | value),  # ::ffff:a.b.c.d
            ipaddress.IPv6Address((0xFFFF << 48) | value),  # ::ffff:0:a.b.c.d
            ipaddress.IPv6Address((0x0064FF9B << 96) | value),  # 64:ff9b::a.b.c.d
            ipaddress.IPv6Address((0x2002 << 112) | (value << 80)),  # 2002:aabb:ccdd::
        ]
        for form in forms:
            assert is_public(form) == is_public(v4), (form, v4)
            assert is_loopback(form) == is_loopback(v4), (form, v4)
        compat = ipaddress.IPv6Address(value)  # ::a.b.c.d is never public
        assert not is_public(compat)


@pytest.mark.anyio
async def test_a_name_that_does_not_resolve_is_a_connect_error() -> None:
    """A failed lookup surfaces as httpx reports its own (`httpx.ConnectError`), never as a raw `socket.gaierror`."""

    async def resolver(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    async with EgressClient(Capabilities.network("nowhere.example"), resolver=resolver) as client:
        with pytest.raises(httpx.ConnectError, match=r"cannot resolve nowhere\.example"):
            await client.get("http://nowhere.example/")
