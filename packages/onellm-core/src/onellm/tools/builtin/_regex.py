"""A linear-time regular expression engine for `search_files_regex`.

Python's `re` backtracks: `(a+)+$` against forty `a`s and a `b` runs for minutes, so a pattern chosen by a model could
hold the tool (and the worker thread under it) for as long as it liked. This engine never backtracks. A pattern is
compiled to a Thompson NFA (a program of character, split, jump and assertion instructions) and run as a lazily built
DFA: each DFA state is the set of NFA instructions alive at one position, and the step from one set to the next on a
given character is computed once, by an epsilon-closure bounded by the program size, then cached. Matching a line of
`n` characters therefore costs at most `n` cache lookups plus, on a miss, O(program size) work; the program size is
bounded, counted repetition included, and the cache is cleared when it grows past a fixed number of states. There is
no input on which the time is worse than O(pattern x text). Because the pattern factor can still be large (a counted
repetition under a star makes almost every position a new DFA state), the caller can also set a work budget: the
instruction visits spent building states are counted and the search stops with `RegexBudgetError` past it.

The supported syntax is the part of Python's syntax that a finite automaton can decide; everything else is refused with
a message that names the construct and its column:

- literals, `.` (any character but a newline), `\\t \\n \\r \\f \\v \\0 \\xhh \\uhhhh`, escaped metacharacters;
- classes `[abc]`, `[^a-z]`, with `\\d \\w \\s \\D \\W \\S` inside and outside classes (Unicode, as `re` has them);
- groups `(...)`, `(?:...)`, `(?P<name>...)`, alternation `|`;
- `* + ?` and `{n} {n,} {,m} {n,m}` (greedy or lazy: for "does this line match" the two agree), repetition at most 1000;
- anchors `^ $ \\A \\Z \\z \\b \\B`, a leading `(?i)` for case-insensitive matching.

Not supported: back-references, look-ahead and look-behind, possessive quantifiers and atomic groups, conditionals, and
inline flags other than a leading `(?i)`. Matching is per line: `^` and `$` are the start and end of each line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Regex", "RegexBudgetError", "RegexError"]

_MAX_PATTERN = 2000
_MAX_REPEAT = 1000
_MAX_PROGRAM = 20_000
_MAX_DFA_STATES = 4_000


class RegexError(ValueError):
    """A pattern that is malformed or uses a construct the linear-time engine does not support."""

    def __init__(self, message: str, *, column: int | None = None) -> None:
        self.detail = message
        self.column = column
        super().__init__(f"{message} (at column {column})" if column is not None else message)


class RegexBudgetError(RuntimeError):
    """The search used up its work budget: the pattern's automaton has too many live states on this input."""


# ---------------------------------------------------------------------------------------------------------------- AST

_CharTest = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class _Char:
    test: _CharTest
    literal: str | None  # the character, when the node is one literal (used for the required-substring prefilter)


@dataclass(frozen=True, slots=True)
class _Concat:
    items: tuple[_Node, ...]


@dataclass(frozen=True, slots=True)
class _Alt:
    options: tuple[_Node, ...]


@dataclass(frozen=True, slots=True)
class _Repeat:
    item: _Node
    low: int
    high: int | None  # None: unbounded


@dataclass(frozen=True, slots=True)
class _Assert:
    kind: str  # "^", "$", "b", "B"


_Node = _Char | _Concat | _Alt | _Repeat | _Assert


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _is_digit(ch: str) -> bool:
    return ch.isdecimal()


def _is_space(ch: str) -> bool:
    return ch.isspace()


_SHORTHAND: dict[str, tuple[_CharTest, bool]] = {
    "d": (_is_digit, False),
    "D": (_is_digit, True),
    "w": (_is_word, False),
    "W": (_is_word, True),
    "s": (_is_space, False),
    "S": (_is_space, True),
}

_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v", "a": "\a", "0": "\0"}


def _negate(test: _CharTest) -> _CharTest:
    def negated(ch: str) -> bool:
        return not test(ch)

    return negated


def _fold(test: _CharTest) -> _CharTest:
    def folded(ch: str) -> bool:
        return test(ch) or test(ch.lower()) or test(ch.upper())

    return folded


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.icase = False
        self.size = 0  # a running estimate of the program size, to refuse huge expansions early

    def error(self, message: str, at: int | None = None) -> RegexError:
        return RegexError(message, column=(self.i if at is None else at) + 1)

    def parse(self) -> _Node:
        if self.p.startswith("(?i)"):
            self.icase = True
            self.i = 4
        node = self.alternation()
        if self.i < len(self.p):
            raise self.error("unbalanced ')'")
        return node

    def alternation(self) -> _Node:
        options = [self.concat()]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            options.append(self.concat())
        return options[0] if len(options) == 1 else _Alt(tuple(options))

    def concat(self) -> _Node:
        items: list[_Node] = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            items.append(self.repeat())
        return items[0] if len(items) == 1 else _Concat(tuple(items))

    def repeat(self) -> _Node:
        start = self.i
        node = self.atom()
        while self.i < len(self.p):
            ch = self.p[self.i]
            if ch in "*+?":
                low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
                self.i += 1
            elif ch == "{" and self._counted_ahead():
                low, high = self.counted()
            else:
                break
            if isinstance(node, _Assert):
                raise self.error("nothing to repeat", start)
            if self.i < len(self.p) and self.p[self.i] == "?":
                self.i += 1  # lazy: the same set of matching lines
            elif self.i < len(self.p) and self.p[self.i] == "+":
                raise self.error("possessive quantifiers are not supported by the linear-time engine")
            node = _Repeat(node, low, high)
            self.size += 2 * max(low, high or 1)
            if self.size > _MAX_PROGRAM:
                raise self.error(f"pattern expands to more than {_MAX_PROGRAM} instructions", start)
        return node

    def _counted_ahead(self) -> bool:
        j = self.i + 1
        p = self.p
        while j < len(p) and ((p[j].isdigit() and p[j].isascii()) or p[j] == ","):
            j += 1
        return j < len(p) and p[j] == "}" and j > self.i + 1 and p[self.i + 1 : j] != ","

    def counted(self) -> tuple[int, int | None]:
        at = self.i
        close = self.p.index("}", self.i)
        body = self.p[self.i + 1 : close]
        self.i = close + 1
        if "," in body:
            lo_text, hi_text = body.split(",", 1)
            if "," in hi_text:
                raise self.error("malformed repetition", at)
            low = int(lo_text) if lo_text else 0
            high = int(hi_text) if hi_text else None
        else:
            low = high = int(body)
        if low > _MAX_REPEAT or (high is not None and high > _MAX_REPEAT):
            raise self.error(f"repetition count above {_MAX_REPEAT}", at)
        if high is not None and high < low:
            raise self.error("repetition range is reversed", at)
        return low, high

    def atom(self) -> _Node:
        p = self.p
        ch = p[self.i]
        at = self.i
        if ch == "(":
            return self.group()
        if ch in "*+?":
            raise self.error("nothing to repeat")
        if ch == "{" and self._counted_ahead():
            raise self.error("nothing to repeat")
        self.i += 1
        self.size += 1
        if ch == ".":
            return _Char(lambda c: c != "\n", None)
        if ch == "^":
            return _Assert("^")
        if ch == "$":
            return _Assert("$")
        if ch == "[":
            self.i = at
            return self.char_class()
        if ch == "\\":
            return self.escape(at)
        return self.literal(ch)

    def literal(self, ch: str) -> _Char:
        if self.icase:
            variants = frozenset({ch, ch.lower(), ch.upper()})
            return _Char(_fold(variants.__contains__), None)
        return _Char(ch.__eq__, ch)

    def group(self) -> _Node:
        at = self.i
        p = self.p
        self.i += 1
        if p.startswith("?", self.i):
            if p.startswith("?:", self.i):
                self.i += 2
            elif p.startswith("?P<", self.i):
                close = p.find(">", self.i)
                name = p[self.i + 3 : close] if close > 0 else ""
                if close < 0 or not name.isidentifier():
                    raise self.error("malformed group name", at)
                self.i = close + 1
            elif p.startswith(("?=", "?!", "?<=", "?<!"), self.i):
                raise self.error("look-around is not supported by the linear-time engine", at)
            elif p.startswith("?>", self.i):
                raise self.error("atomic groups are not supported by the linear-time engine", at)
            elif p.startswith("?(", self.i):
                raise self.error("conditionals are not supported by the linear-time engine", at)
            elif p.startswith("?P=", self.i):
                raise self.error("back-references are not supported by the linear-time engine", at)
            else:
                raise self.error("inline flags are supported only as a leading (?i)", at)
        node = self.alternation()
        if self.i >= len(p) or p[self.i] != ")":
            raise self.error("missing ')'", at)
        self.i += 1
        return node

    def escape(self, at: int) -> _Node:
        p = self.p
        if self.i >= len(p):
            raise self.error("trailing backslash", at)
        ch = p[self.i]
        self.i += 1
        if ch in _SHORTHAND:
            test, negate = _SHORTHAND[ch]
            return _Char(_negate(test) if negate else test, None)
        if ch == "b":
            return _Assert("b")
        if ch == "B":
            return _Assert("B")
        if ch == "A":
            return _Assert("^")
        if ch in "Zz":
            return _Assert("$")
        if ch.isdigit() and ch != "0":
            raise self.error("back-references are not supported by the linear-time engine", at)
        return self.literal(self.escaped_char(ch, at))

    def escaped_char(self, ch: str, at: int) -> str:
        if ch in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[ch]
        if ch in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[ch]
            digits = self.p[self.i : self.i + width]
            if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise self.error(f"\\{ch} needs {width} hexadecimal digits", at)
            self.i += width
            code = int(digits, 16)
            if code > 0x10FFFF:
                raise self.error("code point out of range", at)
            return chr(code)
        if ch.isalnum():
            raise self.error(f"unknown escape \\{ch}", at)
        return ch

    def char_class(self) -> _Char:
        p = self.p
        at = self.i
        self.i += 1
        negated = False
        if self.i < len(p) and p[self.i] == "^":
            negated = True
            self.i += 1
        singles: set[str] = set()
        ranges: list[tuple[str, str]] = []
        tests: list[_CharTest] = []
        first = True
        while True:
            if self.i >= len(p):
                raise self.error("unterminated character class", at)
            ch = p[self.i]
            if ch == "]" and not first:
                self.i += 1
                break
            first = False
            self.i += 1
            if ch == "\\":
                if self.i >= len(p):
                    raise self.error("trailing backslash", at)
                esc = p[self.i]
                self.i += 1
                if esc in _SHORTHAND:
                    test, negate = _SHORTHAND[esc]
                    tests.append(_negate(test) if negate else test)
                    continue
                ch = "\b" if esc == "b" else self.escaped_char(esc, self.i - 2)
            if self.i + 1 < len(p) and p[self.i] == "-" and p[self.i + 1] != "]":
                self.i += 1
                hi = p[self.i]
                self.i += 1
                if hi == "\\":
                    if self.i >= len(p):
                        raise self.error("trailing backslash", at)
                    esc = p[self.i]
                    self.i += 1
                    if esc in _SHORTHAND:
                        raise self.error("bad character range", at)
                    hi = self.escaped_char(esc, self.i - 2)
                if hi < ch:
                    raise self.error(f"bad character range {ch}-{hi}", at)
                ranges.append((ch, hi))
            else:
                singles.add(ch)
        frozen = frozenset(singles)
        spans = tuple(ranges)
        extra = tuple(tests)

        def member(c: str) -> bool:
            return c in frozen or any(lo <= c <= hi for lo, hi in spans) or any(t(c) for t in extra)

        test = _fold(member) if self.icase else member
        if negated:
            return _Char(lambda c: not test(c), None)
        if not extra and not spans and len(frozen) == 1 and not self.icase:
            return _Char(test, next(iter(frozen)))
        return _Char(test, None)


# ------------------------------------------------------------------------------------------------------------ program

_CHAR, _SPLIT, _JMP, _ASSERT, _MATCH = range(5)


def _compile(node: _Node) -> list[tuple[int, object, int]]:
    code: list[tuple[int, object, int]] = []

    def emit(n: _Node) -> None:
        if len(code) > _MAX_PROGRAM:
            raise RegexError(f"pattern expands to more than {_MAX_PROGRAM} instructions")
        if isinstance(n, _Char):
            code.append((_CHAR, n.test, 0))
        elif isinstance(n, _Assert):
            code.append((_ASSERT, n.kind, 0))
        elif isinstance(n, _Concat):
            for item in n.items:
                emit(item)
        elif isinstance(n, _Alt):
            jumps: list[int] = []
            for option in n.options[:-1]:
                split = len(code)
                code.append((_SPLIT, 0, 0))
                emit(option)
                jumps.append(len(code))
                code.append((_JMP, 0, 0))
                code[split] = (_SPLIT, split + 1, len(code))
            emit(n.options[-1])
            for j in jumps:
                code[j] = (_JMP, len(code), 0)
        else:
            for _ in range(n.low):
                emit(n.item)
            if n.high is None:
                loop = len(code)
                code.append((_SPLIT, 0, 0))
                emit(n.item)
                code.append((_JMP, loop, 0))
                code[loop] = (_SPLIT, loop + 1, len(code))
            else:
                exits: list[int] = []
                for _ in range(n.high - n.low):
                    exits.append(len(code))
                    code.append((_SPLIT, 0, 0))
                    emit(n.item)
                for e in exits:
                    code[e] = (_SPLIT, e + 1, len(code))

    emit(node)
    code.append((_MATCH, None, 0))
    if len(code) > _MAX_PROGRAM:
        raise RegexError(f"pattern expands to more than {_MAX_PROGRAM} instructions")
    return code


def _required_literal(node: _Node) -> str:
    """The longest run of literal characters every match must contain (for a fast substring prefilter)."""
    items = node.items if isinstance(node, _Concat) else (node,)
    best = ""
    run: list[str] = []
    for item in items:
        if isinstance(item, _Char) and item.literal is not None:
            run.append(item.literal)
            continue
        if isinstance(item, _Repeat) and item.low >= 1:
            inner = _required_literal(item.item)
            if len(inner) > len(best):
                best = inner
        if not isinstance(item, _Assert):
            if len(run) > len(best):
                best = "".join(run)
            run = []
    if len(run) > len(best):
        best = "".join(run)
    return best


# Character classes for the assertion context: the position before the first character and after the last is _EDGE.
_EDGE, _WORD, _OTHER = 0, 1, 2


class Regex:
    """A compiled pattern. `search(line)` says whether it matches anywhere in `line`, in linear time."""

    __slots__ = (
        "_code",
        "_ids",
        "_sets",
        "_start",
        "_trans",
        "budget",
        "ignore_case",
        "pattern",
        "required",
        "work",
    )

    def __init__(self, pattern: str, *, ignore_case: bool = False, budget: int | None = None) -> None:
        if len(pattern) > _MAX_PATTERN:
            raise RegexError(f"pattern longer than {_MAX_PATTERN} characters")
        if not pattern:
            raise RegexError("pattern is empty")
        parser = _Parser(pattern)
        parser.icase = ignore_case
        node = parser.parse()
        self.pattern = pattern
        self.ignore_case = parser.icase
        self.required = "" if parser.icase else _required_literal(node)
        self._code = _compile(node)
        self.budget = budget
        """Most instruction visits allowed over the object's life (None: no limit); `RegexBudgetError` past it."""
        self.work = 0
        """Instruction visits so far: the cost of building DFA states, the only step that is not one cache lookup."""
        self._reset()

    def _reset(self) -> None:
        # A DFA state is (set of NFA pcs before closure, class of the previous character), interned to an int.
        self._ids: dict[tuple[frozenset[int], int], int] = {}
        self._sets: list[tuple[frozenset[int], int]] = []
        self._trans: list[dict[str | None, int]] = []
        self._start = self._intern(frozenset({0}), _EDGE)

    def _intern(self, core: frozenset[int], prev: int) -> int:
        key = (core, prev)
        sid = self._ids.get(key)
        if sid is None:
            sid = len(self._sets)
            self._ids[key] = sid
            self._sets.append(key)
            self._trans.append({})
        return sid

    def _closure(self, core: frozenset[int], prev: int, cur: int) -> tuple[list[int], bool]:
        code = self._code
        seen: set[int] = set()
        chars: list[int] = []
        stack = sorted(core, reverse=True)
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op, a, b = code[pc]
            if op == _CHAR:
                chars.append(pc)
            elif op == _MATCH:
                self.work += len(seen)
                return chars, True
            elif op == _JMP:
                stack.append(a)  # type: ignore[arg-type]
            elif op == _SPLIT:
                stack.append(b)
                stack.append(a)  # type: ignore[arg-type]
            else:
                if a == "^":
                    ok = prev == _EDGE
                elif a == "$":
                    ok = cur == _EDGE
                else:
                    boundary = (prev == _WORD) != (cur == _WORD)
                    ok = boundary if a == "b" else not boundary
                if ok:
                    stack.append(pc + 1)
        self.work += len(seen)
        return chars, False

    def _step(self, sid: int, ch: str | None) -> int:
        """Compute and cache the transition from state `sid` on `ch` (None: the end of the line). -1 means matched."""
        core, prev = self._sets[sid]
        cur = _EDGE if ch is None else (_WORD if _is_word(ch) else _OTHER)
        chars, matched = self._closure(core, prev, cur)
        if self.budget is not None and self.work > self.budget:
            raise RegexBudgetError(
                f"the pattern needed more than {self.budget} automaton steps on this input; simplify it (fewer or "
                "smaller counted repetitions, fewer alternatives under a repetition)"
            )
        if matched:
            result = -1
        elif ch is None:
            result = -2  # end of line, no match
        else:
            code = self._code
            nxt = {pc + 1 for pc in chars if code[pc][1](ch)}  # type: ignore[operator]
            nxt.add(0)  # unanchored search: a match may start at the next position
            if len(self._sets) >= _MAX_DFA_STATES:
                self._reset()
                target = self._intern(frozenset(nxt), cur)
                return target  # not cached: the table was just cleared
            result = self._intern(frozenset(nxt), cur)
        self._trans[sid][ch] = result
        return result

    def search(self, line: str) -> bool:
        """Whether the pattern matches somewhere in `line` (one line, without its line break)."""
        if self.required and self.required not in line:
            return False
        trans = self._trans
        sid = self._start
        for ch in line:
            nxt = trans[sid].get(ch)
            if nxt is None:
                nxt = self._step(sid, ch)
                trans = self._trans  # the table may have been cleared
            if nxt == -1:
                return True
            sid = nxt
        end = trans[sid].get(None)
        if end is None:
            end = self._step(sid, None)
        return end == -1
