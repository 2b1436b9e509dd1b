"""Replaying provider fixtures: build the request a case describes, check what onellm sends, answer with the recorded
response, and compare what onellm decodes. `ONELLM_UPDATE_FIXTURES=1` rewrites the expectations instead."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import msgspec

from onellm.messages import Message
from onellm.providers._request import (
    CacheOptions,
    ChatRequest,
    ChatResponse,
    HostedToolDefinition,
    ReasoningOptions,
    ResponseFormat,
    ToolChoice,
    ToolDefinition,
)

ROOT = Path(__file__).resolve().parents[4]
PROVIDERS = ROOT / "testdata" / "providers"
UPDATE = os.environ.get("ONELLM_UPDATE_FIXTURES") == "1"
KEY = "sk-fixture-key"


def cases(*folders: str) -> list[Path]:
    found: list[Path] = []
    for folder in folders:
        found.extend(sorted((PROVIDERS / folder).glob("*/case.json")))
    return found


def case_id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


_DECODER = msgspec.json.Decoder(float_hook=Decimal)
_ENCODER = msgspec.json.Encoder(decimal_format="number")


def decode(data: bytes | str) -> Any:
    """JSON with every non-integer number as an exact Decimal, as onellm reads money."""
    return _DECODER.decode(data)


def load(path: Path) -> dict[str, Any]:
    return decode(path.read_bytes())  # type: ignore[no-any-return]


def save(path: Path, case: dict[str, Any]) -> None:
    encoded = _ENCODER.encode(case)
    path.write_text(msgspec.json.format(encoded, indent=2).decode("utf-8") + "\n", encoding="utf-8")


def chat_request(data: dict[str, Any]) -> ChatRequest:
    """A `ChatRequest` from a case's plain `request` mapping (camelCase keys, messages in the message format)."""
    choice = data.get("toolChoice")
    fmt = data.get("responseFormat")
    reasoning = data.get("reasoning")
    cache = data.get("cache")
    return ChatRequest(
        model=data["model"],
        messages=[Message.from_data(m) for m in data.get("messages", [])],
        system=data.get("system"),
        max_output_tokens=data.get("maxOutputTokens"),
        temperature=data.get("temperature"),
        top_p=data.get("topP"),
        stop_sequences=list(data.get("stopSequences", [])),
        tools=[
            ToolDefinition(t["name"], t.get("description", ""), t["inputSchema"], t.get("strict", False))
            for t in data.get("tools", [])
        ],
        hosted_tools=[
            HostedToolDefinition(h["type"], h.get("name"), h.get("options", {})) for h in data.get("hostedTools", [])
        ],
        tool_choice=None
        if choice is None
        else ToolChoice.named(choice["tool"])
        if isinstance(choice, dict)
        else ToolChoice(choice),
        parallel_tool_calls=data.get("parallelToolCalls"),
        response_format=None
        if fmt is None
        else ResponseFormat.json_schema(fmt["schema"], name=fmt.get("name", "output"))
        if fmt.get("type") == "json_schema"
        else ResponseFormat(fmt["type"]),
        reasoning=None if reasoning is None else ReasoningOptions(**reasoning),
        cache=None
        if cache is None
        else CacheOptions(
            enabled=cache.get("enabled", True),
            key=cache.get("key"),
            ttl=dt.timedelta(seconds=cache["ttlSeconds"]) if "ttlSeconds" in cache else None,
        ),
        service_tier=data.get("serviceTier"),
        user_id=data.get("userId"),
        extra_parameters=dict(data.get("extraParameters", {})),
    )


def response_data(response: ChatResponse) -> dict[str, Any]:
    out: dict[str, Any] = {
        "finishReason": response.provider_finish_reason,
        "message": response.message.to_data(),
    }
    if response.warnings:
        out["warnings"] = [w.message for w in response.warnings]
    return out


class Recorder:
    """A MockTransport handler that checks each request against the case and answers with its recorded response."""

    def __init__(self, case: dict[str, Any], answer: Callable[[], httpx.Response]) -> None:
        self.case = case
        self.answer = answer
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.answer()

    def check_last(self, *, streamed: bool) -> list[str]:
        """Differences between the last request and `expectedRequest` (rewritten instead when updating)."""
        expected = self.case["expectedRequest"]
        if expected is None:  # refused before anything was sent
            return [f"{len(self.requests)} request(s) sent"] if self.requests else []
        request = self.requests[-1]
        body = decode(request.content)
        if streamed:
            body.pop("stream", None)
            body.pop("stream_options", None)
        problems: list[str] = []
        if UPDATE and not streamed:
            expected["body"] = body
            expected["path"] = request.url.path
        if request.method != expected["method"]:
            problems.append(f"method {request.method} != {expected['method']}")
        if request.url.path != expected["path"]:
            problems.append(f"path {request.url.path} != {expected['path']}")
        problems.extend(
            f"header {name} was sent" for name in expected.get("absentHeaders", []) if name in request.headers
        )
        for name, value in expected.get("headers", {}).items():
            if request.headers.get(name) != value:
                problems.append(f"header {name}: {request.headers.get(name)!r} != {value!r}")
        if body != expected["body"]:
            problems.append(
                "body differs:\n"
                + json.dumps(body, indent=1, sort_keys=True)
                + "\n!=\n"
                + json.dumps(expected["body"], indent=1, sort_keys=True)
            )
        return problems


def whole_responses(case: dict[str, Any]) -> Callable[[], httpx.Response]:
    """The answers to give, in order: `responses` (a list, for retries) or the one `response`."""
    recorded = list(case.get("responses") or ([case["response"]] if "response" in case else []))
    answers = iter(recorded)
    return lambda: as_response(next(answers))


def as_response(recorded: dict[str, Any]) -> httpx.Response:
    return httpx.Response(
        recorded.get("status", 200),
        headers=recorded.get("headers", {}),
        content=_ENCODER.encode(recorded["body"]) if "body" in recorded else recorded.get("text", "").encode(),
    )


def stream_response(case: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=case["stream"].encode())
