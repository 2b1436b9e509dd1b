"""Hostile scripts: every bomb ends in its typed limit within the time limit plus the grace period, the host process's
memory stays bounded, and many hostile runs at once are held by the limiter."""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable

import anyio
import pytest

from onellm_js import JsFailure, JsRunLimiter, JsSandbox, JsSandboxError, JsSandboxOptions, JsSlot

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TIME_LIMIT = 2.0
GRACE = 0.25
ROOMY_TIME_LIMIT = 10.0
SLACK = 2.0  # a loaded 2-core machine: process start, scheduling
MEMORY = 24 * 1024 * 1024

M, F, S, T, R = JsFailure.MEMORY, JsFailure.FUEL, JsFailure.SCRIPT, JsFailure.TIME, JsFailure.RESULT

BOMBS: dict[str, tuple[str, set[JsFailure]]] = {
    # arrays
    "array of numbers": ("const a = []; for (;;) a.push(1)", {M}),
    "array of objects": ("const a = []; for (;;) a.push({ n: a.length })", {M}),
    "array doubling": ("let a = [1]; for (;;) a = a.concat(a)", {M}),
    "array fill": ("new Array(2 ** 32 - 1).fill(0)", {M, S}),
    "array from length": ("Array.from({ length: 1e9 }, (_, i) => i)", {M}),
    "sparse writes": ("const a = []; for (let i = 0; ; i++) a[i * 1000] = { i }", {M, F}),
    "array join": ("return Array(1e8).join('xy').length", {M, S}),
    "nested arrays kept": ("let a = []; for (;;) a = [a, a, []]", {M}),
    # buffers
    "one huge buffer": ("return new ArrayBuffer(2 ** 31).byteLength", {M, S}),
    "many buffers": ("const keep = []; for (;;) keep.push(new ArrayBuffer(1 << 20))", {M}),
    "huge typed array": ("return new Float64Array(1e9).length", {M, S}),
    "resizable buffer": (
        "const b = new ArrayBuffer(1, { maxByteLength: 2 ** 31 }); for (let n = 1; ; n *= 2) b.resize(n)",
        {M, S},
    ),
    "data views": ("const keep = []; for (;;) keep.push(new DataView(new ArrayBuffer(65536)))", {M}),
    # strings
    "string doubling": ("let s = 'xy'; for (;;) s += s", {M, S}),
    "repeat": ("return 'x'.repeat(1e9).length", {S}),
    "pad start": ("return ''.padStart(2 ** 30, 'ab').length", {S}),
    "flattened concatenation": ("let s = ''; for (let i = 0; ; i++) { s += i; s.charCodeAt(0) }", {M, F}),
    # Each step here is a JSON.stringify of a megabyte or more, and the engine looks at its interrupt only every few
    # thousand steps: the fuel check can come after the wall clock's on a loaded machine.
    "stringify growth": ("const a = []; for (;;) { a.push('x'.repeat(1000)); JSON.stringify(a) }", {M, F, T}),
    "template growth": ("let s = 'a'; for (;;) { s = `${s}${s}`; s.indexOf('b') }", {M, S}),
    "from char code": ("return String.fromCharCode(...new Array(1e8).fill(65)).length", {M, S}),
    "split into characters": ("const s = 'abc'.repeat(5e6); return s.split('').length", {M}),
    "replace all amplification": ("let s = 'a'.repeat(1000); for (;;) s = s.replaceAll('a', 'aa')", {M, S}),
    # collections and the symbol registry
    "map entries": ("const m = new Map(); for (let i = 0; ; i++) m.set(i, { i })", {M}),
    "set of strings": ("const s = new Set(); for (let i = 0; ; i++) s.add('key' + i)", {M}),
    "weak map kept": (
        "const keep = [], w = new WeakMap(); for (;;) { const k = {}; keep.push(k); w.set(k, [k]) }",
        {M},
    ),
    "map of big keys": ("const m = new Map(); for (let i = 0; ; i++) m.set('k'.repeat(1000) + i, i)", {M, F}),
    "symbol registry": ("for (let i = 0; ; i++) Symbol.for('s' + i)", {M, F}),
    "symbols kept": ("const keep = []; for (let i = 0; ; i++) keep.push(Symbol('s' + i))", {M}),
    # promises and the job queue
    "promise queue": ("for (;;) Promise.resolve().then(() => {})", {M}),
    "microtask spin": ("(function spin() { Promise.resolve().then(spin) })(); await new Promise(() => {})", {F}),
    "promise chain": ("let p = Promise.resolve(); for (;;) p = p.then(() => [1, 2, 3])", {M}),
    "pending promises kept": ("const keep = []; for (;;) keep.push(new Promise(() => {}))", {M}),
    # BigInt
    "bigint power": ("return (2n ** 100000000n).toString().length", {M, S}),
    "bigint squaring": ("let b = 3n; for (;;) b = b * b", {M, S}),
    "bigint factorial": ("let b = 1n; for (let i = 1n; ; i++) b *= i", {F, M, S}),
    # regular expressions
    "catastrophic backtracking": ("return /^(a+)+$/.test('a'.repeat(40) + 'b')", {F}),
    "alternation backtracking": ("return /^(a|aa)*c$/.test('a'.repeat(60))", {F}),
    "backreferences": ("return /^(a*)*\\1b$/.test('a'.repeat(5000))", {F}),
    # recursion
    "deep recursion": ("function f(n) { return f(n + 1) + 1 }\nreturn f(0)", {S}),
    "mutual recursion": ("const a = n => b(n) + 1, b = n => a(n) + 1;\nreturn a(0)", {S}),
    "getter recursion": ("const o = { get x() { return this.x } };\nreturn o.x", {S}),
    "deep json": ("return JSON.parse('['.repeat(1e6) + ']'.repeat(1e6))", {S}),
    # results
    "huge result": ("return 'x'.repeat(3e6)", {R}),
    "deep result": ("let v = 0; for (let i = 0; i < 200; i++) v = [v]; return v", {R}),
    "cyclic result": ("const a = {}; a.self = a; return a", {R}),
    # CPU
    "loop": ("for (;;) {}", {F}),
    "loop after await": ("await null; while (true) {}", {F}),
    "busy wait": ("const end = Date.now() + 60000; while (Date.now() < end) {}", {F}),
    "closures kept": ("const keep = []; for (let i = 0; ; i++) keep.push(() => i)", {M}),
    "generated code": ("return new Function('return ' + '1+'.repeat(5e6) + '1')()", {M, S}),
    "many properties": ("const o = {}; for (let i = 0; ; i++) o['p' + i] = i", {M}),
    "long prototype chain": ("let o = {}; for (;;) o = Object.create(o)", {M}),
    "console flood": ("for (;;) console.log('x'.repeat(1000))", {F}),
    "ctx.log flood": ("for (;;) ctx.log('x'.repeat(1000))", {F, M}),
    "huge error message": ("throw new Error('x'.repeat(5e6))", {S}),
    # a built-in that does not yield: the host kills the process
    "substring search": ("const s = 'a'.repeat(8e6); return s.indexOf('a'.repeat(4000) + 'b')", {T}),
}


def _rss_peak() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


@pytest.fixture(scope="module")
def host_peak_before() -> int:
    return _rss_peak()


@pytest.fixture
def hostile(make_options: Callable[..., JsSandboxOptions]) -> JsSandbox:
    return JsSandbox(
        make_options(fuel=6_000_000, max_allocated_bytes=MEMORY, time_limit=TIME_LIMIT, grace=GRACE, max_log_chars=100)
    )


def test_there_are_at_least_forty_bombs() -> None:
    assert len(BOMBS) >= 40


@pytest.fixture
def roomy(make_options: Callable[..., JsSandboxOptions]) -> JsSandbox:
    """For bombs that must end on memory, the script or the result: fuel and time far enough away that a loaded
    machine, on which a step costs more CPU time, still reaches the memory cap first."""
    return JsSandbox(
        make_options(
            fuel=400_000_000, max_allocated_bytes=MEMORY, time_limit=ROOMY_TIME_LIMIT, grace=GRACE, max_log_chars=100
        )
    )


@pytest.mark.parametrize("name", sorted(BOMBS))
async def test_a_bomb_ends_in_its_limit(name: str, hostile: JsSandbox, roomy: JsSandbox, host_peak_before: int) -> None:
    code, kinds = BOMBS[name]
    sandbox = roomy if kinds and not kinds & {F, T} else hostile
    limit = ROOMY_TIME_LIMIT if sandbox is roomy else TIME_LIMIT
    started = time.monotonic()
    with pytest.raises(JsSandboxError) as info:
        await sandbox.run_code(code)
    elapsed = time.monotonic() - started
    assert info.value.kind in kinds, f"{name}: {info.value.kind} {info.value}"
    assert elapsed < limit + GRACE + SLACK, f"{name} took {elapsed:.2f} s"
    assert len(str(info.value)) <= JsSandboxError.MAX_MESSAGE_CHARS
    assert sandbox.limiter.active_runs == 0


async def test_the_engines_out_of_memory_error_is_the_memory_limit(hostile: JsSandbox) -> None:
    """The engine's out-of-memory error ends a run with the memory limit even when it reaches the end of the run as
    the script's own error (raised where no stack trace could be prepared, the flag stays unset): here a script
    throws an error of the same name and message that sets no flag, which takes that path."""
    with pytest.raises(JsSandboxError) as info:
        await hostile.run_code("const e = new Error('out of memory'); e.name = 'InternalError'; throw e")
    assert info.value.kind is M
    with pytest.raises(JsSandboxError) as other:
        await hostile.run_code("throw new InternalError('something else')")
    assert other.value.kind is S


def test_the_host_process_memory_stayed_bounded(host_peak_before: int) -> None:
    # Every bomb above allocated up to its budget (or far more, for the ones the engine refused): in the worker
    # processes. The host's own peak grew by little.
    assert _rss_peak() - host_peak_before < 96 * 1024 * 1024


async def test_eight_hostile_runs_at_once_against_the_limiter(make_options: Callable[..., JsSandboxOptions]) -> None:
    limiter = JsRunLimiter(max_concurrent_runs=4, max_wait=30.0, reserved_for_interceptors=1, max_runs_per_caller=2)
    # Fuel for 0.6 s of CPU: the memory bomb needs about 0.1 s to reach its limit alone, and up to twice that when the
    # machine's other work slows every core (fuel is CPU time, which such contention stretches too).
    box = JsSandbox(make_options(limiter=limiter, fuel=24_000_000, max_allocated_bytes=MEMORY, time_limit=TIME_LIMIT))
    codes = [BOMBS[n][0] for n in ("loop", "array of objects", "substring search", "catastrophic backtracking")] * 2
    kinds: list[JsFailure] = []
    most = 0
    per_caller_most = 0
    done = anyio.Event()

    async def one(index: int, code: str) -> None:
        with pytest.raises(JsSandboxError) as info:
            await box.run_code(code, slot=JsSlot(kind="tool", caller=f"caller-{index % 2}"))
        kinds.append(info.value.kind)

    async def watch() -> None:
        nonlocal most, per_caller_most
        while not done.is_set():
            most = max(most, limiter.active_runs)
            with limiter._lock:
                for caller in ("caller-0", "caller-1"):
                    per_caller_most = max(per_caller_most, limiter._count("tool", caller=caller))
            await anyio.sleep(0.005)

    started = time.monotonic()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(watch)
        async with anyio.create_task_group() as runs:
            for index, code in enumerate(codes):
                runs.start_soon(one, index, code)
        done.set()
    assert sorted(kinds) == sorted([JsFailure.FUEL, JsFailure.MEMORY, JsFailure.TIME, JsFailure.FUEL] * 2)
    assert most <= 3  # four slots, one kept for interceptors
    assert per_caller_most <= 2
    assert limiter.active_runs == 0
    assert limiter.abandoned_runs == 2
    assert time.monotonic() - started < 4 * (TIME_LIMIT + GRACE + SLACK)


async def test_hooks_get_a_slot_while_tool_runs_hold_the_rest(make_options: Callable[..., JsSandboxOptions]) -> None:
    limiter = JsRunLimiter(max_concurrent_runs=4, max_wait=0.5)
    box = JsSandbox(make_options(limiter=limiter, fuel=400_000_000, time_limit=4.0))

    async def spin(caller: str) -> None:
        await box.run_code("for (;;) {}", slot=JsSlot(kind="tool", caller=caller))

    async with anyio.create_task_group() as tasks:
        for n in range(2):
            tasks.start_soon(spin, f"c{n}")
        for _ in range(500):
            if limiter.active_runs >= 2:
                break
            await anyio.sleep(0.01)
        with pytest.raises(JsSandboxError) as info:
            await box.run_code("return 1", slot=JsSlot(kind="tool", caller="c9"))
        assert info.value.kind is JsFailure.BUSY
        assert "kept for hooks and decider logic" in str(info.value)
        hook = await box.run_code("return 'hook ran'", slot=JsSlot(kind="hook", owner="agent-1"))
        assert hook.value == "hook ran"
        tasks.cancel_scope.cancel()
    assert limiter.active_runs == 0
