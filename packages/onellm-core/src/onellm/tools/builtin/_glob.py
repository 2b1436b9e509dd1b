"""Glob patterns and `.gitignore` rules, matched in time proportional to pattern length times name length.

A glob is compiled to a short list of tokens and run as a position-set automaton over the name: each input character
advances every live position at once, so `*a*a*a*a*b` against a long name of `a`s costs at most tokens x characters
steps, never the exponential blow-up of a backtracking matcher.

Syntax (the `.gitignore` dialect, which `inclusionPatterns` and `exclusionPatterns` share):

- `*` any run of characters except `/`; `?` one character except `/`;
- `[abc]`, `[a-z]`, `[!a-z]` or `[^a-z]` a class of one character (never `/`); `]` first in the class is literal;
- `**` as a whole segment: `**/x` is `x` in any directory, `a/**` everything below `a`, `a/**/b` zero or more
  directories between; any other `**` is a plain `*`;
- `\\x` is the literal `x`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Glob", "GlobError", "IgnoreRule", "IgnoreRules", "PathFilter", "parse_gitignore"]

_MAX_PATTERN = 4096


class GlobError(ValueError):
    """A glob pattern that cannot be compiled (an unclosed class, a trailing backslash, or one too long)."""


# Token kinds. Each token occupies two automaton states: 2*i (at the token) and 2*i+1 (inside a `**/` run).
_LIT = 0  # one literal character
_ONE = 1  # `?`
_CLASS = 2  # `[...]`
_STAR = 3  # `*`: any run without `/`
_ANY = 4  # trailing `**`: any run, `/` included
_DIRS = 5  # `**/`: zero or more whole directories


@dataclass(frozen=True, slots=True)
class _Class:
    negated: bool
    singles: frozenset[str]
    ranges: tuple[tuple[str, str], ...]

    def matches(self, ch: str) -> bool:
        if ch == "/":
            return False
        hit = ch in self.singles or any(lo <= ch <= hi for lo, hi in self.ranges)
        return hit != self.negated


_Token = tuple[int, object]


def _parse_class(pattern: str, start: int) -> tuple[_Class, int]:
    """Parse a class that opens at `pattern[start] == '['`; return it and the index after its `]`."""
    i = start + 1
    negated = False
    if i < len(pattern) and pattern[i] in "!^":
        negated = True
        i += 1
    singles: set[str] = set()
    ranges: list[tuple[str, str]] = []
    first = True
    while True:
        if i >= len(pattern):
            raise GlobError(f"unclosed '[' at column {start + 1} in glob {pattern!r}")
        ch = pattern[i]
        if ch == "]" and not first:
            return _Class(negated, frozenset(singles), tuple(ranges)), i + 1
        first = False
        if ch == "\\":
            if i + 1 >= len(pattern):
                raise GlobError(f"trailing '\\' in glob {pattern!r}")
            ch = pattern[i + 1]
            i += 1
        i += 1
        if i + 1 < len(pattern) and pattern[i] == "-" and pattern[i + 1] != "]":
            hi = pattern[i + 1]
            step = 2
            if hi == "\\":
                if i + 2 >= len(pattern):
                    raise GlobError(f"trailing '\\' in glob {pattern!r}")
                hi = pattern[i + 2]
                step = 3
            if hi < ch:
                raise GlobError(f"range '{ch}-{hi}' is reversed in glob {pattern!r}")
            ranges.append((ch, hi))
            i += step
        else:
            singles.add(ch)


def _tokenize(pattern: str) -> list[_Token]:
    tokens: list[_Token] = []
    n = len(pattern)
    i = 0
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= n:
                raise GlobError(f"trailing '\\' in glob {pattern!r}")
            tokens.append((_LIT, pattern[i + 1]))
            i += 2
        elif ch == "?":
            tokens.append((_ONE, None))
            i += 1
        elif ch == "[":
            cls, i = _parse_class(pattern, i)
            tokens.append((_CLASS, cls))
        elif ch == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            segment_start = i == 0 or pattern[i - 1] == "/"
            if j - i >= 2 and segment_start and (j == n or pattern[j] == "/"):
                if j == n:
                    tokens.append((_ANY, None))
                    i = j
                else:
                    tokens.append((_DIRS, None))
                    i = j + 1  # the `/` belongs to the token
            else:
                if not tokens or tokens[-1][0] != _STAR:  # `**` mid-segment is one `*`
                    tokens.append((_STAR, None))
                i = j
        else:
            tokens.append((_LIT, ch))
            i += 1
    return tokens


class Glob:
    """A compiled glob. `matches(path)` runs in O(len(pattern) * len(path)) time."""

    __slots__ = ("_tokens", "pattern")

    def __init__(self, pattern: str) -> None:
        if len(pattern) > _MAX_PATTERN:
            raise GlobError(f"glob longer than {_MAX_PATTERN} characters")
        self.pattern = pattern
        self._tokens = _tokenize(pattern)

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r})"

    def _close(self, states: set[int]) -> set[int]:
        """Add the states reachable without input: a `*`, `**` or `**/` may match nothing."""
        tokens = self._tokens
        todo = list(states)
        while todo:
            s = todo.pop()
            if s & 1:
                continue
            i = s >> 1
            if i < len(tokens) and tokens[i][0] in (_STAR, _ANY, _DIRS):
                nxt = (i + 1) << 1
                if nxt not in states:
                    states.add(nxt)
                    todo.append(nxt)
        return states

    def matches(self, path: str) -> bool:
        tokens = self._tokens
        end = len(tokens) << 1
        states = self._close({0})
        for ch in path:
            nxt: set[int] = set()
            for s in states:
                i = s >> 1
                if i >= len(tokens):
                    continue
                kind, arg = tokens[i]
                if s & 1:  # inside a `**/` run: any character; a `/` may end the run
                    nxt.add(s)
                    if ch == "/":
                        nxt.add((i + 1) << 1)
                    continue
                if kind == _LIT:
                    if ch == arg:
                        nxt.add((i + 1) << 1)
                elif kind == _ONE:
                    if ch != "/":
                        nxt.add((i + 1) << 1)
                elif kind == _CLASS:
                    assert isinstance(arg, _Class)
                    if arg.matches(ch):
                        nxt.add((i + 1) << 1)
                elif kind == _STAR:
                    if ch != "/":
                        nxt.add(s)
                elif kind == _ANY:
                    nxt.add(s)
                else:  # _DIRS
                    nxt.add(s | 1)
                    if ch == "/":
                        nxt.add((i + 1) << 1)
            if not nxt:
                return False
            states = self._close(nxt)
        return end in states


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    """One `.gitignore` line: its glob, whether it re-includes (`!`), whether it only matches directories."""

    glob: Glob
    negated: bool
    dir_only: bool
    line: int


def parse_gitignore(text: str) -> list[IgnoreRule]:
    """Parse `.gitignore` text into rules; lines that cannot be compiled are skipped, as git skips them."""
    rules: list[IgnoreRule] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw
        if not line or line.startswith("#"):
            continue
        # Trailing spaces are dropped unless escaped with a backslash.
        stripped = line.rstrip(" ")
        if len(stripped) < len(line) and stripped.endswith("\\"):
            stripped += " "
        line = stripped
        if not line:
            continue
        negated = False
        if line.startswith("!"):
            negated = True
            line = line[1:]
        elif line.startswith(("\\!", "\\#")):
            line = line[1:]
        dir_only = line.endswith("/") and not line.endswith("\\/")
        if dir_only:
            line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        if not anchored and not line.startswith("**"):
            line = "**/" + line
        try:
            rules.append(IgnoreRule(Glob(line), negated, dir_only, number))
        except GlobError:
            continue
    return rules


class IgnoreRules:
    """The `.gitignore` files that apply while walking a tree: deeper files take precedence, last match wins."""

    __slots__ = ("_levels",)

    def __init__(self, levels: tuple[tuple[str, tuple[IgnoreRule, ...]], ...] = ()) -> None:
        self._levels = levels

    def add(self, base: str, rules: Iterable[IgnoreRule]) -> IgnoreRules:
        """Return the rules with one more file, whose directory is `base` (relative, `/`-separated, `""` for the top)."""
        rules = tuple(rules)
        if not rules:
            return self
        return IgnoreRules((*self._levels, (base, rules)))

    def ignored(self, path: str, *, is_dir: bool) -> bool:
        """Whether the relative `path` is ignored. Parents are pruned by the walker, so they are not checked here."""
        for base, rules in reversed(self._levels):
            if base:
                if not path.startswith(base + "/"):
                    continue
                rel = path[len(base) + 1 :]
            else:
                rel = path
            for rule in reversed(rules):
                if rule.dir_only and not is_dir:
                    continue
                if rule.glob.matches(rel):
                    return not rule.negated
        return False


class PathFilter:
    """Inclusion and exclusion globs for the file tools.

    A pattern without `/` matches a name at any depth (`*.py`); one with `/` matches the path relative to the search
    root (`src/**/*.py`). Exclusions apply to files and directories (an excluded directory is not entered); inclusions
    apply to files.
    """

    __slots__ = ("exclude", "include")

    def __init__(self, include: Iterable[str] = (), exclude: Iterable[str] = ()) -> None:
        self.include = tuple(_filter_glob(p, "inclusionPatterns", i) for i, p in enumerate(include))
        self.exclude = tuple(_filter_glob(p, "exclusionPatterns", i) for i, p in enumerate(exclude))

    def excluded(self, path: str) -> bool:
        return any(g.matches(path) for g in self.exclude)

    def included(self, path: str) -> bool:
        return not self.include or any(g.matches(path) for g in self.include)


def _filter_glob(pattern: str, argument: str, index: int) -> Glob:
    if not pattern:
        raise GlobError(f"{argument}[{index}] is empty")
    body = pattern.lstrip("/")
    if "/" not in pattern.rstrip("/") and not body.startswith("**"):
        body = "**/" + body
    body = body.rstrip("/") or body
    try:
        return Glob(body)
    except GlobError as exc:
        raise GlobError(f"{argument}[{index}]: {exc}") from None
