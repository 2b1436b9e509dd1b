"""An incremental server-sent events reader over bytes.

Lines end in LF, CRLF or CR; a blank line dispatches the event; `:` starts a comment; several `data:` lines join with
LF; `retry:` takes digits only; unknown fields are ignored; one byte-order mark at the very start is dropped (the
WHATWG event-stream rules). Event data stays bytes, so a
JSON payload is decoded by msgspec straight from the receive buffer without a detour through `str`.

Two rules are stricter than a browser's, because a model's answer must not be silently cut short: a stream that ends
inside an event is `MalformedResponseError`, and so is an event larger than the reader's limit (memory stays bounded
whatever the server sends).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator

import msgspec

from onellm.errors import MalformedResponseError

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "SseDecoder", "SseEvent", "aiter_sse", "iter_sse"]

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024
_BOM = b"\xef\xbb\xbf"


class SseEvent(msgspec.Struct, frozen=True):
    """One dispatched event. `data` is the joined data lines as bytes; `event` is None when the stream named none."""

    data: bytes
    event: str | None = None
    id: str | None = None
    retry: int | None = None


class SseDecoder:
    """Feed bytes as they arrive, get the events they complete; `close()` at the end of the stream.

    Line ends are made LF first (CRLF and a lone CR both end a line, so no data can hold either), with a CR that ends a
    chunk held back until the next byte says whether it began a CRLF; a byte-order mark that opens the stream is
    dropped. The event reader then cuts whole events at blank lines. The decoder keeps only the unfinished event, so
    memory is bounded by `max_event_bytes`.
    """

    __slots__ = (
        "_buffer",
        "_data",
        "_event",
        "_held_cr",
        "_id",
        "_last_id",
        "_max",
        "_names",
        "_pending",
        "_provider",
        "_retry",
        "_size",
        "_started",
    )

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, provider: str | None = None) -> None:
        self._buffer = b""
        self._held_cr = False
        self._started = False
        self._data: list[bytes] = []
        self._event: str | None = None
        self._id: str | None = None
        self._last_id: str | None = None
        self._retry: int | None = None
        self._pending = False  # a field line has been read since the last dispatch
        self._size = 0
        self._max = max_event_bytes
        self._provider = provider
        self._names: dict[bytes, str] = {}

    @property
    def last_event_id(self) -> str | None:
        """The last `id:` the stream set, for a reconnecting client's `Last-Event-ID` header."""
        return self._last_id

    def feed(self, chunk: bytes) -> list[SseEvent]:
        buffer = self._take(chunk)
        if not buffer:
            return []
        events: list[SseEvent] = []
        self._keep(buffer, self._lines_lf(buffer, events))
        return events

    def read(self, chunk: bytes) -> tuple[list[bytes], list[str | None] | None]:
        """What `feed` gives, without an `SseEvent` each: the data of each event `chunk` completes, and their `event:`
        names (None when no event has one). For a reader that needs neither `id` nor `retry` (a model's stream).

        A run of events in one of the two shapes model servers send (`data: ...` alone, or one `event: ...` line
        before it) is cut in a few passes over the whole buffer; anything else goes the way `feed` goes."""
        if self._started and not self._held_cr and b"\r" in chunk and chunk[-1] != 13:
            crlf = self._crlf_run(chunk)
            if crlf is not None:
                return crlf, None
        buffer = self._take(chunk)
        if not buffer:
            return [], None
        found: tuple[list[bytes], list[str | None] | None, int] | None = None
        if buffer[:6] == b"data: ":
            found = self._plain_run(buffer)
        if found is None and buffer[:7] == b"event: ":
            found = self._named_run(buffer)
        if found is not None:
            datas, names, position = found
        else:
            events: list[SseEvent] = []
            position = self._lines_lf(buffer, events)
            datas = [event.data for event in events]
            names = [event.event for event in events] if any(e.event is not None for e in events) else None
        self._keep(buffer, position)
        return datas, names

    def _take(self, chunk: bytes) -> bytes:
        """The buffer to cut: what was kept of the last chunk and `chunk`, its line ends made LF."""
        if not chunk:
            return b""
        if not self._started:
            chunk = self._opening(chunk)
            if not chunk:
                return b""
        if self._held_cr:
            self._held_cr = False
            chunk = b"\n" + (chunk[1:] if chunk[0] == 10 else chunk)
        if b"\r" in chunk:
            if chunk[-1] == 13:  # perhaps the first half of a CRLF: decided by the next byte
                self._held_cr = True
                chunk = chunk[:-1]
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        return self._buffer + chunk if self._buffer else chunk

    def _keep(self, buffer: bytes, position: int) -> None:
        rest = buffer[position:]
        if len(rest) > self._max:
            self._too_large()
        self._buffer = rest

    def _plain_run(self, buffer: bytes) -> tuple[list[bytes], None, int] | None:
        """Whole events that are each one `data: ` line, cut at once; None when the buffer holds anything else."""
        end = buffer.rfind(b"\n\n")
        if end < 0 or end > self._max:
            return None
        region = buffer[6:end]
        datas = region.split(b"\n\ndata: ")
        # every line end belongs to a separator: no event has a second line, a comment or another field
        if region.count(b"\n") != 2 * len(datas) - 2:
            return None
        return datas, None, end + 2

    def _crlf_run(self, chunk: bytes) -> list[bytes] | None:
        """`_plain_run` for a stream whose lines end in CRLF (Gemini's), cut without making its line ends LF first;
        None when the buffer holds anything else (and nothing was changed)."""
        # what was kept of the last chunk has LF line ends: CRLF ones mean the same
        buffer = self._buffer.replace(b"\n", b"\r\n") + chunk if self._buffer else chunk
        if buffer[:6] != b"data: ":
            return None
        end = buffer.rfind(b"\r\n\r\n")
        if end < 0 or end > self._max:
            return None
        region = buffer[6:end]
        datas = region.split(b"\r\n\r\ndata: ")
        ends = 2 * len(datas) - 2
        if region.count(b"\n") != ends or region.count(b"\r") != ends:
            return None
        rest = buffer[end + 4 :]
        self._keep(rest.replace(b"\r\n", b"\n").replace(b"\r", b"\n"), 0)
        return datas

    def _named_run(self, buffer: bytes) -> tuple[list[bytes], list[str | None], int] | None:
        """Whole events that are each an `event: ` line and one `data: ` line, cut at once; None when the buffer holds
        anything else."""
        end = buffer.rfind(b"\n\n")
        if end < 0 or end > self._max:
            return None
        region = buffer[7:end]
        pieces = region.split(b"\n\nevent: ")
        if region.count(b"\n") != 3 * len(pieces) - 2:  # one line end in each event, two in each separator
            return None
        known = self._names
        datas: list[bytes] = []
        names: list[str | None] = []
        for piece in pieces:
            raw, found, data = piece.partition(b"\ndata: ")
            if not found:
                return None
            name = known.get(raw)
            if name is None:
                if len(known) >= 256:
                    return None
                name = known[raw] = self._text(raw, "event")
            names.append(name)
            datas.append(data)
        return datas, names, end + 2

    def _opening(self, chunk: bytes) -> bytes:
        """The stream's first bytes: a UTF-8 byte-order mark is dropped (held until three bytes say whether it is
        one)."""
        buffer = self._buffer + chunk if self._buffer else chunk
        if len(buffer) < 3 and _BOM.startswith(buffer):
            self._buffer = buffer
            return b""
        self._buffer = b""
        self._started = True
        return buffer[3:] if buffer.startswith(_BOM) else buffer

    def close(self) -> list[SseEvent]:
        """End of stream: a line without its terminator still counts, but an event never closed by a blank line fails."""
        events: list[SseEvent] = []
        buffer, self._buffer = self._buffer, b""
        if not self._started:
            self._started = True
            if buffer == _BOM[: len(buffer)]:
                buffer = b""
        if self._held_cr:
            self._held_cr = False
            buffer += b"\n"
        if buffer:
            lines = buffer.split(b"\n")
            for line in lines[:-1]:
                self._line(line, events)
            if lines[-1]:
                self._line(lines[-1], events)
        if self._pending:
            self._reset()
            raise MalformedResponseError("the event stream ended inside an event", provider=self._provider)
        return events

    # -- events ---------------------------------------------------------------------------------------------------

    def _lines_lf(self, buffer: bytes, events: list[SseEvent]) -> int:
        """Cut the buffer into whole events at blank lines and keep the unfinished last one for the next chunk. The
        common shapes (`data: ...` alone, or one `event: ...` line before it) are dispatched without going line by
        line."""
        blocks = buffer.split(b"\n\n")
        rest = blocks.pop()
        append = events.append
        for block in blocks:
            if block[:6] == b"data: " and b"\n" not in block:
                if len(block) - 5 > self._max:
                    self._too_large()
                append(SseEvent(block[6:], None, self._id))
                continue
            if block[:7] == b"event: ":
                newline = block.find(b"\n")
                if newline > 0 and block[newline + 1 : newline + 7] == b"data: " and block.find(b"\n", newline + 1) < 0:
                    raw = block[7:newline]
                    name = self._names.get(raw)
                    if name is None and len(self._names) < 256:
                        name = self._names[raw] = self._text(raw, "event")
                    if name is not None:
                        if len(block) - newline - 6 > self._max:
                            self._too_large()
                        append(SseEvent(block[newline + 7 :], name, self._id))
                        continue
            for line in block.split(b"\n"):
                self._line(line, events)
            self._line(b"", events)
        return len(buffer) - len(rest)

    # -- fields ---------------------------------------------------------------------------------------------------

    def _line(self, line: bytes, events: list[SseEvent]) -> None:
        if not line:
            if self._data:
                events.append(self._dispatch())
            else:
                self._reset()
            return
        if line[0] == 58:  # ":" comment
            return
        self._pending = True
        colon = line.find(b":")
        if colon < 0:
            name, value = line, b""
        else:
            name = line[:colon]
            value = line[colon + 2 :] if line[colon + 1 : colon + 2] == b" " else line[colon + 1 :]
        if name == b"data":
            self._size += len(value) + 1
            if self._size > self._max:
                self._too_large()
            self._data.append(value)
        elif name == b"event":
            self._event = self._text(value, "event")
        elif name == b"id":
            if b"\x00" not in value:
                self._id = self._text(value, "id")
                self._last_id = self._id
        elif name == b"retry" and value.isdigit():
            self._retry = int(value)

    def _dispatch(self) -> SseEvent:
        data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
        event = SseEvent(data, self._event, self._id, self._retry)
        self._reset()
        return event

    def _reset(self) -> None:
        self._data = []
        self._event = None
        self._retry = None
        self._pending = False
        self._size = 0

    def _text(self, value: bytes, field: str) -> str:
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as error:
            raise MalformedResponseError(
                f"the event stream's {field!r} field is not valid UTF-8", provider=self._provider
            ) from error

    def _too_large(self) -> None:
        self._reset()
        self._buffer = b""
        raise MalformedResponseError(
            f"an event in the stream is larger than {self._max} bytes", provider=self._provider
        )


def iter_sse(chunks: Iterable[bytes], **options: object) -> Iterator[SseEvent]:
    """The events of a whole byte stream given as chunks."""
    decoder = SseDecoder(**options)  # type: ignore[arg-type]
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.close()


async def aiter_sse(chunks: AsyncIterable[bytes], **options: object) -> AsyncIterator[SseEvent]:
    """The events of a byte stream as it arrives (for example `response.aiter_raw()`)."""
    decoder = SseDecoder(**options)  # type: ignore[arg-type]
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event
