"""Azure OpenAI: the v1 and deployment-path forms, deployment names, Entra tokens from a delegate, content-filter errors
with their categories, and deployment names as catalog aliases priced as their models."""

from __future__ import annotations

import base64
import datetime as dt
import re
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from onellm.catalog import Catalog
from onellm.clock import FakeClock
from onellm.errors import AuthError, BadRequestError, ConfigurationError, ContentFilterError
from onellm.messages import Message, TextPart
from onellm.providers._http import Headers
from onellm.providers._media import ImageRequest, SpeechRequest, TranscriptionRequest
from onellm.providers._protocols import EmbeddingRequest
from onellm.providers._request import ChatRequest
from onellm.providers.anthropic import AnthropicProvider
from onellm.providers.deployments import ENTRA_SCOPE, AccessToken, AzureOpenAIEndpoint
from onellm.providers.deployments._azure import content_filter_categories
from onellm.providers.openai import OpenAIProvider
from onellm.runtime import Runtime

from ._deploy import AZURE_KEY, DEPLOYMENTS
from ._fixtures import load

RESPONSE = load(DEPLOYMENTS / "azure-openai" / "responses-v1" / "case.json")["response"]["body"]
CHAT = load(DEPLOYMENTS / "azure-openai" / "chat-completions-deployment-path" / "case.json")["response"]["body"]
EMBEDDINGS = load(DEPLOYMENTS / "azure-openai" / "embeddings-deployment-path" / "case.json")["response"]["body"]
CONTENT_FILTER = load(DEPLOYMENTS / "azure-openai" / "error-content-filter" / "case.json")["response"]["body"]
ENCODE = msgspec.json.Encoder(decimal_format="number").encode


class Mock:
    def __init__(self, answer: Any = None) -> None:
        self.requests: list[httpx.Request] = []
        self.answer = answer

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.answer is not None:
            return self.answer(request)  # type: ignore[no-any-return]
        path = request.url.path
        if path.endswith("/chat/completions"):
            return httpx.Response(200, content=ENCODE(CHAT))
        if path.endswith("/embeddings"):
            return httpx.Response(200, content=ENCODE(EMBEDDINGS))
        if path.endswith("/files"):
            return httpx.Response(200, json={"id": "file-abc", "object": "file"})
        if path.endswith("/batches"):
            return httpx.Response(200, json={"id": "batch_abc", "object": "batch"})
        return httpx.Response(200, content=ENCODE(RESPONSE))


def openai(endpoint: AzureOpenAIEndpoint, mock: Mock, **options: Any) -> OpenAIProvider:
    return OpenAIProvider(
        deployment=endpoint,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(mock)),
        clock=options.pop("clock", FakeClock()),
        **options,
    )


def azure(**options: Any) -> AzureOpenAIEndpoint:
    options.setdefault("api_key", AZURE_KEY)
    return AzureOpenAIEndpoint("https://my-resource.openai.azure.com/", **options)


def request(model: str = "gpt-5.4") -> ChatRequest:
    return ChatRequest(model, [Message(user=[TextPart("Hello!")])])


def test_the_provider_keeps_its_name_and_says_azure() -> None:
    provider = openai(azure(), Mock())
    assert (provider.name, provider.deployment) == ("openai", "azure")
    assert provider.base_url == "https://my-resource.openai.azure.com/openai/v1"
    assert AZURE_KEY not in repr(provider)


@pytest.mark.parametrize(
    "endpoint",
    [
        "https://my-resource.openai.azure.com",
        "https://my-resource.openai.azure.com/",
        "https://my-resource.openai.azure.com/openai",
        "https://my-resource.openai.azure.com/openai/v1/",
    ],
)
def test_the_resource_address_is_taken_in_any_of_its_forms(endpoint: str) -> None:
    assert AzureOpenAIEndpoint(endpoint, api_key=AZURE_KEY).resource == "https://my-resource.openai.azure.com"


def test_routes_in_the_v1_form() -> None:
    mock = Mock()
    provider = openai(azure(deployments={"gpt-5.4": "prod-gpt54"}), mock)

    async def go() -> None:
        await provider.send(request())
        await provider.send(request("gpt-4o-mini"))
        await provider.embed(EmbeddingRequest("text-embedding-3-small", ["a", "b"]))

    anyio.run(go)
    assert [str(r.url) for r in mock.requests] == [
        "https://my-resource.openai.azure.com/openai/v1/responses",
        "https://my-resource.openai.azure.com/openai/v1/responses",
        "https://my-resource.openai.azure.com/openai/v1/embeddings",
    ]
    assert [msgspec.json.decode(r.content)["model"] for r in mock.requests] == [
        "prod-gpt54",
        "gpt-4o-mini",
        "text-embedding-3-small",
    ]
    assert all(r.headers["api-key"] == AZURE_KEY and "authorization" not in r.headers for r in mock.requests)


def test_an_api_version_moves_chat_and_embeddings_to_the_deployment_path_only() -> None:
    mock = Mock()
    endpoint = azure(api_version="2024-10-21", deployments={"gpt-5.4": "prod-gpt54"})

    async def go() -> None:
        await openai(endpoint, mock, api="chat").send(request())
        await openai(endpoint, mock).send(request())
        await openai(endpoint, mock).embed(EmbeddingRequest("text-embedding-3-small", ["a", "b"]))

    anyio.run(go)
    assert [str(r.url) for r in mock.requests] == [
        "https://my-resource.openai.azure.com/openai/deployments/prod-gpt54/chat/completions?api-version=2024-10-21",
        "https://my-resource.openai.azure.com/openai/v1/responses",
        "https://my-resource.openai.azure.com/openai/deployments/text-embedding-3-small/embeddings?api-version=2024-10-21",
    ]
    bodies = [msgspec.json.decode(r.content) for r in mock.requests]
    assert "model" not in bodies[0]
    assert bodies[1]["model"] == "prod-gpt54"
    assert "model" not in bodies[2]


def test_a_batch_goes_to_v1_with_each_line_naming_its_deployment() -> None:
    mock = Mock()
    provider = openai(azure(deployments={"gpt-5.4": "prod-gpt54"}), mock)
    batch = anyio.run(provider.submit_batch, [request(), request("gpt-4o-mini")])
    assert batch == "batch_abc"
    upload, start = mock.requests
    assert str(upload.url) == "https://my-resource.openai.azure.com/openai/v1/files"
    assert str(start.url) == "https://my-resource.openai.azure.com/openai/v1/batches"
    lines = [
        msgspec.json.decode(line)
        for line in upload.content.split(b"\r\n\r\n", 2)[2].split(b"\r\n--")[0].splitlines()
        if line.strip()
    ]
    assert [line["body"]["model"] for line in lines] == ["prod-gpt54", "gpt-4o-mini"]
    assert [line["custom_id"] for line in lines] == ["request-0", "request-1"]


@pytest.mark.parametrize("name", ["prod/../x", "prod gpt", "prod?x=1", "", "a" * 65])
def test_a_deployment_name_that_would_change_the_path_is_refused(name: str) -> None:
    with pytest.raises(ConfigurationError, match="deployments"):
        azure(deployments={"gpt-5.4": name})
    mock = Mock()
    with pytest.raises(BadRequestError, match="not an Azure deployment name"):
        anyio.run(openai(azure(api_version="2024-10-21"), mock, api="chat").send, request(name or "x/y"))
    assert mock.requests == []


@pytest.mark.parametrize(
    ("endpoint", "options", "setting"),
    [
        ("http://my-resource.openai.azure.com", {"api_key": AZURE_KEY}, "endpoint"),
        ("https://my-resource.openai.azure.com", {}, "api_key"),
        ("https://my-resource.openai.azure.com", {"api_key": AZURE_KEY, "token_provider": lambda: None}, "api_key"),
        (
            "https://my-resource.openai.azure.com",
            {"api_key": AZURE_KEY, "api_version": "2024-10-21&x=1"},
            "api_version",
        ),
    ],
)
def test_bad_settings_are_refused(endpoint: str, options: dict[str, Any], setting: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        AzureOpenAIEndpoint(endpoint, **options)
    assert caught.value.setting == setting


def test_a_deployment_serves_only_the_openai_provider() -> None:
    with pytest.raises(ConfigurationError, match="serves OpenAIProvider"):
        AnthropicProvider(deployment=azure())  # type: ignore[arg-type]


# -- Entra tokens --------------------------------------------------------------------------------------------------


def test_an_entra_token_from_a_delegate_is_cached_and_refreshed_five_minutes_early() -> None:
    clock = FakeClock()
    fetched: list[str] = []

    async def entra() -> AccessToken:
        token = f"entra-token-{len(fetched)}"
        fetched.append(token)
        return AccessToken(token, clock.now() + dt.timedelta(hours=1))

    mock = Mock()
    provider = openai(azure(api_key=None, token_provider=entra), mock, clock=clock)

    async def many() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(10):
                group.start_soon(provider.send, request())

    anyio.run(many)
    assert fetched == ["entra-token-0"]
    assert {r.headers["authorization"] for r in mock.requests} == {"Bearer entra-token-0"}
    assert all("api-key" not in r.headers for r in mock.requests)
    clock.advance(3600 - 300 - 1)
    anyio.run(provider.send, request())
    assert len(fetched) == 1
    clock.advance(2)
    anyio.run(provider.send, request())
    assert fetched == ["entra-token-0", "entra-token-1"]
    assert mock.requests[-1].headers["authorization"] == "Bearer entra-token-1"
    assert ENTRA_SCOPE == "https://cognitiveservices.azure.com/.default"


def test_an_azure_identity_style_token_is_taken() -> None:
    """What azure-identity's `get_token` returns: `token` and `expires_on` in seconds since 1970."""

    class Credential:
        async def get_token(self, *scopes: str) -> Any:
            assert scopes == (ENTRA_SCOPE,)
            return type("AccessToken", (), {"token": "eyJ0eXAi.entra", "expires_on": 1_900_000_000})()

    credential = Credential()
    mock = Mock()
    provider = openai(azure(api_key=None, token_provider=lambda: credential.get_token(ENTRA_SCOPE)), mock)
    anyio.run(provider.send, request())
    assert mock.requests[0].headers["authorization"] == "Bearer eyJ0eXAi.entra"


def test_an_expired_token_the_delegate_will_not_refresh_is_an_auth_error() -> None:
    clock = FakeClock()

    async def stale() -> AccessToken:
        return AccessToken("entra-stale-token", clock.now() - dt.timedelta(minutes=1))

    mock = Mock()
    with pytest.raises(AuthError, match="Microsoft Entra token source gave back a token that expired") as caught:
        anyio.run(openai(azure(api_key=None, token_provider=stale), mock, clock=clock).send, request())
    assert mock.requests == []
    assert "entra-stale-token" not in str(caught.value)


# -- content filter ------------------------------------------------------------------------------------------------


def test_a_content_filter_400_names_the_filtered_categories() -> None:
    mock = Mock(lambda _r: httpx.Response(400, content=ENCODE(CONTENT_FILTER)))
    with pytest.raises(ContentFilterError) as caught:
        anyio.run(openai(azure(), mock).send, request())
    error = caught.value
    assert error.severities == {"self_harm": "medium", "violence": "high"}
    assert error.categories["jailbreak"] == {"filtered": False, "detected": False}
    assert "[filtered: self_harm (medium), violence (high)]" in str(error)
    assert error.status == 400
    assert len(mock.requests) == 1


def service_spelling(inner: dict[str, Any]) -> bytes:
    return ENCODE({"error": {"code": "content_filter", "message": "filtered", "status": 400, "innererror": inner}})


@pytest.mark.parametrize(
    ("body", "severities"),
    [
        (
            service_spelling(
                {
                    "code": "ResponsibleAIPolicyViolation",
                    "content_filter_result": {
                        "jailbreak": {"filtered": True, "detected": True},
                        "hate": {"filtered": False, "severity": "safe"},
                    },
                }
            ),
            {"jailbreak": "detected"},
        ),
        (
            service_spelling(
                {"content_filters": [{"content_filter_results": {"sexual": {"filtered": True, "severity": "high"}}}]}
            ),
            {"sexual": "high"},
        ),
        (service_spelling({"code": "ResponsibleAIPolicyViolation"}), {}),
        (b'{"error": {"code": "content_filter", "message": "filtered"}}', {}),
    ],
)
def test_the_categories_are_read_in_every_spelling(body: bytes, severities: dict[str, str]) -> None:
    mock = Mock(lambda _r: httpx.Response(400, content=body))
    with pytest.raises(ContentFilterError) as caught:
        anyio.run(openai(azure(), mock).send, request())
    assert caught.value.severities == severities


def test_categories_of_bodies_that_are_not_content_filter_errors() -> None:
    assert content_filter_categories(None) == {}
    assert content_filter_categories("not json") == {}
    assert content_filter_categories('{"error": "x"}') == {}
    assert content_filter_categories('{"error": {"innererror": {"content_filter_result": {"x": 1}}}}') == {}
    mock = Mock(lambda _r: httpx.Response(400, json={"error": {"code": "invalid_value", "message": "bad"}}))
    with pytest.raises(BadRequestError) as caught:
        anyio.run(openai(azure(), mock).send, request())
    assert type(caught.value) is BadRequestError


# -- catalog aliases -----------------------------------------------------------------------------------------------


def test_deployment_names_become_aliases_priced_as_their_models() -> None:
    endpoint = azure(deployments={"gpt-5.4": "prod-gpt54", "gpt-4o-mini": "gpt-4o-mini"})
    catalog = Catalog.shipped().with_layers(endpoint.catalog_aliases())
    alias = catalog.resolve("prod-gpt54")
    model = Catalog.shipped().resolve("gpt-5.4")
    assert alias.qualified_name == model.qualified_name == "openai:gpt-5.4"
    assert alias.entry.pricing == model.entry.pricing
    assert catalog.resolve("gpt-4o-mini").name == "gpt-4o-mini"

    mock = Mock()
    runtime = Runtime(catalog=catalog, environ={})
    runtime.providers.set("openai", openai(endpoint, mock))

    async def go() -> Any:
        return await runtime.generate("prod-gpt54", "Hello!")

    result = anyio.run(go)
    assert msgspec.json.decode(mock.requests[0].content)["model"] == "prod-gpt54"
    assert result.model == "openai:gpt-5.4"
    assert result.cost.total > 0
    assert [line.counter for line in result.cost.lines] == ["inputTokens", "outputTokens"]


# -- media -----------------------------------------------------------------------------------------------------------
# Azure OpenAI serves images and audio on the deployment path too (the inference spec's `images/generations` and
# `audio/speech` operations; transcriptions and translations take the same form field `model` as OpenAI's). The answers
# are OpenAI's own media fixtures: Azure answers these routes with the same bodies.

MEDIA = DEPLOYMENTS.parent / "openai-media"


def _media_answer(request: httpx.Request) -> httpx.Response:
    leaf = request.url.path.rsplit("/", 2)
    name = {
        ("images", "generations"): "image-generate",
        ("audio", "speech"): "speech-tts-1",
        ("audio", "transcriptions"): "transcription-tokens",
    }[(leaf[-2], leaf[-1])]
    recorded = load(MEDIA / name / "case.json")["response"]
    if "bodyBase64" in recorded:
        return httpx.Response(200, headers=recorded["headers"], content=base64.b64decode(recorded["bodyBase64"]))
    return httpx.Response(200, headers=recorded["headers"], content=ENCODE(recorded["body"]))


def _media_calls(provider: OpenAIProvider) -> None:
    async def go() -> None:
        image = await provider.generate_image(ImageRequest(model="gpt-image-2", prompt="A cute baby sea otter"))
        assert image.images[0].data.startswith(b"\x89PNG")
        speech = await provider.synthesize(SpeechRequest(model="tts-1", text="Hello", voice="alloy"))
        assert speech.audio.startswith(b"ID3")
        heard = await provider.transcribe(
            TranscriptionRequest(model="gpt-4o-transcribe", audio=b"ID3\x04 mp3", content_type="audio/mpeg")
        )
        assert heard.text.startswith("Imagine the wildest idea")

    anyio.run(go)


def _form_model(request: httpx.Request) -> str:
    found = re.search(rb'name="model"\r\n\r\n([^\r]*)\r\n', request.content)
    assert found is not None
    return found.group(1).decode()


def test_media_goes_to_the_deployment_path_with_an_api_version() -> None:
    mock = Mock(_media_answer)
    deployments = {"gpt-image-2": "images-prod", "tts-1": "voice-prod", "gpt-4o-transcribe": "ears-prod"}
    _media_calls(openai(azure(api_version="2025-04-01-preview", deployments=deployments), mock))
    base = "https://my-resource.openai.azure.com/openai/deployments"
    assert [str(r.url) for r in mock.requests] == [
        f"{base}/images-prod/images/generations?api-version=2025-04-01-preview",
        f"{base}/voice-prod/audio/speech?api-version=2025-04-01-preview",
        f"{base}/ears-prod/audio/transcriptions?api-version=2025-04-01-preview",
    ]
    assert "model" not in msgspec.json.decode(mock.requests[0].content)
    assert "model" not in msgspec.json.decode(mock.requests[1].content)
    assert _form_model(mock.requests[2]) == "gpt-4o-transcribe"
    assert all(r.headers["api-key"] == AZURE_KEY for r in mock.requests)


def test_media_in_the_v1_form_names_each_deployment() -> None:
    mock = Mock(_media_answer)
    deployments = {"gpt-image-2": "images-prod", "gpt-4o-transcribe": "ears-prod"}
    _media_calls(openai(azure(deployments=deployments), mock))
    base = "https://my-resource.openai.azure.com/openai/v1"
    assert [str(r.url) for r in mock.requests] == [
        f"{base}/images/generations",
        f"{base}/audio/speech",
        f"{base}/audio/transcriptions",
    ]
    assert msgspec.json.decode(mock.requests[0].content)["model"] == "images-prod"
    assert msgspec.json.decode(mock.requests[1].content)["model"] == "tts-1"
    assert _form_model(mock.requests[2]) == "ears-prod"
    assert b"ID3\x04 mp3" in mock.requests[2].content


def test_a_transcription_form_without_a_model_is_refused_on_the_deployment_path() -> None:
    endpoint = azure(api_version="2024-10-21")
    with pytest.raises(BadRequestError, match="names no model"):
        endpoint.http_call(
            "openai",
            "POST",
            "/audio/transcriptions",
            b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\n\r\nID3\r\n--b--\r\n',
            headers=Headers({}),
            stream=False,
            content_type="multipart/form-data; boundary=b",
            secrets=(),
        )
