"""How fast the `onellm` command starts: `--help`, `catalog`, a model's catalog values, and a one-call flow on the
scripted provider, beside `llm --help` (simonw/llm, the `bench` dependency group) and a bare interpreter.

    uv run python bench/cli.py [--runs 15]

Budget: `onellm --help` and `onellm catalog` under 300 ms of wall time, interpreter start-up included. Each figure is
the median wall time of fresh processes (a bytecode cache is kept for the run, outside the tree).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE" and not k.endswith("_API_KEY")}
ENV["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "onellm-cli-bench-pycache")


def wall(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def median_ms(command: list[str], cwd: Path, env: dict[str, str], runs: int) -> float:
    wall(command, cwd, env)  # fills the bytecode cache
    return statistics.median(wall(command, cwd, env) for _ in range(runs)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    onellm = str(BIN / "onellm")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "hello.flow").write_text(
            'model: claude-sonnet\ninitialPrompts:\n  - user:\n      - text: "Say hello to {{ .inputs.name }}."\n',
            encoding="utf-8",
        )
        script = work / "script.json"
        script.write_text(json.dumps({"providers": {"anthropic": [{"text": "Hello.", "usage": [12, 3]}]}}))
        flow_env = {**ENV, "ONELLM_CLI_SCRIPT": str(script)}
        rows: list[tuple[str, list[str], dict[str, str]]] = [
            ("python -c pass", [sys.executable, "-c", "pass"], ENV),
            ("onellm --help", [onellm, "--help"], ENV),
            ("onellm catalog", [onellm, "catalog"], ENV),
            ("onellm catalog claude-sonnet", [onellm, "catalog", "claude-sonnet"], ENV),
            ("onellm run hello.flow (scripted)", [onellm, "run", "hello.flow", "--input", "name=Ada"], flow_env),
        ]
        llm = shutil.which("llm", path=str(BIN))
        if llm is not None:
            rows.append(("llm --help", [llm, "--help"], {**ENV, "LLM_USER_PATH": str(work / "llm")}))
        print(f"{'command':<36} {'median':>10}")
        for label, command, env in rows:
            print(f"{label:<36} {median_ms(command, work, env, args.runs):>7.0f} ms", flush=True)
        if llm is None:
            print(f"{'llm --help':<36} {'not installed':>10} (uv sync --all-packages --group bench)")


if __name__ == "__main__":
    main()
