"""Unit tests of the unified-diff parser and applier behind `apply_patch`, over text in memory."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onellm.tools.builtin._patch import PatchError, apply_file_patch, parse_patch


def apply(original: str | None, patch: str) -> str | None:
    (fp,) = parse_patch(patch)
    return apply_file_patch(original, fp)


BASE = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"


def test_simple_hunk() -> None:
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,3 @@\n two\n-three\n+THREE\n four\n"
    assert apply(BASE, patch) == BASE.replace("three", "THREE")


def test_prefixes_and_timestamps_and_git_headers() -> None:
    patch = (
        "diff --git a/src/x.py b/src/x.py\nindex 111..222 100644\n"
        "--- a/src/x.py\t2024-01-01 10:00:00\n+++ b/src/x.py\t2024-01-02 10:00:00\n@@ -1 +1 @@\n-one\n+uno\n"
    )
    (fp,) = parse_patch(patch)
    assert fp.path == "src/x.py"
    assert apply_file_patch(BASE, fp) == BASE.replace("one", "uno")


def test_prefix_kept_when_only_one_side_has_it() -> None:
    (fp,) = parse_patch("--- x/y\n+++ x/y\n@@ -1 +1 @@\n-a\n+b\n")
    assert (fp.old_path, fp.new_path) == ("x/y", "x/y")
    # Only the old side has `a/`: the names stay as written, and then they differ (a rename).
    with pytest.raises(PatchError, match="renames are not supported"):
        parse_patch("--- a/x\n+++ x\n@@ -1 +1 @@\n-a\n+b\n")


def test_line_numbers_are_hints_nearest_match_wins() -> None:
    text = "x\nsame\nx\nsame\nx\nsame\nx\n"
    patch = "--- a/f\n+++ b/f\n@@ -5,1 +5,1 @@\n-same\n+CHANGED\n"
    # "same" is at lines 2, 4 and 6; the hint says 5, lines 4 and 6 are equally near, the earlier one wins.
    assert apply(text, patch) == "x\nsame\nx\nCHANGED\nx\nsame\nx\n"
    far = "--- a/f\n+++ b/f\n@@ -90,1 +90,1 @@\n-same\n+CHANGED\n"
    assert apply(text, far) == "x\nsame\nx\nsame\nx\nCHANGED\nx\n"


def test_context_must_match_exactly() -> None:
    patch = "--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@\n two \n-three\n+3\n"
    with pytest.raises(PatchError, match=r"hunk 1 of 'f' does not match.*patch line 3|patch line 3: hunk 1"):
        apply(BASE, patch)


def test_hunks_apply_in_order_after_each_other() -> None:
    patch = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-one\n+1\n two\n@@ -6,2 +6,2 @@\n six\n-seven\n+7\n"
    assert apply(BASE, patch) == "1\ntwo\nthree\nfour\nfive\nsix\n7\n"
    backwards = "--- a/f\n+++ b/f\n@@ -6,1 +6,1 @@\n-six\n+6\n@@ -1,1 +1,1 @@\n-one\n+1\n"
    with pytest.raises(PatchError, match="hunk 2"):
        apply(BASE, backwards)


def test_crlf_file_keeps_crlf() -> None:
    text = "a\r\nb\r\nc\r\n"
    patch = "--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n+B2\n c\n"
    assert apply(text, patch) == "a\r\nB\r\nB2\r\nc\r\n"


def test_patch_text_with_crlf_lines_applies_to_lf_file() -> None:
    patch = "--- a/f\r\n+++ b/f\r\n@@ -1 +1 @@\r\n-one\r\n+uno\r\n"
    assert apply(BASE, patch) == BASE.replace("one", "uno")


def test_mixed_endings_untouched_lines_keep_theirs() -> None:
    text = "a\r\nb\nc\n"
    patch = "--- a/f\n+++ b/f\n@@ -2 +2,2 @@\n b\n+new\n"
    assert apply(text, patch) == "a\r\nb\nnew\nc\n"


def test_no_newline_at_end_of_file() -> None:
    text = "a\nb"
    patch = (
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    )
    assert apply(text, patch) == "a\nc"
    add_newline = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    assert apply(text, add_newline) == "a\nb\n"
    append = "--- a/f\n+++ b/f\n@@ -2 +2,2 @@\n b\n+c\n"
    assert apply(text, append) == "a\nb\nc\n"


def test_create_and_delete() -> None:
    create = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
    (fp,) = parse_patch(create)
    assert fp.old_path is None
    assert fp.path == "new.txt"
    assert apply_file_patch(None, fp) == "hello\nworld\n"
    with pytest.raises(PatchError, match="already exists"):
        apply_file_patch("x", fp)
    delete = "--- a/old.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-hello\n-world\n"
    assert apply("hello\nworld\n", delete) is None
    with pytest.raises(PatchError, match="leaves 1 lines"):
        apply("hello\nworld\nmore\n", delete)
    with pytest.raises(PatchError, match="does not exist"):
        apply(None, delete)


def test_pure_insertion_uses_the_stated_line() -> None:
    patch = "--- a/f\n+++ b/f\n@@ -2,0 +3 @@\n+inserted\n"
    assert apply(BASE, patch) == "one\ntwo\ninserted\nthree\nfour\nfive\nsix\nseven\n"
    beyond = "--- a/f\n+++ b/f\n@@ -99,0 +100 @@\n+x\n"
    with pytest.raises(PatchError, match="has 7 lines"):
        apply(BASE, beyond)


def test_empty_line_inside_a_hunk_is_context() -> None:
    text = "a\n\nb\n"
    patch = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n"
    assert apply(text, patch) == "a\n\nc\n"


def test_several_files() -> None:
    patch = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-1\n+2\n\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-3\n+4\n"
    fps = parse_patch(patch)
    assert [fp.path for fp in fps] == ["x", "y"]
    assert [len(fp.hunks[0].lines) for fp in fps] == [2, 2]


def test_removed_line_that_looks_like_a_header() -> None:
    patch = "--- a/f\n+++ b/f\n@@ -1,2 +1,1 @@\n--- not a header\n keep\n"
    assert apply("-- not a header\nkeep\n", patch) == "keep\n"


@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ("", "no file header"),
        ("just words\n", "no file header"),
        ("@@ -1 +1 @@\n-a\n+b\n", "hunk without"),
        ("--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n", "renames are not supported"),
        ("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n", "both file names"),
        ("--- a/x\n+++ b/x\n@@ -1 +1\n-a\n", "malformed hunk header"),
        ("--- a/x\n+++ b/x\n", "has no hunks"),
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n\\ No newline at end of file\n", "before any line"),
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\nzzz\n", "empty hunk"),
    ],
)
def test_malformed_patches(patch: str, fragment: str) -> None:
    with pytest.raises(PatchError, match=fragment):
        parse_patch(patch)


_LINES = st.lists(st.sampled_from(["a", "b", "c", "", "  x"]), max_size=12)


@settings(max_examples=300, deadline=None)
@given(_LINES, _LINES, st.sampled_from([0, 1, 3]), st.sampled_from(["\n", "\r\n"]))
def test_difflib_patches_apply_exactly(old: list[str], new: list[str], context: int, ending: str) -> None:
    # Whatever difflib writes for old -> new (any context size), applying it to old gives new, in old's line endings.
    diff = "".join(
        difflib.unified_diff([line + "\n" for line in old], [line + "\n" for line in new], "a/f", "b/f", n=context)
    )
    if not diff:
        return
    (fp,) = parse_patch(diff)
    result = apply_file_patch("".join(line + ending for line in old), fp)
    kept = ending if old else "\n"  # an empty file has no line ending to keep; new lines get LF
    assert result == "".join(line + kept for line in new)


def test_form_feed_and_lone_cr_stay_inside_their_line() -> None:
    text = "a\x0cb\nc\rd\ne\n"
    patch = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\x0cb\n c\rd\n-e\n+E\n"
    assert apply(text, patch) == "a\x0cb\nc\rd\nE\n"
