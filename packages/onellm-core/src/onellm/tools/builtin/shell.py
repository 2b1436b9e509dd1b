"""`execute_terminal_command`: one command under the shell grant.

Every check is the grant's (`Capabilities.run_command`): the line is split without a shell and matched against the
allow-list (or given to the platform shell when the shell is open), the working directory must be readable, the model
may set only the variables the host named, host approvers are asked, and the process group is killed at the timeout.
Under `Capabilities.shell_with_loop_approval` the agent loop holds the call until a person approves it
(`Capabilities.decide_command` tells it to), then runs it with `approved` set in `ToolContext.extra`; run outside the
agent loop, such a call fails with `CapabilityMissingError`.

No text the tool returns names a host path the model did not give: the working directory is checked as the model wrote
it (relative to the call's working directory), and a program that cannot start is named as written on the line.
"""

from __future__ import annotations

import os

from onellm.tools import Tool, ToolContext
from onellm.tools.builtin._options import BuiltinOptions
from onellm.tools.builtin._text import describe

__all__ = ["shell_tools"]


def shell_tools(options: BuiltinOptions) -> list[Tool[..., object]]:
    """`execute_terminal_command`, bound to `options`."""

    async def execute_terminal_command(
        command: str,
        ctx: ToolContext,
        working_dir: str | None = None,
        timeout_seconds: float | None = None,
        environment: dict[str, str] | None = None,
    ) -> str:
        """Runs a command line and returns its exit code, standard output and standard error.

        Unless the host opened a full shell, the line runs without a shell: no pipes, redirection, ';' or '&&', and
        only allow-listed programs. Long output keeps its beginning and end.

        Args:
            command: The command line, for example 'git status' or 'pytest -q tests'.
            working_dir: Directory to run in, relative to the working directory or absolute.
            timeout_seconds: Seconds before the command and its children are killed (default 30).
            environment: Variables to set for the command; only names the host allows.
        """
        if not command.strip():
            raise ValueError("command is empty")
        if timeout_seconds is not None and timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive")
        result = await ctx.capabilities.run_command(
            command,
            working_directory=working_dir if working_dir is not None else os.curdir,
            base=ctx.working_directory,
            environment=environment,
            timeout_seconds=timeout_seconds,
            options=options.shell,
            approved=ctx.extra.get("approved") is True,
        )
        if result.timed_out:
            head = f"timed out after {result.duration_seconds:.1f} s; the command and its children were killed"
        else:
            head = f"exit code: {result.exit_code}"
        parts = [head]
        if result.stdout:
            parts.append(f"--- stdout ({result.stdout_bytes} bytes) ---\n{result.stdout}")
        if result.stderr:
            parts.append(f"--- stderr ({result.stderr_bytes} bytes) ---\n{result.stderr}")
        if not result.stdout and not result.stderr:
            parts.append("(no output)")
        return "\n".join(parts)

    return [
        Tool.create(
            execute_terminal_command,
            description=describe(execute_terminal_command),
            required_grants=("shell",),
            parallel_safe=False,
        )
    ]
