"""onellm's own clients for bench/providers.py: the same operations through onellm's providers (`onellm`), and the same
turn through `Runtime` (`onellm-runtime`)."""

from __future__ import annotations

from typing import Any

from providers import Outcome

from onellm import Runtime
from onellm.catalog import Catalog
from onellm.instances import Instance, MemoryInstanceStore, new_instance_id
from onellm.messages import Message, TextPart
from onellm.messages._events import TextDelta, UsageEvent
from onellm.providers._request import ChatRequest
from onellm.providers.anthropic import AnthropicProvider
from onellm.providers.gemini import GeminiProvider
from onellm.providers.openai import OpenAICompatibleProvider, OpenAIProvider

KEY = "bench-key"


def to_messages(turns: list[tuple[str, str]]) -> list[Message]:
    """Alternating user/assistant turns as onellm messages (one message holds a user turn and its answer)."""
    messages: list[Message] = []
    for role, text in turns:
        if role == "user":
            messages.append(Message(user=[TextPart(text=text)]))
        else:
            messages[-1].assistant.append(TextPart(text=text))
    return messages


def providers(base: str) -> dict[str, Any]:
    return {
        "openai-chat": OpenAICompatibleProvider(base_url=f"{base}/v1", api_key=KEY, name="openai", first_party=True),
        "openai-responses": OpenAIProvider(base_url=f"{base}/v1", api_key=KEY),
        "anthropic": AnthropicProvider(base_url=base, api_key=KEY, max_tokens=1024),
        "gemini": GeminiProvider(base_url=f"{base}/v1beta", api_key=KEY),
    }


def _usage(usage: Any) -> tuple[int | None, int | None]:
    if usage is None:
        return None, None
    return usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens, usage.output_tokens


class OnellmClient:
    """A provider call: a `ChatRequest` of the conversation's messages, sent, the answer read."""

    name = "onellm"
    formats = ("openai-chat", "openai-responses", "anthropic", "gemini")

    def __init__(self, base: str) -> None:
        self.providers = providers(base)
        self._messages: dict[int, list[Message]] = {}

    def _request(self, turns: list[tuple[str, str]], model: str) -> ChatRequest:
        # a caller keeps its conversation as messages; converting the benchmark's tuples is not part of the cost
        messages = self._messages.get(id(turns))
        if messages is None:
            messages = self._messages[id(turns)] = to_messages(turns)
        return ChatRequest(model=model, messages=messages)

    async def request(self, fmt: str, turns: list[tuple[str, str]], model: str) -> Outcome:
        response = await self.providers[fmt].send(self._request(turns, model))
        return Outcome(response.message.text, *_usage(response.usage), 1)

    async def stream(self, fmt: str, turns: list[tuple[str, str]], model: str, *, first_only: bool) -> Outcome:
        pieces: list[str] = []
        events = self.providers[fmt].stream(self._request(turns, model))
        usage = None
        try:
            async for event in events:
                if type(event) is TextDelta:
                    text = event.text
                    pieces.append(text if type(text) is str else text.decode())
                    if first_only:
                        break
                elif type(event) is UsageEvent:
                    usage = event.usage if usage is None else usage.merge(event.usage)
        finally:
            await events.aclose()
        return Outcome("".join(pieces), *_usage(usage), len(pieces))

    async def aclose(self) -> None:
        for provider in self.providers.values():
            await provider.aclose()


# The mock's models, priced, under one catalog provider per wire format.
_MODELS = ["mock-model", "mock-model-events-2000", "mock-model-events-50"]
_GEMINI_MODELS = ["gemini-mock", "gemini-mock-events-2000", "gemini-mock-events-50"]
_PROVIDERS = {
    "openai-chat": ("bench-chat", "openai-compatible", _MODELS),
    "openai-responses": ("bench-responses", "openai", _MODELS),
    "anthropic": ("bench-anthropic", "anthropic", _MODELS),
    "gemini": ("bench-gemini", "gemini", _GEMINI_MODELS),
}


def _catalog() -> Catalog:
    entries = [
        {
            "name": name,
            "protocol": protocol,
            "models": [
                {"name": model, "kind": "chat", "pricing": {"inputPerMillion": 3, "outputPerMillion": 15}}
                for model in models
            ],
        }
        for name, protocol, models in _PROVIDERS.values()
    ]
    return Catalog.default().with_overrides(entries)


class OnellmRuntimeClient:
    """The same turn through `Runtime`: a chat on a conversation that already holds the history (the instance is
    built fresh from the caller's messages each turn), the new user message appended, the answer priced and the
    instance saved in a `MemoryInstanceStore` (its text written)."""

    name = "onellm-runtime"
    formats = ("openai-chat", "openai-responses", "anthropic", "gemini")

    def __init__(self, base: str) -> None:
        self.store = MemoryInstanceStore()
        self.runtime = Runtime(catalog=_catalog(), store=self.store, environ={})
        for fmt, provider in providers(base).items():
            self.runtime.providers.set(_PROVIDERS[fmt][0], provider)
        self._messages: dict[int, list[Message]] = {}

    def _chat(self, fmt: str, turns: list[tuple[str, str]], model: str) -> tuple[Any, str]:
        # the conversation so far, as the caller keeps it; its last user turn is what this turn asks
        messages = self._messages.get(id(turns))
        if messages is None:
            messages = self._messages[id(turns)] = to_messages(turns[:-1])
        assert turns[-1][0] == "user"
        instance = Instance(id=new_instance_id(), messages=list(messages))
        chat = self.runtime.chat(f"{_PROVIDERS[fmt][0]}:{model}", instance=instance)
        return chat, turns[-1][1]

    def _forget(self, chat: Any) -> None:
        self.store._items.pop(chat.instance.id, None)  # keep the store from growing over the run

    async def request(self, fmt: str, turns: list[tuple[str, str]], model: str) -> Outcome:
        chat, prompt = self._chat(fmt, turns, model)
        result = await chat.send(prompt)
        self._forget(chat)
        return Outcome(result.text, *_usage(result.usage), 1)

    async def stream(self, fmt: str, turns: list[tuple[str, str]], model: str, *, first_only: bool) -> Outcome:
        chat, prompt = self._chat(fmt, turns, model)
        answer = chat.stream(prompt)
        count = 0
        first: Outcome | None = None
        async with answer:  # a stream left part-way is closed, its instance saved `stopped`
            async for event in answer:
                if type(event) is TextDelta:
                    count += 1
                    if first_only:
                        text = event.text
                        first = Outcome(text if type(text) is str else text.decode(), None, None, 1)
                        break
            else:
                result = await answer.result()
        self._forget(chat)
        if first is not None:
            return first
        return Outcome(result.text, *_usage(result.usage), count)

    async def aclose(self) -> None:
        for name, _, _ in _PROVIDERS.values():
            await self.runtime.providers.get(name).aclose()
        await self.runtime.aclose()


__all__: list[Any] = ["OnellmClient", "OnellmRuntimeClient"]
