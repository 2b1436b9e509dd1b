"""Deciders: typed questions about a state, answered with probabilities by TypeSafe Jev, OpenAI Decisions or any
chat model (`docs/deciders.md`; the file format is `spec/definitions.md`, "Decider").

<!-- skip: next "needs a decider folder; docs/deciders.md runs whole deciders" -->

```python
verdict = await onellm.decide("deciders/triage-ticket", {"title": "Refund please"})
verdict.answers["topic"]["choice"]        # "billing"
verdict.outputs                           # the logic's outcome, or the answers
verdict.cost.total, verdict.instance      # exact cost; the saved run
```

`Runtime.decide` does the same on a given runtime, and `Runtime.replay_decision`, `get_decision`, `list_decisions` and
`decision_stats` work on the stored runs. Logic is the `DeciderLogic` seam: a `decider.js` beside the definition
(onellm-js), a `decider.py`, or a class decorated with `@decider_logic(...)`, with typed answers (`ChoiceAnswer[E]`,
`ScoreAnswer`, `NoulAnswer`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, overload

from onellm.deciders._answers import Answer, ChoiceAnswer, NoulAnswer, ScoreAnswer, answer_from_data
from onellm.deciders._check import Mismatch, check_value
from onellm.deciders._logic import DeciderLogic, PythonDeciderLogic, attach_logic, decider_logic, find_logic
from onellm.deciders._results import DecisionCall, DecisionResult, DecisionStats, DecisionSummary, QuestionStats
from onellm.deciders._run import ORIGINS, DeciderSource, run_decision
from onellm.deciders._runs import decision_stats, get_decision, list_decisions, replay_decision

__all__ = [
    "ORIGINS",
    "Answer",
    "ChoiceAnswer",
    "DeciderLogic",
    "DeciderSource",
    "DecisionCall",
    "DecisionResult",
    "DecisionStats",
    "DecisionSummary",
    "Mismatch",
    "NoulAnswer",
    "PythonDeciderLogic",
    "QuestionStats",
    "ScoreAnswer",
    "answer_from_data",
    "attach_logic",
    "check_value",
    "decide",
    "decide_sync",
    "decider_logic",
    "decision_stats",
    "find_logic",
    "get_decision",
    "list_decisions",
    "replay_decision",
    "run_decision",
]

_T = TypeVar("_T")


@overload
async def decide(
    decider: DeciderSource,
    inputs: Mapping[str, Any] | None = None,
    *,
    output: None = None,
    origin: str = "api",
    model: str | None = None,
) -> DecisionResult[Any]: ...
@overload
async def decide(
    decider: DeciderSource,
    inputs: Mapping[str, Any] | None = None,
    *,
    output: type[_T],
    origin: str = "api",
    model: str | None = None,
) -> DecisionResult[_T]: ...
async def decide(
    decider: DeciderSource,
    inputs: Mapping[str, Any] | None = None,
    *,
    output: type[_T] | None = None,
    origin: str = "api",
    model: str | None = None,
) -> DecisionResult[Any]:
    """Run a decider on the current runtime and return its answers, outputs, usage, cost and saved instance.

    Args:
        decider: A folder holding `decider.yaml`, the file, a loaded `Decider`, or a class decorated with
            `@decider_logic`.
        inputs: The inputs its templates (and its logic's `prepare`) read.
        output: Read the outputs into this type (a dataclass, `TypedDict`, `msgspec.Struct` or pydantic model).
        origin: Where the run comes from: `api`, `agent`, `playground`, `replay` or `eval`.
        model: Ask this model instead of the decider's.

    Raises:
        BadDefinitionError: the decider (or its logic) does not load, with file, line and column.
        DeciderInputError: the inputs do not fit `decider.schema.json`, or a `forEach` gives no list.
        TemplateError: a template failed, naming the file position and key path.
        CapabilityMissingError: an image for an engine that takes none; `decider.js` without onellm-js.
        DeciderOutputError: the outputs do not fit the `outputs` schema or the `output` type.
        RefusedError: the engine declined questions (`questions` names them).
        MalformedResponseError: answers missing or of the wrong type, or a chat model off-schema four times.
        ProviderError: and its subclasses, from the engine.
    """
    from onellm.runtime import current_runtime

    return await current_runtime().decide(decider, inputs, output=output, origin=origin, model=model)


def decide_sync(
    decider: DeciderSource,
    inputs: Mapping[str, Any] | None = None,
    *,
    output: type[_T] | None = None,
    origin: str = "api",
    model: str | None = None,
) -> DecisionResult[Any]:
    """Blocking form of `onellm.decide`, for scripts and notebooks. Not for use inside async code."""
    from onellm.runtime import drive

    return drive(decide(decider, inputs, output=output, origin=origin, model=model), "decide")
