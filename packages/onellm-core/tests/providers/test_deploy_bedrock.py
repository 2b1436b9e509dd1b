"""Bedrock: model ids and inference profiles, what is refused before sending, the credentials read from the
environment, the signature checked by a loopback server that verifies it as AWS does (and refuses a clock an hour
off), the event stream through the provider, and the same message as Anthropic's own stream of the same events."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onellm.catalog import Catalog
from onellm.clock import FakeClock
from onellm.errors import (
    AuthError,
    BadRequestError,
    ConfigurationError,
    MalformedResponseError,
    OnellmError,
    RateLimitError,
)
from onellm.messages import Message, TextPart
from onellm.providers._request import ChatRequest, ChatResponse
from onellm.providers._retry import RetryPolicy
from onellm.providers._stream import collect
from onellm.providers.anthropic import AnthropicProvider
from onellm.providers.deployments import BEDROCK_MODEL_IDS, AwsCredentials, BedrockDeployment
from onellm.providers.gemini import GeminiProvider
from onellm.runtime import Runtime

from ._deploy import (
    ACCESS_KEY,
    BEDROCK_KEY,
    SECRET_KEY,
    SECRETS,
    SESSION_TOKEN,
    bedrock_body,
    chunk_frame,
    credentials,
    exception_frame,
    sse_events,
)
from ._fixtures import cases, load

FIRST_PARTY_STREAMS = [p for p in cases("anthropic") if "stream" in load(p)]
BASIC = load(Path(__file__).resolve().parents[4] / "testdata/providers/anthropic/basic/case.json")
EVENTS = sse_events(BASIC["stream"])


def keys(**options: Any) -> BedrockDeployment:
    return BedrockDeployment("us-east-1", **credentials("keys"), **options)


def request(model: str = "claude-sonnet-4-5-20250929", **options: Any) -> ChatRequest:
    return ChatRequest(model, [Message(user=[TextPart("Say hello there!")])], max_output_tokens=64, **options)


class Mock:
    def __init__(self, *answers: httpx.Response) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def provider(deployment: BedrockDeployment, mock: Mock, **options: Any) -> AnthropicProvider:
    options.setdefault("clock", FakeClock())
    return AnthropicProvider(
        deployment=deployment, http_client=httpx.AsyncClient(transport=httpx.MockTransport(mock)), **options
    )


def ok() -> httpx.Response:
    return httpx.Response(200, json=BASIC["response"]["body"])


# -- model ids -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "model", "wire"),
    [
        ({}, "claude-sonnet-4-5-20250929", "anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ({}, "claude-3-5-sonnet-20241022", "anthropic.claude-3-5-sonnet-20241022-v2:0"),
        ({}, "claude-sonnet-5-5", "anthropic.claude-sonnet-5-5"),
        ({"inference_profile": "us"}, "claude-sonnet-4-5-20250929", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ({"inference_profile": "global"}, "claude-sonnet-5-5", "global.anthropic.claude-sonnet-5-5"),
        (
            {"inference_profile": "eu"},
            "anthropic.claude-3-haiku-20240307-v1:0",
            "eu.anthropic.claude-3-haiku-20240307-v1:0",
        ),
        (
            {"inference_profile": "eu"},
            "apac.anthropic.claude-3-haiku-20240307-v1:0",
            "apac.anthropic.claude-3-haiku-20240307-v1:0",
        ),
        (
            {
                "inference_profile": "us",
                "model_ids": {
                    "claude-sonnet": "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6"
                },
            },
            "claude-sonnet",
            "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6",
        ),
    ],
)
def test_model_names_map_to_bedrock_ids(options: dict[str, Any], model: str, wire: str) -> None:
    assert keys(**options).model_id(model) == wire


def test_the_table_maps_dated_names_to_versioned_ids() -> None:
    for name, wire in BEDROCK_MODEL_IDS.items():
        assert wire.startswith(f"anthropic.{name}-v")
        assert wire.endswith(":0")


def test_an_arn_is_sent_percent_encoded_whole() -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    mock = Mock(ok())
    claude = provider(keys(model_ids={"sonnet": arn}), mock)
    anyio.run(claude.send, request("sonnet"))
    assert mock.requests[0].url.raw_path.decode() == (
        "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2F"
        "us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke"
    )


@pytest.mark.parametrize(
    "model", ["claude/../../evil", "claude sonnet", "claude%2F..", "arn:aws:bedrock:x/y", "", "a?b"]
)
def test_a_model_id_that_would_change_the_path_is_refused_before_sending(model: str) -> None:
    mock = Mock(ok())
    claude = provider(keys(), mock)
    with pytest.raises(BadRequestError, match="not a Bedrock model id"):
        anyio.run(claude.send, request(model))
    assert mock.requests == []


@pytest.mark.parametrize("exact", ["bad/../id", "arn:aws:s3:::bucket/key", "id with space"])
def test_an_exact_id_that_is_not_one_is_refused_at_construction(exact: str) -> None:
    with pytest.raises(ConfigurationError, match="model_ids"):
        keys(model_ids={"x": exact})


# -- addresses -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "region", ["us-east-1.evil.example", "us-east-1/", "US-EAST-1", "", "us-east-1#", "evil.example/x", "us-east-1:443"]
)
def test_a_region_that_is_not_a_plain_name_is_refused(region: str) -> None:
    with pytest.raises(ConfigurationError, match="region") as caught:
        BedrockDeployment(region, **credentials("keys"))
    assert isinstance(caught.value, ValueError)
    assert caught.value.setting == "region"


@pytest.mark.parametrize(
    ("region", "host"),
    [
        ("us-east-1", "https://bedrock-runtime.us-east-1.amazonaws.com"),
        ("eu-central-1", "https://bedrock-runtime.eu-central-1.amazonaws.com"),
        ("us-gov-west-1", "https://bedrock-runtime.us-gov-west-1.amazonaws.com"),
        ("cn-north-1", "https://bedrock-runtime.cn-north-1.amazonaws.com.cn"),
    ],
)
def test_the_region_picks_the_host(region: str, host: str) -> None:
    assert BedrockDeployment(region, **credentials("keys")).base_url == host


@pytest.mark.parametrize(
    "url", ["http://bedrock.example.com", "ftp://x", "https://user:pw@host", "https://host/?q=1", "not a url"]
)
def test_a_base_url_must_be_https_or_loopback(url: str) -> None:
    with pytest.raises(ConfigurationError, match="base_url"):
        keys(base_url=url)


@pytest.mark.parametrize(
    "url",
    [
        "https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com",
        "http://127.0.0.1:8080",
        "http://localhost:9",
        "http://[::1]:9",
    ],
)
def test_https_and_loopback_base_urls_are_taken(url: str) -> None:
    assert keys(base_url=url).base_url == url


# -- the provider --------------------------------------------------------------------------------------------------


def test_the_provider_keeps_its_name_and_says_where_it_goes() -> None:
    claude = provider(keys(), Mock(ok()))
    assert claude.name == "anthropic"
    assert claude.deployment == "bedrock"
    assert AnthropicProvider(api_key="k").deployment is None
    assert "bedrock" in repr(claude)
    assert SECRET_KEY not in repr(claude)
    assert ACCESS_KEY not in repr(keys())


def test_a_deployment_serves_only_its_provider() -> None:
    with pytest.raises(ConfigurationError, match="serves AnthropicProvider"):
        GeminiProvider(deployment=keys())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="deployment, not the provider"):
        AnthropicProvider(deployment=keys(), api_key="sk-ant-x")


def test_the_first_party_key_is_never_read_or_sent() -> None:
    mock = Mock(ok())
    claude = AnthropicProvider(
        deployment=keys(),
        environ={"ANTHROPIC_API_KEY": "sk-ant-should-not-travel", "ANTHROPIC_BASE_URL": "https://elsewhere.example"},
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(mock)),
        clock=FakeClock(),
    )
    anyio.run(claude.send, request())
    sent = mock.requests[0]
    assert sent.url.host == "bedrock-runtime.us-east-1.amazonaws.com"
    assert "x-api-key" not in sent.headers
    assert b"sk-ant" not in sent.content


def test_the_headers_signed_are_exactly_the_pages() -> None:
    """Whole calls sign `accept`, `content-type`, `host` and every `x-amz-*` header; a stream the same without
    `accept`; other headers are sent unsigned."""
    mock = Mock(ok())
    claude = provider(
        BedrockDeployment("us-east-1", **credentials("session")),
        mock,
        headers={"x-amz-client-context": "onellm", "x-trace-id": "t-1"},
    )
    anyio.run(claude.send, request())
    authorization = mock.requests[0].headers["authorization"]
    assert (
        "SignedHeaders=accept;content-type;host;x-amz-client-context;x-amz-date;x-amz-security-token," in authorization
    )
    assert mock.requests[0].headers["x-amz-security-token"] == SESSION_TOKEN

    streamed = Mock(httpx.Response(200, content=bedrock_body(EVENTS)))
    claude = provider(keys(), streamed)
    anyio.run(collect, claude.stream(request()))
    assert "SignedHeaders=content-type;host;x-amz-date," in streamed.requests[0].headers["authorization"]


def test_each_retry_is_signed_afresh_at_its_own_time() -> None:
    mock = Mock(
        httpx.Response(
            429,
            json={"message": "Too many requests"},
            headers={"x-amzn-errortype": "ThrottlingException", "retry-after": "3"},
        ),
        ok(),
    )
    clock = FakeClock()
    claude = provider(keys(), mock, clock=clock, retry=RetryPolicy(max_retries=1))
    anyio.run(claude.send, request())
    first, second = (r.headers["x-amz-date"] for r in mock.requests)
    assert first == "20261105T120000Z"
    assert second == "20261105T120003Z"
    assert mock.requests[0].headers["authorization"] != mock.requests[1].headers["authorization"]


def test_a_bedrock_api_key_is_a_bearer_token_and_nothing_is_signed() -> None:
    mock = Mock(ok())
    anyio.run(provider(BedrockDeployment("us-east-1", api_key=BEDROCK_KEY), mock).send, request())
    sent = mock.requests[0]
    assert sent.headers["authorization"] == f"Bearer {BEDROCK_KEY}"
    assert "x-amz-date" not in sent.headers


@pytest.mark.parametrize(
    ("call", "what"),
    [
        (lambda p: p.count_tokens(request()), "token counting"),
        (lambda p: p.submit_batch([request()]), "message batches"),
        (lambda p: p.get_batch("msgbatch_01"), "message batches"),
        (lambda p: p.batch_results("msgbatch_01"), "message batches"),
    ],
)
def test_batches_and_token_counting_are_refused_before_sending(call: Any, what: str) -> None:
    mock = Mock(ok())
    claude = provider(keys(), mock)

    async def go() -> Any:
        return await call(claude)

    with pytest.raises(BadRequestError, match=f"Amazon Bedrock does not offer {what}"):
        anyio.run(go)
    assert mock.requests == []


def test_sampling_parameters_follow_the_providers_api_version() -> None:
    """The codec decides from `api_version` (the first-party header's value, 2026-10-21 by default, which rejects
    them); Bedrock's body carries its own `anthropic_version`, so an earlier `api_version` keeps them."""
    dropped = Mock(ok())
    answer = anyio.run(provider(keys(), dropped).send, request(temperature=0.3, top_p=0.9))
    body = httpx.Request("POST", "https://x", content=dropped.requests[0].content).read()
    assert b"temperature" not in body
    assert b"top_p" not in body
    assert [w.kind for w in answer.warnings] == ["parameter_stripped", "parameter_stripped"]
    kept = Mock(ok())
    anyio.run(provider(keys(), kept, api_version="2023-06-01").send, request(temperature=0.3, top_p=0.9))
    assert b'"temperature":0.3' in kept.requests[0].content
    assert b'"anthropic_version":"bedrock-2023-05-31"' in kept.requests[0].content
    assert "anthropic-version" not in kept.requests[0].headers


def test_prices_stay_the_first_party_ones() -> None:
    """A runtime whose `anthropic` provider runs on Bedrock prices the call from the catalog's Claude entry."""
    usage = {"input_tokens": 1000, "output_tokens": 100}
    body = {**BASIC["response"]["body"], "model": "claude-sonnet-5-5", "usage": usage}
    runtime = Runtime(environ={})
    runtime.providers.set("anthropic", provider(keys(), Mock(httpx.Response(200, json=body))))
    reference = Runtime(environ={})
    reference.providers.set(
        "anthropic",
        AnthropicProvider(
            api_key="sk-ant-test-key",
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(lambda _r: httpx.Response(200, json=body))),
        ),
    )

    async def go(rt: Runtime) -> Any:
        return await rt.generate("claude-sonnet", "Say hello there!")

    on_bedrock, first_party = anyio.run(go, runtime), anyio.run(go, reference)
    assert on_bedrock.cost == first_party.cost
    assert on_bedrock.cost.total > 0
    assert Catalog.shipped().resolve("claude-sonnet").provider == "anthropic"


# -- credentials from the environment ------------------------------------------------------------------------------


def test_from_environment_reads_the_key_pair_and_session_token() -> None:
    environ = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_SESSION_TOKEN": SESSION_TOKEN}
    found = BedrockDeployment.from_environment("us-west-2", environ=environ, inference_profile="us")
    assert found.credentials is not None
    assert found.credentials.session_token is not None
    assert found.credentials.session_token.reveal() == SESSION_TOKEN
    assert found.inference_profile == "us"
    assert found.region == "us-west-2"


def test_from_environment_prefers_the_bedrock_api_key() -> None:
    environ = {"AWS_BEARER_TOKEN_BEDROCK": BEDROCK_KEY, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": "x"}
    found = BedrockDeployment.from_environment("us-east-1", environ=environ)
    assert found.credentials is None
    assert found.secrets[0].reveal() == BEDROCK_KEY


@pytest.mark.parametrize(
    ("environ", "says"),
    [
        ({}, "No AWS credentials"),
        ({"AWS_PROFILE": "prod", "AWS_CONFIG_FILE": "/etc/aws", "AWS_REGION": "us-east-1"}, "No AWS credentials"),
        ({"AWS_ACCESS_KEY_ID": ACCESS_KEY}, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"),
        ({"AWS_SECRET_ACCESS_KEY": SECRET_KEY}, "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not"),
    ],
)
def test_from_environment_reads_only_the_four_variables(environ: dict[str, str], says: str) -> None:
    with pytest.raises(AuthError, match=says) as caught:
        BedrockDeployment.from_environment("us-east-1", environ=environ)
    for secret in (ACCESS_KEY, SECRET_KEY):
        assert secret not in str(caught.value)


def test_credentials_are_needed_and_only_one_kind() -> None:
    with pytest.raises(ConfigurationError, match="credentials"):
        BedrockDeployment("us-east-1")
    with pytest.raises(ConfigurationError, match="not both"):
        BedrockDeployment("us-east-1", api_key=BEDROCK_KEY, **credentials("keys"))


# -- a loopback server that verifies SigV4 as AWS does -------------------------------------------------------------

SERVER_NOW = dt.datetime(2026, 11, 5, 12, 0, tzinfo=dt.UTC)


def _verify(method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, str]:
    """An independent SigV4 check of a request as received (no code shared with onellm's signer)."""
    authorization = headers.get("authorization", "")
    fields = dict(part.strip().split("=", 1) for part in authorization.removeprefix("AWS4-HMAC-SHA256 ").split(","))
    access, date, region, service, _ = fields["Credential"].split("/")
    amz_date = headers["x-amz-date"]
    signed_at = dt.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
    if signed_at < SERVER_NOW - dt.timedelta(minutes=5):
        earliest = (SERVER_NOW - dt.timedelta(minutes=5)).strftime("%Y%m%dT%H%M%SZ")
        now = SERVER_NOW.strftime("%Y%m%dT%H%M%SZ")
        return 403, f"Signature expired: {amz_date} is now earlier than {earliest} ({now} - 5 min.)"
    path, _, query = target.partition("?")
    uri = "/".join(quote(segment, safe="-_.~") for segment in path.split("/"))
    pairs = sorted(
        (quote(unquote(k), safe="-_.~"), quote(unquote(v), safe="-_.~"))
        for k, _, v in (item.partition("=") for item in query.split("&") if item)
    )
    names = fields["SignedHeaders"].split(";")
    canonical = "".join(f"{name}:{' '.join(headers[name].split())}\n" for name in names)
    request = "\n".join(
        [
            method,
            uri,
            "&".join(f"{k}={v}" for k, v in pairs),
            canonical,
            ";".join(names),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{hashlib.sha256(request.encode()).hexdigest()}"
    key = f"AWS4{SECRET_KEY}".encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    if access != ACCESS_KEY or service != "bedrock" or region != "us-east-1":
        return 403, "The security token included in the request is invalid."
    if not hmac.compare_digest(expected, fields["Signature"]):
        return 403, "The request signature we calculated does not match the signature you provided."
    if "host" not in names or "content-type" not in names:
        return 403, "host and content-type must be signed"
    return 200, ""


@pytest.fixture
def aws() -> Iterator[Any]:
    received: list[tuple[str, str, dict[str, str], bytes]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {name.lower(): value for name, value in self.headers.items()}
            received.append((self.command, self.path, headers, body))
            status, message = _verify(self.command, self.path, headers, body)
            if status == 200:
                data = httpx.Response(200, json=BASIC["response"]["body"]).content
                kind = ""
            else:
                data = httpx.Response(403, json={"message": message}).content
                kind = "InvalidSignatureException"
            self.send_response(status)
            self.send_header("content-type", "application/json")
            if kind:
                self.send_header(
                    "x-amzn-errortype", f"{kind}:http://internal.amazon.com/coral/com.amazon.coral.service/"
                )
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield type("Aws", (), {"url": f"http://127.0.0.1:{server.server_address[1]}", "received": received})
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_loopback_server_verifies_the_signature_on_the_wire(aws: Any) -> None:
    deployment = BedrockDeployment(
        "us-east-1",
        credentials=AwsCredentials(ACCESS_KEY, SECRET_KEY),
        base_url=aws.url,
        model_ids={"sonnet": "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.x-v1:0"},
    )

    async def go() -> ChatResponse:
        async with AnthropicProvider(deployment=deployment, clock=FakeClock(SERVER_NOW)) as claude:
            await claude.send(request())
            return await claude.send(request("sonnet"))

    answer = anyio.run(go)
    assert answer.message.text == "Hello there!"
    assert [path for _, path, _, _ in aws.received] == [
        "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke",
        "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.x-v1%3A0/invoke",
    ]


def test_a_clock_an_hour_off_is_an_auth_error_that_says_so(aws: Any) -> None:
    deployment = BedrockDeployment("us-east-1", credentials=AwsCredentials(ACCESS_KEY, SECRET_KEY), base_url=aws.url)

    async def go() -> None:
        async with AnthropicProvider(
            deployment=deployment, clock=FakeClock(SERVER_NOW - dt.timedelta(hours=1))
        ) as claude:
            await claude.send(request())

    with pytest.raises(AuthError, match="Signature expired") as caught:
        anyio.run(go)
    assert "check this machine's clock" in str(caught.value)
    assert caught.value.status == 403
    assert len(aws.received) == 1
    for secret in SECRETS:
        assert secret not in str(caught.value)


# -- the event stream through the provider -------------------------------------------------------------------------


def run_stream(body: bytes | httpx.AsyncByteStream, deployment: BedrockDeployment | None = None) -> ChatResponse:
    answer = httpx.Response(200, content=body) if isinstance(body, bytes) else httpx.Response(200, stream=body)
    claude = provider(deployment or keys(), Mock(answer))
    return anyio.run(collect, claude.stream(request()))


def first_party(case: dict[str, Any]) -> ChatResponse:
    text = case["stream"].encode()
    claude = AnthropicProvider(
        api_key="sk-ant-test-key",
        api_version=case.get("provider", {}).get("apiVersion", "2026-10-21"),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(lambda _r: httpx.Response(200, content=text))),
    )
    return anyio.run(collect, claude.stream(request()))


def shape(response: ChatResponse) -> Any:
    return (response.message.to_data(), response.finish_reason, response.provider_finish_reason, response.extra)


@pytest.mark.parametrize("path", FIRST_PARTY_STREAMS, ids=lambda p: p.parent.name)
def test_a_bedrock_stream_builds_the_same_message_as_the_first_party_stream(path: Path) -> None:
    case = load(path)
    events = sse_events(case["stream"])
    try:
        expected: Any = shape(first_party(case))
    except OnellmError as error:
        expected = type(error)
    try:
        actual: Any = shape(run_stream(bedrock_body(events)))
    except OnellmError as error:
        actual = type(error)
    assert actual == expected


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_any_split_of_a_bedrock_stream_builds_the_same_message(data: st.DataObject) -> None:
    body = bedrock_body(EVENTS)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(body)), max_size=30))))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]

    class Chunked(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            for piece in chunks:
                yield piece

    assert shape(run_stream(Chunked())) == shape(run_stream(body))


def test_a_frame_with_a_bad_crc_is_malformed() -> None:
    frames = [chunk_frame(event) for event in EVENTS]
    damaged = bytearray(frames[2])
    damaged[-1] ^= 0xFF
    with pytest.raises(MalformedResponseError, match="Message checksum mismatch"):
        run_stream(b"".join([*frames[:2], bytes(damaged), *frames[3:]]))


def test_a_stream_that_ends_inside_a_frame_is_malformed() -> None:
    body = bedrock_body(EVENTS)
    with pytest.raises(MalformedResponseError, match="ended inside a message"):
        run_stream(body[:-7])


def test_a_stream_that_ends_before_message_stop_is_malformed() -> None:
    with pytest.raises(MalformedResponseError, match="message_stop"):
        run_stream(bedrock_body(EVENTS[:-1]))


def test_a_frame_after_message_stop_is_malformed() -> None:
    with pytest.raises(MalformedResponseError, match="after its end"):
        run_stream(bedrock_body([*EVENTS, EVENTS[-1]]))


def test_a_throttling_frame_mid_stream_is_a_rate_limit_error() -> None:
    body = bedrock_body(EVENTS[:3]) + exception_frame(
        "throttlingException", {"message": "Too many tokens, please wait before trying again."}
    )
    with pytest.raises(RateLimitError, match="throttlingException: Too many tokens") as caught:
        run_stream(body)
    assert caught.value.status == 429
