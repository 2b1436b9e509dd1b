"""A runtime keeps its instances and records in one SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest

from onellm import Runtime
from onellm.testing import ScriptedProvider, ScriptStep
from onellm_sqlite import SqliteInstanceStore, SqliteRecordSink

pytestmark = pytest.mark.anyio


async def test_a_runs_instance_and_records_land_in_the_file(tmp_path: Path) -> None:
    db = tmp_path / "onellm.db"
    with SqliteInstanceStore(db) as store, SqliteRecordSink(db) as sink:
        runtime = Runtime(store=store, records=[sink], environ={})
        provider = ScriptedProvider("openai").enqueue(ScriptStep.text_with_usage("2, 3 and 5.", 1000, 1000))
        runtime.providers.set("openai", provider)
        result = await runtime.generate("gpt-6-luna", "Name three primes.", max_output_tokens=1000)
        assert result.instance is not None
        instance_id = result.instance.id
        assert instance_id is not None
        saved = await store.load(instance_id)
        assert saved is not None
        assert saved.dumps() == result.instance.dumps()
        assert [s.id for s in await store.list()] == [instance_id]
        kinds = [r.kind for r in await sink.read(instance_id)]
        assert "inference" in kinds
        assert await sink.cost(instance_id) == result.cost.total
        assert result.cost.total > 0
