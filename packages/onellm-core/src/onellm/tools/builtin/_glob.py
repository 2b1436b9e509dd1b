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


# Token kinds.
_LIT = 0  # one literal character
_ONE = 1  # `?`
_CLASS = 2  # `[...]`
_STAR = 3  # `*`: any run without `/`
_ANY = 4  # trailing `**`: any run, `/` included
_DIRS = 5  # `**/`: zero or more whole directories (the entry state of the automaton's three for it)
_DIRS_IN = 6  # inside a `**/` run: any characters, until a `/` ends it


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
    """A compiled glob. `matches(path)` runs in O(len(pattern) * len(path)) time.

    The automaton is bit-parallel: state `i` ("at token i") is bit `i` of one integer, so a step over one character is
    a few integer operations on a number of len(pattern) bits, whatever the pattern holds. A `**/` token is the pair
    entry, "inside the run" and "/": the entry may go straight to the "/" or past it, and leaves on any character into
    the run, which only a "/" ends.
    """

    __slots__ = ("_cache", "_classes", "_dirs", "_final", "_kinds", "_literals", "_loop", "_skip1", "pattern")

    def __init__(self, pattern: str) -> None:
        if len(pattern) > _MAX_PATTERN:
            raise GlobError(f"glob longer than {_MAX_PATTERN} characters")
        self.pattern = pattern
        kinds: list[int] = []
        literals: list[str | None] = []
        classes: list[_Class | None] = []
        for kind, arg in _tokenize(pattern):
            if kind == _DIRS:
                kinds.extend((_DIRS, _DIRS_IN, _LIT))
                literals.extend((None, None, "/"))
                classes.extend((None, None, None))
                continue
            kinds.append(kind)
            literals.append(arg if kind == _LIT else None)  # type: ignore[arg-type]
            classes.append(arg if kind == _CLASS else None)  # type: ignore[arg-type]
        self._kinds = kinds
        self._literals = literals
        self._classes = classes
        loop = skip1 = dirs = 0
        for i, kind in enumerate(kinds):
            if kind in (_STAR, _ANY, _DIRS_IN):
                loop |= 1 << i
                skip1 |= 1 << i  # the run may be empty (or, inside `**/`, may end at the next `/`)
            if kind == _DIRS:
                dirs |= 1 << i  # at the entry of `**/`: straight to its `/`, or past it (no directories at all)
        self._loop = loop
        self._skip1 = skip1
        self._dirs = dirs
        self._final = 1 << len(kinds)
        self._cache: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r})"

    def _accept(self, ch: str) -> int:
        """The tokens that can consume `ch`, as a bit mask (computed once per distinct character)."""
        mask = 0
        slash = ch == "/"
        for i, kind in enumerate(self._kinds):
            if kind == _LIT:
                ok = self._literals[i] == ch
            elif kind in (_ONE, _STAR):
                ok = not slash
            elif kind == _CLASS:
                cls = self._classes[i]
                ok = cls is not None and cls.matches(ch)
            else:  # _ANY, _DIRS, _DIRS_IN
                ok = True
            if ok:
                mask |= 1 << i
        if len(self._cache) < 512:
            self._cache[ch] = mask
        return mask

    def _close(self, states: int) -> int:
        skip1, dirs = self._skip1, self._dirs
        while True:
            at_dirs = states & dirs
            grown = states | ((states & skip1) << 1) | (at_dirs << 2) | (at_dirs << 3)
            if grown == states:
                return states
            states = grown

    def matches(self, path: str) -> bool:
        cache = self._cache
        loop = self._loop
        states = self._close(1)
        for ch in path:
            accept = cache.get(ch)
            if accept is None:
                accept = self._accept(ch)
            consumed = states & accept
            if not consumed:
                return False
            states = self._close(((consumed & ~loop) << 1) | (consumed & loop))
        return bool(states & self._final)


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    """One `.gitignore` line: its glob, whether it re-includes (`!`), whether it only matches directories."""

    glob: Glob
    negated: bool
    dir_only: bool
    line: int


def parse_gitignore(text: str, *, max_rules: int = 1000) -> list[IgnoreRule]:
    """Parse `.gitignore` text into rules; lines that cannot be compiled are skipped, as git skips them.

    Only the first `max_rules` rules are kept: every listed path is checked against every rule, so a file with
    thousands of lines (a tool could write one) would otherwise make a listing crawl.
    """
    rules: list[IgnoreRule] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        if len(rules) >= max_rules:
            break
        line = raw[:-1] if raw.endswith("\r") else raw
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
