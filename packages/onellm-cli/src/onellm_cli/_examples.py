"""The example agents shipped inside the package: `onellm_cli/examples/<name>/agent.yaml`.

Run one with `onellm run examples/<name> --prompt "..."`; copy one with `onellm examples show <name> > agent.yaml`.
"""

from __future__ import annotations

import re
from pathlib import Path

from onellm_cli._errors import EXIT_SETUP, CliError

__all__ = ["EXAMPLES", "GRANTS", "describe", "names", "path_of"]

EXAMPLES = Path(__file__).resolve().parent / "examples"

GRANTS: dict[str, str] = {
    "py-tool-writer": "--allow-shell=python,git",
    "js-tool-writer": "none",
    "provider-writer": "--allow-shell=python,git; --allow-net=<docs host> to read vendor documentation",
    "agent-writer": "none",
    "script-writer": "none",
    "decider-writer": "none (the decider's model needs its key in the environment)",
    "hook-writer": "--allow-shell=python,git",
    "orchestrator": "whatever its sub-agents need; they hold at most what it holds",
}
"""The grant flags each example is documented with."""

_DESCRIPTION = re.compile(r"^description:[ \t]*(.*?)[ \t]*$", re.MULTILINE)


def names() -> list[str]:
    """The examples' names, in the order the documentation lists them."""
    found = {p.parent.name for p in EXAMPLES.glob("*/agent.yaml")}
    ordered = [n for n in GRANTS if n in found]
    return ordered + sorted(found - set(ordered))


def path_of(name: str) -> Path:
    """The `agent.yaml` of the example `name`.

    Raises:
        CliError: there is no such example (exit code 3), with the names there are.
    """
    if name in names():
        return EXAMPLES / name / "agent.yaml"
    raise CliError(f"no example agent named {name!r}; the examples are: {', '.join(names())}", EXIT_SETUP)


def describe(name: str) -> str:
    """The example's one-line `description` (read without parsing the whole file)."""
    text = path_of(name).read_text(encoding="utf-8")
    match = _DESCRIPTION.search(text)
    return match.group(1).strip("'\"") if match else ""
