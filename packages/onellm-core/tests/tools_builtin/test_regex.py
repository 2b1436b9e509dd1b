"""Unit tests of the linear-time regex engine behind `search_files_regex` (its guarantees are not visible otherwise)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onellm.tools.builtin._regex import Regex, RegexBudgetError, RegexError


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
        ("^a{,2}$", "aa", True),
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
        (r"\u00e9", "café", True),
        (r"(?:ab)+$", "ababab", True),
        (r"(?P<word>foo)bar", "foobar", True),
        ("(?i)HeLLo", "say hello", True),
        ("hello", "HELLO", False),
        (r"^$", "", True),
        (r"a*", "", True),
        (r"\Aab\Z", "ab", True),
        ("(a|ab)(c|bcd)(d*)", "abcd", True),
        (r"[\]]", "]", True),
        ("[]a]", "]", True),
        (r"a??b", "ab", True),
    ],
)
def test_matches(pattern: str, line: str, expected: bool) -> None:
    assert Regex(pattern).search(line) is expected
    assert (re.search(pattern, line) is not None) is expected


def test_ignore_case_option() -> None:
    assert Regex("ÉCOLE", ignore_case=True).search("une école")
    assert Regex("[a-z]+", ignore_case=True).search("ABC")
    assert not Regex("[^a-z]", ignore_case=True).search("ABC")


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        (r"(a)\1", "back-references"),
        ("(?P=x)", "back-references"),
        ("a(?=b)", "look-around"),
        ("a(?!b)", "look-around"),
        ("(?<=a)b", "look-around"),
        ("(?>a)", "atomic"),
        ("a*+", "possessive"),
        ("(?s)a", "leading (?i)"),
        ("(a", "missing ')'"),
        ("a)", "unbalanced"),
        ("[a", "unterminated"),
        ("*a", "nothing to repeat"),
        ("a{3,1}", "reversed"),
        ("a{1001}", "above 1000"),
        ("(a{1000}){1000}", "instructions"),
        (r"\q", "unknown escape"),
        (r"\x4", "hexadecimal"),
        ("[z-a]", "bad character range"),
        ("", "empty"),
        ("a" * 2001, "longer than"),
    ],
)
def test_refused_patterns_name_the_problem(pattern: str, fragment: str) -> None:
    with pytest.raises(RegexError, match=re.escape(fragment)):
        Regex(pattern)


def test_error_names_the_column() -> None:
    with pytest.raises(RegexError) as info:
        Regex("abc(?=x)")
    assert info.value.column == 4
    assert "column 4" in str(info.value)


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
