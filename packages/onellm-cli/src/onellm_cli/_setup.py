"""The runtime a command runs on: where state is kept, what is granted, which tools are offered, the spend cap.

State lives under `<root>/.onellm/` (`instances/`, `records/`) unless `--state` names another directory. Grants come
only from the flags; keys only from the environment. The runtime's file grant protects its own state directories, so
a model cannot read other runs' transcripts or rewrite its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onellm_cli._errors import EXIT_SETUP, EXIT_USAGE, CliError

if TYPE_CHECKING:
    from onellm import Runtime
    from onellm.testing import ScriptedDecisionProvider, ScriptedProvider
    from onellm.tools import Tool
    from onellm_cli._approve import TerminalApprovals
    from onellm_cli._options import Grants
    from onellm_cli._output import Reporter

__all__ = ["Place", "Session", "load_tools", "place_of", "session"]

STATE_DIR = ".onellm"


@dataclass(frozen=True, slots=True)
class Place:
    """The root the file grant covers and the state directory."""

    root: Path
    state: Path

    @property
    def instances(self) -> Path:
        return self.state / "instances"

    @property
    def records(self) -> Path:
        return self.state / "records"


def place_of(root: str | None, state: str | None) -> Place:
    """Resolve `--root` (default: the working directory) and `--state` (default: `<root>/.onellm`).

    Raises:
        CliError: the root is not an existing directory, or the state path is a file (exit code 3).
    """
    base = Path(root) if root is not None else Path.cwd()
    if root is not None and not root.strip():
        raise CliError("--root: the directory name is empty", EXIT_USAGE)
    try:
        resolved = base.resolve(strict=True)
    except OSError:
        raise CliError(f"--root {base}: no such directory", EXIT_SETUP) from None
    if not resolved.is_dir():
        raise CliError(f"--root {base}: not a directory", EXIT_SETUP)
    if state is not None and not state.strip():
        raise CliError("--state: the directory name is empty", EXIT_USAGE)
    kept = Path(state).resolve() if state is not None else resolved / STATE_DIR
    if kept.exists() and not kept.is_dir():
        raise CliError(f"--state {kept}: exists and is not a directory", EXIT_SETUP)
    return Place(resolved, kept)


@dataclass
class Session:
    """One command's runtime, with the scripted providers a test put in place."""

    runtime: Runtime
    place: Place
    scripted: dict[str, ScriptedProvider | ScriptedDecisionProvider] = field(default_factory=dict)


def session(
    place: Place,
    reporter: Reporter,
    *,
    grants: Grants | None = None,
    approvals: TerminalApprovals | None = None,
    max_cost: Decimal | None = None,
    tools: list[Tool[..., Any]] | None = None,
    agent: bool = False,
) -> Session:
    """A runtime over the state directory, with the flags' grants and the records reported; with `agent`, the tools
    an agent may name are registered too.

    Raises:
        CliError: a grant flag's entry is malformed.
    """
    from onellm import Runtime
    from onellm.capabilities import Capabilities
    from onellm.instances import FileInstanceStore
    from onellm.records import EventRecordSink, JsonlRecordSink
    from onellm_cli import _scripted

    if grants is not None:
        caps = grants.capabilities(place.root, approvals.shell if approvals is not None else None)
    else:
        caps = Capabilities.files(place.root).with_working_directory(place.root)
    if place.state != place.root / STATE_DIR:
        # The file grant protects <root>/.onellm itself. A state directory elsewhere holds the store, the records and
        # the todo and memory files, and is protected as a whole.
        caps = caps.with_protected_paths(place.state)
    runtime = Runtime(
        store=FileInstanceStore(place.instances),
        records=[JsonlRecordSink(place.records), EventRecordSink(reporter.on_record)],
        capabilities=caps,
        spend_cap=max_cost,
    )
    if agent:
        _register(runtime, place, tools or [])
    return Session(runtime, place, _scripted.install(runtime))


def _register(runtime: Runtime, place: Place, extra: list[Tool[..., Any]]) -> None:
    """The tools every agent may name: the built-ins (`task_complete` is found by every registry), `run_javascript`
    when the js extra is installed, and the `--tools` files. Tools of installed packages (`fetch_webpage_markdown`)
    are found by name."""
    from onellm.tools.builtin import BuiltinOptions, builtin_tools

    registry = runtime.tools
    taken = set(registry.names())
    options = BuiltinOptions(state_directory=place.state) if place.state != place.root / STATE_DIR else None
    offered: list[Tool[..., Any]] = list(builtin_tools(options))
    javascript = _run_javascript()
    if javascript is not None:
        offered.append(javascript)
    for tool in offered:
        if tool.name not in taken:
            registry.add(tool)
            taken.add(tool.name)
    for tool in extra:
        registry.add(tool, replace=True)
    _register_examples(runtime)


def _register_examples(runtime: Runtime) -> None:
    """Offer the example agents to sub-agents by name (`examples/<name>`) where the runtime keeps the definitions a
    host registers for `run_agent_async` (`Runtime.agent_definitions`, which comes with the sub-agent tools). A
    registered definition needs no file access; the agent it starts holds at most its caller's grants."""
    registered = getattr(runtime, "agent_definitions", None)
    if registered is None:
        return
    from onellm_cli._examples import EXAMPLES, names

    for name in names():
        registered.add(f"examples/{name}", EXAMPLES / name / "agent.yaml", replace=True)


def _run_javascript() -> Tool[..., Any] | None:
    try:
        import onellm_js
    except ImportError:
        return None
    return onellm_js.run_javascript()


def js_extra_error(what: str) -> CliError:
    """The error for a feature of the js extra when `onellm-js` is not installed (exit code 3)."""
    return CliError(f"{what} needs the JavaScript extra: pip install 'onellm-cli[js]' (adds onellm-js)", EXIT_SETUP)


async def load_tools(paths: list[str]) -> list[Tool[..., Any]]:
    """The JavaScript tools of the `--tools` files and folders (a `.js` file, with its `.tool.yaml` when present).

    Raises:
        CliError: the js extra is missing, or a path does not exist (exit code 3).
        BadDefinitionError: a tool file does not load (file, line and column).
    """
    if not paths:
        return []
    try:
        import onellm_js
    except ImportError:
        raise js_extra_error("--tools") from None
    import anyio.to_thread

    loaded: list[Tool[..., Any]] = []
    for text in paths:
        path = Path(text)
        kind = await anyio.to_thread.run_sync(_kind_of, path)
        if kind == "dir":
            loaded.extend(await onellm_js.load_tool_directory(path))
        elif kind == "file":
            loaded.append(await onellm_js.load_tool(path))
        else:
            raise CliError(f"--tools {text}: no such file or directory", EXIT_SETUP)
    return loaded


def _kind_of(path: Path) -> str:
    return "dir" if path.is_dir() else "file" if path.is_file() else "missing"
