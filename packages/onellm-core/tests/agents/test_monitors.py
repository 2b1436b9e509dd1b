"""Monitors: `contextAt` (tokens or a share of the window), `turns`, `onFinish` and `elapsed`, combined with OR; each
fires once and disarms, re-arming replaces, the alert is a runtime message unless the watcher waits in
`await_monitor`; `Runtime.agent_events` hears of it; unreadable conditions are refused naming them."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import onellm
from onellm.agents import MonitorFired, StopReason
from onellm.agents._monitors import parse_context_at, parse_duration
from onellm.definitions import Definition
from onellm.errors import ArgumentError
from onellm.messages import JsonPart, TextPart
from onellm.testing import ScriptedProvider

from .conftest import Harness, calls, done, say

pytestmark = pytest.mark.anyio

CHILD = """\
name: worker
model: gpt-6-luna
references:
  - tools: [echo, wait_then, task_complete]
"""

BOSS = "[run_agent_async, await_agent, monitor_agent, await_monitor, task_complete]"


@pytest.fixture
def kids(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> ScriptedProvider:
    counter = itertools.count(1)
    monkeypatch.setattr("onellm.instances.new_instance_id", lambda: f"i{next(counter)}")
    provider = ScriptedProvider("openai")
    harness.runtime.providers.set("openai", provider)
    harness.runtime.agent_definitions.add("worker", Definition.loads(CHILD))
    return provider


def fired(harness: Harness) -> list[MonitorFired]:
    seen: list[MonitorFired] = []
    harness.runtime.agent_events.add(lambda e: seen.append(e) if isinstance(e, MonitorFired) else None)
    return seen


def result_of(instance: onellm.Instance, call_id: str) -> Any:
    for message in instance.messages:
        for call in message.tool_calls:
            if call.id == call_id:
                assert call.result is not None
                if len(call.result) == 1 and isinstance(call.result[0], JsonPart):
                    return call.result[0].json
                return "".join(p.text for p in call.result if isinstance(p, TextPart))
    raise AssertionError(f"no call {call_id}")


def start(prompt: str = "Part.") -> tuple[str, str, dict[str, Any]]:
    return ("r1", "run_agent_async", {"agentSwarmUri": "worker", "prompt": prompt})


async def test_on_finish_wakes_a_resting_watcher_with_a_runtime_message(
    harness: Harness, kids: ScriptedProvider
) -> None:
    seen = fired(harness)
    path = harness.agent(tools=BOSS, prompt="Go.")
    harness.script(
        calls(start(), ("m1", "monitor_agent", {"agentId": "i2", "onFinish": True})),
        say("I will wait for the worker."),
        done("worker finished"),
    )
    kids.enqueue(calls(("w", "wait_then", {"seconds": 0.05, "text": "slow"})), done("part done"))
    result = await harness.runtime.run_agent(path)
    assert result.stop_reason is StopReason.COMPLETED
    armed = result_of(result.instance, "m1")
    assert armed["monitor"]["onFinish"] is True
    alerts = [m for m in result.instance.messages if m.source is not None and m.source.kind == "runtime"]
    assert len(alerts) == 1
    assert alerts[0].user_text.startswith("[monitor] agent i2 (worker): it came to rest (stopped).")
    assert [(e.instance_id, e.watcher_id, e.condition, e.state) for e in seen] == [("i2", "i1", "onFinish", "stopped")]


async def test_turns_fire_once_into_await_monitor_and_not_as_a_message(
    harness: Harness, kids: ScriptedProvider
) -> None:
    seen = fired(harness)
    path = harness.agent(tools=BOSS, prompt="Go.")
    harness.script(
        calls(start(), ("m1", "monitor_agent", {"agentId": "i2", "turns": 2}), ("a1", "await_monitor", {})),
        calls(("w1", "await_agent", {"ids": ["i2"]})),
        done(),
    )
    kids.enqueue(
        calls(("e1", "echo", {"text": "one"})),
        calls(("e2", "echo", {"text": "two"})),
        calls(("e3", "echo", {"text": "3"})),
        done(),
    )
    result = await harness.runtime.run_agent(path)
    alert = result_of(result.instance, "a1")["alerts"]
    assert [(a["agentId"], a["condition"]) for a in alert] == [("i2", "turns")]
    assert "2 more model turn(s)" in alert[0]["alert"]
    assert not [m for m in result.instance.messages if m.source is not None and m.source.kind == "runtime"]
    assert len(seen) == 1  # fired once, though the worker made four turns


async def test_context_at_in_tokens_or_a_share_of_the_window(harness: Harness, kids: ScriptedProvider) -> None:
    window = harness.runtime.catalog.resolve("gpt-6-luna").entry.context_window
    assert window is not None
    share = 1
    tokens = window * share // 100 + 10
    path = harness.agent(tools=BOSS, prompt="Go.")
    harness.script(
        calls(
            start(), ("m1", "monitor_agent", {"agentId": "i2", "contextAt": f"{share}%"}), ("a1", "await_monitor", {})
        ),
        calls(
            ("w0", "await_agent", {"ids": ["i2"]}),
            ("r2", "run_agent_async", {"agentSwarmUri": "worker", "prompt": "Two."}),
            ("m2", "monitor_agent", {"agentId": "i3", "contextAt": "1.5k"}),
            ("a2", "await_monitor", {"ids": ["i3"]}),
        ),
        done(),
    )
    kids.enqueue(calls(("e1", "echo", {"text": "big"}), usage=(tokens - 10, 10)), done())
    kids.enqueue(
        calls(("e2", "echo", {"text": "x"}), usage=(1000, 10)),
        calls(("e3", "echo", {"text": "y"}), usage=(1490, 20)),
        done(),
    )
    result = await harness.runtime.run_agent(path)
    first = result_of(result.instance, "a1")["alerts"][0]
    assert (first["condition"], first["contextTokens"]) == ("contextAt", tokens)
    assert result_of(result.instance, "m1")["monitor"]["contextAt"] == "1%"
    assert result_of(result.instance, "m2")["monitor"]["contextAt"] == 1500
    second = result_of(result.instance, "a2")["alerts"][0]
    assert (second["agentId"], second["condition"], second["contextTokens"]) == ("i3", "contextAt", 1510)


async def test_re_arming_replaces_and_a_status_request_reports(harness: Harness, kids: ScriptedProvider) -> None:
    path = harness.agent(tools=BOSS, prompt="Go.")
    harness.script(
        calls(
            start(),
            ("m1", "monitor_agent", {"agentId": "i2", "turns": 1}),
            ("m2", "monitor_agent", {"agentId": "i2", "onFinish": True, "elapsed": "1h"}),
            ("s1", "monitor_agent", {"agentId": "i2"}),
            ("a1", "await_monitor", {"ids": ["i2"]}),
        ),
        done(),
    )
    kids.enqueue(calls(("e1", "echo", {"text": "one"})), done())
    result = await harness.runtime.run_agent(path)
    assert result_of(result.instance, "m2")["replaced"]["turns"] == 1
    status = result_of(result.instance, "s1")
    assert status["monitor"]["onFinish"] is True
    assert status["monitor"]["elapsed"] == "1h"
    assert [a["condition"] for a in result_of(result.instance, "a1")["alerts"]] == ["onFinish"]


async def test_elapsed_only_reports(harness: Harness, kids: ScriptedProvider) -> None:
    path = harness.agent(tools=BOSS, prompt="Go.")
    harness.script(
        calls(start(), ("m1", "monitor_agent", {"agentId": "i2", "elapsed": 0.05}), ("a1", "await_monitor", {})),
        calls(("w1", "await_agent", {"ids": ["i2"]})),
        done(),
    )
    kids.enqueue(calls(("w", "wait_then", {"seconds": 0.3, "text": "slow"})), done("finished anyway"))
    result = await harness.runtime.run_agent(path)
    alert = result_of(result.instance, "a1")["alerts"][0]
    assert (alert["condition"], alert["state"]) == ("elapsed", "running")
    assert result_of(result.instance, "w1")["agents"][0]["result"] == "finished anyway"


async def test_unreadable_conditions_and_nothing_to_await_are_refused(harness: Harness, kids: ScriptedProvider) -> None:
    path = harness.agent(tools=BOSS, prompt="Go.")
    harness.script(
        calls(
            start(),
            ("b1", "monitor_agent", {"agentId": "i2", "contextAt": "lots"}),
            ("b2", "monitor_agent", {"agentId": "i2", "elapsed": "soon"}),
            ("b3", "monitor_agent", {"agentId": "i2", "contextAt": "120%"}),
            ("b4", "await_monitor", {}),
        ),
        done(),
    )
    kids.enqueue(done())
    result = await harness.runtime.run_agent(path)
    assert "'contextAt'" in result_of(result.instance, "b1")
    assert "'elapsed'" in result_of(result.instance, "b2")
    assert "percentage" in result_of(result.instance, "b3")
    assert "no monitor of yours is armed" in result_of(result.instance, "b4")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("400k", (400_000, None)), ("1.2m", (1_200_000, None)), (4000, (4000, None)), ("80%", (None, 80))],
)
def test_context_at_forms(value: Any, expected: tuple[Any, Any]) -> None:
    assert parse_context_at(value) == expected


@pytest.mark.parametrize("value", ["", "0", "-5", "abc", "0%", "k", True, None, 0])
def test_context_at_refuses(value: Any) -> None:
    with pytest.raises(ArgumentError, match="contextAt"):
        parse_context_at(value)


@pytest.mark.parametrize(
    ("value", "seconds"), [("90", 90.0), ("30m", 1800.0), ("1h30m", 5400.0), (2.5, 2.5), ("1d", 86400.0)]
)
def test_durations(value: Any, seconds: float) -> None:
    assert parse_duration(value, "elapsed") == seconds


@pytest.mark.parametrize("value", ["soon", "0", "-1m", "5y", "400d", "1h 30x"])
def test_durations_refused(value: Any) -> None:
    with pytest.raises(ArgumentError, match="elapsed"):
        parse_duration(value, "elapsed")


async def test_the_runtime_stream_hears_every_run_without_a_follower(harness: Harness, kids: ScriptedProvider) -> None:
    import anyio

    path = harness.agent(tools=BOSS, prompt="Go.")
    harness.script(calls(start(), ("w1", "await_agent", {"ids": ["i2"]})), done())
    kids.enqueue(done("part"))
    seen: list[tuple[str, str | None]] = []
    async with harness.runtime.agent_events.subscribe() as stream:
        await harness.runtime.run_agent(path)
        with anyio.move_on_after(0.2):
            async for event in stream:
                seen.append((type(event).__name__, event.instance_id))  # noqa: PERF401  (read until the timeout)
    assert ("SubAgentStarted", "i1") in seen
    for who in ("i1", "i2"):
        assert ("TurnStarted", who) in seen
        assert ("ToolCallEnded", who) in seen
        assert ("StateChanged", who) in seen
    assert stream.dropped == 0
    assert not harness.runtime.agent_events  # the stream closed with its block
