"""Starting, picking up, forking and duplicating agents: what `Runtime.start_agent`, `Runtime.get_agent`,
`Runtime.fork` and `Runtime.duplicate` do, and the verbs on the current runtime (`onellm.run_agent`, ...)."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

from onellm.agents._run import AgentRun, SyncAgentRun, _Opening, _Options
from onellm.agents._setup import AgentSetup, definition_type, grants_summary, kept_setup, load_definition
from onellm.errors import AgentStateError, BadDefinitionError, InstanceNotFoundError
from onellm.messages import plain_data

if TYPE_CHECKING:
    from onellm.agents._result import AgentResult
    from onellm.instances import Instance
    from onellm.runtime import RuntimeServices

__all__ = [
    "AgentDefinition",
    "duplicate_instance",
    "fork_instance",
    "load_agent_run",
    "run_agent",
    "run_agent_sync",
    "start_agent",
    "start_agent_run",
    "start_agent_sync",
]

AgentDefinition = Any
"""A path to an agent definition (`.yaml`), a folder holding `agent.yaml`, or a `Definition`."""

_OPTIONS = frozenset({"strict", "output", "max_iterations", "capabilities", "model"})

# What `RuntimeServices.new_instance` sets on a new instance.
_RUN_KEYS = (
    ("instanceId", "id"),
    ("model", "model"),
    ("requestedModel", "requested_model"),
    ("systemPrompt", "system_prompt"),
    ("state", "state"),
    ("runStartedAt", "run_started_at"),
)


def _options(options: Mapping[str, Any], verb: str) -> _Options:
    if not options:
        return _Options()
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise TypeError(f"{verb}: unknown option(s) {', '.join(unknown)}; it takes {', '.join(sorted(_OPTIONS))}")
    parsed = _Options(**options)
    if not isinstance(parsed.strict, bool):
        raise TypeError("strict: expected True or False")
    if parsed.capabilities is not None:
        from onellm.capabilities import Capabilities

        if not isinstance(parsed.capabilities, Capabilities):
            raise TypeError(f"capabilities: expected Capabilities, not {type(parsed.capabilities).__name__}")
    return parsed


async def start_agent_run(
    services: RuntimeServices,
    definition: AgentDefinition,
    inputs: Mapping[str, Any] | None = None,
    *,
    prompt: Any = None,
    runtime: Any = None,
    **options: Any,
) -> AgentRun[Any]:
    """A new agent instance, ready to run (see `Runtime.start_agent`)."""
    opts = _options(options, "start_agent")
    if inputs is not None and not isinstance(inputs, Mapping):
        raise TypeError(f"inputs: expected a mapping of input names to values, not {type(inputs).__name__}")
    parts = None
    if prompt is not None:
        from onellm.runtime import prompt_parts

        items = [prompt] if isinstance(prompt, str) or not isinstance(prompt, list | tuple) else list(prompt)
        parts = prompt_parts(items, "prompt")
    # A definition read from a file here is a new object each run: its setup would never be asked for again. (A
    # `Definition` is recognised first: `os.PathLike` is an ABC, slower to ask.)
    keep = isinstance(definition, definition_type()) or not isinstance(definition, str | os.PathLike)
    if not keep:
        loaded, folder, name = await anyio.to_thread.run_sync(load_definition, definition)
    else:
        loaded, folder, name = load_definition(definition)
    file = loaded.file or name or "<definition>"
    if parts is None and not any(p.user or p.tool_calls for p in loaded.initial_prompts or []):
        raise BadDefinitionError(
            "nothing to send: the definition has no initial prompt with a user part or tool calls, and no prompt= "
            "was given",
            file=file,
        )
    model_name = opts.model or loaded.model
    if not model_name:
        raise BadDefinitionError("the definition names no model; add `model:` or pass model=", file=file, path="model")
    resolved, _ = services.route(model_name)
    caps = services.capabilities
    if opts.capabilities is not None:
        caps = caps.intersect(opts.capabilities)
    setup = (kept_setup if keep else AgentSetup.build)(
        services,
        loaded,
        folder=folder,
        file=file,
        capabilities=caps,
        strict=opts.strict,
        output=opts.output,
        max_iterations=opts.max_iterations,
    )
    fresh = services.new_instance(resolved, model_name, loaded.system_prompt)
    data = loaded.to_data()
    merged = dict(loaded.inputs or {})
    merged.update(inputs or {})
    data["inputs"] = (plain_data(merged) or None) if merged else None  # no inputs: nothing to make plain
    # The run's own keys over the definition's (what `data.update(fresh.to_data())` gave, without writing the fresh
    # instance out and reading it back).
    run_values: list[tuple[str, Any]] = []
    for key, attr in _RUN_KEYS:
        value = getattr(fresh, attr)
        if value is not None:
            data.pop(key, None)
            run_values.append((attr, value))
    instance = _instance_type().from_data({k: v for k, v in data.items() if v is not None})
    for attr, value in run_values:
        setattr(instance, attr, value)
    instance.agent_definition = name or None
    instance.capabilities = grants_summary(caps)
    instance.capabilities_recorded = True
    return AgentRun(
        services,
        instance,
        runtime=runtime,
        definition=loaded,
        folder=folder,
        opening=_Opening(inputs=merged, prompt=parts),
        options=opts,
        setup=setup,
        capabilities=caps,
    )


async def load_agent_run(
    services: RuntimeServices, instance_id: str, *, runtime: Any = None, **options: Any
) -> AgentRun[Any]:
    """A saved instance as an `AgentRun` (see `Runtime.get_agent`)."""
    from onellm.agents._state import check_instance

    opts = _options(options, "get_agent")
    instance = await services.store.load(instance_id)
    if instance is None:
        raise InstanceNotFoundError(f"no instance {instance_id!r} in {services.store!r}", instance_id=instance_id)
    run: AgentRun[Any] = AgentRun(services, instance, runtime=runtime, options=opts)
    check_instance(instance, run._where)
    return run


async def fork_instance(
    services: RuntimeServices, instance_id: str, *, through: str | None = None, new_id: str | None = None
) -> Instance:
    """Copy a saved instance under a new id, up to and including the message `through` (all of it when None), and
    save the copy (see `Runtime.fork`)."""
    from onellm.agents._state import find_call

    source = await services.store.load(instance_id)
    if source is None:
        raise InstanceNotFoundError(f"no instance {instance_id!r} in {services.store!r}", instance_id=instance_id)
    if through is not None:
        # Ids are unique in any instance a run wrote: one edited to hold an id twice leaves no telling where to cut.
        same = [i for i, m in enumerate(source.messages) if m.id == through]
        if len(same) > 1:
            from onellm.agents._run import _where

            raise BadDefinitionError(
                f"instance {instance_id}: messages[{same[0]}] and messages[{same[1]}] both have the id {through!r}, "
                "so a copy through it could end at either",
                file=_where(services, source),
                path=f"messages[{same[1]}].id",
            )
    try:
        copy = source.fork(new_id, through=through)
    except LookupError:
        raise InstanceNotFoundError(
            f"instance {instance_id} has no message {through!r}", instance_id=instance_id, message_id=through
        ) from None
    # The copy starts stopped: the source's latest run (its failure, its cancellation) is not the copy's.
    copy.error = None
    copy.cancelled = None
    ask = copy.ask_user
    if ask is not None:
        # Kept only while the copy holds the question unanswered (an edited source may name another message or call):
        # otherwise the copy would be an instance no run could resume.
        found = find_call(copy, ask.tool_call_id, ask.message_id) if ask.message_id is not None else None
        if found is None or copy.messages[found[0]].tool_calls[found[1]].result is not None:
            copy.ask_user = None
    if new_id is None:
        await _copy_assets(services, source, copy)
        await services.save(copy)
        return copy
    # A chosen id may name an instance already saved: the copy must not replace it. Held under the new id's lease, so
    # no other runner starts it between the look and the save.
    lease = await services.lease(copy)
    try:
        existing = await services.store.load(new_id)
        if existing is not None:
            raise AgentStateError(
                f"instance {new_id} already exists: a copy of {instance_id} takes an id no instance has",
                instance_id=new_id,
                state=existing.state,
            )
        await _copy_assets(services, source, copy)
        await services.save(copy)
    finally:
        if lease is not None:
            with anyio.CancelScope(shield=True):
                await lease.release()
    return copy


async def _copy_assets(services: RuntimeServices, source: Instance, copy: Instance) -> None:
    """The copy's assets, before the copy is saved: a saved copy never refers to content its store lacks."""
    from onellm.runtime import copy_assets

    store = services.store
    if getattr(store, "volatile", False):
        copy_assets(store, source, copy)  # held in memory: nothing to wait for
    else:
        await anyio.to_thread.run_sync(copy_assets, store, source, copy)


async def duplicate_instance(services: RuntimeServices, instance_id: str, *, new_id: str | None = None) -> Instance:
    """A fork of the whole conversation (see `Runtime.duplicate`)."""
    return await fork_instance(services, instance_id, new_id=new_id)


# ------------------------------------------------------------------------------------------ on the current runtime


async def run_agent(
    definition: AgentDefinition, inputs: Mapping[str, Any] | None = None, *, prompt: Any = None, **options: Any
) -> AgentResult[Any]:
    """Run an agent to rest on the current runtime and return how it ended (see `Runtime.run_agent`)."""
    from onellm.runtime import current_runtime

    return await current_runtime().run_agent(definition, inputs, prompt=prompt, **options)


async def start_agent(
    definition: AgentDefinition, inputs: Mapping[str, Any] | None = None, *, prompt: Any = None, **options: Any
) -> AgentRun[Any]:
    """Start an agent on the current runtime: an `AgentRun` to follow, steer, approve and cancel (see
    `Runtime.start_agent`)."""
    from onellm.runtime import current_runtime

    return await current_runtime().start_agent(definition, inputs, prompt=prompt, **options)


def run_agent_sync(
    definition: AgentDefinition, inputs: Mapping[str, Any] | None = None, *, prompt: Any = None, **options: Any
) -> AgentResult[Any]:
    """Blocking form of `onellm.run_agent`. Not for use inside async code."""
    from onellm.runtime import drive

    return drive(run_agent(definition, inputs, prompt=prompt, **options), "run_agent")


def start_agent_sync(
    definition: AgentDefinition, inputs: Mapping[str, Any] | None = None, *, prompt: Any = None, **options: Any
) -> SyncAgentRun[Any]:
    """Blocking form of `onellm.start_agent`: a `SyncAgentRun`. Not for use inside async code."""
    from onellm.runtime import drive

    return SyncAgentRun(drive(start_agent(definition, inputs, prompt=prompt, **options), "start_agent"))


@functools.cache
def _instance_type() -> type[Instance]:
    """`onellm.instances.Instance`, imported on first use (an import in the function costs a call each run)."""
    from onellm.instances import Instance

    return Instance
