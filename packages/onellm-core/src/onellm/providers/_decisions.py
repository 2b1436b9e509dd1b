"""What a decisions engine is asked and what it answers, whatever its wire format (`DecisionRequest`,
`DecisionResponse`), and the `DecisionProvider` protocol.

A decider run renders its state and questions, then hands each engine request to the provider that serves the model:
TypeSafe Jev (`onellm.providers.typesafe`), OpenAI Decisions (`OpenAIProvider.decide`) or the scripted provider of
`onellm.testing`. The provider turns the request into its wire body, sends it, and gives back the answers in onellm's
form, keyed by the question's key:

| Type | Answer |
|---|---|
| `choice` | `{"type": "choice", "choice": value, "confidence": c, "probabilities": {value: p}}` |
| `score` | `{"type": "score", "score": s, "confidence": c, "probabilities": {"0": p, ...}, "legend": {"0": level}}` |
| `noul` | `{"type": "noul", "noul": p}` |

Probabilities and scores are floats. A question the engine declined is listed in `refused`, not in `answers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from onellm._public import publish as _publish

if TYPE_CHECKING:
    from onellm.catalog import ModelProfile
    from onellm.messages import AssetPart, Usage

__all__ = [
    "DecisionProvider",
    "DecisionQuestion",
    "DecisionRequest",
    "DecisionResponse",
    "DecisionWire",
    "score_levels",
]

DecisionWire = Literal["jev", "openai"]
"""The wire format a request is meant for: TypeSafe Jev's `/v1/systemone` or OpenAI's `/v1/decisions`."""


@dataclass(frozen=True, slots=True)
class DecisionQuestion:
    """One question as it is sent: rendered, with the key its answer comes back under."""

    key: str
    """The key on the wire and in the answers: the question id, or `id[index]` for one element of a `forEach`."""
    type: str
    """`choice`, `score` or `noul`."""
    instructions: str | dict[str, str]
    """Rendered: a text, or named parts."""
    criteria: Any = None
    """Rendered. choice: a mapping value -> description (values as text); score: the levels lowest first, each a
    label or a one-entry mapping label -> description; noul: a mapping with `true` and/or `false`, or None."""
    question_id: str = ""
    """The question's id in the decider."""
    index: int | None = None
    """The element's index, for a `forEach` question."""


@dataclass(slots=True)
class DecisionRequest:
    """One request to a decisions engine: the state, the questions, and the cache settings."""

    model: str
    """The model's name as the engine knows it (`jev-latest`, `openai-decisions`)."""
    state: Any
    """The rendered state: plain JSON data. Images taken out of it are in `images`, and a marker names each one
    where it stood (`[image 1]`)."""
    questions: list[DecisionQuestion]
    wire: DecisionWire = "jev"
    images: list[AssetPart] = field(default_factory=list)
    """Images of the state, in order (OpenAI Decisions sends them as `input_image`)."""
    cache_key: str | None = None
    """Partitions prompt-cache reuse (`prompt_cache_key`)."""
    cache_explicit: bool = False
    """Mark the end of the state as the cached prefix (an explicit breakpoint)."""
    profile: ModelProfile | None = None
    """The resolved model's profile, as a chat request carries it."""


@dataclass(slots=True)
class DecisionResponse:
    """What an engine answered."""

    answers: dict[str, dict[str, Any]]
    """By question key, in onellm's form (see the module docstring)."""
    usage: Usage | None = None
    refused: list[str] = field(default_factory=list)
    """Keys of the questions the engine declined to answer."""
    model: str | None = None
    """The model that answered, as the engine names it (`jev-1.14.0`)."""
    id: str | None = None
    """The engine's id for the request, when it gives one."""


@runtime_checkable
class DecisionProvider(Protocol):
    """A provider that answers decision requests (`decide`)."""

    async def decide(self, request: DecisionRequest) -> DecisionResponse:
        """Send one decision request and return its answers.

        Raises:
            ProviderError: and its subclasses, as for a chat call.
        """
        ...


def score_levels(criteria: Any) -> list[Any]:
    """A score question's levels, lowest first, as sent: a list stays as it is; a mapping label -> description
    becomes a list of one-entry mappings, so the order survives an encoder that sorts object keys."""
    if isinstance(criteria, dict):
        return [{label: description} if description is not None else label for label, description in criteria.items()]
    return list(criteria or ())


# -- reading engines' answers (shared by the wire codecs) -----------------------------------------------------------


def _number(value: Any, what: str, provider: str, *, low: float | None = 0.0, high: float | None = 1.0) -> float:
    from onellm.errors import MalformedResponseError

    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedResponseError(f"{what} is not a number", provider=provider)
    number = float(value)
    if number != number or (low is not None and number < low) or (high is not None and number > high):
        raise MalformedResponseError(f"{what} is {value!r}, outside {low} to {high}", provider=provider)
    return number


def _choice_text(value: Any, what: str, provider: str) -> str:
    from onellm.errors import MalformedResponseError

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    raise MalformedResponseError(f"{what} is not a choice value", provider=provider)


def probability(value: Any, what: str, provider: str) -> float:
    """A probability from an engine: a number from 0 to 1.

    Raises:
        MalformedResponseError: anything else, naming `what`.
    """
    return _number(value, what, provider)


def read_probabilities(value: Any, what: str, provider: str) -> dict[str, float]:
    """A mapping key -> probability from an engine (keys as text, values 0 to 1)."""
    from onellm.errors import MalformedResponseError

    if not isinstance(value, dict):
        raise MalformedResponseError(f"{what} is not an object of probabilities", provider=provider)
    return {str(k): _number(v, f"{what}[{k!r}]", provider) for k, v in value.items()}


def choice_answer(
    choice: Any, confidence: Any, probabilities: dict[str, float], key: str, provider: str
) -> dict[str, Any]:
    """A choice answer in onellm's form, checked."""
    return {
        "type": "choice",
        "choice": _choice_text(choice, f"the choice of {key!r}", provider),
        "confidence": _number(confidence, f"the confidence of {key!r}", provider),
        "probabilities": probabilities,
    }


def score_answer(
    score: Any, confidence: Any, probabilities: dict[str, float], legend: Any, key: str, provider: str
) -> dict[str, Any]:
    """A score answer in onellm's form, checked (`score` is the expected level, 0 for the lowest)."""
    out: dict[str, Any] = {
        "type": "score",
        "score": _number(score, f"the score of {key!r}", provider, low=0.0, high=None),
        "confidence": _number(confidence, f"the confidence of {key!r}", provider),
        "probabilities": probabilities,
    }
    if legend is not None:
        out["legend"] = legend
    return out


def noul_answer(probability: Any, key: str, provider: str) -> dict[str, Any]:
    """A noul answer in onellm's form, checked (the probability of yes)."""
    return {"type": "noul", "noul": _number(probability, f"the noul of {key!r}", provider)}


def token_count(value: Any, what: str, provider: str) -> int:
    """A token count from an engine's usage: a whole number, 0 or more (absent is 0)."""
    from onellm.errors import MalformedResponseError

    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedResponseError(f"{what} is not a token count", provider=provider)
    return value


_publish("onellm.providers", DecisionProvider, DecisionQuestion, DecisionRequest, DecisionResponse)
