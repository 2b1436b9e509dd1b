"""Vertex AI: Claude's `@date` model names, hosts by location, plain-name checks on project and location, what is
refused before sending, Gemini's `embedContent` one input per call, and no credential in any error of any deployment."""

from __future__ import annotations

import traceback
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from onellm.errors import BadRequestError, ConfigurationError, OnellmError
from onellm.messages import Message, TextPart
from onellm.providers._protocols import EmbeddingRequest
from onellm.providers._request import ChatRequest
from onellm.providers._retry import RetryPolicy
from onellm.providers._stream import collect
from onellm.providers.anthropic import AnthropicProvider
from onellm.providers.deployments import (
    AwsCredentials,
    AzureOpenAIEndpoint,
    BedrockDeployment,
    GoogleBearerAuth,
    VertexAnthropicDeployment,
    VertexGeminiEndpoint,
)
from onellm.providers.deployments._vertex import vertex_model
from onellm.providers.gemini import GeminiProvider
from onellm.providers.openai import OpenAIProvider

from ._deploy import (
    ACCESS_KEY,
    ACCESS_TOKEN,
    AZURE_KEY,
    BEDROCK_KEY,
    SECRET_KEY,
    SECRETS,
    SESSION_TOKEN,
    Router,
    account,
    exception_frame,
)


def claude_request(model: str = "claude-sonnet-4-5-20250929") -> ChatRequest:
    return ChatRequest(model, [Message(user=[TextPart("Hi")])], max_output_tokens=32)


def gemini_request(model: str = "gemini-2.5-flash") -> ChatRequest:
    return ChatRequest(model, [Message(user=[TextPart("Hi")])])


def vertex_claude(router: Router, region: str = "us-east5") -> AnthropicProvider:
    return AnthropicProvider(
        deployment=VertexAnthropicDeployment(account(), region), http_client=router.client(), clock=router.clock
    )


def vertex_gemini(router: Router, location: str = "us-central1") -> GeminiProvider:
    found = account()
    return GeminiProvider(
        deployment=VertexGeminiEndpoint(found.project_id, location, auth=GoogleBearerAuth(found.token_cache())),
        http_client=router.client(),
        clock=router.clock,
    )


@pytest.mark.parametrize(
    ("name", "wire"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5@20250929"),
        ("claude-3-5-haiku-20241022", "claude-3-5-haiku@20241022"),
        ("claude-opus-4-1@20250805", "claude-opus-4-1@20250805"),
        ("claude-sonnet-5-5", "claude-sonnet-5-5"),
    ],
)
def test_claude_model_names_take_the_at_date_form(name: str, wire: str) -> None:
    assert vertex_model(name) == wire


@pytest.mark.parametrize("name", ["claude/../x", "claude sonnet", "claude%2Fx", "claude:rawPredict?x", ""])
def test_a_claude_model_name_that_would_change_the_path_is_refused(name: str) -> None:
    router = Router(lambda _r: httpx.Response(200))
    with pytest.raises(BadRequestError, match="not a Vertex model name"):
        anyio.run(vertex_claude(router).send, claude_request(name))
    assert router.requests == []
    assert router.token_requests == []


@pytest.mark.parametrize(
    ("location", "host"),
    [
        ("us-east5", "https://us-east5-aiplatform.googleapis.com"),
        ("europe-west1", "https://europe-west1-aiplatform.googleapis.com"),
        ("global", "https://aiplatform.googleapis.com"),
    ],
)
def test_the_location_picks_the_host(location: str, host: str) -> None:
    assert VertexAnthropicDeployment(account(), location).base_url == host
    assert VertexGeminiEndpoint("onellm-test-project", location, auth=account()).base_url == host


@pytest.mark.parametrize(
    "location", ["us-central1.evil.example", "us-central1/", "US-CENTRAL1", "", "evil.example#", "us central1", "a..b"]
)
def test_a_location_that_is_not_a_plain_name_is_refused(location: str) -> None:
    with pytest.raises(ConfigurationError, match="must be a plain name"):
        VertexAnthropicDeployment(account(), location)
    with pytest.raises(ConfigurationError, match="location must be a plain name"):
        VertexGeminiEndpoint("onellm-test-project", location, auth=account())


@pytest.mark.parametrize("project", ["../other", "proj/x", "Project", "evil.example", "p", "my project"])
def test_a_project_that_is_not_a_plain_name_is_refused(project: str) -> None:
    with pytest.raises(ConfigurationError, match="project_id must be a plain name"):
        VertexGeminiEndpoint(project, "us-central1", auth=account())
    with pytest.raises(ConfigurationError, match="project_id must be a plain name"):
        VertexAnthropicDeployment(account(), "us-east5", project_id=project)


def test_a_project_is_needed() -> None:
    async def token() -> Any:
        raise AssertionError("not called")

    with pytest.raises(ConfigurationError, match="needs a project"):
        VertexAnthropicDeployment(token, "us-east5")
    with pytest.raises(ConfigurationError, match="needs a project"):
        VertexGeminiEndpoint(None, "us-east5", auth=token)


def test_providers_keep_their_names_and_say_vertex() -> None:
    router = Router(lambda _r: httpx.Response(200))
    claude, gemini = vertex_claude(router), vertex_gemini(router)
    assert (claude.name, claude.deployment) == ("anthropic", "vertex")
    assert (gemini.name, gemini.deployment) == ("gemini", "vertex")
    with pytest.raises(ConfigurationError, match="serves GeminiProvider"):
        AnthropicProvider(deployment=VertexGeminiEndpoint("onellm-test-project", "us-east5", auth=account()))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "what"),
    [
        (lambda p: p.count_tokens(claude_request()), "Claude token counting"),
        (lambda p: p.submit_batch([claude_request()]), "Claude message batches"),
        (lambda p: p.get_batch("msgbatch_01"), "Claude message batches"),
    ],
)
def test_claude_batches_and_token_counting_are_refused_before_sending(call: Any, what: str) -> None:
    router = Router(lambda _r: httpx.Response(200))
    provider = vertex_claude(router)

    async def go() -> Any:
        return await call(provider)

    with pytest.raises(BadRequestError, match=f"Vertex AI does not offer {what}"):
        anyio.run(go)
    assert router.requests == []
    assert router.token_requests == []


@pytest.mark.parametrize(
    ("call", "what"),
    [
        (lambda p: p.submit_batch([gemini_request()]), "Gemini batchGenerateContent"),
        (lambda p: p.get_batch("batches/abc"), "Gemini batches"),
        (lambda p: p.batch_results("batches/abc"), "Gemini batches"),
        (lambda p: p.send(gemini_request("tunedModels/my-tune")), "Gemini API tuned models"),
    ],
)
def test_gemini_batches_files_and_tuned_models_are_refused_before_sending(call: Any, what: str) -> None:
    router = Router(lambda _r: httpx.Response(200))
    provider = vertex_gemini(router)

    async def go() -> Any:
        return await call(provider)

    with pytest.raises(BadRequestError, match=f"Vertex AI does not offer {what}"):
        anyio.run(go)
    assert router.requests == []


def test_embed_content_is_one_call_per_input_in_order() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        text = msgspec.json.decode(request.content)["content"]["parts"][0]["text"]
        return httpx.Response(
            200,
            json={"embedding": {"values": [float(len(text)), 0.5]}, "usageMetadata": {"promptTokenCount": len(text)}},
        )

    router = Router(answer)
    found = anyio.run(
        vertex_gemini(router).embed,
        EmbeddingRequest(
            "gemini-embedding-001",
            ["a", "bbb", "cc"],
            dimensions=2,
            user_id="u-1",
            extra_parameters={"taskType": "CLASSIFICATION", "title": "t", "autoTruncate": False},
        ),
    )
    assert found.vectors == [[1.0, 0.5], [3.0, 0.5], [2.0, 0.5]]
    assert found.usage is not None
    assert found.usage.input_tokens == 6
    assert [w.kind for w in found.warnings] == ["parameter_stripped"]
    bodies = [msgspec.json.decode(r.content) for r in router.requests]
    assert bodies[0] == {
        "content": {"parts": [{"text": "a"}]},
        "embedContentConfig": {
            "taskType": "CLASSIFICATION",
            "title": "t",
            "autoTruncate": False,
            "outputDimensionality": 2,
        },
    }
    assert len(router.token_requests) == 1


def test_an_embedding_answer_without_values_is_malformed() -> None:
    router = Router(lambda _r: httpx.Response(200, json={"embedding": {}}))
    with pytest.raises(OnellmError, match=r"no embedding\.values"):
        anyio.run(vertex_gemini(router).embed, EmbeddingRequest("gemini-embedding-001", ["a"]))


# -- no credential in any error ------------------------------------------------------------------------------------

PRIVATE_KEY = account().secrets[0].reveal()
ECHO = " ".join([*SECRETS, PRIVATE_KEY])
"""A server that repeats every credential the tests hold (a provider masks those it holds itself)."""
HELD = {
    "bedrock-sigv4": (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN),
    "bedrock-key": (BEDROCK_KEY,),
    "vertex-claude": (ACCESS_TOKEN, PRIVATE_KEY),
    "vertex-gemini": (ACCESS_TOKEN, PRIVATE_KEY),
    "azure": (AZURE_KEY,),
}


def providers(router: Router) -> dict[str, Any]:
    common: dict[str, Any] = {
        "http_client": router.client(),
        "clock": router.clock,
        "retry": RetryPolicy(max_retries=0),
    }
    return {
        "bedrock-sigv4": AnthropicProvider(
            deployment=BedrockDeployment(
                "us-east-1", credentials=AwsCredentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN)
            ),
            **common,
        ),
        "bedrock-key": AnthropicProvider(deployment=BedrockDeployment("us-east-1", api_key=BEDROCK_KEY), **common),
        "vertex-claude": AnthropicProvider(deployment=VertexAnthropicDeployment(account(), "us-east5"), **common),
        "vertex-gemini": GeminiProvider(deployment=VertexGeminiEndpoint(None, "us-east5", auth=account()), **common),
        "azure": OpenAIProvider(
            deployment=AzureOpenAIEndpoint("https://r.openai.azure.com", api_key=AZURE_KEY), **common
        ),
    }


def texts(error: BaseException) -> list[str]:
    found = [str(error), repr(error), repr(error.args), "".join(traceback.format_exception(error))]
    found.extend(str(v) for v in vars(error).values())
    if error.__cause__ is not None:
        found.extend(texts(error.__cause__))
    return found


@pytest.mark.parametrize("kind", ["bedrock-sigv4", "bedrock-key", "vertex-claude", "vertex-gemini", "azure"])
@pytest.mark.parametrize("status", [400, 401, 403, 429, 500])
def test_no_credential_appears_in_an_error_the_server_echoes(kind: str, status: int) -> None:
    body = {"message": ECHO, "error": {"message": ECHO, "code": status, "status": "X", "type": "api_error"}}
    router = Router(lambda _r: httpx.Response(status, json=body, headers={"x-amzn-errortype": "X"}))
    provider = providers(router)[kind]
    request = gemini_request() if kind == "vertex-gemini" else claude_request()
    if kind == "azure":
        request = ChatRequest("gpt-5.4", request.messages)
    with pytest.raises(OnellmError) as caught:
        anyio.run(provider.send, request)
    for text in texts(caught.value):
        for secret in HELD[kind]:
            assert secret not in text, (kind, secret)
    assert router.requests


def test_no_credential_appears_in_a_bedrock_stream_exception() -> None:
    body = exception_frame("validationException", {"message": ECHO})
    router = Router(lambda _r: httpx.Response(200, content=body))
    provider = providers(router)["bedrock-sigv4"]
    with pytest.raises(OnellmError) as caught:
        anyio.run(collect, provider.stream(claude_request()))
    for text in texts(caught.value):
        for secret in HELD["bedrock-sigv4"]:
            assert secret not in text
