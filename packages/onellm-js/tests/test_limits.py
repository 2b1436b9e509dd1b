"""Every row of the limits table: its default, and that it ends the run (or fails the script) with its kind."""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onellm.tools import ToolContext
from onellm_js import JsFailure, JsRunLimiter, JsSandbox, JsSandboxError, JsSandboxOptions, JsSlot, JsWorkerPool

pytestmark = pytest.mark.anyio

MiB = 1024 * 1024


async def fails(box: JsSandbox, code: str, **kw: Any) -> JsSandboxError:
    with pytest.raises(JsSandboxError) as info:
        await box.run_code(code, **kw)
    return info.value


def test_the_defaults_are_those_of_the_limits_table() -> None:
    o = JsSandboxOptions()
    assert (o.fuel, o.max_allocated_bytes, o.max_host_allocated_bytes, o.time_limit) == (
        200_000_000,
        256 * MiB,
        1024 * MiB,
        10.0,
    )
    assert (o.max_call_depth, o.max_string_length, o.max_file_bytes, o.max_fetch_bytes) == (1000, 16 * MiB, MiB, MiB)
    assert (o.max_host_result_bytes, o.max_write_bytes_per_run, o.max_writes_per_run) == (32 * MiB, 8 * MiB, 256)
    assert (o.max_fetches_per_run, o.max_log_chars, o.max_result_chars, o.max_cost_lines, o.max_output_chars) == (
        16,
        64_000,
        1_000_000,
        100,
        10_240,
    )
    assert (o.grace, o.max_result_depth) == (0.25, 64)
    shared = JsRunLimiter.shared()
    assert (shared.max_concurrent_runs, shared.max_total_bytes, shared.max_wait) == (8, 2 * 1024 * MiB, 10.0)
    assert (shared.reserved_for_interceptors, shared.max_runs_per_caller, shared.max_interceptors_per_owner) == (
        2,
        3,
        2,
    )
    assert JsRunLimiter.shared() is shared


def test_options_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="fuel"):
        JsSandboxOptions(fuel=0)
    with pytest.raises(ValueError, match="time_limit"):
        JsSandboxOptions(time_limit=0)
    naive = dt.datetime(2026, 1, 1)
    with pytest.raises(ValueError, match="timezone"):
        JsSandboxOptions(fixed_time=naive)


async def test_fuel_ends_a_loop_and_cannot_be_caught(small: JsSandbox) -> None:
    error = await fails(small, "try { for (;;) {} } catch (e) { return 'caught' }")
    assert error.kind is JsFailure.FUEL
    assert error.is_limit
    assert str(error) == "fuel limit: the script spent its 10,000,000 steps (about 0.25 s of CPU)"


async def test_fuel_stops_regex_backtracking(small: JsSandbox) -> None:
    error = await fails(small, "return /^(a+)+$/.test('a'.repeat(40) + 'b')")
    assert error.kind is JsFailure.FUEL


async def test_memory_ends_the_run_even_when_the_script_catches_it(small: JsSandbox) -> None:
    error = await fails(small, "const a = []; try { for (;;) a.push({ n: a.length }) } catch (e) {} return a.length")
    assert error.kind is JsFailure.MEMORY
    assert str(error) == f"memory limit: the script allocated more than the {32 * MiB} bytes it may use"


async def test_host_backstop_watches_the_sandbox_process(make_options: Callable[..., JsSandboxOptions]) -> None:
    box = JsSandbox(make_options(max_host_allocated_bytes=16 * MiB, fuel=400_000_000, time_limit=8.0))
    code = "const keep = []; for (let i = 0; i < 1e6; i++) keep.push({ i }); const end = Date.now() + 5000; while (Date.now() < end) {} return keep.length"
    started = time.monotonic()
    error = await fails(box, code)
    assert error.kind is JsFailure.MEMORY
    assert "grew by more than 16777216 bytes" in str(error)
    assert time.monotonic() - started < 5


async def test_time_limit_kills_a_builtin_that_does_not_yield(
    make_options: Callable[..., JsSandboxOptions], pool: JsWorkerPool, limiter: JsRunLimiter
) -> None:
    box = JsSandbox(make_options(time_limit=0.5))
    killed, abandoned = pool.killed, JsSandbox.abandoned_runs
    started = time.monotonic()
    # A naive substring search over 8 million characters: minutes of work inside one engine call.
    error = await fails(box, "const s = 'a'.repeat(8e6); return s.indexOf('a'.repeat(4000) + 'b')")
    elapsed = time.monotonic() - started
    assert error.kind is JsFailure.TIME
    assert str(error) == "time limit: the script ran for more than 0.5 s and was stopped"
    assert 0.5 <= elapsed < 0.5 + 0.25 + 1.0
    assert (pool.killed, JsSandbox.abandoned_runs, limiter.abandoned_runs) == (killed + 1, abandoned + 1, 1)
    assert limiter.active_runs == 0
    # the pool replaced the worker: the next run works
    assert (await box.run_code("return 2")).value == 2


async def test_time_limit_counts_time_spent_waiting_for_the_host(
    make_options: Callable[..., JsSandboxOptions], make_context: Callable[..., ToolContext], root: Path
) -> None:
    box = JsSandbox(make_options(time_limit=0.5, fuel=400_000_000))
    started = time.monotonic()
    error = await fails(
        box, "for (;;) { await ctx.readFile('missing.txt').catch(() => null) }", context=make_context(root)
    )
    assert error.kind is JsFailure.TIME
    assert time.monotonic() - started < 0.5 + 0.25 + 1.0


async def test_call_depth_is_a_catchable_range_error(sandbox: JsSandbox) -> None:
    depth = await sandbox.run_code("let d = 0; function f() { d++; f() } try { f() } catch (e) { return [d, e.name] }")
    assert depth.value[1] == "RangeError"
    assert 900 <= depth.value[0] <= 3000
    error = await fails(sandbox, "function f(n) { return f(n + 1) + 1 }\nreturn f(0)")
    assert error.kind is JsFailure.SCRIPT
    assert str(error).startswith("RangeError: Maximum call stack size exceeded")


async def test_string_length_is_a_range_error(sandbox: JsSandbox) -> None:
    result = await sandbox.run_code(
        "const out = [];\n"
        "for (const f of [() => 'ab'.repeat(2 ** 24), () => ''.padStart(2 ** 25), () => 'x'.padEnd(2 ** 25, 'y')]) {\n"
        "  try { f(); out.push('made') } catch (e) { out.push(e.name) }\n"
        "}\n"
        "return out"
    )
    assert result.value == ["RangeError", "RangeError", "RangeError"]
    error = await fails(sandbox, "'ab'.repeat(2 ** 24)")
    assert str(error).startswith(
        "RangeError: String.prototype.repeat: a string of 33554432 characters is longer than the limit of 16777216"
    )


async def test_file_and_fetch_sizes(
    make_options: Callable[..., JsSandboxOptions], make_context: Callable[..., ToolContext], root: Path
) -> None:
    (root / "big.txt").write_text("x" * 2048)
    (root / "ok.txt").write_text("y" * 1000)
    box = JsSandbox(make_options(max_file_bytes=1024))
    result = await box.run_code(
        "const out = [];\n"
        "for (const p of ['big.txt', 'ok.txt']) { try { out.push((await ctx.readFile(p)).length) } catch (e) { out.push(e.message) } }\n"
        "return out",
        context=make_context(root),
        requires=["fileRead"],
    )
    assert result.value == ["ctx.readFile: 'big.txt' is larger than 1024 bytes", 1000]


async def test_host_result_bytes_count_every_file_a_run_holds(
    make_options: Callable[..., JsSandboxOptions], make_context: Callable[..., ToolContext], root: Path
) -> None:
    (root / "a.txt").write_text("a" * 3000)
    box = JsSandbox(make_options(max_host_result_bytes=10_000))
    result = await box.run_code(
        "const out = [];\n"
        "for (let i = 0; i < 3; i++) { try { out.push((await ctx.readFile('a.txt')).length) } catch (e) { out.push(e.name + ': ' + e.message) } }\n"
        "return out",
        context=make_context(root),
    )
    assert result.value == [
        3000,
        "RangeError: ctx.readFile: the run would hold more than 10000 bytes of file text and response bodies",
        "RangeError: ctx.readFile: the run would hold more than 10000 bytes of file text and response bodies",
    ]


async def test_write_quotas(
    make_options: Callable[..., JsSandboxOptions], make_context: Callable[..., ToolContext], root: Path
) -> None:
    box = JsSandbox(make_options(max_writes_per_run=2, max_write_bytes_per_run=100))
    result = await box.run_code(
        "const out = [];\n"
        "for (const [p, t] of [['a.txt', 'x'.repeat(60)], ['b.txt', 'y'.repeat(60)], ['c.txt', 'z'], ['d.txt', 'w']]) {\n"
        "  try { await ctx.writeFile(p, t); out.push('ok') } catch (e) { out.push(e.name + ': ' + e.message) }\n"
        "}\n"
        "return out",
        context=make_context(root),
    )
    assert result.value == [
        "ok",
        "RangeError: ctx.writeFile: a run writes at most 100 bytes",
        "ok",
        "RangeError: ctx.writeFile: a run writes at most 2 files",
    ]
    assert sorted(os.listdir(root)) == ["a.txt", "c.txt"]


async def test_log_chars_give_one_notice_then_drop(make_options: Callable[..., JsSandboxOptions]) -> None:
    lines: list[Any] = []
    box = JsSandbox(make_options(max_log_chars=10, log=lines.append))
    result = await box.run_code("ctx.log('abcd'); ctx.log('efgh'); ctx.log('ijkl'); ctx.log('mnop'); return 1")
    notice = "[ctx.log: the run wrote more than 10 characters; later lines are dropped]"
    assert result.logs == ["abcd", "efgh", notice]
    assert [line.text for line in lines] == result.logs
    assert lines[0].file == "<code>"


async def test_busy_when_no_slot_comes_free(make_options: Callable[..., JsSandboxOptions]) -> None:
    limiter = JsRunLimiter(max_concurrent_runs=3, max_wait=0.2)
    box = JsSandbox(make_options(limiter=limiter))
    leases = [limiter.try_acquire(JsSlot(kind="hook", owner=str(n))) for n in range(3)]
    assert all(leases)
    started = time.monotonic()
    error = await fails(box, "return 1")
    assert error.kind is JsFailure.BUSY
    assert str(error) == "busy: no JavaScript run slot came free within 0.2 s (all 3 JavaScript run slots are in use)"
    assert time.monotonic() - started < 2
    for lease in leases:
        assert lease is not None
        lease.release()
    assert (await box.run_code("return 1")).value == 1


async def test_busy_when_runs_hold_too_many_bytes(
    make_options: Callable[..., JsSandboxOptions], make_context: Callable[..., ToolContext], root: Path
) -> None:
    (root / "a.txt").write_text("a" * 5000)
    limiter = JsRunLimiter(max_total_bytes=8000)
    box = JsSandbox(make_options(limiter=limiter, max_host_allocated_bytes=1024 * MiB))
    error = await fails(box, "await ctx.readFile('a.txt'); return 1", context=make_context(root))
    assert error.kind is JsFailure.BUSY
    assert "hold more than 8000 bytes" in str(error)
    assert limiter.active_runs == 0


async def test_result_size_and_depth(make_options: Callable[..., JsSandboxOptions]) -> None:
    box = JsSandbox(make_options(max_result_chars=100))
    error = await fails(box, "return 'x'.repeat(200)")
    assert (error.kind, str(error)) == (
        JsFailure.RESULT,
        "result limit: the result is 202 characters of JSON, more than the limit of 100",
    )
    assert (await box.run_code("return 'x'.repeat(90)")).value == "x" * 90
    deep = JsSandbox(make_options())
    error = await fails(deep, "let v = 1; for (let i = 0; i < 65; i++) v = [v]; return v")
    assert (error.kind, str(error)) == (JsFailure.RESULT, "result limit: the result nests deeper than 64 levels")
    ok = await deep.run_code("let v = 1; for (let i = 0; i < 64; i++) v = { v }; return v")
    assert ok.type == "object"
    for code in ("return 1n", "const a = {}; a.a = a; return a", "return () => 1", "return Symbol('s')"):
        assert (await fails(deep, code)).kind is JsFailure.RESULT


async def test_cost_lines_are_capped(make_options: Callable[..., JsSandboxOptions]) -> None:
    box = JsSandbox(make_options(max_cost_lines=2))
    result = await box.run_code(
        "const out = [];\n"
        "for (let i = 0; i < 3; i++) { try { ctx.addCost({ counter: 'calls', quantity: 1, unitPrice: '0.01' }); out.push('ok') } catch (e) { out.push(e.name + ': ' + e.message) } }\n"
        "return out"
    )
    assert result.value == ["ok", "ok", "TypeError: ctx.addCost: a run adds at most 2 cost lines"]
    assert len(result.cost_lines) == 2


async def test_console_output_keeps_head_and_tail(make_options: Callable[..., JsSandboxOptions]) -> None:
    box = JsSandbox(make_options(max_output_chars=40))
    result = await box.run_code("for (let i = 0; i < 100; i++) console.log('line ' + i)")
    full = "".join(f"line {i}\n" for i in range(100))
    assert result.output == f"{full[:20]}\n[... {len(full) - 40} characters elided ...]\n{full[-20:]}"
