"""The record sink conformance suite, run against the JSON-lines sink core ships."""

from __future__ import annotations

from pathlib import Path

from onellm.clock import FakeClock
from onellm.records import JsonlRecordSink, RecordSink
from onellm.testing.sink_conformance import RecordSinkConformance


class TestJsonlRecordSink(RecordSinkConformance):
    def open_sink(self, location: Path, *, clock: FakeClock) -> RecordSink:
        return JsonlRecordSink(location, clock=clock)


class TestFlushedJsonlRecordSink(RecordSinkConformance):
    def open_sink(self, location: Path, *, clock: FakeClock) -> RecordSink:
        return JsonlRecordSink(location, clock=clock, fsync=True)
