"""`Capabilities.check_planned_writes`: writes that one by one pass the grant but together would plant a git directory
(HEAD, objects and refs, then a `config` or hook for git to run) are refused as a set."""

from __future__ import annotations

from pathlib import Path

import pytest

from onellm import Capabilities, CapabilityDeniedError


def test_planned_writes_that_together_make_a_git_directory_are_refused(tmp_path: Path) -> None:
    work = tmp_path.resolve()
    caps = Capabilities.files(work)
    repo = work / "repo"
    planted = [repo / "HEAD", repo / "objects" / "info" / "packs", repo / "refs" / "heads" / "main"]
    with pytest.raises(CapabilityDeniedError, match="git directory"):
        caps.check_planned_writes([*planted, repo / "config"], planted)
    caps.check_planned_writes(planted[:2], planted[:2])  # two of the three markers make no repository
    (work / "app" / "objects").mkdir(parents=True)  # one already on disk counts too
    with pytest.raises(CapabilityDeniedError):
        caps.check_planned_writes(
            [work / "app" / "HEAD", work / "app" / "refs" / "x"], [work / "app" / "HEAD", work / "app" / "refs" / "x"]
        )
    caps.with_repo_control_writes().check_planned_writes(planted, planted)
