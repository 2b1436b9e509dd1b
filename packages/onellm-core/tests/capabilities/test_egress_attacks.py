"""Hostile URLs against the egress check: spellings of private addresses, hosts the IDNA codec rejects, and redirects
to either. Each is refused typed, or the only address dialled is one the grant allows."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpcore
import pytest

from onellm import Capabilities, CapabilityDeniedError, EgressClient
from onellm.capabilities._network import is_public, parse_address

PUBLIC = "93.184.216.34"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Dialled(Exception):
    pass


class _Recording(httpcore.AsyncNetworkBackend):
    def __init__(self) -> None:
        self.dialled: list[str] = []

    async def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        self.dialled.append(host)
        raise _Dialled(host)

    async def sleep(self, seconds: float) -> None:
        return None


def _resolver(host: str) -> list[str]:
    # Every name answers with a public and a private address; only the public one may ever be dialled.
    return [PUBLIC, "127.0.0.1", "10.0.0.1", "169.254.169.254"]


HOSTILE = [
    "http://%31%32%37.0.0.1/",
    "http://127.0.0.1%2f/",
    "http://0x7f.1/",
    "http://0/",
    "http://017700000001/",
    "http://2130706433/",
    "http://127.1/",
    "http://[::]/",
    "http://[::1]:80/",
    "http://[::ffff:127.0.0.1]/",
    "http://[0:0:0:0:0:ffff:7f00:1]/",
    "http://[64:ff9b::127.0.0.1]/",
    "http://[2002:7f00:1::]/",
    "http://[fe80::1%25eth0]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://0.0.0.0:80/",
    "http://localhost./",
    "http://LOCALHOST/",
    "http://metadata.google.internal/",
    "http://user@127.0.0.1/",
    "http://127\u30020\u30020\u30021/",
    "http://\u2460\u2461\u2466.0.0.1/",
    "http://xn--/",
    "http://xn--a.com/",
    "http://\u200b.com/",
]


@pytest.mark.anyio
@pytest.mark.parametrize("url", HOSTILE)
async def test_a_hostile_url_is_refused_or_dials_only_a_public_address(url: str) -> None:
    backend = _Recording()
    refused: CapabilityDeniedError | None = None
    async with EgressClient(Capabilities.any_public_hosts(), resolver=_resolver, network_backend=backend) as client:
        try:
            await client.get(url)
        except CapabilityDeniedError as exc:
            refused = exc
        except _Dialled:
            pass
    if refused is not None:
        assert refused.rule in ("host-not-granted", "bad-url", "address-not-allowed", "scheme"), str(refused)
    for address in backend.dialled:
        parsed = parse_address(address)
        assert parsed is not None, (url, address)
        assert is_public(parsed), (url, backend.dialled)


@pytest.mark.anyio
@pytest.mark.parametrize("url", ["http://xn--/", "http://xn--a.com/"])
async def test_a_host_the_idna_codec_rejects_is_a_typed_refusal(url: str) -> None:
    async with EgressClient(Capabilities.any_public_hosts(), resolver=_resolver, network_backend=_Recording()) as c:
        with pytest.raises(CapabilityDeniedError) as info:
            await c.get(url)
    assert info.value.rule == "bad-url"


class _Redirect(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", self.path.split("to=", 1)[1])
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture(scope="module")
def redirector() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("location", "rule"),
    [
        ("http://xn--a.com/", "redirect"),
        ("http://169.254.169.254/", "host-not-granted"),
        ("http://[::ffff:169.254.169.254]/", "host-not-granted"),
        ("http://0x7f.1/", "host-not-granted"),
        ("file:///etc/passwd", "scheme"),
    ],
)
async def test_a_redirect_to_a_hostile_location_is_refused_typed(redirector: str, location: str, rule: str) -> None:
    async with EgressClient(Capabilities.network("127.0.0.1:" + redirector.rsplit(":", 1)[1])) as client:
        with pytest.raises(CapabilityDeniedError) as info:
            await client.get(f"{redirector}/r?to={location}")
    assert info.value.rule == rule
