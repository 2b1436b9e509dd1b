"""Cloud deployment benchmarks, in-process (httpx.MockTransport, no server): a 2,000-event Claude stream read to the end
as Anthropic's server-sent events and as Bedrock's binary event stream, through `AnthropicProvider`; the AWS event
stream reader alone beside botocore's `EventStreamBuffer` when botocore is installed; and the per-call signing costs
(SigV4 for Bedrock, an RS256 JWT for a Vertex token exchange). Medians of interleaved rounds, with ratios.

    uv run python bench/deployments.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import base64
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec

from onellm.clock import FakeClock
from onellm.messages import Message, TextPart
from onellm.providers import ChatRequest
from onellm.providers._http import HttpCall
from onellm.providers._stream import collect
from onellm.providers.anthropic import AnthropicProvider
from onellm.providers.deployments import AwsCredentials, BedrockDeployment, GoogleServiceAccount
from onellm.providers.deployments._eventstream import EventHeader, EventStreamReader, encode_message

ROOT = Path(__file__).resolve().parents[1]
EVENTS = 2000


def events() -> list[dict[str, Any]]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_bench",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [],
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "token "}}
    return [
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *([delta] * EVENTS),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": EVENTS}},
        {"type": "message_stop"},
    ]


def sse_body() -> bytes:
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + msgspec.json.encode(e) + b"\n\n" for e in events())


def bedrock_body() -> bytes:
    headers = [
        EventHeader(":event-type", 7, "chunk"),
        EventHeader(":content-type", 7, "application/json"),
        EventHeader(":message-type", 7, "event"),
    ]
    out = []
    for event in events():
        payload = {"bytes": base64.b64encode(msgspec.json.encode(event)).decode(), "p": "abcdefghijklmnop"}
        out.append(encode_message(headers, msgspec.json.encode(payload)))
    return b"".join(out)


def chunked(body: bytes, size: int = 16384) -> httpx.AsyncByteStream:
    class Stream(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            for i in range(0, len(body), size):
                yield body[i : i + size]

    return Stream()


REQUEST = ChatRequest("claude-sonnet-4-5-20250929", [Message(user=[TextPart("Count.")])], max_output_tokens=4096)
CREDENTIALS = AwsCredentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")


def stream_case(body: bytes, deployment: BedrockDeployment | None) -> Callable[[], float]:
    def answer(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=chunked(body))

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    if deployment is None:
        provider = AnthropicProvider(api_key="bench-key", http_client=client)
    else:
        provider = AnthropicProvider(deployment=deployment, http_client=client, clock=FakeClock())

    def run() -> float:
        async def go() -> None:
            result = await collect(provider.stream(REQUEST))
            assert result.usage is not None

        started = time.perf_counter()
        anyio.run(go)
        return time.perf_counter() - started

    return run


def reader_case(body: bytes) -> Callable[[], float]:
    def run() -> float:
        started = time.perf_counter()
        reader = EventStreamReader()
        count = 0
        for i in range(0, len(body), 16384):
            count += len(reader.feed(body[i : i + 16384]))
        reader.close()
        assert count == EVENTS + 5
        return time.perf_counter() - started

    return run


def botocore_case(body: bytes) -> Callable[[], float] | None:
    try:
        from botocore.eventstream import EventStreamBuffer  # type: ignore[import-not-found]
    except ImportError:
        return None

    def run() -> float:
        started = time.perf_counter()
        buffer = EventStreamBuffer()
        count = 0
        for i in range(0, len(body), 16384):
            buffer.add_data(body[i : i + 16384])
            count += sum(1 for _ in buffer)
        assert count == EVENTS + 5
        return time.perf_counter() - started

    return run


def sign_case() -> Callable[[], float]:
    deployment = BedrockDeployment("us-east-1", credentials=CREDENTIALS)
    body = msgspec.json.encode({"messages": [{"role": "user", "content": "x" * 4000}], "max_tokens": 1024})
    call = HttpCall(
        "POST",
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke",
        "anthropic",
        headers={"content-type": "application/json", "accept": "application/json"},
        body=body,
    )
    when = FakeClock().now()

    def run() -> float:
        started = time.perf_counter()
        deployment.sign(call, when)
        return time.perf_counter() - started

    return run


def jwt_case() -> Callable[[], float]:
    account = GoogleServiceAccount.from_file(ROOT / "testdata/providers/deployments/service-account.json")
    when = FakeClock().now()

    def run() -> float:
        started = time.perf_counter()
        account.assertion(when)
        return time.perf_counter() - started

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    sse, binary = sse_body(), bedrock_body()
    rows: dict[str, tuple[str, Callable[[], float]]] = {
        "stream-2000 anthropic sse": ("stream", stream_case(sse, None)),
        "stream-2000 bedrock eventstream": (
            "stream",
            stream_case(binary, BedrockDeployment("us-east-1", credentials=CREDENTIALS)),
        ),
        "eventstream reader (onellm)": ("reader", reader_case(binary)),
        "sigv4 sign (4 KB body)": ("sign", sign_case()),
        "rs256 jwt assertion": ("jwt", jwt_case()),
    }
    boto = botocore_case(binary)
    if boto is not None:
        rows["eventstream reader (botocore)"] = ("reader", boto)
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.rounds):
        for name, (_, run) in rows.items():
            times[name].append(run())
    firsts: dict[str, float] = {}
    for name, (group, _) in rows.items():
        firsts.setdefault(group, statistics.median(times[name]))
    print(f"{'row':36} {'median':>10} {'ratio':>7}")
    for name, (group, _) in rows.items():
        median = statistics.median(times[name])
        print(f"{name:36} {median * 1000:8.3f} ms {median / firsts[group]:6.2f}x")
    print(
        f"(stream bodies: sse {len(sse)} bytes, event stream {len(binary)} bytes; ratios within each group, to its first row)"
    )


if __name__ == "__main__":
    main()
