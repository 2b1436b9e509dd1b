"""TypeSafe Jev (`POST /v1/systemone`): one request holds the state and every question; the answer holds one typed
answer per question, keyed as asked.

```json
{"model":"jev-latest","questions":{"angry":{"instructions":"Is the customer angry?","type":"noul"},
 "topic":{"criteria":{"billing":"Charges and refunds","orders":"Delivery and returns"},
 "instructions":"Which team should handle the ticket?","type":"choice"}},"state":{"title":"Refund please"}}
```

The body is written the way Go's `encoding/json` writes it (`onellm._go.jsonenc`): sorted keys, HTML characters
escaped, numbers in Go's shortest form, because the engine and its caches compare bytes and the reference service is
written in Go. A score question's levels always go as a list, so their order survives the sorting of object keys.
The answer:

```json
{"model":"jev-1.14.0","answers":{"angry":{"type":"noul","noul":0.91},
 "topic":{"type":"choice","choice":"billing","confidence":0.82,"probabilities":{"billing":0.95,"orders":0.05}}},
 "usage":{"input_tokens":318,"output_tokens":34}}
```

Jev takes no images: a decider that sends one is refused before sending (`CapabilityMissingError`), by the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from onellm._go.jsonenc import encode
from onellm._public import publish as _publish
from onellm.errors import MalformedResponseError, Secret
from onellm.messages import Usage
from onellm.providers._base import HttpProvider
from onellm.providers._decisions import (
    DecisionRequest,
    DecisionResponse,
    choice_answer,
    noul_answer,
    read_probabilities,
    score_answer,
    score_levels,
    token_count,
)
from onellm.providers._http import decode_json

if TYPE_CHECKING:
    import httpx

    from onellm.providers._http import ClientPool

__all__ = ["JevProvider", "decode_jev_response", "encode_jev_request"]


def encode_jev_request(request: DecisionRequest) -> bytes:
    """The request body, byte for byte as the reference service writes it.

    Raises:
        GoJsonError: a value that is not JSON (NaN, an infinity, an object the encoder cannot write).
    """
    questions: dict[str, Any] = {}
    for q in request.questions:
        item: dict[str, Any] = {"type": q.type, "instructions": q.instructions}
        if q.criteria is not None:
            item["criteria"] = score_levels(q.criteria) if q.type == "score" else q.criteria
        questions[q.key] = item
    body: dict[str, Any] = {"model": request.model, "questions": questions}
    if request.state is not None:
        body["state"] = request.state
    return encode(body)


def decode_jev_response(data: bytes, *, provider: str = "typesafe") -> DecisionResponse:
    """Read an answer body.

    Raises:
        MalformedResponseError: the body is not JSON, or an answer or the usage is not as the API documents.
    """
    body = decode_json(data, provider=provider, what="decision response")
    if not isinstance(body, dict) or not isinstance(body.get("answers"), dict):
        raise MalformedResponseError("the decision response has no answers object", provider=provider)
    answers: dict[str, dict[str, Any]] = {}
    refused: list[str] = []
    for key, raw in body["answers"].items():
        if not isinstance(raw, dict):
            raise MalformedResponseError(f"the answer to {key!r} is not an object", provider=provider)
        kind = raw.get("type")
        if kind == "noul":
            answers[key] = noul_answer(raw.get("noul"), key, provider)
        elif kind == "choice":
            probabilities = read_probabilities(raw.get("probabilities", {}), f"the probabilities of {key!r}", provider)
            answers[key] = choice_answer(raw.get("choice"), raw.get("confidence"), probabilities, key, provider)
        elif kind == "score":
            probabilities = read_probabilities(raw.get("probabilities", {}), f"the probabilities of {key!r}", provider)
            answers[key] = score_answer(
                raw.get("score"), raw.get("confidence"), probabilities, raw.get("legend"), key, provider
            )
        elif kind == "refusal":
            refused.append(key)
        else:
            raise MalformedResponseError(f"the answer to {key!r} has an unknown type {kind!r}", provider=provider)
    wire = body.get("usage")
    usage: Usage | None = None
    if isinstance(wire, dict):
        usage = Usage(
            model=body.get("model") if isinstance(body.get("model"), str) else None,
            input_tokens=token_count(wire.get("input_tokens"), "usage.input_tokens", provider),
            output_tokens=token_count(wire.get("output_tokens"), "usage.output_tokens", provider),
        )
    elif wire is not None:
        raise MalformedResponseError("the decision response's usage is not an object", provider=provider)
    model = body.get("model")
    return DecisionResponse(
        answers=answers,
        usage=usage,
        refused=refused,
        model=model if isinstance(model, str) else None,
        id=body.get("id") if isinstance(body.get("id"), str) else None,
    )


class JevProvider(HttpProvider):
    """TypeSafe Jev over HTTP. The key comes from the argument or `TYPESAFE_API_KEY` (a bearer token), the base URL
    from the argument, the catalog, or `TYPESAFE_BASE_URL`. Errors carry no key."""

    default_base_url: ClassVar[str] = "https://api.typesafe.ai"
    base_url_variable: ClassVar[str | None] = "TYPESAFE_BASE_URL"
    key_variables: ClassVar[tuple[str, ...]] = ("TYPESAFE_API_KEY",)
    path: ClassVar[str] = "/v1/systemone"

    def __init__(
        self,
        *,
        api_key: Secret | str | None = None,
        base_url: str | None = None,
        name: str = "typesafe",
        http_client: httpx.AsyncClient | ClientPool | None = None,
        **options: Any,
    ) -> None:
        super().__init__(name=name, api_key=api_key, base_url=base_url, http_client=http_client, **options)

    async def decide(self, request: DecisionRequest) -> DecisionResponse:
        """Send one request (`POST /v1/systemone`) and read its answers."""
        body = encode_jev_request(request)
        return await self._request(
            self._call("POST", self.path, body), lambda r: decode_jev_response(r.content, provider=self.name)
        )


_publish("onellm.providers.typesafe", JevProvider)
