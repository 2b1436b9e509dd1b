"""A JavaScript (and TypeScript) tokenizer: enough of the lexical grammar to find where types, imports and exports are,
with every token's offset so that edits keep lines and columns.

It knows strings, numbers, identifiers, private names, punctuators, comments, template literals (with their `${...}`
substitutions) and regular-expression literals (told from division by the token before, as parsers that do not build a
tree usually do). Every `>` is its own token, so that type argument lists close cleanly (`Map<K, Set<V>>`); a reader
that needs `>>` or `>=` sees the tokens side by side.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

__all__ = ["LexError", "Token", "tokenize"]

_IDENT = re.compile(
    r"(?:[A-Za-z_$\u0080-\uffff]|\\u[0-9a-fA-F]{4}|\\u\{[0-9a-fA-F]+\})(?:[\w$\u0080-\uffff]|\\u[0-9a-fA-F]{4}|\\u\{[0-9a-fA-F]+\})*"
)
_NUMBER = re.compile(
    r"(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+)n?|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?n?"
)
_PUNCTUATORS = sorted(
    [
        "...", "===", "!==", "**=", "<<=", "&&=", "||=", "??=",
        "=>", "==", "!=", "<=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
        "<<", "**",
        "{", "}", "(", ")", "[", "]", ";", ",", "<", ">", "+", "-", "*", "/", "%", "&", "|", "^", "!", "~", "?", ":",
        "=", ".", "@", "#",
    ],
    key=len,
    reverse=True,
)  # fmt: skip
_REGEX_AFTER_KEYWORDS = frozenset(
    {
        "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else",
        "yield", "await", "extends",
    }
)  # fmt: skip
_LINE_BREAKS = "\n\r\u2028\u2029"


class LexError(Exception):
    """The text cannot be tokenized (an unterminated string, comment, template or regular expression)."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


@dataclass(slots=True)
class Token:
    kind: str
    """`name`, `private`, `num`, `str`, `regex`, `punct`, `template` (whole, no substitution), `head` (up to the
    first `${`), `middle` (`}...${`), `tail` (`}...` to the closing backquote), or `eof`."""
    value: str
    start: int
    end: int
    nl: bool
    """A line break (or a comment holding one) comes between this token and the one before."""

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.value!r}, {self.start})"

    def is_(self, value: str) -> bool:
        return self.value == value and self.kind in ("punct", "name")


def _regex_allowed(previous: Token | None) -> bool:
    if previous is None:
        return True
    if previous.kind == "punct":
        return previous.value not in (")", "]")
    if previous.kind == "name":
        return previous.value in _REGEX_AFTER_KEYWORDS
    return previous.kind in ("head", "middle")


def tokenize(text: str) -> list[Token]:
    """The tokens of `text`, ending with an `eof` token.

    Raises:
        LexError: an unterminated string, comment, template or regular expression, with its offset.
    """
    tokens: list[Token] = []
    n = len(text)
    i = 0
    nl = False
    braces: list[str] = []  # "{" for a brace, "`" for a template substitution
    previous: Token | None = None
    if text.startswith("#!"):
        while i < n and text[i] not in _LINE_BREAKS:
            i += 1

    def add(kind: str, start: int, end: int) -> None:
        nonlocal nl, previous
        token = Token(kind, text[start:end], start, end, nl)
        tokens.append(token)
        previous = token
        nl = False

    def template(start: int, opened: int) -> None:
        """Scan template characters from `start` (just after a backquote or a closing brace) to the next `${` or the
        closing backquote; `opened` is where the token began."""
        j = start
        while j < n:
            c = text[j]
            if c == "\\":
                j += 2
                continue
            if c == "`":
                add("template" if text[opened] == "`" else "tail", opened, j + 1)
                return
            if c == "$" and j + 1 < n and text[j + 1] == "{":
                add("head" if text[opened] == "`" else "middle", opened, j + 2)
                braces.append("`")
                return
            j += 1
        raise LexError("unterminated template literal", opened)

    while i < n:
        c = text[i]
        if (
            c in " \t\v\f\ufeff\u00a0"
            or c in "\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
        ):
            i += 1
            continue
        if c in _LINE_BREAKS:
            nl = True
            i += 1
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            while i < n and text[i] not in _LINE_BREAKS:
                i += 1
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            end = text.find("*/", i + 2)
            if end < 0:
                raise LexError("unterminated comment", i)
            if any(b in text[i:end] for b in _LINE_BREAKS):
                nl = True
            i = end + 2
            continue
        start = i
        if c == "'" or c == '"':
            j = i + 1
            while j < n:
                d = text[j]
                if d == "\\":
                    j += 2
                    continue
                if d == c:
                    break
                if d in "\n\r":
                    raise LexError("unterminated string", start)
                j += 1
            else:
                raise LexError("unterminated string", start)
            add("str", start, j + 1)
            i = j + 1
            continue
        if c == "`":
            template(i + 1, i)
            i = tokens[-1].end
            continue
        if c == "}" and braces and braces[-1] == "`":
            braces.pop()
            template(i + 1, i)
            i = tokens[-1].end
            continue
        if c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            m = _NUMBER.match(text, i)
            end = m.end() if m is not None else i + 1
            add("num", start, end)
            i = end
            continue
        if c == "#" and i + 1 < n:
            m = _IDENT.match(text, i + 1)
            if m is not None:
                add("private", start, m.end())
                i = m.end()
                continue
        m = _IDENT.match(text, i) if (c.isalpha() or c in "_$\\" or ord(c) > 0x7F) else None
        if m is not None:
            add("name", start, m.end())
            i = m.end()
            continue
        if c == "/" and _regex_allowed(previous):
            j = i + 1
            in_class = False
            while j < n:
                d = text[j]
                if d == "\\":
                    j += 2
                    continue
                if d in "\n\r\u2028\u2029":
                    raise LexError("unterminated regular expression", start)
                if d == "[":
                    in_class = True
                elif d == "]":
                    in_class = False
                elif d == "/" and not in_class:
                    break
                j += 1
            else:
                raise LexError("unterminated regular expression", start)
            j += 1
            while j < n and (text[j].isalnum() or text[j] in "_$"):
                j += 1
            add("regex", start, j)
            i = j
            continue
        if c == ">":
            add("punct", i, i + 1)
            i += 1
            continue
        for p in _PUNCTUATORS:
            if text.startswith(p, i):
                if p == "?." and i + 2 < n and text[i + 2].isdigit():
                    continue
                if p == "{":
                    braces.append("{")
                elif p == "}" and braces:
                    braces.pop()
                add("punct", i, i + len(p))
                i += len(p)
                break
        else:
            add("punct", i, i + 1)
            i += 1
    tokens.append(Token("eof", "", n, n, nl))
    return tokens


class Positions:
    """1-based line and column of offsets in a text (columns in characters, as the engine counts them)."""

    def __init__(self, text: str) -> None:
        self._starts = [0]
        for m in re.finditer(r"\r\n|[\n\r\u2028\u2029]", text):
            self._starts.append(m.end())

    def at(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1
