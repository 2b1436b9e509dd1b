"""The agent's own tools: `todo` (a plan), `memory` (notes kept across runs), `ask_user` (a question to a person) and
`task_complete` (the end of the task).

`todo` and `memory` need the write grant on the working directory; they keep their files in the state directory
(`onellm.tools.builtin._state`), which the file tools cannot reach. `ask_user` needs no grant: it returns one JSON part
`{"type": "ask_user", "question": ..., "choices": [...]}` that a runner recognises (`ask_user_request`) to put the
instance in the waiting state until a person answers. `task_complete` needs no grant either: it ends the agent loop
(`Tool.ends_loop`) with its `result`, `summary` and optional `title`; `task_complete_tool(output=...)` makes a variant
whose `result` has a given type or JSON Schema (the agent's typed output).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from onellm._public import publish as _publish
from onellm.errors import CapabilityDeniedError, StorageError
from onellm.tools import Tool, ToolContext
from onellm.tools.builtin._options import BuiltinOptions
from onellm.tools.builtin._state import MemoryStore, StateError, TodoItem, TodoStore, render_todos
from onellm.tools.builtin._text import describe

__all__ = ["TASK_COMPLETE", "AskUserRequest", "TaskCompletion", "agent_tools", "ask_user_request", "task_complete_tool"]

_MAX_QUESTION_CHARS = 4000
_MAX_CHOICES = 20
_MAX_CHOICE_CHARS = 200


TASK_COMPLETE = "task_complete"
"""The name of the tool that ends an agent's task."""


@dataclass(frozen=True, slots=True)
class TaskCompletion:
    """What `task_complete` was called with: the result (typed when the agent declares an output), the summary and the
    optional title. It is the `ToolResult.value` of the call."""

    result: Any
    summary: str
    title: str | None = None


def _completed(result: Any, summary: str, title: str | None) -> Any:
    from onellm.messages import TextPart
    from onellm.tools import ToolResult

    if not summary.strip():
        raise ValueError("summary is empty")
    return ToolResult(parts=[TextPart("Task complete.")], value=TaskCompletion(result, summary, title))


def task_complete_tool(output: Any = None) -> Tool[..., Any]:
    """The `task_complete` tool: it ends the agent loop with `result`, `summary` and an optional `title`.

    Args:
        output: The type of `result` (any type a tool parameter may have), or a JSON Schema (a mapping) it must
            follow; by default `result` is text.

    Raises:
        TypeError: `output` is a type with no JSON Schema, or a schema the argument checker cannot enforce.
    """
    description = (
        "Ends the task: call it once the task is done, with the result and a short summary of what was done. "
        "Nothing runs after it."
    )
    if output is not None and isinstance(output, Mapping):
        schema = {
            "type": "object",
            "properties": {
                "result": dict(output),
                "summary": {"type": "string", "description": "What was done, in a sentence or two."},
                "title": {"type": "string", "description": "A short title for the task."},
            },
            "required": ["result", "summary"],
            "additionalProperties": False,
        }

        async def handler(values: dict[str, Any], ctx: ToolContext) -> Any:
            return _completed(values.get("result"), str(values.get("summary", "")), values.get("title"))

        return Tool.from_schema(TASK_COMPLETE, description, schema, handler, ends_loop=True)

    def task_complete(result: Any, summary: str, title: str | None = None) -> Any:
        """Ends the task.

        Args:
            result: The result of the task, as the task asked for it.
            summary: What was done, in a sentence or two.
            title: A short title for the task.
        """
        return _completed(result, summary, title)

    task_complete.__annotations__ = {
        "result": str if output is None else output,
        "summary": str,
        "title": str | None,
        "return": Any,
    }
    return Tool.create(task_complete, description=description, ends_loop=True, in_thread=False)


@dataclass(frozen=True, slots=True)
class AskUserRequest:
    """A question `ask_user` put to a person."""

    question: str
    choices: tuple[str, ...]


def ask_user_request(part: object) -> AskUserRequest | None:
    """The question held by an `ask_user` result part, or None when the part is something else.

    Accepts a `JsonPart` or its plain JSON value.
    """
    value: Any = getattr(part, "json", part)
    if not isinstance(value, Mapping) or value.get("type") != "ask_user":
        return None
    question = value.get("question")
    choices = value.get("choices", [])
    if not isinstance(question, str) or not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        return None
    return AskUserRequest(question, tuple(choices))


def _state_directory(ctx: ToolContext, options: BuiltinOptions) -> Path:
    """The state directory, after checking the call may write in its working directory (the grant these tools use)."""
    caps = ctx.capabilities
    working = Path(ctx.working_directory)
    if not caps.is_writable(str(working)):
        raise CapabilityDeniedError(
            "todo and memory need the write grant on the working directory (rule: files-write)",
            target=str(working),
            rule="files-write",
        )
    if options.state_directory is not None:
        return Path(options.state_directory)
    return Path(os.path.realpath(working)) / ".onellm"


@contextlib.contextmanager
def _state_errors(tool: str) -> Iterator[None]:
    """What the system says about the state directory, without its host path (the model never gave it)."""
    try:
        yield
    except OSError as exc:
        if exc.errno is None:
            raise
        reason = (exc.strerror or type(exc).__name__).rstrip(".")
        raise StorageError(
            f"{tool} could not use its state directory: {reason[:1].lower()}{reason[1:]}", operation=tool
        ) from exc


def agent_tools(options: BuiltinOptions) -> list[Tool[..., object]]:
    """`todo`, `memory` and `ask_user`, bound to `options`."""

    def todo(ctx: ToolContext, todos: list[TodoItem] | None = None) -> str:
        """Keeps the plan for this task as a todo list. Call with todos to replace the whole list; without to read it.

        Keep exactly one item in_progress while working, and mark items completed as soon as they are done.

        Args:
            todos: The complete new list, in order. Omit it to read the current list.
        """
        with _state_errors("todo"):
            store = TodoStore(_state_directory(ctx, options), ctx.instance_id)
            if todos is not None:
                store.write(list(todos))
            return render_todos(store.read())

    def memory(
        action: Literal["list", "read", "write", "append", "delete"],
        ctx: ToolContext,
        key: str | None = None,
        content: str | None = None,
    ) -> str:
        """Keeps notes that outlast this run, one entry per key, shared by agents in the same working directory.

        Args:
            action: 'list' the keys, 'read' an entry, 'write' (replace) or 'append' to one, or 'delete' it.
            key: The entry: 1 to 64 letters, digits, '.', '_' or '-'. Needed for every action but 'list'.
            content: The text to write or append.
        """
        with _state_errors("memory"):
            return _memory(MemoryStore(_state_directory(ctx, options)), action, key, content)

    def _memory(store: MemoryStore, action: str, key: str | None, content: str | None) -> str:
        if action == "list":
            keys = store.keys()
            return "\n".join(keys) if keys else "Memory is empty."
        if key is None:
            raise StateError(f"memory action {action!r} needs a key")
        if action == "read":
            return store.read(key)
        if action == "delete":
            store.delete(key)
            return f"Deleted memory entry {key!r}."
        if content is None:
            raise StateError(f"memory action {action!r} needs content")
        size = store.write(key, content, append=action == "append")
        return f"{'Appended to' if action == 'append' else 'Wrote'} memory entry {key!r} ({size} characters)."

    def ask_user(question: str, choices: list[str] | None = None) -> dict[str, Any]:
        """Asks the person a question and waits for the answer, which arrives as this call's result.

        Ask only what you cannot find out yourself; one question at a time.

        Args:
            question: The question, in full sentences.
            choices: Suggested answers the person can pick from; they may still answer freely.
        """
        if not question.strip():
            raise ValueError("question is empty")
        if len(question) > _MAX_QUESTION_CHARS:
            raise ValueError(f"question is longer than {_MAX_QUESTION_CHARS} characters")
        picks = list(choices or [])
        if len(picks) > _MAX_CHOICES:
            raise ValueError(f"choices holds {len(picks)} entries; at most {_MAX_CHOICES}")
        for i, choice in enumerate(picks):
            if not choice.strip():
                raise ValueError(f"choices[{i}] is empty")
            if len(choice) > _MAX_CHOICE_CHARS:
                raise ValueError(f"choices[{i}] is longer than {_MAX_CHOICE_CHARS} characters")
        return {"type": "ask_user", "question": question, "choices": picks}

    return [
        Tool.create(todo, description=describe(todo), required_grants=("files_write",), parallel_safe=False),
        Tool.create(memory, description=describe(memory), required_grants=("files_write",), parallel_safe=False),
        Tool.create(ask_user, description=describe(ask_user), in_thread=False),
    ]


_publish("onellm.tools.builtin", AskUserRequest)
