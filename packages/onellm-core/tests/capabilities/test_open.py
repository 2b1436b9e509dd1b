"""The double check: resolve, open, resolve again and compare. A link swapped in between is detected before anything is
read, and a write through a swapped link leaves the outside file untouched.

The swap is staged by wrapping the resolver so that the tree changes right after the first resolution, which is the
window an attacker races for.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from onellm import Capabilities, CapabilityDeniedError
from onellm.capabilities import _file_io, _files


def _swap_after_first_resolution(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> list[str]:
    real = _files.resolve_real
    calls: list[str] = []

    def resolve(path: str | os.PathLike[str], base: str) -> str:
        result = real(path, base)
        calls.append(result)
        if len(calls) == 1:
            swap()
        return result

    monkeypatch.setattr(_files, "resolve_real", resolve)
    return calls


def _file_to_link(victim: Path, target: Path) -> Callable[[], None]:
    def swap() -> None:
        victim.unlink()
        os.symlink(target, victim)

    return swap


def _dir_to_link(victim: Path, target: Path) -> Callable[[], None]:
    def swap() -> None:
        shutil.move(str(victim), str(victim) + ".moved")
        os.symlink(target, victim)

    return swap


def test_open_read_reads_a_granted_file(tree: Path) -> None:
    caps = Capabilities.files(tree)
    with caps.open_read(tree / "a.txt") as handle:
        assert handle.read() == b"a"
    assert caps.read_bytes(tree / "link_in" / "b.txt") == b"b"
    assert caps.read_bytes(tree / "sub" / "b.txt", max_bytes=0) == b""


def test_open_read_refuses_outside_before_opening(tree: Path) -> None:
    caps = Capabilities.files(tree)
    with pytest.raises(CapabilityDeniedError) as info:
        caps.open_read(tree / "link_out_file")
    assert info.value.rule == "outside-roots"


def test_a_file_swapped_for_a_link_is_not_read(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    caps = Capabilities.files(tree)
    secret = tree.parent / "outside" / "secret.txt"
    _swap_after_first_resolution(monkeypatch, _file_to_link(tree / "a.txt", secret))
    with pytest.raises(CapabilityDeniedError) as info:
        caps.open_read(tree / "a.txt")
    assert info.value.rule == "swapped"


def test_a_directory_swapped_for_a_link_is_not_read(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    caps = Capabilities.files(tree)
    outside = tree.parent / "outside"
    (outside / "b.txt").write_text("outside b")
    _swap_after_first_resolution(monkeypatch, _dir_to_link(tree / "sub", outside))
    with pytest.raises(CapabilityDeniedError) as info:
        caps.read_bytes(tree / "sub" / "b.txt")
    assert info.value.rule in ("swapped", "outside-roots")


def test_a_write_through_a_swapped_link_does_not_truncate_the_outside_file(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    caps = Capabilities.files(tree)
    secret = tree.parent / "outside" / "secret.txt"
    _swap_after_first_resolution(monkeypatch, _file_to_link(tree / "a.txt", secret))
    with pytest.raises(CapabilityDeniedError):
        caps.open_write(tree / "a.txt")
    assert secret.read_text() == "secret"


def test_a_write_in_a_swapped_directory_touches_nothing_outside(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    caps = Capabilities.files(tree)
    outside = tree.parent / "outside"
    (outside / "b.txt").write_text("keep")
    _swap_after_first_resolution(monkeypatch, _dir_to_link(tree / "sub", outside))
    with pytest.raises(CapabilityDeniedError):
        caps.write_bytes(tree / "sub" / "b.txt", b"overwritten", make_parents=False)
    assert (outside / "b.txt").read_text() == "keep"
    with pytest.raises(CapabilityDeniedError):
        caps.write_bytes(tree / "sub" / "created.txt", b"x", make_parents=False)
    if sys.platform.startswith("linux"):
        # The directory descriptor is compared with its real path, so not even an empty file is created outside.
        assert not (outside / "created.txt").exists()


def test_a_dangling_link_swapped_in_for_a_new_file_is_not_followed(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    caps = Capabilities.files(tree)
    target = tree.parent / "outside" / "planted.txt"

    def swap() -> None:
        os.symlink(target, tree / "new.txt")

    _swap_after_first_resolution(monkeypatch, swap)
    with pytest.raises(CapabilityDeniedError):
        caps.write_bytes(tree / "new.txt", b"x", make_parents=False)
    assert not target.exists()


def test_open_write_truncates_only_after_the_check(tree: Path) -> None:
    caps = Capabilities.files(tree)
    with caps.open_write(tree / "a.txt") as handle:
        handle.write(b"new")
    assert (tree / "a.txt").read_bytes() == b"new"
    with caps.open_write(tree / "a.txt", append=True) as handle:
        handle.write(b"+more")
    assert (tree / "a.txt").read_bytes() == b"new+more"
    with pytest.raises(FileExistsError):
        caps.open_write(tree / "a.txt", exclusive=True)


def test_write_bytes_creates_directories_each_checked(tree: Path) -> None:
    caps = Capabilities.files(tree)
    written = caps.write_bytes(tree / "n1" / "n2" / "f.txt", b"data")
    assert written == tree / "n1" / "n2" / "f.txt"
    assert written.read_bytes() == b"data"
    with pytest.raises(CapabilityDeniedError) as info:
        caps.write_bytes(tree / "n3" / ".git" / "config", b"x")
    assert info.value.rule == "repo-control"
    assert not (tree / "n3").exists()


def test_open_read_refuses_directories_and_fifos_without_blocking(tree: Path) -> None:
    caps = Capabilities.files(tree)
    with pytest.raises(IsADirectoryError):
        caps.open_read(tree / "sub")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tree / "pipe")
        with pytest.raises(OSError, match="regular"):
            caps.open_read(tree / "pipe")
        with pytest.raises(OSError):
            caps.open_write(tree / "pipe")


def test_remove_file_removes_a_link_not_its_target(tree: Path) -> None:
    caps = Capabilities.files(tree)
    caps.remove_file(tree / "link_file")
    assert not os.path.lexists(tree / "link_file")
    assert (tree / "a.txt").exists()
    caps.remove_file(tree / "link_out_file")
    assert not os.path.lexists(tree / "link_out_file")
    assert (tree.parent / "outside" / "secret.txt").exists()
    with pytest.raises(CapabilityDeniedError):
        caps.remove_file(tree / "link_out" / "secret.txt")
    with pytest.raises(CapabilityDeniedError):
        caps.remove_file(tree / ".git" / "config")
    with pytest.raises(CapabilityDeniedError):
        caps.remove_file(tree / "sub" / "..")
    assert (tree.parent / "outside" / "secret.txt").exists()


def test_open_helpers_refuse_protected_state(tree: Path) -> None:
    caps = Capabilities.files(tree)
    with pytest.raises(CapabilityDeniedError):
        caps.read_bytes(tree / ".onellm" / "instances" / "i.yaml")
    with pytest.raises(CapabilityDeniedError):
        caps.write_bytes(tree / ".onellm" / "instances" / "i.yaml", b"forged")
    assert (tree / ".onellm" / "instances" / "i.yaml").read_text() == "i"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the directory handle is checked through /proc")
def test_a_directory_swapped_and_swapped_back_around_the_open_is_detected(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond the double check: the opened directory's own path is compared, so a swap undone before the second
    resolution is still caught on Linux."""
    caps = Capabilities.files(tree)
    outside = tree.parent / "outside"
    (outside / "b.txt").write_text("outside b")
    sub = tree / "sub"
    moved = tree / "sub.moved"
    real = _files.resolve_real
    calls: list[str] = []

    def resolve(path: str | os.PathLike[str], base: str) -> str:
        result = real(path, base)
        calls.append(result)
        if len(calls) == 1:
            shutil.move(str(sub), str(moved))
            os.symlink(outside, sub)
        return result

    monkeypatch.setattr(_files, "resolve_real", resolve)
    real_open = _file_io.os.open

    def open_then_restore(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        if os.path.islink(sub):
            os.unlink(sub)
            shutil.move(str(moved), str(sub))
        return fd

    monkeypatch.setattr(_file_io.os, "open", open_then_restore)
    with pytest.raises(CapabilityDeniedError) as info:
        caps.read_bytes(sub / "b.txt")
    assert info.value.rule == "swapped"
