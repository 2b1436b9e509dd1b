"""Time as a dependency: the runtime, retries and spend windows read `now()` and wait with `sleep()` on a `Clock`, so
tests run on a `FakeClock` that moves only when told to (or when something sleeps on it)."""

from __future__ import annotations

import datetime as dt
from typing import Protocol, runtime_checkable

from onellm._public import publish as _publish

__all__ = ["Clock", "FakeClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    def now(self) -> dt.datetime:
        """The current time, timezone-aware (UTC)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds`; cancellable at once."""
        ...


class SystemClock:
    """The real clock: UTC wall time, and anyio's sleep."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    async def sleep(self, seconds: float) -> None:
        import anyio

        await anyio.sleep(max(0.0, seconds))


class FakeClock:
    """A clock for tests: `sleep` returns at once after moving time forward, and every wait is recorded in `sleeps`."""

    def __init__(self, start: dt.datetime | None = None) -> None:
        self._now = start or dt.datetime(2026, 11, 5, 12, 0, 0, tzinfo=dt.UTC)
        if self._now.tzinfo is None:
            raise ValueError("FakeClock needs a timezone-aware start time")
        self.sleeps: list[float] = []

    def now(self) -> dt.datetime:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time does not go backwards")
        self._now += dt.timedelta(seconds=seconds)

    async def sleep(self, seconds: float) -> None:
        import anyio

        self.sleeps.append(seconds)
        self.advance(max(0.0, seconds))
        await anyio.lowlevel.checkpoint()


_publish("onellm", Clock, FakeClock, SystemClock)
