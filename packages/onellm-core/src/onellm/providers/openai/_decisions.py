"""OpenAI Decisions (`POST /v1/decisions`): the request body and the answer.

The state goes as one user message whose first content part is `input_json` (the rendered state), followed by an
`input_image` part (a `data:` URL) for each image taken out of it. Questions are a list, answered in the same order:
a `noul` question is a `predicate` (its `true`/`false` conditions appended to the instructions, as a predicate has no
outcome descriptions), a `choice` lists `choices` (`value`, `description`), a `score` lists `levels` (`label`,
`description`), lowest first. Instructions given as named parts are joined as `name: text` lines. `name` is the
question's key, so answers are matched by name (by position when the engine leaves a name out). `cache.key` is
`prompt_cache_key`; `cache.explicit` puts an explicit breakpoint (`prompt_cache_breakpoint`) on the state's last part.

The body is written as Go's `encoding/json` writes it (`onellm._go.jsonenc`), as for every decision engine.

Answers: `predicate` (`probability`), `choice` (`choice`, `probabilities` as `{value, probability}` items,
`confidence`), `score` (`score`, `probabilities` as `{value, label, probability}` items, `confidence`), or `refusal`.
Usage: `input_tokens` counts every input token, cached reads (`input_tokens_details.cached_tokens`) and cache writes
(`input_tokens_details.cache_write_tokens`) included, so the uncached input is what is left once both are taken out;
each is priced once, at its own rate. Output is not priced.
"""

from __future__ import annotations

import base64
from typing import Any

from onellm._go.jsonenc import encode
from onellm.errors import MalformedResponseError
from onellm.messages import Usage
from onellm.providers._decisions import (
    DecisionQuestion,
    DecisionRequest,
    DecisionResponse,
    choice_answer,
    noul_answer,
    probability,
    score_answer,
    token_count,
)
from onellm.providers._http import decode_json

__all__ = ["MAX_QUESTIONS", "decode_decisions_response", "encode_decisions_request"]

MAX_QUESTIONS = 400
"""The most questions one request may hold."""


def _instructions(question: DecisionQuestion) -> str:
    given = question.instructions
    text = given if isinstance(given, str) else "\n".join(f"{name}: {part}" for name, part in given.items())
    if question.type == "noul" and isinstance(question.criteria, dict):
        yes = question.criteria.get("true")
        no = question.criteria.get("false")
        if yes:
            text += f"\nTrue when: {yes}"
        if no:
            text += f"\nFalse when: {no}"
    return text


def _question(question: DecisionQuestion) -> dict[str, Any]:
    out: dict[str, Any] = {"name": question.key, "instructions": _instructions(question)}
    if question.type == "noul":
        out["type"] = "predicate"
    elif question.type == "choice":
        out["type"] = "choice"
        out["choices"] = [
            {"value": value} if not description else {"value": value, "description": description}
            for value, description in (question.criteria or {}).items()
        ]
    else:
        out["type"] = "score"
        levels: list[dict[str, Any]] = []
        criteria = question.criteria
        items = criteria.items() if isinstance(criteria, dict) else ((level, None) for level in criteria or ())
        for label, description in items:
            if isinstance(label, dict):  # a level given as {label: description}
                ((label, description),) = label.items()
            level: dict[str, Any] = {"label": str(label)}
            if description:
                level["description"] = description
            levels.append(level)
        out["levels"] = levels
    return out


def _image_part(image: Any) -> dict[str, Any]:
    data = image.data
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ValueError(f"image {image.name or image.key or ''!r} has no inline content to send")
    url = f"data:{image.content_type or 'application/octet-stream'};base64,{base64.b64encode(bytes(data)).decode()}"
    return {"type": "input_image", "image_url": url}


def encode_decisions_request(request: DecisionRequest) -> bytes:
    """The request body.

    Raises:
        GoJsonError: a value that is not JSON.
        ValueError: more than `MAX_QUESTIONS` questions, or an image without inline content.
    """
    if len(request.questions) > MAX_QUESTIONS:
        raise ValueError(f"one decisions request takes at most {MAX_QUESTIONS} questions, not {len(request.questions)}")
    content: list[dict[str, Any]] = [{"type": "input_json", "json": request.state}]
    content.extend(_image_part(image) for image in request.images)
    if request.cache_explicit:
        content[-1]["prompt_cache_breakpoint"] = {"mode": "explicit"}
    body: dict[str, Any] = {
        "model": request.model,
        "input": [{"type": "message", "role": "user", "content": content}],
        "questions": [_question(q) for q in request.questions],
    }
    if request.cache_key:
        body["prompt_cache_key"] = request.cache_key
    return encode(body)


def _pairs(value: Any, key: str, provider: str, *, score: bool) -> tuple[dict[str, float], dict[str, Any]]:
    if not isinstance(value, list):
        raise MalformedResponseError(f"the probabilities of {key!r} are not a list", provider=provider)
    probabilities: dict[str, float] = {}
    legend: dict[str, Any] = {}
    for item in value:
        if not isinstance(item, dict):
            raise MalformedResponseError(f"a probability of {key!r} is not an object", provider=provider)
        raw = item.get("value")
        if score:
            if isinstance(raw, bool) or not isinstance(raw, int):
                raise MalformedResponseError(f"a level of {key!r} is not a whole number", provider=provider)
            name = str(raw)
            if "label" in item:
                legend[name] = item["label"]
        elif isinstance(raw, bool):
            name = "true" if raw else "false"
        elif isinstance(raw, str):
            name = raw
        else:
            raise MalformedResponseError(f"a choice value of {key!r} is not text", provider=provider)
        probabilities[name] = probability(item.get("probability"), f"the probability of {name!r} in {key!r}", provider)
    return probabilities, legend


def decode_decisions_response(
    data: bytes, request: DecisionRequest | None = None, *, provider: str = "openai"
) -> DecisionResponse:
    """Read an answer body. Answers are matched to the request's questions by name, else by position.

    Raises:
        MalformedResponseError: the body is not JSON, or an answer or the usage is not as the API documents.
    """
    body = decode_json(data, provider=provider, what="decisions response")
    if not isinstance(body, dict) or not isinstance(body.get("answers"), list):
        raise MalformedResponseError("the decisions response has no answers list", provider=provider)
    keys = [q.key for q in request.questions] if request is not None else []
    answers: dict[str, dict[str, Any]] = {}
    refused: list[str] = []
    for position, raw in enumerate(body["answers"]):
        if not isinstance(raw, dict):
            raise MalformedResponseError(f"answer {position} is not an object", provider=provider)
        name = raw.get("name")
        if isinstance(name, str):
            key = name
        elif position < len(keys):
            key = keys[position]
        else:
            raise MalformedResponseError(f"answer {position} has no name and no question", provider=provider)
        kind = raw.get("type")
        if kind == "predicate":
            answers[key] = noul_answer(raw.get("probability"), key, provider)
        elif kind == "choice":
            probabilities, _ = _pairs(raw.get("probabilities", []), key, provider, score=False)
            answers[key] = choice_answer(raw.get("choice"), raw.get("confidence"), probabilities, key, provider)
        elif kind == "score":
            probabilities, legend = _pairs(raw.get("probabilities", []), key, provider, score=True)
            answers[key] = score_answer(
                raw.get("score"), raw.get("confidence"), probabilities, legend or None, key, provider
            )
        elif kind == "refusal":
            refused.append(key)
        else:
            raise MalformedResponseError(f"the answer to {key!r} has an unknown type {kind!r}", provider=provider)
    usage: Usage | None = None
    wire = body.get("usage")
    if isinstance(wire, dict):
        details = wire.get("input_tokens_details")
        details = details if isinstance(details, dict) else {}
        total = token_count(wire.get("input_tokens"), "usage.input_tokens", provider)
        cached = token_count(details.get("cached_tokens"), "usage.input_tokens_details.cached_tokens", provider)
        written = token_count(
            details.get("cache_write_tokens"), "usage.input_tokens_details.cache_write_tokens", provider
        )
        if cached + written > total:
            raise MalformedResponseError(
                f"the usage counts {cached + written} cached tokens in {total} input tokens", provider=provider
            )
        usage = Usage(
            model=body.get("model") if isinstance(body.get("model"), str) else None,
            input_tokens=total - cached - written,
            cache_read_input_tokens=cached,
            cache_creation_input_tokens=written,
            output_tokens=token_count(wire.get("output_tokens"), "usage.output_tokens", provider),
        )
    elif wire is not None:
        raise MalformedResponseError("the decisions response's usage is not an object", provider=provider)
    model = body.get("model")
    return DecisionResponse(
        answers=answers,
        usage=usage,
        refused=refused,
        model=model if isinstance(model, str) else None,
        id=body.get("id") if isinstance(body.get("id"), str) else None,
    )
