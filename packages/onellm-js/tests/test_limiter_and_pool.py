"""The limiter's rules (pure bookkeeping, no runs) and the worker pool's processes."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import anyio
import pytest

from onellm_js import JsRunLimiter, JsSandbox, JsSandboxOptions, JsSlot, JsWorkerPool


def take(limiter: JsRunLimiter, *slots: JsSlot) -> list[bool]:
    return [limiter.try_acquire(slot) is not None for slot in slots]


def test_tool_runs_leave_slots_for_interceptors() -> None:
    limiter = JsRunLimiter(max_concurrent_runs=4, reserved_for_interceptors=2, max_runs_per_caller=10)
    assert take(limiter, *[JsSlot(kind="tool")] * 3) == [True, True, False]
    assert take(limiter, JsSlot(kind="hook", owner="a"), JsSlot(kind="hook", owner="b")) == [True, True]
    assert take(limiter, JsSlot(kind="hook", owner="c")) == [False]
    assert limiter.active_runs == 4


def test_one_caller_holds_at_most_its_share() -> None:
    limiter = JsRunLimiter(max_concurrent_runs=8, max_runs_per_caller=3)
    assert take(limiter, *[JsSlot(kind="tool", caller="root-1")] * 4) == [True, True, True, False]
    assert take(limiter, JsSlot(kind="tool", caller="root-2")) == [True]
    # the host itself (no caller) has no per-caller cap, only the reservation
    assert take(limiter, JsSlot(kind="tool"), JsSlot(kind="tool"), JsSlot(kind="tool")) == [True, True, False]


def test_hooks_are_capped_per_owner_and_keep_a_slot_for_other_owners() -> None:
    limiter = JsRunLimiter(max_concurrent_runs=4, max_interceptors_per_owner=2, reserved_for_interceptors=0)
    assert take(limiter, JsSlot(kind="hook", owner="a"), JsSlot(kind="hook", owner="a")) == [True, True]
    assert take(limiter, JsSlot(kind="hook", owner="a")) == [False]
    assert take(limiter, JsSlot(kind="hook", owner="b")) == [True]
    # one slot left: not for b's second hook, but for an owner with none running
    assert take(limiter, JsSlot(kind="hook", owner="b")) == [False]
    assert take(limiter, JsSlot(kind="hook", owner="c")) == [True]


def test_decider_logic_shares_per_decider_and_takes_half_the_slots() -> None:
    limiter = JsRunLimiter(max_concurrent_runs=6, max_runs_per_decider=2)
    assert take(limiter, *[JsSlot(kind="decider", owner="triage")] * 3) == [True, True, False]
    assert take(limiter, JsSlot(kind="decider", owner="route"), JsSlot(kind="decider", owner="other")) == [True, False]
    assert take(limiter, JsSlot(kind="load"), JsSlot(kind="load"), JsSlot(kind="load")) == [True, True, True]
    assert take(limiter, JsSlot(kind="load")) == [False]


def test_bytes_are_charged_and_released() -> None:
    limiter = JsRunLimiter(max_total_bytes=1000)
    a = limiter.try_acquire(JsSlot(kind="tool"))
    b = limiter.try_acquire(JsSlot(kind="tool"))
    assert a is not None
    assert b is not None
    assert a.charge(600)
    assert a.charge(300)  # the larger of what was reported stays
    assert limiter.charged_bytes == 600
    assert not b.charge(500)
    b.release()
    b.release()
    assert (limiter.charged_bytes, limiter.active_runs) == (600, 1)
    a.release()
    assert (limiter.charged_bytes, limiter.active_runs) == (0, 0)


@pytest.mark.anyio
async def test_a_waiting_run_gets_the_slot_given_back() -> None:
    limiter = JsRunLimiter(max_concurrent_runs=1, max_wait=5.0, reserved_for_interceptors=0)
    held = limiter.try_acquire(JsSlot(kind="tool"))
    assert held is not None

    async def give_back() -> None:
        await anyio.sleep(0.1)
        held.release()

    started = time.monotonic()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(give_back)
        lease = await limiter.acquire(JsSlot(kind="tool"))
    assert 0.05 < time.monotonic() - started < 2
    lease.release()


def test_limiter_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="max_concurrent_runs"):
        JsRunLimiter(max_concurrent_runs=0)
    with pytest.raises(ValueError, match="max_wait"):
        JsRunLimiter(max_wait=-1)


# ---------------------------------------------------------------------------------------------------- the pool


@pytest.mark.anyio
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
async def test_workers_are_reused_isolated_and_end_with_the_pool(
    make_options: Callable[..., JsSandboxOptions], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONELLM_TEST_API_KEY", "sk-should-not-travel")
    pool = JsWorkerPool(max_idle=2, min_idle=0)
    box = JsSandbox(make_options(pool=pool))
    assert (await box.run_code("return 1")).value == 1
    assert (await box.run_code("return 2")).value == 2
    assert (pool.started, pool.idle_workers) == (1, 1)
    worker = pool._idle[0]
    environ = open(f"/proc/{worker.pid}/environ", "rb").read()  # noqa: ASYNC230, SIM115
    assert b"sk-should-not-travel" not in environ
    limits = open(f"/proc/{worker.pid}/limits", encoding="ascii").read()  # noqa: ASYNC230, SIM115
    address_space = next(line for line in limits.splitlines() if line.startswith("Max address space"))
    soft = address_space[len("Max address space") :].split()[0]
    assert soft.isdigit()
    assert int(soft) > pool.address_space_bytes
    assert os.getsid(worker.pid) != os.getsid(0)
    pool.close()
    for _ in range(100):
        if worker.process.poll() is not None:
            break
        await anyio.sleep(0.02)
    assert worker.process.poll() is not None
    with pytest.raises(RuntimeError, match="closed"):
        await pool.acquire()
