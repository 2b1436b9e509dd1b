"""Composing grants: `+` unions, `intersect` is never wider than either side, and the saved summary round-trips."""

from __future__ import annotations

from pathlib import Path

import pytest

from onellm import BadDefinitionError, Capabilities, CapabilityDeniedError
from onellm.capabilities import ShellMode


def test_plain_constructor_grants_nothing() -> None:
    caps = Capabilities()
    assert not caps.has_file_read
    assert not caps.shell_enabled
    assert not caps.network_enabled


def test_union_of_roots_and_kinds(tree: Path) -> None:
    caps = Capabilities.files(tree / "sub") + Capabilities.read_only_files(tree.parent / "ref")
    assert caps.write_roots == (tree / "sub",)
    assert caps.resolve_read(tree.parent / "ref" / "r.txt")
    with pytest.raises(CapabilityDeniedError):
        caps.resolve_write(tree.parent / "ref" / "r.txt")
    assert (caps + caps) == caps


def test_intersect_roots_by_containment(tree: Path) -> None:
    parent = Capabilities.files(tree)
    child = parent.intersect(Capabilities.files(tree / "sub"))
    assert child.write_roots == (tree / "sub",)
    assert parent.intersect(Capabilities.files(tree.parent)).write_roots == (tree,)
    assert parent.intersect(Capabilities.files(tree.parent / "work2")).write_roots == ()
    ro = parent.intersect(Capabilities.read_only_files(tree))
    assert ro.write_roots == ()
    assert ro.read_roots == (tree,)
    assert ro.resolve_read(tree / "a.txt") == tree / "a.txt"


def test_intersect_keeps_both_sides_protections(tree: Path) -> None:
    parent = Capabilities.files(tree).with_protected_paths(tree / "sub" / "deeper")
    child = parent.intersect(Capabilities.files(tree / "sub"))
    with pytest.raises(CapabilityDeniedError) as info:
        child.resolve_read(tree / "sub" / "deeper" / "d.txt")
    assert info.value.rule == "protected-state"
    # the parent root's .onellm stays protected for a child granted the whole tree again
    assert tree / ".onellm" in child.protected_paths


def test_repo_control_writes_need_both_sides(tree: Path) -> None:
    lifted = Capabilities.files(tree).with_repo_control_writes()
    assert lifted.intersect(Capabilities.files(tree)).repo_control_writes is False
    assert lifted.intersect(lifted).repo_control_writes is True


def test_shell_union() -> None:
    allow = Capabilities.shell_commands("ls")
    other = Capabilities.shell_commands("git status")
    assert (allow + other).shell_grant.commands == (("ls",), ("git", "status"))
    assert (allow + Capabilities.shell()).shell_grant.mode is ShellMode.OPEN
    assert (Capabilities() + allow).shell_grant == allow.shell_grant
    with_approval = allow + Capabilities.shell_with_loop_approval()
    assert with_approval.shell_grant.mode is ShellMode.ANY_PROGRAM
    assert with_approval.shell_grant.loop_approval


def test_shell_intersection_is_the_stricter_policy() -> None:
    wide = Capabilities.shell_commands("git", "ls")
    narrow = Capabilities.shell_commands("git status", "cat")
    both = wide.intersect(narrow)
    assert both.shell_grant.mode is ShellMode.ALLOW_LIST
    assert both.shell_grant.commands == (("git", "status"),)
    assert Capabilities.shell().intersect(narrow).shell_grant.commands == narrow.shell_grant.commands
    assert Capabilities.shell().intersect(Capabilities.shell()).shell_grant.mode is ShellMode.OPEN
    assert not Capabilities.shell().intersect(Capabilities.files()).shell_enabled
    assert not Capabilities.shell_commands("ls").intersect(Capabilities.shell_commands("cat")).shell_enabled

    def approver(request: object) -> bool:
        return True

    gated = Capabilities.shell().intersect(Capabilities.shell_with_approval(approver))
    assert gated.shell_grant.mode is ShellMode.ANY_PROGRAM
    assert gated.shell_grant.approvers == (approver,)
    listed = narrow.intersect(Capabilities.shell_with_loop_approval())
    assert listed.shell_grant.mode is ShellMode.ALLOW_LIST
    assert listed.shell_grant.loop_approval


def test_summary_round_trip(tree: Path) -> None:
    caps = (
        Capabilities.files(tree)
        + Capabilities.read_only_files(tree.parent / "ref")
        + Capabilities.shell_commands("git status", "ls -la")
        + Capabilities.network("api.example.com", "*.docs.example.com", "10.0.0.0/8")
    ).with_working_directory(tree)
    data = caps.to_data()
    assert data == {
        "readRoots": [str(tree), str(tree.parent / "ref")],
        "writeRoots": [str(tree)],
        "workingDirectory": str(tree),
        "shell": {"enabled": True, "approval": False, "commands": ["git status", "ls -la"]},
        "network": {"anyPublic": False, "hosts": ["*.docs.example.com", "10.0.0.0/8", "api.example.com"]},
    }
    back = Capabilities.from_data(data)
    assert back.to_data() == data
    assert back.git_ceiling
    assert back.resolve_write(tree / "a.txt") == tree / "a.txt"
    with pytest.raises(CapabilityDeniedError):
        back.resolve_read(tree.parent / "ref" / ".onellm" / "state.yaml")


def test_saved_approval_resumes_with_the_loop_gate() -> None:
    caps = Capabilities.from_data({"shell": {"enabled": True, "approval": True}})
    assert caps.shell_grant.loop_approval
    assert caps.shell_grant.mode is ShellMode.ANY_PROGRAM
    assert Capabilities.from_data({"shell": {"enabled": True, "approval": False}}).shell_grant.mode is ShellMode.OPEN
    assert Capabilities.from_data({"network": {"anyPublic": True, "hosts": []}}).network_grant.any_public


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ([], "capabilities"),
        ({"readRoots": "x"}, "capabilities.readRoots"),
        ({"writeRoots": [1]}, "capabilities.writeRoots"),
        ({"shell": {"enabled": "yes"}}, "capabilities.shell.enabled"),
        ({"shell": {"enabled": True, "commands": ["ls; rm"]}}, "capabilities.shell.commands"),
        ({"network": {"hosts": ["http://x"]}}, "capabilities.network.hosts"),
        ({"network": {"anyPublic": 1}}, "capabilities.network.anyPublic"),
        ({"workingDirectory": 3}, "capabilities.workingDirectory"),
    ],
)
def test_malformed_summary_is_a_positioned_error(data: object, path: str) -> None:
    with pytest.raises(BadDefinitionError) as info:
        Capabilities.from_data(data)  # type: ignore[arg-type]
    assert info.value.path == path


def test_values_are_immutable_and_hashable(tree: Path) -> None:
    caps = Capabilities.files(tree) + Capabilities.network("a.example")
    with pytest.raises(AttributeError):
        caps.read_roots = ()  # type: ignore[misc]
    assert hash(caps) == hash(Capabilities.files(tree) + Capabilities.network("a.example"))


def test_importing_capabilities_stays_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from onellm import Capabilities; Capabilities.files('.') + Capabilities.network('a.example'); "
        "print(sorted(m for m in ('httpx', 'httpcore', 'anyio', 'ruamel.yaml') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_sum_of_grants(tree: Path) -> None:
    parts = [Capabilities.files(tree), Capabilities.network("a.example"), Capabilities.shell_commands("ls")]
    total = sum(parts)
    assert isinstance(total, Capabilities)
    assert total == parts[0] + parts[1] + parts[2]
    assert sum(parts, Capabilities()) == Capabilities() + total
