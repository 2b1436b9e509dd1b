"""What each command does. `_app` declares the options; this module is imported only when a command runs."""

from __future__ import annotations

import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from onellm_cli._errors import (
    EXIT_CANCELLED,
    EXIT_FAILED,
    EXIT_MAX_ITERATIONS,
    EXIT_SETUP,
    EXIT_USAGE,
    CliError,
    classify,
    one_line,
)
from onellm_cli._output import (
    Reporter,
    clip,
    decider_calls,
    instance_cost,
    instance_turns,
    money,
    safe_text,
    show_json,
    tool_line,
)

if TYPE_CHECKING:
    from onellm.definitions import Definition
    from onellm.instances import FileInstanceStore, Instance
    from onellm_cli._agents import AgentOutcome
    from onellm_cli._approve import TerminalApprovals
    from onellm_cli._options import Grants
    from onellm_cli._setup import Place, Session

T = TypeVar("T")

__all__ = [
    "Target",
    "catalog",
    "chat",
    "cost",
    "examples_list",
    "examples_show",
    "instances_fork",
    "instances_list",
    "instances_resume",
    "instances_show",
    "resolve_target",
    "run",
]


# ------------------------------------------------------------------------------------------------------ plumbing
def _out(text: str) -> None:
    """A result on standard output: as it is for a pipe or a file; on a terminal, with control characters shown as
    `\\uXXXX`, so an answer cannot move the cursor or rewrite what is on the screen."""
    if _STDOUT_TTY:
        text = safe_text(text)
    try:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`| head`): the run still ends as usual, its last line included
        _drop_stdout()


def _drop_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _stdout_is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


_STDOUT_TTY = _stdout_is_tty()


class _Interrupt:
    """Ctrl-C: the first cancels the run (which saves what it has as a stopped instance); a second one ends the
    process at once."""

    def __init__(self) -> None:
        self.hit = False

    async def watch(self, scope: anyio.CancelScope) -> None:
        try:
            receiver = anyio.open_signal_receiver(signal.SIGINT)
        except (NotImplementedError, ValueError, RuntimeError):  # no signal support here: Ctrl-C raises instead
            return
        with receiver as signals:
            async for _ in signals:
                if self.hit:
                    import os

                    sys.stderr.write("\nonellm: cancelled\n")
                    sys.stderr.flush()
                    os._exit(EXIT_CANCELLED)
                self.hit = True
                scope.cancel()


def _drive(work: Callable[[], Awaitable[T]], reporter: Reporter | None = None) -> T:
    """Run `work` on an event loop, with Ctrl-C cancelling it and a spinner on a terminal."""
    interrupt = _Interrupt()
    box: list[T] = []

    async def main() -> None:
        async with anyio.create_task_group() as group:
            scope = anyio.CancelScope()
            group.start_soon(interrupt.watch, scope)
            if reporter is not None and reporter.tty:
                group.start_soon(_spin, reporter)
            try:
                with scope:
                    box.append(await work())
            finally:
                group.cancel_scope.cancel()

    try:
        anyio.run(main)
    except BaseExceptionGroup as group:
        leaves = group.exceptions
        while len(leaves) == 1 and isinstance(leaves[0], BaseExceptionGroup):
            leaves = leaves[0].exceptions
        if len(leaves) == 1:
            raise leaves[0] from None
        raise
    if not box:
        raise CliError("cancelled" if interrupt.hit else "the run ended without a result", EXIT_CANCELLED)
    return box[0]


async def _spin(reporter: Reporter) -> None:
    while True:
        await anyio.sleep(0.1)
        reporter.tick()


def _last_line(instance: Instance, reporter: Reporter, *, hint: str = "") -> None:
    turns = instance_turns(instance)
    state = instance.state or "stopped"
    if instance.cancelled:
        state += " (cancelled)"
    unit = "call" if isinstance(instance.extra.get("decider"), dict) else "turn"
    text = (
        f"instance {instance.id}: {state}, {turns} {unit}{'s' if turns != 1 else ''}, {money(instance_cost(instance))}"
    )
    reporter.finish(text + (f"; {hint}" if hint else ""))


async def _saved(session: Session, reporter: Reporter) -> Instance | None:
    """The instance this command's run saved (named by its `run` record), read back from the store."""
    if reporter.instance_id is None:
        return None
    try:
        return await session.runtime.store.load(reporter.instance_id)
    except Exception:  # the failure being reported matters more than a second one while reading back
        return None


async def _failed(error: BaseException, session: Session, reporter: Reporter, instance: Instance | None = None) -> None:
    """Report a run that raised: the error's line, then the instance's last line when one was saved."""
    from onellm.errors import RunCancelledError

    if isinstance(error, RunCancelledError) and error.instance is not None:
        _last_line(error.instance, reporter)
        raise CliError("", EXIT_CANCELLED) from None
    code, message = classify(error)
    instance = instance or await _saved(session, reporter)
    reporter.line(f"onellm: error: {one_line(message)}")
    if instance is not None:
        _last_line(instance, reporter)
    raise CliError("", code) from None


def _store(place: Place) -> FileInstanceStore | None:
    """The instance store of the state directory, or None when nothing was ever saved there."""
    from onellm.instances import FileInstanceStore

    if not place.instances.is_dir():
        return None
    return FileInstanceStore(place.instances)


async def _load(place: Place, instance_id: str) -> tuple[FileInstanceStore, Instance]:
    """A saved instance by id; an unknown id is exit code 1."""
    from onellm.instances import is_valid_instance_id

    store = _store(place)
    if not is_valid_instance_id(instance_id):
        raise CliError(f"no instance {instance_id!r}: an id is 1 to 128 letters, digits, '-' and '_'", EXIT_FAILED)
    found = await store.load(instance_id) if store is not None else None
    if store is None or found is None:
        raise CliError(f"no instance {instance_id} in {place.instances}", EXIT_FAILED)
    return store, found


# ------------------------------------------------------------------------------------------------------ targets
@dataclass(frozen=True, slots=True)
class Target:
    """What `run` was pointed at."""

    kind: str
    """`agent`, `flow` or `decider`."""
    path: Path
    label: str


def resolve_target(text: str) -> Target:
    """The mode of `run`, decided by the target: `examples/<name>`, an agent `.yaml` or a folder holding
    `agent.yaml`, a `.flow`, or a folder holding `decider.yaml` (or that file).

    Raises:
        CliError: no such file, or nothing that can be run (exit code 3).
    """
    from onellm_cli import _examples

    normalised = text.replace("\\", "/")
    if normalised.startswith("examples/") and not Path(text).exists():
        name = normalised.removeprefix("examples/").strip("/")
        return Target("agent", _examples.path_of(name), f"examples/{name}/agent.yaml")
    path = Path(text)
    if not path.exists():
        raise CliError(f"{text}: no such file or directory", EXIT_SETUP)
    if path.is_dir():
        agent = path / "agent.yaml"
        decider = path / "decider.yaml"
        if agent.is_file() and decider.is_file():
            raise CliError(f"{text}: holds both agent.yaml and decider.yaml; name the file to run", EXIT_SETUP)
        if agent.is_file():
            return Target("agent", agent, text)
        if decider.is_file():
            return Target("decider", path, text)
        raise CliError(f"{text}: holds neither agent.yaml nor decider.yaml", EXIT_SETUP)
    if path.suffix == ".flow":
        return Target("flow", path, text)
    if path.name in ("decider.yaml", "decider.yml") or path.name.endswith((".decider.yaml", ".decider.yml")):
        return Target("decider", path, text)
    if path.suffix in (".yaml", ".yml"):
        return Target("agent", path, text)
    raise CliError(
        f"{text}: cannot tell how to run it (expected an agent .yaml, a .flow, a decider.yaml or a folder)",
        EXIT_SETUP,
    )


# --------------------------------------------------------------------------------------------------------- run
def run(
    target: str,
    *,
    inputs: Sequence[str],
    input_json: Sequence[str],
    prompt: str | None,
    model: str | None,
    max_cost: str | None,
    tools: Sequence[str],
    yes: bool,
    quiet: bool,
    allow_shell: Sequence[str] | None,
    allow_net: Sequence[str] | None,
    root: str | None,
    state: str | None,
) -> None:
    from onellm_cli._approve import TerminalApprovals
    from onellm_cli._options import parse_grants, parse_inputs, parse_max_cost
    from onellm_cli._setup import place_of

    cap = parse_max_cost(max_cost)
    grants = parse_grants(allow_shell, allow_net)
    values = parse_inputs(inputs, input_json)
    place = place_of(root, state)
    found = resolve_target(target)
    if found.kind != "agent":
        for flag, given in (("--prompt", prompt is not None), ("--tools", bool(tools))):
            if given:
                raise CliError(f"{flag} is for agents; {target} is a {found.kind}", EXIT_USAGE)
    reporter = Reporter(quiet=quiet)
    approvals = TerminalApprovals(reporter, yes=yes)
    if found.kind == "flow":
        _drive(lambda: _run_flow(found, place, reporter, values=values, model=model, cap=cap), reporter)
    elif found.kind == "decider":
        if model is not None:
            raise CliError("--model is for agents and flows; a decider's models are in its decider.yaml", EXIT_USAGE)
        reporter.unit = "call"
        _drive(lambda: _run_decider(found, place, reporter, values=values, cap=cap), reporter)
    else:
        _drive(
            lambda: _run_agent(
                found,
                place,
                reporter,
                approvals,
                grants,
                values=values,
                prompt=prompt,
                model=model,
                cap=cap,
                tools=list(tools),
            ),
            reporter,
        )


async def _session(
    place: Place,
    reporter: Reporter,
    *,
    grants: Grants | None = None,
    approvals: TerminalApprovals | None = None,
    cap: Decimal | None = None,
    tools: list[str] | None = None,
) -> Session:
    from onellm_cli._setup import load_tools, session

    loaded = await load_tools(tools or [])
    return session(
        place, reporter, grants=grants, approvals=approvals, max_cost=cap, tools=loaded, agent=grants is not None
    )


def _end(session: Session, reporter: Reporter) -> None:
    from onellm_cli._scripted import unused_steps

    for line in unused_steps(session.scripted):
        reporter.line(line)


async def _run_flow(
    found: Target, place: Place, reporter: Reporter, *, values: dict[str, Any], model: str | None, cap: Decimal | None
) -> None:
    from onellm.definitions import Definition

    definition = await anyio.to_thread.run_sync(Definition.load, found.path)
    if not (model or definition.model):
        raise CliError(f"{found.label}: the flow names no model; pass --model", EXIT_SETUP)
    session = await _session(place, reporter, cap=cap)
    try:
        options = {"model": model} if model else {}
        result = await session.runtime.run_script(found.path, values, **options)
    except Exception as error:
        _end(session, reporter)
        await _failed(error, session, reporter)
        raise
    _out(show_json(result.output, indent=2) if result.output is not None else result.text)
    _end(session, reporter)
    _last_line(result.instance, reporter)


async def _run_decider(
    found: Target, place: Place, reporter: Reporter, *, values: dict[str, Any], cap: Decimal | None
) -> None:
    from onellm_cli import _agents

    session = await _session(place, reporter, cap=cap)
    try:
        result = await _agents.decide(session.runtime, found.path, values)
    except CliError:
        raise
    except Exception as error:
        _end(session, reporter)
        await _failed(error, session, reporter)
        raise
    _out(show_json(result.outputs, indent=2))
    _end(session, reporter)
    _last_line(result.instance, reporter)


_FLAGS = {
    "shell": "--allow-shell (or --allow-shell=PROGRAMS, or --allow-shell=ask)",
    "network": "--allow-net (or --allow-net=HOSTS)",
    "files_read": "--root covering the files",
    "files_write": "--root covering the files",
}


def check_references(definition: Definition, session: Session, grants: Grants | None, label: str) -> None:
    """Refuse a definition whose references the flags do not grant, before any model call: exit code 3 naming
    the tool and the flag to add, at the entry's file, line and column. Unknown tools are refused the same way."""
    from onellm.tools import ToolReferenceResolver

    references = definition.references or []
    if not references:
        return
    runtime = session.runtime
    resolver = ToolReferenceResolver(runtime.tools, runtime.capabilities)
    registry = resolver.registry
    file = label

    def where(steps: tuple[str | int, ...]) -> str:
        found = definition.position(list(steps))
        return f"{file}:{found[0]}:{found[1]}" if found is not None else file

    kept: list[Any] = []
    for i, ref in enumerate(references):
        data = ref.to_data()
        candidates: list[tuple[tuple[str | int, ...], Any]]
        if ref.routine is None and ref.swarm is None and ref.tools is not None:
            names = list(ref.tools)
            candidates = [(("references", i, "tools", j), registry.find(n)) for j, n in enumerate(names)]
        else:
            source = ref.routine if ref.routine is not None else ref.swarm or ""
            members = registry.group(source)
            if members is None:
                single = registry.find(source) if ref.routine is not None else None
                members = (single.name,) if single is not None else ()
            chosen = [m for m in members if ref.tools is None or m in ref.tools]
            candidates = [(("references", i), registry.get(m)) for m in chosen]
        for steps, tool in candidates:
            if tool is None or ref.required is False:
                continue
            missing = resolver.missing_grants(tool)
            if missing:
                flags = " and ".join(dict.fromkeys(_FLAGS.get(kind, kind) for kind in missing))
                given = grants.describe() if grants is not None else "no grant flags"
                raise CliError(
                    f"{where(steps)}: tool {tool.name!r} is not granted: it needs {flags} (given: {given}); a "
                    "definition never grants anything",
                    EXIT_SETUP,
                )
        kept.append(data)
    resolver.resolve(kept, file=file, position=lambda steps: definition.position(list(steps)))


async def _run_agent(
    found: Target,
    place: Place,
    reporter: Reporter,
    approvals: TerminalApprovals,
    grants: Grants,
    *,
    values: dict[str, Any],
    prompt: str | None,
    model: str | None,
    cap: Decimal | None,
    tools: list[str],
) -> None:
    from onellm.definitions import Definition
    from onellm_cli import _agents

    definition = await anyio.to_thread.run_sync(Definition.load, found.path)
    _agents.require_agents("running an agent")
    session = await _session(place, reporter, grants=grants, approvals=approvals, cap=cap, tools=tools)
    check_references(
        definition, session, grants, found.label if found.label.startswith("examples/") else str(found.path)
    )
    chosen = model or definition.model
    if chosen is None:
        raise CliError(f"{found.label}: the definition names no model; pass --model", EXIT_SETUP)
    session.runtime.catalog.resolve(chosen)  # an unknown model stops here, before anything runs
    try:
        outcome = await _agents.run_agent(
            session.runtime,
            definition,
            inputs=values,
            prompt=prompt,
            model=model,
            approvals=approvals,
            reporter=reporter,
        )
    except CliError:
        raise
    except Exception as error:
        _end(session, reporter)
        await _failed(error, session, reporter)
        raise
    _end(session, reporter)
    _report_agent(outcome, reporter)


def _report_agent(outcome: AgentOutcome, reporter: Reporter) -> None:
    """Print an agent's result and its last line, and stop with the exit code of how it came to rest: the
    `task_complete` result (its summary on standard error), else the typed output, else the last answer, else the
    question it waits on."""
    result = outcome.result
    instance = result.instance
    stop = str(result.stop_reason)
    if stop == "completed":
        if result.output is not None:
            _out(show_json(result.output, indent=2))
        elif result.result is not None:
            _out(result.result if isinstance(result.result, str) else show_json(result.result, indent=2))
        elif result.text:
            _out(result.text)
        if result.summary:
            reporter.line(f"summary: {safe_text(result.summary)}")
    elif stop == "waiting":
        if result.question is not None:
            _out(result.question.question)
        elif result.text:
            _out(result.text)
    hint = ""
    code = 0
    if outcome.unsent is not None:
        reporter.line("the message given with --prompt was not sent: a call is still held for approval")
    if stop == "waiting":
        hint = f'continue with: onellm instances resume {instance.id} --prompt "..."'
    elif stop == "waiting_for_approval":
        hint = f"held for approval; decide with: onellm instances resume {instance.id}"
    elif stop == "max_iterations":
        code = EXIT_MAX_ITERATIONS
        reached = (
            result.error.message if result.error is not None and result.error.message else "max iterations reached"
        )
        reporter.line(f"onellm: {one_line(reached)} without finishing")
        hint = f"go on with: onellm instances resume {instance.id}"
    elif stop == "error":
        code = EXIT_FAILED
        if instance.error is not None:
            reporter.line(f"onellm: error: {one_line(instance.error.message or instance.error.type or 'failed')}")
    elif stop == "cancelled":
        code = EXIT_CANCELLED
    _last_line(instance, reporter, hint=hint)
    if code:
        raise CliError("", code)


# -------------------------------------------------------------------------------------------------------- chat
def chat(model: str, *, system: str | None, max_cost: str | None, root: str | None, state: str | None) -> None:
    from onellm_cli._options import parse_max_cost
    from onellm_cli._setup import place_of

    cap = parse_max_cost(max_cost)
    place = place_of(root, state)
    reporter = Reporter(quiet=True, tty=False)  # the answers stream to the terminal: no progress line across them
    holder: list[Any] = []
    try:
        _drive(lambda: _chat(model, system, place, reporter, cap, holder))
    except CliError as error:
        if error.code == EXIT_CANCELLED and holder and holder[0].instance.messages:
            _last_line(holder[0].instance, reporter)
            raise CliError("", EXIT_CANCELLED) from None
        raise


async def _chat(
    model: str, system: str | None, place: Place, reporter: Reporter, cap: Decimal | None, holder: list[Any]
) -> None:
    session = await _session(place, reporter, cap=cap)
    conversation = session.runtime.chat(model, system=system)
    holder.append(conversation)
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            reporter.prompt("> ")
        line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        if not line or line.strip() == "/exit":
            break
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        try:
            answer = conversation.stream(text)
            async with answer:
                async for piece in answer.text():
                    try:
                        sys.stdout.write(safe_text(piece) if _STDOUT_TTY else piece)
                        sys.stdout.flush()
                    except BrokenPipeError:
                        _drop_stdout()
            _out("")
        except Exception as error:
            _out("")
            _end(session, reporter)
            await _failed(error, session, reporter, conversation.instance if conversation.instance.messages else None)
            raise
    _end(session, reporter)
    instance = conversation.instance
    if instance.messages:
        _last_line(instance, reporter, hint=f"instance kept in {place.instances}")
    else:
        reporter.finish("no message was sent; nothing was saved")


# --------------------------------------------------------------------------------------------------- instances
def instances_list(
    *, state_filter: str | None, name: str | None, limit: int | None, root: str | None, state: str | None
) -> None:
    from onellm_cli._setup import place_of

    place = place_of(root, state)
    store = _store(place)
    if store is None:
        return
    store_ = store

    async def listing() -> list[Any]:
        return await store_.list(state=state_filter, name_contains=name, limit=limit)

    for summary in _drive(listing):
        modified = summary.modified_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        fields = [summary.id, summary.state or "", modified, summary.name or "", summary.model or ""]
        _out("\t".join(clip(f, 120).replace("\t", " ") for f in fields))


def instances_show(instance_id: str, *, root: str | None, state: str | None) -> None:
    from onellm_cli._setup import place_of

    place = place_of(root, state)

    async def show() -> str:
        store, instance = await _load(place, instance_id)
        subtree = await _subtree(store, instance)
        return _render(instance, subtree)

    _out(_drive(show))


async def _subtree(store: FileInstanceStore, instance: Instance) -> list[Instance]:
    """The instances `instance` started or asked, and theirs: sub-agents through `spawnerInstanceId`, decider runs of
    its `run_decider` calls through `callerInstanceId` (each once)."""
    summaries = await store.list()
    children: dict[str, list[str]] = {}
    for summary in summaries:
        for parent in dict.fromkeys((summary.spawner_instance_id, summary.caller_instance_id)):
            if parent is not None:
                children.setdefault(parent, []).append(summary.id)
    found: list[Instance] = []
    seen = {instance.id}
    queue = list(children.get(instance.id or "", []))
    while queue:
        child_id = queue.pop(0)
        if child_id in seen:
            continue
        seen.add(child_id)
        child = await store.load(child_id)
        if child is not None:
            found.append(child)
            queue.extend(children.get(child_id, []))
    return found


def _render(instance: Instance, subtree: list[Instance]) -> str:
    lines = [f"instance {instance.id}"]
    for label, value in (
        ("name", instance.name),
        ("description", instance.description),
        ("state", instance.state),
        ("model", instance.model),
        ("definition", instance.agent_definition),
        ("started", instance.run_started_at.text if instance.run_started_at is not None else None),
        ("spawned by", instance.spawner_instance_id),
        (
            "forked from",
            f"{instance.forked_from.instance_id} at {instance.forked_from.message_id}"
            if instance.forked_from is not None
            else None,
        ),
    ):
        if value is not None:
            lines.append(f"{label}: {clip(str(value), 300)}")
    if instance.cancelled:
        lines.append("cancelled: true")
    if instance.error is not None:
        lines.append(f"error: {instance.error.type or 'error'}: {clip(instance.error.message or '', 300)}")
    for held in instance.pending_approvals:
        decision = held.decision or "pending"
        lines.append(
            f"approval {decision}: {held.tool} {clip(show_json(held.inputs or {}), 200)} ({held.tool_call_id})"
        )
    for engine_call in decider_calls(instance):
        usage = engine_call.usage
        tokens = f"{usage.total_input_tokens} in / {usage.output_tokens} out, " if usage is not None else ""
        priced = money(engine_call.cost) if engine_call.cost is not None else "not priced"
        asked = clip(", ".join(engine_call.questions), 200)
        lines.append(f"decider call: {clip(engine_call.model, 100)} [{asked}]: {tokens}{priced}")
    decided = instance.extra.get("decider")
    if isinstance(decided, dict):
        lines.extend(f"{key}: {clip(show_json(decided[key]), 500)}" for key in ("answers", "outputs") if key in decided)
    own = instance_cost(instance)
    cost_line = f"cost: {money(own)}"
    if subtree:
        total = own + sum((instance_cost(child) for child in subtree), Decimal(0))
        cost_line += f" (with {len(subtree)} sub-agent{'s' if len(subtree) != 1 else ''}: {money(total)})"
    lines.append(cost_line)
    lines.append(f"turns: {instance_turns(instance)}")
    for number, message in enumerate(instance.messages, start=1):
        source = message.source.kind if message.source is not None and message.source.kind else ""
        stamp = message.date_time.text if message.date_time is not None else ""
        head = " ".join(p for p in (f"[{number}]", message.id or "", stamp, f"({source})" if source else "") if p)
        lines.append("")
        lines.append(head)
        if message.user:
            lines.append(f"  user: {clip(_parts_text(message.user), 500)}")
        if message.assistant:
            lines.append(f"  assistant: {clip(_parts_text(message.assistant), 500)}")
        lines.extend(
            "  " + tool_line(call.tool, call.inputs, call.result, call.is_error, call.invalid_inputs)
            for call in message.tool_calls
        )
        if message.usage is not None:
            usage = message.usage
            priced = money(usage.cost) if usage.cost is not None else "not priced"
            lines.append(f"  usage: {usage.total_input_tokens} in / {usage.output_tokens} out, {priced}")
    return "\n".join(lines)


def _parts_text(parts: Sequence[Any]) -> str:
    pieces: list[str] = []
    for part in parts:
        text = getattr(part, "text", None)
        if isinstance(text, str):
            pieces.append(text)
        else:
            to_data = getattr(part, "to_data", None)
            pieces.append(f"[{type(part).__name__}] " + (show_json(to_data()) if callable(to_data) else ""))
    return " ".join(pieces)


def instances_fork(instance_id: str, *, at: str | None, root: str | None, state: str | None) -> None:
    from onellm_cli._setup import place_of

    place = place_of(root, state)

    async def fork() -> str:
        from onellm import Runtime
        from onellm.errors import InstanceNotFoundError

        store, _ = await _load(place, instance_id)
        try:
            copy = await Runtime(store=store).fork(instance_id, through=at)
        except InstanceNotFoundError:
            raise CliError(f"instance {instance_id} has no message {at!r}", EXIT_FAILED) from None
        return copy.id or ""

    _out(_drive(fork))


def instances_resume(
    instance_id: str,
    *,
    prompt: str | None,
    max_cost: str | None,
    tools: Sequence[str],
    yes: bool,
    quiet: bool,
    allow_shell: Sequence[str] | None,
    allow_net: Sequence[str] | None,
    root: str | None,
    state: str | None,
) -> None:
    from onellm_cli._approve import TerminalApprovals
    from onellm_cli._options import parse_grants, parse_max_cost
    from onellm_cli._setup import place_of

    cap = parse_max_cost(max_cost)
    grants = parse_grants(allow_shell, allow_net)
    place = place_of(root, state)
    reporter = Reporter(quiet=quiet)
    approvals = TerminalApprovals(reporter, yes=yes)
    _drive(
        lambda: _resume(instance_id, place, reporter, approvals, grants, prompt=prompt, cap=cap, tools=list(tools)),
        reporter,
    )


async def _resume(
    instance_id: str,
    place: Place,
    reporter: Reporter,
    approvals: TerminalApprovals,
    grants: Grants,
    *,
    prompt: str | None,
    cap: Decimal | None,
    tools: list[str],
) -> None:
    from onellm_cli import _agents

    _, instance = await _load(place, instance_id)
    if isinstance(instance.extra.get("decider"), dict):
        raise CliError(
            f"instance {instance_id} is a decider run, which is not resumed; run the decider again with onellm run",
            EXIT_USAGE,
        )
    held = any(not p.decided for p in instance.pending_approvals)
    goes_on = instance.state in ("running", "error") or bool(instance.cancelled)
    if not held and prompt is None and not goes_on:
        raise CliError(
            f"instance {instance_id} is {instance.state or 'stopped'} and holds no call for approval; give the "
            "next message with --prompt",
            EXIT_USAGE,
        )
    _agents.require_agents("resuming an instance")
    session = await _session(place, reporter, grants=grants, approvals=approvals, cap=cap, tools=tools)
    check_references(instance.definition(), session, grants, f"instance {instance_id}")
    reporter.instance_id = instance.id
    try:
        outcome = await _agents.resume_agent(
            session.runtime, instance_id, prompt=prompt, approvals=approvals, reporter=reporter
        )
    except CliError:
        raise
    except Exception as error:
        _end(session, reporter)
        await _failed(error, session, reporter)
        raise
    _end(session, reporter)
    _report_agent(outcome, reporter)


# -------------------------------------------------------------------------------------------------------- cost
@dataclass
class _Tally:
    by_model: dict[str, Decimal]
    unpriced: int = 0
    instances: int = 0

    def add(self, instance: Instance, since: datetime | None) -> None:
        self.instances += 1
        for message in instance.messages:
            if since is not None and (message.date_time is None or message.date_time.datetime < since):
                continue
            usage = message.usage
            if usage is not None:
                key = instance.model or usage.model or "unknown model"
                if usage.cost is None:
                    self.unpriced += 1
                else:
                    self.by_model[key] = self.by_model.get(key, Decimal(0)) + usage.cost
            for call in message.tool_calls:
                if call.cost is not None:
                    key = f"tool {call.tool}"
                    self.by_model[key] = self.by_model.get(key, Decimal(0)) + call.cost
        if since is not None and (instance.run_started_at is None or instance.run_started_at.datetime < since):
            return  # a decider run's calls are dated by its start
        for engine_call in decider_calls(instance):
            key = engine_call.model or instance.model or "unknown model"
            if engine_call.cost is None:
                self.unpriced += 1
            else:
                self.by_model[key] = self.by_model.get(key, Decimal(0)) + engine_call.cost

    def lines(self) -> list[str]:
        width = max([len(k) for k in self.by_model] + [5])
        out = [f"  {key:<{width}}  {money(amount)}" for key, amount in sorted(self.by_model.items())]
        out.append(f"  {'total':<{width}}  {money(sum(self.by_model.values(), Decimal(0)))}")
        if self.unpriced:
            out.append(f"  ({self.unpriced} call{'s' if self.unpriced != 1 else ''} had no price in the catalog)")
        return out


def cost(instance_id: str | None, *, since: str | None, root: str | None, state: str | None) -> None:
    from onellm_cli._options import parse_since
    from onellm_cli._setup import place_of

    moment = parse_since(since)
    place = place_of(root, state)
    after = f" since {moment.strftime('%Y-%m-%dT%H:%M:%SZ')}" if moment is not None else ""

    async def tally() -> list[str]:
        if instance_id is not None:
            store, instance = await _load(place, instance_id)
            own = _Tally({})
            own.add(instance, moment)
            lines = [f"instance {instance.id}" + (f" ({instance.name})" if instance.name else "") + after, *own.lines()]
            subtree = await _subtree(store, instance)
            whole = _Tally({})
            whole.add(instance, moment)
            for child in subtree:
                whole.add(child, moment)
            count = len(subtree)
            lines.append(f"with its sub-agents ({count} instance{'s' if count != 1 else ''})")
            lines.extend(whole.lines())
            return lines
        everything = _Tally({})
        kept = _store(place)
        if kept is not None:
            for summary in await kept.list():
                loaded = await kept.load(summary.id)
                if loaded is not None:
                    everything.add(loaded, moment)
        count = everything.instances
        return [f"{count} instance{'s' if count != 1 else ''} in {place.instances}{after}", *everything.lines()]

    _out("\n".join(_drive(tally)))


# ----------------------------------------------------------------------------------------------------- catalog
def _value(value: Any) -> str:
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | Decimal):
        return str(value)
    return show_json(value)


def catalog(model: str | None) -> None:
    from onellm.catalog import Catalog

    found = Catalog.default()
    if model is None:
        rows = []
        for provider, preset, entry in found.models():
            name = f"{preset.name if preset is not None else provider.name}:{entry.name}"
            window = entry.context_window
            rows.append(f"{name}\t{window if window is not None else '-'}")
        _out("\n".join(rows))
        return
    resolved = found.resolve(model)
    head = resolved.qualified_name
    if model != head:
        head += f" (asked as {model})"
    lines = [head]
    for path, value, layer in found.describe(model):
        origin = layer or f"not listed: matched by a model pattern of {resolved.provider}; limits and prices unknown"
        lines.append(f"{path}: {_value(value)} [{origin}]")
    _out("\n".join(lines))


# ---------------------------------------------------------------------------------------------------- examples
def examples_list() -> None:
    from onellm_cli._examples import GRANTS, describe, names

    width = max(len(n) for n in names())
    lines = [f"{name:<{width}}  {describe(name)} (grants: {GRANTS.get(name, 'none')})" for name in names()]
    _out("\n".join(lines))
    sys.stderr.write('run one with: onellm run examples/<name> --prompt "<task>" [grant flags]\n')


def examples_show(name: str) -> None:
    from onellm_cli._examples import path_of

    _out(path_of(name).read_text(encoding="utf-8"))
