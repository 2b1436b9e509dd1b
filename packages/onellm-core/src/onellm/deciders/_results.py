"""What a decider run gives back (`DecisionResult`), one engine call of it (`DecisionCall`), and what the run APIs
report about stored runs (`DecisionSummary`, `DecisionStats`, `QuestionStats`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from onellm._public import publish as _publish
from onellm.deciders._answers import Answer, answer_from_data

if TYPE_CHECKING:
    from onellm.instances import Instance
    from onellm.messages import CallWarning, Cost, Usage

__all__ = ["DecisionCall", "DecisionResult", "DecisionStats", "DecisionSummary", "QuestionStats"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionCall:
    """One request to the engine (a decisions request, or one chat call for one question and sample)."""

    model: str
    """The model asked, `provider:model`."""
    questions: tuple[str, ...]
    """The keys of the questions the call asked (`line-ok[2]` for one element of a `forEach`)."""
    usage: Usage | None
    """What the engine reported, with the call's cost and cost lines."""
    duration_ms: int | None = None
    sample: int | None = None
    """For a chat engine with `llm.samples` above 1: which sample (from 1)."""
    attempt: int | None = None
    """For a chat engine: 1, or more when earlier replies were off-schema."""
    off_schema: str | None = None
    """Why the reply was refused (the call was paid and retried), for a chat engine."""

    @property
    def cost(self) -> Decimal | None:
        """What the call cost (None when it could not be priced)."""
        return self.usage.cost if self.usage is not None else None

    def to_data(self) -> dict[str, Any]:
        """The call as the instance's `decider.calls` entry (camelCase keys)."""
        out: dict[str, Any] = {"model": self.model, "questions": list(self.questions)}
        if self.usage is not None:
            out["usage"] = self.usage.to_data()
        if self.duration_ms is not None:
            out["durationMs"] = self.duration_ms
        if self.sample is not None:
            out["sample"] = self.sample
        if self.attempt is not None:
            out["attempt"] = self.attempt
        if self.off_schema is not None:
            out["offSchema"] = self.off_schema
        return out

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> DecisionCall:
        """Read a `decider.calls` entry."""
        from onellm.messages import Usage

        usage = data.get("usage")
        return cls(
            model=str(data.get("model") or ""),
            questions=tuple(str(q) for q in data.get("questions") or ()),
            usage=Usage.from_data(usage) if isinstance(usage, Mapping) else None,
            duration_ms=_int(data.get("durationMs")),
            sample=_int(data.get("sample")),
            attempt=_int(data.get("attempt")),
            off_schema=data.get("offSchema") if isinstance(data.get("offSchema"), str) else None,
        )


def _int(value: Any) -> int | None:
    if isinstance(value, int | Decimal) and not isinstance(value, bool):
        return int(value)
    return None


@dataclass(kw_only=True)
class DecisionResult(Generic[T]):
    """A decider run: its answers, its outputs, and what it cost.

    `answers` are plain data by question id (a list for a `forEach` question), the form the engines give and the
    instance keeps; `answer(question_id)` gives one as a typed answer. `outputs` is what the logic's `decide` returned
    (the answers when there is no logic), read into the `output=` type when one was given.
    """

    answers: dict[str, Any]
    """By question id: `{"type": "choice", "choice": ..., "confidence": ..., "probabilities": {...}}`, ..."""
    outputs: T
    """The outcome: `decide`'s result, or the answers; a value of the `output=` type when one was asked for."""
    usage: Usage | None
    """The calls' usage added up (None when no call was made)."""
    cost: Cost
    """The calls' cost lines and exact total."""
    instance: Instance
    """The saved run."""
    engine: str
    """`jev`, `openai-decisions` or `chat`."""
    model: str
    """The model asked, `provider:model`."""
    origin: str = "api"
    calls: list[DecisionCall] = field(default_factory=list)
    warnings: list[CallWarning] = field(default_factory=list)

    def answer(self, question_id: str, choice_type: Any = None) -> Answer | list[Answer]:
        """The answer to one question as a typed answer (a list of them for a `forEach` question).

        Args:
            question_id: The question's id.
            choice_type: For a choice question, the enum its values belong to (None: text).

        Raises:
            KeyError: the decider has no such question.
        """
        raw = self.answers[question_id]
        if isinstance(raw, list):
            return [answer_from_data(item, choice_type) for item in raw]
        return answer_from_data(raw, choice_type)


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionSummary:
    """One stored decider run, as `list_decisions` reports it."""

    instance_id: str
    decider: str | None
    """The decider's name."""
    state: str | None
    """`stopped` (answered), `error`, or `running` for a run that did not finish."""
    origin: str | None
    engine: str | None
    model: str | None
    cost: Decimal | None
    """The calls' cost added up (None when a call could not be priced)."""
    started_at: datetime | None
    modified_at: datetime
    replay_of: str | None = None
    """The run this one replayed."""


@dataclass(kw_only=True)
class QuestionStats:
    """What the runs answered to one question (`forEach` elements counted one by one)."""

    type: str
    answered: int = 0
    choices: dict[str, int] = field(default_factory=dict)
    """choice: how often each value won."""
    mean: float | None = None
    """score: the mean score; noul: the mean probability of yes."""
    yes: int = 0
    """noul: how often yes was at least as likely as no."""
    mean_confidence: float | None = None
    """choice and score: the mean confidence."""


@dataclass(kw_only=True)
class DecisionStats:
    """Statistics over stored decider runs (the excluded origins left out)."""

    runs: int = 0
    answered: int = 0
    """Runs that ended `stopped`."""
    failed: int = 0
    """Runs that ended in `error`."""
    by_origin: dict[str, int] = field(default_factory=dict)
    by_model: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    cost: Decimal = Decimal(0)
    """The priced calls' cost added up."""
    unpriced_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    questions: dict[str, QuestionStats] = field(default_factory=dict)
    excluded: int = 0
    """Runs left out for their origin."""


_publish("onellm", DecisionResult)
_publish("onellm.deciders", DecisionCall, DecisionStats, DecisionSummary, QuestionStats)
