"""A save through the runtime is never cut short by a cancellation, whether the store's save waits or not, and whether
it opens cancel scopes (a timeout, a task group) of its own: the cancellation lands once the save is done. Nor is the
lease a cancelled run gives back."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

import onellm
from onellm.definitions import Definition
from onellm.errors import RunCancelledError, StorageError
from onellm.instances import Instance, InstanceLease, MemoryInstanceStore
from onellm.testing import ScriptedProvider, ScriptedToolCall, ScriptStep

from .conftest import add_quick_and_slow

pytestmark = pytest.mark.anyio


class _Store:
    """A store whose save runs `steps` (coroutine functions) one after the other and notes what it did."""

    def __init__(self, *steps: Any) -> None:
        self.steps = steps
        self.done: list[str] = []

    async def save(self, instance: Instance) -> None:
        for step in self.steps:
            await step(self.done)
        self.done.append("saved")

    async def load(self, instance_id: str) -> Instance | None:
        return None


async def _wait(done: list[str]) -> None:
    await anyio.sleep(0.01)
    done.append("waited")


async def _in_own_timeout(done: list[str]) -> None:
    with anyio.fail_after(5):
        await anyio.sleep(0.01)
        done.append("in its scope")


async def _own_timeout_fires(done: list[str]) -> None:
    with anyio.move_on_after(0.01) as scope:
        await anyio.sleep(5)
    done.append("timed out" if scope.cancelled_caught else "not timed out")


async def _in_task_group(done: list[str]) -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(_wait, done)
        await anyio.sleep(0.02)
    done.append("group ended")


async def _fails(done: list[str]) -> None:
    await anyio.lowlevel.checkpoint()
    raise OSError(28, "No space left on device")


def _instance() -> Instance:
    return Instance(id="a" * 26, model="anthropic:claude-sonnet", state="running")


async def _save_cancelled(store: _Store, *, cancel_first: bool) -> bool:
    """Save through a runtime in a scope that is cancelled before the save starts, or while it waits; whether the
    cancellation landed after it."""
    runtime = onellm.Runtime(store=store, environ={})
    reached_after = False
    with anyio.CancelScope() as scope:
        if cancel_first:
            scope.cancel()
        else:

            async def cancel_soon() -> None:
                await anyio.sleep(0.001)
                scope.cancel()

            async with anyio.create_task_group() as group:
                group.start_soon(cancel_soon)
                await runtime._services.save(_instance())
                reached_after = True
                await anyio.sleep(1)
        if cancel_first:
            await runtime._services.save(_instance())
            reached_after = True
            await anyio.sleep(1)
    assert reached_after
    return scope.cancelled_caught


async def test_a_save_that_does_not_wait() -> None:
    store = _Store()
    assert await _save_cancelled(store, cancel_first=True)
    assert store.done == ["saved"]


@pytest.mark.parametrize("cancel_first", [True, False])
async def test_a_save_that_waits_is_not_cut_short(cancel_first: bool) -> None:
    store = _Store(_wait, _wait, _wait)
    assert await _save_cancelled(store, cancel_first=cancel_first)
    assert store.done == ["waited", "waited", "waited", "saved"]


@pytest.mark.parametrize("cancel_first", [True, False])
async def test_a_save_in_its_own_scopes_is_not_cut_short(cancel_first: bool) -> None:
    store = _Store(_in_own_timeout, _wait, _in_task_group, _in_own_timeout)
    assert await _save_cancelled(store, cancel_first=cancel_first)
    assert store.done == ["in its scope", "waited", "waited", "group ended", "in its scope", "saved"]


async def test_a_save_keeps_its_own_timeout() -> None:
    store = _Store(_own_timeout_fires, _wait)
    assert await _save_cancelled(store, cancel_first=False)
    assert store.done == ["timed out", "waited", "saved"]
    store = _Store(_own_timeout_fires)
    runtime = onellm.Runtime(store=store, environ={})
    await runtime._services.save(_instance())
    assert store.done == ["timed out", "saved"]


async def test_a_failed_save_is_a_storage_error() -> None:
    store = _Store(_wait, _fails)
    runtime = onellm.Runtime(store=store, environ={})
    with pytest.raises(StorageError, match="No space left"):
        await runtime._services.save(_instance())
    with anyio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(StorageError, match="No space left"):
            await runtime._services.save(_instance())
    assert store.done == ["waited", "waited"]


class _Immediate:
    """A store whose save has no await in it: it cannot wait, so nothing can cut it short."""

    def __init__(self) -> None:
        self.done: list[str] = []

    async def save(self, instance: Instance) -> None:
        self.done.append("saved")

    async def load(self, instance_id: str) -> Instance | None:
        return None


class _WaitsInAsyncWith(_Store):
    """Its save waits only inside `async with` (no `await` written in it)."""

    async def save(self, instance: Instance) -> None:
        async with _Waiting(self.done):
            self.done.append("saved")


class _WaitsInAsyncFor(_Store):
    """Its save waits only in `async for`."""

    async def save(self, instance: Instance) -> None:
        async for _ in _waiting(self.done):
            pass
        self.done.append("saved")


class _ReturnsAnAwaitable(_Store):
    """Its save is a plain function that hands back the waiting coroutine."""

    def save(self, instance: Instance) -> Any:  # type: ignore[override]
        return _Store.save(self, instance)


class _Waiting:
    def __init__(self, done: list[str]) -> None:
        self.done = done

    async def __aenter__(self) -> None:
        await _wait(self.done)

    async def __aexit__(self, *exc: object) -> None:
        await _wait(self.done)


async def _waiting(done: list[str]) -> Any:
    await _wait(done)
    yield None
    await _wait(done)


@pytest.mark.parametrize("cancel_first", [True, False])
async def test_a_save_with_no_await_in_it_is_whole(cancel_first: bool) -> None:
    store = _Immediate()
    assert await _save_cancelled(store, cancel_first=cancel_first)  # type: ignore[arg-type]
    assert store.done == ["saved"]


@pytest.mark.parametrize(
    ("store", "done"),
    [
        (_WaitsInAsyncWith(), ["waited", "saved", "waited"]),
        (_WaitsInAsyncFor(), ["waited", "waited", "saved"]),
        (_ReturnsAnAwaitable(_wait, _wait), ["waited", "waited", "saved"]),
    ],
)
@pytest.mark.parametrize("cancel_first", [True, False])
async def test_a_save_that_waits_without_a_written_await_is_not_cut_short(
    store: _Store, done: list[str], cancel_first: bool
) -> None:
    store.done.clear()
    assert await _save_cancelled(store, cancel_first=cancel_first)
    assert store.done == done


class _WaitingLease(InstanceLease):
    """A lease whose giving back waits (in `_release`, or in `release` itself)."""

    def __init__(self, instance_id: str, done: list[str]) -> None:
        super().__init__(instance_id)
        self.done = done

    async def _release(self) -> None:
        await _wait(self.done)
        self.done.append("released")


class _WaitingRelease(_WaitingLease):
    async def release(self) -> None:
        await _wait(self.done)
        await super().release()


class _LeasingStore(MemoryInstanceStore):
    def __init__(self, lease: type[_WaitingLease]) -> None:
        super().__init__()
        self.lease = lease
        self.done: list[str] = []

    async def acquire(self, instance_id: str) -> InstanceLease:
        return self.lease(instance_id, self.done)


@pytest.mark.parametrize("lease", [_WaitingLease, _WaitingRelease, None])
async def test_a_cancelled_run_gives_its_lease_back_whole(lease: type[_WaitingLease] | None) -> None:
    store = MemoryInstanceStore() if lease is None else _LeasingStore(lease)
    runtime = onellm.Runtime(store=store, environ={})
    provider = ScriptedProvider("anthropic")
    runtime.providers.set("anthropic", provider)
    finished = add_quick_and_slow(runtime)
    provider.enqueue(ScriptStep(tool_calls=(ScriptedToolCall("a", "quick", {}), ScriptedToolCall("b", "slow", {}))))
    definition = Definition.loads(
        "model: claude-sonnet\nreferences:\n  - tools: [quick, slow]\ninitialPrompts:\n  - user:\n      - text: go\n"
    )
    run = await runtime.start_agent(definition)

    async def cancel_once_quick_ran(scope: anyio.CancelScope) -> None:
        await finished.wait()
        scope.cancel()

    # Cancelled from outside: the lease is given back as the drive ends, with the caller's scope still cancelled.
    async with anyio.create_task_group() as group:
        with anyio.CancelScope() as outer:
            group.start_soon(cancel_once_quick_ran, outer)
            with pytest.raises(RunCancelledError):
                await run.result()
    assert run.state == "stopped"
    assert run.instance.cancelled is True
    if isinstance(store, _LeasingStore):
        expected = ["waited", "waited", "released"] if lease is _WaitingRelease else ["waited", "released"]
        assert store.done == expected
    else:
        assert run.instance.id is not None
        await (await store.acquire(run.instance.id)).release()  # the run gave its lease back: it can be taken again
