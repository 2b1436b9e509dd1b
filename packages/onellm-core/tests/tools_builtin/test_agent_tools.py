"""`todo`, `memory` and `ask_user` through `Tool.invoke`: state files, grants, bad arguments and limits."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onellm.capabilities import Capabilities
from onellm.tools.builtin import AskUserRequest, ask_user_request

pytestmark = pytest.mark.anyio


def ok(result: Any) -> str:
    assert not result.is_error, result.text
    return str(result.text)


def err(result: Any) -> str:
    assert result.is_error, result.text
    return str(result.text)


# ------------------------------------------------------------------------------------------------------------ todo


async def test_todo_replaces_and_reads_per_instance(run: Any, root: Path) -> None:
    todos = [
        {"content": "Read the code", "status": "completed"},
        {"content": "Write the test", "status": "in_progress"},
        {"content": "Ship it"},
    ]
    text = ok(await run("todo", {"todos": todos}, instance_id="inst-1"))
    assert text == ("1. [x] Read the code\n2. [>] Write the test\n3. [ ] Ship it\n(1 of 3 completed, 1 in progress)")
    assert ok(await run("todo", {}, instance_id="inst-1")) == text
    assert ok(await run("todo", {}, instance_id="inst-2")) == "The todo list is empty."
    stored = json.loads((root / ".onellm" / "todos" / "inst-1.json").read_text())
    assert stored[2] == {"content": "Ship it", "status": "pending"}


async def test_todo_state_is_out_of_the_file_tools_reach(run: Any, root: Path) -> None:
    ok(await run("todo", {"todos": [{"content": "x"}]}))
    assert "CapabilityDeniedError" in err(await run("read_file", {"path": ".onellm/todos/default.json"}))
    assert "CapabilityDeniedError" in err(
        await run("write_file", {"path": ".onellm/todos/default.json", "content": "[]"})
    )


async def test_todo_bad_arguments_and_limits(run: Any) -> None:
    assert "Argument 'todos[0].status'" in err(await run("todo", {"todos": [{"content": "x", "status": "later"}]}))
    assert "Argument 'todos[1].content'" in err(await run("todo", {"todos": [{"content": "x"}, {}]}))
    assert "todos[0].content is empty" in err(await run("todo", {"todos": [{"content": " "}]}))
    assert "at most 100" in err(await run("todo", {"todos": [{"content": "x"}] * 101}))
    assert "longer than 1000" in err(await run("todo", {"todos": [{"content": "x" * 1001}]}))


async def test_todo_needs_the_write_grant(run: Any, root: Path) -> None:
    text = err(await run("todo", {}, Capabilities.read_only_files(root)))
    assert "CapabilityDeniedError" in text
    assert "write grant" in text
    assert not (root / ".onellm").exists()


# ---------------------------------------------------------------------------------------------------------- memory


async def test_memory_round_trip(run: Any, root: Path) -> None:
    assert ok(await run("memory", {"action": "list"})) == "Memory is empty."
    assert ok(await run("memory", {"action": "write", "key": "style", "content": "tabs"})) == (
        "Wrote memory entry 'style' (4 characters)."
    )
    ok(await run("memory", {"action": "append", "key": "style", "content": ", 120 columns"}))
    ok(await run("memory", {"action": "write", "key": "build.cmd", "content": "make"}))
    assert ok(await run("memory", {"action": "read", "key": "style"})) == "tabs, 120 columns"
    assert ok(await run("memory", {"action": "list"})) == "build.cmd\nstyle"
    assert (root / ".onellm" / "memory" / "style.md").read_text() == "tabs, 120 columns"
    assert ok(await run("memory", {"action": "delete", "key": "style"})) == "Deleted memory entry 'style'."
    assert "no memory entry 'style'; existing keys: build.cmd" in err(
        await run("memory", {"action": "read", "key": "style"})
    )


async def test_memory_bad_keys_and_arguments(run: Any) -> None:
    for key in ("../escape", "a/b", ".hidden", "", "x" * 65, "a..b"):
        assert "memory key" in err(await run("memory", {"action": "write", "key": key, "content": "x"})), key
    assert "needs a key" in err(await run("memory", {"action": "read"}))
    assert "needs content" in err(await run("memory", {"action": "write", "key": "k"}))
    assert "Argument 'action'" in err(await run("memory", {"action": "forget"}))
    assert "no memory entry" in err(await run("memory", {"action": "delete", "key": "nope"}))


async def test_memory_limits(run: Any) -> None:
    assert "longer than 32768" in err(await run("memory", {"action": "write", "key": "k", "content": "x" * 32769}))
    ok(await run("memory", {"action": "write", "key": "k", "content": "x" * 32768}))
    assert "longer than 32768" in err(await run("memory", {"action": "append", "key": "k", "content": "y"}))


async def test_memory_entry_count_limit(run: Any, root: Path) -> None:
    memory_dir = root / ".onellm" / "memory"
    memory_dir.mkdir(parents=True)
    for i in range(200):
        (memory_dir / f"k{i}.md").write_text("x")
    assert "200 entries already" in err(await run("memory", {"action": "write", "key": "new", "content": "x"}))
    ok(await run("memory", {"action": "write", "key": "k5", "content": "replaced"}))


async def test_memory_state_directory_option_and_grant(
    make_runner: Callable[..., Any], root: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    run = make_runner(state_directory=state)
    ok(await run("memory", {"action": "write", "key": "k", "content": "v"}))
    assert (state / "memory" / "k.md").read_text() == "v"
    assert "CapabilityDeniedError" in err(await run("memory", {"action": "list"}, Capabilities.none()))


async def test_memory_refuses_a_planted_link(run: Any, root: Path, tmp_path: Path) -> None:
    (root / ".onellm").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (root / ".onellm" / "memory").symlink_to(tmp_path / "elsewhere")
    assert "symbolic link" in err(await run("memory", {"action": "write", "key": "k", "content": "v"}))
    assert list((tmp_path / "elsewhere").iterdir()) == []


# -------------------------------------------------------------------------------------------------------- ask_user


async def test_ask_user_returns_one_json_part(run: Any) -> None:
    from onellm.messages import JsonPart

    result = await run("ask_user", {"question": "Which branch?", "choices": ["main", "dev"]}, Capabilities.none())
    assert not result.is_error
    (part,) = result.parts
    assert isinstance(part, JsonPart)
    assert part.json == {"type": "ask_user", "question": "Which branch?", "choices": ["main", "dev"]}
    assert ask_user_request(part) == AskUserRequest("Which branch?", ("main", "dev"))
    plain = await run("ask_user", {"question": "Why?"}, Capabilities.none())
    assert plain.parts[0].json == {"type": "ask_user", "question": "Why?", "choices": []}


def test_ask_user_request_recognises_only_its_shape() -> None:
    assert ask_user_request({"type": "ask_user", "question": "q", "choices": ["a"]}) == AskUserRequest("q", ("a",))
    assert ask_user_request({"type": "other", "question": "q"}) is None
    assert ask_user_request({"type": "ask_user", "question": 3}) is None
    assert ask_user_request({"type": "ask_user", "question": "q", "choices": [1]}) is None
    assert ask_user_request("text") is None


async def test_ask_user_bad_arguments_and_limits(run: Any) -> None:
    assert "question is empty" in err(await run("ask_user", {"question": " "}))
    assert "longer than 4000" in err(await run("ask_user", {"question": "x" * 4001}))
    assert "at most 20" in err(await run("ask_user", {"question": "q", "choices": ["a"] * 21}))
    assert "choices[1] is empty" in err(await run("ask_user", {"question": "q", "choices": ["a", ""]}))
    assert "Argument 'choices'" in err(await run("ask_user", {"question": "q", "choices": "a"}))
