"""Blocking calls from many threads on one runtime: every call answers, none hangs, and the runtime's providers share
their connections instead of holding one client across event loops. The server is a loopback one, because the
HTTP client's connection pool is what is under test; its answers follow the Responses shapes of openapi.yaml 2.3.0
(`Response`, `ResponseCreatedEvent`, `ResponseTextDeltaEvent`, `ResponseCompletedEvent`)."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import msgspec

import onellm
from onellm.catalog import Catalog
from onellm.instances import MemoryInstanceStore
from onellm.providers._http import ClientPool

from ._loopback import Answer, LoopbackServer


def _response(text: str, status: str = "completed") -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": status,
        "model": "gpt-6-luna",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ]
        if text
        else [],
        "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7},
    }


def responses(path: str, body: bytes) -> Answer:
    request = msgspec.json.decode(body)
    prompt = request["input"][0]["content"]
    if not request.get("stream"):
        return Answer(headers={"content-type": "application/json"}, pieces=[msgspec.json.encode(_response(prompt))])

    def event(kind: str, **data: Any) -> bytes:
        return f"event: {kind}\ndata: ".encode() + msgspec.json.encode({"type": kind, **data}) + b"\n\n"

    pieces = [
        event("response.created", response=_response("", "in_progress")),
        event("response.output_text.delta", output_index=0, content_index=0, delta=prompt[:3]),
        event("response.output_text.delta", output_index=0, content_index=0, delta=prompt[3:]),
        event("response.completed", response=_response(prompt)),
    ]
    return Answer(pieces=[b"".join(pieces)])


def test_eight_threads_of_ten_blocking_calls_on_one_runtime() -> None:
    with LoopbackServer(responses) as server:
        catalog = Catalog.shipped().with_overrides({"name": "openai", "baseUrl": f"{server.url}/v1"})
        runtime = onellm.Runtime(catalog=catalog, store=MemoryInstanceStore(), environ={"OPENAI_API_KEY": "sk-t"})
        answers: dict[str, str] = {}
        failures: list[BaseException] = []

        def work(thread: int) -> None:
            with onellm.use_runtime(runtime):
                for call in range(10):
                    prompt = f"thread {thread} call {call}"
                    try:
                        if call % 2:
                            answers[prompt] = onellm.ask_sync("gpt-6-luna", prompt)
                        else:
                            answers[prompt] = "".join(onellm.stream_text_sync("gpt-6-luna", prompt))
                    except BaseException as error:  # every failure is reported below
                        failures.append(error)

        threads = [threading.Thread(target=work, args=(n,), daemon=True) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert [t for t in threads if t.is_alive()] == [], "a blocking call hung"
        assert failures == []
        assert answers == {f"thread {t} call {c}": f"thread {t} call {c}" for t in range(8) for c in range(10)}
        assert len(server.requests) == 80
        # one client for the one loop that runs blocking calls: at most one connection per call in flight at once
        assert server.connections <= 8

        from onellm.runtime._sync import drive

        pool = runtime.providers.pool
        assert isinstance(pool, ClientPool)
        drive(runtime.aclose(), "aclose")


def test_a_provider_is_used_from_a_new_event_loop_each_time() -> None:
    """`asyncio.run` (or `anyio.run`) twice with one provider: each loop gets its own client."""
    with LoopbackServer(responses) as server:
        provider = onellm.OpenAIProvider(base_url=f"{server.url}/v1", api_key="sk-t")
        from onellm.messages import Message, TextPart
        from onellm.providers import ChatRequest

        async def ask(text: str) -> str:
            response = await provider.send(ChatRequest("gpt-6-luna", [Message(user=[TextPart(text)])]))
            return response.message.text

        assert anyio.run(ask, "first") == "first"
        assert anyio.run(ask, "second") == "second"

        async def close() -> None:
            await provider.aclose()

        anyio.run(close)
