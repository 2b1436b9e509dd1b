"""Driving the async verbs from blocking code: every blocking call of the process runs on one event loop in a
background thread, started on first use; refused inside a running loop or inside a worker thread that a run started.

One loop for all threads matters because what a runtime holds belongs to the loop that made it: an HTTP client's
connections and locks cannot be used from another loop. With one loop, calls from many threads share one runtime's
clients and connections, and a thread that ends leaves no loop behind. The caller's context variables (the runtime
`use_runtime` set) go with each call.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

__all__ = ["drive"]

T = TypeVar("T")


class _Loop:
    """An event loop running in a daemon thread."""

    __slots__ = ("loop", "thread")

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="onellm-sync", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        while True:
            try:
                self.loop.run_forever()
            except BaseException:  # a callback raised through the loop: keep serving the other calls
                continue
            return

    @property
    def alive(self) -> bool:
        return self.thread.is_alive() and not self.loop.is_closed()


_LOCK = threading.Lock()
_LOOP: list[_Loop] = []


def _shared_loop() -> asyncio.AbstractEventLoop:
    with _LOCK:
        if not _LOOP or not _LOOP[0].alive:
            _LOOP[:] = [_Loop()]
        return _LOOP[0].loop


def _forget_after_fork() -> None:
    # A child process has no copy of the loop's thread: its first blocking call starts its own.
    global _LOCK
    _LOCK = threading.Lock()
    _LOOP.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def _in_worker_thread() -> bool:
    try:
        import anyio.from_thread

        anyio.from_thread.check_cancelled()
    except RuntimeError:
        return False
    except BaseException:  # cancelled: still a worker thread
        return True
    return True


def drive(awaitable: Awaitable[T], name: str) -> T:
    """Run `awaitable` to its end on the shared loop and return its result, with this thread's context variables.

    On Ctrl-C the call is cancelled and its cleanup runs before the interrupt reaches the caller.

    Raises:
        RuntimeError: an event loop is already running in this thread (use `await onellm.<name>(...)` there), or this
            is a worker thread a run started for a sync tool (where waiting on the loop would deadlock).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        _close(awaitable)
        raise RuntimeError(
            f"{name}_sync cannot be called when an event loop is already running; use `await onellm.{name}(...)`"
        )
    if _in_worker_thread():
        _close(awaitable)
        raise RuntimeError(
            f"{name}_sync cannot be called from a sync tool running in a worker thread; make the tool async and "
            f"`await onellm.{name}(...)`"
        )
    finished = threading.Event()
    outcome: list[Any] = []

    async def run() -> None:
        try:
            outcome.append((True, await awaitable))
        except BaseException as error:  # every outcome, Ctrl-C included, goes back to the caller
            outcome.append((False, error))
        finally:
            finished.set()

    loop = _shared_loop()
    future = asyncio.run_coroutine_threadsafe(run(), loop)
    try:
        _wait(finished, loop)
    except KeyboardInterrupt:  # Ctrl-C while waiting: cancel the call and let its cleanup run first
        future.cancel()
        _wait(finished, loop)
        raise
    ok, value = outcome[0]
    if ok:
        return value  # type: ignore[no-any-return]
    raise value


def _wait(finished: threading.Event, loop: asyncio.AbstractEventLoop) -> None:
    while not finished.wait(1.0):
        if loop.is_closed():
            raise RuntimeError("the event loop that runs blocking calls was closed while a call was running")


def _close(awaitable: Awaitable[Any]) -> None:
    if isinstance(awaitable, Coroutine):
        awaitable.close()
