"""Hook files: JavaScript modules a definition names in `hooks:`, run at the agent loop's hook points.

A hook file exports one function per point it handles (`beforeInference`, `afterInference`, `beforeToolCall`,
`afterToolCall`, `beforeCompaction`, `onMessage`, `onStateChange`, `onCost`). Each is called with a JSON snapshot of
the point's payload and `ctx`; an optional `export const hook = { requires: [...] }` declares what `ctx` may use
(without it, nothing).

An interceptor returns nothing (continue) or `{ action, reason?, ... }`:

| Point | Actions and fields |
|---|---|
| `beforeInference` | `modify` with `system`, `maxOutputTokens`, `temperature`, `messages`; `respond` with `message` or `text`; `block` |
| `afterInference` | `modify` with `message` or `text`; `block` |
| `beforeToolCall` | `modify` with `inputs`; `respond` with `result` or `text`; `requireApproval`; `block` |
| `afterToolCall` | `modify` with `result` (`{ text }` or `{ json }`, optional `isError`) or `text`; `block` |
| `beforeCompaction` | `block` |

Interceptors fail closed: a throw, a limit, an unknown action or a decision of the wrong shape blocks the step.
Observers (`onMessage`, `onStateChange`, `onCost`) fail open: a failure is reported and the run goes on. Every
modify, block, respond, requireApproval and failure is meant to be recorded (`HookDecision.to_record`).

`JsHookSource.load` reads a definition's hook files through the run's read grant (the same roots, link resolution and
protected names as `read_file`): a file outside them is a `CapabilityMissingError` that names the path as the
definition gave it and shows none of the file. `JsHookSource.load_file` takes a path the host chose and reads it as the
host.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final

import msgspec

from onellm.errors import BadDefinitionError
from onellm_js._errors import JsSandboxError
from onellm_js._host import CAPABILITY_GRANTS
from onellm_js._lexer import LexError, Positions, tokenize
from onellm_js._limiter import JsSlot
from onellm_js._options import JsSandboxOptions
from onellm_js._sandbox import JsSandbox
from onellm_js._source import JsSource

if TYPE_CHECKING:
    from onellm.capabilities import Capabilities
    from onellm.messages import CostLine
    from onellm.records import Record
    from onellm.tools import ToolContext

__all__ = [
    "HOOK_POINTS",
    "INTERCEPTOR_POINTS",
    "OBSERVER_POINTS",
    "HookDecision",
    "JsHook",
    "JsHookSource",
]

INTERCEPTOR_POINTS: Final = ("beforeInference", "afterInference", "beforeToolCall", "afterToolCall", "beforeCompaction")
"""Points whose hooks can change, answer or stop a step; they fail closed."""
OBSERVER_POINTS: Final = ("onMessage", "onStateChange", "onCost")
"""Points whose hooks only watch; they fail open."""
HOOK_POINTS: Final = INTERCEPTOR_POINTS + OBSERVER_POINTS

# point -> action -> (the fields it may carry, the groups of which exactly one field is required)
_ACTIONS: Final[dict[str, dict[str, tuple[frozenset[str], tuple[frozenset[str], ...]]]]] = {
    "beforeInference": {
        "modify": (frozenset({"system", "maxOutputTokens", "temperature", "messages"}), ()),
        "respond": (frozenset({"message", "text"}), (frozenset({"message", "text"}),)),
        "block": (frozenset(), ()),
    },
    "afterInference": {
        "modify": (frozenset({"message", "text"}), (frozenset({"message", "text"}),)),
        "block": (frozenset(), ()),
    },
    "beforeToolCall": {
        "modify": (frozenset({"inputs"}), (frozenset({"inputs"}),)),
        "respond": (frozenset({"result", "text"}), (frozenset({"result", "text"}),)),
        "requireApproval": (frozenset(), ()),
        "block": (frozenset(), ()),
    },
    "afterToolCall": {
        "modify": (frozenset({"result", "text"}), (frozenset({"result", "text"}),)),
        "block": (frozenset(), ()),
    },
    "beforeCompaction": {"block": (frozenset(), ())},
}


@dataclass(frozen=True, slots=True)
class HookDecision:
    """What one hook decided at one point, checked against the point's table."""

    point: str
    """The hook point."""
    hook: str
    """The hook file, as the definition named it."""
    action: str
    """`continue`, `modify`, `respond`, `block` or `requireApproval`."""
    reason: str | None = None
    """The hook's reason, or why a failure blocked the step."""
    fields: dict[str, Any] = field(default_factory=dict)
    """The decision's fields (`system`, `maxOutputTokens`, `temperature`, `messages`, `message`, `text`, `inputs`,
    `result`), as the hook returned them."""
    failed: bool = False
    """The hook failed (threw, hit a limit, returned a decision of the wrong shape). For an interceptor that failed
    closed, `action` is `block`; for one that failed open, `continue`."""
    error: JsSandboxError | None = None
    """The sandbox failure, when the hook threw or hit a limit."""
    cost_lines: list[CostLine] = field(default_factory=list)
    """What the hook added with `ctx.addCost`."""
    logs: list[str] = field(default_factory=list)
    """What the hook wrote with `ctx.log`."""

    @property
    def recorded(self) -> bool:
        """Whether this decision is one a run records (anything but a plain continue)."""
        return self.failed or self.action != "continue"

    def to_record(self, *, instance_id: str | None = None, message_id: str | None = None) -> Record | None:
        """The record to write: a `hook` record for a modify, respond, block or requireApproval (a failed interceptor
        is a block with the failure as the reason), an `error` record for an observer that failed open, None for a
        plain continue."""
        from onellm.records import ErrorRecord, HookRecord

        if self.action != "continue":
            return HookRecord(
                instance_id=instance_id,
                message_id=message_id,
                point=self.point,
                hook=self.hook,
                decision=self.action,
                reason=self.reason,
            )
        if self.failed:
            return ErrorRecord(
                instance_id=instance_id,
                message_id=message_id,
                error_type="hookFailed",
                message=self.reason,
                where=f"hook {self.hook} at {self.point}",
            )
        return None


class _BadDecision(Exception):
    pass


def _check_fields(point: str, action: str, value: Mapping[str, Any]) -> dict[str, Any]:
    allowed, exactly_one = _ACTIONS[point][action]
    fields = {k: v for k, v in value.items() if k not in ("action", "reason")}
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise _BadDecision(f"{action!r} at {point} does not take {unknown[0]!r}")
    for group in exactly_one:
        present = [k for k in group if k in fields]
        if len(present) != 1:
            raise _BadDecision(f"{action!r} at {point} needs exactly one of {', '.join(sorted(group))}")
    if action == "modify" and not fields:
        raise _BadDecision(f"'modify' at {point} changes nothing")
    for key, item in fields.items():
        if key in ("system", "text") and not isinstance(item, str):
            raise _BadDecision(f"{key} must be a string")
        if key == "maxOutputTokens" and (isinstance(item, bool) or not isinstance(item, int) or item < 1):
            raise _BadDecision("maxOutputTokens must be a positive integer")
        if key == "temperature" and (
            isinstance(item, bool) or not isinstance(item, int | float) or not math.isfinite(item) or not 0 <= item <= 2
        ):
            raise _BadDecision("temperature must be a number from 0 to 2")
        if key == "messages" and (not isinstance(item, list) or not all(isinstance(m, dict) for m in item)):
            raise _BadDecision("messages must be a list of message objects")
        if key in ("message", "inputs") and not isinstance(item, dict):
            raise _BadDecision(f"{key} must be an object")
        if key == "result":
            if not isinstance(item, dict) or set(item) - {"text", "json", "isError"}:
                raise _BadDecision("result must be { text } or { json }, with an optional isError")
            if ("text" in item) == ("json" in item):
                raise _BadDecision("result must have exactly one of text and json")
            if "text" in item and not isinstance(item["text"], str):
                raise _BadDecision("result.text must be a string")
            if "isError" in item and not isinstance(item["isError"], bool):
                raise _BadDecision("result.isError must be true or false")
    return fields


def read_decision(point: str, value: Any) -> tuple[str, str | None, dict[str, Any]]:
    """(action, reason, fields) of an interceptor's return value.

    Raises:
        _BadDecision: an unknown action, an action the point does not take, or fields of the wrong shape.
    """
    if value is None:
        return "continue", None, {}
    if not isinstance(value, dict):
        raise _BadDecision("a hook returns nothing or an object { action, reason?, ... }")
    action = value.get("action")
    reason = value.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise _BadDecision("reason must be a string")
    if action == "continue":
        if set(value) - {"action", "reason"}:
            raise _BadDecision("'continue' takes no fields")
        return "continue", reason, {}
    if not isinstance(action, str) or action not in _ACTIONS[point]:
        actions = ", ".join(["continue", *_ACTIONS[point]])
        raise _BadDecision(f"unknown action {action!r} at {point}; the actions there are {actions}")
    return action, reason, _check_fields(point, action, value)


class JsHook:
    """One loaded hook file: the points it handles and what its `ctx` may use."""

    def __init__(
        self, name: str, source: JsSource, points: Sequence[str], requires: Sequence[str], sandbox: JsSandbox
    ) -> None:
        self.name = name
        """The file as the definition (or host) named it."""
        self.source = source
        self.points: tuple[str, ...] = tuple(points)
        """The points this hook handles, in the table's order."""
        self.requires: tuple[str, ...] = tuple(requires)
        """The capabilities the hook declared in `export const hook = { requires }`."""
        self.sandbox = sandbox

    def __repr__(self) -> str:
        return f"JsHook({self.name!r}, points={list(self.points)!r})"

    def handles(self, point: str) -> bool:
        return point in self.points

    @property
    def observer_only(self) -> bool:
        """Whether every point this hook handles is an observer point."""
        return all(p in OBSERVER_POINTS for p in self.points)

    async def call(
        self,
        point: str,
        payload: Any,
        *,
        context: ToolContext | None = None,
        owner: str | None = None,
        fail_closed: bool | None = None,
    ) -> HookDecision:
        """Run the hook's function for `point` with `payload` (a JSON snapshot) and `ctx`, and check its decision.

        Never raises for the hook's own failure: an interceptor that throws, hits a limit or returns a decision of
        the wrong shape is a `block` (with `failed` set), an observer's failure a `continue` (with `failed` set).

        Args:
            point: The hook point; must be one this hook handles.
            payload: The point's JSON snapshot.
            context: Grants, ids and the cost lines' destination for `ctx`; None gives the hook no grants.
            owner: Whose hooks these are, for the limiter's per-owner share (default: the context's instance).
            fail_closed: Block the step when the hook fails; None is the point's rule (interceptors closed,
                observers open).
        """
        if point not in HOOK_POINTS:
            raise ValueError(f"unknown hook point {point!r}; the points are {', '.join(HOOK_POINTS)}")
        if point not in self.points:
            raise ValueError(f"hook {self.name} does not handle {point}")
        closed = point in INTERCEPTOR_POINTS if fail_closed is None else fail_closed
        slot = JsSlot(kind="hook", owner=owner if owner is not None else (context.instance_id if context else None))
        try:
            result = await self.sandbox.call(
                self.source, point, [payload], context=context, requires=self.requires, slot=slot
            )
        except JsSandboxError as exc:
            return self._failure(point, closed, f"hook {self.name} failed at {point}: {exc.message}", exc)
        if point in OBSERVER_POINTS:
            return HookDecision(
                point=point, hook=self.name, action="continue", cost_lines=result.cost_lines, logs=result.logs
            )
        try:
            action, reason, fields = read_decision(point, result.value if result.type != "undefined" else None)
        except _BadDecision as exc:
            return self._failure(
                point, closed, f"hook {self.name} returned an invalid decision at {point}: {exc}", None, result
            )
        return HookDecision(
            point=point,
            hook=self.name,
            action=action,
            reason=reason,
            fields=fields,
            cost_lines=result.cost_lines,
            logs=result.logs,
        )

    def _failure(
        self, point: str, closed: bool, reason: str, error: JsSandboxError | None, result: Any = None
    ) -> HookDecision:
        return HookDecision(
            point=point,
            hook=self.name,
            action="block" if closed else "continue",
            reason=reason,
            failed=True,
            error=error,
            cost_lines=list(getattr(result, "cost_lines", [])),
            logs=list(getattr(result, "logs", [])),
        )


def _read_granted(file: str, capabilities: Capabilities, base: str | os.PathLike[str] | None) -> JsSource:
    return JsSource.read_granted(file, capabilities, base=base)


def _locate_export(source: JsSource, name: str) -> tuple[int | None, int | None]:
    try:
        tokens = tokenize(source.text)
    except LexError:
        return None, None
    for t in tokens:
        if t.kind == "name" and t.value == name:
            return Positions(source.original).at(t.start)
    return None, None


class JsHookSource:
    """Loads hook files for definitions: the runtime's source of `hooks:` entries (C#'s `Runtime.DefinitionHooks`)."""

    MAX_HOOKS_PER_DEFINITION: ClassVar[int] = 16
    """The most hook files one definition may name."""

    def __init__(self, options: JsSandboxOptions | None = None, *, sandbox: JsSandbox | None = None) -> None:
        self.sandbox = sandbox or JsSandbox(options)

    async def load_file(self, path: str | os.PathLike[str], *, points: Sequence[str] | None = None) -> JsHook:
        """Load a hook file the host chose (read as the host).

        Raises:
            BadDefinitionError: as for `load`.
        """
        import anyio.to_thread

        source = await anyio.to_thread.run_sync(JsSource.read, path)
        return await self._load(source, os.fspath(path), points)

    async def load(
        self,
        entries: Sequence[Any],
        *,
        capabilities: Capabilities,
        base: str | os.PathLike[str] | None = None,
        definition: str | None = None,
    ) -> list[JsHook]:
        """Load a definition's `hooks:` entries through the run's read grant.

        Args:
            entries: `HookEntry` objects of a definition (or mappings `{file, points?}`): a path relative to the
                definition and, optionally, the points the entry is limited to.
            capabilities: The run's grants; files are read through their read roots and protected names.
            base: The definition's directory (relative paths start there).
            definition: The definition's file name, for error messages.

        Raises:
            CapabilityMissingError: a file the read grant does not reach (the message names the path as given and shows
                none of the file).
            BadDefinitionError: more than `MAX_HOOKS_PER_DEFINITION` entries; a file that does not parse, imports
                another file, fails or passes a limit at its top level, exports no hook function, lacks a point its
                entry lists, or declares an invalid `hook` object.
        """
        import anyio.to_thread

        if len(entries) > self.MAX_HOOKS_PER_DEFINITION:
            raise BadDefinitionError(
                f"a definition may name at most {self.MAX_HOOKS_PER_DEFINITION} hook files, not {len(entries)}",
                file=definition,
                path="hooks",
            )
        hooks: list[JsHook] = []
        for index, entry in enumerate(entries):
            file = entry.get("file") if isinstance(entry, Mapping) else getattr(entry, "file", None)
            points = entry.get("points") if isinstance(entry, Mapping) else getattr(entry, "points", None)
            if not isinstance(file, str) or not file:
                raise BadDefinitionError("a hook entry needs a file", file=definition, path=f"hooks[{index}]")
            if points is not None:
                bad = [p for p in points if p not in HOOK_POINTS]
                if bad:
                    raise BadDefinitionError(
                        f"unknown hook point {bad[0]!r}; the points are {', '.join(HOOK_POINTS)}",
                        file=definition,
                        path=f"hooks[{index}].points",
                    )
            source = await anyio.to_thread.run_sync(_read_granted, file, capabilities, base)
            hooks.append(await self._load(source, file, points))
        return hooks

    async def _load(self, source: JsSource, name: str, points: Sequence[str] | None) -> JsHook:
        source.check_module()
        try:
            described = await self.sandbox.describe(source, slot=JsSlot(kind="load"))
        except JsSandboxError as exc:
            raise BadDefinitionError(
                f"the hook file failed to load: {exc.message}", file=source.file, line=exc.line, column=exc.column
            ) from None
        exports = set(described.get("exports") or [])
        handled = [p for p in HOOK_POINTS if p in exports]
        if points is not None:
            missing = [p for p in points if p not in exports]
            if missing:
                raise BadDefinitionError(f"the hook file does not export a function for {missing[0]}", file=source.file)
            handled = [p for p in HOOK_POINTS if p in points]
        if not handled:
            raise BadDefinitionError(
                f"a hook file exports one function per point it handles ({', '.join(HOOK_POINTS)}); this one exports none",
                file=source.file,
            )
        requires: list[str] = []
        if isinstance(described.get("hook"), str):
            line, column = _locate_export(source, "hook")
            declared = msgspec.json.decode(described["hook"])
            if not isinstance(declared, dict) or set(declared) - {"requires"}:
                raise BadDefinitionError(
                    "the exported hook object takes only { requires: [...] }",
                    file=source.file,
                    line=line,
                    column=column,
                )
            listed = declared.get("requires", [])
            if not isinstance(listed, list) or not all(isinstance(r, str) and r in CAPABILITY_GRANTS for r in listed):
                raise BadDefinitionError(
                    f"hook.requires lists capabilities among {', '.join(CAPABILITY_GRANTS)}",
                    file=source.file,
                    line=line,
                    column=column,
                )
            requires = list(dict.fromkeys(listed))
        return JsHook(name, source, handled, requires, self.sandbox)
