"""What a model call leaves behind when it is cancelled at each point, and when the store cannot save a paid answer.

Each cancellation window is hit exactly: a record sink (or a store) waits on an event at the chosen point, the test
cancels the caller's scope while it waits, then lets it go on.
"""

from __future__ import annotations

import errno
from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest

from onellm import Runtime
from onellm.errors import BudgetExceededError, RunCancelledError, StorageError
from onellm.instances import FileInstanceStore, Instance, MemoryInstanceStore
from onellm.records import Record, total_cost
from onellm.runtime import AskResult
from onellm.testing import Pause, ScriptedProvider, ScriptStep

pytestmark = pytest.mark.anyio

# gpt-6-luna at $0.50 per million output tokens: a call capped at 1000 output tokens holds about $0.0005, so a
# spend cap of $0.0008 lets one such call in flight and refuses a second one while the first is held.
CAP = "0.0008"


class GateSink:
    """Keeps every record; the first one that matches `kind` (and `event`) waits until `gate` is set."""

    def __init__(self, kind: str, event: str | None = None) -> None:
        self.kind = kind
        self.event = event
        self.entered = anyio.Event()
        self.gate = anyio.Event()
        self.records: list[Record] = []

    async def write(self, record: Record) -> None:
        if (
            not self.entered.is_set()
            and record.kind == self.kind
            and (self.event is None or getattr(record, "event", None) == self.event)
        ):
            self.entered.set()
            await self.gate.wait()
        self.records.append(record)

    def kinds(self) -> list[tuple[str, str | None]]:
        return [(r.kind, getattr(r, "event", None)) for r in self.records]


def _runtime(sink: Any = None, **options: Any) -> tuple[Runtime, ScriptedProvider, MemoryInstanceStore]:
    store = MemoryInstanceStore()
    provider = ScriptedProvider("openai")
    runtime = Runtime(store=store, records=[sink] if sink is not None else None, environ={}, **options)
    runtime.providers.set("openai", provider)
    return runtime, provider, store


async def _cancel_when(
    entered: anyio.Event, call: Callable[[], Awaitable[Any]], then: anyio.Event | None = None
) -> Any:
    """Run `call` in a scope, cancel the scope once `entered` is set (then set `then`), and return what the call
    returned or raised (a cancellation the scope absorbed comes back as None)."""
    outcome: list[Any] = [None]
    scope = anyio.CancelScope()

    async def run() -> None:
        with scope:
            try:
                outcome[0] = await call()
            except Exception as error:
                outcome[0] = error
            finally:
                entered.set()  # a call that ended before the point must not leave the test waiting

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await entered.wait()
        scope.cancel()
        if then is not None:
            then.set()
    return outcome[0]


def _verbs(runtime: Runtime) -> dict[str, Callable[[], Awaitable[Any]]]:
    chat = runtime.chat("gpt-6-luna", max_output_tokens=1000)
    return {
        "generate": lambda: runtime.generate("gpt-6-luna", "x", max_output_tokens=1000),
        "stream": lambda: runtime.stream("gpt-6-luna", "x", max_output_tokens=1000).result(),
        "chat": lambda: chat.send("x"),
    }


# ----------------------------------------------------------------------------------------------- cancellation windows
@pytest.mark.parametrize("verb", ["generate", "stream", "chat"])
async def test_cancelled_while_the_start_record_is_written(verb: str) -> None:
    sink = GateSink("run", "started")
    runtime, provider, store = _runtime(sink, spend_cap=CAP)
    outcome = await _cancel_when(sink.entered, _verbs(runtime)[verb])
    assert isinstance(outcome, RunCancelledError)
    assert provider.requests == []
    saved = await store.load(outcome.instance.id)
    assert saved is not None
    assert (saved.state, saved.cancelled) == ("stopped", True)
    assert sink.kinds() == [("run", "cancelled")]  # the start record was cut; the run's end is still written
    # the hold was released: a call needing most of the cap goes through
    provider.enqueue(ScriptStep.text_with_usage("ok", 10, 10))
    assert await runtime.ask("gpt-6-luna", "y", max_output_tokens=1000) == "ok"
    assert runtime.spent == Decimal("0.0000060")


@pytest.mark.parametrize("verb", ["generate", "stream", "chat"])
async def test_cancelled_while_the_records_after_the_save_are_written(verb: str) -> None:
    sink = GateSink("message")
    runtime, provider, store = _runtime(sink, spend_cap=CAP)
    provider.enqueue(ScriptStep.text_with_usage("2, 3 and 5.", 13, 7))
    outcome = await _cancel_when(sink.entered, _verbs(runtime)[verb], then=sink.gate)
    assert isinstance(outcome, AskResult)  # saved and paid for before the cancellation: the caller gets it
    assert outcome.text == "2, 3 and 5."
    final = "waiting" if verb == "chat" else "stopped"
    assert sink.kinds() == [("run", "started"), ("message", None), ("inference", None), ("run", "stopped")]
    assert total_cost(sink.records) == runtime.spent == outcome.cost.total == Decimal("0.0000048")
    saved = await store.load(outcome.instance.id or "")
    assert saved is not None
    assert (saved.state, saved.cancelled) == (final, None)


async def test_cancelled_while_the_paid_answer_is_saved() -> None:
    class SlowStore(MemoryInstanceStore):
        def __init__(self) -> None:
            super().__init__()
            self.entered = anyio.Event()
            self.gate = anyio.Event()

        async def save(self, instance: Instance) -> None:
            if not self.entered.is_set():
                self.entered.set()
                await self.gate.wait()
            await super().save(instance)

    store = SlowStore()
    seen: list[Record] = []
    runtime = Runtime(store=store, environ={}, spend_cap=CAP, records=[_Keep(seen)])
    provider = ScriptedProvider("openai").enqueue(ScriptStep.text_with_usage("ok", 13, 7))
    runtime.providers.set("openai", provider)
    outcome = await _cancel_when(
        store.entered, lambda: runtime.generate("gpt-6-luna", "x", max_output_tokens=1000), then=store.gate
    )
    assert isinstance(outcome, AskResult)
    assert store.text_of(outcome.instance.id or "") is not None
    assert total_cost(seen) == runtime.spent == Decimal("0.0000048")


class _Keep:
    def __init__(self, into: list[Record]) -> None:
        self.into = into

    async def write(self, record: Record) -> None:
        self.into.append(record)


async def test_a_cancelled_whole_call_keeps_what_had_arrived() -> None:
    runtime, provider, store = _runtime()
    arrived = anyio.Event()
    provider.enqueue(ScriptStep.text("Green lights ", "at midnight", Pause(event=arrived), " never"))

    outcome: list[Any] = []

    async def run(scope: anyio.CancelScope) -> None:
        with scope:
            try:
                await runtime.generate("gpt-6-luna", "Write a haiku.")
            except RunCancelledError as error:
                outcome.append(error)

    scope = anyio.CancelScope()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run, scope)
        await anyio.wait_all_tasks_blocked()  # both pieces produced, the provider waits at the pause
        scope.cancel()
    [error] = outcome
    saved = await store.load(error.instance.id)
    assert saved is not None
    assert (saved.state, saved.cancelled) == ("stopped", True)
    assert saved.messages[-1].text == "Green lights at midnight"
    assert error.instance.messages[-1].text == "Green lights at midnight"


async def test_a_cancelled_chat_turn_keeps_what_had_arrived_and_the_conversation_goes_on() -> None:
    runtime, provider, _ = _runtime()
    provider.enqueue(ScriptStep.text("Two", Pause()), ScriptStep.text("Three"))
    chat = runtime.chat("gpt-6-luna")
    # Half a second: time enough for the text before the pause to arrive on a loaded machine.
    with pytest.raises(RunCancelledError), anyio.move_on_after(0.5):
        await chat.ask("Name a prime.")
    assert chat.instance.messages[-1].text == "Two"
    assert await chat.ask("And the next?") == "Three"
    assert [m.text for m in chat.instance.messages] == ["Two", "Three"]


async def test_a_provider_error_releases_the_hold() -> None:
    from onellm.errors import RateLimitError

    runtime, provider, _ = _runtime(spend_cap=CAP)
    provider.enqueue(ScriptStep.failure(RateLimitError("slow down", provider="openai")))
    with pytest.raises(RateLimitError):
        await runtime.ask("gpt-6-luna", "x", max_output_tokens=1000)
    provider.enqueue_text("ok")
    assert await runtime.ask("gpt-6-luna", "x", max_output_tokens=1000) == "ok"


async def test_a_refused_call_holds_nothing_and_leaves_no_instance() -> None:
    runtime, provider, store = _runtime(spend_cap=CAP)
    with pytest.raises(BudgetExceededError):
        await runtime.ask("gpt-6-luna", "x")  # the full output allowance is far above the cap
    assert len(store) == 0
    provider.enqueue_text("ok")
    assert await runtime.ask("gpt-6-luna", "x", max_output_tokens=1000) == "ok"


# ------------------------------------------------------------------------------------------------------ disk faults
class FullDiskStore(MemoryInstanceStore):
    """Saves fail as a full disk would (a raw `OSError`, as a third-party store might raise it) until `fixed`."""

    def __init__(self, error: BaseException | None = None) -> None:
        super().__init__()
        self.error = error or OSError(errno.ENOSPC, "No space left on device")
        self.fixed = False

    async def save(self, instance: Instance) -> None:
        if not self.fixed:
            raise self.error
        await super().save(instance)


def _failing(error: BaseException | None = None) -> tuple[Runtime, ScriptedProvider, FullDiskStore, list[Record]]:
    store = FullDiskStore(error)
    seen: list[Record] = []
    runtime = Runtime(store=store, environ={}, spend_cap="1", records=[_Keep(seen)])
    provider = ScriptedProvider("openai")
    runtime.providers.set("openai", provider)
    return runtime, provider, store, seen


@pytest.mark.parametrize("verb", ["generate", "ask", "stream"])
async def test_a_paid_answer_the_store_cannot_save_comes_back_with_the_error(verb: str) -> None:
    runtime, provider, store, seen = _failing()
    provider.enqueue(ScriptStep.text_with_usage("2, 3 and 5.", 13, 7))
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "generate": lambda: runtime.generate("gpt-6-luna", "x"),
        "ask": lambda: runtime.ask("gpt-6-luna", "x"),
        "stream": lambda: runtime.stream("gpt-6-luna", "x").result(),
    }
    with pytest.raises(StorageError) as caught:
        await calls[verb]()
    error = caught.value
    result = error.result
    assert isinstance(result, AskResult)
    assert result.text == "2, 3 and 5."
    assert result.cost.total == Decimal("0.0000048")
    assert error.operation == "save"
    assert str(error) == f"instance {result.instance.id} could not be saved: No space left on device"
    assert isinstance(error.__cause__, OSError)
    assert runtime.spent == Decimal("0.0000048")  # paid for: counted once
    assert total_cost(seen) == runtime.spent
    assert [(r.kind, getattr(r, "where", None)) for r in seen] == [
        ("run", None),
        ("message", None),
        ("inference", None),
        ("error", "save"),
        ("run", None),
    ]
    assert len(store) == 0
    store.fixed = True  # the disk has room again: save the answer kept in memory
    await runtime.services.save(result.instance)
    saved = await store.load(result.instance.id or "")
    assert saved is not None
    assert saved.messages[-1].text == "2, 3 and 5."
    assert saved.state == "stopped"


async def test_a_stream_that_could_not_be_saved_keeps_raising_with_its_result() -> None:
    runtime, provider, _, _ = _failing()
    provider.enqueue(ScriptStep.text("a", "b"))
    answer = runtime.stream("gpt-6-luna", "x")
    pieces = [piece async for piece in _text_until_error(answer)]
    assert pieces == ["a", "b"]
    with pytest.raises(StorageError) as first:
        await answer.result()
    with pytest.raises(StorageError) as second:
        await answer.result()
    assert first.value is second.value
    assert first.value.result.text == "ab"


async def _text_until_error(answer: Any) -> Any:
    try:
        async for piece in answer.text():
            yield piece
    except StorageError:
        return


async def test_a_chat_turn_the_store_cannot_save_can_be_saved_again() -> None:
    runtime, provider, store, _ = _failing()
    provider.enqueue(ScriptStep.text_with_usage("2", 10, 1), ScriptStep.text_with_usage("3", 20, 1))
    chat = runtime.chat("gpt-6-luna")
    with pytest.raises(StorageError) as caught:
        await chat.ask("Name a prime.")
    assert caught.value.result.text == "2"
    assert caught.value.result.instance is chat.instance
    assert [m.text for m in chat.instance.messages] == ["2"]  # the paid answer stays in the conversation
    store.fixed = True
    await chat.save()
    saved = await store.load(chat.instance.id or "")
    assert saved is not None
    assert [m.text for m in saved.messages] == ["2"]
    assert await chat.ask("And the next?") == "3"
    saved = await store.load(chat.instance.id or "")
    assert saved is not None
    assert [m.text for m in saved.messages] == ["2", "3"]


async def test_a_storage_error_from_the_store_passes_through_with_the_result(tmp_path: Path) -> None:
    own = StorageError("the disk is read-only", path=str(tmp_path / "x.yaml"), operation="save")
    runtime, provider, _, _ = _failing(own)
    provider.enqueue(ScriptStep.text_with_usage("ok", 1, 1))
    with pytest.raises(StorageError) as caught:
        await runtime.generate("gpt-6-luna", "x")
    assert caught.value is own
    assert caught.value.path == str(tmp_path / "x.yaml")
    assert caught.value.result.text == "ok"


async def test_a_raw_oserror_names_the_file_store_path(tmp_path: Path) -> None:
    class ReadOnlyStore(FileInstanceStore):
        async def save(self, instance: Instance) -> None:
            raise PermissionError(errno.EROFS, "Read-only file system")

    store = ReadOnlyStore(tmp_path / "runs", durable=False)
    runtime = Runtime(store=store, environ={})
    runtime.providers.set("openai", ScriptedProvider("openai").enqueue_text("ok"))
    with pytest.raises(StorageError) as caught:
        await runtime.generate("gpt-6-luna", "x")
    result = caught.value.result
    path = store.path_of(result.instance.id or "")
    assert caught.value.path == str(path)
    assert str(caught.value) == f"instance {result.instance.id} could not be saved ({path}): Read-only file system"


async def test_a_failed_save_after_a_provider_error_keeps_the_provider_error() -> None:
    from onellm.errors import RateLimitError

    runtime, provider, _, seen = _failing()
    provider.enqueue(ScriptStep.failure(RateLimitError("slow down", provider="openai")))
    with pytest.raises(RateLimitError) as caught:
        await runtime.generate("gpt-6-luna", "x")
    assert any("was not saved" in note for note in getattr(caught.value, "__notes__", []))
    assert [(r.kind, getattr(r, "where", None)) for r in seen] == [
        ("run", None),
        ("error", "model call"),
        ("error", "save"),
        ("run", None),
    ]
    assert runtime.spent == 0


async def test_a_cancelled_call_the_store_cannot_save_still_raises_run_cancelled() -> None:
    runtime, provider, _, _ = _failing()
    provider.enqueue(ScriptStep.text("partial", Pause()))
    # Half a second: time enough for the text before the pause to arrive on a loaded machine.
    with pytest.raises(RunCancelledError) as caught, anyio.move_on_after(0.5):
        await runtime.generate("gpt-6-luna", "x")
    assert caught.value.instance.messages[-1].text == "partial"
    assert any("was not saved" in note for note in getattr(caught.value, "__notes__", []))


async def test_a_cancelled_embeddings_call_still_records_what_it_paid_for() -> None:
    sink = GateSink("inference")
    runtime, provider, _ = _runtime(sink, spend_cap=CAP)
    provider.enqueue(ScriptStep.embedding([0.5, 0.5], input_tokens=1000))
    outcome = await _cancel_when(sink.entered, lambda: runtime.embed("embedding-small", "x"), then=sink.gate)
    assert outcome == [0.5, 0.5]
    assert total_cost(sink.records) == runtime.spent == Decimal("0.00002")


async def test_an_answer_that_does_not_fit_the_output_type_is_still_recorded_as_paid() -> None:
    from dataclasses import dataclass

    from onellm.errors import MalformedResponseError

    @dataclass
    class Invoice:
        customer: str

    seen: list[Record] = []
    runtime, provider, store = _runtime(_Keep(seen), spend_cap=CAP)
    provider.enqueue(ScriptStep.text_with_usage('{"customer": 5}', 13, 7))
    with pytest.raises(MalformedResponseError):
        await runtime.ask("gpt-6-luna", "x", output=Invoice, max_output_tokens=1000)
    assert [r.kind for r in seen] == ["run", "message", "inference", "error", "run"]
    assert total_cost(seen) == runtime.spent == Decimal("0.0000048")
    [summary] = await store.list()
    assert summary.state == "error"
