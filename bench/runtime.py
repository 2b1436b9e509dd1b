"""Runtime benchmark: `ask` end to end on the scripted provider (model resolved, request built, call priced, instance
created and saved in a `MemoryInstanceStore`) beside a bare `ScriptedProvider.send` of the same request, so the
runtime's own overhead per call is the difference. Also: a streamed call, a cache hit, a chat turn, and one turn of an
agent run (an eleven-turn run on the scripted provider divided by eleven; `bench/agents.py` has the whole run beside a
hand-written loop).

    uv run python bench/runtime.py

Everything runs in one event loop; figures are CPU microseconds per call (best of five runs).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import anyio

from onellm import Runtime
from onellm.instances import MemoryInstanceStore
from onellm.messages import Message, TextPart
from onellm.providers._request import ChatRequest
from onellm.testing import ScriptedProvider, ScriptStep

STEP = ScriptStep.text_with_usage("2, 3 and 5.", 13, 7)


class _Discard:
    """A store that keeps nothing: shows the runtime's own work apart from writing the instance text."""

    async def save(self, instance: object) -> None:
        return None


async def per_call(
    fn: Callable[[], Awaitable[object]], provider: ScriptedProvider, number: int, *, sends: bool = True
) -> float:
    best = float("inf")
    for _ in range(5):
        if sends:
            provider.enqueue(*([STEP] * number))
        start = time.process_time()
        for _ in range(number):
            await fn()
        best = min(best, time.process_time() - start)
    return best / number * 1e6


AGENT = """\
model: gpt-6-luna
references:
  - tools: [lookup, task_complete]
initialPrompts:
  - user:
      - text: Look up the ten entries, then answer.
"""


async def agent_turn(runtime: Runtime) -> float:
    """CPU microseconds per turn of an eleven-turn agent run (ten tool-calling turns and a final answer)."""
    import onellm
    from onellm.definitions import Definition
    from onellm.messages import Usage
    from onellm.testing import ScriptedToolCall

    @onellm.tool
    async def lookup(n: int) -> str:
        """Looks an entry up.

        Args:
            n: The entry.
        """
        return f"entry {n}: ok"

    runtime.tools.add(lookup, replace=True)
    provider = ScriptedProvider("openai")
    runtime.providers.set("openai", provider)
    definition = Definition.loads(AGENT)
    steps = [
        ScriptStep(
            tool_calls=(ScriptedToolCall(f"c{i}", "lookup", {"n": i}),), usage=Usage(input_tokens=300, output_tokens=20)
        )
        for i in range(10)
    ]
    steps.append(STEP)
    best = float("inf")
    for _ in range(5):
        provider.enqueue(*steps * 40)
        start = time.process_time()
        for _ in range(40):
            await runtime.run_agent(definition)
        best = min(best, time.process_time() - start)
    provider.assert_complete()
    return best / 40 / 11 * 1e6


async def main() -> None:
    provider = ScriptedProvider("openai")
    runtime = Runtime(store=MemoryInstanceStore(), environ={})
    runtime.providers.set("openai", provider)
    discard = Runtime(store=_Discard(), environ={})  # type: ignore[arg-type]
    discard.providers.set("openai", provider)
    cached = Runtime(store=MemoryInstanceStore(), environ={}, cache=True)
    cached.providers.set("openai", provider)
    request = ChatRequest(model="gpt-6-luna", messages=[Message(user=[TextPart("Name three prime numbers.")])])
    number = 2000

    async def bare() -> object:
        return await provider.send(request)

    async def ask() -> object:
        return await runtime.ask("gpt-6-luna", "Name three prime numbers.")

    async def ask_unsaved() -> object:
        return await discard.ask("gpt-6-luna", "Name three prime numbers.")

    async def stream() -> object:
        return await runtime.stream("gpt-6-luna", "Name three prime numbers.").result()

    provider.enqueue(STEP)
    await cached.ask("gpt-6-luna", "Name three prime numbers.")

    async def cache_hit() -> object:
        return await cached.ask("gpt-6-luna", "Name three prime numbers.")

    chat = runtime.chat("gpt-6-luna")

    async def chat_turn() -> object:
        if len(chat.instance.messages) > 20:
            chat.instance.messages.clear()
        return await chat.ask("And the next one?")

    provider.enqueue(STEP)
    await ask()  # warm up: catalog, pricing, imports
    rows = [
        ("bare ScriptedProvider.send", await per_call(bare, provider, number)),
        ("runtime.ask (priced, instance saved in memory)", await per_call(ask, provider, number)),
        ("runtime.ask, store that keeps nothing (no YAML)", await per_call(ask_unsaved, provider, number)),
        ("runtime.stream(...).result()", await per_call(stream, provider, number)),
        ("chat turn (history up to 20 messages)", await per_call(chat_turn, provider, number)),
    ]
    rows.append(("runtime.ask, result cache hit", await per_call(cache_hit, provider, number, sends=False)))
    rows.append(("agent turn (eleven-turn run / 11, memory store)", await agent_turn(runtime)))
    provider.assert_complete()
    base = rows[0][1]
    print(f"{'operation':<50} {'µs/call':>10} {'overhead':>10}")
    for name, value in rows:
        print(f"{name:<50} {value:>10.1f} {value - base:>10.1f}")


if __name__ == "__main__":
    anyio.run(main)
