"""Monitors: what `monitor_agent` arms on an agent, and when one fires.

A monitor has up to four conditions, combined with OR: `contextAt` (the watched agent's context, its latest model
call's input and output tokens, reaches a token count such as `400k`, or a percentage of its model's window such as
`80%`), `turns` (that many more model turns), `onFinish` (the agent comes to rest) and `elapsed` (that long after
arming, `30m`, `2h`). The first to hold fires it, once, and it disarms; arming again on the same agent replaces it. It
belongs to the agent that armed it (the watcher), which gets the alert as a message from the runtime, or from
`await_monitor` when it is blocked there. `elapsed` only reports: it never stops the watched agent.

Monitors live in the runtime that armed them, for the life of the process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from onellm.errors import ArgumentError

__all__ = ["Alert", "Monitor", "context_tokens", "duration_text", "parse_context_at", "parse_duration"]

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])")
_TOKENS = re.compile(r"^(\d+(?:\.\d+)?)\s*([kKmM]?)$")
_MAX_SECONDS = 366 * 86400.0


def parse_duration(value: Any, name: str) -> float:
    """Seconds from `90`, `90s`, `30m`, `2h`, `1h30m` or `1d`.

    Raises:
        ArgumentError: naming the argument, for anything else (or a duration of zero or over a year).
    """
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        elif text and _DURATION.sub("", text) == "":
            seconds = sum(float(n) * _UNITS[u] for n, u in _DURATION.findall(text))
    if seconds is None or seconds != seconds:
        raise ArgumentError(
            f"is not a duration: {value!r}; give seconds, or a number with a unit such as 90s, 30m, 2h or 1h30m",
            [name],
        )
    if not 0 < seconds <= _MAX_SECONDS:
        raise ArgumentError(f"must be more than zero and at most a year, not {value!r}", [name])
    return seconds


def parse_context_at(value: Any) -> tuple[int | None, Decimal | None]:
    """(tokens, percent) from `400000`, `400k`, `1.2m` or `80%`.

    Raises:
        ArgumentError: naming `contextAt`, for anything else.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise ArgumentError(f"must be a token count of 1 or more, not {value}", ["contextAt"])
        return value, None
    if isinstance(value, str):
        text = value.strip().replace(",", "").replace("_", "")
        if text.endswith("%"):
            try:
                percent = Decimal(text[:-1].strip())
            except InvalidOperation:
                percent = None
            if percent is not None and percent.is_finite() and 0 < percent <= 100:
                return None, percent
            raise ArgumentError(f"is not a percentage of the window between 0 and 100: {value!r}", ["contextAt"])
        match = _TOKENS.match(text)
        if match:
            amount = Decimal(match.group(1)) * {"": 1, "k": 1000, "m": 1_000_000}[match.group(2).lower()]
            if amount >= 1:
                return int(amount), None
    raise ArgumentError(
        f"is not a token count (400000, 400k, 1.2m) or a percentage of the window (80%): {value!r}", ["contextAt"]
    )


def context_tokens(messages: Any) -> tuple[int | None, str | None]:
    """(input plus output tokens of the latest model call, its message id), from the newest message with usage."""
    for message in reversed(messages):
        usage = message.usage
        if usage is not None:
            total = (
                usage.input_tokens
                + usage.cache_read_input_tokens
                + usage.cache_creation_input_tokens
                + usage.output_tokens
            )
            return total, message.id
    return None, None


@dataclass(slots=True)
class Alert:
    """A fired monitor, as the watcher reads it."""

    watcher: str
    target: str
    condition: str
    text: str
    state: str | None
    context: int | None

    def to_data(self) -> dict[str, Any]:
        return {
            "agentId": self.target,
            "condition": self.condition,
            "state": self.state,
            "contextTokens": self.context,
            "alert": self.text,
        }


@dataclass(slots=True)
class Monitor:
    """One armed monitor."""

    watcher: str
    """The agent that armed it."""
    target: str
    """The agent it watches."""
    armed_at: datetime
    context_tokens: int | None = None
    context_percent: Decimal | None = None
    turns: int | None = None
    on_finish: bool = False
    elapsed: float | None = None
    """Seconds after `armed_at`."""
    turns_seen: int = 0
    window: int | None = None
    """The watched model's context window, for `context_percent`."""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def arm(cls, watcher: str, target: str, now: datetime, arguments: dict[str, Any]) -> Monitor | None:
        """A monitor from `monitor_agent`'s arguments; None when no condition is given (a status request).

        Raises:
            ArgumentError: a condition that cannot be read, naming it.
        """
        monitor = cls(watcher=watcher, target=target, armed_at=now)
        given = False
        if arguments.get("contextAt") is not None:
            monitor.context_tokens, monitor.context_percent = parse_context_at(arguments["contextAt"])
            given = True
        turns = arguments.get("turns")
        if turns is not None:
            if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
                raise ArgumentError(f"must be a whole number of 1 or more, not {turns!r}", ["turns"])
            monitor.turns = turns
            given = True
        on_finish = arguments.get("onFinish")
        if on_finish is not None:
            if not isinstance(on_finish, bool):
                raise ArgumentError(f"must be true or false, not {on_finish!r}", ["onFinish"])
            monitor.on_finish = on_finish
            given = given or on_finish
        if arguments.get("elapsed") is not None:
            monitor.elapsed = parse_duration(arguments["elapsed"], "elapsed")
            given = True
        return monitor if given else None

    def describe(self) -> dict[str, Any]:
        """The armed conditions, as `monitor_agent` reports them."""
        out: dict[str, Any] = {}
        if self.context_tokens is not None:
            out["contextAt"] = self.context_tokens
        if self.context_percent is not None:
            out["contextAt"] = f"{self.context_percent}%"
        if self.turns is not None:
            out["turns"] = self.turns
            out["turnsSoFar"] = self.turns_seen
        if self.on_finish:
            out["onFinish"] = True
        if self.elapsed is not None:
            out["elapsed"] = duration_text(self.elapsed)
        out["armedAt"] = self.armed_at.isoformat().replace("+00:00", "Z")
        return out

    def threshold(self) -> int | None:
        """The context, in tokens, at which `contextAt` holds (None when it is not armed or the window is unknown)."""
        if self.context_tokens is not None:
            return self.context_tokens
        if self.context_percent is not None and self.window:
            return int(self.window * self.context_percent / 100)
        return None

    def deadline_passed(self, now: datetime) -> bool:
        return self.elapsed is not None and (now - self.armed_at).total_seconds() >= self.elapsed

    def seconds_left(self, now: datetime) -> float | None:
        if self.elapsed is None:
            return None
        return max(0.0, self.elapsed - (now - self.armed_at).total_seconds())


def duration_text(seconds: float) -> str:
    """`1h30m` for 5400 seconds."""
    whole = int(seconds)
    if whole != seconds:
        return f"{seconds:g}s"
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if whole >= size:
            parts.append(f"{whole // size}{unit}")
            whole %= size
    return "".join(parts) or "0s"
