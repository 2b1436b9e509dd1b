"""`JsSandboxOptions`: every limit of a JavaScript run, with the defaults of the JavaScript page."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onellm.capabilities import Capabilities, EgressClient
    from onellm.clock import Clock
    from onellm_js._limiter import JsRunLimiter
    from onellm_js._pool import JsWorkerPool
    from onellm_js._sandbox import JsLogLine

__all__ = ["JsSandboxOptions"]

MiB = 1024 * 1024
GiB = 1024 * MiB
# Bytes of engine stack one plain JavaScript call takes in QuickJS-NG (measured: about 600 calls a MiB), so that
# `max_call_depth` plain calls fit. Calls through built-ins (`map`, `sort` callbacks) take more room each.
_STACK_BYTES_PER_CALL = 1800
_MAX_STACK_BYTES = 16 * MiB


@dataclass(frozen=True, slots=True, kw_only=True)
class JsSandboxOptions:
    """Limits and settings of JavaScript runs. A limit that ends a run raises `JsSandboxError` with its kind; the
    script cannot catch it. Limits marked "to the script" are errors the script sees and may catch.

    Two limits are approximations on QuickJS-NG, which counts neither steps nor bytes allocated over a run:
    `fuel` becomes a budget of CPU seconds for the engine's own interrupt (checked between steps: calls, loop
    iterations, regular-expression backtracking), and `max_allocated_bytes` is the engine's ceiling on live memory.
    """

    fuel: int = 200_000_000
    """Engine steps a run may take (kind `fuel`); spent as `fuel / fuel_steps_per_second` CPU seconds."""
    fuel_steps_per_second: int = 40_000_000
    """How many steps one CPU second stands for: what a plain loop runs at on a current x86-64 core."""
    max_allocated_bytes: int = 256 * MiB
    """The engine's memory budget (kind `memory`): live bytes of the engine's heap, caught even when the script
    catches the engine's out-of-memory error."""
    max_host_allocated_bytes: int = 1 * GiB
    """Backstop: growth of the sandbox process's resident memory since the run started (kind `memory`)."""
    time_limit: float = 10.0
    """Wall-clock seconds (kind `time`); a tool's `timeout` shortens it. The host gives up `grace` seconds later."""
    grace: float = 0.25
    """How long past `time_limit` the host waits for the sandbox to stop by itself before it kills the process."""
    max_call_depth: int = 1000
    """Nested calls (a catchable `RangeError`, kind `script` when not caught), enforced through the engine's stack."""
    max_string_length: int = 16 * MiB
    """Longest string `repeat`, `padStart` and `padEnd` make, and that crosses to the host (a `RangeError`)."""
    max_file_bytes: int = 1 * MiB
    """Largest file `ctx.readFile` reads (an error to the script)."""
    max_fetch_bytes: int = 1 * MiB
    """Largest response body `ctx.fetch` keeps (the rest is cut and `truncated` set) and request body it sends."""
    max_host_result_bytes: int = 32 * MiB
    """File text and response bodies one run holds, two bytes a character (a `RangeError` to the script)."""
    max_write_bytes_per_run: int = 8 * MiB
    """Bytes `ctx.writeFile` writes in one run (a `RangeError` to the script)."""
    max_writes_per_run: int = 256
    """Files `ctx.writeFile` writes in one run (a `RangeError` to the script)."""
    max_fetches_per_run: int = 16
    """Requests `ctx.fetch` sends in one run (a `RangeError` to the script)."""
    max_log_chars: int = 64_000
    """Characters `ctx.log` writes in one run; past it one notice, then lines are dropped."""
    max_result_chars: int = 1_000_000
    """Characters of the JSON a run returns (kind `result`)."""
    max_result_depth: int = 64
    """Nesting levels of the JSON a run returns (kind `result`)."""
    max_cost_lines: int = 100
    """`ctx.addCost` calls in one run (a `TypeError` to the script)."""
    max_output_chars: int = 10_240
    """Characters of `console` output kept (head and tail)."""
    limiter: JsRunLimiter | None = None
    """Bounds runs together (kind `busy`); None is `JsRunLimiter.shared()` (8 runs, 2 GiB, a 10 s wait)."""
    pool: JsWorkerPool | None = None
    """The worker processes runs execute in; None is `JsWorkerPool.shared()`."""
    deterministic: bool = False
    """Make `Date.now()`, `new Date()` and `Math.random()` repeat: the clock reads `fixed_time`, randomness is seeded
    with `random_seed`."""
    fixed_time: dt.datetime | None = None
    """The time a deterministic run reads; None is 1970-01-01T00:00:00Z. Timezone-aware."""
    random_seed: int | None = None
    """The seed of `Math.random()` in a deterministic run (None is 0); also seeds a non-deterministic run when set."""
    clock: Clock | None = None
    """The clock `Date` reads; None is the call's runtime clock, or the system clock."""
    egress: Callable[[Capabilities], EgressClient] | None = None
    """How `ctx.fetch` gets its HTTP client for the call's grants; None is `EgressClient.shared(capabilities)`."""
    log: Callable[[JsLogLine], None] | None = None
    """Where `ctx.log` lines go (besides the run's result); None is the `onellm.js` logger at INFO."""

    def __post_init__(self) -> None:
        for name in (
            "fuel",
            "fuel_steps_per_second",
            "max_allocated_bytes",
            "max_host_allocated_bytes",
            "max_call_depth",
            "max_string_length",
            "max_file_bytes",
            "max_fetch_bytes",
            "max_host_result_bytes",
            "max_result_chars",
            "max_result_depth",
            "max_output_chars",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"JsSandboxOptions.{name} must be a positive integer, not {value!r}")
        for name in ("max_write_bytes_per_run", "max_writes_per_run", "max_fetches_per_run", "max_log_chars"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"JsSandboxOptions.{name} must be a non-negative integer, not {value!r}")
        if not isinstance(self.max_cost_lines, int) or self.max_cost_lines < 0:
            raise ValueError(
                f"JsSandboxOptions.max_cost_lines must be a non-negative integer, not {self.max_cost_lines!r}"
            )
        if not self.time_limit > 0:
            raise ValueError(f"JsSandboxOptions.time_limit must be positive, not {self.time_limit!r}")
        if not self.grace >= 0:
            raise ValueError(f"JsSandboxOptions.grace must not be negative, not {self.grace!r}")
        if self.fixed_time is not None and self.fixed_time.tzinfo is None:
            raise ValueError("JsSandboxOptions.fixed_time must be timezone-aware")
        if self.random_seed is not None and not 0 <= self.random_seed < 2**53:
            raise ValueError("JsSandboxOptions.random_seed must be between 0 and 2**53 - 1")

    def replace(self, **changes: object) -> JsSandboxOptions:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @property
    def cpu_seconds(self) -> float:
        """The CPU budget `fuel` stands for."""
        return self.fuel / self.fuel_steps_per_second

    @property
    def stack_bytes(self) -> int:
        """The engine stack `max_call_depth` stands for."""
        return min(_MAX_STACK_BYTES, max(64 * 1024, self.max_call_depth * _STACK_BYTES_PER_CALL))
