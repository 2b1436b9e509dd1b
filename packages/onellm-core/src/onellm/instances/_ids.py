"""Instance ids: 1 to 128 characters of ASCII letters, digits, `-` and `_` (`spec/instances.md`, "Layout")."""

from __future__ import annotations

import re
import secrets

from onellm.errors import InvalidInstanceIdError

__all__ = ["InvalidInstanceIdError", "is_valid_instance_id", "new_instance_id", "validate_instance_id"]

_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def is_valid_instance_id(value: object) -> bool:
    """True when `value` is a valid instance id."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def validate_instance_id(value: object) -> str:
    """Return `value` when it is a valid instance id.

    Raises:
        InvalidInstanceIdError: it is not a string of 1 to 128 ASCII letters, digits, `-` and `_`.
    """
    if isinstance(value, str) and _ID.fullmatch(value) is not None:
        return value
    if not isinstance(value, str):
        reason = f"an instance id must be a string, not {type(value).__name__}"
    elif not value:
        reason = "an instance id must not be empty"
    elif len(value) > 128:
        reason = f"an instance id has at most 128 characters; this one has {len(value)}"
    else:
        bad = next(ch for ch in value if not (ch.isascii() and (ch.isalnum() or ch in "-_")))
        reason = f"an instance id holds only ASCII letters, digits, '-' and '_'; {bad!r} is not allowed in {value!r}"
    raise InvalidInstanceIdError(reason, instance_id=value)


def new_instance_id() -> str:
    """A fresh random id: 26 lower-case hexadecimal digits."""
    return secrets.token_hex(13)
