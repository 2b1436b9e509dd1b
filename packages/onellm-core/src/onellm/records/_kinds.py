"""The record kinds: one typed class per kind, each reading and writing the JSON-lines shape of `spec/records.md`."""

from __future__ import annotations

import dataclasses
import logging
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import msgspec

from onellm._files import kind_of, storage_error
from onellm.errors import BadDefinitionError, StorageError
from onellm.messages import Message, Timestamp, ToolCall, Usage

__all__ = [
    "RECORD_KINDS",
    "ApprovalRecord",
    "CompactionRecord",
    "ErrorRecord",
    "HookRecord",
    "InferenceRecord",
    "MessageRecord",
    "RawTurnRecord",
    "Record",
    "RunRecord",
    "TaskCompletionRecord",
    "ToolCallRecord",
    "encode_record",
    "parse_line",
    "read_records",
    "total_cost",
]

_log = logging.getLogger("onellm.records")
_ENCODER = msgspec.json.Encoder(decimal_format="number")
_DECODER = msgspec.json.Decoder(float_hook=Decimal)

# How a field's value is read and written: "str", "number", "any", "strings", "decimal", "message", "call", "usage".
_Field = tuple[str, str, str]


def _bad(message: str, path: str) -> BadDefinitionError:
    return BadDefinitionError(message, path=path)


def _read(codec: str, value: Any, path: str) -> Any:
    if value is None:
        return None
    if codec == "str":
        if type(value) is not str:
            raise _bad("expected a string", path)
        return value
    if codec == "number":
        if type(value) is bool or not isinstance(value, int | Decimal):
            raise _bad("expected a number", path)
        return value
    if codec == "decimal":
        if type(value) is bool or not isinstance(value, int | Decimal):
            raise _bad("expected a number", path)
        return Decimal(value)
    if codec == "strings":
        if not isinstance(value, list) or any(type(v) is not str for v in value):
            raise _bad("expected a list of strings", path)
        return list(value)
    if codec == "message":
        return Message.from_data(_mapping(value, path), path)
    if codec == "call":
        return ToolCall.from_data(_mapping(value, path), path)
    if codec == "usage":
        return Usage.from_data(_mapping(value, path), path)
    return value


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _bad("expected an object", path)
    return value


def _write(codec: str, value: Any) -> Any:
    if codec in ("message", "call", "usage"):
        return value.to_data()
    if codec == "strings":
        return list(value)
    return value


@dataclass(kw_only=True)
class Record:
    """What every record has: `time` (RFC 3339 UTC), the instance and message it belongs to, and unknown fields."""

    kind: ClassVar[str] = ""
    _fields: ClassVar[tuple[_Field, ...]] = ()

    time: Timestamp | None = None
    """When it happened, from the runtime's clock; a sink stamps a record that has none."""
    instance_id: str | None = None
    """The instance; None for runtime-level records (written to `_runtime.jsonl`)."""
    message_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields this version does not know, kept as read."""

    def __post_init__(self) -> None:
        stamp: Any = self.time
        if stamp is not None and type(stamp) is not Timestamp:
            self.time = Timestamp.coerce(stamp)

    def stamped(self, now: datetime | Timestamp) -> Record:
        """This record with `time` set (a copy), when it has none."""
        if self.time is not None:
            return self
        return dataclasses.replace(self, time=Timestamp.coerce(now))

    def to_data(self) -> dict[str, Any]:
        """The record as one JSON object's plain data, keys in the spec's order, unknown fields last."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.time is not None:
            out["time"] = self.time.text
        if self.instance_id is not None:
            out["instanceId"] = self.instance_id
        if self.message_id is not None:
            out["messageId"] = self.message_id
        for key, attr, codec in self._fields:
            value = getattr(self, attr)
            if value is not None:
                out[key] = _write(codec, value)
        for key, value in self.extra.items():
            if key not in out:
                out[key] = value
        return out

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Record:
        """Read a record of this kind from plain data; fields it does not know go to `extra`."""
        known = {key: (attr, codec) for key, attr, codec in cls._fields}
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            if key == "kind":
                continue
            if key == "time":
                if value is not None:
                    if type(value) is not str:
                        raise _bad("expected an RFC 3339 time", "time")
                    try:
                        values["time"] = Timestamp(value)
                    except ValueError as exc:
                        raise _bad(str(exc), "time") from None
            elif key == "instanceId":
                values["instance_id"] = _read("str", value, key)
            elif key == "messageId":
                values["message_id"] = _read("str", value, key)
            elif key in known:
                attr, codec = known[key]
                values[attr] = _read(codec, value, key)
            else:
                extra[key] = value
        return cls(**values, extra=extra)


@dataclass(kw_only=True)
class RunRecord(Record):
    """A run started, stopped, resumed, was cancelled, or changed state."""

    kind: ClassVar[str] = "run"
    _fields: ClassVar[tuple[_Field, ...]] = (
        ("event", "event", "str"),
        ("state", "state", "str"),
        ("model", "model", "str"),
    )
    event: str | None = None
    """`started`, `stopped`, `resumed`, `cancelled` or `stateChanged`."""
    state: str | None = None
    model: str | None = None


@dataclass(kw_only=True)
class MessageRecord(Record):
    """A message entered the instance (with its `source`)."""

    kind: ClassVar[str] = "message"
    _fields: ClassVar[tuple[_Field, ...]] = (("message", "message", "message"),)
    message: Message | None = None


@dataclass(kw_only=True)
class InferenceRecord(Record):
    """One model call: who answered, how long it took, why it stopped, and its usage with cost lines."""

    kind: ClassVar[str] = "inference"
    _fields: ClassVar[tuple[_Field, ...]] = (
        ("provider", "provider", "str"),
        ("operation", "operation", "str"),
        ("durationMs", "duration_ms", "number"),
        ("finishReason", "finish_reason", "str"),
        ("usage", "usage", "usage"),
    )
    provider: str | None = None
    operation: str | None = None
    duration_ms: int | Decimal | None = None
    finish_reason: str | None = None
    usage: Usage | None = None


@dataclass(kw_only=True)
class ToolCallRecord(Record):
    """A client tool call with its inputs, result, cost and cost lines."""

    kind: ClassVar[str] = "toolCall"
    _fields: ClassVar[tuple[_Field, ...]] = (("call", "call", "call"), ("durationMs", "duration_ms", "number"))
    call: ToolCall | None = None
    duration_ms: int | Decimal | None = None


@dataclass(kw_only=True)
class TaskCompletionRecord(Record):
    """The agent ended its task through a tool that ends the loop."""

    kind: ClassVar[str] = "taskCompletion"
    _fields: ClassVar[tuple[_Field, ...]] = (("tool", "tool", "str"), ("result", "result", "any"))
    tool: str | None = None
    result: Any = None


@dataclass(kw_only=True)
class ApprovalRecord(Record):
    """An approval was requested for a tool call, or given, or refused."""

    kind: ClassVar[str] = "approval"
    _fields: ClassVar[tuple[_Field, ...]] = (
        ("toolCallId", "tool_call_id", "str"),
        ("tool", "tool", "str"),
        ("decision", "decision", "str"),
        ("by", "by", "str"),
    )
    tool_call_id: str | None = None
    tool: str | None = None
    decision: str | None = None
    """`requested`, `approved` or `denied`."""
    by: str | None = None


@dataclass(kw_only=True)
class CompactionRecord(Record):
    """A context strategy replaced earlier messages."""

    kind: ClassVar[str] = "compaction"
    _fields: ClassVar[tuple[_Field, ...]] = (
        ("strategy", "strategy", "str"),
        ("at", "at", "any"),
        ("replacedMessageIds", "replaced_message_ids", "strings"),
        ("summaryMessageId", "summary_message_id", "str"),
        ("cost", "cost", "decimal"),
    )
    strategy: str | None = None
    at: Any = None
    replaced_message_ids: list[str] | None = None
    summary_message_id: str | None = None
    cost: Decimal | None = None
    """The summarizing call's cost, for reading; totals count it once, through its inference record."""


@dataclass(kw_only=True)
class HookRecord(Record):
    """A hook changed, blocked, or answered something."""

    kind: ClassVar[str] = "hook"
    _fields: ClassVar[tuple[_Field, ...]] = (
        ("point", "point", "str"),
        ("hook", "hook", "str"),
        ("decision", "decision", "str"),
        ("reason", "reason", "str"),
    )
    point: str | None = None
    hook: str | None = None
    decision: str | None = None
    """`modify`, `block`, `requireApproval` or `respond`."""
    reason: str | None = None


@dataclass(kw_only=True)
class ErrorRecord(Record):
    """A failure during the run."""

    kind: ClassVar[str] = "error"
    _fields: ClassVar[tuple[_Field, ...]] = (
        ("errorType", "error_type", "str"),
        ("message", "message", "str"),
        ("where", "where", "str"),
    )
    error_type: str | None = None
    message: str | None = None
    where: str | None = None


@dataclass(kw_only=True)
class RawTurnRecord(Record):
    """The raw request and response bodies of a turn, secrets masked. Written only when the host turns it on."""

    kind: ClassVar[str] = "rawTurn"
    _fields: ClassVar[tuple[_Field, ...]] = (("request", "request", "any"), ("response", "response", "any"))
    request: Any = None
    response: Any = None


RECORD_KINDS: dict[str, type[Record]] = {
    cls.kind: cls
    for cls in (
        RunRecord,
        MessageRecord,
        InferenceRecord,
        ToolCallRecord,
        TaskCompletionRecord,
        ApprovalRecord,
        CompactionRecord,
        HookRecord,
        ErrorRecord,
        RawTurnRecord,
    )
}


def encode_record(record: Record) -> bytes:
    """One JSON line (with its newline). Money is written as JSON numbers from `Decimal`, never through a float."""
    return _ENCODER.encode(record.to_data()) + b"\n"


def parse_line(line: str | bytes, *, file: str | None = None, line_number: int | None = None) -> Record | None:
    """Read one JSON line. A kind this version does not know gives None (readers skip it); unknown fields are kept.

    Raises:
        BadDefinitionError: the line is not a JSON object, or a known field has the wrong type.
    """
    try:
        data = _DECODER.decode(line)
    except msgspec.DecodeError as exc:
        raise BadDefinitionError(f"not a JSON line: {exc}", file=file, line=line_number, column=1) from None
    return _record_from(data, file, line_number)


def _record_from(data: Any, file: str | None, line_number: int | None) -> Record | None:
    if not isinstance(data, dict):
        raise BadDefinitionError("a record is a JSON object", file=file, line=line_number, column=1)
    kind = data.get("kind")
    cls = RECORD_KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return None
    try:
        return cls.from_data(data)
    except BadDefinitionError as exc:
        raise BadDefinitionError(exc.detail, file=file, line=line_number, column=1, path=exc.path) from None


def read_records(
    source: str | Path | Iterable[str | bytes], *, kind: str | None = None, strict: bool = False
) -> Iterator[Record]:
    """The records of a JSON-lines file (or of an iterable of lines), skipping blank lines and unknown kinds.

    A line that is not JSON at all is what a crash leaves of an append cut short. By default it is reported (a warning
    on the `onellm.records` logger, naming the file and line) and skipped; `strict=True` raises instead. A JSON line
    that is not an object, or whose known fields have the wrong type, always raises `BadDefinitionError`. A path
    that cannot be read, or is not a regular file (a pipe, a device, a directory), raises `StorageError`.
    """
    if isinstance(source, str | Path):
        path = Path(source)
        flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(path, flags)
        except OSError as exc:
            raise storage_error(exc, path, "read") from exc
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise StorageError(
                f"cannot read {path}: it is {kind_of(mode)}, not a regular file", path=str(path), operation="read"
            )
        with os.fdopen(fd, "rb") as handle:
            yield from _records(handle, str(path), kind, strict)
    else:
        yield from _records(source, None, kind, strict)


def _records(lines: Iterable[str | bytes], file: str | None, kind: str | None, strict: bool) -> Iterator[Record]:
    for number, line in enumerate(lines, start=1):
        if number == 1:
            line = line.removeprefix(b"\xef\xbb\xbf") if isinstance(line, bytes) else line.removeprefix("\ufeff")
        if not line.strip():
            continue
        try:
            data = _DECODER.decode(line)
        except msgspec.DecodeError as exc:
            if strict:
                raise BadDefinitionError(f"not a JSON line: {exc}", file=file, line=number, column=1) from None
            where = f"{file}:{number}" if file else f"line {number}"
            _log.warning("skipped a torn record (an append cut short) at %s: %s", where, exc)
            continue
        record = _record_from(data, file, number)
        if record is not None and (kind is None or record.kind == kind):
            yield record


def total_cost(records: Iterable[Record]) -> Decimal:
    """The money a set of records spent: inference usage cost plus tool-call cost.

    Compaction records are not added: a summarizing call is counted once, as the inference record it produced.
    """
    total = Decimal(0)
    for record in records:
        if isinstance(record, InferenceRecord) and record.usage is not None and record.usage.cost is not None:
            total += record.usage.cost
        elif isinstance(record, ToolCallRecord) and record.call is not None and record.call.cost is not None:
            total += record.call.cost
    return total
