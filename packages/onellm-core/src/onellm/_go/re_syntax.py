"""Go's RE2 syntax: a pattern read into the tree that `re_prog` compiles, with Go's rules and Go's errors.

RE2's `\\d`, `\\w`, `\\s` and `\\b` are ASCII-only, `$` without `(?m)` is the end of the text, `[[:alpha:]]` and
`\\p{Greek}` are classes, `(?P<name>...)` and `(?<name>...)` name a group (ASCII letters, digits and `_`; a name may
repeat). What RE2 refuses is refused with Go's message (`missing closing )`, `invalid nested repetition operator`,
back-references, look-around) in a `RegexSyntaxError` that also gives where the refused construct starts. One
character test is a Python `re` class (`Char.text`), which keeps case folding and Unicode classes as Python defines
them; the same reading also writes the whole pattern as Python `re` text (`Parsed.python`), which tests use as a
reference on patterns whose meaning is the same in both.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from onellm._go import re_prog as vm
from onellm._go.errors import RegexSyntaxError

__all__ = ["MAX_REPEAT", "Parsed", "parse"]

MAX_REPEAT = 1000


def _err(code: str, arg: str, pos: int = -1) -> RegexSyntaxError:
    """Go's error; a position of -1 is filled in with the start of the construct being read."""
    return RegexSyntaxError(code, arg, pos)


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


def _cat(items: list[vm.Node]) -> vm.Node:
    if not items:
        return vm.Empty()
    return items[0] if len(items) == 1 else vm.Cat(tuple(items))


def _alt(items: list[vm.Node]) -> vm.Node:
    return items[0] if len(items) == 1 else vm.Alt(tuple(items))


def _leaf(text: str, flags: str, lit: str | None = None) -> vm.Node:
    """One character matched by the Python class text `text` (as written into the translation) under `flags`;
    `lit` is the character itself when the leaf is one literal character."""
    if text == "(?!)":
        return vm.Fail()
    icase = "i" in flags
    return vm.Char(text, icase, None if icase else lit)


def _repeat_ok(node: vm.Node, n: int) -> bool:
    """Go's `repeatIsValid`: counted repetitions nested in `node` make at most `n` copies of the innermost part."""
    stack = [(node, n)]
    while stack:
        node, n = stack.pop()
        if isinstance(node, vm.Repeat) and node.counted:
            m = node.hi if node.hi is not None else node.lo
            if m > n:
                return False
            if m > 0:
                n //= m
        if isinstance(node, vm.Cat | vm.Alt):
            stack += ((k, n) for k in node.items)
        elif isinstance(node, vm.Repeat | vm.Group):
            stack.append((node.sub, n))
    return True


class Parsed:
    """A parsed pattern: the tree, the number of groups, each group's name (None: unnamed), the Python text."""

    __slots__ = ("names", "ngroups", "python", "root")

    def __init__(self, root: vm.Node, ngroups: int, names: list[str | None], python: str) -> None:
        self.root = root
        self.ngroups = ngroups
        self.names = names
        self.python = python


class _Translator:
    """Reads an RE2 pattern into both a tree (`root`, for the engine) and Python `re` text (the return value)."""

    def __init__(self, pattern: str, flags: str = "") -> None:
        self.p = pattern
        self.i = 0
        self.out: list[str] = []
        self.root: vm.Node = vm.Empty()
        self.groups = 0
        self.names: list[str | None] = []
        self.flags = flags

    def translate(self) -> str:
        try:
            return self._translate()
        except RegexSyntaxError as e:
            if e.pos < 0:
                e.pos = self.start
            raise

    start = 0

    def _translate(self) -> str:
        p = self.p
        n = len(p)
        # Flag state per group: (i, m, s, U) and how many scoped flag groups to close at group end.
        stack: list[tuple[str, int, int]] = []  # (flags, closers, where the group starts in the pattern)
        flags = self.flags
        closers = 0
        # The tree: the current group's finished alternatives and the items of the one being read, saved per group
        # with the group's number (0: not capturing).
        alts: list[vm.Node] = []
        cur: list[vm.Node] = []
        tree_stack: list[tuple[list[vm.Node], list[vm.Node], int]] = []
        can_repeat = False
        last_was_repeat = False
        while self.i < n:
            c = p[self.i]
            start = self.start = self.i
            if c == "(":
                if p.startswith("(?", self.i):
                    j = self.i + 2
                    if p.startswith(("P<", "<"), j):
                        k = p.find(">", j)
                        if k < 0:
                            raise _err("invalid named capture", p[self.i :])
                        name = p[j + (2 if p[j] == "P" else 1) : k]
                        if not name or not all(ch.isascii() and (ch.isalnum() or ch == "_") for ch in name):
                            raise _err("invalid named capture", p[self.i : k + 1])
                        # Go allows a name twice and a name of digits; Python's text gets the name when it can.
                        usable = name.isidentifier() and name not in self.names
                        self.out.append(f"(?P<{name}>" if usable else "(")
                        stack.append((flags, closers, start))
                        self.groups += 1
                        self.names.append(name)
                        tree_stack.append((alts, cur, self.groups))
                        alts, cur = [], []
                        closers = 0
                        self.i = k + 1
                        can_repeat = False
                        last_was_repeat = False
                        continue
                    k = j
                    while k < n and p[k] in "imsU-":
                        k += 1
                    # `(?:...)` and `(?)` carry no flags; Go accepts both.
                    if k >= n or p[k] not in ":)":
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
                    stack.append((flags, closers, start))
                    tree_stack.append((alts, cur, 0))
                    alts, cur = [], []
                    flags = new_flags
                    closers = 0
                    self.i = k + 1
                    can_repeat = False
                    last_was_repeat = False
                    continue
                self.out.append("(")
                stack.append((flags, closers, start))
                self.groups += 1
                self.names.append(None)
                tree_stack.append((alts, cur, self.groups))
                alts, cur = [], []
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
                node = _alt([*alts, _cat(cur)])
                alts, cur, index = tree_stack.pop()
                cur.append(vm.Group(node, index) if index else node)
                self.i += 1
                can_repeat = True
                last_was_repeat = False
                continue
            if c == "|":
                self.out.append(")" * closers)
                self.out.append("|")
                alts.append(_cat(cur))
                cur = []
                # Flags set by (?x) hold to the end of the group, across alternatives.
                if closers:
                    self.out.append("(?" + _py_flags(flags) + ":")
                    closers = 1
                self.i += 1
                can_repeat = False
                last_was_repeat = False
                continue
            if c in "*+?" or (c == "{" and _repeat_at(p, self.i) is not None):
                lo_hi: tuple[int, int | None]
                if c == "{":
                    rep = _repeat_at(p, self.i)
                    assert rep is not None
                    lo, hi, end = rep
                    lo_hi = (lo, hi)
                    if lo > MAX_REPEAT or (hi is not None and (hi > MAX_REPEAT or hi < lo)):
                        raise _err("invalid repeat count", p[self.i : end])
                    op = p[self.i : end]
                    self.i = end
                else:
                    op = c
                    lo_hi = (0, None) if c == "*" else (1, None) if c == "+" else (0, 1)
                    self.i += 1
                if self.i < n and p[self.i] == "?":
                    op += "?"
                    self.i += 1
                if last_was_repeat:
                    raise _err(
                        "invalid nested repetition operator", p[self.prev_rep_start : self.i], self.prev_rep_start
                    )
                if not can_repeat:
                    raise _err("missing argument to repetition operator", p[start : self.i])
                if "U" in flags:
                    op = op[:-1] if op.endswith("?") and len(op) > 1 and op[-2] in "*+?}" else op + "?"
                self.out.append(op)
                lazy = len(op) > 1 and op.endswith("?")
                sub = cur.pop() if cur else vm.Empty()
                node = vm.Repeat(sub, lo_hi[0], lo_hi[1], not lazy, c == "{")
                if c == "{" and (lo_hi[0] >= 2 or (lo_hi[1] or 0) >= 2) and not _repeat_ok(node, MAX_REPEAT):
                    raise _err("invalid repeat count", p[start : self.i])
                cur.append(node)
                self.prev_rep_start = start
                last_was_repeat = True
                continue
            last_was_repeat = False
            can_repeat = True
            if c == "[":
                text = self._char_class(flags)
                self.out.append(text)
                cur.append(_leaf(text, flags))
                continue
            if c == "\\":
                text, node = self._escape(flags)
                self.out.append(text)
                cur.append(node)
                continue
            if c == ".":
                text = "(?s:.)" if "s" in flags else "[^\\n]"
                self.out.append(text)
                cur.append(_leaf(text, flags))
            elif c == "^":
                self.out.append("(?m:^)" if "m" in flags else "\\A")
                cur.append(vm.Assert(vm.BEGIN_LINE if "m" in flags else vm.BEGIN_TEXT))
                can_repeat = False
            elif c == "$":
                self.out.append("(?m:$)" if "m" in flags else "\\Z")
                cur.append(vm.Assert(vm.END_LINE if "m" in flags else vm.END_TEXT))
                can_repeat = False
            else:
                self.out.append(_lit(c))
                cur.append(_leaf(_lit(c), flags, c))
            self.i += 1
        if stack:
            raise _err("missing closing )", p, stack[-1][2])
        self.out.append(")" * closers)
        self.root = _alt([*alts, _cat(cur)])
        return "".join(self.out)

    prev_rep_start = 0

    def _escape(self, flags: str) -> tuple[str, vm.Node]:
        """An escape outside a class: (Python text, tree node)."""
        p = self.p
        i = self.i + 1
        if i >= len(p):
            raise _err("trailing backslash at end of expression", "", self.i)
        c = p[i]
        self.i = i + 1
        text: str
        if c in _PERL:
            text = "[" + _PERL[c] + "]"
        elif c in "DSW":
            text = "[^" + _PERL[c.lower()] + "]"
        elif c == "b":
            return _BOUNDARY, vm.Assert(vm.WORD_BOUNDARY)
        elif c == "B":
            return _NOT_BOUNDARY, vm.Assert(vm.NO_WORD_BOUNDARY)
        elif c == "A":
            return "\\A", vm.Assert(vm.BEGIN_TEXT)
        elif c == "z":
            return "\\Z", vm.Assert(vm.END_TEXT)
        elif c in "pP":
            body = self._unicode_prop(c)
            text = "[" + body + "]" if body != "(?!)" else body
        elif c == "Q":
            j = p.find("\\E", self.i)
            lit = p[self.i :] if j < 0 else p[self.i : j]
            self.i = len(p) if j < 0 else j + 2
            node = _cat([_leaf(_lit(ch), flags, ch) for ch in lit])
            return ("(?:" + re.escape(lit) + ")" if lit else "(?:)"), node
        else:
            ch = chr(self._escape_char(c))
            text = _lit(ch)
            return text, _leaf(text, flags, ch)
        return text, _leaf(text, flags)

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
            lo_start = i
            lo, i, is_class = self._class_atom(i)
            if is_class:
                items.append(lo)
                continue
            if i + 1 < len(p) and p[i] == "-" and p[i + 1] != "]":
                hi, i2, hi_class = self._class_atom(i + 1)
                if hi_class:
                    # Go reads the end of a range as one character: a class escape there is an invalid escape.
                    raise _err("invalid escape sequence", p[i + 1 : i + 3], i + 1)
                if _atom_cp(hi) < _atom_cp(lo):
                    raise _err("invalid character class range", p[lo_start:i2], lo_start)
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


def parse(pattern: str, flags: str = "") -> Parsed:
    """Read `pattern` with RE2's rules; `flags` ("i", "m", "s", "U") hold from its start, as a leading `(?i)` would.

    Raises:
        RegexSyntaxError: Go's message, and where in the pattern the refused construct starts.
    """
    t = _Translator(pattern, flags)
    python = t.translate()
    return Parsed(t.root, t.groups, t.names, python)
