"""The `usage` lines of a message block written straight from the `Usage` object, for the usage of a priced turn.

A priced turn's usage, with its cost lines, is most of the lines of its block, and every turn writes one. The general
path builds the usage's plain data and hands it to the YAML writer, which looks at each key and value in turn; here
the lines of the common shape are put together directly. What is written is byte for byte what the general path
writes (`yamlio.emit_block` of the message's plain data); anything outside the common shape (a remembered key layout,
extension keys, counters, a value of another type, text spanning lines) gets None, and the general path writes it.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from onellm.messages import Usage
from onellm.yamlio import decimal_text, one_line

__all__ = ["usage_lines"]


def _text(value: object) -> str | None:
    """A one-line string as written, or None for anything else."""
    if type(value) is str and "\n" not in value:
        return one_line(value)
    return None


def _number(value: object) -> str | None:
    """An int or Decimal as written, or None for anything else."""
    if type(value) is int:
        return int.__repr__(value)
    if type(value) is Decimal:
        return decimal_text(value)
    return None


def usage_lines(usage: Usage, indent: int) -> str | None:
    """The `usage:` key and its lines in the block of a message whose dash sits at column `indent`, or None when the
    usage is outside the common shape."""
    if usage._keys is not None or usage.extra or usage.counters:
        return None
    pad = " " * (indent + 4)
    out = [" " * (indent + 2) + "usage:\n"]
    if usage.model is not None:
        text = _text(usage.model)
        if text is None:
            return None
        out.append(f"{pad}model: {text}\n")
    if usage.service_tier is not None:
        text = _text(usage.service_tier)
        if text is None:
            return None
        out.append(f"{pad}serviceTier: {text}\n")
    for key, value, always in (
        ("inputTokens", usage.input_tokens, True),
        ("outputTokens", usage.output_tokens, True),
        ("cacheCreationInputTokens", usage.cache_creation_input_tokens, False),
        ("cacheReadInputTokens", usage.cache_read_input_tokens, False),
    ):
        if always or value:
            if type(value) is not int:
                return None
            out.append(f"{pad}{key}: {int.__repr__(value)}\n")
    if usage.cost is not None:
        if type(usage.cost) is not Decimal:
            return None
        out.append(f"{pad}cost: {decimal_text(usage.cost)}\n")
    if usage.cost_lines:
        out.append(f"{pad}costLines:\n")
        dash = pad + "- "
        more = pad + "  "
        for line in usage.cost_lines:
            if line._keys is not None or line.extra:
                return None
            counter = _text(line.counter)
            quantity = _number(line.quantity)
            per = _number(line.per)
            unit_price, multiplier, amount = line.unit_price, line.multiplier, line.amount
            if (
                counter is None
                or quantity is None
                or per is None
                or type(unit_price) is not Decimal
                or type(multiplier) is not Decimal
                or type(amount) is not Decimal
            ):
                return None
            out.append(
                f"{dash}counter: {counter}\n{more}quantity: {quantity}\n{more}per: {per}\n"
                f"{more}unitPrice: {decimal_text(unit_price)}\n{more}multiplier: {decimal_text(multiplier)}\n"
                f"{more}amount: {decimal_text(amount)}\n"
            )
            if line.label is not None:
                text = _text(line.label)
                if text is None:
                    return None
                out.append(f"{more}label: {text}\n")
            if line.source is not None:
                text = _text(line.source)
                if text is None:
                    return None
                out.append(f"{more}source: {text}\n")
            if line.as_of is not None:
                if type(line.as_of) is not date:
                    return None
                out.append(f"{more}asOf: {one_line(line.as_of.isoformat())}\n")
    return "".join(out)
