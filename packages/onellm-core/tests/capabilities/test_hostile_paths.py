"""Paths a hostile model or local user would try on the file grant: names longer than the file system allows, paths
that cannot be resolved, and what a refusal says about the host. Every one is a typed refusal naming the path as given,
and no refusal shows an absolute host path the caller did not give: not the real path a link leads to, not the roots,
not the protected directories."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from onellm import Capabilities, CapabilityDeniedError, OnellmError

pytestmark = pytest.mark.skipif(os.name == "nt", reason="posix file names")


@pytest.mark.parametrize(
    "path",
    [
        "x" * 300,  # one name over 255 bytes, first component
        "missing/" + "y" * 300,  # the long name below a directory that does not exist yet
        "sub/" + "é" * 200,  # 400 bytes in UTF-8, 200 characters
        "a/" * 2100 + "z",  # the whole path over PATH_MAX
        "sub/" + "z" * 256 + "/ok.txt",  # a long directory name in the middle
    ],
    ids=["first", "missing-tail", "multibyte", "path-max", "middle"],
)
@pytest.mark.parametrize("write", [False, True], ids=["read", "write"])
def test_an_over_long_name_is_a_typed_refusal_naming_the_path(tree: Path, path: str, write: bool) -> None:
    caps = Capabilities.files(tree).with_working_directory(tree)
    with pytest.raises(CapabilityDeniedError) as info:
        (caps.resolve_write if write else caps.resolve_read)(path)
    assert info.value.rule == "bad-path"
    assert info.value.target == path
    assert "longer than the file system allows" in str(info.value)
    assert str(tree) not in str(info.value)


def test_an_over_long_name_in_the_file_helpers_is_refused_before_anything_is_made(tree: Path) -> None:
    caps = Capabilities.files(tree).with_working_directory(tree)
    before = sorted(p.name for p in tree.iterdir())
    for call in (
        lambda: caps.write_bytes("new/" + "q" * 300, b"x"),
        lambda: caps.make_directories("made/" + "q" * 300),
        lambda: caps.open_write("w" * 300),
        lambda: caps.read_bytes("r" * 300),
    ):
        with pytest.raises(CapabilityDeniedError) as info:
            call()
        assert info.value.rule == "bad-path"
    assert sorted(p.name for p in tree.iterdir()) == before


def test_a_path_that_cannot_be_resolved_is_a_typed_refusal(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory the process may not search (EACCES) cannot be staged as root, so the system's answer is staged."""
    real_lstat = os.lstat

    def lstat(path: str | os.PathLike[str], *args: object, **kwargs: object) -> os.stat_result:
        if os.fspath(path).endswith("/locked"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_lstat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "lstat", lstat)
    caps = Capabilities.files(tree).with_working_directory(tree)
    with pytest.raises(CapabilityDeniedError) as info:
        caps.resolve_read("locked/x.txt")
    assert info.value.rule == "bad-path"
    assert info.value.target == "locked/x.txt"
    assert "permission denied" in str(info.value).lower()
    assert str(tree) not in str(info.value)
    assert isinstance(info.value, OnellmError)


@pytest.mark.parametrize(
    ("path", "write", "rule"),
    [
        ("link_out/secret.txt", False, "outside-roots"),
        ("link_out_file", False, "outside-roots"),
        ("abs_out/secret.txt", False, "outside-roots"),
        ("dangling_out", True, "outside-roots"),
        ("sibling_link/c.txt", False, "outside-roots"),
        ("up_link/outside/secret.txt", False, "outside-roots"),
        ("state_link/instances/i.yaml", False, "protected-state"),
        (".onellm/instances/i.yaml", False, "protected-state"),
        ("ref_link/r.txt", True, "read-only"),
        ("bare_alias/HEAD", True, "git-directory"),
        ("gitlink/config", True, "repo-control"),
        ("almost/refs", True, "git-directory"),
    ],
)
def test_a_refusal_shows_no_host_path_the_caller_did_not_give(tree: Path, path: str, write: bool, rule: str) -> None:
    caps = (
        Capabilities.files(tree)
        + Capabilities.read_only_files(tree.parent / "ref")
        + Capabilities.shell_commands("git")
    ).with_working_directory(tree)
    with pytest.raises(CapabilityDeniedError) as info:
        (caps.resolve_write if write else caps.resolve_read)(path)
    assert info.value.rule == rule, str(info.value)
    assert info.value.target == path
    assert repr(path) in str(info.value)
    assert str(tree.parent) not in str(info.value), str(info.value)


def test_planned_writes_name_the_targets_as_labelled(tmp_path: Path) -> None:
    work = tmp_path.resolve()
    caps = Capabilities.files(work)
    repo = work / "repo"
    planted = [repo / "HEAD", repo / "objects" / "x", repo / "refs" / "heads" / "main"]
    labels = {p: p.relative_to(work).as_posix() for p in planted}
    with pytest.raises(CapabilityDeniedError) as info:
        caps.check_planned_writes(planted, planted, labels=labels)
    assert info.value.rule == "git-directory"
    assert "'repo/HEAD'" in str(info.value)
    assert str(work) not in str(info.value)


def test_file_helper_errors_name_the_path_as_given(tree: Path) -> None:
    os.mkfifo(tree / "fifo")
    caps = Capabilities.files(tree).with_working_directory(tree)
    cases: list[tuple[str, object, type[BaseException]]] = [
        ("fifo", lambda: caps.read_bytes("fifo"), OSError),
        ("sub", lambda: caps.read_bytes("sub"), IsADirectoryError),
        ("link_in", lambda: caps.read_bytes("link_in"), IsADirectoryError),
        ("a.txt", lambda: caps.open_directory("a.txt"), NotADirectoryError),
        ("link_file", lambda: caps.open_directory("link_file"), NotADirectoryError),
        ("nothing", lambda: caps.open_directory("nothing"), FileNotFoundError),
        ("a.txt/x", lambda: caps.write_bytes("a.txt/x", b"x"), NotADirectoryError),
        ("link_file/x", lambda: caps.write_bytes("link_file/x", b"x"), NotADirectoryError),
        ("nothing.txt", lambda: caps.read_bytes("nothing.txt"), FileNotFoundError),
        ("nothing.txt", lambda: caps.remove_file("nothing.txt"), FileNotFoundError),
        ("sub", lambda: caps.open_write("sub"), IsADirectoryError),
        ("fifo", lambda: caps.open_write("fifo"), OSError),
        ("a.txt/d", lambda: caps.make_directories("a.txt/d"), OSError),
    ]
    for given, call, kind in cases:
        with pytest.raises(kind) as info:
            call()  # type: ignore[operator]
        assert not isinstance(info.value, CapabilityDeniedError), (given, info.value)
        assert str(tree) not in str(info.value), (given, str(info.value))
        assert getattr(info.value, "filename", given) == given, (given, str(info.value))


def test_pipes_and_devices_are_refused_before_they_are_opened(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO with a writer would block a read forever and a device can act on open: neither is even opened."""
    os.mkfifo(tree / "fifo")
    opened: list[str] = []
    real_open = os.open

    def spy(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        opened.append(os.fspath(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", spy)
    caps = Capabilities.files(tree).with_working_directory(tree)
    for call in (lambda: caps.read_bytes("fifo"), lambda: caps.open_write("fifo"), lambda: caps.open_read("fifo")):
        with pytest.raises(OSError, match="Not a regular file"):
            call()
    assert "fifo" not in [os.path.basename(p) for p in opened]
    devices = Capabilities.read_only_files("/dev")
    for name in ("zero", "null", "urandom"):
        if os.path.exists(f"/dev/{name}"):
            with pytest.raises(OSError, match="Not a regular file"):
                devices.read_bytes(name, base="/dev")
    assert not any(p.endswith(("zero", "urandom")) for p in opened)


@pytest.mark.parametrize(
    "path",
    [
        ".g\u200cit/config",  # HFS+ leaves zero-width joiners out of the comparison: this is `.git` there
        ".git\ufeff/hooks/pre-commit",
        "CV\u200dS/Root",
        ".GIT\u200e/config",
        ".gitmodules\u202c",
        ".h\u206ag/hgrc",
    ],
)
def test_control_names_with_code_points_hfs_ignores_are_refused(tree: Path, path: str) -> None:
    caps = Capabilities.files(tree).with_working_directory(tree)
    with pytest.raises(CapabilityDeniedError) as info:
        caps.resolve_write(path)
    assert info.value.rule == "repo-control"


@pytest.mark.parametrize(
    "path",
    [
        ".ONELLM/instances/i.yaml",  # the same directory on a case-folding file system (macOS, Windows, FAT, SMB)
        ".OneLLM/instances",
        ".onel\u200clm/instances/i.yaml",
        ".onellm./instances/i.yaml",
        "runs\u0130/x",  # not a fold of `runs`: stays readable
    ],
)
def test_protected_state_is_compared_without_case_on_every_platform(tree: Path, path: str) -> None:
    caps = Capabilities.files(tree).with_working_directory(tree).with_protected_paths(tree / "runs")
    if path.startswith("runs\u0130"):
        assert caps.resolve_read(path) == tree / path
        return
    for check in (caps.resolve_read, caps.resolve_write):
        with pytest.raises(CapabilityDeniedError) as info:
            check(path)
        assert info.value.rule == "protected-state"


def test_a_protected_directory_with_another_normalisation_or_case_is_left_out_of_walks(tree: Path) -> None:
    store = tree / "Caf\u00e9-store"
    store.mkdir()
    (store / "i.yaml").write_text("transcript")
    spelled = tree / "Cafe\u0301-store"  # the same name in NFD: one directory on APFS and HFS+
    spelled.mkdir()
    (spelled / "i.yaml").write_text("transcript")
    shouting = tree / ".ONELLM"
    shouting.mkdir()
    (shouting / "x.yaml").write_text("state")
    caps = Capabilities.files(tree).with_working_directory(tree).with_protected_paths(store)
    with pytest.raises(CapabilityDeniedError):
        caps.resolve_read("Cafe\u0301-store/i.yaml")
    with caps.open_directory(".") as handle:
        listed = {e.name for e in handle.scan() if handle.allows(e.name)}
    assert "a.txt" in listed
    assert not listed & {"Caf\u00e9-store", "Cafe\u0301-store", ".ONELLM", ".onellm"}


def test_grants_built_on_a_link_loop_say_so(tree: Path) -> None:
    for build in (
        lambda: Capabilities.files(tree / "loop1"),
        lambda: Capabilities.read_only_files(tree / "selfloop" / "x"),
        lambda: Capabilities.files(tree).with_working_directory(tree / "loop1"),
        lambda: Capabilities.files(tree).with_protected_paths(tree / "loop2"),
    ):
        with pytest.raises(ValueError, match="symbolic link loop"):
            build()
