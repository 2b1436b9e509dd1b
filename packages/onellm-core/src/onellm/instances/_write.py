"""Message blocks of the common shapes written straight from the objects, instead of through their plain data.

Every turn writes one new block: text parts, tool calls with their inputs and text results, the time and the source,
and for a priced turn its usage with the cost lines, most of its lines. The general path builds the message's plain
data and hands it to the YAML writer, which looks at each key and value in turn; here the lines of the common shapes
are put together directly. What is written is byte for byte what the general path writes (`yamlio.emit_block` of the
message's plain data); anything outside the common shapes (a remembered key layout, extension keys, counters, a value
of another type, text spanning lines, an order index, a subclass, which may write itself otherwise) gets None, and the
general path writes it.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from onellm.messages import CostLine, Message, MessageSource, Part, TextPart, Timestamp, ToolCall, Usage
from onellm.yamlio import decimal_text, emit_mapping, one_line

__all__ = ["message_lines", "usage_lines"]


def _text(value: object) -> str | None:
    """A one-line string as written, or None for anything else."""
    if type(value) is str and "\n" not in value:
        return one_line(value)
    return None


def _line(out: list[str], head: str, key: str, value: object) -> bool:
    """Add the line `key: value` after `head` for a one-line string `value`; False (nothing added) for anything else."""
    text = _text(value)
    if text is None:
        return False
    out.append(f"{head}{key}: {text}\n")
    return True


def _number(value: object) -> str | None:
    """An int or Decimal as written, or None for anything else."""
    if type(value) is int:
        return int.__repr__(value)
    if type(value) is Decimal:
        return decimal_text(value)
    return None


_RATES: dict[tuple[object, ...], tuple[object, object, object, tuple[str, str, str]]] = {}
"""The fixed lines of cost lines already written, by the objects holding their rate (kept in the entry, so their ids
stay theirs), their counter, label, source and date, and the block's indent: the same few catalog entries price every
turn, with the same objects. Each entry holds those objects, then the text before the quantity, between the
quantity and the amount, and after the amount."""
_RATES_KEPT = 1000


def _line_tail(label: object, source: object, as_of: object, more: str) -> str | None:
    """The `label`, `source` and `asOf` lines of a cost line, or None when one is outside the common shape."""
    out: list[str] = []
    if label is not None and not _line(out, more, "label", label):
        return None
    if source is not None and not _line(out, more, "source", source):
        return None
    if as_of is not None:
        if type(as_of) is not date:
            return None
        out.append(f"{more}asOf: {one_line(as_of.isoformat())}\n")
    return "".join(out)


def _rate_lines(line: CostLine, indent: int) -> tuple[str, str, str] | None:
    """The lines of a cost line around its quantity and amount, or None when one is outside the common shape."""
    counter, per, unit_price, multiplier = line.counter, line.per, line.unit_price, line.multiplier
    label, source, as_of = line.label, line.source, line.as_of
    if not (
        type(counter) is str
        and (label is None or type(label) is str)
        and (source is None or type(source) is str)
        and (as_of is None or type(as_of) is date)
    ):
        return None
    key = (id(per), id(unit_price), id(multiplier), counter, label, source, as_of, indent)
    found = _RATES.get(key)
    if found is not None and found[0] is per and found[1] is unit_price and found[2] is multiplier:
        return found[3]
    more = " " * (indent + 6)
    dash = more[:-2] + "- "
    counter_text = _text(counter)
    per_text = _number(per)
    if counter_text is None or per_text is None or type(unit_price) is not Decimal or type(multiplier) is not Decimal:
        return None
    tail = _line_tail(label, source, as_of, more)
    if tail is None:
        return None
    head = f"{dash}counter: {counter_text}\n{more}quantity: "
    middle = (
        f"\n{more}per: {per_text}\n{more}unitPrice: {decimal_text(unit_price)}\n"
        f"{more}multiplier: {decimal_text(multiplier)}\n{more}amount: "
    )
    lines = (head, middle, "\n" + tail)
    if len(_RATES) < _RATES_KEPT:
        _RATES[key] = (per, unit_price, multiplier, lines)
    return lines


_HEADS: dict[tuple[str | None, str | None, int], str] = {}
"""The first lines of usages already written, by their model, service tier and the block's indent: `usage:`, the model
and the tier, and the `inputTokens` key. Every turn of a run has the same."""
_HEADS_KEPT = 1000


def _usage_head(model: str | None, tier: str | None, indent: int) -> str | None:
    """The lines of a usage before its input token count, or None when the model or tier spans lines."""
    key = (model, tier, indent)
    found = _HEADS.get(key)
    if found is None:
        pad = " " * (indent + 4)
        out = [" " * (indent + 2) + "usage:\n"]
        if model is not None and not _line(out, pad, "model", model):
            return None
        if tier is not None and not _line(out, pad, "serviceTier", tier):
            return None
        out.append(f"{pad}inputTokens: ")
        found = "".join(out)
        if len(_HEADS) < _HEADS_KEPT and len(found) < 1000:
            _HEADS[key] = found
    return found


def usage_lines(usage: Usage, indent: int) -> str | None:
    """The `usage:` key and its lines in the block of a message whose dash sits at column `indent`, or None when the
    usage is outside the common shape."""
    if type(usage) is not Usage or usage._keys is not None or usage.extra or usage.counters:
        return None
    model, tier = usage.model, usage.service_tier
    input_tokens, output_tokens = usage.input_tokens, usage.output_tokens
    if (
        type(input_tokens) is not int
        or type(output_tokens) is not int
        or (model is not None and type(model) is not str)
        or (tier is not None and type(tier) is not str)
    ):
        return None
    head = _usage_head(model, tier, indent)
    if head is None:
        return None
    pad = " " * (indent + 4)
    # An exact int is written as its decimal digits: what an f-string gives it.
    out = [f"{head}{input_tokens}\n{pad}outputTokens: {output_tokens}\n"]
    for key, value in (
        ("cacheCreationInputTokens", usage.cache_creation_input_tokens),
        ("cacheReadInputTokens", usage.cache_read_input_tokens),
    ):
        if value:
            if type(value) is not int:
                return None
            out.append(f"{pad}{key}: {value}\n")
    cost = usage.cost
    if cost is not None:
        if type(cost) is not Decimal:
            return None
        out.append(f"{pad}cost: {decimal_text(cost)}\n")
    if usage.cost_lines:
        out.append(f"{pad}costLines:\n")
        for line in usage.cost_lines:
            if type(line) is not CostLine or line._keys is not None or line.extra:
                return None
            quantity, amount = line.quantity, line.amount
            if type(amount) is not Decimal:
                return None
            if type(quantity) is Decimal:
                count = decimal_text(quantity)
            elif type(quantity) is int:
                count = f"{quantity}"
            else:
                return None
            rate = _rate_lines(line, indent)
            if rate is None:
                return None
            out.append(f"{rate[0]}{count}{rate[1]}{decimal_text(amount)}{rate[2]}")
    return "".join(out)


def _plain_texts(parts: list[Part], dash: str, more: str, out: list[str]) -> bool:
    """`- text: ...` entries of text parts without annotations, extension keys or key layout, each on one line;
    False when a part is outside that shape."""
    for part in parts:
        if type(part) is not TextPart or part._keys is not None or part.annotations or part.extra:
            return False
        text = _text(part.text)
        if text is None:
            return False
        out.append(f"{dash}text: {text}\n")
    return True


def message_lines(msg: Message, indent: int) -> str | None:
    """The lines of the block of `msg` (dash at column `indent`) before its `usage`, written straight from the
    objects: text parts, tool calls with their inputs and text results, the time and the source. None when the message
    is outside that shape (the general path then writes it), or has nothing before its usage."""
    if (
        type(msg) is not Message
        or msg._keys is not None
        or msg.extra
        or msg.when is not None
        or "_placement" in msg.__dict__
    ):
        return None
    pad = " " * (indent + 2)
    out: list[str] = []
    lead = " " * indent + "- "
    if msg.id is not None:
        text = _text(msg.id)
        if text is None:
            return None
        out.append(f"{lead}id: {text}\n")
        lead = pad
    dash = pad + "- "
    more = pad + "  "
    if msg.user:
        out.append(f"{lead}user:\n")
        lead = pad
        if not _plain_texts(msg.user, dash, more, out):
            return None
    calls = msg.tool_calls
    n = len(msg.assistant)
    if n:
        out.append(f"{lead}assistant:\n")
        lead = pad
        if not _plain_texts(msg.assistant, dash, more, out):
            return None
    if calls:
        out.append(f"{lead}toolCalls:\n")
        lead = pad
        inner = more + "  "
        for call in calls:
            if (
                type(call) is not ToolCall
                or call._keys is not None
                or call.extra
                or call.routine is not None
                or call.invalid_inputs is not None
                or call.cost is not None
                or call.cost_lines
                or call.when is not None
                or call.injected
                or call.injected_by is not None
                or type(call.inputs) is not dict
                or "_result_shape" in call.__dict__
                or (call.after is not None and call.after < n)  # an order index follows
            ):
                return None
            tool = _text(call.tool)
            if tool is None:
                return None
            if call.id is None:
                out.append(f"{dash}tool: {tool}\n")
            else:
                text = _text(call.id)
                if text is None:
                    return None
                out.append(f"{dash}id: {text}\n{more}tool: {tool}\n")
            if call.inputs:
                out.append(f"{more}inputs:\n")
                out.append(emit_mapping(call.inputs, indent + 6))
            else:
                out.append(f"{more}inputs: {{}}\n")
            result = call.result
            if result is not None:
                if result:
                    out.append(f"{more}result:\n")
                    if not _plain_texts(result, more + "- ", inner, out):
                        return None
                else:
                    out.append(f"{more}result: []\n")
            if call.is_error is True:
                out.append(f"{more}isError: true\n")
            elif call.is_error is not False:
                return None
    if msg.date_time is not None:
        if type(msg.date_time) is not Timestamp:
            return None
        # A timestamp's text is RFC 3339 (digits, `-`, `T`, `:`, `.`, `Z`, `+`): it reads as a date, so it is always
        # double-quoted, and needs no escape.
        out.append(f'{lead}dateTime: "{msg.date_time.text}"\n')
        lead = pad
    source = msg.source
    if source is not None:
        if type(source) is not MessageSource or source._keys is not None or source.extra:
            return None
        if source.kind is None and source.name is None:
            out.append(f"{lead}source: {{}}\n")
        else:
            out.append(f"{lead}source:\n")
            for key, value in (("kind", source.kind), ("name", source.name)):
                if value is not None and not _line(out, more, key, value):
                    return None
        lead = pad
    if msg.cache is True:
        out.append(f"{lead}cache: true\n")
    elif msg.cache is not False:
        return None
    if not out:
        return None
    return "".join(out)
