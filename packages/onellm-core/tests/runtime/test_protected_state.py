"""The runtime's own state is out of the file tools' reach (`docs/capabilities.md`, "Protected state").

A model that could read the instance store would see other agents' transcripts; one that could write it could rewrite
its own transcript, approvals and audit records. `Runtime.capabilities` adds the store's and the record sinks'
directories to whatever the grant protects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onellm import Runtime
from onellm.capabilities import Capabilities
from onellm.errors import CapabilityDeniedError
from onellm.instances import FileInstanceStore, Instance, MemoryInstanceStore
from onellm.records import JsonlRecordSink
from onellm.tools import ToolContext
from onellm.tools.builtin import builtin_tools

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hello')\n")
    return root.resolve()


def _runtime(work: Path) -> Runtime:
    store = FileInstanceStore(work / "state" / "instances")
    Instance(id="other-agent", name="secret transcript").save(store.directory / "other-agent.yaml")
    sink = JsonlRecordSink(work / "state" / "records")
    sink.directory.mkdir(parents=True, exist_ok=True)
    (sink.directory / "_runtime.jsonl").write_text('{"kind":"call"}\n')
    return Runtime(store=store, records=[sink], capabilities=Capabilities.files(work), environ={})


async def _call(caps: Capabilities, work: Path, name: str, arguments: dict[str, Any]) -> Any:
    tools = {t.name: t for t in builtin_tools()}
    ctx = ToolContext(capabilities=caps, working_directory=work)
    return await tools[name].invoke(arguments, ctx)


def test_the_store_and_sink_directories_are_protected(work: Path) -> None:
    caps = _runtime(work).capabilities
    for path in (
        work / "state" / "instances" / "other-agent.yaml",
        work / "state" / "records" / "_runtime.jsonl",
        work / "state" / "instances" / "new.yaml",
    ):
        with pytest.raises(CapabilityDeniedError):
            caps.resolve_read(path)
        with pytest.raises(CapabilityDeniedError):
            caps.resolve_write(path)
    assert caps.resolve_read(work / "src" / "main.py")
    assert caps.resolve_write(work / "src" / "new.py")


def test_the_grant_given_is_kept_and_a_new_grant_is_protected_too(work: Path, tmp_path: Path) -> None:
    runtime = _runtime(work)
    assert runtime.capabilities is runtime.capabilities  # worked out once while nothing changes
    assert runtime.capabilities.read_roots == Capabilities.files(work).read_roots
    runtime.capabilities = Capabilities.files(work, tmp_path)
    with pytest.raises(CapabilityDeniedError):
        runtime.capabilities.resolve_read(work / "state" / "instances" / "other-agent.yaml")
    runtime.records.add(JsonlRecordSink(work / "audit"))
    with pytest.raises(CapabilityDeniedError):
        runtime.capabilities.resolve_write(work / "audit" / "x.jsonl")


def test_a_runtime_without_files_on_disk_protects_nothing_more() -> None:
    runtime = Runtime(store=MemoryInstanceStore(), capabilities=Capabilities.files("."), environ={})
    assert runtime.capabilities.protected_paths == Capabilities.files(".").protected_paths


async def test_the_file_tools_cannot_reach_the_runtime_state(work: Path) -> None:
    caps = _runtime(work).capabilities
    read = await _call(caps, work, "read_file", {"path": "state/instances/other-agent.yaml"})
    assert read.is_error
    assert "protected" in read.text
    wrote = await _call(caps, work, "write_file", {"path": "state/records/_runtime.jsonl", "content": "{}\n"})
    assert wrote.is_error
    assert (work / "state" / "records" / "_runtime.jsonl").read_text() == '{"kind":"call"}\n'
    listing = await _call(caps, work, "list_files", {"recursive": True})
    assert not listing.is_error
    assert "other-agent" not in listing.text
    assert "_runtime" not in listing.text
    assert "main.py" in listing.text
    found = await _call(caps, work, "search_files_regex", {"pattern": "secret transcript"})
    assert "other-agent" not in found.text
