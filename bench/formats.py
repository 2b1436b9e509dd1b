"""Instance file speed: load, append-one-turn save and first save of a generated 200,000-token instance, with the
ruamel.yaml round-trip loader (and its C safe loader) on the same file for comparison.

    uv run python bench/formats.py [--tokens 200000] [--repeat 30] [--keep DIR]

Budget (`DESIGN.md`): load under 20 ms, per-turn save under 10 ms. Loading is timed twice: again and again on one
file (the reader's scalar cache then holds every number of it) and with that cache emptied before each load, which is
the figure to hold against the budget. The instance is an agent transcript: a task prompt,
then turns of assistant text with tool calls whose results are source files and command output, each turn with usage
and priced cost lines. Tokens are estimated at four characters each. Every figure is the median of `--repeat` runs.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from onellm.instances import Instance
from onellm.messages import Message
from onellm.yamlio import _emit, _fast, emit_block

WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "with",
    "was",
    "on",
    "be",
    "by",
    "this",
    "are",
    "or",
    "from",
    "at",
    "which",
    "an",
    "have",
    "not",
    "can",
    "but",
    "all",
    "were",
    "function",
    "return",
    "value",
    "instance",
    "message",
    "tool",
    "call",
    "result",
    "file",
    "line",
    "error",
    "state",
    "model",
    "token",
    "cost",
    "usage",
    "store",
    "load",
    "save",
    "parse",
    "write",
    "read",
    "header",
    "block",
    "text",
    "assistant",
    "user",
    "system",
    "prompt",
    "agent",
    "run",
    "turn",
    "approval",
]


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def _code(rng: random.Random, lines: int) -> str:
    out = []
    depth = 0
    for i in range(lines):
        if i % 9 == 0:
            out.append(f"def {rng.choice(WORDS)}_{i}(value: int, name: str = 'x') -> dict[str, int]:")
            depth = 1
        else:
            stmt = rng.choice(
                [
                    f"result = {rng.choice(WORDS)}(value, {rng.randint(0, 999)})  # {_sentence(rng, 4)}",
                    f"if value > {rng.randint(0, 99)}: return {{'{rng.choice(WORDS)}': value}}",
                    f'items.append({rng.choice(WORDS)}.strip() + "{rng.choice(WORDS)}")',
                    "",
                    f'raise ValueError(f"bad {{name}}: {rng.choice(WORDS)}")',
                ]
            )
            out.append("    " * depth + stmt if stmt else "")
    return "\n".join(out) + "\n"


def _usage(rng: random.Random, tokens: int) -> dict[str, Any]:
    inp = rng.randint(50, 400)
    read = tokens
    out = rng.randint(80, 600)
    return {
        "model": "claude-sonnet-4-5",
        "inputTokens": inp,
        "outputTokens": out,
        "cacheReadInputTokens": read,
        "cost": Decimal(inp * 3 + out * 15) / Decimal(1_000_000) + Decimal(read) * Decimal("0.0000003"),
        "costLines": [
            {
                "counter": "inputTokens",
                "quantity": inp,
                "per": 1000000,
                "unitPrice": Decimal("3"),
                "amount": Decimal(inp * 3) / Decimal(1_000_000),
                "label": "input tokens",
            },
            {
                "counter": "outputTokens",
                "quantity": out,
                "per": 1000000,
                "unitPrice": Decimal("15"),
                "amount": Decimal(out * 15) / Decimal(1_000_000),
                "label": "output tokens",
            },
        ],
    }


def _turn(rng: random.Random, n: int, context: int) -> dict[str, Any]:
    calls = []
    for k in range(rng.randint(1, 2)):
        if rng.random() < 0.6:
            result = _code(rng, rng.randint(20, 90))
            tool, inputs = "read_file", {"path": f"src/pkg/{rng.choice(WORDS)}_{n}_{k}.py"}
        else:
            result = "\n".join(
                f"src/{rng.choice(WORDS)}.py:{rng.randint(1, 900)}: {_sentence(rng, 8)}" for _ in range(12)
            )
            tool, inputs = "search_files", {"pattern": rng.choice(WORDS), "path": "src"}
        calls.append({"id": f"toolu_{n:04d}_{k}", "tool": tool, "inputs": inputs, "result": [{"text": result}]})
    return {
        "id": f"msg_{n:05d}",
        "assistant": [{"text": " ".join(_sentence(rng, rng.randint(8, 20)) for _ in range(rng.randint(1, 4)))}],
        "toolCalls": calls,
        "dateTime": f"2026-11-0{1 + n % 9}T10:{n % 60:02d}:{(n * 7) % 60:02d}.{n:07d}Z",
        "source": {"kind": "model", "name": "claude-sonnet-4-5"},
        "usage": _usage(rng, context),
    }


def build(tokens: int, seed: int = 7) -> tuple[Instance, list[dict[str, Any]]]:
    """An instance of about `tokens` tokens, and the plain data of its messages."""
    rng = random.Random(seed)
    header: dict[str, Any] = {
        "instanceId": "bench-200k",
        "agentDefinition": "agents/refactor.yaml",
        "name": "Refactor helper",
        "description": "Reads the code base and proposes a refactoring",
        "model": "claude-sonnet-4-5",
        "maxIterations": 200,
        "systemPrompt": "You are a careful engineer.\nRead before you write.\n",
        "requestedModel": "claude-sonnet",
        "state": "waiting",
        "runStartedAt": "2026-11-01T10:00:00.1234567Z",
        "metadata": {"renderedSystemPrompt": "You are a careful engineer.\nRead before you write.\n"},
        "capabilities": {"readRoots": ["/work/repo"], "writeRoots": [], "shell": {"enabled": False}},
        "capabilitiesRecorded": True,
    }
    messages: list[dict[str, Any]] = [
        {
            "id": "msg_00000",
            "user": [{"text": "Find every place that parses instance files and make them share one reader."}],
            "dateTime": "2026-11-01T10:00:00.1234567Z",
            "source": {"kind": "user"},
        }
    ]
    chars = 0
    n = 1
    while chars < tokens * 4:
        turn = _turn(rng, n, chars // 4)
        messages.append(turn)
        chars += len(emit_block(turn))
        n += 1
    inst = Instance.from_data({**header, "messages": messages})
    return inst, messages


def median_ms(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median wall time and median CPU time of this process, in milliseconds."""
    wall = []
    cpu = []
    for _ in range(repeat):
        started = time.perf_counter()
        started_cpu = time.process_time()
        fn()
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started)
    return statistics.median(wall) * 1000, statistics.median(cpu) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--keep", type=Path, default=None, help="write the generated instance file here")
    args = parser.parse_args()

    inst, raw = build(args.tokens)
    text = inst.dumps()
    directory = Path(tempfile.mkdtemp(prefix="onellm-bench-"))
    path = directory / "bench-200k.yaml"
    path.write_text(text, encoding="utf-8")
    if args.keep:
        args.keep.write_text(text, encoding="utf-8")
    rng = random.Random(99)
    print(
        f"instance: {len(inst.messages)} messages, {len(text.encode()):,} bytes, ~{len(text) // 4:,} tokens "
        f"(Python {sys.version.split()[0]})"
    )

    rows: list[tuple[str, tuple[float, float]]] = []
    rows.append(("load (Instance.load, file read + parse)", median_ms(lambda: Instance.load(path), args.repeat)))

    def load_cold() -> None:
        # The reader remembers scalars it has read (numbers, names, labels); a process's first load of a file has
        # none of this one's, and neither has this.
        _fast._scalars.clear()
        _emit.good_keys.clear()
        Instance.load(path)

    rows.append(("load, reader's scalar cache emptied first", median_ms(load_cold, args.repeat)))
    loaded = Instance.load(path)
    assert loaded.dumps() == text

    counter = [len(raw)]

    def append_and_save(durable: bool) -> Callable[[], None]:
        def run() -> None:
            counter[0] += 1
            loaded.messages.append(Message.from_data(_turn(rng, counter[0], 200_000)))
            loaded.save(path, durable=durable)

        return run

    rows.append(("append one turn + save (fsync)", median_ms(append_and_save(True), args.repeat)))
    rows.append(("append one turn + save (no fsync)", median_ms(append_and_save(False), args.repeat)))
    rows.append(
        ("append one turn + dumps (no file)", median_ms(lambda: _append_dumps(loaded, rng, counter), args.repeat))
    )

    def first_save_models_ready() -> None:
        fresh = Instance.from_data(inst._header_data())
        fresh.messages = [Message.from_data(m.to_data()) for m in inst.messages]
        started = time.perf_counter()
        started_cpu = time.process_time()
        fresh.save(directory / "fresh.yaml")
        first_cpu.append(time.process_time() - started_cpu)
        first_wall.append(time.perf_counter() - started)

    first_wall: list[float] = []
    first_cpu: list[float] = []
    for _ in range(max(5, args.repeat // 3)):
        first_save_models_ready()
    rows.append(
        (
            "save of a never-written instance",
            (statistics.median(first_wall) * 1000, statistics.median(first_cpu) * 1000),
        )
    )

    slow_repeat = max(3, args.repeat // 10)
    from onellm.yamlio import load_document, safe_load

    rows.append(
        (
            "ruamel round-trip loader (yamlio.load_document)",
            median_ms(lambda: load_document(text, max_chars=10**9, max_nodes=10**9), slow_repeat),
        )
    )
    rows.append(("guarded C safe loader (yamlio.safe_load)", median_ms(lambda: safe_load(text), slow_repeat)))
    try:
        from ruamel.yaml import YAML

        c_loader = YAML(typ="safe", pure=False)
        rows.append(("ruamel C safe loader, bare", median_ms(lambda: c_loader.load(text), slow_repeat)))
    except ImportError:  # pragma: no cover
        pass

    width = max(len(name) for name, _ in rows)
    print(f"{'operation':<{width}}  {'wall':>10}  {'cpu':>10}")
    print(f"{'-' * width}  {'-' * 10}  {'-' * 10}")
    for name, (wall, cpu) in rows:
        print(f"{name:<{width}}  {wall:>7.2f} ms  {cpu:>7.2f} ms")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"medians; cpu is this process's CPU time; 1-minute load average {load:.2f} on {os.cpu_count()} CPUs")
    print("targets: load < 20 ms, per-turn save < 10 ms")


def _append_dumps(inst: Instance, rng: random.Random, counter: list[int]) -> None:
    counter[0] += 1
    inst.messages.append(Message.from_data(_turn(rng, counter[0], 200_000)))
    inst.dumps()


if __name__ == "__main__":
    main()
