"""Test plumbing shared by every package: the testdata folder, a guard that keeps tests off the network, and the runner
of the examples in the docs."""

from __future__ import annotations

import ast as _ast
import asyncio as _asyncio
import contextvars as _contextvars
import inspect as _inspect
import io as _io
import ipaddress
import os as _os
import re as _re
import socket
import tempfile as _tempfile
import tokenize as _tokenize
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sybil import Example as _Example
from sybil import Sybil as _Sybil
from sybil.document import PythonDocStringDocument as _PythonDocStringDocument
from sybil.parsers.markdown import ClearNamespaceParser as _ClearNamespaceParser
from sybil.parsers.markdown import CodeBlockParser as _CodeBlockParser
from sybil.parsers.markdown import SkipParser as _SkipParser

TESTDATA = Path(__file__).resolve().parent / "testdata"


@pytest.fixture
def testdata() -> Path:
    return TESTDATA


def _is_local(address: Any) -> bool:
    if isinstance(address, tuple) and address:
        host = address[0]
    else:
        return True  # unix sockets and the like
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Refuse any connection that leaves this machine: tests replay fixtures or talk to 127.0.0.1."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> Any:
        if not _is_local(address):
            raise OSError(f"tests may not reach the network (tried {address!r})")
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if not _is_local(address):
            raise OSError(f"tests may not reach the network (tried {address!r})")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    return


# -- the examples in the docs -----------------------------------------------------------------------------------------
#
# Every Python block of `docs/*.md`, of each package's README and of the docstrings in `packages/*/src` runs as a test
# (sybil). The blocks of one page run in order in one namespace, in a fresh working directory, with top-level `await`
# on one event loop per page. What a page needs besides its own code sits beside the example in a block the reader
# does not see (`<!-- invisible-code-block: python ... -->`); an example that cannot run says why in
# `<!-- skip: next "reason" -->`. Besides:
#
# - a block of YAML, JavaScript, TypeScript, JSON or text whose first line is a comment naming a relative path
#   (`# prompts/commit-message.flow`, `// tools/reshape.js`) is written to that path before the page's first Python
#   block runs (and again where it stands, so a later block may change it);
# - a comment `# <a Python literal>` at the end of an expression, or on the line under it, says what the expression
#   gives, and is checked;
# - the page's current runtime (`onellm.current_runtime()`) is a fresh one whose `anthropic`, `openai` and `gemini`
#   providers are `ScriptedProvider`s: `scripted("openai")` is that provider, to queue the answers an example gets
#   (with nothing queued, a call gets a plain text answer);
# - until a page says otherwise, HTTP goes nowhere: `api.anthropic.com` and `api.openai.com` answer as in their basic
#   fixtures, every other host serves a news article, and the providers' key variables hold a placeholder;
# - `replay(case)` answers the page's HTTP requests from a provider fixture in `testdata/providers/<case>/case.json`
#   (the JSON body, or the recorded stream when the request asks for one), and `serve(answer)` answers them with
#   `answer(request) -> httpx.Response`, both through an `httpx.MockTransport` in place of every
#   `httpx.AsyncHTTPTransport` (the egress client's included); `sent` lists the requests;
# - `testdata` is the shared fixtures folder.

_ROOT = Path(__file__).resolve().parent
_FILE_LANGUAGES = "yaml|js|javascript|ts|typescript|json|text"
_PATH_COMMENT = _re.compile(r"^(?:#|//) ([\w.-][\w./-]*\.\w+)\s*$")


class _Page:
    """What one page's examples share: the working directory, the event loop and context, the scripted runtime."""

    def __init__(self) -> None:
        import httpx

        import onellm

        self.previous_cwd = Path.cwd()
        self.folder = _tempfile.TemporaryDirectory(prefix="onellm-docs-")
        _os.chdir(self.folder.name)
        self.runner = _asyncio.Runner()
        self.context = _contextvars.copy_context()
        self.runtime = onellm.Runtime(environ={})
        self.providers = {name: _DocsProvider(name) for name in ("anthropic", "openai", "gemini")}
        for name, provider in self.providers.items():
            self.runtime.providers.set(name, provider)
        self.using = onellm.use_runtime(self.runtime)
        self.context.run(self.using.__enter__)
        self.sent: list[httpx.Request] = []
        self.real_send = httpx.AsyncHTTPTransport.handle_async_request
        self.environ = dict(_os.environ)
        self.files_written = False
        for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
            _os.environ[variable] = "sk-docs-example"
        self.serve(_default_answer)

    def serve(self, answer: Any) -> None:
        """Answer the page's HTTP requests with `answer(request) -> httpx.Response`, and list them in `sent`."""
        import httpx

        sent = self.sent

        def handler(request: httpx.Request) -> httpx.Response:
            sent.append(request)
            given: httpx.Response = answer(request)
            # As from the network: a body still to be read, so streaming readers (`aiter_raw`) work too.
            return httpx.Response(given.status_code, headers=given.headers, stream=httpx.ByteStream(given.content))

        mock = httpx.MockTransport(handler)

        async def handle(_transport: httpx.AsyncHTTPTransport, request: httpx.Request) -> httpx.Response:
            return await mock.handle_async_request(request)

        httpx.AsyncHTTPTransport.handle_async_request = handle  # type: ignore[method-assign]

    def replay(self, case: str) -> None:
        """Answer with a provider fixture: its recorded stream when the request asks for one, else its JSON body."""
        data = _fixture_case(case)
        self.serve(lambda request: _case_answer(data, request))

    def close(self) -> None:
        import httpx

        import onellm

        try:
            self.runner.run(self.runtime.aclose(), context=self.context)
            self.runner.close()
            self.context.run(self.using.__exit__, None, None, None)
        finally:
            httpx.AsyncHTTPTransport.handle_async_request = self.real_send  # type: ignore[method-assign]
            onellm.set_default_runtime(None)
            _os.environ.clear()
            _os.environ.update(self.environ)
            _os.chdir(self.previous_cwd)
            self.folder.cleanup()


def _fixture_case(case: str) -> dict[str, Any]:
    import msgspec

    data: dict[str, Any] = msgspec.json.decode((_ROOT / "testdata" / "providers" / case / "case.json").read_bytes())
    return data


def _case_answer(data: dict[str, Any], request: Any) -> Any:
    import httpx
    import msgspec

    body = msgspec.json.decode(request.content) if request.content else {}
    if isinstance(body, dict) and body.get("stream") and "stream" in data:
        return httpx.Response(200, text=data["stream"], headers={"content-type": "text/event-stream"})
    response = data["response"]
    return httpx.Response(response.get("status", 200), json=response["body"])


_DEFAULT_CASES = {"api.anthropic.com": "anthropic/basic", "api.openai.com": "openai-responses/basic"}


def _default_answer(request: Any) -> Any:
    """Until a page says otherwise: the providers' own hosts answer as in their basic fixtures, and any other host
    serves a news article (`testdata/web/pages/news-article`)."""
    import httpx

    case = _DEFAULT_CASES.get(request.url.host)
    if case is not None:
        return _case_answer(_fixture_case(case), request)
    page = (TESTDATA / "web" / "pages" / "news-article" / "page.html").read_bytes()
    return httpx.Response(200, content=page, headers={"content-type": "text/html; charset=utf-8"})


def _docs_provider_class() -> type:
    from onellm.testing import ScriptedProvider

    class DocsProvider(ScriptedProvider):
        """A scripted provider that gives a plain answer when nothing is queued, for examples that only show a call."""

        def _next(self, what: str) -> Any:
            if not self.pending:
                self.enqueue_text("(a scripted answer)")
            return super()._next(what)

    return DocsProvider


def _DocsProvider(name: str) -> Any:
    return _docs_provider_class()(name)


def _page_setup(namespace: dict[str, Any]) -> None:
    page = _Page()
    namespace.update(
        __page__=page,
        scripted=page.providers.__getitem__,
        serve=page.serve,
        replay=page.replay,
        sent=page.sent,
        testdata=TESTDATA,
    )


def _page_teardown(namespace: dict[str, Any]) -> None:
    namespace["__page__"].close()


def _checked_statements(source: str) -> list[tuple[int, str]]:
    """(line, literal) for each expression statement with a `# <Python literal>` comment at its end, or on a line of
    its own right under it."""
    comments: dict[int, tuple[str, bool]] = {}
    lines = source.splitlines()
    for token in _tokenize.generate_tokens(_io.StringIO(source).readline):
        if token.type == _tokenize.COMMENT:
            alone = not lines[token.start[0] - 1][: token.start[1]].strip()
            comments[token.start[0]] = (token.string[1:].strip(), alone)
    found: list[tuple[int, str]] = []
    for node in _ast.parse(source).body:
        if not isinstance(node, _ast.Expr):
            continue
        end = node.end_lineno or node.lineno
        trailing = comments.get(end)
        below = comments.get(end + 1)
        text = trailing[0] if trailing and not trailing[1] else below[0] if below and below[1] else None
        if text is None:
            continue
        try:
            _ast.literal_eval(text)
        except (ValueError, SyntaxError):
            continue
        found.append((node.lineno, text))
    return found


def _evaluate_python(example: _Example) -> None:
    __tracebackhide__ = True
    page: _Page = example.namespace["__page__"]
    if not page.files_written:
        page.files_written = True
        _write_all_files(example.path)
    source = str(example.parsed)
    checks = dict(_checked_statements(source))
    tree = _ast.parse(source)
    if checks:
        # Keep the value of each checked expression: `__shown__[line] = <expression>`.
        for index, node in enumerate(tree.body):
            if isinstance(node, _ast.Expr) and node.lineno in checks:
                target = _ast.Subscript(_ast.Name("__shown__", _ast.Load()), _ast.Constant(node.lineno), _ast.Store())
                tree.body[index] = _ast.copy_location(_ast.Assign([target], node.value), node)
        _ast.fix_missing_locations(tree)
        example.namespace["__shown__"] = {}
    _ast.increment_lineno(tree, example.line + example.parsed.line_offset - 1)
    code = compile(tree, example.path, "exec", flags=_ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    result = page.context.run(eval, code, example.namespace)
    if _inspect.iscoroutine(result):
        page.runner.run(result, context=page.context)
    shown = example.namespace.pop("__shown__", {})
    for line, literal in checks.items():
        assert shown[line] == _ast.literal_eval(literal), (
            f"{example.path}, line {example.line + line - 1}: the example shows {literal}, the code gives {shown[line]!r}"
        )


def _write_named_file(source: str, where: str) -> None:
    match = _PATH_COMMENT.match(source.splitlines()[0] if source else "")
    if match is None:
        return
    target = Path(match.group(1))
    if target.is_absolute() or ".." in target.parts:
        raise ValueError(f"{where}: an example file must be a relative path: {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source, encoding="utf-8")


def _write_file(example: _Example) -> None:
    _write_named_file(str(example.parsed), f"{example.path}:{example.line}")


def _write_all_files(path: str) -> None:
    """Every named file of the page, written before its first Python block runs, so an example may use a file the
    page shows further down."""
    text = Path(path).read_text(encoding="utf-8")
    for match in _re.finditer(rf"^```(?:{_FILE_LANGUAGES})\n(.*?)^```", text, _re.S | _re.M):
        _write_named_file(match.group(1), path)


class _DocsSybil(_Sybil):
    def should_parse(self, path: Path) -> bool:
        try:
            relative = path.relative_to(_ROOT)
        except ValueError:
            return False
        parts = relative.parts
        if parts[0] == "docs" and len(parts) == 2:
            return path.suffix == ".md"
        if parts[0] == "packages" and len(parts) == 3:
            return parts[2] == "README.md"
        if parts[0] == "packages" and len(parts) > 3 and parts[2] == "src":
            return path.suffix == ".py" and "```python" in path.read_text(encoding="utf-8")
        return False


pytest_collect_file = _DocsSybil(
    parsers=[
        _CodeBlockParser(language="python", evaluator=_evaluate_python),
        *(_CodeBlockParser(language=lang, evaluator=_write_file) for lang in _FILE_LANGUAGES.split("|")),
        _SkipParser(),
        _ClearNamespaceParser(),
    ],
    path=".",
    setup=_page_setup,
    teardown=_page_teardown,
    document_types={".py": _PythonDocStringDocument},
    name="docs",
).pytest()
