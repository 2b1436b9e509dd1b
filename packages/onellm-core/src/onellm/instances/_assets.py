"""Asset stores: where an instance's binary content lives, referred to from messages by `asset` parts.

Content is addressed by its SHA-256: the key is the hex digest, the hash `sha256:<hex>`, so storing the same bytes
twice keeps one copy. `FileAssetStore` keeps one file per key in a directory (the file store uses
`<instanceId>.assets/`); `MemoryAssetStore` keeps them in the process.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path
from typing import Protocol, runtime_checkable

from onellm.instances._atomic import write_atomic
from onellm.messages import AssetPart

__all__ = ["AssetStore", "FileAssetStore", "MemoryAssetStore"]

_KEY = re.compile(r"[0-9a-f]{64}")


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
        """
        ...

    def exists(self, key: str) -> bool:
        """True when content is stored under `key`."""
        ...

    def delete(self, key: str) -> bool:
        """Remove the content under `key`; True when there was some."""
        ...


class FileAssetStore:
    """One file per asset, named by its SHA-256, in `directory` (created on the first `put`)."""

    storage = "file"

    def __init__(self, directory: str | Path, *, durable: bool = True) -> None:
        self.directory = Path(directory)
        self._durable = durable

    def put(self, data: bytes, *, content_type: str | None = None, name: str | None = None) -> AssetPart:
        digest, part = _part(self.storage, bytes(data), content_type, name)
        path = self.directory / digest
        if not path.exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            write_atomic(path, bytes(data), durable=self._durable)
        return part

    def get(self, key: str) -> bytes:
        path = self.directory / _check_key(key)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise KeyError(f"no asset {key!r} in {self.directory}") from None

    def exists(self, key: str) -> bool:
        return _KEY.fullmatch(key) is not None and (self.directory / key).is_file()

    def delete(self, key: str) -> bool:
        try:
            (self.directory / _check_key(key)).unlink()
        except FileNotFoundError:
            return False
        return True

    def clear(self) -> None:
        """Remove the directory and everything in it."""
        shutil.rmtree(self.directory, ignore_errors=True)


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
