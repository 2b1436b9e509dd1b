"""The `fetch_webpage_markdown` tool: its schema, calls through `Tool.invoke`, reading on with `start`, and how a
definition finds it (installed: through the `onellm.tools` entry point; not installed: `CapabilityMissingError`)."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pytest

import onellm_web
from onellm import BadDefinitionError, CapabilityMissingError, Runtime
from onellm.capabilities import Capabilities
from onellm.tools import Tool, ToolContext, ToolReferenceResolver, ToolRegistry
from onellm_web import WebOptions, WebPage, register, web_tool

from .conftest import Site

pytestmark = pytest.mark.anyio

LOOPBACK = Capabilities.network("127.0.0.1")


async def call(tool: Tool[..., Any], arguments: dict[str, Any], caps: Capabilities | None = LOOPBACK) -> Any:
    return await tool.invoke(arguments, ToolContext(capabilities=caps))


def test_the_tool_as_the_model_sees_it() -> None:
    tool = web_tool()
    assert (tool.name, tool.required_grants, tool.package) == ("fetch_webpage_markdown", ("network",), "onellm-web")
    assert tool.description.startswith("Fetches a web page and returns its main content as Markdown: the title first")
    assert tool.input_schema == {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "The http or https address of the page."},
            "start": {
                "type": "integer",
                "minimum": 0,
                "description": "Character of the content to start from, to read on after a cut.",
                "default": 0,
            },
            "max_chars": {
                "type": ["integer", "null"],
                "minimum": 100,
                "description": "Most characters to return; the host's limit applies when this is larger or absent.",
            },
        },
        "required": ["url"],
        "additionalProperties": False,
    }


async def test_a_call_returns_the_rendered_page(site: Site) -> None:
    result = await call(web_tool(), {"url": f"{site.origin}/pages/no-body/"})
    assert not result.is_error, result.text
    assert result.text.startswith(f"# Service status — Parcelwise\nSource: {site.origin}/pages/no-body/\n\n")
    assert "| Webhooks | Degraded performance | 99.71% |" in result.text


async def test_reading_on_with_start_covers_the_whole_page(site: Site) -> None:
    tool = web_tool(WebOptions(max_chars=400))
    url = f"{site.origin}/pages/news-article/"
    whole = (await onellm_web.fetch_webpage_markdown(url, capabilities=LOOPBACK)).markdown
    pieces: list[str] = []
    start = 0
    while True:
        text = (await call(tool, {"url": url, "start": start, "max_chars": 5000})).text
        body = text.split("\n\n", 1)[1]
        if start:
            assert body.startswith(f"[Continued from character {start} of {len(whole)}.]\n\n")
            body = body.split("\n\n", 1)[1]
        if "[Cut: characters" not in body:
            pieces.append(body)
            break
        body, note = body.rsplit("\n\n", 1)
        next_start = int(note.rsplit("start=", 1)[1].split(" ", 1)[0])
        assert (
            note
            == f"[Cut: characters {start} to {next_start} of {len(whole)} shown. Call again with start={next_start} to read on.]"
        )
        assert len(body) <= 400
        pieces.append(body)
        start = next_start
    assert len(pieces) > 3
    assert "".join(pieces).replace("\n", "") == whole.replace("\n", "")


async def test_failures_are_error_results_the_model_reads(site: Site) -> None:
    tool = web_tool()
    cases = [
        ({"url": f"{site.origin}/notes.txt"}, Capabilities.default(), "no network grant"),
        ({"url": f"{site.origin}/photo.png"}, LOOPBACK, "is image/png, 5008 bytes, not a web page or text"),
        ({"url": f"{site.origin}/gone"}, LOOPBACK, "answered 410 Gone"),
        (
            {"url": f"{site.origin}/notes.txt", "start": 500},
            LOOPBACK,
            "start must be between 0 and 14 (the content has 15 characters)",
        ),
        ({"url": f"{site.origin}/notes.txt", "max_chars": 5}, LOOPBACK, "max_chars"),
    ]
    for arguments, caps, message in cases:
        result = await call(tool, arguments, caps)
        assert (result.is_error, message in result.text) == (True, True), result.text
    unbound = await web_tool().invoke({"url": f"{site.origin}/notes.txt"})
    assert (unbound.is_error, "given no capabilities" in unbound.text) == (True, True), unbound.text


def test_render_marks_every_cut() -> None:
    page = WebPage(
        url="https://x.test/a",
        title="T",
        markdown="line one\nline two\nline three\n",
        content_type="text/html",
        charset="utf-8",
        is_html=True,
        bytes_read=100,
        cut=True,
    )
    assert page.render(max_chars=10) == (
        "# T\nSource: https://x.test/a\n[The page is longer than 100 bytes; only its first 100 were read.]\n\n"
        "line one\n\n[Cut: characters 0 to 8 of 29 shown. Call again with start=8 to read on.]"
    )
    assert page.render(start=8) == (
        "# T\nSource: https://x.test/a\n[The page is longer than 100 bytes; only its first 100 were read.]\n\n"
        "[Continued from character 8 of 29.]\n\nline two\nline three"
    )
    with pytest.raises(ValueError, match="start must be between 0 and 28"):
        page.render(start=29)
    with pytest.raises(ValueError, match="max_chars must be at least 1"):
        page.render(max_chars=0)


# ------------------------------------------------------------------------------------------------ registration


def test_register_adds_the_tool_to_a_runtime_or_a_registry_with_its_options() -> None:
    rt = Runtime(capabilities=LOOPBACK)
    first = register(rt, WebOptions(max_chars=500))
    assert rt.tools.get("fetch_webpage_markdown") is first
    second = register(rt)
    assert rt.tools.get("fetch_webpage_markdown") is second, "registering again replaces"
    registry = ToolRegistry(installed=False)
    assert register(registry).name in registry


def test_installed_the_tool_is_found_by_the_entry_point() -> None:
    entries = importlib.metadata.entry_points(group="onellm.tools", name="fetch_webpage_markdown")
    assert [(e.value, e.dist.name if e.dist else None) for e in entries] == [("onellm_web:web_tool", "onellm-web")]
    registry = ToolRegistry()
    resolved = ToolReferenceResolver(registry, Capabilities.network("docs.example.test")).resolve(
        [{"tools": ["fetch_webpage_markdown"]}, {"routine": "/agent-tools/web/fetch-webpage-markdown"}]
    )
    assert [(t.name, t.package) for t in resolved.tools] == [("fetch_webpage_markdown", "onellm-web")]
    assert registry.get("fetch_webpage_markdown") is resolved.tools[0]


def test_installed_the_tool_still_needs_the_network_grant() -> None:
    with pytest.raises(BadDefinitionError, match="tool 'fetch_webpage_markdown' needs a network grant") as info:
        ToolReferenceResolver(ToolRegistry(), Capabilities.default()).resolve(
            [{"tools": ["fetch_webpage_markdown"]}], file="agents/reader.yaml"
        )
    assert not isinstance(info.value, CapabilityMissingError)


def test_not_installed_a_reference_fails_naming_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.metadata.entry_points

    def without_onellm_web(**select: Any) -> Any:
        found = real(**select)
        return [e for e in found if not (e.dist is not None and e.dist.name == "onellm-web")]

    monkeypatch.setattr(importlib.metadata, "entry_points", without_onellm_web)
    resolver = ToolReferenceResolver(ToolRegistry(), Capabilities.any_public_hosts())
    with pytest.raises(CapabilityMissingError, match="comes with the onellm-web package") as info:
        resolver.resolve([{"tools": ["fetch_webpage_markdown"]}], file="agents/reader.yaml")
    assert isinstance(info.value, BadDefinitionError)
    assert getattr(info.value, "package", None) == "onellm-web"
    assert str(info.value).startswith("agents/reader.yaml: tool 'fetch_webpage_markdown' comes with the onellm-web")
    assert "pip install onellm-web" in str(info.value)
    lenient = ToolReferenceResolver(ToolRegistry(), Capabilities.any_public_hosts(), strict=False)
    dropped = lenient.resolve([{"tools": ["fetch_webpage_markdown"]}])
    assert dropped.tools == []
    assert dropped.warnings[0].startswith("<definition>: tool 'fetch_webpage_markdown' comes with the onellm-web")
