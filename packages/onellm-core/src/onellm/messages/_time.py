"""RFC 3339 timestamps kept to 100 ns (`spec/messages.md`, "Timestamps").

Python's `datetime` holds microseconds, one digit short of the 100 ns the format keeps. `Timestamp` keeps the text it
was read from, so it writes back exactly what it read, and offers the instant as a `datetime` (microseconds), as a
count of 100 ns ticks since the Unix epoch, and with the seventh fractional digit on its own.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, timedelta, timezone
from datetime import datetime as DateTime
from typing import Any

__all__ = ["Timestamp"]

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))\Z"
)
_SHAPE = re.compile(
    r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)"
    r"(?:\.[0-9]{1,9})?(?:[Zz]|[+-][0-2][0-9]:[0-5][0-9])"
).fullmatch
_EPOCH = DateTime(1970, 1, 1, tzinfo=UTC)
_ONE_SECOND = timedelta(seconds=1)
_LAST_SECOND = DateTime.max.replace(microsecond=0, tzinfo=UTC)
_END_OF_TIME = DateTime.max.replace(tzinfo=UTC)
_last_second: tuple[DateTime, DateTime, str] = (_EPOCH, _EPOCH, "")
"""The UTC second `Timestamp.from_datetime` wrote last: its first instant, the first instant after it (`max` for the
last second there is, which `from_datetime` then writes out each time) and its text up to the fraction."""


_last_clock_second: tuple[int, str] = (0, "1970-01-01T00:00:00.")
"""The second `Timestamp._system_now` wrote last, counted from the Unix epoch, and its text up to the fraction."""
_THREE_DIGITS = tuple(f"{n:03d}" for n in range(1000))
"""0 to 999 written with three digits: a microsecond count is two of them (cheaper than formatting the number)."""


class Timestamp:
    """An RFC 3339 timestamp with a `Z` or numeric offset, kept to 100 ns and written back as it was read.

    Equality and hashing are by text (so a value round-trips exactly); ordering is by instant.
    """

    __slots__ = ("_datetime", "_text", "_ticks")

    _text: str
    _datetime: DateTime | None
    _ticks: int

    def __init__(self, text: str) -> None:
        """Check `text`; the instant is worked out on first use, so loading a long conversation stays cheap.

        Raises:
            ValueError: `text` is not an RFC 3339 timestamp with an offset, or names a day or offset that does not exist.
        """
        if type(text) is not str:
            if not isinstance(text, str):
                raise TypeError(f"Timestamp takes a str, not {type(text).__name__}")
            text = str(text)
        if _SHAPE(text) is None:
            raise ValueError(f"not an RFC 3339 timestamp with an offset: {text!r}")
        self._text = text
        self._datetime = None
        self._ticks = -1
        if text[8] == "3" or text[8:10] == "29" or text[-6] in "+-" or text[17] == "6":
            # A day that may not exist in its month, an offset or a leap second: check now rather than on first use.
            self._parse()

    def _parse(self) -> DateTime:
        m = _RFC3339.match(self._text)
        if m is None:
            raise ValueError(f"not an RFC 3339 timestamp with an offset: {self._text!r}")
        year, month, day, hour, minute, second, frac, zulu, sign, oh, om = m.groups()
        hundred_ns = int((frac or "").ljust(7, "0")[:7])
        if zulu:
            tz: timezone = UTC
        else:
            offset = timedelta(hours=int(oh), minutes=int(om))
            if offset >= timedelta(hours=24):
                raise ValueError(f"offset out of range in {self._text!r}")
            tz = timezone(-offset if sign == "-" else offset) if offset else UTC
        sec = int(second)
        if sec == 60:
            # A leap second is kept as text; the instant is the last representable moment of that minute.
            sec = 59
            hundred_ns = 9_999_999
        try:
            dt = DateTime(int(year), int(month), int(day), int(hour), int(minute), sec, hundred_ns // 10, tzinfo=tz)
        except ValueError as exc:
            raise ValueError(f"invalid date or time in {self._text!r}: {exc}") from None
        delta = dt - _EPOCH
        self._datetime = dt
        self._ticks = (delta.days * 86_400 + delta.seconds) * 10_000_000 + hundred_ns
        return dt

    @classmethod
    def now(cls) -> Timestamp:
        """The current time in UTC, with seven fractional digits."""
        return cls.from_ticks(time.time_ns() // 100)

    @classmethod
    def from_ticks(cls, ticks: int) -> Timestamp:
        """The UTC instant `ticks` × 100 ns after the Unix epoch, written with seven fractional digits."""
        seconds, rest = divmod(ticks, 10_000_000)
        dt = _EPOCH + timedelta(seconds=seconds)
        return cls(f"{dt:%Y-%m-%dT%H:%M:%S}.{rest:07d}Z")

    @classmethod
    def from_datetime(cls, value: DateTime, hundred_ns: int = 0) -> Timestamp:
        """An aware `datetime`, plus an optional seventh fractional digit (0-9), in its own offset.

        Raises:
            ValueError: `value` is naive or `hundred_ns` is out of range.
        """
        global _last_second
        if (
            type(value) is DateTime
            and value.tzinfo is UTC
            and cls is Timestamp
            and value.year >= 1000
            and type(hundred_ns) is int
        ):
            if not 0 <= hundred_ns <= 9:
                raise ValueError("hundred_ns is a single digit, 0-9")
            # The clock's usual answer: the text written field by field, and no check of text made from a real
            # instant (what the general path below gives, at a fraction of the cost).
            made = object.__new__(Timestamp)
            # The text up to the seconds is the same for every instant of one second: the last second's is kept, so
            # a clock read many times a second formats only the fraction.
            start, end, head = _last_second
            if not start <= value < end:
                # The ISO form is `YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00` (the year has four digits).
                head = value.isoformat()[:19] + "."
                start = value.replace(microsecond=0)
                end = start + _ONE_SECOND if start < _LAST_SECOND else _END_OF_TIME
                _last_second = (start, end, head)
            # The seven fractional digits: the microseconds and the hundreds of nanoseconds, zeros in front.
            made._text = f"{head}{str(10_000_000 + value.microsecond * 10 + hundred_ns)[1:]}Z"
            made._datetime = None
            made._ticks = -1
            return made
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("a timestamp needs an aware datetime (with a time zone)")
        if not 0 <= hundred_ns <= 9:
            raise ValueError("hundred_ns is a single digit, 0-9")
        offset = value.utcoffset()
        assert offset is not None
        # The year with four digits: `%Y` writes the years before 1000 with fewer on some platforms.
        base = f"{value.year:04d}-{value:%m-%dT%H:%M:%S}.{value.microsecond:06d}{hundred_ns}"
        if not offset:
            return cls(base + "Z")
        total = int(offset.total_seconds()) // 60
        sign = "-" if total < 0 else "+"
        hours, minutes = divmod(abs(total), 60)
        return cls(f"{base}{sign}{hours:02d}:{minutes:02d}")

    @classmethod
    def _system_now(cls) -> Timestamp:
        """`from_datetime(datetime.now(UTC))` (what `SystemClock` gives, read by the runtime every turn) without making
        the `datetime`: the system clock read to the microsecond, floored as `datetime.now` floors it, the seventh
        fractional digit 0."""
        global _last_clock_second
        seconds, nanoseconds = divmod(time.time_ns(), 1_000_000_000)
        micro = nanoseconds // 1000
        second, head = _last_clock_second
        if seconds != second:
            head = DateTime.fromtimestamp(seconds, UTC).isoformat()[:19] + "."
            _last_clock_second = (seconds, head)
        made = object.__new__(Timestamp)
        made._text = f"{head}{_THREE_DIGITS[micro // 1000]}{_THREE_DIGITS[micro % 1000]}0Z"
        made._datetime = None
        made._ticks = -1
        return made

    @classmethod
    def coerce(cls, value: Timestamp | DateTime | str) -> Timestamp:
        """A `Timestamp` from a timestamp, an aware `datetime` or RFC 3339 text."""
        if isinstance(value, Timestamp):
            return value
        if isinstance(value, DateTime):
            return cls.from_datetime(value)
        return cls(value)

    @property
    def text(self) -> str:
        """The RFC 3339 text, exactly as read or written."""
        return self._text

    @property
    def datetime(self) -> DateTime:
        """The instant as an aware `datetime` in the timestamp's own offset (microseconds; the 7th digit dropped)."""
        dt = self._datetime
        return self._parse() if dt is None else dt

    @property
    def ticks(self) -> int:
        """100 ns ticks since 1970-01-01T00:00:00Z."""
        if self._ticks < 0 and self._datetime is None:
            self._parse()
        return self._ticks

    @property
    def hundred_ns(self) -> int:
        """The seventh fractional digit (0-9): what `datetime` cannot hold."""
        return self.ticks % 10

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Timestamp({self._text!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Timestamp):
            return self._text == other._text
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._text)

    def __lt__(self, other: Timestamp) -> bool:
        return self.ticks < other.ticks

    def __le__(self, other: Timestamp) -> bool:
        return self.ticks <= other.ticks

    def __gt__(self, other: Timestamp) -> bool:
        return self.ticks > other.ticks

    def __ge__(self, other: Timestamp) -> bool:
        return self.ticks >= other.ticks

    def same_instant(self, other: Timestamp) -> bool:
        """True when both name the same instant, whatever their offsets or number of digits."""
        return self.ticks == other.ticks

    def __reduce__(self) -> tuple[Any, ...]:
        return (Timestamp, (self._text,))
