"""What a run needs before its first turn: the definition, its tools checked against the grants, the grants themselves
(recorded on a new instance, re-applied on a resumed one), the request settings and the typed output."""

from __future__ import annotations

import functools
import marshal
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onellm._public import publish as _publish
from onellm.errors import BadDefinitionError, CapabilityMissingError

if TYPE_CHECKING:
    from onellm.capabilities import Capabilities
    from onellm.definitions import Definition
    from onellm.instances import Instance
    from onellm.messages import CallWarning
    from onellm.providers import ToolDefinition
    from onellm.runtime import RuntimeServices
    from onellm.tools import Tool

__all__ = ["DEFAULT_MAX_ITERATIONS", "AgentSetup", "GrantsMissingError", "load_definition", "recorded_grants"]

DEFAULT_MAX_ITERATIONS = 200
"""The most model turns one run takes when the definition does not say (`maxIterations`)."""


class GrantsMissingError(BadDefinitionError, CapabilityMissingError):
    """An instance recorded the grants it ran with (`capabilitiesRecorded: true`) but its `capabilities` entry is
    missing or malformed: it gets no grants and is not run. Both a `BadDefinitionError` (the file is wrong) and a
    `CapabilityMissingError` (there are no grants to run with)."""


def load_definition(definition: Any) -> tuple[Definition, Path | None, str]:
    """(definition, its folder, how the instance names it) for a path to a `.yaml`, a folder holding `agent.yaml`, or
    a `Definition`.

    Raises:
        BadDefinitionError: the file cannot be read or is not a valid definition.
        TypeError: `definition` is none of those.
    """
    definition_class = definition_type()
    if isinstance(definition, definition_class):
        path = getattr(definition, "_path", None)
        folder = path.parent if isinstance(path, Path) else None
        return definition, folder, str(path) if path is not None else (definition.file or definition.name or "")
    if isinstance(definition, str | os.PathLike):
        loaded = definition_class.load(definition)
        resolved = Path(definition).resolve()
        folder = resolved if resolved.is_dir() else resolved.parent
        return loaded, folder, os.fspath(definition)
    raise TypeError(
        f"definition: expected a path to an agent definition, a folder holding agent.yaml, or a Definition, "
        f"not {type(definition).__name__}"
    )


def recorded_grants(instance: Instance, runtime: Capabilities, *, where: str) -> Capabilities:
    """The grants a resumed instance runs with: the saved summary intersected with the runtime's, never wider.

    A file with neither `capabilities` nor the marker (written before grants were recorded) gets the runtime's. A
    saved shell grant that said "approval" uses the runtime's own approvers when it has some, else the loop gate.

    Raises:
        GrantsMissingError: the marker is there but the summary is missing or malformed (fails closed).
    """
    from onellm.capabilities import Capabilities

    data = instance.capabilities
    if data is None:
        if instance.capabilities_recorded:
            raise GrantsMissingError(
                f"instance {instance.id} recorded its grants (capabilitiesRecorded: true) but has no capabilities "
                "entry; it gets no grants and is not run",
                file=where,
                path="capabilities",
            )
        return runtime
    try:
        saved = Capabilities.from_data(data)
    except BadDefinitionError as exc:
        if not instance.capabilities_recorded:
            return runtime  # an unmarked, unreadable summary narrows nothing and grants nothing
        raise GrantsMissingError(
            f"instance {instance.id} recorded its grants but its capabilities entry is malformed ({exc.detail}); it "
            "gets no grants and is not run",
            file=where,
            path=exc.path or "capabilities",
        ) from None
    only = data.get("tools") if isinstance(data, Mapping) else None
    if only is not None and (not isinstance(only, list) or not all(isinstance(n, str) for n in only)):
        if not instance.capabilities_recorded:
            return runtime
        # A tool limit that cannot be read limits nothing: it would widen the run, so the run gets no grants.
        raise GrantsMissingError(
            f"instance {instance.id} recorded its grants but its tool limit is not a list of tool names; it gets no "
            "grants and is not run",
            file=where,
            path="capabilities.tools",
        )
    shell = saved.shell_grant
    if shell.loop_approval and runtime.shell_grant.approvers and not runtime.shell_grant.loop_approval:
        # "approval" was saved without its approver: a runtime with approvers of its own asks them.
        saved = replace(saved, shell_grant=replace(shell, loop_approval=False))
    return runtime.intersect(saved)


def grants_summary(capabilities: Capabilities) -> dict[str, Any]:
    """The `capabilities` entry written to an instance: the summary without null values (a copy of its own)."""
    global _last_summary
    last = _last_summary
    if last is None or last[0] is not capabilities:
        # Grants are frozen and a runtime hands every run the same object: the summary is made once for it.
        summary = {k: v for k, v in capabilities.to_data().items() if v is not None}
        try:
            # Each copy read back from its marshalled form: one call, where walking the summary takes one per list
            # and mapping in it.
            frozen: bytes | None = marshal.dumps(summary)
        except ValueError:  # a value marshal does not write (none of the summary's own kinds)
            frozen = None
        last = _last_summary = (capabilities, summary, frozen)
    copy: dict[str, Any] = marshal.loads(last[2]) if last[2] is not None else _copied(last[1])
    return copy


_last_summary: tuple[Capabilities, dict[str, Any], bytes | None] | None = None
"""The grants `grants_summary` last summarized, their summary (never handed out: each instance gets a copy) and its
marshalled form."""


def _copied(value: Any) -> Any:
    """A copy of plain data, each mapping and list in it made anew."""
    if type(value) is dict:
        return {k: _copied(v) if type(v) in _CONTAINERS else v for k, v in value.items()}
    return [_copied(v) if type(v) in _CONTAINERS else v for v in value]


_CONTAINERS = frozenset({dict, list})


@dataclass
class AgentSetup:
    """A definition made ready to run under some grants: its tools, their definitions for the model, the settings."""

    definition: Definition
    folder: Path | None
    file: str
    """How errors name the definition (its file, or the instance)."""
    tools: dict[str, Tool[..., Any]]
    tool_defs: list[ToolDefinition]
    settings: dict[str, Any]
    max_iterations: int
    output: Any = None
    """The `output=` type, when given."""
    output_schema: Mapping[str, Any] | None = None
    """The definition's `outputSchema`, when it has one."""
    warnings: list[CallWarning] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        services: RuntimeServices,
        definition: Definition,
        *,
        folder: Path | None,
        file: str,
        capabilities: Capabilities,
        strict: bool,
        output: Any = None,
        max_iterations: int | None = None,
        only_tools: Sequence[str] | None = None,
    ) -> AgentSetup:
        """Check the references against the registered tools and `capabilities`, and gather the request settings.

        Raises:
            BadDefinitionError: (strict) an unknown or ungranted tool, with the file, line and column and the grant to
                add; an `outputSchema` the argument checker cannot enforce.
            CapabilityMissingError: a tool of an optional package that is not installed (also a `BadDefinitionError`).
        """
        from onellm.messages import CallWarning
        from onellm.providers import ReasoningOptions, ToolDefinition
        from onellm.tools import ToolReferenceResolver
        from onellm.tools.builtin.agent import TASK_COMPLETE, task_complete_tool

        warnings = [CallWarning(kind="definition", message=str(w)) for w in definition.warnings]
        resolver = ToolReferenceResolver(services.tools, capabilities, strict=strict)
        position = definition.position if getattr(definition, "_doc", None) is not None else None
        resolved = resolver.resolve(definition.references or [], file=file, position=position)
        warnings.extend(CallWarning(kind="definition", message=w) for w in resolved.warnings)
        tools: dict[str, Tool[..., Any]] = {t.name: t for t in resolved.tools}
        if only_tools is not None:
            allowed = set(only_tools) | {TASK_COMPLETE}
            for name in [n for n in tools if n not in allowed]:
                del tools[name]
                warnings.append(
                    CallWarning(
                        kind="definition",
                        message=f"tool {name!r} was left out: the instance's saved grants limit it to "
                        f"{', '.join(sorted(only_tools)) or 'no tools'}",
                    )
                )
        schema = definition.extra.get("outputSchema")
        if schema is not None and not isinstance(schema, Mapping):
            raise BadDefinitionError("outputSchema must be a JSON Schema (a mapping)", file=file, path="outputSchema")
        if output is not None or schema is not None:
            try:
                tools[TASK_COMPLETE] = task_complete_tool(output if output is not None else schema)
            except TypeError as exc:
                if output is not None:
                    raise
                raise BadDefinitionError(
                    f"outputSchema cannot be used: {exc}", file=file, path="outputSchema"
                ) from None
        settings: dict[str, Any] = {}
        if definition.max_tokens is not None:
            settings["max_output_tokens"] = definition.max_tokens
        if definition.temperature is not None:
            settings["temperature"] = float(definition.temperature)
        if definition.service_tier is not None:
            settings["service_tier"] = definition.service_tier
        thinking = definition.thinking
        if thinking is not None and (thinking.effort is not None or thinking.budget is not None):
            settings["reasoning"] = ReasoningOptions(effort=thinking.effort, budget_tokens=thinking.budget)
        tool_defs = [ToolDefinition(t.name, t.description, t.input_schema) for t in tools.values()]
        if tool_defs:
            settings["tools"] = tool_defs
        limit = max_iterations if max_iterations is not None else definition.max_iterations
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            if max_iterations is not None:
                raise ValueError(f"max_iterations must be a whole number of 1 or more, not {limit!r}")
            # The file's own value (read leniently, with a warning): a definition or instance file to fix.
            at = definition.position(("maxIterations",)) if getattr(definition, "_doc", None) is not None else None
            raise BadDefinitionError(
                f"maxIterations must be a whole number of 1 or more, not {limit!r}",
                file=file,
                line=at[0] if at else None,
                column=at[1] if at else None,
                path="maxIterations",
            )
        return cls(
            definition=definition,
            folder=folder,
            file=file,
            tools=tools,
            tool_defs=tool_defs,
            settings=settings,
            max_iterations=limit or DEFAULT_MAX_ITERATIONS,
            output=output,
            output_schema=schema,
            warnings=warnings,
        )


def kept_setup(
    services: RuntimeServices,
    definition: Definition,
    *,
    folder: Path | None,
    file: str,
    capabilities: Capabilities,
    strict: bool,
    output: Any = None,
    max_iterations: int | None = None,
) -> AgentSetup:
    """`AgentSetup.build`, or the setup an earlier run built from the same definition (unchanged since), the same
    registered tools (the registry forgets what it kept whenever a tool or group is added), equal grants and the same
    options. Only a setup without warnings is kept: a lenient run that dropped a reference checks it again."""
    registry = services.tools
    kept: dict[Any, Any] | None = getattr(registry, "_derived", None)
    key = (
        _setup_key(definition, folder, file, strict, max_iterations, getattr(registry, "installed", None))
        if kept is not None
        else None
    )
    if key is not None:
        assert kept is not None
        entry = kept.get(id(definition))
        if (
            entry is not None
            and entry[0] is definition
            and entry[1] is output
            and entry[2] == key
            and (entry[3] is capabilities or entry[3] == capabilities)  # a runtime hands each run the same grants
            and _tools_unchanged(entry[4])
        ):
            found: AgentSetup = entry[5]
            return found
    setup = AgentSetup.build(
        services,
        definition,
        folder=folder,
        file=file,
        capabilities=capabilities,
        strict=strict,
        output=output,
        max_iterations=max_iterations,
    )
    if key is not None and not setup.warnings:
        assert kept is not None
        if len(kept) >= _KEPT_SETUPS:
            for oldest in list(kept)[:1]:
                kept.pop(oldest, None)
        tools = tuple((t, t.name, t.description, t.input_schema, t.required_grants) for t in setup.tools.values())
        # `build` may have registered a tool it found (`task_complete`), emptying what the registry kept
        kept[id(definition)] = (definition, output, key, capabilities, tools, setup)
    return setup


_KEPT_SETUPS = 64
"""Setups a tool registry keeps, one per definition (the oldest goes first)."""


def _setup_key(
    definition: Definition, folder: Path | None, file: str, strict: bool, max_iterations: int | None, installed: Any
) -> tuple[Any, ...] | None:
    """What `AgentSetup.build` reads from a definition and the options, as values compared with `==` (None when the
    definition is not one a setup is kept for: one with warnings, or references that are not `Reference` objects)."""
    if definition.warnings:
        return None
    references = definition.references
    refs: list[dict[str, Any]] | None = None
    if references is not None:
        refs = []
        reference_type = _reference_type()
        for reference in references:
            if type(reference) is not reference_type:
                return None
            refs.append(reference.to_data())
    schema = definition.extra.get("outputSchema")
    schema_text: bytes | None = None
    if schema is not None:
        import msgspec

        try:
            schema_text = msgspec.json.encode(schema)  # a copy: the mapping may be changed in place
        except (TypeError, msgspec.EncodeError):
            return None
    thinking = definition.thinking
    return (
        refs,
        schema_text,
        definition.max_tokens,
        definition.temperature,
        definition.service_tier,
        None if thinking is None else (thinking.effort, thinking.budget),
        definition.max_iterations,
        folder,
        file,
        strict,
        max_iterations,
        installed,
    )


@functools.cache
def definition_type() -> type[Definition]:
    """`onellm.definitions.Definition`, imported on first use (an import in the function costs a call each run)."""
    from onellm.definitions import Definition

    return Definition


@functools.cache
def _reference_type() -> type:
    """`onellm.definitions.Reference`, imported on first use."""
    from onellm.definitions import Reference

    return Reference


def _tools_unchanged(tools: tuple[tuple[Any, ...], ...]) -> bool:
    """Whether each kept tool still has the name, description, schema and grants its definition was made from."""
    for tool, name, description, schema, grants in tools:
        if (
            tool.name != name
            or tool.description != description
            or tool.input_schema is not schema
            or tool.required_grants != grants
        ):
            return False
    return True


_publish("onellm.agents", GrantsMissingError)
