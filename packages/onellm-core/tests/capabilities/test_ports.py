"""Ports outside 1-65535 are refused, typed, where a URL or an entry is checked: grant parsing, the egress check
before anything is sent (first request and every redirect hop), the pure checks, and the tools that take a URL.

Such a port used to pass the check and fail later, when the connection was opened, as an untyped
`ExceptionGroup[OverflowError]`; port 0 was even checked as the scheme's default port and then dialled as 0.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpcore
import pytest

from onellm import Capabilities, CapabilityDeniedError, EgressClient
from onellm.capabilities import NetworkEntry
from onellm.tools import ToolContext
from onellm.tools.builtin import BuiltinOptions, builtin_tools

PUBLIC = "93.184.216.34"
BAD_PORTS = ["0", "65536", "70000", "99999999999999999999", "-1"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(
    "entry",
    [
        "api.example.com:0",
        "api.example.com:65536",
        "api.example.com:99999",
        "api.example.com:-1",
        "api.example.com:\u00b2",  # a superscript two: str.isdigit says yes, int() says no
        "api.example.com:\u0668\u0660",  # Arabic-Indic 80: int() reads it, a URL never would
        "[::1]:70000",
        "[::1]:0",
        "10.0.0.1:65536",
        "localhost:0",
    ],
)
def test_an_entry_with_a_port_outside_the_range_is_refused_naming_it(entry: str) -> None:
    with pytest.raises(ValueError) as info:
        NetworkEntry.parse(entry)
    assert repr(entry) in str(info.value)
    assert "port" in str(info.value)


def test_the_range_ends_are_accepted() -> None:
    assert NetworkEntry.parse("api.example.com:1").port == 1
    assert NetworkEntry.parse("api.example.com:65535").port == 65535


@pytest.mark.parametrize("port", [0, -1, 65536, 70000, 2**64])
def test_the_pure_checks_refuse_a_port_outside_the_range(port: int) -> None:
    for grants in (Capabilities.any_public_hosts(), Capabilities.network("api.example.com", "10.0.0.0/8")):
        assert not grants.allows_host("api.example.com", port)
        assert not grants.allows_connection("api.example.com", port, PUBLIC)
        assert not grants.network_grant.allows_host("10.1.2.3", port)
        assert not grants.network_grant.allows_connection("10.1.2.3", port, "10.1.2.3")


class _NeverDial(httpcore.AsyncNetworkBackend):
    def __init__(self) -> None:
        self.dialled: list[tuple[str, int]] = []

    async def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        self.dialled.append((host, port))
        raise AssertionError(f"dialled {host}:{port}")

    async def sleep(self, seconds: float) -> None:
        return None


@pytest.mark.anyio
@pytest.mark.parametrize("port", BAD_PORTS)
@pytest.mark.parametrize("host", ["api.example.com", "[2606:4700::1]", PUBLIC])
async def test_egress_refuses_the_port_before_anything_is_resolved_or_dialled(host: str, port: str) -> None:
    asked: list[str] = []

    def resolver(name: str) -> list[str]:
        asked.append(name)
        return [PUBLIC]

    backend = _NeverDial()
    grants = Capabilities.any_public_hosts() + Capabilities.network("api.example.com")
    async with EgressClient(grants, resolver=resolver, network_backend=backend) as client:
        url = f"http://{host}:{port}/x"
        with pytest.raises(CapabilityDeniedError) as info:
            await client.get(url)
        assert info.value.rule == "bad-url"
        assert "port" in str(info.value)
        with pytest.raises(CapabilityDeniedError):
            client.check_url(url)
    assert asked == []
    assert backend.dialled == []


@pytest.mark.anyio
async def test_egress_with_the_system_backend_fails_typed_not_with_an_exception_group() -> None:
    """The case as first reported: nothing fakes the dial, so an unchecked port reached the socket layer."""
    async with EgressClient(Capabilities.any_public_hosts(), resolver=lambda host: [PUBLIC]) as client:
        with pytest.raises(CapabilityDeniedError) as info:
            await client.get("https://api.example.com:70000/")
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
@pytest.mark.parametrize("port", ["70000", "0", "65536"])
async def test_a_redirect_to_a_port_outside_the_range_is_refused_before_it_is_requested(
    redirector: str, port: str
) -> None:
    grants = Capabilities.network("127.0.0.1")
    async with EgressClient(grants) as client:
        with pytest.raises(CapabilityDeniedError) as info:
            await client.get(f"{redirector}/r?to=http://127.0.0.1:{port}/")
    assert info.value.rule == "bad-url"


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["http_request", "read_file"])
async def test_the_tools_that_take_a_url_refuse_it_typed(tool: str) -> None:
    tools = {t.name: t for t in builtin_tools(BuiltinOptions())}
    ctx = ToolContext(capabilities=Capabilities.any_public_hosts(), working_directory=".")
    key = "url" if tool == "http_request" else "path"
    result = await tools[tool].invoke({key: "https://api.example.com:70000/x"}, ctx)
    assert result.is_error
    assert result.text.startswith(f"Tool '{tool}' failed: CapabilityDeniedError: Request to ")
    assert "port 70000 is outside 1-65535" in result.text


@pytest.mark.anyio
async def test_search_web_checks_its_endpoint_port_too() -> None:
    import httpx

    from onellm.errors import Secret

    def answer(request: httpx.Request) -> httpx.Response:
        raise AssertionError("nothing may be sent")

    options = BuiltinOptions(
        brave_api_key=Secret("k"),
        brave_endpoint="https://api.search.brave.com:70000/res/v1/web/search",
        search_transport=httpx.MockTransport(answer),
    )
    tools = {t.name: t for t in builtin_tools(options)}
    ctx = ToolContext(capabilities=Capabilities.any_public_hosts(), working_directory=".")
    result = await tools["search_web"].invoke({"query": "x"}, ctx)
    assert result.is_error
    assert "CapabilityDeniedError" in result.text
    assert "port 70000 is outside 1-65535" in result.text
