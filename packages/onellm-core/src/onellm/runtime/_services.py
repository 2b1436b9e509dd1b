"""`RuntimeServices`: what a run needs from the runtime, as one small protocol.

A model call (`ModelCall`), a chat session, a scripted run, an embeddings call and the agent loop depend on this, not
on `Runtime` and its members: the runtime hands out an object that implements it (`runtime.services`), and a test can
hand in its own. Everything here is plumbing a user of the verbs never needs.

How a run uses it, from the single call to the agent loop (many model and tool calls on one instance, saved per turn):

<!-- skip: next "an outline: the elided steps are the model calls of the run that uses the services" -->
```python
model, provider = services.route("claude-sonnet")         # resolved model and the provider that serves it
instance = services.new_instance(model, "claude-sonnet", system)
lease = await services.lease(instance)                    # held for the whole run; InstanceLockedError if taken
try:
    await services.record(RunRecord(instance_id=instance.id, event="started", ...))
    for turn in turns:
        ...                                               # ModelCall(services, ..., segment=False).whole()
        await services.save(instance)                     # after each turn; StorageError on a disk fault
finally:
    await lease.release()
```

Spend is held through `services.spend` (`reserve` before a call is sent, then the reservation's `commit(actual)` or
`release()` on every path), records go through `record` (a failing sink never fails a run), and `save` moves a turn's
inline assets to the store's asset store and saves where no cancellation cuts it short (shielded, unless the store's
save never waits). The agent loop adds three: the host's `hooks` (None when none were ever registered, so a run
without hooks builds nothing for them), the `hook_source` that loads a definition's hook files, and `agent_retry` for
model calls the provider calls transient.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from onellm.agents import Hooks, HookSource
    from onellm.capabilities import Capabilities
    from onellm.catalog import Catalog, ResolvedModel
    from onellm.clock import Clock
    from onellm.instances import Instance, InstanceLease, InstanceStore
    from onellm.messages import Timestamp
    from onellm.providers import RetryPolicy
    from onellm.records import Record
    from onellm.runtime._cache import ResultCache
    from onellm.runtime._spend import SpendAccount
    from onellm.tools import ToolRegistry

__all__ = ["RuntimeServices"]


class RuntimeServices(Protocol):
    """The services one run needs: routing, spend, records, saving under a lease, new instances, the clock, the
    catalog, grants and tools, and what templates may read."""

    @property
    def clock(self) -> Clock:
        """Message times, pricing dates and `.time` in templates."""
        ...

    @property
    def catalog(self) -> Catalog:
        """The model catalog calls resolve and price in."""
        ...

    @property
    def store(self) -> InstanceStore:
        """Where instances (and their assets) are kept."""
        ...

    @property
    def cache(self) -> ResultCache | None:
        """The result cache, when one is on."""
        ...

    @property
    def spend(self) -> SpendAccount:
        """The caps, and the holds calls in flight take on them."""
        ...

    @property
    def capabilities(self) -> Capabilities:
        """What tools may touch (the runtime's own state directories protected)."""
        ...

    @property
    def tools(self) -> ToolRegistry:
        """Tools that definitions may name."""
        ...

    @property
    def llm_turn_logs(self) -> bool:
        """True when every model call writes a `rawTurn` record (a definition's `llmTurnLogs: true` adds its own)."""
        ...

    @property
    def environ(self) -> Mapping[str, str]:
        """Where key variables and `.env` values are read."""
        ...

    @property
    def allowed_environment(self) -> tuple[str, ...]:
        """Environment variables a template may read through `.env`."""
        ...

    @property
    def scope_values(self) -> Mapping[str, Any]:
        """Values the host gives templates (`git`, `swarm`, `caller`)."""
        ...

    @property
    def embed_sources(self) -> tuple[str | os.PathLike[str], ...]:
        """Directories `embed` may read after the definition's own."""
        ...

    @property
    def recording(self) -> bool:
        """True when at least one record sink is listening (build records only then)."""
        ...

    @property
    def hooks(self) -> Hooks | None:
        """The host's agent hooks, or None when none were registered."""
        ...

    @property
    def hook_source(self) -> HookSource | None:
        """What loads a definition's hook files (None: the one an installed package offers, if any)."""
        ...

    @property
    def agent_retry(self) -> RetryPolicy | None:
        """How the agent loop retries a transient model failure (None: not at all)."""
        ...

    def route(self, model: str) -> tuple[ResolvedModel, Any]:
        """The resolved model and the provider that serves it.

        Raises:
            ModelNotFoundError: the name is unknown, or two providers claim it.
            AuthError: the provider's key variable is not set.
            CapabilityMissingError: no provider can serve the model.
        """
        ...

    def now(self) -> Timestamp:
        """The clock's time as a message timestamp."""
        ...

    def new_instance(
        self, model: ResolvedModel, requested: str, system: str | None, *, started: Timestamp | None = None
    ) -> Instance:
        """A fresh `running` instance for `model` (with `requested` kept when it differs from the resolved name)."""
        ...

    async def record(self, *records: Record) -> None:
        """Hand records to every sink, in order; a failing sink is reported, never raised."""
        ...

    async def lease(self, instance: Instance) -> InstanceLease | None:
        """Take the instance's lease for a run (None when the store hands out no leases).

        Raises:
            InstanceLockedError: another holder has it.
            StorageError: the store could not take it (a read-only or full disk), naming the path.
        """
        ...

    async def save(self, instance: Instance) -> None:
        """Save the instance, its latest turn's inline assets moved to the asset store, shielded from cancellation.

        Raises:
            StorageError: the store could not write it, naming the instance, the path when known, and the cause.
        """
        ...
