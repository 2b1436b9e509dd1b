"""Go's regular expressions for the two callers: templates (`regexMatch`, `regexReplace`) and `search_files_regex`.

Both read a pattern with the one RE2 parser (`re_syntax`) and run the one compiled program (`re_prog`): templates
find leftmost-first matches with their groups and replace them as Go's `ReplaceAllString` does (`$1`, `${1}`,
`$name`, `${name}`, `$$`; an empty match right after a previous match is not replaced); the search tool asks whether
each line matches (`LineSearch`), within a work budget, after looking for the longest literal every match contains.
Matching takes time linear in the text (times the pattern's size) whatever the pattern.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from onellm._go import re_prog as vm
from onellm._go import re_syntax
from onellm._go.errors import RegexSyntaxError

__all__ = ["LineSearch", "Regex", "RegexBudgetError", "RegexError", "compile_re2", "replace_all"]


class Regex:
    """A compiled RE2 pattern: `search` finds the leftmost-first match in linear time."""

    __slots__ = ("groupindex", "groups", "pattern", "program")

    def __init__(self, pattern: str, program: vm.Program, names: list[str | None]) -> None:
        self.pattern = pattern
        self.program = program
        self.groups = program.ngroups
        groupindex: dict[str, tuple[int, ...]] = {}
        for k, name in enumerate(names, start=1):
            if name is not None:
                groupindex[name] = (*groupindex.get(name, ()), k)
        self.groupindex = groupindex
        """The groups of each name, in order (Go allows a name more than once)."""

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


def _program(pattern: str, parsed: re_syntax.Parsed) -> vm.Program:
    try:
        return vm.Program(parsed.root, parsed.ngroups)
    except vm.ProgramTooLarge:
        raise RegexSyntaxError("expression too large", pattern, 0) from None
    except RecursionError:
        raise RegexSyntaxError("expression nests too deeply", pattern, 0) from None


@functools.lru_cache(maxsize=256)
def compile_re2(pattern: str) -> Regex:
    """The pattern compiled (cached per pattern); `RegexSyntaxError` with Go's message if Go refuses it."""
    parsed = re_syntax.parse(pattern)
    return Regex(pattern, _program(pattern, parsed), parsed.names)


def _python_pattern(pattern: str) -> re.Pattern[str]:
    """The same pattern on Python's backtracking `re` (how it was matched before; the reference in tests)."""
    return re.compile(re_syntax.parse(pattern).python)


def _expand(template: str, s: str, slots: list[int], groups: int, names: Mapping[str, int | tuple[int, ...]]) -> str:
    """Go's `Regexp.expand`: `$1`, `${1}`, `$name`, `${name}` (the first group of that name that took part), `$$`."""

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
            idx = names.get(name, ())
            for k in (idx,) if isinstance(idx, int) else idx:
                text = group(k)
                if text is not None:
                    out.append(text)
                    break
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


# ----------------------------------------------------------------------------------------------- the file search tool

MAX_PATTERN = 2000


class RegexError(ValueError):
    """A pattern the search tool refuses: what is wrong, and the 1-based column where the refused construct starts."""

    def __init__(self, message: str, *, column: int | None = None) -> None:
        self.detail = message
        self.column = column
        super().__init__(f"{message} (at column {column})" if column is not None else message)


class RegexBudgetError(RuntimeError):
    """The search used up its work budget: the pattern has too many threads alive at once on this input."""


_UNSUPPORTED = (
    (re.compile(r"\\[1-9]"), "back-references are not supported by the linear-time engine"),
    (re.compile(r"\(\?P[=>]"), "back-references are not supported by the linear-time engine"),
    (re.compile(r"\(\?<?[=!]"), "look-around is not supported by the linear-time engine"),
    (re.compile(r"\(\?>"), "atomic groups are not supported by the linear-time engine"),
    (re.compile(r"\(\?\("), "conditionals are not supported by the linear-time engine"),
    (re.compile(r"(?:[*+?]|\{[0-9,]*\})\+"), "possessive quantifiers are not supported by the linear-time engine"),
)


def _refusal(pattern: str, e: RegexSyntaxError) -> RegexError:
    """The search tool's error for a refused pattern: what the construct is, Go's reason, and its column."""
    reason = f"{e.code}: `{e.expr}`" if e.expr else e.code
    for test, what in _UNSUPPORTED:
        if test.match(pattern, e.pos):
            reason = f"{what} ({reason})"
            break
    return RegexError(reason, column=e.pos + 1)


def _required_literal(node: vm.Node) -> str:
    """The longest run of literal characters every match must contain (for a fast substring prefilter)."""
    items = node.items if isinstance(node, vm.Cat) else (node,)
    best = ""
    run: list[str] = []
    for item in items:
        while isinstance(item, vm.Group):
            item = item.sub
        if isinstance(item, vm.Char) and item.lit is not None:
            run.append(item.lit)
            continue
        if isinstance(item, vm.Assert | vm.Empty):
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
        inner = ""
        if isinstance(item, vm.Repeat) and item.lo >= 1:
            inner = _required_literal(item.sub)
        elif isinstance(item, vm.Cat):
            inner = _required_literal(item)
        if len(inner) > len(best):
            best = inner
    if len(run) > len(best):
        best = "".join(run)
    return best


class LineSearch:
    """A pattern for `search_files_regex`: `search(line)` says whether it matches anywhere in one line.

    The syntax is RE2's (as for templates); a line is the whole text, so `^` and `$` are its ends. `budget` bounds
    the instruction visits spent building new steps over the object's life; past it, `RegexBudgetError`.
    """

    __slots__ = ("_program", "_work", "budget", "ignore_case", "pattern", "required")

    def __init__(self, pattern: str, *, ignore_case: bool = False, budget: int | None = None) -> None:
        if not pattern:
            raise RegexError("pattern is empty")
        if len(pattern) > MAX_PATTERN:
            raise RegexError(f"pattern longer than {MAX_PATTERN} characters")
        try:
            parsed = re_syntax.parse(pattern, "i" if ignore_case else "")
            self._program = _program(pattern, parsed)
        except RegexSyntaxError as e:
            raise _refusal(pattern, e) from None
        self.pattern = pattern
        self.ignore_case = ignore_case
        self.required = _required_literal(parsed.root)
        """A literal every match contains ("" if none): a line without it cannot match."""
        self.budget = budget
        self._work = vm.Work(budget) if budget is not None else None

    @property
    def work(self) -> int:
        """Instruction visits spent so far building steps (0 without a budget)."""
        return self._work.used if self._work is not None else 0

    def search(self, line: str) -> bool:
        """Whether the pattern matches somewhere in `line` (one line, without its line break)."""
        if self.required and self.required not in line:
            return False
        try:
            return self._program.matches(line, 0, self._work)
        except vm.WorkExceeded:
            raise RegexBudgetError(
                f"the pattern needed more than {self.budget} automaton steps on this input; simplify it (fewer or "
                "smaller counted repetitions, fewer alternatives under a repetition)"
            ) from None
