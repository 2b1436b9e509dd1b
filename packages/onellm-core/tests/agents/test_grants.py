"""Grants saved with the instance and intersected on resume; references checked against the registered tools and the
grants (strict and lenient)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import onellm
from onellm import StopReason
from onellm.agents import GrantsMissingError
from onellm.errors import BadDefinitionError, CapabilityMissingError
from onellm.instances import FileInstanceStore
from onellm.testing import ScriptedProvider

from .conftest import calls, done, say

pytestmark = pytest.mark.anyio


@onellm.tool
def roots(ctx: onellm.ToolContext) -> dict[str, Any]:
    """Reports the grants this call runs with."""
    caps = ctx.capabilities
    return {
        "read": sorted(str(p) for p in caps.read_roots),
        "write": sorted(str(p) for p in caps.write_roots),
        "shell": caps.shell_enabled,
    }


def _runtime(store_dir: Path, caps: onellm.Capabilities, *tools: Any) -> tuple[onellm.Runtime, ScriptedProvider]:
    runtime = onellm.Runtime(store=FileInstanceStore(store_dir, durable=False), capabilities=caps, environ={})
    provider = ScriptedProvider("anthropic")
    runtime.providers.set("anthropic", provider)
    runtime.tools.add(roots, *tools)
    return runtime, provider


def _agent(folder: Path, tools: str = "[roots, task_complete]") -> Path:
    path = folder / "agent.yaml"
    path.write_text(
        f"model: claude-sonnet\nreferences:\n  - tools: {tools}\ninitialPrompts:\n  - user:\n      - text: go\n"
    )
    return path


async def test_a_new_instance_records_its_grants(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    runtime, provider = _runtime(
        tmp_path / "instances", onellm.Capabilities.files(work) + onellm.Capabilities.shell_commands("git status")
    )
    provider.enqueue(say("ok"))
    result = await runtime.run_agent(_agent(tmp_path))
    assert result.instance.capabilities_recorded is True
    assert result.instance.capabilities == {
        "readRoots": [str(work)],
        "writeRoots": [str(work)],
        "shell": {"enabled": True, "approval": False, "commands": ["git status"]},
        "network": {"anyPublic": False, "hosts": []},
    }
    text = (tmp_path / "instances" / f"{result.instance.id}.yaml").read_text()
    assert "capabilitiesRecorded: true\n" in text


async def test_a_resumed_instance_never_gets_more_than_it_was_started_with(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    first, provider = _runtime(tmp_path / "instances", onellm.Capabilities.read_only_files(a))
    provider.enqueue(say("waiting"))
    started = await first.run_agent(_agent(tmp_path))

    wide, provider2 = _runtime(tmp_path / "instances", onellm.Capabilities.files(a, b) + onellm.Capabilities.shell())
    provider2.enqueue(calls(("r", "roots", {})), done())
    run = await wide.get_agent(started.instance.id)  # type: ignore[arg-type]
    await run.message("check your grants")
    result = await run.result()
    seen = result.instance.messages[-2].tool_calls[0].result[0].json  # type: ignore[index, union-attr]
    assert seen == {"read": [str(a)], "write": [], "shell": False}


async def test_a_narrower_runtime_narrows_a_resumed_instance(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    first, provider = _runtime(tmp_path / "instances", onellm.Capabilities.files(a, b))
    provider.enqueue(say("waiting"))
    started = await first.run_agent(_agent(tmp_path))
    narrow, provider2 = _runtime(tmp_path / "instances", onellm.Capabilities.read_only_files(b))
    provider2.enqueue(calls(("r", "roots", {})), done())
    run = await narrow.get_agent(started.instance.id)  # type: ignore[arg-type]
    await run.message("again")
    result = await run.result()
    seen = result.instance.messages[-2].tool_calls[0].result[0].json  # type: ignore[index, union-attr]
    assert seen == {"read": [str(b)], "write": [], "shell": False}


@pytest.mark.parametrize(
    ("edit", "detail"),
    [
        ({"capabilities": None}, "has no capabilities entry"),
        ({"capabilities": {"shell": "yes"}}, "capabilities entry is malformed"),
        ({"capabilities": {"readRoots": "/"}}, "capabilities entry is malformed"),
    ],
)
async def test_the_marker_without_a_valid_summary_fails_closed(
    tmp_path: Path, edit: dict[str, Any], detail: str
) -> None:
    runtime, provider = _runtime(tmp_path / "instances", onellm.Capabilities.files(tmp_path))
    provider.enqueue(say("waiting"))
    started = await runtime.run_agent(_agent(tmp_path))
    instance = started.instance
    for key, value in edit.items():
        setattr(instance, key, value)
    instance.forget_written_text()
    await runtime.store.save(instance)
    before = (tmp_path / "instances" / f"{instance.id}.yaml").read_text()
    run = await runtime.get_agent(instance.id)  # type: ignore[arg-type]
    await run.message("go")
    with pytest.raises(GrantsMissingError) as caught:
        await run.result()
    error = caught.value
    assert isinstance(error, BadDefinitionError)
    assert isinstance(error, CapabilityMissingError)
    assert f"instance {instance.id}" in str(error)
    assert detail in str(error)
    assert "gets no grants and is not run" in str(error)
    assert provider.served == 1  # nothing was sent
    assert (tmp_path / "instances" / f"{instance.id}.yaml").read_text() == before  # nothing was written


async def test_a_summary_that_is_not_a_mapping_is_refused_when_the_file_is_read(tmp_path: Path) -> None:
    runtime, provider = _runtime(tmp_path / "instances", onellm.Capabilities.files(tmp_path))
    provider.enqueue(say("waiting"))
    started = await runtime.run_agent(_agent(tmp_path))
    path = tmp_path / "instances" / f"{started.instance.id}.yaml"
    text = path.read_text()
    start = text.index("capabilities:\n")
    end = text.index("capabilitiesRecorded:")
    path.write_text(text[:start] + "capabilities: everything\n" + text[end:])
    with pytest.raises(BadDefinitionError, match="capabilities") as caught:
        await runtime.get_agent(started.instance.id)  # type: ignore[arg-type]
    assert caught.value.file is not None
    assert str(path) in caught.value.file


async def test_a_file_without_recorded_grants_gets_the_runtimes(tmp_path: Path) -> None:
    runtime, provider = _runtime(tmp_path / "instances", onellm.Capabilities.files(tmp_path))
    provider.enqueue(say("waiting"))
    started = await runtime.run_agent(_agent(tmp_path))
    instance = started.instance
    instance.capabilities = None
    instance.capabilities_recorded = None
    await runtime.store.save(instance)
    provider.enqueue(calls(("r", "roots", {})), done())
    run = await runtime.get_agent(instance.id)  # type: ignore[arg-type]
    await run.message("go")
    result = await run.result()
    seen = result.instance.messages[-2].tool_calls[0].result[0].json  # type: ignore[index, union-attr]
    assert seen["read"] == [str(tmp_path)]


async def test_saved_approval_uses_the_loop_gate_unless_the_runtime_has_an_approver(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    grant = (
        onellm.Capabilities.files(work) + onellm.Capabilities.shell_with_approval(lambda r: True)
    ).with_working_directory(work)
    first, provider = _runtime(tmp_path / "instances", grant, *onellm.builtin_tools())
    provider.enqueue(say("waiting"))
    started = await first.run_agent(_agent(tmp_path, "[execute_terminal_command, task_complete]"))
    assert started.instance.capabilities is not None
    assert started.instance.capabilities["shell"] == {"enabled": True, "approval": True}

    # a runtime with an open shell and no approver: the saved "approval" holds the command in the loop
    plain = (onellm.Capabilities.files(work) + onellm.Capabilities.shell()).with_working_directory(work)
    second, provider2 = _runtime(tmp_path / "instances", plain, *onellm.builtin_tools())
    provider2.enqueue(calls(("sh", "execute_terminal_command", {"command": "echo hi"})))
    run = await second.get_agent(started.instance.id)  # type: ignore[arg-type]
    await run.message("run it")
    held = await run.result()
    assert held.stop_reason is StopReason.WAITING_FOR_APPROVAL
    assert held.pending_approvals[0].reason is not None
    assert held.pending_approvals[0].reason.startswith("shell command: echo hi")

    # a runtime with an approver of its own asks it inside the tool instead
    asked: list[str] = []

    def approver(request: onellm.capabilities.CommandRequest) -> bool:
        asked.append(request.line)
        return True

    own = (onellm.Capabilities.files(work) + onellm.Capabilities.shell_with_approval(approver)).with_working_directory(
        work
    )
    third, provider3 = _runtime(tmp_path / "instances", own, *onellm.builtin_tools())
    await third.deny(started.instance.id)  # type: ignore[arg-type]
    provider3.enqueue(calls(("sh2", "execute_terminal_command", {"command": "echo again"})), done())
    run3 = await third.get_agent(started.instance.id)  # type: ignore[arg-type]
    await run3.message("try once more")
    result = await run3.result()
    assert result.stop_reason is StopReason.COMPLETED
    assert asked == ["echo again"]


async def test_an_ungranted_tool_is_refused_with_its_position_and_the_grant_to_add(tmp_path: Path) -> None:
    runtime, provider = _runtime(tmp_path / "instances", onellm.Capabilities.files(tmp_path), *onellm.builtin_tools())
    path = tmp_path / "agent.yaml"
    path.write_text(
        "model: claude-sonnet\nreferences:\n  - tools: [read_file]\n  - tools: [execute_terminal_command]\n"
        "initialPrompts:\n  - user:\n      - text: go\n"
    )
    with pytest.raises(BadDefinitionError) as caught:
        await runtime.run_agent(path)
    error = caught.value
    assert (error.file, error.line, error.column) == (str(path), 4, 13)
    assert "execute_terminal_command" in error.detail
    assert "Capabilities.shell_commands" in error.detail
    assert await runtime.store.list() == []
    # lenient: dropped with a warning, the rest runs
    provider.enqueue(say("read only"))
    result = await runtime.run_agent(path, strict=False)
    assert [t.name for t in provider.requests[0].tools] == ["read_file"]
    assert any("execute_terminal_command" in w.message and "dropped" in w.message for w in result.warnings)


async def test_an_unknown_tool_is_refused_with_its_position(tmp_path: Path) -> None:
    runtime, _ = _runtime(tmp_path / "instances", onellm.Capabilities.files(tmp_path))
    path = tmp_path / "agent.yaml"
    path.write_text("model: claude-sonnet\nreferences:\n  - tools: [roots, no_such_tool]\n")
    with pytest.raises(BadDefinitionError, match="no tool named 'no_such_tool' is registered") as caught:
        await runtime.run_agent(path, prompt="go")
    assert (caught.value.line, caught.value.column) == (3, 20)


async def test_a_saved_tool_limit_narrows_the_tools(tmp_path: Path) -> None:
    runtime, provider = _runtime(tmp_path / "instances", onellm.Capabilities.files(tmp_path), *onellm.builtin_tools())
    provider.enqueue(say("waiting"))
    started = await runtime.run_agent(_agent(tmp_path, "[roots, read_file, task_complete]"))
    instance = started.instance
    assert instance.capabilities is not None
    instance.capabilities = {**instance.capabilities, "tools": ["read_file"]}
    await runtime.store.save(instance)
    provider.enqueue(say("again"))
    run = await runtime.get_agent(instance.id)  # type: ignore[arg-type]
    await run.message("go")
    result = await run.result()
    assert [t.name for t in provider.requests[-1].tools] == ["read_file", "task_complete"]
    assert any("tool 'roots' was left out" in w.message for w in result.warnings)


async def test_each_instance_gets_a_summary_of_its_own(tmp_path: Path) -> None:
    """The summary of one runtime's grants is made once: a change to one instance's copy reaches no other instance."""
    work = tmp_path / "work"
    work.mkdir()
    runtime, _ = _runtime(
        tmp_path / "instances", onellm.Capabilities.files(work) + onellm.Capabilities.network("example.com")
    )
    first = (await runtime.start_agent(_agent(tmp_path))).instance
    expected = {
        "readRoots": [str(work)],
        "writeRoots": [str(work)],
        "shell": {"enabled": False, "approval": False},
        "network": {"anyPublic": False, "hosts": ["example.com"]},
    }
    assert first.capabilities == expected
    assert first.capabilities is not None
    first.capabilities["readRoots"].append("/elsewhere")
    first.capabilities["network"]["hosts"].clear()
    first.capabilities["shell"]["enabled"] = True
    second = (await runtime.start_agent(_agent(tmp_path))).instance
    assert second.capabilities == expected
