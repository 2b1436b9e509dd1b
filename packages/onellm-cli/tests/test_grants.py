"""Grants come only from the flags: a reference the flags do not cover stops the run with exit code 3, before any
model call, naming the tool and the flag. `--tools` loads JavaScript tool files; the js extra is named when missing."""

from __future__ import annotations

from onellm_cli._agents import agents_available

from ._cli import Cli, no_traceback, write

LOOP_MISSING = "onellm: error: running an agent needs the agent loop (onellm.start_agent)"

WITH_SHELL = """\
name: builder
model: claude-sonnet
references:
  - tools: [read_file, write_file]
  - tools: [execute_terminal_command]
"""

WITH_HTTP = """\
name: fetcher
model: claude-sonnet
references:
  - tools: [read_file]
  - routine: /agent-tools/web/http-request
"""

BLOCK_JS = "import sys; sys.modules['onellm_js'] = None; from onellm_cli import main; main()"


def got_past_the_grants(done: object) -> None:
    """Past the grant check, a run either starts (with the agent loop) or stops because the loop is missing."""
    err = getattr(done, "err", "")
    assert "is not granted" not in err, err
    if not agents_available():
        assert getattr(done, "code", None) == 3
        assert err.splitlines()[-1].startswith(LOOP_MISSING), err


def test_a_shell_tool_without_allow_shell_stops_before_any_call(cli: Cli) -> None:
    write(cli.cwd / "agent.yaml", WITH_SHELL)
    cli.script(anthropic=[{"text": "never sent"}])
    done = cli("run", "agent.yaml", "--prompt", "build it")
    no_traceback(done)
    assert done.code == 3, done
    assert done.err_lines == [
        "onellm: error: agent.yaml:5:13: tool 'execute_terminal_command' is not granted: it needs --allow-shell "
        "(or --allow-shell=PROGRAMS, or --allow-shell=ask) (given: no grant flags); a definition never grants anything"
    ]
    assert cli.saved() == []
    net_only = cli("run", "agent.yaml", "--prompt", "x", "--allow-net")
    assert net_only.err_lines[0].endswith("(given: --allow-net); a definition never grants anything")


def test_each_shell_flag_grants_the_shell(cli: Cli) -> None:
    write(cli.cwd / "agent.yaml", WITH_SHELL)
    for flags in (["--allow-shell"], ["--allow-shell=git,python"], ["--allow-shell=ask"], ["--allow-shell=git status"]):
        got_past_the_grants(cli("run", "agent.yaml", "--prompt", "x", *flags))
    # a bare flag never takes the next word as its value: here the target follows it
    got_past_the_grants(cli("run", "--allow-shell", "agent.yaml", "--prompt", "x"))


def test_a_network_tool_without_allow_net_names_the_flag(cli: Cli) -> None:
    write(cli.cwd / "fetch.yaml", WITH_HTTP)
    done = cli("run", "fetch.yaml", "--allow-shell")
    assert done.code == 3, done
    assert done.err_lines == [
        "onellm: error: fetch.yaml:5:5: tool 'http_request' is not granted: it needs --allow-net (or "
        "--allow-net=HOSTS) (given: --allow-shell); a definition never grants anything"
    ]
    got_past_the_grants(cli("run", "fetch.yaml", "--allow-net"))
    got_past_the_grants(cli("run", "fetch.yaml", "--allow-net=api.example.com,*.docs.example.com"))


def test_a_tool_of_an_installed_package_needs_its_grant_too(cli: Cli) -> None:
    write(cli.cwd / "web.yaml", "model: claude-sonnet\nreferences:\n  - tools: [fetch_webpage_markdown]\n")
    done = cli("run", "web.yaml")
    assert done.code == 3
    assert "tool 'fetch_webpage_markdown' is not granted: it needs --allow-net" in done.err_lines[0]
    got_past_the_grants(cli("run", "web.yaml", "--allow-net=docs.example.com"))


def test_an_optional_reference_that_is_not_granted_is_left_out(cli: Cli) -> None:
    write(
        cli.cwd / "agent.yaml",
        "model: claude-sonnet\nreferences:\n  - tools: [read_file]\n  - tools: [execute_terminal_command]\n"
        "    required: false\n",
    )
    got_past_the_grants(cli("run", "agent.yaml", "--prompt", "x"))


def test_an_unknown_tool_or_a_bad_definition_is_exit_3_with_its_position(cli: Cli) -> None:
    write(cli.cwd / "agent.yaml", "model: claude-sonnet\nreferences:\n  - tools: [read_file, telepathy]\n")
    done = cli("run", "agent.yaml", "--prompt", "x")
    assert done.code == 3
    assert done.err_lines == [
        "onellm: error: agent.yaml:3:24: no tool named 'telepathy' is registered; register it with the runtime's "
        "tools (tools.add) (at references[0].tools[1])"
    ]
    write(cli.cwd / "bad" / "agent.yaml", "model: claude-sonnet\nmaxIterations: many\n")
    bad = cli("run", "bad", "--prompt", "x")
    assert bad.code == 3
    assert bad.err_lines[0].startswith("onellm: error: ")
    assert "agent.yaml:2:16:" in bad.err_lines[0]
    write(cli.cwd / "broken.yaml", "model: [unclosed\n")
    broken = cli("run", "broken.yaml")
    assert broken.code == 3
    assert "broken.yaml:" in broken.err_lines[0]
    write(cli.cwd / "nomodel.yaml", "references:\n  - tools: [read_file]\n")
    assert cli("run", "nomodel.yaml").err_lines == [
        "onellm: error: nomodel.yaml: the definition names no model; pass --model"
    ]
    for argv in (("run", "agent.yaml", "--model", "zzmodel"),):
        write(cli.cwd / "agent.yaml", "model: claude-sonnet\nreferences:\n  - tools: [read_file]\n")
        unknown = cli(*argv, "--prompt", "x")
        assert (unknown.code, unknown.err_lines) == (3, ["onellm: error: no model named 'zzmodel' in the catalog"])


def test_folders_decide_the_mode(cli: Cli) -> None:
    write(cli.cwd / "both" / "agent.yaml", "model: claude-sonnet\n")
    write(cli.cwd / "both" / "decider.yaml", "model: claude-sonnet\n")
    (cli.cwd / "empty").mkdir()
    for target, message in (
        ("both", "onellm: error: both: holds both agent.yaml and decider.yaml; name the file to run"),
        ("empty", "onellm: error: empty: holds neither agent.yaml nor decider.yaml"),
        ("examples/nope", "onellm: error: no example agent named 'nope'; the examples are: py-tool-writer,"),
    ):
        done = cli("run", target)
        assert done.code == 3, done
        assert done.err_lines[0].startswith(message), done
    assert cli("run", "both/decider.yaml", "--prompt", "x").err_lines == [
        "onellm: error: --prompt is for agents; both/decider.yaml is a decider"
    ]
    assert cli("run", "both/decider.yaml", "--model", "x").err_lines == [
        "onellm: error: --model is for agents and flows; a decider's models are in its decider.yaml"
    ]


SHOUT_JS = """\
export function invoke({ text }) { return text.toUpperCase(); }
"""
SHOUT_YAML = """\
name: shout
description: Upper-cases a text.
inputSchema:
  type: object
  properties: {text: {type: string}}
  required: [text]
"""


def test_tools_loads_javascript_tool_files_that_definitions_name(cli: Cli) -> None:
    write(cli.cwd / "tools" / "shout.js", SHOUT_JS)
    write(cli.cwd / "tools" / "shout.tool.yaml", SHOUT_YAML)
    write(cli.cwd / "agent.yaml", "model: claude-sonnet\nreferences:\n  - tools: [shout]\n")
    without = cli("run", "agent.yaml", "--prompt", "x")
    assert without.code == 3
    assert "no tool named 'shout' is registered" in without.err_lines[0]
    got_past_the_grants(cli("run", "agent.yaml", "--prompt", "x", "--tools", "tools"))
    got_past_the_grants(cli("run", "agent.yaml", "--prompt", "x", "--tools", "tools/shout.js"))
    missing = cli("run", "agent.yaml", "--prompt", "x", "--tools", "nowhere")
    assert (missing.code, missing.err_lines) == (3, ["onellm: error: --tools nowhere: no such file or directory"])
    write(cli.cwd / "broken" / "bad.js", "export function invoke( {\n")
    broken = cli("run", "agent.yaml", "--prompt", "x", "--tools", "broken")
    assert broken.code == 3
    assert broken.err_lines[0].startswith("onellm: error: bad.js:")
    assert cli("run", "hello.flow", "--tools", "tools").code == 3  # the flow does not exist: the file comes first


def test_without_the_js_extra_javascript_features_name_it(cli: Cli) -> None:
    write(cli.cwd / "tools" / "shout.js", SHOUT_JS)
    write(cli.cwd / "agent.yaml", "model: claude-sonnet\nreferences:\n  - tools: [read_file]\n")
    done = cli.python(BLOCK_JS, "run", "agent.yaml", "--prompt", "x", "--tools", "tools")
    assert (done.code, done.err_lines) == (
        3,
        ["onellm: error: --tools needs the JavaScript extra: pip install 'onellm-cli[js]' (adds onellm-js)"],
    )
    write(cli.cwd / "js.yaml", "model: claude-sonnet\nreferences:\n  - tools: [run_javascript]\n")
    js = cli.python(BLOCK_JS, "run", "js.yaml", "--prompt", "x")
    assert js.code == 3
    assert "tool 'run_javascript' comes with the onellm-js package" in js.err_lines[0]
    assert js.err_lines[0].startswith("onellm: error: js.yaml:3:13: ")
    write(cli.cwd / "triage" / "decider.yaml", "model: claude-haiku\nquestions:\n  a: {type: noul, instructions: x}\n")
    write(cli.cwd / "triage" / "decider.js", "export function decide({ answers }) { return answers; }\n")
    decider = cli.python(BLOCK_JS, "run", "triage")
    assert (decider.code, decider.err_lines) == (
        3,
        [
            "onellm: error: decider.js beside triage needs the JavaScript extra: pip install 'onellm-cli[js]' "
            "(adds onellm-js)"
        ],
    )
