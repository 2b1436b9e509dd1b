"""`FileInstanceStore`: one `<id>.yaml` per instance in a directory (`spec/instances.md`, "Persistence layout").

- A save writes `.<id>.yaml.<random>.tmp` beside the instance, flushes it to disk and renames it over `<id>.yaml`.
- `<id>.lock`, held open and locked for the life of a lease, keeps a second runner out, in this process or another;
  the operating system drops the lock when the holder dies.
- `<id>.assets/` holds the instance's assets (`FileAssetStore`).

File work runs in a worker thread, so a slow disk does not stall the event loop.
"""

from __future__ import annotations

import builtins
import logging
import os
import shutil
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import anyio
import anyio.lowlevel

from onellm.errors import BadDefinitionError, InstanceLockedError
from onellm.instances._assets import FileAssetStore
from onellm.instances._atomic import write_atomic
from onellm.instances._ids import is_valid_instance_id, validate_instance_id
from onellm.instances._lock import FileLock
from onellm.instances._model import Instance, read_header
from onellm.instances._store import InstanceLease, InstanceQuery, InstanceSummary, apply_query

__all__ = ["FileInstanceStore"]

_log = logging.getLogger("onellm.instances")
_SUFFIX = ".yaml"


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
    """

    def __init__(self, directory: str | os.PathLike[str], *, durable: bool = True) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._durable = durable
        self._last_mtime_ns = 0

    def __repr__(self) -> str:
        return f"FileInstanceStore({str(self.directory)!r})"

    def path_of(self, instance_id: str) -> Path:
        """The file of `instance_id` (`<directory>/<id>.yaml`)."""
        return self.directory / f"{validate_instance_id(instance_id)}{_SUFFIX}"

    def assets(self, instance_id: str) -> FileAssetStore:
        """The asset store of `instance_id` (`<directory>/<id>.assets/`)."""
        return FileAssetStore(self.directory / f"{validate_instance_id(instance_id)}.assets", durable=self._durable)

    def _next_mtime(self) -> int:
        # Saves through one store are strictly ordered by modification time even when the clock's resolution is
        # coarser than the time between them, so `list` sorts them newest first.
        now = time.time_ns()
        stamp = max(now, self._last_mtime_ns + 1000)
        self._last_mtime_ns = stamp
        return stamp

    async def save(self, instance: Instance) -> None:
        await anyio.lowlevel.checkpoint_if_cancelled()
        path = self.path_of(_require_id(instance))
        data = instance.dumps().encode("utf-8")
        write = partial(write_atomic, path, data, durable=self._durable, mtime_ns=self._next_mtime())
        await anyio.to_thread.run_sync(write)

    def save_sync(self, instance: Instance) -> None:
        """Blocking form of `save`, for scripts and command-line tools."""
        path = self.path_of(_require_id(instance))
        write_atomic(path, instance.dumps().encode("utf-8"), durable=self._durable, mtime_ns=self._next_mtime())

    async def load(self, instance_id: str) -> Instance | None:
        path = self.path_of(instance_id)
        data = await anyio.to_thread.run_sync(_read_or_none, path)
        if data is None:
            return None
        return Instance.loads(data, file=str(path))

    def load_sync(self, instance_id: str) -> Instance | None:
        """Blocking form of `load`."""
        path = self.path_of(instance_id)
        data = _read_or_none(path)
        return None if data is None else Instance.loads(data, file=str(path))

    async def list(
        self,
        *,
        state: str | None = None,
        caller: str | None = None,
        name_contains: str | None = None,
        modified_since: datetime | None = None,
        limit: int | None = None,
    ) -> builtins.list[InstanceSummary]:
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
        for entry in entries:
            name = entry.name
            if not name.endswith(_SUFFIX):
                continue
            instance_id = name[: -len(_SUFFIX)]
            if not is_valid_instance_id(instance_id):
                continue
            try:
                if not entry.is_file():
                    continue
                mtime_ns = entry.stat().st_mtime_ns
                if since_ns is not None and mtime_ns < since_ns:
                    continue
                raw = Path(entry.path).read_bytes()
            except FileNotFoundError:
                continue  # deleted since the directory was read
            except OSError as exc:
                _log.warning("skipping an instance file that cannot be read: %s: %s", entry.path, exc)
                continue
            try:
                header = read_header(raw, file=entry.path)
            except BadDefinitionError as exc:
                _log.warning("skipping an unreadable instance file in the listing: %s", exc)
                continue
            stamp = datetime.fromtimestamp(mtime_ns // 1_000_000_000, UTC).replace(
                microsecond=(mtime_ns // 1000) % 1_000_000
            )
            found.append(InstanceSummary.of(instance_id, header, stamp))
        return apply_query(found, query)

    async def acquire(self, instance_id: str) -> InstanceLease:
        path = self.directory / f"{validate_instance_id(instance_id)}.lock"
        lock = FileLock.try_acquire(path)
        if lock is None:
            raise InstanceLockedError(
                f"instance {instance_id!r} is leased by another holder (lock file {path})", instance_id=instance_id
            )
        return _FileLease(instance_id, lock)

    async def delete(self, instance_id: str) -> bool:
        path = self.path_of(instance_id)
        return await anyio.to_thread.run_sync(self._delete, instance_id, path)

    def _delete(self, instance_id: str, path: Path) -> bool:
        try:
            path.unlink()
            existed = True
        except FileNotFoundError:
            existed = False
        assets = self.directory / f"{instance_id}.assets"
        if assets.exists():
            shutil.rmtree(assets, ignore_errors=True)
        return existed


def _require_id(instance: Instance) -> str:
    return validate_instance_id(instance.id)


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
