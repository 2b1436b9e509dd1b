"""One model call inside an instance (`ModelCall`), whole or streamed (`StreamingAnswer`).

A call goes through these steps, and each way out leaves the instance, the spend holds, the lease and the records in
a known state:

1. **Begin.** The result cache is asked; on a miss the call's worst case is held on the spend caps (a cap it could
   pass refuses it here: nothing sent, nothing saved, a chat's refused turn removed). A call that is a run of its own
   (`segment=True`: a single call, a chat turn) takes the instance's lease (`InstanceLockedError` if another handle
   holds it) and writes its `run` record (`started`, or `resumed` for a later chat turn).
2. **Send.** The request goes to the provider, whole or streamed.
3. **Finish.** The answer is priced and its hold settled with the real cost, the instance saved, then the `message`,
   `inference` (and, when asked, `rawTurn`) records and the closing `run` record written. All of this is shielded from
   cancellation: once an answer is paid for, it is saved and recorded whole, and the caller gets it.

A provider error releases the hold and saves the instance in `error`; a cancellation (from the beginning's `run`
record onward) releases the hold, saves the instance `stopped` with `cancelled: true` and what had arrived, and
raises `RunCancelledError`. A store that cannot save a paid answer raises `StorageError` whose `result` holds the
answer and the instance in memory. The lease is given back on every path.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
import msgspec

from onellm._public import publish as _publish
from onellm.errors import MalformedResponseError, RunCancelledError, StorageError
from onellm.messages import CallWarning, Cost, Message, MessageAccumulator, StreamEvent, TextDelta, Usage
from onellm.providers import ChatRequest, ChatResponse, collecting_lazily, response_from
from onellm.runtime._assets import _any_stored, inline_assets
from onellm.runtime._cache import cache_key
from onellm.runtime._output import parse_output, response_format_for
from onellm.runtime._results import AskResult

if TYPE_CHECKING:
    from onellm.catalog import ResolvedModel
    from onellm.catalog.spend import Reservation
    from onellm.instances import Instance, InstanceLease
    from onellm.messages import ToolCall
    from onellm.providers import RawExchange
    from onellm.records import Record
    from onellm.runtime._services import RuntimeServices
    from onellm.telemetry import CallObserver

__all__ = ["MAX_INPUT_DEPTH", "ModelCall", "StreamingAnswer", "kept_calls"]

T = TypeVar("T")

_JSON = msgspec.json.Decoder(float_hook=Decimal)


_UNSHIELDED = contextlib.nullcontext()
_FREE = Cost()
"""The cost of a cached answer (frozen: one for all)."""
_NO_OPTIONS: Mapping[str, Any] = {}
_new_object = object.__new__


# Functions imported on first use and kept in a global (read every call: cheaper than a cached function's call).
_start_model_call_function: Callable[..., Any] | None = None
_adjust_request_function: Callable[..., Any] | None = None


def _start_model_call() -> Callable[..., Any]:
    """`start_model_call`, imported on the first call sent."""
    global _start_model_call_function
    from onellm.telemetry import start_model_call

    _start_model_call_function = start_model_call
    return start_model_call


def _adjust_request() -> Callable[..., Any]:
    """`onellm.catalog.adjust.adjust_request`, imported on the first call (the catalog's adjuster is not needed to
    import the runtime)."""
    global _adjust_request_function
    from onellm.catalog.adjust import adjust_request

    _adjust_request_function = adjust_request
    return adjust_request


def _unpriced() -> Cost:
    """The cost of an answer that reported no usage."""
    return Cost.of(
        (),
        warnings=(CallWarning(kind="pricing", message="the provider reported no usage; the call is not priced"),),
        priced=False,
    )


class ModelCall:
    """One model call inside an instance: the request, the spend hold, the lease, the span, and what happens to the
    instance and the records when the call succeeds, fails or is cancelled (see the module docstring).

    Args:
        services: What the call needs from the runtime.
        model: The resolved model.
        provider: The provider that serves it.
        instance: The instance the call belongs to; `turn` is already its last message.
        turn: The message this call answers (its user side set; the answer goes into it).
        system: The system prompt sent with the call.
        output: The type the answer must be read as, if any (`output=`).
        settings: Request options (`max_output_tokens`, ...).
        final_state: The instance's state after a successful answer (`stopped`, `waiting`, `running`).
        history: The messages to send, when not the instance's own (a chat sends the instance's messages).
        requested_model: The model name the caller asked for (telemetry's `gen_ai.request.model`).
        segment: The call is a run of its own: it takes the instance's lease and writes `run` records. False when an
            enclosing run (a script, the agent loop) holds the lease and writes them.
        owns_instance: The instance was made for this call: its spend cap is dropped when the call ends. False for
            a conversation, whose turn refused before sending is taken out again.
        raw_turns: Write a `rawTurn` record with the request and response bodies, secrets masked.
    """

    __slots__ = (
        "accumulator",
        "begun",
        "events",
        "final_state",
        "instance",
        "key",
        "lease",
        "model",
        "output",
        "owns_instance",
        "provider",
        "raw",
        "request",
        "requested_model",
        "reservation",
        "segment",
        "services",
        "span",
        "started",
        "turn",
    )

    def __init__(
        self,
        services: RuntimeServices,
        model: ResolvedModel,
        provider: Any,
        instance: Instance,
        turn: Message,
        *,
        system: str | None = None,
        output: Any = None,
        settings: Mapping[str, Any] | None = None,
        final_state: str,
        history: Sequence[Message] | None = None,
        requested_model: str | None = None,
        segment: bool = True,
        owns_instance: bool = True,
        raw_turns: bool = False,
    ) -> None:
        self.services = services
        self.model = model
        self.provider = provider
        self.instance = instance
        self.turn = turn
        self.output = output
        self.final_state = final_state
        self.segment = segment
        self.owns_instance = owns_instance
        name = model.name
        self.requested_model = requested_model or name
        options: Mapping[str, Any] = settings or _NO_OPTIONS
        if output is not None:
            options = {**options, "response_format": response_format_for(output)}
        sent = history if history is not None else instance.messages
        # Assets already in the instance's asset store go back inline (a copy of the list either way: the instance's
        # grows). An agent's first turn has them there too: its prompts are stored as they are added. Most histories
        # have none, seen here without asking the services for their store.
        messages = inline_assets(services.store, instance, sent) if _any_stored(sent) else list(sent)
        # The first three fields by position: a keyword is matched by name against all twenty of them.
        request = ChatRequest(name, messages, system, profile=model.profile, **options)
        self.request: ChatRequest = (_adjust_request_function or _adjust_request())(model, request)
        self.raw: RawExchange | None = None
        if raw_turns or services.llm_turn_logs:
            from onellm.providers import RawExchange

            self.raw = RawExchange()
        self.reservation: Reservation | None = None
        self.lease: InstanceLease | None = None
        self.begun = False
        """True once the call has started as a run (spend held, lease taken): from here on it ends saved."""
        self.span: CallObserver | None = None
        self.accumulator: MessageAccumulator | None = None
        self.events: AsyncIterator[StreamEvent] | None = None
        self.started = 0.0
        self.key: str | None = None

    @property
    def provider_name(self) -> str:
        return str(getattr(self.provider, "name", self.model.provider))

    # ----------------------------------------------------------------------------------------------------- begin
    async def _begin(self) -> ChatResponse | None:
        """Check the cache and the caps, take the lease, write the `run` record and start the span. Returns a
        cached answer, or None when the call must be sent.

        Raises:
            BudgetExceededError, InstanceLockedError, StorageError: refused before the run began (nothing held).
            RunCancelledError: cancelled while the `run` record was written (the instance is saved cancelled).
        """
        services = self.services
        hit: ChatResponse | None = None
        cache = services.cache
        if cache is not None:
            self.key = cache_key(self.model.qualified_name, self.request)
            hit = cache.get(self.key)
        if hit is None:
            self.reservation = services.spend.reserve(self.model, self.request, self.instance)
        if self.segment:
            try:
                self.lease = await services.lease(self.instance)
            except BaseException:
                self._release_hold()
                raise
        self.begun = True
        if self.segment and services.recording:
            from onellm.records import RunRecord

            first = self.instance.messages[0] is self.turn if self.instance.messages else True
            try:
                await services.record(
                    RunRecord(
                        instance_id=self.instance.id,
                        event="started" if first else "resumed",
                        state="running",
                        model=self.model.qualified_name,
                    )
                )
            except anyio.get_cancelled_exc_class() as cancelled:
                raise await self._cancelled(cancelled) from cancelled
        if hit is not None:
            return hit
        self._start_span()
        return None

    def _start_span(self) -> None:
        self.span = (_start_model_call_function or _start_model_call())(
            "chat", self.model.provider, self.requested_model
        )
        self.started = time.perf_counter()

    # ----------------------------------------------------------------------------------------------------- whole
    async def whole(self) -> AskResult[Any]:
        """Send the call and wait for the whole answer."""
        services = self.services
        if self.segment or services.cache is not None:
            cached = await self._begin()
            if cached is not None:
                return await self._finish(cached, cached=True)
        else:  # `_begin` with no cache to ask, no lease to take and no `run` record to write: nothing to await
            self.reservation = services.spend.reserve(self.model, self.request, self.instance)
            self.begun = True
            self._start_span()
        # A provider that builds its whole answer from events builds it in an accumulator of the call's, so a
        # cancelled call keeps what had arrived (one that has it whole at once makes none).
        collected = collecting_lazily()
        try:
            with collected:
                if self.raw is None:
                    response = await self.provider.send(self.request)
                else:
                    with self._capturing():
                        response = await self.provider.send(self.request)
        except anyio.get_cancelled_exc_class() as cancelled:
            self.accumulator = collected.accumulator or MessageAccumulator()
            raise await self._cancelled(cancelled) from cancelled
        except Exception as error:
            self.accumulator = collected.accumulator or MessageAccumulator()
            await self._failed(error)
            raise
        return await self._finish(response)

    # -------------------------------------------------------------------------------------------------- streaming
    async def open_stream(self) -> AsyncIterator[StreamEvent] | ChatResponse:
        """Begin the call and return the provider's event stream (or the cached answer)."""
        cached = await self._begin()
        if cached is not None:
            return cached
        self.accumulator = MessageAccumulator()
        stream: AsyncIterator[StreamEvent] = self.provider.stream(self.request)
        self.events = stream
        return stream

    async def finish_stream(self) -> AskResult[Any]:
        """The result of a stream read to its end."""
        assert self.accumulator is not None
        try:
            codec = getattr(self.events, "warnings", None) or []  # the provider's notices, once the stream is read
            response = response_from(self.accumulator, [*self.request.warnings, *codec])
        except Exception as error:
            await self._failed(error)
            raise
        return await self._finish(response)

    @contextlib.contextmanager
    def _capturing(self) -> Iterator[None]:
        """Keep the raw bodies of what is sent in this block, when `rawTurn` records are on."""
        if self.raw is None:
            yield
            return
        from onellm.providers import capturing_raw_exchange

        with capturing_raw_exchange(self.raw):
            yield

    # --------------------------------------------------------------------------------------------------- outcomes
    async def _finish(self, response: ChatResponse, *, cached: bool = False) -> AskResult[Any]:
        """Price, settle, save and record a paid answer, all shielded from cancellation."""
        services = self.services
        unsaved: StorageError | None = None
        recording = services.recording
        # `services.save` shields itself (`RuntimeServices.save`): a scope of the call's own is needed only when
        # something else is awaited here (records, giving the lease back, saving an answer the output type refused).
        shielded = self.lease is not None or self.output is not None or recording
        with anyio.CancelScope(shield=True) if shielded else _UNSHIELDED:
            try:
                usage = response.usage
                if cached:
                    cost = _FREE
                else:
                    if usage is None:
                        cost = _unpriced()
                    else:
                        model = self.model
                        # The call's time picks a `pricingPeriods` entry: without periods it cannot change the price,
                        # so the clock is not read.
                        at = services.clock.now() if model.entry._periods else None
                        cost = model.price(usage, service_tier=self.request.service_tier, at=at)
                    if self.reservation is not None:
                        self.reservation.commit(cost.total if cost.priced else None)
                turn = self.turn
                answer = response.message
                turn.assistant = list(answer.assistant)
                turn.tool_calls = kept_calls(answer.tool_calls)
                if usage is not None:
                    lines = cost.lines
                    usage = msgspec.structs.replace(
                        usage, cost=cost.total if cost.priced or lines else None, cost_lines=list(lines)
                    )
                    turn.usage = usage
                warnings = list(self.request.warnings)
                if response.warnings:
                    warnings.extend(w for w in response.warnings if w not in warnings)
                if cost.warnings:
                    warnings.extend(cost.warnings)
                span = self.span
                if span is not None and span.observed:  # without an SDK configured the details go nowhere
                    span.succeed(
                        response_model=response.model or self.model.name,
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
                        await self._save_failure(error, answered=response, usage=usage)
                        raise
                instance = self.instance
                instance.state = self.final_state
                try:
                    await services.save(instance)
                except StorageError as error:
                    unsaved = error
                if self.owns_instance:
                    services.spend.forget(instance)
                if services.recording:  # read again: a sink may have been added while the call was saved
                    records = self._answer_records(response, usage)
                    if unsaved is not None:
                        records.append(self._error_record(unsaved, "save"))
                    if self.segment:
                        records.append(self._run_record("stopped", instance.state))
                    if shielded:
                        await services.record(*records)
                    else:  # a sink added while the call was saved
                        with anyio.CancelScope(shield=True):
                            await services.record(*records)
                if self.key is not None and not cached:
                    cache = services.cache
                    if cache is not None:
                        cache.put(self.key, response)
                # `AskResult(...)`, its `__init__` called directly: a class call hands keywords to a Python `__init__`
                # in a new dict (Python 3.11), a direct call binds them without one.
                result: AskResult[Any] = _new_object(AskResult)
                AskResult.__init__(
                    result,
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
            finally:
                if self.lease is not None:
                    await self._close()
        if unsaved is not None:
            unsaved.result = result
            raise unsaved
        return result

    async def _failed(self, error: BaseException) -> None:
        """The provider failed: release the hold, keep what had arrived, save the instance in `error`."""
        with anyio.CancelScope(shield=True):
            try:
                self._release_hold()
                if self.span is not None:
                    self.span.fail(error)
                self._keep_partial()
                await self._save_failure(error)
            finally:
                await self._close()

    async def _save_failure(
        self, error: BaseException, *, answered: ChatResponse | None = None, usage: Usage | None = None
    ) -> None:
        from onellm.instances import InstanceFailure

        services = self.services
        instance = self.instance
        instance.state = "error"
        instance.error = InstanceFailure(type=type(error).__name__, message=str(error))
        unsaved: StorageError | None = None
        try:
            await services.save(instance)
        except StorageError as failure:
            unsaved = failure
            error.add_note(f"the instance was not saved: {failure}")
        services.spend.forget(instance)
        if services.recording:
            records: list[Record] = []
            if answered is not None:  # paid for: its records count what it cost
                records.extend(self._answer_records(answered, usage))
            elif self.raw is not None and self.raw.request is not None:
                records.append(self._raw_turn_record(None))
            records.append(self._error_record(error, "model call"))
            if unsaved is not None:
                records.append(self._error_record(unsaved, "save"))
            if self.segment:
                records.append(self._run_record("stopped", "error"))
            await services.record(*records)

    async def _cancelled(self, cancelled: BaseException) -> RunCancelledError:
        """Cancelled after the run began: release the hold, keep what had arrived, save `stopped` and `cancelled`."""
        services = self.services
        instance = self.instance
        unsaved: StorageError | None = None
        with anyio.CancelScope(shield=True):
            try:
                self._release_hold()
                if self.span is not None:
                    self.span.fail(cancelled)
                self._keep_partial()
                instance.state = "stopped"
                instance.cancelled = True
                try:
                    await services.save(instance)
                except StorageError as failure:
                    unsaved = failure
                services.spend.forget(instance)
                if services.recording:
                    records: list[Record] = []
                    if unsaved is not None:
                        records.append(self._error_record(unsaved, "save"))
                    if self.segment:
                        records.append(self._run_record("cancelled", "stopped"))
                    await services.record(*records)
            finally:
                await self._close()
        stopped = RunCancelledError(f"the run of instance {instance.id} was cancelled", instance=instance)
        if unsaved is not None:
            stopped.add_note(f"the instance was not saved: {unsaved}")
        return stopped

    def drop_unsent(self) -> None:
        """A call refused before its run began (a spend cap, a lease held elsewhere) leaves a conversation it belongs
        to as it was."""
        messages = self.instance.messages
        if not self.owns_instance and not self.begun and messages and messages[-1] is self.turn:
            messages.pop()
            self.instance.state = "waiting" if self.final_state == "waiting" else self.instance.state

    def _release_hold(self) -> None:
        if self.reservation is not None:
            self.reservation.release()  # harmless once settled

    async def _close(self) -> None:
        """Give the lease back (once; every caller is inside a shielded scope). A store drops a lock it cannot
        remove when the lock's file closes, so a failure here loses nothing."""
        lease, self.lease = self.lease, None
        if lease is not None:
            with contextlib.suppress(OSError, StorageError):
                await lease.release()

    def _keep_partial(self) -> None:
        acc = self.accumulator
        if acc is None:
            return
        try:
            partial = acc.message()
        except Exception:  # a half-built block that cannot be finished: keep nothing of it
            return
        self.turn.assistant = list(partial.assistant)
        self.turn.tool_calls = kept_calls([c for c in partial.tool_calls if c.id is not None])

    # ---------------------------------------------------------------------------------------------------- records
    def _run_record(self, event: str, state: str | None) -> Record:
        from onellm.records import RunRecord

        return RunRecord(instance_id=self.instance.id, event=event, state=state, model=self.model.qualified_name)

    def _error_record(self, error: BaseException, where: str) -> Record:
        from onellm.records import ErrorRecord

        return ErrorRecord(
            instance_id=self.instance.id, error_type=type(error).__name__, message=str(error), where=where
        )

    def _answer_records(self, response: ChatResponse, usage: Usage | None) -> list[Record]:
        from onellm.records import InferenceRecord, MessageRecord

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
        if self.raw is not None and self.span is not None:  # sent, not a cache hit
            records.append(self._raw_turn_record(response))
        return records

    def _raw_turn_record(self, response: ChatResponse | None) -> Record:
        """The bodies sent and received, secrets masked; a provider that sends no HTTP (the scripted provider)
        gets onellm's own request and answer instead."""
        from onellm.records import RawTurnRecord

        raw = self.raw
        if raw is not None and raw.request is not None:
            request: Any = _raw_body(raw.request, raw)
            answer: Any = _raw_body(bytes(raw.response), raw) if raw.response else None
        else:
            request = _request_data(self.request)
            answer = _response_data(response) if response is not None else None
        return RawTurnRecord(instance_id=self.instance.id, message_id=self.turn.id, request=request, response=answer)


MAX_INPUT_DEPTH = 64
"""How deep a tool call's arguments may nest: an instance file is read back with at most 100 levels in all, and a
call's arguments sit some levels down in it."""


def kept_calls(calls: Sequence[ToolCall]) -> list[ToolCall]:
    """The calls of one answer as an instance keeps them, each with an id of its own and arguments it can read back.

    A call with no id, an empty one or the id of a call before it gets a fresh id: a result and an approval are found
    by the id, and a saved message holding an id twice is refused when the instance is read back. Arguments nested
    deeper than `MAX_INPUT_DEPTH` are kept as their JSON text in `invalid_inputs`, as arguments that are not an object
    are, so the model reads an error result. A changed call is a copy; the answer's own is left as it was.
    """
    seen: set[str] | None = None  # the ids of the calls before, made at the second call (most answers make one)
    out: list[ToolCall] = []
    for call in calls:
        if out and seen is None:
            seen = {out[0].id}  # type: ignore[arg-type]  # every call in `out` has an id
        fresh = not call.id or (seen is not None and call.id in seen)
        inputs = call.inputs
        deep = False
        if inputs:
            if type(inputs) is dict:
                # The usual arguments, one object of plain values, are seen flat in one look at each value (a plain
                # loop: a set made of their types costs more), without the walk.
                for value in inputs.values():
                    if type(value) not in _FLAT:
                        deep = _deeper_than(inputs, MAX_INPUT_DEPTH)
                        break
            else:
                deep = _deeper_than(inputs, MAX_INPUT_DEPTH)
        if fresh or deep:
            call = call.__copy__()
            if fresh:
                from onellm.runtime._prompt import new_message_id

                call.id = "call_" + new_message_id()[:24]
            if deep:
                call.invalid_inputs = msgspec.json.encode(call.inputs).decode()
                call.inputs = {}
        if seen is not None:
            seen.add(call.id)  # type: ignore[arg-type]  # set just above when it was None
        out.append(call)
    return out


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether a JSON value nests more than `limit` objects and arrays (walked a level at a time, without recursion:
    most arguments are one flat object, seen in one pass)."""
    level = [value]
    depth = 1
    while True:
        if depth > limit:
            return True
        inner = []
        for item in level:
            if isinstance(item, dict):
                item = item.values()
            elif not isinstance(item, list):
                continue
            for v in item:  # a plain loop: a generator for `extend` would cost more than the flat object's walk
                if isinstance(v, _NESTING):
                    inner.append(v)  # noqa: PERF401
        if not inner:
            return False
        level = inner
        depth += 1


_NESTING = (dict, list)
_FLAT = frozenset({str, int, float, bool, type(None), Decimal})
"""Types of argument values that nest nothing."""


def _raw_body(data: bytes, raw: RawExchange) -> Any:
    """A body as JSON data when it is JSON (numbers as decimals), else as text; every secret of the call masked."""
    text = data.decode("utf-8", "replace")
    for secret in raw.secrets:
        text = secret.redact(text)
    try:
        return _JSON.decode(text)
    except msgspec.DecodeError:
        return text


def _request_data(request: ChatRequest) -> dict[str, Any]:
    from onellm.runtime._cache import plain

    out: dict[str, Any] = {"model": request.model}
    if request.system is not None:
        out["system"] = request.system
    out["messages"] = [m.to_data() for m in request.messages]
    for key, value in (
        ("maxOutputTokens", request.max_output_tokens),
        ("temperature", request.temperature),
        ("topP", request.top_p),
        ("stopSequences", request.stop_sequences),
        ("tools", request.tools),
        ("hostedTools", request.hosted_tools),
        ("toolChoice", request.tool_choice),
        ("parallelToolCalls", request.parallel_tool_calls),
        ("responseFormat", request.response_format),
        ("reasoning", request.reasoning),
        ("serviceTier", request.service_tier),
        ("extraParameters", request.extra_parameters),
    ):
        if value is not None and value != [] and value != {}:
            out[key] = plain(value)
    return out


def _response_data(response: ChatResponse) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if response.model is not None:
        out["model"] = response.model
    if response.id is not None:
        out["id"] = response.id
    out["message"] = response.message.to_data()
    if response.usage is not None:
        out["usage"] = response.usage.to_data()
    if response.provider_finish_reason is not None:
        out["finishReason"] = response.provider_finish_reason
    return out


# ------------------------------------------------------------------------------------------------ streamed answers
class StreamingAnswer(AsyncIterator[StreamEvent], Generic[T]):
    """A streamed call. Iterate it for the events as they arrive (or `text()` for the text pieces), then
    `await answer.result()` for the same `AskResult` a whole call gives. Use `async with` to be sure a stream left
    part-way is closed (its instance is then saved `stopped` and `cancelled`)."""

    def __init__(self, start: Callable[[], ModelCall]) -> None:
        self._start = start
        self._call: ModelCall | None = None
        self._events: AsyncIterator[StreamEvent] | None = None
        self._batches: Callable[[], Awaitable[list[StreamEvent]]] | None = None
        self._ready: list[StreamEvent] = []
        """The events of the run read last, already in the answer; `_position` is the next to give out."""
        self._position = 0
        self._refused: Exception | None = None
        """The answer refused the event after the ready ones: raised once they are given out."""
        self._accumulator: MessageAccumulator | None = None
        self._result: AskResult[Any] | None = None
        self._error: BaseException | None = None
        self._done = False

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[StreamEvent]:
        """What `async for` reads: `__anext__` in one generator, so an event costs no call of its own."""
        while True:
            position = self._position
            ready = self._ready
            if position < len(ready):
                self._position = position + 1
                yield ready[position]
                continue
            try:
                event = await self._advance()
            except StopAsyncIteration:
                return
            yield event

    async def __anext__(self) -> StreamEvent:
        position = self._position
        ready = self._ready
        if position < len(ready):
            self._position = position + 1
            return ready[position]
        return await self._advance()

    async def _advance(self) -> StreamEvent:
        """The next event when none is ready: opens the call, reads the provider's next run of events (each is in
        the answer before the first is given out), or ends."""
        refused = self._refused
        if refused is not None:
            self._refused = None
            await self._fail(refused)
            raise refused
        if self._done:
            if self._error is not None:
                raise self._error
            raise StopAsyncIteration
        if self._call is None:
            await self._open()
        call = self._call
        assert call is not None
        assert self._accumulator is not None
        try:
            if call.raw is None:
                events = await self._next_events()
            else:
                with call._capturing():
                    events = await self._next_events()
            taken, refused = self._accumulator.add_many(events)
            if refused is not None:
                if not taken:
                    raise refused
                events = events[:taken]
                self._refused = refused
            self._ready = events
            self._position = 1
        except StopAsyncIteration:
            self._done = True
            try:
                self._result = await call.finish_stream()
            except BaseException as error:
                self._error = error
                raise
            raise
        except anyio.get_cancelled_exc_class() as cancelled:
            self._done = True
            self._ready = []
            await self._close_events()
            self._error = await call._cancelled(cancelled)
            raise self._error from cancelled
        except Exception as error:
            await self._fail(error)
            raise
        return events[0]

    async def _next_events(self) -> list[StreamEvent]:
        """The provider's next run of events (one event from a stream that gives them one at a time)."""
        if self._batches is not None:
            events = await self._batches()
            if not events:
                raise StopAsyncIteration
            return events
        assert self._events is not None
        return [await self._events.__anext__()]

    async def _fail(self, error: Exception) -> None:
        self._done = True
        self._ready = []
        self._error = error
        await self._close_events()
        call = self._call
        assert call is not None
        await call._failed(error)

    async def _open(self) -> None:
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
            try:
                self._result = await call._finish(opened, cached=True)
            except BaseException as error:
                self._error = error
                raise
            raise StopAsyncIteration
        self._events = opened
        self._batches = getattr(opened, "next_batch", None)  # an EventStream hands over its events in runs
        self._accumulator = call.accumulator

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
        """The finished answer (reads what is left of the stream first).

        Raises:
            StorageError: the answer could not be saved; its `result` holds it.
        """
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
            self._ready = []
            self._refused = None
            await self._close_events()
            self._error = await self._call._cancelled(RuntimeError("the stream was closed before it ended"))

    async def __aenter__(self) -> StreamingAnswer[Any]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


_publish("onellm.runtime", ModelCall)
