"""`ctx`: the double check (declared and granted), files through the grant's checked open, fetch through the egress
client, cost lines, logs, and a run that has ended acting no more."""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

from onellm.capabilities import Capabilities
from onellm.tools import ToolContext
from onellm_js import JsFailure, JsRunLimiter, JsSandbox, JsSandboxError, JsSandboxOptions, JsWorkerPool

pytestmark = pytest.mark.anyio


class _Server(ThreadingHTTPServer):
    arrivals: list[tuple[str, float]]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _answer(self, status: int, body: bytes, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.server.arrivals.append((self.path, time.monotonic()))
        if self.path == "/text":
            self._answer(200, "héllo".encode(), {"X-Test": "1"})
        elif self.path == "/big":
            self._answer(200, b"b" * 5000)
        elif self.path == "/slow":
            time.sleep(1.5)
            self._answer(200, b"late")
        elif self.path == "/away":
            self._answer(302, b"", {"Location": "http://localhost:9/elsewhere"})
        else:
            self._answer(404, b"none")

    def do_POST(self) -> None:
        self.server.arrivals.append((self.path, time.monotonic()))
        data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.dumps({"body": data.decode(), "header": self.headers.get("X-Token")}).encode()
        self._answer(201, body)


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.arrivals = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


def base(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


async def test_ids_come_from_the_call(sandbox: JsSandbox, make_context: Callable[..., ToolContext]) -> None:
    ctx = make_context(instance_id="inst-1", call_id="call-9")
    result = await sandbox.run_code("return [ctx.instanceId, ctx.toolCallId, Object.isFrozen(ctx)]", context=ctx)
    assert result.value == ["inst-1", "call-9", True]
    bare = await sandbox.run_code("return [ctx.instanceId, ctx.toolCallId]")
    assert bare.value == [None, None]


@pytest.mark.parametrize(
    ("call", "capability", "what"),
    [
        ("ctx.readFile('a.txt')", "fileRead", "reading files"),
        ("ctx.writeFile('b.txt', 'x')", "fileWrite", "writing files"),
        ("ctx.fetch('http://127.0.0.1:9/')", "network", "the network"),
    ],
)
async def test_every_function_checks_declared_and_granted(
    sandbox: JsSandbox, root: Path, call: str, capability: str, what: str
) -> None:
    (root / "a.txt").write_text("a")
    code = f"try {{ await {call}; return 'done' }} catch (e) {{ return e.name + ': ' + e.message }}"
    granted = ToolContext(
        capabilities=Capabilities.files(root) + Capabilities.network("127.0.0.1"), working_directory=root
    )
    refused = ToolContext(capabilities=Capabilities.none(), working_directory=root)
    name = call.split("(")[0]
    undeclared = await sandbox.run_code(code, context=granted, requires=[])
    assert undeclared.value == f"Error: {name} needs '{capability}' in the tool's requires list"
    ungranted = await sandbox.run_code(code, context=refused, requires=[capability])
    assert ungranted.value == f"Error: {name}: {what} is not available (the host granted no {capability})"
    no_context = await sandbox.run_code(code, requires=[capability])
    assert no_context.value == ungranted.value
    if capability != "network":
        both = await sandbox.run_code(code, context=granted, requires=[capability])
        assert both.value == "done"


async def test_files_go_through_the_grant(
    sandbox: JsSandbox, tmp_path: Path, root: Path, make_context: Callable[..., ToolContext]
) -> None:
    (tmp_path / "secret.txt").write_text("outside")
    (root / "in.txt").write_text("inside\n")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    (root / ".onellm").mkdir()
    (root / ".onellm" / "state.yaml").write_text("x")
    code = """
    const out = {};
    for (const p of ['in.txt', '../secret.txt', '/etc/hostname', 'link.txt', '.onellm/state.yaml', 'nope.txt', '.', 'in.txt/x']) {
      try { out[p] = await ctx.readFile(p) } catch (e) { out[p] = e.message }
    }
    await ctx.writeFile('deep/er/new.txt', 'written ✓');
    try { await ctx.writeFile('../escape.txt', 'x') } catch (e) { out.escape = e.message }
    try { await ctx.writeFile('.git/config', 'x') } catch (e) { out.git = e.message }
    return out
    """
    result = await sandbox.run_code(code, context=make_context(root))
    assert result.value == {
        "in.txt": "inside\n",
        "../secret.txt": "ctx.readFile: '../secret.txt' is not available (outside the granted folders)",
        "/etc/hostname": "ctx.readFile: '/etc/hostname' is not available (outside the granted folders)",
        "link.txt": "ctx.readFile: 'link.txt' is not available (outside the granted folders)",
        ".onellm/state.yaml": "ctx.readFile: '.onellm/state.yaml' is not available (the runtime's own state)",
        "nope.txt": "ctx.readFile: 'nope.txt': no such file",
        ".": "ctx.readFile: '.': is a directory",
        # the grant's checked open refuses a path through a file as a changed path, as read_file does
        "in.txt/x": "ctx.readFile: 'in.txt/x': no such file",
        "escape": "ctx.writeFile: '../escape.txt' is not available (outside the granted folders)",
        "git": "ctx.writeFile: '.git/config' is not available (a repository control path)",
    }
    assert (root / "deep" / "er" / "new.txt").read_text(encoding="utf-8") == "written ✓"
    assert not (tmp_path / "escape.txt").exists()
    assert str(tmp_path) not in json.dumps(result.value)


async def test_read_only_roots_refuse_writes(
    sandbox: JsSandbox, root: Path, make_context: Callable[..., ToolContext]
) -> None:
    result = await sandbox.run_code(
        "try { await ctx.writeFile('x.txt', 'x') } catch (e) { return e.message }",
        context=make_context(root, read_only=True),
    )
    assert result.value == "ctx.writeFile: writing files is not available (the host granted no fileWrite)"


async def test_a_fifo_is_refused_at_once_and_no_reader_is_left_waiting(
    sandbox: JsSandbox, root: Path, make_context: Callable[..., ToolContext]
) -> None:
    pipe = root / "pipe"
    os.mkfifo(pipe)
    threads = threading.active_count()
    started = time.monotonic()
    result = await sandbox.run_code(
        "const out = [];\n"
        "try { await ctx.readFile('pipe') } catch (e) { out.push(e.message) }\n"
        "try { await ctx.writeFile('pipe', 'x') } catch (e) { out.push(e.message) }\n"
        "return out",
        context=make_context(root),
    )
    assert time.monotonic() - started < 2
    assert result.value == ["ctx.readFile: 'pipe': not a regular file", "ctx.writeFile: 'pipe': not a regular file"]
    # Nobody holds the read end: a writer that does not wait finds no reader.
    with pytest.raises(OSError) as info:
        os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
    assert info.value.errno == errno.ENXIO
    assert threading.active_count() <= threads + 1


async def test_fetch_through_the_network_grant(
    make_options: Callable[..., JsSandboxOptions], server: _Server, make_context: Callable[..., ToolContext]
) -> None:
    box = JsSandbox(make_options(max_fetch_bytes=1000))
    url = base(server)
    code = f"""
    const text = await ctx.fetch('{url}/text');
    const posted = await ctx.fetch('{url}/post', {{ method: 'POST', headers: {{ 'X-Token': 't1' }}, body: 'payload' }});
    const big = await ctx.fetch('{url}/big');
    const missing = await ctx.fetch('{url}/missing');
    const refused = [];
    for (const u of ['http://localhost:1/', 'ftp://127.0.0.1/', '{url}/away', 'http://10.0.0.1/']) {{
      try {{ await ctx.fetch(u) }} catch (e) {{ refused.push(e.message) }}
    }}
    return {{
      text: [text.status, text.ok, text.text, text.headers['x-test'], text.truncated],
      posted: [posted.status, JSON.parse(posted.text)],
      big: [big.text.length, big.truncated],
      missing: [missing.status, missing.ok],
      refused,
    }}
    """
    result = await box.run_code(code, context=make_context(network=True))
    assert result.value == {
        "text": [200, True, "héllo", "1", False],
        "posted": [201, {"body": "payload", "header": "t1"}],
        "big": [1000, True],
        "missing": [404, False],
        "refused": [
            "ctx.fetch: 'http://localhost:1/' is not available (the host is not in the network grant)",
            "ctx.fetch: 'ftp://127.0.0.1/' is not available (only http and https URLs are allowed)",
            f"ctx.fetch: '{url}/away' is not available (the host is not in the network grant)",
            "ctx.fetch: 'http://10.0.0.1/' is not available (the host is not in the network grant)",
        ],
    }


async def test_fetch_quota_and_request_body_limit(
    make_options: Callable[..., JsSandboxOptions], server: _Server, make_context: Callable[..., ToolContext]
) -> None:
    box = JsSandbox(make_options(max_fetches_per_run=2, max_fetch_bytes=10))
    url = base(server)
    result = await box.run_code(
        f"const out = [];\n"
        f"try {{ await ctx.fetch('{url}/post', {{ method: 'POST', body: 'x'.repeat(11) }}) }} catch (e) {{ out.push(e.name + ': ' + e.message) }}\n"
        f"for (let i = 0; i < 3; i++) {{ try {{ out.push((await ctx.fetch('{url}/text')).status) }} catch (e) {{ out.push(e.name + ': ' + e.message) }} }}\n"
        f"try {{ await ctx.fetch('{url}/text', {{ method: 'BREW' }}) }} catch (e) {{ out.push(e.name) }}\n"
        f"try {{ await ctx.fetch('{url}/text', {{ headers: {{ 'X-A': 'a\\r\\nInjected: 1' }} }}) }} catch (e) {{ out.push(e.name) }}\n"
        f"return out",
        context=make_context(network=True),
    )
    assert result.value == [
        "RangeError: ctx.fetch: the body is larger than 10 bytes",
        200,
        200,
        "RangeError: ctx.fetch: a run sends at most 2 requests",
        "RangeError",
        "RangeError",
    ]


async def test_add_cost_is_exact_and_checked(sandbox: JsSandbox, make_context: Callable[..., ToolContext]) -> None:
    ctx = make_context()
    result = await sandbox.run_code(
        """
        ctx.addCost({ counter: 'pages', quantity: 3, unitPrice: '0.1', per: 1000, label: 'pages read', source: 'https://example.com/prices' });
        ctx.addCost({ counter: 'calls', quantity: 0.1, unitPrice: 0.2, multiplier: '1.5' });
        const bad = [];
        for (const line of [
          { counter: 'x', quantity: -1, unitPrice: '1' },
          { counter: 'x', quantity: 1, unitPrice: Infinity },
          { counter: 'x', quantity: 1, unitPrice: '1e', },
          { counter: 'x'.repeat(257), quantity: 1, unitPrice: '1' },
          { quantity: 1, unitPrice: '1' },
          { counter: 'x', quantity: 1, unitPrice: '1', per: 0 },
          null,
        ]) { try { ctx.addCost(line); bad.push('accepted') } catch (e) { bad.push(e.name) } }
        return bad
        """,
        context=ctx,
    )
    assert result.value == ["TypeError"] * 7
    lines = ctx.cost_lines
    assert [
        (line.counter, line.quantity, line.per, line.unit_price, line.multiplier, line.amount) for line in lines
    ] == [
        ("pages", 3, 1000, Decimal("0.1"), Decimal("1"), Decimal("0.0003")),
        ("calls", Decimal("0.1"), 1, Decimal("0.2"), Decimal("1.5"), Decimal("0.03")),
    ]
    assert (lines[0].label, lines[0].source) == ("pages read", "https://example.com/prices")
    assert result.cost_lines == lines


async def test_an_unawaited_request_never_lands(
    sandbox: JsSandbox, server: _Server, make_context: Callable[..., ToolContext]
) -> None:
    url = base(server)
    before = len(server.arrivals)
    result = await sandbox.run_code(
        f"ctx.fetch('{url}/slow'); ctx.writeFile('late.txt', 'x'); return 'returned'",
        context=make_context(network=True),
    )
    assert result.value == "returned"
    await anyio.sleep(0.3)
    assert server.arrivals[before:] == []


async def test_nothing_acts_for_a_run_after_the_caller_has_its_answer(
    sandbox: JsSandbox, server: _Server, root: Path, make_context: Callable[..., ToolContext]
) -> None:
    url = base(server)
    ctx = ToolContext(capabilities=Capabilities.files(root) + Capabilities.network("127.0.0.1"), working_directory=root)
    code = f"""
    ctx.fetch('{url}/slow').then(() => ctx.writeFile('after-fetch.txt', 'x'));
    await ctx.writeFile('during.txt', 'x');
    ctx.log('during');
    Promise.resolve().then(async () => {{
      for (let i = 0; i < 50; i++) await null;
      ctx.writeFile('after-jobs.txt', 'x').catch(() => {{}});
      ctx.log('late');
    }});
    (function spin() {{ Promise.resolve().then(spin) }})();
    return 'done'
    """
    result = await sandbox.run_code(code, context=ctx)
    assert result.value == "done"
    await anyio.sleep(2.0)
    assert sorted(os.listdir(root)) == ["during.txt"]
    assert result.logs == ["during"]
    # The fetch was started by the run, before its answer; the server may see it a little later on a loaded machine, but
    # never twice, and nothing it would have led to happened (no after-fetch.txt above).
    assert [path for path, _ in server.arrivals].count("/slow") <= 1


async def test_a_cancelled_run_is_killed_and_gives_back_its_slot(
    make_options: Callable[..., JsSandboxOptions], pool: JsWorkerPool
) -> None:
    limiter = JsRunLimiter()
    box = JsSandbox(make_options(limiter=limiter, fuel=4_000_000_000, time_limit=30))
    killed = pool.killed
    started = time.monotonic()
    with anyio.move_on_after(0.3):
        await box.run_code("for (;;) {}")
    assert time.monotonic() - started < 1.5
    assert (pool.killed, limiter.active_runs, limiter.abandoned_runs) == (killed + 1, 0, 1)


async def test_the_script_sees_plain_errors(
    sandbox: JsSandbox, root: Path, make_context: Callable[..., ToolContext]
) -> None:
    result = await sandbox.run_code(
        "try { await ctx.readFile('missing.txt') } catch (e) {"
        " return [e instanceof Error, e.constructor.name, e.message, String(e.stack).includes('py')] }",
        context=make_context(root),
    )
    assert result.value == [True, "Error", "ctx.readFile: 'missing.txt': no such file", False]


async def test_arguments_are_checked_in_the_script(sandbox: JsSandbox) -> None:
    result = await sandbox.run_code(
        "const out = [];\n"
        "for (const f of [() => ctx.readFile(1), () => ctx.writeFile('a', {}), () => ctx.fetch('x', 5), () => ctx.fetch('x', { headers: [] })]) {\n"
        "  try { f(); out.push('called') } catch (e) { out.push(e.name + ': ' + e.message) }\n"
        "}\n"
        "return out"
    )
    assert result.value == [
        "TypeError: ctx.readFile: path must be a string, not number",
        "TypeError: ctx.writeFile: text must be a string, not object",
        "TypeError: ctx.fetch: options must be an object",
        "TypeError: ctx.fetch: headers must be an object of strings",
    ]


def test_errors_name_no_kind_of_the_host() -> None:
    error = JsSandboxError("x" * 20_000, kind="script")
    assert len(str(error)) == JsSandboxError.MAX_MESSAGE_CHARS
    assert str(error).endswith("characters left out of 20000]")
    assert error.kind is JsFailure.SCRIPT


async def test_a_fault_of_the_host_reaches_the_script_as_a_plain_error(
    sandbox: JsSandbox, root: Path, make_context: Callable[..., ToolContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    from onellm_js import _host

    async def broken(self: object, path: str) -> str:
        raise RuntimeError("host bug with /secret/path")

    monkeypatch.setattr(_host.RunHost, "_read_file", broken)
    result = await sandbox.run_code(
        "try { await ctx.readFile('a.txt') } catch (e) { return e.message }", context=make_context(root)
    )
    assert result.value == "ctx.readFile: the host could not complete the call"
