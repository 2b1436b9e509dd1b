"""The six distributions build as wheels and sdists, install into a fresh environment and import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .test_dependency_rule import IMPORT_NAMES

ROOT = Path(__file__).resolve().parents[1]


def _uv() -> str:
    found = shutil.which("uv")
    if found is None:
        pytest.fail("uv is not on PATH; install it with 'pip install uv'")
    return found


@pytest.mark.slow
def test_built_wheels_install_and_import(tmp_path: Path) -> None:
    uv = _uv()
    dist = tmp_path / "dist"
    subprocess.run([uv, "build", "--all-packages", "--out-dir", str(dist), "--quiet"], cwd=ROOT, check=True)
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    names = {w.name.split("-")[0].replace("_", "-") for w in wheels}
    assert names == set(IMPORT_NAMES), names
    assert len(sdists) == len(IMPORT_NAMES)

    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, env=env)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    subprocess.run(
        [uv, "pip", "install", "--quiet", "--python", str(python), *map(str, wheels)],
        check=True,
        env=env,
        cwd=tmp_path,
    )
    imports = "; ".join(f"import {name}" for name in IMPORT_NAMES.values())
    check = f"{imports}; import onellm, sys; print(onellm.__file__)"
    out = subprocess.run([str(python), "-c", check], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert str(venv) in out.stdout, "imported the working tree instead of the installed wheel"
    assert (Path(out.stdout.strip()).parent / "py.typed").exists()
    cli = venv / ("Scripts/onellm.exe" if os.name == "nt" else "bin/onellm")
    version = subprocess.run([str(cli), "version"], capture_output=True, text=True, check=True)
    assert "onellm-core" in version.stdout
