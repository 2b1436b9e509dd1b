"""Driving the async verbs from blocking code: one event loop per thread, refused inside a running loop or inside a
worker thread that a run started."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

__all__ = ["drive"]

T = TypeVar("T")

_LOCAL = threading.local()


def _loop() -> asyncio.AbstractEventLoop:
    loop: asyncio.AbstractEventLoop | None = getattr(_LOCAL, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _LOCAL.loop = loop
    return loop


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
    """Run `awaitable` to its end on this thread's loop and return its result.

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
    loop = _loop()
    task = loop.create_task(_as_coroutine(awaitable))
    try:
        return loop.run_until_complete(task)
    except KeyboardInterrupt:
        if not task.done():  # interrupted from outside (Ctrl-C): cancel the call and let its cleanup run
            task.cancel()
            with contextlib.suppress(BaseException):  # the cleanup's own outcome; the caller sees the interrupt
                loop.run_until_complete(task)
        raise


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _close(awaitable: Awaitable[Any]) -> None:
    if isinstance(awaitable, Coroutine):
        awaitable.close()
