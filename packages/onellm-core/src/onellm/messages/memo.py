"""Work done once per message while it is unchanged: the text of its block in an instance file, the JSON of its turn
in each provider's request body.

A conversation sends and saves its whole history on every turn, but each turn adds one message. A message's memo keeps
what was made from it, under a key naming what and for whom (`("yaml", 2)`, `("chat",)`), so the next turn reuses it
instead of making it again.

A message is a mutable object, so what the memo keeps is only ever used for the message as it was when it was made:
the memo holds a snapshot of the message's content, its MessagePack encoding, and a memo whose snapshot no longer equals
the message's is dropped. The encoding tells apart what Python's `==` would not: `1`, `1.0` and `True`, `Decimal("1")`
and `Decimal("1.0")`, the same keys in another order, each of which is written differently. Encoding a message and
comparing bytes costs less than building and comparing plain data; the price is that the memo holds a copy of the
message's text. A message is snapshot only when the same thing is asked of it a second time (`memo_for`). A message
holding something that cannot be snapshot (an object of an unknown type in `extra`, an integer beyond 64 bits) has no
memo, and everything is made from it every time.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from onellm.messages._time import Timestamp

if TYPE_CHECKING:
    from onellm.messages._message import Message

__all__ = ["MEMO", "Memo", "memo_for", "memo_of", "snapshot"]

MEMO: Final = "_memo"
"""The key of a message's memo in its `__dict__` (left out when a message is copied or pickled)."""


def _leaf(value: Any) -> Any:
    if type(value) is Timestamp:
        return value.text
    raise TypeError(f"no snapshot of {type(value).__name__}")


# A bytearray or memoryview is copied into the encoding, so a change to it is seen too.
_ENCODER = msgspec.msgpack.Encoder(enc_hook=_leaf, decimal_format="string")


def snapshot(message: Message) -> bytes | None:
    """The message's content as bytes that differ whenever its written form would, or None when it holds an object
    that has none."""
    try:
        return _ENCODER.encode(message)
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.EncodeError):
        return None


class Memo:
    """What was made from one message, by key, while the message equals `stamp`."""

    __slots__ = ("stamp", "values")

    def __init__(self, stamp: Any) -> None:
        self.stamp = stamp
        self.values: dict[Hashable, Any] = {}

    def get(self, key: Hashable) -> Any:
        return self.values.get(key)

    def put(self, key: Hashable, value: Any) -> Any:
        self.values[key] = value
        return value


def memo_of(message: Message) -> Memo | None:
    """The message's memo, emptied when the message changed since it was made; None when the message cannot be
    snapshot (then nothing made from it is kept)."""
    stamp = snapshot(message)
    if stamp is None:
        message.__dict__.pop(MEMO, None)
        return None
    memo = message.__dict__.get(MEMO)
    if type(memo) is Memo and memo.stamp == stamp:
        return memo
    memo = message.__dict__[MEMO] = Memo(stamp)
    return memo


def memo_for(message: Message, key: Hashable) -> Memo | None:
    """`memo_of`, once `key` was asked for before: most messages are sent, or written, once (a single question), and
    a snapshot of those would be work for nothing. The first time, the message only notes the key, and None says
    make the value without keeping it."""
    found = message.__dict__.get(MEMO)
    if found is None:
        message.__dict__[MEMO] = {key}
        return None
    if type(found) is set and key not in found:
        found.add(key)
        return None
    return memo_of(message)
