"""The AWS binary event stream: the vectors of `testdata/aws-eventstream` (aws-sdk-go's), any chunking of a stream,
damage of every kind, and Bedrock's frames checked against Bedrock Runtime's service model."""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
import uuid
import zlib
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onellm.errors import (
    BadRequestError,
    ContextOverflowError,
    MalformedResponseError,
    OverloadedError,
    ProviderError,
    RateLimitError,
)
from onellm.providers.deployments._eventstream import (
    _EXCEPTION_STATUS,
    MAX_MESSAGE_BYTES,
    BedrockFrames,
    EventHeader,
    EventMessage,
    EventStreamReader,
    encode_message,
)

TESTDATA = Path(__file__).resolve().parents[4] / "testdata"
VECTORS = TESTDATA / "aws-eventstream"
POSITIVE = sorted((VECTORS / "encoded" / "positive").iterdir())
NEGATIVE = sorted((VECTORS / "encoded" / "negative").iterdir())


def as_vector(message: EventMessage) -> list[dict[str, Any]]:
    """The headers in the vectors' JSON form (strings, bytes and uuids base64, timestamps in milliseconds)."""
    out: list[dict[str, Any]] = []
    for header in message.headers:
        value: Any = header.value
        if isinstance(value, str):
            value = base64.b64encode(value.encode()).decode()
        elif isinstance(value, bytes):
            value = base64.b64encode(value).decode()
        elif isinstance(value, uuid.UUID):
            value = base64.b64encode(value.bytes).decode()
        elif isinstance(value, dt.datetime):
            value = int((value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).total_seconds() * 1000)
        out.append({"name": header.name, "type": header.type, "value": value})
    return out


def read_all(reader: EventStreamReader, chunks: list[bytes]) -> list[EventMessage]:
    messages = [message for chunk in chunks for message in reader.feed(chunk)]
    reader.close()
    return messages


def signed32(value: int) -> int:
    return struct.unpack(">i", struct.pack(">I", value))[0]


@pytest.mark.parametrize("path", POSITIVE, ids=lambda p: p.name)
def test_every_valid_vector_decodes(path: Path) -> None:
    data = path.read_bytes()
    expected = json.loads((VECTORS / "decoded" / "positive" / path.name).read_text())
    reader = EventStreamReader()
    messages = reader.feed(data)
    assert reader.close() == []
    assert len(messages) == 1
    message = messages[0]
    assert as_vector(message) == expected["headers"]
    assert base64.b64encode(message.payload).decode() == expected["payload"]
    total, headers_length, prelude_crc = struct.unpack(">III", data[:12])
    assert (total, headers_length, signed32(prelude_crc)) == (
        expected["total_length"],
        expected["headers_length"],
        expected["prelude_crc"],
    )
    assert signed32(struct.unpack(">I", data[-4:])[0]) == expected["message_crc"]


@pytest.mark.parametrize("path", POSITIVE, ids=lambda p: p.name)
def test_the_encoder_writes_every_vector_byte_for_byte(path: Path) -> None:
    """The encoder the fixtures are written with is the reader's exact inverse on AWS's own vectors."""
    (message,) = EventStreamReader().feed(path.read_bytes())
    assert encode_message(message.headers, message.payload) == path.read_bytes()


@pytest.mark.parametrize("path", NEGATIVE, ids=lambda p: p.name)
def test_every_corrupted_vector_is_malformed(path: Path) -> None:
    reason = (VECTORS / "decoded" / "negative" / path.name).read_text().strip()
    reader = EventStreamReader(provider="anthropic")
    with pytest.raises(MalformedResponseError, match=reason) as caught:
        read_all(reader, [path.read_bytes()])
    assert caught.value.provider == "anthropic"


@pytest.mark.parametrize("path", NEGATIVE, ids=lambda p: p.name)
def test_every_corrupted_vector_fails_byte_by_byte_too(path: Path) -> None:
    reason = (VECTORS / "decoded" / "negative" / path.name).read_text().strip()
    reader = EventStreamReader()
    with pytest.raises(MalformedResponseError, match=reason):
        read_all(reader, [bytes([byte]) for byte in path.read_bytes()])


STREAM = b"".join(p.read_bytes() for p in POSITIVE) * 2
WHOLE = EventStreamReader().feed(STREAM)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=60))
def test_any_split_of_a_valid_stream_decodes_the_same(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    reader = EventStreamReader()
    messages = [message for chunk in chunks for message in reader.feed(chunk)]
    assert reader.close() == []
    assert messages == WHOLE
    assert len(messages) == 2 * len(POSITIVE)


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=len(STREAM) - 1), st.integers(min_value=0, max_value=7))
def test_any_flipped_bit_is_caught(position: int, bit: int) -> None:
    """One bit changed anywhere is a checksum mismatch (or a length the prelude's checksum refuses): never a message
    that differs from what was sent."""
    damaged = bytearray(STREAM)
    damaged[position] ^= 1 << bit
    reader = EventStreamReader()
    with pytest.raises(MalformedResponseError):
        read_all(reader, [bytes(damaged)])


@pytest.mark.parametrize("keep", [1, 11, 12, 30])
def test_a_stream_that_ends_inside_a_message_is_malformed(keep: int) -> None:
    reader = EventStreamReader()
    data = POSITIVE[0].read_bytes()
    assert reader.feed(data[:keep]) == []
    with pytest.raises(MalformedResponseError, match="ended inside a message"):
        reader.close()


def test_a_message_longer_than_the_limit_is_refused_from_its_prelude() -> None:
    prelude = struct.pack(">II", MAX_MESSAGE_BYTES + 1, 0)
    prelude += struct.pack(">I", zlib.crc32(prelude))
    with pytest.raises(MalformedResponseError, match="claims"):
        EventStreamReader().feed(prelude)


def test_headers_that_run_past_their_block_are_malformed() -> None:
    block = bytes([4]) + b"name" + bytes([7]) + struct.pack(">H", 50) + b"short"
    total = 12 + len(block) + 4
    prelude = struct.pack(">II", total, len(block))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + block
    message += struct.pack(">I", zlib.crc32(message))
    with pytest.raises(MalformedResponseError, match="runs past"):
        EventStreamReader().feed(message)


# -- Bedrock frames ------------------------------------------------------------------------------------------------


def event(kind: str, payload: Any, **headers: str) -> bytes:
    fields = [EventHeader(":message-type", 7, kind)]
    fields += [EventHeader(f":{name.replace('_', '-')}", 7, value) for name, value in headers.items()]
    fields.append(EventHeader(":content-type", 7, "application/json"))
    return encode_message(fields, msgspec.json.encode(payload))


def chunk(data: dict[str, Any]) -> bytes:
    encoded = base64.b64encode(msgspec.json.encode(data)).decode()
    return event("event", {"bytes": encoded, "p": "abcdefghijklmnop"}, event_type="chunk")


def test_chunks_become_the_messages_stream_events() -> None:
    frames = BedrockFrames(provider="anthropic")
    body = chunk({"type": "ping"}) + chunk({"type": "message_stop"})
    events = frames.feed(body[:7]) + frames.feed(body[7:])
    assert [json.loads(e.data) for e in events] == [{"type": "ping"}, {"type": "message_stop"}]
    assert all(e.event is None for e in events)
    assert frames.close() == []


@pytest.mark.parametrize(
    ("name", "message", "kind"),
    [
        ("throttlingException", "Too many requests, please wait before trying again.", RateLimitError),
        ("validationException", "Input is too long for requested model.", ContextOverflowError),
        ("validationException", "messages.0: field required", BadRequestError),
        ("serviceUnavailableException", "Service unavailable.", OverloadedError),
        ("modelStreamErrorException", "The model stream failed.", ProviderError),
        ("internalServerException", "Internal failure.", ProviderError),
    ],
)
def test_exception_frames_are_typed_errors(name: str, message: str, kind: type[ProviderError]) -> None:
    frames = BedrockFrames(provider="anthropic")
    with pytest.raises(kind) as caught:
        frames.feed(event("exception", {"message": message}, exception_type=name))
    assert type(caught.value) is kind
    assert name in str(caught.value)
    assert message in str(caught.value)
    assert caught.value.status == _EXCEPTION_STATUS[name]


def test_a_model_stream_error_keeps_the_original_status() -> None:
    frames = BedrockFrames(provider="anthropic")
    payload = {"message": "Stream failed", "originalStatusCode": 529, "originalMessage": "Overloaded"}
    with pytest.raises(OverloadedError, match="Overloaded") as caught:
        frames.feed(event("exception", payload, exception_type="modelStreamErrorException"))
    assert caught.value.status == 529


def test_an_error_message_names_its_code() -> None:
    frames = BedrockFrames(provider="anthropic")
    with pytest.raises(ProviderError, match="InternalError: boom"):
        frames.feed(event("error", {}, error_code="InternalError", error_message="boom"))


@pytest.mark.parametrize(
    "payload",
    [b"not json", b'{"bytes": 5}', b'{"bytes": "***"}', b"{}"],
)
def test_a_chunk_that_does_not_hold_base64_bytes_is_malformed(payload: bytes) -> None:
    fields = [
        EventHeader(":message-type", 7, "event"),
        EventHeader(":event-type", 7, "chunk"),
    ]
    with pytest.raises(MalformedResponseError, match="base64"):
        BedrockFrames().feed(encode_message(fields, payload))


def test_an_unknown_message_type_is_malformed_and_an_unknown_event_is_skipped() -> None:
    frames = BedrockFrames()
    assert frames.feed(event("event", {"x": 1}, event_type="metadata")) == []
    with pytest.raises(MalformedResponseError, match="not event, exception or error"):
        frames.feed(event("surprise", {}))


SERVICE = json.loads((TESTDATA / "aws-bedrock-runtime" / "service-2.json").read_text())


def test_the_exception_table_is_the_service_models() -> None:
    """Every member of the `ResponseStream` but `chunk` is an exception, with the status the model gives it; every
    error `InvokeModelWithResponseStream` lists is in the table."""
    shapes = SERVICE["shapes"]
    stream = shapes["ResponseStream"]["members"]
    assert stream["chunk"]["shape"] == "PayloadPart"
    for member, spec in stream.items():
        if member == "chunk":
            continue
        assert _EXCEPTION_STATUS[member] == shapes[spec["shape"]]["error"]["httpStatusCode"], member
    for error in SERVICE["operations"]["InvokeModelWithResponseStream"]["errors"]:
        shape = error["shape"]
        member = shape[0].lower() + shape[1:]
        assert _EXCEPTION_STATUS[member] == shapes[shape]["error"]["httpStatusCode"], member
