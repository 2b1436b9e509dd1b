"""`Timestamp._system_now`, the runtime's reading of the system clock: the text `Timestamp.from_datetime` writes for what
`datetime.now(UTC)` gives at the same instant, in every second (the text up to the fraction is kept per second)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import onellm
from onellm.clock import FakeClock
from onellm.messages import Timestamp


@pytest.mark.parametrize(
    "ns",
    [
        1_780_000_000_123_456_789,
        1_780_000_000_999_999_999,  # the last microsecond of that second
        1_780_000_001_000_000_000,  # the next second
        1_780_000_000_000_000_999,  # back to the first one
        1_700_000_000_000_000_000,
        0,
        -1_500,  # before the epoch
    ],
)
def test_the_text_is_what_the_datetime_gives(monkeypatch: pytest.MonkeyPatch, ns: int) -> None:
    monkeypatch.setattr("onellm.messages._time.time.time_ns", lambda: ns)
    micro = ns // 1000  # `datetime.now` floors the clock to the microsecond
    expected = Timestamp.from_datetime(
        datetime.fromtimestamp(micro // 1_000_000, UTC).replace(microsecond=micro % 1_000_000)
    )
    stamp = Timestamp._system_now()
    assert stamp.text == expected.text
    assert stamp == expected
    assert stamp.datetime == expected.datetime
    assert stamp.ticks == expected.ticks


def test_a_runtime_reads_its_own_clock_unless_it_is_the_system_one() -> None:
    clock = FakeClock()
    assert onellm.Runtime(clock=clock, environ={})._services.now() == Timestamp.from_datetime(clock.now())
    before = datetime.now(UTC)
    stamp = onellm.Runtime(environ={})._services.now()
    after = datetime.now(UTC)
    assert Timestamp.from_datetime(before) <= stamp <= Timestamp.from_datetime(after)
    assert stamp.text.endswith("0Z")
