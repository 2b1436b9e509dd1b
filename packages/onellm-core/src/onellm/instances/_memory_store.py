"""`MemoryInstanceStore`: instances kept as their file text in the process.

For tests, one-shot scripts and runs that must leave nothing behind. It keeps the text a file store would write, so
what `load` returns is a fresh instance read from that text, never the object that was saved.

A save of an instance that never wrote or read its text (a new run's) keeps it as it is (`Instance._freeze`: the header
as a `marshal` dump, the messages themselves, which are immutable once appended) and writes the text when it is first
read: a run whose saves nobody reads writes no text at all. The save still checks what it keeps as writing would, so a
value the file has no form for fails the save, not the read. Any other save writes the text at once, in the pieces the
instance wrote it in (immutable strings, each message's block shared with the instance), so a save of a long
conversation copies nothing of it; the pieces are joined when the text is read.
"""

from __future__ import annotations

import builtins
import operator
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import anyio.lowlevel

from onellm.clock import Clock
from onellm.errors import InstanceLockedError
from onellm.instances._assets import MemoryAssetStore
from onellm.instances._ids import validate_instance_id
from onellm.instances._model import Frozen, Instance
from onellm.instances._store import InstanceLease, InstanceQuery, InstanceSummary, apply_query

__all__ = ["MemoryInstanceStore"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SUMMARY_FIELDS = operator.attrgetter(
    "id", "name", "state", "model", "agent_definition", "caller_instance_id", "spawner_instance_id"
)


@dataclass(slots=True)
class _Entry:
    parts: tuple[str, ...] | None
    """The text in the pieces the instance wrote it in (blocks shared with the instance), joined when read; None
    until `frozen` is written."""
    header: tuple[str | None, ...]
    """The instance's id, name, state, model, agent definition, caller and spawner when saved, for `summary`."""
    saved_at: datetime | int
    """When it was saved: from the store's clock, or in microseconds since the epoch from the system clock (made a
    datetime when a summary asks for it)."""
    frozen: Frozen | None = None
    """The instance as saved, when its text is written on first read."""
    _summary: InstanceSummary | None = None

    @property
    def summary(self) -> InstanceSummary:
        """What `list` reports, made when first asked for."""
        found = self._summary
        if found is None:
            instance_id, name, state, model, definition, caller, spawner = self.header
            assert instance_id is not None
            found = self._summary = InstanceSummary(
                id=instance_id,
                name=name,
                state=state,
                model=model,
                agent_definition=definition,
                caller_instance_id=caller,
                spawner_instance_id=spawner,
                modified_at=self.modified_at,
            )
        return found

    @property
    def modified_at(self) -> datetime:
        """`saved_at` as a datetime."""
        saved = self.saved_at
        if type(saved) is int:
            return _EPOCH + timedelta(microseconds=saved)
        assert isinstance(saved, datetime)
        return saved

    @property
    def text(self) -> str:
        parts = self.parts
        if parts is None:
            frozen = self.frozen
            assert frozen is not None
            # `frozen` stays: the next save looks only at what is new since it, even when each save is read (a chat
            # whose text is read every turn would otherwise look at its whole history every turn).
            parts = self.parts = frozen.thaw().dump_parts()
        if len(parts) != 1:
            parts = self.parts = ("".join(parts),)
        return parts[0]


class _MemoryLease(InstanceLease):
    def __init__(self, instance_id: str, held: set[str]) -> None:
        super().__init__(instance_id)
        self._held = held

    async def _release(self) -> None:
        self._held.discard(self.instance_id)


class MemoryInstanceStore:
    """Instances in a dictionary, by id, as the text of their files.

    Args:
        clock: Where save times come from (default: the system clock, UTC).
    """

    volatile = True
    """What it keeps ends with the process: no later run can find a save of it (see `InstanceStore`)."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock = clock
        self._items: dict[str, _Entry] = {}
        self._held: set[str] = set()
        self._assets: dict[str, MemoryAssetStore] = {}
        self._last: datetime | None = None
        self._last_micros = 0

    def __repr__(self) -> str:
        return f"<MemoryInstanceStore: {len(self._items)} instances>"

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, instance_id: object) -> bool:
        return instance_id in self._items

    def _now(self) -> datetime | int:
        # Saves are strictly ordered in time, even within one clock tick.
        if self._clock is None:
            # The system clock as `datetime.now(UTC)` reads it (microseconds, rounded down), without making a datetime.
            micros = time.time_ns() // 1000
            if micros <= self._last_micros:
                micros = self._last_micros + 1
            self._last_micros = micros
            return micros
        now = self._clock.now()
        if self._last is not None and now <= self._last:
            now = self._last + timedelta(microseconds=1)
        self._last = now
        return now

    def text_of(self, instance_id: str) -> str | None:
        """The stored text of `instance_id`, or None."""
        entry = self._items.get(validate_instance_id(instance_id))
        return None if entry is None else entry.text

    def assets(self, instance_id: str) -> MemoryAssetStore:
        """The asset store of `instance_id`."""
        key = validate_instance_id(instance_id)
        found = self._assets.get(key)
        if found is None:
            found = self._assets[key] = MemoryAssetStore()
        return found

    async def save(self, instance: Instance) -> None:
        await anyio.lowlevel.checkpoint_if_cancelled()
        self.save_sync(instance)

    def save_sync(self, instance: Instance) -> None:
        """Blocking form of `save` (it never blocks: the store is in memory)."""
        instance_id = instance.id
        if type(instance_id) is not str or instance_id not in self._items:  # a key is an id checked before
            instance_id = validate_instance_id(instance_id)
        prior = self._items.get(instance_id)
        frozen = instance._freeze(None if prior is None else prior.frozen)
        parts = instance.dump_parts() if frozen is None else None
        self._items[instance_id] = _Entry(parts, _SUMMARY_FIELDS(instance), self._now(), frozen)

    async def load(self, instance_id: str) -> Instance | None:
        return self.load_sync(instance_id)

    def load_sync(self, instance_id: str) -> Instance | None:
        """Blocking form of `load`."""
        entry = self._items.get(validate_instance_id(instance_id))
        if entry is None:
            return None
        return Instance.loads(entry.text, file=f"memory:{instance_id}")

    async def list(
        self,
        *,
        state: str | None = None,
        caller: str | None = None,
        name_contains: str | None = None,
        modified_since: datetime | None = None,
        limit: int | None = None,
    ) -> builtins.list[InstanceSummary]:
        query = InstanceQuery(
            state=state, caller=caller, name_contains=name_contains, modified_since=modified_since, limit=limit
        )
        return apply_query((entry.summary for entry in self._items.values()), query)

    async def acquire(self, instance_id: str) -> InstanceLease:
        key = validate_instance_id(instance_id)
        if key in self._held:
            raise InstanceLockedError(f"instance {instance_id!r} is leased by another holder", instance_id=key)
        self._held.add(key)
        return _MemoryLease(key, self._held)

    async def delete(self, instance_id: str) -> bool:
        key = validate_instance_id(instance_id)
        self._assets.pop(key, None)
        return self._items.pop(key, None) is not None
