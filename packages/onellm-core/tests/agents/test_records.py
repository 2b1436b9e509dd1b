"""The records an agent run writes, the spend caps it runs under, and a JSON-lines sink reading them back."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

import onellm
from onellm.errors import BudgetExceededError
from onellm.records import JsonlRecordSink, read_records

from .conftest import Harness, calls, done

pytestmark = pytest.mark.anyio


async def test_every_step_is_recorded_in_order(harness: Harness) -> None:
    h = harness
    h.script(calls(("a", "echo", {"text": "x"}), ("d", "deploy", {"target": "prod"}), usage=(100, 10)))
    run = await h.runtime.start_agent(h.agent(tools="[echo, deploy, task_complete]"))
    await run.result()
    await run.approve("d", by="ops")
    h.script(done("shipped"))
    await run.result()

    def brief(record: object) -> tuple[object, ...]:
        kind = record.kind  # type: ignore[attr-defined]
        if kind == "run":
            return ("run", record.event, record.state)  # type: ignore[attr-defined]
        if kind == "toolCall":
            return ("toolCall", record.call.id)  # type: ignore[attr-defined]
        if kind == "approval":
            return ("approval", record.tool_call_id, record.decision, record.by)  # type: ignore[attr-defined]
        if kind == "taskCompletion":
            return ("taskCompletion", record.tool, record.result)  # type: ignore[attr-defined]
        return (kind,)

    assert [brief(r) for r in h.records] == [
        ("run", "started", "running"),
        ("message",),  # the prompt
        ("message",),  # the answer
        ("inference",),
        ("toolCall", "a"),
        ("approval", "d", "requested", "tool"),
        ("run", "stateChanged", "waiting_for_approval"),
        ("run", "stopped", "waiting_for_approval"),
        ("approval", "d", "approved", "ops"),
        ("run", "resumed", "running"),
        ("run", "stateChanged", "running"),
        ("toolCall", "d"),
        ("message",),
        ("inference",),
        ("toolCall", "tc"),
        ("taskCompletion", "task_complete", "shipped"),
        ("run", "stateChanged", "stopped"),
        ("run", "stopped", "stopped"),
    ]
    assert all(r.instance_id == run.instance_id for r in h.records)
    inference = next(r for r in h.records if r.kind == "inference")
    assert inference.usage is not None
    assert inference.usage.cost == Decimal("0.000300")


async def test_a_jsonl_sink_reads_a_run_back(tmp_path: Path) -> None:
    from onellm.testing import ScriptedProvider

    runtime = onellm.Runtime(records=[JsonlRecordSink(tmp_path / "records")], environ={})
    provider = ScriptedProvider("anthropic")
    runtime.providers.set("anthropic", provider)
    (tmp_path / "agent.yaml").write_text(
        "model: claude-sonnet\nreferences:\n  - tools: [task_complete]\ninitialPrompts:\n  - user:\n      - text: go\n"
    )
    provider.enqueue(done("ok"))
    result = await runtime.run_agent(tmp_path / "agent.yaml")
    lines = list(read_records(tmp_path / "records" / f"{result.instance.id}.jsonl"))
    kinds = [r.kind for r in lines]
    assert kinds[0] == "run"
    assert kinds[-1] == "run"
    assert {"message", "inference", "toolCall", "taskCompletion"} <= set(kinds)


async def test_an_instance_spend_cap_stops_the_run_before_the_call_is_sent(harness: Harness) -> None:
    h = harness
    h.runtime.instance_spend_cap = Decimal("0.0035")  # about three turns of 0.0009, each held at its worst case first
    h.script(*[calls((f"c{i}", "echo", {"text": str(i)}), usage=(400, 10)) for i in range(5)])
    run = await h.runtime.start_agent(h.agent(extra="maxTokens: 50\n"))
    with pytest.raises(BudgetExceededError):
        await run.result()
    saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
    assert saved is not None
    assert saved.state == "error"
    assert saved.error is not None
    assert saved.error.type == "BudgetExceededError"
    # every turn that was sent is kept with its results; the refused one left nothing behind
    assert all(c.result is not None for m in saved.messages for c in m.tool_calls)
    assert saved.messages[-1].tool_calls
    assert 1 <= h.provider.served < 5
    assert h.provider.served == len([m for m in saved.messages if m.tool_calls])
