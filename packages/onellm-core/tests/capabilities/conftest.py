from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The work root of a temporary tree built by `build_tree`."""
    return build_tree(tmp_path)


@pytest.fixture(scope="module")
def shared_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tree for a whole module, for tests that only resolve paths and change nothing."""
    return build_tree(tmp_path_factory.mktemp("shared"))


def build_tree(tmp: Path) -> Path:
    """A temporary tree with real symlinks: roots, a prefix sibling, an outside directory, loops and repositories."""
    work = tmp / "work"
    (work / "sub" / "deeper").mkdir(parents=True)
    (work / "a.txt").write_text("a")
    (work / "sub" / "b.txt").write_text("b")
    (work / "sub" / "deeper" / "d.txt").write_text("d")
    (tmp / "work2").mkdir()
    (tmp / "work2" / "c.txt").write_text("c")
    (tmp / "outside").mkdir()
    (tmp / "outside" / "secret.txt").write_text("secret")
    (tmp / "ref" / ".onellm").mkdir(parents=True)
    (tmp / "ref" / "r.txt").write_text("r")
    (tmp / "ref" / ".onellm" / "state.yaml").write_text("s")
    os.symlink("sub", work / "link_in")
    os.symlink("a.txt", work / "link_file")
    os.symlink("../outside", work / "link_out")
    os.symlink("../outside/secret.txt", work / "link_out_file")
    os.symlink(str(tmp / "outside"), work / "abs_out")
    os.symlink("../outside/nothing.txt", work / "dangling_out")
    os.symlink("new_inside.txt", work / "dangling_in")
    os.symlink("loop2", work / "loop1")
    os.symlink("loop1", work / "loop2")
    os.symlink("selfloop", work / "selfloop")
    os.symlink("sub/deeper", work / "deep_link")
    os.symlink("..", work / "up_link")
    os.symlink("../work2", work / "sibling_link")
    os.symlink("../ref", work / "ref_link")
    os.symlink(".onellm", work / "state_link")
    os.symlink(".git", work / "gitlink")
    os.symlink("bare.git", work / "bare_alias")
    (work / ".onellm" / "instances").mkdir(parents=True)
    (work / ".onellm" / "instances" / "i.yaml").write_text("i")
    (work / ".git" / "hooks").mkdir(parents=True)
    (work / ".git" / "config").write_text("[core]")
    (work / "bare.git" / "objects").mkdir(parents=True)
    (work / "bare.git" / "refs").mkdir()
    (work / "bare.git" / "HEAD").write_text("ref: refs/heads/main\n")
    (work / "almost" / "objects").mkdir(parents=True)
    (work / "almost" / "HEAD").write_text("x")
    (work / "almost2" / "refs").mkdir(parents=True)
    (work / "almost2" / "objects").mkdir()
    (work / "app" / "hooks").mkdir(parents=True)
    (work / "app" / "config").write_text("app")
    return work
