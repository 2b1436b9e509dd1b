"""The eight example agents: each loads strictly, its references resolve against the built-in tools with the grants
its documentation names (and not without them), its prompt renders and ends the work with `task_complete`; each runs
through the real command and, with the agent loop, through the real tool loop against a scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from onellm.definitions import Definition
from onellm.templating import render
from onellm.tools import ToolRegistry
from onellm_cli._agents import agents_available
from onellm_cli._commands import check_references
from onellm_cli._examples import EXAMPLES, GRANTS, describe, names
from onellm_cli._options import parse_grants
from onellm_cli._output import Reporter
from onellm_cli._setup import place_of, session

from ._cli import Cli, no_traceback

FLAGS: dict[str, list[str]] = {
    "py-tool-writer": ["--allow-shell=python,git"],
    "js-tool-writer": [],
    "provider-writer": ["--allow-shell=python,git"],
    "agent-writer": [],
    "script-writer": [],
    "decider-writer": [],
    "hook-writer": ["--allow-shell=python,git"],
    "orchestrator": [],
}
"""The grant flags each example needs, as `GRANTS` documents them (optional ones left out)."""

NEEDS_LOOP = "needs the agent loop (onellm.start_agent)"

SUBAGENT_TOOLS = {
    "run_agent_async",
    "await_agent",
    "message_agent",
    "query_agent",
    "list_agent_instances",
    "monitor_agent",
    "await_monitor",
}
"""The tools the orchestrator starts and watches its sub-agents with (the agents page's table)."""

HAS_SUBAGENT_TOOLS = ToolRegistry().find("run_agent_async") is not None
"""Whether onellm-core offers the sub-agent tools: a registry finds them by name, as it finds `task_complete`."""

needs_subagent_tools = pytest.mark.skipif(
    not HAS_SUBAGENT_TOOLS, reason="onellm-core does not offer the sub-agent tools (run_agent_async, ...) yet"
)


def test_there_are_eight_examples_each_one_agent_yaml() -> None:
    assert names() == list(FLAGS)
    assert sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()) == sorted(FLAGS)
    for name in names():
        assert [p.name for p in (EXAMPLES / name).iterdir()] == ["agent.yaml"]


@pytest.mark.parametrize("name", list(FLAGS))
def test_an_example_loads_strictly_and_renders(name: str) -> None:
    definition = Definition.load(EXAMPLES / name, strict=True)
    assert definition.warnings == []
    assert definition.name == name
    assert definition.description == describe(name)
    assert definition.model == "claude-sonnet"
    assert definition.max_iterations is not None
    assert definition.system_prompt is not None
    text = render(
        definition.system_prompt,
        {"system": {"workingDir": "/work"}, "inputs": {}, "time": {"today": "2026-12-01"}},
        missing_key="error",
    )
    if '{{"{{"}}' in definition.system_prompt:  # escaped braces show the template syntax to the model as text
        assert "{{ .inputs." in text
    assert "task_complete" in text
    assert "Not verified:" in text
    assert "(/work)" in text
    referenced = {tool for ref in definition.references or [] for tool in ref.tools or []}
    assert "task_complete" in referenced
    assert GRANTS[name]  # every example documents its grants
    flags = " ".join(FLAGS[name])
    assert flags in GRANTS[name] if flags else GRANTS[name].startswith(("none", "whatever"))


@pytest.mark.parametrize("name", list(FLAGS))
def test_references_resolve_with_the_documented_grants_only(name: str, tmp_path: Path) -> None:
    definition = Definition.load(EXAMPLES / name)
    place = place_of(str(tmp_path), None)
    grants = parse_grants([f.split("=", 1)[1] for f in FLAGS[name]], None)
    granted = session(place, Reporter(quiet=True), grants=grants, agent=True)
    if name == "orchestrator" and not HAS_SUBAGENT_TOOLS:
        with pytest.raises(Exception, match=r"no tool named 'run_agent_async' is registered"):
            check_references(definition, granted, grants, f"examples/{name}/agent.yaml")
    else:
        check_references(definition, granted, grants, f"examples/{name}/agent.yaml")
    registry = granted.runtime.tools
    names_used = {tool for ref in definition.references or [] for tool in ref.tools or []}
    unknown = {n for n in names_used if registry.find(n) is None}
    # only the sub-agent tools may be missing, and only while core does not offer them
    assert unknown == (set() if HAS_SUBAGENT_TOOLS or name != "orchestrator" else SUBAGENT_TOOLS)
    if FLAGS[name]:
        bare = parse_grants(None, None)
        without = session(place, Reporter(quiet=True), grants=bare, agent=True)
        with pytest.raises(Exception, match=r"tool 'execute_terminal_command' is not granted: it needs --allow-shell"):
            check_references(definition, without, bare, f"examples/{name}/agent.yaml")


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=needs_subagent_tools) if n == "orchestrator" else n for n in FLAGS]
)
def test_an_example_runs_through_the_command_with_its_grants(cli: Cli, name: str) -> None:
    writes = name != "orchestrator"  # the orchestrator writes nothing itself: it looks, and hands work out
    first = (
        {"id": "c1", "tool": "write_file", "arguments": {"path": "out/result.txt", "content": "done"}}
        if writes
        else {"id": "c1", "tool": "list_files", "arguments": {"path": "."}}
    )
    cli.script(
        anthropic=[
            {"calls": [first]},
            {
                "calls": [
                    {
                        "id": "c2",
                        "tool": "task_complete",
                        "arguments": {
                            "result": "Wrote out/result.txt. Not verified: nothing was run.",
                            "summary": f"{name} finished",
                        },
                    }
                ],
                "usage": [100, 20],
            },
        ]
    )
    done = cli("run", f"examples/{name}", "--prompt", "Write out/result.txt.", *FLAGS[name])
    no_traceback(done)
    if not agents_available():
        assert done.code == 3, done
        assert NEEDS_LOOP in done.err_lines[-1], done
        return
    assert done.code == 0, done
    assert done.out == "Wrote out/result.txt. Not verified: nothing was run.\n"
    assert f"summary: {name} finished" in done.err_lines
    if writes:
        assert (cli.cwd / "out" / "result.txt").read_text(encoding="utf-8") == "done"
    assert done.last.endswith(": stopped, 2 turns, $0.000400")


@pytest.mark.parametrize("name", [n for n, flags in FLAGS.items() if flags])
def test_an_example_that_needs_the_shell_says_why_without_the_flag(cli: Cli, name: str) -> None:
    done = cli("run", f"examples/{name}", "--prompt", "x")
    assert done.code == 3
    assert done.err_lines[0].startswith(f"onellm: error: examples/{name}/agent.yaml:")
    assert "tool 'execute_terminal_command' is not granted: it needs --allow-shell" in done.err_lines[0]


@pytest.mark.skipif(HAS_SUBAGENT_TOOLS, reason="onellm-core offers the sub-agent tools")
def test_the_orchestrator_says_which_tool_core_lacks(cli: Cli) -> None:
    """Until onellm-core offers the sub-agent tools, the orchestrator does not load: exit 3 at the reference, before
    any model call."""
    cli.script(anthropic=[{"text": "never sent"}])
    done = cli("run", "examples/orchestrator", "--prompt", "Split it.")
    no_traceback(done)
    assert done.code == 3, done
    assert done.err_lines == [
        "onellm: error: examples/orchestrator/agent.yaml:35:13: no tool named 'run_agent_async' is registered; "
        "register it with the runtime's tools (tools.add) (at references[1].tools[0])"
    ]
    assert cli.saved() == []


@needs_subagent_tools
def test_the_examples_are_registered_by_name_for_sub_agents(tmp_path: Path) -> None:
    granted = session(place_of(str(tmp_path), None), Reporter(quiet=True), grants=parse_grants(None, None), agent=True)
    registered = granted.runtime.agent_definitions  # type: ignore[attr-defined,unused-ignore]
    assert all(f"examples/{name}" in registered for name in names())


@needs_subagent_tools
def test_the_orchestrator_lists_its_sub_agents_through_the_tool_loop(cli: Cli) -> None:
    cli.script(
        anthropic=[
            {"calls": [{"id": "l1", "tool": "list_agent_instances", "arguments": {}}]},
            {
                "calls": [
                    {
                        "id": "c1",
                        "tool": "task_complete",
                        "arguments": {"result": "No parts started. Not verified: nothing.", "summary": "Looked."},
                    }
                ]
            },
        ]
    )
    done = cli("run", "examples/orchestrator", "--prompt", "What runs?")
    no_traceback(done)
    assert done.code == 0, done
    assert done.out == "No parts started. Not verified: nothing.\n"
    assert any(line.startswith("tool list_agent_instances {} -> ") for line in done.err_lines), done
