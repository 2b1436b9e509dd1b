"""`FileInstanceStore`: one `<id>.yaml` per instance in a directory (`spec/instances.md`, "Persistence layout").

- A save writes `.<id>.yaml.<random>.tmp` beside the instance, flushes it to disk and renames it over `<id>.yaml`.
  A writer killed half way leaves its temporary file; the store removes such leftovers when it is opened and when it
  lists (only unlocked ones, so a save in progress in another process is never disturbed).
- `<id>.lock`, held open and locked for the life of a lease, keeps a second runner out, in this process or another;
  the operating system drops the lock when the holder dies.
- `<id>.assets/` holds the instance's assets (`FileAssetStore`).

The directory may be shared with people and other programs, so nothing in it is trusted: the store follows no symbolic
link (`<id>.yaml`, `<id>.lock` and `<id>.assets` must be the real thing), reads only regular files and never more
than `max_file_bytes`, refuses a file whose `instanceId` is not its name, and turns every disk failure (full,
read-only, gone) into a `StorageError` naming the file, the operation and the cause. `list` reads each file only up
to its `messages:` line (plus its last 64 KiB, to notice keys written after the messages), so listing long instances
stays cheap.

File work runs in a worker thread, so a slow disk does not stall the event loop.
"""

from __future__ import annotations

import builtins
import logging
import os
import re
import stat
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import anyio
import anyio.lowlevel

from onellm._files import clean_stale_temps, kind_of, pread, read_fd, read_regular, storage_error, write_atomic
from onellm.errors import BadDefinitionError, InstanceLockedError, StorageError
from onellm.instances._assets import FileAssetStore
from onellm.instances._ids import is_valid_instance_id, validate_instance_id
from onellm.instances._lock import FileLock
from onellm.instances._model import Instance, encoded_parts, read_header
from onellm.instances._store import InstanceLease, InstanceQuery, InstanceSummary, apply_query

__all__ = ["DEFAULT_MAX_FILE_BYTES", "FileInstanceStore"]

_log = logging.getLogger("onellm.instances")
_SUFFIX = ".yaml"
DEFAULT_MAX_FILE_BYTES = 1 << 30
"""The largest instance file a store reads unless told otherwise: 1 GiB (a 200,000-token conversation is about 1 MB)."""

_HEAD_CHUNK = 64 * 1024
_TAIL = 64 * 1024
_MESSAGES_LINE = re.compile(rb"(?m)^messages[ ]*:")
# A line that starts in the first column with something other than a list dash, a comment, a blank or a document
# marker: among the messages, that is a top-level key written after them.
_TOP_LEVEL_KEY = re.compile(rb"(?m)^(?![-#\s]|\.\.\.|---)[^\n]")
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
)


class _FileLease(InstanceLease):
    def __init__(self, instance_id: str, lock: FileLock) -> None:
        super().__init__(instance_id)
        self._lock = lock

    async def _release(self) -> None:
        self._lock.release()


class FileInstanceStore:
    """Instances as YAML files in one directory: readable, diffable and portable.

    Args:
        directory: Where the files live; created when missing.
        durable: Flush every save to disk before returning (default). False keeps the atomic rename but may lose
            the latest save on a power cut; tests and throwaway runs go faster without it.
        max_file_bytes: The largest instance file `load` and `list` read (default 1 GiB); a larger one is refused with
            a `StorageError`.

    Raises:
        StorageError: the directory cannot be made or is not a directory.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        durable: bool = True,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise storage_error(exc, self.directory, "open", what="the store directory") from exc
        self._durable = durable
        self._max_bytes = max_file_bytes
        self._last_mtime_ns = 0
        clean_stale_temps(self.directory)

    def __repr__(self) -> str:
        return f"FileInstanceStore({str(self.directory)!r})"

    def path_of(self, instance_id: str) -> Path:
        """The file of `instance_id` (`<directory>/<id>.yaml`)."""
        return self.directory / f"{validate_instance_id(instance_id)}{_SUFFIX}"

    def assets(self, instance_id: str) -> FileAssetStore:
        """The asset store of `instance_id` (`<directory>/<id>.assets/`)."""
        return FileAssetStore(
            self.directory / f"{validate_instance_id(instance_id)}.assets",
            durable=self._durable,
            max_file_bytes=self._max_bytes,
        )

    def _next_mtime(self) -> int:
        # Saves through one store are strictly ordered by modification time even when the clock's resolution is
        # coarser than the time between them, so `list` sorts them newest first.
        now = time.time_ns()
        stamp = max(now, self._last_mtime_ns + 1000)
        self._last_mtime_ns = stamp
        return stamp

    async def save(self, instance: Instance) -> None:
        """Store `instance`, replacing the stored one atomically.

        Raises:
            InvalidInstanceIdError: the instance has no id or an invalid one.
            StorageError: the file cannot be written (a full or read-only disk, a directory in its place); what was
                stored before is untouched.
        """
        await anyio.lowlevel.checkpoint_if_cancelled()
        path = self.path_of(_require_id(instance))
        data = encoded_parts(instance)
        write = partial(write_atomic, path, data, durable=self._durable, mtime_ns=self._next_mtime(), operation="save")
        await anyio.to_thread.run_sync(write)

    def save_sync(self, instance: Instance) -> None:
        """Blocking form of `save`, for scripts and command-line tools."""
        path = self.path_of(_require_id(instance))
        data = encoded_parts(instance)
        write_atomic(path, data, durable=self._durable, mtime_ns=self._next_mtime(), operation="save")

    async def load(self, instance_id: str) -> Instance | None:
        """The stored instance, or None.

        Raises:
            InvalidInstanceIdError: `instance_id` is not a valid id.
            BadDefinitionError: the file is not a valid instance (with its line and column).
            StorageError: the file cannot be read, is not a regular file (a link, a directory, a pipe, a device), is
                larger than `max_file_bytes`, or holds another instance (its `instanceId` is not its name).
        """
        path = self.path_of(instance_id)
        data = await anyio.to_thread.run_sync(self._read, path)
        return None if data is None else self._parse(instance_id, path, data)

    def load_sync(self, instance_id: str) -> Instance | None:
        """Blocking form of `load`."""
        path = self.path_of(instance_id)
        data = self._read(path)
        return None if data is None else self._parse(instance_id, path, data)

    def _read(self, path: Path) -> bytes | None:
        return read_regular(path, max_bytes=self._max_bytes, operation="load")

    def _parse(self, instance_id: str, path: Path, data: bytes) -> Instance:
        instance = Instance.loads(data, file=str(path))
        if instance.id is not None and instance.id != instance_id:
            raise StorageError(
                f"cannot load {path}: the file holds instance {instance.id!r}, not {instance_id!r} (its name); "
                "rename the file or fix its instanceId",
                path=str(path),
                operation="load",
            )
        return instance

    async def list(
        self,
        *,
        state: str | None = None,
        caller: str | None = None,
        name_contains: str | None = None,
        modified_since: datetime | None = None,
        limit: int | None = None,
    ) -> builtins.list[InstanceSummary]:
        """Summaries of the stored instances, newest first.

        Files that cannot be listed (unreadable, not a regular file, a link, not an instance, an `instanceId` that is
        not the file's name) are skipped with a warning on the `onellm.instances` logger.

        Raises:
            StorageError: the directory itself cannot be read.
        """
        query = InstanceQuery(
            state=state, caller=caller, name_contains=name_contains, modified_since=modified_since, limit=limit
        )
        return await anyio.to_thread.run_sync(self._list_sync, query)

    def _list_sync(self, query: InstanceQuery | None = None) -> builtins.list[InstanceSummary]:
        if query is None:
            query = InstanceQuery()
        since_ns = None
        if query.modified_since is not None:
            since = query.modified_since
            since_ns = int(since.timestamp()) * 1_000_000_000 + since.microsecond * 1000
        found: builtins.list[InstanceSummary] = []
        try:
            entries = builtins.list(os.scandir(self.directory))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise storage_error(exc, self.directory, "list", what="the store directory") from exc
        temps = False
        for entry in entries:
            name = entry.name
            if name.endswith(".tmp"):
                temps = True
                continue
            if not name.endswith(_SUFFIX):
                continue
            instance_id = name[: -len(_SUFFIX)]
            if not is_valid_instance_id(instance_id):
                continue
            try:
                summary = self._summary(instance_id, Path(entry.path), since_ns)
            except (StorageError, BadDefinitionError) as exc:
                _log.warning("skipping %s in the listing: %s", entry.path, exc)
                continue
            if summary is not None:
                found.append(summary)
        if temps:
            clean_stale_temps(self.directory)
        return apply_query(found, query)

    def _summary(self, instance_id: str, path: Path, since_ns: int | None) -> InstanceSummary | None:
        """The summary of one file, read up to its header; None when it is gone or older than `since_ns`."""
        try:
            fd = os.open(path, _READ_FLAGS)
        except FileNotFoundError:
            return None  # deleted since the directory was read
        except OSError as exc:
            raise storage_error(exc, path, "list") from exc
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise StorageError(
                    f"cannot list {path}: it is {kind_of(info.st_mode)}, not a regular file",
                    path=str(path),
                    operation="list",
                )
            mtime_ns = info.st_mtime_ns
            if since_ns is not None and mtime_ns < since_ns:
                return None
            head = self._head(fd, info.st_size, path)
            try:
                header = read_header(head, file=str(path))
            except BadDefinitionError:
                if len(head) == info.st_size:
                    raise
                # The cut at the `messages:` line fell inside something (a quoted string spanning lines, say): only
                # the whole file says what the header is.
                whole = read_fd(fd, max_bytes=self._max_bytes, operation="list", shown=path)
                header = read_header(whole, file=str(path))
        except OSError as exc:
            raise storage_error(exc, path, "list") from exc
        finally:
            os.close(fd)
        written = header.get("instanceId")
        if written is not None and written != instance_id:
            raise StorageError(
                f"cannot list {path}: the file holds instance {written!r}, not {instance_id!r} (its name)",
                path=str(path),
                operation="list",
            )
        stamp = datetime.fromtimestamp(mtime_ns // 1_000_000_000, UTC).replace(
            microsecond=(mtime_ns // 1000) % 1_000_000
        )
        return InstanceSummary.of(instance_id, header, stamp)

    def _head(self, fd: int, size: int, path: Path) -> bytes:
        """The part of a file that holds its header: everything before the `messages:` line, unless a top-level key
        follows the messages (then the whole file, within the size cap)."""
        if size > self._max_bytes:
            raise StorageError(
                f"cannot list {path}: it is {size:,} bytes, more than the {self._max_bytes:,} allowed",
                path=str(path),
                operation="list",
            )
        head = bytearray()
        while True:
            chunk = pread(fd, _HEAD_CHUNK, len(head))
            if not chunk:
                return bytes(head)  # no messages line: the whole file is the header
            searched_from = max(0, len(head) - 16)
            head += chunk
            found = _MESSAGES_LINE.search(head, searched_from)
            if found is not None:
                end = found.start()
                break
            if len(head) > self._max_bytes:
                raise StorageError(
                    f"cannot list {path}: it is larger than the {self._max_bytes:,} bytes allowed",
                    path=str(path),
                    operation="list",
                )
        # The messages region as far as it was read, from the line after `messages:`, and the file's last 64 KiB
        # (from a line start) when the file goes on past what was read.
        read = bytes(head[found.end() :])
        regions = [read[read.find(b"\n") + 1 :] if b"\n" in read else b""]
        if size > len(head):
            tail_start = max(len(head), size - _TAIL)
            tail = pread(fd, size - tail_start, tail_start)
            if tail_start == len(head):
                regions[0] += tail
            else:
                regions.append(tail[tail.find(b"\n") + 1 :])
        if any(_has_top_level_key(region) for region in regions):
            # A key after the messages (a hand-written file): only the whole file says what the header is.
            return read_fd(fd, max_bytes=self._max_bytes, operation="list", shown=path)
        return bytes(head[:end])

    async def acquire(self, instance_id: str) -> InstanceLease:
        """Take the lease on `instance_id`.

        Raises:
            InstanceLockedError: someone else holds it.
            InvalidInstanceIdError: `instance_id` is not a valid id.
            StorageError: the lock file cannot be made (a full or read-only disk), or `<id>.lock` is a symbolic link
                or not a regular file.
        """
        path = self.directory / f"{validate_instance_id(instance_id)}.lock"
        lock = FileLock.try_acquire(path)
        if lock is None:
            raise InstanceLockedError(
                f"instance {instance_id!r} is leased by another holder (lock file {path})", instance_id=instance_id
            )
        return _FileLease(instance_id, lock)

    async def delete(self, instance_id: str) -> bool:
        """Remove the instance and its assets; True when there was an instance.

        Raises:
            InvalidInstanceIdError: `instance_id` is not a valid id.
            StorageError: the file or its assets cannot be removed (a read-only disk, a directory in its place).
        """
        path = self.path_of(instance_id)
        return await anyio.to_thread.run_sync(self._delete, instance_id, path)

    def _delete(self, instance_id: str, path: Path) -> bool:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            existed = False
        except OSError as exc:
            raise storage_error(exc, path, "delete") from exc
        else:
            if stat.S_ISDIR(info.st_mode):
                raise StorageError(
                    f"cannot delete {path}: it is a directory, not an instance file", path=str(path), operation="delete"
                )
            try:
                os.unlink(path)
            except FileNotFoundError:
                existed = False
            except OSError as exc:
                raise storage_error(exc, path, "delete") from exc
            else:
                existed = True
        self.assets(instance_id).clear()
        return existed


def _has_top_level_key(text: bytes) -> bool:
    """True when a line of `text` starts in the first column with a key (not a list entry, a comment, a blank or a
    document marker)."""
    return _TOP_LEVEL_KEY.search(text) is not None


def _require_id(instance: Instance) -> str:
    return validate_instance_id(instance.id)
