"""The file tools through `Tool.invoke`: success, refusal without the grant, bad arguments and size limits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onellm.capabilities import Capabilities

pytestmark = pytest.mark.anyio


def ok(result: Any) -> str:
    assert not result.is_error, result.text
    return str(result.text)


def err(result: Any) -> str:
    assert result.is_error, result.text
    return str(result.text)


# ------------------------------------------------------------------------------------------------------- read_file


async def test_read_file_returns_the_text(run: Any, root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\n")
    assert ok(await run("read_file", {"path": "a.txt"})) == "one\ntwo\n"
    assert ok(await run("read_file", {"path": str(root / "a.txt")})) == "one\ntwo\n"


async def test_read_file_line_range(run: Any, root: Path) -> None:
    (root / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    text = ok(await run("read_file", {"path": "a.txt", "start_line": 3, "end_line": 4}))
    assert text == "line 3\nline 4\n\n[a.txt: lines 3-4 of 10]"
    assert "past the end" in err(await run("read_file", {"path": "a.txt", "start_line": 11}))
    assert "before start_line" in err(await run("read_file", {"path": "a.txt", "start_line": 5, "end_line": 2}))
    assert "Argument 'start_line' must be at least 1" in err(await run("read_file", {"path": "a.txt", "start_line": 0}))


async def test_read_file_cuts_long_files_at_a_line(make_runner: Callable[..., Any], root: Path) -> None:
    run = make_runner(read_limit_chars=50)
    (root / "big.txt").write_text("".join(f"line {i:03}\n" for i in range(100)))
    text = ok(await run("read_file", {"path": "big.txt"}))
    assert text.startswith("line 000\nline 001\n")
    assert text.endswith("[big.txt: showing lines 1-5 of 100; read on with start_line=6]")
    again = ok(await run("read_file", {"path": "big.txt", "start_line": 6}))
    assert again.startswith("line 005\n")
    (root / "wide.txt").write_text("x" * 120 + "\nsecond\n")
    wide = ok(await run("read_file", {"path": "wide.txt"}))
    assert wide == "x" * 50 + "\n[wide.txt: line 1 of 2 is cut after 50 characters; read on with start_line=2]"


async def test_read_file_refuses_a_file_above_the_byte_limit(make_runner: Callable[..., Any], root: Path) -> None:
    run = make_runner(max_file_bytes=10)
    (root / "big.txt").write_text("x" * 11)
    assert "above the limit of 10 bytes" in err(await run("read_file", {"path": "big.txt"}))


async def test_read_file_errors(run: Any, root: Path) -> None:
    (root / "bin").write_bytes(b"\x00\x01\x02")
    (root / "latin").write_bytes("café".encode("latin-1"))
    (root / "empty").write_text("")
    (root / "d").mkdir()
    assert "binary file" in err(await run("read_file", {"path": "bin"}))
    assert "not UTF-8" in err(await run("read_file", {"path": "latin"}))
    assert ok(await run("read_file", {"path": "empty"})) == "(empty is empty)"
    assert "is a directory" in err(await run("read_file", {"path": "d"}))
    assert "does not exist" in err(await run("read_file", {"path": "missing.txt"}))
    assert "Argument 'path'" in err(await run("read_file", {}))
    assert "path is empty" in err(await run("read_file", {"path": " "}))


async def test_read_file_refused_outside_the_roots(run: Any, root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    (root / "link").symlink_to(tmp_path / "secret.txt")
    for path in ("../secret.txt", str(tmp_path / "secret.txt"), "link"):
        text = err(await run("read_file", {"path": path}))
        assert "CapabilityDeniedError" in text
        assert "secret" not in text.split("CapabilityDeniedError", 1)[1].replace("secret.txt", "")


async def test_read_file_refused_without_any_grant(run: Any, root: Path) -> None:
    (root / "a.txt").write_text("x")
    assert "CapabilityDeniedError" in err(await run("read_file", {"path": "a.txt"}, Capabilities.none()))


async def test_read_file_refuses_the_runtime_state(run: Any, root: Path) -> None:
    (root / ".onellm").mkdir()
    (root / ".onellm" / "instance.yaml").write_text("transcript")
    assert "CapabilityDeniedError" in err(await run("read_file", {"path": ".onellm/instance.yaml"}))


async def test_read_file_of_a_url_needs_the_network_grant(run: Any) -> None:
    text = err(await run("read_file", {"path": "https://example.com/a.txt"}))
    assert "CapabilityDeniedError" in text
    assert "no network grant" in text


# ------------------------------------------------------------------------------------------------------ list_files


def _tree(root: Path) -> None:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("x")
    (root / "src" / "main.py").write_text("x")
    (root / "README.md").write_text("x")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_text("x")
    (root / "debug.log").write_text("x")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "dep.js").write_text("x")


async def test_list_files_flat_and_recursive(run: Any, root: Path) -> None:
    _tree(root)
    assert ok(await run("list_files", {})) == ".gitignore\nREADME.md\nnode_modules/\nsrc/"
    listing = ok(await run("list_files", {"recursive": True}))
    assert listing.splitlines() == [
        ".gitignore",
        "README.md",
        "node_modules/",
        "node_modules/dep.js",
        "src/",
        "src/main.py",
        "src/pkg/",
        "src/pkg/mod.py",
    ]
    assert ok(await run("list_files", {"path": "src/pkg"})) == "mod.py"


async def test_list_files_patterns(run: Any, root: Path) -> None:
    _tree(root)
    listing = ok(
        await run(
            "list_files",
            {"recursive": True, "inclusionPatterns": ["*.py"], "exclusionPatterns": ["src/pkg"]},
        )
    )
    assert listing == "src/main.py"
    assert ok(await run("list_files", {"inclusionPatterns": ["*.nothing"]})) == "(no entries match)"
    bad = err(await run("list_files", {"inclusionPatterns": ["[oops"]}))
    assert "inclusionPatterns[0]" in bad
    too_many = err(await run("list_files", {"exclusionPatterns": ["x"] * 65}))
    assert "at most 64" in too_many
    assert "Argument 'inclusionPatterns'" in err(await run("list_files", {"inclusionPatterns": "*.py"}))


async def test_list_files_marks_symlinks_and_does_not_follow_them(run: Any, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "hidden.txt").write_text("x")
    (root / "out").symlink_to(outside)
    (root / "a.txt").write_text("x")
    (root / "alias.txt").symlink_to(root / "a.txt")
    listing = ok(await run("list_files", {"recursive": True}))
    assert listing.splitlines() == ["a.txt", "alias.txt (symlink)", "out (symlink)"]
    assert str(outside) not in listing
    assert "hidden" not in listing


async def test_list_files_leaves_the_runtime_state_out(run: Any, root: Path) -> None:
    (root / ".onellm").mkdir()
    (root / ".onellm" / "x").write_text("x")
    (root / "a").write_text("x")
    caps = Capabilities.files(root).with_protected_paths(root / "store")
    (root / "store").mkdir()
    (root / "store" / "i.yaml").write_text("x")
    assert ok(await run("list_files", {"recursive": True}, caps)) == "a"


async def test_list_files_stops_at_the_entry_limit(make_runner: Callable[..., Any], root: Path) -> None:
    run = make_runner(list_limit_entries=3)
    for i in range(5):
        (root / f"f{i}").write_text("x")
    lines = ok(await run("list_files", {})).splitlines()
    assert lines == ["f0", "f1", "f2", "[listing stopped at 3 entries; narrow the path or the patterns]"]


async def test_list_files_refusals_and_errors(run: Any, root: Path, tmp_path: Path) -> None:
    (root / "f").write_text("x")
    assert "CapabilityDeniedError" in err(await run("list_files", {"path": ".."}))
    assert "CapabilityDeniedError" in err(await run("list_files", {}, Capabilities.none()))
    assert "is a file" in err(await run("list_files", {"path": "f"}))
    assert "does not exist" in err(await run("list_files", {"path": "nope"}))


# ---------------------------------------------------------------------------------------------- search_files_regex


async def test_search_finds_lines(run: Any, root: Path) -> None:
    _tree(root)
    (root / "src" / "main.py").write_text("import os\n\ndef main():\n    return os.getcwd()\n")
    (root / "build" / "gen.py").write_text("def main(): pass\n")  # ignored by .gitignore
    text = ok(await run("search_files_regex", {"pattern": r"def \w+\("}))
    assert text.splitlines() == ["1 matching lines in 1 files (5 files searched)", "src/main.py:3: def main():"]
    one = ok(await run("search_files_regex", {"pattern": "OS", "path": "src/main.py", "case_sensitive": False}))
    assert one.splitlines()[1:] == ["src/main.py:1: import os", "src/main.py:4:     return os.getcwd()"]


async def test_search_respects_patterns_and_skips_binary(run: Any, root: Path) -> None:
    (root / "a.py").write_text("needle\n")
    (root / "b.txt").write_text("needle\n")
    (root / "c.bin").write_bytes(b"needle\x00\x01")
    text = ok(await run("search_files_regex", {"pattern": "needle", "inclusionPatterns": ["*.py", "*.bin"]}))
    assert text.splitlines() == ["1 matching lines in 1 files (1 files searched, 1 binary skipped)", "a.py:1: needle"]
    text = ok(await run("search_files_regex", {"pattern": "needle", "exclusionPatterns": ["*.py"]}))
    assert text.splitlines()[1:] == ["b.txt:1: needle"]


@pytest.mark.timeout(60)  # a hang guard: these inputs must never make the code run away
async def test_search_catastrophic_pattern_finishes(run: Any, root: Path) -> None:

    # Python's re needs minutes for one of these lines; each one here is linear.
    (root / "a.txt").write_text(("a" * 20_000 + "!\n" + "a" * 20_000 + "\n") * 10)
    text = ok(await run("search_files_regex", {"pattern": "(a+)+$"}))
    assert text.startswith("10 matching lines")


async def test_search_refuses_unsupported_syntax(run: Any) -> None:
    text = err(await run("search_files_regex", {"pattern": r"(a)\1"}))
    assert "RegexError" in text
    assert "back-references" in text
    assert "column 4" in text


async def test_search_limits(make_runner: Callable[..., Any], root: Path) -> None:
    run = make_runner(search_max_results=3, search_max_file_bytes=100)
    (root / "a_big.txt").write_text("hit\n" * 100)
    (root / "b.txt").write_text("hit\n" * 10)
    text = ok(await run("search_files_regex", {"pattern": "hit", "max_results": 50}))
    lines = text.splitlines()
    assert lines[0] == (
        "3 matching lines in 1 files (1 files searched, 1 larger than 100 bytes skipped); stopped at 3 matches"
    )
    assert len(lines) == 4
    assert "Argument 'max_results' must be at least 1" in err(
        await run("search_files_regex", {"pattern": "hit", "max_results": 0})
    )
    long_line = make_runner()
    (root / "a.txt").write_text("x" * 1000 + "hit\n")
    shown = ok(await long_line("search_files_regex", {"pattern": "hit", "path": "a.txt"})).splitlines()[1]
    assert shown.endswith(" [...]")
    assert len(shown) < 500


async def test_search_refused_outside_and_skips_links_out(run: Any, root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("needle secret\n")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    (root / "inside.txt").write_text("needle\n")
    (root / "alias.txt").symlink_to(root / "inside.txt")
    text = ok(await run("search_files_regex", {"pattern": "needle"}))
    assert "secret" not in text
    assert text.splitlines()[1:] == ["alias.txt:1: needle", "inside.txt:1: needle"]
    assert "CapabilityDeniedError" in err(await run("search_files_regex", {"pattern": "x", "path": str(tmp_path)}))
    assert "CapabilityDeniedError" in err(await run("search_files_regex", {"pattern": "x"}, Capabilities.none()))


# ------------------------------------------------------------------------------------------------------ write_file


async def test_write_file_creates_and_overwrites(run: Any, root: Path) -> None:
    assert ok(await run("write_file", {"path": "new/dir/a.txt", "content": "héllo\n"})) == (
        "Created new/dir/a.txt (7 bytes)."
    )
    assert (root / "new" / "dir" / "a.txt").read_text() == "héllo\n"
    assert ok(await run("write_file", {"path": "new/dir/a.txt", "content": ""})) == "Overwrote new/dir/a.txt (0 bytes)."


async def test_write_file_refusals(run: Any, root: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("keep")
    (root / "link").symlink_to(tmp_path / "outside.txt")
    for path in ("../outside.txt", "link", ".git/config", ".onellm/x", "sub/.git/hooks/pre-commit"):
        assert "CapabilityDeniedError" in err(await run("write_file", {"path": path, "content": "evil"})), path
    assert (tmp_path / "outside.txt").read_text() == "keep"
    assert not (root / ".onellm").exists()
    read_only = Capabilities.read_only_files(root)
    assert "CapabilityDeniedError" in err(await run("write_file", {"path": "a", "content": "x"}, read_only))
    assert not (root / "a").exists()


async def test_write_file_bad_arguments_and_limit(make_runner: Callable[..., Any], root: Path) -> None:
    run = make_runner(max_file_bytes=4)
    assert "above the limit of 4 bytes" in err(await run("write_file", {"path": "a", "content": "12345"}))
    assert "Argument 'content'" in err(await run("write_file", {"path": "a"}))
    assert "must be a string" in err(await run("write_file", {"path": "a", "content": 5}))
    (root / "d").mkdir()
    assert "is a directory" in err(await run("write_file", {"path": "d", "content": "x"}))


# -------------------------------------------------------------------------------------------------- replace_string


async def test_replace_string(run: Any, root: Path) -> None:
    (root / "a.py").write_text("x = 1\ny = 2\n")
    assert ok(await run("replace_string", {"path": "a.py", "old_string": "y = 2", "new_string": "y = 3"})) == (
        "Replaced 1 occurrence in a.py."
    )
    assert (root / "a.py").read_text() == "x = 1\ny = 3\n"


async def test_replace_string_keeps_crlf_and_bom(run: Any, root: Path) -> None:
    (root / "w.txt").write_bytes(b"\xef\xbb\xbfa\r\nb\r\nc\r\n")
    args = {"path": "w.txt", "old_string": "a\nb\n", "new_string": "A\nB\nB2\n"}
    ok(await run("replace_string", args))
    assert (root / "w.txt").read_bytes() == b"\xef\xbb\xbfA\r\nB\r\nB2\r\nc\r\n"


async def test_replace_string_uniqueness(run: Any, root: Path) -> None:
    (root / "a.txt").write_text("x\nfoo\nfoo\n")
    text = err(await run("replace_string", {"path": "a.txt", "old_string": "foo", "new_string": "bar"}))
    assert "occurs 2 times in a.txt (at lines 2, 3)" in text
    assert (root / "a.txt").read_text() == "x\nfoo\nfoo\n"
    args = {"path": "a.txt", "old_string": "foo", "new_string": "bar", "replace_all": True}
    assert ok(await run("replace_string", args)) == "Replaced 2 occurrences in a.txt."
    assert "not found" in err(await run("replace_string", {"path": "a.txt", "old_string": "zz", "new_string": "y"}))
    assert "is empty" in err(await run("replace_string", {"path": "a.txt", "old_string": "", "new_string": "y"}))
    assert "the same" in err(await run("replace_string", {"path": "a.txt", "old_string": "x", "new_string": "x"}))


async def test_replace_string_refusals_and_limits(make_runner: Callable[..., Any], root: Path) -> None:
    run = make_runner(max_file_bytes=20)
    (root / "a.txt").write_text("short\n")
    args = {"path": "a.txt", "old_string": "short", "new_string": "much much longer text here"}
    assert "above the limit" in err(await run("replace_string", args))
    assert (root / "a.txt").read_text() == "short\n"
    read_only = Capabilities.read_only_files(root)
    args = {"path": "a.txt", "old_string": "short", "new_string": "x"}
    assert "CapabilityDeniedError" in err(await run("replace_string", args, read_only))
    assert "does not exist" in err(await run("replace_string", {**args, "path": "nope"}))


# ----------------------------------------------------------------------------------------------------- apply_patch


PATCH = """\
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
--- /dev/null
+++ b/new/b.txt
@@ -0,0 +1 @@
+created
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
"""


async def test_apply_patch_modifies_creates_and_deletes(run: Any, root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    (root / "gone.txt").write_text("bye\n")
    dry = ok(await run("apply_patch", {"patch": PATCH, "dry_run": True}))
    assert dry.splitlines() == [
        "Would apply the patch to 3 files:",
        "M a.txt (1 hunk)",
        "A new/b.txt (created, 1 lines)",
        "D gone.txt (deleted)",
    ]
    assert (root / "a.txt").read_text() == "one\ntwo\nthree\n"
    assert not (root / "new").exists()
    assert (root / "gone.txt").exists()
    done = ok(await run("apply_patch", {"patch": PATCH}))
    assert done.splitlines()[0] == "Applied the patch to 3 files:"
    assert (root / "a.txt").read_text() == "one\nTWO\nthree\n"
    assert (root / "new" / "b.txt").read_text() == "created\n"
    assert not (root / "gone.txt").exists()


async def test_apply_patch_writes_nothing_when_a_hunk_fails(run: Any, root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    (root / "gone.txt").write_text("something else\n")
    text = err(await run("apply_patch", {"patch": PATCH}))
    assert "gone.txt" in text
    assert "nothing was written" in text
    assert (root / "a.txt").read_text() == "one\ntwo\nthree\n"
    assert not (root / "new").exists()


async def test_apply_patch_checks_every_target_first(run: Any, root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    patch = PATCH.split("--- /dev/null")[0] + "--- /dev/null\n+++ b/.git/hooks/post-checkout\n@@ -0,0 +1 @@\n+evil\n"
    text = err(await run("apply_patch", {"patch": patch}))
    assert "CapabilityDeniedError" in text
    assert (root / "a.txt").read_text() == "one\ntwo\nthree\n"
    assert not (root / ".git").exists()
    read_only = Capabilities.read_only_files(root)
    assert "CapabilityDeniedError" in err(await run("apply_patch", {"patch": PATCH}, read_only))
    outside = "--- a/../x.txt\n+++ b/../x.txt\n@@ -1 +1 @@\n-a\n+b\n"
    assert "CapabilityDeniedError" in err(await run("apply_patch", {"patch": outside}))


async def test_apply_patch_bad_input_and_limits(make_runner: Callable[..., Any], root: Path) -> None:
    run = make_runner(max_patch_chars=100)
    assert "no file header" in err(await run("apply_patch", {"patch": "hello"}))
    assert "above the limit of 100" in err(await run("apply_patch", {"patch": PATCH}))
    assert "Argument 'dry_run'" in err(await run("apply_patch", {"patch": "x", "dry_run": "yes"}))
    small = make_runner(max_file_bytes=10)
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    assert "above the limit of 10 bytes" in err(await small("apply_patch", {"patch": PATCH}))


async def test_apply_patch_two_sections_for_one_file(run: Any, root: Path) -> None:
    (root / "a.txt").write_text("a\nb\nc\nd\n")
    patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- a/a.txt\n+++ b/a.txt\n@@ -4 +4 @@\n-d\n+D\n"
    text = ok(await run("apply_patch", {"patch": patch}))
    assert text.splitlines()[1] == "M a.txt (2 hunks)"
    assert (root / "a.txt").read_text() == "A\nb\nc\nD\n"


async def test_apply_patch_keeps_crlf(run: Any, root: Path) -> None:
    (root / "w.txt").write_bytes(b"a\r\nb\r\n")
    ok(await run("apply_patch", {"patch": "--- a/w.txt\n+++ b/w.txt\n@@ -1,2 +1,3 @@\n a\n+new\n b\n"}))
    assert (root / "w.txt").read_bytes() == b"a\r\nnew\r\nb\r\n"


@pytest.mark.timeout(60)  # a hang guard: these inputs must never make the code run away
async def test_search_stops_when_the_pattern_needs_too_much_work(make_runner: Callable[..., Any], root: Path) -> None:
    import random

    rnd = random.Random(5)
    (root / "a.txt").write_text("b" * 10 + "\n" + "".join(rnd.choice("ab") for _ in range(20_000)) + "\n")
    run = make_runner(search_max_regex_steps=500_000)
    text = ok(await run("search_files_regex", {"pattern": "(a|b)*a(a|b){300}$"}))
    first = text.splitlines()[0]
    assert first.startswith("0 matching lines in 0 files (1 files searched); stopped in a.txt at line 2:")
    assert "simplify it" in first


async def test_a_huge_gitignore_is_read_up_to_its_limit(run: Any, root: Path) -> None:
    (root / ".gitignore").write_text("*.log\n" + "# padding\n" * 10_000 + "*.tmp\n")
    (root / "a.log").write_text("x")
    (root / "b.tmp").write_text("x")
    assert ok(await run("list_files", {})).splitlines() == [".gitignore", "b.tmp"]
