"""JavaScript benchmark: what a sandboxed run costs beside a plain Python tool call.

    uv run python bench/javascript.py

Rows, each the median of many calls in one event loop:

- a plain Python tool (`@onellm.tool`, async) through `Tool.invoke`: the floor every tool call pays;
- a JavaScript tool file through `Tool.invoke`, end to end on a pooled worker process (limiter slot, fresh engine,
  prelude, module evaluation, `invoke`, JSON both ways);
- `run_javascript` of a 1 KB script;
- one sandbox start inside the worker (a fresh QuickJS-NG context and the prelude), measured in this process;
- one worker process start (paid when a run is abandoned, or ahead of need by the pool's warm-up thread).

Wall-clock figures include the worker's time; "worker CPU" is what the worker process spent per call (Linux), so a
loaded machine's scheduling shows as the gap between the two.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

import onellm
from onellm.tools import ToolContext
from onellm_js import JsSandbox, JsSandboxOptions, JsWorkerPool, load_tool, run_javascript

TOOL_FILE = """
export const tool = {
  name: "add",
  description: "Adds two numbers.",
  inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
};
export function invoke({ a, b }) { return { sum: a + b }; }
"""

# About 1 KB of ordinary code: a small parser and a summary over the input.
SCRIPT_1KB = """
const rows = input.csv.trim().split('\\n').map(line => line.split(','));
const header = rows.shift();
const records = rows.map(cells => Object.fromEntries(header.map((name, i) => [name, cells[i]])));
const byCity = new Map();
for (const r of records) {
  const list = byCity.get(r.city) ?? [];
  list.push(Number(r.age));
  byCity.set(r.city, list);
}
const summary = [...byCity].map(([city, ages]) => ({
  city,
  people: ages.length,
  meanAge: Math.round(ages.reduce((a, b) => a + b, 0) / ages.length * 10) / 10,
  oldest: Math.max(...ages),
}));
summary.sort((a, b) => b.people - a.people || a.city.localeCompare(b.city));
const lines = summary.map(s => `${s.city.padEnd(8)} ${String(s.people).padStart(3)} ${s.meanAge}`);
console.log(lines.join('\\n'));
const check = records.every(r => r.name && r.city && !Number.isNaN(Number(r.age)));
if (!check) throw new Error('bad row');
return { cities: summary.length, total: records.length, first: summary[0] };
"""
CSV = "name,city,age\n" + "\n".join(f"p{i},{['Oslo', 'Lima', 'Pune', 'Kyiv'][i % 4]},{20 + i % 50}" for i in range(40))


@onellm.tool
async def add(a: float, b: float) -> dict[str, float]:
    """Adds two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return {"sum": a + b}


def worker_cpu(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def median_ms(call: Callable[[], Awaitable[object]], number: int) -> float:
    times = []
    for _ in range(number):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def main() -> None:
    pool = JsWorkerPool(max_idle=1, min_idle=0, max_runs_per_worker=10**6)
    options = JsSandboxOptions(pool=pool)
    sandbox = JsSandbox(options)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "add.js"
        path.write_text(TOOL_FILE, encoding="utf-8")
        js_tool = await load_tool(path, sandbox=sandbox)
    runner = run_javascript(sandbox=sandbox)
    assert len(SCRIPT_1KB.encode()) in range(900, 1300), len(SCRIPT_1KB.encode())
    ctx = ToolContext()

    async def python_call() -> object:
        return await add.invoke({"a": 1, "b": 2}, ctx)

    async def js_call() -> object:
        result = await js_tool.invoke({"a": 1, "b": 2}, ctx)
        assert not result.is_error, result.text
        return result

    async def run_1kb() -> object:
        result = await runner.invoke({"code": SCRIPT_1KB, "input": {"csv": CSV}}, ctx)
        assert not result.is_error, result.text
        return result

    for call in (python_call, js_call, run_1kb):
        for _ in range(20):
            await call()
    worker = pool._idle[0]
    rows: list[tuple[str, float, float | None]] = []
    for name, call, number in (
        ("plain Python tool call (Tool.invoke)", python_call, 3000),
        ("JavaScript tool file call, pooled worker", js_call, 300),
        ("run_javascript, 1 KB script", run_1kb, 300),
    ):
        before = worker_cpu(worker.pid)
        value = await median_ms(call, number)
        after = worker_cpu(worker.pid)
        cpu = None if before is None or after is None or call is python_call else (after - before) / number * 1000
        rows.append((name, value, cpu))
    rows.append(("sandbox start (context + prelude, in process)", sandbox_start_ms(), None))
    start_times = []
    for _ in range(10):
        started = time.perf_counter()
        extra = await anyio.to_thread.run_sync(pool._start)
        start_times.append(time.perf_counter() - started)
        extra.retire()
    rows.append(("worker process start", statistics.median(start_times) * 1000, None))
    pool.close()
    base = rows[0][1]
    print(f"{'operation':<50} {'ms/call':>9} {'worker CPU':>11} {'vs Python':>10}")
    for name, value, cpu in rows:
        shown = f"{cpu:.3f}" if cpu is not None else "-"
        print(f"{name:<50} {value:>9.3f} {shown:>11} {value / base:>9.0f}x")


def sandbox_start_ms() -> float:
    import _quickjs  # type: ignore[import-not-found]

    prelude = (Path(__file__).resolve().parents[1] / "packages/onellm-js/src/onellm_js/_prelude.js").read_text()
    config = json.dumps(
        {
            "limits": {
                "output": 10240,
                "costLines": 100,
                "stringLength": 1 << 24,
                "result": 10**6,
                "logChars": 64000,
                "message": 10240,
            },
            "ids": {"instanceId": None, "toolCallId": None},
            "clock": None,
            "seed": None,
            "undefinedAsNull": False,
            "passCtx": True,
        }
    )
    times = []
    for _ in range(500):
        started = time.perf_counter()
        context = _quickjs.Context()
        context.eval(prelude)(config)
        times.append(time.perf_counter() - started)
        del context
    return statistics.median(times) * 1000


if __name__ == "__main__":
    anyio.run(main)
