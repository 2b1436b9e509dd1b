"""Asset stores: where an instance's binary content lives, referred to from messages by `asset` parts.

Content is addressed by its SHA-256: the key is the hex digest, the hash `sha256:<hex>`, so storing the same bytes
twice keeps one copy. `FileAssetStore` keeps one file per key in a directory (the file store uses
`<instanceId>.assets/`); `MemoryAssetStore` keeps them in the process.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
from pathlib import Path
from typing import Protocol, runtime_checkable

from onellm._files import clean_stale_temps, kind_of, open_directory, read_regular, storage_error, write_atomic
from onellm.errors import StorageError
from onellm.messages import AssetPart

__all__ = ["AssetStore", "FileAssetStore", "MemoryAssetStore"]

_KEY = re.compile(r"[0-9a-f]{64}")
DEFAULT_MAX_ASSET_BYTES = 1 << 30
"""The largest asset a `FileAssetStore` reads unless told otherwise: 1 GiB."""


def _check_key(key: str) -> str:
    if not isinstance(key, str) or _KEY.fullmatch(key) is None:
        raise KeyError(f"not an asset key (64 lower-case hex digits): {key!r}")
    return key


def _part(storage: str, data: bytes, content_type: str | None, name: str | None) -> tuple[str, AssetPart]:
    digest = hashlib.sha256(data).hexdigest()
    return digest, AssetPart(
        storage=storage,
        key=digest,
        hash=f"sha256:{digest}",
        content_type=content_type,
        size=len(data),
        name=name,
    )


@runtime_checkable
class AssetStore(Protocol):
    """Keeps the binary content of one instance."""

    storage: str
    """The name written in an asset part's `storage`."""

    def put(self, data: bytes, *, content_type: str | None = None, name: str | None = None) -> AssetPart:
        """Store `data`; return the asset part that refers to it."""
        ...

    def get(self, key: str) -> bytes:
        """The content stored under `key`.

        Raises:
            KeyError: nothing is stored under `key`.
            StorageError: the stored content cannot be read, or no longer matches its hash.
        """
        ...

    def exists(self, key: str) -> bool:
        """True when content is stored under `key`."""
        ...

    def delete(self, key: str) -> bool:
        """Remove the content under `key`; True when there was some."""
        ...


class FileAssetStore:
    """One file per asset, named by its SHA-256, in `directory` (created on the first `put`).

    Nothing in the directory is trusted: the directory itself and every asset file must be the real thing (a symbolic
    link is refused, so a planted link cannot send a write or a read out of the store), a file read back must still
    hash to its name (a changed or torn file is refused, never sent to a model as the asset), and a `put` that finds a
    file that does not hash to its name writes it again. Failures are `StorageError`s naming the file.

    Args:
        directory: The asset directory (`<store>/<instanceId>.assets`).
        durable: Flush every write to disk before returning.
        max_file_bytes: The largest asset `get` reads.
    """

    storage = "file"

    def __init__(
        self, directory: str | Path, *, durable: bool = True, max_file_bytes: int = DEFAULT_MAX_ASSET_BYTES
    ) -> None:
        self.directory = Path(directory)
        self._durable = durable
        self._max_bytes = max_file_bytes
        self._cleaned = False

    def _open(self, operation: str, *, create: bool = False) -> _Directory | None:
        """The directory, opened without following a link; None when it does not exist (and `create` is false)."""
        if create:
            try:
                self.directory.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise storage_error(exc, self.directory.parent, operation) from exc
        try:
            if _BY_DESCRIPTOR:
                opened = _Directory(self.directory, open_directory(self.directory, operation=operation, create=create))
            else:  # pragma: no cover - Windows: names are checked by path instead
                opened = _Directory(self.directory, None)
                opened.check(operation, create=create)
        except StorageError as exc:
            if isinstance(exc.__cause__, FileNotFoundError) and not create:
                return None
            raise
        if not self._cleaned:
            self._cleaned = True
            clean_stale_temps(self.directory, dir_fd=opened.fd)
        return opened

    def put(self, data: bytes, *, content_type: str | None = None, name: str | None = None) -> AssetPart:
        """Store `data` (once: the same bytes are kept in one file); return the part that refers to it.

        Raises:
            StorageError: the asset cannot be written (a full or read-only disk, a link in place of the directory).
        """
        data = bytes(data)
        digest, part = _part(self.storage, data, content_type, name)
        opened = self._open("put", create=True)
        assert opened is not None
        try:
            if not self._holds(opened, digest):
                name, fd = opened.at(digest)
                write_atomic(
                    name, data, durable=self._durable, dir_fd=fd, operation="put", shown=self.directory / digest
                )
        finally:
            opened.close()
        return part

    def _holds(self, opened: _Directory, digest: str) -> bool:
        """True when the file for `digest` is there and still hashes to it."""
        name, fd = opened.at(digest)
        try:
            found = read_regular(
                name, max_bytes=self._max_bytes, operation="put", dir_fd=fd, shown=self.directory / digest
            )
        except StorageError:
            return False  # not a regular file or not readable: replaced by the write
        return found is not None and hashlib.sha256(found).hexdigest() == digest

    def get(self, key: str) -> bytes:
        """The content stored under `key`, checked against its hash.

        Raises:
            KeyError: nothing is stored under `key`.
            StorageError: the file is not a regular file, cannot be read, or no longer hashes to its name.
        """
        _check_key(key)
        opened = self._open("get")
        if opened is None:
            raise KeyError(f"no asset {key!r} in {self.directory}")
        shown = self.directory / key
        name, fd = opened.at(key)
        try:
            data = read_regular(name, max_bytes=self._max_bytes, operation="get", dir_fd=fd, shown=shown)
        finally:
            opened.close()
        if data is None:
            raise KeyError(f"no asset {key!r} in {self.directory}")
        if hashlib.sha256(data).hexdigest() != key:
            raise StorageError(
                f"cannot get {shown}: its content no longer matches its hash (sha256:{key}); the asset was changed or "
                "cut short, and is not used",
                path=str(shown),
                operation="get",
            )
        return data

    def exists(self, key: str) -> bool:
        """True when a regular file is stored under `key` (its hash is checked by `get`)."""
        if _KEY.fullmatch(key) is None:
            return False
        try:
            opened = self._open("get")
        except StorageError:
            return False
        if opened is None:
            return False
        name, fd = opened.at(key)
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            return False
        finally:
            opened.close()
        return stat.S_ISREG(info.st_mode)

    def delete(self, key: str) -> bool:
        """Remove the content under `key`; True when there was some.

        Raises:
            StorageError: it cannot be removed.
        """
        _check_key(key)
        opened = self._open("delete")
        if opened is None:
            return False
        name, fd = opened.at(key)
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise storage_error(exc, self.directory / key, "delete") from exc
        finally:
            opened.close()
        return True

    def clear(self) -> None:
        """Remove the directory and everything in it (a link in its place is removed, not followed).

        Raises:
            StorageError: it cannot be removed.
        """
        try:
            info = os.lstat(self.directory)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise storage_error(exc, self.directory, "delete") from exc
        try:
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(self.directory)
            else:
                os.unlink(self.directory)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise storage_error(exc, getattr(exc, "filename", None) or self.directory, "delete") from exc


_BY_DESCRIPTOR = all(f in os.supports_dir_fd for f in (os.open, os.stat, os.unlink, os.replace))
"""Whether names can be resolved in an open directory (POSIX); elsewhere they are checked by path."""


class _Directory:
    """An asset directory in use: its open descriptor, so that names resolve in it and not through a link planted in
    its place (or, where descriptors cannot be used, its path, checked before use)."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self.fd = fd

    def at(self, name: str) -> tuple[str, int | None]:
        """(`name` as the `os` functions take it, the `dir_fd` to pass with it)."""
        if self.fd is not None:
            return name, self.fd
        return str(self.path / name), None  # pragma: no cover - Windows

    def check(self, operation: str, *, create: bool) -> None:  # pragma: no cover - Windows
        """Make the directory when asked, and refuse a link or a file in its place."""
        if create:
            try:
                os.mkdir(self.path)
            except FileExistsError:
                pass
            except OSError as exc:
                raise storage_error(exc, self.path, operation) from exc
        try:
            info = os.lstat(self.path)
        except OSError as exc:
            raise storage_error(exc, self.path, operation) from exc
        if not stat.S_ISDIR(info.st_mode):
            raise StorageError(
                f"cannot {operation} {self.path}: it is {kind_of(info.st_mode)}, not a directory",
                path=str(self.path),
                operation=operation,
            )

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class MemoryAssetStore:
    """Assets kept in the process."""

    storage = "memory"

    def __init__(self) -> None:
        self._items: dict[str, bytes] = {}

    def put(self, data: bytes, *, content_type: str | None = None, name: str | None = None) -> AssetPart:
        digest, part = _part(self.storage, bytes(data), content_type, name)
        self._items.setdefault(digest, bytes(data))
        return part

    def get(self, key: str) -> bytes:
        try:
            return self._items[key]
        except KeyError:
            raise KeyError(f"no asset {key!r}") from None

    def exists(self, key: str) -> bool:
        return key in self._items

    def delete(self, key: str) -> bool:
        return self._items.pop(key, None) is not None

    def clear(self) -> None:
        """Remove every asset."""
        self._items.clear()
