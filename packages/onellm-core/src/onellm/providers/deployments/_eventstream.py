"""The AWS binary event stream (`application/vnd.amazon.eventstream`), read incrementally from bytes.

A message is a 12-byte prelude (total length, headers length, both big-endian 32-bit, then the CRC-32 of those eight
bytes), the headers, the payload, and the CRC-32 of everything before it. A header is a name (one length byte, UTF-8),
a type byte and a value: 0 true, 1 false, 2 a signed byte, 3 int16, 4 int32, 5 int64, 6 bytes and 7 a UTF-8 string
(each after a 16-bit length), 8 a timestamp (int64 milliseconds since the epoch), 9 a UUID (16 bytes).

The reader checks the prelude's CRC before it believes the lengths, and the message CRC before it hands a message on;
a bad checksum, a length that cannot hold a message, a header that runs past its block, and a stream that ends inside a
message are `MalformedResponseError`. Memory is bounded: a message longer than `MAX_MESSAGE_BYTES` is refused as soon
as its prelude says so.

`BedrockFrames` turns Bedrock's `InvokeModelWithResponseStream` messages into the events the Anthropic stream codec
reads: each `chunk` event carries `{"bytes": base64(event JSON)}`; an `exception` message (`throttlingException`,
`validationException`, ...) is the typed error of its status in Bedrock's service model.
"""

from __future__ import annotations

import binascii
import datetime as dt
import struct
import uuid
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import msgspec

from onellm._public import publish as _publish
from onellm.errors import MalformedResponseError, ProviderError
from onellm.providers._errors import error_from_status
from onellm.providers._sse import SseEvent

__all__ = [
    "MAX_MESSAGE_BYTES",
    "BedrockFrames",
    "EventHeader",
    "EventMessage",
    "EventStreamReader",
    "HeaderValue",
    "encode_message",
]

MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024 + 1024
"""The longest message read (AWS caps a payload at 16 MiB and the headers at 128 KiB; any longer message is damage)."""
_MAX_HEADERS_BYTES: Final = 128 * 1024
_PRELUDE: Final = 12
_MIN_MESSAGE: Final = 16

HeaderValue = bool | int | bytes | str | dt.datetime | uuid.UUID

TRUE, FALSE, BYTE, INT16, INT32, INT64, BYTES, STRING, TIMESTAMP, UUID = range(10)
_INTS = {BYTE: ">b", INT16: ">h", INT32: ">i", INT64: ">q"}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class EventHeader:
    """One header of a message: its name, its type code (0-9, above) and its value."""

    name: str
    type: int
    value: HeaderValue


@dataclass(frozen=True, slots=True)
class EventMessage:
    """One message of the stream: its headers in order and its payload."""

    headers: tuple[EventHeader, ...]
    payload: bytes

    def header(self, name: str) -> HeaderValue | None:
        """The value of the first header called `name`, or None."""
        for header in self.headers:
            if header.name == name:
                return header.value
        return None

    def text(self, name: str) -> str | None:
        """A string header's value (None when absent or not a string)."""
        value = self.header(name)
        return value if isinstance(value, str) else None


def _malformed(reason: str, provider: str | None) -> MalformedResponseError:
    return MalformedResponseError(f"the event stream is damaged: {reason}", provider=provider)


def _headers(block: bytes, provider: str | None) -> tuple[EventHeader, ...]:
    out: list[EventHeader] = []
    position = 0
    end = len(block)
    while position < end:
        size = block[position]
        position += 1
        if size == 0 or position + size + 1 > end:
            raise _malformed("a header name runs past the header block", provider)
        try:
            name = block[position : position + size].decode("utf-8")
        except UnicodeDecodeError:
            raise _malformed("a header name is not UTF-8", provider) from None
        position += size
        kind = block[position]
        position += 1
        value: HeaderValue
        if kind == TRUE:
            value = True
        elif kind == FALSE:
            value = False
        elif kind in _INTS:
            fmt = _INTS[kind]
            width = struct.calcsize(fmt)
            if position + width > end:
                raise _malformed(f"header {name!r} runs past the header block", provider)
            value = struct.unpack_from(fmt, block, position)[0]
            position += width
        elif kind in (BYTES, STRING):
            if position + 2 > end:
                raise _malformed(f"header {name!r} runs past the header block", provider)
            length = struct.unpack_from(">H", block, position)[0]
            position += 2
            if position + length > end:
                raise _malformed(f"header {name!r} runs past the header block", provider)
            raw = block[position : position + length]
            position += length
            if kind == BYTES:
                value = raw
            else:
                try:
                    value = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise _malformed(f"header {name!r} is not UTF-8", provider) from None
        elif kind == TIMESTAMP:
            if position + 8 > end:
                raise _malformed(f"header {name!r} runs past the header block", provider)
            millis = struct.unpack_from(">q", block, position)[0]
            position += 8
            try:
                value = _EPOCH + dt.timedelta(milliseconds=millis)
            except OverflowError:
                raise _malformed(f"header {name!r} is a timestamp out of range", provider) from None
        elif kind == UUID:
            if position + 16 > end:
                raise _malformed(f"header {name!r} runs past the header block", provider)
            value = uuid.UUID(bytes=bytes(block[position : position + 16]))
            position += 16
        else:
            raise _malformed(f"header {name!r} has unknown type {kind}", provider)
        out.append(EventHeader(name, kind, value))
    return tuple(out)


class EventStreamReader:
    """Feed bytes as they arrive, get the whole messages they complete; `close()` at the end of the body.

    <!-- skip: next "a sketch: `body` stands for the chunks of a response" -->

    ```python
    reader = EventStreamReader()
    for chunk in body:
        for message in reader.feed(chunk):
            ...
    reader.close()  # MalformedResponseError when the body ended inside a message
    ```
    """

    __slots__ = ("_buffer", "_expected", "_known", "_provider")

    def __init__(self, *, provider: str | None = None) -> None:
        self._buffer = bytearray()
        self._expected = 0  # the length of the message being read, once its prelude was checked
        self._provider = provider
        self._known: dict[bytes, tuple[EventHeader, ...]] = {}
        """Header blocks already read: a service sends the same few (`chunk` events) again and again."""

    @property
    def pending(self) -> int:
        """Bytes held of a message not yet whole."""
        return len(self._buffer)

    def feed(self, chunk: bytes) -> list[EventMessage]:
        buffer = self._buffer
        data: bytes | bytearray
        if buffer:
            buffer += chunk
            data = buffer
        else:
            data = chunk  # nothing held: read the chunk where it is, and keep only what it leaves unfinished
        out: list[EventMessage] = []
        with memoryview(data) as view:
            start, failure = self._read(view, len(data), out)
        if failure is not None:
            raise self._fail(failure)
        if data is buffer:
            if start:
                del buffer[:start]
        elif start < len(data):
            buffer += data[start:]
        return out

    def _read(self, view: memoryview, available: int, out: list[EventMessage]) -> tuple[int, str | None]:
        """Append the whole messages in `view` to `out`: (where the unread part starts, why the stream is damaged)."""
        start = 0
        known = self._known
        crc32 = zlib.crc32
        unpack = struct.unpack_from
        while True:
            if not self._expected:
                if available - start < _PRELUDE:
                    return start, None
                total, headers_length, crc = unpack(">III", view, start)
                if crc32(view[start : start + 8]) != crc:
                    return start, "Prelude checksum mismatch"
                if total < _MIN_MESSAGE or total > MAX_MESSAGE_BYTES:
                    return start, f"a message claims {total} bytes"
                if headers_length > min(total - _MIN_MESSAGE, _MAX_HEADERS_BYTES):
                    return start, f"a message of {total} bytes claims {headers_length} bytes of headers"
                self._expected = total
            total = self._expected
            if available - start < total:
                return start, None
            end = start + total
            if crc32(view[start : end - 4]) != unpack(">I", view, end - 4)[0]:
                return start, "Message checksum mismatch"
            headers_length = unpack(">I", view, start + 4)[0]
            body = start + _PRELUDE
            block = bytes(view[body : body + headers_length])
            headers = known.get(block)
            if headers is None:
                headers = _headers(block, self._provider)
                if len(block) <= 1024 and len(known) < 32:
                    known[block] = headers
            out.append(EventMessage(headers, bytes(view[body + headers_length : end - 4])))
            self._expected = 0
            start = end

    def close(self) -> list[EventMessage]:
        """The end of the body: a message left unfinished is `MalformedResponseError`."""
        if self._buffer:
            held = len(self._buffer)
            self._buffer.clear()
            self._expected = 0
            raise _malformed(f"the body ended inside a message ({held} bytes of it arrived)", self._provider)
        return []

    def _fail(self, reason: str) -> MalformedResponseError:
        self._buffer.clear()
        self._expected = 0
        return _malformed(reason, self._provider)


def _encode_header(header: EventHeader) -> bytes:
    name = header.name.encode("utf-8")
    if not 0 < len(name) < 256:
        raise ValueError(f"a header name is 1 to 255 bytes: {header.name!r}")
    kind = header.type
    value = header.value
    if kind in (TRUE, FALSE):
        data = b""
    elif kind in _INTS:
        data = struct.pack(_INTS[kind], value)
    elif kind in (BYTES, STRING):
        raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)  # type: ignore[arg-type]
        data = struct.pack(">H", len(raw)) + raw
    elif kind == TIMESTAMP:
        if not isinstance(value, dt.datetime):
            raise TypeError("a timestamp header holds a datetime")
        delta = value - _EPOCH
        millis = (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
        data = struct.pack(">q", millis)
    elif kind == UUID:
        if not isinstance(value, uuid.UUID):
            raise TypeError("a uuid header holds a uuid.UUID")
        data = value.bytes
    else:
        raise ValueError(f"unknown header type {kind}")
    return bytes([len(name)]) + name + bytes([kind]) + data


def encode_message(headers: Iterable[EventHeader], payload: bytes) -> bytes:
    """One message in the binary form (the reader's inverse; used to write fixtures and tests)."""
    block = b"".join(_encode_header(header) for header in headers)
    total = _PRELUDE + len(block) + len(payload) + 4
    prelude = struct.pack(">II", total, len(block))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + block + payload
    return message + struct.pack(">I", zlib.crc32(message))


# -- Bedrock ---------------------------------------------------------------------------------------------------------

_EXCEPTION_STATUS: Final = {
    "accessDeniedException": 403,
    "internalServerException": 500,
    "modelErrorException": 424,
    "modelNotReadyException": 429,
    "modelStreamErrorException": 424,
    "modelTimeoutException": 408,
    "resourceNotFoundException": 404,
    "serviceQuotaExceededException": 400,
    "serviceUnavailableException": 503,
    "throttlingException": 429,
    "validationException": 400,
}
"""Each exception of `InvokeModelWithResponseStream` and its HTTP status, from Bedrock Runtime's service model
(botocore `bedrock-runtime/2023-09-30/service-2.json`, `error.httpStatusCode`)."""


class _Chunk(msgspec.Struct):
    bytes: str


class _Problem(msgspec.Struct):
    message: str | None = None
    Message: str | None = None  # as some AWS services spell it
    originalStatusCode: int | None = None
    originalMessage: str | None = None


_chunk = msgspec.json.Decoder(_Chunk)
_problem = msgspec.json.Decoder(_Problem)


class BedrockFrames:
    """The frame reader for Bedrock's `invoke-with-response-stream`, in place of the server-sent events reader: bytes
    in, the Anthropic stream events each `chunk` carries out (as `SseEvent`s without a name). An `exception` message
    raises the typed error of its status; an `error` message raises a `ProviderError` naming its code."""

    __slots__ = ("_last", "_provider", "_reader")

    def __init__(self, *, provider: str | None = None) -> None:
        self._reader = EventStreamReader(provider=provider)
        self._provider = provider
        self._last: tuple[tuple[EventHeader, ...], str | None, str | None] = ((), None, None)

    def feed(self, chunk: bytes) -> list[SseEvent]:
        messages = self._reader.feed(chunk)
        return [event for message in messages if (event := self._event(message)) is not None]

    def read(self, chunk: bytes) -> tuple[list[bytes], list[str | None] | None]:
        return [event.data for event in self.feed(chunk)], None

    def close(self) -> list[SseEvent]:
        self._reader.close()
        return []

    def _event(self, message: EventMessage) -> SseEvent | None:
        headers, kind, event_type = self._last
        if message.headers is not headers:  # the reader hands the same tuple for the same header block
            kind, event_type = message.text(":message-type"), message.text(":event-type")
            self._last = (message.headers, kind, event_type)
        if kind == "event":
            if event_type != "chunk":
                return None  # an event type added later carries nothing the answer needs
            try:
                encoded = _chunk.decode(message.payload).bytes
                return SseEvent(binascii.a2b_base64(encoded, strict_mode=True))
            except (msgspec.DecodeError, msgspec.ValidationError, binascii.Error, ValueError) as error:
                raise MalformedResponseError(
                    f"a chunk of the event stream does not hold base64 bytes: {error}", provider=self._provider
                ) from None
        if kind == "exception":
            raise self._exception(message)
        if kind == "error":
            code = message.text(":error-code") or "error"
            text = message.text(":error-message") or "the event stream reported an error"
            status = _EXCEPTION_STATUS.get(code[:1].lower() + code[1:])
            if status is not None:
                return self._raise(status, text, code, message.payload)
            raise ProviderError(f"{code}: {text}", provider=self._provider)
        raise MalformedResponseError(
            f"an event stream message of type {kind!r}, not event, exception or error", provider=self._provider
        )

    def _exception(self, message: EventMessage) -> ProviderError:
        name = message.text(":exception-type") or "exception"
        try:
            problem = _problem.decode(message.payload) if message.payload else _Problem()
        except (msgspec.DecodeError, msgspec.ValidationError):
            problem = _Problem(message=message.payload.decode("utf-8", "replace")[:500])
        text = problem.message or problem.Message or name
        if problem.originalMessage and problem.originalMessage not in text:
            text = f"{text} ({problem.originalMessage})"
        status = _EXCEPTION_STATUS.get(name, 500)
        if name == "modelStreamErrorException" and problem.originalStatusCode:
            status = problem.originalStatusCode
        return self._build(status, text, name, message.payload)

    def _raise(self, status: int, text: str, code: str, payload: bytes) -> SseEvent:
        raise self._build(status, text, code, payload)

    def _build(self, status: int, text: str, code: str, payload: bytes) -> ProviderError:
        return error_from_status(
            status,
            f"{code}: {text}",
            provider=self._provider or "anthropic",
            body=payload.decode("utf-8", "replace") if payload else None,
            code=code,
        )


_publish("onellm.providers.deployments", EventStreamReader)
