"""Agent loop benchmark: one run is eleven model turns (ten tool-calling turns and a final answer) on the scripted
provider, as in OneLLM's published results and PEERS.md's agent rows.

Rows, interleaved round by round so drift hits all of them alike:

- bare floor: PEERS.md's hand-written loop, with no provider object at all (the canned answers read from a list, the
  history kept in a list, the tool called directly); PEERS.md's agent rows are ratios to it;
- floor: the same loop on the scripted provider onellm reads its answers from (`ScriptedProvider.send`);
- openai-agents and pydantic-ai (when installed: `uv sync --all-packages --all-groups`): the same eleven turns through
  `Runner.run` with a scripted `Model` (tracing off) and through `Agent.run` with a `FunctionModel`;
- onellm, in-memory store: `Runtime.run_agent` with a `MemoryInstanceStore`, no record sinks, no hooks (every turn
  priced, saved as instance text, its tool call run through the invoker);
- onellm, a store that keeps nothing: the loop and its model calls without writing the instance text;
- onellm, one observer hook on `onMessage` (what a hook adds);
- onellm, the tool a plain function instead of a coroutine (it runs in a worker thread: the thread hop per call);
- onellm, file store: the same with a `FileInstanceStore`, every save flushed to disk (`durable=True`), and without
  the flush (`durable=False`).

Allocation is measured apart (tracemalloc slows everything down): bytes allocated per run and the difference one hook
makes. Ratios are printed to both floors; PEERS.md's targets are ratios to the bare floor (41.9 us there: a run under
1 ms is under 24x it).

    uv run python bench/agents.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

import onellm
from onellm.definitions import Definition
from onellm.instances import FileInstanceStore, MemoryInstanceStore
from onellm.messages import Message, TextPart, ToolCall, Usage
from onellm.providers._request import ChatRequest, ToolDefinition
from onellm.testing import ScriptedProvider, ScriptedToolCall, ScriptStep

AGENT = """\
name: bench
model: claude-sonnet
systemPrompt: You look things up, one at a time.
references:
  - tools: [lookup, task_complete]
initialPrompts:
  - user:
      - text: Look up the ten entries, then answer.
"""

TURNS = 11


@onellm.tool
async def lookup(n: int) -> str:
    """Looks an entry up.

    Args:
        n: The entry.
    """
    return f"entry {n}: ok"


@onellm.tool(name="lookup")
def lookup_in_thread(n: int) -> str:
    """Looks an entry up (a plain function: it runs in a worker thread).

    Args:
        n: The entry.
    """
    return f"entry {n}: ok"


def script() -> list[ScriptStep]:
    steps = [
        ScriptStep(
            tool_calls=(ScriptedToolCall(f"c{i}", "lookup", {"n": i}),),
            usage=Usage(input_tokens=300 + 40 * i, output_tokens=20),
        )
        for i in range(TURNS - 1)
    ]
    steps.append(ScriptStep.text_with_usage("All ten entries are ok.", 700, 12))
    return steps


class _Discard:
    """A store that keeps nothing: shows the loop's own work apart from writing the instance text. Like the memory
    store it cannot outlive the process, so it is `volatile` (a turn whose calls run at once is saved once)."""

    volatile = True

    async def save(self, instance: object) -> None:
        return None

    async def load(self, instance_id: str) -> None:
        return None


def runtime(store: Any, tool: Any = lookup) -> tuple[onellm.Runtime, ScriptedProvider]:
    rt = onellm.Runtime(store=store, environ={})
    provider = ScriptedProvider("anthropic")
    rt.providers.set("anthropic", provider)
    rt.tools.add(tool)
    return rt, provider


async def floor_run(provider: ScriptedProvider) -> str:
    """The same eleven calls, by hand: history in a list, the tool called directly, nothing priced or saved."""
    tools = [ToolDefinition(lookup.name, lookup.description, lookup.input_schema)]
    history = [Message(user=[TextPart("Look up the ten entries, then answer.")])]
    while True:
        request = ChatRequest(
            model="claude-sonnet-5-5", messages=list(history), system="You look things up, one at a time.", tools=tools
        )
        answer = (await provider.send(request)).message
        if not answer.tool_calls:
            return answer.text
        calls: list[ToolCall] = []
        for call in answer.tool_calls:
            value = await lookup.fn(**call.inputs) if lookup.fn is not None else ""
            calls.append(ToolCall(id=call.id, tool=call.tool, inputs=call.inputs, result=[TextPart(value)]))
        history[-1] = Message(user=history[-1].user, assistant=answer.assistant, tool_calls=calls)
        history.append(Message())


async def bare_floor_run() -> str:
    """PEERS.md's floor: the canned answers from a list, no provider object, nothing priced or saved."""
    answers = [(f"c{i}", {"n": i}) for i in range(TURNS - 1)]
    history: list[dict[str, Any]] = [{"role": "user", "content": "Look up the ten entries, then answer."}]
    turn = 0
    while True:
        request = {"model": "claude-sonnet-5-5", "messages": list(history), "system": "...", "tools": ["lookup"]}
        if turn == len(answers) or not request["messages"]:
            return "All ten entries are ok."
        call_id, inputs = answers[turn]
        turn += 1
        history.append({"role": "assistant", "tool_calls": [{"id": call_id, "name": "lookup", "input": inputs}]})
        value = await lookup.fn(**inputs) if lookup.fn is not None else ""
        history.append({"role": "tool", "tool_call_id": call_id, "content": value})


def openai_agents_row() -> Callable[[], Awaitable[object]] | None:
    """The same run on openai-agents: a `Model` that returns the script, the tool a `function_tool`, tracing off."""
    # This file is named agents.py too: look for the package with the bench directory off the path.
    here = Path(__file__).resolve().parent
    saved_path = sys.path[:]
    mine = sys.modules.pop("agents", None)
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    try:
        import agents as oa
        from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
    except ImportError:
        return None
    finally:
        sys.path[:] = saved_path
        if mine is not None:
            sys.modules["agents"] = mine
    oa.set_tracing_disabled(True)

    @oa.function_tool
    async def lookup(n: int) -> str:
        """Looks an entry up.

        Args:
            n: The entry.
        """
        return f"entry {n}: ok"

    class Scripted(oa.Model):
        def __init__(self) -> None:
            self.turn = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            i = self.turn
            self.turn += 1
            if i < TURNS - 1:
                output: list[Any] = [
                    ResponseFunctionToolCall(
                        type="function_call", call_id=f"c{i}", name="lookup", arguments=f'{{"n": {i}}}'
                    )
                ]
                usage = oa.Usage(requests=1, input_tokens=300 + 40 * i, output_tokens=20)
            else:
                text = ResponseOutputText(type="output_text", text="All ten entries are ok.", annotations=[])
                output = [
                    ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[text])
                ]
                usage = oa.Usage(requests=1, input_tokens=700, output_tokens=12)
            return oa.ModelResponse(output=output, usage=usage, response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    async def run() -> object:
        model = Scripted()
        agent = oa.Agent(name="bench", instructions="You look things up, one at a time.", tools=[lookup], model=model)
        result = await oa.Runner.run(agent, "Look up the ten entries, then answer.", max_turns=TURNS + 1)
        assert model.turn == TURNS, model.turn
        assert result.final_output == "All ten entries are ok.", result
        return result

    return run


def pydantic_ai_row() -> Callable[[], Awaitable[object]] | None:
    """The same run on pydantic-ai: a `FunctionModel` that returns the script, the tool a plain async function."""
    try:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, ToolCallPart
        from pydantic_ai.messages import TextPart as PaiText
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.usage import RequestUsage
    except ImportError:
        return None

    async def lookup(n: int) -> str:
        """Looks an entry up.

        Args:
            n: The entry.
        """
        return f"entry {n}: ok"

    async def run() -> object:
        turns = 0

        async def answer(messages: Any, info: Any) -> Any:
            nonlocal turns
            i = turns
            turns += 1
            if i < TURNS - 1:
                return ModelResponse(
                    parts=[ToolCallPart(tool_name="lookup", args={"n": i}, tool_call_id=f"c{i}")],
                    usage=RequestUsage(input_tokens=300 + 40 * i, output_tokens=20),
                )
            return ModelResponse(
                parts=[PaiText("All ten entries are ok.")], usage=RequestUsage(input_tokens=700, output_tokens=12)
            )

        agent = Agent(FunctionModel(answer), system_prompt="You look things up, one at a time.", tools=[lookup])
        result = await agent.run("Look up the ten entries, then answer.")
        assert turns == TURNS, turns
        assert result.output == "All ten entries are ok.", result
        return result

    return run


async def main(rounds: int) -> None:
    definition = Definition.loads(AGENT, file="bench.yaml")
    memory, memory_provider = runtime(MemoryInstanceStore())
    hooked, hooked_provider = runtime(MemoryInstanceStore())
    hooked.hooks.add(lambda ctx: None, point="onMessage", name="observer")
    threaded, threaded_provider = runtime(MemoryInstanceStore(), lookup_in_thread)
    discard, discard_provider = runtime(_Discard())
    folder = Path(tempfile.mkdtemp(prefix="onellm-bench-agents-"))
    durable, durable_provider = runtime(FileInstanceStore(folder / "durable", durable=True))
    quick, quick_provider = runtime(FileInstanceStore(folder / "quick", durable=False))
    floor_provider = ScriptedProvider("anthropic")

    def agent(rt: onellm.Runtime, provider: ScriptedProvider) -> Callable[[], Awaitable[object]]:
        async def run() -> object:
            provider.requests.clear()  # the scripted provider keeps every request for tests to read
            provider.enqueue(*script())
            result = await rt.run_agent(definition)
            assert result.turns == TURNS, result
            return result

        return run

    async def floor() -> object:
        floor_provider.requests.clear()
        floor_provider.enqueue(*script())
        return await floor_run(floor_provider)

    rows: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("hand-written loop, scripted provider (floor)", floor),
        ("hand-written loop, no provider (bare floor)", bare_floor_run),
        ("onellm, in-memory store", agent(memory, memory_provider)),
        ("onellm, a store that keeps nothing (no YAML)", agent(discard, discard_provider)),
        ("onellm, in-memory store, one onMessage hook", agent(hooked, hooked_provider)),
        ("onellm, in-memory store, sync tool in a thread", agent(threaded, threaded_provider)),
        ("onellm, file store, no flush", agent(quick, quick_provider)),
        ("onellm, file store, flushed every save", agent(durable, durable_provider)),
    ]
    for name, peer in (("openai-agents", openai_agents_row()), ("pydantic-ai", pydantic_ai_row())):
        if peer is None:
            print(f"{name} is not installed: its row is left out (uv sync --all-packages --all-groups)")
        else:
            rows.append((name, peer))
    for _, fn in rows:  # warm up: imports, catalog, pricing, template cache
        await fn()
    cpu: dict[str, list[float]] = {name: [] for name, _ in rows}
    wall: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _ in range(rounds):
        for name, fn in rows:
            gc.collect()
            started_cpu = time.process_time()
            started = time.perf_counter()
            await fn()
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - started_cpu)

    peaks: dict[str, int] = {}
    for name, fn in [rows[0], rows[2], rows[4]]:
        gc.collect()
        tracemalloc.start()
        await fn()  # once, so every lazy cache is filled before measuring
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        await fn()
        peaks[name] = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()

    floor_cpu = statistics.median(cpu[rows[0][0]])
    bare_cpu = statistics.median(cpu[rows[1][0]])
    print(f"eleven-turn agent run, {rounds} rounds interleaved; medians; CPU time is what the run itself costs on a")
    print("shared machine, wall time includes waiting (the disk, other processes)")
    print(f"{'row':<50} {'CPU/run':>10} {'CPU/turn':>10} {'wall/run':>10} {'x floor':>8} {'x bare':>8}")
    for name, _ in rows:
        c = statistics.median(cpu[name])
        w = statistics.median(wall[name])
        print(
            f"{name:<50} {_fmt(c):>10} {_fmt(c / TURNS):>10} {_fmt(w):>10} {c / floor_cpu:>7.1f}x {c / bare_cpu:>7.1f}x"
        )
    print()
    print("peak memory above the start of one run (tracemalloc):")
    for name, size in peaks.items():
        print(f"  {name:<48} {size / 1024:>8.1f} KB")
    print()
    print("PEERS.md, the same run on this machine class: bare floor 41.9 us, openai-agents 0.24.0 14.1 ms (336x),")
    print("pydantic-ai-slim 2.68.0 16.0 ms (382x); the target for onellm's in-memory row, 1 ms, is 24x the bare floor.")


def _fmt(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} us"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    anyio.run(main, args.rounds)
