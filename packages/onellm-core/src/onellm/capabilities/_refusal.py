"""How every grant says no: a `CapabilityDeniedError` whose message names what was refused and the rule that refused
it, and whose `target` and `rule` carry the same two facts for code."""

from __future__ import annotations

from onellm.errors import CapabilityDeniedError

__all__ = ["denial"]


def denial(message: str, *, target: str, rule: str) -> CapabilityDeniedError:
    """A refusal that names its target in the message and its rule both in the message and in `rule`."""
    return CapabilityDeniedError(f"{message} (rule: {rule})", target=target, rule=rule)
