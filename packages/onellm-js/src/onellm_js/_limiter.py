"""`JsRunLimiter`: how many JavaScript runs may execute at once, and how many bytes they may hold together.

A model can start many runs in one turn (tool files and `run_javascript` are parallel-safe), so the runs of a host
share one limiter (by default `JsRunLimiter.shared()`: 8 runs, 2 GiB, a 10 s wait). The rules, from the JavaScript page:

- A run waits at most `max_wait` seconds for a slot, then fails with kind `busy`; it never waits for ever.
- Tools and `run_javascript` leave `reserved_for_interceptors` slots free, so hooks do not fail closed while a flood of
  tool runs holds the rest; one caller (the root instance of a tree: sub-agents count against the instance that
  started them) holds at most `max_runs_per_caller` of the others.
- Hook calls may use every slot, at most `max_interceptors_per_owner` per owner, and one slot always stays free for
  hooks of other owners.
- Calls of one decider's logic share a cap (`max_runs_per_decider`), and decider logic as a whole uses at most half
  the slots.
- Loading a file takes a slot too.
- A run the host gave up on keeps its slot until its process has really ended.
- The byte budget counts, per run, the larger of the file text and response bodies it holds and the growth of its
  sandbox process; the run that passes `max_total_bytes` fails with `busy`.

The limiter is shared across threads and event loops: its state is behind a lock, and a waiting run polls (a few
milliseconds apart) rather than sleeping on a primitive of one event loop.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import ClassVar, Literal

from onellm_js._errors import JsFailure, JsSandboxError

__all__ = ["JsLease", "JsRunLimiter", "JsSlot"]

SlotKind = Literal["tool", "hook", "decider", "load"]


@dataclass(frozen=True, slots=True)
class JsSlot:
    """What a run asks the limiter for."""

    kind: SlotKind = "tool"
    """`tool` (tool files and `run_javascript`), `hook`, `decider` (decider logic) or `load` (loading a file)."""
    caller: str | None = None
    """The root instance id of the run's tree (tools); None for the host itself, which has no per-caller cap."""
    owner: str | None = None
    """Whose hooks these are (hooks), or the decider's name (decider logic)."""


class JsLease:
    """A slot held by one run. `release()` gives it back; `charge()` reports the bytes the run holds."""

    __slots__ = ("_limiter", "bytes", "released", "slot")

    def __init__(self, limiter: JsRunLimiter, slot: JsSlot) -> None:
        self._limiter = limiter
        self.slot = slot
        self.bytes = 0
        self.released = False

    def charge(self, held: int) -> bool:
        """Record that the run now holds `held` bytes (the larger of what it reported before and this). Returns False
        when the runs together now hold more than the limiter allows: this run must fail with `busy`."""
        return self._limiter._charge(self, held)

    def release(self) -> None:
        self._limiter._release(self)


class JsRunLimiter:
    """Bounds JavaScript runs together: slots, per-caller and per-owner shares, a byte budget and a wait."""

    _shared: ClassVar[JsRunLimiter | None] = None
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        max_concurrent_runs: int = 8,
        max_total_bytes: int = 2 * 1024 * 1024 * 1024,
        max_wait: float = 10.0,
        *,
        reserved_for_interceptors: int = 2,
        max_runs_per_caller: int = 3,
        max_interceptors_per_owner: int = 2,
        max_runs_per_decider: int = 2,
    ) -> None:
        """Create a limiter.

        Args:
            max_concurrent_runs: Runs executing at once.
            max_total_bytes: Bytes the runs may hold together.
            max_wait: Seconds a run waits for a slot before it fails with `busy`.
            reserved_for_interceptors: Slots tool runs leave to hooks and decider logic.
            max_runs_per_caller: Tool runs one caller (root instance) holds at once.
            max_interceptors_per_owner: Hook runs one owner holds at once.
            max_runs_per_decider: Runs of one decider's logic at once.
        """
        if max_concurrent_runs < 1:
            raise ValueError("max_concurrent_runs must be at least 1")
        if max_total_bytes < 1:
            raise ValueError("max_total_bytes must be positive")
        if max_wait < 0:
            raise ValueError("max_wait must not be negative")
        for name, value in (
            ("reserved_for_interceptors", reserved_for_interceptors),
            ("max_runs_per_caller", max_runs_per_caller),
            ("max_interceptors_per_owner", max_interceptors_per_owner),
            ("max_runs_per_decider", max_runs_per_decider),
        ):
            if value < 0:
                raise ValueError(f"{name} must not be negative")
        self.max_concurrent_runs = max_concurrent_runs
        self.max_total_bytes = max_total_bytes
        self.max_wait = max_wait
        self.reserved_for_interceptors = min(reserved_for_interceptors, max_concurrent_runs - 1)
        self.max_runs_per_caller = max_runs_per_caller
        self.max_interceptors_per_owner = max_interceptors_per_owner
        self.max_runs_per_decider = max_runs_per_decider
        self._lock = threading.Lock()
        self._leases: list[JsLease] = []
        self._abandoned = 0

    @classmethod
    def shared(cls) -> JsRunLimiter:
        """The process-wide limiter sandboxes use when their options name none: 8 runs, 2 GiB, a 10 s wait."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    # ------------------------------------------------------------------------------------------------ state

    @property
    def active_runs(self) -> int:
        """Runs holding a slot now (abandoned runs whose process has not ended included)."""
        with self._lock:
            return len(self._leases)

    @property
    def charged_bytes(self) -> int:
        """Bytes the active runs hold together, as last reported."""
        with self._lock:
            return sum(lease.bytes for lease in self._leases)

    @property
    def abandoned_runs(self) -> int:
        """Runs of this limiter the host gave up on (time limit passed, caller cancelled, backstop hit) and killed."""
        with self._lock:
            return self._abandoned

    def _note_abandoned(self) -> None:
        with self._lock:
            self._abandoned += 1

    # ------------------------------------------------------------------------------------------------ slots

    def _count(self, kind: SlotKind, *, caller: str | None = None, owner: str | None = None) -> int:
        n = 0
        for lease in self._leases:
            s = lease.slot
            if s.kind != kind:
                continue
            if caller is not None and s.caller != caller:
                continue
            if owner is not None and s.owner != owner:
                continue
            n += 1
        return n

    def _refusal(self, slot: JsSlot) -> str | None:
        """Why `slot` cannot start now, or None when it can. Called with the lock held."""
        active = len(self._leases)
        free = self.max_concurrent_runs - active
        if free <= 0:
            return f"all {self.max_concurrent_runs} JavaScript run slots are in use"
        if slot.kind == "tool":
            if free <= self.reserved_for_interceptors:
                return (
                    f"the last {self.reserved_for_interceptors} of {self.max_concurrent_runs} run slots are kept "
                    "for hooks and decider logic"
                )
            if slot.caller is not None and self._count("tool", caller=slot.caller) >= self.max_runs_per_caller:
                return f"this caller already holds {self.max_runs_per_caller} JavaScript runs"
        elif slot.kind == "hook":
            mine = self._count("hook", owner=slot.owner)
            if mine >= self.max_interceptors_per_owner:
                return f"this owner's hooks already hold {self.max_interceptors_per_owner} JavaScript runs"
            if mine > 0 and free <= 1:
                return "the last run slot is kept for hooks of other owners"
        elif slot.kind == "decider":
            if self._count("decider", owner=slot.owner) >= self.max_runs_per_decider:
                return f"this decider's logic already holds {self.max_runs_per_decider} JavaScript runs"
            if self._count("decider") >= max(1, self.max_concurrent_runs // 2):
                return "decider logic already holds half the JavaScript run slots"
        return None

    def try_acquire(self, slot: JsSlot) -> JsLease | None:
        """Take a slot now if the rules allow it, else None."""
        with self._lock:
            if self._refusal(slot) is not None:
                return None
            lease = JsLease(self, slot)
            self._leases.append(lease)
            return lease

    async def acquire(self, slot: JsSlot) -> JsLease:
        """Wait for a slot (at most `max_wait` seconds).

        Raises:
            JsSandboxError: kind `busy`, saying which rule kept the run waiting.
        """
        import anyio

        deadline = time.monotonic() + self.max_wait
        delay = 0.002
        while True:
            with self._lock:
                reason = self._refusal(slot)
                if reason is None:
                    lease = JsLease(self, slot)
                    self._leases.append(lease)
                    return lease
            left = deadline - time.monotonic()
            if left <= 0:
                raise JsSandboxError(
                    f"busy: no JavaScript run slot came free within {self.max_wait:g} s ({reason})",
                    kind=JsFailure.BUSY,
                )
            await anyio.sleep(min(delay, left))
            delay = min(delay * 2, 0.05)

    def _charge(self, lease: JsLease, held: int) -> bool:
        with self._lock:
            if held > lease.bytes:
                lease.bytes = held
            return sum(item.bytes for item in self._leases) <= self.max_total_bytes

    def _release(self, lease: JsLease) -> None:
        with self._lock:
            if lease.released:
                return
            lease.released = True
            self._leases = [item for item in self._leases if item is not lease]
