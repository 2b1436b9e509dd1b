"""The error a Go function returns, and the syntax error of a regular expression."""

from __future__ import annotations

__all__ = ["GoError", "RegexSyntaxError", "TextTooLarge"]


class GoError(Exception):
    """An error value a Go function would return; `str()` is Go's `err.Error()` text."""


class RegexSyntaxError(GoError):
    """A pattern Go's `regexp/syntax` refuses.

    `str()` is Go's text, `error parsing regexp: {code}: `{expr}``; `pos` is the index in the pattern (in characters)
    where the refused construct starts, for callers that show a column.
    """

    def __init__(self, code: str, expr: str, pos: int) -> None:
        super().__init__(f"error parsing regexp: {code}: `{expr}`")
        self.code = code
        self.expr = expr
        self.pos = pos


class TextTooLarge(Exception):
    """A value whose text would be longer than its caller allows (`fmt.MAX_TEXT`, or a render's output limit)."""
