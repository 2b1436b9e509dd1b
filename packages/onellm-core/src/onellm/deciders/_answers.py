"""Answers: their plain form (what engines return, what the instance keeps, what JavaScript logic reads), the typed
form Python logic reads (`ChoiceAnswer[E]`, `ScoreAnswer`, `NoulAnswer`), and how a chat model's probabilities
become an answer.

| Type | Plain form |
|---|---|
| `choice` | `{"type": "choice", "choice": value, "confidence": c, "probabilities": {value: p}}` |
| `score` | `{"type": "score", "score": s, "confidence": c, "probabilities": {"0": p, ...}, "legend": {"0": level}}` |
| `noul` | `{"type": "noul", "noul": p}` |

**Derived from a distribution** (the chat engine, and the average of several samples): the choice is the value with
the highest probability (the first in the decider's order on a tie); the score is the expected level, the sum of
level x probability; the noul is the probability of yes. Confidence is one minus the distribution's entropy over the
largest entropy its options allow: 1 when one option holds all the mass, 0 when it is spread evenly.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Generic, Literal, TypeVar

from onellm._public import publish as _publish

__all__ = [
    "Answer",
    "ChoiceAnswer",
    "NoulAnswer",
    "ScoreAnswer",
    "answer_from_data",
    "confidence_of",
    "derive_answer",
    "plain_answers",
]

C = TypeVar("C")


def _float(value: Any) -> float:
    if isinstance(value, Decimal | int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, float):
        return value
    raise TypeError(f"expected a number, found {type(value).__name__}")


def _member(choice_type: Any, value: str) -> Any:
    """`value` (a choice as text) as a member of `choice_type`: an enum member by value, else by name."""
    if choice_type is None or choice_type is str or choice_type is Any:
        return value
    if isinstance(choice_type, type) and issubclass(choice_type, enum.Enum):
        for member in choice_type:
            if member.value == value or (not isinstance(member.value, str) and str(member.value) == value):
                return member
        try:
            return choice_type[value]
        except KeyError:
            raise ValueError(f"{value!r} is not a value of {choice_type.__name__}") from None
    raise TypeError(f"a choice is read as str or an Enum, not {choice_type!r}")


@dataclass(frozen=True, slots=True)
class ChoiceAnswer(Generic[C]):
    """The answer to a `choice` question: the winning value, how sure, and the probability of every value.

    `ChoiceAnswer[Topic]` reads the values as members of the enum `Topic` (by value, else by name); plain
    `ChoiceAnswer` keeps them as text.
    """

    choice: C
    """The winning value."""
    confidence: float
    """0 (no idea) to 1 (certain)."""
    probabilities: dict[C, float] = field(default_factory=dict)
    """Each value's probability (an engine may leave this empty)."""
    type: Literal["choice"] = "choice"

    @classmethod
    def from_data(cls, data: Mapping[str, Any], choice_type: Any = None) -> ChoiceAnswer[Any]:
        """Read the plain form; `choice_type` is the enum the values belong to (None: text)."""
        probabilities = {_member(choice_type, str(k)): _float(v) for k, v in (data.get("probabilities") or {}).items()}
        return ChoiceAnswer(
            choice=_member(choice_type, str(data["choice"])),
            confidence=_float(data["confidence"]),
            probabilities=probabilities,
        )

    def to_data(self) -> dict[str, Any]:
        """The plain form."""

        def text(value: Any) -> str:
            return str(value.value) if isinstance(value, enum.Enum) else str(value)

        return {
            "type": "choice",
            "choice": text(self.choice),
            "confidence": self.confidence,
            "probabilities": {text(k): v for k, v in self.probabilities.items()},
        }


@dataclass(frozen=True, slots=True)
class ScoreAnswer:
    """The answer to a `score` question: the expected level (0 for the lowest) and its distribution."""

    score: float
    """The expected level: the sum of level x probability."""
    confidence: float
    """0 (spread evenly) to 1 (one level holds all the mass)."""
    probabilities: dict[int, float] = field(default_factory=dict)
    """Each level's probability, by level number."""
    legend: dict[int, Any] = field(default_factory=dict)
    """Each level's label (or `{label: description}`), by level number."""
    type: Literal["score"] = "score"

    @property
    def level(self) -> int:
        """The nearest level to the score (halves round up)."""
        return math.floor(self.score + 0.5)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ScoreAnswer:
        """Read the plain form."""
        return cls(
            score=_float(data["score"]),
            confidence=_float(data["confidence"]),
            probabilities={int(k): _float(v) for k, v in (data.get("probabilities") or {}).items()},
            legend={int(k): v for k, v in (data.get("legend") or {}).items()},
        )

    def to_data(self) -> dict[str, Any]:
        """The plain form."""
        out: dict[str, Any] = {
            "type": "score",
            "score": self.score,
            "confidence": self.confidence,
            "probabilities": {str(k): v for k, v in self.probabilities.items()},
        }
        if self.legend:
            out["legend"] = {str(k): v for k, v in self.legend.items()}
        return out


@dataclass(frozen=True, slots=True)
class NoulAnswer:
    """The answer to a `noul` question: the probability that the answer is yes."""

    noul: float
    """The probability of yes, 0 to 1."""
    type: Literal["noul"] = "noul"

    @property
    def probability(self) -> float:
        """The probability of yes (the same as `noul`)."""
        return self.noul

    def __bool__(self) -> bool:
        """Yes, when yes is at least as likely as no."""
        return self.noul >= 0.5

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> NoulAnswer:
        """Read the plain form."""
        return cls(noul=_float(data["noul"]))

    def to_data(self) -> dict[str, Any]:
        """The plain form."""
        return {"type": "noul", "noul": self.noul}


Answer = ChoiceAnswer[Any] | ScoreAnswer | NoulAnswer
"""Any typed answer."""


def answer_from_data(data: Mapping[str, Any], choice_type: Any = None) -> Answer:
    """The typed form of one plain answer."""
    kind = data.get("type")
    if kind == "choice":
        return ChoiceAnswer.from_data(data, choice_type)
    if kind == "score":
        return ScoreAnswer.from_data(data)
    if kind == "noul":
        return NoulAnswer.from_data(data)
    raise ValueError(f"not an answer: type {kind!r}")


def plain_answers(value: Any) -> Any:
    """Answers as plain data: typed answers as their plain form, stored numbers (decimals) as floats."""
    if isinstance(value, ChoiceAnswer | ScoreAnswer | NoulAnswer):
        return value.to_data()
    if isinstance(value, Mapping):
        return {str(k): plain_answers(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_answers(v) for v in value]
    if isinstance(value, Decimal):
        return float(value)
    return value


# -------------------------------------------------------------------------------------- answers from distributions


def confidence_of(probabilities: Sequence[float]) -> float:
    """One minus the normalised entropy: 1 when one option holds all the mass, 0 when it is spread evenly."""
    n = len(probabilities)
    if n < 2:
        return 1.0
    entropy = -sum(p * math.log(p) for p in probabilities if p > 0)
    value = 1.0 - entropy / math.log(n)
    return min(1.0, max(0.0, value))


def derive_answer(
    kind: str, options: Sequence[str], probabilities: Sequence[float], legend: Any = None
) -> dict[str, Any]:
    """The plain answer for a distribution over `options` (the decider's order; for a score, the levels lowest
    first; for a noul, yes then no). The probabilities must already sum to 1."""
    if kind == "noul":
        return {"type": "noul", "noul": probabilities[0]}
    confidence = confidence_of(probabilities)
    if kind == "choice":
        best = max(range(len(options)), key=lambda i: (probabilities[i], -i))
        return {
            "type": "choice",
            "choice": options[best],
            "confidence": confidence,
            "probabilities": dict(zip(options, probabilities, strict=True)),
        }
    out: dict[str, Any] = {
        "type": "score",
        "score": sum(i * p for i, p in enumerate(probabilities)),
        "confidence": confidence,
        "probabilities": {str(i): p for i, p in enumerate(probabilities)},
    }
    if legend is not None:
        out["legend"] = legend
    return out


_publish("onellm", ChoiceAnswer, NoulAnswer, ScoreAnswer)
