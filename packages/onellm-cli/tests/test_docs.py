"""The session in the package README runs as shown (ids, times and paths aside), on the scripted provider."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ._cli import Cli, write

README = Path(__file__).resolve().parents[1] / "README.md"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "cli.md"

_ID = re.compile(r"\b[0-9a-f]{26}\b")
_TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b")


def session() -> tuple[str, list[tuple[str, int, list[str]]]]:
    """The flow file and the console block of the README: each `onellm` command, its exit code, its output."""
    text = README.read_text(encoding="utf-8")
    flow = re.search(r"```yaml\n(.*?)```", text, re.S)
    console = re.search(r"```console\n(.*?)```", text, re.S)
    assert flow is not None
    assert console is not None
    steps: list[tuple[str, int, list[str]]] = []
    for line in console.group(1).splitlines():
        if line.startswith("$ "):
            command, _, comment = line[2:].partition("   # exit code ")
            steps.append((command.strip(), int(comment) if comment else 0, []))
        else:
            steps[-1][2].append(line)
    return flow.group(1), steps


def normal(lines: list[str], state: str) -> list[str]:
    ids: dict[str, str] = {}

    def name(match: re.Match[str]) -> str:
        return ids.setdefault(match.group(0), f"<id{len(ids)}>")

    out = []
    for line in lines:
        line = line.replace(state, "<state>")
        line = _TIME.sub("<time>", _ID.sub(name, line))
        out.append(line)
    return out


def test_the_readme_session_runs_as_shown(cli: Cli) -> None:
    flow, steps = session()
    write(cli.cwd / "hello.flow", flow)
    cli.script(anthropic=[{"text": "Hello, Ada.", "usage": [12, 3]}])
    shown: list[str] = []
    got: list[str] = []
    real: dict[str, str] = {}
    for command, code, expected in steps:
        words = shlex.split(command)
        if words[0] != "onellm":
            continue
        words = [real.get(w, w) for w in words[1:]]
        done = cli(*words)
        cli.env.pop("ONELLM_CLI_SCRIPT", None)  # one scripted answer, for the first run; the rest call no model
        assert done.code == code, (command, done)
        for documented, actual in zip(_ID.findall(" ".join(expected)), _ID.findall(done.out + done.err), strict=False):
            real.setdefault(documented, actual)
        shown.extend(expected)
        got.extend((done.out + done.err).splitlines())
    documented_state = "/home/ada/project/.onellm/instances"
    assert normal(got, str(cli.instances.resolve())) == normal(shown, documented_state)


def test_the_cli_page_lists_every_command_and_exit_code() -> None:
    page = DOCS.read_text(encoding="utf-8")
    for command in (
        "onellm run",
        "onellm chat",
        "onellm instances list",
        "onellm instances show",
        "onellm instances resume",
        "onellm instances fork",
        "onellm cost",
        "onellm catalog",
        "onellm examples",
    ):
        assert f"`{command}" in page, command
    codes = re.findall(r"^\| (\d+) \|", page, re.M)
    assert codes == ["0", "1", "2", "3", "4", "130"]
