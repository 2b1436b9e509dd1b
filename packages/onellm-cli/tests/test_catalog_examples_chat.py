"""`onellm catalog [model]`, `onellm examples [show <name>]` and `onellm chat <model>`."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from onellm.catalog import Catalog
from onellm.instances import Instance
from onellm_cli._examples import EXAMPLES, GRANTS

from ._cli import Cli, no_traceback, write


def test_catalog_lists_every_model_with_its_context_window(cli: Cli) -> None:
    done = cli("catalog")
    assert done.code == 0
    expected = []
    for provider, preset, entry in Catalog.shipped().models():
        window = entry.context_window
        expected.append(f"{preset.name if preset else provider.name}:{entry.name}\t{window if window else '-'}")
    assert done.out.splitlines() == expected
    assert "anthropic:claude-sonnet-5-5\t1000000" in done.out.splitlines()


def test_catalog_shows_each_value_with_the_layer_that_set_it(cli: Cli) -> None:
    write(
        cli.cwd / "mine" / "llm-provider.yaml",
        "name: anthropic\nmodels:\n  - name: claude-sonnet-5-5\n    maxOutputTokens: 64000\n"
        "    pricing: {inputPerMillion: 2.5}\n",
    )
    done = cli("catalog", "claude-sonnet", env={"ONELLM_CATALOG": str(cli.cwd / "mine")})
    assert done.code == 0, done
    lines = done.out.splitlines()
    assert lines[0] == "anthropic:claude-sonnet-5-5 (asked as claude-sonnet)"
    assert "contextWindow: 1000000 [shipped]" in lines
    assert "maxOutputTokens: 64000 [user]" in lines
    assert "pricing.inputPerMillion: 2.5 [user]" in lines
    assert "pricing.outputPerMillion: 10 [shipped]" in lines
    assert 'thinking.efforts: ["low","medium","high","xhigh","max"] [shipped]' in lines
    plain = cli("catalog", "anthropic:claude-sonnet-5-5")
    assert plain.out.splitlines()[0] == "anthropic:claude-sonnet-5-5"
    assert "maxOutputTokens: 128000 [shipped]" in plain.out.splitlines()


def test_catalog_of_an_unknown_model_is_exit_3(cli: Cli) -> None:
    done = cli("catalog", "zzmodel")
    no_traceback(done)
    assert done.code == 3
    assert done.err_lines == ["onellm: error: no model named 'zzmodel' in the catalog"]
    pattern = cli("catalog", "gpt-6-lunar")  # not listed, but the openai provider's patterns take it
    assert pattern.code == 0
    assert pattern.out.splitlines() == [
        "openai:gpt-6-lunar (asked as gpt-6-lunar)",
        "name: gpt-6-lunar [not listed: matched by a model pattern of openai; limits and prices unknown]",
    ]
    broken = write(cli.cwd / "bad.yaml", "name: x\nmodels: 3\n")
    bad = cli("catalog", env={"ONELLM_CATALOG": str(broken)})
    assert bad.code == 3
    assert bad.err_lines[0].startswith("onellm: error: ")
    assert "bad.yaml" in bad.err_lines[0]


def test_examples_lists_the_eight_agents_and_shows_one(cli: Cli) -> None:
    done = cli("examples")
    assert done.code == 0
    names = [line.split()[0] for line in done.out.splitlines()]
    assert names == list(GRANTS)
    assert len(names) == 8
    assert done.out.splitlines()[0].endswith("(grants: --allow-shell=python,git)")
    assert done.err_lines == ['run one with: onellm run examples/<name> --prompt "<task>" [grant flags]']
    shown = cli("examples", "show", "script-writer")
    assert shown.code == 0
    assert shown.out == (EXAMPLES / "script-writer" / "agent.yaml").read_text(encoding="utf-8")
    missing = cli("examples", "show", "cs-tool-writer")
    assert missing.code == 3
    assert missing.err_lines == [
        "onellm: error: no example agent named 'cs-tool-writer'; the examples are: " + ", ".join(GRANTS)
    ]


def test_a_shown_example_can_be_copied_and_run_from_its_file(cli: Cli) -> None:
    text = cli("examples", "show", "agent-writer").out
    write(cli.cwd / "agents" / "writer" / "agent.yaml", text)
    done = cli("run", "agents/writer", "--prompt", "hi")
    # the file loads and its references resolve; what stops it (if anything) is the agent loop, not the file
    assert done.code in (0, 3), done
    assert "agent.yaml:" not in done.err


def test_chat_streams_each_answer_and_keeps_the_conversation(cli: Cli) -> None:
    cli.script(
        anthropic=[{"text": ["Two, ", "three."], "usage": [10, 4]}, {"text": "Five.", "usage": [20, 2]}],
    )
    done = cli("chat", "claude-sonnet", "--system", "Be brief.", input="Name a prime.\n\n  \nAnd the next?\n")
    assert done.code == 0, done
    assert done.out == "Two, three.\nFive.\n"
    files = cli.saved()
    assert len(files) == 1
    saved = Instance.load(files[0])
    assert saved.state == "waiting"
    assert saved.system_prompt == "Be brief."
    assert [m.user_text for m in saved.messages] == ["Name a prime.", "And the next?"]
    # 30 input tokens at $2 and 6 output tokens at $10 per million
    assert done.err_lines == [
        f"instance {saved.id}: waiting, 2 turns, $0.000120; instance kept in {cli.instances.resolve()}"
    ]


def test_chat_stops_at_slash_exit(cli: Cli) -> None:
    cli.script(anthropic=[{"text": "Hi."}, {"text": "never"}])
    done = cli("chat", "claude-sonnet", input="Hello\n/exit\nmore\n")
    assert done.code == 0
    assert done.out == "Hi.\n"
    assert "scripted: 1 step(s) left unused for anthropic" in done.err_lines


def test_chat_with_nothing_said_saves_nothing(cli: Cli) -> None:
    cli.script(anthropic=[])
    done = cli("chat", "claude-sonnet", input="")
    assert done.code == 0
    assert done.err_lines == ["no message was sent; nothing was saved"]
    assert cli.saved() == []


def test_chat_refuses_unknown_models_and_missing_keys_with_exit_3(cli: Cli) -> None:
    unknown = cli("chat", "no-such-model", input="hi\n")
    assert (unknown.code, unknown.err_lines) == (3, ["onellm: error: no model named 'no-such-model' in the catalog"])
    keyless = cli("chat", "gpt-6-luna", input="hi\n")
    assert (keyless.code, keyless.err_lines) == (
        3,
        ["onellm: error: openai: No API key. Set the environment variable OPENAI_API_KEY."],
    )
    assert cli.saved() == []


def test_chat_provider_failure_is_exit_1_and_keeps_what_was_said(cli: Cli) -> None:
    cli.script(
        anthropic=[{"text": "Hi."}, {"error": {"type": "RateLimitError", "message": "slow down", "status": 429}}]
    )
    done = cli("chat", "claude-sonnet", input="one\ntwo\n")
    assert done.code == 1, done
    assert done.out.startswith("Hi.\n")
    saved = Instance.load(cli.saved()[0])
    assert done.err_lines[-2:] == [
        "onellm: error: slow down (scripted, 429)",
        f"instance {saved.id}: error, 1 turn, $0.000000",
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is a POSIX test")
def test_ctrl_c_in_a_chat_keeps_what_arrived(cli: Cli) -> None:
    cli.script(anthropic=[{"text": "Hi."}, {"text": "Once upon", "pause": True}])
    process = cli.start("chat", "claude-sonnet", stdin=subprocess.PIPE)
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write("hello\ntell me a story\n")
    process.stdin.flush()
    assert process.stdout.readline() == "Hi.\n"
    assert process.stdout.read(9) == "Once upon"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    saved = Instance.load(cli.saved()[0])
    assert saved.cancelled is True
    assert saved.messages[-1].text == "Once upon"
    assert err.splitlines()[-1].startswith(f"instance {saved.id}: ")
    assert "(cancelled), 2 turns" in err.splitlines()[-1]
