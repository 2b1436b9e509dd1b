"""`Capabilities.open_directory`: a directory checked once, its entries listed, checked and opened relative to it.

Walks (`list_files`, `search_files_regex`) rely on it: nothing below the directory is resolved again, so it must refuse
what a full check would refuse. Entries are never opened through a link, so one swapped for a link after it was listed
is refused; protected state is left out. Each case also runs with the fallback a platform without `openat` takes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from onellm import Capabilities, CapabilityDeniedError
from onellm.capabilities import _file_io


@pytest.fixture(params=["openat", "fallback"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "fallback":
        monkeypatch.setattr(_file_io, "_WALK_FD", False)
    elif not _file_io._WALK_FD:
        pytest.skip("this platform cannot open files relative to a directory")
    return str(request.param)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "main.py").write_text("main\n")
    (root / "src" / "pkg" / "mod.py").write_text("mod\n")
    (root / "state").mkdir()
    (root / "state" / "secret.yaml").write_text("secret\n")
    (root / ".onellm").mkdir()
    (root / ".onellm" / "todo.json").write_text("{}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("root:x\n")
    return root.resolve()


def _caps_for(work: Path) -> Capabilities:
    return Capabilities.files(work).with_protected_paths(work / "state")


def test_the_directory_itself_is_checked(work: Path, mode: str) -> None:
    caps = _caps_for(work)
    with caps.open_directory(work / "src") as handle:
        assert handle.path == str(work / "src")
    for refused in (work / "state", work / ".onellm", work.parent / "outside", work / "src" / ".." / ".."):
        with pytest.raises(CapabilityDeniedError):
            caps.open_directory(refused)
    with pytest.raises(NotADirectoryError):
        caps.open_directory(work / "src" / "main.py")
    with pytest.raises(CapabilityDeniedError):
        Capabilities.none().open_directory(work)


def test_entries_are_listed_checked_and_opened_by_name(work: Path, mode: str) -> None:
    caps = _caps_for(work)
    with caps.open_directory(work) as root:
        assert sorted(e.name for e in root.scan()) == [".onellm", "src", "state"]
        assert root.allows("src")
        assert not root.allows("state")
        assert not root.allows(".onellm")
        with pytest.raises(CapabilityDeniedError):
            root.open_directory("state")
        with root.open_directory("src") as src:
            assert src.path == str(work / "src")
            with src.open_file("main.py") as fh:
                assert fh.read() == b"main\n"
            with pytest.raises(IsADirectoryError):
                src.open_file("pkg")
            with pytest.raises(NotADirectoryError):
                src.open_directory("main.py")
            assert src.lstat("main.py").st_size == 5


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../outside"])
def test_only_plain_entry_names_are_taken(work: Path, mode: str, name: str) -> None:
    with _caps_for(work).open_directory(work / "src") as src:
        with pytest.raises(ValueError, match="not the name of a directory entry"):
            src.open_file(name)
        with pytest.raises(ValueError, match="not the name of a directory entry"):
            src.allows(name)


def test_a_link_is_never_followed(work: Path, mode: str) -> None:
    (work / "src" / "inside-link").symlink_to(work / "src" / "main.py")
    (work / "src" / "out-link").symlink_to(work.parent / "outside" / "passwd")
    (work / "src" / "dir-link").symlink_to(work.parent / "outside", target_is_directory=True)
    with _caps_for(work).open_directory(work / "src") as src:
        with pytest.raises(CapabilityDeniedError):
            src.open_file("out-link")
        with pytest.raises(CapabilityDeniedError):
            src.open_directory("dir-link")
        if mode == "openat":
            # Even a link that stays inside the roots: links are for open_read, which resolves and checks the target.
            with pytest.raises(CapabilityDeniedError):
                src.open_file("inside-link")


def test_an_entry_swapped_for_a_link_after_the_listing_is_refused(work: Path, mode: str) -> None:
    outside = work.parent / "outside"
    with _caps_for(work).open_directory(work / "src") as src:
        names = {e.name for e in src.scan()}
        assert {"main.py", "pkg"} <= names
        # The race a walk is exposed to: between listing and opening, entries become links to the outside.
        (work / "src" / "main.py").unlink()
        os.symlink(outside / "passwd", work / "src" / "main.py")
        shutil.move(str(work / "src" / "pkg"), str(work / "src" / "pkg.moved"))
        os.symlink(outside, work / "src" / "pkg", target_is_directory=True)
        with pytest.raises(CapabilityDeniedError):
            src.open_file("main.py")
        with pytest.raises(CapabilityDeniedError):
            src.open_directory("pkg")


def test_a_directory_swapped_for_a_link_before_it_is_opened_is_refused(work: Path, mode: str) -> None:
    caps = _caps_for(work)
    shutil.move(str(work / "src"), str(work / "src.moved"))
    os.symlink(work.parent / "outside", work / "src", target_is_directory=True)
    with pytest.raises(CapabilityDeniedError):
        caps.open_directory(work / "src")
    with caps.open_directory(work) as root, pytest.raises(CapabilityDeniedError):
        root.open_directory("src")


def test_a_protected_path_deeper_down_is_refused_where_it_is(work: Path, mode: str) -> None:
    caps = Capabilities.files(work).with_protected_paths(work / "src" / "pkg")
    with caps.open_directory(work) as root:
        assert root.allows("src")
        with root.open_directory("src") as src:
            assert src.allows("main.py")
            assert not src.allows("pkg")
            with pytest.raises(CapabilityDeniedError):
                src.open_directory("pkg")
