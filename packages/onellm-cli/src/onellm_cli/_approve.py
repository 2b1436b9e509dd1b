"""Approvals at the terminal.

A held tool call is shown as `Approve <tool> <inputs>? [y/N]` on standard error and answered on standard input:
`y` or `yes` approves, `n`, `no` or an empty line denies (the model then sees the denial as the call's result), and end
of input decides nothing: the call stays held in the saved instance, and `onellm instances resume <id>` asks again.
`--yes` approves every held call without asking. With `--allow-shell=ask` each command is asked the same way inside
the tool (`Approve execute_terminal_command <program, arguments and directory>? [y/N]`); there, end of input refuses
the command. Whatever a model or file wrote is shown with control characters as `\\uXXXX`, so it cannot redraw the
question.
"""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING, Any, Literal

from onellm_cli._output import Reporter, safe_text, show_json

if TYPE_CHECKING:
    from onellm.capabilities import CommandRequest

__all__ = ["Decision", "TerminalApprovals"]

Decision = Literal["approve", "deny", "leave"]

DENIED_REASON = "denied at the terminal"


class TerminalApprovals:
    """Asks a person at the terminal (or approves everything with `--yes`).

    Args:
        reporter: Where the questions go (standard error).
        yes: Approve every held call and every command without asking.
        stdin: Where the answers come from.
    """

    def __init__(self, reporter: Reporter, *, yes: bool = False, stdin: IO[str] | None = None) -> None:
        self.reporter = reporter
        self.yes = yes
        self.stdin: IO[str] = stdin if stdin is not None else sys.stdin
        self.closed = False
        """True once standard input has ended: nothing more is asked."""

    async def _ask(self, question: str) -> str | None:
        """The answer line, or None at end of input."""
        import anyio.to_thread

        if self.closed:
            return None
        self.reporter.prompt(question)
        try:
            line = await anyio.to_thread.run_sync(self.stdin.readline, abandon_on_cancel=True)
        except (OSError, ValueError):
            line = ""
        if not line:
            self.closed = True
            self.reporter.line("")
            return None
        return line

    async def decide(self, tool: str, inputs: Any) -> Decision:
        """A held call: approve, deny, or leave it held (end of input)."""
        shown = f"{safe_text(tool)} {safe_text(show_json(inputs if inputs is not None else {}))}"
        if self.yes:
            self.reporter.line(f"approved {shown} (--yes)")
            return "approve"
        answer = await self._ask(f"Approve {shown}? [y/N] ")
        if answer is None:
            return "leave"
        return "approve" if answer.strip().lower() in ("y", "yes") else "deny"

    async def shell(self, request: CommandRequest) -> bool:
        """The `--allow-shell=ask` approver: asked inside `execute_terminal_command` for every command."""
        shown = request.display()
        if self.yes:
            self.reporter.line(f"approved execute_terminal_command {shown} (--yes)")
            return True
        answer = await self._ask(f"Approve execute_terminal_command {shown}? [y/N] ")
        return answer is not None and answer.strip().lower() in ("y", "yes")
