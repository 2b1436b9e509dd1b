"""Context strategies: clearToolResults, compact and providerNative at a turn boundary, their triggers, the
`compactions` record, the `beforeCompaction` veto, a failing summary and a run stopped in the middle of one."""

from __future__ import annotations

import anyio
import pytest

from onellm.agents import Block
from onellm.agents._context import CLEARED_NOTE, SUMMARY_PREFIX, clear_tool_results
from onellm.agents._result import instance_cost
from onellm.errors import BadRequestError, RunCancelledError
from onellm.instances import FileInstanceStore
from onellm.messages import Message, TextPart, ToolCall
from onellm.records import ErrorRecord, total_cost
from onellm.testing import ScriptStep

from .conftest import Harness, calls, done, say

pytestmark = pytest.mark.anyio


def strategy(kind: str, **keys: object) -> str:
    body = "".join(f"\n  {k}: {v}" for k, v in keys.items())
    return f"contextStrategy:\n  type: {kind}{body}\n"


async def test_clear_tool_results_keeps_every_slot_and_the_prefix(harness: Harness) -> None:
    path = harness.agent(extra=strategy("clearToolResults", triggerTokens=1000, keepLast=1))
    harness.script(
        calls(("c1", "echo", {"text": "one"}), usage=(500, 10)),
        calls(("c2", "echo", {"text": "two"}), usage=(900, 10)),
        calls(("c3", "echo", {"text": "three"}), usage=(1200, 10)),
        done(),
    )
    run = await harness.runtime.start_agent(path)
    events = [e async for e in run.events()]
    result = await run.result()
    inst = result.instance
    answered = {c.id: c for m in inst.messages for c in m.tool_calls}
    assert [answered[i].result for i in ("c1", "c2")] == [[TextPart(CLEARED_NOTE)]] * 2
    assert answered["c3"].result == [TextPart("echo: three")]
    assert answered["tc"].result is not None
    [entry] = inst.compactions
    assert entry.strategy == "clearToolResults"
    assert entry.replaced_message_ids == [inst.messages[0].id, inst.messages[1].id]
    assert entry.at_message_id == inst.messages[2].id
    assert entry.cost is None
    compacted = [e for e in events if type(e).__name__ == "ContextCompacted"]
    assert [(e.strategy, e.context_tokens) for e in compacted] == [("clearToolResults", 1210)]
    [record] = harness.kinds("compaction")
    assert (record.instance_id, record.strategy, record.replaced_message_ids) == (
        inst.id,
        "clearToolResults",
        entry.replaced_message_ids,
    )
    assert (record.at, record.summary_message_id, record.cost) == (entry.to_data()["at"], None, None)
    saved = await harness.runtime.store.load(inst.id or "")
    assert saved is not None
    assert saved.compactions[0].to_data() == entry.to_data()


def test_clear_tool_results_is_idempotent_and_leaves_the_prefix_objects() -> None:
    def turn(n: int) -> Message:
        return Message(
            id=f"m{n}",
            assistant=[TextPart("calling")],
            tool_calls=[ToolCall(id=f"c{n}", tool="echo", inputs={}, result=[TextPart(f"r{n}")])],
        )

    prompt = Message(id="m0", user=[TextPart("go")])
    messages = [prompt, turn(1), turn(2), turn(3), turn(4)]
    once, changed = clear_tool_results(messages, 2)
    assert changed == ["m1", "m2"]
    assert once[0] is prompt
    assert once[3] is messages[3]
    assert once[4] is messages[4]
    assert [m.tool_calls[0].result for m in once[1:]] == [
        [TextPart(CLEARED_NOTE)],
        [TextPart(CLEARED_NOTE)],
        [TextPart("r3")],
        [TextPart("r4")],
    ]
    twice, again = clear_tool_results(once, 2)
    assert again == []
    assert all(a is b for a, b in zip(twice, once, strict=True))


async def test_compact_summarizes_through_a_child_and_keeps_the_cost(harness: Harness) -> None:
    path = harness.agent(extra=strategy("compact", triggerTokens=1000, keepLast=1))
    harness.script(say("first", usage=(100, 10)))
    run = await harness.runtime.start_agent(path)
    await run.result()
    before = instance_cost(run.instance).total
    first_id = run.instance.messages[0].id
    harness.script(
        calls(("c1", "echo", {"text": "big"}), usage=(1200, 10)),
        say("THE SUMMARY", usage=(300, 20)),
        done(),
    )
    await run.message("Second.")
    result = await run.result()
    inst = result.instance
    assert inst.messages[0].user_text == f"{SUMMARY_PREFIX}\n\nTHE SUMMARY"
    assert inst.messages[0].source is not None
    assert inst.messages[0].source.kind == "runtime"
    assert inst.messages[1].user_text == "Second."
    [entry] = inst.compactions
    assert entry.strategy == "compact"
    assert entry.replaced_message_ids == [first_id]
    assert entry.summary_message_id == inst.messages[0].id
    child_id = entry.extra["instanceId"]
    child = await harness.runtime.store.load(child_id)
    assert child is not None
    assert child.spawner_instance_id == inst.id
    child_cost = instance_cost(child).total
    assert child_cost > 0
    assert entry.cost == child_cost
    assert entry.replaced_cost == before
    # nothing lost, nothing counted twice
    assert result.cost.total == instance_cost(inst).total
    assert result.subtree_cost.total == result.cost.total
    [record] = harness.kinds("compaction")
    assert (record.instance_id, record.strategy, record.summary_message_id, record.cost) == (
        inst.id,
        "compact",
        entry.summary_message_id,
        child_cost,
    )
    # the records count the summary once, through the child's inference record, not the compaction record's cost
    assert [r.instance_id for r in harness.kinds("inference")].count(child_id) == 1
    assert total_cost(harness.records) == result.subtree_cost.total


async def test_a_failing_summary_leaves_the_run_uncompacted_with_an_error_record(harness: Harness) -> None:
    path = harness.agent(extra=strategy("compact", triggerTokens=1000, keepLast=1))
    harness.script(say("first", usage=(100, 10)))
    run = await harness.runtime.start_agent(path)
    await run.result()
    harness.script(
        calls(("c1", "echo", {"text": "big"}), usage=(1200, 10)),
        ScriptStep.failure(BadRequestError("summary refused", provider="anthropic", status=400)),
        done(),
    )
    await run.message("Second.")
    result = await run.result()
    assert result.stop_reason.value == "completed"
    assert result.instance.compactions == []
    assert result.instance.messages[0].text == "first"
    errors = [r for r in harness.records if isinstance(r, ErrorRecord) and r.where == "contextStrategy compact"]
    assert len(errors) == 1
    assert any("contextStrategy compact failed" in w.message for w in result.warnings)


async def test_a_hook_vetoes_and_provider_native_is_skipped_with_a_warning(harness: Harness) -> None:
    asked: list[str] = []

    @harness.runtime.hooks.before_compaction
    def veto(ctx: object) -> Block:
        asked.append(getattr(ctx, "strategy", ""))
        return Block("not now")

    path = harness.agent(extra=strategy("clearToolResults", triggerPercent=1, keepLast=0))
    harness.script(calls(("c1", "echo", {"text": "x"}), usage=(20_000, 10)), done())
    vetoed = await harness.runtime.run_agent(path)
    assert asked == ["clearToolResults"]
    assert vetoed.instance.compactions == []
    harness.runtime.hooks.remove(veto)

    native = harness.write("native.yaml", harness.agent(extra=strategy("providerNative", triggerTokens=10)).read_text())
    harness.script(calls(("c1", "echo", {"text": "x"}), usage=(20_000, 10)), done())
    skipped = await harness.runtime.run_agent(native)
    assert skipped.instance.compactions == []
    assert [w.message for w in skipped.warnings if w.kind == "contextStrategy"] == [
        "contextStrategy providerNative: the anthropic provider cannot compact a conversation; the run goes on "
        "uncompacted"
    ]


async def test_a_run_stopped_during_a_compaction_leaves_the_file_valid(harness: Harness) -> None:
    harness.runtime.store = FileInstanceStore(harness.folder / "instances")
    path = harness.agent(extra=strategy("compact", triggerTokens=1000, keepLast=1))
    harness.script(say("first", usage=(100, 10)))
    run = await harness.runtime.start_agent(path)
    await run.result()
    stall = anyio.Event()
    harness.script(
        calls(("c1", "echo", {"text": "big"}), usage=(1200, 10)),
        ScriptStep.paused("THE ", event=stall, then=["SUMMARY"]),
    )
    await run.message("Second.")
    caught: list[RunCancelledError] = []

    async def stop() -> None:
        for _ in range(500):  # until the summary call has begun
            if not harness.provider.pending:
                break
            await anyio.sleep(0.01)
        await anyio.sleep(0.05)
        await run.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(stop)
        try:
            await run.result()
        except RunCancelledError as error:
            caught.append(error)
    assert len(caught) == 1
    saved = await harness.runtime.store.load(run.instance_id or "")
    assert saved is not None
    assert saved.compactions == []
    assert [m.user_text for m in saved.messages if m.user] == ["Do the task.", "Second."]
    assert saved.messages[-1].tool_calls[0].result == [TextPart("echo: big")]
