"""One decider run, from the caller's inputs to the saved instance (`docs/deciders.md`).

1. **Before anything is sent** (a failure here sends nothing and saves nothing): the decider is loaded with its logic;
   the model resolved (its kind picks the engine); the inputs checked against the `inputs` of `decider.schema.json`
   (`DeciderInputError`); `prepare` run; the state and questions rendered (`TemplateError` for a missing name, naming
   file, line, column and key path; a `forEach` that gives no list is `DeciderInputError`); images refused by an
   engine that takes none (`CapabilityMissingError`); a question too large for the window refused
   (`ContextOverflowError`).
2. **The run**: an instance named after the decider, leased, with a `run` record, then the engine's calls, each
   priced, held on the caps and recorded.
3. **The outcome**: every question must be answered, with an answer of its type (`MalformedResponseError` names the
   missing ones); refusals raise `RefusedError` naming the questions; `decide` turns the answers into the outputs,
   which are checked against the `outputs` schema (`DeciderOutputError`) and read into `output=` when given.

The instance ends `stopped` when answered and `error` otherwise, saved either way with the calls that were paid for;
its extension key `decider` holds the engine, origin, models, calls with cost, answers and outputs, and the decider's
definition as it was (for replay). A cancelled run is saved `stopped` with `cancelled: true`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from onellm._go.jsonenc import GoJsonError
from onellm.deciders._answers import plain_answers
from onellm.deciders._check import Mismatch, check_value
from onellm.deciders._engines import EngineRun, engine_of, max_questions, plan_requests, run_chat, run_decisions
from onellm.deciders._logic import DeciderLogic, find_logic
from onellm.deciders._render import render_decider, take_images
from onellm.deciders._results import DecisionResult
from onellm.errors import (
    CapabilityMissingError,
    DeciderInputError,
    DeciderOutputError,
    MalformedResponseError,
    RefusedError,
    RunCancelledError,
    StorageError,
)
from onellm.messages import CallWarning, Cost, Usage

if TYPE_CHECKING:
    from onellm.definitions import Decider
    from onellm.instances import Instance
    from onellm.records import Record
    from onellm.runtime import RuntimeServices

__all__ = ["ORIGINS", "DeciderSource", "load_decider", "run_decision"]

ORIGINS = ("api", "agent", "playground", "replay", "eval")
"""Where a run may come from. `replay` and `eval` runs are left out of statistics by default."""

DeciderSource = Any
"""A folder holding `decider.yaml`, the file, a loaded `Decider`, or a class decorated with `@decider_logic`."""

_UNSET: Any = object()


def load_decider(source: DeciderSource) -> Decider:
    """The `Decider` a source names (loading it from disk for a path).

    Raises:
        BadDefinitionError: the file is invalid, with its line and column.
        TypeError: the source is none of the accepted kinds.
    """
    from onellm.definitions import Decider

    if isinstance(source, Decider):
        return source
    if isinstance(source, str | os.PathLike):
        return Decider.load(source)
    held = getattr(source, "decider", None)
    if isinstance(source, type) and isinstance(held, Decider):
        return held
    raise TypeError(
        "decider: expected a folder holding decider.yaml, its path, a Decider, or a class decorated with "
        f"@decider_logic, not {type(source).__name__}"
    )


def _plain_inputs(value: Any) -> Any:
    """The inputs as the instance keeps them (message parts as their data, records as objects)."""
    from onellm.messages import plain_data

    return plain_data(value)


def _decider_error(decider: Decider, error: GoJsonError, base: str) -> DeciderInputError:
    where = base + ("" if not error.path else error.path if error.path.startswith("[") else "." + error.path)
    return DeciderInputError(
        f"{decider.name or 'decider'}: {where}: {error.problem}; a decider sends JSON data only",
        path=where,
        decider=decider.name,
    )


def _assemble(
    decider: Decider,
    asked: list[Any],
    counts: Mapping[str, int],
    got: Mapping[str, dict[str, Any]],
    provider: str,
) -> dict[str, Any]:
    """The answers by question id, in the decider's order, each checked against its question."""
    missing = [q.key for q in asked if q.key not in got]
    if missing:
        shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        raise MalformedResponseError(
            f"the engine answered {len(asked) - len(missing)} of {len(asked)} questions; no answer to: {shown}",
            provider=provider,
        )
    for q in asked:
        answer = got[q.key]
        if answer.get("type") != q.type:
            raise MalformedResponseError(
                f"question {q.key!r} is a {q.type} question, but the engine answered a {answer.get('type')}",
                provider=provider,
            )
        if q.type == "choice" and isinstance(q.criteria, dict) and answer.get("choice") not in q.criteria:
            raise MalformedResponseError(
                f"question {q.key!r}: the engine chose {answer.get('choice')!r}, which is not one of its criteria",
                provider=provider,
            )
    answers: dict[str, Any] = {}
    for qid, question in decider.questions.items():
        if question.for_each is not None:
            answers[qid] = [got[f"{qid}[{i}]"] for i in range(counts.get(qid, 0))]
        else:
            answers[qid] = got[qid]
    return answers


class _RunState:
    """The instance of a run and how it ends."""

    def __init__(self, services: RuntimeServices, instance: Instance, extension: dict[str, Any]) -> None:
        self.services = services
        self.instance = instance
        self.extension = extension

    async def record(self, *records: Record) -> None:
        if self.services.recording:
            await self.services.record(*records)

    def event(self, event: str, state: str) -> Record:
        from onellm.records import RunRecord

        return RunRecord(instance_id=self.instance.id, event=event, state=state, model=self.instance.model)

    def error_record(self, error: BaseException, where: str) -> Record:
        from onellm.records import ErrorRecord

        return ErrorRecord(
            instance_id=self.instance.id, error_type=type(error).__name__, message=str(error), where=where
        )

    async def save(self) -> StorageError | None:
        try:
            await self.services.save(self.instance)
        except StorageError as error:
            return error
        return None

    async def stopped(self) -> StorageError | None:
        with anyio.CancelScope(shield=True):
            self.instance.state = "stopped"
            unsaved = await self.save()
            records: list[Record] = []
            if unsaved is not None:
                records.append(self.error_record(unsaved, "save"))
            records.append(self.event("stopped", "stopped"))
            await self.record(*records)
        return unsaved

    async def failed(self, error: BaseException) -> None:
        from onellm.instances import InstanceFailure

        with anyio.CancelScope(shield=True):
            instance = self.instance
            instance.state = "error"
            instance.error = InstanceFailure(type=type(error).__name__, message=str(error))
            records: list[Record] = [self.error_record(error, "decider")]
            unsaved = await self.save()
            if unsaved is not None:
                error.add_note(f"the instance was not saved: {unsaved}")
                records.append(self.error_record(unsaved, "save"))
            records.append(self.event("stopped", "error"))
            await self.record(*records)

    async def cancelled(self) -> RunCancelledError:
        with anyio.CancelScope(shield=True):
            instance = self.instance
            instance.state = "stopped"
            instance.cancelled = True
            records: list[Record] = []
            unsaved = await self.save()
            if unsaved is not None:
                records.append(self.error_record(unsaved, "save"))
            records.append(self.event("cancelled", "stopped"))
            await self.record(*records)
        return RunCancelledError(f"the run of instance {instance.id} was cancelled", instance=instance)


async def run_decision(
    services: RuntimeServices,
    source: DeciderSource,
    inputs: Mapping[str, Any] | None = None,
    *,
    output: Any = None,
    origin: str = "api",
    model: str | None = None,
    logic: DeciderLogic | None = _UNSET,
    caller_instance_id: str | None = None,
    replay_of: str | None = None,
    allow_python_logic: bool = True,
) -> DecisionResult[Any]:
    """Run a decider (see the module docstring).

    Args:
        services: The runtime's services.
        source: The decider: a folder, its `decider.yaml`, a `Decider`, or a decorated logic class.
        inputs: The caller's inputs (a mapping).
        output: Read the outputs into this type (a dataclass, `TypedDict`, `msgspec.Struct`, pydantic model, ...).
        origin: `api`, `agent`, `playground`, `replay` or `eval`.
        model: Ask this model instead of the decider's.
        logic: The logic to use (None: none), instead of the logic attached to the decider or found beside it.
        caller_instance_id: The instance that asked (a tool call's run), written as `callerInstanceId`.
        replay_of: The run this one replays, kept in the `decider` key.
        allow_python_logic: Whether a `decider.py` beside the definition may run (the `run_decider` tool says no).
    """
    if origin not in ORIGINS:
        raise ValueError(f"origin must be one of {', '.join(ORIGINS)}, not {origin!r}")
    if inputs is None:
        inputs = {}
    if not isinstance(inputs, Mapping):
        raise TypeError(f"inputs: expected a mapping of input names to values, not {type(inputs).__name__}")
    decider = (
        await anyio.to_thread.run_sync(load_decider, source)
        if isinstance(source, str | os.PathLike)
        else load_decider(source)
    )
    if logic is _UNSET:
        logic = await find_logic(decider, allow_python=allow_python_logic)
    name = decider.name or "decider"
    # -- before anything is sent -----------------------------------------------------------------------------
    resolved, provider = services.route(model or decider.model)
    engine = engine_of(resolved)
    if engine != "chat" and not callable(getattr(provider, "decide", None)):
        raise CapabilityMissingError(
            f"{resolved.qualified_name} is a decisions model, but the provider registered for it "
            f"({type(provider).__name__}) cannot answer decisions; register a decisions provider "
            f"(onellm.testing.ScriptedDecisionProvider in tests)"
        )
    schema = decider.input_schema
    if schema is not None:
        try:
            check_value(dict(inputs), schema, "inputs")
        except Mismatch as mismatch:
            raise DeciderInputError(
                f"{name}: {mismatch.path}: {mismatch.problem}", path=mismatch.path, decider=decider.name
            ) from None
    template_inputs: Any = dict(inputs)
    if logic is not None and logic.has_prepare:
        template_inputs = await logic.prepare(template_inputs)
    rendered = render_decider(decider, template_inputs)
    state, images = take_images(rendered.state)
    if images and engine != "chat" and resolved.entry.supports("images") is False:
        where = images[0][0]
        raise CapabilityMissingError(
            f"{resolved.qualified_name} takes no images, and the state holds one at {where}; ask a decisions "
            "engine that takes images (openai-decisions) or a chat model that reads them"
        )
    image_parts = [part for _, part in images]
    for where, part in images:
        if engine == "openai-decisions" and not isinstance(part.data, bytes | bytearray | memoryview):
            raise DeciderInputError(
                f"{name}: {where}: the image has no content to send (give its bytes, as Asset.file does)",
                path=where,
                decider=decider.name,
            )
    batches: list[Any] = []
    from onellm._go.jsonenc import encode_text

    try:
        encode_text(state)
    except GoJsonError as error:
        raise _decider_error(decider, error, "state") from None
    if engine != "chat" and rendered.questions:
        try:
            batches = plan_requests(
                resolved,
                str(getattr(provider, "name", resolved.provider)),
                state,
                rendered.questions,
                max_questions=max_questions(engine),
            )
        except GoJsonError as error:
            raise _decider_error(decider, error, "questions") from None
    # -- the run -----------------------------------------------------------------------------------------------
    instance = services.new_instance(resolved, model or decider.model, None)
    instance.name = decider.name
    definition_path: Path | None = getattr(decider, "_path", None)
    if definition_path is not None:
        instance.agent_definition = str(definition_path)
    instance.inputs = _plain_inputs(dict(inputs)) or None
    instance.caller_instance_id = caller_instance_id
    extension: dict[str, Any] = {"engine": engine, "origin": origin, "models": [resolved.qualified_name]}
    if replay_of is not None:
        extension["replayOf"] = replay_of
    extension["calls"] = []
    instance.extra["decider"] = extension
    run = EngineRun(services, decider, resolved, provider, instance, engine)
    if engine != "chat" and decider.llm is not None:
        run.warnings.append(
            CallWarning(
                kind="decider",
                message=f"llm options apply to chat engines only; {resolved.qualified_name} is a decisions engine, "
                "so they are not used",
            )
        )
    state_keeper = _RunState(services, instance, extension)
    lease = await services.lease(instance)
    try:
        await state_keeper.record(state_keeper.event("started", "running"))
        try:
            if not rendered.questions:
                got: dict[str, dict[str, Any]] = {}
                refused: list[str] = []
            elif engine == "chat":
                got, refused = await run_chat(run, state, rendered.questions, image_parts), []
            else:
                got, refused = await run_decisions(run, state, batches, image_parts)
            if refused:
                raise RefusedError(
                    f"the engine declined to answer {len(refused)} question(s): {', '.join(refused)}",
                    provider=run.provider_name,
                    questions=tuple(refused),
                )
            answers = _assemble(decider, rendered.questions, rendered.for_each, got, run.provider_name)
            extension["answers"] = answers
            outputs: Any = answers
            if logic is not None and logic.has_decide:
                outputs = plain_answers(await logic.decide(answers, dict(inputs)))
                extension["outputs"] = outputs
            out_schema = decider.output_schema
            if out_schema is not None:
                try:
                    check_value(outputs, out_schema, "outputs")
                except Mismatch as mismatch:
                    raise DeciderOutputError(
                        f"{name}: {mismatch.path}: {mismatch.problem}", path=mismatch.path, decider=decider.name
                    ) from None
            value: Any = outputs
            if output is not None:
                value = _read_output(output, outputs, decider)
        finally:
            extension["calls"] = [c.to_data() for c in run.calls]
            extension["definition"] = decider.to_data()
    except anyio.get_cancelled_exc_class() as cancelled:
        raise await state_keeper.cancelled() from cancelled
    except RunCancelledError:
        raise
    except Exception as error:
        await state_keeper.failed(error)
        raise
    finally:
        services.spend.forget(instance)
        if lease is not None:
            with anyio.CancelScope(shield=True), contextlib.suppress(OSError, StorageError):
                await lease.release()
    cost = Cost()
    for item in run.costs:
        cost = cost + item
    usage: Usage | None = None
    for call in run.calls:
        if call.usage is not None:
            usage = _add(usage, call.usage)
    result: DecisionResult[Any] = DecisionResult(
        answers=answers,
        outputs=value,
        usage=usage,
        cost=cost,
        instance=instance,
        engine=engine,
        model=resolved.qualified_name,
        origin=origin,
        calls=list(run.calls),
        warnings=list(run.warnings),
    )
    unsaved = await state_keeper.stopped()
    if unsaved is not None:
        unsaved.result = result
        raise unsaved
    return result


def _add(total: Usage | None, usage: Usage) -> Usage:
    if total is None:
        return Usage(
            model=usage.model,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens,
            cost=usage.cost,
        )
    cost = None if total.cost is None or usage.cost is None else total.cost + usage.cost
    return Usage(
        model=total.model,
        input_tokens=total.input_tokens + usage.input_tokens,
        output_tokens=total.output_tokens + usage.output_tokens,
        cache_creation_input_tokens=total.cache_creation_input_tokens + usage.cache_creation_input_tokens,
        cache_read_input_tokens=total.cache_read_input_tokens + usage.cache_read_input_tokens,
        cost=cost,
    )


def _read_output(tp: Any, outputs: Any, decider: Decider) -> Any:
    """The outputs read into `tp`.

    Raises:
        DeciderOutputError: they do not fit, naming the path (`outputs.route`).
    """
    if isinstance(tp, type) and hasattr(tp, "model_validate") and hasattr(tp, "model_json_schema"):
        try:
            return tp.model_validate(outputs)
        except Exception as error:  # pydantic's ValidationError, without importing pydantic
            raise DeciderOutputError(
                f"{decider.name or 'decider'}: outputs do not fit {tp.__name__}: {error}", path="outputs"
            ) from error
    from onellm.schema import ArgumentError, compile_type

    try:
        return compile_type(tp).convert(outputs)
    except ArgumentError as error:
        path = (
            f"outputs.{error.path}" if error.path and not error.path.startswith("[") else f"outputs{error.path or ''}"
        )
        raise DeciderOutputError(
            f"{decider.name or 'decider'}: {path}: {error.problem} (reading the outputs as "
            f"{getattr(tp, '__name__', tp)})",
            path=path,
            decider=decider.name,
        ) from None
