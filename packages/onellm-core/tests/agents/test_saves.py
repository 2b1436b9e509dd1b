"""How often the loop saves: every turn twice in a durable store, a turn whose calls all run now once in a store that
cannot outlive the process (`volatile`), and the same saved instance either way wherever the run rests or stops."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import onellm
from onellm import StopReason
from onellm.instances import MemoryInstanceStore
from onellm.records import Record

from .conftest import Harness, add_quick_and_slow, calls, cancel_once_finished, make_runtime, say

pytestmark = pytest.mark.anyio

_TIME = re.compile(r'"\d{4}-\d\d-\d\dT[0-9:.]+Z"')
# An id that reads as a number (digits and one `e`) is written quoted: the quotes go with it.
_ID = re.compile(r'"?\b[0-9a-f]{32}\b"?')


class CountingStore(MemoryInstanceStore):
    """A memory store that keeps the text of every save, ids and times replaced by stable names."""

    def __init__(self, *, volatile: bool) -> None:
        super().__init__()
        self.volatile = volatile
        self.saved: list[str] = []

    async def save(self, instance: Any) -> None:
        await super().save(instance)
        text = self.text_of(instance.id)
        assert text is not None
        names: dict[str, str] = {}
        text = text.replace(f'"{instance.id}"', "INSTANCE").replace(instance.id, "INSTANCE")
        text = _ID.sub(lambda m: names.setdefault(m.group().strip('"'), f"MESSAGE{len(names)}"), text)
        self.saved.append(_TIME.sub('"TIME"', text))


def _harness(folder: Path, *, volatile: bool) -> tuple[Harness, CountingStore]:
    ran: list[tuple[str, dict[str, Any]]] = []
    records: list[Record] = []
    store = CountingStore(volatile=volatile)
    runtime, provider = make_runtime(folder, store, ran, records)
    return Harness(runtime, provider, folder, records, ran), store


def _echo_turns(h: Harness, count: int) -> None:
    h.script(*(calls((f"c{i}", "echo", {"text": str(i)}), usage=(10, 5)) for i in range(count)), say("All done."))


def test_the_memory_store_is_volatile_and_a_store_without_the_mark_is_durable() -> None:
    assert MemoryInstanceStore.volatile is True
    assert getattr(onellm.instances.FileInstanceStore, "volatile", False) is False


async def test_a_durable_store_gets_every_turn_twice(tmp_path: Path) -> None:
    h, store = _harness(tmp_path, volatile=False)
    _echo_turns(h, 3)
    result = await h.runtime.run_agent(h.agent(tools="[echo]"))
    assert result.stop_reason is StopReason.WAITING
    # each tool-calling turn with its calls unanswered, then with its results; the final answer with its state
    assert len(store.saved) == 3 * 2 + 1
    assert "result:" not in store.saved[0].split("- id: c0")[1]


async def test_a_volatile_store_gets_a_turn_whose_calls_run_now_once(tmp_path: Path) -> None:
    durable, durable_store = _harness(tmp_path, volatile=False)
    volatile, volatile_store = _harness(tmp_path, volatile=True)
    for h in (durable, volatile):
        _echo_turns(h, 3)
        await h.runtime.run_agent(h.agent(tools="[echo]"))
    # a new instance is saved with its first answer (it is in the store while its calls run); later turns only
    # with their results
    assert len(volatile_store.saved) == 2 + 2 * 1 + 1
    assert volatile_store.saved[:2] == durable_store.saved[:2]
    assert volatile_store.saved == [durable_store.saved[i] for i in (0, 1, 3, 5, 6)]
    assert volatile.ran == durable.ran


async def test_a_held_approval_is_saved_as_in_a_durable_store(tmp_path: Path) -> None:
    saves: list[list[str]] = []
    for volatile in (False, True):
        h, store = _harness(tmp_path, volatile=volatile)
        h.script(
            calls(("a", "echo", {"text": "one"})),
            calls(("d", "deploy", {"target": "prod"}), ("e", "echo", {"text": "meanwhile"})),
        )
        result = await h.runtime.run_agent(h.agent(tools="[echo, deploy]"))
        assert result.stop_reason is StopReason.WAITING_FOR_APPROVAL
        saves.append(store.saved)
    durable, volatile_saves = saves
    # the held turn is saved before its other call runs, with the call and its approval after, and at rest
    assert volatile_saves == durable
    assert len(durable) == 5
    assert "pendingApprovals:" in durable[-1]


async def _cancelled_in_the_second_tool_phase(folder: Path, *, volatile: bool) -> list[str]:
    """The saves of a run cancelled while its second turn's calls run, one of them finished."""
    h, store = _harness(folder, volatile=volatile)
    finished = add_quick_and_slow(h.runtime)
    h.script(calls(("a", "echo", {"text": "one"})), calls(("fast", "quick", {}), ("slow", "slow", {})))
    run = await h.runtime.start_agent(h.agent(tools="[echo, quick, slow]"))
    await cancel_once_finished(run, finished)
    return store.saved


async def test_a_cancelled_tool_phase_leaves_the_instance_a_durable_store_keeps(tmp_path: Path) -> None:
    durable = await _cancelled_in_the_second_tool_phase(tmp_path, volatile=False)
    volatile = await _cancelled_in_the_second_tool_phase(tmp_path, volatile=True)
    assert volatile[-1] == durable[-1]
    assert "cancelled: true" in durable[-1]
    assert "The call was cancelled before it finished." in durable[-1]
    # only the second answer's own save, before its calls ran, is left out
    assert len(durable) == 4
    assert volatile == [durable[i] for i in (0, 1, 3)]
