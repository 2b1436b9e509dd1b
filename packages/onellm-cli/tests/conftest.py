"""The `cli` fixture: the `onellm` command as a real process in a temporary working directory (see `_cli`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._cli import Cli


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    work = tmp_path / "work"
    work.mkdir()
    return Cli(work)
