"""The package itself: its version, its public face, and `python -m onellm_cli`."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import onellm_cli


def test_version_matches_the_installed_distribution() -> None:
    assert onellm_cli.__version__ == metadata.version("onellm-cli")


def test_public_names() -> None:
    assert sorted(onellm_cli.__all__) == ["__version__", "app", "invoke", "main"]
    assert {n for n in dir(onellm_cli) if not n.startswith("_")} - {"app", "invoke", "main"} == set()


def test_runs_as_a_module() -> None:
    done = subprocess.run([sys.executable, "-m", "onellm_cli", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout.startswith(f"onellm-cli {onellm_cli.__version__}")


def test_help_imports_neither_the_runtime_nor_yaml() -> None:
    """`onellm --help` stays fast by loading typer and the command tree only (the timing is in bench/cli.py)."""
    code = (
        "import sys\n"
        "from onellm_cli import invoke\n"
        "invoke(['--help'])\n"
        "heavy = [m for m in ('onellm.runtime', 'onellm.catalog', 'ruamel.yaml', 'httpx', 'rich', 'onellm_cli._commands')"
        " if m in sys.modules]\n"
        "print(heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stderr.strip() == "[]", done.stderr
