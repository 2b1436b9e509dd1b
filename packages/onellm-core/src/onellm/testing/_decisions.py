"""`ScriptedDecisionProvider`: a decisions engine that answers from a function and records the requests it gets.

Register it under the provider a decisions model resolves to (`typesafe` for `jev-latest`, `openai` for
`openai-decisions`) and deciders run as they would against the real engine, priced from the shipped catalog, with
nothing leaving the process:

```python
from onellm import Runtime
from onellm.testing import ScriptedDecisionProvider

runtime = Runtime()
runtime.providers.set("typesafe", ScriptedDecisionProvider("typesafe"))
```

Without a function every question gets a placeholder: a choice its first criterion with confidence 0.5 and no
probabilities, a score level 0 with confidence 0.5, a noul 0.5. A function gets each question (a `DecisionQuestion`:
its `key`, `type`, rendered `instructions` and `criteria`, and for a `forEach` element its `question_id` and `index`)
and returns its answer: a typed answer (`ChoiceAnswer`, `ScoreAnswer`, `NoulAnswer`), the plain form (a mapping), a
number (a noul's probability, or a score), a text (a choice, with probability 1), None for the placeholder,
`REFUSE` to decline it or `OMIT` to leave it unanswered. An exception it raises fails the request.

Usage is reported as one input token per four characters of the request body the real engine would get, and no
output.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from onellm.messages import Usage
from onellm.providers import DecisionQuestion, DecisionRequest, DecisionResponse, score_levels

__all__ = ["OMIT", "REFUSE", "ScriptedDecisionProvider", "placeholder_answer"]


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


REFUSE: Any = _Marker("REFUSE")
"""Return it from the answer function to have the question declined (a refusal)."""
OMIT: Any = _Marker("OMIT")
"""Return it from the answer function to leave the question out of the answers."""


def placeholder_answer(question: DecisionQuestion) -> dict[str, Any]:
    """The scripted engine's placeholder: the first choice, level 0 or a noul of 0.5, each with confidence 0.5."""
    if question.type == "choice":
        first = next(iter(question.criteria or {}), "")
        return {"type": "choice", "choice": first, "confidence": 0.5, "probabilities": {}}
    if question.type == "score":
        legend = {str(i): level for i, level in enumerate(score_levels(question.criteria))}
        return {"type": "score", "score": 0, "confidence": 0.5, "probabilities": {}, "legend": legend}
    return {"type": "noul", "noul": 0.5}


def _answer(question: DecisionQuestion, given: Any) -> dict[str, Any]:
    if given is None:
        return placeholder_answer(question)
    to_data = getattr(given, "to_data", None)
    if callable(to_data):
        data = to_data()
        if isinstance(data, dict):
            return data
    if isinstance(given, Mapping):
        out = dict(given)
        out.setdefault("type", question.type)
        return out
    if isinstance(given, bool):
        raise TypeError(f"answer for {question.key!r}: give a probability, not {given!r}")
    if isinstance(given, int | float):
        if question.type == "noul":
            return {"type": "noul", "noul": float(given)}
        if question.type == "score":
            return {"type": "score", "score": float(given), "confidence": 1.0, "probabilities": {}}
    if isinstance(given, str) and question.type == "choice":
        return {"type": "choice", "choice": given, "confidence": 1.0, "probabilities": {given: 1.0}}
    raise TypeError(f"answer for {question.key!r} ({question.type}): cannot use {given!r}")


class ScriptedDecisionProvider:
    """A decisions engine for tests (see the module docstring).

    Args:
        name: The provider name it serves under (`typesafe`, `openai`).
        answer: Gives each question's answer; None for the placeholders.
    """

    def __init__(self, name: str = "typesafe", answer: Callable[[DecisionQuestion], Any] | None = None) -> None:
        self.name = name
        self.answer = answer
        self.requests: list[DecisionRequest] = []
        """Every request received, in order."""

    def __repr__(self) -> str:
        return f"ScriptedDecisionProvider({self.name!r}, requests={len(self.requests)})"

    @property
    def questions(self) -> list[str]:
        """The keys of every question asked, in order, over all requests."""
        return [q.key for r in self.requests for q in r.questions]

    def body(self, request: DecisionRequest) -> bytes:
        """The body the real engine would be sent for `request`."""
        if request.wire == "openai":
            from onellm.providers.openai import encode_decisions_request

            return encode_decisions_request(request)
        from onellm.providers.typesafe import encode_jev_request

        return encode_jev_request(request)

    async def decide(self, request: DecisionRequest) -> DecisionResponse:
        self.requests.append(request)
        await anyio.lowlevel.checkpoint()
        answers: dict[str, dict[str, Any]] = {}
        refused: list[str] = []
        for question in request.questions:
            given = self.answer(question) if self.answer is not None else None
            if given is REFUSE:
                refused.append(question.key)
            elif given is not OMIT:
                answers[question.key] = _answer(question, given)
        tokens = max(1, math.ceil(len(self.body(request)) / 4))
        usage = Usage(model=request.model, input_tokens=tokens)
        return DecisionResponse(
            answers=answers, usage=usage, refused=refused, model=request.model, id=f"scripted-{len(self.requests)}"
        )
