"""regexMatch and regexReplace run on a linear-time engine (a Pike VM), not on Python's backtracking `re`.

The engine must give what Python's `re` gives on the translated pattern (how the patterns were matched before) for
every pattern whose meaning is the same in both: random patterns from a small grammar are compared on random text,
for the leftmost-first match, its groups and the full replacement. Patterns that make a backtracking engine take
exponential time finish on long inputs, directly and through the template API.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onellm._go.regexp import _expand, _python_pattern, compile_re2, replace_all
from onellm.templating import TemplateError, render

# ---------------------------------------------------------------------------------------------- a pattern grammar

# Atoms that always consume one character, and empty-width ones (never repeated: a repeated part that can match
# empty is where Go's rules and Python's backtracking part ways, so the grammar leaves those out).
CHARS = [
    "a",
    "b",
    "A",
    "-",
    "\\n",
    "é",
    ".",
    "[ab]",
    "[^a]",
    "[a-c]",
    "\\d",
    "\\w",
    "\\s",
    "\\W",
    "\\D",
    "[[:alpha:]]",
    "[[:^space:]]",
    "\\pL",
    "\\PL",
    "\\x41",
    "\\.",
]
EMPTIES = ["^", "$", "\\A", "\\z", "\\b", "\\B"]
REPEATS = ["*", "+", "?", "{2}", "{1,3}", "{0,2}", "{2,}"]


def _patterns() -> st.SearchStrategy[tuple[str, bool]]:
    """(pattern, can match empty)."""
    leaf = st.one_of(
        st.sampled_from(CHARS).map(lambda c: (c, False)), st.sampled_from(EMPTIES).map(lambda e: (e, True))
    )

    def extend(inner: st.SearchStrategy[tuple[str, bool]]) -> st.SearchStrategy[tuple[str, bool]]:
        def cat(parts: list[tuple[str, bool]]) -> tuple[str, bool]:
            return "".join(p for p, _ in parts), all(e for _, e in parts)

        def alt(parts: list[tuple[str, bool]]) -> tuple[str, bool]:
            return "|".join(p for p, _ in parts), any(e for _, e in parts)

        def group(args: tuple[str, tuple[str, bool]]) -> tuple[str, bool]:
            opener, (body, empty) = args
            return opener + body + ")", empty

        def repeat(args: tuple[tuple[str, bool], str, bool]) -> tuple[str, bool]:
            (body, empty), op, lazy = args
            if empty:
                return body, empty
            if (
                not body.endswith(")")
                and len(body) > 1
                and not re.fullmatch(r"\\.|\[[^]]*\]|\[\[:\^?\w+:\]\]|\\x41", body)
            ):
                body = "(?:" + body + ")"
            return body + op + ("?" if lazy else ""), op[:2] in ("*", "?", "{0")

        openers = st.sampled_from(["(", "(", "(?:", "(?P<n>", "(?<m>", "(?i:", "(?s:", "(?m:", "(?U:", "(?i)(?:"])
        return st.one_of(
            st.lists(inner, min_size=2, max_size=4).map(cat),
            st.lists(inner, min_size=2, max_size=3).map(alt),
            st.tuples(openers, inner).map(group),
            st.tuples(inner, st.sampled_from(REPEATS), st.booleans()).map(repeat),
        )

    return st.recursive(leaf, extend, max_leaves=8)


TEXT = st.text(alphabet=st.sampled_from("aabbAB1 \n-é_."), max_size=14)


def _valid(pattern: str) -> bool:
    try:
        compile_re2(pattern)
    except Exception:
        return False
    return True


def _reference_slots(m: re.Match[str] | None) -> list[int] | None:
    if m is None:
        return None
    slots: list[int] = []
    for k in range(m.re.groups + 1):
        slots += m.span(k)
    return slots


def _reference_replace(rx: re.Pattern[str], repl: str, s: str) -> str:
    """Go's ReplaceAllString written over Python's `re`, as the engine did it before."""
    names = dict(rx.groupindex)
    out: list[str] = []
    last_end = pos = 0
    while pos <= len(s):
        m = rx.search(s, pos)
        if m is None:
            break
        a0, a1 = m.span()
        out.append(s[last_end:a0])
        if a1 > last_end or a0 == 0:
            slots = _reference_slots(m)
            assert slots is not None
            out.append(_expand(repl, s, slots, rx.groups, names))
        last_end = a1
        pos = pos + 1 if pos + 1 > a1 else a1
    out.append(s[last_end:])
    return "".join(out)


@settings(max_examples=600, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(_patterns(), TEXT, st.integers(min_value=0, max_value=4))
def test_search_agrees_with_python_re(pattern: tuple[str, bool], text: str, pos: int) -> None:
    p = pattern[0]
    if not _valid(p):
        return
    ours, ref = compile_re2(p), _python_pattern(p)
    pos = min(pos, len(text))
    assert (ours.search(text, pos) is None) == (ref.search(text, pos) is None)
    assert ours.find(text, pos, True) == _reference_slots(ref.search(text, pos))
    got = ours.find(text, pos, False)
    want = ref.search(text, pos)
    assert got == (None if want is None else list(want.span()))


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(_patterns(), TEXT, st.integers(min_value=0, max_value=4))
def test_dropping_threads_that_cannot_match_changes_nothing(pattern: tuple[str, bool], text: str, pos: int) -> None:
    """The backward pass marks where a thread can still match; searches that drop the others find the same."""
    p = pattern[0]
    if not _valid(p):
        return
    program = compile_re2(p).program
    alive = program.alive(text)
    pos = min(pos, len(text))
    for want in (1, 2):
        assert program.exec(text, pos, want, alive=alive) == program.exec(text, pos, want)


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(_patterns(), TEXT, st.sampled_from(["-", "", "<$0>", "[$1|${2}]", "$n.${m}$$", "${1}x$3$9"]))
def test_replace_agrees_with_python_re(pattern: tuple[str, bool], text: str, repl: str) -> None:
    p = pattern[0]
    if not _valid(p) or _a_name_twice(p):
        return
    assert replace_all(compile_re2(p), repl, text) == _reference_replace(_python_pattern(p), repl, text)


def _a_name_twice(pattern: str) -> bool:
    """A group name used twice: Go's `${n}` is then the first group of that name that took part, which the reference
    on Python's `re` (one group per name) cannot say; `test_group_names_follow_go` checks those against Go."""
    names = re.findall(r"\(\?P?<(\w+)>", pattern)
    return len(names) != len(set(names))


@pytest.mark.parametrize(
    ("pattern", "text", "span"),
    [
        ("(?i)straße", "STRASSE Straße", (8, 14)),
        ("(?i)k", "\u212a", (0, 1)),
        ("(?i)[a-z]+", "ÀbC", (1, 3)),
        ("\\bé", "xé é", (1, 2)),
        ("(?m)^b$", "a\nb\nc", (2, 3)),
        ("a$", "a\n", None),
        ("(a|ab)(c|bcd)(d*)", "abcd", (0, 4)),
        ("a{2,3}?", "aaaa", (0, 2)),
        ("(?U)a+", "aaa", (0, 1)),
        ("(?U)a+?", "aaa", (0, 3)),
        ("[^\\x00-\\x{10FFFF}]", "abc", None),
        ("x*", "", (0, 0)),
        ("\\Qa.b\\E+", "a.ba.b a.b", (0, 6)),
    ],
)
def test_selected_cases_agree_with_python_re(pattern: str, text: str, span: tuple[int, int] | None) -> None:
    ours = compile_re2(pattern).find(text, 0, True)
    ref = _python_pattern(pattern).search(text)
    assert ours == _reference_slots(ref)
    assert (None if ours is None else (ours[0], ours[1])) == span


def test_groups_of_the_leftmost_first_match() -> None:
    rx = compile_re2("(a+)(b+)?(?P<tail>c)?")
    m = rx.search("xxaabbc")
    assert m is not None
    assert m.span() == (2, 7)
    assert (m.group(1), m.group(2), m.group(3)) == ("aa", "bb", "c")
    assert replace_all(rx, "[$2$1${tail}]", "xaab aac") == "x[baa] [aac]"


def test_a_too_large_expansion_is_refused_with_gos_message() -> None:
    # Go refuses nested counted repetitions that make more than 1,000 copies of their innermost part, naming the
    # outer operator (checked against Go 1.27).
    for pattern, op in [("((a{1000}){1000}){1000}", "{1000}"), ("(?:a{1000}){11}", "{11}"), ("(a{2}){501}?", "{501}?")]:
        with pytest.raises(TemplateError, match=re.escape(f"invalid repeat count: `{op}`")):
            render("{{ regexMatch .p .s }}", {"p": pattern, "s": "a"})
    assert render("{{ regexMatch .p .s }}", {"p": "(?:[a-z]{10}){100}", "s": "abc"}) == "false"
    # Within Go's copy limit, a program past 10,000 instructions is refused here (Go allows more; documented).
    with pytest.raises(TemplateError, match="expression too large"):
        render("{{ regexMatch .p .s }}", {"p": "(?:abcdefghijk){1000}", "s": "a"})


# ------------------------------------------------------------------------------------------------ hostile patterns

HOSTILE = [
    ("(a+)+$", "a" * 5000 + "b"),
    ("(a|a)*b", "a" * 5000),
    ("(a*)*b", "a" * 5000),
    ("(x+x+)+y", "x" * 5000),
    ("(.*a){20}", "a" * 20 + "b" * 3000),
    ("(?:a?){30}a{30}", "a" * 3000),
    ("^(\\w+\\s?)*$", "word " * 800 + "!"),
    ("(\\d+|\\w+)*z", "1a" * 2000),
]


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("pattern", "text"), HOSTILE)
def test_hostile_patterns_finish(pattern: str, text: str) -> None:
    rx = compile_re2(pattern)
    m = rx.search(text)
    if m is not None:
        a, b = m.span()
        assert 0 <= a <= b <= len(text)
    out = replace_all(rx, "<$1>", text)
    assert isinstance(out, str)


@pytest.mark.timeout(20)
def test_hostile_patterns_answer_correctly() -> None:
    assert compile_re2("(a+)+$").search("a" * 5000 + "b") is None
    assert compile_re2("(a|a)*b").search("a" * 5000) is None
    assert compile_re2("(x+x+)+y").search("x" * 5000) is None
    m = compile_re2("(.*a){20}").search("a" * 20 + "b" * 3000)
    assert m is not None
    assert m.span() == (0, 20)
    assert replace_all(compile_re2("(a|a)*b"), "", "a" * 3000 + "b") == ""


@pytest.mark.timeout(20)
def test_hostile_patterns_through_the_template_api() -> None:
    scope = {"s": "a" * 4000 + "b", "x": "x" * 4000}
    out = render(
        '{{ regexMatch "(a+)+$" .s }} {{ regexMatch "(x+x+)+y" .x }} {{ len (regexReplace "(a|a)*b" "-" .s) }} '
        '{{ regexReplace "(a+)+b$" "[$1]" .s }}',
        scope,
    )
    assert out == "false false 1 [" + "a" * 4000 + "]"


@pytest.mark.timeout(20)
def test_a_hostile_pattern_from_the_data_renders() -> None:
    out = render(
        "{{ regexMatch .p .s }}|{{ regexReplace .p .r .s }}", {"p": "(\\w+\\s?)*$", "s": "ab " * 2000 + "!", "r": "$1"}
    )
    head, _, tail = out.partition("|")
    assert head == "true"
    assert tail == "ab " * 2000 + "!"


def test_errors_are_unchanged() -> None:
    for pattern, message in [
        ("(a", "missing closing )"),
        ("a**", "invalid nested repetition operator"),
        ("(?=a)", "invalid or unsupported Perl syntax"),
        ("a{1001}", "invalid repeat count"),
        ("(?P<é>a)", "invalid named capture: `(?P<é>`"),
    ]:
        with pytest.raises(TemplateError, match=re.escape(message)):
            render("{{ regexMatch .p .s }}", {"p": pattern, "s": "a"})


def test_group_names_follow_go() -> None:
    # Go accepts a name twice (`${x}` is the first group of that name that took part) and names of digits; only
    # ASCII letters, digits and `_` make a name (checked against Go 1.27).
    tpl = "{{ regexReplace .p .r .s }}"
    assert render(tpl, {"p": "(?P<x>a)|(?P<x>b)", "r": "[${x}]", "s": "ab"}) == "[a][b]"
    assert render(tpl, {"p": "(?P<x>a)(?P<x>b)", "r": "[${x}]", "s": "ab"}) == "[a]"
    assert render(tpl, {"p": "(?P<1>a)", "r": "<$1|$2>", "s": "aaa"}) == "<a|><a|><a|>"


# ------------------------------------------------------------------------------------------- longer and shared use


def test_many_automaton_states_still_agree() -> None:
    """A pattern whose thread lists take thousands of shapes: the step cache is dropped and rebuilt on the way."""
    import random

    rnd = random.Random(5)
    pattern = "(?:a|b)*a(?:a|b){12}(c)?"
    ours, ref = compile_re2(pattern), _python_pattern(pattern)
    for _ in range(3):
        text = "".join(rnd.choice("ab" * 20 + "c") for _ in range(6000))
        assert ours.find(text, 0, True) == _reference_slots(ref.search(text))
        assert replace_all(ours, "<$1>", text) == _reference_replace(ref, "<$1>", text)


@pytest.mark.parametrize(
    "pattern",
    ["\\b\\w+\\b", "(?m)^\\s*(\\w+):\\s*(.*)$", "[^a-z0-9]+", "(\\d+)-(\\d+)", "(?i)(?:the|an?)\\s+(\\w+)", "\\B.\\B"],
)
def test_typical_patterns_on_longer_text_agree(pattern: str) -> None:
    import random

    rnd = random.Random(pattern)
    text = "".join(
        rnd.choice(["a", "The", " ", "\n", "key: value", "12-34", ",", "é", "x_y", "  "]) for _ in range(800)
    )
    ours, ref = compile_re2(pattern), _python_pattern(pattern)
    for pos in (0, 1, 7, len(text) // 2):
        assert ours.find(text, pos, True) == _reference_slots(ref.search(text, pos))
        assert (ours.search(text, pos) is None) == (ref.search(text, pos) is None)
    assert replace_all(ours, "[$1|$2]", text) == _reference_replace(ref, "[$1|$2]", text)


def test_one_compiled_pattern_shared_by_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    pattern = "(\\w+)@(\\w+)\\.(?:com|org)"
    texts = [f"{'x' * k} user{k}@host{k}.org tail" * 3 for k in range(40)]
    ref = _python_pattern(pattern)
    expected = [_reference_replace(ref, "$2/$1", t) for t in texts]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda t: replace_all(compile_re2(pattern), "$2/$1", t), texts * 5))
    assert got == expected * 5


def test_deeply_nested_patterns_compile_as_before() -> None:
    for pattern in ["(?:a" * 400 + ")*" * 400, "(" * 400 + "a" + ")" * 400, "(?:^a|" * 400 + "^b" + ")" * 400]:
        rx, ref = compile_re2(pattern), _python_pattern(pattern)
        for text in ["", "a", "aab", "b", "ba"]:
            assert rx.find(text, 0, True) == _reference_slots(ref.search(text))


def test_a_repeated_part_that_matched_empty_is_not_tried_again() -> None:
    """Go's rule, which Python's backtracking `re` does not share: once an iteration has consumed text, the loop does
    not add an empty iteration at the end, so the group keeps the last non-empty one (Python's `re` gives "")."""
    m = compile_re2("(a*)*").search("aaa")
    assert m is not None
    assert m.span() == (0, 3)
    assert m.span(1) == (0, 3)
    assert replace_all(compile_re2("(a*)+"), "<$1>", "aab") == "<aa>b<>"


@pytest.mark.timeout(20)
@pytest.mark.parametrize("pattern", ["a.*c|a", "(a|ab)*c|a", "\\w+x|\\w", "(?:a|b)*z|(a)"])
def test_replacing_stays_linear_when_searches_read_past_their_matches(pattern: str) -> None:
    """Each search here reads to the end of the text before settling for a one-character match; the replacement
    switches to dropping dead threads and gives the same text as the searches one by one."""
    text = "ab" * 1500
    ours, ref = compile_re2(pattern), _python_pattern(pattern)
    assert replace_all(ours, "<$1>", text) == _reference_replace(ref, "<$1>", text)
    long_text = "ab" * 20000
    assert len(replace_all(ours, "-", long_text)) > 0
