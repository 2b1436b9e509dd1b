"""Unit tests of the text and state helpers (the rules the file tools and `todo`/`memory` share)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from onellm.tools.builtin._state import MemoryStore, StateError, TodoItem, TodoStore, render_todos
from onellm.tools.builtin._text import (
    BinaryFileError,
    ReplaceError,
    decode_text,
    encode_text,
    line_range,
    replace_in_text,
    split_lines,
    split_lines_keepends,
    truncate_middle,
)


def test_split_lines_only_at_lf_and_crlf() -> None:
    assert split_lines("a\r\nb\x0cc\nd\u2028e\n") == ["a", "b\x0cc", "d\u2028e"]
    assert split_lines("a\nb") == ["a", "b"]
    assert split_lines("") == []
    assert split_lines_keepends("a\r\nb\nc") == ["a\r\n", "b\n", "c"]
    assert split_lines_keepends("a\n") == ["a\n"]


def test_decode_text() -> None:
    assert decode_text(b"\xef\xbb\xbfhi", "f").text == "hi"
    assert decode_text(b"\xef\xbb\xbfhi", "f").bom
    assert encode_text("hi", bom=True) == b"\xef\xbb\xbfhi"
    with pytest.raises(BinaryFileError, match="f is a binary file"):
        decode_text(b"a\x00b", "f")
    with pytest.raises(BinaryFileError, match="invalid byte at offset 1"):
        decode_text(b"a\xffb", "f")


def test_line_range() -> None:
    text = "1\n2\n3\n4\n"
    assert line_range(text, 2, 3) == ("2\n3\n", 2, 3, 4)
    assert line_range(text, 3, None) == ("3\n4\n", 3, 4, 4)
    assert line_range(text, 4, 99) == ("4\n", 4, 4, 4)
    assert line_range(text, 5, None) == ("", 5, 4, 4)


def test_truncate_middle() -> None:
    assert truncate_middle("short", 10) == ("short", False)
    text, cut = truncate_middle("a" * 10 + "b" * 10, 10)
    assert cut
    assert text == "aaaaa\n[... 10 characters elided ...]\nbbbbb"


def test_replace_in_text_rules() -> None:
    assert replace_in_text("a b a", "b", "c", replace_all=False, name="f") == ("a c a", 1)
    assert replace_in_text("a b a", "a", "c", replace_all=True, name="f") == ("c b c", 2)
    with pytest.raises(ReplaceError, match=r"occurs 2 times in f \(at lines 1, 3\)"):
        replace_in_text("a\nb\na\n", "a", "c", replace_all=False, name="f")
    with pytest.raises(ReplaceError, match="not found in f"):
        replace_in_text("abc", "x", "y", replace_all=False, name="f")
    # CRLF file, LF old_string: both are matched and written with CRLF; a CRLF new_string is not doubled.
    assert replace_in_text("a\r\nb\r\n", "a\nb", "x\r\ny", replace_all=False, name="f") == ("x\r\ny\r\n", 1)


def test_todo_store_round_trip_and_damaged_file(tmp_path: Path) -> None:
    store = TodoStore(tmp_path, "inst/../x")
    assert store.path.parent == tmp_path / "todos"
    assert store.path.name == "inst_.._x.json"
    store.write([TodoItem("a", "completed"), TodoItem("b")])
    assert store.read() == [TodoItem("a", "completed"), TodoItem("b", "pending")]
    store.path.write_text('[{"content": "ok", "status": "pending"}, {"content": 3}, "junk"]')
    assert store.read() == [TodoItem("ok")]
    assert render_todos([]) == "The todo list is empty."
    leftovers = [p.name for p in store.path.parent.iterdir() if p.name.startswith(".tmp-")]
    assert leftovers == []


def test_memory_store_keys(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert store.keys() == []
    store.write("a", "1")
    (tmp_path / "memory" / "not-md.txt").write_text("x")
    assert store.keys() == ["a"]
    with pytest.raises(StateError, match="memory key"):
        store.read("../a")


def test_every_builtin_tool_has_a_full_description_and_grants() -> None:
    from onellm.tools.builtin import BUILTIN_TOOL_NAMES, builtin_tools

    tools = builtin_tools()
    assert [t.name for t in tools] == list(BUILTIN_TOOL_NAMES)
    grants = {t.name: t.required_grants for t in tools}
    assert grants == {
        "read_file": ("files_read",),
        "list_files": ("files_read",),
        "search_files_regex": ("files_read",),
        "write_file": ("files_read", "files_write"),
        "replace_string": ("files_read", "files_write"),
        "apply_patch": ("files_read", "files_write"),
        "execute_terminal_command": ("shell",),
        "http_request": ("network",),
        "search_web": ("network",),
        "todo": ("files_write",),
        "memory": ("files_write",),
        "ask_user": (),
        "run_decider": ("files_read",),
    }
    for t in tools:
        assert t.description
        assert "Args:" not in t.description
        assert t.input_schema["additionalProperties"] is False
    apply_patch = next(t for t in tools if t.name == "apply_patch")
    assert "nothing is written" in apply_patch.description
    assert list(apply_patch.input_schema["properties"]) == ["patch", "dry_run"]
    listing = next(t for t in tools if t.name == "list_files")
    assert list(listing.input_schema["properties"]) == [
        "path",
        "recursive",
        "inclusionPatterns",
        "exclusionPatterns",
    ]


def test_references_to_builtin_tools_check_their_grants(tmp_path: Path) -> None:
    from onellm.capabilities import Capabilities
    from onellm.errors import BadDefinitionError
    from onellm.tools import ToolReferenceResolver
    from onellm.tools.builtin import builtin_tools

    tools = builtin_tools()
    files_only = ToolReferenceResolver(tools, Capabilities.read_only_files(tmp_path))
    resolved = files_only.resolve([{"tools": ["read_file", "list_files", "search_files_regex", "ask_user"]}])
    assert sorted(t.name for t in resolved.tools) == ["ask_user", "list_files", "read_file", "search_files_regex"]
    for name, grant in (("write_file", "writable file grant"), ("execute_terminal_command", "shell grant")):
        with pytest.raises(BadDefinitionError, match=grant):
            files_only.resolve([{"tools": [name]}], file="agents/a.yaml")
    with pytest.raises(BadDefinitionError, match="network grant"):
        ToolReferenceResolver(tools, Capabilities.files(tmp_path)).resolve([{"tools": ["search_web"]}])
    everything = Capabilities.files(tmp_path) + Capabilities.shell_commands("echo") + Capabilities.network("a.example")
    assert len(ToolReferenceResolver(tools, everything).resolve([{"tools": [t.name for t in tools]}]).tools) == 13


def test_state_files_planted_as_links_are_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('[{"content": "leaked", "status": "pending"}]')
    store = TodoStore(tmp_path / "state", "i")
    store.path.parent.mkdir(parents=True)
    store.path.symlink_to(secret)
    with pytest.raises(StateError, match="symbolic link"):
        store.read()
    memory = MemoryStore(tmp_path / "state")
    memory.dir.mkdir()
    (memory.dir / "k.md").symlink_to(secret)
    with pytest.raises(StateError, match="symbolic link"):
        memory.read("k")
    # A write replaces the link itself, never the file it points at.
    store.write([TodoItem("mine")])
    memory.write("k", "mine")
    assert secret.read_text() == '[{"content": "leaked", "status": "pending"}]'
    assert store.read() == [TodoItem("mine")]


@pytest.mark.skipif(os.name == "nt", reason="posix links and pipes")
def test_a_state_folder_swapped_for_a_link_after_the_check_gets_nothing_written_through_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onellm.tools.builtin import _state

    outside = tmp_path / "outside"
    outside.mkdir()
    state = tmp_path / "work" / ".onellm"
    (state / "memory").mkdir(parents=True)
    checked = _state._Folder._links

    def check_then_swap(folder: Any) -> None:
        checked(folder)
        if folder.path.is_dir() and not folder.path.is_symlink():
            folder.path.rename(folder.path.with_name("memory.moved"))
            folder.path.symlink_to(outside)

    monkeypatch.setattr(_state._Folder, "_links", check_then_swap)
    memory = MemoryStore(state)
    with pytest.raises(StateError, match="symbolic link"):
        memory.write("k", "planted")
    assert list(outside.iterdir()) == []


@pytest.mark.skipif(os.name == "nt", reason="posix pipes")
def test_state_files_that_are_pipes_or_directories_are_refused_without_blocking(tmp_path: Path) -> None:
    import threading

    state = tmp_path / "state"
    store = TodoStore(state, "i")
    store.path.parent.mkdir(parents=True)
    os.mkfifo(store.path)
    memory = MemoryStore(state)
    memory.dir.mkdir()
    os.mkfifo(memory.dir / "pipe.md")
    (memory.dir / "dir.md").mkdir()
    outcomes: list[str] = []

    def attempt() -> None:
        for call in (store.read, lambda: memory.read("pipe"), lambda: memory.read("dir"), lambda: memory.delete("dir")):
            try:
                call()
            except StateError as exc:
                outcomes.append(str(exc))

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "reading a pipe blocked"
    assert outcomes == [
        "the todo file of this instance is not a regular file (a pipe, a device or a socket); refusing to read it",
        "memory entry 'pipe' is not a regular file (a pipe, a device or a socket); refusing to read it",
        "memory entry 'dir' is a directory, not a file",
        "memory entry 'dir' is a directory, not a file",
    ]
    assert memory.keys() == []
