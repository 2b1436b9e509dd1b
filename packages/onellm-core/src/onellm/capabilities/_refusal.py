"""How every grant says no: a `CapabilityDeniedError` whose message names what was refused and the rule that refused
it, and whose `target` and `rule` carry the same two facts for code."""

from __future__ import annotations

from onellm.errors import CapabilityDeniedError

__all__ = ["denial", "shown"]

_SHOWN_CHARS = 200


def denial(message: str, *, target: str, rule: str) -> CapabilityDeniedError:
    """A refusal that names its target in the message and its rule both in the message and in `rule`."""
    return CapabilityDeniedError(f"{message} (rule: {rule})", target=target, rule=rule)


def shown(text: str) -> str:
    """A path as given, for a message: whole up to 200 characters, else its head and tail around an ellipsis (the
    refusal's `target` keeps it whole)."""
    if len(text) <= _SHOWN_CHARS:
        return text
    return f"{text[:120]}...{text[-60:]}"
