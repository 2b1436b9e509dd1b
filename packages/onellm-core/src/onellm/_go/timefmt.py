"""Go time layouts for the `date` function (`2006-01-02 15:04:05`), over RFC 3339 strings and datetimes."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

from onellm._go.errors import GoError

__all__ = ["format_date", "go_time_text"]

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{1,2}):(\d{2}))"
)

_MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]  # fmt: skip
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def parse_rfc3339(s: str) -> datetime:
    m = _RFC3339.fullmatch(s)
    if m is None:
        raise GoError(f"date: cannot parse {s!r} as an RFC 3339 time")
    y, mo, d, h, mi, sec, frac, z, sign, oh, om = m.groups()
    if z:
        tz = UTC
    else:
        off = timedelta(hours=int(oh), minutes=int(om))
        tz = timezone(-off if sign == "-" else off)
    micro = int((frac or "0").ljust(9, "0")[:6])
    try:
        return datetime(int(y), int(mo), int(d), int(h), int(mi), int(sec), micro, tzinfo=tz)
    except ValueError as e:
        raise GoError(f"date: {e}") from None


def _to_datetime(t: Any) -> datetime:
    if isinstance(t, datetime):
        return t
    if isinstance(t, date):
        return datetime(t.year, t.month, t.day, tzinfo=UTC)
    if isinstance(t, str):
        return parse_rfc3339(t)
    raise GoError(f"date: expected a time or an RFC 3339 string, got {type(t).__name__}")


def _offset_parts(dt: datetime) -> tuple[str, int, int, int]:
    off = dt.utcoffset() or timedelta(0)
    secs = int(off.total_seconds())
    sign = "-" if secs < 0 else "+"
    secs = abs(secs)
    return sign, secs // 3600, (secs // 60) % 60, secs % 60


def _chunks(layout: str) -> list[tuple[str, str]]:
    """Split a Go layout into (kind, text) pieces; kind '' is literal text."""
    out: list[tuple[str, str]] = []
    i = 0
    lit_start = 0
    n = len(layout)

    def emit(kind: str, length: int) -> None:
        nonlocal i, lit_start
        if i > lit_start:
            out.append(("", layout[lit_start:i]))
        out.append((kind, layout[i : i + length]))
        i += length
        lit_start = i

    while i < n:
        s = layout[i:]
        c = layout[i]
        if s.startswith("January"):
            emit("January", 7)
        elif s.startswith("Jan"):
            emit("Jan", 3)
        elif s.startswith("Monday"):
            emit("Monday", 6)
        elif s.startswith("Mon"):
            emit("Mon", 3)
        elif s.startswith("MST"):
            emit("MST", 3)
        elif s.startswith("002"):
            emit("002", 3)
        elif c == "0" and len(s) > 1 and s[1] in "123456":
            emit(s[:2], 2)
        elif s.startswith("15"):
            emit("15", 2)
        elif c == "1":
            emit("1", 1)
        elif s.startswith("2006"):
            emit("2006", 4)
        elif c == "2":
            emit("2", 1)
        elif s.startswith("_2006"):
            i += 1
            emit("2006", 4)
        elif s.startswith("__2"):
            emit("__2", 3)
        elif s.startswith("_2"):
            emit("_2", 2)
        elif c in "345":
            emit(c, 1)
        elif s.startswith("PM"):
            emit("PM", 2)
        elif s.startswith("pm"):
            emit("pm", 2)
        elif c in "-Z":
            for pat in ("070000", "07:00:00", "0700", "07:00", "07"):
                if s.startswith(c + pat):
                    emit(c + pat, len(pat) + 1)
                    break
            else:
                i += 1
        elif c in ".," and len(s) > 1 and s[1] in "09":
            j = 1
            while j < len(s) and s[j] == s[1]:
                j += 1
            if j < len(s) and s[j].isdigit():
                i += 1
            else:
                emit("frac" + s[1], j)
        else:
            i += 1
    if lit_start < n:
        out.append(("", layout[lit_start:]))
    return out


def format_date(layout: str, t: Any) -> str:
    dt = _to_datetime(t)
    out: list[str] = []
    for kind, text in _chunks(layout):
        if kind == "":
            out.append(text)
        elif kind == "January":
            out.append(_MONTHS[dt.month - 1])
        elif kind == "Jan":
            out.append(_MONTHS[dt.month - 1][:3])
        elif kind == "Monday":
            out.append(_DAYS[dt.weekday()])
        elif kind == "Mon":
            out.append(_DAYS[dt.weekday()][:3])
        elif kind == "MST":
            name = dt.tzname() if dt.tzinfo is not None and dt.utcoffset() == timedelta(0) else None
            if name in ("UTC", "UTC+00:00"):
                out.append("UTC")
            else:
                sign, h, m, _s = _offset_parts(dt)
                out.append(f"{sign}{h:02d}{m:02d}")
        elif kind == "2006":
            out.append(f"{dt.year:04d}")
        elif kind == "06":
            out.append(f"{dt.year % 100:02d}")
        elif kind == "01":
            out.append(f"{dt.month:02d}")
        elif kind == "1":
            out.append(str(dt.month))
        elif kind == "02":
            out.append(f"{dt.day:02d}")
        elif kind == "2":
            out.append(str(dt.day))
        elif kind == "_2":
            out.append(f"{dt.day:2d}")
        elif kind == "002":
            out.append(f"{dt.timetuple().tm_yday:03d}")
        elif kind == "__2":
            out.append(f"{dt.timetuple().tm_yday:3d}")
        elif kind == "15":
            out.append(f"{dt.hour:02d}")
        elif kind in ("3", "03"):
            h12 = dt.hour % 12 or 12
            out.append(str(h12) if kind == "3" else f"{h12:02d}")
        elif kind in ("4", "04"):
            out.append(str(dt.minute) if kind == "4" else f"{dt.minute:02d}")
        elif kind in ("5", "05"):
            out.append(str(dt.second) if kind == "5" else f"{dt.second:02d}")
        elif kind == "PM":
            out.append("PM" if dt.hour >= 12 else "AM")
        elif kind == "pm":
            out.append("pm" if dt.hour >= 12 else "am")
        elif kind[0] in "-Z":
            sign, h, m, s = _offset_parts(dt)
            if kind[0] == "Z" and h == 0 and m == 0 and s == 0:
                out.append("Z")
                continue
            pat = kind[1:]
            if pat == "07":
                out.append(f"{sign}{h:02d}")
            elif pat == "0700":
                out.append(f"{sign}{h:02d}{m:02d}")
            elif pat == "07:00":
                out.append(f"{sign}{h:02d}:{m:02d}")
            elif pat == "070000":
                out.append(f"{sign}{h:02d}{m:02d}{s:02d}")
            else:
                out.append(f"{sign}{h:02d}:{m:02d}:{s:02d}")
        elif kind.startswith("frac"):
            digits = len(text) - 1
            frac = f"{dt.microsecond:06d}000"[:digits]
            if kind[4] == "9":
                frac = frac.rstrip("0")
                out.append(text[0] + frac if frac else "")
            else:
                out.append(text[0] + frac)
    return "".join(out)


def go_time_text(dt: datetime) -> str:
    """Go's `time.Time.String()` layout."""
    return format_date("2006-01-02 15:04:05.999999999 -0700 MST", dt)
