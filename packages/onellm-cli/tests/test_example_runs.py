"""Each example agent doing its own job through the real command and the real tool loop, against scripted models: the
tools its definition names run under the grants its documentation gives (the shell only for the programs granted),
and what it writes is what the rest of onellm reads (a tool a test runs, a catalog layer that resolves, a flow and an
agent that load and run, a decider that `run_decider` asks)."""

from __future__ import annotations

import json
from typing import Any

from onellm.definitions import Definition
from onellm.instances import Instance
from onellm.messages import TextPart
from onellm_cli._output import show_json

from ._cli import Cli, no_traceback, write

TOOL_MODULE = '''\
import onellm

FACTORS = {"m": 1.0, "ft": 0.3048, "mi": 1609.344}


@onellm.tool
def convert_length(value: float, source: str, target: str) -> float:
    """Converts a length between metres, feet and miles.

    Args:
        value: The length.
        source: Its unit: m, ft or mi.
        target: The unit to convert to: m, ft or mi.
    """
    if source not in FACTORS or target not in FACTORS:
        raise ValueError(f"units are m, ft and mi, not {source!r} or {target!r}")
    return value * FACTORS[source] / FACTORS[target]
'''

TOOL_CHECK = (
    "import sys; sys.path.insert(0, 'src'); from lengths import convert_length as c; "
    "assert c.name == 'convert_length'; print(round(c.fn(1, 'mi', 'm'), 3))"
)


def call(call_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "tool": tool, "arguments": arguments}


def step(*calls: dict[str, Any], usage: tuple[int, int] = (200, 40)) -> dict[str, Any]:
    return {"calls": list(calls), "usage": list(usage)}


def complete(result: str, summary: str = "Done.") -> dict[str, Any]:
    return step(call("done", "task_complete", result=result, summary=summary))


def named(cli: Cli, name: str) -> Instance:
    found = [i for i in (Instance.load(p) for p in cli.saved()) if i.name == name]
    assert len(found) == 1, [p.name for p in cli.saved()]
    return found[0]


def result_text(instance: Instance, call_id: str) -> str:
    """What came back from a call: its text parts, and its JSON parts as JSON."""
    for message in instance.messages:
        for tool_call in message.tool_calls:
            if tool_call.id == call_id:
                return " ".join(
                    part.text if isinstance(part, TextPart) else show_json(getattr(part, "json", None))
                    for part in tool_call.result or []
                )
    raise AssertionError(f"no call {call_id}")


def is_error(instance: Instance, call_id: str) -> bool:
    return next(c.is_error for m in instance.messages for c in m.tool_calls if c.id == call_id)


def test_py_tool_writer_writes_a_tool_runs_python_and_is_refused_other_programs(cli: Cli) -> None:
    cli.script(
        anthropic=[
            step(call("w1", "write_file", path="src/lengths.py", content=TOOL_MODULE)),
            step(call("x1", "execute_terminal_command", command=f'python -c "{TOOL_CHECK}"')),
            step(call("x2", "execute_terminal_command", command="ls -la")),
            complete("Wrote src/lengths.py. Not verified: nothing else.", "Wrote a length tool."),
        ]
    )
    done = cli("run", "examples/py-tool-writer", "--prompt", "Write a length tool.", "--allow-shell=python,git")
    no_traceback(done)
    assert done.code == 0, done
    assert done.out == "Wrote src/lengths.py. Not verified: nothing else.\n"
    assert (cli.cwd / "src" / "lengths.py").read_text(encoding="utf-8") == TOOL_MODULE
    instance = named(cli, "py-tool-writer")
    assert not is_error(instance, "x1")
    assert "1609.344" in result_text(instance, "x1")
    # only python and git were granted: another program is refused, and the model reads why
    assert is_error(instance, "x2")
    assert "ls" in result_text(instance, "x2")
    assert done.last.startswith(f"instance {instance.id}: stopped, 4 turns, ")


def test_provider_writer_writes_a_catalog_layer_its_own_check_resolves(cli: Cli) -> None:
    provider = (
        "name: example\nprotocol: openai-compatible\nbaseUrl: https://api.example.test/v1\n"
        "apiKeyEnvVar: EXAMPLE_API_KEY\nmodels:\n  - name: example-large\n    kind: chat\n    contextWindow: 128000\n"
    )
    check = (
        "from onellm.catalog import Catalog; c = Catalog.from_layers(shipped=True, user='providers/llm-provider.yaml'); "
        "print(c.resolve('example:example-large').qualified_name)"
    )
    cli.script(
        anthropic=[
            step(call("w1", "write_file", path="providers/llm-provider.yaml", content=provider)),
            step(call("x1", "execute_terminal_command", command=f'python -c "{check}"')),
            complete("Wrote providers/llm-provider.yaml. Not verified: prices."),
        ]
    )
    done = cli("run", "examples/provider-writer", "--prompt", "Add a preset.", "--allow-shell=python,git")
    no_traceback(done)
    assert done.code == 0, done
    instance = named(cli, "provider-writer")
    assert not is_error(instance, "x1"), result_text(instance, "x1")
    assert "example:example-large" in result_text(instance, "x1")
    # the layer it wrote is what `onellm catalog` reads through ONELLM_CATALOG
    shown = cli("catalog", "example:example-large", env={"ONELLM_CATALOG": str(cli.cwd / "providers")})
    assert shown.code == 0, shown
    assert "contextWindow: 128000 [user]" in shown.out.splitlines()


def test_hook_writer_writes_a_hook_and_runs_its_check(cli: Cli) -> None:
    hook = (
        "from pathlib import PurePosixPath\n\n\n"
        "def outside(path: str) -> bool:\n"
        "    parts = PurePosixPath(path).parts\n"
        "    return not parts or parts[0] != 'out' or '..' in parts\n"
    )
    cli.script(
        anthropic=[
            step(call("w0", "write_file", path="hooks/guard.py", content=hook)),
            step(call("w1", "write_file", path="guards/guard.py", content=hook)),
            step(
                call(
                    "x1",
                    "execute_terminal_command",
                    command="python -c \"import sys; sys.path.insert(0, 'guards'); import guard; "
                    "print(guard.outside('out/a'), guard.outside('out/../a'), guard.outside('src/a'))\"",
                )
            ),
            step(call("t1", "todo", todos=[{"content": "test the guard", "status": "completed"}])),
            complete("Wrote hooks/guard.py. Not verified: inside a live run."),
        ]
    )
    done = cli("run", "examples/hook-writer", "--prompt", "Block writes outside ./out.", "--allow-shell=python,git")
    no_traceback(done)
    assert done.code == 0, done
    instance = named(cli, "hook-writer")
    # while git may run, a folder named hooks is refused (a git hook there would run on the next commit)
    assert is_error(instance, "w0")
    assert "is under a directory named 'hooks', refused while git can run" in result_text(instance, "w0")
    assert not (cli.cwd / "hooks").exists()
    assert not is_error(instance, "t1")
    assert "False True True" in result_text(instance, "x1")


def test_decider_writer_writes_a_decider_and_asks_it_with_run_decider(cli: Cli) -> None:
    decider = (
        'model: jev-latest\nstate:\n  title: "{{ .inputs.title }}"\nquestions:\n'
        "  area:\n    type: choice\n    instructions: Which area?\n    criteria: {billing: Money, shipping: Parcels}\n"
        "  angry:\n    type: noul\n    instructions: Is the customer angry?\n"
    )
    cli.script(
        anthropic=[
            step(call("w1", "write_file", path="deciders/triage/decider.yaml", content=decider)),
            step(call("d1", "run_decider", path="deciders/triage", inputs={"title": "Where is my parcel?!"})),
            complete(
                "Wrote deciders/triage/decider.yaml; run_decider: shipping, angry 0.9. Not verified: a live model."
            ),
        ],
        decisions={"typesafe": {"answers": {"area": "shipping", "angry": 0.9}}},
    )
    done = cli("run", "examples/decider-writer", "--prompt", "Write ./deciders/triage.")
    no_traceback(done)
    assert done.code == 0, done
    writer = named(cli, "decider-writer")
    answered = json.loads(result_text(writer, "d1"))
    assert answered["answers"]["area"]["choice"] == "shipping"
    assert answered["answers"]["angry"] == {"type": "noul", "noul": 0.9}
    # the decider's run is an instance of its own, asked by the agent's, and counted in the agent's cost
    decided = named(cli, "triage")
    assert answered["instanceId"] == decided.id
    assert decided.caller_instance_id == writer.id
    cost = cli("cost", writer.id or "")
    assert cost.code == 0, cost
    assert cost.out.splitlines() == [
        f"instance {writer.id} (decider-writer)",
        "  anthropic:claude-sonnet-5-5  $0.002400",
        "  total                        $0.002400",
        "with its sub-agents (1 instance)",
        "  anthropic:claude-sonnet-5-5  $0.002400",
        "  typesafe:jev-latest          $0.000003",
        "  total                        $0.002403",
    ]
    # and the command runs the decider it wrote
    cli.script(decisions={"typesafe": {"answers": {"area": "billing", "angry": 0.2}}})
    again = cli("run", "deciders/triage", "--input", "title=Refund")
    assert again.code == 0, again
    assert json.loads(again.out)["area"]["choice"] == "billing"


def test_script_writer_writes_a_flow_the_command_runs(cli: Cli) -> None:
    flow = (
        "model: claude-sonnet\nmissingKey: error\ninitialPrompts:\n"
        '  - user:\n      - text: "Summarize: {{ .inputs.diff }}"\n'
        '  - user:\n      - text: "Tighten: {{ (index .turns 0).text }}"\n'
    )
    cli.script(
        anthropic=[
            step(call("w1", "write_file", path="commit-message.flow", content=flow)),
            complete("Wrote commit-message.flow (input: diff). Not verified: I did not run it."),
        ]
    )
    done = cli("run", "examples/script-writer", "--prompt", "Write ./commit-message.flow.")
    no_traceback(done)
    assert done.code == 0, done
    write(cli.cwd / "change.diff", "-a\n+b\n")
    cli.script(anthropic=[{"text": "Replace a with b."}, {"text": "Use b."}])
    ran = cli("run", "commit-message.flow", "--input", "diff=@change.diff")
    assert ran.code == 0, ran
    assert ran.out == "Use b.\n"


def test_agent_writer_writes_a_definition_that_loads_and_runs(cli: Cli) -> None:
    definition = (
        "name: changelog\nmodel: claude-sonnet\nmaxIterations: 20\n"
        "systemPrompt: Read log.txt and write CHANGELOG.md, then call task_complete.\n"
        "references:\n  - tools: [read_file, write_file, task_complete]\n"
    )
    cli.script(
        anthropic=[
            step(call("l1", "list_files", path=".")),
            step(call("w1", "write_file", path="agents/changelog.yaml", content=definition)),
            complete("Wrote agents/changelog.yaml; no grant flags. Not verified: I could not run it."),
        ]
    )
    done = cli("run", "examples/agent-writer", "--prompt", "Write ./agents/changelog.yaml.")
    no_traceback(done)
    assert done.code == 0, done
    assert Definition.load(cli.cwd / "agents" / "changelog.yaml", strict=True).name == "changelog"
    write(cli.cwd / "log.txt", "fix: a bug\n")
    cli.script(
        anthropic=[
            step(call("r1", "read_file", path="log.txt")),
            step(call("w1", "write_file", path="CHANGELOG.md", content="- Fixed a bug.\n")),
            complete("Wrote CHANGELOG.md."),
        ]
    )
    ran = cli("run", "agents/changelog.yaml", "--prompt", "Go.")
    assert ran.code == 0, ran
    assert (cli.cwd / "CHANGELOG.md").read_text(encoding="utf-8") == "- Fixed a bug.\n"


def test_js_tool_writer_writes_a_tool_that_loads_and_runs(cli: Cli) -> None:
    source = (
        "export async function invoke({ records }) {\n"
        "  return records.map((r) => ({ name: `${r.firstName} ${r.lastName}` }));\n}\n"
    )
    described = (
        "name: reshape_names\ndescription: Joins first and last names.\ninputSchema:\n  type: object\n"
        "  properties: {records: {type: array}}\n  required: [records]\n"
    )
    cli.script(
        anthropic=[
            step(call("w1", "write_file", path="tools/reshape_names.js", content=source)),
            step(call("w2", "write_file", path="tools/reshape_names.tool.yaml", content=described)),
            step(
                call("j1", "run_javascript", code="return [{firstName: 'Ada', lastName: 'L'}].map(r => r.firstName);")
            ),
            complete("Wrote tools/reshape_names.js and its .tool.yaml. Not verified: nothing."),
        ]
    )
    done = cli("run", "examples/js-tool-writer", "--prompt", "Write a JS tool in ./tools.")
    no_traceback(done)
    assert done.code == 0, done
    assert "Ada" in result_text(named(cli, "js-tool-writer"), "j1")
    # the tool it wrote loads with --tools and runs in an agent that names it
    write(
        cli.cwd / "use.yaml",
        "name: user\nmodel: claude-sonnet\nreferences:\n  - tools: [reshape_names, task_complete]\n",
    )
    cli.script(
        anthropic=[
            step(call("u1", "reshape_names", records=[{"firstName": "Ada", "lastName": "Lovelace"}])),
            complete("ok"),
        ]
    )
    ran = cli("run", "use.yaml", "--prompt", "Reshape.", "--tools", "tools")
    assert ran.code == 0, ran
    assert "Ada Lovelace" in result_text(named(cli, "user"), "u1")
