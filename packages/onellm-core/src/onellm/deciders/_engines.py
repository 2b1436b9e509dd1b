"""The three engines a decider runs on, chosen by the resolved model (`docs/deciders.md`, "Three engines").

- **`jev`** (a model of kind `decision` whose provider speaks TypeSafe's protocol): one request holds the state and
  every question. When that would not fit in 90% of the model's context window (estimated from the encoded JSON),
  the questions are split over several requests, each with the whole state, at most 8 in flight.
- **`openai-decisions`** (a model of kind `decision` served by OpenAI): the same, with at most 400 questions a request.
- **`chat`** (any other model): one call per question and per sample over one shared system prefix holding the
  instructions and the state (cached where the provider caches; when the prefix is long enough to be cached, the
  first call runs alone so the others find it). The model gives a probability for every option through structured
  output where the model has it; choice, score and confidence are derived from them (`_answers`). A reply that does
  not fit is retried up to three times, never repaired; with `llm.samples` above 1 the samples' distributions are
  averaged (temperature 1 unless the decider sets one).

Every call is priced (`Jev`: input tokens only; OpenAI Decisions: uncached input, cache reads and cache writes, never
output; a chat model as it prices any call), held on the spend caps before it is sent, recorded as an `inference`
record and kept in the run's `decider.calls`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from onellm._go.jsonenc import encode_text
from onellm.deciders._answers import derive_answer
from onellm.deciders._results import DecisionCall
from onellm.errors import ContextOverflowError, MalformedResponseError
from onellm.messages import CallWarning, Cost, Message, TextPart, Usage
from onellm.providers import (
    DecisionQuestion,
    DecisionRequest,
    DecisionResponse,
    DecisionWire,
    score_levels,
)

if TYPE_CHECKING:
    from onellm.catalog import ResolvedModel
    from onellm.definitions import Decider
    from onellm.instances import Instance
    from onellm.messages import AssetPart
    from onellm.providers import ChatRequest, ChatResponse
    from onellm.runtime import RuntimeServices

__all__ = [
    "BUDGET_SHARE",
    "MAX_IN_FLIGHT",
    "MAX_OFF_SCHEMA_RETRIES",
    "EngineRun",
    "engine_of",
    "gather",
    "max_questions",
    "plan_requests",
    "run_chat",
    "run_decisions",
]

BUDGET_SHARE = Decimal("0.9")
"""The share of the context window one decisions request may fill."""
MAX_IN_FLIGHT = 8
"""Requests (or chat calls) of one run in flight at once."""
MAX_OFF_SCHEMA_RETRIES = 3
"""Chat replies that do not fit the answer's schema are asked again this many times, then the run fails."""
CACHE_MIN_TOKENS = 1024
"""A shared chat prefix at least this long (estimated) is written to the cache by a first call that runs alone."""
_JSON = msgspec.json.Decoder()


def engine_of(model: ResolvedModel) -> str:
    """`jev`, `openai-decisions` or `chat`, from the model's kind and its provider's protocol."""
    if model.entry.kind != "decision":
        return "chat"
    protocol = model.provider_entry.protocol or model.provider
    return "openai-decisions" if protocol == "openai" else "jev"


async def gather(jobs: Sequence[Callable[[], Awaitable[None]]], limit: int = MAX_IN_FLIGHT) -> None:
    """Run `jobs` with at most `limit` at once. The first failure cancels the others and is raised as it is."""
    if not jobs:
        return
    if len(jobs) == 1:
        await jobs[0]()
        return
    failures: list[BaseException] = []
    limiter = anyio.CapacityLimiter(limit)

    async def run(job: Callable[[], Awaitable[None]], scope: anyio.CancelScope) -> None:
        async with limiter:
            if failures:
                return
            try:
                await job()
            except Exception as error:
                failures.append(error)
                scope.cancel()

    async with anyio.create_task_group() as group:
        for job in jobs:
            group.start_soon(run, job, group.cancel_scope)
    if failures:
        raise failures[0]


class EngineRun:
    """One run's calls: sending, pricing, holding spend, recording, and the calls kept for the instance."""

    def __init__(
        self,
        services: RuntimeServices,
        decider: Decider,
        model: ResolvedModel,
        provider: Any,
        instance: Instance,
        engine: str,
    ) -> None:
        self.services = services
        self.decider = decider
        self.model = model
        self.provider = provider
        self.instance = instance
        self.engine = engine
        self.calls: list[DecisionCall] = []
        self.costs: list[Cost] = []
        self.warnings: list[CallWarning] = []
        self.provider_name = str(getattr(provider, "name", model.provider))

    # --------------------------------------------------------------------------------------------------- pricing
    def _price(self, usage: Usage | None, priced_usage: Usage | None, service_tier: str | None = None) -> Cost:
        if usage is None or priced_usage is None:
            return Cost.of(
                (),
                warnings=(CallWarning(kind="pricing", message="the engine reported no usage; the call is not priced"),),
                priced=False,
            )
        return self.model.price(priced_usage, service_tier=service_tier, at=self.services.clock.now())

    def _priced_part(self, usage: Usage | None) -> Usage | None:
        """The part of a decisions engine's usage that is priced: input only (Jev), or uncached input, cache reads
        and cache writes (OpenAI Decisions). Output is never priced."""
        if usage is None:
            return None
        if self.engine == "jev":
            return Usage(model=usage.model, input_tokens=usage.input_tokens)
        return Usage(
            model=usage.model,
            input_tokens=usage.input_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
        )

    async def _keep(self, call: DecisionCall, cost: Cost, operation: str, finish: str | None, raw: Any) -> None:
        self.calls.append(call)
        self.costs.append(cost)
        for warning in cost.warnings:
            if warning not in self.warnings:
                self.warnings.append(warning)
        services = self.services
        if services.recording:
            from onellm.records import InferenceRecord

            records: list[Any] = [
                InferenceRecord(
                    instance_id=self.instance.id,
                    provider=self.model.provider,
                    operation=operation,
                    duration_ms=Decimal(call.duration_ms) if call.duration_ms is not None else None,
                    finish_reason=finish,
                    usage=call.usage,
                )
            ]
            if raw is not None:
                records.append(raw)
            with anyio.CancelScope(shield=True):
                await services.record(*records)

    def _costed(self, usage: Usage | None, cost: Cost) -> Usage | None:
        if usage is None:
            return None
        return msgspec.structs.replace(
            usage, cost=cost.total if cost.priced or cost.lines else None, cost_lines=list(cost.lines)
        )

    # ------------------------------------------------------------------------------------------- decision calls
    async def decide(self, request: DecisionRequest, estimate_text: str) -> DecisionResponse:
        """Send one decisions request: hold its worst case (its input; no output), send, price, record."""
        from onellm.telemetry import start_model_call

        reservation = self.services.spend.reserve_embeddings(self.model, [estimate_text])
        span = start_model_call("decide", self.model.provider, self.model.name)
        raw = self._raw_exchange()
        started = time.perf_counter()
        try:
            if raw is None:
                response: DecisionResponse = await self.provider.decide(request)
            else:
                from onellm.providers import capturing_raw_exchange

                with capturing_raw_exchange(raw):
                    response = await self.provider.decide(request)
        except BaseException as error:
            if reservation is not None:
                reservation.release()
            span.fail(error)
            if raw is not None and not isinstance(error, anyio.get_cancelled_exc_class()):
                with anyio.CancelScope(shield=True):
                    await self.services.record(self._raw_record(raw, request, None))
            raise
        with anyio.CancelScope(shield=True):
            duration = int((time.perf_counter() - started) * 1000)
            cost = self._price(response.usage, self._priced_part(response.usage))
            if reservation is not None:
                reservation.commit(cost.total if cost.priced else None)
            span.succeed(
                response_model=response.model, response_id=response.id, finish_reason=None, usage=response.usage
            )
            call = DecisionCall(
                model=self.model.qualified_name,
                questions=tuple(q.key for q in request.questions),
                usage=self._costed(response.usage, cost),
                duration_ms=duration,
            )
            record = self._raw_record(raw, request, response) if raw is not None else None
            await self._keep(call, cost, "decide", None, record)
        return response

    def _raw_exchange(self) -> Any:
        if not self.services.llm_turn_logs:
            return None
        from onellm.providers import RawExchange

        return RawExchange()

    def _raw_record(self, raw: Any, request: DecisionRequest, response: DecisionResponse | None) -> Any:
        from onellm.records import RawTurnRecord

        if raw.request is not None:
            sent: Any = _masked(raw.request, raw)
            answer: Any = _masked(bytes(raw.response), raw) if raw.response else None
        else:  # a provider that sends no HTTP: onellm's own request and answer
            sent = {
                "model": request.model,
                "state": request.state,
                "questions": [{"key": q.key, "type": q.type} for q in request.questions],
            }
            answer = None if response is None else {"model": response.model, "answers": response.answers}
        return RawTurnRecord(instance_id=self.instance.id, request=sent, response=answer)

    # ----------------------------------------------------------------------------------------------- chat calls
    async def chat(
        self, request: ChatRequest, keys: tuple[str, ...], *, sample: int | None, attempt: int
    ) -> tuple[ChatResponse, Callable[[str], Awaitable[None]]]:
        """Send one chat call: hold, send, price. Returns the answer and a function that records the call (with the
        reason its reply was refused, or None) once the reply has been checked."""
        from onellm.telemetry import start_model_call

        reservation = self.services.spend.reserve(self.model, request, self.instance)
        span = start_model_call("chat", self.model.provider, self.model.name)
        started = time.perf_counter()
        try:
            response: ChatResponse = await self.provider.send(request)
        except BaseException as error:
            if reservation is not None:
                reservation.release()
            span.fail(error)
            raise
        duration = int((time.perf_counter() - started) * 1000)
        cost = self._price(response.usage, response.usage, request.service_tier)
        if reservation is not None:
            reservation.commit(cost.total if cost.priced else None)
        span.succeed(
            response_model=response.model or self.model.name,
            response_id=response.id,
            finish_reason=response.provider_finish_reason,
            usage=response.usage,
        )
        for warning in response.warnings:
            if warning not in self.warnings:
                self.warnings.append(warning)

        async def keep(off_schema: str) -> None:
            call = DecisionCall(
                model=self.model.qualified_name,
                questions=keys,
                usage=self._costed(response.usage, cost),
                duration_ms=duration,
                sample=sample,
                attempt=attempt,
                off_schema=off_schema or None,
            )
            await self._keep(call, cost, "chat", response.provider_finish_reason, None)

        return response, keep


def _masked(data: bytes, raw: Any) -> Any:
    text = data.decode("utf-8", "replace")
    for secret in raw.secrets:
        text = secret.redact(text)
    try:
        return msgspec.json.Decoder(float_hook=Decimal).decode(text)
    except msgspec.DecodeError:
        return text


# -------------------------------------------------------------------------------------------- decisions engines


def _question_body(question: DecisionQuestion) -> dict[str, Any]:
    item: dict[str, Any] = {"type": question.type, "instructions": question.instructions}
    if question.criteria is not None:
        item["criteria"] = score_levels(question.criteria) if question.type == "score" else question.criteria
    return {question.key: item}


def plan_requests(
    model: ResolvedModel,
    provider_name: str,
    state: Any,
    questions: list[DecisionQuestion],
    *,
    max_questions: int | None,
) -> list[tuple[list[DecisionQuestion], str]]:
    """The questions split into requests that fit 90% of the model's context window (and `max_questions` each),
    in order, each with the text its spend hold is estimated from.

    Raises:
        ContextOverflowError: one question with the state would not fit on its own (nothing is sent).
        GoJsonError: a value of the state or a question is not JSON.
    """
    from onellm.catalog.counting import TokenEstimator

    window = model.entry.context_window
    budget = int(window * BUDGET_SHARE) if isinstance(window, int) and window > 0 else None
    estimator = TokenEstimator(model)
    if max_questions is None or len(questions) <= max_questions:
        bodies: dict[str, Any] = {}
        for q in questions:
            bodies.update(_question_body(q))
        whole = encode_text({"model": model.name, "questions": bodies, "state": state})
        if budget is None or estimator.text(whole) <= budget:
            return [(list(questions), whole)]
    envelope = encode_text({"model": model.name, "questions": {}, "state": state})
    base = estimator.text(envelope)
    batches: list[tuple[list[DecisionQuestion], str]] = []
    current: list[DecisionQuestion] = []
    texts: list[str] = []
    used = base
    for q in questions:
        text = encode_text(_question_body(q))
        tokens = estimator.text(text)
        if budget is not None and base + tokens > budget:
            raise ContextOverflowError(
                f"question {q.key!r} with the state needs about {base + tokens:,} tokens, more than 90% of the "
                f"{window:,}-token window of {model.qualified_name}; shorten the state or the question",
                provider=provider_name,
            )
        full = (budget is not None and used + tokens > budget) or (
            max_questions is not None and len(current) >= max_questions
        )
        if current and full:
            batches.append((current, envelope + "".join(texts)))
            current, texts, used = [], [], base
        current.append(q)
        texts.append(text)
        used += tokens
    if current:
        batches.append((current, envelope + "".join(texts)))
    return batches


def max_questions(engine: str) -> int | None:
    """The most questions one request of the engine may hold (None: no limit but the window)."""
    from onellm.providers.openai import MAX_QUESTIONS

    return MAX_QUESTIONS if engine == "openai-decisions" else None


async def run_decisions(
    run: EngineRun,
    state: Any,
    batches: list[tuple[list[DecisionQuestion], str]],
    images: list[AssetPart],
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Send the planned requests (`plan_requests`) to a decisions engine. Returns the answers by key and the refused
    keys."""
    wire: DecisionWire = "openai" if run.engine == "openai-decisions" else "jev"
    cache = run.decider.cache
    answers: dict[str, dict[str, Any]] = {}
    refused: list[str] = []

    def job(batch: list[DecisionQuestion], text: str) -> Callable[[], Awaitable[None]]:
        async def send() -> None:
            request = DecisionRequest(
                model=run.model.name,
                state=state,
                questions=batch,
                wire=wire,
                images=list(images),
                cache_key=run.decider.cache_key,
                cache_explicit=bool(cache is not None and cache.explicit),
                profile=run.model.profile,
            )
            response = await run.decide(request, text)
            answers.update(response.answers)
            refused.extend(response.refused)

        return send

    await gather([job(batch, text) for batch, text in batches])
    return answers, refused


# ---------------------------------------------------------------------------------------------------- chat engine


def _options(question: DecisionQuestion) -> tuple[list[str], list[str], Any]:
    """(option keys, how each is shown, the legend) of a question asked of a chat model."""
    if question.type == "noul":
        criteria = question.criteria if isinstance(question.criteria, dict) else {}
        yes = criteria.get("true")
        no = criteria.get("false")
        return ["yes", "no"], [f'"yes"{": " + yes if yes else ""}', f'"no"{": " + no if no else ""}'], None
    if question.type == "choice":
        items = list((question.criteria or {}).items())
        return (
            [k for k, _ in items],
            [f"{_quoted(k)}: {d}" if d else _quoted(k) for k, d in items],
            None,
        )
    levels = score_levels(question.criteria)
    shown: list[str] = []
    for i, level in enumerate(levels):
        if isinstance(level, dict):
            ((label, description),) = level.items()
            shown.append(f'"{i}": {label}' + (f" ({description})" if description else ""))
        else:
            shown.append(f'"{i}": {level}')
    return [str(i) for i in range(len(levels))], shown, {str(i): level for i, level in enumerate(levels)}


def _quoted(text: str) -> str:
    return encode_text(text).replace("\\u003c", "<").replace("\\u003e", ">").replace("\\u0026", "&")


def _schema(options: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "probabilities": {
                "type": "object",
                "properties": {o: {"type": "number"} for o in options},
                "required": list(options),
                "additionalProperties": False,
            }
        },
        "required": ["probabilities"],
        "additionalProperties": False,
    }


def _system_prompt(state_text: str) -> str:
    return (
        "You judge one question at a time about the state below, which is JSON. For every option of the question, "
        "give the probability that it is the right answer: numbers from 0 to 1 that add up to 1. Reply with only a "
        'JSON object of the form {"probabilities": {"<option>": <probability>, ...}}, with every option and no '
        "other key.\n\nState:\n" + state_text
    )


def _question_text(question: DecisionQuestion, shown: list[str]) -> str:
    given = question.instructions
    instructions = given if isinstance(given, str) else "\n".join(f"{k}: {v}" for k, v in given.items())
    return f"Question: {instructions}\n\nOptions:\n" + "\n".join(f"- {line}" for line in shown)


def read_distribution(text: str, options: list[str]) -> list[float]:
    """The probabilities a chat model gave, in the options' order, normalised to sum to 1.

    Raises:
        ValueError: the reply is not JSON of the asked form, names other options, or gives a probability that is
            not a number from 0 to 1 (or a total far from 1). The message says which.
    """
    try:
        data = _JSON.decode(text)
    except msgspec.DecodeError as error:
        raise ValueError(f"not JSON ({error})") from None
    if not isinstance(data, dict) or set(data) != {"probabilities"} or not isinstance(data["probabilities"], dict):
        raise ValueError('not an object with only "probabilities"')
    given = data["probabilities"]
    if set(given) != set(options):
        missing = [o for o in options if o not in given]
        extra = [k for k in given if k not in options]
        raise ValueError(f"options missing {missing} or unknown {extra}")
    values: list[float] = []
    for option in options:
        p = given[option]
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p <= 1 or p != p:
            raise ValueError(f"the probability of {option!r} is {p!r}, not a number from 0 to 1")
        values.append(float(p))
    total = math.fsum(values)
    if not 0.9 <= total <= 1.1:
        raise ValueError(f"the probabilities add up to {total:g}, not 1")
    return [v / total for v in values]


async def run_chat(
    run: EngineRun, state: Any, questions: list[DecisionQuestion], images: list[AssetPart]
) -> dict[str, dict[str, Any]]:
    """Ask every question of a chat model, one call per question and sample. Returns the answers by key.

    Raises:
        MalformedResponseError: a reply did not fit its schema four times in a row, naming the question.
    """
    from onellm.catalog.adjust import RequestAdjuster
    from onellm.catalog.counting import TokenEstimator
    from onellm.providers import CacheOptions, ChatRequest, ReasoningOptions, ResponseFormat

    llm = run.decider.llm
    samples = (llm.samples if llm is not None and llm.samples else 1) or 1
    temperature: float | None = float(llm.temperature) if llm is not None and llm.temperature is not None else None
    if temperature is None and samples > 1:
        temperature = 1.0
    reasoning = None
    if llm is not None and llm.thinking is not None:
        thinking = llm.thinking
        if isinstance(thinking, str):
            reasoning = ReasoningOptions(effort=thinking)
        else:
            budget = thinking.get("budget")
            reasoning = ReasoningOptions(effort=thinking.get("effort"), budget_tokens=int(budget) if budget else None)
    service_tier = llm.service_tier if llm is not None else None
    structured = run.model.entry.supports("structuredOutput") is not False
    state_text = encode_text(state)
    system = _system_prompt(state_text)
    key = run.decider.cache_key
    adjuster = RequestAdjuster(run.model)
    distributions: dict[str, list[list[float]]] = {}
    layouts: dict[str, tuple[list[str], Any, DecisionQuestion]] = {}
    image_parts: list[Any] = list(images)

    def job(question: DecisionQuestion, sample: int | None) -> Callable[[], Awaitable[None]]:
        options, shown, legend = _options(question)
        layouts[question.key] = (options, legend, question)
        user = Message(user=[*image_parts, TextPart(_question_text(question, shown))])

        async def ask() -> None:
            problem = ""
            for attempt in range(1, MAX_OFF_SCHEMA_RETRIES + 2):
                request = ChatRequest(
                    model=run.model.name,
                    messages=[user],
                    system=system,
                    temperature=temperature,
                    reasoning=reasoning,
                    service_tier=service_tier,
                    cache=CacheOptions(key=key) if key else None,
                    response_format=ResponseFormat.json_schema(_schema(options), name="answer") if structured else None,
                    profile=run.model.profile,
                )
                request = adjuster.adjust_request(request)
                response, keep = await run.chat(request, (question.key,), sample=sample, attempt=attempt)
                try:
                    distribution = read_distribution(response.message.text, options)
                except ValueError as error:
                    problem = str(error)
                    await keep(problem)
                    continue
                await keep("")
                distributions.setdefault(question.key, []).append(distribution)
                return
            raise MalformedResponseError(
                f"question {question.key!r}: the model's reply did not fit the answer's form "
                f"{MAX_OFF_SCHEMA_RETRIES + 1} times (last: {problem})",
                provider=run.provider_name,
            )

        return ask

    jobs = [job(q, (s + 1) if samples > 1 else None) for q in questions for s in range(samples)]
    if len(jobs) > 1 and run.model.entry.supports("caching") is not False:
        prefix = TokenEstimator(run.model).text(system)
        if prefix >= CACHE_MIN_TOKENS:
            await jobs[0]()  # writes the shared prefix to the cache; the others then read it
            jobs = jobs[1:]
    await gather(jobs)
    answers: dict[str, dict[str, Any]] = {}
    for q in questions:
        options, legend, _ = layouts[q.key]
        runs = distributions[q.key]
        averaged = [math.fsum(d[i] for d in runs) / len(runs) for i in range(len(options))]
        answers[q.key] = derive_answer(q.type, options, averaged, legend)
    return answers
