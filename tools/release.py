"""Bump one package's version, move its Unreleased changelog notes under the new version, and print the tag to push.

    uv run python tools/release.py onellm-core minor      # 0.1.0 -> 0.2.0
    uv run python tools/release.py onellm-web 0.1.1       # an explicit version

The release workflow builds and publishes the package when the printed tag (`onellm-core-v0.2.0`) is pushed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def next_version(current: str, bump: str) -> str:
    match = _SEMVER.match(current)
    if match is None:
        raise ValueError(f"current version {current!r} is not MAJOR.MINOR.PATCH")
    major, minor, patch = map(int, match.groups())
    if bump == "major":
        return f"{major + 1}.0.0"
    if bump == "minor":
        return f"{major}.{minor + 1}.0"
    if bump == "patch":
        return f"{major}.{minor}.{patch + 1}"
    if _SEMVER.match(bump) is None:
        raise ValueError(f"{bump!r} is neither major, minor, patch nor a MAJOR.MINOR.PATCH version")
    if tuple(map(int, bump.split("."))) <= (major, minor, patch):
        raise ValueError(f"{bump} is not newer than {current}")
    return bump


def release(package: str, bump: str, *, today: dt.date, root: Path = ROOT) -> str:
    folder = root / "packages" / package
    if not (folder / "pyproject.toml").exists():
        raise ValueError(f"no package named {package!r} under packages/")
    (version_file,) = folder.glob("src/*/_version.py")
    text = version_file.read_text(encoding="utf-8")
    current = re.search(r'__version__ = "([^"]+)"', text)
    if current is None:
        raise ValueError(f"{version_file}: no __version__ line")
    new = next_version(current.group(1), bump)
    changelog = folder / "CHANGELOG.md"
    log = changelog.read_text(encoding="utf-8")
    if "## [Unreleased]" not in log:
        raise ValueError(f"{changelog}: no '## [Unreleased]' section")
    log = log.replace("## [Unreleased]", f"## [Unreleased]\n\n## [{new}] - {today.isoformat()}", 1)
    version_file.write_text(text.replace(current.group(0), f'__version__ = "{new}"'), encoding="utf-8")
    changelog.write_text(log, encoding="utf-8")
    return f"{package}-v{new}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("package", help="distribution name, for example onellm-core")
    parser.add_argument("bump", help="major, minor, patch, or an explicit version")
    args = parser.parse_args(argv)
    try:
        tag = release(args.package, args.bump, today=dt.date.today())
    except ValueError as error:
        print(f"release: {error}", file=sys.stderr)
        return 2
    print(tag)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
