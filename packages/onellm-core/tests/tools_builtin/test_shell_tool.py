"""`execute_terminal_command` through `Tool.invoke`: grants, approval, environment, timeout and output limits."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onellm.capabilities import Capabilities, CommandRequest, ShellOptions

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(os.name == "nt", reason="posix commands")]


def ok(result: Any) -> str:
    assert not result.is_error, result.text
    return str(result.text)


def err(result: Any) -> str:
    assert result.is_error, result.text
    return str(result.text)


def allow(root: Path, *entries: str) -> Capabilities:
    return Capabilities.files(root) + Capabilities.shell_commands(*entries)


async def test_allow_listed_command_runs(run: Any, root: Path) -> None:
    text = ok(await run("execute_terminal_command", {"command": "echo hello world"}, allow(root, "echo")))
    assert text == "exit code: 0\n--- stdout (12 bytes) ---\nhello world\n"


async def test_metacharacters_are_plain_text_or_refused(run: Any, root: Path) -> None:
    caps = allow(root, "echo")
    refused = err(await run("execute_terminal_command", {"command": "echo hi; rm -rf /"}, caps))
    assert "CapabilityDeniedError" in refused
    quoted = ok(await run("execute_terminal_command", {"command": "echo 'a; b'"}, caps))
    assert "a; b" in quoted


async def test_not_allow_listed_and_no_shell(run: Any, root: Path) -> None:
    assert "not on the shell allow-list" in err(
        await run("execute_terminal_command", {"command": "ls"}, allow(root, "echo"))
    )
    assert "no shell grant" in err(await run("execute_terminal_command", {"command": "echo hi"}))


async def test_open_shell_exit_code_and_streams(run: Any, root: Path) -> None:
    caps = Capabilities.files(root) + Capabilities.shell()
    text = ok(await run("execute_terminal_command", {"command": "echo out; echo err 1>&2; exit 3"}, caps))
    assert text == "exit code: 3\n--- stdout (4 bytes) ---\nout\n\n--- stderr (4 bytes) ---\nerr\n"
    quiet = ok(await run("execute_terminal_command", {"command": "true"}, caps))
    assert quiet == "exit code: 0\n(no output)"


async def test_working_dir(run: Any, root: Path) -> None:
    (root / "sub").mkdir()
    caps = allow(root, "pwd")
    text = ok(await run("execute_terminal_command", {"command": "pwd", "working_dir": "sub"}, caps))
    assert text.splitlines()[-1] == str(root / "sub")
    outside = err(await run("execute_terminal_command", {"command": "pwd", "working_dir": ".."}, caps))
    assert "CapabilityDeniedError" in outside


async def test_environment_only_names_the_host_allows(make_runner: Callable[..., Any], root: Path) -> None:
    caps = allow(root, "printenv")
    plain = make_runner()
    refused = err(
        await plain("execute_terminal_command", {"command": "printenv FOO", "environment": {"FOO": "1"}}, caps)
    )
    assert "may not be set by the model" in refused
    named = make_runner(shell=ShellOptions(model_environment_names=("FOO",)))
    text = ok(await named("execute_terminal_command", {"command": "printenv FOO", "environment": {"FOO": "1"}}, caps))
    assert text.endswith("1\n")


async def test_timeout_kills_the_command(run: Any, root: Path) -> None:
    caps = Capabilities.files(root) + Capabilities.shell()
    started = time.monotonic()
    text = ok(await run("execute_terminal_command", {"command": "sleep 20", "timeout_seconds": 0.3}, caps))
    assert time.monotonic() - started < 10
    assert text.startswith("timed out after")
    assert "killed" in text


async def test_output_keeps_head_and_tail(make_runner: Callable[..., Any], root: Path) -> None:
    run = make_runner(shell=ShellOptions(output_limit_bytes=100))
    caps = Capabilities.files(root) + Capabilities.shell()
    command = f"{sys.executable} -c \"print('A' * 3000 + 'TAIL')\""
    text = ok(await run("execute_terminal_command", {"command": command}, caps))
    assert "--- stdout (3005 bytes) ---" in text
    assert "bytes elided" in text
    assert text.rstrip().endswith("TAIL")
    assert len(text) < 400


async def test_loop_approval_needs_the_gate(run: Any, root: Path) -> None:
    caps = Capabilities.files(root) + Capabilities.shell_with_loop_approval()
    held = err(await run("execute_terminal_command", {"command": "echo hi"}, caps))
    assert held.startswith(
        "Tool 'execute_terminal_command' failed: CapabilityMissingError: Command 'echo hi' was not run"
    )
    assert "needs the agent loop, which holds the call for approval" in held
    approved = ok(await run("execute_terminal_command", {"command": "echo hi"}, caps, extra={"approved": True}))
    assert approved.endswith("hi\n")


async def test_host_approver_is_asked(run: Any, root: Path) -> None:
    asked: list[CommandRequest] = []

    def no(request: CommandRequest) -> bool:
        asked.append(request)
        return False

    caps = Capabilities.files(root) + Capabilities.shell_with_approval(no)
    assert "was not approved" in err(await run("execute_terminal_command", {"command": "echo hi"}, caps))
    assert [r.program for r in asked] == ["echo"]


async def test_bad_arguments(run: Any, root: Path) -> None:
    caps = allow(root, "echo")
    assert "command is empty" in err(await run("execute_terminal_command", {"command": " "}, caps))
    assert "must be positive" in err(
        await run("execute_terminal_command", {"command": "echo", "timeout_seconds": -1}, caps)
    )
    assert "Argument 'command'" in err(await run("execute_terminal_command", {"command": ["echo"]}, caps))
    assert "Argument 'environment" in err(
        await run("execute_terminal_command", {"command": "echo", "environment": {"A": 1}}, caps)
    )
