from __future__ import annotations

import datetime as dt
import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


release = _load("release")
check_versions = _load("check_versions")


@pytest.mark.parametrize(
    ("current", "bump", "expected"),
    [
        ("0.1.0", "patch", "0.1.1"),
        ("0.1.3", "minor", "0.2.0"),
        ("0.9.9", "major", "1.0.0"),
        ("0.1.0", "0.3.0", "0.3.0"),
    ],
)
def test_next_version(current: str, bump: str, expected: str) -> None:
    assert release.next_version(current, bump) == expected


@pytest.mark.parametrize("bump", ["0.1.0", "0.0.9", "banana", "1.0"])
def test_next_version_refuses_bad_bumps(bump: str) -> None:
    with pytest.raises(ValueError):
        release.next_version("0.1.0", bump)


def test_release_bumps_one_package_and_its_changelog(tmp_path: Path) -> None:
    for name in ("onellm-web", "onellm-js"):
        shutil.copytree(ROOT / "packages" / name, tmp_path / "packages" / name, ignore=shutil.ignore_patterns("tests"))
    tag = release.release("onellm-web", "minor", today=dt.date(2027, 1, 5), root=tmp_path)
    assert tag == "onellm-web-v0.2.0"
    web = tmp_path / "packages" / "onellm-web"
    assert '__version__ = "0.2.0"' in (web / "src/onellm_web/_version.py").read_text()
    assert check_versions.changelog_version(web) == "0.2.0"
    assert "## [0.2.0] - 2027-01-05" in (web / "CHANGELOG.md").read_text()
    # the other package moves independently
    assert check_versions.package_version(tmp_path / "packages" / "onellm-js") == "0.1.0"


def test_every_package_version_matches_its_changelog() -> None:
    for package in (ROOT / "packages").iterdir():
        assert check_versions.package_version(package) == check_versions.changelog_version(package), package.name


def test_network_guard_refuses_public_addresses() -> None:
    import socket

    with socket.socket() as s, pytest.raises(OSError, match="may not reach the network"):
        s.connect(("203.0.113.5", 443))
