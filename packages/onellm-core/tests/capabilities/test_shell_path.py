"""An allow-list names programs, and PATH decides which file runs: a PATH directory the file tools can write (an
activated virtual environment inside the work tree, a `bin` under the root) would let a model put its own `ls` before
the real one and have the allow-listed name run it. Such directories are neither searched nor passed to the child."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from onellm import Capabilities, CapabilityDeniedError

pytestmark = pytest.mark.skipif(os.name == "nt", reason="posix PATH and executables")


def _plant(directory: Path, name: str, marker: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    program = directory / name
    program.write_text(f"#!/bin/sh\ntouch {marker}\necho planted\n")
    program.chmod(0o755)
    return program


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    system = tmp_path / "system-bin"
    system.mkdir()
    for name in ("ls", "echo", "printenv", "sh"):
        found = shutil.which(name)
        assert found is not None
        os.symlink(found, system / name)
    # The writable directory comes first, as an activated virtual environment's does.
    monkeypatch.setenv("PATH", os.pathsep.join([str(root / ".venv" / "bin"), str(system), ".", ""]))
    return root


def test_a_program_planted_in_a_writable_path_directory_is_passed_over(work: Path) -> None:
    marker = work.parent / "ran"
    _plant(work / ".venv" / "bin", "ls", marker)
    caps = Capabilities.files(work) + Capabilities.shell_commands("ls")
    prepared = caps.prepare_command("ls", working_directory=work)
    assert prepared.argv[0] == str(work.parent / "system-bin" / "ls")
    result = anyio.run(lambda: caps.run_command("ls", working_directory=work))
    assert "planted" not in result.stdout
    assert not marker.exists()


def test_a_program_only_in_a_writable_directory_is_refused_saying_why(work: Path) -> None:
    _plant(work / ".venv" / "bin", "tool", work.parent / "ran")
    caps = Capabilities.files(work) + Capabilities.shell_commands("tool")
    with pytest.raises(CapabilityDeniedError) as info:
        caps.parse_command("tool")
    assert info.value.rule == "program-path"
    assert "a directory the file tools can write" in str(info.value)
    assert str(work) not in str(info.value)


def test_a_link_on_a_trusted_directory_that_leads_into_the_root_is_passed_over(work: Path) -> None:
    planted = _plant(work / "scripts", "lister", work.parent / "ran")
    os.symlink(planted, work.parent / "system-bin" / "lister")
    caps = Capabilities.files(work) + Capabilities.shell_commands("lister")
    with pytest.raises(CapabilityDeniedError) as info:
        caps.parse_command("lister")
    assert info.value.rule == "program-path"


def test_read_only_roots_and_protected_directories_are_trusted(work: Path) -> None:
    _plant(work / ".venv" / "bin", "tool", work.parent / "ran")
    read_only = Capabilities.read_only_files(work) + Capabilities.shell_commands("tool")
    assert read_only.prepare_command("tool", working_directory=work).argv[0] == str(work / ".venv" / "bin" / "tool")
    protected = (Capabilities.files(work) + Capabilities.shell_commands("tool")).with_protected_paths(work / ".venv")
    assert protected.prepare_command("tool", working_directory=work).argv[0] == str(work / ".venv" / "bin" / "tool")


def test_the_child_path_holds_no_writable_relative_or_empty_directory(work: Path) -> None:
    caps = Capabilities.files(work) + Capabilities.shell_commands("printenv")
    prepared = caps.prepare_command("printenv PATH", working_directory=work)
    assert prepared.environment["PATH"] == str(work.parent / "system-bin")
    result = anyio.run(lambda: caps.run_command("printenv PATH", working_directory=work))
    assert result.stdout == f"{work.parent / 'system-bin'}\n"
    # An open shell is the host's own environment, as granted.
    opened = Capabilities.files(work) + Capabilities.shell()
    assert opened.prepare_command("true", working_directory=work).environment["PATH"] == os.environ["PATH"]


def test_without_a_write_grant_path_is_searched_as_it_is(work: Path) -> None:
    _plant(work / ".venv" / "bin", "tool", work.parent / "ran")
    caps = Capabilities.read_only_files(work.parent) + Capabilities.shell_commands("tool")
    assert caps.prepare_command("tool", working_directory=work.parent).argv[0] == str(work / ".venv" / "bin" / "tool")
