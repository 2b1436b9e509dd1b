"""The grant summary written to the instance file (`Capabilities.to_data`), pinned as text.

An instance file keeps the summary of the grants its agent started with, and OneLLM for .NET reads the same file, so the
summary's keys, their order and every value's spelling are a file format: each case below is compared as the JSON text
it serialises to, not only as a mapping.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onellm import Capabilities


def _approver(request: object) -> bool:
    return True


def _text(caps: Capabilities, tree: Path) -> str:
    return json.dumps(caps.to_data()).replace(str(tree.parent), "<tmp>")


CASES: list[tuple[str, str]] = [
    (
        "nothing",
        '{"readRoots": [], "writeRoots": [], "workingDirectory": null, "shell": {"enabled": false, "approval": false}, '
        '"network": {"anyPublic": false, "hosts": []}}',
    ),
    (
        "everything",
        '{"readRoots": ["<tmp>/work", "<tmp>/ref"], "writeRoots": ["<tmp>/work"], "workingDirectory": "<tmp>/work", '
        '"shell": {"enabled": true, "approval": false, "commands": ["git status", "ls -la", "echo \'a b\'"]}, '
        '"network": {"anyPublic": false, "hosts": ["*.docs.example.com", "10.0.0.0/8", "[fd00::1]:8080", '
        '"api.example.com", "api.example.com:8443", "localhost:3000"]}}',
    ),
    (
        "open shell",
        '{"readRoots": [], "writeRoots": [], "workingDirectory": null, "shell": {"enabled": true, "approval": false}, '
        '"network": {"anyPublic": false, "hosts": []}}',
    ),
    (
        "approver",
        '{"readRoots": [], "writeRoots": [], "workingDirectory": null, "shell": {"enabled": true, "approval": true}, '
        '"network": {"anyPublic": false, "hosts": []}}',
    ),
    (
        "loop approval over a list",
        '{"readRoots": [], "writeRoots": [], "workingDirectory": null, "shell": {"enabled": true, "approval": true, '
        '"commands": ["ls"]}, "network": {"anyPublic": false, "hosts": []}}',
    ),
    (
        "public and local",
        '{"readRoots": [], "writeRoots": [], "workingDirectory": null, "shell": {"enabled": false, "approval": false}, '
        '"network": {"anyPublic": true, "hosts": ["10.1.2.3", "localhost"]}}',
    ),
    (
        "intersection",
        '{"readRoots": ["<tmp>/work/sub"], "writeRoots": [], "workingDirectory": null, "shell": {"enabled": true, '
        '"approval": true, "commands": ["git", "ls"]}, "network": {"anyPublic": false, "hosts": ["api.example.com"]}}',
    ),
    (
        "read-only and written roots",
        '{"readRoots": ["<tmp>/ref", "<tmp>/work"], "writeRoots": ["<tmp>/work"], "workingDirectory": null, '
        '"shell": {"enabled": false, "approval": false}, "network": {"anyPublic": false, "hosts": []}}',
    ),
]


def _build(name: str, tree: Path) -> Capabilities:
    ref = tree.parent / "ref"
    if name == "nothing":
        return Capabilities()
    if name == "everything":
        return (
            Capabilities.files(tree)
            + Capabilities.read_only_files(ref)
            + Capabilities.shell_commands("git status", "ls -la", "echo 'a b'")
            + Capabilities.network(
                "api.example.com",
                "*.docs.example.com",
                "10.0.0.0/8",
                "api.example.com:8443",
                "localhost:3000",
                "[fd00::1]:8080",
            )
        ).with_working_directory(tree)
    if name == "open shell":
        return Capabilities.shell()
    if name == "approver":
        return Capabilities.shell_with_approval(_approver)
    if name == "loop approval over a list":
        return Capabilities.shell_commands("ls").intersect(Capabilities.shell_with_loop_approval())
    if name == "public and local":
        return Capabilities.any_public_hosts() + Capabilities.network("localhost", "10.1.2.3")
    if name == "intersection":
        parent = (
            Capabilities.files(tree)
            + Capabilities.shell_commands("git", "ls")
            + Capabilities.network("api.example.com", "*.example.org")
        )
        child = (
            Capabilities.read_only_files(tree / "sub")
            + Capabilities.shell_commands("git status")
            + Capabilities.shell_with_approval(_approver)
            + Capabilities.network("api.example.com")
        )
        return parent.intersect(child)
    if name == "read-only and written roots":
        return Capabilities.read_only_files(ref) + Capabilities.files(tree)
    raise AssertionError(name)


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[name for name, _ in CASES])
def test_summary_text_is_pinned(tree: Path, name: str, expected: str) -> None:
    caps = _build(name, tree)
    assert _text(caps, tree) == expected
    # What is read back writes the same text again.
    assert _text(Capabilities.from_data(caps.to_data()), tree) == expected
