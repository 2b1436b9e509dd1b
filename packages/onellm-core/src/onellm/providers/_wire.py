"""Request bodies that reuse the JSON of each unchanged message.

A turn sends the whole conversation again. With `reuse`, a codec keeps the bytes of each message's part of the body,
from its second request on, in the message's memo (`onellm.messages.memo`) under a key naming the codec and whatever
else the bytes depend on; later bodies take them as `msgspec.Raw` fragments, which the encoder copies as they are. The bytes
are those the encoder writes for the same plain data, so a body made of fragments is byte for byte the body made
without them. A message that changed since is encoded again; one the codec had a notice about (a part it left out)
is encoded every time, so the notice is given every time.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Final, TypeVar

import msgspec

from onellm.messages import Message
from onellm.messages.memo import memo_for

__all__ = ["ENCODER", "fragment", "inner", "reused"]

T = TypeVar("T")

ENCODER: Final = msgspec.json.Encoder(decimal_format="number")
"""The encoder of every request body (and so of every fragment in one)."""


def fragment(value: Any) -> msgspec.Raw:
    """`value` encoded as it would be inside a body, in bytes of its own size (the encoder's buffer is larger; this is
    kept while the message lives)."""
    return msgspec.Raw(bytes(memoryview(ENCODER.encode(value))))


def inner(raw: msgspec.Raw, prefix: bytes, suffix: bytes) -> msgspec.Raw | None:
    """The part of a fragment between `prefix` and `suffix`, sharing its bytes; None when it does not have them."""
    view = memoryview(raw)
    if (
        len(view) < len(prefix) + len(suffix)
        or view[: len(prefix)] != prefix
        or view[len(view) - len(suffix) :] != suffix
    ):
        return None
    return msgspec.Raw(view[len(prefix) : len(view) - len(suffix)])


def reused(message: Message, key: Hashable, make: Callable[..., tuple[T, bool]], *args: Any) -> T:
    """What `make(message, *args)` makes under `key`: kept from an earlier call while the message is unchanged.
    `make` returns the value and whether it may be kept (False when its making gave a notice)."""
    memo = memo_for(message, key)
    if memo is not None:
        found = memo.get(key)
        if found is not None:
            return found  # type: ignore[no-any-return]
    value, keep = make(message, *args)
    if keep and memo is not None:
        memo.put(key, value)
    return value
