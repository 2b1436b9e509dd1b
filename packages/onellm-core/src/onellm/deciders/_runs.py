"""Stored decider runs: read one back (`get_decision`), list them (`list_decisions`), sum them up
(`decision_stats`, leaving out the origins asked: `replay` and `eval` by default), and ask one again
(`replay_decision`).

A decider run is any instance with the `decider` key (`spec/definitions.md`, "Runs and answers"), whichever store
holds it. Listing reads every candidate instance of the store, so it costs what loading them costs; a file that cannot
be read is left out of lists and statistics with a warning on the `onellm.deciders` logger.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onellm.deciders._answers import plain_answers
from onellm.deciders._results import DecisionCall, DecisionResult, DecisionStats, DecisionSummary, QuestionStats
from onellm.errors import BadDefinitionError, StorageError

if TYPE_CHECKING:
    from onellm.instances import Instance
    from onellm.runtime import RuntimeServices

__all__ = ["DEFAULT_EXCLUDED_ORIGINS", "decision_stats", "get_decision", "list_decisions", "replay_decision"]

_LOG = logging.getLogger("onellm.deciders")

DEFAULT_EXCLUDED_ORIGINS = ("replay", "eval")
"""Origins statistics leave out unless told otherwise."""


def _extension(instance: Instance) -> dict[str, Any] | None:
    found = instance.extra.get("decider")
    return found if isinstance(found, dict) else None


def _calls(extension: Mapping[str, Any]) -> list[DecisionCall]:
    return [DecisionCall.from_data(c) for c in extension.get("calls") or () if isinstance(c, Mapping)]


def _cost_of(calls: Iterable[DecisionCall]) -> Decimal | None:
    total = Decimal(0)
    for call in calls:
        if call.cost is None:
            return None
        total += call.cost
    return total


def result_of(instance: Instance) -> DecisionResult[Any] | None:
    """The result a stored run gave (None when the instance is not a decider run)."""
    from onellm.messages import Cost, Usage

    extension = _extension(instance)
    if extension is None:
        return None
    calls = _calls(extension)
    lines = [line for call in calls if call.usage is not None for line in call.usage.cost_lines]
    priced = all(call.cost is not None for call in calls)
    usage: Usage | None = None
    for call in calls:
        if call.usage is None:
            continue
        u = call.usage
        if usage is None:
            usage = Usage(model=u.model)
        usage = Usage(
            model=usage.model,
            input_tokens=usage.input_tokens + u.input_tokens,
            output_tokens=usage.output_tokens + u.output_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens + u.cache_creation_input_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens + u.cache_read_input_tokens,
            cost=(usage.cost or Decimal(0)) + u.cost if u.cost is not None else usage.cost,
        )
    answers = plain_answers(extension.get("answers") or {})
    outputs = plain_answers(extension["outputs"]) if "outputs" in extension else answers
    models = extension.get("models")
    return DecisionResult(
        answers=answers,
        outputs=outputs,
        usage=usage,
        cost=Cost.of(lines, priced=priced),
        instance=instance,
        engine=str(extension.get("engine") or ""),
        model=str(models[0]) if isinstance(models, list) and models else (instance.model or ""),
        origin=str(extension.get("origin") or "api"),
        calls=calls,
    )


async def get_decision(services: RuntimeServices, instance_id: str) -> DecisionResult[Any] | None:
    """A stored run as a `DecisionResult` (its answers, outputs, calls and cost); None when there is no such instance
    or it is not a decider run."""
    instance = await services.store.load(instance_id)
    return result_of(instance) if instance is not None else None


async def _runs(
    services: RuntimeServices, decider: str | None, since: datetime | None
) -> list[tuple[Instance, dict[str, Any], datetime]]:
    store = services.store
    summaries = await store.list(name_contains=decider, modified_since=since)
    found: list[tuple[Instance, dict[str, Any], datetime]] = []
    for summary in summaries:
        if decider is not None and summary.name != decider:
            continue
        try:
            instance = await store.load(summary.id)
        except (BadDefinitionError, StorageError) as error:  # one unreadable file does not hide every other run
            _LOG.warning("instance %s cannot be read and is left out: %s", summary.id, error)
            continue
        if instance is None:
            continue
        extension = _extension(instance)
        if extension is not None:
            found.append((instance, extension, summary.modified_at))
    return found


async def list_decisions(
    services: RuntimeServices,
    *,
    decider: str | None = None,
    origin: str | None = None,
    state: str | None = None,
    since: datetime | None = None,
    limit: int | None = None,
) -> list[DecisionSummary]:
    """Stored decider runs, newest first.

    Args:
        decider: Only runs of the decider with this name.
        origin: Only runs of this origin.
        state: Only runs in this state (`stopped`, `error`).
        since: Only runs saved at or after this time (aware).
        limit: At most this many.
    """
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a whole number of zero or more, not {limit!r}")
    out: list[DecisionSummary] = []
    for instance, extension, modified in await _runs(services, decider, since):
        if origin is not None and extension.get("origin") != origin:
            continue
        if state is not None and instance.state != state:
            continue
        models = extension.get("models")
        started = instance.run_started_at
        out.append(
            DecisionSummary(
                instance_id=str(instance.id),
                decider=instance.name,
                state=instance.state,
                origin=extension.get("origin") if isinstance(extension.get("origin"), str) else None,
                engine=extension.get("engine") if isinstance(extension.get("engine"), str) else None,
                model=str(models[0]) if isinstance(models, list) and models else instance.model,
                cost=_cost_of(_calls(extension)),
                started_at=started.datetime if started is not None else None,
                modified_at=modified,
                replay_of=extension.get("replayOf") if isinstance(extension.get("replayOf"), str) else None,
            )
        )
        if limit is not None and len(out) >= limit:
            break
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


async def decision_stats(
    services: RuntimeServices,
    *,
    decider: str | None = None,
    exclude_origins: Iterable[str] = DEFAULT_EXCLUDED_ORIGINS,
    since: datetime | None = None,
) -> DecisionStats:
    """Statistics over stored decider runs: counts by state, origin and model, calls, tokens and cost, and for each
    question what was answered. Runs whose origin is in `exclude_origins` are left out (and counted in `excluded`)."""
    excluded = frozenset(exclude_origins)
    stats = DecisionStats()
    confidences: dict[str, list[float]] = {}
    values: dict[str, list[float]] = {}
    for instance, extension, _ in await _runs(services, decider, since):
        origin = str(extension.get("origin") or "api")
        if origin in excluded:
            stats.excluded += 1
            continue
        stats.runs += 1
        if instance.state == "stopped" and not instance.cancelled:
            stats.answered += 1
        elif instance.state == "error":
            stats.failed += 1
        stats.by_origin[origin] = stats.by_origin.get(origin, 0) + 1
        models = extension.get("models")
        model = str(models[0]) if isinstance(models, list) and models else str(instance.model)
        stats.by_model[model] = stats.by_model.get(model, 0) + 1
        for call in _calls(extension):
            stats.calls += 1
            if call.usage is not None:
                stats.input_tokens += call.usage.total_input_tokens
                stats.output_tokens += call.usage.output_tokens
            if call.cost is None:
                stats.unpriced_calls += 1
            else:
                stats.cost += call.cost
        answers = plain_answers(extension.get("answers") or {})
        for qid, given in answers.items():
            for answer in given if isinstance(given, list) else [given]:
                if not isinstance(answer, dict):
                    continue
                kind = str(answer.get("type"))
                q = stats.questions.setdefault(qid, QuestionStats(type=kind))
                q.answered += 1
                if kind == "choice":
                    choice = str(answer.get("choice"))
                    q.choices[choice] = q.choices.get(choice, 0) + 1
                    confidences.setdefault(qid, []).append(float(answer.get("confidence") or 0))
                elif kind == "score":
                    values.setdefault(qid, []).append(float(answer.get("score") or 0))
                    confidences.setdefault(qid, []).append(float(answer.get("confidence") or 0))
                elif kind == "noul":
                    p = float(answer.get("noul") or 0)
                    values.setdefault(qid, []).append(p)
                    q.yes += 1 if p >= 0.5 else 0
    for qid, q in stats.questions.items():
        q.mean = _mean(values.get(qid, []))
        q.mean_confidence = _mean(confidences.get(qid, []))
    return stats


async def replay_decision(
    services: RuntimeServices, instance_id: str, *, model: str | None = None, origin: str = "replay"
) -> DecisionResult[Any]:
    """Ask a stored run's inputs again, as a new instance (`origin` `replay`, `replayOf` the old run), optionally on
    another model. The decider is the definition the run kept; its logic is found beside the definition's file
    when that still exists.

    Raises:
        LookupError: there is no decider run with this id.
    """
    from onellm.deciders._logic import find_logic
    from onellm.deciders._run import run_decision
    from onellm.definitions import Decider

    instance = await services.store.load(instance_id)
    extension = _extension(instance) if instance is not None else None
    if instance is None or extension is None:
        raise LookupError(f"no decider run with instance id {instance_id!r}")
    definition = extension.get("definition")
    path = Path(instance.agent_definition) if instance.agent_definition else None
    if isinstance(definition, Mapping):
        decider = Decider.from_data(definition, name=instance.name)
        if path is not None and path.is_file():
            object.__setattr__(decider, "_path", path)
            decider.file = str(path)
            schema_file = path.with_name(path.name[: -len(path.suffix)] + ".schema.json") if path.suffix else None
            if schema_file is not None and schema_file.is_file():
                from onellm.definitions import read_schema

                decider.schema = read_schema(schema_file)
    elif path is not None:
        decider = Decider.load(path)
    else:
        raise LookupError(f"decider run {instance_id!r} keeps no definition to replay")
    logic = await find_logic(decider)
    return await run_decision(
        services,
        decider,
        instance.inputs or {},
        origin=origin,
        model=model,
        logic=logic,
        replay_of=instance_id,
    )
