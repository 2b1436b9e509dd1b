"""Deciders: a 20-question decider end to end on the scripted decisions engine, and the Go-exact request encoding of a
1 MB state beside `json.dumps(sort_keys=True)` as the floor, in one run.

Run with `uv run python bench/deciders.py`. Times are the median of several repeats, per operation.

Rows:
- decide, 20 questions, memory store: `Runtime.decide` from the loaded decider to the saved instance (inputs checked,
  state and questions rendered, the request encoded for its token estimate and again by the engine's body, the answers
  checked, the instance saved). No decider has a Python peer to compare with; the floor row is the same request's JSON
  written once by `json.dumps`, the least any engine client must do.
- decide, 20 questions, file store: the same with the instance written to disk (not fsynced).
- encode a 1 MB state: `onellm._go.jsonenc.encode` (sorted keys, HTML escapes, U+2028/9, Go's number forms) beside
  `json.dumps(sort_keys=True)` and `msgspec.json.encode(order="sorted")`, which write the same structure without Go's
  escapes and number forms.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec

from onellm import Runtime
from onellm._go.jsonenc import encode
from onellm.definitions import Decider
from onellm.instances import FileInstanceStore, MemoryInstanceStore
from onellm.testing import ScriptedDecisionProvider


def per_op(fn: Callable[[], object], number: int, repeat: int = 5) -> float:
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def fmt(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    return f"{s * 1e3:.2f} ms"


def twenty_questions() -> Decider:
    lines = [
        "model: jev-latest",
        "state:",
        '  ticket: "{{ .inputs.ticket }}"',
        '  summary: "{{ .inputs.ticket.title }} from {{ .inputs.ticket.customer }}"',
        "questions:",
    ]
    for i in range(7):
        lines += [
            f"  topic{i}:",
            "    type: choice",
            f"    instructions: Which team should handle part {i} of the ticket?",
            "    criteria: {billing: Money, orders: Parcels, tech: Bugs, other: Anything else}",
        ]
    for i in range(7):
        lines += [
            f"  urgent{i}:",
            "    type: score",
            f"    instructions: How urgent is part {i}?",
            "    criteria: [low, normal, high]",
        ]
    for i in range(6):
        lines += [
            f"  angry{i}:",
            "    type: noul",
            f'    instructions: "Is {{{{ .inputs.ticket.customer }}}} angry about part {i}?"',
        ]
    return Decider.loads("\n".join(lines) + "\n", file="bench.decider.yaml", name="bench")


def state_of(size: int) -> dict[str, Any]:
    rng = random.Random(7)
    items: list[dict[str, Any]] = []
    total = 0
    while total < size:
        item = {
            "id": rng.randrange(10**9),
            "name": f"Item <{rng.randrange(1000)}> & co",
            "price": round(rng.uniform(0, 1000), 2),
            "weight": rng.random() * 10,
            "tags": ["a", "b", "ünïcode"],
            "active": rng.random() > 0.5,
            "note": None,
        }
        total += len(json.dumps(item))
        items.append(item)
    return {"order": {"items": items, "customer": "ACME"}}


def main() -> int:
    decider = twenty_questions()
    inputs = {"ticket": {"title": "Refund please", "customer": "ACME", "lines": [1, 2, 3], "total": 120.5}}
    rows: list[tuple[str, float, str]] = []

    async def run(runtime: Runtime) -> None:
        await runtime.decide(decider, inputs)

    for label, store in (("memory store", MemoryInstanceStore()), ("file store", None)):
        with tempfile.TemporaryDirectory() as folder:
            runtime = Runtime(environ={}, store=store or FileInstanceStore(Path(folder), durable=False))
            engine = ScriptedDecisionProvider("typesafe")
            runtime.providers.set("typesafe", engine)

            async def many(runtime: Runtime = runtime, count: int = 50) -> None:
                for _ in range(count):
                    await run(runtime)

            anyio.run(many, runtime, 5)
            times = [
                timeit.timeit(lambda runtime=runtime: anyio.run(many, runtime, 50), number=1) / 50 for _ in range(5)
            ]
            rows.append((f"decide, 20 questions, {label}", statistics.median(times), ""))
            request = engine.requests[-1]
    body = {
        "model": request.model,
        "questions": {
            q.key: {"type": q.type, "instructions": q.instructions, "criteria": q.criteria} for q in request.questions
        },
        "state": request.state,
    }
    rows.append(("floor: json.dumps of the same request", per_op(lambda: json.dumps(body, sort_keys=True), 2000), ""))

    state = state_of(1_000_000)
    size = len(encode(state))
    ours = per_op(lambda: encode(state), 5)
    floor = per_op(lambda: json.dumps(state, sort_keys=True), 5)
    sorted_encoder = msgspec.json.Encoder(order="sorted")
    other = per_op(lambda: sorted_encoder.encode(state), 5)
    rows.append((f"encode a {size / 1e6:.2f} MB state: onellm (Go-exact)", ours, f"{ours / floor:.2f}x the floor"))
    rows.append(("encode: json.dumps(sort_keys=True) (floor)", floor, "1.00x"))
    rows.append(("encode: msgspec.json.encode(order='sorted')", other, f"{other / floor:.2f}x the floor"))

    print(f"Python {sys.version.split()[0]}, msgspec {msgspec.__version__}; median of repeats, per operation\n")
    print("| row | time | ratio |")
    print("|---|---:|---:|")
    for name, seconds, ratio in rows:
        print(f"| {name} | {fmt(seconds)} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
