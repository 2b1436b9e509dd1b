"""What the verbs return: `AskResult` (one call's answer with its usage, cost and instance) and `ScriptResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from onellm.instances import Instance
    from onellm.messages import CallWarning, Cost, Message, Usage
    from onellm.providers import FinishReason

__all__ = ["AskResult", "ScriptResult"]

T = TypeVar("T")


@dataclass(slots=True)
class AskResult(Generic[T]):
    """One model call: the answer's text (and typed `value` when an output type was asked for), its usage, priced
    cost, warnings, the saved instance, and why the model stopped."""

    text: str
    value: T | None
    usage: Usage | None
    cost: Cost
    warnings: list[CallWarning]
    instance: Instance
    finish: FinishReason | None
    message: Message
    """The instance's message for this turn (user side and answer)."""
    model: str
    """The model that answered, as `provider:model`."""
    cached: bool = False
    """True when the answer came from the runtime's result cache (nothing was sent; it cost nothing)."""

    def __str__(self) -> str:
        return self.text


@dataclass(slots=True)
class ScriptResult:
    """A scripted run: the last answer's text, every turn's result, the summed cost, and the saved instance."""

    text: str
    turns: list[AskResult[Any]]
    cost: Cost
    instance: Instance
    output: Any = None
    """The last answer's JSON when the definition has an `outputSchema`."""
    warnings: list[CallWarning] = field(default_factory=list)

    @property
    def total(self) -> Decimal:
        return self.cost.total
