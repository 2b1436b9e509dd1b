"""Each package's version lives in its `_version.py`; the top released entry of its CHANGELOG must match it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_VERSION = re.compile(r'^__version__ = "([^"]+)"$', re.MULTILINE)
_ENTRY = re.compile(r"^## \[(\d[^\]]*)\]", re.MULTILINE)


def package_version(package: Path) -> str:
    (version_file,) = package.glob("src/*/_version.py")
    match = _VERSION.search(version_file.read_text(encoding="utf-8"))
    if match is None:
        raise SystemExit(f"{version_file}: no __version__ line")
    return match.group(1)


def changelog_version(package: Path) -> str | None:
    match = _ENTRY.search((package / "CHANGELOG.md").read_text(encoding="utf-8"))
    return match.group(1) if match else None


def main() -> int:
    failures = 0
    for package in sorted((ROOT / "packages").iterdir()):
        if not (package / "pyproject.toml").exists():
            continue
        version, logged = package_version(package), changelog_version(package)
        if version != logged:
            print(f"{package.name}: _version.py says {version}, CHANGELOG.md's top entry says {logged}")
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
