"""Fixtures of the decider tests. Test modules cannot import each other here (pytest's importlib mode), so what
they share is handed out by the `h` fixture: `h.write_decider`, `h.runtime_with`, `h.ChatByFunction`,
`h.SlowDecisions`."""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from onellm import Runtime
from onellm.instances import MemoryInstanceStore
from onellm.messages import Message, TextPart, Usage
from onellm.providers._request import ChatRequest, ChatResponse, FinishReason
from onellm.records import EventRecordSink
from onellm.testing import ScriptedDecisionProvider


def write_decider(folder: Path, text: str, *, schema: dict[str, Any] | None = None, **files: str) -> Path:
    """Write `decider.yaml` (and `decider.schema.json`, and any other file by name) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "decider.yaml").write_text(text, encoding="utf-8")
    if schema is not None:
        (folder / "decider.schema.json").write_text(json.dumps(schema), encoding="utf-8")
    for name, content in files.items():
        (folder / name.replace("__", ".")).write_text(content, encoding="utf-8")
    return folder


class ChatByFunction:
    """A chat provider whose reply text comes from `reply(request)`; records every request, and how many calls were
    in flight at once."""

    def __init__(self, name: str, reply: Callable[[ChatRequest], str], *, delay: float = 0.0) -> None:
        self.name = name
        self.reply = reply
        self.delay = delay
        self.requests: list[ChatRequest] = []
        self.events: list[tuple[str, str]] = []
        self.in_flight = 0
        self.most_in_flight = 0

    async def send(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        question = request.messages[-1].user_text
        self.events.append(("start", question))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await anyio.sleep(self.delay)
            text = self.reply(request)
        finally:
            self.in_flight -= 1
            self.events.append(("end", question))
        return ChatResponse(
            message=Message(assistant=[TextPart(text)]),
            usage=Usage(input_tokens=1000, output_tokens=20),
            finish_reason=FinishReason.STOP,
            provider_finish_reason="stop",
            model=request.model,
        )


class SlowDecisions(ScriptedDecisionProvider):
    """A scripted engine that takes a while per request and counts how many requests were in flight at once."""

    def __init__(self, name: str = "typesafe", delay: float = 0.01) -> None:
        super().__init__(name)
        self.delay = delay
        self.in_flight = 0
        self.most_in_flight = 0

    async def decide(self, request: Any) -> Any:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await anyio.sleep(self.delay)
            return await super().decide(request)
        finally:
            self.in_flight -= 1


def runtime_with(*providers: Any, events: list[Any] | None = None, **options: Any) -> Runtime:
    """A runtime over a memory store with these providers registered under their names (and an event sink)."""
    records = [EventRecordSink(events.append)] if events is not None else None
    runtime = Runtime(environ={}, store=MemoryInstanceStore(), records=records, **options)
    for provider in providers:
        runtime.providers.set(provider.name, provider)
    return runtime


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def h() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        write_decider=write_decider,
        runtime_with=runtime_with,
        ChatByFunction=ChatByFunction,
        SlowDecisions=SlowDecisions,
    )
