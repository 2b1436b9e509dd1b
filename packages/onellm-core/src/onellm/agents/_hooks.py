"""Hooks: code the host (or a definition's hook files) runs at eight points of the agent loop.

| Point | What a hook gets | Decisions it can return |
|---|---|---|
| `beforeInference` | `BeforeInference` (the request about to be sent) | `Continue`, `ModifyRequest`, `Block` (the run fails with `HookBlockedError`), `Respond` (answer without calling the model) |
| `afterInference` | `AfterInference` (the answer) | `Continue`, `ModifyMessage`, `Block` (the run fails with `HookBlockedError`) |
| `beforeToolCall` | `BeforeToolCall` (the call and its inputs) | `Continue`, `ModifyInputs`, `Block` (the model reads an error result with the reason), `RequireApproval`, `Respond` (a result without running the tool) |
| `afterToolCall` | `AfterToolCall` (the call and its result) | `Continue`, `ModifyResult`, `Block` (the model reads an error result with the reason) |
| `beforeCompaction` | `BeforeCompaction` | `Continue`, `Block` (skip this compaction) |
| `onMessage`, `onStateChange`, `onCost`, and the host-only `streamEvent` | `OnMessage`, `OnStateChange`, `OnCost`, `OnStreamEvent` | observe only |

A host registers hooks on `Runtime.hooks` (`Hooks`): objects whose methods are named after the points
(`before_tool_call`, `on_cost`, ...; subclass `Hook` to get the others as no-ops), or plain functions with the point
named (`hooks.add(fn, point="beforeToolCall")`, or the decorators `@hooks.before_tool_call`). Sync or async, either
works; returning None means `Continue`.

Hooks run in registration order, host hooks around a definition's (before a step the host's first, after it the
definition's first). An interceptor's modification is what the next hook sees; `Block`, `Respond` and
`RequireApproval` end the chain. **Interceptors fail closed**: one that raises, or returns a decision its point does not
take, blocks the step. **Observers fail open**: a failure is written as an `error` record and the run goes on. Every
modify, block, respond and require-approval is written as a `hook` record. A run with no hooks builds no hook context
and allocates nothing for them.

A definition's `hooks:` entries are loaded through a hook source: `Runtime.hook_source`, else the one an installed
distribution offers in the `onellm.hook_sources` entry-point group (onellm-js offers JavaScript hook files). A definition
that names hook files when there is none fails closed with `CapabilityMissingError` naming onellm-js; in lenient mode an
entry limited to observer points is dropped with a warning instead.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from onellm._public import publish as _publish
from onellm.errors import CapabilityMissingError

if TYPE_CHECKING:
    from onellm.definitions import Definition
    from onellm.instances import Instance
    from onellm.messages import CallWarning, Cost, Message, Part, StreamEvent, ToolCall
    from onellm.providers import ChatRequest
    from onellm.records import Record
    from onellm.runtime import RuntimeServices
    from onellm.tools import Tool, ToolContext, ToolResult

__all__ = [
    "HOOK_POINTS",
    "HOOK_SOURCE_GROUP",
    "INTERCEPTOR_POINTS",
    "OBSERVER_POINTS",
    "AfterInference",
    "AfterToolCall",
    "BeforeCompaction",
    "BeforeInference",
    "BeforeToolCall",
    "Block",
    "Continue",
    "Decision",
    "DefinitionHook",
    "Hook",
    "HookSource",
    "Hooks",
    "ModifyInputs",
    "ModifyMessage",
    "ModifyRequest",
    "ModifyResult",
    "OnCost",
    "OnMessage",
    "OnStateChange",
    "OnStreamEvent",
    "RequireApproval",
    "Respond",
]

INTERCEPTOR_POINTS: Final = ("beforeInference", "afterInference", "beforeToolCall", "afterToolCall", "beforeCompaction")
"""Points whose hooks can change, answer or stop a step; they fail closed."""
OBSERVER_POINTS: Final = ("onMessage", "onStateChange", "onCost", "streamEvent")
"""Points whose hooks only watch; they fail open. `streamEvent` is for host hooks only."""
HOOK_POINTS: Final = INTERCEPTOR_POINTS + OBSERVER_POINTS
"""Every point, in the table's order."""
HOOK_SOURCE_GROUP: Final = "onellm.hook_sources"
"""The entry-point group where an installed distribution offers a hook source (onellm-js: `javascript`)."""

INSIDE_RUN: ContextVar[str | None] = ContextVar("onellm_inside_agent_run", default=None)
"""The instance whose tool or hook is running in this context: a decision on that run from there would wait for the
run to rest, which waits for the tool or hook (refused instead, in `AgentRun`)."""

_METHODS: Final[Mapping[str, str]] = {
    "beforeInference": "before_inference",
    "afterInference": "after_inference",
    "beforeToolCall": "before_tool_call",
    "afterToolCall": "after_tool_call",
    "beforeCompaction": "before_compaction",
    "onMessage": "on_message",
    "onStateChange": "on_state_change",
    "onCost": "on_cost",
    "streamEvent": "on_stream_event",
}
_BY_NAME: Final[Mapping[str, str]] = {**{p: p for p in HOOK_POINTS}, **{m: p for p, m in _METHODS.items()}}

H = TypeVar("H")


# ------------------------------------------------------------------------------------------------------- decisions


@dataclass(frozen=True, slots=True)
class Continue:
    """Go on as if the hook were not there (returning None means the same)."""


@dataclass(frozen=True, slots=True)
class Block:
    """Stop the step: before or after inference the run fails with `HookBlockedError`; around a tool call the model
    reads an error result with the reason; before a compaction the compaction is skipped."""

    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Respond:
    """Answer without doing the step: before inference, the model's answer (`text`, or a whole `message` with tool
    calls); before a tool call, the call's `result` (a `ToolResult`, text, parts or a JSON value) or `text`."""

    text: str | None = None
    message: Message | None = None
    result: Any = None


@dataclass(frozen=True, slots=True)
class ModifyRequest:
    """Change the request before it is sent: any of `system`, `max_output_tokens`, `temperature`, `messages`, or a
    whole new `request`."""

    system: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    messages: list[Message] | None = None
    request: ChatRequest | None = None


@dataclass(frozen=True, slots=True)
class ModifyMessage:
    """Change the model's answer: a whole new `message` (its assistant side and tool calls), or only its `text`."""

    message: Message | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class ModifyInputs:
    """Run the tool call with these arguments instead."""

    inputs: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RequireApproval:
    """Hold the tool call until a person approves it (`AgentRun.approve`), also across a restart."""

    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ModifyResult:
    """Give the model this result instead: a `ToolResult`, text, parts or a JSON value."""

    result: Any


Decision = Continue | Block | Respond | ModifyRequest | ModifyMessage | ModifyInputs | RequireApproval | ModifyResult
"""What an interceptor returns (or None, which is `Continue`)."""

_ALLOWED: Final[Mapping[str, tuple[type, ...]]] = {
    "beforeInference": (ModifyRequest, Block, Respond),
    "afterInference": (ModifyMessage, Block),
    "beforeToolCall": (ModifyInputs, Block, RequireApproval, Respond),
    "afterToolCall": (ModifyResult, Block),
    "beforeCompaction": (Block,),
}
_LABELS: Final[Mapping[type, str]] = {
    ModifyRequest: "modify",
    ModifyMessage: "modify",
    ModifyInputs: "modify",
    ModifyResult: "modify",
    Block: "block",
    Respond: "respond",
    RequireApproval: "requireApproval",
}


# -------------------------------------------------------------------------------------------------------- contexts


@dataclass(slots=True)
class BeforeInference:
    """A model call about to be made."""

    instance: Instance
    """The instance (read it; do not change it)."""
    request: ChatRequest
    """The request as it will be sent."""
    turn: int
    """The model turn's number in this run, from 1."""


@dataclass(slots=True)
class AfterInference:
    """The model's answer, before its tool calls run."""

    instance: Instance
    message: Message
    """The turn's message with the answer (assistant parts and tool calls)."""
    turn: int


@dataclass(slots=True)
class BeforeToolCall:
    """A tool call about to run."""

    instance: Instance
    call: ToolCall
    """The call as the model (or the definition, for an injected call) made it."""
    tool: Tool[..., Any] | None
    """The tool that will run it."""
    inputs: dict[str, Any]
    """The arguments it will run with (a copy: return `ModifyInputs` to change them)."""
    injected: bool
    """The call came from the definition's initial prompts."""


@dataclass(slots=True)
class AfterToolCall:
    """A tool call that ran."""

    instance: Instance
    call: ToolCall
    tool: Tool[..., Any] | None
    inputs: dict[str, Any]
    result: ToolResult
    """What the model will read."""


@dataclass(slots=True)
class BeforeCompaction:
    """A context compaction about to run."""

    instance: Instance
    strategy: str
    """`clearToolResults`, `compact` or `providerNative`."""


@dataclass(slots=True)
class OnMessage:
    """A message entered the instance (a prompt, a delivered message, or a finished turn)."""

    instance: Instance
    message: Message


@dataclass(slots=True)
class OnStateChange:
    """The instance moved to another state."""

    instance: Instance
    previous: str | None
    state: str


@dataclass(slots=True)
class OnCost:
    """A model call or a tool call cost something."""

    instance: Instance
    cost: Cost
    """What the step cost."""
    total: Decimal
    """What the instance has cost so far, this step included."""
    call_id: str | None = None
    """The tool call that charged it; None for a model call."""


@dataclass(slots=True)
class OnStreamEvent:
    """An event of the model's answer as it streams (host hooks only; a run streams its calls while one listens)."""

    instance: Instance
    event: StreamEvent


# ---------------------------------------------------------------------------------------------- host registration


class Hook:
    """A base for hook objects: override the points you handle; the others are left out of the run.

    ```python
    class NoDeletes(Hook):
        def before_tool_call(self, ctx: BeforeToolCall) -> Decision | None:
            if ctx.tool is not None and ctx.tool.name == "remove_file":
                return Block("files are not deleted here")
            return None
    ```
    """

    name: str | None = None
    """How `hook` records name the hook (default: the class name)."""

    def before_inference(self, ctx: BeforeInference) -> Decision | Awaitable[Decision | None] | None:
        return None

    def after_inference(self, ctx: AfterInference) -> Decision | Awaitable[Decision | None] | None:
        return None

    def before_tool_call(self, ctx: BeforeToolCall) -> Decision | Awaitable[Decision | None] | None:
        return None

    def after_tool_call(self, ctx: AfterToolCall) -> Decision | Awaitable[Decision | None] | None:
        return None

    def before_compaction(self, ctx: BeforeCompaction) -> Decision | Awaitable[Decision | None] | None:
        return None

    def on_message(self, ctx: OnMessage) -> Awaitable[None] | None:
        return None

    def on_state_change(self, ctx: OnStateChange) -> Awaitable[None] | None:
        return None

    def on_cost(self, ctx: OnCost) -> Awaitable[None] | None:
        return None

    def on_stream_event(self, ctx: OnStreamEvent) -> Awaitable[None] | None:
        return None


def _point(point: str) -> str:
    found = _BY_NAME.get(point)
    if found is None:
        raise ValueError(f"unknown hook point {point!r}; the points are {', '.join(HOOK_POINTS)}")
    return found


def _name_of(hook: Any) -> str:
    name = getattr(hook, "name", None)
    if isinstance(name, str) and name:
        return name
    if inspect.isfunction(hook) or inspect.ismethod(hook):
        return str(getattr(hook, "__qualname__", hook.__name__))
    return type(hook).__name__


@dataclass(frozen=True, slots=True)
class _HostEntry:
    hook: Any
    """What was registered (the object or the function), for `remove`."""
    fn: Callable[[Any], Any]
    name: str

    async def call(self, ctx: Any) -> Any:
        value = self.fn(ctx)
        if inspect.isawaitable(value):
            value = await value
        return value


class Hooks:
    """The host's hooks (`Runtime.hooks`), by point, in registration order.

    <!-- skip: next "an outline; docs/agents.md runs whole agents" -->

    ```python
    @runtime.hooks.before_tool_call
    async def audit(ctx: BeforeToolCall) -> None:
        log.info("calling %s", ctx.call.tool)

    runtime.hooks.add(NoDeletes())                 # an object: every point it implements
    runtime.hooks.add(on_cost, point="onCost")     # a function: the point it handles
    ```
    """

    def __init__(self) -> None:
        self._points: dict[str, tuple[_HostEntry, ...]] = {}

    def __repr__(self) -> str:
        counts = ", ".join(f"{p}={len(e)}" for p, e in self._points.items() if e)
        return f"Hooks({counts})"

    def __len__(self) -> int:
        return sum(len(e) for e in self._points.values())

    def __bool__(self) -> bool:
        return any(self._points.values())

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        """(point, registered hook) pairs, point by point in the table's order."""
        for point in HOOK_POINTS:
            for entry in self._points.get(point, ()):
                yield point, entry.hook

    def add(self, hook: H, *, point: str | None = None, name: str | None = None) -> H:
        """Register a hook: an object (every point it implements, or only `point`), or a function for `point`.

        Returns the hook, so `add` can decorate.

        Raises:
            TypeError: a function without `point`, or an object that implements no point.
            ValueError: an unknown point.
        """
        label = name or _name_of(hook)
        if point is not None:
            where = _point(point)
            method = getattr(hook, _METHODS[where], None)
            fn = method if callable(method) and not inspect.isroutine(hook) else hook
            if not callable(fn):
                raise TypeError(f"hook {label}: expected a callable for {where}")
            self._put(where, _HostEntry(hook, fn, label))
            return hook
        if inspect.isroutine(hook):
            raise TypeError(
                f"hook {label}: a function needs its point: hooks.add(fn, point='beforeToolCall'), or the decorator "
                "@hooks.before_tool_call"
            )
        found = False
        for where, method_name in _METHODS.items():
            method = getattr(hook, method_name, None)
            if not callable(method):
                continue
            if isinstance(hook, Hook) and getattr(type(hook), method_name, None) is getattr(Hook, method_name):
                continue  # left as the base's no-op
            self._put(where, _HostEntry(hook, method, label))
            found = True
        if not found:
            methods = ", ".join(_METHODS.values())
            raise TypeError(f"hook {label} implements no hook point (methods named {methods})")
        return hook

    def _put(self, point: str, entry: _HostEntry) -> None:
        self._points[point] = (*self._points.get(point, ()), entry)

    def remove(self, hook: Any) -> bool:
        """Unregister a hook from every point it was added to; True when it was registered."""
        removed = False
        for point, entries in list(self._points.items()):
            kept = tuple(e for e in entries if e.hook is not hook)
            if len(kept) != len(entries):
                removed = True
                self._points[point] = kept
        return removed

    def clear(self) -> None:
        """Unregister every hook."""
        self._points.clear()

    def at(self, point: str) -> tuple[Any, ...]:
        """The hooks registered for `point`, in order."""
        return tuple(e.hook for e in self._points.get(_point(point), ()))

    def _entries(self, point: str) -> tuple[_HostEntry, ...]:
        return self._points.get(point, ())

    # the decorators
    def before_inference(self, fn: H) -> H:
        """Register `fn` for `beforeInference` (usable as a decorator)."""
        return self.add(fn, point="beforeInference")

    def after_inference(self, fn: H) -> H:
        """Register `fn` for `afterInference` (usable as a decorator)."""
        return self.add(fn, point="afterInference")

    def before_tool_call(self, fn: H) -> H:
        """Register `fn` for `beforeToolCall` (usable as a decorator)."""
        return self.add(fn, point="beforeToolCall")

    def after_tool_call(self, fn: H) -> H:
        """Register `fn` for `afterToolCall` (usable as a decorator)."""
        return self.add(fn, point="afterToolCall")

    def before_compaction(self, fn: H) -> H:
        """Register `fn` for `beforeCompaction` (usable as a decorator)."""
        return self.add(fn, point="beforeCompaction")

    def on_message(self, fn: H) -> H:
        """Register `fn` for `onMessage` (usable as a decorator)."""
        return self.add(fn, point="onMessage")

    def on_state_change(self, fn: H) -> H:
        """Register `fn` for `onStateChange` (usable as a decorator)."""
        return self.add(fn, point="onStateChange")

    def on_cost(self, fn: H) -> H:
        """Register `fn` for `onCost` (usable as a decorator)."""
        return self.add(fn, point="onCost")

    def on_stream_event(self, fn: H) -> H:
        """Register `fn` for `streamEvent` (usable as a decorator)."""
        return self.add(fn, point="streamEvent")


# ------------------------------------------------------------------------------------------------ definition hooks


class DefinitionHook(Protocol):
    """A hook file a hook source loaded for a definition (onellm-js's `JsHook` is one).

    `call` returns the hook's decision as an object with `action` (`continue`, `modify`, `respond`, `block`,
    `requireApproval`), `reason`, `fields` (the point's fields: `system`, `maxOutputTokens`, `temperature`, `messages`,
    `message`, `text`, `inputs`, `result`) and `failed` (the hook threw or returned something malformed), and never
    raises for the hook's own failure.
    """

    name: str
    points: tuple[str, ...]

    @property
    def observer_only(self) -> bool: ...

    async def call(
        self,
        point: str,
        payload: Any,
        *,
        context: ToolContext | None = None,
        owner: str | None = None,
        fail_closed: bool | None = None,
    ) -> Any: ...


class HookSource(Protocol):
    """Loads a definition's `hooks:` entries (onellm-js's `JsHookSource` is one)."""

    async def load(
        self,
        entries: Sequence[Any],
        *,
        capabilities: Any,
        base: Any = None,
        definition: str | None = None,
    ) -> Sequence[DefinitionHook]: ...


_INSTALLED: list[Any] = []


def installed_hook_source() -> HookSource | None:
    """The hook source an installed distribution offers (`onellm.hook_sources` entry points), made once per process.

    Raises:
        CapabilityMissingError: an entry exists but cannot be loaded.
    """
    if _INSTALLED:
        found: HookSource | None = _INSTALLED[0]
        return found
    from importlib.metadata import entry_points

    source: Any = None
    for entry in entry_points(group=HOOK_SOURCE_GROUP):
        dist = getattr(getattr(entry, "dist", None), "name", None) or "its distribution"
        try:
            loaded = entry.load()
            source = loaded() if inspect.isclass(loaded) or not hasattr(loaded, "load") else loaded
        except Exception as exc:
            raise CapabilityMissingError(
                f"the hook source {entry.name!r} of {dist} could not be loaded ({type(exc).__name__}: {exc}); "
                f"reinstall {dist}"
            ) from exc
        break
    _INSTALLED.append(source)
    return source  # type: ignore[no-any-return]


def _observer_entry(entry: Any) -> bool:
    points = getattr(entry, "points", None)
    return isinstance(points, list | tuple) and bool(points) and all(p in OBSERVER_POINTS for p in points)


async def load_definition_hooks(
    services: RuntimeServices,
    definition: Definition,
    *,
    capabilities: Any,
    base: Any,
    strict: bool,
    owner: str,
    warnings: list[CallWarning],
) -> list[DefinitionHook]:
    """Load a definition's hook files through the runtime's hook source.

    Raises:
        CapabilityMissingError: the definition names hook files and no hook source is there (an entry limited to
            observer points is dropped with a warning instead in lenient mode), or a file the grants do not reach.
        BadDefinitionError: a hook file the source refuses.
    """
    from onellm.messages import CallWarning

    entries = list(definition.hooks or [])
    if not entries:
        return []
    source = getattr(services, "hook_source", None) or installed_hook_source()
    if source is None:
        if not strict:
            kept = [e for e in entries if not _observer_entry(e)]
            warnings.extend(
                CallWarning(
                    kind="hooks",
                    message=f"{owner}: the hook file {entry.file!r} was left out: no hook source is installed "
                    "(JavaScript hooks need onellm-js: pip install onellm-js)",
                )
                for entry in entries
                if _observer_entry(entry)
            )
            entries = kept
            if not entries:
                return []
        files = ", ".join(repr(getattr(e, "file", None)) for e in entries)
        raise CapabilityMissingError(
            f"{owner} names hook files ({files}) but no hook source is installed, so it is not run: JavaScript hooks "
            "need the onellm-js package (pip install onellm-js), or set Runtime.hook_source"
        )
    loaded = await source.load(entries, capabilities=capabilities, base=base, definition=definition.file)
    return list(loaded)


# -------------------------------------------------------------------------------------------------------- running


class _BadDecision(Exception):
    pass


@dataclass(frozen=True, slots=True)
class _DefinitionEntry:
    hook: DefinitionHook
    name: str


class RunHooks:
    """The hooks of one run: the host's around the definition's, per point, with the records they write.

    Only built when the run has at least one hook; each point's tuple is empty when nothing listens there, so the loop
    asks `if hooks.before_tool_call:` before it builds a context.
    """

    __slots__ = (
        "after_inference",
        "after_tool_call",
        "before_compaction",
        "before_inference",
        "before_tool_call",
        "decided_by",
        "on_cost",
        "on_message",
        "on_state_change",
        "on_stream_event",
        "services",
    )

    def __init__(self, services: RuntimeServices, host: Hooks | None, definition: Sequence[DefinitionHook]) -> None:
        self.services = services
        self.decided_by: str | None = None
        """The hook whose `Block`, `Respond` or `RequireApproval` (or failure) ended the last chain."""

        def entries(point: str) -> tuple[Any, ...]:
            own = host._entries(point) if host is not None else ()
            theirs = tuple(_DefinitionEntry(h, h.name) for h in definition if point in h.points)
            if point in ("beforeInference", "beforeToolCall", "beforeCompaction"):
                return own + theirs  # the host's hooks wrap the definition's: theirs run inside
            return theirs + own

        self.before_inference = entries("beforeInference")
        self.after_inference = entries("afterInference")
        self.before_tool_call = entries("beforeToolCall")
        self.after_tool_call = entries("afterToolCall")
        self.before_compaction = entries("beforeCompaction")
        self.on_message = entries("onMessage")
        self.on_state_change = entries("onStateChange")
        self.on_cost = entries("onCost")
        self.on_stream_event = entries("streamEvent")

    @classmethod
    def build(
        cls, services: RuntimeServices, host: Hooks | None, definition: Sequence[DefinitionHook]
    ) -> RunHooks | None:
        """The run's hooks, or None when there are none at all."""
        if not definition and not host:
            return None
        return cls(services, host, definition)

    async def intercept(
        self,
        point: str,
        entries: tuple[Any, ...],
        ctx: Any,
        *,
        instance_id: str | None,
        message_id: str | None,
        tool_context: ToolContext | None = None,
    ) -> Decision | None:
        """Run an interceptor point's hooks in order. Modifications are applied to `ctx` as they come; the first
        `Block`, `Respond` or `RequireApproval` ends the chain and is returned (None: go on with `ctx`)."""
        payload: Any = None
        for entry in entries:
            given: str | None = None
            try:
                if isinstance(entry, _DefinitionEntry):
                    if payload is None:
                        payload = _payload(point, ctx)
                    outcome = await entry.hook.call(
                        point, payload, context=tool_context, owner=instance_id, fail_closed=True
                    )
                    given = getattr(outcome, "reason", None)
                    decision = _from_definition(point, outcome)
                else:
                    token = INSIDE_RUN.set(instance_id)
                    try:
                        decision = await entry.call(ctx)
                    finally:
                        INSIDE_RUN.reset(token)
                    decision = _checked(point, decision)
            except Exception as exc:
                detail = getattr(exc, "detail", None) or str(exc) or type(exc).__name__
                reason = f"hook {entry.name} failed at {point}: {type(exc).__name__}: {detail}"
                if isinstance(exc, _BadDecision):
                    reason = f"hook {entry.name} returned an invalid decision at {point}: {exc}"
                await self._write(
                    _hook_record(instance_id, message_id, point, entry.name, "block", reason),
                    _error_record(instance_id, message_id, exc, f"hook {entry.name} at {point}"),
                )
                self.decided_by = entry.name
                return Block(reason)
            if decision is None or isinstance(decision, Continue):
                continue
            label = _LABELS[type(decision)]
            said: str | None = getattr(decision, "reason", None) or given
            await self._write(_hook_record(instance_id, message_id, point, entry.name, label, said))
            if label == "modify":
                _apply(ctx, decision)
                payload = None
                continue
            self.decided_by = entry.name
            return decision
        return None

    async def observe(
        self,
        point: str,
        entries: tuple[Any, ...],
        ctx: Any,
        *,
        instance_id: str | None,
        message_id: str | None = None,
        tool_context: ToolContext | None = None,
    ) -> None:
        """Run an observer point's hooks; a failure is written as an `error` record and the run goes on."""
        payload: Any = None
        for entry in entries:
            try:
                if isinstance(entry, _DefinitionEntry):
                    if payload is None:
                        payload = _payload(point, ctx)
                    outcome = await entry.hook.call(
                        point, payload, context=tool_context, owner=instance_id, fail_closed=False
                    )
                    if getattr(outcome, "failed", False):
                        raise RuntimeError(getattr(outcome, "reason", None) or "the hook failed")
                else:
                    token = INSIDE_RUN.set(instance_id)
                    try:
                        returned = await entry.call(ctx)
                    finally:
                        INSIDE_RUN.reset(token)
                    if returned is not None and not isinstance(returned, Continue):
                        # A decision here changes nothing: said in a record rather than dropped unseen.
                        raise _BadDecision(f"{point} only observes; the {type(returned).__name__} returned is ignored")
            except Exception as exc:
                await self._write(_error_record(instance_id, message_id, exc, f"hook {entry.name} at {point}"))

    async def _write(self, *records: Record) -> None:
        services = self.services
        if services.recording:
            await services.record(*records)


def _checked(point: str, decision: Any) -> Any:
    """A host hook's decision, refused (`_BadDecision`) when its point does not take it or its contents cannot be
    used; a result it gives is made a `ToolResult` here, so one that cannot be sent blocks the step as a bad decision
    does rather than failing the run later."""
    _check(point, decision)
    if isinstance(decision, ModifyResult):
        return ModifyResult(_result_of(decision.result, "ModifyResult"))
    if isinstance(decision, Respond) and point == "beforeToolCall":
        return Respond(result=_result_of(decision.result if decision.result is not None else decision.text, "Respond"))
    return decision


def _result_of(value: Any, kind: str) -> ToolResult:
    try:
        return as_tool_result(value)
    except (TypeError, ValueError) as exc:
        raise _BadDecision(f"the result of {kind} cannot be sent: {exc}") from exc


def _check(point: str, decision: Any) -> None:
    from onellm.messages import Message
    from onellm.providers import ChatRequest

    if decision is None or isinstance(decision, Continue):
        return
    allowed = _ALLOWED[point]
    if not isinstance(decision, allowed):
        names = ", ".join(["Continue", *(t.__name__ for t in allowed)])
        got = type(decision).__name__
        raise _BadDecision(f"{point} takes {names}, not {got}")
    if isinstance(decision, Block | RequireApproval) and not isinstance(decision.reason, str | None):
        # The reason is saved with a held call and shown to the model: text only.
        raise _BadDecision(f"{type(decision).__name__}.reason takes a str, not {type(decision.reason).__name__}")
    if isinstance(decision, ModifyRequest) and all(
        getattr(decision, f) is None for f in ("system", "max_output_tokens", "temperature", "messages", "request")
    ):
        raise _BadDecision("ModifyRequest changes nothing")
    if isinstance(decision, ModifyMessage) and (decision.message is None) == (decision.text is None):
        raise _BadDecision("ModifyMessage takes a message or a text, one of them")
    if isinstance(decision, Respond):
        if point == "beforeInference" and (decision.message is None) == (decision.text is None):
            raise _BadDecision("Respond before inference takes a message or a text, one of them")
        if point == "beforeToolCall" and decision.message is not None:
            raise _BadDecision("Respond before a tool call takes a result or a text, not a message")
    if isinstance(decision, ModifyInputs):
        if not isinstance(decision.inputs, Mapping) or not all(isinstance(k, str) for k in decision.inputs):
            raise _BadDecision("ModifyInputs takes a mapping of arguments by name")
        where = _not_plain_json(decision.inputs)
        if where is not None:
            raise _BadDecision(f"ModifyInputs: {where}")
    if isinstance(decision, ModifyRequest):
        tokens, temperature = decision.max_output_tokens, decision.temperature
        if tokens is not None and (type(tokens) is not int or tokens < 1):
            raise _BadDecision(f"ModifyRequest.max_output_tokens takes a positive int, not {tokens!r}")
        if temperature is not None and (type(temperature) not in (int, float) or not math.isfinite(temperature)):
            raise _BadDecision(f"ModifyRequest.temperature takes a number, not {temperature!r}")
        if decision.request is not None and not isinstance(decision.request, ChatRequest):
            raise _BadDecision(f"ModifyRequest.request takes a ChatRequest, not {type(decision.request).__name__}")
        if decision.messages is not None and (
            not isinstance(decision.messages, list | tuple)
            or not all(isinstance(m, Message) for m in decision.messages)
        ):
            raise _BadDecision("ModifyRequest.messages takes a list of Message")
        if decision.system is not None and not isinstance(decision.system, str):
            raise _BadDecision(f"ModifyRequest.system takes a str, not {type(decision.system).__name__}")
    if isinstance(decision, ModifyMessage | Respond):
        kind = type(decision).__name__
        if decision.message is not None and not isinstance(decision.message, Message):
            raise _BadDecision(f"{kind}.message takes a Message, not {type(decision.message).__name__}")
        if decision.message is not None:
            _check_message(decision.message, kind)
        if decision.text is not None and not isinstance(decision.text, str):
            raise _BadDecision(f"{kind}.text takes a str, not {type(decision.text).__name__}")


def _check_message(message: Message, kind: str) -> None:
    """A hook's answer is saved as the turn: its parts and its calls must be what an instance file can hold."""
    from onellm.tools import to_parts

    if message.assistant:
        try:
            to_parts(list(message.assistant))
        except TypeError as exc:
            raise _BadDecision(f"{kind}.message: {exc}") from exc
    for i, call in enumerate(message.tool_calls):
        if not isinstance(call.tool, str) or not isinstance(call.id, str | None):
            raise _BadDecision(f"{kind}.message.tool_calls[{i}]: the tool and the id must be strings")
        where = _not_plain_json(call.inputs) if isinstance(call.inputs, Mapping) else "the inputs are not a mapping"
        if where is not None:
            raise _BadDecision(f"{kind}.message.tool_calls[{i}]: {where}")


def _not_plain_json(inputs: Mapping[str, Any]) -> str | None:
    """What keeps arguments from being plain JSON (as a model's are), or None: a held call's arguments are saved in the
    instance file, which takes plain values only, nested at most `MAX_INPUT_DEPTH` levels (as a model's are kept)."""
    from onellm.runtime import MAX_INPUT_DEPTH

    stack: list[tuple[Any, str, int]] = [(v, k, 1) for k, v in inputs.items()]
    while stack:
        value, path, depth = stack.pop()
        if value is None or type(value) in (str, bool, int):
            continue
        if type(value) in (float, Decimal):
            if not math.isfinite(value):
                return f"argument {path!r} is {value!r}, which has no JSON form"
            continue
        if depth >= MAX_INPUT_DEPTH:
            return f"argument {path!r} nests deeper than {MAX_INPUT_DEPTH} levels"
        if isinstance(value, list | tuple):
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value))
        elif isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    return f"argument {path!r} has a key that is not a string ({type(key).__name__})"
                stack.append((item, f"{path}.{key}", depth + 1))
        else:
            return f"argument {path!r} is a {type(value).__name__}, not a JSON value"
    return None


def _apply(ctx: Any, decision: Any) -> None:
    """Apply a modification to the point's context, so the next hook and the loop see it."""
    import copy

    if isinstance(decision, ModifyRequest):
        if decision.request is not None:
            ctx.request = decision.request
        request = ctx.request
        if decision.system is not None:
            request.system = decision.system
        if decision.max_output_tokens is not None:
            request.max_output_tokens = decision.max_output_tokens
        if decision.temperature is not None:
            request.temperature = decision.temperature
        if decision.messages is not None:
            request.messages = list(decision.messages)
    elif isinstance(decision, ModifyMessage):
        if decision.message is not None:
            ctx.message = decision.message
        else:
            from onellm.messages import TextPart

            changed = copy.copy(ctx.message)
            changed.assistant = [TextPart(decision.text or "")]
            changed.tool_calls = [copy.copy(c) for c in ctx.message.tool_calls]
            for call in changed.tool_calls:
                call.after = None
            ctx.message = changed
    elif isinstance(decision, ModifyInputs):
        ctx.inputs = dict(decision.inputs)
    elif isinstance(decision, ModifyResult):
        ctx.result = as_tool_result(decision.result)


def as_tool_result(value: Any) -> ToolResult:
    """A hook's result as a `ToolResult`: kept when it is one; text, parts or a JSON value otherwise."""
    from onellm.tools import ToolResult, to_parts

    if isinstance(value, ToolResult):
        return value.checked()
    return ToolResult(parts=to_parts(value), value=value)


# ------------------------------------------------------------------------------------- definition hooks' JSON form


def _payload(point: str, ctx: Any) -> dict[str, Any]:
    """The JSON snapshot a definition's hook gets for a point."""
    instance_id = ctx.instance.id
    if point == "beforeInference":
        request = ctx.request
        return {
            "instanceId": instance_id,
            "turn": ctx.turn,
            "model": request.model,
            "system": request.system,
            "maxOutputTokens": request.max_output_tokens,
            "temperature": request.temperature,
            "messages": [m.to_data() for m in request.messages],
            "tools": [t.name for t in request.tools],
        }
    if point == "afterInference":
        return {"instanceId": instance_id, "turn": ctx.turn, "message": ctx.message.to_data()}
    if point == "beforeToolCall":
        return {
            "instanceId": instance_id,
            "toolCallId": ctx.call.id,
            "tool": ctx.call.tool,
            "inputs": ctx.inputs,
            "injected": ctx.injected,
        }
    if point == "afterToolCall":
        return {
            "instanceId": instance_id,
            "toolCallId": ctx.call.id,
            "tool": ctx.call.tool,
            "inputs": ctx.inputs,
            "result": _result_data(ctx.result),
        }
    if point == "beforeCompaction":
        return {"instanceId": instance_id, "strategy": ctx.strategy}
    if point == "onMessage":
        return {"instanceId": instance_id, "message": ctx.message.to_data()}
    if point == "onStateChange":
        return {"instanceId": instance_id, "previous": ctx.previous, "state": ctx.state}
    if point == "onCost":
        return {
            "instanceId": instance_id,
            "cost": ctx.cost.total,
            "total": ctx.total,
            "toolCallId": ctx.call_id,
            "lines": [line.to_data() for line in ctx.cost.lines],
        }
    raise ValueError(f"no definition hook handles {point}")


def _result_data(result: ToolResult) -> dict[str, Any]:
    from onellm.messages import JsonPart

    parts = result.parts
    if len(parts) == 1 and isinstance(parts[0], JsonPart):
        return {"json": parts[0].json, "isError": result.is_error}
    return {"text": result.text, "isError": result.is_error}


def _from_definition(point: str, outcome: Any) -> Decision | None:
    """A definition hook's decision (`action`, `reason`, `fields`, `failed`) as one of the decision types.

    Raises:
        _BadDecision: the hook failed (it fails closed), or its fields cannot be read.
    """
    from onellm.messages import JsonPart, Message, TextPart
    from onellm.tools import ToolResult

    action = getattr(outcome, "action", None)
    reason = getattr(outcome, "reason", None)
    if getattr(outcome, "failed", False):
        raise _BadDecision(reason or "the hook failed")
    fields: Mapping[str, Any] = getattr(outcome, "fields", None) or {}
    try:
        if action in (None, "continue"):
            return None
        if action == "block":
            return Block(reason)
        if action == "requireApproval" and point == "beforeToolCall":
            return RequireApproval(reason)
        if action == "modify" and point == "beforeInference":
            messages = fields.get("messages")
            return ModifyRequest(
                system=fields.get("system"),
                max_output_tokens=fields.get("maxOutputTokens"),
                temperature=fields.get("temperature"),
                messages=None
                if messages is None
                else [Message.from_data(m, f"messages[{i}]") for i, m in enumerate(messages)],
            )
        if action == "respond" and point == "beforeInference":
            if "message" in fields:
                return Respond(message=Message.from_data(fields["message"], "message"))
            return Respond(text=str(fields.get("text", "")))
        if action == "modify" and point == "afterInference":
            if "message" in fields:
                return ModifyMessage(message=Message.from_data(fields["message"], "message"))
            return ModifyMessage(text=str(fields.get("text", "")))
        if action == "modify" and point == "beforeToolCall":
            return ModifyInputs(dict(fields["inputs"]))
        if point in ("beforeToolCall", "afterToolCall") and action in ("respond", "modify"):
            raw = fields.get("result")
            if raw is None:
                result = ToolResult(parts=[TextPart(str(fields.get("text", "")))])
            elif "json" in raw:
                result = ToolResult(parts=[JsonPart(json=raw["json"])], is_error=bool(raw.get("isError", False)))
            else:
                result = ToolResult(
                    parts=[TextPart(str(raw.get("text", "")))], is_error=bool(raw.get("isError", False))
                )
            return Respond(result=result) if action == "respond" else ModifyResult(result)
    except _BadDecision:
        raise
    except Exception as exc:
        raise _BadDecision(f"{action!r} at {point}: {exc}") from exc
    raise _BadDecision(f"{point} does not take {action!r}")


def _hook_record(
    instance_id: str | None, message_id: str | None, point: str, hook: str, decision: str, reason: str | None
) -> Record:
    from onellm.records import HookRecord

    return HookRecord(
        instance_id=instance_id, message_id=message_id, point=point, hook=hook, decision=decision, reason=reason
    )


def _error_record(instance_id: str | None, message_id: str | None, error: BaseException, where: str) -> Record:
    from onellm.records import ErrorRecord

    return ErrorRecord(
        instance_id=instance_id,
        message_id=message_id,
        error_type=type(error).__name__,
        message=str(error),
        where=where,
    )


def parts_text(parts: Sequence[Part]) -> str:
    """The text of text parts, joined."""
    from onellm.messages import TextPart

    return "".join(p.text for p in parts if isinstance(p, TextPart))


_publish(
    "onellm.agents",
    AfterInference,
    AfterToolCall,
    BeforeCompaction,
    BeforeInference,
    BeforeToolCall,
    Block,
    Continue,
    DefinitionHook,
    Hook,
    HookSource,
    Hooks,
    ModifyInputs,
    ModifyMessage,
    ModifyRequest,
    ModifyResult,
    OnCost,
    OnMessage,
    OnStateChange,
    OnStreamEvent,
    RequireApproval,
    Respond,
)
