"""The deployments page's conformance table, replayed: `testdata/providers/deployments/<deployment>/<case>/case.json`.

Each replay builds the provider with the case's deployment, sends the case's request through `httpx.MockTransport`,
checks the request as sent (method, the whole URL as encoded on the wire, the headers listed and absent, the JSON body)
and the answer decoded (or the typed error). A case with both a whole answer and a stream checks that both build the
same message. `ONELLM_UPDATE_FIXTURES=1` rewrites the bodies, the listed headers' values and the expectations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import onellm.errors
from onellm.clock import FakeClock
from onellm.providers._protocols import EmbeddingRequest
from onellm.providers._request import ChatResponse
from onellm.providers._retry import RetryPolicy
from onellm.providers._stream import collect
from onellm.providers.anthropic import AnthropicProvider
from onellm.providers.gemini import GeminiProvider
from onellm.providers.openai import OpenAIProvider

from ._deploy import DEPLOYMENTS, SECRETS, Router, bedrock_body, deployment_of
from ._fixtures import UPDATE, as_response, chat_request, decode, load, response_data, save

CASES = sorted(DEPLOYMENTS.glob("*/*/case.json"))
ROWS = {
    "bedrock": {
        "chat-basic",
        "chat-model-id-with-colon",
        "chat-stream",
        "chat-stream-whole",
        "tools-client-tools-roundtrip",
        "error-throttling",
        "error-access-denied",
        "error-validation-too-long",
        "error-mid-stream-exception",
    },
    "vertex-anthropic": {
        "chat-basic",
        "chat-stream",
        "chat-stream-whole",
        "tools-client-tools-roundtrip",
        "error-quota",
        "error-unauthenticated",
    },
    "vertex-gemini": {"chat-basic", "stream-text", "functions-call-and-result", "error-permission-denied"},
    "azure-openai": {
        "responses-v1",
        "chat-completions-deployment-path",
        "responses-v1-stream",
        "responses-v1-function-tools",
        "error-content-filter",
        "error-rate-limit",
        "embeddings-deployment-path",
    },
}
"""The rows of the deployments page's conformance table, by deployment."""


def case_id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


def test_every_row_of_the_conformance_table_has_a_case() -> None:
    present = {(p.parent.parent.name, p.parent.name) for p in CASES}
    missing = {(kind, name) for kind, names in ROWS.items() for name in names} - present
    assert missing == set()


def provider_of(case: dict[str, Any], router: Router, clock: FakeClock) -> Any:
    deployment = deployment_of(case["deployment"])
    spec = case.get("provider", {})
    common: dict[str, Any] = {
        "deployment": deployment,
        "http_client": router.client(),
        "clock": clock,
        "retry": RetryPolicy(max_retries=2),
    }
    if deployment.serves == "AnthropicProvider":
        return AnthropicProvider(
            api_version=spec.get("apiVersion", "2026-10-21"), betas=spec.get("betas", ()), **common
        )
    if deployment.serves == "GeminiProvider":
        return GeminiProvider(**common)
    return OpenAIProvider(api=spec.get("api", "responses"), **common)


def answers(case: dict[str, Any], *, streamed: bool) -> Any:
    if streamed and "events" in case:
        body = bedrock_body(case["events"], case.get("exception"))
        return lambda _request: httpx.Response(
            200, headers={"content-type": "application/vnd.amazon.eventstream"}, content=body
        )
    if streamed:
        body = case["stream"].encode()
        return lambda _request: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    recorded = iter(case.get("responses") or [case["response"]])
    return lambda _request: as_response(next(recorded))


def run(case: dict[str, Any], operation: str) -> tuple[Any, Router]:
    clock = FakeClock()
    router = Router(answers(case, streamed=operation == "stream"), clock=clock)
    provider = provider_of(case, router, clock)

    async def go() -> Any:
        if operation == "embed":
            spec = case["embedding"]
            return await provider.embed(
                EmbeddingRequest(
                    spec["model"],
                    spec["inputs"],
                    dimensions=spec.get("dimensions"),
                    extra_parameters=spec.get("extraParameters", {}),
                )
            )
        request = chat_request(case["request"])
        if operation == "count":
            return await provider.count_tokens(request)
        if operation == "stream":
            return await collect(provider.stream(request))
        return await provider.send(request)

    result: Any
    try:
        result = anyio.run(go)
    except onellm.errors.OnellmError as error:
        result = error
    return result, router


def outcome(result: Any) -> dict[str, Any]:
    if isinstance(result, BaseException):
        error: dict[str, Any] = {"error": type(result).__name__, "status": getattr(result, "status", None)}
        if isinstance(result, onellm.errors.ContentFilterError):
            error["categories"] = result.categories
            error["severities"] = result.severities
        error["message"] = str(result)
        return {"expectedError": error}
    if isinstance(result, ChatResponse):
        actual = dict(response_data(result))
        actual["finish"] = result.finish_reason.value if result.finish_reason is not None else None
        return {"expected": actual}
    if isinstance(result, int):
        return {"expected": {"count": result}}
    usage = result.usage.to_data() if result.usage is not None else None
    vectors = [[repr(x) for x in vector] for vector in result.vectors]  # exact, as text: the case holds decimals
    return {"expected": {"vectors": vectors, "usage": usage, "model": result.model}}


def check_request(case: dict[str, Any], router: Router) -> list[str]:
    expected = case["expectedRequest"]
    assert router.requests, "nothing was sent"
    request = router.requests[-1]
    problems: list[str] = []
    if request.method != expected["method"]:
        problems.append(f"method {request.method} != {expected['method']}")
    if str(request.url) != expected["url"]:
        problems.append(f"url {request.url} != {expected['url']}")
    for name in list(expected["headers"]):
        if UPDATE:
            expected["headers"][name] = request.headers.get(name)
        elif request.headers.get(name) != expected["headers"][name]:
            problems.append(f"header {name}: {request.headers.get(name)!r} != {expected['headers'][name]!r}")
    problems.extend(f"header {name} was sent" for name in expected["absentHeaders"] if name in request.headers)
    body = decode(request.content) if request.content else None
    if UPDATE:
        expected["body"] = body
    elif body != expected["body"]:
        problems.append(
            "body differs:\n"
            + json.dumps(body, indent=1, default=str)
            + "\n!=\n"
            + json.dumps(expected["body"], indent=1)
        )
    return problems


@pytest.mark.parametrize("path", CASES, ids=case_id)
def test_replay(path: Path) -> None:
    case = load(path)
    operation = case.get("operation", "send")
    result, router = run(case, operation)
    problems = check_request(case, router)
    actual = outcome(result)
    if UPDATE:
        case.pop("expected", None)
        case.pop("expectedError", None)
        case.update(actual)
        save(path, case)
    assert set(actual) <= set(case), actual
    assert actual == {key: case[key] for key in actual}
    if "expectedAttempts" in case:
        assert len(router.requests) == case["expectedAttempts"]
    if "expectedSleeps" in case:
        assert [round(s, 3) for s in router.clock.sleeps] == case["expectedSleeps"]
    if case["deployment"]["kind"].startswith("vertex"):
        assert len(router.token_requests) == 1, "one token exchange serves the call and its retries"
    else:
        assert router.token_requests == []
    if isinstance(result, BaseException):
        for text in (str(result), repr(result.args), getattr(result, "body", None) or ""):
            for secret in SECRETS:
                assert secret not in text
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize(
    "path",
    [p for p in CASES if {"response", "stream"} <= load(p).keys() or {"response", "events"} <= load(p).keys()],
    ids=case_id,
)
def test_stream_and_whole_build_the_same_message(path: Path) -> None:
    case = load(path)
    whole, _ = run(case, "send")
    streamed, router = run(case, "stream")
    assert isinstance(whole, ChatResponse)
    assert isinstance(streamed, ChatResponse)
    assert outcome(streamed) == outcome(whole)
    sent = decode(router.requests[-1].content)
    assert sent == {**case["expectedRequest"]["body"], **({"stream": True} if "stream" in sent else {})}
