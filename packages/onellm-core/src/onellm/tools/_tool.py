"""Tools: plain functions with a JSON Schema, and the invoker that turns every failure of theirs into a result.

A tool is a function (sync or async) whose parameters become one closed object schema (see `onellm.schema` and
`docs/tool-schemas.md`). `Tool.invoke` converts the model's arguments, runs the function and returns a `ToolResult`.
It never raises for the tool's own failure: a bad argument, an exception in the tool and a timeout all become error
results whose text the model reads. Cancellation of the caller is not a failure and propagates.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import operator
import re
import types
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Generic, ParamSpec, TypeVar, overload

import msgspec

from onellm._docstrings import parse_docstring
from onellm.errors import CapabilityMissingError
from onellm.schema import (
    ArgumentError,
    JsonType,
    Property,
    compile_type,
    object_type,
    schema_default,
    to_json_value,
    with_keywords,
)

if TYPE_CHECKING:
    from onellm.capabilities import Capabilities
    from onellm.messages import CostLine, Part

__all__ = ["GRANT_KINDS", "Tool", "ToolContext", "ToolResult", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

GRANT_KINDS: Final = frozenset({"files_read", "files_write", "shell", "network"})
"""The grants a tool can need: `Tool.required_grants` holds some of these."""


_PATH_TYPE: Final = type(Path())
"""The concrete path type of this system (`PosixPath` or `WindowsPath`)."""


class ToolContext:
    """What the runtime hands a tool for one call. Never part of a schema.

    A tool asks for it by declaring one parameter annotated `ToolContext`. Cancellation travels through anyio: an
    async tool is cancelled at its next `await`; a sync tool runs in a worker thread and can call `check_cancelled()`.
    Give each call its own context: the cost lines a result carries are those added since its call started.
    """

    __slots__ = (
        "_capabilities",
        "_cost_lines",
        "_working_directory",
        "call_id",
        "extra",
        "instance_id",
        "runtime",
        "tool_name",
    )

    def __init__(
        self,
        *,
        capabilities: Capabilities | None = None,
        working_directory: Path | str | None = None,
        instance_id: str | None = None,
        call_id: str | None = None,
        tool_name: str | None = None,
        runtime: Any = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self._set(capabilities, working_directory, instance_id, call_id, tool_name, runtime, extra)

    def _set(
        self,
        capabilities: Capabilities | None,
        working_directory: Path | str | None,
        instance_id: str | None,
        call_id: str | None,
        tool_name: str | None,
        runtime: Any,
        extra: dict[str, Any] | None,
    ) -> None:
        """`__init__`'s work, its arguments by position (an agent run makes the context of each of its tool calls with
        it, on an object made without `__init__`)."""
        self._capabilities = capabilities
        self._cost_lines: list[CostLine] = []
        # A path is immutable: one of the exact type `Path()` makes is kept as it is (a run hands the same one to every
        # call), anything else is converted.
        self._working_directory: Path | None = (
            working_directory
            if type(working_directory) is _PATH_TYPE or working_directory is None
            else Path(working_directory)
        )
        self.instance_id = instance_id
        """The id of the instance (agent run) the call belongs to, when there is one."""
        self.call_id = call_id
        """The id of the tool call, when the model gave one."""
        self.tool_name = tool_name
        """The name of the tool being called; set by `Tool.invoke`."""
        self.runtime = runtime
        """The runtime running the call, when there is one."""
        self.extra: dict[str, Any] = extra if extra is not None else {}
        """Anything else a host wants its tools to see."""

    @property
    def working_directory(self) -> Path:
        """The directory relative paths start from: as given, else the process's current directory."""
        return self._working_directory if self._working_directory is not None else Path.cwd()

    @working_directory.setter
    def working_directory(self, value: Path | str) -> None:
        self._working_directory = Path(value)

    @property
    def capabilities(self) -> Capabilities:
        """The grants for this call. A context built without them refuses every use (fails closed)."""
        if self._capabilities is None:
            raise CapabilityMissingError(
                "this tool call was given no capabilities; run it through a Runtime or pass capabilities= to ToolContext"
            )
        return self._capabilities

    @property
    def has_capabilities(self) -> bool:
        """Whether the runtime gave this call any grants."""
        return self._capabilities is not None

    @property
    def cost_lines(self) -> list[CostLine]:
        """The cost lines added so far (a copy)."""
        return list(self._cost_lines)

    def add_cost_line(self, line: CostLine) -> None:
        """Charge the call: the line is kept on the result whatever happens next (error, timeout, cancellation)."""
        self._cost_lines.append(line)

    def check_cancelled(self) -> None:
        """From a sync tool's worker thread: raise the cancellation exception when the call was cancelled or timed out.

        Outside a worker thread this does nothing (an async tool is cancelled at its next `await`).
        """
        import anyio.from_thread

        try:
            anyio.from_thread.check_cancelled()
        except RuntimeError:
            return

    def _lines_since(self, start: int) -> list[CostLine]:
        return self._cost_lines[start:]


@dataclasses.dataclass(slots=True)
class ToolResult:
    """The outcome of one tool call, as it goes back to the model."""

    parts: list[Part] = dataclasses.field(default_factory=list)
    """The content: no parts for `None`, one text part for a string, one JSON part for a value."""
    is_error: bool = False
    """Whether the call failed (bad arguments, an exception, a timeout)."""
    cost_lines: list[CostLine] = dataclasses.field(default_factory=list)
    """What the call charged, through `ToolContext.add_cost_line`; kept on every path."""
    value: Any = None
    """The Python value the tool returned (the typed result of a tool that ends the loop)."""

    @property
    def text(self) -> str:
        """The text of the text parts, joined; handy for error results and tests."""
        return "".join(getattr(p, "text", "") for p in self.parts if type(p).__name__ == "TextPart")

    @classmethod
    def error(cls, message: str, *, cost_lines: Sequence[CostLine] = ()) -> ToolResult:
        """An error result holding one text part."""
        from onellm.messages import TextPart

        return cls(parts=[TextPart(text=message)], is_error=True, cost_lines=list(cost_lines))

    def checked(self) -> ToolResult:
        """This result as an instance can keep it (one built by hand may hold what the file cannot): its JSON parts
        made plain JSON (`to_json_value`), a new result when one changed.

        Raises:
            TypeError: a part has no JSON form, a text part's text is not a string, or `is_error` is not a bool.
        """
        if not isinstance(self.is_error, bool):
            raise TypeError(f"a ToolResult's is_error must be a bool, not {type(self.is_error).__name__}")
        parts = check_parts(list(self.parts))
        if all(map(operator.is_, parts, self.parts)):
            return self
        return dataclasses.replace(self, parts=parts)


def _exception_text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return "(the error's message could not be read)"


def _seconds(value: float) -> str:
    return f"{value:g}"


class _Binding:
    """How the converted arguments are passed to the function."""

    __slots__ = ("context_param", "positional")

    def __init__(self, positional: list[str], context_param: str | None) -> None:
        self.positional = positional
        self.context_param = context_param


def _is_context_annotation(annotation: Any) -> bool:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(members) == 1 and members[0] is ToolContext
    return annotation is ToolContext


def _tool_name(fn: Callable[..., Any]) -> str:
    raw = getattr(fn, "__name__", None)
    if not isinstance(raw, str) or raw == "<lambda>":
        raise TypeError(f"{fn!r} has no usable name; give one with name=")
    return raw[: -len("_async")] if raw.endswith("_async") and len(raw) > len("_async") else raw


def _returns_parts_or_text(annotation: Any) -> bool:
    """Return types whose result is content, not a typed value: no output schema is written for them."""
    if annotation in (None, type(None), str, Any, inspect.Signature.empty, ToolResult):
        return True
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, Sequence) or origin is typing.Union or origin is types.UnionType:
        return all(_returns_parts_or_text(a) for a in typing.get_args(annotation) if a is not Ellipsis)
    if not isinstance(annotation, type):
        return False
    from onellm.messages import Message, Part

    return issubclass(annotation, (Message, *typing.get_args(Part)))


class Tool(Generic[P, R]):
    """A function the model can call: name, description, input schema, metadata and the invoker.

    Build one with `@onellm.tool` or `Tool.create(fn)`. Calling the tool object calls the function directly.
    """

    __slots__ = (
        "_arguments",
        "_direct",
        "_handler",
        "_is_async",
        "description",
        "ends_loop",
        "fn",
        "in_thread",
        "input_schema",
        "name",
        "output_schema",
        "package",
        "parallel_safe",
        "required_grants",
        "requires_approval",
        "timeout_seconds",
    )

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input_schema: dict[str, Any],
        handler: Callable[[dict[str, Any], ToolContext], Any],
        arguments: JsonType | None,
        fn: Callable[P, R] | None = None,
        is_async: bool,
        output_schema: dict[str, Any] | None = None,
        ends_loop: bool = False,
        requires_approval: bool = False,
        parallel_safe: bool = True,
        timeout_seconds: float | None = None,
        required_grants: Sequence[str] = (),
        package: str | None = None,
        in_thread: bool = True,
    ) -> None:
        if not _NAME.match(name):
            raise TypeError(f"tool name {name!r} must be 1 to 64 letters, digits, '_' or '-'")
        if timeout_seconds is not None and timeout_seconds < 0:
            raise ValueError(f"tool {name!r}: timeout_seconds must be positive, not {timeout_seconds}")
        unknown = [g for g in required_grants if g not in GRANT_KINDS]
        if unknown:
            raise ValueError(
                f"tool {name!r}: unknown grant {unknown[0]!r}; grants are {', '.join(sorted(GRANT_KINDS))}"
            )
        self.name = name
        """The name the model calls it by."""
        self.description = description
        """What the tool does, for the model."""
        self.input_schema = input_schema
        """The closed object schema of the arguments. Read-only: fragments are shared between tools of the same types."""
        self.output_schema = output_schema
        """The schema of the return type, when it is a typed value (not sent to the model)."""
        self.ends_loop = ends_loop
        """A call to this tool ends the agent loop; its return value is the run's typed result."""
        self.requires_approval = requires_approval
        """Each call waits for a person's approval."""
        self.parallel_safe = parallel_safe
        """Calls may run at the same time as other calls of the same turn."""
        self.timeout_seconds = timeout_seconds or None
        """Seconds a call may take before it becomes an error result; None (or 0) for no limit."""
        self.required_grants: tuple[str, ...] = tuple(required_grants)
        """The grants the tool needs (`files_read`, `files_write`, `shell`, `network`); checked when referenced."""
        self.package = package
        """The distribution that provides the tool, when it is not onellm-core."""
        self.fn = fn
        """The wrapped function, or None for a tool built from a schema and a handler."""
        self.in_thread = in_thread
        """Whether a sync function runs in a worker thread (the default) or directly on the event loop."""
        self._handler = handler
        self._direct: Callable[..., Any] | None = None
        """The function the handler calls with the arguments by name and nothing else (no context, nothing passed by
        position), called without the handler around it; None for any other handler."""
        self._arguments = arguments
        self._is_async = is_async

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if self.fn is None:
            raise TypeError(f"tool {self.name!r} was built from a handler and cannot be called directly; use invoke()")
        return self.fn(*args, **kwargs)

    # ------------------------------------------------------------------------------------------------- building

    @classmethod
    def create(
        cls,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        ends_loop: bool = False,
        requires_approval: bool = False,
        parallel_safe: bool = True,
        timeout_seconds: float | None = None,
        required_grants: Sequence[str] = (),
        package: str | None = None,
        in_thread: bool = True,
    ) -> Tool[P, R]:
        """Make a tool of a function; raises `TypeError` when a parameter or the return type has no schema.

        Args:
            fn: A sync or async function. Each parameter becomes a property of the input schema, named as written.
            name: The tool's name; by default the function's name with a trailing `_async` dropped.
            description: What the tool does; by default the docstring's first paragraph.
            ends_loop: A call ends the agent loop and its return value is the run's result.
            requires_approval: Each call waits for a person's approval.
            parallel_safe: Calls may run concurrently with other calls of the same turn.
            timeout_seconds: A call that takes longer becomes an error result; None or 0 for no limit.
            required_grants: Grants the tool needs, checked when a definition references it.
            package: The distribution that provides the tool, named when it is missing.
            in_thread: Run a sync function in a worker thread (default) rather than on the event loop.
        """
        tool_name = name if name is not None else _tool_name(fn)
        where = f"tool {tool_name!r}"
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise TypeError(f"{where}: a generator function cannot be a tool; return the whole result")
        try:
            signature = inspect.signature(fn, eval_str=True)
        except (NameError, TypeError, SyntaxError) as exc:
            raise TypeError(f"{where}: cannot read the signature: {exc}") from None
        doc = parse_docstring(inspect.getdoc(fn))
        props: list[Property] = []
        positional: list[str] = []
        context_param: str | None = None
        compiler_where = where
        for param in signature.parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"{where}: *{param.name} and **{param.name} parameters have no schema")
            if param.annotation is param.empty:
                if param.name in ("self", "cls") and not props and context_param is None:
                    raise TypeError(
                        f"{where}: @tool takes functions, not methods in a class body; "
                        "make a tool of the bound method instead: Tool.create(instance.method)"
                    )
                raise TypeError(f"{where}: parameter {param.name!r} needs a type annotation")
            if _is_context_annotation(param.annotation):
                if context_param is not None:
                    raise TypeError(f"{where}: more than one ToolContext parameter ({context_param}, {param.name})")
                context_param = param.name
                if param.kind is param.POSITIONAL_ONLY:
                    positional.append(param.name)
                continue
            node = compile_type(param.annotation, where=f"{compiler_where}, parameter {param.name!r}")
            schema = node.schema
            text = doc.params.get(param.name)
            if text and "description" not in schema:
                schema = with_keywords(schema, description=text)
            required = param.default is param.empty
            if not required:
                schema = with_keywords(schema, default=schema_default(param.default))
            if schema is not node.schema:
                node = JsonType(schema, node.converter, hashable=node.hashable)
            props.append(Property(param.name, param.name, node, required))
            if param.kind is param.POSITIONAL_ONLY:
                positional.append(param.name)
        arguments = object_type(props, None)  # the converted values by parameter name are the arguments
        output_schema: dict[str, Any] | None = None
        returned = signature.return_annotation
        if not _returns_parts_or_text(returned):
            output_schema = compile_type(returned, where=f"{where}, return type").schema
        binding = _Binding(positional, context_param)
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004

        call: Callable[..., Any] = fn

        def handler(values: dict[str, Any], context: ToolContext) -> Any:
            if binding.context_param is not None:
                values[binding.context_param] = context
            if not binding.positional:
                return call(**values)
            args = [values.pop(n) for n in binding.positional if n in values]
            return call(*args, **values)

        made = cls(
            name=tool_name,
            description=description if description is not None else doc.summary,
            input_schema=arguments.schema,
            handler=handler,
            arguments=arguments,
            fn=fn,
            is_async=is_async,
            output_schema=output_schema,
            ends_loop=ends_loop,
            requires_approval=requires_approval,
            parallel_safe=parallel_safe,
            timeout_seconds=timeout_seconds,
            required_grants=required_grants,
            package=package,
            in_thread=in_thread,
        )
        if context_param is None and not positional:
            made._direct = fn
        return made

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        handler: Callable[[dict[str, Any], ToolContext], Awaitable[Any]],
        *,
        ends_loop: bool = False,
        requires_approval: bool = False,
        parallel_safe: bool = True,
        timeout_seconds: float | None = None,
        required_grants: Sequence[str] = (),
        package: str | None = None,
    ) -> Tool[..., Any]:
        """A tool whose schema is given as data (a tool file, an adapter) and whose async handler takes the raw object.

        The arguments are checked against the schema (see `onellm.tools._validate`) and passed as plain JSON. Raises
        `TypeError` for a schema that is not an object schema or uses a keyword the checker cannot enforce.
        """
        from onellm.tools._validate import compile_schema

        schema = dict(input_schema)
        if schema.get("type") != "object":
            raise TypeError(f"tool {name!r}: an input schema must be an object schema")
        checker = compile_schema(schema, where=f"tool {name!r}, input schema")
        return cls(
            name=name,
            description=description,
            input_schema=schema,
            handler=handler,
            arguments=JsonType(schema, checker, hashable=False),
            fn=None,
            is_async=True,
            ends_loop=ends_loop,
            requires_approval=requires_approval,
            parallel_safe=parallel_safe,
            timeout_seconds=timeout_seconds,
            required_grants=required_grants,
            package=package,
        )

    # ------------------------------------------------------------------------------------------------- invoking

    def convert_arguments(self, arguments: Mapping[str, Any] | str | bytes) -> dict[str, Any]:
        """The converted arguments by parameter name; raises `ArgumentError` naming the path of the first bad one."""
        if type(arguments) is not dict:  # a dict (decoded JSON) nearly always
            if isinstance(arguments, str | bytes):
                try:
                    arguments = msgspec.json.decode(arguments)
                except msgspec.DecodeError as exc:
                    raise ArgumentError(f"text is not valid JSON: {exc}") from None
            if not isinstance(arguments, Mapping):
                raise ArgumentError(f"must be a JSON object, not {type(arguments).__name__}")
        if self._arguments is None:
            return dict(arguments)
        converted = self._arguments.converter(arguments)
        return converted if type(converted) is dict else dict(converted)

    async def invoke(
        self, arguments: Mapping[str, Any] | str | bytes, context: ToolContext | None = None
    ) -> ToolResult:
        """Run one call. Never raises for the tool's own failure; cancellation of the caller propagates.

        Args:
            arguments: The model's arguments: a decoded JSON object, or its JSON text.
            context: The call's context; a fresh one (no capabilities) when omitted.
        """
        ctx = context if context is not None else ToolContext()
        ctx.tool_name = self.name
        start = len(ctx._cost_lines)
        arguments_type = self._arguments
        try:
            if type(arguments) is dict and arguments_type is not None:
                # `convert_arguments` for the decoded object of nearly every call, without the call around it
                values = arguments_type.converter(arguments)
                if type(values) is not dict:
                    values = dict(values)
            else:
                values = self.convert_arguments(arguments)
        except ArgumentError as exc:
            return ToolResult.error(exc.message(), cost_lines=ctx._lines_since(start))
        except Exception as exc:
            # A constructor or a validator of the tool's own types failed in a way the converter did not foresee.
            return ToolResult.error(
                f"Arguments of tool '{self.name}' could not be read: {type(exc).__name__}: {exc}",
                cost_lines=ctx._lines_since(start),
            )
        try:
            if self.timeout_seconds:
                import anyio

                with anyio.move_on_after(self.timeout_seconds) as scope:
                    value = await self._run(values, ctx)
                # `cancel_called` too: a tool that swallowed the cancellation and answered late still timed out.
                if scope.cancelled_caught or scope.cancel_called:
                    return ToolResult.error(
                        f"Tool '{self.name}' timed out after {_seconds(self.timeout_seconds)} s.",
                        cost_lines=ctx._lines_since(start),
                    )
            elif self._is_async or not self.in_thread:
                # No timeout scope and no worker thread: the handler's value is awaited here, as `_run` would.
                direct = self._direct
                value = direct(**values) if direct is not None else self._handler(values, ctx)
                while type(value) is _COROUTINE or (type(value) not in _PLAIN_VALUES and inspect.isawaitable(value)):
                    value = await value
            else:
                value = await self._run(values, ctx)
        except Exception as exc:
            text = _exception_text(exc)
            kind = type(exc).__name__
            message = f"Tool '{self.name}' failed: {kind}: {text}" if text else f"Tool '{self.name}' failed: {kind}"
            return ToolResult.error(message, cost_lines=ctx._lines_since(start))
        try:
            if type(value) is str:  # `_result`'s first case, without the call around it
                return ToolResult([_messages().TextPart(text=value)], False, ctx._cost_lines[start:], value)
            return self._result(value, ctx._cost_lines[start:])
        except Exception as exc:
            return ToolResult.error(
                f"Tool '{self.name}' returned a value that cannot be sent: {_exception_text(exc)}",
                cost_lines=ctx._lines_since(start),
            )

    async def _run(self, values: dict[str, Any], ctx: ToolContext) -> Any:
        if self._is_async or not self.in_thread:
            value = self._handler(values, ctx)
        else:
            import anyio.to_thread

            value = await anyio.to_thread.run_sync(self._handler, values, ctx, abandon_on_cancel=True)
        while type(value) not in _PLAIN_VALUES and inspect.isawaitable(value):
            value = await value
        return value

    @staticmethod
    def _result(value: Any, cost_lines: list[CostLine]) -> ToolResult:
        # ToolResult(parts, is_error, cost_lines, value): by position, cheaper than by keyword.
        if type(value) is str:  # the usual answer: one text part
            return ToolResult([_messages().TextPart(text=value)], False, cost_lines, value)
        if isinstance(value, ToolResult):
            value = value.checked()
            merged = list(value.cost_lines)
            merged.extend(line for line in cost_lines if not any(line is m for m in merged))
            return ToolResult(list(value.parts), value.is_error, merged, value.value)
        return ToolResult(to_parts(value), False, cost_lines, value)


@functools.cache
def _part_types() -> tuple[type, ...]:
    import onellm.messages as messages

    part = getattr(messages, "Part", None)
    if part is None:
        return ()
    members = typing.get_args(part) or (part,)
    return tuple(m for m in members if isinstance(m, type))


_PLAIN_VALUES: Final = frozenset({str, dict, list, int, float, bool, type(None)})
"""Types a tool returns that are never awaitable (`Tool._run` asks no more of them)."""

_COROUTINE: Final = types.CoroutineType
"""What an async tool's handler gives: awaited without `inspect.isawaitable`'s checks."""


@functools.cache
def _messages() -> Any:
    """`onellm.messages`, imported on first use."""
    import onellm.messages

    return onellm.messages


def to_parts(value: Any) -> list[Part]:
    """The content of a tool's return value: `None` → none, `str` → one text part, parts → those parts, anything else →
    one JSON part. Raises `TypeError` for a value with no JSON form."""
    if value is None:
        return []
    messages = _messages()
    if isinstance(value, str):
        return [messages.TextPart(text=value)]
    kinds = _part_types()
    if kinds and isinstance(value, kinds):
        return check_parts([typing.cast("Part", value)])
    if kinds and isinstance(value, list | tuple) and value and all(isinstance(v, kinds) for v in value):
        return check_parts(list(value))
    return [messages.JsonPart(json=to_json_value(value))]


def check_parts(parts: list[Part]) -> list[Part]:
    """`parts` as an instance can keep them: a JSON part's value made plain JSON (`to_json_value`: a date becomes its
    ISO text), a `TypeError` for one with no JSON form or a text part whose text is not a string. A part built by hand
    is not checked when made, and one that cannot be written makes an instance that cannot be saved or read back."""
    messages = _messages()
    for i, part in enumerate(parts):
        if isinstance(part, messages.JsonPart):
            plain = to_json_value(part.json)
            if plain is not part.json:
                parts[i] = messages.JsonPart(json=plain, extra=dict(part.extra))
        elif isinstance(part, messages.TextPart):
            if not isinstance(part.text, str):
                raise TypeError(f"a text part's text must be a string, not {type(part.text).__name__}")
        elif not isinstance(part, _part_types()):
            raise TypeError(f"a result's parts must be message parts, not {type(part).__name__}")
    return parts


@overload
def tool(fn: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    ends_loop: bool = False,
    requires_approval: bool = False,
    parallel_safe: bool = True,
    timeout_seconds: float | None = None,
    required_grants: Sequence[str] = (),
    package: str | None = None,
    in_thread: bool = True,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    ends_loop: bool = False,
    requires_approval: bool = False,
    parallel_safe: bool = True,
    timeout_seconds: float | None = None,
    required_grants: Sequence[str] = (),
    package: str | None = None,
    in_thread: bool = True,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Make a function a tool: `@tool` or `@tool(name=..., timeout_seconds=...)`. See `Tool.create` for the options."""

    def wrap(f: Callable[P, R]) -> Tool[P, R]:
        return Tool.create(
            f,
            name=name,
            description=description,
            ends_loop=ends_loop,
            requires_approval=requires_approval,
            parallel_safe=parallel_safe,
            timeout_seconds=timeout_seconds,
            required_grants=required_grants,
            package=package,
            in_thread=in_thread,
        )

    if fn is not None:
        return wrap(fn)
    return wrap
