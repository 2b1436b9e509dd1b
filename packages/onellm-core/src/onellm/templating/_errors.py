"""The template engine's internal failures, in one module that the other modules of the engine import.

They become the public `TemplateError` (in `onellm.errors`) where a render or a parse returns to the caller: a parse
failure (`ParseFail`), a run-time failure at a node (`ExecFail`), a function's own error (`CallError`, the `GoError` a
Go function returns), a function result past the output limit (`LimitError`), a limit or cancellation reached while
running (`LimitFail`), and the unwinding of a recursion deeper than Python's stack (`DepthUnwind`).
"""

from __future__ import annotations

from typing import Any

from onellm._go.errors import GoError, TextTooLarge
from onellm._go.fmt import go_quote

__all__ = [
    "MAX_TEMPLATE_DEPTH",
    "CallError",
    "DepthUnwind",
    "ExecFail",
    "LimitError",
    "LimitFail",
    "ParseFail",
    "Where",
]

MAX_TEMPLATE_DEPTH = 100000

CallError = GoError
"""A function failed; the message follows Go's wording (the error value the Go function returns)."""


LimitError = TextTooLarge
"""A function, or the printing of a value, would produce more text than a render may."""


class LimitFail(Exception):
    """A limit of the render was reached (output size, work, time), or the render was cancelled."""


class ParseFail(Exception):
    """A parse error: Go's message text, the position (code point index) and Go's line number."""

    def __init__(self, message: str, pos: int, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos
        self.line = line


class Where:
    """Which source text and which named tree a closure belongs to (for error positions and messages)."""

    __slots__ = ("source", "tree")

    def __init__(self, source: Any, tree: str) -> None:
        self.source = source
        self.tree = tree


class ExecFail(Exception):
    """A run-time error: the node it happened at (a parse node, or None), the source it belongs to, Go's message."""

    def __init__(self, where: Where, node: Any, message: str, kind: str = "execute") -> None:
        super().__init__(message)
        self.where = where
        self.node = node
        self.message = message
        self.kind = kind

    @property
    def detail(self) -> str:
        if self.node is None:
            return self.message
        ctx = str(self.node)
        return f"executing {go_quote(self.where.tree)} at <{ctx}>: {self.message}"


class DepthUnwind(Exception):
    """Python's stack ran out inside nested template calls; collects the calls while unwinding.

    Go stops at depth 100000; Python's stack is shallower. To report the call Go would report, the recursion's
    period is found in the recorded calls and the call at Go's depth (modulo the period) is chosen.
    """

    def __init__(self, calls: list[tuple[Where, Any, int]]) -> None:
        super().__init__("template recursion too deep")
        self.calls = calls

    def fail(self) -> ExecFail:
        calls = self.calls
        chosen = calls[0]
        for p in range(1, 33):
            if len(calls) < 3 * p:
                break
            if all(calls[i][1] is calls[i + p][1] for i in range(2 * p)):
                for c in calls[:p]:
                    if c[2] % p == MAX_TEMPLATE_DEPTH % p:
                        chosen = c
                        break
                break
        where, node, _depth = chosen
        return ExecFail(where, node, f"exceeded maximum template depth ({MAX_TEMPLATE_DEPTH})")
