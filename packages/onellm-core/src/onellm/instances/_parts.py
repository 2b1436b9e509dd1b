"""The small records an instance holds besides its messages: pending approvals, compactions, the failure that put it in
error, an open `ask_user` call and where a fork came from (`spec/instances.md`).

Each reads from and writes to plain data with `from_data` / `to_data`, keeps keys it does not know in `extra` (written
back after the known keys), treats a null value as an absent key, and keeps a list written empty as an empty list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from onellm._describe import type_name
from onellm.errors import BadDefinitionError
from onellm.messages import Timestamp

__all__ = ["AskUser", "Compaction", "ForkOrigin", "InstanceFailure", "PendingApproval"]


# -- plain-value checks -------------------------------------------------------------------------------------------------


def bad(path: str, message: str) -> BadDefinitionError:
    return BadDefinitionError(message, path=path)


def need_mapping(value: Any, path: str) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    raise bad(path, f"expected a mapping, found {type_name(value)}")


def opt_str(value: Any, path: str) -> str | None:
    if value is None or type(value) is str:
        return value
    raise bad(path, f"expected a string, found {type_name(value)}")


def opt_bool(value: Any, path: str) -> bool | None:
    if value is None or value is True or value is False:
        return value
    raise bad(path, f"expected true or false, found {type_name(value)}")


def opt_int(value: Any, path: str) -> int | None:
    if value is None or (type(value) is int):
        return value
    raise bad(path, f"expected a whole number, found {type_name(value)}")


def opt_number(value: Any, path: str) -> int | Decimal | float | None:
    if value is None or (isinstance(value, int | Decimal | float) and not isinstance(value, bool)):
        return value
    raise bad(path, f"expected a number, found {type_name(value)}")


def opt_decimal(value: Any, path: str, *, text_ok: bool = False) -> Decimal | None:
    if value is None:
        return None
    if type(value) is Decimal and value.is_finite():
        return value
    if type(value) is int:
        return Decimal(value)
    if type(value) is float and value == value and abs(value) != float("inf"):
        return Decimal(repr(value))
    if type(value) is str and text_ok:
        try:
            parsed = Decimal(value.strip())
        except InvalidOperation:
            parsed = None
        if parsed is not None and parsed.is_finite():
            return parsed
        raise bad(path, f"expected a decimal number, found the string {value!r}")
    raise bad(path, f"expected a finite number, found {type_name(value)}")


def opt_list(value: Any, path: str) -> list[Any] | None:
    if value is None:
        return None
    if isinstance(value, list):
        return value
    raise bad(path, f"expected a list, found {type_name(value)}")


def opt_timestamp(value: Any, path: str) -> Timestamp | None:
    if value is None:
        return None
    if type(value) is str:
        try:
            return Timestamp(value)
        except ValueError as exc:
            raise bad(path, str(exc)) from None
    raise bad(path, f"expected an RFC 3339 timestamp, found {type_name(value)}")


def opt_str_list(value: Any, path: str) -> list[str] | None:
    items = opt_list(value, path)
    if items is None:
        return None
    for i, item in enumerate(items):
        if type(item) is not str:
            raise bad(f"{path}[{i}]", f"expected a string, found {type_name(item)}")
    return list(items)


def plain_copy(value: Any) -> Any:
    """A copy of a plain value whose containers are new (so later edits of the original do not show in it)."""
    if isinstance(value, dict):
        return {k: plain_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_copy(v) for v in value]
    return value


def _extra(data: Mapping[str, Any], known: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in known and v is not None}


def _put_extra(out: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        if value is not None and key not in out:
            out[key] = plain_copy(value)
    return out


# -- the records --------------------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class PendingApproval:
    """A held tool call waiting for a person's decision (`pendingApprovals` entry)."""

    tool_call_id: str | None = None
    """The id of the held call."""
    tool: str | None = None
    """The tool's name."""
    message_id: str | None = None
    """The message that holds the call, once that message has been written."""
    inputs: dict[str, Any] | None = None
    """The call's arguments, as the model sent them."""
    reason: str | None = None
    """Why approval is needed; after a denial, the person's note."""
    requested_at: Timestamp | None = None
    """When the approval was asked for."""
    decision: str | None = None
    """`approved` or `denied` once decided; None while pending."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    _KEYS = frozenset({"toolCallId", "tool", "messageId", "inputs", "reason", "requestedAt", "decision"})

    @property
    def decided(self) -> bool:
        """True once the entry holds a decision."""
        return self.decision is not None

    def approve(self) -> None:
        """Record an approval."""
        self.decision = "approved"

    def deny(self, reason: str | None = None) -> None:
        """Record a denial, with the person's note when given."""
        self.decision = "denied"
        if reason is not None:
            self.reason = reason

    @classmethod
    def from_data(cls, data: Any, path: str = "pendingApprovals[0]") -> PendingApproval:
        """Read an entry from plain data.

        Raises:
            BadDefinitionError: a value has the wrong type; `path` names it.
        """
        d = need_mapping(data, path)
        inputs = d.get("inputs")
        if inputs is not None and not isinstance(inputs, Mapping):
            raise bad(f"{path}.inputs", f"expected a mapping, found {type_name(inputs)}")
        return cls(
            tool_call_id=opt_str(d.get("toolCallId"), f"{path}.toolCallId"),
            tool=opt_str(d.get("tool"), f"{path}.tool"),
            message_id=opt_str(d.get("messageId"), f"{path}.messageId"),
            inputs=None if inputs is None else dict(inputs),
            reason=opt_str(d.get("reason"), f"{path}.reason"),
            requested_at=opt_timestamp(d.get("requestedAt"), f"{path}.requestedAt"),
            decision=opt_str(d.get("decision"), f"{path}.decision"),
            extra=_extra(d, cls._KEYS),
        )

    def to_data(self) -> dict[str, Any]:
        """The entry as plain data, keys in the spec's order, unknown keys last."""
        out: dict[str, Any] = {}
        if self.tool_call_id is not None:
            out["toolCallId"] = self.tool_call_id
        if self.tool is not None:
            out["tool"] = self.tool
        if self.message_id is not None:
            out["messageId"] = self.message_id
        if self.inputs is not None:
            out["inputs"] = plain_copy(self.inputs)
        if self.reason is not None:
            out["reason"] = self.reason
        if self.requested_at is not None:
            out["requestedAt"] = self.requested_at.text
        if self.decision is not None:
            out["decision"] = self.decision
        return _put_extra(out, self.extra)


@dataclass(kw_only=True)
class Compaction:
    """One context compaction (`compactions` entry)."""

    strategy: str | None = None
    """`clearToolResults`, `compact` or `providerNative`."""
    at: Timestamp | None = None
    """When it ran."""
    replaced_message_ids: list[str] | None = None
    """The messages it replaced."""
    summary_message_id: str | None = None
    """The summary message it added (strategy `compact`)."""
    cost: Decimal | None = None
    """What its own model call cost, in USD, when it made one."""
    at_message_id: str | None = None
    """The model call whose context triggered it (written as `atMessageId`)."""
    replaced_cost: Decimal | None = None
    """What the removed messages and their tool calls cost (written as `replacedCost`, a decimal in a string)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    _KEYS = frozenset(
        {"strategy", "at", "replacedMessageIds", "summaryMessageId", "cost", "atMessageId", "replacedCost"}
    )

    @classmethod
    def from_data(cls, data: Any, path: str = "compactions[0]") -> Compaction:
        """Read an entry from plain data.

        Raises:
            BadDefinitionError: a value has the wrong type; `path` names it.
        """
        d = need_mapping(data, path)
        return cls(
            strategy=opt_str(d.get("strategy"), f"{path}.strategy"),
            at=opt_timestamp(d.get("at"), f"{path}.at"),
            replaced_message_ids=opt_str_list(d.get("replacedMessageIds"), f"{path}.replacedMessageIds"),
            summary_message_id=opt_str(d.get("summaryMessageId"), f"{path}.summaryMessageId"),
            cost=opt_decimal(d.get("cost"), f"{path}.cost"),
            at_message_id=opt_str(d.get("atMessageId"), f"{path}.atMessageId"),
            replaced_cost=opt_decimal(d.get("replacedCost"), f"{path}.replacedCost", text_ok=True),
            extra=_extra(d, cls._KEYS),
        )

    def to_data(self) -> dict[str, Any]:
        """The entry as plain data, keys in the spec's order, unknown keys last."""
        out: dict[str, Any] = {}
        if self.strategy is not None:
            out["strategy"] = self.strategy
        if self.at is not None:
            out["at"] = self.at.text
        if self.replaced_message_ids is not None:
            out["replacedMessageIds"] = list(self.replaced_message_ids)
        if self.summary_message_id is not None:
            out["summaryMessageId"] = self.summary_message_id
        if self.cost is not None:
            out["cost"] = self.cost
        if self.at_message_id is not None:
            out["atMessageId"] = self.at_message_id
        if self.replaced_cost is not None:
            out["replacedCost"] = format(self.replaced_cost, "f")
        return _put_extra(out, self.extra)


@dataclass(kw_only=True)
class InstanceFailure:
    """The failure that put an instance in `error` (the `error` key)."""

    type: str | None = None
    """The kind of failure, for example `MaxIterations` or `RateLimitError`."""
    message: str | None = None
    """What happened, for a person."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    _KEYS = frozenset({"type", "message"})

    @classmethod
    def from_data(cls, data: Any, path: str = "error") -> InstanceFailure:
        """Read the record from plain data.

        Raises:
            BadDefinitionError: a value has the wrong type; `path` names it.
        """
        d = need_mapping(data, path)
        return cls(
            type=opt_str(d.get("type"), f"{path}.type"),
            message=opt_str(d.get("message"), f"{path}.message"),
            extra=_extra(d, cls._KEYS),
        )

    def to_data(self) -> dict[str, Any]:
        """The record as plain data."""
        out: dict[str, Any] = {}
        if self.type is not None:
            out["type"] = self.type
        if self.message is not None:
            out["message"] = self.message
        return _put_extra(out, self.extra)


@dataclass(kw_only=True)
class AskUser:
    """An `ask_user` call that has no answer yet (the `askUser` key)."""

    tool_call_id: str | None = None
    """The unanswered call."""
    message_id: str | None = None
    """The message that holds it."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    _KEYS = frozenset({"toolCallId", "messageId"})

    @classmethod
    def from_data(cls, data: Any, path: str = "askUser") -> AskUser:
        """Read the record from plain data.

        Raises:
            BadDefinitionError: a value has the wrong type; `path` names it.
        """
        d = need_mapping(data, path)
        return cls(
            tool_call_id=opt_str(d.get("toolCallId"), f"{path}.toolCallId"),
            message_id=opt_str(d.get("messageId"), f"{path}.messageId"),
            extra=_extra(d, cls._KEYS),
        )

    def to_data(self) -> dict[str, Any]:
        """The record as plain data."""
        out: dict[str, Any] = {}
        if self.tool_call_id is not None:
            out["toolCallId"] = self.tool_call_id
        if self.message_id is not None:
            out["messageId"] = self.message_id
        return _put_extra(out, self.extra)


@dataclass(kw_only=True)
class ForkOrigin:
    """Where a fork came from (the `forkedFrom` key): the source instance and the last message copied."""

    instance_id: str | None = None
    """The instance that was forked."""
    message_id: str | None = None
    """The last message copied into the fork; None when the source had no messages."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    _KEYS = frozenset({"instanceId", "messageId"})

    @classmethod
    def from_data(cls, data: Any, path: str = "forkedFrom") -> ForkOrigin:
        """Read the record from plain data.

        Raises:
            BadDefinitionError: a value has the wrong type; `path` names it.
        """
        d = need_mapping(data, path)
        return cls(
            instance_id=opt_str(d.get("instanceId"), f"{path}.instanceId"),
            message_id=opt_str(d.get("messageId"), f"{path}.messageId"),
            extra=_extra(d, cls._KEYS),
        )

    def to_data(self) -> dict[str, Any]:
        """The record as plain data."""
        out: dict[str, Any] = {}
        if self.instance_id is not None:
            out["instanceId"] = self.instance_id
        if self.message_id is not None:
            out["messageId"] = self.message_id
        return _put_extra(out, self.extra)
