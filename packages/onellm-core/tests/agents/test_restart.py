"""Across processes: a run killed with SIGKILL is picked up by a new process over the same file store.

Process A runs to `waiting_for_approval` and is killed; process B, a new `Runtime`, approves, and the held tool runs
exactly once. And: process A is killed after a tool took effect but before the turn with its result was saved; process B
finds the call without a result, does not run it again, and goes on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")]

SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    import anyio
    import onellm
    from onellm.instances import FileInstanceStore
    from onellm.testing import ScriptedProvider, ScriptedToolCall, ScriptStep

    folder, mode = sys.argv[1], sys.argv[2]
    marker = os.path.join(folder, "effects.txt")

    def effect(line):
        with open(marker, "a", encoding="utf-8") as f:
            f.write(line + "\\n")
            f.flush()
            os.fsync(f.fileno())

    @onellm.tool(requires_approval=True)
    def deploy(target: str) -> str:
        '''Deploys.

        Args:
            target: Where.
        '''
        effect("deploy " + target)
        return "deployed to " + target

    @onellm.tool
    def charge(amount: int) -> str:
        '''Charges a card, then takes forever to report.

        Args:
            amount: How much.
        '''
        effect("charge " + str(amount))
        time.sleep(3600)
        return "charged"

    def call(i, tool, args):
        return ScriptStep(tool_calls=(ScriptedToolCall(i, tool, args),))

    async def main():
        runtime = onellm.Runtime(
            store=FileInstanceStore(os.path.join(folder, "instances")),
            capabilities=onellm.Capabilities.files(folder),
            environ={},
        )
        provider = ScriptedProvider("anthropic")
        runtime.providers.set("anthropic", provider)
        runtime.tools.add(deploy, charge)
        definition = os.path.join(folder, "agent.yaml")
        if mode == "hold":
            provider.enqueue(call("d1", "deploy", {"target": "prod"}))
            result = await runtime.run_agent(definition)
            print(result.instance.id, result.stop_reason.value, flush=True)
            await anyio.sleep_forever()
        elif mode == "charge":
            provider.enqueue(call("c1", "charge", {"amount": 5}))
            run = await runtime.start_agent(definition)
            print(run.instance_id, flush=True)
            await run.result()
        elif mode == "approve":
            provider.enqueue(call("t1", "task_complete", {"result": "shipped", "summary": "deployed"}))
            run = await runtime.approve(sys.argv[3])
            result = await run.result()
            print(result.stop_reason.value, result.text, flush=True)
        elif mode == "resume":
            provider.enqueue(call("t1", "task_complete", {"result": "checked", "summary": "did not charge twice"}))
            run = await runtime.get_agent(sys.argv[3])
            result = await run.result()
            first = result.instance.messages[0].tool_calls[0]
            print(result.stop_reason.value, first.is_error, flush=True)
            print(first.result[0].text, flush=True)

    anyio.run(main)
    """
)

AGENT = """\
model: claude-sonnet
references:
  - tools: [deploy, charge, task_complete]
initialPrompts:
  - user:
      - text: Do it.
"""


def _start(folder: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(folder / "agent_process.py"), str(folder), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run(folder: Path, *args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(folder / "agent_process.py"), str(folder), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _kill(process: subprocess.Popen[str]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    if process.stdout is not None:
        process.stdout.close()
    if process.stderr is not None:
        process.stderr.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "agent_process.py").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "agent.yaml").write_text(AGENT, encoding="utf-8")
    return tmp_path


def test_an_approval_survives_a_sigkill_and_the_held_tool_runs_exactly_once(folder: Path) -> None:
    a = _start(folder, "hold")
    assert a.stdout is not None
    line = a.stdout.readline().split()
    assert len(line) == 2, a.stderr.read() if a.stderr else ""
    instance_id, reason = line
    assert reason == "waiting_for_approval"
    assert not (folder / "effects.txt").exists()  # held: nothing ran in process A
    _kill(a)

    saved = (folder / "instances" / f"{instance_id}.yaml").read_text()
    assert "state: waiting_for_approval" in saved
    assert "toolCallId: d1" in saved

    assert _run(folder, "approve", instance_id) == ["completed shipped"]
    assert (folder / "effects.txt").read_text().splitlines() == ["deploy prod"]

    # picking the finished instance up again runs nothing more
    finished = (folder / "instances" / f"{instance_id}.yaml").read_text()
    assert "state: stopped" in finished
    assert "pendingApprovals" not in finished


def test_a_kill_between_a_tool_taking_effect_and_the_turn_being_saved_does_not_run_it_again(folder: Path) -> None:
    a = _start(folder, "charge")
    assert a.stdout is not None
    instance_id = a.stdout.readline().strip()
    assert instance_id, a.stderr.read() if a.stderr else ""
    marker = folder / "effects.txt"
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert marker.read_text().splitlines() == ["charge 5"]
    _kill(a)  # the lease's lock dies with the process

    saved = (folder / "instances" / f"{instance_id}.yaml").read_text()
    assert "state: running" in saved
    assert "tool: charge" in saved
    assert "result:" not in saved

    lines = _run(folder, "resume", instance_id)
    assert lines[0] == "completed True"
    assert lines[1].startswith("This call has no result: the run stopped before it finished")
    assert marker.read_text().splitlines() == ["charge 5"]  # not charged twice
