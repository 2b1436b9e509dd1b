"""Catalog benchmark: build the shipped catalog and resolve one model (cold, in a fresh process, and cached), price one
usage report, and estimate a 1k / 50k / 200k-token history (token estimate and worst-case cost). litellm's
`cost_per_token` and `token_counter` run beside onellm's pricing and estimate when litellm is installed.

    uv run python bench/catalog.py

Targets: cold build and first resolve under 20 ms; cached resolve and one pricing under 10 µs.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import timeit
from collections.abc import Callable

COLD = """
import time
t0 = time.process_time()
import onellm
t1 = time.process_time()
from onellm.catalog import Catalog
catalog = Catalog.default()
catalog.resolve("claude-sonnet")
t2 = time.process_time()
print((t1 - t0) * 1000, (t2 - t1) * 1000)
"""


def per_call(fn: Callable[[], object], *, number: int) -> float:
    """Best of five runs, in microseconds of CPU time per call (CPU time: other processes on a shared machine
    distort it less than wall time)."""
    import time

    runs = timeit.repeat(fn, number=number, repeat=5, timer=time.process_time)
    return min(runs) / number * 1e6


def cold_ms(samples: int = 7) -> tuple[float, float]:
    """A fresh interpreter per sample, with byte-code caching on (as after a wheel install; this workspace sets
    PYTHONDONTWRITEBYTECODE, which would time the compiler instead). The first run fills the cache and is dropped."""
    import os
    import tempfile

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "ONELLM_CATALOG")}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "onellm-bench-pycache")
    base: list[float] = []
    catalog: list[float] = []
    for _ in range(samples + 1):
        out = subprocess.run([sys.executable, "-c", COLD], capture_output=True, text=True, check=True, env=env)
        first, second = out.stdout.split()
        base.append(float(first))
        catalog.append(float(second))
    return statistics.median(base[1:]), statistics.median(catalog[1:])


def history(tokens: int) -> list[object]:
    """A conversation of about `tokens` estimated tokens: turns of ~1,000 tokens of English-like text."""
    from onellm.messages import Message, TextPart

    chunk = ("The quick brown fox jumps over the lazy dog while the build server hums. " * 50)[:3400]
    turns = max(1, tokens // 1000)
    return [Message(user=[TextPart(text=chunk[:1700])], assistant=[TextPart(text=chunk[:1700])]) for _ in range(turns)]


def main() -> None:
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no network fetch of its price table
    from onellm.catalog import Catalog, CostEstimator, TokenEstimator
    from onellm.messages import Usage

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    calibration = per_call(lambda: sum(range(100)), number=100_000)
    print(f"machine: load average {load:.2f}, calibration sum(range(100)) {calibration:.2f} µs")

    base, cold = cold_ms()
    print(f"cold `import onellm` (not the catalog): {base:6.2f} ms CPU")
    print(f"cold catalog import + build + resolve: {cold:6.2f} ms CPU (target < 20 ms)")
    catalog = Catalog.default()
    catalog.resolve("claude-sonnet")
    print(
        f"cached resolve:                      {per_call(lambda: catalog.resolve('claude-sonnet'), number=200_000):8.2f} µs"
    )
    fresh = Catalog.default()
    print(
        f"uncached resolve (alias):            {per_call(lambda: fresh._resolve_in(None, 'claude-sonnet', 'x'), number=50_000):8.2f} µs"
    )
    print(
        f"uncached resolve (pattern):          {per_call(lambda: fresh._resolve_in(None, 'gpt-9-unlisted', 'x'), number=50_000):8.2f} µs"
    )
    model = catalog.resolve("claude-sonnet")
    usage = Usage(input_tokens=640, output_tokens=45)
    model.price(usage)
    print(
        f"price one usage (2 lines):           {per_call(lambda: model.price(usage), number=100_000):8.2f} µs   (target < 10 µs)"
    )
    rich = Usage(
        input_tokens=300_000, output_tokens=1000, cache_read_input_tokens=5000, counters={"reasoningTokens": 400}
    )
    luna = catalog.resolve("gpt-6-luna")
    print(
        f"price with tier, subset, flex (4):   {per_call(lambda: luna.price(rich, service_tier='flex'), number=50_000):8.2f} µs"
    )

    estimator = TokenEstimator(model)
    cost = CostEstimator(model)
    for tokens in (1_000, 50_000, 200_000):
        msgs = history(tokens)
        counted = estimator.messages(msgs)
        number = max(5, 20_000 // max(1, tokens // 1000))
        t_count = per_call(lambda msgs=msgs: estimator.messages(msgs), number=number)
        t_cost = per_call(lambda counted=counted: cost.estimate(counted, max_output_tokens=4096), number=20_000)
        print(
            f"estimate {tokens:>7,}-token history:     {t_count:10.1f} µs  ({counted} tokens), worst-case cost {t_cost:6.2f} µs"
        )

    try:
        import litellm
    except ImportError:
        print("litellm not installed: no peer figures")
        return
    litellm.cost_per_token(model="claude-sonnet-4-6", prompt_tokens=640, completion_tokens=45)
    t = per_call(
        lambda: litellm.cost_per_token(model="claude-sonnet-4-6", prompt_tokens=640, completion_tokens=45), number=5_000
    )
    print(f"peer litellm.cost_per_token:         {t:8.2f} µs")
    text = history(1000)
    messages = [{"role": "user", "content": m.user[0].text} for m in text]  # type: ignore[attr-defined]
    t = per_call(lambda: litellm.token_counter(model="claude-sonnet-4-6", messages=messages), number=200)
    print(f"peer litellm.token_counter 1k:       {t:8.1f} µs")


if __name__ == "__main__":
    main()
