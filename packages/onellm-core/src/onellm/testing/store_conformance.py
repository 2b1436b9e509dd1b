"""The instance store conformance suite: what every `InstanceStore` must do, run unchanged against each store.

Subclass `InstanceStoreConformance` in a test module and say how to open the store under test::

    from onellm.testing.store_conformance import InstanceStoreConformance

    class TestSqliteStore(InstanceStoreConformance):
        def open_store(self, location):
            return SqliteInstanceStore(location / "instances.db")

`open_store(location)` is called with a fresh directory per test; calling it twice with the same location must give
two handles on the same storage (the lease tests use that). Override `close_store` when a handle needs closing.
Set `other_process_factory` to `"package.module:function"` (a function taking the location as a string and
returning a store) to also check that a lease held in another process keeps this one out.

Override `storage_fault(location, fault)` to return a context manager within which the storage fails as a full disk
(`"full"`) or a read-only one (`"read-only"`) would; the suite then checks that every failure is a `StorageError`
naming the operation, with its cause chained, and that nothing already saved is lost. A store that cannot be made to
fail (one in memory) returns None, and those tests are skipped.

The suite needs pytest and anyio's pytest plugin (`@pytest.mark.anyio`); it brings its own `anyio_backend` fixture.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.lowlevel
import pytest

from onellm.errors import InstanceLockedError, StorageError
from onellm.instances import Instance, InstanceStore, InvalidInstanceIdError
from onellm.messages import Message, TextPart

__all__ = ["RICH_INSTANCE", "InstanceStoreConformance", "make_instance"]

# An instance with every header key, unknown keys at every level, comments and a few message shapes.
RICH_INSTANCE = """\
# written by hand
instanceId: rich-1
agentDefinition: agents/clerk.yaml
name: Court clerk
description: Looks up dockets
model: claude-sonnet-4-5
serviceTier: priority
thinking:
  effort: high
  budget: 2048
temperature: 0.3
maxIterations: 40
maxTokens: 4096
systemPrompt: |
  You are the clerk.
  Answer briefly.
references:
- routine: /agent-tools/os/read-file
  tools: [read_file]
  futureRefKey: kept
workingDirectory: "{{ .inputs.root }}"
initialPrompts:
- user:
  - text: "Case {{ .inputs.caseNo }}"
inputs:
  caseNo: 24-1234
headers:
  X-Team: clerks
invocationMode: autonomous
llmTurnLogs: false
missingKey: error
hooks:
- file: hooks/audit.js
  points: [beforeToolCall]
contextStrategy:
  type: compact
  keepLast: 6
requestedModel: claude-sonnet
maxImageSize: 1568
state: waiting_for_approval
callerInstanceId: parent-7
spawnerInstanceId: parent-7
callerToolCallId: call_parent_1
delegationPrompt: Find the docket
runStartedAt: "2026-11-05T09:30:00.1234567Z"
metadata:
  renderedSystemPrompt: |
    You are the clerk.
    Answer briefly.
  futureMeta: 3
error:
  type: RateLimitError
  message: slow down
  futureErrorKey: true
cancelled: false
capabilities:
  readRoots: [/srv/cases]
  writeRoots: []
  shell: {enabled: false}
capabilitiesRecorded: true
askUser:
  toolCallId: call_ask
  messageId: m2
  futureAskKey: x
forkedFrom:
  instanceId: origin-1
  messageId: m0
boundSubscription: {topic: dockets, since: 3}
pendingApprovals:
- toolCallId: call_2
  tool: delete_file
  messageId: m2
  inputs: {path: /srv/cases/old.txt}
  reason: deletes a file
  requestedAt: "2026-11-05T09:31:00Z"
  futureApprovalKey: [1, 2]
compactions:
- strategy: clearToolResults
  at: "2026-11-05T09:30:30Z"
  replacedMessageIds: [m0]
  cost: 0.0012
  atMessageId: m1
  replacedCost: "0.25"
  futureCompactionKey: y
messages:
- id: m1
  user:
  - text: Look up 24-1234
    futureTextKey: 1
  dateTime: "2026-11-05T09:30:01.1234567Z"
  source: {kind: user}
- id: m2  # the held turn
  assistant:
  - text: Checking.
  toolCalls:
  - id: call_1
    tool: get_docket
    inputs: {caseNo: 24-1234}
    result:
    - text: Docket 24-1234 open
    futureCallKey: z
  - id: call_2
    tool: delete_file
    inputs: {path: /srv/cases/old.txt}
  usage:
    model: claude-sonnet-4-5
    inputTokens: 120
    outputTokens: 30
    cost: 0.00081
  futureMessageKey: {a: [1, {b: 2}]}
"""


def make_instance(instance_id: str, **header: Any) -> Instance:
    """A small instance with one user message, for store tests."""
    inst = Instance(id=instance_id, **header)
    inst.messages.append(Message(id=f"{instance_id}-m1", user=[TextPart(text=f"hello from {instance_id}")]))
    return inst


class InstanceStoreConformance:
    """The behaviour every instance store shares. Subclass it and implement `open_store`."""

    other_process_factory: ClassVar[str | None] = None
    """`"module:function"` that opens the store (given the location as a string) in another process, or None."""

    def open_store(self, location: Path) -> InstanceStore:
        """A handle on the store kept at `location` (a fresh directory per test)."""
        raise NotImplementedError("subclasses say how to open the store under test")

    async def close_store(self, store: InstanceStore) -> None:
        """Release a handle opened by `open_store` (nothing by default)."""

    def storage_fault(self, location: Path, fault: str) -> contextlib.AbstractContextManager[object] | None:
        """A context within which the storage at `location` fails as a full (`"full"`) or read-only (`"read-only"`)
        disk would, or None when this store cannot be made to fail (the fault tests are then skipped)."""
        return None

    def _fault(self, location: Path, fault: str) -> contextlib.AbstractContextManager[object]:
        context = self.storage_fault(location, fault)
        if context is None:
            pytest.skip("this store cannot be made to fail")
        return context

    # -- fixtures -------------------------------------------------------------------------------------------------

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def location(self, tmp_path: Path) -> Path:
        where = tmp_path / "store"
        where.mkdir()
        return where

    @pytest.fixture
    async def store(self, location: Path) -> AsyncIterator[InstanceStore]:
        handle = self.open_store(location)
        try:
            yield handle
        finally:
            await self.close_store(handle)

    # -- save and load --------------------------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_load_of_unknown_id_is_none(self, store: InstanceStore) -> None:
        assert await store.load("nobody-here") is None

    @pytest.mark.anyio
    async def test_saved_text_comes_back_byte_for_byte(self, store: InstanceStore) -> None:
        original = Instance.loads(RICH_INSTANCE)
        await store.save(original)
        loaded = await store.load("rich-1")
        assert loaded is not None
        assert loaded.dumps() == RICH_INSTANCE
        assert loaded == original

    @pytest.mark.anyio
    async def test_unknown_keys_survive_a_change(self, store: InstanceStore) -> None:
        inst = Instance.loads(RICH_INSTANCE)
        inst.state = "stopped"
        inst.messages.append(Message(id="m3", user=[TextPart(text="go on")]))
        await store.save(inst)
        loaded = await store.load("rich-1")
        assert loaded is not None
        data = loaded.to_data()
        assert loaded.state == "stopped"
        assert data["boundSubscription"] == {"topic": "dockets", "since": 3}
        assert data["metadata"]["futureMeta"] == 3
        assert data["error"]["futureErrorKey"] is True
        assert data["pendingApprovals"][0]["futureApprovalKey"] == [1, 2]
        assert data["compactions"][0]["futureCompactionKey"] == "y"
        assert data["references"][0]["futureRefKey"] == "kept"
        assert data["messages"][1]["futureMessageKey"] == {"a": [1, {"b": 2}]}
        assert data["messages"][1]["toolCalls"][0]["futureCallKey"] == "z"
        assert data["messages"][0]["user"][0]["futureTextKey"] == 1
        assert [m["id"] for m in data["messages"]] == ["m1", "m2", "m3"]

    @pytest.mark.anyio
    async def test_save_replaces_the_stored_instance(self, store: InstanceStore) -> None:
        inst = make_instance("replace-me", state="running")
        await store.save(inst)
        inst.state = "stopped"
        inst.messages.append(Message(id="replace-me-m2", user=[TextPart(text="second")]))
        await store.save(inst)
        loaded = await store.load("replace-me")
        assert loaded is not None
        assert loaded.state == "stopped"
        assert [m.id for m in loaded.messages] == ["replace-me-m1", "replace-me-m2"]
        assert loaded.dumps() == inst.dumps()

    @pytest.mark.anyio
    async def test_the_store_keeps_no_reference_to_the_saved_object(self, store: InstanceStore) -> None:
        inst = make_instance("detached", state="waiting")
        await store.save(inst)
        inst.state = "error"
        inst.messages.clear()
        loaded = await store.load("detached")
        assert loaded is not None
        assert loaded.state == "waiting"
        assert len(loaded.messages) == 1
        again = await store.load("detached")
        assert again is not loaded
        assert again == loaded

    @pytest.mark.anyio
    async def test_a_save_cancelled_before_it_starts_leaves_the_old_instance(self, store: InstanceStore) -> None:
        inst = make_instance("cancel-me", state="waiting")
        await store.save(inst)
        inst.state = "stopped"
        with anyio.CancelScope() as scope:
            scope.cancel()
            await store.save(inst)
        loaded = await store.load("cancel-me")
        assert loaded is not None
        assert loaded.state == "waiting"

    @pytest.mark.anyio
    async def test_readers_see_the_old_or_the_new_instance(self, store: InstanceStore) -> None:
        inst = make_instance("busy", state="running")
        await store.save(inst)
        written = {inst.dumps()}
        seen: list[str] = []

        async def writer() -> None:
            for n in range(25):
                inst.messages.append(Message(id=f"busy-{n}", user=[TextPart(text="x" * (n * 50))]))
                written.add(inst.dumps())
                await store.save(inst)

        async def reader() -> None:
            for _ in range(25):
                loaded = await store.load("busy")
                assert loaded is not None
                seen.append(loaded.dumps())
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            tg.start_soon(reader)
        assert seen
        assert all(text in written for text in seen)

    # -- ids ------------------------------------------------------------------------------------------------------

    @pytest.mark.anyio
    @pytest.mark.parametrize("bad_id", ["", "a/b", "../up", "x" * 129, "naïve", "a b", "a.yaml"])
    async def test_invalid_ids_are_refused(self, store: InstanceStore, bad_id: str) -> None:
        with pytest.raises(InvalidInstanceIdError):
            await store.save(Instance(id=bad_id))
        with pytest.raises(InvalidInstanceIdError):
            await store.load(bad_id)
        with pytest.raises(InvalidInstanceIdError):
            await store.acquire(bad_id)
        with pytest.raises(InvalidInstanceIdError):
            await store.delete(bad_id)

    @pytest.mark.anyio
    async def test_an_instance_without_an_id_cannot_be_saved(self, store: InstanceStore) -> None:
        with pytest.raises(InvalidInstanceIdError):
            await store.save(Instance(name="anonymous"))

    @pytest.mark.anyio
    async def test_the_longest_valid_id_works(self, store: InstanceStore) -> None:
        long_id = "A-_9" * 32
        await store.save(make_instance(long_id))
        loaded = await store.load(long_id)
        assert loaded is not None
        assert loaded.id == long_id

    # -- list -----------------------------------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_list_is_newest_first(self, store: InstanceStore) -> None:
        for name in ("first", "second", "third"):
            await store.save(make_instance(name))
        assert [s.id for s in await store.list()] == ["third", "second", "first"]
        await store.save(make_instance("first", state="waiting"))
        listed = await store.list()
        assert [s.id for s in listed] == ["first", "third", "second"]
        assert listed[0].modified_at >= listed[1].modified_at >= listed[2].modified_at
        assert listed[0].modified_at.tzinfo is not None

    @pytest.mark.anyio
    async def test_list_reports_the_header(self, store: InstanceStore) -> None:
        await store.save(Instance.loads(RICH_INSTANCE))
        (summary,) = await store.list()
        assert summary.id == "rich-1"
        assert summary.name == "Court clerk"
        assert summary.state == "waiting_for_approval"
        assert summary.model == "claude-sonnet-4-5"
        assert summary.agent_definition == "agents/clerk.yaml"
        assert summary.caller_instance_id == "parent-7"
        assert summary.spawner_instance_id == "parent-7"

    @pytest.mark.anyio
    async def test_list_filters(self, store: InstanceStore) -> None:
        await store.save(make_instance("a1", name="Docket Clerk", state="stopped", caller_instance_id="boss"))
        await store.save(make_instance("a2", name="Mail clerk", state="waiting", caller_instance_id="boss"))
        await store.save(make_instance("a3", name="Summarizer", state="waiting"))
        await store.save(make_instance("a4", state="some_future_state"))
        assert [s.id for s in await store.list(state="waiting")] == ["a3", "a2"]
        assert [s.id for s in await store.list(state="some_future_state")] == ["a4"]
        assert [s.id for s in await store.list(caller="boss")] == ["a2", "a1"]
        assert [s.id for s in await store.list(name_contains="CLERK")] == ["a2", "a1"]
        assert [s.id for s in await store.list(name_contains="clerk", state="stopped")] == ["a1"]
        assert [s.id for s in await store.list(limit=2)] == ["a4", "a3"]
        assert await store.list(limit=0) == []
        assert await store.list(state="nothing-in-this-state") == []

    @pytest.mark.anyio
    async def test_list_modified_since(self, store: InstanceStore) -> None:
        await store.save(make_instance("old"))
        listed = await store.list()
        since = listed[0].modified_at + timedelta(microseconds=1)
        future = datetime.now(UTC) + timedelta(days=1)
        await anyio.sleep(0.01)
        await store.save(make_instance("new"))
        assert [s.id for s in await store.list(modified_since=since)] == ["new"]
        assert [s.id for s in await store.list(modified_since=listed[0].modified_at)] == ["new", "old"]
        assert await store.list(modified_since=future) == []

    @pytest.mark.anyio
    async def test_list_of_an_empty_store_is_empty(self, store: InstanceStore) -> None:
        assert await store.list() == []

    # -- leases ---------------------------------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_a_second_taker_is_refused(self, store: InstanceStore) -> None:
        lease = await store.acquire("leased")
        try:
            with pytest.raises(InstanceLockedError) as caught:
                await store.acquire("leased")
            assert caught.value.instance_id == "leased"
            other = await store.acquire("not-leased")
            await other.release()
        finally:
            await lease.release()
        again = await store.acquire("leased")
        await again.release()

    @pytest.mark.anyio
    async def test_a_lease_is_released_by_its_context(self, store: InstanceStore) -> None:
        async with await store.acquire("ctx") as lease:
            assert lease.instance_id == "ctx"
            assert not lease.released
            with pytest.raises(InstanceLockedError):
                await store.acquire("ctx")
        assert lease.released
        await lease.release()  # a second release is harmless
        async with await store.acquire("ctx"):
            pass

    @pytest.mark.anyio
    async def test_a_lease_keeps_out_another_handle_on_the_same_storage(
        self, store: InstanceStore, location: Path
    ) -> None:
        other = self.open_store(location)
        try:
            lease = await store.acquire("shared")
            with pytest.raises(InstanceLockedError):
                await other.acquire("shared")
            await lease.release()
            taken = await other.acquire("shared")
            with pytest.raises(InstanceLockedError):
                await store.acquire("shared")
            await taken.release()
        finally:
            await self.close_store(other)

    @pytest.mark.anyio
    async def test_a_lease_does_not_block_saving_or_loading(self, store: InstanceStore) -> None:
        async with await store.acquire("working"):
            await store.save(make_instance("working", state="running"))
            loaded = await store.load("working")
            assert loaded is not None
            assert loaded.state == "running"

    def test_a_lease_held_by_another_process_keeps_this_one_out(self, location: Path) -> None:
        factory = self.other_process_factory
        if factory is None:
            pytest.skip("this store gives no factory for another process")
        module, _, function = factory.partition(":")
        script = textwrap.dedent(
            f"""
            import sys, anyio, importlib
            store = getattr(importlib.import_module({module!r}), {function!r})(sys.argv[1])
            async def main():
                lease = await store.acquire("cross-process")
                print("held", flush=True)
                sys.stdin.readline()
                await lease.release()
                print("released", flush=True)
            anyio.run(main)
            """
        )
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        child = subprocess.Popen(
            [sys.executable, "-c", script, str(location)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        stdin, stdout = child.stdin, child.stdout
        assert stdin is not None
        assert stdout is not None

        async def try_take() -> bool:
            store = self.open_store(location)
            try:
                try:
                    lease = await store.acquire("cross-process")
                except InstanceLockedError:
                    return False
                await lease.release()
                return True
            finally:
                await self.close_store(store)

        try:
            assert stdout.readline().strip() == "held"
            assert anyio.run(try_take) is False
            stdin.write("go\n")
            stdin.flush()
            assert stdout.readline().strip() == "released"
            assert anyio.run(try_take) is True
        finally:
            child.kill()
            child.wait(timeout=30)

    # -- faults ---------------------------------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_a_save_whose_text_cannot_be_made_keeps_the_old_instance(self, store: InstanceStore) -> None:
        await store.save(make_instance("kept", state="waiting"))
        broken = make_instance("kept", state="running", extra={"notPlain": object()})
        with pytest.raises(TypeError):
            await store.save(broken)
        loaded = await store.load("kept")
        assert loaded is not None
        assert loaded.state == "waiting"

    @pytest.mark.anyio
    async def test_an_instance_is_kept_under_its_own_id_only(self, store: InstanceStore) -> None:
        first = make_instance("first", state="waiting")
        await store.save(first)
        first.id = "second"
        first.state = "running"
        await store.save(first)
        one, two = await store.load("first"), await store.load("second")
        assert one is not None
        assert two is not None
        assert (one.id, one.state, two.id, two.state) == ("first", "waiting", "second", "running")
        assert sorted(s.id for s in await store.list()) == ["first", "second"]

    @pytest.mark.parametrize("fault", ["full", "read-only"])
    @pytest.mark.anyio
    async def test_a_save_that_fails_keeps_what_was_saved_and_says_why(
        self, store: InstanceStore, location: Path, fault: str
    ) -> None:
        old = make_instance("faulty", state="waiting")
        await store.save(old)
        new = make_instance("faulty", state="running")
        new.messages.append(Message(id="faulty-m2", user=[TextPart(text="more " * 2000)]))
        with self._fault(location, fault):
            with pytest.raises(StorageError) as caught:
                await store.save(new)
            assert caught.value.operation == "save"
            assert caught.value.__cause__ is not None
            loaded = await store.load("faulty")
            assert loaded is not None
            assert loaded.dumps() == old.dumps()
            assert [(s.id, s.state) for s in await store.list()] == [("faulty", "waiting")]
        await store.save(new)
        again = await store.load("faulty")
        assert again is not None
        assert again.dumps() == new.dumps()

    @pytest.mark.anyio
    async def test_a_read_only_store_refuses_leases_and_deletes_and_keeps_the_instance(
        self, store: InstanceStore, location: Path
    ) -> None:
        await store.save(make_instance("frozen", state="waiting"))
        with self._fault(location, "read-only"):
            with pytest.raises(StorageError) as caught:
                await store.acquire("frozen")
            assert caught.value.operation == "acquire"
            with pytest.raises(StorageError) as caught:
                await store.delete("frozen")
            assert caught.value.operation == "delete"
        loaded = await store.load("frozen")
        assert loaded is not None
        async with await store.acquire("frozen"):
            pass

    # -- delete ---------------------------------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_delete_removes_the_instance(self, store: InstanceStore) -> None:
        await store.save(make_instance("doomed"))
        await store.save(make_instance("survivor"))
        assert await store.delete("doomed") is True
        assert await store.load("doomed") is None
        assert [s.id for s in await store.list()] == ["survivor"]
        assert await store.delete("doomed") is False
        assert await store.delete("never-was") is False

    @pytest.mark.anyio
    async def test_an_instance_can_be_saved_again_after_delete(self, store: InstanceStore) -> None:
        await store.save(make_instance("phoenix", state="stopped"))
        await store.delete("phoenix")
        await store.save(make_instance("phoenix", state="waiting"))
        loaded = await store.load("phoenix")
        assert loaded is not None
        assert loaded.state == "waiting"
