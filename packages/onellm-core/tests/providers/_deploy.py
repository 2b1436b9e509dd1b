"""Helpers for the deployment tests: the test credentials, deployments built from a case's `deployment` block, Bedrock
event-stream bodies built from Messages stream events, and a mock router that answers Google's token endpoint and
hands every other request to the case."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import msgspec

from onellm.clock import FakeClock
from onellm.errors import Secret
from onellm.providers._sse import SseDecoder
from onellm.providers.deployments import (
    AwsCredentials,
    AzureOpenAIEndpoint,
    BedrockDeployment,
    GoogleServiceAccount,
    VertexAnthropicDeployment,
    VertexGeminiEndpoint,
)
from onellm.providers.deployments._eventstream import EventHeader, encode_message
from onellm.providers.deployments._rsa import b64url_decode, rs256_verify

ROOT = Path(__file__).resolve().parents[4]
TESTDATA = ROOT / "testdata"
DEPLOYMENTS = TESTDATA / "providers" / "deployments"
ACCOUNT_FILE = DEPLOYMENTS / "service-account.json"

ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLEsessionTOKEN+/abc=="
BEDROCK_KEY = "ABSKQmVkcm9ja0FQSUtleS1leGFtcGxlLWtleQ=="
AZURE_KEY = "azure-fixture-key-0123456789"
ACCESS_TOKEN = "ya29.fixture-access-token"
TOKEN_URI = "https://oauth2.googleapis.com/token"

SECRETS = (SECRET_KEY, SESSION_TOKEN, BEDROCK_KEY, AZURE_KEY, ACCESS_TOKEN, ACCESS_KEY)
"""Every credential the deployment tests use: none may appear in any error."""


def account() -> GoogleServiceAccount:
    return GoogleServiceAccount.from_file(ACCOUNT_FILE)


def credentials(kind: str) -> dict[str, Any]:
    if kind == "apiKey":
        return {"api_key": Secret(BEDROCK_KEY)}
    token = Secret(SESSION_TOKEN) if kind == "session" else None
    return {"credentials": AwsCredentials(Secret(ACCESS_KEY), Secret(SECRET_KEY), session_token=token)}


def deployment_of(spec: Mapping[str, Any]) -> Any:
    """The deployment a case's `deployment` block describes."""
    kind = spec["kind"]
    if kind == "bedrock":
        return BedrockDeployment(
            spec["region"],
            inference_profile=spec.get("inferenceProfile"),
            model_ids=spec.get("modelIds"),
            **credentials(spec.get("credentials", "keys")),
        )
    if kind == "vertex-anthropic":
        return VertexAnthropicDeployment(account(), spec["region"])
    if kind == "vertex-gemini":
        found = account()
        return VertexGeminiEndpoint(found.project_id, spec["location"], auth=found)
    if kind == "azure":
        return AzureOpenAIEndpoint(
            spec.get("endpoint", "https://my-resource.openai.azure.com/"),
            api_key=Secret(AZURE_KEY),
            api_version=spec.get("apiVersion"),
            deployments=spec.get("deployments"),
        )
    raise ValueError(kind)


def chunk_frame(event: Mapping[str, Any]) -> bytes:
    """One `chunk` message of Bedrock's stream, as InvokeModelWithResponseStream sends it."""
    payload = {"bytes": base64.b64encode(msgspec.json.encode(event)).decode(), "p": "abcdefghijklmnopqrstuvwxyzABCD"}
    headers = [
        EventHeader(":event-type", 7, "chunk"),
        EventHeader(":content-type", 7, "application/json"),
        EventHeader(":message-type", 7, "event"),
    ]
    return encode_message(headers, msgspec.json.encode(payload))


def exception_frame(kind: str, payload: Mapping[str, Any]) -> bytes:
    headers = [
        EventHeader(":exception-type", 7, kind),
        EventHeader(":content-type", 7, "application/json"),
        EventHeader(":message-type", 7, "exception"),
    ]
    return encode_message(headers, msgspec.json.encode(payload))


def bedrock_body(events: Iterable[Mapping[str, Any]], exception: Mapping[str, Any] | None = None) -> bytes:
    body = b"".join(chunk_frame(event) for event in events)
    if exception is not None:
        body += exception_frame(exception["type"], exception["payload"])
    return body


def sse_events(text: str) -> list[Any]:
    """The JSON data of each whole event of a server-sent events text (an event the text cuts short is left out)."""
    return [msgspec.json.decode(event.data) for event in SseDecoder().feed(text.encode()) if event.data]


def check_assertion(form: Mapping[str, list[str]], now: int) -> dict[str, Any]:
    """The claims of a token request's JWT assertion, after checking the grant and the RS256 signature with the test
    account's public key."""
    assert form["grant_type"] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
    (assertion,) = form["assertion"]
    head, claims, signature = assertion.split(".")
    key = account()._key.public
    assert rs256_verify(key, f"{head}.{claims}".encode(), b64url_decode(signature))
    header = json.loads(b64url_decode(head))
    assert header == {"alg": "RS256", "typ": "JWT", "kid": "rfc7515-a2"}
    decoded: dict[str, Any] = json.loads(b64url_decode(claims))
    assert decoded["iss"] == "vertex-caller@onellm-test-project.iam.gserviceaccount.com"
    assert decoded["aud"] == TOKEN_URI
    assert decoded["scope"] == "https://www.googleapis.com/auth/cloud-platform"
    assert decoded["iat"] == now
    assert decoded["exp"] == now + 3600
    return decoded


class Router:
    """A MockTransport handler: Google's token endpoint answers with a token (`expires_in` one hour); every other
    request is recorded and answered by `answer`."""

    def __init__(self, answer: Callable[[httpx.Request], httpx.Response], *, clock: FakeClock | None = None) -> None:
        self.answer = answer
        self.clock = clock or FakeClock()
        self.requests: list[httpx.Request] = []
        self.token_requests: list[httpx.Request] = []
        self.token_answers: list[httpx.Response] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if str(request.url) == TOKEN_URI:
            self.token_requests.append(request)
            if self.token_answers:
                return self.token_answers.pop(0)
            check_assertion(parse_qs(request.content.decode()), int(self.clock.now().timestamp()))
            return httpx.Response(200, json={"access_token": ACCESS_TOKEN, "expires_in": 3599, "token_type": "Bearer"})
        self.requests.append(request)
        return self.answer(request)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))
