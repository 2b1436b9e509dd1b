"""`Runtime`: what the verbs run on (catalog, providers, store, record sinks, tools, grants, clock, spend caps and
result cache), and the services it hands to the runs it starts (`runtime.services`, a `RuntimeServices`)."""

from __future__ import annotations

import dis
import functools
import inspect
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from types import CodeType
from typing import TYPE_CHECKING, Any, TypeVar, Unpack, cast, overload

import anyio

from onellm.clock import SystemClock
from onellm.errors import StorageError
from onellm.messages import Message, Timestamp
from onellm.runtime._cache import ResultCache
from onellm.runtime._call import ModelCall, StreamingAnswer
from onellm.runtime._media import MediaMethods
from onellm.runtime._prompt import Content, RequestOptions, api_source, check_options, new_message_id, prompt_parts
from onellm.runtime._registry import ProviderRegistry
from onellm.runtime._results import AskResult
from onellm.runtime._spend import SpendAccount

if TYPE_CHECKING:
    from onellm.agents import AgentDefinitions, AgentEvents, AgentResult, AgentRun, Hooks, HookSource, SyncAgentRun
    from onellm.capabilities import Capabilities
    from onellm.catalog import Catalog, ResolvedModel
    from onellm.clock import Clock
    from onellm.deciders import DecisionResult, DecisionStats, DecisionSummary
    from onellm.instances import Instance, InstanceLease, InstanceStore
    from onellm.providers import RetryPolicy
    from onellm.records import Record, RecordSink, RecordSinks
    from onellm.runtime._chat import ChatSession
    from onellm.runtime._results import ScriptResult
    from onellm.runtime._services import RuntimeServices
    from onellm.tools import ToolRegistry

__all__ = ["Content", "Runtime", "StreamingAnswer"]

T = TypeVar("T")


class Runtime(MediaMethods):
    """Everything a call needs: the model catalog, the providers, the instance store, record sinks, tools, grants,
    the clock, spend caps and the optional result cache. Media calls (`generate_image`, `speak`, `transcribe`,
    `moderate` and the streamed forms) are in `MediaMethods`.

    ```python
    from decimal import Decimal

    import onellm
    from onellm import FileInstanceStore, Runtime
    from onellm.testing import ScriptedProvider

    rt = Runtime(store=FileInstanceStore("runs"), spend_cap=Decimal("5"))
    rt.providers.set("openai", ScriptedProvider("openai").enqueue_text("2, 3 and 5."))
    with onellm.use_runtime(rt):
        print(await onellm.ask("gpt-6-luna", "Name three prime numbers."))
    ```
    """

    def __init__(
        self,
        *,
        catalog: Catalog | None = None,
        providers: ProviderRegistry | None = None,
        store: InstanceStore | None = None,
        records: RecordSinks | Sequence[RecordSink] | None = None,
        tools: ToolRegistry | None = None,
        capabilities: Capabilities | None = None,
        clock: Clock | None = None,
        spend_cap: Decimal | int | str | None = None,
        instance_spend_cap: Decimal | int | str | None = None,
        max_cost_per_call: Decimal | int | str | None = None,
        cache: ResultCache | bool = False,
        allowed_environment: Sequence[str] = (),
        scope_values: Mapping[str, Any] | None = None,
        embed_sources: Sequence[str | os.PathLike[str]] = (),
        environ: Mapping[str, str] | None = None,
        llm_turn_logs: bool = False,
    ) -> None:
        from onellm.records import RecordSinks as _Sinks

        self._catalog = catalog
        self.environ: Mapping[str, str] = environ if environ is not None else os.environ
        """Where key variables and `.env` values are read (the process environment by default)."""
        self.providers = providers if providers is not None else ProviderRegistry(environ)
        if store is None:
            from onellm.instances import MemoryInstanceStore

            store = MemoryInstanceStore()
        self.store: InstanceStore = store
        self.clock: Clock = clock or SystemClock()
        if records is None:
            self.records: RecordSinks = _Sinks(clock=self.clock)
        elif isinstance(records, _Sinks):
            self.records = records
        else:
            self.records = _Sinks(*records, clock=self.clock)
        self._tools = tools
        self._capabilities = capabilities
        self._protected: tuple[Capabilities, tuple[Path, ...], Capabilities] | None = None
        self.cache: ResultCache | None = ResultCache() if cache is True else (cache or None)
        self.allowed_environment: tuple[str, ...] = tuple(allowed_environment)
        """Environment variables a template may read through `.env`."""
        self.scope_values: dict[str, Any] = dict(scope_values or {})
        """Values a host gives templates (`git`, for example)."""
        self.embed_sources: tuple[str | os.PathLike[str], ...] = tuple(embed_sources)
        self.llm_turn_logs = bool(llm_turn_logs)
        """Write a `rawTurn` record (request and response bodies, secrets masked) for every model call."""
        self._spend = SpendAccount(
            spend_cap=spend_cap, instance_spend_cap=instance_spend_cap, max_cost_per_call=max_cost_per_call
        )
        self._hooks: Hooks | None = None
        self.hook_source: HookSource | None = None
        """Loads the hook files definitions name (`hooks:`); None: the one an installed package offers (onellm-js)."""
        self._agent_retry: RetryPolicy | None = None
        self._agent_definitions: AgentDefinitions | None = None
        self._agent_events: AgentEvents | None = None
        self._agent_hub: Any = None
        self.agents_may_reach_any_instance = False
        """Let the agent tools reach every instance in the store, not only the calling agent and those it started
        (following `spawnerInstanceId`). Calls on the runtime itself are never restricted."""
        self.max_agent_depth = 8
        """How deep agents may nest (a child of a child ...): a cycle of agents starting each other stops here."""
        self.compact_flow: Any = None
        """What the `compact` context strategy runs to write a summary: a `.flow` or agent definition path, or a
        `Definition`, run as a child instance of the agent being compacted. None: the shipped `compact` flow."""
        self._services = _Services(self)

    def __repr__(self) -> str:
        return f"Runtime(store={self.store!r}, providers={self.providers!r})"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, **options: Any) -> Runtime:
        """A runtime configured from the environment: `ONELLM_INSTANCES` (a directory for a `FileInstanceStore`)
        and `ONELLM_RECORDS` (a directory for a `JsonlRecordSink`)."""
        env = environ if environ is not None else os.environ
        instances = env.get("ONELLM_INSTANCES")
        if instances and "store" not in options:
            from onellm.instances import FileInstanceStore

            options["store"] = FileInstanceStore(instances)
        records = env.get("ONELLM_RECORDS")
        if records and "records" not in options:
            from onellm.records import JsonlRecordSink

            options["records"] = [JsonlRecordSink(records)]
        if environ is not None:
            options.setdefault("environ", environ)
        return cls(**options)

    # ---------------------------------------------------------------------------------------------- components
    @property
    def catalog(self) -> Catalog:
        """The model catalog (`Catalog.default()` unless one was given)."""
        if self._catalog is None:
            from onellm.catalog import Catalog

            self._catalog = Catalog.default()
        return self._catalog

    @catalog.setter
    def catalog(self, value: Catalog) -> None:
        self._catalog = value

    @property
    def tools(self) -> ToolRegistry:
        """Tools that definitions may name."""
        if self._tools is None:
            from onellm.tools import ToolRegistry

            self._tools = ToolRegistry()
        return self._tools

    @property
    def capabilities(self) -> Capabilities:
        """What tools may touch: files under the working directory by default; no shell, no network.

        The value read here protects the runtime's own state besides what the grant protects: the directory of a
        `FileInstanceStore` and of every `JsonlRecordSink` the runtime uses are neither readable nor writable by the
        file tools, so a model can neither read other agents' transcripts nor rewrite its own transcript, approvals
        or audit records. Hand this value, not the grant given, to the tools a run uses.
        """
        if self._capabilities is None:
            from onellm.capabilities import Capabilities

            self._capabilities = Capabilities.default()
        base = self._capabilities
        state = self._state_directories()
        cached = self._protected
        if cached is not None and cached[0] is base and cached[1] == state:
            return cached[2]
        caps = base.with_protected_paths(*state) if state else base
        self._protected = (base, state, caps)
        return caps

    @capabilities.setter
    def capabilities(self, value: Capabilities) -> None:
        self._capabilities = value
        self._protected = None

    def _state_directories(self) -> tuple[Path, ...]:
        """The directories where this runtime keeps instances and records on disk."""
        found: list[Path] = []
        for holder in (self.store, *self.records.sinks):
            directory = getattr(holder, "directory", None)
            if isinstance(directory, Path):
                found.append(directory)
        return tuple(found)

    @property
    def hooks(self) -> Hooks:
        """The host's agent hooks (see `onellm.agents.Hooks`); they wrap the hooks a definition names."""
        if self._hooks is None:
            from onellm.agents import Hooks

            self._hooks = Hooks()
        return self._hooks

    @property
    def agent_definitions(self) -> AgentDefinitions:
        """Agent definitions registered by name, which `run_agent_async` starts without file access (see
        `onellm.agents.AgentDefinitions`)."""
        if self._agent_definitions is None:
            from onellm.agents import AgentDefinitions

            self._agent_definitions = AgentDefinitions()
        return self._agent_definitions

    @property
    def agent_events(self) -> AgentEvents:
        """What every agent of this runtime does, as events (see `onellm.agents.AgentEvents`): monitors firing,
        sub-agents starting, compactions, and while anyone listens every event of every run."""
        if self._agent_events is None:
            from onellm.agents import AgentEvents

            self._agent_events = AgentEvents()
        return self._agent_events

    @property
    def agent_retry(self) -> RetryPolicy:
        """How the agent loop retries a model call that failed in a way the provider calls transient, after the
        provider client's own retries: `RetryPolicy(max_retries=0)` by default (no more tries), honouring
        `Retry-After`."""
        if self._agent_retry is None:
            from onellm.providers import RetryPolicy

            self._agent_retry = RetryPolicy(max_retries=0)
        return self._agent_retry

    @agent_retry.setter
    def agent_retry(self, value: RetryPolicy) -> None:
        from onellm.providers import RetryPolicy

        if not isinstance(value, RetryPolicy):
            raise TypeError(f"agent_retry: expected a RetryPolicy, not {type(value).__name__}")
        self._agent_retry = value

    @property
    def services(self) -> RuntimeServices:
        """What the runs this runtime starts use (routing, spend holds, records, saving under a lease, new
        instances, the clock): the plumbing beneath the verbs, for code that builds runs of its own."""
        return self._services

    # -------------------------------------------------------------------------------------------------- caps
    @property
    def spend_cap(self) -> Decimal | None:
        """Dollars the whole runtime may spend."""
        return self._spend.spend_cap

    @spend_cap.setter
    def spend_cap(self, value: Decimal | int | str | None) -> None:
        self._spend.spend_cap = value

    @property
    def instance_spend_cap(self) -> Decimal | None:
        """Dollars one instance may spend, its earlier turns counted."""
        return self._spend.instance_spend_cap

    @instance_spend_cap.setter
    def instance_spend_cap(self, value: Decimal | int | str | None) -> None:
        self._spend.instance_spend_cap = value

    @property
    def max_cost_per_call(self) -> Decimal | None:
        """The most one call may cost, judged by its worst case before it is sent."""
        return self._spend.max_cost_per_call

    @max_cost_per_call.setter
    def max_cost_per_call(self, value: Decimal | int | str | None) -> None:
        self._spend.max_cost_per_call = value

    @property
    def spent(self) -> Decimal:
        """What calls through this runtime have cost so far (counted when a spend cap is set)."""
        return self._spend.spent

    async def aclose(self) -> None:
        """Close the providers the runtime created from the catalog (their HTTP connections)."""
        await self.providers.aclose()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -------------------------------------------------------------------------------------------------- verbs
    @overload
    async def generate(
        self,
        model: str,
        *content: Content,
        system: str | None = None,
        output: None = None,
        **options: Unpack[RequestOptions],
    ) -> AskResult[Any]: ...
    @overload
    async def generate(
        self,
        model: str,
        *content: Content,
        system: str | None = None,
        output: type[T],
        **options: Unpack[RequestOptions],
    ) -> AskResult[T]: ...
    async def generate(
        self,
        model: str,
        *content: Content,
        system: str | None = None,
        output: type[T] | None = None,
        **options: Unpack[RequestOptions],
    ) -> AskResult[Any]:
        """One call: the answer with its usage, cost, warnings, saved instance and finish reason.

        Raises:
            RunCancelledError: cancelled; the instance is saved `stopped` and `cancelled` with what had arrived.
            StorageError: the answer could not be saved; `result` holds it (and the instance, in memory).
        """
        call = self._single_call(model, content, system, output, options)
        return await call.whole()

    @overload
    async def ask(
        self,
        model: str,
        *content: Content,
        system: str | None = None,
        output: None = None,
        **options: Unpack[RequestOptions],
    ) -> str: ...
    @overload
    async def ask(
        self,
        model: str,
        *content: Content,
        system: str | None = None,
        output: type[T],
        **options: Unpack[RequestOptions],
    ) -> T: ...
    async def ask(
        self,
        model: str,
        *content: Content,
        system: str | None = None,
        output: type[T] | None = None,
        **options: Unpack[RequestOptions],
    ) -> str | T:
        """The answer's text, or a value of the `output` type."""
        if output is None:
            return (await self.generate(model, *content, system=system, **options)).text
        return cast(T, (await self.generate(model, *content, system=system, output=output, **options)).value)

    @overload
    def stream(
        self,
        model: str,
        *content: Content,
        system: str | None = None,
        output: None = None,
        **options: Unpack[RequestOptions],
    ) -> StreamingAnswer[Any]: ...
    @overload
    def stream(
        self,
        model: str,
        *content: Content,
        system: str | None = None,
        output: type[T],
        **options: Unpack[RequestOptions],
    ) -> StreamingAnswer[T]: ...
    def stream(
        self,
        model: str,
        *content: Content,
        system: str | None = None,
        output: type[T] | None = None,
        **options: Unpack[RequestOptions],
    ) -> StreamingAnswer[Any]:
        """A streamed call: iterate its events as they arrive, then `await answer.result()`."""
        return StreamingAnswer(lambda: self._single_call(model, content, system, output, options))

    async def stream_text(
        self, model: str, *content: Content, system: str | None = None, **options: Unpack[RequestOptions]
    ) -> AsyncIterator[str]:
        """The answer's text, piece by piece."""
        answer: StreamingAnswer[Any] = self.stream(model, *content, system=system, **options)
        async with answer:
            async for piece in answer.text():
                yield piece

    @overload
    async def embed(self, model: str, text: str, *, dimensions: int | None = None) -> list[float]: ...  # type: ignore[overload-overlap]
    @overload
    async def embed(self, model: str, text: Sequence[str], *, dimensions: int | None = None) -> list[list[float]]: ...
    async def embed(
        self, model: str, text: str | Sequence[str], *, dimensions: int | None = None
    ) -> list[float] | list[list[float]]:
        """Embedding vectors: one for a string, one per string for a sequence. Priced and recorded; no instance."""
        from onellm.runtime._embed import embed as _embed

        return await _embed(self._services, model, text, dimensions=dimensions)

    def chat(
        self,
        model: str,
        *,
        system: str | None = None,
        instance: Instance | None = None,
        **options: Unpack[RequestOptions],
    ) -> ChatSession:
        """A conversation kept in one instance (`waiting` between turns)."""
        from onellm.runtime._chat import ChatSession

        return ChatSession(self._services, model, system=system, instance=instance, options=check_options(options))

    async def run_script(
        self,
        path: str | os.PathLike[str],
        inputs: Mapping[str, Any] | None = None,
        *,
        model: str | None = None,
    ) -> ScriptResult:
        """Run a `.flow` or an agent definition as a script: its prompts rendered in order, one call per user prompt.
        `model=` overrides the definition's model."""
        from onellm.runtime._script import run_script as _run

        return await _run(self._services, path, inputs or {}, model=model)

    # ------------------------------------------------------------------------------------------------- deciders
    async def decide(
        self,
        decider: Any,
        inputs: Mapping[str, Any] | None = None,
        *,
        output: Any = None,
        origin: str = "api",
        model: str | None = None,
        caller_instance_id: str | None = None,
    ) -> DecisionResult[Any]:
        """Run a decider: a folder holding `decider.yaml`, the file, a `Decider`, or a class decorated with
        `@decider_logic`. See `onellm.decide` (`docs/deciders.md`); `caller_instance_id` links the run to the
        instance that asked (a tool call's run)."""
        from onellm.deciders import run_decision

        return await run_decision(
            self._services,
            decider,
            inputs,
            output=output,
            origin=origin,
            model=model,
            caller_instance_id=caller_instance_id,
        )

    async def replay_decision(
        self, instance_id: str, *, model: str | None = None, origin: str = "replay"
    ) -> DecisionResult[Any]:
        """Ask a stored decider run's inputs again as a new instance, optionally on another model.

        Raises:
            LookupError: no decider run has this id.
        """
        from onellm.deciders import replay_decision

        return await replay_decision(self._services, instance_id, model=model, origin=origin)

    async def get_decision(self, instance_id: str) -> DecisionResult[Any] | None:
        """A stored decider run as a `DecisionResult`; None when there is none with this id."""
        from onellm.deciders import get_decision

        return await get_decision(self._services, instance_id)

    async def list_decisions(
        self,
        *,
        decider: str | None = None,
        origin: str | None = None,
        state: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[DecisionSummary]:
        """Stored decider runs, newest first, filtered by decider name, origin, state and time."""
        from onellm.deciders import list_decisions

        return await list_decisions(
            self._services, decider=decider, origin=origin, state=state, since=since, limit=limit
        )

    async def decision_stats(
        self,
        *,
        decider: str | None = None,
        exclude_origins: Sequence[str] = ("replay", "eval"),
        since: datetime | None = None,
    ) -> DecisionStats:
        """Statistics over stored decider runs, leaving out the origins in `exclude_origins`."""
        from onellm.deciders import decision_stats

        return await decision_stats(self._services, decider=decider, exclude_origins=exclude_origins, since=since)

    # -------------------------------------------------------------------------------------------------- agents
    async def run_agent(
        self,
        definition: Any,
        inputs: Mapping[str, Any] | None = None,
        *,
        prompt: Any = None,
        **options: Any,
    ) -> AgentResult[Any]:
        """Run an agent to rest and return how it ended (`completed`, `waiting`, `waiting_for_approval`,
        `max_iterations`), with its result, text, usage, cost and saved instance. See `start_agent` for the
        arguments and `AgentRun.result` for the errors."""
        run = await self.start_agent(definition, inputs, prompt=prompt, **options)
        return await run.result()

    async def start_agent(
        self,
        definition: Any,
        inputs: Mapping[str, Any] | None = None,
        *,
        prompt: Any = None,
        **options: Any,
    ) -> AgentRun[Any]:
        """A new agent instance as an `AgentRun`: drive it with `result()` or `events()`, steer it with `message()`,
        decide held calls with `approve()` and `deny()`.

        Args:
            definition: A path to an agent definition (`.yaml`), a folder holding `agent.yaml`, or a `Definition`.
            inputs: Input values, merged over the definition's `inputs`.
            prompt: The task: text or parts, added as a user message after the initial prompts.
            **options: `model` (instead of the definition's), `strict` (default True: an unknown or ungranted tool
                fails; False drops it with a warning), `output` (the type of the `task_complete` result),
                `max_iterations` (instead of the definition's, default 200), `capabilities` (narrows the grants).

        Raises:
            BadDefinitionError: the definition cannot be read, names a tool that is not registered or not granted
                (strict), or has nothing to send.
            ModelNotFoundError, AuthError, CapabilityMissingError: the model cannot be served.
        """
        from onellm.agents import start_agent_run

        return await start_agent_run(self._services, definition, inputs, prompt=prompt, runtime=self, **options)

    async def get_agent(self, instance_id: str, **options: Any) -> AgentRun[Any]:
        """A saved agent instance as an `AgentRun`, also in a new process after a restart: approve or deny its held
        calls, message it, or `result()` to go on with it.

        Raises:
            InstanceNotFoundError: the store has no such instance.
            BadDefinitionError: the file is not a valid instance, or is in a state no run leaves it in.
        """
        from onellm.agents import load_agent_run

        return await load_agent_run(self._services, instance_id, runtime=self, **options)

    async def approve(self, instance_id: str, tool_call_id: str | None = None) -> AgentRun[Any]:
        """Approve a held call of a saved instance (every held call when `tool_call_id` is None) and return the
        instance's `AgentRun`; `await run.result()` goes on with it."""
        run = await self.get_agent(instance_id)
        await run.approve(tool_call_id)
        return run

    async def deny(
        self, instance_id: str, tool_call_id: str | None = None, *, reason: str | None = None
    ) -> AgentRun[Any]:
        """Deny a held call of a saved instance (every held call when `tool_call_id` is None) and return the
        instance's `AgentRun`."""
        run = await self.get_agent(instance_id)
        await run.deny(tool_call_id, reason=reason)
        return run

    async def fork(self, instance_id: str, *, through: str | None = None, new_id: str | None = None) -> Instance:
        """Copy a saved instance under a new id, its conversation up to and including the message `through` (all of
        it when None), and save the copy: it starts stopped, with no pending approvals; `get_agent(copy.id)` runs on
        from there.

        Raises:
            InstanceNotFoundError: no such instance, or no such message in it.
            BadDefinitionError: two messages of the instance have the id `through`.
            AgentStateError: `new_id` names an instance the store already holds (it is left as it is).
        """
        from onellm.agents import fork_instance

        return await fork_instance(self._services, instance_id, through=through, new_id=new_id)

    async def duplicate(self, instance_id: str, *, new_id: str | None = None) -> Instance:
        """A saved copy of the whole conversation (a fork through the last message).

        Raises:
            InstanceNotFoundError: no such instance.
            AgentStateError: `new_id` names an instance the store already holds (it is left as it is).
        """
        from onellm.agents import duplicate_instance

        return await duplicate_instance(self._services, instance_id, new_id=new_id)

    def run_agent_sync(
        self, definition: Any, inputs: Mapping[str, Any] | None = None, *, prompt: Any = None, **options: Any
    ) -> AgentResult[Any]:
        """Blocking form of `run_agent`. Not for use inside async code."""
        from onellm.runtime._sync import drive

        return drive(self.run_agent(definition, inputs, prompt=prompt, **options), "run_agent")

    def start_agent_sync(
        self, definition: Any, inputs: Mapping[str, Any] | None = None, *, prompt: Any = None, **options: Any
    ) -> SyncAgentRun[Any]:
        """Blocking form of `start_agent`. Not for use inside async code."""
        from onellm.agents import SyncAgentRun
        from onellm.runtime._sync import drive

        return SyncAgentRun(drive(self.start_agent(definition, inputs, prompt=prompt, **options), "start_agent"))

    def get_agent_sync(self, instance_id: str, **options: Any) -> SyncAgentRun[Any]:
        """Blocking form of `get_agent`. Not for use inside async code."""
        from onellm.agents import SyncAgentRun
        from onellm.runtime._sync import drive

        return SyncAgentRun(drive(self.get_agent(instance_id, **options), "get_agent"))

    def _single_call(
        self, model: str, content: Sequence[Content], system: str | None, output: Any, options: Mapping[str, Any]
    ) -> ModelCall:
        services = self._services
        settings = check_options(options)
        parts = prompt_parts(content)
        resolved, provider = services.route(model)
        now = services.now()
        instance = services.new_instance(resolved, model, system, started=now)
        turn = Message(id=new_message_id(), user=parts, date_time=now, source=api_source())
        instance.messages.append(turn)
        return ModelCall(
            services,
            resolved,
            provider,
            instance,
            turn,
            system=system,
            output=output,
            settings=settings,
            final_state="stopped",
            requested_model=model,
        )


class _Services:
    """The `RuntimeServices` of one runtime: reads the runtime's current parts on every use, so a store, catalog or
    sink list changed on the runtime is what the next run sees."""

    __slots__ = ("_runtime",)

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def __repr__(self) -> str:
        return f"<services of {self._runtime!r}>"

    @property
    def clock(self) -> Clock:
        return self._runtime.clock

    @property
    def catalog(self) -> Catalog:
        return self._runtime.catalog

    @property
    def store(self) -> InstanceStore:
        return self._runtime.store

    @property
    def cache(self) -> ResultCache | None:
        return self._runtime.cache

    @property
    def spend(self) -> SpendAccount:
        return self._runtime._spend

    @property
    def capabilities(self) -> Capabilities:
        return self._runtime.capabilities

    @property
    def tools(self) -> ToolRegistry:
        return self._runtime.tools

    @property
    def llm_turn_logs(self) -> bool:
        return self._runtime.llm_turn_logs

    @property
    def environ(self) -> Mapping[str, str]:
        return self._runtime.environ

    @property
    def allowed_environment(self) -> tuple[str, ...]:
        return self._runtime.allowed_environment

    @property
    def scope_values(self) -> Mapping[str, Any]:
        return self._runtime.scope_values

    @property
    def embed_sources(self) -> tuple[str | os.PathLike[str], ...]:
        return self._runtime.embed_sources

    @property
    def recording(self) -> bool:
        records = self._runtime.records
        # Read several times a turn: its list, without a `__len__` in Python.
        if type(records) is (_RecordSinks or _record_sinks()):
            return bool(records._sinks)
        return len(records) > 0

    @property
    def hooks(self) -> Hooks | None:
        return self._runtime._hooks

    @property
    def hook_source(self) -> HookSource | None:
        return self._runtime.hook_source

    @property
    def agent_retry(self) -> RetryPolicy | None:
        return self._runtime._agent_retry

    def route(self, model: str) -> tuple[ResolvedModel, Any]:
        if not isinstance(model, str) or not model:
            raise TypeError("model: expected a model name such as 'gpt-6-luna' or 'openai:gpt-6-luna'")
        runtime = self._runtime
        catalog = runtime.catalog
        resolved = catalog.resolve(model)
        return resolved, runtime.providers.for_model(resolved, catalog)

    def now(self) -> Timestamp:
        clock = self._runtime.clock
        if type(clock) is SystemClock:  # read every turn: the same text, without the datetime
            return Timestamp._system_now()
        return Timestamp.from_datetime(clock.now())

    def new_instance(
        self, model: ResolvedModel, requested: str, system: str | None, *, started: Timestamp | None = None
    ) -> Instance:
        from onellm.instances import Instance, new_instance_id

        return Instance(
            id=new_instance_id(),
            model=model.qualified_name,
            requested_model=requested if requested != model.qualified_name else None,
            system_prompt=system,
            state="running",
            run_started_at=started or self.now(),
        )

    async def record(self, *records: Record) -> None:
        sinks = self._runtime.records
        if len(sinks):
            for item in records:
                await sinks.write(item)

    async def lease(self, instance: Instance) -> InstanceLease | None:
        store = self._runtime.store
        acquire = getattr(store, "acquire", None)
        if acquire is None or instance.id is None:
            return None
        try:
            lease: InstanceLease = await acquire(instance.id)
        except OSError as error:
            raise _storage_error(store, instance, "acquire", error) from error
        return lease

    def with_save(self, save: Callable[[Instance], Awaitable[None]]) -> _Services:
        """These services, saving through `save` (an agent run saves some of its turns later, with its state)."""
        return _SavingServices(self._runtime, save)

    async def save(self, instance: Instance) -> None:
        store = self._runtime.store
        try:
            if instance.messages and instance.messages[-1].user:
                from onellm.runtime._assets import store_assets

                store_assets(store, instance, instance.messages[-1])
            if type(store) is (_MemoryInstanceStore or _memory_store()):
                # In memory, and no await: nothing can cut it short.
                store.save_sync(instance)  # type: ignore[attr-defined]
                return
            save = store.save
            if _never_waits(save):
                await save(instance)  # it cannot stop half way: no cancellation reaches it
            else:
                with anyio.CancelScope(shield=True):
                    await save(instance)
        except OSError as error:
            raise _storage_error(store, instance, "save", error) from error


class _SavingServices(_Services):
    """A runtime's services whose saves go through a function (`_Services.with_save`); every other part is the
    runtime's, read on each use."""

    __slots__ = ("save",)

    save: Callable[[Instance], Awaitable[None]]  # type: ignore[assignment]
    """The function itself: a call's save awaits it directly, with no coroutine of this class's in between."""

    def __init__(self, runtime: Runtime, save: Callable[[Instance], Awaitable[None]]) -> None:
        super().__init__(runtime)
        self.save = save


# Classes imported on first use and kept in a global (read every turn: cheaper than a cached function's call).
_RecordSinks: type | None = None
_MemoryInstanceStore: type | None = None


def _record_sinks() -> type:
    global _RecordSinks
    from onellm.records import RecordSinks

    _RecordSinks = RecordSinks
    return RecordSinks


def _memory_store() -> type:
    global _MemoryInstanceStore
    from onellm.instances import MemoryInstanceStore

    _MemoryInstanceStore = MemoryInstanceStore
    return MemoryInstanceStore


def _never_waits(method: Any) -> bool:
    """Whether `method` is an `async def` with no `await` (nor `async for` or `async with`) in it: its coroutine runs
    to its end in one step, so a cancellation, delivered only where a coroutine waits, cannot cut it short."""
    function = getattr(method, "__func__", method)  # a bound method's function, the same on every access
    try:
        return _function_never_waits(function)
    except TypeError:  # an object that cannot be a key
        return False


@functools.lru_cache(maxsize=64)
def _function_never_waits(function: Any) -> bool:
    code = getattr(function, "__code__", None)
    if not isinstance(code, CodeType) or not code.co_flags & inspect.CO_COROUTINE:
        return False  # a plain function returning an awaitable, a generator: anything may be behind it
    return not any(op.opname in _WAITING_OPS for op in dis.get_instructions(code))


_WAITING_OPS = frozenset(
    {"YIELD_VALUE", "SEND", "GET_AWAITABLE", "GET_AITER", "GET_ANEXT", "BEFORE_ASYNC_WITH", "END_ASYNC_FOR"}
)
"""The instructions of a coroutine that may suspend it (an `await` compiles to several of them)."""


def _storage_error(store: Any, instance: Instance, operation: str, error: OSError) -> StorageError:
    """A raw `OSError` from a store as a `StorageError` naming the instance, the path and the cause."""
    path: Any = error.filename
    path_of = getattr(store, "path_of", None)
    if path is None and callable(path_of) and instance.id is not None:
        path = path_of(instance.id)
    if path is None:
        path = getattr(store, "directory", None)
    where = f" ({path})" if path is not None else ""
    cause = error.strerror or str(error) or type(error).__name__
    verb = {"save": "saved", "acquire": "leased"}.get(operation, operation)
    return StorageError(
        f"instance {instance.id} could not be {verb}{where}: {cause}",
        path=str(path) if path is not None else None,
        operation=operation,
    )
