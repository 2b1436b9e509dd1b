"""Sub-agent and context-strategy benchmark, on the scripted provider with an in-memory store.

Rows, interleaved round by round:

- single agent: one agent, eleven turns (ten `lookup` calls and `task_complete`): CPU time per turn;
- eight children: a parent starts eight children at once (`run_agent_async`), waits for them (`await_agent`) and
  completes; each child makes eleven turns. Reported per turn over all 91 turns (8 x 11 and the parent's 3), beside
  the single-agent row: the difference is what running as a child costs (linking, grants, the parent's task group,
  the hub, waking the waiter);
- clearToolResults on a 200,000-token instance (200 tool-calling turns of about 1,000 tokens each): the strategy
  itself, and the strategy with the in-memory save that follows it.

    uv run python bench/subagents.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from typing import Any

import anyio

import onellm
import onellm.instances
from onellm.agents._context import clear_tool_results
from onellm.definitions import Definition
from onellm.instances import Instance, MemoryInstanceStore
from onellm.messages import Message, TextPart, ToolCall, Usage
from onellm.testing import ScriptedProvider, ScriptedToolCall, ScriptStep

TURNS = 11
CHILDREN = 8

SINGLE = """\
name: single
model: gpt-6-luna
references:
  - tools: [lookup, task_complete]
initialPrompts:
  - user:
      - text: Look up the ten entries, then answer.
"""

PARENT = """\
name: parent
model: claude-sonnet
references:
  - tools: [run_agent_async, await_agent, task_complete]
initialPrompts:
  - user:
      - text: Fan out.
"""


@onellm.tool
async def lookup(n: int) -> str:
    """Looks an entry up.

    Args:
        n: The entry.
    """
    return f"entry {n}"


def step(*calls: tuple[str, str, dict[str, Any]]) -> ScriptStep:
    return ScriptStep(
        tool_calls=tuple(ScriptedToolCall(i, t, a) for i, t, a in calls),
        usage=Usage(input_tokens=300, output_tokens=20),
    )


def child_script() -> list[ScriptStep]:
    steps = [step((f"l{n}", "lookup", {"n": n})) for n in range(TURNS - 1)]
    steps.append(step(("t", "task_complete", {"result": "done", "summary": "looked up"})))
    return steps


def make_runtime() -> tuple[onellm.Runtime, ScriptedProvider, ScriptedProvider]:
    rt = onellm.Runtime(store=MemoryInstanceStore(), environ={})
    parent, children = ScriptedProvider("anthropic"), ScriptedProvider("openai")
    rt.providers.set("anthropic", parent)
    rt.providers.set("openai", children)
    rt.tools.add(lookup)
    rt.agent_definitions.add("child", Definition.loads(SINGLE.split("initialPrompts")[0]))
    return rt, parent, children


counter = itertools.count(1)


def next_id() -> str:
    return f"b{next(counter):012d}"


onellm.instances.new_instance_id = next_id


async def single(definition: Definition) -> float:
    rt, _, children = make_runtime()
    children.enqueue(*child_script())
    start = time.process_time()
    await rt.run_agent(definition)
    return time.process_time() - start


async def fan_out(definition: Definition) -> float:
    rt, parent, children = make_runtime()
    first = next(counter)
    ids = [f"b{first + 1 + n:012d}" for n in range(CHILDREN)]
    parent.enqueue(
        step(
            *[(f"r{n}", "run_agent_async", {"agentSwarmUri": "child", "prompt": f"Part {n}."}) for n in range(CHILDREN)]
        ),
        step(("a", "await_agent", {"ids": ids})),
        step(("t", "task_complete", {"result": "all", "summary": "fanned out"})),
    )
    for _ in range(CHILDREN):
        children.enqueue(*child_script())
    start = time.process_time()
    onellm.instances.new_instance_id = iter([f"b{first:012d}", *ids]).__next__
    try:
        result = await rt.run_agent(definition)
    finally:
        onellm.instances.new_instance_id = next_id
    elapsed = time.process_time() - start
    assert result.stop_reason.value == "completed", result
    assert children.pending == 0
    return elapsed


def big_instance() -> Instance:
    text = "word " * 800  # about 1,000 tokens
    messages = [Message(id="m0", user=[TextPart("Go.")])]
    messages.extend(
        Message(
            id=f"m{n}",
            assistant=[TextPart("Looking.")],
            tool_calls=[ToolCall(id=f"c{n}", tool="lookup", inputs={"n": n}, result=[TextPart(text)])],
            usage=Usage(input_tokens=1000 * n, output_tokens=10),
        )
        for n in range(1, 201)
    )
    return Instance(id="big", model="anthropic:claude-sonnet", state="running", messages=messages)


async def clear_and_save(store: MemoryInstanceStore) -> tuple[float, float]:
    inst = big_instance()
    await store.save(inst)
    start = time.perf_counter()
    messages, changed = clear_tool_results(inst.messages, 3)
    cleared = time.perf_counter() - start
    assert len(changed) == 197
    inst.messages[:] = messages
    await store.save(inst)
    return cleared, time.perf_counter() - start


async def main(rounds: int) -> None:
    single_def = Definition.loads(SINGLE)
    parent_def = Definition.loads(PARENT)
    store = MemoryInstanceStore()
    await single(single_def)
    await fan_out(parent_def)
    await clear_and_save(store)
    one: list[float] = []
    many: list[float] = []
    clear: list[float] = []
    clear_saved: list[float] = []
    for _ in range(rounds):
        one.append(await single(single_def))
        many.append(await fan_out(parent_def))
        c, s = await clear_and_save(store)
        clear.append(c)
        clear_saved.append(s)
    per_single = statistics.median(one) / TURNS
    turns = CHILDREN * TURNS + 3
    per_child = statistics.median(many) / turns
    print(f"sub-agents on the scripted provider, in-memory store, {rounds} rounds interleaved; medians of CPU time")
    print(f"{'row':<58} {'per run':>10} {'per turn':>10}")
    print(f"{'single agent, 11 turns':<58} {_fmt(statistics.median(one)):>10} {_fmt(per_single):>10}")
    print(
        f"{'parent + 8 children side by side, 91 turns':<58} {_fmt(statistics.median(many)):>10} {_fmt(per_child):>10}"
    )
    print(f"overhead per child turn over a single agent's turn: {_fmt(per_child - per_single)}")
    print()
    print("clearToolResults on a 200,000-token instance (200 tool-calling turns, keepLast 3), wall time")
    print(f"  the strategy:                 {_fmt(statistics.median(clear))}")
    print(f"  the strategy and the save:    {_fmt(statistics.median(clear_saved))}")


def _fmt(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    anyio.run(main, parser.parse_args().rounds)
