"""Sub-agents and the agent tools: starting children linked to their caller under its grants, reach, depth, waiting,
messaging, listing and searching, and the subtree's cost.

The parent runs on `claude-sonnet` (the `anthropic` scripted provider) and children on `gpt-6-luna` (the `openai`
one), so each has its own script; instance ids are made predictable (`i1`, `i2`, ...) so a script can name them.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest

import onellm
from onellm.agents import StopReason, SubAgentStarted
from onellm.definitions import Definition
from onellm.messages import JsonPart, TextPart
from onellm.testing import ScriptedProvider

from .conftest import Harness, calls, done, say

pytestmark = pytest.mark.anyio

CHILD = """\
name: child
model: gpt-6-luna
systemPrompt: You do one part.
references:
  - tools: [echo, task_complete]
"""


@pytest.fixture
def ids(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = itertools.count(1)
    monkeypatch.setattr("onellm.instances.new_instance_id", lambda: f"i{next(counter)}")


@pytest.fixture
def children(harness: Harness) -> ScriptedProvider:
    harness.runtime.capabilities = onellm.Capabilities.files(harness.folder).with_working_directory(harness.folder)
    provider = ScriptedProvider("openai")
    harness.runtime.providers.set("openai", provider)
    return provider


def parent(harness: Harness, tools: str = "[echo, run_agent_async, await_agent, task_complete]") -> Path:
    return harness.agent(tools=tools, prompt="Split the job.")


def result_of(instance: onellm.Instance, call_id: str) -> Any:
    for message in instance.messages:
        for call in message.tool_calls:
            if call.id == call_id:
                assert call.result is not None
                if len(call.result) == 1 and isinstance(call.result[0], JsonPart):
                    return call.result[0].json
                text = "".join(p.text for p in call.result if isinstance(p, TextPart))
                return text if call.is_error else json.loads(text)
    raise AssertionError(f"no call {call_id}")


async def test_a_child_from_a_file_is_linked_runs_beside_and_its_cost_rolls_up(
    harness: Harness, children: ScriptedProvider, ids: None
) -> None:
    harness.write("child.yaml", CHILD)
    path = parent(harness)
    harness.script(
        calls(("r1", "run_agent_async", {"agentSwarmUri": "child.yaml", "prompt": "Write part one."}), usage=(100, 10)),
        calls(("a1", "await_agent", {"ids": ["i2"]}), usage=(200, 10)),
        done("all parts"),
    )
    children.enqueue(calls(("e1", "echo", {"text": "part one"}), usage=(50, 5)), done("part one written", "wrote it"))
    result = await harness.runtime.run_agent(path)
    assert result.stop_reason is StopReason.COMPLETED
    started = result_of(result.instance, "r1")
    assert started == {"agentId": "i2", "name": "child", "state": "running"}
    report = result_of(result.instance, "a1")["agents"][0]
    assert {k: report[k] for k in ("agentId", "name", "state", "result", "summary")} == {
        "agentId": "i2",
        "name": "child",
        "state": "stopped",
        "result": "part one written",
        "summary": "wrote it",
    }
    child = await harness.runtime.store.load("i2")
    assert child is not None
    assert (
        child.spawner_instance_id,
        child.caller_instance_id,
        child.caller_tool_call_id,
        child.delegation_prompt,
    ) == (
        "i1",
        "i1",
        "r1",
        "Write part one.",
    )
    assert child.agent_definition == "child.yaml"
    assert child.capabilities is not None
    assert child.capabilities["tools"] == sorted(["echo", "run_agent_async", "await_agent", "task_complete"])
    assert ("echo", {"text": "part one"}) in harness.ran
    from onellm.agents._result import instance_cost

    own = instance_cost(result.instance).total
    theirs = instance_cost(child).total
    assert theirs > 0
    assert own > 0
    assert result.cost.total == own
    assert result.subtree_cost.total == own + theirs


async def test_a_child_from_a_file_may_not_widen_the_tool_set(
    harness: Harness, children: ScriptedProvider, ids: None
) -> None:
    harness.write("child.yaml", CHILD.replace("[echo, task_complete]", "[echo, write_note, task_complete]"))
    path = parent(harness)
    harness.script(
        calls(("r1", "run_agent_async", {"agentSwarmUri": "child.yaml", "prompt": "Go."})),
        done(),
    )
    result = await harness.runtime.run_agent(path)
    text = result_of(result.instance, "r1")
    assert "write_note" in text
    assert "does not hold" in text
    assert await harness.runtime.store.load("i2") is None


async def test_a_registered_definition_chooses_its_own_tools_under_the_callers_grants(
    harness: Harness, children: ScriptedProvider, ids: None
) -> None:
    harness.runtime.agent_definitions.add(
        "team/noter", Definition.loads(CHILD.replace("[echo, task_complete]", "[write_note, task_complete]"))
    )
    path = parent(harness)
    harness.script(
        calls(("r1", "run_agent_async", {"agentSwarmUri": "team/noter", "prompt": "Note it."})),
        calls(("a1", "await_agent", {"ids": ["i2"]})),
        done(),
    )
    children.enqueue(calls(("n1", "write_note", {"text": "hello"})), done("noted"))
    await harness.runtime.run_agent(path)
    assert ("write_note", {"text": "hello"}) in harness.ran
    child = await harness.runtime.store.load("i2")
    assert child is not None
    assert "tools" not in (child.capabilities or {})
    assert child.agent_definition == "team/noter"


async def test_a_child_asking_for_a_grant_its_parent_lacks_is_refused_naming_it(
    harness: Harness, children: ScriptedProvider, ids: None
) -> None:
    harness.runtime.agent_definitions.add(
        "team/shell",
        Definition.loads(CHILD.replace("[echo, task_complete]", "[execute_terminal_command, task_complete]")),
    )
    harness.runtime.capabilities = onellm.Capabilities.files(harness.folder) + onellm.Capabilities.shell()
    harness.runtime.tools.add(*onellm.builtin_tools())
    path = parent(harness)
    harness.script(calls(("r1", "run_agent_async", {"agentSwarmUri": "team/shell", "prompt": "Run ls."})), done())
    run = await harness.runtime.start_agent(path, capabilities=onellm.Capabilities.files(harness.folder))
    result = await run.result()
    text = result_of(result.instance, "r1")
    assert "execute_terminal_command" in text
    assert "shell" in text.lower()
    assert await harness.runtime.store.load("i2") is None


async def test_definition_files_are_read_only_under_the_read_roots_after_links(
    harness: Harness, children: ScriptedProvider, ids: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    secret = outside / "secret.yaml"
    secret.write_text(CHILD.replace("You do one part.", "TOP-SECRET-PROMPT"), encoding="utf-8")
    os.symlink(secret, harness.folder / "link.yaml")
    path = parent(harness)
    harness.script(
        calls(
            ("r1", "run_agent_async", {"agentSwarmUri": str(secret), "prompt": "Go."}),
            ("r2", "run_agent_async", {"agentSwarmUri": "link.yaml", "prompt": "Go."}),
            ("r3", "run_agent_async", {"agentSwarmUri": "../" + outside.name + "/secret.yaml", "prompt": "Go."}),
            ("r4", "run_agent_async", {"agentSwarmUri": "missing.yaml", "prompt": "Go."}),
        ),
        done(),
    )
    result = await harness.runtime.run_agent(path)
    for call_id in ("r1", "r2", "r3"):
        text = result_of(result.instance, call_id)
        assert "CapabilityDeniedError" in text, text
        assert "TOP-SECRET" not in text
        assert "gpt-6-luna" not in text
    assert "no such definition" in result_of(result.instance, "r4")
    assert [s.id for s in await harness.runtime.store.list()] == ["i1"]


async def test_a_cycle_of_agents_starting_each_other_stops_at_the_depth_limit(
    harness: Harness, children: ScriptedProvider, ids: None
) -> None:
    harness.runtime.max_agent_depth = 3
    loop = "name: looper\nmodel: claude-sonnet\nreferences:\n  - tools: [run_agent_async, await_agent, task_complete]\n"
    harness.write("loop.yaml", loop)
    path = harness.write("agent.yaml", loop + "initialPrompts:\n  - user:\n      - text: Start yourself.\n")
    # Each level starts the next and waits for it in one answer; the fourth start is refused. Only one agent
    # calls the model at a time, so one script serves them all in order.
    for level in range(1, 5):
        harness.script(
            calls(
                (f"r{level}", "run_agent_async", {"agentSwarmUri": "loop.yaml", "prompt": "Start yourself."}),
                (f"a{level}", "await_agent", {"ids": [f"i{level + 1}"]}),
            )
        )
    for level in (4, 3, 2, 1):
        harness.script(done(call_id=f"t{level}"))
    result = await harness.runtime.run_agent(path)
    assert result.stop_reason is StopReason.COMPLETED
    deepest = await harness.runtime.store.load("i4")
    assert deepest is not None
    text = result_of(deepest, "r4")
    assert "AgentStateError" in text
    assert "over the limit of 3" in text
    assert "cycle" in text
    assert "InstanceNotFoundError" in result_of(deepest, "a4")
    assert await harness.runtime.store.load("i5") is None
    links = {i: (await harness.runtime.store.load(i)).spawner_instance_id for i in ("i1", "i2", "i3", "i4")}  # type: ignore[union-attr]
    assert links == {"i1": None, "i2": "i1", "i3": "i2", "i4": "i3"}


async def test_reach_is_the_caller_and_those_it_started(
    harness: Harness, children: ScriptedProvider, ids: None
) -> None:
    harness.write("child.yaml", CHILD.replace("[echo, task_complete]", "[task_complete]"))
    other = await harness.runtime.start_agent(harness.agent(prompt="Stranger."))
    harness.script(say("I am a stranger."))
    await other.result()  # i1, not started by the parent
    path = harness.write(
        "parent.yaml",
        "name: boss\nmodel: claude-sonnet\nreferences:\n  - tools: [run_agent_async, await_agent, message_agent, "
        "query_agent, list_agent_instances, monitor_agent, task_complete]\n"
        "initialPrompts:\n  - user:\n      - text: Go.\n",
    )
    harness.script(
        calls(("r1", "run_agent_async", {"agentSwarmUri": "child.yaml", "prompt": "Part."})),
        calls(
            ("q1", "query_agent", {"agentId": "i1"}),
            ("m1", "message_agent", {"agentId": "i1", "prompt": "Hi"}),
            ("w1", "await_agent", {"ids": ["i1"]}),
            ("u1", "await_agent", {"ids": ["nope"]}),
            ("x1", "message_agent", {}),
            ("a1", "await_agent", {"ids": ["i3"]}),
        ),
        calls(("q2", "query_agent", {"agentId": "i3", "query": "PART"}), ("l1", "list_agent_instances", {})),
        done(),
    )
    children.enqueue(done("part done"))
    result = await harness.runtime.run_agent(path)
    for call_id in ("q1", "m1", "w1"):
        text = result_of(result.instance, call_id)
        assert "CapabilityDeniedError" in text
        assert "not one you started" in text
    assert "InstanceNotFoundError" in result_of(result.instance, "u1")
    listed = result_of(result.instance, "l1")["instances"]
    assert sorted(row["agentId"] for row in listed) == ["i2", "i3"]
    assert "run_agent_async" in result_of(result.instance, "x1")
    found = result_of(result.instance, "q2")["messages"]
    assert found
    assert "Part." in found[0]["text"]
    # the runtime itself is never restricted, and reach-any opens the tools up
    assert (await harness.runtime.get_agent("i1")).instance.name == "helper"
    harness.runtime.agents_may_reach_any_instance = True
    harness.script(calls(("q3", "query_agent", {"agentId": "i1", "query": "stranger"})), done())
    run = await harness.runtime.get_agent("i2")
    await run.message("Again.")
    again = await run.result()
    assert "I am a stranger." in result_of(again.instance, "q3")["messages"][0]["text"]


async def test_eight_children_run_concurrently_and_a_message_wakes_a_resting_one(
    harness: Harness, children: ScriptedProvider, ids: None
) -> None:
    import anyio

    arrived = 0
    everyone = anyio.Event()

    @onellm.tool
    async def gather_here() -> str:
        """Waits until all eight children are here at once."""
        nonlocal arrived
        arrived += 1
        if arrived == 8:
            everyone.set()
        with anyio.fail_after(5):
            await everyone.wait()
        return "all here"

    harness.runtime.tools.add(gather_here)
    harness.runtime.agent_definitions.add(
        "child", Definition.loads(CHILD.replace("[echo, task_complete]", "[gather_here, task_complete]"))
    )
    path = harness.agent(tools="[run_agent_async, await_agent, message_agent, task_complete]", prompt="Fan out.")
    starts = [(f"r{n}", "run_agent_async", {"agentSwarmUri": "child", "prompt": f"Part {n}."}) for n in range(8)]
    harness.script(
        calls(*starts),
        calls(("a1", "await_agent", {"ids": [f"i{n}" for n in range(2, 10)]})),
        calls(("m1", "message_agent", {"agentId": "i2", "prompt": "One more thing."})),
        calls(("a2", "await_agent", {"ids": ["i2"]})),
        done(),
    )
    # Every child makes its first call before any can make a second (they wait for each other), so the first
    # eight steps go to first turns.
    children.enqueue(*[calls(("g", "gather_here", {})) for _ in range(8)], *[say("part done") for _ in range(8)])
    children.enqueue(say("the more thing"))
    result = await harness.runtime.run_agent(path)
    assert arrived == 8  # each waited for all eight: they ran side by side
    reports = result_of(result.instance, "a1")["agents"]
    assert [r["state"] for r in reports] == ["waiting"] * 8
    assert [r["lastText"] for r in reports] == ["part done"] * 8
    again = result_of(result.instance, "a2")["agents"][0]
    assert again["lastText"] == "the more thing"
    woken = await harness.runtime.store.load("i2")
    assert woken is not None
    assert [m.source.kind for m in woken.messages if m.source is not None and m.user][-1] == "agent"


async def test_await_agent_ends_early_for_a_message_and_times_out(
    harness: Harness, children: ScriptedProvider, ids: None
) -> None:
    harness.runtime.agent_definitions.add(
        "slow", Definition.loads(CHILD.replace("[echo, task_complete]", "[wait_then, task_complete]"))
    )
    path = harness.agent(tools="[run_agent_async, await_agent, task_complete]", prompt="Go.")
    harness.script(
        calls(("r1", "run_agent_async", {"agentSwarmUri": "slow", "prompt": "Slow part."})),
        calls(("a1", "await_agent", {"ids": ["i2"], "timeout": 0.05})),
        calls(("a2", "await_agent", {"ids": ["i2"], "timeout": "10s"})),
        done(),
    )
    children.enqueue(calls(("w", "wait_then", {"seconds": 0.6, "text": "slow"})), done("slow part"))
    run = await harness.runtime.start_agent(path)
    seen: list[Any] = []
    async for event in run.events():
        seen.append(event)
        if isinstance(event, onellm.agents.ToolCallStarted) and event.call_id == "a2":
            await run.message("Stop waiting, look at this.")
    result = await run.result()
    first = result_of(result.instance, "a1")
    assert first["timedOut"] is True
    assert first["agents"][0]["state"] == "running"
    second = result_of(result.instance, "a2")
    assert "interrupted" in second
    started = [e for e in seen if isinstance(e, SubAgentStarted)]
    assert [(e.instance_id, e.child_id, e.definition, e.call_id) for e in started] == [("i1", "i2", "slow", "r1")]


async def test_the_agent_tools_outside_a_run_say_so() -> None:
    from onellm.tools.builtin.subagents import subagent_tool

    result = await subagent_tool("await_agent").invoke({"ids": ["x"]})
    assert result.is_error
    assert "only inside an agent run" in result.parts[0].text


def test_the_tools_have_the_tables_names_and_are_found_by_reference_path() -> None:
    from onellm.tools import ToolRegistry

    registry = ToolRegistry()
    names = [
        "task_complete",
        "run_agent_async",
        "await_agent",
        "message_agent",
        "monitor_agent",
        "await_monitor",
        "list_agent_instances",
        "query_agent",
    ]
    for name in names:
        found = registry.find("/runtime/agents/" + name.replace("_", "-"))
        assert found is not None
        assert found.name == name
    schema = registry.find("run_agent_async").input_schema  # type: ignore[union-attr]
    assert sorted(schema["properties"]) == ["agentId", "agentSwarmUri", "inputs", "prompt"]
    monitor = registry.find("monitor_agent").input_schema  # type: ignore[union-attr]
    assert sorted(monitor["properties"]) == ["agentId", "contextAt", "elapsed", "onFinish", "turns"]
