"""The instance store protocol, with the summary, query and lease types every store shares.

Every store behaves the same way (the conformance suite in `onellm.testing.store_conformance` checks it):

- `save` replaces the stored instance atomically: a reader sees the old instance or the new one.
- `load` returns an instance whose text (`dumps()`) equals what was saved, unknown keys included; None for an
  unknown id.
- `list` returns summaries newest first, filtered by state, caller, name (contains, case-insensitive), modified
  since, and limited in number.
- `acquire` hands out one lease per instance; a second taker, in this process or another one on the same storage,
  gets `InstanceLockedError` until the lease is released.
- `delete` removes the instance (records kept elsewhere stay).
- Ids are validated: 1 to 128 ASCII letters, digits, `-` and `_`.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from onellm.instances._model import Instance

__all__ = ["InstanceLease", "InstanceQuery", "InstanceStore", "InstanceSummary", "apply_query"]


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceSummary:
    """What `list` reports about one stored instance."""

    id: str
    """The instance id."""
    name: str | None = None
    """The definition's name."""
    state: str | None = None
    """The lifecycle state as written."""
    model: str | None = None
    """The resolved model."""
    agent_definition: str | None = None
    """The definition the run started from."""
    caller_instance_id: str | None = None
    """The instance that last messaged this one."""
    spawner_instance_id: str | None = None
    """The instance that started this one."""
    modified_at: datetime
    """When the instance was last saved (aware, UTC)."""

    @classmethod
    def of(cls, instance_id: str, header: Any, modified_at: datetime) -> InstanceSummary:
        """A summary from an instance's header as plain data (keys as the file writes them)."""
        h = header if isinstance(header, dict) else {}

        def text(key: str) -> str | None:
            value = h.get(key)
            return value if isinstance(value, str) else None

        return cls(
            id=instance_id,
            name=text("name"),
            state=text("state"),
            model=text("model"),
            agent_definition=text("agentDefinition"),
            caller_instance_id=text("callerInstanceId"),
            spawner_instance_id=text("spawnerInstanceId"),
            modified_at=modified_at,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceQuery:
    """Filters for `InstanceStore.list`. Every filter given must match."""

    state: str | None = None
    """Only instances in this state (compared as written)."""
    caller: str | None = None
    """Only instances whose `callerInstanceId` is this."""
    name_contains: str | None = None
    """Only instances whose name contains this text, ignoring case."""
    modified_since: datetime | None = None
    """Only instances saved at or after this time."""
    limit: int | None = None
    """At most this many summaries (the newest)."""

    def __post_init__(self) -> None:
        if self.limit is not None and (not isinstance(self.limit, int) or self.limit < 0):
            raise ValueError(f"limit must be a whole number of zero or more, not {self.limit!r}")
        if self.modified_since is not None and self.modified_since.tzinfo is None:
            raise ValueError("modified_since must be an aware datetime (with a time zone)")

    def matches(self, summary: InstanceSummary) -> bool:
        """True when `summary` passes every filter except `limit`."""
        if self.state is not None and summary.state != self.state:
            return False
        if self.caller is not None and summary.caller_instance_id != self.caller:
            return False
        if self.name_contains is not None and (
            summary.name is None or self.name_contains.casefold() not in summary.name.casefold()
        ):
            return False
        return self.modified_since is None or summary.modified_at >= self.modified_since


def apply_query(summaries: Iterable[InstanceSummary], query: InstanceQuery) -> builtins.list[InstanceSummary]:
    """Filter, sort newest first (ties by id) and limit: the order every store's `list` returns."""
    found = [s for s in summaries if query.matches(s)]
    found.sort(key=lambda s: s.id)
    found.sort(key=lambda s: s.modified_at, reverse=True)
    if query.limit is not None:
        del found[query.limit :]
    return found


class InstanceLease:
    """The right to run one instance, until released. Use it as an async context manager or call `release()`.

    Releasing twice is harmless. A lease held by a process that dies is freed by the store (the file store's lock is
    dropped by the operating system).
    """

    def __init__(self, instance_id: str) -> None:
        self.instance_id = instance_id
        """The instance this lease is for."""
        self._released = False

    @property
    def released(self) -> bool:
        """True once the lease has been given back."""
        return self._released

    async def release(self) -> None:
        """Give the lease back."""
        if not self._released:
            self._released = True
            await self._release()

    async def _release(self) -> None:
        """Free the underlying lock (stores override this)."""

    async def __aenter__(self) -> InstanceLease:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.release()

    def __repr__(self) -> str:
        state = "released" if self._released else "held"
        return f"<{type(self).__name__} {self.instance_id!r} {state}>"


@runtime_checkable
class InstanceStore(Protocol):
    """Where instances are kept between runs.

    A store whose instances end with the process (`MemoryInstanceStore`) says so with a class attribute `volatile =
    True`: the agent loop then saves a turn whose tool calls all run at once only with their results, not also before
    they run. Without it a store is taken as durable.
    """

    async def save(self, instance: Instance) -> None:
        """Store `instance`, replacing what was stored under its id, atomically.

        Raises:
            InvalidInstanceIdError: the instance has no id or an invalid one.
        """
        ...

    async def load(self, instance_id: str) -> Instance | None:
        """The stored instance, or None when there is none with this id.

        Raises:
            InvalidInstanceIdError: `instance_id` is not a valid id.
            BadDefinitionError: the stored text is not a valid instance.
        """
        ...

    async def list(
        self,
        *,
        state: str | None = None,
        caller: str | None = None,
        name_contains: str | None = None,
        modified_since: datetime | None = None,
        limit: int | None = None,
    ) -> builtins.list[InstanceSummary]:
        """Summaries of the stored instances, newest first, filtered as `InstanceQuery` describes."""
        ...

    async def acquire(self, instance_id: str) -> InstanceLease:
        """Take the lease on `instance_id` (the instance need not exist yet).

        Raises:
            InstanceLockedError: someone else holds it.
            InvalidInstanceIdError: `instance_id` is not a valid id.
        """
        ...

    async def delete(self, instance_id: str) -> bool:
        """Remove the instance (and its assets); True when there was one.

        Raises:
            InvalidInstanceIdError: `instance_id` is not a valid id.
        """
        ...
