"""Go (RE2) regular expressions on Python's `re`.

Patterns are translated, not passed through: RE2's `\\d`, `\\w`, `\\s` and `\\b` are ASCII-only, `$` without `(?m)`
means the end of the text, `[[:alpha:]]` and `\\p{Greek}` are classes, `(?<name>...)` names a group. What RE2
rejects is rejected with Go's message (`missing closing )`, `invalid nested repetition operator`, back-references,
look-around). Replacement follows Go's `ReplaceAllString`: `$1`, `${1}`, `$name`, `${name}`, `$$`, and an empty match
right after a previous match is not replaced.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from onellm.templating._funcs import CallError

__all__ = ["compile_re2", "replace_all"]


def _err(code: str, arg: str) -> CallError:
    return CallError(f"error parsing regexp: {code}: `{arg}`")


_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}

_PERL = {"d": "0-9", "s": "\\t\\n\\f\\r ", "w": "0-9A-Za-z_"}
_WORD = "[0-9A-Za-z_]"
_BOUNDARY = f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
_NOT_BOUNDARY = f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))"

_SCRIPT_PREFIX = {"Han": ("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH")}


@functools.lru_cache(maxsize=64)
def _unicode_class(name: str, negate: bool) -> str:
    """Class body text for a general category or a script (or everything outside it)."""
    spans = _unicode_spans(name)
    if negate:
        outside: list[tuple[int, int]] = []
        nxt = 0
        for a, b in spans:
            if a > nxt:
                outside.append((nxt, a - 1))
            nxt = b + 1
        if nxt <= 0x10FFFF:
            outside.append((nxt, 0x10FFFF))
        spans = outside
    if not spans:
        return "(?!)"
    return "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in spans)


@functools.lru_cache(maxsize=64)
def _unicode_spans(name: str) -> list[tuple[int, int]]:
    """Code point ranges of a general category or a script, found by scanning the character database."""
    if len(name) <= 2 and name[:1] in "LMNPSZC" and name.isalpha():

        def test(c: str) -> bool:
            return unicodedata.category(c).startswith(name)

    elif name == "Any":
        return [(0, 0x10FFFF)]
    else:
        prefixes = _SCRIPT_PREFIX.get(name, (name.upper() + " ",))

        def test(c: str) -> bool:
            n = unicodedata.name(c, "")
            return n.startswith(prefixes)

    # Characters are only assigned below U+323B0 and in U+E0000..U+E01EF; the rest is unassigned (Cn) or, in
    # planes 15 and 16, private use (Co). Scanning just the assigned areas keeps the first use fast.
    spans: list[tuple[int, int]] = []
    for lo, hi in ((0, 0x323AF), (0xE0000, 0xE01EF)):
        start = -1
        for cp in range(lo, hi + 2):
            ok = cp <= hi and not (0xD800 <= cp <= 0xDFFF) and test(chr(cp))
            if ok and start < 0:
                start = cp
            elif not ok and start >= 0:
                spans.append((start, cp - 1))
                start = -1
    if name in ("C", "Cn"):
        spans += [(0x323B0, 0xDFFFF), (0xE01F0, 0xEFFFF), (0xFFFFE, 0xFFFFF), (0x10FFFE, 0x10FFFF)]
    if name in ("C", "Co"):
        spans += [(0xF0000, 0xFFFFD), (0x100000, 0x10FFFD)]
    if not spans:
        raise _err("invalid character class range", f"\\p{{{name}}}")
    spans.sort()
    return spans


def _lit(c: str) -> str:
    return re.escape(c)


def _class_lit(c: str) -> str:
    if c in "\\]^-[":
        return "\\" + c
    o = ord(c)
    if o < 0x20 or o == 0x7F:
        return f"\\x{o:02x}"
    return c


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.out: list[str] = []

    def translate(self) -> str:
        p = self.p
        n = len(p)
        # Flag state per group: (i, m, s, U) and how many scoped flag groups to close at group end.
        stack: list[tuple[str, int, int]] = []  # (flags, closers, out index of group start)
        flags = ""
        closers = 0
        can_repeat = False
        last_was_repeat = False
        while self.i < n:
            c = p[self.i]
            start = self.i
            if c == "(":
                if p.startswith("(?", self.i):
                    j = self.i + 2
                    if p.startswith("P<", j) or (p.startswith("<", j) and not p.startswith(("<=", "<!"), j)):
                        k = p.find(">", j)
                        if k < 0:
                            raise _err("invalid named capture", p[self.i :])
                        name = p[j + (2 if p[j] == "P" else 1) : k]
                        if not name or not all(ch.isalnum() or ch == "_" for ch in name):
                            raise _err("invalid named capture", p[self.i : k + 1])
                        self.out.append(f"(?P<{name}>")
                        stack.append((flags, closers, len(self.out)))
                        closers = 0
                        self.i = k + 1
                        can_repeat = False
                        last_was_repeat = False
                        continue
                    k = j
                    while k < n and p[k] in "imsU-":
                        k += 1
                    if k >= n or p[k] not in ":)" or k == j:
                        raise _err("invalid or unsupported Perl syntax", p[self.i : k + 1])
                    spec = p[j:k]
                    new_flags = _apply_flags(flags, spec, p[self.i : k + 1])
                    if p[k] == ")":
                        # Flags for the rest of the current group.
                        flags = new_flags
                        self.out.append("(?" + _py_flags(flags) + ":")
                        closers += 1
                        self.i = k + 1
                        continue
                    self.out.append("(?" + _py_flags(new_flags) + ":")
                    stack.append((flags, closers, len(self.out)))
                    flags = new_flags
                    closers = 0
                    self.i = k + 1
                    can_repeat = False
                    last_was_repeat = False
                    continue
                self.out.append("(")
                stack.append((flags, closers, len(self.out)))
                closers = 0
                self.i += 1
                can_repeat = False
                last_was_repeat = False
                continue
            if c == ")":
                if not stack:
                    raise _err("unexpected )", p)
                self.out.append(")" * closers)
                flags, closers, _ = stack.pop()
                self.out.append(")")
                self.i += 1
                can_repeat = True
                last_was_repeat = False
                continue
            if c == "|":
                self.out.append(")" * closers)
                self.out.append("|")
                # Flags set by (?x) hold to the end of the group, across alternatives.
                if closers:
                    self.out.append("(?" + _py_flags(flags) + ":")
                    closers = 1
                self.i += 1
                can_repeat = False
                last_was_repeat = False
                continue
            if c in "*+?" or (c == "{" and _repeat_at(p, self.i) is not None):
                if c == "{":
                    rep = _repeat_at(p, self.i)
                    assert rep is not None
                    lo, hi, end = rep
                    if lo > 1000 or (hi is not None and (hi > 1000 or hi < lo)):
                        raise _err("invalid repeat count", p[self.i : end])
                    op = p[self.i : end]
                    self.i = end
                else:
                    op = c
                    self.i += 1
                if self.i < n and p[self.i] == "?":
                    op += "?"
                    self.i += 1
                if last_was_repeat:
                    raise _err("invalid nested repetition operator", p[self.prev_rep_start : self.i])
                if not can_repeat:
                    raise _err("missing argument to repetition operator", p[start : self.i])
                if "U" in flags:
                    op = op[:-1] if op.endswith("?") and len(op) > 1 and op[-2] in "*+?}" else op + "?"
                self.out.append(op)
                self.prev_rep_start = start
                last_was_repeat = True
                continue
            last_was_repeat = False
            can_repeat = True
            if c == "[":
                self.out.append(self._char_class(flags))
                continue
            if c == "\\":
                self.out.append(self._escape(flags))
                continue
            if c == ".":
                self.out.append("(?s:.)" if "s" in flags else "[^\\n]")
            elif c == "^":
                self.out.append("(?m:^)" if "m" in flags else "\\A")
                can_repeat = False
            elif c == "$":
                self.out.append("(?m:$)" if "m" in flags else "\\Z")
                can_repeat = False
            else:
                self.out.append(_lit(c))
            self.i += 1
        if stack:
            raise _err("missing closing )", p)
        self.out.append(")" * closers)
        return "".join(self.out)

    prev_rep_start = 0

    def _escape(self, flags: str) -> str:
        p = self.p
        i = self.i + 1
        if i >= len(p):
            raise _err("trailing backslash at end of expression", "")
        c = p[i]
        self.i = i + 1
        if c in _PERL:
            return "[" + _PERL[c] + "]"
        if c in "DSW":
            return "[^" + _PERL[c.lower()] + "]"
        if c == "b":
            return _BOUNDARY
        if c == "B":
            return _NOT_BOUNDARY
        if c == "A":
            return "\\A"
        if c == "z":
            return "\\Z"
        if c in "pP":
            body = self._unicode_prop(c)
            return "[" + body + "]" if body != "(?!)" else body
        if c == "Q":
            j = p.find("\\E", self.i)
            lit = p[self.i :] if j < 0 else p[self.i : j]
            self.i = len(p) if j < 0 else j + 2
            return "(?:" + re.escape(lit) + ")" if lit else "(?:)"
        cp = self._escape_char(c)
        return _lit(chr(cp))

    def _escape_char(self, c: str) -> int:
        """A single escaped character (after the backslash); self.i is past `c`."""
        p = self.p
        simple = {"a": 7, "f": 12, "t": 9, "n": 10, "r": 13, "v": 11}
        if c in simple:
            return simple[c]
        if c in "01234567":
            if c != "0" and (self.i >= len(p) or p[self.i] not in "01234567"):
                raise _err("invalid escape sequence", "\\" + c)
            v = ord(c) - 48
            for _ in range(2):
                if self.i < len(p) and p[self.i] in "01234567":
                    v = v * 8 + ord(p[self.i]) - 48
                    self.i += 1
                else:
                    break
            return v
        if c == "x":
            if p.startswith("{", self.i):
                j = p.find("}", self.i)
                digits = p[self.i + 1 : j] if j > 0 else ""
                if j < 0 or not digits or any(d not in "0123456789abcdefABCDEF" for d in digits):
                    raise _err("invalid escape sequence", p[self.i - 2 : (j + 1 if j > 0 else len(p))])
                v = int(digits, 16)
                if v > 0x10FFFF:
                    raise _err("invalid escape sequence", p[self.i - 2 : j + 1])
                self.i = j + 1
                return v
            digits = p[self.i : self.i + 2]
            if len(digits) < 2 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise _err("invalid escape sequence", p[self.i - 2 : self.i + 2])
            self.i += 2
            return int(digits, 16)
        if ord(c) < 0x80 and not c.isalnum():
            return ord(c)
        raise _err("invalid escape sequence", "\\" + c)

    def _unicode_prop(self, c: str) -> str:
        """`\\pX`, `\\p{Name}`, `\\PX`, `\\p{^Name}` (self.i is past the p or P): a class body."""
        p = self.p
        if self.i >= len(p):
            raise _err("invalid character class range", "\\" + c)
        if p[self.i] == "{":
            j = p.find("}", self.i)
            if j < 0:
                raise _err("invalid character class range", p[self.i - 2 :])
            name = p[self.i + 1 : j]
            self.i = j + 1
        else:
            name = p[self.i]
            self.i += 1
        negate = c == "P"
        if name.startswith("^"):
            negate = not negate
            name = name[1:]
        return _unicode_class(name, negate)

    def _char_class(self, flags: str) -> str:
        p = self.p
        start = self.i
        i = self.i + 1
        negate = False
        if i < len(p) and p[i] == "^":
            negate = True
            i += 1
        items: list[str] = []
        first = True
        while True:
            if i >= len(p):
                raise _err("missing closing ]", p[start:])
            c = p[i]
            if c == "]" and not first:
                i += 1
                break
            first = False
            if c == "[" and p.startswith("[:", i):
                j = p.find(":]", i + 2)
                if j > 0:
                    name = p[i + 2 : j]
                    neg = name.startswith("^")
                    body = _POSIX.get(name[1:] if neg else name)
                    if body is None:
                        raise _err("invalid character class range", p[i : j + 2])
                    items.append(_complement(body) if neg else body)
                    i = j + 2
                    continue
            lo, i, is_class = self._class_atom(i)
            if is_class:
                items.append(lo)
                continue
            if i + 1 < len(p) and p[i] == "-" and p[i + 1] != "]":
                hi, i2, hi_class = self._class_atom(i + 1)
                if hi_class:
                    raise _err("invalid character class range", p[start:i2])
                if _atom_cp(hi) < _atom_cp(lo):
                    raise _err("invalid character class range", p[start:i2])
                items.append(_class_lit(lo) + "-" + _class_lit(hi))
                i = i2
                continue
            items.append(_class_lit(lo))
        self.i = i
        if not items:
            return "(?!)" if not negate else "(?s:.)"
        return "[" + ("^" if negate else "") + "".join(items) + "]"

    def _class_atom(self, i: int) -> tuple[str, int, bool]:
        """One class member at i: (text, next index, is a class body rather than one character)."""
        p = self.p
        c = p[i]
        if c != "\\":
            return c, i + 1, False
        if i + 1 >= len(p):
            raise _err("missing closing ]", p)
        e = p[i + 1]
        if e in _PERL:
            return _PERL[e], i + 2, True
        if e in "DSW":
            return _complement(_PERL[e.lower()]), i + 2, True
        if e in "pP":
            self.i = i + 2
            body = self._unicode_prop(e)
            return ("" if body == "(?!)" else body), self.i, True
        self.i = i + 2
        cp = self._escape_char(e)
        return chr(cp), self.i, False


@functools.lru_cache(maxsize=64)
def _complement(body: str) -> str:
    """The class body matching every character that the ASCII class body `body` does not."""
    members = {c for c in range(128) if re.fullmatch("[" + body + "]", chr(c))}
    ranges: list[str] = []
    start = -1
    for cp in range(129):
        inside = cp < 128 and cp not in members
        if cp == 128:
            inside = True
        if inside and start < 0:
            start = cp
        elif not inside and start >= 0:
            ranges.append(f"\\x{start:02x}-\\x{cp - 1:02x}")
            start = -1
    ranges.append(f"\\x{start:02x}-\\U0010ffff" if start >= 0 else "\\x80-\\U0010ffff")
    return "".join(ranges)


def _atom_cp(s: str) -> int:
    return ord(s)


def _repeat_at(p: str, i: int) -> tuple[int, int | None, int] | None:
    m = re.match(r"\{([0-9]+)(,([0-9]*))?\}", p[i:])
    if m is None:
        return None
    lo = int(m.group(1))
    if m.group(2) is None:
        hi: int | None = lo
    elif m.group(3) == "":
        hi = None
    else:
        hi = int(m.group(3))
    return lo, hi, i + m.end()


def _apply_flags(flags: str, spec: str, text: str) -> str:
    on = True
    out = set(flags)
    seen_minus = False
    for ch in spec:
        if ch == "-":
            if seen_minus:
                raise _err("invalid or unsupported Perl syntax", text)
            seen_minus = True
            on = False
            continue
        if on:
            out.add(ch)
        else:
            out.discard(ch)
    if seen_minus and spec.endswith("-"):
        raise _err("invalid or unsupported Perl syntax", text)
    return "".join(sorted(out))


def _py_flags(flags: str) -> str:
    on = "".join(f for f in "ims" if f in flags)
    off = "".join(f for f in "ims" if f not in flags)
    return on + ("-" + off if off else "")


@functools.lru_cache(maxsize=256)
def compile_re2(pattern: str) -> re.Pattern[str]:
    translated = _Translator(pattern).translate()
    try:
        return re.compile(translated)
    except re.error as e:
        raise _err("invalid regexp", f"{pattern}: {e}") from None


def _expand(template: str, m: re.Match[str], names: dict[str, int]) -> str:
    out: list[str] = []
    t = template
    while t:
        k = t.find("$")
        if k < 0:
            break
        out.append(t[:k])
        t = t[k + 1 :]
        if t.startswith("$"):
            out.append("$")
            t = t[1:]
            continue
        brace = t.startswith("{")
        j = 1 if brace else 0
        s = j
        while j < len(t) and (t[j] == "_" or t[j].isalpha() or t[j].isdigit()):
            j += 1
        name = t[s:j]
        if not name or (brace and not t.startswith("}", j)):
            out.append("$")
            continue
        t = t[j + 1 :] if brace else t[j:]
        num = -1
        if name.isascii() and name.isdigit():
            num = int(name) if len(name) < 9 else -1
        if num >= 0:
            if num <= (m.re.groups) and m.group(num) is not None:
                out.append(m.group(num))
        else:
            idx = names.get(name)
            if idx is not None and m.group(idx) is not None:
                out.append(m.group(idx))
    out.append(t)
    return "".join(out)


def replace_all(rx: re.Pattern[str], repl: str, s: str) -> str:
    names = dict(rx.groupindex)
    out: list[str] = []
    last_end = 0
    pos = 0
    n = len(s)
    while pos <= n:
        m = rx.search(s, pos)
        if m is None:
            break
        a0, a1 = m.span()
        out.append(s[last_end:a0])
        if a1 > last_end or a0 == 0:
            out.append(_expand(repl, m, names) if "$" in repl else repl)
        last_end = a1
        if pos + 1 > a1:
            pos += 1
        else:
            pos = a1
    out.append(s[last_end:])
    return "".join(out)
