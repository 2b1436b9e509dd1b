"""Assets in prompts: `Asset.file(path)` and `Asset.from_bytes(data, content_type)` make asset parts with inline
content. The runtime keeps the content in the instance store's asset store (the instance refers to it by its SHA-256)
and puts it back inline when a later turn sends the history again."""

from __future__ import annotations

import mimetypes
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

import msgspec

from onellm.errors import StorageError
from onellm.messages import AssetPart, Message

if TYPE_CHECKING:
    from onellm.instances import Instance

__all__ = ["Asset", "copy_assets", "inline_assets", "store_assets"]

_INLINE = (bytes, bytearray, memoryview)


class Asset:
    """Asset parts for prompts: `onellm.ask("claude-sonnet", "Summarize this", Asset.file("brief.pdf"))`."""

    @staticmethod
    def file(path: str | os.PathLike[str], content_type: str | None = None) -> AssetPart:
        """The file's bytes as an asset part; the content type is guessed from the name unless given."""
        p = Path(path)
        try:
            data = p.read_bytes()
        except OSError as error:
            raise FileNotFoundError(f"asset {str(path)!r}: {error.strerror or error}") from error
        kind = content_type or mimetypes.guess_type(p.name)[0] or "application/octet-stream"
        return AssetPart(content_type=kind, name=p.name, size=len(data), data=data)

    @staticmethod
    def from_bytes(data: bytes, content_type: str, name: str | None = None) -> AssetPart:
        """Bytes as an asset part."""
        if not isinstance(data, _INLINE):
            raise TypeError(f"asset data must be bytes, not {type(data).__name__}")
        return AssetPart(content_type=content_type, name=name, size=len(data), data=bytes(data))


def _asset_store(store: Any, instance: Instance) -> Any:
    assets = getattr(store, "assets", None)
    if assets is None or instance.id is None:
        return None
    return assets(instance.id)


def store_assets(store: Any, instance: Instance, message: Message) -> None:
    """Replace the message's inline asset content with references into the instance's asset store (when the store
    has one; otherwise the content stays inline)."""
    if not any(isinstance(p, AssetPart) and isinstance(p.data, _INLINE) for p in message.user):
        return
    target = _asset_store(store, instance)
    if target is None:
        return
    parts = []
    for part in message.user:
        if isinstance(part, AssetPart) and isinstance(part.data, _INLINE):
            stored = target.put(bytes(part.data), content_type=part.content_type, name=part.name)
            part = msgspec.structs.replace(part, storage=stored.storage, key=stored.key, hash=stored.hash, data=None)
            part.size = stored.size
        parts.append(part)
    message.user = parts


def _stored(part: Any) -> TypeGuard[AssetPart]:
    """An asset part whose content is in the asset store (a reference, no inline data)."""
    return isinstance(part, AssetPart) and bool(part.key) and part.data is None


def _any_stored(messages: Sequence[Message]) -> bool:
    """Whether any message's user side has an asset part to put back (`_stored`, written out: this looks at every
    message of every turn)."""
    for message in messages:
        if message.user:  # most turns of an agent have no user side: passed over with one test
            for p in message.user:
                if isinstance(p, AssetPart) and p.key and p.data is None:
                    return True
    return False


def copy_assets(store: Any, source: Instance, copy: Instance) -> None:
    """Put the stored content of every asset the copy's messages refer to into the copy's own asset store (a fork
    or duplicate refers to the same keys, and a later turn puts them back inline from its own store). Content the
    source's store no longer holds is left out: the copy is then as the source.

    Raises:
        StorageError: the content cannot be read or written.
    """
    if not _any_stored(copy.messages):
        return
    src = _asset_store(store, source)
    dst = _asset_store(store, copy)
    if src is None or dst is None:
        return
    done: set[str] = set()
    for message in copy.messages:
        for part in message.user:
            if not _stored(part) or part.key is None or part.key in done:
                continue
            key = part.key
            done.add(key)
            if src.exists(key) and not dst.exists(key):
                dst.put(src.get(key), content_type=part.content_type, name=part.name)


def inline_assets(store: Any, instance: Instance, messages: Sequence[Message]) -> list[Message]:
    """The messages to send: asset parts that refer to stored content get it back inline (copies; the instance keeps
    its references)."""
    out = list(messages)
    if not _any_stored(out):
        return out
    target: Any = None
    for i, message in enumerate(out):
        if not any(_stored(p) for p in message.user):
            continue  # nothing stored to put back
        if target is None:
            target = _asset_store(store, instance)
            if target is None:
                return out
        user = [_put_back(target, p, instance) if _stored(p) else p for p in message.user]
        out[i] = msgspec.structs.replace(message, user=user)
    return out


def _put_back(target: Any, part: AssetPart, instance: Instance) -> AssetPart:
    """The part with its stored content inline.

    Raises:
        StorageError: the instance's asset store should hold the content and does not (its file was deleted): sent
            without it, the model would miss what the person gave it.
    """
    assert part.key is not None
    try:
        return msgspec.structs.replace(part, data=target.get(part.key))
    except KeyError:
        if part.storage is not None and part.storage != getattr(target, "storage", None):
            return part  # kept in another storage: not this store's to put back
        folder = getattr(target, "directory", None)
        shown = str(folder / part.key) if folder is not None else part.key
        raise StorageError(
            f"instance {instance.id}: the content of asset {part.name or part.key!r} is gone from its asset store "
            f"({shown}), so the conversation cannot be sent with it",
            path=shown,
            operation="get",
        ) from None
