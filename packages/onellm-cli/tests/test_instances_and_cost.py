"""`onellm instances list|show|fork`, `onellm cost [id] [--since]`: over instances the runtime saved."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from onellm.instances import FileInstanceStore, Instance
from onellm.messages import Message, MessageSource, TextPart, Timestamp, ToolCall, Usage

from ._cli import Cli, flow, no_traceback


def stamp(days_ago: float) -> Timestamp:
    return Timestamp.from_datetime(datetime.now(UTC) - timedelta(days=days_ago))


def turn(text: str, cost: str | None, *, days_ago: float = 0, tool_cost: str | None = None) -> Message:
    usage = Usage(input_tokens=10, output_tokens=5, cost=Decimal(cost)) if cost is not None else Usage(input_tokens=1)
    calls = [ToolCall(id="t1", tool="search_web", inputs={"q": "x"}, cost=Decimal(tool_cost))] if tool_cost else []
    return Message(
        id=f"m-{text}",
        user=[TextPart(f"ask {text}")],
        assistant=[TextPart(f"answer {text}")],
        tool_calls=calls,
        date_time=stamp(days_ago),
        source=MessageSource(kind="api"),
        usage=usage,
    )


def save(cli: Cli, instance: Instance, age_seconds: float = 0) -> Path:
    store = FileInstanceStore(cli.instances)
    store.save_sync(instance)
    path = store.path_of(instance.id or "")
    if age_seconds:
        moment = time.time() - age_seconds
        os.utime(path, (moment, moment))
    return path


def family(cli: Cli) -> None:
    """A parent with a child and a grandchild on other models, and an unrelated instance."""
    save(
        cli,
        Instance(
            id="parent",
            name="Planner",
            state="waiting",
            model="anthropic:claude-sonnet-5-5",
            messages=[turn("one", "0.0000105", days_ago=10), turn("two", "0.25", tool_cost="0.005")],
        ),
        age_seconds=30,
    )
    save(
        cli,
        Instance(
            id="child",
            name="Writer",
            state="stopped",
            model="openai:gpt-6-luna",
            spawner_instance_id="parent",
            messages=[turn("c", "0.1")],
        ),
        age_seconds=20,
    )
    save(
        cli,
        Instance(
            id="grandchild",
            name="writer helper",
            state="error",
            model="openai:gpt-6-luna",
            spawner_instance_id="child",
            messages=[turn("g", "0.05"), turn("u", None)],
        ),
        age_seconds=10,
    )
    save(
        cli, Instance(id="other", name="Other", state="stopped", model="gemini:gemini-3-pro", messages=[turn("o", "1")])
    )


def test_list_is_tab_separated_newest_first_and_filtered(cli: Cli) -> None:
    assert cli("instances", "list").out == ""  # nothing saved yet: nothing listed, nothing created
    assert not (cli.cwd / ".onellm").exists()
    family(cli)
    done = cli("instances", "list")
    assert done.code == 0
    rows = [line.split("\t") for line in done.out.splitlines()]
    assert [r[0] for r in rows] == ["other", "grandchild", "child", "parent"]
    assert [len(r) for r in rows] == [5, 5, 5, 5]
    assert rows[3][1:] == ["waiting", rows[3][2], "Planner", "anthropic:claude-sonnet-5-5"]
    assert datetime.strptime(rows[3][2], "%Y-%m-%dT%H:%M:%SZ")
    assert cli("instances", "list", "--state-filter", "stopped").out.count("\n") == 2
    named = cli("instances", "list", "--name", "WRITER").out.splitlines()
    assert [r.split("\t")[0] for r in named] == ["grandchild", "child"]
    assert cli("instances", "list", "--limit", "1").out.split("\t")[0] == "other"


def test_show_prints_the_header_cost_and_messages(cli: Cli) -> None:
    family(cli)
    done = cli("instances", "show", "parent")
    assert done.code == 0, done
    lines = done.out.splitlines()
    assert lines[:6] == [
        "instance parent",
        "name: Planner",
        "state: waiting",
        "model: anthropic:claude-sonnet-5-5",
        "cost: $0.255011 (with 2 sub-agents: $0.405011)",
        "turns: 2",
    ]
    assert "  user: ask one" in lines
    assert "  assistant: answer two" in lines
    assert '  tool search_web {"q":"x"}' in lines
    assert "  usage: 10 in / 5 out, $0.000011" in lines


def test_show_clips_and_escapes_what_a_model_wrote(cli: Cli) -> None:
    hostile = Message(
        id="m1",
        user=[TextPart("x" * 2000)],
        assistant=[TextPart("\x1b[2J\x1b]0;owned\x07 done \u202e")],
        source=MessageSource(kind="api"),
    )
    save(cli, Instance(id="odd", state="stopped", messages=[hostile]))
    out = cli("instances", "show", "odd").out
    assert "\x1b" not in out
    assert "\u202e" not in out
    assert "  assistant: \\u001b[2J\\u001b]0;owned\\u0007 done \\u202e" in out.splitlines()
    user_line = next(line for line in out.splitlines() if line.startswith("  user: "))
    assert len(user_line) == len("  user: ") + 500
    assert user_line.endswith("…")


def test_unknown_or_invalid_instance_ids_are_exit_1(cli: Cli) -> None:
    family(cli)
    for argv in (
        ("instances", "show", "nope"),
        ("instances", "show", "../etc/passwd"),
        ("instances", "fork", "nope"),
        ("instances", "resume", "nope", "--prompt", "hi"),
        ("cost", "nope"),
    ):
        done = cli(*argv)
        no_traceback(done)
        assert done.code == 1, (argv, done)
        assert len(done.err_lines) == 1
        assert done.err_lines[0].startswith("onellm: error: no instance "), done


def test_fork_copies_up_to_a_message_and_prints_the_new_id(cli: Cli) -> None:
    family(cli)
    done = cli("instances", "fork", "parent", "--at", "m-one")
    assert done.code == 0, done
    new_id = done.out.strip()
    assert new_id not in ("", "parent")
    copy = Instance.load(cli.instances / f"{new_id}.yaml")
    assert [m.id for m in copy.messages] == ["m-one"]
    assert copy.forked_from is not None
    assert (copy.forked_from.instance_id, copy.forked_from.message_id) == ("parent", "m-one")
    assert copy.state == "stopped"
    whole = cli("instances", "fork", "parent").out.strip()
    assert [m.id for m in Instance.load(cli.instances / f"{whole}.yaml").messages] == ["m-one", "m-two"]
    missing = cli("instances", "fork", "parent", "--at", "m-none")
    assert (missing.code, missing.err_lines) == (1, ["onellm: error: instance parent has no message 'm-none'"])


def test_a_flow_run_can_be_listed_shown_forked_and_costed(cli: Cli) -> None:
    flow(cli)
    cli.script(anthropic=[{"text": "Hello.", "usage": [100, 20]}])
    run = cli("run", "hello.flow", "--input", "name=Ada")
    instance_id = run.last.split()[1].rstrip(":")
    assert cli("instances", "list").out.startswith(f"{instance_id}\tstopped\t")
    assert "cost: $0.000400" in cli("instances", "show", instance_id).out
    forked = cli("instances", "fork", instance_id).out.strip()
    assert cli("cost", forked).out.splitlines()[1] == "  anthropic:claude-sonnet-5-5  $0.000400"


def test_cost_of_one_instance_and_its_sub_agents(cli: Cli) -> None:
    family(cli)
    done = cli("cost", "parent")
    assert done.code == 0, done
    assert done.out.splitlines() == [
        "instance parent (Planner)",
        "  anthropic:claude-sonnet-5-5  $0.250011",
        "  tool search_web              $0.005000",
        "  total                        $0.255011",
        "with its sub-agents (2 instances)",
        "  anthropic:claude-sonnet-5-5  $0.250011",
        "  openai:gpt-6-luna            $0.150000",
        "  tool search_web              $0.005000",
        "  total                        $0.405011",
        "  (1 call had no price in the catalog)",
    ]


def test_cost_of_everything_and_since(cli: Cli) -> None:
    family(cli)
    everything = cli("cost").out.splitlines()
    assert everything[0] == f"4 instances in {cli.instances.resolve()}"
    assert everything[-2:] == ["  total                        $1.405011", "  (1 call had no price in the catalog)"]
    recent = cli("cost", "--since", "7d").out.splitlines()
    assert recent[0].startswith(f"4 instances in {cli.instances.resolve()} since ")
    assert "  total                        $1.405000" in recent
    assert cli("cost", "parent", "--since", "2w").out.splitlines()[3] == "  total                        $0.255011"
    future = (datetime.now(UTC) + timedelta(days=2)).date().isoformat()
    assert "  total  $0.000000" in cli("cost", "--since", future).out.splitlines()
    assert cli("cost", "--since", "2020-01-01T00:00:00Z").out.splitlines()[-2].endswith("$1.405011")
    empty = Cli(cli.cwd / "fresh")
    empty.cwd.mkdir()
    assert empty("cost").out.splitlines() == [
        f"0 instances in {(empty.cwd / '.onellm' / 'instances').resolve()}",
        "  total  $0.000000",
    ]
