"""Agent definitions (`agent.yaml`) and scripted flows (`*.flow`, with `flow.yaml` metadata beside them)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from onellm.definitions._common import DefinitionWarning, Persisted, Reader, Step, layout, read_source, type_name
from onellm.errors import BadDefinitionError
from onellm.yamlio import load_document

if TYPE_CHECKING:
    from onellm.messages import Message

__all__ = [
    "HOOK_POINTS",
    "ContextStrategy",
    "Definition",
    "FlowMetadata",
    "HookEntry",
    "Reference",
    "ReferenceCheck",
    "Thinking",
]

HOOK_POINTS = (
    "beforeInference",
    "afterInference",
    "beforeToolCall",
    "afterToolCall",
    "beforeCompaction",
    "onMessage",
    "onStateChange",
    "onCost",
)
INVOCATION_MODES = ("interactive", "delegated", "autonomous")
MISSING_KEY_MODES = ("default", "error")
CONTEXT_STRATEGIES = ("clearToolResults", "compact", "providerNative")


@dataclass
class Thinking:
    """Request-side reasoning controls: an effort name and/or a token budget."""

    effort: str | None = None
    budget: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    _keys: tuple[Any, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def read(cls, r: Reader, value: Any, path: Sequence[Step]) -> Thinking:
        d = r.mapping(value, path)
        obj = cls()
        for key, v in d.items():
            if key == "effort":
                obj.effort = r.string(v, [*path, key])
            elif key == "budget":
                obj.budget = r.integer(v, [*path, key], low=0, soft=True)
            else:
                obj.extra[key] = v
        obj._keys = tuple(d)
        return obj

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.effort is not None:
            out["effort"] = self.effort
        if self.budget is not None:
            out["budget"] = self.budget
        out.update(self.extra)
        return layout(out, self._keys)


@dataclass
class Reference:
    """A tool source the agent would like: a `routine` (path or URI, optionally some of its `tools`), a `swarm`, or
    `tools` alone (tools the host registered on the runtime, by name).

    Loading never grants anything: the runtime's grants decide whether a reference is usable.
    """

    routine: str | None = None
    swarm: str | None = None
    tools: list[str] | None = None
    """The tool names to take; None means all of them, an empty list none."""
    required: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    _keys: tuple[Any, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def source(self) -> str:
        """The routine or swarm this reference names."""
        return self.routine if self.routine is not None else self.swarm or ""

    @property
    def label(self) -> str:
        """The entry as a message names it: its routine or swarm, quoted, or the tools a tools-only entry lists."""
        if self.routine is not None or self.swarm is not None:
            return repr(self.source)
        names = ", ".join(repr(t) for t in self.tools or [])
        return f"tools {names}" if names else "an empty tools list"

    @classmethod
    def read(cls, r: Reader, value: Any, path: Sequence[Step]) -> Reference:
        d = r.mapping(value, path)
        obj = cls()
        for key, v in d.items():
            p = [*path, key]
            if key == "routine":
                obj.routine = r.string(v, p)
            elif key == "swarm":
                obj.swarm = r.string(v, p)
            elif key == "tools":
                obj.tools = r.strings(v, p)
            elif key == "required":
                obj.required = r.boolean(v, p)
            else:
                obj.extra[key] = v
        if obj.routine is not None and obj.swarm is not None:
            raise r.error("a reference names either a routine or a swarm, not both", path)
        if obj.routine is None and obj.swarm is None and obj.tools is None:
            # `tools` alone names tools the host registered on the runtime (the getting-started agent does this)
            raise r.error("a reference needs a routine, a swarm or a list of tools", path)
        if obj.swarm is not None and obj.tools is not None:
            raise r.error("tools can only narrow a routine; a swarm gives every tool", [*path, "tools"])
        obj._keys = tuple(d)
        return obj

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.routine is not None:
            out["routine"] = self.routine
        if self.swarm is not None:
            out["swarm"] = self.swarm
        if self.tools is not None:
            out["tools"] = list(self.tools)
        if self.required is not None:
            out["required"] = self.required
        out.update(self.extra)
        return layout(out, self._keys)


@dataclass
class HookEntry:
    """A hook file (relative to the definition) and the points it handles (None: every point the file handles)."""

    file: str | None = None
    points: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    _keys: tuple[Any, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def read(cls, r: Reader, value: Any, path: Sequence[Step]) -> HookEntry:
        d = r.mapping(value, path)
        obj = cls()
        for key, v in d.items():
            p = [*path, key]
            if key == "file":
                obj.file = r.string(v, p)
            elif key == "points":
                obj.points = r.strings(v, p)
                points: list[str] = obj.points or []
                for i, point in enumerate(points):
                    if point not in HOOK_POINTS:
                        r.refuse(f"unknown hook point {point!r}; the points are {', '.join(HOOK_POINTS)}", [*p, i])
            else:
                obj.extra[key] = v
        obj._keys = tuple(d)
        return obj

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.file is not None:
            out["file"] = self.file
        if self.points is not None:
            out["points"] = list(self.points)
        out.update(self.extra)
        return layout(out, self._keys)


@dataclass
class ContextStrategy:
    """How a long run stays inside the model's window: `clearToolResults`, `compact` or `providerNative`."""

    type: str | None = None
    trigger_tokens: int | None = None
    trigger_percent: int | Decimal | None = None
    """Percent of the model's context window (default 70 when neither trigger is set)."""
    keep_last: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    _short: bool = field(default=False, repr=False, compare=False)
    _keys: tuple[Any, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def read(cls, r: Reader, value: Any, path: Sequence[Step]) -> ContextStrategy:
        if isinstance(value, str):
            r.one_of(value, path, CONTEXT_STRATEGIES, soft=True)
            obj = cls(type=value)
            obj._short = True
            return obj
        d = r.mapping(value, path)
        obj = cls()
        for key, v in d.items():
            p = [*path, key]
            if key == "type":
                obj.type = r.one_of(v, p, CONTEXT_STRATEGIES, soft=True)
            elif key == "triggerTokens":
                obj.trigger_tokens = r.integer(v, p, low=1, soft=True)
            elif key == "triggerPercent":
                obj.trigger_percent = r.number(v, p, low=1, high=100, soft=True)
            elif key == "keepLast":
                obj.keep_last = r.integer(v, p, low=0, soft=True)
            else:
                obj.extra[key] = v
        if obj.type is None:
            raise r.error(f"a context strategy needs a type ({', '.join(CONTEXT_STRATEGIES)})", path)
        if obj.trigger_tokens is not None and obj.trigger_percent is not None:
            raise r.error("give triggerTokens or triggerPercent, not both", [*path, "triggerPercent"])
        obj._keys = tuple(d)
        return obj

    def to_data(self) -> str | dict[str, Any]:
        simple = self.trigger_tokens is None and self.trigger_percent is None and self.keep_last is None
        if self._short and simple and not self.extra and self.type is not None:
            return self.type
        out: dict[str, Any] = {}
        if self.type is not None:
            out["type"] = self.type
        if self.trigger_tokens is not None:
            out["triggerTokens"] = self.trigger_tokens
        if self.trigger_percent is not None:
            out["triggerPercent"] = self.trigger_percent
        if self.keep_last is not None:
            out["keepLast"] = self.keep_last
        out.update(self.extra)
        return layout(out, self._keys)


ReferenceCheck = Callable[[Reference], "str | None"]
"""Asked once per reference while loading: returns why the runtime refuses it, or None when it is granted."""

_AGENT_KEYS = {
    "name": "name",
    "description": "description",
    "model": "model",
    "serviceTier": "service_tier",
    "thinking": "thinking",
    "temperature": "temperature",
    "maxIterations": "max_iterations",
    "maxTokens": "max_tokens",
    "systemPrompt": "system_prompt",
    "references": "references",
    "workingDirectory": "working_directory",
    "initialPrompts": "initial_prompts",
    "inputs": "inputs",
    "headers": "headers",
    "invocationMode": "invocation_mode",
    "llmTurnLogs": "llm_turn_logs",
    "missingKey": "missing_key",
    "hooks": "hooks",
    "contextStrategy": "context_strategy",
}


@dataclass(eq=False)
class Definition(Persisted):
    """An agent definition or a flow: every key of the format, unknown keys in `extra`.

    Load with `Definition.load(path)` or `Definition.loads(text)`; write with `dumps()` / `save()`. A definition
    saved without changes is the loaded text, byte for byte.
    """

    name: str | None = None
    description: str | None = None
    model: str | None = None
    service_tier: str | None = None
    thinking: Thinking | None = None
    temperature: int | Decimal | None = None
    max_iterations: int | None = None
    max_tokens: int | None = None
    system_prompt: str | None = None
    references: list[Reference] | None = None
    working_directory: str | None = None
    initial_prompts: list[Message] | None = None
    inputs: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    invocation_mode: str | None = None
    llm_turn_logs: bool | None = None
    missing_key: str | None = None
    hooks: list[HookEntry] | None = None
    context_strategy: ContextStrategy | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Top-level keys this format does not describe, kept and written back."""
    kind: Literal["agent", "flow"] = "agent"
    """`flow` for a `.flow` file (run as a script by default), else `agent`."""
    metadata: FlowMetadata | None = None
    """A flow's `flow.yaml`, when there is one beside it."""
    warnings: list[DefinitionWarning] = field(default_factory=list)
    """What a lenient load left out, and notes such as references in a flow."""
    file: str | None = None
    _keys: tuple[Any, ...] | None = field(default=None, init=False, repr=False, compare=False)
    _dropped: dict[str, list[tuple[int, Any]]] = field(default_factory=dict, repr=False)
    _dropped_values: dict[str, Any] = field(default_factory=dict, repr=False)
    _doc: Any = field(default=None, init=False, repr=False, compare=False)
    _snapshot: Any = field(default=None, init=False, repr=False, compare=False)
    _path: Path | None = field(default=None, init=False, repr=False, compare=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Definition):
            return NotImplemented
        return self.kind == other.kind and self.to_data() == other.to_data()

    __hash__ = None  # type: ignore[assignment]

    # -- loading ---------------------------------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        strict: bool = True,
        check_reference: ReferenceCheck | None = None,
    ) -> Definition:
        """Read an agent definition (`agent.yaml`, a directory holding one, or any `.yaml`) or a `.flow` file.

        `strict` (the default) fails on a refused reference, an invalid `missingKey`, a hook without a `file`, an
        unknown hook point, a value out of its range (`maxTokens: 0`) and an `invocationMode` or context strategy this
        version does not know. Lenient loading records each in `warnings` with its position: it leaves the first three
        out of what the runtime uses (they stay in the file) and keeps the others as written. A value of the wrong
        type fails in both modes. `check_reference` is how the runtime says
        which references its grants allow; without it references are not checked here.

        Raises:
            BadDefinitionError: with the file and the 1-based line and column of the offending node.
        """
        text, file, resolved = read_source(path, default_name="agent.yaml")
        kind: Literal["agent", "flow"] = "flow" if resolved.suffix == ".flow" else "agent"
        definition = cls._read(text, file=file, kind=kind, strict=strict, check_reference=check_reference)
        definition._path = resolved
        if kind == "flow":
            beside = resolved.parent / "flow.yaml"
            if beside.is_file():
                definition.metadata = FlowMetadata.load(beside)
        return definition

    @classmethod
    def loads(
        cls,
        text: str | bytes,
        *,
        file: str | None = None,
        kind: Literal["agent", "flow"] | None = None,
        strict: bool = True,
        check_reference: ReferenceCheck | None = None,
    ) -> Definition:
        """Read a definition from text. `file` names it in errors; a name ending in `.flow` makes it a flow."""
        if kind is None:
            kind = "flow" if file is not None and file.endswith(".flow") else "agent"
        return cls._read(text, file=file, kind=kind, strict=strict, check_reference=check_reference)

    @classmethod
    def _read(
        cls,
        text: str | bytes,
        *,
        file: str | None,
        kind: Literal["agent", "flow"],
        strict: bool,
        check_reference: ReferenceCheck | None,
    ) -> Definition:
        doc = load_document(text, file=file)
        obj = cls._build(doc.plain, Reader(doc, file=file, strict=strict), kind, check_reference)
        obj._attach(doc, None)
        return obj

    @classmethod
    def from_data(
        cls,
        data: Mapping[str, Any],
        *,
        kind: Literal["agent", "flow"] = "agent",
        strict: bool = True,
        check_reference: ReferenceCheck | None = None,
    ) -> Definition:
        """Read a definition from plain data (a parsed mapping, from JSON for example). Errors name the key path."""
        return cls._build(data, Reader(None, file=None, strict=strict), kind, check_reference)

    @classmethod
    def _build(
        cls, data: Any, r: Reader, kind: Literal["agent", "flow"], check_reference: ReferenceCheck | None
    ) -> Definition:
        d = r.mapping({} if data is None else data, [])
        obj = cls(kind=kind, file=r.file)
        for key, value in d.items():
            attr = _AGENT_KEYS.get(key) if isinstance(key, str) else None
            if attr is None:
                obj.extra[key] = value
                continue
            p: list[Step] = [key]
            if key in ("name", "description", "model", "serviceTier", "systemPrompt", "workingDirectory"):
                setattr(obj, attr, r.string(value, p))
            elif key == "thinking":
                obj.thinking = None if value is None else Thinking.read(r, value, p)
            # Ranges and names the seeds accept in lenient loading: kept, with a warning (strict loading refuses).
            elif key == "temperature":
                obj.temperature = r.number(value, p, low=0, soft=True)
            elif key == "maxIterations":
                obj.max_iterations = r.integer(value, p, low=1, soft=True)
            elif key == "maxTokens":
                obj.max_tokens = r.integer(value, p, low=1, soft=True)
            elif key == "references":
                obj._read_references(r, value, check_reference)
            elif key == "initialPrompts":
                obj.initial_prompts = _read_prompts(r, value)
            elif key == "inputs":
                obj.inputs = None if value is None else r.mapping(value, p)
            elif key == "headers":
                obj.headers = None if value is None else _read_headers(r, value)
            elif key == "invocationMode":
                obj.invocation_mode = r.one_of(value, p, INVOCATION_MODES, soft=True)
            elif key == "llmTurnLogs":
                obj.llm_turn_logs = r.boolean(value, p)
            elif key == "missingKey":
                obj._read_missing_key(r, value)
            elif key == "hooks":
                obj._read_hooks(r, value)
            elif key == "contextStrategy":
                obj.context_strategy = None if value is None else ContextStrategy.read(r, value, p)
        obj._keys = tuple(d)
        obj.warnings = r.warnings
        return obj

    def _read_references(self, r: Reader, value: Any, check: ReferenceCheck | None) -> None:
        if value is None:
            return
        items = r.sequence(value, ["references"])
        kept: list[Reference] = []
        for i, item in enumerate(items):
            path: list[Step] = ["references", i]
            ref = Reference.read(r, item, path)
            if self.kind == "flow":
                kept.append(ref)
                continue
            reason = check(ref) if check is not None else None
            if reason is not None:
                r.refuse(f"the reference to {ref.label} is not granted: {reason}", path)
                self._dropped.setdefault("references", []).append((i, item))
                continue
            kept.append(ref)
        if self.kind == "flow" and kept:
            r.warn("references in a flow are ignored: a flow runs its prompts without tools", ["references"])
        self.references = kept

    def _read_missing_key(self, r: Reader, value: Any) -> None:
        if value is None:
            return
        if type(value) is str and value in MISSING_KEY_MODES:
            self.missing_key = value
            return
        r.refuse(f"missingKey must be one of {', '.join(MISSING_KEY_MODES)}; found {value!r}", ["missingKey"])
        self._dropped_values["missingKey"] = value

    def _read_hooks(self, r: Reader, value: Any) -> None:
        if value is None:
            return
        items = r.sequence(value, ["hooks"])
        kept: list[HookEntry] = []
        for i, item in enumerate(items):
            hook = HookEntry.read(r, item, ["hooks", i])
            if not hook.file:
                r.refuse("a hook entry needs a file", ["hooks", i])
                self._dropped.setdefault("hooks", []).append((i, item))
                continue
            kept.append(hook)
        self.hooks = kept

    # -- writing ---------------------------------------------------------------------------------------------------

    def to_data(self) -> dict[str, Any]:
        """The definition as plain data, keys in the order they were read, unknown keys kept."""
        out: dict[str, Any] = {}
        simple = {
            "name": self.name,
            "description": self.description,
            "model": self.model,
            "serviceTier": self.service_tier,
        }
        out.update({key: v for key, v in simple.items() if v is not None})
        if self.thinking is not None:
            out["thinking"] = self.thinking.to_data()
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.max_iterations is not None:
            out["maxIterations"] = self.max_iterations
        if self.max_tokens is not None:
            out["maxTokens"] = self.max_tokens
        if self.system_prompt is not None:
            out["systemPrompt"] = self.system_prompt
        refs = self._with_dropped(
            "references", None if self.references is None else [x.to_data() for x in self.references]
        )
        if refs is not None:
            out["references"] = refs
        if self.working_directory is not None:
            out["workingDirectory"] = self.working_directory
        if self.initial_prompts is not None:
            out["initialPrompts"] = [m.to_data() for m in self.initial_prompts]
        if self.inputs is not None:
            out["inputs"] = self.inputs
        if self.headers is not None:
            out["headers"] = self.headers
        if self.invocation_mode is not None:
            out["invocationMode"] = self.invocation_mode
        if self.llm_turn_logs is not None:
            out["llmTurnLogs"] = self.llm_turn_logs
        missing = self.missing_key if self.missing_key is not None else self._dropped_values.get("missingKey")
        if missing is not None:
            out["missingKey"] = missing
        hooks = self._with_dropped("hooks", None if self.hooks is None else [h.to_data() for h in self.hooks])
        if hooks is not None:
            out["hooks"] = hooks
        if self.context_strategy is not None:
            out["contextStrategy"] = self.context_strategy.to_data()
        out.update(self.extra)
        return layout(out, self._keys)

    def _with_dropped(self, key: str, items: list[Any] | None) -> list[Any] | None:
        """A list with the entries a lenient load left out put back where they were, so saving never loses them."""
        dropped = self._dropped.get(key)
        if not dropped:
            return items
        result = list(items or [])
        for index, raw in dropped:
            result.insert(min(index, len(result)), raw)
        return result


def _read_prompts(r: Reader, value: Any) -> list[Message] | None:
    if value is None:
        return None
    from onellm.messages import Message

    items = r.sequence(value, ["initialPrompts"])
    prompts: list[Message] = []
    for i, item in enumerate(items):
        r.mapping(item, ["initialPrompts", i])
        try:
            prompts.append(Message.from_data(item, f"initialPrompts[{i}]"))
        except BadDefinitionError as exc:
            raise r.located(exc) from None
    return prompts


def _read_headers(r: Reader, value: Any) -> dict[str, str]:
    d = r.mapping(value, ["headers"])
    for key, v in d.items():
        if type(key) is not str:
            raise r.error("a header name must be a string", ["headers", key], key=True)
        if type(v) is not str:
            raise r.error(f"a header value must be a string (a template), found {type_name(v)}", ["headers", key])
    return d


@dataclass(eq=False)
class FlowMetadata(Persisted):
    """`flow.yaml` beside a flow: `name`, `description`, `version`, and any other keys (kept whole in `other`)."""

    name: str | None = None
    description: str | None = None
    version: Any = None
    other: dict[str, Any] = field(default_factory=dict)
    """Every other key (version history, input examples, rubrics, ...), not interpreted."""
    file: str | None = None
    _keys: tuple[Any, ...] | None = field(default=None, init=False, repr=False, compare=False)
    _doc: Any = field(default=None, init=False, repr=False, compare=False)
    _snapshot: Any = field(default=None, init=False, repr=False, compare=False)
    _path: Path | None = field(default=None, init=False, repr=False, compare=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FlowMetadata):
            return NotImplemented
        return self.to_data() == other.to_data()

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> FlowMetadata:
        """Read a `flow.yaml` (or the one in a directory)."""
        text, file, resolved = read_source(path, default_name="flow.yaml")
        meta = cls.loads(text, file=file)
        meta._path = resolved
        return meta

    @classmethod
    def loads(cls, text: str | bytes, *, file: str | None = None) -> FlowMetadata:
        doc = load_document(text, file=file)
        r = Reader(doc, file=file, strict=True)
        d = r.mapping({} if doc.plain is None else doc.plain, [])
        meta = cls(file=file)
        for key, value in d.items():
            if key == "name":
                meta.name = r.string(value, [key])
            elif key == "description":
                meta.description = r.string(value, [key])
            elif key == "version":
                if isinstance(value, (dict, list)):
                    raise r.error("a version is a string or a number", [key])
                meta.version = value
            else:
                meta.other[key] = value
        meta._keys = tuple(d)
        meta._attach(doc, None)
        return meta

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.name is not None:
            out["name"] = self.name
        if self.description is not None:
            out["description"] = self.description
        if self.version is not None:
            out["version"] = self.version
        out.update(self.other)
        return layout(out, self._keys)
