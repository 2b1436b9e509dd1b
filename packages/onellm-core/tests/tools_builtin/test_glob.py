"""Unit tests of the glob matcher and `.gitignore` rules (internal: the file tools rely on their exact semantics)."""

from __future__ import annotations

import fnmatch
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onellm.tools.builtin._glob import Glob, GlobError, IgnoreRules, PathFilter, parse_gitignore


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "dir/a.py", False),
        ("*.py", ".py", True),
        ("a?c", "abc", True),
        ("a?c", "a/c", False),
        ("[abc].txt", "b.txt", True),
        ("[!abc].txt", "b.txt", False),
        ("[^abc].txt", "d.txt", True),
        ("[a-c]x", "bx", True),
        ("[a-c]x", "dx", False),
        ("[]]", "]", True),
        ("[!/]", "/", False),
        ("**/x", "x", True),
        ("**/x", "a/b/x", True),
        ("**/x", "a/bx", False),
        ("a/**", "a/b/c", True),
        ("a/**", "b/a/c", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/xb", False),
        ("a**b", "axxb", True),
        ("a**b", "ax/xb", False),
        ("\\*", "*", True),
        ("\\*", "a", False),
        ("src/*.c", "src/x.c", True),
        ("src/*.c", "src/sub/x.c", False),
        ("", "", True),
        ("", "a", False),
    ],
)
def test_glob_cases(pattern: str, path: str, expected: bool) -> None:
    assert Glob(pattern).matches(path) is expected


@pytest.mark.parametrize("pattern", ["[abc", "abc\\", "[z-a]", "x" * 5000])
def test_bad_globs_are_refused(pattern: str) -> None:
    with pytest.raises(GlobError):
        Glob(pattern)


@pytest.mark.timeout(60)  # a hang guard: these inputs must never make the code run away
def test_many_stars_against_a_long_name_is_fast() -> None:
    pattern = "*a" * 200 + "*b"
    name = "a" * 4000
    assert Glob(pattern).matches(name) is False
    assert Glob("**/" + "*a" * 200 + "*b").matches("x/" + name) is False


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab*?", min_size=0, max_size=8),
    st.text(alphabet="ab", min_size=0, max_size=10),
)
def test_agrees_with_fnmatch_without_slashes(pattern: str, name: str) -> None:
    # fnmatchcase has the same meaning for `*` and `?` when no `/` is involved.
    assert Glob(pattern).matches(name) is fnmatch.fnmatchcase(name, pattern)


def test_gitignore_parsing_and_precedence() -> None:
    rules = parse_gitignore("# comment\n\n*.log\n!keep.log\nbuild/\n/top.txt\ndocs/*.md\n\\#hash\ntrail\\ \n")
    ig = IgnoreRules().add("", rules)
    assert ig.ignored("a.log", is_dir=False)
    assert ig.ignored("deep/x/a.log", is_dir=False)
    assert not ig.ignored("keep.log", is_dir=False)
    assert ig.ignored("build", is_dir=True)
    assert not ig.ignored("build", is_dir=False)
    assert ig.ignored("sub/build", is_dir=True)
    assert ig.ignored("top.txt", is_dir=False)
    assert not ig.ignored("sub/top.txt", is_dir=False)
    assert ig.ignored("docs/a.md", is_dir=False)
    assert not ig.ignored("docs/sub/a.md", is_dir=False)
    assert not ig.ignored("sub/docs/a.md", is_dir=False)
    assert ig.ignored("#hash", is_dir=False)
    assert ig.ignored("trail ", is_dir=False)
    assert not ig.ignored("comment", is_dir=False)


def test_deeper_gitignore_overrides_and_is_relative() -> None:
    ig = IgnoreRules().add("", parse_gitignore("*.tmp\n"))
    ig = ig.add("pkg", parse_gitignore("!*.tmp\n/only-here\n"))
    assert ig.ignored("x.tmp", is_dir=False)
    assert not ig.ignored("pkg/x.tmp", is_dir=False)
    assert ig.ignored("pkg/only-here", is_dir=False)
    assert not ig.ignored("only-here", is_dir=False)
    assert not ig.ignored("pkg/sub/only-here", is_dir=False)


def test_gitignore_skips_lines_it_cannot_compile() -> None:
    rules = parse_gitignore("[oops\nok\n")
    assert [r.line for r in rules] == [2]


def test_path_filter() -> None:
    f = PathFilter(include=["*.py", "docs/**/*.md"], exclude=["node_modules", "/build"])
    assert f.included("src/a.py")
    assert f.included("docs/x/y.md")
    assert not f.included("docs.md")
    assert f.excluded("node_modules")
    assert f.excluded("web/node_modules")
    assert f.excluded("build")
    assert not f.excluded("src/build")
    assert PathFilter().included("anything")
    with pytest.raises(GlobError, match=r"inclusionPatterns\[1\]"):
        PathFilter(include=["*.py", "[x"])
    with pytest.raises(GlobError, match=r"exclusionPatterns\[0\] is empty"):
        PathFilter(exclude=[""])


def _reference(pattern: str) -> re.Pattern[str]:
    """The same glob as a Python regex, for short inputs only (it can backtrack)."""
    out = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            whole = (i == 0 or pattern[i - 1] == "/") and (j == n or pattern[j] == "/")
            if j - i >= 2 and whole:
                if j == n:
                    out.append(".*")
                    i = j
                else:
                    out.append("(?:.*/)?")
                    i = j + 1
                continue
            out.append("[^/]*")
            i = j
        elif ch == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(ch))
            i += 1
    return re.compile("".join(out), re.DOTALL)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "/", "*", "**", "?", "**/"]), max_size=6).map("".join),
    st.text(alphabet="ab/", max_size=8),
)
def test_agrees_with_a_regex_translation(pattern: str, path: str) -> None:
    assert Glob(pattern).matches(path) is (_reference(pattern).fullmatch(path) is not None)


@pytest.mark.timeout(60)  # a hang guard: these inputs must never make the code run away
def test_hostile_globs_stay_fast_over_many_names() -> None:
    glob = Glob("*a" * 500 + "*b")
    names = ["a" * 300 + str(i) for i in range(200)]
    assert not any(glob.matches(n) for n in names)


def test_gitignore_keeps_at_most_max_rules() -> None:
    text = "".join(f"f{i}\n" for i in range(50))
    assert len(parse_gitignore(text, max_rules=10)) == 10
    assert len(parse_gitignore(text)) == 50
