"""What a runtime offers its agents besides tools: definitions the host registered (`Runtime.agent_definitions`) and
one stream of what every agent does (`Runtime.agent_events`)."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio

from onellm._public import publish as _publish

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from onellm.agents._events import AgentEvent
    from onellm.definitions import Definition

__all__ = ["AgentDefinitions", "AgentEventStream", "AgentEvents"]

_log = logging.getLogger("onellm.agents")


class AgentDefinitions:
    """Agent definitions the host registered by name (`Runtime.agent_definitions`), for `run_agent_async`.

    A registered definition needs no file access: an agent that names it (`agentSwarmUri`) starts it whatever files it
    may read, and it chooses its own tools, bounded only by its caller's grants. Registering a definition therefore lets
    every agent that can name it use the tools it lists.

    ```python
    from onellm.agents import AgentDefinitions
    from onellm.definitions import Definition

    registered = AgentDefinitions()
    registered.add("helpers/summarizer", Definition.loads("name: summarizer\\nmodel: claude-sonnet\\n"))
    assert "helpers/summarizer" in registered and registered.get("helpers/summarizer").name == "summarizer"
    ```
    """

    def __init__(self) -> None:
        self._entries: dict[str, Definition | Path] = {}

    def __repr__(self) -> str:
        return f"AgentDefinitions({', '.join(self._entries)})"

    def add(self, name: str, definition: Definition | str | os.PathLike[str], *, replace: bool = False) -> None:
        """Register `definition` (a `Definition`, or a path to a `.yaml`, a `.flow` or a folder holding `agent.yaml`,
        read when first used) under `name`.

        Raises:
            ValueError: `name` is empty, or already registered and `replace` is false.
            TypeError: `definition` is none of those.
        """
        from onellm.definitions import Definition

        if not isinstance(name, str) or not name.strip():
            raise ValueError("an agent definition is registered under a name that is not empty")
        if name in self._entries and not replace:
            raise ValueError(f"an agent definition named {name!r} is already registered; pass replace=True")
        if isinstance(definition, Definition):
            self._entries[name] = definition
        elif isinstance(definition, str | os.PathLike):
            self._entries[name] = Path(definition)
        else:
            raise TypeError(f"definition: expected a Definition or a path to one, not {type(definition).__name__}")

    def __setitem__(self, name: str, definition: Definition | str | os.PathLike[str]) -> None:
        self.add(name, definition, replace=True)

    def remove(self, name: str) -> bool:
        """Unregister `name`; True when it was registered."""
        return self._entries.pop(name, None) is not None

    def get(self, name: str) -> Definition | None:
        """The definition registered as `name` (read from its file the first time), or None.

        Raises:
            BadDefinitionError: the registered file cannot be read or is not a valid definition.
        """
        entry = self._entries.get(name)
        if entry is None or not isinstance(entry, Path):
            return entry
        from onellm.definitions import Definition

        loaded = Definition.load(entry)
        self._entries[name] = loaded
        return loaded

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._entries)


Handler = Callable[["AgentEvent"], Any]


class AgentEventStream:
    """The events of every agent of a runtime, as they happen: `async with runtime.agent_events.subscribe() as
    events: async for event in events: ...`. Holds up to `max_buffer` events a slow reader has not taken; beyond
    that the oldest are dropped and counted in `dropped`."""

    def __init__(self, owner: AgentEvents, max_buffer: float) -> None:
        self._owner = owner
        self._send: MemoryObjectSendStream[AgentEvent]
        self._receive: MemoryObjectReceiveStream[AgentEvent]
        self._send, self._receive = anyio.create_memory_object_stream(max_buffer_size=max_buffer)
        self.dropped = 0
        """Events left out because the reader fell more than `max_buffer` behind."""

    async def __aenter__(self) -> AgentEventStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop receiving events."""
        self._owner._streams.discard(self)
        self._send.close()
        self._receive.close()

    def __aiter__(self) -> AgentEventStream:
        return self

    async def __anext__(self) -> AgentEvent:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    def _put(self, event: AgentEvent) -> None:
        try:
            self._send.send_nowait(event)
        except anyio.WouldBlock:
            try:
                self._receive.receive_nowait()  # the oldest goes
                self.dropped += 1
                self._send.send_nowait(event)
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                self.dropped += 1
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._owner._streams.discard(self)


class AgentEvents:
    """What every agent of a runtime does, in one place (`Runtime.agent_events`): a monitor firing (`MonitorFired`), a
    sub-agent starting, a compaction, and, while anyone listens, every event `AgentRun.events()` gives, of every run.

    Listen with a handler (called at once with each event; keep it quick, a failure is logged and ignored) or with a
    stream (`subscribe()`). Runs build their events only while something listens.
    """

    def __init__(self) -> None:
        self._handlers: tuple[Handler, ...] = ()
        self._streams: set[AgentEventStream] = set()

    def __repr__(self) -> str:
        return f"AgentEvents(handlers={len(self._handlers)}, streams={len(self._streams)})"

    def __bool__(self) -> bool:
        return bool(self._handlers or self._streams)

    def add(self, handler: Handler) -> Handler:
        """Call `handler(event)` with every event (usable as a decorator). Returns the handler."""
        if not callable(handler):
            raise TypeError("an agent event handler is a callable taking the event")
        self._handlers = (*self._handlers, handler)
        return handler

    def remove(self, handler: Handler) -> bool:
        """Stop calling `handler`; True when it was added."""
        kept = tuple(h for h in self._handlers if h is not handler)
        removed = len(kept) != len(self._handlers)
        self._handlers = kept
        return removed

    def subscribe(self, *, max_buffer: int | None = 10_000) -> AgentEventStream:
        """A stream of the events from now on (`async with ... as events: async for event in events`); `max_buffer`
        None keeps every event a slow reader has not taken."""
        if max_buffer is not None and (
            isinstance(max_buffer, bool) or not isinstance(max_buffer, int) or max_buffer < 1
        ):
            raise ValueError(f"max_buffer must be a whole number of 1 or more, or None, not {max_buffer!r}")
        stream = AgentEventStream(self, math.inf if max_buffer is None else max_buffer)
        self._streams.add(stream)
        return stream

    def publish(self, event: AgentEvent) -> None:
        """Hand `event` to every handler and stream (the agent loop calls this)."""
        for handler in self._handlers:
            try:
                handler(event)
            except Exception:
                _log.exception("an agent event handler failed on %s", type(event).__name__)
        for stream in list(self._streams):
            stream._put(event)


_publish("onellm.agents", AgentDefinitions, AgentEventStream, AgentEvents)
