"""Unit tests of `search_files_regex`'s matcher: the one RE2 engine of `onellm._go`, run line by line within a work budget
(its guarantees are not visible through the tool otherwise)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onellm._go.regexp import LineSearch as Regex
from onellm._go.regexp import RegexBudgetError, RegexError


@pytest.mark.parametrize(
    ("pattern", "line", "expected"),
    [
        ("abc", "xxabcxx", True),
        ("abc", "ab", False),
        ("^abc", "abcd", True),
        ("^abc", "xabc", False),
        ("abc$", "xabc", True),
        ("abc$", "abcx", False),
        ("a.c", "a-c", True),
        ("a|b", "zzb", True),
        ("colou?r", "color", True),
        ("colou?r", "colour", True),
        ("ab*c", "ac", True),
        ("ab+c", "ac", False),
        ("a{2,3}", "xaax", True),
        ("^a{2,3}$", "aaaa", False),
        ("^a{2,}$", "aaaa", True),
        ("^a{0,2}$", "aa", True),
        ("^a{3}$", "aaa", True),
        ("x{", "x{", True),
        ("[a-c]+d", "zzbbd", True),
        ("[^a-c]", "abc", False),
        (r"\d+", "no 42 here", True),
        (r"\D", "123", False),
        (r"\w+\s\w+", "hello world", True),
        (r"\bcat\b", "a cat sat", True),
        (r"\bcat\b", "concatenate", False),
        (r"\Bcat\B", "concatenate", True),
        (r"\.", "a.b", True),
        (r"\.", "ab", False),
        (r"[\d.]+", "v1.2", True),
        (r"\x41", "A", True),
        (r"\x{e9}", "café", True),
        (r"(?:ab)+$", "ababab", True),
        (r"(?P<word>foo)bar", "foobar", True),
        ("(?i)HeLLo", "say hello", True),
        ("hello", "HELLO", False),
        (r"^$", "", True),
        (r"a*", "", True),
        (r"\Aab\z", "ab", True),
        ("(a|ab)(c|bcd)(d*)", "abcd", True),
        (r"[\]]", "]", True),
        ("[]a]", "]", True),
        (r"a??b", "ab", True),
    ],
)
def test_matches(pattern: str, line: str, expected: bool) -> None:
    assert Regex(pattern).search(line) is expected
    python = pattern.replace("\\x{e9}", "\\xe9").replace("\\z", "\\Z")
    assert (re.search(python, line) is not None) is expected


@pytest.mark.parametrize(
    ("pattern", "line", "expected"),
    [
        # RE2 syntax where it differs from Python's: `{,2}` is literal text, classes are ASCII, flags go anywhere.
        ("^a{,2}$", "a{,2}", True),
        ("^a{,2}$", "aa", False),
        (r"\d", "٣", False),
        (r"\w", "é", False),
        (r"\pL", "é", True),
        (r"\p{Greek}+", "λόγος", True),
        ("[[:alpha:]]+", "abc", True),
        ("a(?i)b", "aB", True),
        ("a(?i)b", "AB", False),
        ("(?i:A)b", "ab", True),
        ("(?s)a.b", "a\nb", True),
        ("a.b", "a\nb", False),
        (r"\Qa.b\E", "axb", False),
        (r"\Qa.b\E", "a.b", True),
        ("(?U)a+", "a", True),
    ],
)
def test_re2_syntax(pattern: str, line: str, expected: bool) -> None:
    assert Regex(pattern).search(line) is expected


def test_ignore_case_option() -> None:
    assert Regex("ÉCOLE", ignore_case=True).search("une école")
    assert Regex("[a-z]+", ignore_case=True).search("ABC")
    assert not Regex("[^a-z]", ignore_case=True).search("ABC")


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        (r"(a)\1", "back-references are not supported by the linear-time engine (invalid escape sequence: `\\1`)"),
        ("(?P=x)", "back-references"),
        ("a(?=b)", "look-around is not supported by the linear-time engine (invalid or unsupported Perl syntax"),
        ("a(?!b)", "look-around"),
        ("(?<=a)b", "look-around"),
        ("(?<!a)b", "look-around"),
        ("(?>a)", "atomic"),
        ("a*+", "possessive quantifiers are not supported by the linear-time engine (invalid nested repetition"),
        ("(?x)a", "invalid or unsupported Perl syntax: `(?x`"),
        ("(a", "missing closing ): `(a`"),
        ("a)", "unexpected ): `a)`"),
        ("[a", "missing closing ]: `[a`"),
        ("*a", "missing argument to repetition operator: `*`"),
        ("a{3,1}", "invalid repeat count: `{3,1}`"),
        ("a{1001}", "invalid repeat count: `{1001}`"),
        ("(a{1000}){1000}", "invalid repeat count: `{1000}`"),
        ("(?:abcdefghijk){1000}", "expression too large"),
        (r"\q", "invalid escape sequence: `\\q`"),
        (r"\Z", "invalid escape sequence: `\\Z`"),
        (r"\x4", "invalid escape sequence"),
        ("[z-a]", "invalid character class range: `z-a`"),
        ("[a-\\d]", "invalid escape sequence: `\\d`"),
        ("(?P<é>a)", "invalid named capture: `(?P<é>`"),
        ("", "empty"),
        ("a" * 2001, "longer than"),
    ],
)
def test_refused_patterns_name_the_problem(pattern: str, fragment: str) -> None:
    with pytest.raises(RegexError, match=re.escape(fragment)):
        Regex(pattern)


@pytest.mark.parametrize(
    ("pattern", "column"),
    [("abc(?=x)", 4), ("ab(c", 3), ("a**", 2), ("x[b-a]", 3), ("ab\\", 3), (r"ab\1", 3), ("a)", 2), ("(?i)a{1001}", 6)],
)
def test_error_names_the_column(pattern: str, column: int) -> None:
    with pytest.raises(RegexError) as info:
        Regex(pattern)
    assert info.value.column == column
    assert f"(at column {column})" in str(info.value)


@pytest.mark.parametrize(
    "pattern",
    [r"(a+)+$", r"(a|aa)+$", r"(a*)*b", r"^(\w+\s?)*$", r"(.*a){20}", r"(x+x+)+y"],
)
@pytest.mark.timeout(60)  # a hang guard: these inputs must never make the code run away
def test_catastrophic_patterns_finish_quickly(pattern: str) -> None:
    line = "a" * 50_000 + "!"
    Regex(pattern).search(line)
    Regex(pattern).search("x" * 20_000)


def test_cache_is_bounded_and_results_stay_right() -> None:
    # (a|b)*a(a|b){12} needs 2**13 DFA states: the cache is cleared on the way and the answer is still correct.
    rx = Regex("(a|b)*a(a|b){12}$")
    import random

    rnd = random.Random(7)
    for _ in range(40):
        line = "".join(rnd.choice("ab") for _ in range(300))
        assert rx.search(line) is (re.search("(a|b)*a(a|b){12}$", line) is not None)


_ATOMS = st.sampled_from(["a", "b", ".", "[ab]", "[^a]", r"\b", "^", "$", r"\w", r"\W", "(?:a|b)", "(?:ab|a)"])


@st.composite
def _patterns(draw: st.DrawFn) -> str:
    parts = draw(st.lists(_ATOMS, min_size=1, max_size=5))
    out = []
    for p in parts:
        q = draw(st.sampled_from(["", "", "*", "+", "?", "{1,2}", "*?"]))
        if q and p in (r"\b", "^", "$"):
            q = ""
        out.append(p + q)
    if draw(st.booleans()):
        split = draw(st.integers(0, len(out)))
        return "".join(out[:split]) + "|" + "".join(out[split:])
    return "".join(out)


@settings(max_examples=400, deadline=None)
@given(_patterns(), st.text(alphabet="ab -", max_size=12))
def test_agrees_with_re_on_the_common_subset(pattern: str, line: str) -> None:
    assert Regex(pattern).search(line) is (re.search(pattern, line) is not None)


@pytest.mark.timeout(60)  # a hang guard: these inputs must never make the code run away
def test_work_budget_stops_a_state_explosion() -> None:
    import random

    rnd = random.Random(3)
    line = "".join(rnd.choice("ab") for _ in range(5000))
    rx = Regex("(a|b)*a(a|b){200}$", budget=200_000)
    with pytest.raises(RegexBudgetError, match="more than 200000 automaton steps"):
        rx.search(line)
    assert Regex("(a|b)*a(a|b){3}$", budget=200_000).search(line) is (re.search("(a|b)*a(a|b){3}$", line) is not None)


_ICASE_ATOMS = st.sampled_from(["a", "B", ".", "[aB]", "[^a]", "[a-c]", r"\w", r"\d", "(?:a|Bb)", r"\b", "7"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_ICASE_ATOMS, st.sampled_from(["", "*", "+", "?"])), min_size=1, max_size=4),
    st.text(alphabet="aAbBcC7 -", max_size=10),
)
def test_ignore_case_agrees_with_re(parts: list[tuple[str, str]], line: str) -> None:
    pattern = "".join(atom + ("" if atom == r"\b" else q) for atom, q in parts)
    assert Regex(pattern, ignore_case=True).search(line) is (re.search(pattern, line, re.IGNORECASE) is not None)
    assert Regex("(?i)" + pattern).search(line) is (re.search(pattern, line, re.IGNORECASE) is not None)
