"""Instance files edited by hand or left damaged by a crash, picked up again by a new `Runtime` over the same file store.

Each case starts from a real saved instance, changes its text the way a person or a kill would, and goes on through
the runtime: the outcome is a typed error naming the instance (and the file, line and column where there is one) or
the recovery `spec/instances.md` describes; a failed attempt leaves the file's bytes as they were, and a held tool
never runs twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import onellm
from onellm import StopReason
from onellm.agents import GrantsMissingError
from onellm.agents._state import INTERRUPTED
from onellm.errors import AgentStateError, BadDefinitionError, InstanceNotFoundError, OnellmError, StorageError
from onellm.instances import FileInstanceStore
from onellm.messages import TextPart
from onellm.records import Record
from onellm.testing import ScriptedProvider

from .conftest import Harness, calls, done, make_runtime, say

pytestmark = pytest.mark.anyio

TOOLS = "[deploy, echo, task_complete]"


def _path(h: Harness, instance_id: str) -> Path:
    return h.folder / "instances" / f"{instance_id}.yaml"


def _again(h: Harness) -> tuple[onellm.Runtime, ScriptedProvider]:
    """A second runtime over the same store, as a new process would make; its tools note what they ran in `h.ran`."""
    records: list[Record] = []
    return make_runtime(h.folder, FileInstanceStore(h.folder / "instances", durable=False), h.ran, records)


def _edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= count, f"{old!r} not in\n{text}"
    path.write_text(text.replace(old, new, count), encoding="utf-8")


async def _held(h: Harness, *, two: bool = True) -> str:
    """An instance waiting for approval of `d` (and `d2`), its `echo` call `e` answered; nothing ran but echo."""
    held = [("d", "deploy", {"target": "prod"})]
    if two:
        held.append(("d2", "deploy", {"target": "stage"}))
    h.script(calls(*held, ("e", "echo", {"text": "x"})))
    result = await h.runtime.run_agent(h.agent(tools=TOOLS))
    assert result.stop_reason is StopReason.WAITING_FOR_APPROVAL
    assert h.ran == [("echo", {"text": "x"})]
    h.ran.clear()
    assert result.instance.id is not None
    return result.instance.id


async def _refused(
    path: Path, attempt: Callable[[], Awaitable[Any]], kind: type[OnellmError] = BadDefinitionError
) -> Any:
    """The attempt fails with `kind`, naming the instance, and leaves the file's bytes as they were."""
    before = _bytes(path)
    with pytest.raises(kind) as caught:
        await attempt()
    assert path.stem in str(caught.value)
    assert _bytes(path) == before
    return caught.value


def _bytes(path: Path) -> bytes:
    return path.read_bytes()


def _deploys(h: Harness) -> list[str]:
    return [args["target"] for tool, args in h.ran if tool == "deploy"]


# ------------------------------------------------------------------------------------ held calls edited by hand


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        # an entry for a call no message holds
        ("- toolCallId: d2\n", "- toolCallId: ghost\n", "pendingApprovals[1].toolCallId"),
        # two entries for one call
        ("- toolCallId: d2\n", "- toolCallId: d\n", "pendingApprovals[1]"),
        # a held call that already has a result
        ("- toolCallId: d2\n", "- toolCallId: e\n", "pendingApprovals[1].toolCallId"),
        # two calls with one id in the message
        ("  - id: d2\n", "  - id: d\n", "messages[0].toolCalls[1].id"),
        # an entry naming another tool than its call: a person would approve one tool and another would run
        ("- toolCallId: d\n  tool: deploy\n", "- toolCallId: d\n  tool: echo\n", "pendingApprovals[0].tool"),
        ("  - id: d\n    tool: deploy\n", "  - id: d\n    tool: echo\n", "pendingApprovals[0].tool"),
        # a decision nobody can make
        ("  tool: deploy\n", "  decision: maybe\n  tool: deploy\n", "pendingApprovals[0].decision"),
    ],
)
async def test_impossible_held_calls_are_refused_by_every_way_in(
    file_harness: Harness, old: str, new: str, key: str
) -> None:
    h = file_harness
    instance_id = await _held(h)
    path = _path(h, instance_id)
    _edit(path, old, new)
    runtime, provider = _again(h)
    provider.enqueue(done())
    error = await _refused(path, lambda: runtime.get_agent(instance_id))
    assert error.path == key
    assert error.file == str(path)
    await _refused(path, lambda: runtime.approve(instance_id))
    await _refused(path, lambda: runtime.deny(instance_id, reason="no"))
    assert _deploys(h) == []
    assert provider.served == 0


async def test_approving_twice_from_two_runtimes_runs_the_held_call_once(file_harness: Harness) -> None:
    h = file_harness
    instance_id = await _held(h, two=False)
    first, p1 = _again(h)
    p1.enqueue(done("shipped"))
    run = await first.approve(instance_id, "d")
    assert (await run.result()).stop_reason is StopReason.COMPLETED
    assert _deploys(h) == ["prod"]
    second, p2 = _again(h)
    p2.enqueue(done("again"))
    path = _path(h, instance_id)
    await _refused(path, lambda: second.approve(instance_id, "d"), AgentStateError)
    assert _deploys(h) == ["prod"]


async def test_an_approval_written_on_a_stale_handle_is_checked_against_the_file(file_harness: Harness) -> None:
    """A handle got before the file was damaged reads the file again to decide: it refuses the damage, writes nothing."""
    h = file_harness
    instance_id = await _held(h)
    runtime, _ = _again(h)
    run = await runtime.get_agent(instance_id)
    path = _path(h, instance_id)
    _edit(path, "- toolCallId: d2\n", "- toolCallId: d\n")
    await _refused(path, lambda: run.approve("d"))
    assert _deploys(h) == []


async def test_waiting_for_approval_with_no_entries_answers_the_held_calls_and_runs_none(file_harness: Harness) -> None:
    h = file_harness
    instance_id = await _held(h)
    path = _path(h, instance_id)
    text = path.read_text()
    start = text.index("pendingApprovals:\n")
    path.write_text(text[:start] + text[text.index("messages:\n") :])
    runtime, provider = _again(h)
    run = await runtime.get_agent(instance_id)
    with pytest.raises(AgentStateError):
        await run.approve()
    provider.enqueue(done("gave up"))
    await run.message("Go on.")
    result = await run.result()
    assert result.stop_reason is StopReason.COMPLETED
    assert _deploys(h) == []
    first = result.instance.messages[0].tool_calls
    assert [c.result for c in first[:2]] == [[TextPart(INTERRUPTED)], [TextPart(INTERRUPTED)]]
    assert first[2].result == [TextPart("echo: x")]


@pytest.mark.parametrize("state", ["stopped", "waiting", "error", "hibernating", "running"])
async def test_held_calls_under_a_state_that_says_otherwise_still_run_once_approved(
    file_harness: Harness, state: str
) -> None:
    h = file_harness
    instance_id = await _held(h, two=False)
    path = _path(h, instance_id)
    _edit(path, "state: waiting_for_approval\n", f"state: {state}\n")
    runtime, provider = _again(h)
    provider.enqueue(done("shipped"))
    run = await runtime.get_agent(instance_id)
    await run.approve("d")
    result = await run.result()
    assert result.stop_reason is StopReason.COMPLETED
    assert _deploys(h) == ["prod"]
    assert result.instance.pending_approvals == []
    # and once more: nothing is held any more
    again, _ = _again(h)
    with pytest.raises(AgentStateError):
        await again.approve(instance_id)
    assert _deploys(h) == ["prod"]


async def test_a_started_approved_call_is_answered_not_run_again(file_harness: Harness) -> None:
    h = file_harness
    instance_id = await _held(h, two=False)
    path = _path(h, instance_id)
    _edit(path, "  tool: deploy\n", '  tool: deploy\n  decision: approved\n  startedAt: "2026-01-01T00:00:00Z"\n')
    runtime, provider = _again(h)
    provider.enqueue(done("checked"))
    run = await runtime.get_agent(instance_id)
    result = await run.result()
    assert _deploys(h) == []
    assert result.stop_reason is StopReason.COMPLETED
    call = result.instance.messages[0].tool_calls[0]
    assert call.is_error
    assert call.result is not None
    assert "approved and started" in str(call.result[0])


async def test_a_decision_written_before_a_kill_runs_the_call_once_when_picked_up(file_harness: Harness) -> None:
    """Approved, then the process died before the run went on: the next pickup runs the call, once."""
    h = file_harness
    instance_id = await _held(h, two=False)
    path = _path(h, instance_id)
    _edit(path, "  tool: deploy\n", "  tool: deploy\n  decision: approved\n")
    runtime, provider = _again(h)
    await _refused(path, lambda: runtime.approve(instance_id), AgentStateError)  # decided already
    provider.enqueue(done("shipped"))
    run = await runtime.get_agent(instance_id)
    result = await run.result()
    assert result.stop_reason is StopReason.COMPLETED
    assert _deploys(h) == ["prod"]
    again, provider2 = _again(h)
    run = await again.get_agent(instance_id)
    assert (await run.result()).stop_reason is StopReason.COMPLETED
    assert provider2.served == 0
    assert _deploys(h) == ["prod"]


@pytest.mark.parametrize(
    ("inputs", "answer"),
    [
        ("    target: 5\n", "Argument 'target' must be a string, not 5."),
        ("    target: prod\n    force: true\n", "Argument 'force' is not accepted (accepted: target)."),
        ("    other: prod\n", "Argument 'other' is not accepted (accepted: target)."),
    ],
)
async def test_held_inputs_edited_out_of_shape_are_checked_before_the_approved_call_runs(
    file_harness: Harness, inputs: str, answer: str
) -> None:
    h = file_harness
    instance_id = await _held(h, two=False)
    path = _path(h, instance_id)
    _edit(path, "  inputs:\n    target: prod\n", "  inputs:\n" + inputs)
    runtime, provider = _again(h)
    provider.enqueue(done("checked"))
    run = await runtime.approve(instance_id)
    result = await run.result()
    assert _deploys(h) == []
    call = result.instance.messages[0].tool_calls[0]
    assert call.is_error
    assert call.result == [TextPart(answer)]


# ------------------------------------------------------------------------------------------- fork and duplicate


async def test_fork_through_a_message_that_is_not_there_leaves_the_store_alone(file_harness: Harness) -> None:
    h = file_harness
    instance_id = await _held(h)
    runtime, _ = _again(h)
    before = sorted(p.name for p in (h.folder / "instances").iterdir())
    await _refused(_path(h, instance_id), lambda: runtime.fork(instance_id, through="nope"), InstanceNotFoundError)
    assert sorted(p.name for p in (h.folder / "instances").iterdir()) == before


async def test_a_message_id_held_twice_is_no_place_to_cut_a_fork(file_harness: Harness) -> None:
    h = file_harness
    h.script(calls(("e", "echo", {"text": "one"})), say("first"), say("second"))
    first = await h.runtime.run_agent(h.agent(tools=TOOLS))
    assert first.instance.id is not None
    run = await h.runtime.get_agent(first.instance.id)
    await run.message("Again.")
    result = await run.result()
    ids = [m.id for m in result.instance.messages]
    assert len(ids) == 3
    path = _path(h, first.instance.id)
    _edit(path, f"- id: {ids[2]}\n", f"- id: {ids[1]}\n")
    runtime, _ = _again(h)
    before = sorted(p.name for p in (h.folder / "instances").iterdir())
    error = await _refused(path, lambda: runtime.fork(first.instance.id or "", through=ids[1]))
    assert error.path == "messages[2].id"
    assert sorted(p.name for p in (h.folder / "instances").iterdir()) == before
    # through an id held once, and the whole of it, a copy is made as ever
    assert [m.id for m in (await runtime.fork(first.instance.id, through=ids[0])).messages] == ids[:1]
    assert len((await runtime.duplicate(first.instance.id)).messages) == 3


@pytest.mark.parametrize("onto", ["other", "itself"])
async def test_a_copy_under_an_id_already_saved_replaces_nothing(file_harness: Harness, onto: str) -> None:
    h = file_harness
    instance_id = await _held(h)
    h.script(say("another"))
    other = (await h.runtime.run_agent(h.agent(tools=TOOLS))).instance.id
    assert other is not None
    target = other if onto == "other" else instance_id
    runtime, _ = _again(h)
    before = sorted(p.name for p in (h.folder / "instances").iterdir())
    for attempt in (
        lambda: runtime.fork(instance_id, new_id=target),
        lambda: runtime.duplicate(instance_id, new_id=target),
    ):
        error = await _refused(_path(h, target), attempt, AgentStateError)
        assert "already exists" in str(error)
    assert sorted(p.name for p in (h.folder / "instances").iterdir()) == before
    copy = await runtime.duplicate(instance_id, new_id="a-new-name")
    assert copy.id == "a-new-name"
    assert _path(h, "a-new-name").exists()


async def test_a_fork_of_a_held_call_answers_it_in_the_fork_and_the_source_still_runs_it_once(
    file_harness: Harness,
) -> None:
    h = file_harness
    instance_id = await _held(h, two=False)
    runtime, provider = _again(h)
    copy = await runtime.duplicate(instance_id)
    assert copy.id is not None
    assert copy.pending_approvals == []
    provider.enqueue(done("skipped"))
    run = await runtime.get_agent(copy.id)
    with pytest.raises(AgentStateError):
        await run.approve()
    await run.message("Go on without it.")
    await run.result()
    assert _deploys(h) == []
    provider.enqueue(done("shipped"))
    source = await runtime.approve(instance_id)
    await source.result()
    assert _deploys(h) == ["prod"]


# ------------------------------------------------------------------------------------------- damaged files


def _truncated(text: str) -> str:
    # a kill during a write that was not atomic: cut in the middle of a line of the messages
    cut = text.index("    target: stage") + 7
    return text[:cut]


@pytest.mark.parametrize(
    "damage",
    [
        "truncated",
        "empty",
        "binary",
        "bomb",
        "deep",
        "messages_not_a_list",
        "duplicate_key",
        "other_id",
        "tab",
        "huge_number",
        "python_tag",
        "bad_utf8",
        "duplicate_top_key",
        "bomb_in_a_message",
        "deep_in_a_message",
    ],
)
async def test_a_damaged_file_is_refused_with_its_position_and_left_as_it_is(
    file_harness: Harness, damage: str
) -> None:
    h = file_harness
    instance_id = await _held(h)
    path = _path(h, instance_id)
    text = path.read_text()
    if damage == "truncated":
        path.write_text(_truncated(text))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "binary":
        path.write_bytes(b"\x00\xff\xfe" + bytes(range(256)) * 4)
    elif damage == "bomb":
        lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        for i in range(1, 10):
            prev = chr(ord("a") + i - 1)
            cur = chr(ord("a") + i)
            lines.append(f"{cur}: &{cur} [{', '.join(['*' + prev] * 9)}]")
        path.write_text(text.replace("messages:\n", "\n".join(lines) + "\nmessages:\n", 1))
    elif damage == "deep":
        path.write_text(text.replace("messages:\n", "deep: " + "[" * 5000 + "]" * 5000 + "\nmessages:\n", 1))
    elif damage == "messages_not_a_list":
        path.write_text(text[: text.index("messages:\n")] + "messages: everything\n")
    elif damage == "duplicate_key":
        _edit(path, "    result:\n", "    result:\n    - text: first\n    result:\n")
    elif damage == "other_id":
        _edit(path, f"instanceId: {instance_id}\n", "instanceId: someone-else\n")
    elif damage == "tab":
        _edit(path, "  - id: d2\n", "  - id: d2\n\t\n")
    elif damage == "huge_number":
        _edit(path, "state: waiting_for_approval\n", "maxImageSize: 1" + "0" * 5000 + "\nstate: waiting_for_approval\n")
    elif damage == "python_tag":
        _edit(path, "  target: prod\n", "  target: !!python/object/apply:os.system [echo]\n")
    elif damage == "bad_utf8":
        path.write_bytes(text.encode().replace(b"target: stage", b"target: st\xff\xfege"))
    elif damage in ("bomb_in_a_message", "deep_in_a_message"):
        if damage == "bomb_in_a_message":
            lines = ["  a0: &a0 [x, x, x, x, x, x, x, x, x]"]
            lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
            value = "\n".join(lines)
        else:
            value = "  deep: " + "[" * 5000 + "]" * 5000
        _edit(path, "  dateTime:", value + "\n  dateTime:")
    elif damage == "duplicate_top_key":
        _edit(path, "state: waiting_for_approval\n", "state: waiting_for_approval\nstate: stopped\n")
    runtime, provider = _again(h)
    provider.enqueue(done())
    kinds = (BadDefinitionError, StorageError)
    before = path.read_bytes()
    for attempt in (
        lambda: runtime.get_agent(instance_id),
        lambda: runtime.approve(instance_id),
        lambda: runtime.fork(instance_id),
        lambda: runtime.duplicate(instance_id),
    ):
        with pytest.raises(kinds) as caught:
            await attempt()
        error = caught.value
        assert instance_id in str(error) or str(path) in str(error), str(error)
        if isinstance(error, BadDefinitionError) and damage not in ("empty", "other_id"):
            assert error.line is not None, str(error)
        assert path.read_bytes() == before
    assert _deploys(h) == []
    assert sorted(p.name for p in (h.folder / "instances").iterdir() if p.suffix == ".yaml") == [path.name]


# ------------------------------------------------------------------------------------------------ grants


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("capabilities:\n", "capabilitiesX:\n"),  # missing
        ("  shell:\n    enabled: false\n", "  shell:\n    enabled: sure\n"),  # malformed
        ("  readRoots:\n", "  readRoots: everything\n  ignored:\n"),
        ("capabilities:\n", "capabilities:\n  tools: deploy\n"),  # a tool limit that is not a list
        ("capabilities:\n", "capabilities:\n  tools:\n  - 7\n"),  # nor of names
    ],
)
async def test_recorded_grants_that_are_missing_or_malformed_fail_closed(
    file_harness: Harness, old: str, new: str
) -> None:
    h = file_harness
    h.script(say("waiting"))
    result = await h.runtime.run_agent(h.agent(tools=TOOLS))
    instance_id = result.instance.id
    assert instance_id is not None
    path = _path(h, instance_id)
    _edit(path, old, new)
    runtime, provider = _again(h)
    provider.enqueue(calls(("x", "deploy", {"target": "prod"})), done())
    run = await runtime.get_agent(instance_id)
    await run.message("Deploy.")
    before = path.read_bytes()
    with pytest.raises(GrantsMissingError) as caught:
        await run.result()
    assert instance_id in str(caught.value)
    assert path.read_bytes() == before
    assert provider.served == 0
    assert h.ran == []


async def test_recorded_grants_widened_by_hand_are_intersected(file_harness: Harness) -> None:
    h = file_harness
    h.script(say("waiting"))
    result = await h.runtime.run_agent(h.agent(tools=TOOLS))
    instance_id = result.instance.id
    assert instance_id is not None
    path = _path(h, instance_id)
    _edit(path, "    enabled: false\n", "    enabled: true\n")
    _edit(path, f"  readRoots:\n  - {h.folder}\n", f"  readRoots:\n  - /\n  - {h.folder}\n")
    _edit(path, "    anyPublic: false\n", "    anyPublic: true\n")
    runtime, provider = _again(h)
    seen: list[Any] = []

    @onellm.tool
    def grants(ctx: onellm.ToolContext) -> str:
        """Reports the grants."""
        seen.append(ctx.capabilities)
        return "ok"

    runtime.tools.add(grants)
    _edit(path, "  - echo\n", "  - echo\n  - grants\n")
    provider.enqueue(calls(("g", "grants", {})), done())
    run = await runtime.get_agent(instance_id)
    await run.message("Check.")
    await run.result()
    assert len(seen) == 1
    caps = seen[0]
    assert not caps.shell_enabled
    assert not caps.network_enabled
    assert [str(p) for p in caps.read_roots] == [str(h.folder)]


async def test_an_unreadable_tool_limit_without_the_marker_limits_nothing(file_harness: Harness) -> None:
    """A file that never recorded its grants runs with the runtime's (spec/instances.md), tool limit or not."""
    h = file_harness
    h.script(say("waiting"))
    result = await h.runtime.run_agent(h.agent(tools=TOOLS))
    instance_id = result.instance.id
    assert instance_id is not None
    path = _path(h, instance_id)
    _edit(path, "capabilitiesRecorded: true\n", "")
    _edit(path, "capabilities:\n", "capabilities:\n  tools:\n  - 7\n")
    runtime, provider = _again(h)
    provider.enqueue(calls(("x", "echo", {"text": "still here"})), done())
    run = await runtime.get_agent(instance_id)
    await run.message("Echo.")
    assert (await run.result()).stop_reason is StopReason.COMPLETED
    assert h.ran == [("echo", {"text": "still here"})]


# ------------------------------------------------------------------------------------------- the definition path


@pytest.mark.parametrize("where", ["inside", "missing", "outside"])
async def test_a_definition_path_edited_to_point_elsewhere_gives_no_files_from_there(
    file_harness: Harness, tmp_path_factory: pytest.TempPathFactory, where: str
) -> None:
    """Templates of a resumed instance embed files from its definition's folder only where its grants may read."""
    h = file_harness
    h.script(say("waiting"))
    result = await h.runtime.run_agent(h.agent(tools=TOOLS))
    instance_id = result.instance.id
    assert instance_id is not None
    path = _path(h, instance_id)
    folder = h.folder / "defs" if where == "inside" else tmp_path_factory.mktemp("outside")
    folder.mkdir(exist_ok=True)
    (folder / "secret.md").write_text("the secret")
    target = h.folder / "gone" / "agent.yaml" if where == "missing" else folder / "agent.yaml"
    if where != "missing":
        target.write_text("model: claude-sonnet\n")
    _edit(path, f"agentDefinition: {h.folder / 'agent.yaml'}\n", f"agentDefinition: {target}\n")
    _edit(path, "systemPrompt: You help.\n", 'systemPrompt: You help. {{ embed "secret.md" }}\n')
    runtime, provider = _again(h)
    provider.enqueue(say("fine"))
    run = await runtime.get_agent(instance_id)
    await run.message("Go on.")
    if where == "inside":
        final = await run.result()
        assert final.instance.rendered_system_prompt == "You help. the secret"
        return
    with pytest.raises(OnellmError) as caught:
        await run.result()
    assert "secret.md" in str(caught.value)
    assert "the secret" not in path.read_text()
    assert provider.served == 0


# ------------------------------------------------------------------------------------- a parent and its child

CHILD = """\
name: child
model: gpt-6-luna
references:
  - tools: [deploy, task_complete]
"""

PARENT_TOOLS = "[deploy, run_agent_async, await_agent, query_agent, message_agent, task_complete]"


def _with_children(runtime: onellm.Runtime, folder: Path) -> ScriptedProvider:
    runtime.capabilities = onellm.Capabilities.files(folder).with_working_directory(folder)
    children = ScriptedProvider("openai")
    runtime.providers.set("openai", children)
    return children


@pytest.mark.parametrize("damage", ["none", "truncated", "other_id", "ghost", "deleted"])
async def test_a_damaged_child_file_is_named_to_its_parent_and_its_held_call_never_runs_by_mistake(
    file_harness: Harness, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    import itertools

    counter = itertools.count(1)
    monkeypatch.setattr("onellm.instances.new_instance_id", lambda: f"i{next(counter)}")
    h = file_harness
    children = _with_children(h.runtime, h.folder)
    h.write("child.yaml", CHILD)
    h.script(
        calls(("r1", "run_agent_async", {"agentSwarmUri": "child.yaml", "prompt": "Deploy."})),
        calls(("a1", "await_agent", {"ids": ["i2"]})),
        say("the child waits"),
    )
    children.enqueue(calls(("d", "deploy", {"target": "prod"})))
    first = await h.runtime.run_agent(h.agent(tools=PARENT_TOOLS, prompt="Split."))
    assert first.stop_reason is StopReason.WAITING
    child = _path(h, "i2")
    text = child.read_text()
    assert "state: waiting_for_approval\n" in text
    if damage == "truncated":
        child.write_text(text[: text.index("  - id: d\n") + 5])
    elif damage == "other_id":
        child.write_text(text.replace("instanceId: i2\n", "instanceId: i9\n"))
    elif damage == "ghost":
        child.write_text(text.replace("- toolCallId: d\n", "- toolCallId: ghost\n"))
    elif damage == "deleted":
        child.unlink()
    before = child.read_bytes() if child.exists() else None

    runtime, provider = _again(h)
    kids = _with_children(runtime, h.folder)
    provider.enqueue(
        calls(("a2", "await_agent", {"ids": ["i2"], "timeout": 0.05})),
        calls(("q2", "query_agent", {"agentId": "i2", "query": "deploy"})),
        calls(("m2", "message_agent", {"agentId": "i2", "prompt": "Hurry."})),
        done(),
    )
    kids.enqueue(say("waiting still"))
    run = await runtime.get_agent("i1")
    await run.message("How is the child?")
    result = await run.result()  # the parent finishes whatever became of its child's file
    assert result.stop_reason is StopReason.COMPLETED
    answers = {c.id: c for m in result.instance.messages for c in m.tool_calls}
    if damage == "none":
        assert not answers["a2"].is_error
    else:
        for call_id in ("a2", "q2", "m2"):
            call = answers[call_id]
            assert call.is_error
            assert call.result is not None
            said = str(call.result[0])
            if damage == "deleted":
                assert "no agent instance 'i2'" in said
            else:
                assert "i2" in said
                assert "no agent instance" not in said  # damaged is not missing
    if damage == "truncated":
        assert any(w.kind == "subtree_cost" and "i2" in w.message for w in result.warnings)
    assert (child.read_bytes() if child.exists() else None) == before
    assert _deploys(h) == []

    # the child by its own id: approved once when it can be read, refused with a typed error when not
    again, _ = _again(h)
    kids = _with_children(again, h.folder)
    kids.enqueue(done("deployed"))
    if damage in ("none", "truncated", "other_id", "ghost"):
        if damage == "none":
            approved = await again.approve("i2")
            await approved.result()
            assert _deploys(h) == ["prod"]
            with pytest.raises(AgentStateError):
                await again.approve("i2")
        else:
            await _refused(
                child, lambda: again.approve("i2"), StorageError if damage == "other_id" else BadDefinitionError
            )
    else:
        with pytest.raises(InstanceNotFoundError):
            await again.approve("i2")
    assert _deploys(h) == (["prod"] if damage == "none" else [])


# ------------------------------------------------------------------------------------------------ ask_user


async def _asking(h: Harness) -> tuple[str, list[str]]:
    """An instance waiting on the answer to `ask_user` call `q`, after an answered `echo` turn."""
    h.runtime.tools.add(*[t for t in onellm.builtin_tools() if t.name == "ask_user"])
    h.script(calls(("e", "echo", {"text": "x"})), calls(("q", "ask_user", {"question": "Which colour?"})))
    result = await h.runtime.run_agent(h.agent(tools="[ask_user, echo, task_complete]"))
    assert result.stop_reason is StopReason.WAITING
    assert result.instance.ask_user is not None
    assert result.instance.id is not None
    return result.instance.id, [m.id for m in result.instance.messages if m.id is not None]


@pytest.mark.parametrize("edited", [False, True])
async def test_a_copy_keeps_the_open_question_only_where_it_holds_it(file_harness: Harness, edited: bool) -> None:
    h = file_harness
    instance_id, ids = await _asking(h)
    path = _path(h, instance_id)
    if edited:  # the question moved by hand to a message that holds no such call
        _edit(
            path,
            f"askUser:\n  toolCallId: q\n  messageId: {ids[-1]}\n",
            f"askUser:\n  toolCallId: q\n  messageId: {ids[0]}\n",
        )
    runtime, provider = _again(h)
    runtime.tools.add(*[t for t in onellm.builtin_tools() if t.name == "ask_user"])
    if edited:
        error = await _refused(path, lambda: runtime.get_agent(instance_id))
        assert error.path == "askUser.toolCallId"
    copy = await runtime.duplicate(instance_id)
    assert copy.id is not None
    assert (copy.ask_user is None) is edited
    provider.enqueue(done("blue it is"))
    run = await runtime.get_agent(copy.id)
    await run.message("Blue.", source="user")
    result = await run.result()
    assert result.stop_reason is StopReason.COMPLETED
    question = result.instance.messages[1].tool_calls[0]
    if edited:  # no open question in the copy: the call is one without a result, and the answer a message of its own
        assert question.result == [TextPart(INTERRUPTED)]
        assert result.instance.messages[2].user_text == "Blue."
    else:
        assert question.result == [TextPart("Blue.")]


async def test_two_handles_approving_one_held_call_run_it_once(file_harness: Harness) -> None:
    """Two runtimes over one store each pick the instance up before either decides: one decision, one run."""
    import anyio

    from onellm.errors import InstanceLockedError

    h = file_harness
    instance_id = await _held(h, two=False)
    first, p1 = _again(h)
    second, p2 = _again(h)
    p1.enqueue(done("shipped"))
    p2.enqueue(done("shipped again"))
    one = await first.get_agent(instance_id)
    two = await second.get_agent(instance_id)
    await one.approve("d")
    with pytest.raises(AgentStateError, match="does not wait for approval"):
        await two.approve("d")
    outcomes: list[object] = []

    async def drive(run: Any) -> None:
        try:
            outcomes.append((await run.result()).stop_reason)
        except InstanceLockedError as exc:
            outcomes.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(drive, one)
        group.start_soon(drive, two)
    assert _deploys(h) == ["prod"]
    assert StopReason.COMPLETED in outcomes
    # whichever was kept out goes on afterwards and finds nothing left to run
    for run in (one, two):
        await run.result()
    assert _deploys(h) == ["prod"]
    assert p1.served + p2.served == 1


# -------------------------------------------------------------------------------------------------- assets


async def _with_image(h: Harness) -> str:
    h.script(say("seen"))
    result = await h.runtime.run_agent(
        h.agent(tools=TOOLS), prompt=["Look:", onellm.Asset.from_bytes(b"PNGDATA", "image/png", "a.png")]
    )
    assert result.instance.id is not None
    return result.instance.id


def _sent_images(provider: ScriptedProvider) -> list[Any]:
    return [p.data for m in provider.requests[-1].messages for p in m.user if isinstance(p, onellm.AssetPart)]


@pytest.mark.parametrize("how", ["fork", "duplicate"])
async def test_a_copy_brings_its_assets_so_its_next_turn_sends_them(file_harness: Harness, how: str) -> None:
    h = file_harness
    instance_id = await _with_image(h)
    runtime, provider = _again(h)
    copy = await (runtime.fork(instance_id) if how == "fork" else runtime.duplicate(instance_id))
    assert copy.id is not None
    assert [p.name for p in (h.folder / "instances" / f"{copy.id}.assets").iterdir()] == [
        p.name for p in (h.folder / "instances" / f"{instance_id}.assets").iterdir()
    ]
    provider.enqueue(say("still the same picture"))
    run = await runtime.get_agent(copy.id)
    await run.message("And now?")
    await run.result()
    assert _sent_images(provider) == [b"PNGDATA"]


@pytest.mark.parametrize("damage", ["asset_deleted", "folder_deleted"])
async def test_an_asset_gone_from_the_store_is_named_not_sent_empty(file_harness: Harness, damage: str) -> None:
    import shutil

    h = file_harness
    instance_id = await _with_image(h)
    folder = h.folder / "instances" / f"{instance_id}.assets"
    if damage == "asset_deleted":
        for item in folder.iterdir():
            item.unlink()
    else:
        shutil.rmtree(folder)
    runtime, provider = _again(h)
    provider.enqueue(say("what picture?"))
    run = await runtime.get_agent(instance_id)
    await run.message("And now?")
    with pytest.raises(StorageError) as caught:
        await run.result()
    assert instance_id in str(caught.value)
    assert "a.png" in str(caught.value)
    assert caught.value.operation == "get"
    assert provider.served == 0


# ---------------------------------------------------------------------------------------- definition keys


async def test_a_max_iterations_below_one_is_a_typed_error_naming_the_key(file_harness: Harness) -> None:
    h = file_harness
    with pytest.raises(BadDefinitionError) as caught:
        await h.runtime.start_agent(h.agent(tools=TOOLS, extra="maxIterations: 0\n"))
    assert (caught.value.path, caught.value.line) == ("maxIterations", 9)
    instance_id = await _held(h, two=False)
    path = _path(h, instance_id)
    _edit(path, "requestedModel:", "maxIterations: -5\nrequestedModel:")
    runtime, provider = _again(h)
    provider.enqueue(done())
    run = await runtime.approve(instance_id)
    with pytest.raises(BadDefinitionError, match="maxIterations must be a whole number") as caught:
        await run.result()
    assert caught.value.path == "maxIterations"
    assert caught.value.file == str(path)
    assert _deploys(h) == []
