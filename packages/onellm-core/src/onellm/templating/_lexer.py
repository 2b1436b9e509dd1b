"""The scanner for the template language.

It follows the lexical rules of Go's `text/template`: text runs up to `{{`; inside an action it produces spaces,
identifiers, fields, variables, numbers, strings, characters and punctuation. Trim markers (`{{- ` and ` -}}`, the
space is required) remove ASCII white space next to the action while scanning, so the parser never sees it.

Positions are indexes into the Python string (code points); error reporting converts them to byte offsets. Scanning
stops at the first error, which is the last token of the list.

With code regions enabled, `{{` inside Markdown code (fenced blocks and inline spans found in the text between
actions) does not open an action, so it prints literally; positions stay those of the original text.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["Token", "lex"]

# Token types. Keywords come after T_KEYWORD.
T_ERROR = 0
T_BOOL = 1
T_CHAR = 2
T_CHARCONST = 3
T_COMPLEX = 4
T_ASSIGN = 5
T_DECLARE = 6
T_EOF = 7
T_FIELD = 8
T_IDENT = 9
T_LDELIM = 10
T_LPAREN = 11
T_NUMBER = 12
T_PIPE = 13
T_RAWSTRING = 14
T_RDELIM = 15
T_RPAREN = 16
T_SPACE = 17
T_STRING = 18
T_TEXT = 19
T_VARIABLE = 20
T_KEYWORD = 30
T_BLOCK = 31
T_BREAK = 32
T_CONTINUE = 33
T_DOT = 34
T_DEFINE = 35
T_ELSE = 36
T_END = 37
T_IF = 38
T_NIL = 39
T_RANGE = 40
T_TEMPLATE = 41
T_WITH = 42

KEYWORDS = {
    ".": T_DOT,
    "block": T_BLOCK,
    "break": T_BREAK,
    "continue": T_CONTINUE,
    "define": T_DEFINE,
    "else": T_ELSE,
    "end": T_END,
    "if": T_IF,
    "range": T_RANGE,
    "nil": T_NIL,
    "template": T_TEMPLATE,
    "with": T_WITH,
}

# (type, position, value, line)
Token = tuple[int, int, str, int]

_SPACE = " \t\r\n"
_TERMINATORS = frozenset(" \t\r\n.,|:)(")


_OPENER = re.compile(r"`|~~~")
_WORD = re.compile(r"[0-9A-Za-z_]*")


def _word_end(text: str, q: int) -> int:
    """End of the identifier characters starting at q (ASCII fast path, Go's rules beyond ASCII)."""
    m = _WORD.match(text, q)
    q = m.end() if m is not None else q
    n = len(text)
    while q < n and not text[q].isascii() and is_alnum(text[q]):
        q += 1
        m = _WORD.match(text, q)
        if m is not None:
            q = m.end()
    return q


def is_alnum(c: str) -> bool:
    """Go's identifier characters: `_`, letters and decimal digits."""
    if c.isascii():
        return c.isalnum() or c == "_"
    return c.isalpha() or unicodedata.category(c) == "Nd"


def go_rune(c: str) -> str:
    """`%#U` of one character, as Go prints it in lexer errors."""
    code = ord(c)
    if c.isprintable() or c == " ":
        return f"U+{code:04X} '{c}'"
    return f"U+{code:04X}"


def token_text(tok: Token) -> str:
    """How Go names a token in 'unexpected ...' messages."""
    typ, _pos, val, _line = tok
    if typ == T_EOF:
        return "EOF"
    if typ == T_ERROR:
        return val
    if typ > T_KEYWORD:
        return f"<{val}>"
    from onellm._go.fmt import go_quote

    if len(val) > 10:
        return go_quote(val[:10]) + "..."
    return go_quote(val)


class _LexError(Exception):
    def __init__(self, message: str, pos: int, line: int) -> None:
        self.message = message
        self.pos = pos
        self.line = line


def lex(text: str, code_regions: bool = False) -> list[Token]:
    """Scan `text` into tokens; the list always ends with a T_EOF or a T_ERROR token."""
    toks: list[Token] = []
    n = len(text)
    pos = 0
    line = 1
    finder = _CodeRegionFinder(text) if code_regions and ("`" in text or "~~~" in text) else None
    append = toks.append
    try:
        while True:
            x = text.find("{{", pos) if finder is None else finder.next_action(pos)
            if x < 0:
                if pos < n:
                    append((T_TEXT, pos, text[pos:], line))
                    line += text.count("\n", pos)
                append((T_EOF, n, "", line))
                return toks
            after = x + 2
            trim_left = after + 1 < n and text[after] == "-" and text[after + 1] in _SPACE
            end = x
            if trim_left:
                end = pos + len(text[pos:x].rstrip(_SPACE))
            if end > pos:
                append((T_TEXT, pos, text[pos:end], line))
            line += text.count("\n", pos, x)
            p = after + 2 if trim_left else after
            if text.startswith("/*", p):
                j = text.find("*/", p + 2)
                if j < 0:
                    raise _LexError("unclosed comment", x, line)
                q = j + 2
                if text.startswith(" -}}", q) or (
                    text[q : q + 1] in ("\t", "\r", "\n") and text.startswith("-}}", q + 1)
                ):
                    q += 4
                    line += text.count("\n", x, q)
                    r = q
                    while r < n and text[r] in _SPACE:
                        r += 1
                    line += text.count("\n", q, r)
                    pos = r
                elif text.startswith("}}", q):
                    q += 2
                    line += text.count("\n", x, q)
                    pos = q
                else:
                    raise _LexError("comment ends before closing delimiter", x, line)
                continue
            append((T_LDELIM, x, "{{", line))
            pos, line = _lex_action(text, p, line, toks)
    except _LexError as e:
        toks.append((T_ERROR, e.pos, e.message, e.line))
        return toks


def _at_right_delim(text: str, p: int) -> int:
    """0: not at a right delimiter; 1: at `}}`; 2: at ` -}}` (trim marker)."""
    c = text[p : p + 1]
    if c and c in _SPACE and text.startswith("-}}", p + 1):
        return 2
    if text.startswith("}}", p):
        return 1
    return 0


def _at_terminator(text: str, p: int) -> bool:
    if p >= len(text):
        return True
    c = text[p]
    if c in _TERMINATORS:
        return True
    return text.startswith("}}", p)


def _lex_action(text: str, p: int, line: int, toks: list[Token]) -> tuple[int, int]:
    n = len(text)
    paren = 0
    append = toks.append
    while True:
        d = _at_right_delim(text, p)
        if d:
            if paren:
                raise _LexError("unclosed left paren", p, line)
            if d == 2:
                line += text[p] == "\n"
                p += 2
            append((T_RDELIM, p, "}}", line))
            p += 2
            if d == 2:
                q = p
                while q < n and text[q] in _SPACE:
                    q += 1
                line += text.count("\n", p, q)
                p = q
            return p, line
        if p >= n:
            raise _LexError("unclosed action", p, line)
        c = text[p]
        start = p
        if c in _SPACE:
            q = p
            while q < n and text[q] in _SPACE:
                q += 1
            # A trim-marked closing delimiter begins with a space: leave that space to the delimiter.
            if text.startswith("-}}", q):
                q -= 1
                if q == p:
                    continue
            append((T_SPACE, p, text[p:q], line))
            line += text.count("\n", p, q)
            p = q
        elif c == "=":
            append((T_ASSIGN, p, "=", line))
            p += 1
        elif c == ":":
            if text[p + 1 : p + 2] != "=":
                raise _LexError("expected :=", p, line)
            append((T_DECLARE, p, ":=", line))
            p += 2
        elif c == "|":
            append((T_PIPE, p, "|", line))
            p += 1
        elif c == "(":
            paren += 1
            append((T_LPAREN, p, "(", line))
            p += 1
        elif c == ")":
            paren -= 1
            if paren < 0:
                raise _LexError("unexpected right paren", p, line)
            append((T_RPAREN, p, ")", line))
            p += 1
        elif c == '"':
            q = p + 1
            while True:
                ch = text[q : q + 1]
                if ch == "\\":
                    nxt = text[q + 1 : q + 2]
                    if nxt == "" or nxt == "\n":
                        raise _LexError("unterminated quoted string", start, line)
                    q += 2
                    continue
                if ch == "" or ch == "\n":
                    raise _LexError("unterminated quoted string", start, line)
                q += 1
                if ch == '"':
                    break
            append((T_STRING, p, text[p:q], line))
            p = q
        elif c == "`":
            q = text.find("`", p + 1)
            if q < 0:
                raise _LexError("unterminated raw quoted string", start, line)
            q += 1
            append((T_RAWSTRING, p, text[p:q], line))
            line += text.count("\n", p, q)
            p = q
        elif c == "'":
            q = p + 1
            while True:
                ch = text[q : q + 1]
                if ch == "\\":
                    nxt = text[q + 1 : q + 2]
                    if nxt == "" or nxt == "\n":
                        raise _LexError("unterminated character constant", start, line)
                    q += 2
                    continue
                if ch == "" or ch == "\n":
                    raise _LexError("unterminated character constant", start, line)
                q += 1
                if ch == "'":
                    break
            append((T_CHARCONST, p, text[p:q], line))
            p = q
        elif c == "$":
            p = _lex_field_or_var(text, p, T_VARIABLE, line, toks)
        elif c == "." and p + 1 < n and not ("0" <= text[p + 1] <= "9"):
            p = _lex_field_or_var(text, p, T_FIELD, line, toks)
        elif c == "+" or c == "-" or c == "." or "0" <= c <= "9":
            p = _lex_number(text, p, line, toks)
        elif is_alnum(c):
            q = _word_end(text, p + 1)
            if not _at_terminator(text, q):
                raise _LexError(f"bad character {go_rune(text[q])}", start, line)
            word = text[p:q]
            kw = KEYWORDS.get(word)
            if kw is not None:
                append((kw, p, word, line))
            elif word == "true" or word == "false":
                append((T_BOOL, p, word, line))
            else:
                append((T_IDENT, p, word, line))
            p = q
        elif c <= "\x7f" and c.isprintable():
            append((T_CHAR, p, c, line))
            p += 1
        else:
            raise _LexError(f"unrecognized character in action: {go_rune(c)}", start, line)


def _lex_field_or_var(text: str, p: int, typ: int, line: int, toks: list[Token]) -> int:
    q = p + 1
    if _at_terminator(text, q):
        toks.append((typ if typ == T_VARIABLE else T_DOT, p, text[p:q], line))
        return q
    q = _word_end(text, q)
    if not _at_terminator(text, q):
        raise _LexError(f"bad character {go_rune(text[q])}", p, line)
    toks.append((typ, p, text[p:q], line))
    return q


def _scan_number(text: str, p: int) -> tuple[int, bool]:
    n = len(text)

    def accept(q: int, valid: str) -> int:
        if q < n and text[q] in valid:
            return q + 1
        return q

    def accept_run(q: int, valid: str) -> int:
        while q < n and text[q] in valid:
            q += 1
        return q

    q = accept(p, "+-")
    digits = "0123456789_"
    if q < n and text[q] == "0":
        q += 1
        if q < n and text[q] in "xX":
            q += 1
            digits = "0123456789abcdefABCDEF_"
        elif q < n and text[q] in "oO":
            q += 1
            digits = "01234567_"
        elif q < n and text[q] in "bB":
            q += 1
            digits = "01_"
    q = accept_run(q, digits)
    if q < n and text[q] == ".":
        q = accept_run(q + 1, digits)
    if len(digits) == 11 and q < n and text[q] in "eE":
        q = accept(q + 1, "+-")
        q = accept_run(q, "0123456789_")
    if len(digits) == 23 and q < n and text[q] in "pP":
        q = accept(q + 1, "+-")
        q = accept_run(q, "0123456789_")
    q = accept(q, "i")
    if q < n and is_alnum(text[q]):
        return q + 1, False
    return q, True


def _lex_number(text: str, p: int, line: int, toks: list[Token]) -> int:
    q, ok = _scan_number(text, p)
    if not ok:
        from onellm._go.fmt import go_quote

        raise _LexError(f"bad number syntax: {go_quote(text[p:q])}", p, line)
    if q < len(text) and text[q] in "+-":
        q, ok = _scan_number(text, q)
        if not ok or text[q - 1] != "i":
            from onellm._go.fmt import go_quote

            raise _LexError(f"bad number syntax: {go_quote(text[p:q])}", p, line)
        toks.append((T_COMPLEX, p, text[p:q], line))
        return q
    toks.append((T_NUMBER, p, text[p:q], line))
    return q


class _CodeRegionFinder:
    """Finds the next `{{` that opens an action, stepping over Markdown code regions in the text between actions.

    A fenced block starts on a line indented at most three spaces with three or more backticks or tildes and runs to
    a closing fence of the same character at least as long (or to the end of the text). An inline span starts with a
    run of backticks and ends at the next run of exactly the same length; an unmatched run is plain text.
    """

    def __init__(self, text: str) -> None:
        self.text = text

    def next_action(self, pos: int) -> int:
        text = self.text
        n = len(text)
        p = pos
        while True:
            x = text.find("{{", p)
            limit = n if x < 0 else x
            q = self._next_opener(p, limit)
            if q < 0:
                return x
            p = self._region_end(q)
            if p >= n:
                return -1

    def _next_opener(self, p: int, limit: int) -> int:
        text = self.text
        i = p
        while i < limit:
            m = _OPENER.search(text, i, limit)
            if m is None:
                return -1
            i = m.start()
            if text[i] == "`" or self._fence_at(i) is not None:
                return i
            i = m.end()
        return -1

    def _line_start_ok(self, i: int) -> bool:
        text = self.text
        j = i
        spaces = 0
        while j > 0 and text[j - 1] == " ":
            j -= 1
            spaces += 1
        return spaces <= 3 and (j == 0 or text[j - 1] == "\n")

    def _fence_at(self, i: int) -> tuple[str, int] | None:
        text = self.text
        c = text[i]
        if c not in "`~" or (i > 0 and text[i - 1] == c):
            return None
        j = i
        while j < len(text) and text[j] == c:
            j += 1
        length = j - i
        if length < 3 or not self._line_start_ok(i):
            return None
        if c == "`":
            eol = text.find("\n", j)
            info = text[j:] if eol < 0 else text[j:eol]
            if "`" in info:
                return None
        return c, length

    def _region_end(self, i: int) -> int:
        """End (exclusive) of the code region opened at `i`; for an unmatched backtick run, the end of that run."""
        text = self.text
        n = len(text)
        fence = self._fence_at(i)
        if fence is not None:
            c, length = fence
            eol = text.find("\n", i)
            if eol < 0:
                return n
            k = eol + 1
            while k < n:
                line_end = text.find("\n", k)
                if line_end < 0:
                    line_end = n
                stripped = text[k:line_end]
                indent = len(stripped) - len(stripped.lstrip(" "))
                body = stripped.lstrip(" ")
                run = len(body) - len(body.lstrip(c))
                if indent <= 3 and run >= length and body[run:].strip(" \t\r") == "":
                    return line_end
                k = line_end + 1
            return n
        j = i
        while j < n and text[j] == "`":
            j += 1
        length = j - i
        k = j
        while True:
            k = text.find("`", k)
            if k < 0:
                return j
            m = k
            while m < n and text[m] == "`":
                m += 1
            if m - k == length:
                return m
            k = m
