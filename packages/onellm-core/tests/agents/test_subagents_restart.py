"""A parent and its child killed with SIGKILL mid-run, then picked up by a new process over the same file store: the
links hold, the child is reached through `spawnerInstanceId`, keeps the narrower grants it was started with and its
caller's tool bound, and the subtree's cost counts both."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from decimal import Decimal
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")]

SCRIPT = textwrap.dedent(
    """
    import itertools, json, os, sys, time
    import anyio
    import onellm
    import onellm.instances
    from onellm.instances import FileInstanceStore
    from onellm.messages import Usage
    from onellm.testing import ScriptedProvider, ScriptedToolCall, ScriptStep

    folder, mode = sys.argv[1], sys.argv[2]
    counter = itertools.count(1)
    onellm.instances.new_instance_id = lambda: f"{mode}{next(counter)}"

    @onellm.tool
    def stall(note: str) -> str:
        '''Writes a note, then takes forever.

        Args:
            note: The note.
        '''
        with open(os.path.join(folder, "effects.txt"), "a", encoding="utf-8") as f:
            f.write(note + "\\n")
        time.sleep(3600)
        return "never"

    def step(*items, usage=(1000, 100)):
        return ScriptStep(
            tool_calls=tuple(ScriptedToolCall(i, t, a) for i, t, a in items),
            usage=Usage(input_tokens=usage[0], output_tokens=usage[1]),
        )

    async def main():
        runtime = onellm.Runtime(
            store=FileInstanceStore(os.path.join(folder, "instances")),
            capabilities=(onellm.Capabilities.files(folder) + onellm.Capabilities.shell()).with_working_directory(folder),
            environ={},
        )
        parent, child = ScriptedProvider("anthropic"), ScriptedProvider("openai")
        runtime.providers.set("anthropic", parent)
        runtime.providers.set("openai", child)
        runtime.tools.add(stall, *onellm.builtin_tools())
        if mode == "a":
            parent.enqueue(
                step(
                    ("r1", "run_agent_async", {"agentSwarmUri": "child.yaml", "prompt": "Stall, then finish."}),
                    ("w1", "await_agent", {"ids": ["a2"]}),
                )
            )
            child.enqueue(step(("s1", "stall", {"note": "child stalled"}), usage=(500, 50)))
            run = await runtime.start_agent(
                os.path.join(folder, "parent.yaml"),
                capabilities=onellm.Capabilities.files(folder).with_working_directory(folder),
            )
            await run.result()
        else:
            parent.enqueue(step(("w2", "await_agent", {"ids": ["a2"]})), step(("t1", "task_complete", {"result": "both done", "summary": "s"})))
            child.enqueue(step(("t2", "task_complete", {"result": "child done", "summary": "c"}), usage=(700, 70)))
            kept = {}  # the child's live run, held while it is live (the runtime keeps live runs weakly)

            def hold(event):
                if event.instance_id == "a2" and "a2" not in kept:
                    kept["a2"] = runtime._agent_hub.live.get("a2")

            runtime.agent_events.add(hold)
            run = await runtime.get_agent("a1")
            result = await run.result()
            from onellm.agents._result import instance_cost
            kid = await runtime.store.load("a2")
            report = next(c for m in result.instance.messages for c in m.tool_calls if c.id == "w2")
            live = kept["a2"]
            print(json.dumps({
                "stop": result.stop_reason.value,
                "own": str(result.cost.total),
                "subtree": str(result.subtree_cost.total),
                "child": str(instance_cost(kid).total),
                "links": [kid.spawner_instance_id, kid.caller_instance_id, kid.caller_tool_call_id, kid.delegation_prompt],
                "childState": kid.state,
                "childTools": kid.capabilities.get("tools"),
                "childShell": live._caps.shell_enabled,
                "childToolsLive": sorted(live._setup.tools),
                "report": report.result[0].json if report.result else None,
            }), flush=True)

    anyio.run(main)
    """
)

PARENT = """\
name: boss
model: claude-sonnet
references:
  - tools: [stall, run_agent_async, await_agent, task_complete]
initialPrompts:
  - user:
      - text: Split the job.
"""

CHILD = """\
name: worker
model: gpt-6-luna
references:
  - tools: [stall, task_complete]
"""


def test_parent_and_child_resume_in_a_new_process_with_links_grants_and_costs(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "parent.yaml").write_text(PARENT, encoding="utf-8")
    (tmp_path / "child.yaml").write_text(CHILD, encoding="utf-8")
    first = subprocess.Popen(
        [sys.executable, str(tmp_path / "run.py"), str(tmp_path), "a"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    effects = tmp_path / "effects.txt"
    deadline = time.monotonic() + 60
    while not (effects.exists() and "child stalled" in effects.read_text(encoding="utf-8")):
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        assert time.monotonic() < deadline, "the child never stalled"
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=30)
    assert first.returncode == -signal.SIGKILL

    second = subprocess.run(
        [sys.executable, str(tmp_path / "run.py"), str(tmp_path), "b"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    out = json.loads(second.stdout.strip().splitlines()[-1])
    assert out["stop"] == "completed"
    assert out["links"] == ["a1", "a1", "r1", "Stall, then finish."]
    assert out["childState"] == "stopped"
    assert out["childTools"] == ["await_agent", "run_agent_async", "stall", "task_complete"]
    assert out["childShell"] is False  # started without the shell, resumed by a runtime that has it: still without
    assert out["childToolsLive"] == ["stall", "task_complete"]
    assert out["report"]["agents"][0]["result"] == "child done"
    own, child, subtree = (Decimal(out[k]) for k in ("own", "child", "subtree"))
    assert own > 0
    assert child > 0
    assert subtree == own + child
    assert effects.read_text(encoding="utf-8").count("child stalled") == 1  # the interrupted call was not run again


COMPACTING = textwrap.dedent(
    """
    import os, sys
    import anyio
    import onellm
    from onellm.instances import FileInstanceStore
    from onellm.messages import Usage
    from onellm.testing import ScriptedProvider, ScriptedToolCall, ScriptStep

    folder = sys.argv[1]

    @onellm.tool
    def echo(text: str) -> str:
        '''Says it back.

        Args:
            text: What to say.
        '''
        return "echo: " + text

    async def main():
        runtime = onellm.Runtime(store=FileInstanceStore(os.path.join(folder, "instances")), environ={})
        provider = ScriptedProvider("anthropic")
        runtime.providers.set("anthropic", provider)
        runtime.tools.add(echo)

        @runtime.hooks.before_inference
        def mark(ctx):
            if ctx.instance.name == "compact":
                with open(os.path.join(folder, "summarizing"), "w", encoding="utf-8") as f:
                    f.write(ctx.instance.spawner_instance_id or "")

        provider.enqueue(
            ScriptStep(tool_calls=(ScriptedToolCall("c1", "echo", {"text": "big"}),), usage=Usage(input_tokens=1200, output_tokens=10)),
            ScriptStep.paused("THE ", seconds=3600, then=["SUMMARY"]),
        )
        await runtime.run_agent(os.path.join(folder, "agent.yaml"))

    anyio.run(main)
    """
)

COMPACT_AGENT = """\
name: long
model: claude-sonnet
references:
  - tools: [echo, task_complete]
contextStrategy: {type: compact, triggerTokens: 1000, keepLast: 1}
initialPrompts:
  - user:
      - text: First part.
  - user:
      - text: Second part.
"""


def test_a_kill_during_a_compaction_leaves_the_instance_file_valid(tmp_path: Path) -> None:
    import anyio

    from onellm.instances import FileInstanceStore

    (tmp_path / "compacting.py").write_text(COMPACTING, encoding="utf-8")
    (tmp_path / "agent.yaml").write_text(COMPACT_AGENT, encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, str(tmp_path / "compacting.py"), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    marker = tmp_path / "summarizing"
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text(encoding="utf-8")):
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "the summary call never began"
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    instance_id = marker.read_text(encoding="utf-8")

    async def load() -> object:
        return await FileInstanceStore(tmp_path / "instances").load(instance_id)

    saved = anyio.run(load)
    assert saved is not None
    assert saved.compactions == []  # type: ignore[attr-defined]
    assert [m.user_text for m in saved.messages] == ["First part.", "Second part."]  # type: ignore[attr-defined]
    assert saved.messages[-1].tool_calls[0].result[0].text == "echo: big"  # type: ignore[attr-defined]
