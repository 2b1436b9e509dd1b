"""The `onellm` command tree (typer). Each command's work lives in `_commands` and is imported when it runs, so
`onellm --help` loads typer and this file only."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from onellm_cli._errors import EXIT_USAGE, CliError, classify, one_line

__all__ = ["app", "installed_versions", "main"]

_DISTRIBUTIONS = ("onellm-core", "onellm-cli", "onellm-web", "onellm-js", "onellm-sqlalchemy", "onellm-sqlite")


def installed_versions() -> dict[str, str]:
    """The onellm distributions installed in this environment, with their versions."""
    from importlib import metadata

    found: dict[str, str] = {}
    for name in _DISTRIBUTIONS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _show_version(value: bool) -> None:
    if value:
        versions = installed_versions()
        cli = versions.pop("onellm-cli", "?")
        others = ", ".join(f"{name} {ver}" for name, ver in versions.items())
        typer.echo(f"onellm-cli {cli}" + (f" ({others})" if others else ""))
        raise typer.Exit()


def _example_names(incomplete: str) -> list[str]:
    from onellm_cli._examples import names

    return [n for n in names() if n.startswith(incomplete)]


app = typer.Typer(
    name="onellm",
    help="Run agents, scripts and deciders, chat, inspect instances and their cost, and browse the model catalog. "
    "Results go to standard output, progress to standard error.",
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
instances_app = typer.Typer(help="List, show, resume and fork saved instances.", no_args_is_help=True)
examples_app = typer.Typer(help="List the example agents, or print one (`onellm examples show <name>`).")
app.add_typer(instances_app, name="instances")
app.add_typer(examples_app, name="examples")

Root = Annotated[
    str | None, typer.Option("--root", metavar="DIR", help="Files the run may read and write (default: here).")
]
State = Annotated[
    str | None, typer.Option("--state", metavar="DIR", help="Where instances and records are kept [<root>/.onellm].")
]
Inputs = Annotated[
    list[str] | None,
    typer.Option("--input", "-i", metavar="NAME=VALUE", help="An input (repeatable); NAME=@file reads a file."),
]
InputJson = Annotated[
    list[str] | None,
    typer.Option("--input-json", metavar="JSON", help="Several inputs as a JSON object, or @file."),
]
Prompt = Annotated[str | None, typer.Option("--prompt", "-p", metavar="TEXT", help="The agent's first user message.")]
Model = Annotated[
    str | None, typer.Option("--model", "-m", metavar="MODEL", help="Use this model instead of the definition's.")
]
MaxCost = Annotated[str | None, typer.Option("--max-cost", metavar="USD", help="Stop a run that would spend more.")]
Tools = Annotated[
    list[str] | None,
    typer.Option("--tools", metavar="PATH", help="Load JavaScript tool files or folders (repeatable; js extra)."),
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Approve every held tool call without asking.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Hide tool-call and turn lines on standard error.")]
AllowShell = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-shell",
        metavar="[=PROGRAMS|=ask]",
        help="Grant the shell: alone, any command; =git,python only these programs, run without a shell; "
        "=ask any command, each confirmed at the terminal.",
    ),
]
AllowNet = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-net",
        metavar="[=HOSTS]",
        help="Grant the network to tools: alone, public hosts; =a.example.com,*.b.org only these hosts.",
    ),
]


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", callback=_show_version, is_eager=True, help="Print the versions and stop."),
    ] = False,
) -> None:
    """onellm: LLM inference and agent runtime."""


@app.command()
def run(
    target: Annotated[
        str,
        typer.Argument(
            metavar="TARGET", help="examples/<name>, an agent .yaml or folder, a .flow, or a decider folder or file."
        ),
    ],
    input: Inputs = None,
    input_json: InputJson = None,
    prompt: Prompt = None,
    model: Model = None,
    max_cost: MaxCost = None,
    tools: Tools = None,
    yes: Yes = False,
    quiet: Quiet = False,
    allow_shell: AllowShell = None,
    allow_net: AllowNet = None,
    root: Root = None,
    state: State = None,
) -> None:
    """Run a definition: the target decides the mode (agent, flow or decider)."""
    from onellm_cli import _commands

    _commands.run(
        target,
        inputs=input or [],
        input_json=input_json or [],
        prompt=prompt,
        model=model,
        max_cost=max_cost,
        tools=tools or [],
        yes=yes,
        quiet=quiet,
        allow_shell=allow_shell,
        allow_net=allow_net,
        root=root,
        state=state,
    )


@app.command()
def chat(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="A catalog model name or alias, or provider:model.")],
    system: Annotated[str | None, typer.Option("--system", "-s", metavar="TEXT", help="The system prompt.")] = None,
    max_cost: MaxCost = None,
    root: Root = None,
    state: State = None,
) -> None:
    """Talk to a model: a line from standard input, the answer streamed, again. /exit or end of input stops."""
    from onellm_cli import _commands

    _commands.chat(model, system=system, max_cost=max_cost, root=root, state=state)


@instances_app.command("list")
def instances_list(
    state_filter: Annotated[
        str | None, typer.Option("--state-filter", metavar="STATE", help="Only instances in this state.")
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", metavar="TEXT", help="Only instances whose name contains this.")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=0, metavar="N", help="At most this many (newest first).")
    ] = None,
    root: Root = None,
    state: State = None,
) -> None:
    """List saved instances, tab-separated: id, state, modified (UTC), name, model."""
    from onellm_cli import _commands

    _commands.instances_list(state_filter=state_filter, name=name, limit=limit, root=root, state=state)


@instances_app.command("show")
def instances_show(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    root: Root = None,
    state: State = None,
) -> None:
    """Print an instance: header, cost, and each message with its tool calls and results (clipped)."""
    from onellm_cli import _commands

    _commands.instances_show(instance_id, root=root, state=state)


@instances_app.command("resume")
def instances_resume(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    prompt: Prompt = None,
    max_cost: MaxCost = None,
    tools: Tools = None,
    yes: Yes = False,
    quiet: Quiet = False,
    allow_shell: AllowShell = None,
    allow_net: AllowNet = None,
    root: Root = None,
    state: State = None,
) -> None:
    """Continue an instance that waits for a message (--prompt) or for approvals."""
    from onellm_cli import _commands

    _commands.instances_resume(
        instance_id,
        prompt=prompt,
        max_cost=max_cost,
        tools=tools or [],
        yes=yes,
        quiet=quiet,
        allow_shell=allow_shell,
        allow_net=allow_net,
        root=root,
        state=state,
    )


@instances_app.command("fork")
def instances_fork(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    at: Annotated[str | None, typer.Option("--at", metavar="MESSAGE_ID", help="Copy up to this message.")] = None,
    root: Root = None,
    state: State = None,
) -> None:
    """Copy an instance (up to a message) into a new one and print its id."""
    from onellm_cli import _commands

    _commands.instances_fork(instance_id, at=at, root=root, state=state)


@app.command()
def cost(
    instance_id: Annotated[str | None, typer.Argument(metavar="[ID]", help="One instance and its sub-agents.")] = None,
    since: Annotated[
        str | None, typer.Option("--since", metavar="WHEN", help="Only calls since 24h, 7d, 2w or a date.")
    ] = None,
    root: Root = None,
    state: State = None,
) -> None:
    """Cost by model: of one instance and its sub-agents, or of everything in the state directory."""
    from onellm_cli import _commands

    _commands.cost(instance_id, since=since, root=root, state=state)


@app.command()
def catalog(
    model: Annotated[
        str | None, typer.Argument(metavar="[MODEL]", help="A model: show each value and the layer that set it.")
    ] = None,
) -> None:
    """Every catalog model and its context window, or one model's values with their layers."""
    from onellm_cli import _commands

    _commands.catalog(model)


@examples_app.callback(invoke_without_command=True)
def examples(ctx: typer.Context) -> None:
    """List the example agents built into the command."""
    if ctx.invoked_subcommand is None:
        from onellm_cli import _commands

        _commands.examples_list()


@examples_app.command("show")
def examples_show(
    name: Annotated[str, typer.Argument(autocompletion=_example_names, help="The example's name.")],
) -> None:
    """Print an example's agent.yaml, to copy and change."""
    from onellm_cli import _commands

    _commands.examples_show(name)


@app.command()
def version() -> None:
    """Print the version of every installed onellm package."""
    for name, ver in installed_versions().items():
        typer.echo(f"{name} {ver}")


# --------------------------------------------------------------------------------------------------------- main
_BARE_FLAGS = ("--allow-shell", "--allow-net")


def _rewrite(args: Sequence[str]) -> list[str]:
    """A grant flag given alone (`--allow-shell`, not `--allow-shell=...`) becomes `--allow-shell=:all:`, so the
    flag never takes the next word as its value."""
    from onellm_cli._options import ALL

    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            out.extend(args[i:])
            break
        out.append(f"{arg}={ALL}" if arg in _BARE_FLAGS else arg)
    return out


def _click_exceptions() -> Any:
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:  # typer releases that use the click package itself
        return importlib.import_module("click.exceptions")


def main(argv: Sequence[str] | None = None) -> None:
    """The `onellm` entry point: run the command, print any failure as one line, exit with its code."""
    sys.exit(invoke(sys.argv[1:] if argv is None else argv))


def invoke(argv: Sequence[str]) -> int:
    """Run the command line `argv` and return the exit code (nothing is raised)."""
    exceptions = _click_exceptions()
    command = typer.main.get_command(app)
    try:
        result = command.main(args=_rewrite(argv), prog_name="onellm", standalone_mode=False)
    except exceptions.ClickException as error:
        if type(error).__name__ == "NoArgsIsHelpError":  # `onellm` or `onellm instances` alone: the help
            sys.stdout.write(error.format_message() + "\n")
            return 0
        code = getattr(error, "exit_code", EXIT_USAGE) or EXIT_USAGE
        message = one_line(error.format_message())
        context = getattr(error, "ctx", None)
        hint = f" (see '{context.command_path} --help')" if context is not None else ""
        _say(f"onellm: error: {message}{hint}")
        return int(code)
    except typer.Abort:
        _say("onellm: aborted")
        return 130
    except KeyboardInterrupt:
        _say("onellm: cancelled")
        return 130
    except BrokenPipeError:
        _quiet_pipes()
        return 1
    except CliError as error:
        if error.message:
            _say(f"onellm: error: {one_line(error.message)}")
        return error.code
    except Exception as error:
        code, message = classify(error)
        _say(f"onellm: error: {one_line(message)}")
        return code
    return result if isinstance(result, int) else 0


def _say(text: str) -> None:
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _quiet_pipes() -> None:
    """The reader of standard output went away (`onellm ... | head`): stop without a second error at exit."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
