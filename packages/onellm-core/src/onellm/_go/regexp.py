"""Go (RE2) regular expressions, matched in linear time.

The pattern is parsed here, with RE2's rules: RE2's `\\d`, `\\w`, `\\s` and `\\b` are ASCII-only, `$` without `(?m)`
means the end of the text, `[[:alpha:]]` and `\\p{Greek}` are classes, `(?<name>...)` names a group. What RE2
rejects is rejected with Go's message (`missing closing )`, `invalid nested repetition operator`, back-references,
look-around). The parser builds the tree that `re_prog` compiles and runs as a Pike VM, so matching takes time
linear in the text (times the pattern's size) whatever the pattern; it also writes the equivalent Python `re` pattern,
which checks the pattern the way the engine always has and serves as the reference in tests. Replacement follows
Go's `ReplaceAllString`: `$1`, `${1}`, `$name`, `${name}`, `$$`, and an empty match right after a previous match is
not replaced.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from onellm._go import re_prog as vm
from onellm._go.errors import GoError

__all__ = ["compile_re2", "replace_all"]


def _err(code: str, arg: str) -> GoError:
    return GoError(f"error parsing regexp: {code}: `{arg}`")


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


def _leaf(text: str, flags: str) -> vm.Node:
    """One character matched by the Python class text `text` (as written into the translation) under `flags`."""
    if text == "(?!)":
        return vm.Fail()
    return vm.Char(text, "i" in flags)


class _Translator:
    """Reads an RE2 pattern into both a tree (`root`, for the engine) and Python `re` text (the return value)."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.out: list[str] = []
        self.root: vm.Node = vm.Empty()
        self.groups = 0

    def translate(self) -> str:
        p = self.p
        n = len(p)
        # Flag state per group: (i, m, s, U) and how many scoped flag groups to close at group end.
        stack: list[tuple[str, int, int]] = []  # (flags, closers, out index of group start)
        flags = ""
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
                        self.groups += 1
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
                    stack.append((flags, closers, len(self.out)))
                    tree_stack.append((alts, cur, 0))
                    alts, cur = [], []
                    flags = new_flags
                    closers = 0
                    self.i = k + 1
                    can_repeat = False
                    last_was_repeat = False
                    continue
                self.out.append("(")
                stack.append((flags, closers, len(self.out)))
                self.groups += 1
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
                    if lo > 1000 or (hi is not None and (hi > 1000 or hi < lo)):
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
                    raise _err("invalid nested repetition operator", p[self.prev_rep_start : self.i])
                if not can_repeat:
                    raise _err("missing argument to repetition operator", p[start : self.i])
                if "U" in flags:
                    op = op[:-1] if op.endswith("?") and len(op) > 1 and op[-2] in "*+?}" else op + "?"
                self.out.append(op)
                lazy = len(op) > 1 and op.endswith("?")
                sub = cur.pop() if cur else vm.Empty()
                cur.append(vm.Repeat(sub, lo_hi[0], lo_hi[1], not lazy))
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
                cur.append(_leaf(_lit(c), flags))
            self.i += 1
        if stack:
            raise _err("missing closing )", p)
        self.out.append(")" * closers)
        self.root = _alt([*alts, _cat(cur)])
        return "".join(self.out)

    prev_rep_start = 0

    def _escape(self, flags: str) -> tuple[str, vm.Node]:
        """An escape outside a class: (Python text, tree node)."""
        p = self.p
        i = self.i + 1
        if i >= len(p):
            raise _err("trailing backslash at end of expression", "")
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
            node = _cat([_leaf(_lit(ch), flags) for ch in lit])
            return ("(?:" + re.escape(lit) + ")" if lit else "(?:)"), node
        else:
            text = _lit(chr(self._escape_char(c)))
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


class Regex:
    """A compiled RE2 pattern: `search` finds the leftmost-first match in linear time."""

    __slots__ = ("groupindex", "groups", "pattern", "program")

    def __init__(self, pattern: str, program: vm.Program, groupindex: dict[str, int]) -> None:
        self.pattern = pattern
        self.program = program
        self.groups = program.ngroups
        self.groupindex = groupindex

    def search(self, s: str, pos: int = 0) -> Match | None:
        """The leftmost-first match at or after `pos`; its span and groups are worked out when first asked for."""
        if not self.program.matches(s, pos):
            return None
        return Match(self, s, pos)

    def find(
        self,
        s: str,
        pos: int,
        groups: bool,
        alive: list[frozenset[int]] | None = None,
        waste: list[int] | None = None,
    ) -> list[int] | None:
        """Slots of the leftmost-first match at or after `pos`: [start, end] (and the groups' if `groups`).

        The span is found first without groups; the groups are then worked out by a second run anchored at the
        match's start and stopped at its end. `alive` and `waste` are passed to the span search (see `exec`).
        """
        slots = self.program.exec(s, pos, 1, alive=alive, waste=waste)
        if slots is None or not groups or not self.groups:
            return slots
        return self.program.exec(s, slots[0], 2, anchor=True, end=slots[1])


class Match:
    """A match found by `Regex.search`."""

    __slots__ = ("_slots", "pos", "re", "string")

    def __init__(self, rx: Regex, s: str, pos: int) -> None:
        self.re = rx
        self.string = s
        self.pos = pos
        self._slots: list[int] | None = None

    def _get(self) -> list[int]:
        if self._slots is None:
            slots = self.re.find(self.string, self.pos, True)
            assert slots is not None
            self._slots = slots
        return self._slots

    def span(self, group: int = 0) -> tuple[int, int]:
        slots = self._get()
        return slots[2 * group], slots[2 * group + 1]

    def group(self, group: int = 0) -> str | None:
        a, b = self.span(group)
        return None if a < 0 or b < 0 else self.string[a:b]


def _translate(pattern: str) -> _Translator:
    t = _Translator(pattern)
    translated = t.translate()
    try:
        re.compile(translated)
    except re.error as e:
        raise _err("invalid regexp", f"{pattern}: {e}") from None
    t.out = [translated]
    return t


@functools.lru_cache(maxsize=256)
def compile_re2(pattern: str) -> Regex:
    t = _translate(pattern)
    groupindex = dict(re.compile(t.out[0]).groupindex)
    try:
        program = vm.Program(t.root, t.groups)
    except vm.ProgramTooLarge:
        raise _err("expression too large", pattern) from None
    except RecursionError:
        raise _err("expression nests too deeply", pattern) from None
    return Regex(pattern, program, groupindex)


def _python_pattern(pattern: str) -> re.Pattern[str]:
    """The same pattern on Python's backtracking `re` (how it was matched before; the reference in tests)."""
    return re.compile(_translate(pattern).out[0])


def _expand(template: str, s: str, slots: list[int], groups: int, names: dict[str, int]) -> str:
    def group(k: int) -> str | None:
        a, b = slots[2 * k], slots[2 * k + 1]
        return None if a < 0 or b < 0 else s[a:b]

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
        start = j
        while j < len(t) and (t[j] == "_" or t[j].isalpha() or t[j].isdigit()):
            j += 1
        name = t[start:j]
        if not name or (brace and not t.startswith("}", j)):
            out.append("$")
            continue
        t = t[j + 1 :] if brace else t[j:]
        num = -1
        if name.isascii() and name.isdigit():
            num = int(name) if len(name) < 9 else -1
        if num >= 0:
            if num <= groups:
                text = group(num)
                if text is not None:
                    out.append(text)
        else:
            idx = names.get(name)
            if idx is not None:
                text = group(idx)
                if text is not None:
                    out.append(text)
    out.append(t)
    return "".join(out)


def replace_all(rx: Regex, repl: str, s: str) -> str:
    names = rx.groupindex
    expand = "$" in repl
    out: list[str] = []
    last_end = 0
    pos = 0
    n = len(s)
    # A search reads on past its first match while higher-priority threads may still match, and the next search reads
    # that text again. Once that rereading adds up to more than the text twice over, one backward pass finds where
    # threads can still match, and from then on the searches drop dead threads and stop at each match's end, which
    # keeps the whole replacement linear in the text.
    alive: list[frozenset[int]] | None = None
    waste = [0]
    while pos <= n:
        if alive is None and waste[0] > 2 * n + 64:
            alive = rx.program.alive(s)
        slots = rx.find(s, pos, expand, alive, waste)
        if slots is None:
            break
        a0, a1 = slots[0], slots[1]
        out.append(s[last_end:a0])
        if a1 > last_end or a0 == 0:
            out.append(_expand(repl, s, slots, rx.groups, names) if expand else repl)
        last_end = a1
        if pos + 1 > a1:
            pos += 1
        else:
            pos = a1
    out.append(s[last_end:])
    return "".join(out)
