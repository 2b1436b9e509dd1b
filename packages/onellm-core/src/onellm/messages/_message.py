"""Messages, tool calls and message sources, and the order index (`spec/messages.md`).

In memory a message's assistant side is one ordered sequence of parts (`Message.assistant`, reasoning and refusals
included), with each tool call placed in it by `ToolCall.after`, the number of assistant entries before the call. On
disk the sequence is split into `reasoning`, `assistant` and `extraParts`, and `partOrder` says how to put it back
together. The index is written only when the order is not the default (all reasoning, then all assistant parts, then
all tool calls); a missing or stale index means the default order; the lists themselves are never reordered or padded.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

import msgspec

from onellm._describe import type_name
from onellm.messages._base import (
    Model,
    bad,
    need_mapping,
    opt_bool,
    opt_decimal,
    opt_str,
    read_list,
    relayout,
    set_layout,
)
from onellm.messages._parts import (
    AssetPart,
    FromPart,
    Part,
    ReasoningPart,
    TextPart,
    part_from_data,
    reasoning_entry_from_data,
)
from onellm.messages._time import Timestamp
from onellm.messages._usage import CostLine, Usage

__all__ = ["Message", "MessageSource", "ToolCall"]


def _parts(value: Any, path: str) -> list[Part]:
    if value is None:
        return []
    return read_list(part_from_data, value, path)


class ToolCall(Model, kw_only=True):
    """A client tool call made in a turn, with its result once it ran."""

    id: str | None = None
    """The call id the model gave (absent in a definition's initial prompts)."""
    tool: str
    """The tool's name."""
    routine: str | None = None
    """The tool source (routine) the tool came from."""
    inputs: dict[str, Any] = msgspec.field(default_factory=dict)
    """The arguments, key order kept."""
    invalid_inputs: str | None = None
    """The argument text as the model sent it, when it was not a JSON object (kept, never dropped)."""
    result: list[Part] | None = None
    """The result parts; None while the call has not run."""
    is_error: bool = False
    """True when the tool failed; `result` then says why."""
    cost: Decimal | None = None
    """What the call cost, exact USD."""
    cost_lines: list[CostLine] = msgspec.field(default_factory=list)
    """The line items behind `cost`."""
    when: str | None = None
    """A template deciding whether the call runs (initial prompts)."""
    injected: bool = False
    """True when the runtime injected the call rather than the model asking for it."""
    injected_by: str | None = None
    """What injected it (a hook, a monitor, the ask-user answer, ...)."""
    after: int | None = None
    """How many assistant entries precede the call in the turn; None places it after all of them."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    @classmethod
    def from_data(cls, data: Mapping[str, Any], path: str = "toolCall") -> ToolCall:
        """Read a tool call from plain data. `after` is not on disk; the message's order index sets it."""
        d = need_mapping(data, path)
        tool = d.get("tool")
        if not isinstance(tool, str):
            raise bad(f"{path}.tool", "a tool call needs a tool name" if tool is None else "expected a string")
        call = cls(tool=tool)
        extra: dict[str, Any] = {}
        for key, value in d.items():
            if key == "tool":
                continue
            if key == "id":
                call.id = opt_str(value, path, ".id")
            elif key == "inputs":
                if value is not None:
                    inputs = need_mapping(value, path, ".inputs")
                    call.inputs = inputs if type(inputs) is dict else dict(inputs)
            elif key == "result":
                call.result = _read_result(call, value, path + ".result")
            elif key == "isError":
                call.is_error = opt_bool(value, path, ".isError")
            elif key == "cost":
                call.cost = opt_decimal(value, path, ".cost")
            elif key == "costLines":
                if value is not None:
                    lpath = path + ".costLines"
                    call.cost_lines = read_list(CostLine.from_data, value, lpath)
            elif key == "routine":
                call.routine = opt_str(value, path, ".routine")
            elif key == "invalidInputs":
                call.invalid_inputs = opt_str(value, path, ".invalidInputs")
            elif key == "when":
                call.when = opt_str(value, path, ".when")
            elif key == "injected":
                call.injected = opt_bool(value, path, ".injected")
            elif key == "injectedBy":
                call.injected_by = opt_str(value, path, ".injectedBy")
            else:
                extra[key] = value
        call.extra = extra
        set_layout(call, tuple(d))
        return call

    def to_data(self) -> dict[str, Any]:
        """The tool call as plain data (without `after`, which the message's order index carries)."""
        out: dict[str, Any] = {}
        if self.id is not None:
            out["id"] = self.id
        out["tool"] = self.tool
        if self.routine is not None:
            out["routine"] = self.routine
        out["inputs"] = self.inputs
        if self.invalid_inputs is not None:
            out["invalidInputs"] = self.invalid_inputs
        if self.result is not None:
            out["result"] = _write_result(self)
        if self.is_error:
            out["isError"] = True
        if self.cost is not None:
            out["cost"] = self.cost
        if self.cost_lines:
            out["costLines"] = [line.to_data() for line in self.cost_lines]
        if self.when is not None:
            out["when"] = self.when
        if self.injected:
            out["injected"] = True
        if self.injected_by is not None:
            out["injectedBy"] = self.injected_by
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, _TOOL_CALL_DEFAULTS, keys)
        return out


_TOOL_CALL_DEFAULTS: dict[str, Any] = {
    "id": None,
    "routine": None,
    "inputs": {},
    "invalidInputs": None,
    "result": None,
    "isError": False,
    "cost": None,
    "costLines": [],
    "when": None,
    "injected": False,
    "injectedBy": None,
}


def _read_result(call: ToolCall, value: Any, path: str) -> list[Part] | None:
    # The spec's shape is a list of parts. Hand-written files also give one part, or a bare string; the shape is
    # remembered so that such a file is written back as it was.
    if value is None:
        return None
    if isinstance(value, str):
        call.__dict__["_result_shape"] = "text"
        return [TextPart(value)]
    if isinstance(value, Mapping):
        call.__dict__["_result_shape"] = "part"
        return [part_from_data(value, path)]
    return _parts(value, path)


def _write_result(call: ToolCall) -> Any:
    result = call.result
    assert result is not None
    shape = call.__dict__.get("_result_shape")
    if shape is not None and len(result) == 1:
        only = result[0]
        if shape == "text" and type(only) is TextPart and not only.annotations and not only.extra:
            return only.text
        if shape == "part":
            return only.to_data()
    return [p.to_data() for p in result]


class MessageSource(Model, kw_only=True):
    """Who produced a message: `user`, `api`, `agent`, `monitor`, `runtime`, ..."""

    kind: str | None = None
    """The kind of producer."""
    name: str | None = None
    """Which one (an agent's or monitor's name, a user id)."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know (instance ids, run ids, ...), written back unchanged."""

    @classmethod
    def from_data(cls, data: Mapping[str, Any], path: str = "source") -> MessageSource:
        """Read a message source from plain data."""
        d = need_mapping(data, path)
        src = cls()
        extra: dict[str, Any] = {}
        for key, value in d.items():
            if key == "kind":
                src.kind = opt_str(value, path, ".kind")
            elif key == "name":
                src.name = opt_str(value, path, ".name")
            else:
                extra[key] = value
        src.extra = extra
        set_layout(src, tuple(d))
        return src

    def to_data(self) -> dict[str, Any]:
        """The source as plain data."""
        out: dict[str, Any] = {}
        if self.kind is not None:
            out["kind"] = self.kind
        if self.name is not None:
            out["name"] = self.name
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, {"kind": None, "name": None}, keys)
        return out


_HOMES: dict[type, str] = {TextPart: "a", AssetPart: "a", FromPart: "a", ReasoningPart: "r"}


def _home(part: Part) -> str:
    """The disk list a part of the assistant sequence goes to by default: `r`, `a` or `x` (extraParts)."""
    return _HOMES.get(type(part), "x")


class Message(Model, kw_only=True):
    """One conversation turn."""

    id: str | None = None
    """The message id (the runtime stamps one when the message enters an instance)."""
    user: list[Part] = msgspec.field(default_factory=list)
    """Content from the user."""
    assistant: list[Part] = msgspec.field(default_factory=list)
    """Content from the model, in order: text, reasoning, refusals, hosted tool calls, ..."""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    """Client tool calls made in this turn, each placed in `assistant` by its `after`."""
    date_time: Timestamp | None = None
    """When the turn happened (an aware `datetime` or RFC 3339 text given here becomes a `Timestamp`)."""
    source: MessageSource | None = None
    """Who produced the message."""
    cache: bool = False
    """A cache breakpoint after this message."""
    usage: Usage | None = None
    """Tokens and cost of the call that produced the message."""
    when: str | None = None
    """A template deciding whether the message is used (initial prompts)."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    def __post_init__(self) -> None:
        stamp: Any = self.date_time
        if stamp is not None and type(stamp) is not Timestamp:
            if isinstance(stamp, datetime | str):
                try:
                    self.date_time = Timestamp.coerce(stamp)
                except ValueError as exc:
                    raise bad("message.dateTime", str(exc)) from None
            else:
                raise TypeError(f"date_time takes a Timestamp, an aware datetime or RFC 3339 text, not {stamp!r}")
        if self.tool_calls:
            n = len(self.assistant)
            for call in self.tool_calls:
                after = call.after
                if after is not None:
                    if after < 0:
                        raise ValueError(f"tool call {call.id or call.tool!r}: after must be zero or more")
                    if after >= n:
                        call.after = None

    @property
    def reasoning(self) -> list[ReasoningPart]:
        """The reasoning parts of the assistant side, in order."""
        return [p for p in self.assistant if type(p) is ReasoningPart]

    @property
    def text(self) -> str:
        """The assistant's text parts joined together."""
        parts = self.assistant
        if not parts:
            return ""
        if len(parts) == 1:  # the usual answer: one text part, or none
            part = parts[0]
            if type(part) is not TextPart:
                return ""
            text = part.text
            if type(text) is str:
                return text
        return "".join(p.text for p in parts if type(p) is TextPart)

    @property
    def user_text(self) -> str:
        """The user's text parts joined together."""
        return "".join(p.text for p in self.user if type(p) is TextPart)

    def entries(self) -> list[Part | ToolCall]:
        """The assistant side as one sequence: parts with the tool calls placed among them by `after`."""
        calls = self.tool_calls
        if not calls:
            return list(self.assistant)
        n = len(self.assistant)
        at: dict[int, list[ToolCall]] = {}
        for call in calls:
            pos = n if call.after is None or call.after > n else call.after
            at.setdefault(pos, []).append(call)
        result: list[Part | ToolCall] = []
        for i, part in enumerate(self.assistant):
            if i in at:
                result.extend(at[i])
            result.append(part)
        result.extend(at.get(n, ()))
        return result

    # -- reading ---------------------------------------------------------------------------------------------------

    @classmethod
    def from_data(cls, data: Mapping[str, Any], path: str = "message") -> Message:
        """Read a message from plain data (the shape of `spec/messages.md`, as YAML or JSON carry it).

        Raises:
            BadDefinitionError: a value has the wrong type or shape; `path` names where (`message.toolCalls[0].id`).
        """
        d = need_mapping(data, path)
        msg = cls()
        extra: dict[str, Any] = {}
        a_raw: Any = None
        r_raw: Any = None
        x_raw: Any = None
        order: Any = None
        calls: list[ToolCall] = []
        for key, value in d.items():
            if key == "id":
                msg.id = opt_str(value, path, ".id")
            elif key == "user":
                msg.user = _parts(value, path + ".user")
            elif key == "assistant":
                a_raw = value
            elif key == "toolCalls":
                if value is not None:
                    tpath = path + ".toolCalls"
                    calls = read_list(ToolCall.from_data, value, tpath)
            elif key == "reasoning":
                r_raw = value
            elif key == "dateTime":
                msg.date_time = _read_timestamp(value, path, ".dateTime")
            elif key == "source":
                msg.source = None if value is None else MessageSource.from_data(value, path + ".source")
            elif key == "cache":
                msg.cache = opt_bool(value, path, ".cache")
            elif key == "usage":
                msg.usage = None if value is None else Usage.from_data(value, path + ".usage")
            elif key == "when":
                msg.when = opt_str(value, path, ".when")
            elif key == "partOrder":
                order = value
            elif key == "extraParts":
                x_raw = value
            else:
                extra[key] = value
        msg.extra = extra
        msg.tool_calls = calls
        a_list = [] if a_raw is None else read_list(part_from_data, a_raw, path + ".assistant")
        r_list = [] if r_raw is None else read_list(reasoning_entry_from_data, r_raw, path + ".reasoning")
        x_list = [] if x_raw is None else read_list(part_from_data, x_raw, path + ".extraParts")
        if order is None and not r_list and not x_list and not calls:
            msg.assistant = a_list
            if a_list and any(_HOMES.get(type(p)) != "a" for p in a_list):
                msg.__dict__["_placement"] = tuple(f"a{i}" for i in range(len(a_list)))
        else:
            _assemble(msg, a_list, r_list, x_list, calls, order)
        set_layout(msg, tuple(d))
        return msg

    # -- writing ---------------------------------------------------------------------------------------------------

    def to_data(self) -> dict[str, Any]:
        """The message as plain data: camelCase keys in the spec's order, the order index only when needed."""
        return self._data(True)

    def _data(self, with_usage: bool) -> dict[str, Any]:
        """`to_data`, without the `usage` key when `with_usage` is false (a writer that writes the usage itself)."""
        out: dict[str, Any] = {}
        if self.id is not None:
            out["id"] = self.id
        if self.user:
            out["user"] = [p.to_data() for p in self.user]
        keys = self._keys
        a_out, r_out, x_out, part_order = _split(self, keys is not None and "partOrder" in keys)
        if a_out:
            out["assistant"] = a_out
        if self.tool_calls:
            out["toolCalls"] = [call.to_data() for call in self.tool_calls]
        if r_out:
            out["reasoning"] = r_out
        if self.date_time is not None:
            out["dateTime"] = self.date_time.text
        if self.source is not None:
            out["source"] = self.source.to_data()
        if self.cache:
            out["cache"] = True
        if self.usage is not None and with_usage:
            out["usage"] = self.usage.to_data()
        if self.when is not None:
            out["when"] = self.when
        if part_order is not None:
            out["partOrder"] = part_order
        if x_out:
            out["extraParts"] = x_out
        if self.extra:
            out.update(self.extra)
        if keys is not None:
            return relayout(out, _MESSAGE_DEFAULTS, keys)
        return out


_MESSAGE_DEFAULTS: dict[str, Any] = {
    "id": None,
    "user": [],
    "assistant": [],
    "toolCalls": [],
    "reasoning": [],
    "dateTime": None,
    "source": None,
    "cache": False,
    "usage": None,
    "when": None,
    "extraParts": [],
}


def _read_timestamp(value: Any, path: str, key: str = "") -> Timestamp | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return Timestamp(value)
        except ValueError as exc:
            raise bad(path + key, str(exc)) from None
    if isinstance(value, datetime):
        # A YAML loader that resolves timestamps hands over a datetime; keep what it holds.
        try:
            return Timestamp.from_datetime(value)
        except ValueError as exc:
            raise bad(path + key, str(exc)) from None
    raise bad(path + key, f"expected an RFC 3339 timestamp, found {type_name(value)}")


def _assemble(
    msg: Message, a_list: list[Part], r_list: list[Part], x_list: list[Part], calls: list[ToolCall], order: Any
) -> None:
    """Build the assistant sequence from the disk lists and the order index (default order when it is stale).

    When a part sits in a list other than its kind's usual one, or the index names a list's entries out of their
    list order, the message remembers each entry's slot (`_placement`), so writing puts every part back in the list
    and at the position it was read from.
    """
    if order is not None:
        followed = _follow_index(order, a_list, r_list, x_list, calls)
        if followed is not None:
            msg.assistant = followed[0]
            if followed[1] is not None:
                msg.__dict__["_placement"] = followed[1]
            return
    # Default order: reasoning, then assistant parts, then (only when the index is missing or stale) the extra parts;
    # tool calls after all of them.
    if not r_list and not x_list:
        msg.assistant = a_list
    else:
        msg.assistant = r_list + a_list + x_list
    homes = _HOMES
    natural = True
    for part in r_list:
        if type(part) is not ReasoningPart:
            natural = False
    for part in a_list:
        if homes.get(type(part)) != "a":
            natural = False
    for part in x_list:
        if type(part) in homes:
            natural = False
    if not natural:
        msg.__dict__["_placement"] = tuple(
            f"{letter}{i}" for letter, items in (("r", r_list), ("a", a_list), ("x", x_list)) for i in range(len(items))
        )
    # Freshly read tool calls have no `after`: they sit at the end.


def _follow_index(
    order: Any, a_list: list[Part], r_list: list[Part], x_list: list[Part], calls: list[ToolCall]
) -> tuple[list[Part], tuple[str, ...] | None] | None:
    """The sequence named by `order` and, when not natural, each entry's slot; None when the index is stale."""
    if not isinstance(order, list):
        return None
    if len(order) != len(a_list) + len(r_list) + len(x_list) + len(calls):
        return None
    lists = {"a": a_list, "r": r_list, "x": x_list}
    next_index = {"a": 0, "r": 0, "x": 0}
    seen: set[str] = set()
    seq: list[Part] = []
    slots: list[str] = []
    afters: list[int] = [0] * len(calls)
    natural = True
    for token in order:
        if not isinstance(token, str) or len(token) < 2 or token in seen:
            return None
        letter = token[0]
        digits = token[1:]
        if len(digits) > 9 or not digits.isdigit() or not digits.isascii() or (len(digits) > 1 and digits[0] == "0"):
            return None
        index = int(digits)
        seen.add(token)
        if letter == "t":
            if index >= len(calls):
                return None
            afters[index] = len(seq)
            continue
        items = lists.get(letter)
        if items is None or index >= len(items):
            return None
        part = items[index]
        seq.append(part)
        slots.append(token)
        if natural and (_home(part) != letter or index != next_index[letter]):
            natural = False
        next_index[letter] += 1
    n = len(seq)
    for call, after in zip(calls, afters, strict=True):
        call.after = None if after >= n else after
    return seq, (None if natural else tuple(slots))


def _split(
    msg: Message, force_index: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[str] | None]:
    """Split the assistant sequence into the disk lists and, when the order is not the default, the index."""
    seq = msg.assistant
    calls = msg.tool_calls
    n = len(seq)
    placement: tuple[str, ...] | None = msg.__dict__.get("_placement")
    if placement is not None and len(placement) == n:
        return _split_placed(seq, calls, placement, force_index)
    a_out: list[dict[str, Any]] = []
    r_out: list[dict[str, Any]] = []
    x_out: list[dict[str, Any]] = []
    slots: list[str] = []
    default = True
    for part in seq:
        letter = _home(part)
        if letter == "a":
            slots.append(f"a{len(a_out)}")
            a_out.append(part.to_data())
        elif letter == "r":
            if a_out:
                default = False
            slots.append(f"r{len(r_out)}")
            r_out.append(part.to_data())
        else:
            slots.append(f"x{len(x_out)}")
            x_out.append(part.to_data())
            default = False
    if default:
        default = all(call.after is None or call.after >= n for call in calls)
    if default and not force_index:
        return a_out, r_out, x_out, None
    return a_out, r_out, x_out, _tokens(slots, calls)


def _split_placed(
    seq: list[Part], calls: list[ToolCall], placement: tuple[str, ...], force_index: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[str] | None]:
    counts = {"a": 0, "r": 0, "x": 0}
    for slot in placement:
        counts[slot[0]] += 1
    lists: dict[str, list[Any]] = {letter: [None] * count for letter, count in counts.items()}
    for part, slot in zip(seq, placement, strict=True):
        lists[slot[0]][int(slot[1:])] = part.to_data()
    natural = [f"r{i}" for i in range(counts["r"])] + [f"a{i}" for i in range(counts["a"])]
    default = (
        counts["x"] == 0
        and list(placement) == natural
        and all(call.after is None or call.after >= len(seq) for call in calls)
    )
    tokens = None if default and not force_index else _tokens(list(placement), calls)
    return lists["a"], lists["r"], lists["x"], tokens


def _tokens(slots: list[str], calls: list[ToolCall]) -> list[str]:
    """The order index: each entry's slot, with the tool calls placed by `after`."""
    if not calls:
        return slots
    n = len(slots)
    at: dict[int, list[int]] = {}
    for ti, call in enumerate(calls):
        pos = n if call.after is None or call.after > n else call.after
        at.setdefault(pos, []).append(ti)
    tokens: list[str] = []
    for i, slot in enumerate(slots):
        if i in at:
            tokens.extend(f"t{ti}" for ti in at[i])
        tokens.append(slot)
    tokens.extend(f"t{ti}" for ti in at.get(n, ()))
    return tokens
