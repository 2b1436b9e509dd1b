"""The command tree, `--version`, help, shell completion, and a wrong command line (exit code 2, one line)."""

from __future__ import annotations

import re

import onellm
import onellm_cli

from ._cli import Cli, no_traceback

COMMANDS = ["run", "chat", "instances", "cost", "catalog", "examples", "version"]


def test_version_names_the_command_and_core(cli: Cli) -> None:
    for flag in ("--version", "-V"):
        done = cli(flag)
        assert done.code == 0, done
        first = done.out.splitlines()[0]
        assert first.startswith(f"onellm-cli {onellm_cli.__version__} (onellm-core {onellm.__version__}")
        assert done.err == ""


def test_help_lists_every_command(cli: Cli) -> None:
    done = cli("--help")
    assert done.code == 0
    section = done.out.split("Commands:")[1]
    listed = [line.split()[0] for line in section.splitlines() if line.startswith("  ") and line.strip()]
    assert sorted(listed) == sorted(COMMANDS)
    assert "--install-completion" in done.out
    assert "--show-completion" in done.out


def test_no_arguments_prints_the_help(cli: Cli) -> None:
    done = cli()
    assert done.code == 0
    assert done.out.startswith("Usage: onellm [OPTIONS] COMMAND [ARGS]...")
    sub = cli("instances")
    assert sub.code == 0
    for name in ("list", "show", "resume", "fork"):
        assert re.search(rf"^  {name}\s", sub.out, re.M), sub.out


def test_run_help_names_every_option_of_the_page(cli: Cli) -> None:
    done = cli("run", "--help")
    assert done.code == 0
    for option in (
        "--input",
        "--input-json",
        "--prompt",
        "--model",
        "--max-cost",
        "--tools",
        "--yes",
        "--quiet",
        "--allow-shell",
        "--allow-net",
        "--root",
        "--state",
    ):
        assert option in done.out, option
    resume = cli("instances", "resume", "--help")
    for option in ("--prompt", "--tools", "--yes", "--quiet", "--allow-shell", "--allow-net", "--root", "--state"):
        assert option in resume.out, option
    for command in (["chat"], ["instances", "list"], ["instances", "show"], ["instances", "fork"], ["cost"]):
        page = cli(*command, "--help")
        assert "--root" in page.out, command
        assert "--state" in page.out, command
    assert "--state-filter" in cli("instances", "list", "--help").out
    assert "--since" in cli("cost", "--help").out
    assert "--at" in cli("instances", "fork", "--help").out
    assert "--system" in cli("chat", "--help").out


def test_version_command_lists_installed_packages(cli: Cli) -> None:
    done = cli("version")
    assert done.code == 0
    assert f"onellm-core {onellm.__version__}" in done.out.splitlines()
    assert f"onellm-cli {onellm_cli.__version__}" in done.out.splitlines()


def test_wrong_command_lines_are_one_line_and_exit_2(cli: Cli) -> None:
    cases = {
        ("nope",): "onellm: error: No such command 'nope'. (see 'onellm --help')",
        ("run",): "onellm: error: Missing argument 'TARGET'. (see 'onellm run --help')",
        ("run", "x.flow", "--bogus"): "onellm: error: No such option: --bogus (see 'onellm run --help')",
        ("instances", "list", "--limit", "many"): "onellm: error: Invalid value for '--limit'",
        ("instances", "list", "--limit", "-1"): "onellm: error: Invalid value for '--limit'",
        ("run", "x.flow", "--allow-shell="): "onellm: error: --allow-shell=: name at least one entry",
        ("run", "x.flow", "--allow-shell=ask,git"): "onellm: error: --allow-shell=ask confirms every command",
        ("run", "x.flow", "--allow-shell=git,,python"): "onellm: error: --allow-shell=git,,python: an entry",
        ("run", "x.flow", "--allow-shell=git;rm"): "onellm: error: --allow-shell: ",
        ("run", "x.flow", "--allow-net=http://a b"): "onellm: error: --allow-net: ",
        ("run", "x.flow", "--input", "novalue"): "onellm: error: --input 'novalue': expected name=value",
        ("run", "x.flow", "--input", "=v"): "onellm: error: --input '=v': the name before '=' is empty",
        ("run", "x.flow", "--input-json", "{nope"): "onellm: error: --input-json: the value is not JSON",
        ("run", "x.flow", "--input-json", "[1, 2]"): "onellm: error: --input-json: the value is a JSON array, not an",
        ("run", "x.flow", "--max-cost", "lots"): "onellm: error: --max-cost 'lots': expected an amount in US dollars",
        ("run", "x.flow", "--max-cost", "-1"): "onellm: error: --max-cost '-1': expected an amount of zero or more",
        ("run", "x.flow", "--max-cost", "NaN"): "onellm: error: --max-cost 'NaN'",
        ("cost", "--since", "yesterday"): "onellm: error: --since 'yesterday': expected a duration such as 24h",
        ("cost", "--since", "2026-13-45"): "onellm: error: --since '2026-13-45'",
    }
    cases = {k: v for k, v in cases.items() if v is not None}
    for argv, expected in cases.items():
        done = cli(*argv)
        no_traceback(done)
        assert done.code == 2, (argv, done)
        assert len(done.err_lines) == 1, done
        assert done.err_lines[0].startswith(expected), (argv, done)
        assert done.out == ""


def test_shell_completion_completes_commands_and_example_names(cli: Cli) -> None:
    # the script `--show-completion` prints for the shell it detects among its parent processes; asked for bash by
    # name here, so the test does not depend on which shell (if any) started it
    script = cli(env={"_ONELLM_COMPLETE": "source_bash"})
    assert script.code == 0
    assert "_ONELLM_COMPLETE=complete_bash" in script.out
    assert "complete -o default -F _onellm_completion onellm" in script.out
    listed = cli("--help")
    assert "--show-completion" in listed.out
    assert "--install-completion" in listed.out
    words = cli(env={"_ONELLM_COMPLETE": "complete_bash", "COMP_WORDS": "onellm ru", "COMP_CWORD": "1"})
    assert words.code == 0
    assert words.out.split() == ["run"]
    names = cli(env={"_ONELLM_COMPLETE": "complete_bash", "COMP_WORDS": "onellm examples show py", "COMP_CWORD": "3"})
    assert names.out.split() == ["py-tool-writer"]
    instance_words = cli(
        env={"_ONELLM_COMPLETE": "complete_bash", "COMP_WORDS": "onellm instances ", "COMP_CWORD": "2"}
    )
    assert sorted(instance_words.out.split()) == ["fork", "list", "resume", "show"]
