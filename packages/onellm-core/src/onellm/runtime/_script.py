"""Scripted runs: a `.flow` (or an agent definition) run as a script, one model call per user prompt, no tools."""

from __future__ import annotations

import contextlib
import functools
import getpass
import os
import platform
import socket
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, get_args

import anyio
import msgspec

from onellm.errors import BadDefinitionError, RunCancelledError, StorageError
from onellm.messages import CallWarning, Cost, FromPart, Message, Part, TextPart, part_from_data, plain_data
from onellm.providers import ResponseFormat
from onellm.runtime._call import ModelCall
from onellm.runtime._prompt import api_source, new_message_id, runtime_source
from onellm.runtime._results import AskResult, ScriptResult

if TYPE_CHECKING:
    from onellm.definitions import Definition
    from onellm.instances import Instance
    from onellm.records import Record
    from onellm.runtime._services import RuntimeServices
    from onellm.templating import MissingKey

__all__ = [
    "expand_from_part",
    "run_script",
    "template_scope",
    "when_holds",
]

_FALSE = frozenset({"", "false", "0", "no", "off"})


@functools.cache
def _process_identity() -> tuple[str, str, str, str]:
    """The system, machine, host and user names: read once (they do not change while the process runs; reading the
    user name may ask the password database)."""
    try:
        user = getpass.getuser()
    except Exception:  # no user name in this environment
        user = ""
    return platform.system().lower(), platform.machine().lower(), socket.gethostname(), user


def _system_scope() -> dict[str, Any]:
    system, machine, host, user = _process_identity()
    return {
        "os": system,
        "arch": machine,
        "hostname": host,
        "username": user,
        "homeDir": str(Path.home()),  # these three are read every time: the process may change them
        "tempDir": tempfile.gettempdir(),
        "workingDir": os.getcwd(),
    }


def template_scope(services: RuntimeServices, definition: Definition, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The scope a script's templates see (`.inputs`, `.system`, `.time`, `.env`, `.git`, `.swarm`, `.caller`,
    `.invocationMode`, `.turns`)."""
    now = services.clock.now()
    merged = dict(definition.inputs or {})
    merged.update(inputs)
    env = {name: services.environ[name] for name in services.allowed_environment if name in services.environ}
    git = {"branch": "", "commit": "", "root": "", "remote": ""}
    supplied_git = services.scope_values.get("git")
    if isinstance(supplied_git, Mapping):
        git.update(supplied_git)
    local = now.astimezone()
    return {
        "inputs": merged,
        "system": _system_scope(),
        "time": {
            "now": now.isoformat().replace("+00:00", "Z"),
            "today": local.date().isoformat(),
            "timezone": str(local.tzname() or "UTC"),
        },
        "env": env,
        "git": git,
        "swarm": dict(services.scope_values.get("swarm") or {}),
        "caller": services.scope_values.get("caller"),
        "invocationMode": definition.invocation_mode or "autonomous",
        "turns": [],
    }


def expand_from_part(part: FromPart, scope: Mapping[str, Any], file: str, where: str) -> list[Part]:
    """A `from: <path>` part: one part per element of the list the template data holds at that path."""
    value: Any = scope
    for key in part.path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            raise BadDefinitionError(f"from: {part.path} names nothing in the template data", file=file, path=where)
        value = value[key]
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise BadDefinitionError(f"from: {part.path} holds a {type(value).__name__}, not a list", file=file, path=where)
    parts: list[Part] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            parts.append(TextPart(item))
        elif isinstance(item, get_args(Part)):
            parts.append(cast(Part, item))
        elif isinstance(item, Mapping):
            parts.append(part_from_data(item, f"{part.path}[{i}]"))
        else:
            raise BadDefinitionError(
                f"from: {part.path}[{i}] is a {type(item).__name__}; expected text, a part, or a part's data",
                file=file,
                path=where,
            )
    return parts


def when_holds(when: str | None, render: Any) -> bool:
    """Whether a `when` template lets its message or call run: not when it renders empty, `false`, `0`, `no` or
    `off` (trimmed, any case); a `when` that fails to render counts as true."""
    if when is None:
        return True
    try:
        value = render(when, "when")
    except Exception:  # a `when` that fails to render counts as true
        return True
    return value.strip().lower() not in _FALSE


def _load(path: str | os.PathLike[str]) -> tuple[Definition, Path]:
    from onellm.definitions import Definition

    definition = Definition.load(path)
    base = Path(path).resolve()
    return definition, (base if base.is_dir() else base.parent)


async def run_script(
    services: RuntimeServices, path: str | os.PathLike[str], inputs: Mapping[str, Any], *, model: str | None = None
) -> ScriptResult:
    """Run a definition as a script: one run on one instance, holding its lease throughout, one model call per user
    prompt. The `run` records open and close it; a turn that fails leaves the instance in `error`."""
    from onellm.templating import FileEmbedSource
    from onellm.templating import render as render_template

    definition, folder = await anyio.to_thread.run_sync(_load, path)
    model_name = model or definition.model
    if not model_name:
        raise TypeError(f"{path}: the definition names no model; pass model=")
    resolved, provider = services.route(model_name)
    sources: list[Any] = [FileEmbedSource(folder), *(FileEmbedSource(p) for p in services.embed_sources)]
    missing: MissingKey = "error" if definition.missing_key == "error" else "default"
    scope = template_scope(services, definition, inputs)
    warnings: list[CallWarning] = []

    def render(text: str, what: str) -> str:
        return render_template(
            text,
            scope,
            missing_key=missing,
            name=f"{definition.file or path}:{what}",
            embed_sources=sources,
            now=services.clock.now,
        )

    if definition.references:
        warnings.append(
            CallWarning(kind="script", message="a script offers no tools: the definition's tool references are ignored")
        )
    system = render(definition.system_prompt, "systemPrompt") if definition.system_prompt else None
    instance = services.new_instance(resolved, model_name, definition.system_prompt)
    instance.agent_definition = str(path)
    instance.name = definition.name
    instance.inputs = plain_data(dict(scope["inputs"])) or None
    instance.invocation_mode = definition.invocation_mode
    if system is not None:
        instance.rendered_system_prompt = system
    settings: dict[str, Any] = {}
    if definition.max_tokens is not None:
        settings["max_output_tokens"] = definition.max_tokens
    if definition.temperature is not None:
        settings["temperature"] = float(definition.temperature)
    schema = definition.extra.get("outputSchema")
    raw_turns = bool(definition.llm_turn_logs)
    prompts = list(definition.initial_prompts or [])
    user_indexes = [i for i, p in enumerate(prompts) if p.user]
    last_user = user_indexes[-1] if user_indexes else -1
    turns: list[AskResult[Any]] = []
    output: Any = None
    run = _ScriptRun(services, instance, resolved.qualified_name)
    lease = await services.lease(instance)
    try:
        await run.record(run.event("started", "running"))
        for index, prompt in enumerate(prompts):
            if not when_holds(prompt.when, render):
                continue
            if not prompt.user:
                answer = [
                    TextPart(render(p.text, f"initialPrompts[{index}]")) if isinstance(p, TextPart) else p
                    for p in prompt.assistant
                ]
                said = Message(id=new_message_id(), assistant=answer, date_time=services.now(), source=runtime_source())
                instance.messages.append(said)
                if services.recording:
                    from onellm.records import MessageRecord

                    await run.record(MessageRecord(instance_id=instance.id, message_id=said.id, message=said))
                continue
            user: list[Part] = []
            for n, p in enumerate(prompt.user):
                if isinstance(p, TextPart):
                    user.append(TextPart(render(p.text, f"initialPrompts[{index}]")))
                elif isinstance(p, FromPart):
                    user.extend(
                        expand_from_part(p, scope, definition.file or str(path), f"initialPrompts[{index}].user[{n}]")
                    )
                else:
                    user.append(p)
            turn = Message(id=new_message_id(), user=user, date_time=services.now(), source=api_source())
            instance.messages.append(turn)
            call_settings = dict(settings)
            if schema is not None and index == last_user:
                call_settings["response_format"] = ResponseFormat.json_schema(schema, name="output")
            call = ModelCall(
                services,
                resolved,
                provider,
                instance,
                turn,
                system=system,
                settings=call_settings,
                final_state="stopped" if index == last_user else "running",
                requested_model=model_name,
                segment=False,
                owns_instance=False,
                raw_turns=raw_turns,
            )
            result = await call.whole()
            if result.message.tool_calls:
                warnings.append(
                    CallWarning(
                        kind="script", message=f"turn {len(turns)}: tool calls are not run in a script; ignored"
                    )
                )
            turns.append(result)
            entry: dict[str, Any] = {"text": result.text}
            with contextlib.suppress(msgspec.DecodeError):
                entry["json"] = msgspec.json.decode(result.text)
            cast(list[Any], scope["turns"]).append(entry)
            if schema is not None and index == last_user:
                output = entry.get("json")
        cost = Cost()
        for turn_result in turns:
            cost = cost + turn_result.cost
        for turn_result in turns:
            warnings.extend(turn_result.warnings)
        script = ScriptResult(
            text=turns[-1].text if turns else "",
            turns=turns,
            cost=cost,
            instance=instance,
            output=output,
            warnings=warnings,
        )
    except RunCancelledError:
        await run.cancelled(saved=True)
        raise
    except anyio.get_cancelled_exc_class() as cancelled:  # between turns: save what the run has, as a turn would
        raise await run.cancelled(saved=False) from cancelled
    except Exception as error:
        await run.failed(error)
        raise
    else:
        await run.stop(script)
        return script
    finally:
        services.spend.forget(instance)
        if lease is not None:
            with anyio.CancelScope(shield=True), contextlib.suppress(OSError, StorageError):
                await lease.release()


class _ScriptRun:
    """The run records and end states of one scripted run (its turns record their own calls)."""

    def __init__(self, services: RuntimeServices, instance: Instance, model: str) -> None:
        self.services = services
        self.instance = instance
        self.model = model

    def event(self, event: str, state: str | None) -> Record:
        from onellm.records import RunRecord

        return RunRecord(instance_id=self.instance.id, event=event, state=state, model=self.model)

    async def record(self, *records: Record) -> None:
        if self.services.recording:
            await self.services.record(*records)

    async def stop(self, script: ScriptResult) -> None:
        """The last prompt answered: save the instance `stopped` (if the last turn has not) and close the run,
        shielded; a save that fails raises `StorageError` with the script's result."""
        instance = self.instance
        with anyio.CancelScope(shield=True):
            unsaved: StorageError | None = None
            if instance.state != "stopped":
                instance.state = "stopped"
                try:
                    await self.services.save(instance)
                except StorageError as error:
                    unsaved = error
            records = [self.event("stopped", "stopped")]
            if unsaved is not None:
                records.insert(0, _error_record(instance, unsaved, "save"))
            await self.record(*records)
        if unsaved is not None:
            unsaved.result = script
            raise unsaved

    async def cancelled(self, *, saved: bool) -> RunCancelledError:
        """Close a cancelled run: save it `stopped` and `cancelled` unless its turn already did."""
        instance = self.instance
        with anyio.CancelScope(shield=True):
            records: list[Record] = []
            if not saved:
                instance.state = "stopped"
                instance.cancelled = True
                try:
                    await self.services.save(instance)
                except StorageError as error:
                    records.append(_error_record(instance, error, "save"))
            records.append(self.event("cancelled", "stopped"))
            await self.record(*records)
        return RunCancelledError(f"the run of instance {instance.id} was cancelled", instance=instance)

    async def failed(self, error: BaseException) -> None:
        """Close a run that a turn, a template or a cap stopped. A turn that failed saved the instance in `error`
        already, and a save that failed is not tried again; anything else is saved in `error` here."""
        from onellm.instances import InstanceFailure

        instance = self.instance
        with anyio.CancelScope(shield=True):
            records: list[Record] = []
            if instance.state != "error" and not isinstance(error, StorageError):
                instance.state = "error"
                instance.error = InstanceFailure(type=type(error).__name__, message=str(error))
                records.append(_error_record(instance, error, "script"))
                try:
                    await self.services.save(instance)
                except StorageError as failure:
                    error.add_note(f"the instance was not saved: {failure}")
                    records.append(_error_record(instance, failure, "save"))
            records.append(self.event("stopped", instance.state))
            await self.record(*records)


def _error_record(instance: Instance, error: BaseException, where: str) -> Record:
    from onellm.records import ErrorRecord

    return ErrorRecord(instance_id=instance.id, error_type=type(error).__name__, message=str(error), where=where)
