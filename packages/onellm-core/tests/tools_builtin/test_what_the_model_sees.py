"""No built-in tool shows the model an absolute host path it did not give.

The rule of the JavaScript sandbox ("what errors reveal") holds for every tool: a refused read, a failed write, a
missing working directory or a file that is not a regular file is reported with the path as the model wrote it, and a
result names files relative to the working directory or as the model wrote them. Each case runs a tool under a
hostile layout (links out of the roots, a link to another root, a pipe, a file where a directory should be, names too
long, a second root reached through a link) and checks the whole text the model gets back: no part of the temporary
tree's absolute path may appear in it unless the model's own arguments held it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from onellm.capabilities import Capabilities
from onellm.tools import ToolContext, ToolResult
from onellm.tools.builtin import BuiltinOptions, builtin_tools

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(os.name == "nt", reason="posix links and pipes")]


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    base = tmp_path.resolve()
    work, outside, other, ref = base / "work", base / "work2", base / "other", base / "ref"
    for d in (work, outside, other, ref):
        d.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    (other / "two.txt").write_text("one\ntwo\n")
    (ref / "r.txt").write_text("r1\nr2\n")
    (work / "a.txt").write_text("alpha\nbeta\n")
    (work / "dir").mkdir()
    (work / "empty.txt").write_text("")
    os.mkfifo(work / "fifo")
    (work / "out_file").symlink_to(outside / "secret.txt")
    (work / "out_dir").symlink_to(outside)
    (work / "dangling").symlink_to(outside / "not-yet.txt")
    (work / "other_link").symlink_to(other)
    (work / "ref_link").symlink_to(ref)
    (work / "loop_a").symlink_to(work / "loop_b")
    (work / "loop_b").symlink_to(work / "loop_a")
    (work / ".onellm").mkdir()
    (work / ".onellm" / "state.yaml").write_text("state\n")
    return {"base": base, "work": work, "outside": outside, "other": other, "ref": ref}


def _caps(layout: dict[str, Path], *extra: Capabilities) -> Capabilities:
    return sum(
        (Capabilities.read_only_files(layout["ref"]), Capabilities.files(layout["other"]), *extra),
        Capabilities.files(layout["work"]),
    )


async def _call(layout: dict[str, Path], name: str, args: dict[str, Any], caps: Capabilities) -> ToolResult:
    tools = {t.name: t for t in builtin_tools(BuiltinOptions())}
    ctx = ToolContext(capabilities=caps, working_directory=layout["work"])
    return await tools[name].invoke(dict(args), ctx)


def _assert_no_host_path(layout: dict[str, Path], name: str, args: dict[str, Any], result: ToolResult) -> None:
    given = json.dumps(args)
    base = str(layout["base"])
    if base in given:
        return
    assert base not in result.text, f"{name}({args}) showed a host path:\n{result.text}"
    # Not even the tree's own name: a link target relative to the root would give away the layout just as well.
    assert layout["base"].name not in result.text, f"{name}({args}) showed the tree's name:\n{result.text}"


LONG = "n" * 300

FILE_CASES: list[tuple[str, dict[str, Any], bool]] = [
    # (tool, arguments, whether the call succeeds)
    ("read_file", {"path": "out_file"}, False),
    ("read_file", {"path": "out_dir/secret.txt"}, False),
    ("read_file", {"path": "../work2/secret.txt"}, False),
    ("read_file", {"path": "fifo"}, False),
    ("read_file", {"path": "dir"}, False),
    ("read_file", {"path": "missing.txt"}, False),
    ("read_file", {"path": "a.txt/x"}, False),
    ("read_file", {"path": "loop_a"}, False),
    ("read_file", {"path": LONG}, False),
    ("read_file", {"path": ".onellm/state.yaml"}, False),
    ("read_file", {"path": "other_link/two.txt", "start_line": 2}, True),
    ("read_file", {"path": "ref_link/r.txt", "end_line": 1}, True),
    ("read_file", {"path": "other_link/../other_link/two.txt", "start_line": 5}, False),
    ("write_file", {"path": "out_dir/new.txt", "content": "x"}, False),
    ("write_file", {"path": "dangling", "content": "x"}, False),
    ("write_file", {"path": "ref_link/new.txt", "content": "x"}, False),
    ("write_file", {"path": "a.txt/x", "content": "x"}, False),
    ("write_file", {"path": "dir", "content": "x"}, False),
    ("write_file", {"path": "fifo", "content": "x"}, False),
    ("write_file", {"path": LONG, "content": "x"}, False),
    ("write_file", {"path": "new/" + LONG + "/x.txt", "content": "x"}, False),
    ("write_file", {"path": "other_link/made.txt", "content": "x"}, True),
    ("write_file", {"path": "other_link/two.txt", "content": "x"}, True),
    ("replace_string", {"path": "out_file", "old_string": "TOP", "new_string": "x"}, False),
    ("replace_string", {"path": "fifo", "old_string": "a", "new_string": "b"}, False),
    ("replace_string", {"path": "dir", "old_string": "a", "new_string": "b"}, False),
    ("replace_string", {"path": "ref_link/r.txt", "old_string": "r1", "new_string": "x"}, False),
    ("replace_string", {"path": "other_link/two.txt", "old_string": "two", "new_string": "2"}, True),
    ("replace_string", {"path": "other_link/two.txt", "old_string": "absent", "new_string": "2"}, False),
    ("apply_patch", {"patch": "--- a/out_file\n+++ b/out_file\n@@ -1 +1 @@\n-TOP SECRET\n+x\n"}, False),
    ("apply_patch", {"patch": "--- a/fifo\n+++ b/fifo\n@@ -1 +1 @@\n-a\n+b\n"}, False),
    ("apply_patch", {"patch": "--- /dev/null\n+++ b/dangling\n@@ -0,0 +1 @@\n+x\n"}, False),
    ("apply_patch", {"patch": "--- /dev/null\n+++ b/a.txt/x\n@@ -0,0 +1 @@\n+x\n"}, False),
    ("apply_patch", {"patch": "--- a/other_link/two.txt\n+++ b/other_link/two.txt\n@@ -2 +2 @@\n-two\n+2\n"}, True),
    ("apply_patch", {"patch": "--- a/other_link/two.txt\n+++ b/other_link/two.txt\n@@ -2 +2 @@\n-nope\n+2\n"}, False),
    (
        "apply_patch",
        {
            "patch": "".join(
                f"--- /dev/null\n+++ b/other_link/repo/{n}\n@@ -0,0 +1 @@\n+x\n"
                for n in ("HEAD", "objects/a", "refs/b")
            )
        },
        False,
    ),
    ("list_files", {"path": "out_dir"}, False),
    ("list_files", {"path": "fifo"}, False),
    ("list_files", {"path": "a.txt"}, False),
    ("list_files", {"path": "missing"}, False),
    ("list_files", {"path": LONG}, False),
    ("list_files", {"path": "other_link"}, True),
    ("list_files", {"recursive": True}, True),
    ("search_files_regex", {"pattern": "SECRET", "path": "out_file"}, False),
    ("search_files_regex", {"pattern": "x", "path": "fifo"}, True),
    ("search_files_regex", {"pattern": "x", "path": "missing"}, False),
    ("search_files_regex", {"pattern": "x", "path": LONG}, False),
    ("search_files_regex", {"pattern": "two", "path": "other_link/two.txt"}, True),
    ("search_files_regex", {"pattern": "two", "path": "other_link"}, True),
]


@pytest.mark.parametrize(("name", "args", "succeeds"), FILE_CASES)
async def test_file_tools_show_no_host_path(
    layout: dict[str, Path], name: str, args: dict[str, Any], succeeds: bool
) -> None:
    result = await _call(layout, name, args, _caps(layout))
    assert result.is_error is not succeeds, result.text
    _assert_no_host_path(layout, name, args, result)
    assert "TOP SECRET" not in result.text
    if not succeeds:
        # Every failure is named by a type and says what went wrong, never a bare errno line.
        assert not result.text.startswith(f"Tool '{name}' failed: OSError: [Errno"), result.text


async def test_a_pipe_is_reported_as_not_a_regular_file(layout: dict[str, Path]) -> None:
    result = await _call(layout, "read_file", {"path": "fifo"}, _caps(layout))
    assert result.text == (
        "Tool 'read_file' failed: StorageError: fifo is not a regular file (a device, a pipe or a socket); "
        "only regular files can be read"
    )


async def test_a_result_through_a_link_to_another_root_names_the_path_as_given(layout: dict[str, Path]) -> None:
    read = await _call(layout, "read_file", {"path": "other_link/two.txt", "start_line": 2}, _caps(layout))
    assert read.text == "two\n\n[other_link/two.txt: lines 2-2 of 2]"
    written = await _call(layout, "write_file", {"path": "other_link/made.txt", "content": "x"}, _caps(layout))
    assert written.text == "Created other_link/made.txt (1 bytes)."
    assert (layout["other"] / "made.txt").read_text() == "x"


SHELL_CASES: list[dict[str, Any]] = [
    {"command": "ls", "working_dir": "out_dir"},
    {"command": "ls", "working_dir": "../work2"},
    {"command": "ls", "working_dir": "missing"},
    {"command": "ls", "working_dir": "a.txt"},
    {"command": "ls", "working_dir": "fifo"},
    {"command": "ls", "working_dir": LONG},
    {"command": "ls", "working_dir": ".onellm"},
    {"command": "no-such-program-here"},
    {"command": "ls; id"},
    {"command": "ls", "environment": {"GIT_DIR": "x"}},
]


@pytest.mark.parametrize("args", SHELL_CASES)
async def test_the_terminal_tool_shows_no_host_path(layout: dict[str, Path], args: dict[str, Any]) -> None:
    caps = _caps(layout, Capabilities.shell_commands("ls", "no-such-program-here"))
    result = await _call(layout, "execute_terminal_command", args, caps)
    assert result.is_error, result.text
    assert "CapabilityDeniedError" in result.text
    _assert_no_host_path(layout, "execute_terminal_command", args, result)


async def test_a_program_that_cannot_start_is_named_as_written(
    layout: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = layout["base"] / "bin"
    bin_dir.mkdir()
    (bin_dir / "broken").write_text("not a program\n")
    (bin_dir / "broken").chmod(0o755)  # executable bit, but no interpreter line: exec fails
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    caps = _caps(layout, Capabilities.shell_commands("broken"))
    result = await _call(layout, "execute_terminal_command", {"command": "broken"}, caps)
    assert result.is_error
    assert result.text.startswith("Tool 'execute_terminal_command' failed: OSError: could not start 'broken'")
    _assert_no_host_path(layout, "execute_terminal_command", {"command": "broken"}, result)


async def test_the_agent_tools_show_no_host_path(layout: dict[str, Path]) -> None:
    read_only = Capabilities.read_only_files(layout["work"])
    for name, args in (("todo", {}), ("memory", {"action": "list"})):
        result = await _call(layout, name, args, read_only)
        assert result.is_error
        assert "CapabilityDeniedError" in result.text
        _assert_no_host_path(layout, name, args, result)
    state = layout["work"] / ".onellm"
    (state / "memory").symlink_to(layout["outside"])
    (state / "todos").symlink_to(layout["outside"])
    for name, args in (("todo", {}), ("memory", {"action": "list"})):
        result = await _call(layout, name, args, _caps(layout))
        assert result.is_error, result.text
        _assert_no_host_path(layout, name, args, result)


HTTP_CASES: list[str] = [
    "http://other.example/",
    "file:///etc/passwd",
    "http://api.example.com:70000/",
    "http://[::1]/",
    "http://127.0.0.1:1/",
    "ftp://api.example.com/x",
    "http:///nohost",
]


@pytest.mark.parametrize("url", HTTP_CASES)
@pytest.mark.parametrize("tool", ["http_request", "read_file"])
async def test_the_url_tools_show_no_host_path(layout: dict[str, Path], url: str, tool: str) -> None:
    caps = _caps(layout, Capabilities.network("api.example.com", "127.0.0.1"))
    args = {"url": url} if tool == "http_request" else {"path": url}
    result = await _call(layout, tool, args, caps)
    assert result.is_error, result.text
    _assert_no_host_path(layout, tool, args, result)
