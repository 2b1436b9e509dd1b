"""The agent mode of `onellm run`, `onellm instances resume`, and approvals at the terminal, through the real agent
loop of onellm-core against scripted models (`ONELLM_CLI_SCRIPT`). Where an installed core lacks the loop, the
commands stop with exit code 3 and say so (tested first)."""

from __future__ import annotations

import importlib.util
import signal
import sys
import time

import pytest

import onellm
from onellm.instances import Instance
from onellm.messages import ToolCall

from ._cli import Cli, no_traceback, write

AGENT = """\
name: clerk
model: claude-sonnet
maxIterations: {iterations}
systemPrompt: You look up things. Call task_complete with your answer.
references:
  - tools: [read_file, write_file, task_complete]
"""

SHOUT_JS = "export function invoke({ text }) { return text.toUpperCase(); }\n"
SHOUT_YAML = """\
name: shout
description: Upper-cases a text.
requiresApproval: true
inputSchema:
  type: object
  properties: {text: {type: string}}
  required: [text]
"""


def agent(cli: Cli, iterations: int = 20, extra: str = "") -> None:
    write(cli.cwd / "agent.yaml", AGENT.format(iterations=iterations) + extra)


def complete(call_id: str, result: str, summary: str = "Done.") -> dict[str, object]:
    return {
        "calls": [{"id": call_id, "tool": "task_complete", "arguments": {"result": result, "summary": summary}}],
        "usage": [100, 10],
    }


def saved(cli: Cli) -> Instance:
    files = cli.saved()
    assert len(files) == 1, files
    return Instance.load(files[0])


NO_LOOP = (
    "import onellm_cli._agents as a; a.agents_available = lambda: False; a.deciders_available = lambda: False; "
    "from onellm_cli import main; main()"
)


def test_without_the_agent_loop_agents_and_resume_stop_with_exit_3(cli: Cli) -> None:
    agent(cli)
    cli.script(anthropic=[complete("c1", "x")])
    done = cli.python(NO_LOOP, "run", "agent.yaml", "--prompt", "hi")
    no_traceback(done)
    assert done.code == 3
    assert done.err_lines == [
        f"onellm: error: running an agent needs the agent loop (onellm.start_agent), which onellm-core "
        f"{onellm.__version__} does not have; install a newer onellm-core"
    ]
    assert cli.saved() == []
    cli.instances.mkdir(parents=True)
    Instance(id="waiting1", state="waiting", model="anthropic:claude-sonnet-5-5").save(cli.instances / "waiting1.yaml")
    resumed = cli.python(NO_LOOP, "instances", "resume", "waiting1", "--prompt", "more")
    assert resumed.code == 3
    assert "resuming an instance needs the agent loop" in resumed.err_lines[0]


def test_resuming_a_resting_instance_needs_a_message(cli: Cli) -> None:
    cli.instances.mkdir(parents=True)
    Instance(id="waiting1", state="waiting", model="anthropic:claude-sonnet-5-5").save(cli.instances / "waiting1.yaml")
    done = cli("instances", "resume", "waiting1")
    assert done.code == 2
    assert done.err_lines == [
        "onellm: error: instance waiting1 is waiting and holds no call for approval; give the next message with --prompt"
    ]


def test_task_complete_prints_the_result_and_the_summary(cli: Cli) -> None:
    agent(cli)
    cli.script(
        anthropic=[
            {"calls": [{"id": "c1", "tool": "write_file", "arguments": {"path": "note.txt", "content": "hi"}}]},
            complete("c2", "Wrote note.txt.", "Wrote a note."),
        ]
    )
    done = cli("run", "agent.yaml", "--prompt", "Write a note.")
    assert done.code == 0, done
    assert done.out == "Wrote note.txt.\n"
    instance = saved(cli)
    assert 'tool write_file {"path":"note.txt","content":"hi"} -> ' in "\n".join(done.err_lines)
    assert "summary: Wrote a note." in done.err_lines
    assert done.last == f"instance {instance.id}: stopped, 2 turns, {done.last.rsplit(' ', 1)[1]}"
    assert (cli.cwd / "note.txt").read_text() == "hi"
    quiet = cli("run", "agent.yaml", "--prompt", "Again.", "--quiet")
    assert not any(line.startswith("tool ") for line in quiet.err_lines)


def test_an_answer_without_tools_waits_and_resume_continues_it(cli: Cli) -> None:
    agent(cli)
    cli.script(anthropic=[{"text": "Which case number?", "usage": [50, 5]}])
    done = cli("run", "agent.yaml", "--prompt", "Look up my case.")
    assert done.code == 0, done
    assert done.out == "Which case number?\n"
    instance = saved(cli)
    assert instance.state == "waiting"
    assert done.last.endswith(f'; continue with: onellm instances resume {instance.id} --prompt "..."')
    cli.script(anthropic=[complete("c1", "Docket open.")])  # a new process reads the script afresh
    resumed = cli("instances", "resume", instance.id or "", "--prompt", "24-1234")
    assert resumed.code == 0, resumed
    assert resumed.out == "Docket open.\n"
    assert Instance.load(cli.saved()[0]).state == "stopped"


def test_max_iterations_is_exit_4(cli: Cli) -> None:
    agent(cli, iterations=2)
    step = {"calls": [{"id": "r", "tool": "read_file", "arguments": {"path": "agent.yaml"}}]}
    cli.script(anthropic=[step, step])
    done = cli("run", "agent.yaml", "--prompt", "Loop.")
    assert done.code == 4, done
    instance = saved(cli)
    assert instance.state == "error"
    assert done.last.startswith(f"instance {instance.id}: error, 2 turns, ")
    assert done.last.endswith(f"; go on with: onellm instances resume {instance.id}")
    assert any(line.endswith(" without finishing") and line.startswith("onellm: ") for line in done.err_lines), done
    # resumed without a message, it goes on from where it stopped
    cli.script(anthropic=[complete("c1", "Read it.")])
    resumed = cli("instances", "resume", instance.id or "")
    assert resumed.code == 0, resumed
    assert resumed.out == "Read it.\n"
    assert saved(cli).state == "stopped"


def test_a_provider_failure_in_the_loop_is_exit_1(cli: Cli) -> None:
    agent(cli)
    cli.script(anthropic=[{"error": {"type": "OverloadedError", "message": "busy", "status": 529}}])
    done = cli("run", "agent.yaml", "--prompt", "x")
    assert done.code == 1, done
    assert "onellm: error: busy (scripted, 529)" in done.err_lines
    assert done.last.startswith(f"instance {saved(cli).id}: error, ")


def shout_agent(cli: Cli) -> None:
    write(cli.cwd / "tools" / "shout.js", SHOUT_JS)
    write(cli.cwd / "tools" / "shout.tool.yaml", SHOUT_YAML)
    write(
        cli.cwd / "agent.yaml",
        "name: loud\nmodel: claude-sonnet\nreferences:\n  - tools: [shout, task_complete]\n",
    )


SHOUT_STEPS: list[dict[str, object]] = [
    {"calls": [{"id": "s1", "tool": "shout", "arguments": {"text": "hi"}}]},
    complete("c1", "HI"),
]


def test_a_held_call_is_asked_at_the_terminal(cli: Cli) -> None:
    shout_agent(cli)
    cli.script(anthropic=SHOUT_STEPS)
    done = cli("run", "agent.yaml", "--prompt", "Shout hi.", "--tools", "tools", input="y\n")
    assert done.code == 0, done
    assert 'Approve shout {"text":"hi"}? [y/N] ' in done.err
    assert done.out == "HI\n"


def test_no_or_an_empty_answer_denies_the_call(cli: Cli) -> None:
    shout_agent(cli)
    for answer in ("n\n", "\n"):
        cli.script(anthropic=SHOUT_STEPS)
        done = cli("run", "agent.yaml", "--prompt", "Shout hi.", "--tools", "tools", input=answer)
        assert done.code == 0, done
        instance = Instance.load(max(cli.saved(), key=lambda p: p.stat().st_mtime))
        call = instance.messages[0].tool_calls[0]
        assert call.is_error
        assert "denied at the terminal" in " ".join(getattr(p, "text", "") for p in call.result or [])


def test_end_of_input_leaves_the_call_held_for_resume(cli: Cli) -> None:
    shout_agent(cli)
    cli.script(anthropic=SHOUT_STEPS)
    done = cli("run", "agent.yaml", "--prompt", "Shout hi.", "--tools", "tools", input="")
    assert done.code == 0, done
    instance = saved(cli)
    assert instance.state == "waiting_for_approval"
    assert [p.decision for p in instance.pending_approvals] == [None]
    assert done.last.endswith(f"; held for approval; decide with: onellm instances resume {instance.id}")
    cli.script(anthropic=SHOUT_STEPS[1:])
    resumed = cli("instances", "resume", instance.id or "", "--tools", "tools", input="yes\n")
    assert resumed.code == 0, resumed
    assert resumed.out == "HI\n"
    assert Instance.load(cli.saved()[0]).state == "stopped"


def test_yes_approves_without_asking(cli: Cli) -> None:
    shout_agent(cli)
    cli.script(anthropic=SHOUT_STEPS)
    done = cli("run", "agent.yaml", "--prompt", "Shout hi.", "--tools", "tools", "--yes")
    assert done.code == 0, done
    assert "Approve" not in done.err
    assert 'approved shout {"text":"hi"} (--yes)' in done.err_lines


def test_allow_shell_ask_confirms_each_command_at_the_terminal(cli: Cli) -> None:
    write(
        cli.cwd / "agent.yaml",
        "model: claude-sonnet\nreferences:\n  - tools: [execute_terminal_command, task_complete]\n",
    )
    command = {"id": "e1", "tool": "execute_terminal_command", "arguments": {"command": f"{sys.executable} -V"}}
    cli.script(anthropic=[{"calls": [command]}, complete("c1", "ran")])
    done = cli("run", "agent.yaml", "--prompt", "Run it.", "--allow-shell=ask", input="y\n")
    assert done.code == 0, done
    assert "Approve execute_terminal_command " in done.err
    cli.script(anthropic=[{"calls": [command]}, complete("c1", "refused")])
    refused = cli("run", "agent.yaml", "--prompt", "Run it.", "--allow-shell=ask", input="")
    assert refused.code == 0, refused


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is a POSIX test")
def test_ctrl_c_stops_an_agent_and_keeps_it(cli: Cli) -> None:
    agent(cli)
    cli.script(anthropic=[{"text": "thinking", "pause": True}])
    process = cli.start("run", "agent.yaml", "--prompt", "x")
    assert process.stderr is not None
    assert process.stderr.readline().startswith("instance ")
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    instance = saved(cli)
    assert instance.state == "stopped"
    assert instance.cancelled is True
    assert err.splitlines()[-1].startswith(f"instance {instance.id}: stopped (cancelled), ")
    # resumed, the partial run goes on: the answer cut off mid-stream is not a finished answer, so the turn is asked
    # again and the agent completes
    cli.script(anthropic=[complete("c1", "Back again.")])
    resumed = cli("instances", "resume", instance.id or "")
    assert resumed.code == 0, resumed
    assert resumed.out == "Back again.\n"
    after = saved(cli)
    assert after.state == "stopped"
    assert not after.cancelled
    assert "thinking" not in [m.text for m in after.messages]
    cli.script(anthropic=[complete("c2", "Once more.")])
    again = cli("instances", "resume", instance.id or "", "--prompt", "Go on.")
    assert again.code == 0, again
    assert again.out == "Once more.\n"


def call_of(instance: Instance, call_id: str) -> ToolCall:
    return next(call for message in instance.messages for call in message.tool_calls if call.id == call_id)


def test_an_agent_asking_the_user_prints_its_question_and_resume_answers_it(cli: Cli) -> None:
    agent(cli, extra="  - tools: [ask_user]\n")
    ask = {"id": "q1", "tool": "ask_user", "arguments": {"question": "Which case number?", "choices": ["24-1", "24-2"]}}
    cli.script(anthropic=[{"calls": [ask], "usage": [40, 6]}])
    done = cli("run", "agent.yaml", "--prompt", "Look up my case.")
    no_traceback(done)
    assert done.code == 0, done
    assert done.out == "Which case number?\n"
    instance = saved(cli)
    assert instance.state == "waiting"
    assert instance.ask_user is not None
    assert instance.ask_user.tool_call_id == "q1"
    assert done.last == (
        f"instance {instance.id}: waiting, 1 turn, $0.000140; "
        f'continue with: onellm instances resume {instance.id} --prompt "..."'
    )
    cli.script(anthropic=[complete("c1", "Case 24-2 is open.")])
    resumed = cli("instances", "resume", instance.id or "", "--prompt", "24-2")
    assert resumed.code == 0, resumed
    assert resumed.out == "Case 24-2 is open.\n"
    after = saved(cli)
    assert after.state == "stopped"
    assert after.ask_user is None
    # the person's message is the answer to the question: the result of the ask_user call
    assert "24-2" in " ".join(getattr(p, "text", "") or "" for p in call_of(after, "q1").result or [])
    assert resumed.last.startswith(f"instance {instance.id}: stopped, 2 turns, ")


@pytest.mark.skipif(importlib.util.find_spec("onellm_js") is None, reason="hook files run with the js extra")
def test_a_hook_that_blocks_the_run_is_exit_1(cli: Cli) -> None:
    write(
        cli.cwd / "guarded" / "block.js",
        'export function beforeInference(request) { return { action: "block", reason: "no calls today" }; }\n',
    )
    write(
        cli.cwd / "guarded" / "agent.yaml",
        "name: guarded\nmodel: claude-sonnet\nhooks:\n  - file: block.js\nreferences:\n  - tools: [task_complete]\n",
    )
    cli.script(anthropic=[{"text": "never sent"}])
    done = cli("run", "guarded", "--prompt", "x")
    no_traceback(done)
    assert done.code == 1, done
    instance = saved(cli)
    assert instance.state == "error"
    assert done.err_lines == [
        f"instance {instance.id} started on anthropic:claude-sonnet-5-5",
        "scripted: 1 step(s) left unused for anthropic",
        f"onellm: error: hook block.js blocked the run of instance {instance.id} at beforeInference: no calls today",
        f"instance {instance.id}: error, 0 turns, $0.000000",
    ]
