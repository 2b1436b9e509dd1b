"""`JsSandboxError`: how a JavaScript run fails, and the kinds of failure."""

from __future__ import annotations

import enum
from typing import ClassVar

from onellm.errors import OnellmError

__all__ = ["JsFailure", "JsSandboxError", "cap_message"]


class JsFailure(enum.StrEnum):
    """What ended a run. A limit (`FUEL`, `MEMORY`, `TIME`, `RESULT`, `BUSY`) cannot be caught by the script."""

    SCRIPT = "script"
    """The script threw, or a catchable engine error (a too deep recursion, a too long string) was not caught."""
    SYNTAX = "syntax"
    """The code does not parse."""
    FUEL = "fuel"
    """The run spent its budget of engine steps."""
    MEMORY = "memory"
    """The run allocated more than the engine's budget, or the sandbox process grew past its backstop."""
    TIME = "time"
    """The run passed its wall-clock limit (or a tool's `timeout`)."""
    RESULT = "result"
    """The returned value is not JSON, is larger than `max_result_chars`, or nests deeper than 64 levels."""
    BUSY = "busy"
    """No run slot came free in time, or the runs together hold more bytes than the limiter allows."""


def cap_message(text: str, limit: int) -> str:
    """`text` cut at `limit` characters, with a marker saying how much was left out."""
    if len(text) <= limit:
        return text
    keep = limit
    for _ in range(4):
        marker = f"\n[... {len(text) - keep} characters left out of {len(text)}]"
        if keep + len(marker) == limit:
            break
        keep = max(0, limit - len(marker))
    return text[:keep] + f"\n[... {len(text) - keep} characters left out of {len(text)}]"


class JsSandboxError(OnellmError):
    """A JavaScript run failed: the script threw, did not parse, hit a limit, or returned something unusable.

    The message is the compact report a model or a record may see: the error, `file:line:column`, the source line and
    a caret. It names the file as given to the loader (never a path), carries no host stack and no Python type names,
    and is cut at `MAX_MESSAGE_CHARS` with a marker, so a script that throws a huge string cannot push it into a model's
    context or into records.
    """

    MAX_MESSAGE_CHARS: ClassVar[int] = 10_240
    """The longest message kept; the rest is replaced by a marker."""

    def __init__(
        self,
        message: str,
        *,
        kind: JsFailure | str,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        output: str = "",
    ) -> None:
        text = cap_message(message, self.MAX_MESSAGE_CHARS)
        super().__init__(text)
        self.message = text
        """The report, as capped."""
        self.kind = JsFailure(kind)
        """What ended the run."""
        self.file = file
        """The file's name as given to the loader (`reshape.js`, `<code>` for `run_javascript`), when known."""
        self.line = line
        """1-based line of the failure in the script's own text, when known."""
        self.column = column
        """1-based column, when known."""
        self.output = output
        """What the script wrote to `console` before it failed (head and tail kept)."""

    @property
    def is_limit(self) -> bool:
        """Whether a sandbox limit ended the run (as opposed to the script's own error)."""
        return self.kind not in (JsFailure.SCRIPT, JsFailure.SYNTAX)
