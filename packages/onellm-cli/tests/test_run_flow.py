"""`onellm run <x.flow>`: results on stdout, the run on stderr, state under the root, inputs, caps and exit codes."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from onellm.instances import Instance

from ._cli import Cli, flow, no_traceback, write

HELLO = [{"text": "Hello, Ada.", "usage": [12, 3]}]


def only_instance(cli: Cli, state: Path | None = None) -> Instance:
    folder = (state or cli.cwd / ".onellm") / "instances"
    files = sorted(folder.glob("*.yaml"))
    assert len(files) == 1, files
    return Instance.load(files[0])


def test_a_flow_prints_its_answer_and_the_run_on_stderr(cli: Cli) -> None:
    flow(cli)
    cli.script(anthropic=HELLO)
    done = cli("run", "hello.flow", "--input", "name=Ada")
    assert done.code == 0, done
    assert done.out == "Hello, Ada.\n"
    saved = only_instance(cli)
    # claude-sonnet: 12 input tokens at $2 and 3 output tokens at $10 per million = $0.000054
    assert done.err_lines == [
        f"instance {saved.id} started on anthropic:claude-sonnet-5-5",
        "turn 1, 12 in / 3 out, $0.000054",
        f"instance {saved.id}: stopped, 1 turn, $0.000054",
    ]
    assert saved.state == "stopped"
    assert saved.messages[0].user_text == "Say hello to Ada."
    assert saved.agent_definition == "hello.flow"
    records = (cli.cwd / ".onellm" / "records" / f"{saved.id}.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["kind"] for line in records] == ["run", "message", "inference", "run"]


def test_the_last_line_rounds_halves_away_from_zero(cli: Cli) -> None:
    flow(cli, "model: claude-haiku-5-5\ninitialPrompts:\n  - user:\n      - text: hi\n")
    # claude-haiku-5-5 input is $0.10 per million: 5 tokens cost $0.0000005, shown as $0.000001; 15 give $0.000002
    cli.script(anthropic=[{"text": "a", "usage": [5, 0]}])
    assert cli("run", "hello.flow").last.endswith(", 1 turn, $0.000001")
    cli.script(anthropic=[{"text": "a", "usage": [15, 0]}])
    assert cli("run", "hello.flow").last.endswith(", 1 turn, $0.000002")
    cli.script(anthropic=[{"text": "a", "usage": [4, 0]}])
    assert cli("run", "hello.flow").last.endswith(", 1 turn, $0.000000")


def test_inputs_from_files_and_json_keep_their_types(cli: Cli) -> None:
    flow(
        cli,
        "model: claude-sonnet\ninputs: {greeting: Hi}\ninitialPrompts:\n  - user:\n"
        '      - text: \'{{ .inputs.greeting }} {{ .inputs.name }}, {{ .inputs.count }} {{ printf "%T" .inputs.count }}'
        " {{ .inputs.flags.fast }} [{{ .inputs.note }}]'\n",
    )
    write(cli.cwd / "note.txt", "from a file\n")
    write(cli.cwd / "more.json", '{"name": "Bo"}')
    cli.script(anthropic=[{"text": "ok"}])
    done = cli(
        "run",
        "hello.flow",
        "--input-json",
        '{"name": "Ada", "count": 2.50, "flags": {"fast": true}}',
        "--input-json",
        "@more.json",
        "--input",
        "note=@note.txt",
    )
    assert done.code == 0, done
    saved = only_instance(cli)
    assert saved.messages[0].user_text == "Hi Bo, 2.5 float64 true [from a file\n]"
    assert saved.inputs == {
        "greeting": "Hi",
        "name": "Bo",
        "count": pytest.approx(2.5),
        "flags": {"fast": True},
        "note": "from a file\n",
    }


def test_an_input_file_that_cannot_be_read_is_exit_3(cli: Cli) -> None:
    flow(cli)
    for argv, message in (
        (("--input", "name=@missing.txt"), "onellm: error: --input name: cannot read missing.txt: "),
        (("--input-json", "@missing.json"), "onellm: error: --input-json: cannot read missing.json: "),
        (("--input-json", "@"), "onellm: error: --input-json: '@' must be followed by a file name (or '-'"),
    ):
        done = cli("run", "hello.flow", *argv)
        assert done.code in (2, 3), done
        assert done.err_lines[0].startswith(message), done
    assert cli("run", "hello.flow", "--input", "name=@missing.txt").code == 3
    write(cli.cwd / "bin.txt", "").write_bytes(b"\xff\xfe\x00")
    bad = cli("run", "hello.flow", "--input", "name=@bin.txt")
    assert (bad.code, bad.err_lines) == (3, ["onellm: error: --input name: bin.txt is not UTF-8 text (byte 0)"])


def test_an_input_can_come_from_standard_input(cli: Cli) -> None:
    flow(cli)
    cli.script(anthropic=HELLO)
    done = cli("run", "hello.flow", "--input", "name=@-", input="Grace Hopper")
    assert done.code == 0, done
    assert only_instance(cli).messages[0].user_text == "Say hello to Grace Hopper."


def test_model_replaces_the_definitions_model(cli: Cli) -> None:
    flow(cli)
    cli.script(openai=[{"text": "Hi.", "usage": [10, 10]}])
    done = cli("run", "hello.flow", "--input", "name=Ada", "--model", "gpt-6-luna")
    assert done.code == 0, done
    saved = only_instance(cli)
    assert saved.model == "openai:gpt-6-luna"
    assert done.last == f"instance {saved.id}: stopped, 1 turn, $0.000006"


def test_the_typed_output_is_printed_as_json(cli: Cli) -> None:
    flow(
        cli,
        "model: claude-sonnet\noutputSchema:\n  type: object\n  properties: {primes: {type: array}}\n"
        "initialPrompts:\n  - user:\n      - text: Name primes as JSON.\n",
    )
    cli.script(anthropic=[{"text": '{"primes": [2, 3, 5.0]}'}])
    done = cli("run", "hello.flow")
    assert done.code == 0, done
    assert json.loads(done.out) == {"primes": [2, 3, 5.0]}
    assert done.out == '{\n  "primes": [\n    2,\n    3,\n    5.0\n  ]\n}\n'


def test_quiet_keeps_only_the_last_line(cli: Cli) -> None:
    flow(cli)
    cli.script(anthropic=HELLO)
    done = cli("run", "hello.flow", "--input", "name=Ada", "-q")
    assert done.code == 0
    assert len(done.err_lines) == 1
    assert done.last.endswith(": stopped, 1 turn, $0.000054")


def test_state_goes_under_the_root_or_where_state_says(cli: Cli, tmp_path: Path) -> None:
    root = cli.cwd / "project"
    flow(cli, name="project/hello.flow")
    cli.script(anthropic=HELLO)
    assert cli("run", "project/hello.flow", "--root", "project", "--input", "name=Ada").code == 0
    assert only_instance(cli, root / ".onellm").state == "stopped"
    assert not (cli.cwd / ".onellm").exists()
    elsewhere = tmp_path / "kept"
    cli.script(anthropic=HELLO)
    assert cli("run", "project/hello.flow", "--state", str(elsewhere), "--input", "name=Ada").code == 0
    assert only_instance(cli, elsewhere).state == "stopped"
    assert sorted(p.name for p in (elsewhere / "records").iterdir())[0].endswith(".jsonl")
    assert not (cli.cwd / ".onellm").exists()
    listed = cli("instances", "list", "--state", str(elsewhere))
    assert len(listed.out.splitlines()) == 1
    assert cli("instances", "list", "--root", "project").out.count("\n") == 1


def test_a_root_or_state_that_cannot_hold_state_is_exit_3(cli: Cli) -> None:
    flow(cli)
    write(cli.cwd / "afile", "x")
    cases = {
        ("--root", "nowhere"): "onellm: error: --root nowhere: no such directory",
        ("--root", "afile"): "onellm: error: --root afile: not a directory",
        ("--state", "afile"): "onellm: error: --state ",
    }
    for argv, message in cases.items():
        done = cli("run", "hello.flow", *argv)
        assert done.code == 3, done
        assert done.err_lines[0].startswith(message), done


def test_setup_problems_are_exit_3_before_any_call(cli: Cli) -> None:
    flow(cli)
    flow(cli, "model: claude-sonnet\ninitialPrompts:\n  - user: [text: hi]\n  - bogus\n", name="bad.flow")
    flow(cli, "initialPrompts:\n  - user:\n      - text: hi\n", name="nomodel.flow")
    write(cli.cwd / "notes.txt", "hello")
    cases = [
        (("run", "missing.flow"), "onellm: error: missing.flow: no such file or directory"),
        (("run", "bad.flow"), "onellm: error: bad.flow:4:5: "),
        (("run", "nomodel.flow"), "onellm: error: nomodel.flow: the flow names no model; pass --model"),
        (("run", "notes.txt"), "onellm: error: notes.txt: cannot tell how to run it"),
        (("run", "hello.flow", "--model", "no-such-model"), "onellm: error: no model named 'no-such-model'"),
        (
            ("run", "hello.flow", "--input", "name=x"),
            "onellm: error: anthropic: No API key. Set the environment variable ANTHROPIC_API_KEY.",
        ),
        (("run", "hello.flow", "--prompt", "hi"), "onellm: error: --prompt is for agents; hello.flow is a flow"),
    ]
    for argv, message in cases:
        done = cli(*argv)
        no_traceback(done)
        assert done.code == (2 if "--prompt" in argv else 3), (argv, done)
        assert len(done.err_lines) == 1, done
        assert done.err_lines[0].startswith(message), (argv, done)
    assert cli.saved() == []


def test_a_provider_failure_is_exit_1_and_the_instance_is_kept_in_error(cli: Cli) -> None:
    flow(cli)
    cli.script(anthropic=[{"error": {"type": "OverloadedError", "message": "try later", "status": 529}}])
    done = cli("run", "hello.flow", "--input", "name=Ada")
    assert done.code == 1, done
    saved = only_instance(cli)
    assert saved.state == "error"
    assert done.err_lines[-2:] == [
        "onellm: error: try later (scripted, 529)",
        f"instance {saved.id}: error, 0 turns, $0.000000",
    ]
    assert done.out == ""


def test_a_spend_cap_stops_the_run_with_exit_1(cli: Cli) -> None:
    flow(cli)
    cli.script(anthropic=HELLO)
    done = cli("run", "hello.flow", "--input", "name=Ada", "--max-cost", "0.000001")
    assert done.code == 1, done
    saved = only_instance(cli)
    assert done.err_lines[-3:] == [
        "scripted: 1 step(s) left unused for anthropic",
        "onellm: error: the call could cost up to 1.280024 USD; spend cap has 0.000001 USD left of 0.000001 "
        "(0 spent, 0 held for calls in flight)",
        f"instance {saved.id}: error, 0 turns, $0.000000",
    ]
    generous = cli("run", "hello.flow", "--input", "name=Ada", "--max-cost", "$5")
    assert generous.code == 0, generous


def test_unused_scripted_steps_are_reported(cli: Cli) -> None:
    flow(cli)
    cli.script(anthropic=[*HELLO, {"text": "extra"}])
    done = cli("run", "hello.flow", "--input", "name=Ada")
    assert done.code == 0
    assert done.err_lines[-2] == "scripted: 1 step(s) left unused for anthropic"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is a POSIX test")
def test_ctrl_c_keeps_the_partial_run_as_a_stopped_instance(cli: Cli) -> None:
    flow(cli)
    cli.script(anthropic=[{"text": "Hello, A", "pause": True}])
    process = cli.start("run", "hello.flow", "--input", "name=Ada")
    assert process.stderr is not None
    started = process.stderr.readline()
    assert started.startswith("instance "), started
    time.sleep(0.3)  # the scripted answer is now waiting part-way
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    saved = only_instance(cli)
    assert saved.state == "stopped"
    assert saved.cancelled is True
    assert saved.messages[-1].text == "Hello, A"
    assert err.splitlines()[-1] == f"instance {saved.id}: stopped (cancelled), 1 turn, $0.000000"
    assert out == ""


@pytest.mark.skipif(os.name != "posix", reason="needs a pseudo-terminal")
def test_a_terminal_gets_a_progress_line_and_pipes_get_plain_lines(cli: Cli) -> None:
    import pty
    import subprocess

    from ._cli import _command

    flow(cli)
    cli.script(anthropic=HELLO)
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*_command(), "run", "hello.flow", "--input", "name=Ada"],
            cwd=cli.cwd,
            env=cli.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=60,
        )
        os.close(follower)
        follower = -1
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert done.returncode == 0
    assert done.stdout == b"Hello, Ada.\n"
    text = seen.decode("utf-8")
    assert "\r" in text
    assert "\x1b[K" in text
    assert "turn 1, 12 in / 3 out, $0.000054 (total $0.000054)" in text
    assert text.rstrip().splitlines()[-1].split("\r")[-1].startswith("\x1b[Kinstance ")
    assert text.rstrip().endswith(": stopped, 1 turn, $0.000054")


@pytest.mark.skipif(os.name != "posix", reason="closed pipes and pseudo-terminals are POSIX tests")
def test_a_reader_that_goes_away_does_not_fail_the_run(cli: Cli) -> None:
    import subprocess

    from ._cli import _command

    flow(cli)
    cli.script(anthropic=HELLO)
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `onellm run ... | head -c 0`
    try:
        done = subprocess.run(
            [*_command(), "run", "hello.flow", "--input", "name=Ada"],
            cwd=cli.cwd,
            env=cli.env,
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].endswith(": stopped, 1 turn, $0.000054")
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(os.name != "posix", reason="needs a pseudo-terminal")
def test_an_answer_shown_on_a_terminal_cannot_drive_it(cli: Cli) -> None:
    import pty
    import subprocess

    from ._cli import _command

    flow(cli)
    cli.script(anthropic=[{"text": "\x1b[2Jcleared\x1b]0;title\x07 \u202eevil"}])
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            [*_command(), "run", "hello.flow", "--input", "name=Ada"],
            cwd=cli.cwd,
            env=cli.env,
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.DEVNULL,
            timeout=60,
        )
        seen = os.read(leader, 65536).decode("utf-8")
    finally:
        os.close(follower)
        os.close(leader)
    assert "\x1b" not in seen
    assert "\\u001b[2Jcleared\\u001b]0;title\\u0007 \\u202eevil" in seen
    cli.script(anthropic=[{"text": "\x1b[2Jraw"}])
    piped = cli("run", "hello.flow", "--input", "name=Ada")  # a pipe gets the answer as it is
    assert piped.out == "\x1b[2Jraw\n"
