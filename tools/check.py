"""Run every quality gate in order: lint, format, types, versions, tests. Exit non-zero on the first failure.

uv run python tools/check.py            # everything, as CI runs it
uv run python tools/check.py -- -k sse  # extra arguments go to pytest
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(title: str, command: list[str]) -> int:
    print(f"== {title}: {' '.join(command)}", flush=True)
    started = time.perf_counter()
    code = subprocess.run(command, cwd=ROOT).returncode
    print(
        f"== {title}: {'ok' if code == 0 else f'FAILED (exit {code})'} in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return code


def main(argv: list[str]) -> int:
    pytest_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    python = sys.executable
    gates = [
        ("lint", [python, "-m", "ruff", "check", "."]),
        ("format", [python, "-m", "ruff", "format", "--check", "."]),
        ("types", [python, "-m", "mypy"]),
        ("versions", [python, "tools/check_versions.py"]),
        ("tests", [python, "-m", "pytest", "-p", "no:cacheprovider", *pytest_args]),
    ]
    for title, command in gates:
        code = run(title, command)
        if code == 5 and title == "tests":
            print("== tests: pytest collected no tests; that is a failure here", flush=True)
            return 1
        if code != 0:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
