"""Every field a request body uses exists in the official Anthropic SDK's request types (`anthropic.types`, generated
from Anthropic's API description): the bodies of every fixture, and the next-turn bodies that replay server tool
calls, thinking and citations."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest
from anthropic import types  # the SDK is a dev dependency: this check runs in CI, never skipped
from anthropic.types import message_create_params
from anthropic.types.messages import batch_create_params

from onellm.messages import Message, TextPart
from onellm.providers._request import ChatRequest
from onellm.providers.anthropic._codec import (
    DEFAULT_API_VERSION,
    SAMPLING_CUTOFF_VERSION,
    decode_message,
    encode_messages_request,
)

from ._fixtures import PROVIDERS, case_id, cases, load


def fields(name: str) -> frozenset[str]:
    return keys_of(getattr(types, name))


def keys_of(typed: Any) -> frozenset[str]:
    """The keys of a TypedDict, or of every member of a union of them."""
    members = typing.get_args(typed) if typing.get_origin(typed) is typing.Union else (typed,)
    out: set[str] = set()
    for member in members:
        out |= member.__required_keys__ | member.__optional_keys__
    return frozenset(out)


def camel(kind: str) -> str:
    return "".join(word.capitalize() for word in kind.split("_"))


SOURCES = {
    ("image", "base64"): "Base64ImageSourceParam",
    ("image", "url"): "URLImageSourceParam",
    ("image", "file"): "FileImageSourceParam",
    ("document", "base64"): "Base64PDFSourceParam",
    ("document", "url"): "URLPDFSourceParam",
    ("document", "text"): "PlainTextSourceParam",
    ("document", "file"): "FileDocumentSourceParam",
}


class Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def keys(self, value: Any, allowed: frozenset[str], where: str) -> None:
        if not isinstance(value, dict):
            self.problems.append(f"{where}: not an object")
            return
        self.problems.extend(f"{where}.{key}: not in the SDK's type" for key in value if key not in allowed)

    def typed(self, value: dict[str, Any], name: str, where: str) -> None:
        if not hasattr(types, name):
            self.problems.append(f"{where}: no SDK type {name} for type {value.get('type')!r}")
            return
        self.keys(value, fields(name), where)
        if "cache_control" in value:
            self.keys(value["cache_control"], fields("CacheControlEphemeralParam"), f"{where}.cache_control")

    def body(self, body: dict[str, Any], where: str = "body", *, sampling: bool = False) -> None:
        allowed = keys_of(message_create_params.MessageCreateParamsBase) | {"stream"}
        if sampling:  # the current SDK types follow the newest anthropic-version, which takes no sampling parameters
            allowed |= {"temperature", "top_p", "top_k"}
        self.keys(body, allowed, where)
        for n, message in enumerate(body.get("messages", [])):
            self.keys(message, fields("MessageParam"), f"{where}.messages[{n}]")
            content = message.get("content")
            if isinstance(content, list):
                for i, block in enumerate(content):
                    self.block(block, f"{where}.messages[{n}].content[{i}]")
        for n, tool in enumerate(body.get("tools", [])):
            kind = tool.get("type")
            if kind is None or kind == "custom":
                self.typed(tool, "ToolParam", f"{where}.tools[{n}]")
            else:
                head, _, version = kind.rpartition("_")
                self.typed(tool, f"{camel(head)}Tool{version}Param", f"{where}.tools[{n}]")
        if "tool_choice" in body:
            self.typed(
                body["tool_choice"], f"ToolChoice{camel(body['tool_choice']['type'])}Param", f"{where}.tool_choice"
            )
        if "thinking" in body:
            self.typed(body["thinking"], f"ThinkingConfig{camel(body['thinking']['type'])}Param", f"{where}.thinking")
        if "output_config" in body:
            self.typed(body["output_config"], "OutputConfigParam", f"{where}.output_config")
            if "format" in body["output_config"]:
                self.typed(body["output_config"]["format"], "JSONOutputFormatParam", f"{where}.output_config.format")
        if "metadata" in body:
            self.typed(body["metadata"], "MetadataParam", f"{where}.metadata")
        if "cache_control" in body:
            self.typed(body["cache_control"], "CacheControlEphemeralParam", f"{where}.cache_control")

    def block(self, block: dict[str, Any], where: str) -> None:
        kind = str(block.get("type"))
        self.typed(block, f"{camel(kind)}BlockParam", where)
        source = block.get("source")
        if isinstance(source, dict):
            name = SOURCES.get((kind, str(source.get("type"))))
            if name is None:
                self.problems.append(f"{where}.source: no SDK source type for {kind}/{source.get('type')}")
            else:
                self.typed(source, name, f"{where}.source")
        for i, citation in enumerate(block.get("citations") or []):
            self.typed(citation, f"Citation{camel(citation['type'])}Param", f"{where}.citations[{i}]")
        content = block.get("content")
        if kind == "tool_result" and isinstance(content, list):
            for i, inner in enumerate(content):
                self.block(inner, f"{where}.content[{i}]")


def bodies(case: dict[str, Any]) -> list[dict[str, Any]]:
    expected = case.get("expectedRequest")
    if not expected or not expected.get("body"):
        return []
    body = expected["body"]
    if case.get("operation") == "batch":
        return [item["params"] for item in body["requests"]]
    return [body]


@pytest.mark.parametrize("path", cases("anthropic"), ids=case_id)
def test_fixture_request_fields_exist_in_the_sdk_types(path: Path) -> None:
    case = load(path)
    old_version = case["provider"].get("apiVersion", DEFAULT_API_VERSION) < SAMPLING_CUTOFF_VERSION
    checker = Checker()
    for body in bodies(case):
        checker.body(msgspec.json.decode(msgspec.json.encode(body)), sampling=old_version)
    assert checker.problems == []


def test_batch_items_have_the_sdk_fields() -> None:
    body = load(PROVIDERS / "anthropic" / "batch" / "case.json")["expectedRequest"]["body"]
    request_fields = keys_of(batch_create_params.Request)
    assert set(body) == {"requests"}
    assert all(set(item) <= request_fields for item in body["requests"])


@pytest.mark.parametrize("name", ["web-search-citations", "thinking-replay", "pause-turn", "adaptive-effort"])
def test_replayed_turns_use_only_sdk_fields(name: str) -> None:
    response = decode_message(
        msgspec.json.encode(load(PROVIDERS / "anthropic" / name / "case.json")["response"]["body"])
    )
    history = [Message(user=[TextPart("q")]), response.message, Message(user=[TextPart("go on")])]
    checker = Checker()
    body, _warnings = encode_messages_request(ChatRequest("claude-sonnet-5-5", history), max_tokens=100)
    checker.body(plain(body))
    assert checker.problems == []


def test_the_sdk_types_take_no_sampling_parameters_any_more() -> None:
    checker = Checker()
    checker.body({"model": "m", "max_tokens": 1, "messages": [], "temperature": 0.5})
    assert checker.problems == ["body.temperature: not in the SDK's type"]


def test_the_checker_finds_an_unknown_field() -> None:
    checker = Checker()
    checker.body(
        {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "text", "txt": "x"}]}]}
    )
    assert checker.problems == ["body.messages[0].content[0].txt: not in the SDK's type"]


def plain(value: Any) -> Any:
    return msgspec.json.decode(msgspec.json.encode(value))


def answers(case: dict[str, Any]) -> list[dict[str, Any]]:
    recorded = case.get("responses") or ([case["response"]] if "response" in case else [])
    return [r["body"] for r in recorded if r.get("status", 200) == 200 and r.get("body", {}).get("type") == "message"]


@pytest.mark.parametrize("path", cases("anthropic"), ids=case_id)
def test_fixture_answers_are_valid_sdk_messages_and_events(path: Path) -> None:
    """The hand-written answers must read as the SDK reads them: each whole answer as a `Message`, each streamed
    event as a `RawMessageStreamEvent` (pings aside)."""
    pydantic = pytest.importorskip("pydantic")
    from onellm.providers._sse import iter_sse

    case = load(path)
    for body in answers(case):
        types.Message.model_validate(plain(body), strict=False)
    if "stream" in case and case.get("operation") != "stream_cut":
        adapter = pydantic.TypeAdapter(types.RawMessageStreamEvent)
        for event in iter_sse([case["stream"].encode()]):
            data = msgspec.json.decode(event.data)
            if data.get("type") != "ping":
                adapter.validate_python(data)
