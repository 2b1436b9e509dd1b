"""`AgentRun`: one agent instance, run in segments, followed, steered, approved and cancelled.

**Segments.** A run segment goes from a resting instance (or a new one) to the next rest: `waiting` (the model answered
without a tool call, or asked the person a question), `waiting_for_approval`, `stopped` (a loop-ending tool ran, or the
run was cancelled) or `error`. A segment holds the instance's lease from start to rest and saves every step: the
model's answer as soon as it is paid for (with its tool calls still unanswered), then the turn with its results.

**Who drives.** Nothing runs in the background: `await run.result()` (or iterating `run.events()`) drives the run
through as many segments as it has work for, then returns. `message()` queues a message, delivered at the next turn
boundary of a running segment or by the next segment of a resting one; `approve()` and `deny()` write the decision into
the instance file at once (taking the lease when no segment holds it), and the segment that follows runs the decided
calls; `cancel()` cancels the step in progress.

**The loop** (`docs/agents.md`, the seeds' agent loop): the system prompt and the initial prompts are rendered as a
scripted run's are; initial tool calls run first, marked `injected`; each turn calls the model with the definition's
tools, runs the calls it makes (together when every one is `parallel_safe`, else one by one in call order) and saves
the turn with the results in call order. See `_state` for what a resumed run checks and repairs.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
import msgspec

from onellm._public import publish as _publish
from onellm.agents._events import (
    AgentEvent,
    ApprovalNeeded,
    CostIncurred,
    MessageDelivered,
    QuestionAsked,
    StateChanged,
    ToolCallEnded,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
from onellm.agents._hooks import INSIDE_RUN, RunHooks, load_definition_hooks
from onellm.agents._result import AgentResult, StopReason, instance_cost, instance_usage
from onellm.agents._setup import AgentSetup, recorded_grants
from onellm.agents._state import INTERRUPTED, INTERRUPTED_AFTER_APPROVAL, check_instance, find_call, orphans
from onellm.errors import (
    AgentStateError,
    CapabilityDeniedError,
    HookBlockedError,
    ProviderError,
    RunCancelledError,
    StorageError,
)
from onellm.messages import Cost, FromPart, Message, MessageSource, TextPart

if TYPE_CHECKING:
    from onellm.capabilities import Capabilities
    from onellm.catalog import ResolvedModel
    from onellm.definitions import Definition
    from onellm.instances import Instance, InstanceLease, PendingApproval
    from onellm.messages import CallWarning, Part, ToolCall
    from onellm.records import Record
    from onellm.runtime import AskResult, RuntimeServices
    from onellm.tools import Tool, ToolResult
    from onellm.tools.builtin.agent import AskUserRequest

__all__ = ["AgentRun", "SyncAgentRun"]

T = TypeVar("T")
_M = TypeVar("_M", "Message", "ToolCall")

_ZERO = Decimal(0)
_PERSON = frozenset({"api", "user"})
_ASK_USER = "ask_user"
_SHELL = "execute_terminal_command"
_AGENT_TOOLS = frozenset(
    {
        "run_agent_async",
        "await_agent",
        "message_agent",
        "monitor_agent",
        "await_monitor",
        "list_agent_instances",
        "query_agent",
    }
)


class _Cancelled(Exception):
    """`AgentRun.cancel()` stopped a step (raised where the step's cancel scope swallowed the cancellation)."""


@dataclass(slots=True)
class _Inbound:
    parts: list[Part]
    source: str
    name: str | None


@dataclass(slots=True)
class _Opening:
    """What the first segment of a new instance starts from."""

    inputs: dict[str, Any]
    prompt: list[Part] | None


@dataclass(slots=True)
class _Options:
    strict: bool = True
    output: Any = None
    max_iterations: int | None = None
    capabilities: Capabilities | None = None
    model: str | None = None


@dataclass(slots=True)
class _Job:
    """One call of a tool phase that runs now."""

    index: int
    call: ToolCall
    tool: Tool[..., Any]
    inputs: dict[str, Any]
    approved: bool = False
    result: ToolResult | None = None
    duration_ms: int | None = None


class _Plan:
    """The calls of one message being answered, and what became of each (made at every tool-calling turn: a plain
    class, its containers made in place rather than by a dataclass's factories)."""

    __slots__ = ("asked", "durations", "held", "injected", "jobs", "message", "parallel", "results")

    def __init__(
        self, message: Message, *, injected: bool = False, results: dict[int, ToolResult] | None = None
    ) -> None:
        self.message = message
        self.injected = injected
        self.jobs: list[_Job] = []
        self.results: dict[int, ToolResult] = {} if results is None else results
        self.durations: dict[int, int] = {}
        self.held: list[tuple[int, str | None, str, dict[str, Any]]] = []
        """(call index, reason, who asked for approval, the inputs it would run with)."""
        self.asked: int | None = None
        self.parallel = False


class _TurnServices:
    """The services a turn's model call gets: the run's own, except that a plain answer (no tool call) is not saved
    by the call but by the run as it comes to rest, in the same write as its new state. An answer that calls tools is
    saved at once, before they run: a run that stops while they run finds them without a result and does not run them
    again (`_state`). In a store that cannot outlive the process (`volatile`) no later run can find them so, and a
    turn whose calls all run now is saved once, with their results (`AgentRun._runs_now`)."""

    __slots__ = ("_run", "_services")

    def __init__(self, services: RuntimeServices, run: AgentRun[Any]) -> None:
        self._services = services
        self._run = run

    async def save(self, instance: Instance) -> None:
        await self._run._turn_save(instance)

    # everything else is the run's services
    @property
    def clock(self) -> Any:
        return self._services.clock

    @property
    def catalog(self) -> Any:
        return self._services.catalog

    @property
    def store(self) -> Any:
        return self._services.store

    @property
    def cache(self) -> Any:
        return self._services.cache

    @property
    def spend(self) -> Any:
        return self._services.spend

    @property
    def capabilities(self) -> Any:
        return self._services.capabilities

    @property
    def tools(self) -> Any:
        return self._services.tools

    @property
    def llm_turn_logs(self) -> bool:
        return self._services.llm_turn_logs

    @property
    def environ(self) -> Any:
        return self._services.environ

    @property
    def allowed_environment(self) -> tuple[str, ...]:
        return self._services.allowed_environment

    @property
    def scope_values(self) -> Any:
        return self._services.scope_values

    @property
    def embed_sources(self) -> Any:
        return self._services.embed_sources

    @property
    def recording(self) -> bool:
        return self._services.recording

    @property
    def hooks(self) -> Any:
        return self._services.hooks

    @property
    def hook_source(self) -> Any:
        return self._services.hook_source

    @property
    def agent_retry(self) -> Any:
        return self._services.agent_retry

    def route(self, model: str) -> tuple[ResolvedModel, Any]:
        return self._services.route(model)

    def now(self) -> Any:
        return self._services.now()

    def new_instance(
        self, model: ResolvedModel, requested: str, system: str | None, *, started: Any = None
    ) -> Instance:
        return self._services.new_instance(model, requested, system, started=started)

    async def record(self, *records: Record) -> None:
        await self._services.record(*records)

    async def lease(self, instance: Instance) -> InstanceLease | None:
        return await self._services.lease(instance)


class AgentRun(Generic[T]):
    """One agent instance: drive it with `result()` or `events()`, steer it with `message()`, decide held calls with
    `approve()` and `deny()`, stop it with `cancel()`.

    Made by `onellm.start_agent`, `Runtime.start_agent` (a new instance) or `Runtime.get_agent` (a saved one, also
    in another process after a restart).
    """

    # Its state in slots: a run reads and writes its fields at every step, and an object with more fields than a shared
    # instance dictionary holds (30) is slower to make and to read in a dictionary of its own.
    __slots__ = (
        "__weakref__",
        "_active",
        "_caller_id",
        "_cancel_requested",
        "_caps",
        "_closing",
        "_compacted_at",
        "_current",
        "_deciding",
        "_deciding_lock",
        "_definition",
        "_dirty",
        "_drive_scope",
        "_driving",
        "_events",
        "_folder",
        "_follower",
        "_following",
        "_fresh",
        "_group",
        "_group_used",
        "_hooks",
        "_hooks_ready",
        "_inbox",
        "_instance",
        "_iterations",
        "_lease",
        "_listen",
        "_model",
        "_opening",
        "_options",
        "_own_history",
        "_parked",
        "_pending_records",
        "_plan",
        "_provider",
        "_result",
        "_resume_requested",
        "_runtime",
        "_save_waiter",
        "_saving",
        "_scope",
        "_scope_data",
        "_scope_inputs",
        "_services",
        "_setup",
        "_sink",
        "_stored",
        "_subtree",
        "_tasks",
        "_total",
        "_turn_services_made",
        "_turns",
        "_unstarted",
        "_volatile",
        "_waiter",
        "_warnings",
        "_where",
        "_workdir",
    )

    def __init__(
        self,
        services: RuntimeServices,
        instance: Instance,
        *,
        runtime: Any = None,
        definition: Definition | None = None,
        folder: Path | None = None,
        where: str | None = None,
        opening: _Opening | None = None,
        options: _Options | None = None,
        setup: AgentSetup | None = None,
        capabilities: Capabilities | None = None,
    ) -> None:
        self._services = services
        self._runtime = runtime
        self._instance = instance
        self._definition = definition
        self._folder = folder
        self._where = where or _where(services, instance)
        self._opening = opening
        self._options = options or _Options()
        self._setup = setup
        self._caps = capabilities
        self._fresh = opening is not None
        self._own_history = opening is not None
        """Every turn of the instance ran under this handle's setup (it made the instance and never read it back)."""
        self._hooks: RunHooks | None = None
        self._hooks_ready = False
        self._model: ResolvedModel | None = None
        self._provider: Any = None
        self._scope_data: dict[str, Any] | None = None
        self._scope_inputs: dict[str, Any] | None = None
        """The caller's inputs of a new run, until its template data is made from them."""
        self._workdir: Path | None = None
        self._inbox: deque[_Inbound] = deque()
        self._events: deque[AgentEvent] = deque()
        self._listen = False
        self._following = False
        self._sink: Any = None
        self._active = False
        self._parked = False
        self._waiter: anyio.Event | None = None
        self._lease: InstanceLease | None = None
        self._scope: anyio.CancelScope | None = None
        self._cancel_requested = False
        self._resume_requested = False
        self._plan: _Plan | None = None
        self._dirty = False
        self._stored = opening is None
        """The store holds a save of the instance (a new one is first saved with its first answer)."""
        self._volatile = False
        """The store of the segment running cannot outlive the process (`volatile`, see `_TurnServices`)."""
        self._iterations = 0
        self._turns = 0
        self._pending_records: list[tuple[str, Any]] = []
        self._saving = False
        self._save_waiter: anyio.Event | None = None
        self._current = False
        """This handle's copy of the instance is the newest: it holds the lease and read the copy under it."""
        self._closing: anyio.Event | None = None
        """Set while a followed drive is being closed (`_close_follower`)."""
        self._unstarted: set[str] | None = None
        """The ids of the calls a paused segment left unrun, for the next segment to run (`_paused`)."""
        self._deciding_lock: anyio.Lock | None = None
        self._deciding: anyio.Event | None = None
        """Set while a decision on the resting handle holds a lease of its own (`_decide_one`)."""
        self._follower: AsyncIterator[AgentEvent] | None = None
        self._turn_services_made: Any = None
        """The services of the turns' model calls (`_turn_services`), made as a drive needs them."""
        self._drive_scope: anyio.CancelScope | None = None
        self._total: Decimal | None = None
        self._result: AgentResult[T] | None = None
        self._warnings: list[CallWarning] = list(setup.warnings) if setup is not None else []
        self._group: anyio.abc.TaskGroup | None = None
        self._group_used = False
        """A task was started in `_group` (cancelled as the drive ends: timers that did not fire)."""
        self._driving: dict[str, AgentRun[Any]] = {}
        self._tasks: set[Any] = set()
        """Children this run's drive is driving now, by instance id."""
        self._caller_id: str | None = None
        self._subtree: Cost | None = None
        self._compacted_at: str | None = None

    def __repr__(self) -> str:
        return f"AgentRun(instance={self._instance.id!r}, state={self._instance.state!r})"

    @property
    def _turn_services(self) -> Any:
        """The services a turn's model call gets (see `_TurnServices`). They point back at the run, so the drive drops
        them as it ends: the run and all it holds are then freed as soon as nobody uses them, not by the collector."""
        made = self._turn_services_made
        if made is None:
            services = self._services
            # A runtime's own services make the turns' copy themselves: each part read from the runtime in one step.
            with_save = getattr(services, "with_save", None)
            made = with_save(self._turn_save) if with_save is not None else _TurnServices(services, self)
            self._turn_services_made = made
        return made

    async def _turn_save(self, instance: Instance) -> None:
        """How a turn's model call saves (see `_TurnServices`)."""
        if instance.state == "running" and instance.messages:
            last = instance.messages[-1]
            if not last.tool_calls or (self._stored and self._volatile and self._runs_now(last)):
                self._dirty = True
                return
        await self._services.save(instance)
        self._dirty = False
        self._stored = True

    # ------------------------------------------------------------------------------------------------- the face

    @property
    def instance_id(self) -> str | None:
        """The instance's id."""
        return self._instance.id

    @property
    def instance(self) -> Instance:
        """The instance as this handle last saw it."""
        return self._instance

    @property
    def state(self) -> str | None:
        """The instance's state."""
        return self._instance.state

    @property
    def pending_approvals(self) -> list[PendingApproval]:
        """The calls waiting for a decision."""
        return [e for e in self._instance.pending_approvals if not e.decided]

    async def result(self) -> AgentResult[T]:
        """Drive the run until it rests with nothing left to do, and return how it ended.

        Raises:
            RunCancelledError: the run was cancelled; the instance is saved `stopped` with `cancelled: true`.
            HookBlockedError: a hook blocked a model call.
            ProviderError: a model call failed after its retries (the instance is saved in `error`).
            InstanceLockedError: another runner holds the instance.
            BadDefinitionError: a tool reference the grants refuse, or an instance file in an impossible state.
            CapabilityMissingError: the definition names hook files and no hook source is installed; an instance
                whose recorded grants are missing.
            StorageError: the instance could not be saved.
        """
        if self._follower is not None or self._closing is not None:  # nothing to take over otherwise
            await self._take_over()
        async for _ in self._drive(listen=False):
            pass
        final = self._final()
        if self._runtime is not None and not self._childless():
            from onellm.agents._subagents import subtree_cost

            final.subtree_cost = await subtree_cost(self._runtime, self._instance, final.cost, final.warnings)
        return final

    def _childless(self) -> bool:
        """Whether no instance can have been started below this one: each of its turns ran under this handle's
        setup, which has no tool that starts one, and no compaction summarized it (a summary runs as an instance)."""
        setup = self._setup
        if not self._own_history or setup is None or self._instance.compactions:
            return False
        return not any(name == "run_agent_async" or name.endswith("run-agent-async") for name in setup.tools)

    async def events(self) -> AsyncIterator[AgentEvent]:
        """Drive the run as `result()` does, yielding what happens as it happens (turns, tool calls, approvals,
        messages, states, costs). Ends when the run rests with nothing left to do; `await run.result()` then returns
        at once. Leaving the loop early pauses the run between two steps; `result()` carries on from there."""
        await self._take_over()
        gen = self._drive(listen=True)
        self._follower = gen
        try:
            async for event in gen:
                yield event
        finally:
            if self._follower is gen:
                self._follower = None
                await self._close_follower(gen)
            elif not getattr(gen, "ag_running", False):  # taken over: closed, or being closed, by the newcomer
                await gen.aclose()  # type: ignore[attr-defined]

    async def message(self, content: Any, *, source: str = "api", name: str | None = None) -> None:
        """Deliver a message: read at the next turn boundary of a running segment (after the results of the turn in
        progress), or by the next segment of a resting agent (`result()` runs it). While approvals are pending it
        waits until they are decided. A message from the person or the host (source `api` or `user`) to an agent
        waiting on `ask_user` is the answer to that call; others join the history behind the question.

        Args:
            content: Text, a message part, or a list of them.
            source: Who sends it: `api` (default), `user`, `agent`, `monitor`, `runtime`.
            name: Which one (an agent's or a user's name), kept on the message's source.
        """
        from onellm.runtime import prompt_parts

        items = [content] if isinstance(content, str) or not isinstance(content, list | tuple) else list(content)
        parts = prompt_parts(items, "content")
        if not isinstance(source, str) or not source:
            raise TypeError("source: expected a name such as 'api', 'user' or 'agent'")
        self._inbox.append(_Inbound(parts, source, name))
        self._poke()

    async def approve(self, tool_call_id: str | None = None, *, by: str = "api") -> None:
        """Approve a held call (every held call when `tool_call_id` is None). The decision is written to the instance
        file before this returns; once every held call is decided, the next `result()` runs the approved ones.

        Raises:
            AgentStateError: no call is waiting for approval, or none with this id.
            InstanceLockedError: another runner holds the instance.
        """
        await self._decide(tool_call_id, "approved", None, by)

    async def deny(self, tool_call_id: str | None = None, *, reason: str | None = None, by: str = "api") -> None:
        """Deny a held call (every held call when `tool_call_id` is None): the model reads an error result with the
        reason. Written to the instance file before this returns.

        Raises:
            AgentStateError: no call is waiting for approval, or none with this id.
            InstanceLockedError: another runner holds the instance.
        """
        await self._decide(tool_call_id, "denied", reason, by)

    async def cancel(self) -> None:
        """Cancel the step in progress: the instance is saved `stopped` with `cancelled: true`, the partial turn kept
        (finished tool calls with their results, interrupted ones with an error result saying they were cancelled),
        and the driving `result()` raises `RunCancelledError`. A resting run is left as it is."""
        if not self._active:
            return
        scope = self._scope or self._drive_scope
        if scope is None and self._parked:
            # At rest, held by its follower at an event (ApprovalNeeded): nothing is in progress, and a request kept
            # for later would cut short the segment the follower's next decision or message starts.
            return
        self._cancel_requested = True
        if scope is not None:
            scope.cancel()

    def resume(self) -> None:
        """Let the next `result()` start a segment even with no message: to go on after a cancelled or failed run,
        or one that ran out of `maxIterations` turns."""
        self._resume_requested = True

    # ------------------------------------------------------------------------------------------------- decisions

    async def _decide(self, tool_call_id: str | None, decision: str, reason: str | None, by: str) -> None:
        # One decision at a time on a handle: a second one reads the first's outcome, not the file as it was before.
        lock = self._deciding_lock
        if lock is None:
            lock = self._deciding_lock = anyio.Lock()
        async with lock:
            await self._decide_one(tool_call_id, decision, reason, by)

    async def _decide_one(self, tool_call_id: str | None, decision: str, reason: str | None, by: str) -> None:
        if self._active and not self._parked:
            if INSIDE_RUN.get() == self._instance.id:
                # A tool or hook of this run: the run rests only once it returns, so waiting would wait forever.
                raise AgentStateError(
                    f"instance {self._instance.id}: a tool or hook of a run cannot approve or deny its calls while "
                    "it runs (the decision would wait for the run to rest, and the run for the decision)",
                    instance_id=self._instance.id,
                    state=self._instance.state,
                )
            follower = self._follower
            if follower is not None and not getattr(follower, "ag_running", False):
                # The run is held at an event its follower has not finished with: waiting here would wait forever.
                raise AgentStateError(
                    f"instance {self._instance.id}: a call can be approved or denied once the run waits for approval "
                    "(after ApprovalNeeded, or once result() returned), not while it is running",
                    instance_id=self._instance.id,
                    state=self._instance.state,
                )
            while self._active and not self._parked:
                waiter = self._waiter = self._waiter or anyio.Event()
                await waiter.wait()
        # A resting handle takes a lease of its own for the decision, not the drive's: a `result()` started meanwhile
        # waits for it (`_drive`), then takes its own and reads the decision back.
        own_lease: InstanceLease | None = None
        deciding: anyio.Event | None = None
        if not self._active:
            deciding = self._deciding = anyio.Event()
            try:
                own_lease = await self._services.lease(self._instance)
                if not self._fresh:
                    await self._reload()
                    # The file may have changed since this handle read it: a decision is not written into an instance
                    # no run could have left.
                    check_instance(self._instance, self._where)
            except BaseException:
                await self._decided_alone(own_lease, deciding)
                raise
        try:
            inst = self._instance
            open_entries = [e for e in inst.pending_approvals if not e.decided]
            if tool_call_id is not None:
                open_entries = [e for e in open_entries if e.tool_call_id == tool_call_id]
            if not open_entries:
                what = (
                    "no tool call waits for approval"
                    if tool_call_id is None
                    else (f"tool call {tool_call_id!r} does not wait for approval")
                )
                raise AgentStateError(f"instance {inst.id}: {what}", instance_id=inst.id, state=inst.state)
            for entry in open_entries:
                entry.decision = decision
                if decision == "denied":
                    entry.reason = reason
            await self._save()
            self._poke()
            if self._services.recording:
                from onellm.records import ApprovalRecord

                await self._services.record(
                    *(
                        ApprovalRecord(
                            instance_id=inst.id,
                            message_id=e.message_id,
                            tool_call_id=e.tool_call_id,
                            tool=e.tool,
                            decision=decision,
                            by=by,
                        )
                        for e in open_entries
                    )
                )
        finally:
            if deciding is not None:
                await self._decided_alone(own_lease, deciding)

    async def _decided_alone(self, lease: InstanceLease | None, deciding: anyio.Event) -> None:
        """Give back the lease a decision on a resting handle took, and let a waiting drive go on."""
        try:
            if lease is not None:
                with anyio.CancelScope(shield=True), contextlib.suppress(OSError, StorageError):
                    await lease.release()
        finally:
            if self._deciding is deciding:
                self._deciding = None
            deciding.set()

    # ----------------------------------------------------------------------------------------------- the driving

    def _runnable(self) -> bool:
        inst = self._instance
        if self._opening is not None:
            return True
        entries = inst.pending_approvals
        if entries and not all(e.decided for e in entries):
            return False
        if entries or self._inbox or self._resume_requested:
            return True
        return inst.state == "running"

    async def _take_over(self) -> None:
        """An `events()` loop left early keeps its drive paused between two steps: close it, so a new drive carries
        on from there (a drive that is busy, not paused, is left alone and refuses the newcomer)."""
        follower = self._follower
        if self._active and follower is not None and not getattr(follower, "ag_running", True):
            self._follower = None
            await self._close_follower(follower)
        closing = self._closing
        while closing is not None:  # a loop left early, being closed from another task (the collector's)
            await closing.wait()
            closing = self._closing

    async def _close_follower(self, gen: AsyncIterator[AgentEvent]) -> None:
        """Close a followed drive; a newcomer waits for it (the paused segment saves what it did, `_paused`)."""
        done = self._closing = anyio.Event()
        try:
            await gen.aclose()  # type: ignore[attr-defined]
        finally:
            if self._closing is done:
                self._closing = None
            done.set()

    async def _drive(self, *, listen: bool) -> AsyncIterator[AgentEvent]:
        if self._active:
            raise AgentStateError(
                f"instance {self._instance.id} is already being driven by another result() or events()",
                instance_id=self._instance.id,
                state=self._instance.state,
            )
        self._active = True
        self._cancel_requested = False  # before any wait: a cancel() from here on reaches this drive
        deciding = self._deciding
        if deciding is not None:
            # A decision on the resting handle is being written under a lease of its own: start from it.
            try:
                while deciding is not None:
                    await deciding.wait()
                    deciding = self._deciding
            except BaseException:
                self._active = False
                raise
        self._following = listen
        runtime = self._runtime
        sink = getattr(runtime, "_agent_events", None) if runtime is not None else None
        self._sink = sink if sink else None
        self._listen = listen or self._sink is not None
        self._turns = 0
        self._result = None
        hub = self._hub(create=False)
        if hub is not None:
            hub.register(self)
        try:
            if listen:
                # A follower may take each event in another task (the blocking form does): no task group may span
                # a yield, so children run as tasks of their own (`_spawn`), cancelled if this drive fails.
                loop = self._drive_loop(listen=True)
                try:
                    async for event in loop:
                        yield event
                finally:
                    # Closed here, not later by the collector: a follower that leaves pauses the segment now, before
                    # another drive of this handle starts (`_paused`).
                    try:
                        await loop.aclose()  # type: ignore[attr-defined]
                    finally:
                        await self._stop_tasks()
            elif not self._may_spawn():
                # Only the agent tools start tasks beside the drive: a run without them needs no task group (nor its
                # closing checkpoint); anything started anyway runs as a task of its own, stopped as the drive ends.
                try:
                    async for _ in self._drive_loop(listen=False):
                        pass
                finally:
                    if self._tasks:
                        await self._stop_tasks()
            else:
                # Children started with run_agent_async (and monitor timers) run as tasks of this group: the drive
                # ends once this run and every child it drives are at rest.
                failure: BaseException | None = None
                self._group_used = False
                async with anyio.create_task_group() as group:
                    self._group = group
                    try:
                        async for _ in self._drive_loop(listen=False):
                            pass
                    except BaseException as exc:
                        failure = exc
                    finally:
                        self._group = None
                        if self._group_used:
                            group.cancel_scope.cancel()  # timers of monitors that did not fire; children on failure
                if failure is not None:
                    raise failure
        finally:
            # Still active, not parked, while the lease is given back: a decision made meanwhile waits for it, then
            # takes a lease of its own (neither writing without one nor finding this one still held).
            self._parked = False
            self._listen = self._following = False
            self._sink = None
            self._turn_services_made = None
            self._events.clear()
            lease = self._lease
            try:
                if lease is None:
                    pass  # nothing to give back without one (a store without leases)
                elif _releases_at_once(lease):
                    await self._release()  # it cannot wait, so no cancellation can cut it short
                else:
                    with anyio.CancelScope(shield=True):
                        await self._release()
            finally:
                self._active = False
                self._current = False  # without the lease, another runner may write the instance
            self._wake()
            if hub is not None or self._runtime is not None:
                self._rested()

    # ------------------------------------------------------------------------------------------- sub-agents

    def _hub(self, *, create: bool = True) -> Any:
        """The runtime's hub of live agents and monitors (None without a runtime, or before anyone made one when
        `create` is false)."""
        runtime = self._runtime
        if runtime is None:
            if create:
                raise AgentStateError(
                    f"instance {self._instance.id}: the agent tools need a run started by a Runtime",
                    instance_id=self._instance.id,
                    state=self._instance.state,
                )
            return None
        hub = getattr(runtime, "_agent_hub", None)
        if hub is None and create:
            from onellm.agents._subagents import hub_of

            hub = hub_of(runtime)
        return hub

    def _poke(self) -> None:
        """Wake whoever waits on this runtime's agents (a resting drive waiting for its children, `await_agent`)."""
        hub = self._hub(create=False)
        if hub is not None:
            hub.changed()

    def _rested(self) -> None:
        """The drive ended: fire `onFinish` monitors, wake the waiters."""
        hub = self._hub(create=False)
        if hub is None:
            return
        if self._instance.state != "running":
            hub.check(self, rested=True)
        hub.changed()

    def _queue_runtime_message(self, text: str) -> None:
        """A message from the runtime (a monitor's alert), read at the next turn boundary or by the next segment."""
        self._inbox.append(_Inbound([TextPart(text)], "runtime", "monitor"))

    def _emit_any(self, event: AgentEvent) -> None:
        """An event from outside the loop (a sub-agent started, a monitor fired), for whoever follows `events()`."""
        if self._listen:
            self._emit(event)

    def _drive_child(self, child: AgentRun[Any]) -> None:
        """Drive `child` as a task of this run's drive, unless something drives it already."""
        child_id = child.instance_id
        if child_id is None or child._active or child_id in self._driving:
            return
        if not self._active:
            raise AgentStateError(
                f"instance {self._instance.id}: agents start and wake others only while they run",
                instance_id=self._instance.id,
                state=self._instance.state,
            )
        for other in self._hub().live.values():
            if child_id in other._driving:
                return
        self._driving[child_id] = child
        self._spawn(self._child_task, child)

    async def _child_task(self, child: AgentRun[Any]) -> None:
        import logging

        try:
            await child.result()
        except Exception as error:  # saved in the child's instance; the caller reads it with await_agent
            logging.getLogger("onellm.agents").debug("sub-agent %s ended: %r", child.instance_id, error)
        finally:
            self._driving.pop(child.instance_id or "", None)
            self._poke()

    def _start_timer(self, hub: Any, monitor: Any) -> None:
        """Fire an `elapsed` monitor when its time is up (while this run's drive lasts; later, at the watched agent's
        next turn)."""
        if not self._active:
            return

        async def wait() -> None:
            left = monitor.seconds_left(self._services.clock.now())
            if left:
                await self._services.clock.sleep(left)
            target = hub.live.get(monitor.target)
            state = target.instance.state if target is not None else None
            from onellm.agents._monitors import context_tokens

            tokens = context_tokens(target.instance.messages)[0] if target is not None else None
            hub.fire(monitor, "elapsed", state, tokens)

        self._spawn(wait)

    async def _drive_loop(self, *, listen: bool) -> AsyncIterator[AgentEvent]:
        """Segments while the run has work, then, at rest, wait for the children it drives (waking for messages)."""
        if self._instance.pending_approvals and not self._fresh and not self._runnable():
            # Held calls this handle saw undecided: another handle or process may have decided them since. Read again
            # under the lease: a read without it can land while another runner is still writing its decision, and
            # would call the run waiting when it is not. (The drive gives the lease back as it ends.)
            if self._lease is None:
                self._lease = await self._services.lease(self._instance)
            await self._reload()
        while True:
            if self._runnable():
                if listen:
                    segment = self._segment()
                    try:
                        async for event in segment:
                            yield event
                    finally:
                        await segment.aclose()  # type: ignore[attr-defined]  # left at a yield: close it now
                    continue
                # Nothing is yielded: one scope for the whole drive is enough for cancel() to reach every step.
                with anyio.CancelScope() as scope:
                    self._drive_scope = scope
                    try:
                        while self._runnable():
                            async for _ in self._segment():
                                pass
                    finally:
                        self._drive_scope = None
                if scope.cancelled_caught:  # cancelled between two steps: nothing was in flight to save
                    raise await self._cancelled(_Cancelled(), saved=False)
                continue
            if not self._driving:
                return
            # At rest with children still working: wait for one of them, or a message for this run.
            with anyio.CancelScope() as scope:
                self._drive_scope = scope
                try:
                    await self._hub().wait_change(None)
                finally:
                    self._drive_scope = None
            if scope.cancelled_caught:  # cancel() while resting: the children it drives stop
                self._cancel_requested = False
                await self._stop_children()
                return
            for event in self._flush():
                yield event

    def _may_spawn(self) -> bool:
        """Whether this drive may start tasks beside it: children and monitor timers are started by the agent tools
        alone, so a run whose tools are known, none of them an agent tool, starts none."""
        setup = self._setup
        if setup is None or self._driving or self._tasks:
            return True
        return self._runtime is not None and not _AGENT_TOOLS.isdisjoint(setup.tools)

    def _spawn(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)` beside this drive: in its task group, or (a followed drive, or one without agent tools)
        as a task of its own."""
        group = self._group
        if group is not None:
            self._group_used = True
            group.start_soon(fn, *args)
            return
        import asyncio

        task = asyncio.get_running_loop().create_task(fn(*args))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _stop_children(self) -> None:
        for child in list(self._driving.values()):
            await child.cancel()
        with anyio.CancelScope(shield=True):
            while self._driving:
                await self._hub().wait_change(None)

    async def _stop_tasks(self) -> None:
        """Cancel what `_spawn` started as tasks of their own, and wait for them to save."""
        tasks = list(self._tasks)
        if not tasks:
            return
        import asyncio

        for task in tasks:
            task.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.wait(tasks)

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.set()

    async def _release(self) -> None:
        lease, self._lease = self._lease, None
        if lease is not None:
            with contextlib.suppress(OSError, StorageError):
                await lease.release()

    async def _reload(self) -> None:
        """Read the instance again from the store: another handle or process may have changed it while it rested."""
        inst = self._instance
        if inst.id is None:
            return
        loaded = await self._services.store.load(inst.id)
        if loaded is None and self._stored:
            from onellm.errors import InstanceNotFoundError

            # Deleted since this handle read it: going on (or deciding) would write it back, held calls and all.
            raise InstanceNotFoundError(
                f"instance {inst.id} is no longer in {self._services.store!r} (deleted)", instance_id=inst.id
            )
        if loaded is not None:
            self._instance = loaded
            self._own_history = False
            self._scope_data = None
            self._scope_inputs = None

    def _flush(self) -> Iterator[AgentEvent]:
        """The queued events, oldest first (the turn loop looks at `_events` first: a run nobody follows queues
        none, and skips making this generator)."""
        events = self._events
        while events:
            yield events.popleft()

    # --------------------------------------------------------------------------------------------------- a segment

    async def _segment(self) -> AsyncIterator[AgentEvent]:
        services = self._services
        if self._lease is None:
            self._lease = await services.lease(self._instance)
            if not self._fresh:
                await self._reload()
        self._current = True
        # Read once a segment, not at every turn: the store it holds the lease of.
        self._volatile = getattr(services.store, "volatile", False) is True
        inst = self._instance
        first = self._opening is not None
        if not first:
            check_instance(inst, self._where)
        self._parked = False
        await self._prepare()
        inst = self._instance
        hooks = self._hooks
        if self._listen or (hooks is not None and hooks.on_cost):
            self._total = instance_cost(inst).total
        self._iterations = 0
        self._resume_requested = False
        self._plan = None
        if inst.cancelled and not first and not self._inbox:
            self._reopen_cut_turn()
        inst.cancelled = None
        inst.error = None
        inst.run_started_at = services.now()
        self._dirty = True
        if services.recording:
            await self._record(self._run_record("started" if first else "resumed", "running"))
        try:
            await self._set_state("running")
            if self._events:
                for event in self._flush():
                    yield event
            if first:
                self._fresh = False  # from now on a new segment reads the instance again (another process may write)
                async for event in self._open():
                    yield event
            else:
                async for event in self._continue():
                    yield event
            async for event in self._turns_loop():
                yield event
            await self._rest()
            if self._events:
                for event in self._flush():
                    yield event
        except RunCancelledError as cancelled:
            # The model call saved the instance `stopped` and `cancelled`, with what had arrived.
            raise await self._cancelled(cancelled, saved=True) from None
        except (anyio.get_cancelled_exc_class(), _Cancelled) as cancelled:
            raise await self._cancelled(cancelled, saved=False) from None
        except Exception as error:
            await self._failed(error)
            raise
        except GeneratorExit:
            # The follower left the events() loop at one of the segment's events: the run pauses there.
            await self._paused()
            raise
        except BaseException as interrupt:
            # KeyboardInterrupt, SystemExit and the like, from a tool or a hook, are not swallowed: the turn so far
            # is saved as a cancellation saves it, an error record names what stopped it, and it goes on as it came.
            with anyio.CancelScope(shield=True):
                await self._record(_error_record(self._instance, interrupt, "agent loop"))
            await self._cancelled(_Cancelled(), saved=False)
            raise
        finally:
            self._plan = None

    async def _prepare(self) -> None:
        """The run's setup, grants, hooks and model: built once per handle (grants on every segment of a saved one)."""
        services = self._services
        inst = self._instance
        if not self._fresh:
            caps = recorded_grants(inst, services.capabilities, where=self._where)
            if self._options.capabilities is not None:
                caps = caps.intersect(self._options.capabilities)
            self._caps = caps
        grants = self._caps
        assert grants is not None
        caps = grants
        if self._setup is None:
            definition = self._definition
            if definition is None:
                definition = self._definition = inst.definition(strict=False)
                self._folder = _folder_of(inst.agent_definition, caps)
            saved = inst.capabilities if isinstance(inst.capabilities, Mapping) else None
            only = saved.get("tools") if saved is not None else None
            self._setup = AgentSetup.build(
                services,
                definition,
                folder=self._folder,
                file=self._where,
                capabilities=caps,
                strict=self._options.strict,
                output=self._options.output,
                max_iterations=self._options.max_iterations,
                only_tools=only if isinstance(only, list) and all(isinstance(n, str) for n in only) else None,
            )
            self._warnings.extend(self._setup.warnings)
        setup = self._setup
        if not self._hooks_ready:
            loaded = (
                await load_definition_hooks(
                    services,
                    setup.definition,
                    capabilities=caps,
                    base=setup.folder,
                    strict=self._options.strict,
                    owner=f"instance {inst.id}" if not self._fresh else f"the definition {setup.file}",
                    warnings=self._warnings,
                )
                if setup.definition.hooks
                else ()
            )
            self._hooks = RunHooks.build(services, getattr(services, "hooks", None), loaded)
            self._hooks_ready = True
        if self._model is None:
            model = inst.model or self._options.model or setup.definition.model
            if not model:
                raise AgentStateError(f"instance {inst.id} names no model", instance_id=inst.id, state=inst.state)
            self._model, self._provider = services.route(model)
        if self._workdir is None:
            self._workdir = self._working_directory()

    def _working_directory(self) -> Path | None:
        setup = self._setup
        assert setup is not None
        text = setup.definition.working_directory
        if text:
            rendered = self._render(text, "workingDirectory") if "{{" in text else text
            if rendered.strip():
                return Path(rendered).expanduser().absolute()
        caps = self._caps
        return caps.working_directory if caps is not None else None

    # ------------------------------------------------------------------------------------------------- templates

    def _template_scope(self) -> dict[str, Any]:
        data = self._scope_data
        if data is None:
            from onellm.runtime import template_scope

            setup = self._setup
            assert setup is not None
            if self._opening is not None:
                inputs = self._opening.inputs
            elif self._scope_inputs is not None:
                inputs = self._scope_inputs
            else:
                inputs = dict(self._instance.inputs or {})
            data = self._scope_data = template_scope(self._services, setup.definition, inputs)
            self._scope_inputs = None
        return data

    def _render(self, text: str, what: str) -> str:
        if "{{" not in text:  # no action: the text is its own rendering, and no scope is needed
            return text
        from onellm.templating import FileEmbedSource
        from onellm.templating import render as render_template

        setup = self._setup
        assert setup is not None
        definition = setup.definition
        sources: list[Any] = []
        if setup.folder is not None:
            sources.append(FileEmbedSource(setup.folder))
        sources.extend(FileEmbedSource(p) for p in self._services.embed_sources)
        return render_template(
            text,
            self._template_scope(),
            missing_key="error" if definition.missing_key == "error" else "default",
            name=f"{setup.file}:{what}",
            embed_sources=sources,
            now=self._services.clock.now,
        )

    def _system(self) -> str | None:
        """The system prompt rendered for this turn (`.time` read again), kept as `metadata.renderedSystemPrompt`."""
        setup = self._setup
        assert setup is not None
        text = self._instance.system_prompt
        if text is None:
            return None
        if "{{" in text:
            if ".time" in text and self._scope_data is not None:
                from onellm.runtime import template_scope

                fresh = template_scope(self._services, setup.definition, {})
                self._scope_data["time"] = fresh["time"]
            text = self._render(text, "systemPrompt")
        inst = self._instance
        metadata = inst.metadata  # `inst.rendered_system_prompt`, read without the property: every turn
        if metadata is None or metadata.get("renderedSystemPrompt") != text:
            inst.rendered_system_prompt = text
        return text

    # -------------------------------------------------------------------------------------------- the first segment

    async def _open(self) -> AsyncIterator[AgentEvent]:
        """Render the initial prompts into the instance, run the injected tool calls, add the task prompt."""
        rt = _runtime()
        api_source, runtime_source, new_message_id = rt.api_source, rt.runtime_source, rt.new_message_id
        expand_from_part, when_holds = rt.expand_from_part, rt.when_holds
        opening = self._opening
        assert opening is not None
        # The template data is made when a template first needs it, from the caller's own inputs (assets with their
        # bytes), not the saved copy.
        self._scope_inputs = opening.inputs
        self._opening = None
        setup = self._setup
        assert setup is not None
        inst = self._instance
        services = self._services
        file = setup.file
        stop = False
        for index, prompt in enumerate(setup.definition.initial_prompts or []):
            if not when_holds(prompt.when, self._render):
                continue
            user: list[Part] = []
            for n, part in enumerate(prompt.user):
                if isinstance(part, TextPart):
                    user.append(TextPart(self._render(part.text, f"initialPrompts[{index}]")))
                elif isinstance(part, FromPart):
                    user.extend(
                        expand_from_part(part, self._template_scope(), file, f"initialPrompts[{index}].user[{n}]")
                    )
                else:
                    user.append(part)
            assistant = [
                TextPart(self._render(p.text, f"initialPrompts[{index}]")) if isinstance(p, TextPart) else p
                for p in prompt.assistant
            ]
            calls = (
                rt.kept_calls([_injected(c) for c in prompt.tool_calls if when_holds(c.when, self._render)])
                if prompt.tool_calls
                else []
            )
            if not user and not assistant and not calls:
                continue
            message = Message(
                id=new_message_id(),
                user=user,
                assistant=assistant,
                tool_calls=calls,
                date_time=services.now(),
                source=api_source() if user else runtime_source(),
            )
            await self._add(message)
            if calls and any(c.result is None for c in calls):
                plan = _Plan(message, injected=True)
                async for event in self._tool_phase(plan):
                    yield event
                self._finish(plan)
                self._plan = None  # written: a pause or a cancel from here on must not write it again
                stop = bool(plan.held) or plan.asked is not None or self._ended(self._instance.messages[-1])
                if stop:
                    break  # the remaining initial prompts do not run
        if opening.prompt:
            message = Message(id=new_message_id(), user=opening.prompt, date_time=services.now(), source=api_source())
            await self._add(message)
            if self._listen:
                self._emit(
                    MessageDelivered(instance_id=inst.id, message_id=message.id, source="api", text=message.user_text)
                )
        if not any(m.user for m in inst.messages) and not stop:
            from onellm.errors import BadDefinitionError

            raise BadDefinitionError(
                "nothing to send: no initial prompt ran (none has a user part, or every `when` was false) and no "
                "prompt= was given",
                file=file,
                path="initialPrompts",
            )
        # Saved with the first answer, or as the run rests (a held or asked injected call): nothing is lost before.
        if self._events:
            for event in self._flush():
                yield event

    # ---------------------------------------------------------------------------------------- a resumed segment

    async def _continue(self) -> AsyncIterator[AgentEvent]:
        """Repair calls left without a result, run the decided calls, deliver waiting messages."""
        inst = self._instance
        unstarted, self._unstarted = self._unstarted, None
        repaired = orphans(inst)
        if unstarted:
            # Calls a paused segment of this handle left before running them: they run now, not repaired.
            repaired = [found for found in repaired if found[2].id not in unstarted]
        if repaired:
            started = {e.tool_call_id for e in inst.pending_approvals if e.extra.get("startedAt") is not None}
            by_message: dict[int, dict[int, ToolResult]] = {}
            from onellm.tools import ToolResult

            for mi, ci, call in repaired:
                text = INTERRUPTED_AFTER_APPROVAL if call.id in started else INTERRUPTED
                by_message.setdefault(mi, {})[ci] = ToolResult.error(text)
            for mi, results in by_message.items():
                plan = _Plan(inst.messages[mi], results=results)
                self._finish(plan)
            inst.pending_approvals = [e for e in inst.pending_approvals if e.tool_call_id not in started]
            await self._save()
        if inst.pending_approvals:
            async for event in self._decided():
                yield event
        if unstarted:
            async for event in self._run_unstarted(unstarted):
                yield event
        await self._deliver()
        for event in self._flush():
            yield event

    async def _run_unstarted(self, unstarted: set[str]) -> AsyncIterator[AgentEvent]:
        """Run the calls a paused segment left unrun (those still without a result), message by message."""
        for message in list(self._instance.messages):
            only = {c.id for c in message.tool_calls if c.result is None and c.id in unstarted}
            if not only:
                continue
            plan = _Plan(message)
            if self._following:
                async for event in self._tool_phase(plan, only):
                    yield event
            else:
                await self._quiet_tool_phase(plan, only)
            self._finish(plan)
            self._plan = None
            await self._save()
            for event in self._flush():
                yield event

    async def _decided(self) -> AsyncIterator[AgentEvent]:
        """Run the approved calls and answer the denied ones, message by message; then drop their entries."""
        from onellm.tools import ToolResult

        inst = self._instance
        setup = self._setup
        assert setup is not None
        groups: dict[int, list[tuple[int, PendingApproval]]] = {}
        for entry in inst.pending_approvals:
            found = find_call(inst, entry.tool_call_id, entry.message_id)
            assert found is not None  # check_instance refused anything else
            groups.setdefault(found[0], []).append((found[1], entry))
        for mi in sorted(groups):
            message = self._instance.messages[mi]
            plan = _Plan(message)
            approved: list[PendingApproval] = []
            for ci, entry in groups[mi]:
                call = message.tool_calls[ci]
                if entry.decision == "denied":
                    note = f": {entry.reason}" if entry.reason else "."
                    plan.results[ci] = ToolResult.error(f"A person denied this call{note}")
                    continue
                tool = setup.tools.get(call.tool)
                if tool is None:
                    plan.results[ci] = ToolResult.error(_unknown(call.tool, setup.tools))
                    continue
                inputs = dict(entry.inputs) if entry.inputs is not None else dict(call.inputs)
                plan.jobs.append(_Job(ci, call, tool, inputs, approved=True))
                approved.append(entry)
            if approved:
                # Marked before anything runs: a run that stops before saving the result does not run it again.
                stamp = self._services.now().text
                for entry in approved:
                    entry.extra["startedAt"] = stamp
                await self._save()
            plan.parallel = len(plan.jobs) > 1 and all(j.tool.parallel_safe for j in plan.jobs)
            self._plan = plan  # a cancel or a pause keeps what ran (`_cancelled`, `_paused`)
            async for event in self._run_jobs(plan):
                yield event
            self._finish(plan)
            self._plan = None
            answered = {message.tool_calls[ci].id for ci, _ in groups[mi]}
            inst = self._instance
            inst.pending_approvals = [e for e in inst.pending_approvals if e.tool_call_id not in answered]
            await self._save()
            for event in self._flush():
                yield event

    async def _deliver(self) -> None:
        """Put the queued messages into the instance: an answer to `ask_user` becomes that call's result, anything
        else a message of its own."""
        from onellm.runtime import new_message_id
        from onellm.tools import ToolResult

        inbox = self._inbox
        while inbox:
            item = inbox.popleft()
            inst = self._instance
            ask = inst.ask_user
            text = "".join(p.text for p in item.parts if isinstance(p, TextPart))
            if ask is not None and item.source in _PERSON:
                found = find_call(inst, ask.tool_call_id, ask.message_id)
                if found is not None:
                    plan = _Plan(inst.messages[found[0]])
                    plan.results[found[1]] = ToolResult(parts=list(item.parts))
                    inst.ask_user = None
                    self._finish(plan)
                    if self._listen:
                        self._emit(
                            MessageDelivered(
                                instance_id=inst.id,
                                message_id=ask.message_id,
                                source=item.source,
                                text=text,
                                answered_call_id=ask.tool_call_id,
                            )
                        )
                    continue
            message = Message(
                id=new_message_id(),
                user=item.parts,
                date_time=self._services.now(),
                source=MessageSource(kind=item.source, name=item.name),
            )
            await self._add(message)
            if self._listen:
                self._emit(MessageDelivered(instance_id=inst.id, message_id=message.id, source=item.source, text=text))

    # ------------------------------------------------------------------------------------------------- the turns

    async def _turns_loop(self) -> AsyncIterator[AgentEvent]:
        setup = self._setup
        assert setup is not None
        while True:
            if self._inbox:
                await self._save_if_dirty()  # a plain answer the loop goes on from is saved before what follows
                await self._deliver()
                if self._events:
                    for event in self._flush():
                        yield event
            if not self._needs_turn():
                return
            if self._iterations >= setup.max_iterations:
                await self._max_iterations()
                return
            if self._cancel_requested:
                raise _Cancelled
            if setup.definition.context_strategy is not None:
                await self._maybe_compact()
                if self._events:
                    for event in self._flush():
                        yield event
            turn = self._turn_message()
            self._iterations += 1
            self._turns += 1
            if self._listen:
                self._emit(TurnStarted(instance_id=self._instance.id, turn=self._turns, message_id=turn.id))
                if self._events:
                    for event in self._flush():
                        yield event
            answer = await self._model_turn(turn)
            runtime = self._runtime
            if (
                self._hooks is not None
                or self._listen
                or (runtime is not None and getattr(runtime, "_agent_hub", None) is not None)
            ):
                await self._after_answer(answer)  # hooks, events, monitors: a turn nobody watches has none of them
            if self._events:
                for event in self._flush():
                    yield event
            message = self._instance.messages[-1]
            if not message.tool_calls:
                continue
            plan = _Plan(message)
            if self._following:
                async for event in self._tool_phase(plan):
                    yield event
            else:
                await self._quiet_tool_phase(plan)
            self._finish(plan)
            self._plan = None  # written: a pause or a cancel from here on must not write it again
            await self._save()
            if self._events:
                for event in self._flush():
                    yield event

    def _runs_now(self, message: Message) -> bool:
        """Whether every call of a new answer is answered in this turn's tool phase, with nothing that rests the run
        or that another run could see: no hook that may hold a call, no approval, no question, no loop-ending tool,
        no agent tool (they reach saved instances)."""
        setup = self._setup
        hooks = self._hooks
        if setup is None or (hooks is not None and hooks.before_tool_call):
            return False
        tools = setup.tools
        caps = self._caps
        for call in message.tool_calls:
            tool = tools.get(call.tool)
            if tool is None:
                continue  # answered at once with an error
            name = tool.name
            if (
                tool.requires_approval
                or tool.ends_loop
                or name == _ASK_USER
                or name in _AGENT_TOOLS
                or (name == _SHELL and caps is not None and caps.shell_grant.loop_approval)
            ):
                return False
        return True

    def _needs_turn(self) -> bool:
        inst = self._instance
        if not inst.messages or inst.ask_user is not None:
            return False
        if inst.pending_approvals and any(not e.decided for e in inst.pending_approvals):
            return False
        last = inst.messages[-1]
        calls = last.tool_calls
        if calls:
            # Every call answered, none of them one that ends the loop (`_ending_call`): one plain loop, every turn.
            setup = self._setup
            tools = setup.tools if setup is not None else {}
            ended = False
            for call in calls:
                if call.result is None:
                    return False
                if not ended and not call.is_error:
                    tool = tools.get(call.tool)
                    ended = tool.ends_loop if tool is not None else call.tool == "task_complete"
            return not ended
        return not last.assistant and bool(last.user)

    def _ended(self, message: Message) -> bool:
        return self._ending_call(message) is not None

    def _ending_call(self, message: Message) -> ToolCall | None:
        setup = self._setup
        tools = setup.tools if setup is not None else {}
        for call in message.tool_calls:
            if call.result is None or call.is_error:
                continue
            tool = tools.get(call.tool)
            if (tool is not None and tool.ends_loop) or (tool is None and call.tool == "task_complete"):
                return call
        return None

    def _turn_message(self) -> Message:
        """The message the next answer goes into: the waiting user message (a fresh copy, since it may already be
        saved and messages are immutable once written), else a new one."""
        inst = self._instance
        last = inst.messages[-1]
        if last.user and not last.assistant and not last.tool_calls:
            turn = last.__copy__()
            inst.messages[-1] = turn
            return turn
        turn = Message(id=_runtime().new_message_id(), date_time=self._services.now())
        inst.messages.append(turn)
        return turn

    async def _model_turn(self, turn: Message) -> AskResult[Any]:
        """One model call, with the hooks around it and `Runtime.agent_retry` for transient failures."""
        model_call = _runtime().ModelCall
        make_call = model_call.__init__
        services = self._services
        setup = self._setup
        assert setup is not None
        assert self._model is not None
        inst = self._instance
        hooks = self._hooks
        policy = getattr(services, "agent_retry", None)
        retries = policy is not None and policy.max_retries > 0
        original = _clone(turn) if retries else turn
        if self._cancel_requested:  # cancel() while a follower held the run at TurnStarted
            self._drop_turn(turn, original)
            raise _Cancelled
        attempt = 0
        while True:
            # `model_call(...)`, its `__init__` called directly: a class call hands keywords to a Python `__init__` in
            # a new dict (Python 3.11), a direct call binds them without one.
            call = _new_object(model_call)
            make_call(
                call,
                self._turn_services_made or self._turn_services,
                self._model,
                self._provider,
                inst,
                turn,
                system=self._system(),
                settings=setup.settings,
                final_state="running",
                requested_model=inst.requested_model or inst.model,
                segment=False,
                owns_instance=False,
                raw_turns=bool(setup.definition.llm_turn_logs),
            )
            if hooks is not None and hooks.before_inference:
                from onellm.agents._hooks import BeforeInference, Block, Respond

                if call.request.tools:
                    # The hook may edit the list in place: the request gets its own, so the setup's (kept for the
                    # next turns and runs of the definition) stays as built.
                    call.request.tools = list(call.request.tools)
                ctx = BeforeInference(inst, call.request, self._turns)
                decision = await hooks.intercept(
                    "beforeInference",
                    hooks.before_inference,
                    ctx,
                    instance_id=inst.id,
                    message_id=turn.id,
                    tool_context=self._tool_context(None, None),
                )
                call.request = ctx.request
                if isinstance(decision, Block):
                    self._drop_turn(turn, original)
                    raise _blocked("beforeInference", decision.reason, inst, hooks.decided_by)
                if isinstance(decision, Respond):
                    return await self._respond(turn, decision)
            scope = None
            try:
                if self._drive_scope is not None:
                    answer = await (
                        self._streamed(call) if hooks is not None and hooks.on_stream_event else call.whole()
                    )
                else:
                    with anyio.CancelScope() as scope:
                        self._scope = scope
                        try:
                            if hooks is not None and hooks.on_stream_event:
                                answer = await self._streamed(call)
                            else:
                                answer = await call.whole()
                        finally:
                            self._scope = None
            except ProviderError as error:
                if not call.begun:
                    self._drop_turn(turn, original)
                    raise
                wait = _retry_wait(policy, attempt, error) if retries else None
                if wait is None:
                    raise
                attempt += 1
                inst.state = "running"
                inst.error = None
                turn = _clone(original)
                inst.messages[-1] = turn
                await services.clock.sleep(wait)
                continue
            except BaseException:
                if not call.begun:
                    self._drop_turn(turn, original)
                raise
            if scope is not None and scope.cancelled_caught:  # only possible once the answer was in and saved
                raise _Cancelled
            return answer

    def _reopen_cut_turn(self) -> None:
        """A run cancelled in the middle of a model answer kept what had arrived. Going on with no new message, that
        partial answer is not a finished one: the turn is asked again from its user side, as a retried call is (an
        answer that came in whole has its usage and stays; a new message would follow the partial turn instead)."""
        messages = self._instance.messages
        last = messages[-1] if messages else None
        if last is None or last.tool_calls or last.usage is not None or (last.user and not last.assistant):
            return
        if last.user:
            turn = _clone(last)
            turn.assistant = []
            messages[-1] = turn
        else:
            messages.pop()
        self._dirty = True

    def _drop_turn(self, turn: Message, original: Message) -> None:
        """A call that was never sent leaves the conversation as it was: a new empty turn goes, a waiting user
        message stays."""
        messages = self._instance.messages
        if turn.user:
            if not messages or messages[-1] is not turn:
                messages.append(turn)  # a stream that never opened took it out
        elif messages and messages[-1] is turn:
            messages.pop()

    async def _streamed(self, call: Any) -> AskResult[Any]:
        from onellm.agents._hooks import OnStreamEvent
        from onellm.runtime import StreamingAnswer

        hooks = self._hooks
        assert hooks is not None
        inst = self._instance
        answer: StreamingAnswer[Any] = StreamingAnswer(lambda: call)
        async for event in answer:
            await hooks.observe(
                "streamEvent",
                hooks.on_stream_event,
                OnStreamEvent(inst, event),
                instance_id=inst.id,
                message_id=call.turn.id,
            )
        return await answer.result()

    async def _respond(self, turn: Message, decision: Any) -> AskResult[Any]:
        """A `beforeInference` hook answered in the model's place: nothing is sent, nothing is paid."""
        from onellm.runtime import AskResult

        message = decision.message
        if message is not None:
            turn.assistant = list(message.assistant)
            turn.tool_calls = _runtime().kept_calls([_clone(c) for c in message.tool_calls])
        else:
            turn.assistant = [TextPart(decision.text or "")]
        await self._save()
        if self._services.recording:
            from onellm.records import MessageRecord

            await self._record(MessageRecord(instance_id=self._instance.id, message_id=turn.id, message=turn))
        assert self._model is not None
        return AskResult(
            text=turn.text,
            value=None,
            usage=None,
            cost=Cost(),
            warnings=[],
            instance=self._instance,
            finish=None,
            message=turn,
            model=self._model.qualified_name,
        )

    async def _after_answer(self, answer: AskResult[Any]) -> None:
        """The `afterInference` hooks, the turn's events, its cost, and `onMessage`."""
        inst = self._instance
        hooks = self._hooks
        turn = answer.message
        if hooks is not None and hooks.after_inference:
            from onellm.agents._hooks import AfterInference, Block

            ctx = AfterInference(inst, turn, self._turns)
            decision = await hooks.intercept(
                "afterInference",
                hooks.after_inference,
                ctx,
                instance_id=inst.id,
                message_id=turn.id,
                tool_context=self._tool_context(None, None),
            )
            if ctx.message is not turn:
                changed = _clone(turn)
                changed.assistant = list(ctx.message.assistant)
                changed.tool_calls = _runtime().kept_calls(ctx.message.tool_calls)
                self._replace(turn, changed)
                turn = changed
                await self._save()
            if isinstance(decision, Block):
                if turn.tool_calls:
                    from onellm.tools import ToolResult

                    plan = _Plan(turn)
                    for i, _ in enumerate(turn.tool_calls):
                        plan.results[i] = ToolResult.error("Not run: a hook blocked the answer that made this call.")
                    self._finish(plan)
                raise _blocked("afterInference", decision.reason, inst, hooks.decided_by)
        cost = answer.cost
        if self._listen:
            self._emit(
                TurnEnded(
                    instance_id=inst.id,
                    turn=self._turns,
                    message_id=turn.id,
                    text=turn.text,
                    tool_calls=len(turn.tool_calls),
                    usage=answer.usage,
                    cost=cost,
                )
            )
        if self._listen or (hooks is not None and hooks.on_cost):  # nobody is told of the cost otherwise
            await self._costed(cost, None)
        if hooks is not None and hooks.on_message:
            from onellm.agents._hooks import OnMessage

            await hooks.observe(
                "onMessage", hooks.on_message, OnMessage(inst, turn), instance_id=inst.id, message_id=turn.id
            )
        runtime = self._runtime
        hub = getattr(runtime, "_agent_hub", None) if runtime is not None else None
        if hub is not None and hub.monitors:
            hub.check(self, turn=True)

    async def _costed(self, cost: Cost, call_id: str | None) -> None:
        hooks = self._hooks
        observed = hooks is not None and bool(hooks.on_cost)
        if not (self._listen or observed) or (not cost.total and not cost.lines):
            return
        total = self._total = (self._total or _ZERO) + cost.total
        if self._listen:
            self._emit(CostIncurred(instance_id=self._instance.id, cost=cost, total=total, call_id=call_id))
        if hooks is not None and hooks.on_cost:
            from onellm.agents._hooks import OnCost

            await hooks.observe(
                "onCost", hooks.on_cost, OnCost(self._instance, cost, total, call_id), instance_id=self._instance.id
            )

    # ---------------------------------------------------------------------------------------------- tool calls

    async def _tool_phase(self, plan: _Plan, only: set[str] | None = None) -> AsyncIterator[AgentEvent]:
        """Decide every unanswered call of `plan.message` (those in `only`, when given: hooks, approvals), then run
        the ones that run now."""
        self._plan = plan
        await self._decide_calls(plan, only)
        if self._events:
            for event in self._flush():
                yield event
        async for event in self._run_jobs(plan):
            yield event

    async def _quiet_tool_phase(self, plan: _Plan, only: set[str] | None = None) -> None:
        """`_tool_phase` for a drive nobody follows (no event is queued, a sink is still told): the same steps as a
        coroutine, without the generators."""
        self._plan = plan
        await self._decide_calls(plan, only)
        jobs = plan.jobs
        if not jobs:
            return
        listen = self._listen
        if plan.parallel:
            if listen:
                for job in jobs:
                    self._emit(_started(self._instance.id, job))
            await self._step(self._run_parallel, jobs)
            for job in jobs:
                cost = self._job_done(plan, job)
                if cost is not None:
                    await self._costed(cost, job.call.id)
            return
        for job in jobs:
            if listen:
                self._emit(_started(self._instance.id, job))
            if self._drive_scope is not None and not self._cancel_requested:
                await self._run_job(job)  # `_step` under the drive's scope: the call itself
            else:
                await self._step(self._run_job, job)
            cost = self._job_done(plan, job)
            if cost is not None:
                await self._costed(cost, job.call.id)

    async def _decide_calls(self, plan: _Plan, only: set[str] | None = None) -> None:
        tools_module = _tools()
        restore_optional_nulls = tools_module.restore_optional_nulls
        setup = self._setup
        assert setup is not None
        inst = self._instance
        hooks = self._hooks
        listen = self._listen
        tools = setup.tools
        for index, call in enumerate(plan.message.tool_calls):
            if call.result is not None or (only is not None and call.id not in only):
                continue
            tool = tools.get(call.tool)
            early: ToolResult | None = None
            inputs: dict[str, Any] = call.inputs
            if tool is None:
                early = tools_module.ToolResult.error(_unknown(call.tool, tools))
            elif call.invalid_inputs is not None:
                early = tools_module.ToolResult.error(_not_an_object(call))
            else:
                inputs = _restored(call.inputs, tool.input_schema, restore_optional_nulls)
                held: tuple[str | None, str] | None = None
                if tool.requires_approval:
                    held = (f"tool '{tool.name}' needs a person's approval for each call", "tool")
                if hooks is not None and hooks.before_tool_call:
                    from onellm.agents._hooks import BeforeToolCall, Block, RequireApproval, Respond, as_tool_result

                    # The hooks read a copy: a change the call runs with is a `ModifyInputs`, written as a record;
                    # one made in place would run unseen while the saved call shows the model's arguments.
                    given = dict(inputs)
                    ctx = BeforeToolCall(inst, call, tool, given, plan.injected)
                    decision = await hooks.intercept(
                        "beforeToolCall",
                        hooks.before_tool_call,
                        ctx,
                        instance_id=inst.id,
                        message_id=plan.message.id,
                        tool_context=self._tool_context(call, tool),
                    )
                    if ctx.inputs is not given:
                        inputs = ctx.inputs
                    if isinstance(decision, Block):
                        early = tools_module.ToolResult.error(
                            f"A hook blocked this call: {decision.reason or 'no reason given'}"
                        )
                    elif isinstance(decision, Respond):
                        early = as_tool_result(decision.result if decision.result is not None else decision.text)
                    elif isinstance(decision, RequireApproval):
                        held = (decision.reason or "a hook asks for a person's approval", "hook")
                if early is None and held is None and tool.name == _SHELL:
                    early, shell_hold = self._shell_gate(tool, inputs)
                    if shell_hold is not None:
                        held = (shell_hold, "shell")
                if early is None and held is not None:
                    plan.held.append((index, held[0], held[1], dict(inputs)))
                    continue
            if early is not None:
                plan.results[index] = early
                if listen:
                    self._emit(
                        ToolCallStarted(
                            instance_id=inst.id, call_id=call.id, tool=call.tool, inputs=inputs, injected=call.injected
                        )
                    )
                    self._emit(_ended(inst.id, call, early, None))
                continue
            assert tool is not None
            plan.jobs.append(_Job(index, call, tool, inputs))
        jobs = plan.jobs
        plan.parallel = len(jobs) > 1 and all(j.tool.parallel_safe for j in jobs)

    def _shell_gate(self, tool: Tool[..., Any], inputs: Mapping[str, Any]) -> tuple[ToolResult | None, str | None]:
        """Under loop approval every shell command is held: its checks run now (a refused one is answered at once)
        and the person sees the command as it would run."""
        from onellm.tools import ToolResult

        caps = self._caps
        if caps is None or not caps.shell_grant.loop_approval:
            return None, None
        command = inputs.get("command")
        workdir = inputs.get("working_dir")
        environment = inputs.get("environment")
        if not isinstance(command, str) or not command.strip():
            return None, None  # the tool refuses its own arguments
        try:
            decision = caps.decide_command(
                command,
                working_directory=workdir if isinstance(workdir, str) else ".",
                environment=environment if isinstance(environment, Mapping) else None,
                base=self._workdir,
            )
        except CapabilityDeniedError as exc:
            return ToolResult.error(f"Tool '{tool.name}' failed: CapabilityDeniedError: {exc}"), None
        if not decision.hold:
            return None, None
        return None, f"shell command: {decision.request.display()}"

    async def _run_jobs(self, plan: _Plan) -> AsyncIterator[AgentEvent]:
        jobs = plan.jobs
        if not jobs:
            return
        inst = self._instance
        listen = self._listen
        if plan.parallel:
            if listen:
                for job in jobs:
                    self._emit(_started(inst.id, job))
                if self._events:
                    for event in self._flush():
                        yield event
            await self._step(self._run_parallel, jobs)
            for job in jobs:
                cost = self._job_done(plan, job)
                if cost is not None:
                    await self._costed(cost, job.call.id)
            if self._events:
                for event in self._flush():
                    yield event
            return
        for job in jobs:
            if listen:
                self._emit(_started(inst.id, job))
                if self._events:
                    for event in self._flush():
                        yield event
            await self._step(self._run_job, job)
            cost = self._job_done(plan, job)
            if cost is not None:
                await self._costed(cost, job.call.id)
            if self._events:
                for event in self._flush():
                    yield event

    async def _step(self, fn: Callable[..., Any], arg: Any) -> None:
        """Run one step under a cancel scope `cancel()` can reach (the drive's, when nobody follows the events)."""
        if self._cancel_requested:
            raise _Cancelled
        if self._drive_scope is not None:
            await fn(arg)
            return
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                await fn(arg)
            finally:
                self._scope = None
        if scope.cancelled_caught:
            raise _Cancelled

    async def _run_parallel(self, jobs: list[_Job]) -> None:
        escaped: list[BaseException] = []

        async def run(job: _Job) -> None:
            # A tool's failure is its result; what gets past it (KeyboardInterrupt, SystemExit) would end the event
            # loop itself when raised in a task of the group: kept, the other calls stopped, and raised as it came.
            try:
                await self._run_job(job)
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:
                escaped.append(exc)
                group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            for job in jobs:
                group.start_soon(run, job)
        if escaped:
            raise escaped[0]

    async def _run_job(self, job: _Job) -> None:
        tool = job.tool
        name = tool.name
        approved = job.approved
        # `_tool_context(job.call, tool, approved=approved)`, without the call around it (one per tool call), and its
        # `ToolContext(...)` as `__init__`'s work by position, without the class call's keyword binding
        context = _new_object(_ToolContext or _tool_context_type())
        context._set(
            self._caps,
            self._workdir,
            self._instance.id,
            job.call.id,
            name,
            self._runtime,
            self._tool_extra(tool, approved) if approved or name in _AGENT_TOOLS else None,
        )
        started = time.perf_counter()
        token = INSIDE_RUN.set(self._instance.id)
        try:
            result = await tool.invoke(job.inputs, context)
        finally:
            INSIDE_RUN.reset(token)
        job.duration_ms = int((time.perf_counter() - started) * 1000)
        hooks = self._hooks
        if hooks is not None and hooks.after_tool_call:
            from onellm.agents._hooks import AfterToolCall, Block
            from onellm.tools import ToolResult

            inst = self._instance
            ctx = AfterToolCall(inst, job.call, tool, job.inputs, result)
            decision = await hooks.intercept(
                "afterToolCall",
                hooks.after_tool_call,
                ctx,
                instance_id=inst.id,
                message_id=None,
                tool_context=context,
            )
            result = ctx.result
            if isinstance(decision, Block):
                result = ToolResult.error(
                    f"A hook blocked this call's result: {decision.reason or 'no reason given'}",
                    cost_lines=result.cost_lines,
                )
        job.result = result

    def _job_done(self, plan: _Plan, job: _Job) -> Cost | None:
        """Write a job's result into the plan; the cost of it to tell of (`_costed`), when it has one (a plain
        function: the costed result is the rare case)."""
        result = job.result
        assert result is not None
        index = job.index
        if job.tool.name == _ASK_USER and not result.is_error and _asks_the_user(result):
            from onellm.tools.builtin.agent import ask_user_request

            if plan.asked is None and self._instance.ask_user is None:
                plan.asked = index
                if self._listen:
                    request = next(r for r in map(ask_user_request, result.parts) if r is not None)
                    self._emit(
                        QuestionAsked(
                            instance_id=self._instance.id,
                            call_id=job.call.id,
                            question=request.question,
                            choices=request.choices,
                        )
                    )
                return None
            from onellm.tools import ToolResult

            result = ToolResult.error("One question at a time: ask this one after the person answered the first.")
        plan.results[index] = result
        if job.duration_ms is not None:
            plan.durations[index] = job.duration_ms
        if self._listen:
            self._emit(_ended(self._instance.id, job.call, result, job.duration_ms))
        return Cost.of(result.cost_lines) if result.cost_lines else None

    def _tool_context(self, call: ToolCall | None, tool: Tool[..., Any] | None, *, approved: bool = False) -> Any:
        name = tool.name if tool is not None else None
        return _tools().ToolContext(
            capabilities=self._caps,
            working_directory=self._workdir,
            instance_id=self._instance.id,
            call_id=call.id if call is not None else None,
            tool_name=name,
            runtime=self._runtime,
            extra=self._tool_extra(tool, approved) if approved or name in _AGENT_TOOLS else None,
        )

    def _tool_extra(self, tool: Tool[..., Any] | None, approved: bool) -> dict[str, Any] | None:
        extra: dict[str, Any] | None = {"approved": True} if approved else None
        if tool is not None and tool.name in _AGENT_TOOLS and self._runtime is not None:
            from onellm.agents._subagents import AgentTools

            extra = extra or {}
            extra["agents"] = AgentTools(self, self._hub())
        return extra

    def _finish(self, plan: _Plan) -> None:
        """Write a phase's outcome into the instance: the message with the results (a new object in its place), the
        held calls' pending approvals, the open question; and the records of it (written with the next save)."""
        inst = self._instance
        message = plan.message
        calls = message.tool_calls
        results = plan.results
        if results:
            new_calls: list[ToolCall] = []
            for i, call in enumerate(calls):
                result = results.get(i)
                if result is None:
                    new_calls.append(call)
                    continue
                answered = call.__copy__()  # `_clone`, without a call around it: once per answered call
                answered.result = list(result.parts)
                answered.is_error = result.is_error
                if result.cost_lines:
                    answered.cost_lines = list(result.cost_lines)
                    answered.cost = sum((line.amount for line in result.cost_lines), _ZERO)
                new_calls.append(answered)
            finished = message.__copy__()
            finished.tool_calls = new_calls
            messages = inst.messages
            if messages and messages[-1] is message:  # the turn just answered, nearly always
                messages[-1] = finished
            else:
                self._replace(message, finished)
            plan.message = finished
        else:
            finished = message
        if plan.asked is not None:
            from onellm.instances import AskUser

            inst.ask_user = AskUser(tool_call_id=finished.tool_calls[plan.asked].id, message_id=finished.id)
        if results and self._services.recording:  # the records of the step, written with the next save
            for i in results:
                self._later_record("toolCall", (finished.tool_calls[i], plan.durations.get(i)))
            ending = self._ending_call(finished)
            if ending is not None and any(finished.tool_calls[i] is ending for i in results):
                self._later_record("taskCompletion", (ending, None))
        if plan.held:
            from onellm.instances import PendingApproval

            now = self._services.now()

            for index, reason, by, inputs in plan.held:
                call = finished.tool_calls[index]
                inst.pending_approvals.append(
                    PendingApproval(
                        tool_call_id=call.id,
                        tool=call.tool,
                        message_id=finished.id,
                        inputs=inputs,
                        reason=reason,
                        requested_at=now,
                    )
                )
                self._later_record("approval", (call, by))
        self._dirty = True

    def _replace(self, old: Message, new: Message) -> None:
        messages = self._instance.messages
        for i in range(len(messages) - 1, -1, -1):
            if messages[i] is old:
                messages[i] = new
                return
        raise AgentStateError(
            f"instance {self._instance.id}: message {old.id} is no longer in the conversation",
            instance_id=self._instance.id,
            state=self._instance.state,
        )

    # ------------------------------------------------------------------------------------------ context strategies

    async def _maybe_compact(self) -> None:
        """Run the definition's context strategy when the previous model call's context reached its trigger (once
        per call; a `beforeCompaction` hook may veto it)."""
        from onellm.agents._context import strategy_threshold
        from onellm.agents._monitors import context_tokens

        setup = self._setup
        assert setup is not None
        assert self._model is not None
        strategy = setup.definition.context_strategy
        assert strategy is not None
        inst = self._instance
        tokens, at = context_tokens(inst.messages)
        if tokens is None or at is None or at == self._compacted_at:
            return
        if any(c.at_message_id == at for c in inst.compactions):
            return
        window = self._model.entry.context_window
        threshold = strategy_threshold(strategy, window if isinstance(window, int) else None)
        if threshold is None or tokens < threshold:
            return
        self._compacted_at = at
        kind = strategy.type or ""
        hooks = self._hooks
        if hooks is not None and hooks.before_compaction:
            from onellm.agents._hooks import BeforeCompaction, Block

            decision = await hooks.intercept(
                "beforeCompaction",
                hooks.before_compaction,
                BeforeCompaction(inst, kind),
                instance_id=inst.id,
                message_id=at,
                tool_context=self._tool_context(None, None),
            )
            if isinstance(decision, Block):
                return
        if kind == "clearToolResults":
            await self._clear_tool_results(strategy, at, tokens)
        elif kind == "compact":
            await self._compact(strategy, at, tokens)
        elif kind == "providerNative":
            native = getattr(self._provider, "compact_context", None)
            if native is None or not getattr(self._provider, "compacts_context", True):
                from onellm.messages import CallWarning

                text = (
                    f"contextStrategy providerNative: the {self._model.provider} provider cannot compact a "
                    "conversation; the run goes on uncompacted"
                )
                if not any(w.message == text for w in self._warnings):
                    self._warnings.append(CallWarning(kind="contextStrategy", message=text))
                return
            await self._native_compact(native, at, tokens)

    async def _clear_tool_results(self, strategy: Any, at: str, tokens: int) -> None:
        from onellm.agents._context import clear_tool_results

        inst = self._instance
        keep = strategy.keep_last if strategy.keep_last is not None else 3
        messages, changed = clear_tool_results(inst.messages, keep)
        if not changed:
            return
        inst.messages[:] = messages
        await self._compacted("clearToolResults", at, tokens, changed, None, None, None)

    async def _compact(self, strategy: Any, at: str, tokens: int) -> None:
        from onellm.agents._context import COMPACT_DEFINITION, SUMMARY_PREFIX, compact_cut, removed_cost, transcript
        from onellm.runtime import new_message_id, runtime_source

        inst = self._instance
        keep = strategy.keep_last if strategy.keep_last is not None else 6
        cut = compact_cut(inst.messages, keep)
        if cut <= 0:
            return
        removed = inst.messages[:cut]
        child_id: str | None = None
        try:
            from onellm.agents._verbs import start_agent_run
            from onellm.capabilities import Capabilities
            from onellm.definitions import Definition

            flow = getattr(self._runtime, "compact_flow", None)
            if flow is None:
                flow = Definition.loads(COMPACT_DEFINITION)
            run: AgentRun[Any] = await start_agent_run(
                self._services,
                flow,
                {"conversation": transcript(removed)},
                runtime=self._runtime,
                capabilities=Capabilities.none(),
                model=inst.model,
            )
            child = run.instance
            child_id = child.id
            child.spawner_instance_id = inst.id
            child.caller_instance_id = inst.id
            child.delegation_prompt = "Summarize the earlier conversation."
            result = await run.result()
            summary = result.text.strip()
            if result.stop_reason.value == "error" or not summary:
                raise AgentStateError(
                    f"the compact agent ended {result.stop_reason.value} without a summary", instance_id=child_id
                )
            cost = result.cost.total
        except RunCancelledError:
            raise _Cancelled from None  # the run was cancelled: the conversation stays as it was
        except Exception as error:
            await self._compaction_failed("compact", at, tokens, error)
            return
        message = Message(
            id=new_message_id(),
            user=[TextPart(f"{SUMMARY_PREFIX}\n\n{summary}")],
            date_time=self._services.now(),
            source=runtime_source(),
        )
        inst.messages[:cut] = [message]
        await self._compacted(
            "compact", at, tokens, [m.id or "" for m in removed], message.id, cost, removed_cost(removed), child_id
        )

    async def _native_compact(self, native: Any, at: str, tokens: int) -> None:
        """The provider compacts the conversation (`compact_context`), all but a user message the next turn answers,
        which stays after it. The call is priced from the catalog like a turn, and held on the spend caps."""
        from onellm.agents._context import removed_cost
        from onellm.records import InferenceRecord
        from onellm.runtime import ModelCall, new_message_id, runtime_source

        setup = self._setup
        model = self._model
        assert setup is not None
        assert model is not None
        inst = self._instance
        messages = list(inst.messages)
        last = messages[-1]
        pending = last if last.user and not last.assistant and not last.tool_calls else None
        sent = messages[:-1] if pending is not None else messages
        if not sent:
            return
        services = self._services
        reservation = None
        try:
            request = ModelCall(
                self._turn_services,
                model,
                self._provider,
                inst,
                last,
                system=self._system(),
                settings=setup.settings,
                final_state="running",
                history=sent,
                segment=False,
                owns_instance=False,
            ).request
            reservation = services.spend.reserve(model, request, inst)
            started = time.perf_counter()
            compacted = await native(request)
            duration = Decimal(int((time.perf_counter() - started) * 1000))
            usage = compacted.usage
            cost = None
            if usage is not None:
                priced = model.price(usage, service_tier=request.service_tier, at=services.clock.now())
                cost = priced.total if priced.priced or priced.lines else None
                usage = msgspec.structs.replace(usage, cost=cost, cost_lines=list(priced.lines))
        except Exception as error:
            if reservation is not None:
                reservation.release()
            await self._compaction_failed("providerNative", at, tokens, error)
            return
        if reservation is not None:
            reservation.commit(cost)
        self._warnings.extend(compacted.warnings)
        now = services.now()
        out: list[Message] = []
        for message in compacted.messages:
            if message.id is None:
                message.id = new_message_id()
                message.date_time = message.date_time or now
                message.source = message.source or runtime_source()
            out.append(message)
        kept = {m.id for m in out}
        removed = [m for m in sent if m.id not in kept]
        before = {m.id for m in sent}
        summary = next((m.id for m in reversed(out) if m.id not in before), None)  # holds the provider's state
        inst.messages[:] = [*out, pending] if pending is not None else out
        # the call is counted once, through this inference record; the compaction record's cost is for reading
        call = InferenceRecord(
            instance_id=inst.id,
            message_id=summary,
            provider=model.provider,
            operation="compact",
            duration_ms=duration,
            usage=usage,
        )
        await self._compacted(
            "providerNative", at, tokens, [m.id or "" for m in removed], summary, cost, removed_cost(removed), call=call
        )

    async def _compacted(
        self,
        strategy: str,
        at: str,
        tokens: int,
        replaced: list[str],
        summary_id: str | None,
        cost: Decimal | None,
        replaced_cost: Decimal | None,
        child_id: str | None = None,
        call: Record | None = None,
    ) -> None:
        """Record a compaction in `compactions`, save the instance in one write, write its records (the provider's
        call, when it made one, then the `compaction` record), and tell the listeners."""
        from onellm.instances import Compaction

        inst = self._instance
        entry = Compaction(
            strategy=strategy,
            at=self._services.now(),
            replaced_message_ids=replaced,
            summary_message_id=summary_id,
            cost=cost,
            at_message_id=at,
            replaced_cost=replaced_cost or None,
        )
        if child_id is not None:
            entry.extra["instanceId"] = child_id
        inst.compactions.append(entry)
        self._dirty = True
        await self._save()
        if self._services.recording:
            from onellm.records import CompactionRecord

            record = CompactionRecord(
                instance_id=inst.id,
                message_id=summary_id,
                strategy=strategy,
                at=entry.to_data().get("at"),
                replaced_message_ids=list(replaced),
                summary_message_id=summary_id,
                cost=cost,
            )
            await self._record(*(call, record) if call is not None else (record,))
        if self._listen:
            from onellm.agents._events import ContextCompacted

            self._emit(
                ContextCompacted(
                    instance_id=inst.id,
                    strategy=strategy,
                    replaced_message_ids=tuple(replaced),
                    summary_message_id=summary_id,
                    cost=cost,
                    context_tokens=tokens,
                )
            )

    async def _compaction_failed(self, strategy: str, at: str, tokens: int, error: BaseException) -> None:
        """The run goes on uncompacted: an error record, a warning, an event."""
        from onellm.messages import CallWarning

        inst = self._instance
        text = f"contextStrategy {strategy} failed, the run goes on uncompacted: {type(error).__name__}: {error}"
        self._warnings.append(CallWarning(kind="contextStrategy", message=text))
        await self._record(_error_record(inst, error, f"contextStrategy {strategy}"))
        if self._listen:
            from onellm.agents._events import ContextCompacted

            self._emit(ContextCompacted(instance_id=inst.id, strategy=strategy, context_tokens=tokens, error=text))

    # ------------------------------------------------------------------------------------------------ the ends

    async def _rest(self) -> None:
        inst = self._instance
        if inst.state == "error":  # maxIterations
            await self._save_if_dirty()
            await self._record(self._run_record("stopped", "error"))
            return
        if any(not e.decided for e in inst.pending_approvals):
            state = "waiting_for_approval"
        elif inst.messages and self._ended(inst.messages[-1]):
            state = "stopped"
        else:
            state = "waiting"
        await self._set_state(state)
        await self._save_if_dirty()
        if self._services.recording:
            await self._record(self._run_record("stopped", state))
        if self._listen and state == "waiting_for_approval":
            # Told only now, at rest: whoever follows the events may approve at once.
            for entry in inst.pending_approvals:
                if not entry.decided:
                    self._emit(
                        ApprovalNeeded(
                            instance_id=inst.id,
                            call_id=entry.tool_call_id,
                            tool=entry.tool or "",
                            inputs=dict(entry.inputs or {}),
                            reason=entry.reason,
                        )
                    )
        self._parked = True
        self._wake()

    async def _max_iterations(self) -> None:
        from onellm.instances import InstanceFailure

        setup = self._setup
        assert setup is not None
        inst = self._instance
        message = f"max iterations ({setup.max_iterations}) reached"
        inst.error = InstanceFailure(type="MaxIterations", message=message)
        await self._set_state("error")
        if self._services.recording:
            from onellm.records import ErrorRecord

            await self._record(
                ErrorRecord(instance_id=inst.id, error_type="MaxIterations", message=message, where="agent loop")
            )

    async def _cancelled(self, cancelled: BaseException, *, saved: bool) -> RunCancelledError:
        """Close a cancelled segment: finished calls keep their results, interrupted ones get an error result saying
        they were cancelled; the instance is saved `stopped` with `cancelled: true`."""
        from onellm.tools import ToolResult

        inst = self._instance
        if not self._current:
            # Cancelled while the segment took the lease or read the instance again: this copy may be older than the
            # store's, which is left as it is.
            self._wake()
            return RunCancelledError(f"the run of instance {inst.id} was cancelled before it started", instance=inst)
        with anyio.CancelScope(shield=True):
            plan = self._plan
            if plan is not None:
                for job in plan.jobs:
                    if job.index not in plan.results:
                        if job.result is not None:
                            plan.results[job.index] = job.result
                        else:
                            plan.results[job.index] = ToolResult.error("The call was cancelled before it finished.")
                plan.held = []
                plan.asked = None
                for i, call in enumerate(plan.message.tool_calls):
                    if call.result is None and i not in plan.results:
                        plan.results[i] = ToolResult.error("The call was cancelled before it ran.")
                self._finish(plan)
                self._plan = None
                _drop_answered(inst, plan.message)
            last = inst.messages[-1] if inst.messages else None
            if last is not None and any(c.result is None for c in last.tool_calls):
                waiting = {e.tool_call_id for e in inst.pending_approvals}
                if inst.ask_user is not None:
                    waiting.add(inst.ask_user.tool_call_id)
                open_calls = {
                    i: ToolResult.error("The call was cancelled before it ran.")
                    for i, c in enumerate(last.tool_calls)
                    if c.result is None and c.id not in waiting
                }
                if open_calls:
                    self._finish(_Plan(last, results=open_calls))
            inst.state = "stopped"
            inst.cancelled = True
            records: list[Record] = []
            try:
                await self._save()
            except StorageError as error:
                records.append(_error_record(inst, error, "save"))
            records.append(self._run_record("cancelled", "stopped"))
            await self._record(*records)
            self._wake()
        stopped = RunCancelledError(f"the run of instance {inst.id} was cancelled", instance=inst)
        if saved and isinstance(cancelled, RunCancelledError):
            stopped.__cause__ = cancelled
        return stopped

    async def _paused(self) -> None:
        """Close a segment its follower left at an event, between two steps: the results of the calls that ran are
        kept and saved; the calls that did not run yet are left without a result, and the next drive of this handle
        runs them (any other runner answers them as interrupted, as after a crash)."""
        inst = self._instance
        with anyio.CancelScope(shield=True):
            unstarted: set[str] = set()
            plan = self._plan
            if plan is not None:
                restart = {j.call.id for j in plan.jobs if j.approved and j.index not in plan.results}
                for entry in inst.pending_approvals:
                    if entry.tool_call_id in restart:
                        entry.extra.pop("startedAt", None)  # decided, not run: the next segment runs it
                self._finish(plan)
                self._plan = None
                _drop_answered(inst, plan.message)
            messages = inst.messages
            if messages and not (messages[-1].user or messages[-1].assistant or messages[-1].tool_calls):
                messages.pop()  # the empty turn of a model call not made yet (left at TurnStarted)
            waiting = {e.tool_call_id for e in inst.pending_approvals}
            if inst.ask_user is not None:
                waiting.add(inst.ask_user.tool_call_id)
            for message in messages:
                for call in message.tool_calls:
                    if call.result is None and call.id is not None and call.id not in waiting:
                        unstarted.add(call.id)
            self._unstarted = unstarted or None
            try:
                await self._save()
            except Exception as error:  # not raised: the follower is gone, and GeneratorExit must go on
                await self._record(_error_record(inst, error, "save"))

    async def _failed(self, error: BaseException) -> None:
        """Close a failed segment: the instance is saved in `error` (a failed model call saved it already)."""
        from onellm.instances import InstanceFailure

        inst = self._instance
        with anyio.CancelScope(shield=True):
            records: list[Record] = []
            if not isinstance(error, StorageError | AgentStateError) and not (
                inst.state == "error" and inst.error is not None
            ):
                inst.state = "error"
                inst.error = InstanceFailure(type=type(error).__name__, message=str(error))
                records.append(_error_record(inst, error, "agent loop"))
                try:
                    await self._save()
                except StorageError as failure:
                    error.add_note(f"the instance was not saved: {failure}")
                    records.append(_error_record(inst, failure, "save"))
            elif isinstance(error, StorageError):
                records.append(_error_record(inst, error, "save"))
            records.append(self._run_record("stopped", inst.state))
            await self._record(*records)
            self._wake()

    # ---------------------------------------------------------------------------------------------- plumbing

    async def _add(self, message: Message) -> None:
        """Append a message that did not come from the model (a prompt, a delivered message). Inline asset content
        goes to the instance's asset store now: a save stores only the last message's, and several may come first."""
        inst = self._instance
        if message.user:
            _runtime().store_assets(self._services.store, inst, message)
        inst.messages.append(message)
        self._dirty = True
        if self._services.recording:
            from onellm.records import MessageRecord

            await self._record(MessageRecord(instance_id=inst.id, message_id=message.id, message=message))
        hooks = self._hooks
        if hooks is not None and hooks.on_message:
            from onellm.agents._hooks import OnMessage

            await hooks.observe(
                "onMessage", hooks.on_message, OnMessage(inst, message), instance_id=inst.id, message_id=message.id
            )

    async def _set_state(self, state: str) -> None:
        inst = self._instance
        previous = inst.state
        if previous == state:
            return
        inst.state = state
        self._dirty = True
        if self._services.recording:
            await self._record(self._run_record("stateChanged", state))
        if self._listen:
            self._emit(StateChanged(instance_id=inst.id, previous=previous, state=state))
        hooks = self._hooks
        if hooks is not None and hooks.on_state_change:
            from onellm.agents._hooks import OnStateChange

            await hooks.observe(
                "onStateChange", hooks.on_state_change, OnStateChange(inst, previous, state), instance_id=inst.id
            )

    async def _save(self) -> None:
        # One write at a time: a decision saved from another task never lands after a newer save. A flag, and an
        # event only when another save is under way (cheaper than a lock for the uncontended save of every turn).
        while self._saving:
            waiter = self._save_waiter
            if waiter is None:
                waiter = self._save_waiter = anyio.Event()
            await waiter.wait()
        self._saving = True
        try:
            await self._services.save(self._instance)
            self._stored = True
        finally:
            self._saving = False
            waiter, self._save_waiter = self._save_waiter, None
            if waiter is not None:
                waiter.set()
        self._dirty = False
        pending = self._pending_records
        if pending:
            self._pending_records = []
            await self._record(*(self._build_record(kind, data) for kind, data in pending))

    async def _save_if_dirty(self) -> None:
        if self._dirty:
            await self._save()

    def _later_record(self, kind: str, data: Any) -> None:
        """A record written once the step it describes is saved (only built when a sink listens)."""
        if self._services.recording:
            self._pending_records.append((kind, data))

    def _build_record(self, kind: str, data: Any) -> Record:
        from onellm.records import ApprovalRecord, TaskCompletionRecord, ToolCallRecord

        inst = self._instance
        call, extra = data
        message_id = _message_of(inst, call)
        if kind == "toolCall":
            return ToolCallRecord(instance_id=inst.id, message_id=message_id, call=call, duration_ms=extra)
        if kind == "approval":
            return ApprovalRecord(
                instance_id=inst.id,
                message_id=message_id,
                tool_call_id=call.id,
                tool=call.tool,
                decision="requested",
                by=extra,
            )
        return TaskCompletionRecord(
            instance_id=inst.id, message_id=message_id, tool=call.tool, result=call.inputs.get("result", call.inputs)
        )

    async def _record(self, *records: Record) -> None:
        services = self._services
        if services.recording:
            await services.record(*records)

    def _run_record(self, event: str, state: str | None) -> Record:
        from onellm.records import RunRecord

        model = self._model.qualified_name if self._model is not None else self._instance.model
        return RunRecord(instance_id=self._instance.id, event=event, state=state, model=model)

    def _emit(self, event: AgentEvent) -> None:
        if self._following:
            self._events.append(event)
        sink = self._sink
        if sink is not None:
            sink.publish(event)

    # ------------------------------------------------------------------------------------------------ the result

    def _final(self) -> AgentResult[T]:
        """How the instance stands, as an `AgentResult`."""
        inst = self._instance
        state = inst.effective_state.value  # a state this version does not know counts as stopped
        undecided = [e for e in inst.pending_approvals if not e.decided]
        ending: ToolCall | None = None
        if undecided:
            reason = StopReason.WAITING_FOR_APPROVAL
        elif state == "error":
            failure = inst.error
            reason = (
                StopReason.MAX_ITERATIONS
                if failure is not None and failure.type == "MaxIterations"
                else (StopReason.ERROR)
            )
        elif state == "stopped":
            ending = self._ending_call(inst.messages[-1]) if inst.messages else None
            if inst.cancelled:
                reason = StopReason.CANCELLED
            elif ending is not None:
                reason = StopReason.COMPLETED
            else:
                reason = StopReason.STOPPED
        else:
            reason = StopReason.WAITING
        result: Any = None
        summary: str | None = None
        title: str | None = None
        output: Any = None
        if ending is not None:
            result, summary, title, output = self._completion(ending)
        text = result if isinstance(result, str) else _last_text(inst)
        question: AskUserRequest | None = None
        question_call: str | None = None
        if inst.ask_user is not None:
            found = find_call(inst, inst.ask_user.tool_call_id, inst.ask_user.message_id)
            if found is not None:
                from onellm.tools.builtin.agent import AskUserRequest

                asked = inst.messages[found[0]].tool_calls[found[1]]
                raw = asked.inputs.get("choices")
                choices = tuple(c for c in raw if isinstance(c, str)) if isinstance(raw, list) else ()
                question = AskUserRequest(str(asked.inputs.get("question", "")), choices)
                question_call = asked.id
        cost = instance_cost(inst)
        return AgentResult(
            stop_reason=reason,
            text=text,
            instance=inst,
            result=result,
            summary=summary,
            title=title,
            output=output,
            usage=instance_usage(inst),
            cost=cost,
            subtree_cost=cost,
            turns=self._turns,
            pending_approvals=undecided,
            question=question,
            question_call_id=question_call,
            error=inst.error,
            warnings=list(self._warnings),
        )

    def _completion(self, call: ToolCall) -> tuple[Any, str | None, str | None, Any]:
        """(result, summary, title, typed output) of the call that ended the loop."""
        from onellm.messages import JsonPart

        setup = self._setup
        if call.tool == "task_complete":
            inputs = call.inputs
            result = inputs.get("result")
            summary = inputs.get("summary")
            title = inputs.get("title")
            output: Any = None
            if setup is not None and setup.output is not None:
                from onellm.schema import compile_type

                try:
                    output = compile_type(setup.output).converter(result)
                except Exception:
                    output = None
            elif setup is not None and setup.output_schema is not None:
                output = result
            return (
                result,
                summary if isinstance(summary, str) else None,
                title if isinstance(title, str) else None,
                output,
            )
        parts = call.result or []
        if len(parts) == 1 and isinstance(parts[0], JsonPart):
            value = parts[0].json
        else:
            value = "".join(p.text for p in parts if isinstance(p, TextPart))
        return value, None, None, value


# ----------------------------------------------------------------------------------------------------- helpers


@functools.cache
def _runtime() -> Any:
    """`onellm.runtime`, imported on first use (a name imported from a package in a function costs a lookup each
    time)."""
    import onellm.runtime

    return onellm.runtime


@functools.cache
def _lease_type() -> Any:
    """`onellm.instances.InstanceLease`, imported on first use."""
    from onellm.instances import InstanceLease

    return InstanceLease


@functools.cache
def _tools() -> Any:
    """`onellm.tools`, imported on first use."""
    import onellm.tools

    return onellm.tools


_new_object = object.__new__

# Imported on first use and kept in a global (read for every tool call: cheaper than a cached function's call).
_ToolContext: Any = None


def _tool_context_type() -> Any:
    global _ToolContext
    _ToolContext = _tools().ToolContext
    return _ToolContext


_SCALARS = frozenset({str, int, float, bool})


def _restored(inputs: dict[str, Any], schema: Mapping[str, Any], restore: Callable[..., Any]) -> Any:
    """`restore_optional_nulls(inputs, schema)`: for a flat object with no null (nothing to restore), the copy it
    would make, made at once."""
    if type(inputs) is dict and type(schema.get("properties")) is dict:
        for value in inputs.values():
            if type(value) not in _SCALARS:
                return restore(inputs, schema)
        return dict(inputs)
    return restore(inputs, schema)


def _releases_at_once(lease: InstanceLease) -> bool:
    """Whether giving `lease` back cannot wait: `release` (the base class's, which awaits `_release`) and the store's
    `_release` are `async def`s with no await in them (see `_never_waits`), as a store in memory has them."""
    release = type(lease).release
    never_waits = _runtime()._never_waits
    if never_waits(release):
        return True
    return release is _lease_type().release and never_waits(type(lease)._release)


def _asks_the_user(result: ToolResult) -> bool:
    from onellm.tools.builtin.agent import ask_user_request

    return any(ask_user_request(p) for p in result.parts)


def _clone(value: _M) -> _M:
    """A shallow copy of a message or a tool call (their own `__copy__`, which keeps the key layout)."""
    return value.__copy__()


def _where(services: RuntimeServices, instance: Instance) -> str:
    path_of = getattr(services.store, "path_of", None)
    if callable(path_of) and instance.id is not None:
        try:
            return str(path_of(instance.id))
        except Exception:
            pass
    return f"instance {instance.id}"


def _folder_of(agent_definition: str | None, caps: Capabilities) -> Path | None:
    """The folder a saved instance's templates embed files from: its definition's, when the run's grants may read it.
    The path is the file's word, and anyone who can edit the file could name any folder with it."""
    if not agent_definition:
        return None
    path = Path(agent_definition)
    try:
        if path.is_dir():
            folder = path.resolve()
        elif path.exists():
            folder = path.resolve().parent
        else:
            return None
    except OSError:
        return None
    return folder if caps.is_readable(folder) else None


def _drop_answered(instance: Instance, message: Message) -> None:
    """Drop the pending approvals of `message`'s calls that have a result now (approved calls that ran)."""
    if instance.pending_approvals:
        answered = {c.id for c in message.tool_calls if c.result is not None}
        instance.pending_approvals = [e for e in instance.pending_approvals if e.tool_call_id not in answered]


def _injected(call: ToolCall) -> ToolCall:
    from onellm.runtime import new_message_id

    made = _clone(call)
    made.when = None
    made.injected = True
    if made.id is None:
        made.id = "call_" + new_message_id().replace("-", "")[:24]
    return made


def _not_an_object(call: ToolCall) -> str:
    text = call.invalid_inputs or ""
    shown = text if len(text) <= 200 else text[:200] + "..."
    if text.startswith("{"):
        try:
            deep = isinstance(msgspec.json.decode(text), dict)
        except msgspec.DecodeError:
            deep = False
        if deep:  # an object kept as text because it nests too deep to be saved as it is
            depth = _runtime().MAX_INPUT_DEPTH
            return f"The arguments of tool '{call.tool}' nest deeper than {depth} levels: {shown}"
    return f"The arguments of tool '{call.tool}' are not a JSON object: {shown}"


def _unknown(name: str, tools: Mapping[str, Any]) -> str:
    known = ", ".join(sorted(tools)) or "none"
    return f"Unknown tool '{name}'. The tools you can call are: {known}."


def _started(instance_id: str | None, job: _Job) -> ToolCallStarted:
    return ToolCallStarted(
        instance_id=instance_id,
        call_id=job.call.id,
        tool=job.call.tool,
        inputs=job.inputs,
        injected=job.call.injected,
    )


def _ended(instance_id: str | None, call: ToolCall, result: ToolResult, duration: int | None) -> ToolCallEnded:
    cost = sum((line.amount for line in result.cost_lines), _ZERO) if result.cost_lines else None
    return ToolCallEnded(
        instance_id=instance_id,
        call_id=call.id,
        tool=call.tool,
        is_error=result.is_error,
        result=list(result.parts),
        cost=cost,
        duration_ms=duration,
    )


def _blocked(point: str, reason: str | None, instance: Instance, hook: str | None) -> HookBlockedError:
    because = reason or "no reason given"
    return HookBlockedError(
        f"hook {hook} blocked the run of instance {instance.id} at {point}: {because}",
        point=point,
        hook=hook,
        reason=reason,
        instance=instance,
    )


def _retry_wait(policy: Any, attempt: int, error: ProviderError) -> float | None:
    from onellm.errors import OverloadedError, RateLimitError

    if not policy.is_retryable(error):
        return None
    after = error.retry_after if isinstance(error, RateLimitError | OverloadedError) else None
    wait: float | None = policy.delay(attempt, after)
    return wait


def _last_text(instance: Instance) -> str:
    for message in reversed(instance.messages):
        text = message.text
        if text:
            return text
    return ""


def _message_of(instance: Instance, call: ToolCall) -> str | None:
    for message in reversed(instance.messages):
        for candidate in message.tool_calls:
            if candidate is call:
                return message.id
    return None


def _error_record(instance: Instance, error: BaseException, where: str) -> Record:
    from onellm.records import ErrorRecord

    return ErrorRecord(instance_id=instance.id, error_type=type(error).__name__, message=str(error), where=where)


# ---------------------------------------------------------------------------------------------- the blocking form


class SyncAgentRun(Generic[T]):
    """The blocking form of `AgentRun`, for scripts and notebooks: the same methods, each driven on onellm's shared
    event loop. Another thread may call `message`, `approve`, `deny` or `cancel` while one blocks in `result()`."""

    def __init__(self, run: AgentRun[T]) -> None:
        self.run = run
        """The `AgentRun` underneath."""

    def __repr__(self) -> str:
        return f"Sync{self.run!r}"

    @property
    def instance_id(self) -> str | None:
        return self.run.instance_id

    @property
    def instance(self) -> Instance:
        return self.run.instance

    @property
    def state(self) -> str | None:
        return self.run.state

    @property
    def pending_approvals(self) -> list[PendingApproval]:
        return self.run.pending_approvals

    def result(self) -> AgentResult[T]:
        """Blocking form of `AgentRun.result`."""
        from onellm.runtime import drive

        return drive(self.run.result(), "AgentRun.result")

    def events(self) -> Iterator[AgentEvent]:
        """Blocking form of `AgentRun.events`: a plain iterator."""
        from onellm.runtime import drive

        stream = self.run.events()
        try:
            while True:
                try:
                    yield drive(stream.__anext__(), "AgentRun.events")
                except StopAsyncIteration:
                    return
        finally:
            drive(stream.aclose(), "AgentRun.events")  # type: ignore[attr-defined]

    def message(self, content: Any, *, source: str = "api", name: str | None = None) -> None:
        """Blocking form of `AgentRun.message`."""
        from onellm.runtime import drive

        drive(self.run.message(content, source=source, name=name), "AgentRun.message")

    def approve(self, tool_call_id: str | None = None, *, by: str = "api") -> None:
        """Blocking form of `AgentRun.approve`."""
        from onellm.runtime import drive

        drive(self.run.approve(tool_call_id, by=by), "AgentRun.approve")

    def deny(self, tool_call_id: str | None = None, *, reason: str | None = None, by: str = "api") -> None:
        """Blocking form of `AgentRun.deny`."""
        from onellm.runtime import drive

        drive(self.run.deny(tool_call_id, reason=reason, by=by), "AgentRun.deny")

    def cancel(self) -> None:
        """Blocking form of `AgentRun.cancel`."""
        from onellm.runtime import drive

        drive(self.run.cancel(), "AgentRun.cancel")

    def resume(self) -> None:
        """See `AgentRun.resume`."""
        self.run.resume()


_publish("onellm", AgentRun)
_publish("onellm.agents", SyncAgentRun)
