"""Linear-time matching for the template engine's RE2 patterns.

The parser in `regexp` turns a pattern into the small tree defined here. The tree is compiled to a Thompson NFA
program (character tests, splits, jumps, capture-slot saves and empty-width assertions) laid out the way Go's
`regexp/syntax` compiler lays it out, so that priorities between alternatives, greedy and lazy repetition, and the
`(x+)?` form used for a star over something that can match empty all come out as in Go.

The program is run as a Pike VM: one ordered list of threads per input position, the highest-priority thread first,
at most one thread per instruction, so the first thread to reach the match instruction wins (leftmost-first, like
Go) and a search reads each character once. A step from one thread list to the next depends only on the list's
instructions, the character consumed and, for assertions, what kind of character follows; that step is computed once
(in time proportional to the program) and cached on the list, so most characters cost one dictionary lookup plus the
copying of thread data. The cache is bounded; past the bound it is dropped and rebuilt, which keeps the worst case
at O(program x text) for any input. Programs are capped at MAX_PROGRAM instructions (counted repetition is expanded),
because the cost of a character grows with the number of threads alive at once.

A search for the span alone keeps one start position per thread; the groups are then found by a second run, anchored
at the match's start and stopped at its end, that carries all capture slots. Whether there is a match at all needs
no thread data: it is a walk over the cached steps that stops at the first match.

Replacing every match runs one search after another, and a search may read far past its match while a higher-priority
thread could still match; the next search then reads that text again, which over many matches is quadratic. When that
rereading grows past the text's length, `alive` makes one backward pass over the text that marks, per position, the
instructions from which a match can still be reached; later searches drop every other thread at once, so each stops at
its match's end and the whole replacement stays linear.

Single characters are tested with Python's `re` on a one-character class (cached per character), which keeps case
folding and Unicode classes exactly as Python defines them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BEGIN_LINE",
    "BEGIN_TEXT",
    "END_LINE",
    "END_TEXT",
    "NO_WORD_BOUNDARY",
    "WORD_BOUNDARY",
    "Alt",
    "Assert",
    "Cat",
    "Char",
    "Empty",
    "Fail",
    "Group",
    "Node",
    "Program",
    "ProgramTooLarge",
    "Repeat",
    "Work",
    "WorkExceeded",
]

# ------------------------------------------------------------------------------------------------------- the tree

BEGIN_LINE = 1
END_LINE = 2
BEGIN_TEXT = 4
END_TEXT = 8
WORD_BOUNDARY = 16
NO_WORD_BOUNDARY = 32


@dataclass(frozen=True, slots=True, eq=False)
class Char:
    """One character that Python's `re` pattern `text` (a single-character pattern) matches; `lit` is that character
    when the pattern is one literal character matched exactly (the search tool looks for such runs first)."""

    text: str
    icase: bool
    lit: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Empty:
    """Matches the empty string."""


@dataclass(frozen=True, slots=True, eq=False)
class Fail:
    """Matches nothing (an empty class)."""


@dataclass(frozen=True, slots=True, eq=False)
class Assert:
    """An empty-width test: one of the BEGIN_/END_/WORD_ constants."""

    kind: int


@dataclass(frozen=True, slots=True, eq=False)
class Cat:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Alt:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Repeat:
    """`sub` repeated lo to hi times (None: no bound); `counted` for the `{n,m}` forms."""

    sub: Node
    lo: int
    hi: int | None
    greedy: bool
    counted: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class Group:
    """Capturing group number `index` (from 1)."""

    sub: Node
    index: int


Node = Char | Empty | Fail | Assert | Cat | Alt | Repeat | Group

# ---------------------------------------------------------------------------------------------------- the program

_CHAR = 0
_MATCH = 1
_SPLIT = 2
_SAVE = 3
_ASSERT = 4
_FAIL = 5

MAX_PROGRAM = 10_000
# The step cache of one program holds at most this many states and this many units (one per cached step, state and
# thread in them), about a few megabytes.
_MAX_STATES = 2_000
_MAX_CACHE = 60_000
_MAX_MEMO = 1_024


class WorkExceeded(Exception):
    """A search built more steps than its `Work` allows."""


class Work:
    """A limit on the steps a caller's searches may build, and what they have used so far (instruction visits)."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def spend(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            raise WorkExceeded


class ProgramTooLarge(Exception):
    """The pattern expands (counted repetition) to more instructions than MAX_PROGRAM."""


@functools.lru_cache(maxsize=512)
def _char_test(text: str, icase: bool) -> tuple[dict[str, bool], re.Pattern[str]]:
    """A memo of answers and the one-character Python pattern behind it; shared by equal leaves."""
    return {}, re.compile(text, re.IGNORECASE if icase else 0)


def _children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Cat | Alt):
        return node.items
    if isinstance(node, Repeat | Group):
        return (node.sub,)
    return ()


def _nullable(root: Node) -> dict[int, bool]:
    """Whether each node (by id) can match the empty string; worked out without recursion, children first."""
    memo: dict[int, bool] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in memo:
            continue
        kids = _children(node)
        if kids and not ready:
            stack.append((node, True))
            stack += ((k, False) for k in kids)
            continue
        if isinstance(node, Char | Fail):
            got = False
        elif isinstance(node, Empty | Assert):
            got = True
        elif isinstance(node, Cat):
            got = all(memo[id(k)] for k in kids)
        elif isinstance(node, Alt):
            got = any(memo[id(k)] for k in kids)
        elif isinstance(node, Repeat):
            got = node.lo == 0 or memo[id(node.sub)]
        else:
            got = memo[id(kids[0])]
        memo[id(node)] = got
    return memo


class _Builder:
    def __init__(self, root: Node) -> None:
        self.op: list[int] = []
        self.x: list[int] = []
        self.y: list[int] = []
        self.leaf: list[Char | None] = []
        self.nullable = _nullable(root)

    def emit(self, op: int, x: int = -1, y: int = -1, leaf: Char | None = None) -> int:
        if len(self.op) >= MAX_PROGRAM:
            raise ProgramTooLarge
        self.op.append(op)
        self.x.append(x)
        self.y.append(y)
        self.leaf.append(leaf)
        return len(self.op) - 1

    def quest(self, body: int, nxt: int, greedy: bool) -> int:
        return self.emit(_SPLIT, body, nxt) if greedy else self.emit(_SPLIT, nxt, body)

    def comp(self, node: Node, nxt: int) -> int:
        """Code for `node` that continues at `nxt`; returns its entry. Built back to front.

        One call per tree level (no helper calls on the way down), so patterns nest as deep as Python's `re` allows.
        """
        if isinstance(node, Char):
            return self.emit(_CHAR, nxt, leaf=node)
        if isinstance(node, Empty):
            return nxt
        if isinstance(node, Fail):
            return self.emit(_FAIL)
        if isinstance(node, Assert):
            return self.emit(_ASSERT, nxt, node.kind)
        if isinstance(node, Cat):
            for item in reversed(node.items):
                nxt = self.comp(item, nxt)
            return nxt
        if isinstance(node, Alt):
            entry = self.comp(node.items[-1], nxt)
            for item in reversed(node.items[:-1]):
                entry = self.emit(_SPLIT, self.comp(item, nxt), entry)
            return entry
        if isinstance(node, Group):
            close = self.emit(_SAVE, nxt, 2 * node.index + 1)
            body = self.comp(node.sub, close)
            return self.emit(_SAVE, body, 2 * node.index)
        sub, lo, hi, greedy = node.sub, node.lo, node.hi, node.greedy
        if hi is None:
            # A loop: the split either runs the body again (which comes back to it) or leaves.
            loop = self.emit(_SPLIT)
            body = self.comp(sub, loop)
            self.x[loop], self.y[loop] = (body, nxt) if greedy else (nxt, body)
            if lo == 0:
                # x* enters at the split; as in Go, an x that can match empty makes it (x+)?, for the priorities.
                return self.quest(body, nxt, greedy) if self.nullable[id(sub)] else loop
            # x{n,} is n-1 copies of x, then x+ (which enters at the body).
            entry = body
            for _ in range(lo - 1):
                entry = self.comp(sub, entry)
            return entry
        # x{n,m} is n copies of x, then m-n nested optional copies: x{2,5} = xx(x(x(x)?)?)?.
        entry = nxt
        for _ in range(hi - lo):
            entry = self.quest(self.comp(sub, entry), nxt, greedy)
        for _ in range(lo):
            entry = self.comp(sub, entry)
        return entry


def _anchored(root: Node) -> bool:
    """Whether every match must start at the beginning of the text (every way in begins with `\\A`)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, Assert) and node.kind == BEGIN_TEXT:
            continue
        if isinstance(node, Cat) and node.items:
            stack.append(node.items[0])
        elif isinstance(node, Alt):
            stack += node.items
        elif isinstance(node, Group) or (isinstance(node, Repeat) and node.lo >= 1):
            stack.append(node.sub)
        else:
            return False
    return True


_WORD = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _kind(c: str) -> int:
    """What a character is, for the assertions: 1 a newline, 2 a word character, 3 other (0 is outside the text)."""
    if c == "\n":
        return 1
    return 2 if c in _WORD else 3


def _mask(prev: int, nxt: int) -> int:
    """The assertions that hold between a character of kind `prev` and one of kind `nxt` (0 = outside the text)."""
    m = 0
    if prev == 0:
        m |= BEGIN_TEXT | BEGIN_LINE
    elif prev == 1:
        m |= BEGIN_LINE
    if nxt == 0:
        m |= END_TEXT | END_LINE
    elif nxt == 1:
        m |= END_LINE
    m |= WORD_BOUNDARY if (prev == 2) != (nxt == 2) else NO_WORD_BOUNDARY
    return m


class _State:
    """An ordered list of threads' instructions; `steps[k][c]` caches the step on character c (k: what follows)."""

    __slots__ = ("pcs", "steps")

    def __init__(self, pcs: tuple[int, ...]) -> None:
        self.pcs = pcs
        self.steps: list[dict[str, _Step]] = [{}, {}, {}, {}, {}, {}, {}, {}]


# A step: (next state, source thread of each new thread (-1: a new thread starting here), the capture slots each new
# thread sets, index of the thread that matched before the step (-1: none), whether every new thread is a new start,
# whether no new thread starts or sets a slot).
_Step = tuple[_State, tuple[int, ...], tuple[tuple[int, ...], ...], int, bool, bool]


class Program:
    """A compiled pattern with `ngroups` capturing groups."""

    def __init__(self, root: Node, ngroups: int) -> None:
        b = _Builder(root)
        match = b.emit(_MATCH)
        self.start = b.comp(root, match)
        self.op = b.op
        self.x = b.x
        self.y = b.y
        self.leaf = b.leaf
        self.tests = [None if leaf is None else _char_test(leaf.text, leaf.icase) for leaf in b.leaf]
        self.ngroups = ngroups
        self.anchored = _anchored(root)
        self.uses_context = _ASSERT in self.op
        self.states: dict[tuple[int, ...], _State] = {}
        self.cached = 0
        self.initial: dict[int, tuple[_State, tuple[tuple[int, ...], ...]]] = {}
        self.skip = self._skip_pattern()
        self.match = match
        # For the backward pass (`alive`): each empty move reversed, with the assertion it needs (0: none), and the
        # character tests that lead into each instruction.
        self.preds: list[list[tuple[int, int]]] = [[] for _ in self.op]
        self.into: list[list[int]] = [[] for _ in self.op]
        for pc, o in enumerate(self.op):
            if o == _SPLIT:
                self.preds[self.x[pc]].append((pc, 0))
                self.preds[self.y[pc]].append((pc, 0))
            elif o == _SAVE:
                self.preds[self.x[pc]].append((pc, 0))
            elif o == _ASSERT:
                self.preds[self.x[pc]].append((pc, self.y[pc]))
            elif o == _CHAR:
                self.into[self.x[pc]].append(pc)
        self.back: dict[tuple[frozenset[int], int], tuple[frozenset[int], dict[str, frozenset[int]]]] = {}
        self.pruned: dict[tuple[_State, frozenset[int]], tuple[_State, tuple[int, ...] | None]] = {}

    # -- building steps

    def _skip_pattern(self) -> re.Pattern[str] | None:
        """A Python pattern for the characters that can begin a match, or None if a match can be empty."""
        seen: set[int] = set()
        stack = [self.start]
        texts: dict[str, None] = {}
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op = self.op[pc]
            if op == _MATCH:
                return None
            if op == _CHAR:
                leaf = self.leaf[pc]
                assert leaf is not None
                texts[("(?i:" if leaf.icase else "(?-i:") + leaf.text + ")"] = None
            elif op == _SPLIT:
                stack += (self.y[pc], self.x[pc])
            elif op != _FAIL:
                stack.append(self.x[pc])
        if not texts or len(texts) > 64:
            return None
        return re.compile("|".join(texts))

    def _add(
        self,
        pc: int,
        ctx: int,
        visited: set[int],
        pcs: list[int],
        srcs: list[int],
        opss: list[tuple[int, ...]],
        src: int,
    ) -> None:
        """Follow empty moves from `pc` in priority order, adding each character test or match reached first."""
        op, x, y = self.op, self.x, self.y
        stack: list[tuple[int, tuple[int, ...]]] = [(pc, ())]
        while stack:
            pc, ops = stack.pop()
            if pc in visited:
                continue
            visited.add(pc)
            o = op[pc]
            if o <= _MATCH:
                pcs.append(pc)
                srcs.append(src)
                opss.append(ops)
            elif o == _SPLIT:
                stack.append((y[pc], ops))
                stack.append((x[pc], ops))
            elif o == _SAVE:
                slot = y[pc]
                stack.append((x[pc], ops if slot in ops else (*ops, slot)))
            elif o == _ASSERT and ctx & y[pc]:
                stack.append((x[pc], ops))

    def _state(self, pcs: tuple[int, ...]) -> _State:
        st = self.states.get(pcs)
        if st is None:
            if len(self.states) >= _MAX_STATES or self.cached >= _MAX_CACHE:
                # Drop the cache (states still in use by a running search keep working, unshared).
                self.states = {}
                self.initial = {}
                self.cached = 0
            st = self.states[pcs] = _State(pcs)
            self.cached += 1 + len(pcs)
        return st

    def _begin(self, ctx: int) -> tuple[_State, tuple[tuple[int, ...], ...]]:
        got = self.initial.get(ctx)
        if got is None:
            pcs: list[int] = []
            srcs: list[int] = []
            opss: list[tuple[int, ...]] = []
            self._add(self.start, ctx, set(), pcs, srcs, opss, -1)
            got = self.initial[ctx] = (self._state(tuple(pcs)), tuple(opss))
        return got

    def _step(self, st: _State, c: str, nxt: int, adding: bool) -> _Step:
        ctx = _mask(_kind(c), nxt) if self.uses_context else 0
        visited: set[int] = set()
        pcs: list[int] = []
        srcs: list[int] = []
        opss: list[tuple[int, ...]] = []
        matched = -1
        op, x, tests = self.op, self.x, self.tests
        for idx, pc in enumerate(st.pcs):
            test = tests[pc]
            if test is None:  # the match instruction
                matched = idx
                break
            memo, rx = test
            ok = memo.get(c)
            if ok is None:
                ok = rx.match(c) is not None
                if len(memo) < _MAX_MEMO:
                    memo[c] = ok
            if not ok:
                continue
            to = x[pc]
            if op[to] <= _MATCH:
                # The common case, one character test after another: no empty moves to follow.
                if to not in visited:
                    visited.add(to)
                    pcs.append(to)
                    srcs.append(idx)
                    opss.append(())
            else:
                self._add(to, ctx, visited, pcs, srcs, opss, idx)
        if adding and matched < 0:
            self._add(self.start, ctx, visited, pcs, srcs, opss, -1)
        fresh = all(s < 0 for s in srcs)
        plain = not any(opss) and min(srcs, default=0) >= 0
        step: _Step = (self._state(tuple(pcs)), tuple(srcs), tuple(opss), matched, fresh, plain)
        st.steps[nxt + (4 if adding else 0)][c] = step
        self.cached += 1 + len(srcs)
        return step

    # -- running

    def _context_at(self, s: str, i: int) -> int:
        if not self.uses_context:
            return 0
        return _mask(_kind(s[i - 1]) if i > 0 else 0, _kind(s[i]) if i < len(s) else 0)

    def matches(self, s: str, pos: int = 0, work: Work | None = None) -> bool:
        """Whether there is a match at or after `pos`: the thread lists alone, no positions kept.

        With `work`, the steps this search has to build (those not cached yet) are counted against its limit, and
        `WorkExceeded` stops the search past it; cached steps cost nothing.
        """
        n = len(s)
        if pos > n or (self.anchored and pos > 0):
            return False
        ctx = self.uses_context
        adding = not self.anchored
        skip = self.skip if adding else None
        i = pos
        st = self._begin(self._context_at(s, i))[0]
        fresh = True
        while i < n:
            if fresh and skip is not None:
                m = skip.search(s, i)
                if m is None:
                    return False
                if m.start() > i:
                    i = m.start()
                    st = self._begin(self._context_at(s, i))[0]
            c = s[i]
            if ctx:
                k = _kind(s[i + 1]) if i + 1 < n else 0
                table = st.steps[k + 4 if adding else k]
            else:
                k = 0
                table = st.steps[4 if adding else 0]
            step = table.get(c)
            if step is None:
                step = self._step(st, c, k, adding)
                if work is not None:
                    work.spend(len(st.pcs) + len(step[1]) + 1)
            if step[3] >= 0:
                return True
            st = step[0]
            fresh = step[4]
            i += 1
            if not st.pcs and not adding:
                return False
        return any(self.op[pc] == _MATCH for pc in st.pcs)

    def alive(self, s: str) -> list[frozenset[int]]:
        """For each position of s, the instructions from which a thread there can still reach a match.

        One pass from the end of the text backwards, in O(program x text), with the steps cached like the forward ones.
        A thread outside these sets can be dropped without changing any result, since whether a thread can still match
        depends only on its instruction and position.
        """
        n = len(s)
        a = frozenset((self.match,))
        out = [a] * (n + 1)
        uses_context = self.uses_context
        for p in range(n - 1, -1, -1):
            c = s[p]
            ctx = _mask(_kind(c), _kind(s[p + 1]) if p + 1 < n else 0) if uses_context else 0
            entry = self.back.get((a, ctx))
            if entry is None:
                if len(self.back) >= _MAX_STATES:
                    self.back = {}
                entry = self.back[(a, ctx)] = (self._reach_back(a, ctx), {})
            reach, memo = entry
            got = memo.get(c)
            if got is None:
                live = [self.match]
                for e in reach:
                    for cp in self.into[e]:
                        test = self.tests[cp]
                        assert test is not None
                        if test[1].match(c) is not None:
                            live.append(cp)
                got = frozenset(live)
                if len(memo) < _MAX_MEMO:
                    memo[c] = got
            a = out[p] = got
        return out

    def _reach_back(self, targets: frozenset[int], ctx: int) -> frozenset[int]:
        """The instructions from which one of `targets` is reached by empty moves allowed at context `ctx`."""
        seen = set(targets)
        stack = list(targets)
        while stack:
            pc = stack.pop()
            for pred, need in self.preds[pc]:
                if pred not in seen and (not need or ctx & need):
                    seen.add(pred)
                    stack.append(pred)
        return frozenset(seen)

    def _prune(self, st: _State, live: frozenset[int]) -> tuple[_State, tuple[int, ...] | None]:
        """`st` without the threads that cannot match any more, and which threads were kept (None: all)."""
        key = (st, live)
        got = self.pruned.get(key)
        if got is None:
            keep = tuple(k for k, pc in enumerate(st.pcs) if pc in live)
            got = (st, None) if len(keep) == len(st.pcs) else (self._state(tuple(st.pcs[k] for k in keep)), keep)
            if len(self.pruned) >= _MAX_STATES:
                self.pruned = {}
            self.pruned[key] = got
        return got

    def exec(
        self,
        s: str,
        pos: int,
        want: int,
        anchor: bool = False,
        end: int = -1,
        alive: list[frozenset[int]] | None = None,
        waste: list[int] | None = None,
    ) -> list[int] | None:
        """The leftmost-first match in s at or after pos: slots [start, end, g1 start, g1 end, ...] (-1 for unset).

        want = 1: the match's span; 2: the span and groups. With `anchor`, only a match starting at pos. With `end`,
        the caller knows the match ends there (from an earlier run), so the run stops at that position. With `alive`
        (from `alive(s)`), threads that cannot match are dropped at once, so the run ends at the match's end. `waste`
        counts the characters read after a first match was seen (work a later search may do again).
        """
        n = len(s)
        if pos > n or (self.anchored and pos > 0):
            return None
        stop = n if end < 0 else end
        ctx = self.uses_context
        adding = not (self.anchored or anchor)
        skip = self.skip if adding else None
        nslots = 2 * (self.ngroups + 1)
        i = pos
        st, opss = self._begin(self._context_at(s, i))
        threads: list[Any] = self._starts(opss, i, want, nslots)
        if alive is not None:
            st, keep = self._prune(st, alive[i])
            if keep is not None:
                threads = [threads[k] for k in keep]
        found: list[int] | None = None
        first_hit = -1
        fresh = True
        ended = False
        while i < stop:
            if fresh and skip is not None:
                m = skip.search(s, i)
                if m is None:
                    ended = True
                    break
                if m.start() > i:
                    i = m.start()
                    st, opss = self._begin(self._context_at(s, i))
                    threads = self._starts(opss, i, want, nslots)
                    if alive is not None:
                        st, keep = self._prune(st, alive[i])
                        if keep is not None:
                            threads = [threads[k] for k in keep]
            c = s[i]
            k = (_kind(s[i + 1]) if i + 1 < n else 0) if ctx else 0
            step = st.steps[k + 4 if adding else k].get(c)
            if step is None:
                step = self._step(st, c, k, adding)
            st, srcs, opss, hit, fresh, plain = step
            if hit >= 0:
                found = self._found(threads[hit], i, want)
                if first_hit < 0:
                    first_hit = i
                adding = False
                skip = None
            i += 1
            if want == 1:
                threads = [i] * len(srcs) if fresh else [threads[j] if j >= 0 else i for j in srcs]
            elif plain:
                threads = [threads[j] for j in srcs]
            else:
                threads = self._carry(threads, srcs, opss, i, nslots)
            if alive is not None:
                st, keep = self._prune(st, alive[i])
                if keep is not None:
                    threads = [threads[k] for k in keep]
            if not st.pcs and not adding:
                ended = True
                break
        if not ended:
            for idx, pc in enumerate(st.pcs):
                if self.op[pc] == _MATCH:
                    found = self._found(threads[idx], i, want)
                    break
        if waste is not None and first_hit >= 0:
            waste[0] += i - first_hit
        return found

    @staticmethod
    def _starts(opss: tuple[tuple[int, ...], ...], i: int, want: int, nslots: int) -> list[Any]:
        if want == 1:
            return [i] * len(opss)
        base = [-1] * nslots
        base[0] = i
        out: list[Any] = []
        for ops in opss:
            slots = list(base)
            for k in ops:
                slots[k] = i
            out.append(tuple(slots))
        return out

    @staticmethod
    def _carry(
        threads: list[Any], srcs: tuple[int, ...], opss: tuple[tuple[int, ...], ...], i: int, nslots: int
    ) -> list[Any]:
        out: list[Any] = []
        base: tuple[int, ...] | None = None
        for j, ops in zip(srcs, opss, strict=True):
            if j >= 0:
                t = threads[j]
            else:
                if base is None:
                    b = [-1] * nslots
                    b[0] = i
                    base = tuple(b)
                t = base
            if ops:
                slots = list(t)
                for k in ops:
                    slots[k] = i
                t = tuple(slots)
            out.append(t)
        return out

    @staticmethod
    def _found(thread: Any, end: int, want: int) -> list[int]:
        if want == 1:
            return [thread, end]
        slots = list(thread)
        slots[1] = end
        return slots
