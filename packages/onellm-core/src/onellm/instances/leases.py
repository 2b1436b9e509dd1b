"""Leases as rows with an expiry, renewed by their holder, for stores that keep instances in a database.

A database cannot tie a lease to a process the way a lock file is tied to an open descriptor, so a lease is a row:
who holds it (host, process and a random token), until when, and for how long it was taken. The holder renews it
every third of its duration; a holder that dies stops renewing, and the next taker may take the row once it has
lapsed. Expiry times read the store's clock (`Clock`, a `FakeClock` in tests); the renewal schedule runs on the
process's monotonic clock in one daemon thread per store handle, so it keeps going while the event loop is busy.

A renewal that finds the row gone or someone else's marks the lease lost (the holder stalled past the expiry, or a
clock jumped, and another runner took over). The store then refuses saves of that instance through the lost lease,
so the new holder's work is not overwritten.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from onellm.errors import InstanceLockedError, StorageError
from onellm.instances._store import InstanceLease

__all__ = ["LeaseRenewer", "RowLease", "from_ticks", "new_holder", "to_ticks"]

_log = logging.getLogger("onellm.instances")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TICK = timedelta(microseconds=1)


def to_ticks(moment: datetime) -> int:
    """An aware datetime as 100 ns ticks since the Unix epoch (UTC)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("a time must be aware (with a time zone)")
    return ((moment - _EPOCH) // _TICK) * 10


def from_ticks(ticks: int) -> datetime:
    """100 ns ticks since the Unix epoch as an aware UTC datetime (to the microsecond)."""
    return _EPOCH + timedelta(microseconds=ticks // 10)


def new_holder() -> str:
    """Who takes a lease: host, process id and a random token, so a person can tell who holds a row."""
    host = socket.gethostname() or "host"
    return f"{host[:120]}:{os.getpid()}:{secrets.token_hex(8)}"


class LeaseRenewer:
    """Renews the leases of one store handle, each every third of its duration, in one daemon thread.

    `renew(lease)` returns False when the lease turned out lost (it is then dropped); an exception is logged and the
    renewal tried again at the next period, while the lease has not lapsed.
    """

    def __init__(self, name: str, renew: Callable[[object], bool]) -> None:
        self._name = name
        self._renew = renew
        self._cond = threading.Condition()
        self._due: dict[object, tuple[float, float]] = {}  # lease -> (next renewal, period), monotonic seconds
        self._thread: threading.Thread | None = None

    def add(self, lease: object, period: float) -> None:
        """Renew `lease` every `period` seconds from now on."""
        with self._cond:
            self._due[lease] = (time.monotonic() + period, period)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=f"onellm lease renewer ({self._name})")
                self._thread.daemon = True
                self._thread.start()
            self._cond.notify()

    def discard(self, lease: object) -> None:
        """Stop renewing `lease`."""
        with self._cond:
            self._due.pop(lease, None)
            self._cond.notify()

    def __len__(self) -> int:
        with self._cond:
            return len(self._due)

    def _loop(self) -> None:
        while True:
            with self._cond:
                if not self._due:
                    self._thread = None
                    return
                now = time.monotonic()
                soonest = min(due for due, _ in self._due.values())
                if soonest > now:
                    self._cond.wait(soonest - now)
                    continue
                ready = [lease for lease, (due, _) in self._due.items() if due <= now]
                for lease in ready:
                    _, period = self._due[lease]
                    self._due[lease] = (now + period, period)
            for lease in ready:
                try:
                    alive = self._renew(lease)
                except Exception as exc:
                    _log.warning("could not renew %r (tried again in a third of the lease): %s", lease, exc)
                    continue
                if not alive:
                    self.discard(lease)


class RowLease(InstanceLease):
    """A lease kept as a row with an expiry, renewed by its holder every third of its duration.

    A store subclasses it and supplies `_renew_row` (push the row's expiry on; False when another holder has the row)
    and `_release_row` (delete the row). `lost` turns true when a renewal finds that another holder took the row
    (this holder stalled past the expiry, or a clock jumped); the store then refuses saves through this lease.
    """

    def __init__(self, instance_id: str, holder: str, expires_at: int, lease_seconds: float) -> None:
        super().__init__(instance_id)
        self.holder = holder
        """Who holds it: host, process id and a random token, as written in the row."""
        self._expires_at = expires_at
        self._lease_seconds = lease_seconds
        self.lost = False
        """True once another holder took the row over."""

    @property
    def expires_at(self) -> datetime:
        """When the lease lapses unless renewed (by the store's clock)."""
        return from_ticks(self._expires_at)

    async def renew(self) -> None:
        """Push the expiry a full lease duration past the store clock's now (the holder does this on its own).

        Raises:
            InstanceLockedError: the lease was lost to another holder, or was released.
        """
        if not await self._renew_row():
            raise InstanceLockedError(
                f"the lease on instance {self.instance_id!r} is no longer held by this holder",
                instance_id=self.instance_id,
            )

    async def _renew_row(self) -> bool:
        raise NotImplementedError

    async def _release_row(self) -> None:
        raise NotImplementedError

    async def _release(self) -> None:
        try:
            await self._release_row()
        except StorageError as exc:
            # Not raised: it would hide what ended the holder's work, and the row lapses on its own.
            _log.warning(
                "could not give back the lease on instance %r (it lapses by itself within %g s): %s",
                self.instance_id,
                self._lease_seconds,
                exc,
            )

    def __repr__(self) -> str:
        state = "lost" if self.lost else "released" if self.released else "held"
        return f"<{type(self).__name__} {self.instance_id!r} {state} until {self.expires_at.isoformat()}>"
