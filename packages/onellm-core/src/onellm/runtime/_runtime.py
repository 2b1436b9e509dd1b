"""`Runtime`: the catalog, providers, store, record sinks, tools, grants, clock, spend caps and result cache behind
the verbs, and the default runtime (a context variable)."""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import anyio
import msgspec

from onellm.errors import (
    BudgetKind,
    MalformedResponseError,
    RunCancelledError,
)
from onellm.messages import CallWarning, Cost, Message, TextPart, Timestamp, Usage
from onellm.messages._events import MessageAccumulator, StreamEvent, TextDelta
from onellm.providers._request import ChatRequest, ChatResponse, ResponseFormat
from onellm.runtime._cache import ResultCache, cache_key
from onellm.runtime._registry import ProviderRegistry
from onellm.runtime._results import AskResult

if TYPE_CHECKING:
    from onellm.capabilities import Capabilities
    from onellm.catalog import Catalog, ResolvedModel
    from onellm.catalog.spend import Reservation, SpendCap, SpendGuard
    from onellm.clock import Clock
    from onellm.instances import Instance, InstanceStore
    from onellm.messages import Part
    from onellm.records import Record, RecordSink, RecordSinks
    from onellm.runtime._chat import ChatSession
    from onellm.runtime._results import ScriptResult
    from onellm.telemetry import CallObserver
    from onellm.tools import ToolRegistry

__all__ = [
    "Content",
    "Runtime",
    "StreamingAnswer",
    "current_runtime",
    "set_default_runtime",
    "use_runtime",
]

T = TypeVar("T")

Content = Any
"""What a prompt is made of: strings (text) and message parts (`TextPart`, `AssetPart`, ...)."""

_REQUEST_OPTIONS = frozenset(
    {
        "max_output_tokens",
        "temperature",
        "top_p",
        "stop_sequences",
        "tool_choice",
        "reasoning",
        "cache",
        "service_tier",
        "user_id",
        "extra_parameters",
    }
)

_JSON = msgspec.json.Decoder(float_hook=Decimal)
_ZERO = Decimal(0)


def _now_stamp(clock: Clock) -> Timestamp:
    return Timestamp.from_datetime(clock.now())


def _parts(content: Sequence[Content], argument: str = "content") -> list[Part]:
    from onellm.messages._parts import Part as _PartUnion  # noqa: F401  (the union, for the error message only)

    parts: list[Part] = []
    for i, item in enumerate(content):
        if isinstance(item, str):
            parts.append(TextPart(item))
        elif (
            isinstance(item, msgspec.Struct)
            and hasattr(item, "to_data")
            and type(item).__module__.startswith("onellm.messages")
        ):
            parts.append(item)  # type: ignore[arg-type]
        else:
            raise TypeError(f"{argument}[{i}]: expected a string or a message part, not {type(item).__name__}")
    if not parts:
        raise TypeError(f"{argument}: a prompt needs at least one string or part")
    return parts


def _check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - _REQUEST_OPTIONS)
    if unknown:
        raise TypeError(
            f"unknown option(s) {', '.join(unknown)}; the verbs take {', '.join(sorted(_REQUEST_OPTIONS))}, "
            "output= and system="
        )
    return dict(options)


# ------------------------------------------------------------------------------------------------- output types
def _is_pydantic(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_json_schema") and hasattr(tp, "model_validate")


def response_format_for(tp: Any) -> ResponseFormat:
    """The native structured-output format for a type: a `msgspec.Struct`, dataclass, `TypedDict` or pydantic model."""
    if _is_pydantic(tp):
        schema = tp.model_json_schema()
    else:
        from onellm.tools._schema import compile_type

        schema = compile_type(tp).schema
    if schema.get("type") != "object":
        raise TypeError(f"output type {getattr(tp, '__name__', tp)!r} must be a JSON object type (a record type)")
    return ResponseFormat.json_schema(schema, name=getattr(tp, "__name__", "output"))


def parse_output(tp: Any, text: str, *, provider: str | None) -> Any:
    """Read an answer's JSON text as `tp`; a mismatch is a `MalformedResponseError` naming the path."""
    name = getattr(tp, "__name__", str(tp))
    try:
        data = _JSON.decode(text)
    except msgspec.DecodeError as error:
        raise MalformedResponseError(f"the answer is not JSON for {name}: {error}", provider=provider) from error
    if _is_pydantic(tp):
        try:
            return tp.model_validate(data)
        except Exception as error:  # pydantic's ValidationError, without importing pydantic
            raise MalformedResponseError(f"the answer does not fit {name}: {error}", provider=provider) from error
    from onellm.tools._schema import ArgumentError, compile_type

    try:
        return compile_type(tp).convert(data)
    except ArgumentError as error:
        path = "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in error.segments).lstrip(".")
        where = f" at {path}" if path else ""
        raise MalformedResponseError(
            f"the answer does not fit {name}{where}: {error.problem}", provider=provider
        ) from error


# ------------------------------------------------------------------------------------------------------ runtime
class Runtime:
    """Everything a call needs: the model catalog, the providers, the instance store, record sinks, tools, grants,
    the clock, spend caps and the optional result cache.

    ```python
    rt = Runtime(store=FileInstanceStore("runs"), spend_cap=Decimal("5"))
    rt.providers.set("openai", ScriptedProvider("openai"))
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
    ) -> None:
        from onellm.clock import SystemClock
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
        self._spend_cap = _money(spend_cap, "spend_cap")
        self._instance_spend_cap = _money(instance_spend_cap, "instance_spend_cap")
        self._max_cost_per_call = _money(max_cost_per_call, "max_cost_per_call")
        self._guard: SpendGuard | None = None
        self._instance_caps: dict[str, SpendCap] = {}
        self._lock = threading.Lock()

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

    # -------------------------------------------------------------------------------------------------- caps
    @property
    def spend_cap(self) -> Decimal | None:
        """Dollars the whole runtime may spend."""
        return self._spend_cap

    @spend_cap.setter
    def spend_cap(self, value: Decimal | int | str | None) -> None:
        self._spend_cap = _money(value, "spend_cap")
        self._guard = None

    @property
    def instance_spend_cap(self) -> Decimal | None:
        """Dollars one instance may spend, its earlier turns counted."""
        return self._instance_spend_cap

    @instance_spend_cap.setter
    def instance_spend_cap(self, value: Decimal | int | str | None) -> None:
        self._instance_spend_cap = _money(value, "instance_spend_cap")
        self._instance_caps.clear()

    @property
    def max_cost_per_call(self) -> Decimal | None:
        """The most one call may cost, judged by its worst case before it is sent."""
        return self._max_cost_per_call

    @max_cost_per_call.setter
    def max_cost_per_call(self, value: Decimal | int | str | None) -> None:
        self._max_cost_per_call = _money(value, "max_cost_per_call")
        self._guard = None

    @property
    def spent(self) -> Decimal:
        """What calls through this runtime have cost so far (counted when a spend cap is set)."""
        return self._guard.spent if self._guard is not None else _ZERO

    def _spend_guard(self) -> SpendGuard | None:
        if self._spend_cap is None and self._max_cost_per_call is None and self._instance_spend_cap is None:
            return None
        with self._lock:
            if self._guard is None:
                from onellm.catalog.spend import SpendGuard as _Guard

                self._guard = _Guard(max_cost_per_call=self._max_cost_per_call, spend_cap=self._spend_cap)
            return self._guard

    def _instance_cap(self, instance: Instance) -> SpendCap | None:
        if self._instance_spend_cap is None or instance.id is None:
            return None
        with self._lock:
            cap = self._instance_caps.get(instance.id)
            if cap is None:
                from onellm.catalog.spend import SpendCap as _Cap

                earlier = sum(
                    (m.usage.cost for m in instance.messages if m.usage is not None and m.usage.cost is not None),
                    _ZERO,
                )
                cap = _Cap(
                    self._instance_spend_cap, BudgetKind.INSTANCE_SPEND, spent=earlier, name="instance spend cap"
                )
                self._instance_caps[instance.id] = cap
            return cap

    def _forget_instance(self, instance: Instance) -> None:
        if self._instance_caps and instance.id is not None:
            with self._lock:
                self._instance_caps.pop(instance.id, None)

    def reserve(self, model: ResolvedModel, request: ChatRequest, instance: Instance | None) -> Reservation | None:
        """Hold the worst case of a call on every cap that applies, or raise `BudgetExceededError` (nothing sent)."""
        guard = self._spend_guard()
        if guard is None:
            return None
        from onellm.catalog.counting import TokenEstimator
        from onellm.catalog.spend import CostEstimator

        tokens = TokenEstimator(model).count(request.messages, system=request.system, tools=request.tools).tokens
        estimate = CostEstimator(model).estimate(
            tokens,
            max_output_tokens=request.max_output_tokens,
            service_tier=request.service_tier,
        )
        cap = self._instance_cap(instance) if instance is not None else None
        return guard.reserve(estimate, caps=(cap,) if cap is not None else ())

    async def aclose(self) -> None:
        """Close the providers the runtime created from the catalog (their HTTP connections)."""
        await self.providers.aclose()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------------------------------------ routing
    def route(self, model: str) -> tuple[ResolvedModel, Any]:
        """The resolved model and the provider that serves it.

        Raises:
            ModelNotFoundError: the name is unknown, or two providers claim it.
            AuthError: the provider's key variable is not set.
            CapabilityMissingError: no provider can serve the model.
        """
        if not isinstance(model, str) or not model:
            raise TypeError("model: expected a model name such as 'gpt-6-luna' or 'openai:gpt-6-luna'")
        resolved = self.catalog.resolve(model)
        return resolved, self.providers.for_model(resolved, self.catalog)

    def now(self) -> Timestamp:
        return _now_stamp(self.clock)

    def new_instance(
        self, model: ResolvedModel, requested: str, system: str | None, *, started: Timestamp | None = None
    ) -> Instance:
        from onellm.instances import Instance
        from onellm.instances._ids import new_instance_id

        return Instance(
            id=new_instance_id(),
            model=model.qualified_name,
            requested_model=requested if requested != model.qualified_name else None,
            system_prompt=system,
            state="running",
            run_started_at=started or self.now(),
        )

    async def record(self, *records: Record) -> None:
        if len(self.records):
            for item in records:
                await self.records.write(item)

    async def save(self, instance: Instance) -> None:
        """Save the instance (shielded from cancellation), its latest turn's inline assets moved to the asset store."""
        if instance.messages and instance.messages[-1].user:
            from onellm.runtime._assets import store_assets

            store_assets(self.store, instance, instance.messages[-1])
        with anyio.CancelScope(shield=True):
            await self.store.save(instance)

    # -------------------------------------------------------------------------------------------------- verbs
    @overload
    async def generate(
        self, model: str, *content: Content, system: str | None = None, output: None = None, **options: Any
    ) -> AskResult[Any]: ...
    @overload
    async def generate(
        self, model: str, *content: Content, system: str | None = None, output: type[T], **options: Any
    ) -> AskResult[T]: ...
    async def generate(
        self,
        model: str,
        *content: Content,
        system: str | None = None,
        output: type[T] | None = None,
        **options: Any,
    ) -> AskResult[Any]:
        """One call: the answer with its usage, cost, warnings, saved instance and finish reason."""
        call = self._single_call(model, content, system, output, options)
        return await call.whole()

    async def ask(
        self, model: str, *content: Content, system: str | None = None, output: type[T] | None = None, **options: Any
    ) -> Any:
        """The answer's text, or a value of the `output` type."""
        result = await self.generate(model, *content, system=system, output=output, **options)
        return result.value if output is not None else result.text

    @overload
    def stream(
        self, model: str, *content: Content, system: str | None = None, output: None = None, **options: Any
    ) -> StreamingAnswer[Any]: ...
    @overload
    def stream(
        self, model: str, *content: Content, system: str | None = None, output: type[T], **options: Any
    ) -> StreamingAnswer[T]: ...
    def stream(
        self, model: str, *content: Content, system: str | None = None, output: type[T] | None = None, **options: Any
    ) -> StreamingAnswer[Any]:
        """A streamed call: iterate its events as they arrive, then `await answer.result()`."""
        return StreamingAnswer(lambda: self._single_call(model, content, system, output, options))

    async def stream_text(
        self, model: str, *content: Content, system: str | None = None, **options: Any
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

        return await _embed(self, model, text, dimensions=dimensions)

    def chat(
        self, model: str, *, system: str | None = None, instance: Instance | None = None, **options: Any
    ) -> ChatSession:
        """A conversation kept in one instance (`waiting` between turns)."""
        from onellm.runtime._chat import ChatSession

        return ChatSession(self, model, system=system, instance=instance, options=_check_options(options))

    async def run_script(
        self,
        path: str | os.PathLike[str],
        inputs: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> ScriptResult:
        """Run a `.flow` or an agent definition as a script: its prompts rendered in order, one call per user prompt."""
        from onellm.runtime._script import run_script as _run

        return await _run(self, path, inputs or {}, **options)

    def _single_call(
        self, model: str, content: Sequence[Content], system: str | None, output: Any, options: Mapping[str, Any]
    ) -> ModelCall:
        settings = _check_options(options)
        parts = _parts(content)
        resolved, provider = self.route(model)
        now = self.now()
        instance = self.new_instance(resolved, model, system, started=now)
        turn = Message(id=new_message_id(), user=parts, date_time=now)
        instance.messages.append(turn)
        return ModelCall(self, resolved, provider, instance, turn, system, output, settings, final_state="stopped")


def _money(value: Decimal | int | str | None, name: str) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, float):
        raise TypeError(f"{name}: give money as a Decimal, an int or a string, not a float")
    try:
        amount = Decimal(value)
    except Exception as error:
        raise TypeError(f"{name}: {value!r} is not an amount of money") from error
    if amount < 0:
        raise ValueError(f"{name}: a cap cannot be negative")
    return amount


def new_message_id() -> str:
    return uuid.uuid4().hex


# ------------------------------------------------------------------------------------------------ one model call
class ModelCall:
    """One model call inside an instance: the request, the spend hold, the span, and what happens to the instance
    when it succeeds, fails or is cancelled."""

    def __init__(
        self,
        runtime: Runtime,
        model: ResolvedModel,
        provider: Any,
        instance: Instance,
        turn: Message,
        system: str | None,
        output: Any,
        settings: dict[str, Any],
        *,
        final_state: str,
        history: Sequence[Message] | None = None,
        owns_instance: bool = True,
    ) -> None:
        self.runtime = runtime
        self.model = model
        self.provider = provider
        self.instance = instance
        self.turn = turn
        self.output = output
        self.final_state = final_state
        self.owns_instance = owns_instance
        if output is not None:
            settings = {**settings, "response_format": response_format_for(output)}
        messages = list(history) if history is not None else list(instance.messages)
        if len(messages) > 1:
            from onellm.runtime._assets import inline_assets

            messages = inline_assets(runtime.store, instance, messages)
        from onellm.catalog.adjust import RequestAdjuster

        request = ChatRequest(model=model.name, messages=messages, system=system, profile=model.profile, **settings)
        self.request: ChatRequest = RequestAdjuster(model).adjust_request(request)
        self.reservation: Reservation | None = None
        self.span: CallObserver | None = None
        self.accumulator: MessageAccumulator | None = None
        self.events: AsyncIterator[StreamEvent] | None = None
        self.started = 0.0
        self.key: str | None = None

    # -- before sending
    async def _begin(self) -> ChatResponse | None:
        """Check the caps and the cache; start the span. Returns a cached answer, or None when the call must be sent."""
        rt = self.runtime
        hit: ChatResponse | None = None
        if rt.cache is not None:
            self.key = cache_key(self.model.qualified_name, self.request)
            hit = rt.cache.get(self.key)
        if hit is None:
            self.reservation = rt.reserve(self.model, self.request, self.instance)
        if len(rt.records) and self.owns_instance:
            from onellm.records import RunRecord

            await rt.record(
                RunRecord(
                    instance_id=self.instance.id, event="started", state="running", model=self.model.qualified_name
                )
            )
        if hit is not None:
            return hit
        from onellm.telemetry import start_model_call

        self.span = start_model_call("chat", self.model.provider, self.model.name)
        self.started = time.perf_counter()
        return None

    async def whole(self) -> AskResult[Any]:
        cached = await self._begin()
        if cached is not None:
            return await self._finish(cached, cached=True)
        try:
            response = await self.provider.send(self.request)
        except anyio.get_cancelled_exc_class() as cancelled:
            raise await self._cancelled(cancelled) from cancelled
        except Exception as error:
            await self._failed(error)
            raise
        return await self._finish(response)

    # -- outcomes
    def _price(self, usage: Usage | None) -> Cost:
        if usage is None:
            return Cost.of(
                (),
                warnings=(
                    CallWarning(kind="pricing", message="the provider reported no usage; the call is not priced"),
                ),
                priced=False,
            )
        return self.model.price(usage, service_tier=self.request.service_tier, at=self.runtime.clock.now())

    async def _finish(self, response: ChatResponse, *, cached: bool = False) -> AskResult[Any]:
        rt = self.runtime
        usage = response.usage
        if cached:
            cost = Cost()
        else:
            cost = self._price(usage)
            if self.reservation is not None:
                self.reservation.commit(cost.total if cost.priced else None)
        turn = self.turn
        answer = response.message
        turn.assistant = list(answer.assistant)
        turn.tool_calls = list(answer.tool_calls)
        if usage is not None:
            usage = msgspec.structs.replace(
                usage, cost=cost.total if cost.priced or cost.lines else None, cost_lines=list(cost.lines)
            )
            turn.usage = usage
        warnings = list(self.request.warnings)
        warnings.extend(w for w in response.warnings if w not in warnings)
        warnings.extend(cost.warnings)
        if self.span is not None:
            self.span.succeed(
                response_model=response.model,
                response_id=response.id,
                finish_reason=response.provider_finish_reason,
                usage=response.usage,
            )
        text = turn.text
        value: Any = None
        if self.output is not None:
            try:
                value = parse_output(self.output, text, provider=self.provider_name)
            except MalformedResponseError as error:
                await self._save_failure(error)
                raise
        instance = self.instance
        instance.state = self.final_state
        await rt.save(instance)
        if self.owns_instance:
            rt._forget_instance(instance)
        if len(rt.records):
            await self._record_success(response, usage)
        if rt.cache is not None and self.key is not None and not cached:
            rt.cache.put(self.key, response)
        return AskResult(
            text=text,
            value=value,
            usage=usage,
            cost=cost,
            warnings=warnings,
            instance=instance,
            finish=response.finish_reason,
            message=turn,
            model=self.model.qualified_name,
            cached=cached,
        )

    def drop_unsent(self) -> None:
        """A call refused before sending (a spend cap) leaves a conversation it belongs to as it was."""
        messages = self.instance.messages
        if not self.owns_instance and self.span is None and messages and messages[-1] is self.turn:
            messages.pop()
            self.instance.state = "waiting" if self.final_state == "waiting" else self.instance.state

    @property
    def provider_name(self) -> str:
        return str(getattr(self.provider, "name", self.model.provider))

    async def _record_success(self, response: ChatResponse, usage: Usage | None) -> None:
        from onellm.records import InferenceRecord, MessageRecord, RunRecord

        rt = self.runtime
        duration = Decimal(int((time.perf_counter() - self.started) * 1000)) if self.started else None
        records: list[Record] = [
            MessageRecord(instance_id=self.instance.id, message_id=self.turn.id, message=self.turn),
            InferenceRecord(
                instance_id=self.instance.id,
                message_id=self.turn.id,
                provider=self.model.provider,
                operation="chat",
                duration_ms=duration,
                finish_reason=response.provider_finish_reason,
                usage=usage,
            ),
        ]
        if self.owns_instance:
            records.append(
                RunRecord(
                    instance_id=self.instance.id,
                    event="stopped",
                    state=self.final_state,
                    model=self.model.qualified_name,
                )
            )
        await rt.record(*records)

    async def _save_failure(self, error: BaseException) -> None:
        from onellm.instances import InstanceFailure

        instance = self.instance
        instance.state = "error"
        instance.error = InstanceFailure(type=type(error).__name__, message=str(error))
        await self.runtime.save(instance)
        self.runtime._forget_instance(instance)
        if len(self.runtime.records):
            from onellm.records import ErrorRecord, RunRecord

            await self.runtime.record(
                ErrorRecord(
                    instance_id=instance.id, error_type=type(error).__name__, message=str(error), where="model call"
                ),
                RunRecord(instance_id=instance.id, event="stopped", state="error", model=self.model.qualified_name),
            )

    async def _failed(self, error: BaseException) -> None:
        if self.reservation is not None:
            self.reservation.release()
        if self.span is not None:
            self.span.fail(error)
        if self.accumulator is not None:
            self._keep_partial()
        await self._save_failure(error)

    def _keep_partial(self) -> None:
        acc = self.accumulator
        if acc is None:
            return
        try:
            partial = acc.message()
        except Exception:  # a half-built block that cannot be finished: keep nothing of it
            return
        self.turn.assistant = list(partial.assistant)
        self.turn.tool_calls = [c for c in partial.tool_calls if c.id is not None]

    async def _cancelled(self, cancelled: BaseException) -> RunCancelledError:
        with anyio.CancelScope(shield=True):
            if self.reservation is not None:
                self.reservation.release()
            if self.span is not None:
                self.span.fail(cancelled)
            self._keep_partial()
            instance = self.instance
            instance.state = "stopped"
            instance.cancelled = True
            await self.runtime.save(instance)
            self.runtime._forget_instance(instance)
            if len(self.runtime.records):
                from onellm.records import RunRecord

                await self.runtime.record(
                    RunRecord(
                        instance_id=instance.id, event="cancelled", state="stopped", model=self.model.qualified_name
                    )
                )
        return RunCancelledError(f"the run of instance {instance.id} was cancelled", instance=instance)

    # -- streaming
    async def open_stream(self) -> AsyncIterator[StreamEvent] | ChatResponse:
        cached = await self._begin()
        if cached is not None:
            return cached
        self.accumulator = MessageAccumulator()
        stream: AsyncIterator[StreamEvent] = self.provider.stream(self.request)
        self.events = stream
        return stream

    async def finish_stream(self) -> AskResult[Any]:
        from onellm.providers._stream import response_from

        assert self.accumulator is not None
        try:
            codec = getattr(self.events, "warnings", None) or []  # the provider's notices, once the stream is read
            response = response_from(self.accumulator, [*self.request.warnings, *codec])
        except Exception as error:
            await self._failed(error)
            raise
        return await self._finish(response)


class StreamingAnswer(AsyncIterator[StreamEvent], Generic[T]):
    """A streamed call. Iterate it for the events as they arrive (or `text()` for the text pieces), then
    `await answer.result()` for the same `AskResult` a whole call gives. Use `async with` to be sure a stream left
    part-way is closed (its instance is then saved `stopped` and `cancelled`)."""

    def __init__(self, start: Any) -> None:
        self._start = start
        self._call: ModelCall | None = None
        self._events: AsyncIterator[StreamEvent] | None = None
        self._result: AskResult[Any] | None = None
        self._error: BaseException | None = None
        self._done = False

    def __aiter__(self) -> StreamingAnswer[Any]:
        return self

    async def __anext__(self) -> StreamEvent:
        if self._done:
            if self._error is not None:
                raise self._error
            raise StopAsyncIteration
        if self._call is None:
            try:
                call = self._call = self._start()
                opened = await call.open_stream()
            except BaseException as error:
                self._done = True
                self._error = error
                if self._call is not None:
                    self._call.drop_unsent()
                raise
            if isinstance(opened, ChatResponse):  # a cached answer: no events, the result at once
                self._done = True
                self._result = await call._finish(opened, cached=True)
                raise StopAsyncIteration
            self._events = opened
        call = self._call
        assert self._events is not None
        assert call.accumulator is not None
        try:
            event = await self._events.__anext__()
            call.accumulator.add(event)
        except StopAsyncIteration:
            self._done = True
            self._result = await call.finish_stream()
            raise
        except anyio.get_cancelled_exc_class() as cancelled:
            self._done = True
            await self._close_events()
            self._error = await call._cancelled(cancelled)
            raise self._error from cancelled
        except Exception as error:
            self._done = True
            self._error = error
            await self._close_events()
            await call._failed(error)
            raise
        return event

    async def _close_events(self) -> None:
        events = self._events
        if events is not None and hasattr(events, "aclose"):
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await events.aclose()

    async def text(self) -> AsyncIterator[str]:
        """The answer's text pieces, as they arrive."""
        async for event in self:
            if isinstance(event, TextDelta):
                piece = event.text
                yield piece if isinstance(piece, str) else piece.decode("utf-8", "replace")

    async def result(self) -> AskResult[Any]:
        """The finished answer (reads what is left of the stream first)."""
        async for _ in self:
            pass
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    @property
    def instance(self) -> Instance | None:
        return self._call.instance if self._call is not None else None

    async def aclose(self) -> None:
        """Stop reading. A stream left part-way saves its instance `stopped` with `cancelled: true`."""
        if self._call is not None and not self._done:
            self._done = True
            await self._close_events()
            self._error = await self._call._cancelled(RuntimeError("the stream was closed before it ended"))

    async def __aenter__(self) -> StreamingAnswer[Any]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# -------------------------------------------------------------------------------------------- the default runtime
_CURRENT: contextvars.ContextVar[Runtime | None] = contextvars.ContextVar("onellm_runtime", default=None)
_PROCESS: list[Runtime] = []
_PROCESS_LOCK = threading.Lock()


def current_runtime() -> Runtime:
    """The runtime the verbs use: the one `use_runtime` set in this context, else the process default (made from
    the environment on first use: `ONELLM_INSTANCES`, `ONELLM_RECORDS`)."""
    rt = _CURRENT.get()
    if rt is not None:
        return rt
    if _PROCESS:
        return _PROCESS[0]
    with _PROCESS_LOCK:
        if not _PROCESS:
            _PROCESS.append(Runtime.from_environment())
        return _PROCESS[0]


def set_default_runtime(runtime: Runtime | None) -> None:
    """Make `runtime` the process-wide default (None: back to one made from the environment on next use)."""
    if runtime is not None and not isinstance(runtime, Runtime):
        raise TypeError(f"expected a Runtime, not {type(runtime).__name__}")
    with _PROCESS_LOCK:
        _PROCESS.clear()
        if runtime is not None:
            _PROCESS.append(runtime)


@contextlib.contextmanager
def use_runtime(runtime: Runtime) -> Iterator[Runtime]:
    """Use `runtime` for the verbs within this block (a context variable: tasks and tests do not see each other's)."""
    if not isinstance(runtime, Runtime):
        raise TypeError(f"expected a Runtime, not {type(runtime).__name__}")
    token = _CURRENT.set(runtime)
    try:
        yield runtime
    finally:
        _CURRENT.reset(token)
