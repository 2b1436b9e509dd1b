"""Tool files and `run_javascript`.

A tool file is an ES module that exports `invoke(inputs, ctx)` and describes itself with an exported `tool` object,
or with a `<name>.tool.yaml` beside it (the YAML wins when both exist). The keys (camelCase, as in the C# OneLLM):

| Key | Meaning | Default |
|---|---|---|
| `name` | the name the model calls | the file's name without `.js` |
| `description` | what the tool does | required |
| `inputSchema` | JSON Schema of the arguments (an object schema) | no arguments |
| `outputSchema` | JSON Schema of the result | none |
| `requires` | `fileRead`, `fileWrite`, `network`: what `ctx` may use | none |
| `endsLoop` | a call ends the agent loop; the result is the run's typed result | false |
| `requiresApproval` | each call waits for a person's approval | false |
| `costHint` | USD per call (a string for an exact decimal) | none |
| `parallelSafe` | calls may run beside other calls of the same turn | true |
| `timeout` | seconds, shortening the sandbox's time limit | none |

Loading reads the file as the host, runs its top level once under the sandbox's limits, and fails with
`BadDefinitionError` (file, line, column) when it does not parse, has no `invoke`, imports another file, or its
description is invalid.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec

from onellm.errors import BadDefinitionError
from onellm.tools import JsonType, Tool, ToolContext, ToolResult, compile_schema
from onellm_js._errors import JsSandboxError
from onellm_js._host import CAPABILITY_GRANTS
from onellm_js._lexer import LexError, Positions, tokenize
from onellm_js._limiter import JsSlot
from onellm_js._options import JsSandboxOptions
from onellm_js._sandbox import JsRunResult, JsSandbox
from onellm_js._source import JsSource

if TYPE_CHECKING:
    from onellm.yamlio import YamlDocument

__all__ = [
    "TOOL_KEYS",
    "JsTool",
    "load_tool",
    "load_tool_directory",
    "load_tool_directory_sync",
    "load_tool_sync",
    "render_run",
    "run_javascript",
]

_log = logging.getLogger("onellm.js")
_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TOOL_KEYS: Final = (
    "name",
    "description",
    "inputSchema",
    "outputSchema",
    "requires",
    "endsLoop",
    "requiresApproval",
    "costHint",
    "parallelSafe",
    "timeout",
)
_NO_ARGUMENTS: Final = {"type": "object", "properties": {}, "additionalProperties": False}
_PACKAGE: Final = "onellm-js"


class JsTool(Tool[..., Any]):
    """A tool whose body is a JavaScript module (`invoke(inputs, ctx)`), run in the sandbox for every call."""

    __slots__ = ("cost_hint", "file", "requires", "sandbox", "source", "timeout")

    cost_hint: Decimal | None
    """The tool's `costHint` (USD per call), when it gave one."""
    file: str
    """The tool file's name."""
    requires: tuple[str, ...]
    """The capabilities the tool declared (`fileRead`, `fileWrite`, `network`)."""
    sandbox: JsSandbox
    source: JsSource
    timeout: float | None
    """The tool's `timeout` in seconds: a call's time limit is the shorter of this and the sandbox's."""


def _suggest(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class _Description:
    """Reads a tool description (from YAML or from the module's exported `tool`) with positions for errors."""

    def __init__(self, data: Any, file: str, locate: Any) -> None:
        self.data = data
        self.file = file
        self.locate = locate

    def error(self, message: str, key: str | None = None) -> BadDefinitionError:
        line, column = self.locate(key)
        return BadDefinitionError(message, file=self.file, line=line, column=column, path=key)

    def read(self, default_name: str) -> dict[str, Any]:
        data = self.data
        if not isinstance(data, Mapping):
            raise self.error("the tool description must be an object")
        for key in data:
            if key not in TOOL_KEYS:
                raise self.error(
                    f"unknown key {key!r} in the tool description{_suggest(str(key), TOOL_KEYS)}", str(key)
                )
        out: dict[str, Any] = {}
        name = data.get("name", default_name)
        if not isinstance(name, str) or not _NAME.match(name):
            raise self.error(
                f"the tool name {name!r} must be 1 to 64 letters, digits, '_' or '-'",
                "name" if "name" in data else None,
            )
        out["name"] = name
        description = data.get("description")
        if not isinstance(description, str) or not description.strip():
            raise self.error(
                "the tool needs a description (a non-empty string)", "description" if "description" in data else None
            )
        out["description"] = description
        schema = data.get("inputSchema", _NO_ARGUMENTS)
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            raise self.error("inputSchema must be an object schema ({ type: 'object', ... })", "inputSchema")
        try:
            checker = compile_schema(schema, where="inputSchema")
        except TypeError as exc:
            raise self.error(str(exc), "inputSchema") from None
        out["inputSchema"] = dict(schema)
        out["checker"] = checker
        output = data.get("outputSchema")
        if output is not None:
            if not isinstance(output, Mapping):
                raise self.error("outputSchema must be a JSON Schema object", "outputSchema")
            out["outputSchema"] = dict(output)
        requires = data.get("requires", [])
        if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
            raise self.error("requires must be a list of capability names", "requires")
        for item in requires:
            if item not in CAPABILITY_GRANTS:
                raise self.error(
                    f"unknown capability {item!r} in requires; capabilities are "
                    f"{', '.join(CAPABILITY_GRANTS)}{_suggest(item, list(CAPABILITY_GRANTS))}",
                    "requires",
                )
        out["requires"] = tuple(dict.fromkeys(requires))
        for key in ("endsLoop", "requiresApproval", "parallelSafe"):
            value = data.get(key, key == "parallelSafe")
            if not isinstance(value, bool):
                raise self.error(f"{key} must be true or false", key)
            out[key] = value
        hint = data.get("costHint")
        if hint is not None:
            try:
                if isinstance(hint, bool) or not isinstance(hint, str | int | float | Decimal):
                    raise InvalidOperation
                cost = Decimal(str(hint)) if not isinstance(hint, Decimal) else hint
                if not cost.is_finite() or cost < 0:
                    raise InvalidOperation
            except (InvalidOperation, ValueError):
                raise self.error(
                    "costHint must be a non-negative number (a string for an exact decimal)", "costHint"
                ) from None
            out["costHint"] = cost
        timeout = data.get("timeout")
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, int | float | Decimal) or not timeout > 0:
                raise self.error("timeout must be a positive number of seconds", "timeout")
            out["timeout"] = float(timeout)
        return out


def _module_locator(source: JsSource) -> Any:
    """Where the exported `tool` object (or one of its keys) is in a module, for error positions."""
    try:
        tokens = tokenize(source.text)
    except LexError:
        tokens = []
    positions = Positions(source.original)
    tool_at: int | None = None
    for i, t in enumerate(tokens):
        if t.kind == "name" and t.value == "tool" and i + 1 < len(tokens) and tokens[i + 1].value in ("=", ":"):
            tool_at = i
            break

    def locate(key: str | None) -> tuple[int | None, int | None]:
        if tool_at is None:
            return None, None
        if key is not None:
            depth = 0
            for t in tokens[tool_at + 1 :]:
                if t.kind == "punct" and t.value in "([{":
                    depth += 1
                elif t.kind == "punct" and t.value in ")]}":
                    depth -= 1
                    if depth <= 0:
                        break
                elif depth == 1 and t.kind in ("name", "str") and t.value.strip("'\"") == key:
                    return positions.at(t.start)
        return positions.at(tokens[tool_at].start)

    return locate


def _yaml_locator(doc: YamlDocument) -> Any:
    def locate(key: str | None) -> tuple[int | None, int | None]:
        try:
            return doc.position([key] if key is not None else [], key=key is not None)
        except Exception:
            return None, None

    return locate


def _tool_name(path: Path) -> str:
    name = path.name
    return name[: -len(".js")] if name.lower().endswith(".js") else path.stem


async def load_tool(
    path: str | os.PathLike[str],
    *,
    options: JsSandboxOptions | None = None,
    sandbox: JsSandbox | None = None,
) -> JsTool:
    """Load a JavaScript tool file (a path the host chose, read as the host).

    Args:
        path: The `.js` file.
        options: The sandbox limits for the tool's calls (and for loading it).
        sandbox: A sandbox to run in (its options are used); by default one made from `options`.

    Raises:
        BadDefinitionError: the file does not parse, has no `invoke`, imports another file, its top level fails or
            passes a limit, or its description (exported `tool`, or the `.tool.yaml` beside it) is invalid.
    """
    import anyio.to_thread

    from onellm.yamlio import load_document

    box = sandbox or JsSandbox(options)
    file = Path(path)
    source, yaml_path, yaml_text = await anyio.to_thread.run_sync(_read_tool_files, file)
    source.check_module()
    try:
        described = await box.describe(source, slot=JsSlot(kind="load"))
    except JsSandboxError as exc:
        raise BadDefinitionError(
            f"the tool file failed to load: {exc.message}", file=source.file, line=exc.line, column=exc.column
        ) from None
    exports = described.get("exports") or []
    if "invoke" not in exports:
        line, column = _module_locator(source)(None)
        raise BadDefinitionError(
            "a tool file must export a function named invoke(inputs, ctx)", file=source.file, line=line, column=column
        )
    if yaml_text is not None:
        doc = load_document(yaml_text, file=yaml_path.name)
        reader = _Description(doc.plain, yaml_path.name, _yaml_locator(doc))
    elif isinstance(described.get("tool"), str):
        reader = _Description(msgspec.json.decode(described["tool"]), source.file, _module_locator(source))
    else:
        raise BadDefinitionError(
            f"the tool file exports no 'tool' description and there is no {yaml_path.name} beside it",
            file=source.file,
        )
    spec = reader.read(_tool_name(file))
    return _make_tool(spec, source, box)


def _read_tool_files(file: Path) -> tuple[JsSource, Path, bytes | None]:
    """The tool file, and the text of the `.tool.yaml` beside it when there is one (blocking)."""
    source = JsSource.read(file)
    yaml_path = file.with_name(_tool_name(file) + ".tool.yaml")
    if not yaml_path.is_file():
        return source, yaml_path, None
    try:
        return source, yaml_path, yaml_path.read_bytes()
    except OSError as exc:
        raise BadDefinitionError(f"cannot read the file: {exc.strerror or exc}", file=yaml_path.name) from None


def _list_tool_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise BadDefinitionError("not a folder of tool files", file=folder.name)
    return sorted(
        (entry for entry in folder.iterdir() if entry.name.lower().endswith(".js") and entry.is_file()),
        key=lambda p: p.name,
    )


def _make_tool(spec: dict[str, Any], source: JsSource, box: JsSandbox) -> JsTool:
    requires: tuple[str, ...] = spec["requires"]
    timeout: float | None = spec.get("timeout")
    name: str = spec["name"]

    async def handler(values: dict[str, Any], ctx: ToolContext) -> Any:
        try:
            result = await box.call(source, "invoke", [values], context=ctx, requires=requires, time_limit=timeout)
        except JsSandboxError as exc:
            return ToolResult.error(f"Error: {exc.message}")
        if result.output:
            _log.debug("%s console: %s", name, result.output)
        return _tool_value(result)

    tool = JsTool(
        name=name,
        description=spec["description"],
        input_schema=spec["inputSchema"],
        handler=handler,
        arguments=JsonType(spec["inputSchema"], spec["checker"], hashable=False),
        is_async=True,
        output_schema=spec.get("outputSchema"),
        ends_loop=spec["endsLoop"],
        requires_approval=spec["requiresApproval"],
        parallel_safe=spec["parallelSafe"],
        required_grants=tuple(CAPABILITY_GRANTS[r] for r in requires),
        package=_PACKAGE,
    )
    tool.cost_hint = spec.get("costHint")
    tool.file = source.file
    tool.requires = requires
    tool.sandbox = box
    tool.source = source
    tool.timeout = timeout
    return tool


def _tool_value(result: JsRunResult) -> Any:
    """A string result is text, `undefined` an empty result, anything else a JSON part."""
    if result.type == "undefined":
        return None
    if result.type == "string":
        return result.value
    if result.value is None:
        return ToolResult(parts=_json_parts(None), value=None)
    return result.value


def _json_parts(value: Any) -> list[Any]:
    from onellm.messages import JsonPart

    return [JsonPart(json=value)]


async def load_tool_directory(
    path: str | os.PathLike[str],
    *,
    options: JsSandboxOptions | None = None,
    sandbox: JsSandbox | None = None,
) -> list[JsTool]:
    """Load every `.js` file of a folder (not its subfolders), in name order.

    Raises:
        BadDefinitionError: for the first file that does not load, or when two files give the same tool name.
    """
    import anyio.to_thread

    box = sandbox or JsSandbox(options)
    tools: list[JsTool] = []
    seen: dict[str, str] = {}
    for entry in await anyio.to_thread.run_sync(_list_tool_files, Path(path)):
        tool = await load_tool(entry, sandbox=box)
        if tool.name in seen:
            raise BadDefinitionError(f"the tool name {tool.name!r} is also given by {seen[tool.name]}", file=entry.name)
        seen[tool.name] = entry.name
        tools.append(tool)
    return tools


def load_tool_sync(path: str | os.PathLike[str], *, options: JsSandboxOptions | None = None) -> JsTool:
    """Blocking form of `load_tool`, for scripts. Not for use inside async code."""
    import anyio

    return anyio.run(lambda: load_tool(path, options=options))


def load_tool_directory_sync(path: str | os.PathLike[str], *, options: JsSandboxOptions | None = None) -> list[JsTool]:
    """Blocking form of `load_tool_directory`, for scripts. Not for use inside async code."""
    import anyio

    return anyio.run(lambda: load_tool_directory(path, options=options))


# ---------------------------------------------------------------------------------------------------- run_javascript

_RUN_DESCRIPTION = (
    "Runs JavaScript (ECMAScript 2023) in a sandbox and returns what it printed with console.log and, after '=> ', "
    "the JSON of the value it returned. The code is the body of an async function: use `return` and top-level "
    "`await`; `input` holds the input value. `ctx.readFile(path)`, `ctx.writeFile(path, text)` and "
    "`ctx.fetch(url, { method, headers, body })` work where the host granted files or network. No modules, timers, "
    "process or environment."
)


def _head_tail(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - head - tail} characters elided ...]\n{text[len(text) - tail :]}"


def render_run(result: JsRunResult, limit: int) -> str:
    """`run_javascript`'s text: the console output, then `=> <returned JSON>`; `(no output)` with neither."""
    parts: list[str] = []
    if result.output:
        parts.append(result.output.rstrip("\n"))
    if result.json is not None:
        parts.append("=> " + _head_tail(result.json, limit))
    return "\n".join(parts) if parts else "(no output)"


def run_javascript(
    options: JsSandboxOptions | None = None, *, sandbox: JsSandbox | None = None, name: str = "run_javascript"
) -> Tool[..., Any]:
    """The `run_javascript` built-in: the model passes `{ code, input? }`; the code runs as the body of an async
    function with `input` and `ctx` in scope, and every `ctx` function is available where the call's grants allow
    it. The result is the console output followed by `=> <returned JSON>` (each capped to `max_output_chars`, head
    and tail kept); a failure is an error result starting with `Error: `."""
    box = sandbox or JsSandbox(options)
    limit = box.options.max_output_chars

    async def handler(values: dict[str, Any], ctx: ToolContext) -> Any:
        code = values.get("code")
        if not isinstance(code, str):
            return ToolResult.error("Error: code must be a string")
        try:
            result = await box.run_code(code, input=values.get("input"), context=ctx)
        except JsSandboxError as exc:
            text = "Error: " + exc.message
            if exc.output:
                text = exc.output.rstrip("\n") + "\n" + text
            return ToolResult.error(text)
        return render_run(result, limit)

    schema = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "The body of an async function: statements, `return`, `await`."},
            "input": {"description": "A JSON value the code reads as `input`."},
        },
        "required": ["code"],
        "additionalProperties": False,
    }
    return Tool.from_schema(name, _RUN_DESCRIPTION, schema, handler, parallel_safe=True, package=_PACKAGE)
