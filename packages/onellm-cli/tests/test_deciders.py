"""The decider mode of `onellm run`: a folder holding `decider.yaml` (or the file) runs through the decider engines of
onellm-core against scripted engines and chat models (`ONELLM_CLI_SCRIPT`), prints its outputs as JSON on standard
output and its instance on the last line of standard error."""

from __future__ import annotations

import json

from onellm.instances import Instance

from ._cli import Cli, no_traceback, write
from .test_agents import NO_LOOP

TRIAGE = """\
model: jev-latest
state:
  title: "{{ .inputs.title }}"
  count: "{{ .inputs.n }}"
questions:
  topic:
    type: choice
    instructions: Which team should handle the ticket?
    criteria:
      billing: Charges and refunds
      orders: Delivery and returns
  angry:
    type: noul
    instructions: Is the customer angry?
"""

ANSWERS = {
    "topic": {"type": "choice", "choice": "orders", "confidence": 1.0, "probabilities": {"orders": 1.0}},
    "angry": {"type": "noul", "noul": 0.93},
}


def triage(cli: Cli, text: str = TRIAGE) -> None:
    write(cli.cwd / "triage" / "decider.yaml", text)


def only_instance(cli: Cli) -> Instance:
    files = cli.saved()
    assert len(files) == 1, files
    return Instance.load(files[0])


def test_without_the_decider_engines_a_decider_stops_with_exit_3(cli: Cli) -> None:
    triage(cli)
    done = cli.python(NO_LOOP, "run", "triage", "--input", "title=Refund")
    no_traceback(done)
    assert done.code == 3
    assert done.err_lines[0].startswith("onellm: error: running a decider needs the decider engines (onellm.decide)")
    assert cli.saved() == []


def test_a_decider_prints_its_outputs_as_json_and_the_last_line(cli: Cli) -> None:
    triage(cli)
    cli.script(decisions={"typesafe": {"answers": {"topic": "orders", "angry": 0.93}}})
    done = cli("run", "triage", "--input", "title=Where is my parcel?", "--input-json", '{"n": 2}')
    no_traceback(done)
    assert done.code == 0, done
    assert json.loads(done.out) == ANSWERS
    assert done.out.startswith('{\n  "topic": {\n    "type": "choice",\n')
    instance = only_instance(cli)
    assert instance.state == "stopped"
    assert instance.name == "triage"
    assert done.err_lines[0] == f"instance {instance.id} started on typesafe:jev-latest"
    assert done.last == f"instance {instance.id}: stopped, 1 call, $0.000003"
    # the run is an instance like any other: shown with its answers and engine call, and counted in the cost
    shown = cli("instances", "show", instance.id or "")
    assert shown.code == 0, shown
    assert "state: stopped" in shown.out.splitlines()
    assert any(line.startswith("decider call: typesafe:jev-latest [topic, angry]: ") for line in shown.out.splitlines())
    assert '"noul":0.93' in shown.out
    cost = cli("cost", instance.id or "")
    assert cost.code == 0, cost
    assert "  typesafe:jev-latest  $0.000003" in cost.out.splitlines()
    # the same run, pointed at the file rather than the folder
    cli.script(decisions={"typesafe": {"answers": {"topic": "billing", "angry": 0.1}}})
    by_file = cli("run", "triage/decider.yaml", "--input", "title=Refund", "--input", "n=1", "--quiet")
    assert by_file.code == 0, by_file
    assert json.loads(by_file.out)["topic"]["choice"] == "billing"
    assert len(by_file.err_lines) == 1
    assert by_file.last.endswith(": stopped, 1 call, $0.000003")


def test_a_decider_on_a_chat_model_asks_the_scripted_chat_provider(cli: Cli) -> None:
    write(
        cli.cwd / "urgent" / "decider.yaml",
        'model: claude-haiku\nstate:\n  title: "{{ .inputs.title }}"\n'
        "questions:\n  urgent:\n    type: noul\n    instructions: Is it urgent?\n",
    )
    cli.script(anthropic=[{"text": '{"probabilities": {"yes": 0.8, "no": 0.2}}', "usage": [300, 20]}])
    done = cli("run", "urgent", "--input", "title=Server down")
    no_traceback(done)
    assert done.code == 0, done
    assert json.loads(done.out) == {"urgent": {"type": "noul", "noul": 0.8}}
    instance = only_instance(cli)
    assert done.last.startswith(f"instance {instance.id}: stopped, 1 call, $")
    assert not any(line.startswith("scripted:") for line in done.err_lines)


def test_a_decider_without_its_key_stops_with_exit_3_naming_the_variable(cli: Cli) -> None:
    triage(cli)
    done = cli("run", "triage", "--input", "title=Refund", "--input", "n=1")
    no_traceback(done)
    assert done.code == 3, done
    assert "onellm: error: typesafe: No API key. Set the environment variable TYPESAFE_API_KEY." in done.err_lines


def test_a_decider_missing_an_input_stops_with_exit_3_at_the_template(cli: Cli) -> None:
    triage(cli)
    cli.script(decisions={"typesafe": {"answers": {}}})
    done = cli("run", "triage", "--input", "title=Refund")
    no_traceback(done)
    assert done.code == 3, done
    assert done.err_lines == [
        'onellm: error: triage/decider.yaml:4:21: execute error: at <.inputs.n>: map has no entry for key "n" '
        "(at state.count)"
    ]
    assert cli.saved() == []


def test_an_invalid_decider_stops_with_exit_3_at_its_line_and_column(cli: Cli) -> None:
    triage(
        cli, "model: jev-latest\nquestions:\n  topic:\n    type: choice\n    instructions: x\n    criteria: {a: b}\n"
    )
    done = cli("run", "triage")
    no_traceback(done)
    assert done.code == 3, done
    assert done.err_lines == [
        "onellm: error: triage/decider.yaml:6:15: a choice question takes 2 to 255 criteria, found 1 "
        "(at questions.topic.criteria)"
    ]
    assert cli.saved() == []


def test_a_refused_question_fails_the_run_with_exit_1(cli: Cli) -> None:
    triage(cli)
    cli.script(decisions={"typesafe": {"answers": {"topic": "orders"}, "refuse": ["angry"]}})
    done = cli("run", "triage", "--input", "title=Refund", "--input", "n=1")
    no_traceback(done)
    assert done.code == 1, done
    instance = only_instance(cli)
    assert instance.state == "error"
    assert done.err_lines == [
        f"instance {instance.id} started on typesafe:jev-latest",
        "call 1, 74 in / 0 out, $0.000003",
        "onellm: error: the engine declined to answer 1 question(s): angry (typesafe)",
        f"instance {instance.id}: error, 1 call, $0.000003",
    ]
