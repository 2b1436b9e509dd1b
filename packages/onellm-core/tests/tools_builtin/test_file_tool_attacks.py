"""Paths a model might use to reach outside its roots, tried through every file tool: each is refused, nothing leaks,
nothing outside changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio


@pytest.fixture
def outside(root: Path) -> Path:
    """A sibling of the root with a name that shares its prefix (`work2` beside `work`), holding a secret."""
    place = root.parent / (root.name + "2")
    place.mkdir()
    (place / "secret.txt").write_text("TOP SECRET\n")
    return place


def _links(root: Path, outside: Path) -> None:
    (root / "out_file").symlink_to(outside / "secret.txt")
    (root / "out_dir").symlink_to(outside)
    (root / "dangling").symlink_to(outside / "not-yet.txt")
    (root / "loop_a").symlink_to(root / "loop_b")
    (root / "loop_b").symlink_to(root / "loop_a")
    (root / "sub").mkdir()
    (root / "sub" / "up").symlink_to("../..")


PATHS = [
    "../{o}/secret.txt",
    "{abs}/secret.txt",
    "out_file",
    "out_dir/secret.txt",
    "sub/up/{o}/secret.txt",
    "out_dir/../{o}/secret.txt",
    "loop_a",
    "./sub/../../{o}/secret.txt",
]


def _paths(outside: Path) -> list[str]:
    return [p.format(o=outside.name, abs=outside) for p in PATHS]


def _snapshot(place: Path) -> dict[str, bytes]:
    return {str(p.relative_to(place)): p.read_bytes() for p in sorted(place.rglob("*")) if p.is_file()}


async def test_reads_are_refused(run: Any, root: Path, outside: Path) -> None:
    _links(root, outside)
    for path in _paths(outside):
        result = await run("read_file", {"path": path})
        assert result.is_error, path
        assert "CapabilityDeniedError" in result.text, (path, result.text)
        assert "TOP SECRET" not in result.text
        search = await run("search_files_regex", {"pattern": "SECRET", "path": path})
        assert search.is_error or "SECRET" not in search.text, path


async def test_listing_and_searching_the_root_never_show_outside_content(run: Any, root: Path, outside: Path) -> None:
    _links(root, outside)
    listing = await run("list_files", {"recursive": True})
    assert not listing.is_error
    assert "secret" not in listing.text
    assert str(outside) not in listing.text
    found = await run("search_files_regex", {"pattern": "SECRET"})
    assert not found.is_error
    assert found.text.startswith("0 matching lines")
    for path in ("out_dir", "sub/up", "../" + outside.name):
        refused = await run("list_files", {"path": path})
        assert "CapabilityDeniedError" in refused.text, path


async def test_writes_are_refused_and_change_nothing_outside(run: Any, root: Path, outside: Path) -> None:
    _links(root, outside)
    before = _snapshot(outside)
    for path in [*_paths(outside), "dangling", "out_dir/new.txt"]:
        for name, args in (
            ("write_file", {"path": path, "content": "owned"}),
            ("replace_string", {"path": path, "old_string": "TOP", "new_string": "owned"}),
            ("apply_patch", {"patch": f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-TOP SECRET\n+owned\n"}),
            ("apply_patch", {"patch": f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+owned\n"}),
        ):
            result = await run(name, args)
            assert result.is_error, (name, path)
            assert "TOP SECRET" not in result.text
    assert _snapshot(outside) == before
    assert not (outside / "not-yet.txt").exists()
    assert not (outside / "new.txt").exists()


async def test_protected_names_refuse_writes_but_allow_reads(run: Any, root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    assert not (await run("read_file", {"path": ".git/config"})).is_error
    for path in (".git/config", ".GIT/hooks/pre-commit", ".gitmodules", "x/.hg/hgrc", "CVS/Root", ".git./config"):
        result = await run("write_file", {"path": path, "content": "x"})
        assert "CapabilityDeniedError" in result.text, path
    assert (root / ".git" / "config").read_text() == "[core]\n"
    patch = "--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-[core]\n+[core] hooksPath=/tmp\n"
    assert "CapabilityDeniedError" in (await run("apply_patch", {"patch": patch})).text


async def test_a_patch_cannot_plant_a_git_directory_in_one_step(run: Any, root: Path) -> None:
    patch = "".join(
        f"--- /dev/null\n+++ b/repo/{name}\n@@ -0,0 +1 @@\n+{text}\n"
        for name, text in (
            ("HEAD", "ref: refs/heads/main"),
            ("objects/info/packs", ""),
            ("refs/heads/main", "0" * 40),
            ("config", "[core]\n+\tfsmonitor = touch /tmp/owned"),
        )
    )
    result = await run("apply_patch", {"patch": patch})
    assert "CapabilityDeniedError" in result.text
    assert "git directory" in result.text
    assert not (root / "repo").exists()
    # Two of the three markers are fine: nothing makes it a repository.
    two = "".join(f"--- /dev/null\n+++ b/app/{name}\n@@ -0,0 +1 @@\n+x\n" for name in ("HEAD", "refs/a", "config"))
    assert not (await run("apply_patch", {"patch": two})).is_error
    # The third arriving later is refused by the grant itself.
    third = "--- /dev/null\n+++ b/app/objects/x\n@@ -0,0 +1 @@\n+x\n"
    assert "CapabilityDeniedError" in (await run("apply_patch", {"patch": third})).text
