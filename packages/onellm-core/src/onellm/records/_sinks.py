"""Record sinks: where records go. A JSON-lines file per instance, an in-process event, and the fan-out over several."""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import re
import stat
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Protocol, runtime_checkable

import anyio

from onellm._files import kind_of, pread, storage_error
from onellm.clock import Clock
from onellm.errors import StorageError
from onellm.messages import Timestamp
from onellm.records._kinds import Record, encode_record, read_records, total_cost

__all__ = ["EventRecordSink", "JsonlRecordSink", "RecordSink", "RecordSinkFailure", "RecordSinks"]

_log = logging.getLogger("onellm.records")
_INSTANCE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
RUNTIME_FILE = "_runtime.jsonl"
_APPEND_FLAGS = (
    os.O_RDWR
    | os.O_APPEND
    | os.O_CREAT
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
)


@runtime_checkable
class RecordSink(Protocol):
    """Anything that takes records. `write` must not keep the record past the call unless it copies it."""

    async def write(self, record: Record) -> None: ...


def _now(clock: Clock | None) -> datetime | Timestamp:
    if clock is None:
        return Timestamp.now()
    return clock.now()


class JsonlRecordSink:
    """One JSON line per record, appended to `<directory>/<instanceId>.jsonl` (`_runtime.jsonl` without an instance).

    Each record is one `write` of the whole line to a file opened for appending, under an exclusive lock on the file
    that writers of this sink share across processes. Before every append the sink looks at the file's last byte: a
    file that does not end in a line end holds a torn line (another writer was killed half way, or a full disk cut a
    write short), and the record then starts on a new line, so only the torn line is lost, never the next record. An
    append that fails half way (`ENOSPC`, `EFBIG`) cuts its own partial line off again and raises `StorageError`.
    The file must be a regular file (a symbolic link in its place is refused). `fsync=True` also flushes every line
    to disk.
    """

    def __init__(self, directory: str | os.PathLike[str], *, clock: Clock | None = None, fsync: bool = False) -> None:
        self.directory = Path(directory)
        self.clock = clock
        self.fsync = fsync
        self._made = False

    def path_for(self, instance_id: str | None) -> Path:
        """The file holding the records of `instance_id` (None: the runtime's own records)."""
        if instance_id is None:
            return self.directory / RUNTIME_FILE
        if not _INSTANCE_ID.fullmatch(instance_id):
            raise ValueError(f"not an instance id (1 to 128 letters, digits, '-', '_'): {instance_id!r}")
        return self.directory / f"{instance_id}.jsonl"

    async def write(self, record: Record) -> None:
        """Append the record (stamped with the clock's time when it has none).

        A plain append is a few microseconds and runs inline; with `fsync=True` the flush to disk can take
        milliseconds, so it runs on a worker thread instead of holding up the event loop.
        """
        if self.fsync:
            await anyio.to_thread.run_sync(self.write_sync, record)
        else:
            self.write_sync(record)

    def write_sync(self, record: Record) -> None:
        """The blocking form of `write`, for code that is not async.

        Raises:
            StorageError: the line could not be appended (a full or read-only disk, a file size limit, a link or
                something other than a regular file in place of the file); the file is left ending in a whole line.
        """
        if record.time is None:
            record = record.stamped(_now(self.clock))
        path = self.path_for(record.instance_id)
        line = encode_record(record)
        try:
            if not self._made:
                self.directory.mkdir(parents=True, exist_ok=True)
                self._made = True
            fd = os.open(path, _APPEND_FLAGS, 0o644)
        except OSError as exc:
            raise storage_error(exc, path, "append") from exc
        try:
            self._append(fd, path, line)
        finally:
            os.close(fd)  # drops the lock

    def _append(self, fd: int, path: Path, line: bytes) -> None:
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise StorageError(
                    f"cannot append to {path}: it is {kind_of(info.st_mode)}, not a regular file",
                    path=str(path),
                    operation="append",
                )
            _lock(fd)
            size = os.fstat(fd).st_size
            if size and pread(fd, 1, size - 1) != b"\n":
                # The last append was cut short (a writer killed half way, a full disk): start on a fresh line so
                # this record stays whole. Checked on every append, since any writer may have torn it meanwhile.
                line = b"\n" + line
        except OSError as exc:
            raise storage_error(exc, path, "append") from exc
        done = 0
        try:
            view = memoryview(line)
            while view:
                written = os.write(fd, view)
                done += written
                view = view[written:]
            if self.fsync:
                os.fsync(fd)
        except OSError as exc:
            if done < len(line):
                _cut_back(fd, size, done)
            raise storage_error(exc, path, "append") from exc

    def read(self, instance_id: str | None, *, kind: str | None = None) -> list[Record]:
        """The records of one instance (optionally of one kind), in the order they were written.

        Raises:
            StorageError: the file cannot be read or is not a regular file.
        """
        path = self.path_for(instance_id)
        if not os.path.lexists(path):
            return []
        return list(read_records(path, kind=kind))

    def cost(self, instance_id: str) -> Decimal:
        """What one instance spent, from its records: inference and tool-call costs, exact."""
        return total_cost(self.read(instance_id))

    def instance_ids(self) -> Iterator[str]:
        """The instances this sink holds records for."""
        if not self.directory.is_dir():
            return
        for entry in sorted(self.directory.glob("*.jsonl")):
            if entry.name != RUNTIME_FILE:
                yield entry.stem


def _cut_back(fd: int, size: int, done: int) -> None:
    """Remove the part of a line a failed append wrote, when nobody appended after it."""
    with contextlib.suppress(OSError):
        if os.fstat(fd).st_size == size + done:
            os.ftruncate(fd, size)


if sys.platform == "win32":  # pragma: no cover - no advisory locks; the last-byte check alone keeps lines apart

    def _lock(fd: int) -> None:
        pass

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)


RecordHandler = Callable[[Record], "Awaitable[None] | None"]


class EventRecordSink:
    """Keeps nothing: calls every subscribed handler with each record, in the order they subscribed.

    A handler may be a plain function or a coroutine function.
    """

    def __init__(self, *handlers: RecordHandler) -> None:
        self._handlers: list[RecordHandler] = list(handlers)

    def subscribe(self, handler: RecordHandler) -> Callable[[], None]:
        """Add a handler; the returned function removes it again."""
        self._handlers.append(handler)

        def unsubscribe() -> None:
            if handler in self._handlers:
                self._handlers.remove(handler)

        return unsubscribe

    async def write(self, record: Record) -> None:
        for handler in list(self._handlers):
            result = handler(record)
            if inspect.isawaitable(result):
                await result


@dataclass(frozen=True, slots=True)
class RecordSinkFailure:
    """A sink failed to take a record: which sink, which record, and the exception."""

    sink: RecordSink
    record: Record
    error: BaseException


def _log_failure(failure: RecordSinkFailure) -> None:
    _log.warning(
        "record sink %s failed on a %s record: %s",
        type(failure.sink).__name__,
        failure.record.kind,
        failure.error,
        exc_info=failure.error,
    )


class RecordSinks:
    """Several sinks as one. Each record goes to every sink in the order they were added.

    A sink that raises is skipped for that record and the failure goes to `on_error` (by default a warning on the
    `onellm.records` logger); the other sinks still get the record and the run goes on. Cancellation is the one
    exception that reaches the caller. A record without a time is stamped once, so every sink sees the same time.
    """

    def __init__(
        self,
        *sinks: RecordSink,
        on_error: Callable[[RecordSinkFailure], None] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._sinks: list[RecordSink] = list(sinks)
        self.on_error: Callable[[RecordSinkFailure], None] = on_error or _log_failure
        self.clock = clock
        self._lock = threading.Lock()

    @property
    def sinks(self) -> tuple[RecordSink, ...]:
        return tuple(self._sinks)

    def add(self, sink: RecordSink) -> None:
        with self._lock:
            self._sinks.append(sink)

    def remove(self, sink: RecordSink) -> None:
        with self._lock:
            if sink in self._sinks:
                self._sinks.remove(sink)

    def __len__(self) -> int:
        return len(self._sinks)

    async def write(self, record: Record) -> None:
        """Give the record to every sink; failures are reported, never raised (cancellation excepted)."""
        if not self._sinks:
            return
        if record.time is None:
            record = record.stamped(_now(self.clock))
        cancelled = anyio.get_cancelled_exc_class()
        for sink in self.sinks:
            try:
                await sink.write(record)
            except cancelled:
                raise
            except Exception as exc:
                self._report(RecordSinkFailure(sink, record, exc))

    def _report(self, failure: RecordSinkFailure) -> None:
        try:
            self.on_error(failure)
        except Exception:  # a failing error callback must not fail the run either
            _log_failure(failure)
