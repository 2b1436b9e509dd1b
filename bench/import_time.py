"""Cold `import onellm` time: the median over fresh interpreter processes, with interpreter start-up subtracted.

    uv run python bench/import_time.py [--runs 15]

Budget: under 150 ms. Peers for comparison, when installed (the `bench` dependency group): openai, anthropic,
google.genai, litellm. Each figure is wall time of `python -c "import X"` minus `python -c "pass"`.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time

MODULES = ["onellm", "httpx", "msgspec", "openai", "anthropic", "google.genai", "litellm"]


# Cold means a fresh interpreter, not a missing bytecode cache: keep one cache for the run, outside the tree, even where
# the environment turns bytecode writing off.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "onellm-import-bench-pycache")
# litellm fetches its model price table from the network at import unless told to use the copy it ships: a download
# is not an import, and the bench reaches nothing but the machine it runs on.
ENV["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"


def wall(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=ENV)
    return time.perf_counter() - started


def median_ms(code: str, runs: int) -> float:
    return statistics.median(wall(code) for _ in range(runs)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    baseline = median_ms("pass", args.runs)
    print(f"interpreter start-up: {baseline:.1f} ms (subtracted below)")
    print(f"{'import':<16} {'median':>10}")
    for module in args.only or MODULES:
        top = module.split(".")[0]
        if importlib.util.find_spec(top) is None:
            print(f"{module:<16} {'not installed':>10}")
            continue
        wall(f"import {module}")  # fills the bytecode cache
        wall_ms = median_ms(f"import {module}", args.runs) - baseline
        print(f"{module:<16} {wall_ms:>8.1f} ms")


if __name__ == "__main__":
    main()
