"""The eight example agents: each loads strictly, its references resolve against the built-in tools with the grants
its documentation names (and not without them), its prompt renders and ends the work with `task_complete`; each runs
through the real command and, with the agent loop, through the real tool loop against a scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from onellm.definitions import Definition
from onellm.templating import render
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
    check_references(definition, granted, grants, f"examples/{name}/agent.yaml")
    registry = granted.runtime.tools
    names_used = {tool for ref in definition.references or [] for tool in ref.tools or []}
    unknown = {n for n in names_used if registry.find(n) is None}
    # only the agent loop's own tools may be missing, and only while the loop is missing
    assert unknown <= {
        "run_agent_async",
        "await_agent",
        "message_agent",
        "query_agent",
        "list_agent_instances",
        "monitor_agent",
        "await_monitor",
    }
    if agents_available():
        assert unknown == set()
    if FLAGS[name]:
        bare = parse_grants(None, None)
        without = session(place, Reporter(quiet=True), grants=bare, agent=True)
        with pytest.raises(Exception, match=r"tool 'execute_terminal_command' is not granted: it needs --allow-shell"):
            check_references(definition, without, bare, f"examples/{name}/agent.yaml")


@pytest.mark.parametrize("name", list(FLAGS))
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
