"""The typer application behind the `onellm` command."""

from __future__ import annotations

from importlib import metadata

import typer

app = typer.Typer(
    name="onellm",
    help="Run agents and scripts, chat, inspect instances and their cost, and browse the model catalog.",
    no_args_is_help=True,
    add_completion=False,
)

_DISTRIBUTIONS = ("onellm-core", "onellm-cli", "onellm-web", "onellm-js", "onellm-sqlalchemy", "onellm-sqlite")


def installed_versions() -> dict[str, str]:
    """The onellm distributions installed in this environment, with their versions."""
    found: dict[str, str] = {}
    for name in _DISTRIBUTIONS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


@app.command()
def version() -> None:
    """Print the version of every installed onellm package."""
    for name, ver in installed_versions().items():
        typer.echo(f"{name} {ver}")


@app.callback()
def _root() -> None:
    """onellm: LLM inference and agent runtime."""


def main() -> None:
    app()
