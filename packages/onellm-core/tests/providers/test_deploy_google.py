"""Google OAuth without google-auth: RS256 against RFC 7515 appendix A.2, the private key read from OpenSSL's PEM files,
the service-account file and every way it can be wrong, the JWT exchange and its retries, and the token cache."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import anyio
import httpx
import pytest

from onellm.clock import FakeClock
from onellm.errors import AuthError, BadDefinitionError, ConfigurationError
from onellm.messages import Message, TextPart
from onellm.providers._http import RawExchange, capturing_raw_exchange
from onellm.providers._request import ChatRequest
from onellm.providers._retry import RetryPolicy
from onellm.providers.anthropic import AnthropicProvider
from onellm.providers.deployments import (
    AccessToken,
    GoogleBearerAuth,
    GoogleServiceAccount,
    TokenCache,
    VertexAnthropicDeployment,
)
from onellm.providers.deployments._rsa import (
    KeyFormatError,
    RsaPrivateKey,
    b64url,
    b64url_decode,
    parse_private_key_pem,
    rs256_sign,
    rs256_verify,
)

from ._deploy import ACCESS_TOKEN, ACCOUNT_FILE, TESTDATA, TOKEN_URI, Router, account, check_assertion

VECTOR = json.loads((TESTDATA / "jws" / "rfc7515-a2-rs256.json").read_text())
JWK = VECTOR["jwk"]
PEM = (TESTDATA / "jws" / "rfc7515-a2-key.pem").read_text()
PKCS1 = (TESTDATA / "jws" / "rfc7515-a2-key.pkcs1.pem").read_text()
INFO = json.loads(ACCOUNT_FILE.read_text())


def jwk_key() -> RsaPrivateKey:
    def integer(name: str) -> int:
        return int.from_bytes(b64url_decode(JWK[name]), "big")

    return RsaPrivateKey(*(integer(n) for n in ("n", "e", "d", "p", "q", "dp", "dq", "qi")))


# -- RS256 ---------------------------------------------------------------------------------------------------------


def test_the_rfc_7515_a2_vector_signs_byte_for_byte() -> None:
    key = jwk_key()
    assert b64url(VECTOR["protected_header"].encode()) == VECTOR["protected_header_b64url"]
    assert b64url(VECTOR["payload"].encode()) == VECTOR["payload_b64url"]
    signature = rs256_sign(key, VECTOR["signing_input"].encode())
    assert b64url(signature) == VECTOR["signature_b64url"]
    assert f"{VECTOR['signing_input']}.{b64url(signature)}" == VECTOR["compact_serialization"]


def test_signatures_verify_with_the_public_key_and_nothing_else() -> None:
    key = jwk_key()
    message = VECTOR["signing_input"].encode()
    signature = b64url_decode(VECTOR["signature_b64url"])
    assert rs256_verify(key.public, message, signature)
    assert not rs256_verify(key.public, message + b"x", signature)
    assert not rs256_verify(key.public, message, signature[:-1] + bytes([signature[-1] ^ 1]))
    assert not rs256_verify(key.public, message, signature[1:])
    own = rs256_sign(key, b"any message at all")
    assert rs256_verify(key.public, b"any message at all", own)


@pytest.mark.parametrize("pem", [PEM, PKCS1], ids=["pkcs8", "pkcs1"])
def test_the_pem_files_openssl_wrote_hold_the_rfc_key(pem: str) -> None:
    parsed = parse_private_key_pem(pem)
    assert (parsed.n, parsed.e, parsed.d, parsed.p, parsed.q, parsed.dp, parsed.dq, parsed.qi) == (
        jwk_key().n,
        jwk_key().e,
        jwk_key().d,
        jwk_key().p,
        jwk_key().q,
        jwk_key().dp,
        jwk_key().dq,
        jwk_key().qi,
    )
    assert b64url(rs256_sign(parsed, VECTOR["signing_input"].encode())) == VECTOR["signature_b64url"]
    assert repr(parsed) == "RsaPrivateKey(2048 bits)"


BODY = "".join(PEM.strip().splitlines()[1:-1])


@pytest.mark.parametrize(
    ("pem", "says"),
    [
        ("", "not a PEM block"),
        ("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----", "not an unencrypted RSA key"),
        ("-----BEGIN PRIVATE KEY-----\nnot base64!!\n-----END PRIVATE KEY-----", "not base64"),
        ("-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----", "DER"),
        (f"-----BEGIN PRIVATE KEY-----\n{BODY[:200]}\n-----END PRIVATE KEY-----", "DER"),
        (f"-----BEGIN PRIVATE KEY-----\n{BODY}\n-----END RSA PRIVATE KEY-----", "does not end"),
        ("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----", "not an unencrypted"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----",
            "encrypted",
        ),
    ],
)
def test_a_key_that_is_not_one_fails_without_showing_key_material(pem: str, says: str) -> None:
    with pytest.raises(KeyFormatError, match=says) as caught:
        parse_private_key_pem(pem)
    for line in PEM.splitlines()[1:-1]:
        assert line not in str(caught.value)


def test_a_key_whose_numbers_disagree_is_refused() -> None:
    key = jwk_key()
    with pytest.raises(KeyFormatError, match="primes"):
        RsaPrivateKey(key.n, key.e, key.d, key.p, key.q + 2, key.dp, key.dq, key.qi)
    with pytest.raises(KeyFormatError, match="CRT"):
        RsaPrivateKey(key.n, key.e, key.d, key.p, key.q, key.dp + 1, key.dq, key.qi)


# -- the service-account file --------------------------------------------------------------------------------------


def test_the_service_account_file_is_read() -> None:
    found = account()
    assert found.client_email == "vertex-caller@onellm-test-project.iam.gserviceaccount.com"
    assert found.project_id == "onellm-test-project"
    assert found.private_key_id == "rfc7515-a2"
    assert found.token_uri == TOKEN_URI
    assert "PRIVATE" not in repr(found)
    assert found.secrets[0].reveal() == INFO["private_key"]


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "service-account.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def broken(**changes: Any) -> str:
    info = dict(INFO)
    for name, value in changes.items():
        if value is None:
            info.pop(name)
        else:
            info[name] = value
    return json.dumps(info)


@pytest.mark.parametrize(
    ("text", "says", "where"),
    [
        ('{\n  "type": "service_account",\n  "private_key": -----BEGIN', "not JSON", (3, 18)),
        ("[1, 2]", "not a JSON object", None),
        (broken(type="authorized_user"), "'authorized_user'; a service-account key file", None),
        (broken(private_key=None), "has no private_key", None),
        (broken(client_email=None), "has no client_email", None),
        (broken(private_key="-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"), "private_key", None),
        (broken(private_key=INFO["private_key"].replace("MII", "XII", 1)), "private_key", None),
        (broken(token_uri="http://evil.example/token"), "token_uri must be https", None),
        (broken(project_id=42), "project_id must be a string", None),
        (b"\xff\xfe{", "not UTF-8", None),
        ("x" * (1024 * 1024 + 10), "larger than 1 MiB", None),
    ],
)
def test_a_bad_service_account_file_is_a_bad_definition_without_the_key(
    tmp_path: Path, text: str | bytes, says: str, where: tuple[int, int] | None
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(BadDefinitionError, match=says) as caught:
        GoogleServiceAccount.from_file(path)
    assert caught.value.file == str(path)
    if where is not None:
        assert (caught.value.line, caught.value.column) == where
    for line in INFO["private_key"].splitlines()[1:-1]:
        assert line not in str(caught.value)


def test_a_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(BadDefinitionError, match="cannot read the service-account file") as caught:
        GoogleServiceAccount.from_file(tmp_path / "nope.json")
    assert caught.value.file == str(tmp_path / "nope.json")


# -- the exchange and the cache ------------------------------------------------------------------------------------


def request() -> ChatRequest:
    return ChatRequest("claude-sonnet-4-5", [Message(user=[TextPart("Hi")])], max_output_tokens=32)


ANSWER = json.loads((TESTDATA / "providers/anthropic/basic/case.json").read_text())["response"]["body"]


def claude(router: Router, **options: Any) -> AnthropicProvider:
    deployment = options.pop("deployment", None) or VertexAnthropicDeployment(account(), "us-east5")
    return AnthropicProvider(
        deployment=deployment,
        http_client=router.client(),
        clock=router.clock,
        retry=RetryPolicy(max_retries=2),
        **options,
    )


def test_one_token_serves_concurrent_callers_and_is_refreshed_five_minutes_early() -> None:
    router = Router(lambda _r: httpx.Response(200, json=ANSWER))
    provider = claude(router)

    async def many() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(12):
                group.start_soon(provider.send, request())

    anyio.run(many)
    assert len(router.token_requests) == 1
    assert len(router.requests) == 12
    assert {r.headers["authorization"] for r in router.requests} == {f"Bearer {ACCESS_TOKEN}"}
    router.clock.advance(3599 - 300 - 1)  # a second before the refresh point
    anyio.run(provider.send, request())
    assert len(router.token_requests) == 1
    router.clock.advance(2)
    anyio.run(provider.send, request())
    assert len(router.token_requests) == 2
    claims = check_assertion(parse_qs(router.token_requests[1].content.decode()), int(router.clock.now().timestamp()))
    assert "sub" not in claims


def test_a_subject_is_sent_as_sub() -> None:
    found = GoogleServiceAccount.from_file(ACCOUNT_FILE, subject="someone@example.com")
    assertion = found.assertion(dt.datetime(2026, 1, 1, tzinfo=dt.UTC)).reveal()
    claims = json.loads(b64url_decode(assertion.split(".")[1]))
    assert claims["sub"] == "someone@example.com"


@pytest.mark.parametrize("status", [500, 503, 429])
def test_5xx_and_429_on_the_token_endpoint_are_retried(status: int) -> None:
    router = Router(lambda _r: httpx.Response(200, json=ANSWER))
    router.token_answers = [httpx.Response(status, json={"error": "temporarily_unavailable"})]
    anyio.run(claude(router).send, request())
    assert len(router.token_requests) == 2
    assert len(router.requests) == 1


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (
            httpx.Response(400, json={"error": "invalid_grant", "error_description": "Invalid JWT Signature."}),
            r"refused the service account's assertion \(HTTP 400\): Invalid JWT Signature\.",
        ),
        (
            httpx.Response(
                400,
                json={
                    "error": "invalid_grant",
                    "error_description": "Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
                    "reasonable timeframe. Check your iat and exp values in the JWT claim.",
                },
            ),
            "check the clock",
        ),
        (httpx.Response(200, json={"token_type": "Bearer", "id_token": "eyJsecret"}), "no access_token"),
        (httpx.Response(200, json={"access_token": "tok", "expires_in": 0}), "not a bearer token with a lifetime"),
        (httpx.Response(200, content=b"<html>login</html>"), "no access_token"),
        (httpx.Response(503, text="unavailable"), "refused"),
    ],
)
def test_a_token_endpoint_failure_is_an_auth_error(answer: httpx.Response, says: str) -> None:
    router = Router(lambda _r: httpx.Response(200, json=ANSWER))
    router.token_answers = [answer] * 3
    with pytest.raises(AuthError, match=says) as caught:
        anyio.run(claude(router).send, request())
    assert router.requests == []
    assert len(router.token_requests) == (3 if answer.status_code == 503 else 1)
    text = f"{caught.value} {caught.value!r} {caught.value.body or ''}"
    assert "eyJsecret" not in text
    for token_request in router.token_requests:
        assertion = parse_qs(token_request.content.decode())["assertion"][0]
        assert assertion not in text
        assert assertion.split(".")[2] not in text


def test_the_token_exchange_is_not_recorded_as_the_calls_raw_exchange() -> None:
    router = Router(lambda _r: httpx.Response(200, json=ANSWER))
    raw = RawExchange()

    async def go() -> None:
        with capturing_raw_exchange(raw):
            await claude(router).send(request())

    anyio.run(go)
    assert raw.request is not None
    assert b"assertion" not in raw.request
    assert b"anthropic_version" in raw.request
    assert ACCESS_TOKEN.encode() not in bytes(raw.response)


def test_an_access_token_the_server_echoes_never_reaches_an_error() -> None:
    echo = {"error": {"code": 401, "status": "UNAUTHENTICATED", "message": f"token {ACCESS_TOKEN} was revoked"}}
    router = Router(lambda _r: httpx.Response(401, json=echo))
    with pytest.raises(AuthError) as caught:
        anyio.run(claude(router).send, request())
    assert ACCESS_TOKEN not in f"{caught.value} {caught.value!r} {caught.value.body}"
    assert "****" in str(caught.value)


# -- token delegates -----------------------------------------------------------------------------------------------


def test_a_delegate_replaces_the_exchange_and_is_cached() -> None:
    calls: list[int] = []
    router = Router(lambda _r: httpx.Response(200, json=ANSWER))

    async def delegate() -> AccessToken:
        calls.append(1)
        return AccessToken("ya29.from-my-delegate", router.clock.now() + dt.timedelta(hours=1))

    deployment = VertexAnthropicDeployment(GoogleBearerAuth(delegate), "us-east5", project_id="my-project-123")
    provider = claude(router, deployment=deployment)
    anyio.run(provider.send, request())
    anyio.run(provider.send, request())
    assert calls == [1]
    assert router.token_requests == []
    assert router.requests[0].headers["authorization"] == "Bearer ya29.from-my-delegate"
    assert "/projects/my-project-123/" in str(router.requests[0].url)


@pytest.mark.parametrize(
    ("give", "says"),
    [
        ("expired", "gave back a token that expired"),
        ("raise", "source failed: RuntimeError: vault is sealed"),
        ("wrong", "must return an AccessToken"),
        ("nan", "no usable token"),
        ("empty", "no usable token"),
    ],
)
def test_a_delegate_that_will_not_refresh_is_an_auth_error(give: str, says: str) -> None:
    router = Router(lambda _r: httpx.Response(200, json=ANSWER))

    async def delegate() -> Any:
        if give == "raise":
            raise RuntimeError("vault is sealed")
        if give == "wrong":
            return "ya29.just-a-string"
        if give == "nan":
            return type("Token", (), {"token": "ya29.nan-expiry", "expires_on": float("nan")})()
        if give == "empty":
            return type("Token", (), {"token": "", "expires_on": 1.0})()
        return AccessToken("ya29.stale-token-value", router.clock.now() - dt.timedelta(seconds=1))

    deployment = VertexAnthropicDeployment(delegate, "us-east5", project_id="my-project-123")
    with pytest.raises(AuthError, match=says) as caught:
        anyio.run(claude(router, deployment=deployment).send, request())
    assert router.requests == []
    assert "ya29" not in str(caught.value)


def test_a_token_near_its_end_is_used_once_then_asked_for_again() -> None:
    """A delegate that can only give a token with four minutes left: each call gets it (it is still valid) and asks
    again next time, rather than failing or looping."""
    router = Router(lambda _r: httpx.Response(200, json=ANSWER))
    calls: list[int] = []

    async def delegate() -> AccessToken:
        calls.append(1)
        return AccessToken("ya29.short-lived", router.clock.now() + dt.timedelta(minutes=4))

    provider = claude(router, deployment=VertexAnthropicDeployment(delegate, "us-east5", project_id="my-project-123"))
    anyio.run(provider.send, request())
    anyio.run(provider.send, request())
    assert calls == [1, 1]


def test_access_tokens_take_what_credential_libraries_return() -> None:
    class AzureStyle:
        token = "t-azure"
        expires_on = 1_800_000_000

    class WithDatetime:
        token = "t-dt"
        expires_at = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)

    assert AccessToken.of(AzureStyle()).expires_at == dt.datetime(2027, 1, 15, 8, 0, tzinfo=dt.UTC)
    assert AccessToken.of(WithDatetime()).token.reveal() == "t-dt"
    with pytest.raises(TypeError):
        AccessToken.of(object())
    with pytest.raises(ValueError, match="timezone-aware"):
        AccessToken("t", dt.datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="empty"):
        AccessToken("", expires_on=1)
    assert "t-dt" not in repr(AccessToken.of(WithDatetime()))


def test_the_cache_refuses_a_source_of_the_wrong_kind() -> None:
    with pytest.raises(ConfigurationError, match="GoogleBearerAuth takes"):
        GoogleBearerAuth(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="VertexAnthropicDeployment takes"):
        VertexAnthropicDeployment("not credentials", "us-east5", project_id="my-project-123")
    cache = TokenCache(lambda _t: None)  # type: ignore[arg-type,return-value]
    assert "empty" in repr(cache)


def test_a_cache_is_shared_by_providers_and_event_loops() -> None:
    """Two providers on one account's cache (Claude and Gemini on Vertex) share the token; a second event loop (a
    second `anyio.run`) uses it too."""
    router = Router(lambda _r: httpx.Response(200, json=ANSWER))
    auth = GoogleBearerAuth(account().token_cache())
    first = claude(router, deployment=VertexAnthropicDeployment(auth, "us-east5", project_id="onellm-test-project"))
    second = claude(
        router, deployment=VertexAnthropicDeployment(auth, "europe-west1", project_id="onellm-test-project")
    )
    anyio.run(first.send, request())
    anyio.run(second.send, request())
    assert len(router.token_requests) == 1
    assert auth.cache.fetches == 1
    assert {r.url.host for r in router.requests} == {
        "us-east5-aiplatform.googleapis.com",
        "europe-west1-aiplatform.googleapis.com",
    }


def test_the_token_request_is_a_form_to_the_token_uri() -> None:
    router = Router(lambda _r: httpx.Response(200, json=ANSWER))
    anyio.run(claude(router).send, request())
    (sent,) = router.token_requests
    assert sent.method == "POST"
    assert str(sent.url) == TOKEN_URI
    assert sent.headers["content-type"] == "application/x-www-form-urlencoded"
    assert "authorization" not in sent.headers
    assert set(parse_qs(sent.content.decode())) == {"grant_type", "assertion"}
    assert isinstance(FakeClock().now(), dt.datetime)
