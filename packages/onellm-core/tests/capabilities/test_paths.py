"""File grants against a real temporary tree with symlinks: every case asserts allowed (with the real path) or refused
(with the rule)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import onellm
from onellm import Capabilities, CapabilityDeniedError

# (grants, operation, path as the model writes it (relative to work/), expected: a path relative to the temporary
# directory when allowed, or "!rule" when refused)
PLAIN = "plain"  # files(work) + read_only_files(ref)
GIT = "git"  # the same plus `git status` on the shell allow-list
LIFTED = "lifted"  # git plus with_repo_control_writes()
CEILING = "ceiling"  # plain plus with_git_ceiling()

CASES: list[tuple[str, str, str, str]] = [
    # plain reads and writes inside the root
    (PLAIN, "read", "a.txt", "work/a.txt"),
    (PLAIN, "write", "a.txt", "work/a.txt"),
    (PLAIN, "read", "./a.txt", "work/a.txt"),
    (PLAIN, "read", "sub/b.txt", "work/sub/b.txt"),
    (PLAIN, "write", "sub/new.txt", "work/sub/new.txt"),
    (PLAIN, "write", "new/dir/file.txt", "work/new/dir/file.txt"),
    (PLAIN, "read", "sub/../a.txt", "work/a.txt"),
    (PLAIN, "read", "sub//b.txt", "work/sub/b.txt"),
    (PLAIN, "read", ".", "work"),
    (PLAIN, "write", "missing/../a2.txt", "work/a2.txt"),
    # `..` leaving the root
    (PLAIN, "read", "../outside/secret.txt", "!outside-roots"),
    (PLAIN, "write", "../outside/secret.txt", "!outside-roots"),
    (PLAIN, "read", "sub/../../outside/secret.txt", "!outside-roots"),
    (PLAIN, "read", "..", "!outside-roots"),
    (PLAIN, "write", "new/../../x.txt", "!outside-roots"),
    # a prefix sibling is not under the root
    (PLAIN, "read", "../work2/c.txt", "!outside-roots"),
    (PLAIN, "write", "../work2/c.txt", "!outside-roots"),
    (PLAIN, "read", "sibling_link/c.txt", "!outside-roots"),
    # symlinks inside the root are followed
    (PLAIN, "read", "link_in/b.txt", "work/sub/b.txt"),
    (PLAIN, "write", "link_in/b.txt", "work/sub/b.txt"),
    (PLAIN, "read", "link_file", "work/a.txt"),
    (PLAIN, "write", "link_file", "work/a.txt"),
    (PLAIN, "write", "dangling_in", "work/new_inside.txt"),
    # `..` applies to the real directory: deep_link/.. is sub, not work
    (PLAIN, "read", "deep_link/..", "work/sub"),
    (PLAIN, "read", "deep_link/../b.txt", "work/sub/b.txt"),
    (PLAIN, "read", "deep_link/../../a.txt", "work/a.txt"),
    (PLAIN, "read", "link_in/../a.txt", "work/a.txt"),
    # symlinks leading out, dangling ones included
    (PLAIN, "read", "link_out/secret.txt", "!outside-roots"),
    (PLAIN, "write", "link_out/secret.txt", "!outside-roots"),
    (PLAIN, "read", "link_out_file", "!outside-roots"),
    (PLAIN, "write", "link_out_file", "!outside-roots"),
    (PLAIN, "read", "abs_out/secret.txt", "!outside-roots"),
    (PLAIN, "write", "abs_out/new.txt", "!outside-roots"),
    (PLAIN, "write", "dangling_out", "!outside-roots"),
    (PLAIN, "read", "dangling_out", "!outside-roots"),
    (PLAIN, "read", "up_link/outside/secret.txt", "!outside-roots"),
    (PLAIN, "write", "up_link/work/a.txt", "work/a.txt"),
    (PLAIN, "read", "link_out/../work/a.txt", "work/a.txt"),
    # loops are refused
    (PLAIN, "read", "loop1", "!symlink-loop"),
    (PLAIN, "write", "loop1/x.txt", "!symlink-loop"),
    (PLAIN, "read", "selfloop", "!symlink-loop"),
    # absolute paths
    (PLAIN, "read", "{tmp}/work/a.txt", "work/a.txt"),
    (PLAIN, "read", "{tmp}/outside/secret.txt", "!outside-roots"),
    (PLAIN, "read", "/etc/passwd", "!outside-roots"),
    (PLAIN, "write", "/tmp", "!outside-roots"),
    # the read-only root
    (PLAIN, "read", "../ref/r.txt", "ref/r.txt"),
    (PLAIN, "write", "../ref/r.txt", "!read-only"),
    (PLAIN, "read", "ref_link/r.txt", "ref/r.txt"),
    (PLAIN, "write", "ref_link/new.txt", "!read-only"),
    # the runtime's own state: neither readable nor writable, also through a link or under the read-only root
    (PLAIN, "read", ".onellm/instances/i.yaml", "!protected-state"),
    (PLAIN, "write", ".onellm/instances/i.yaml", "!protected-state"),
    (PLAIN, "read", ".onellm", "!protected-state"),
    (PLAIN, "read", "state_link/instances/i.yaml", "!protected-state"),
    (PLAIN, "write", "sub/../.onellm/new", "!protected-state"),
    (PLAIN, "read", "../ref/.onellm/state.yaml", "!protected-state"),
    # repository control names: writes refused, reads fine
    (PLAIN, "read", ".git/config", "work/.git/config"),
    (PLAIN, "write", ".git/config", "!repo-control"),
    (PLAIN, "write", ".git/hooks/pre-commit", "!repo-control"),
    (PLAIN, "write", ".GIT/config", "!repo-control"),
    (PLAIN, "write", ".Git./x", "!repo-control"),
    (PLAIN, "write", ".git /x", "!repo-control"),
    (PLAIN, "write", "gitlink/config", "!repo-control"),
    (PLAIN, "write", "sub/.git", "!repo-control"),
    (PLAIN, "write", "x/.hg/hgrc", "!repo-control"),
    (PLAIN, "write", ".svn/entries", "!repo-control"),
    (PLAIN, "write", ".bzr/x", "!repo-control"),
    (PLAIN, "write", ".jj/repo", "!repo-control"),
    (PLAIN, "write", "_darcs/prefs", "!repo-control"),
    (PLAIN, "write", ".fslckout", "!repo-control"),
    (PLAIN, "write", ".sl/config", "!repo-control"),
    (PLAIN, "write", "CVS/Root", "!repo-control"),
    (PLAIN, "write", "cvs/Root", "!repo-control"),
    (PLAIN, "write", ".gitmodules", "!repo-control"),
    (PLAIN, "write", ".gitignore", "work/.gitignore"),
    (PLAIN, "write", ".github/workflows/ci.yml", "work/.github/workflows/ci.yml"),
    # git directories recognised by content
    (PLAIN, "write", "bare.git/config", "!git-directory"),
    (PLAIN, "write", "bare_alias/hooks/post-checkout", "!git-directory"),
    (PLAIN, "write", "bare.git/objects/ab/cdef", "!git-directory"),
    (PLAIN, "read", "bare.git/HEAD", "work/bare.git/HEAD"),
    (PLAIN, "write", "almost/refs/heads/main", "!git-directory"),
    (PLAIN, "write", "almost2/HEAD", "!git-directory"),
    (PLAIN, "write", "almost/config", "work/almost/config"),
    (PLAIN, "write", "almost/notes.txt", "work/almost/notes.txt"),
    # git role files: only while git can run
    (PLAIN, "write", "app/config", "work/app/config"),
    (PLAIN, "write", "app/hooks/useAuth.ts", "work/app/hooks/useAuth.ts"),
    (GIT, "write", "app/config", "!git-role"),
    (GIT, "write", "sub/config.worktree", "!git-role"),
    (GIT, "write", "commondir", "!git-role"),
    (GIT, "write", "gitdir", "!git-role"),
    (GIT, "write", ".gitconfig", "!git-role"),
    (GIT, "write", "CONFIG", "!git-role"),
    (GIT, "write", "app/hooks/useAuth.ts", "!git-role"),
    (GIT, "write", "src/info/exclude", "!git-role"),
    (GIT, "write", "app/configuration.yaml", "work/app/configuration.yaml"),
    (GIT, "read", "app/config", "work/app/config"),
    (CEILING, "write", "app/config", "!git-role"),
    (CEILING, "write", "x/hooks/h", "!git-role"),
    # the host lifted the repository rules
    (LIFTED, "write", ".git/config", "work/.git/config"),
    (LIFTED, "write", "bare.git/config", "work/bare.git/config"),
    (LIFTED, "write", "app/config", "work/app/config"),
    (LIFTED, "write", ".onellm/x", "!protected-state"),
    # malformed paths
    (PLAIN, "read", "", "!bad-path"),
    (PLAIN, "read", "a\x00.txt", "!bad-path"),
]


def _grants(kind: str, work: Path) -> Capabilities:
    base = Capabilities.files(work) + Capabilities.read_only_files(work.parent / "ref")
    base = base.with_working_directory(work)
    if kind == GIT:
        return base + Capabilities.shell_commands("git status")
    if kind == LIFTED:
        return (base + Capabilities.shell_commands("git status")).with_repo_control_writes()
    if kind == CEILING:
        return base.with_git_ceiling()
    return base


def test_the_suite_is_large_enough() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize(("kind", "op", "path", "expected"), CASES)
def test_path_case(shared_tree: Path, kind: str, op: str, path: str, expected: str) -> None:
    tree = shared_tree
    tmp = tree.parent
    caps = _grants(kind, tree)
    path = path.replace("{tmp}", str(tmp))
    resolve = caps.resolve_read if op == "read" else caps.resolve_write
    if expected.startswith("!"):
        with pytest.raises(CapabilityDeniedError) as info:
            resolve(path)
        assert info.value.rule == expected[1:], str(info.value)
        assert isinstance(info.value, onellm.OnellmError)
        assert info.value.target == path
    else:
        assert resolve(path) == Path(os.path.realpath(tmp)) / expected


def test_denial_names_the_path_and_the_rule(tree: Path) -> None:
    caps = Capabilities.files(tree)
    given = tree.parent / "outside" / "secret.txt"
    with pytest.raises(CapabilityDeniedError) as info:
        caps.resolve_read(given)
    assert str(info.value) == f"Path {str(given)!r} is outside the read roots. (rule: outside-roots)"
    # The roots are host paths the caller did not give: a model reading this message learns nothing of the host.
    assert str(tree) not in str(info.value)
    assert info.value.rule == "outside-roots"


def test_relative_paths_start_at_the_working_directory(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree.parent)
    caps = Capabilities.files("work")
    assert caps.resolve_read("work/a.txt") == tree / "a.txt"
    assert caps.resolve_read("a.txt", base=tree) == tree / "a.txt"
    assert caps.with_working_directory(tree / "sub").resolve_read("b.txt") == tree / "sub" / "b.txt"
    assert caps.resolve_read("b.txt", base="work/sub") == tree / "sub" / "b.txt"


def test_a_missing_name_then_dotdot_still_follows_links(tree: Path) -> None:
    caps = Capabilities.files(tree).with_working_directory(tree)
    for rel in ("nothing/../sibling_link/c.txt", "a/b/../../link_out/secret.txt", "x/../up_link/outside"):
        with pytest.raises(CapabilityDeniedError) as info:
            caps.resolve_read(rel)
        assert info.value.rule == "outside-roots", rel
    assert caps.resolve_read("nothing/../link_in/b.txt") == tree / "sub" / "b.txt"


def test_files_without_roots_grants_the_working_directory(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree)
    caps = Capabilities.files()
    assert caps.write_roots == (tree,)
    assert Capabilities.default() == caps
    assert caps.resolve_write("x.txt") == tree / "x.txt"


def test_no_grant_refuses_every_path(tree: Path) -> None:
    with pytest.raises(CapabilityDeniedError) as info:
        Capabilities().resolve_read(tree / "a.txt")
    assert info.value.rule == "no-file-read"
    with pytest.raises(CapabilityDeniedError) as info:
        Capabilities.read_only_files(tree).resolve_write(tree / "a.txt")
    assert info.value.rule == "no-file-write"


def test_a_root_that_is_a_link_is_granted_by_its_real_path(tree: Path) -> None:
    caps = Capabilities.files(tree / "link_in")
    assert caps.write_roots == (tree / "sub",)
    assert caps.resolve_read(tree / "sub" / "b.txt") == tree / "sub" / "b.txt"
    with pytest.raises(CapabilityDeniedError):
        caps.resolve_read(tree / "a.txt")


def test_a_root_inside_a_control_directory_is_protected(tree: Path) -> None:
    caps = Capabilities.files(tree / ".git" / "hooks")
    with pytest.raises(CapabilityDeniedError) as info:
        caps.resolve_write(tree / ".git" / "hooks" / "pre-commit")
    assert info.value.rule == "repo-control"
    caps = Capabilities.files(tree / "bare.git" / "refs")
    with pytest.raises(CapabilityDeniedError) as info:
        caps.resolve_write(tree / "bare.git" / "refs" / "heads" / "main")
    assert info.value.rule == "git-directory"


@pytest.mark.parametrize(
    "order", list(__import__("itertools").permutations(("HEAD", "objects", "refs"))), ids=lambda o: "-".join(o)
)
def test_completing_a_git_directory_is_refused_in_any_order(tree: Path, order: tuple[str, str, str]) -> None:
    caps = Capabilities.files(tree)
    target = tree / "plain"

    def create(name: str) -> None:
        if name == "HEAD":
            caps.write_bytes(target / "HEAD", b"ref: refs/heads/main\n")
        else:
            caps.make_directories(target / name)

    create(order[0])
    create(order[1])
    with pytest.raises(CapabilityDeniedError) as info:
        create(order[2])
    assert info.value.rule == "git-directory"
    assert not (target / order[2]).exists()
    with pytest.raises(CapabilityDeniedError):
        caps.write_bytes(target / order[2] / "x", b"")


def test_protected_paths_added_by_the_host(tree: Path) -> None:
    store = tree / "sub"
    caps = Capabilities.files(tree).with_protected_paths(store)
    for path in (store / "b.txt", tree / "link_in" / "b.txt", store):
        with pytest.raises(CapabilityDeniedError) as info:
            caps.resolve_read(path)
        assert info.value.rule == "protected-state"
    assert caps.resolve_read(tree / "a.txt") == tree / "a.txt"
    assert not caps.is_readable(store / "b.txt")
    assert caps.is_readable(tree / "a.txt")
    assert not caps.is_writable(tree / ".git" / "config")


def test_launchers_and_front_ends_arm_the_git_rule() -> None:
    for entry in ("git", "git status", "env git status", "timeout 60 git log", "nice git diff", "/usr/bin/env git x"):
        assert Capabilities.shell_commands(entry).git_ceiling, entry
    for entry in ("env", "xargs", "sudo ls", "make test", "npm run build", "gh pr list", "find . -name x", "cargo b"):
        assert Capabilities.shell_commands(entry).git_ceiling, entry
    for entry in ("ls", "cat", "echo hi", "python -V"):
        assert not Capabilities.shell_commands(entry).git_ceiling, entry


def test_a_program_linked_to_git_arms_the_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = bin_dir / "git"
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    os.symlink(real, bin_dir / "vcs")
    monkeypatch.setenv("PATH", str(bin_dir))
    assert Capabilities.shell_commands("vcs status").git_ceiling
    assert Capabilities.shell_commands(f"{bin_dir}/vcs").git_ceiling


def test_the_git_mark_survives_union_and_intersection(tree: Path) -> None:
    files = Capabilities.files(tree)
    git = Capabilities.shell_commands("git status")
    parent = files + git
    child = parent.intersect(files)  # asked for files only: the intersection drops the shell
    assert not child.shell_enabled
    with pytest.raises(CapabilityDeniedError) as info:
        child.resolve_write(tree / "app" / "config")
    assert info.value.rule == "git-role"
    assert files.intersect(parent).git_ceiling


def test_windows_style_names_fold_for_control_names(tree: Path) -> None:
    caps = Capabilities.files(tree)
    for name in (".GIT", ".gIt.", ".git. .", "CvS", ".GITMODULES", ".Hg"):
        with pytest.raises(CapabilityDeniedError):
            caps.resolve_write(tree / name / "x")


@pytest.mark.parametrize("seed", range(4))
def test_resolution_agrees_with_the_system_and_never_leaves_the_root(shared_tree: Path, seed: int) -> None:
    """Random walks over the tree's links and `..`: every allowed answer is the system's real path and lies under the
    root; everything else is refused."""
    import random

    names = ["sub", "deeper", "..", ".", "link_in", "link_out", "up_link", "deep_link", "sibling_link", "a.txt", "new"]
    rng = random.Random(seed)
    tree = shared_tree
    caps = Capabilities.files(tree).with_working_directory(tree)
    root = str(tree)
    allowed = refused = 0
    for _ in range(400):
        rel = "/".join(rng.choice(names) for _ in range(rng.randint(1, 6)))
        try:
            got = caps.resolve_read(rel)
        except CapabilityDeniedError:
            refused += 1
            real = os.path.realpath(os.path.join(root, rel))
            assert real != root, rel
            assert not real.startswith(root + os.sep), rel
            continue
        allowed += 1
        assert str(got) == root or str(got).startswith(root + os.sep), rel
        assert str(got) == os.path.realpath(os.path.join(root, rel)), rel
    assert allowed > 20
    assert refused > 20


def test_a_state_directory_that_is_a_link_is_protected_by_both_names(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "elsewhere").mkdir(parents=True)
    (root / "elsewhere" / "i.yaml").write_text("i")
    os.symlink("elsewhere", root / ".onellm")
    caps = Capabilities.files(root)
    for path in (root / ".onellm" / "i.yaml", root / "elsewhere" / "i.yaml"):
        with pytest.raises(CapabilityDeniedError) as info:
            caps.resolve_read(path)
        assert info.value.rule == "protected-state"


def test_a_state_directory_replaced_by_a_link_later_is_still_refused_by_name(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "elsewhere").mkdir(parents=True)
    caps = Capabilities.files(root)
    os.symlink("elsewhere", root / ".onellm")
    with pytest.raises(CapabilityDeniedError) as info:
        caps.resolve_write(root / ".onellm" / "forged.yaml")
    assert info.value.rule == "protected-state"


def test_git_role_directories_count_below_the_root_only(tmp_path: Path) -> None:
    root = tmp_path / "info" / "project"
    root.mkdir(parents=True)
    caps = Capabilities.files(root) + Capabilities.shell_commands("git status")
    assert caps.resolve_write(root / "src" / "main.py") == root / "src" / "main.py"
    for rel in ("hooks/x", "src/info/y", "config", "sub/.gitconfig"):
        with pytest.raises(CapabilityDeniedError) as info:
            caps.resolve_write(root / rel)
        assert info.value.rule == "git-role", rel


def test_a_link_named_config_is_refused_while_git_can_run(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "settings").write_text("x")
    os.symlink("settings", root / "config")
    caps = Capabilities.files(root) + Capabilities.shell_commands("git status")
    with pytest.raises(CapabilityDeniedError) as info:
        caps.resolve_write(root / "config")
    assert info.value.rule == "git-role"
