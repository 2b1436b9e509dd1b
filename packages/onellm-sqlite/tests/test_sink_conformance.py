"""The record sink conformance suite, unchanged, on a SQLite file shared with the instance store."""

from __future__ import annotations

from pathlib import Path

from onellm.clock import FakeClock
from onellm.instances import InstanceStore
from onellm.records import RecordSink
from onellm.testing.sink_conformance import RecordSinkConformance
from onellm_sqlite import SqliteInstanceStore, SqliteRecordSink


class TestSqliteRecordSink(RecordSinkConformance):
    def open_sink(self, location: Path, *, clock: FakeClock) -> RecordSink:
        return SqliteRecordSink(location / "onellm.db", clock=clock, durable=False)

    async def close_sink(self, sink: RecordSink) -> None:
        assert isinstance(sink, SqliteRecordSink)
        sink.close()

    def open_store(self, location: Path) -> InstanceStore:
        return SqliteInstanceStore(location / "onellm.db", durable=False)

    async def close_store(self, store: InstanceStore) -> None:
        assert isinstance(store, SqliteInstanceStore)
        store.close()
