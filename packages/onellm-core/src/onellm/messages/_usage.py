"""Usage, cost lines, costs and call warnings (`spec/messages.md`, "Usage and cost").

All money is `Decimal` and is never rounded except by `display`. Token counters are integers; other counters (audio
seconds, for example) may be decimals.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date
from decimal import ROUND_HALF_UP, Context, Decimal, Inexact, InvalidOperation
from typing import Any

import msgspec

from onellm._describe import type_name
from onellm.messages._base import (
    Model,
    bad,
    need_int,
    need_mapping,
    need_str,
    opt_decimal,
    opt_str,
    quantity,
    read_list,
    relayout,
    set_layout,
    to_decimal,
)

__all__ = ["CallWarning", "Cost", "CostLine", "Usage", "at_price_scale", "format_money"]

_ONE = Decimal(1)
_ZERO = Decimal(0)
_EXACT = Context(prec=80)
_ADD_ZEROS = Context(prec=80, traps=[Inexact, InvalidOperation])  # a quantize that would round raises instead


def format_money(amount: Decimal, places: int = 6) -> str:
    """`amount` as text rounded to `places` decimal places, half away from zero (`0.0000005` -> `0.000001`)."""
    if places < 0:
        raise ValueError("places must be zero or more")
    rounded = amount.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    if rounded.is_zero():
        rounded = abs(rounded)
    return f"{rounded:f}"


class CostLine(Model, kw_only=True):
    """One priced line item: `amount = quantity / per × unit_price × multiplier`, exact."""

    counter: str
    """The usage counter priced, for example `inputTokens` or `toolCalls.web_search`."""
    quantity: int | Decimal
    """How much of the counter was used."""
    per: int | Decimal = 1
    """The unit the price is quoted for (1,000,000 for a per-million token price)."""
    unit_price: Decimal
    """Price of `per` units, in the catalog's currency (USD)."""
    multiplier: Decimal = _ONE
    """A factor applied to the price (batch discount, long-context surcharge, ...)."""
    amount: Decimal
    """The exact amount charged. Never rounded."""
    label: str | None = None
    """What was charged, for example `input tokens`."""
    source: str | None = None
    """Where the price came from (a page address)."""
    as_of: date | None = None
    """The date the price was checked."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    @classmethod
    def compute(
        cls,
        counter: str,
        quantity: int | Decimal,
        per: int | Decimal,
        unit_price: Decimal,
        multiplier: Decimal | int = 1,
        *,
        label: str | None = None,
        source: str | None = None,
        as_of: date | None = None,
        extra: dict[str, Any] | None = None,
    ) -> CostLine:
        """Build a line whose amount is `quantity / per × unit_price × multiplier`, computed exactly.

        Raises:
            ValueError: `per` is zero.
        """
        if not per:
            raise ValueError("per must not be zero")
        mult = multiplier if isinstance(multiplier, Decimal) else Decimal(multiplier)
        return cls(
            counter=counter,
            quantity=quantity,
            per=per,
            unit_price=unit_price,
            multiplier=mult,
            amount=exact_amount(quantity, per, unit_price, mult),
            label=label,
            source=source,
            as_of=as_of,
            extra={} if extra is None else extra,
        )

    def display(self, places: int = 6) -> str:
        """The amount rounded half away from zero to `places` decimal places, for showing to a person."""
        return format_money(self.amount, places)

    @classmethod
    def from_data(cls, data: Mapping[str, Any], path: str = "costLine") -> CostLine:
        """Read a cost line from plain data. A missing `amount` is computed; a missing `per` or `multiplier` is 1."""
        d = need_mapping(data, path)
        counter: str | None = None
        qty: int | Decimal | None = None
        per: int | Decimal = 1
        unit_price: Decimal | None = None
        multiplier = _ONE
        amount: Decimal | None = None
        label = source = None
        as_of: date | None = None
        extra: dict[str, Any] = {}
        for key, value in d.items():
            if key == "counter":
                counter = need_str(value, path, ".counter")
            elif key == "quantity":
                qty = None if value is None else quantity(value, path, ".quantity")
            elif key == "per":
                if value is not None:
                    per = quantity(value, path, ".per")
                    if not per:
                        raise bad(f"{path}.per", "per must not be zero")
            elif key == "unitPrice":
                unit_price = opt_decimal(value, path, ".unitPrice")
            elif key == "multiplier":
                if value is not None:
                    multiplier = to_decimal(value, path, ".multiplier")
            elif key == "amount":
                amount = opt_decimal(value, path, ".amount")
            elif key == "label":
                label = opt_str(value, path, ".label")
            elif key == "source":
                source = opt_str(value, path, ".source")
            elif key == "asOf":
                as_of = _read_date(value, path, ".asOf")
            else:
                extra[key] = value
        if counter is None:
            raise bad(f"{path}.counter", "a cost line needs a counter")
        if qty is None:
            raise bad(f"{path}.quantity", "a cost line needs a quantity")
        if unit_price is None:
            raise bad(f"{path}.unitPrice", "a cost line needs a unitPrice")
        if amount is None:
            amount = exact_amount(qty, per, unit_price, multiplier)
        line = cls(
            counter=counter,
            quantity=qty,
            per=per,
            unit_price=unit_price,
            multiplier=multiplier,
            amount=amount,
            label=label,
            source=source,
            as_of=as_of,
            extra=extra,
        )
        set_layout(line, tuple(d))
        return line

    def to_data(self) -> dict[str, Any]:
        """The cost line as plain data, camelCase keys in the spec's order, money as `Decimal`."""
        out: dict[str, Any] = {
            "counter": self.counter,
            "quantity": self.quantity,
            "per": self.per,
            "unitPrice": self.unit_price,
            "multiplier": self.multiplier,
            "amount": self.amount,
        }
        if self.label is not None:
            out["label"] = self.label
        if self.source is not None:
            out["source"] = self.source
        if self.as_of is not None:
            out["asOf"] = self.as_of.isoformat()
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, _COST_LINE_DEFAULTS, keys)
        return out


_COST_LINE_DEFAULTS: dict[str, Any] = {"per": 1, "multiplier": _ONE, "label": None, "source": None, "asOf": None}


def exact_amount(qty: int | Decimal, per: int | Decimal, unit_price: Decimal, multiplier: Decimal) -> Decimal:
    """`qty / per × unit_price × multiplier` without rounding: the division is exact whenever the result is finite,
    written at the scale of its price (`at_price_scale`).

    The arithmetic runs with 80 significant digits, so every realistic line is exact; only a quotient that does not
    terminate (a `per` with a factor other than 2 and 5) is cut at that precision.
    """
    numerator = _EXACT.multiply(_EXACT.multiply(Decimal(qty), unit_price), multiplier)
    if per == 1:
        return at_price_scale(numerator, qty, per, unit_price, multiplier)
    return at_price_scale(_EXACT.divide(numerator, Decimal(per)), qty, per, unit_price, multiplier)


_POWERS_OF_TEN = {10**k: k for k in range(31)}
_QUANTUM = [Decimal(1).scaleb(-k) for k in range(128)]
# The places of the price of one unit, by (unit price, per, multiplier): catalogs have few prices, so this stays small.
# Keyed by the prices' text: 0.5 and 0.50 are equal as numbers but carry different places.
_UNIT_PLACES: dict[tuple[str, int, str], int] = {}


def _places(value: Decimal) -> int:
    exponent = value.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def at_price_scale(
    amount: Decimal, qty: int | Decimal, per: int | Decimal, unit_price: Decimal, multiplier: Decimal
) -> Decimal:
    """`amount` (a line's exact value) with as many decimal places as its price carries: the places of the price of
    one unit (`unit_price / per`; a `per` that is a power of ten moves the point, so 0.1 per million is 0.0000001 a
    token), plus those of the quantity and the multiplier. 40 tokens at 0.1 per million are `0.0000040`, 13 are
    `0.0000013`, and a sum of such lines keeps that scale (`0.0000240`), as OneLLM prints and writes them.

    The value never changes: an amount that would need rounding to fit (more significant places than its price),
    or a `per` that is not a power of ten, is returned as it is.
    """
    if type(per) is not int:
        if not isinstance(per, Decimal) or not per.is_finite() or per != per.to_integral_value():
            return amount
        per = int(per)
    key = (str(unit_price), per, str(multiplier))
    places = _UNIT_PLACES.get(key)
    if places is None:
        shift = _POWERS_OF_TEN.get(per)
        if shift is None:
            return amount
        places = _places(unit_price) + shift + _places(multiplier)
        if len(_UNIT_PLACES) < 4096:
            _UNIT_PLACES[key] = places
    if isinstance(qty, Decimal):
        places += _places(qty)
    if places >= len(_QUANTUM):
        return amount
    # `qty × unit_price × multiplier ÷ 10^shift` never has more places than this, so quantizing only adds zeros;
    # the traps catch what cannot happen without rounding (an amount given with more places, too many digits).
    try:
        return amount.quantize(_QUANTUM[places], context=_ADD_ZEROS)
    except ArithmeticError:
        return amount


def _read_date(value: Any, path: str, key: str = "") -> date | None:
    if value is None:
        return None
    if type(value) is date:
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            raise bad(path + key, f"expected a date like 2026-01-31, found {value!r}") from None
    raise bad(path + key, f"expected a date, found {type_name(value)}")


class Usage(Model, kw_only=True):
    """Tokens and cost of one call. `input_tokens` excludes cache reads and cache writes."""

    model: str | None = None
    """The model that answered, as the provider named it."""
    service_tier: str | None = None
    """The service tier the provider used."""
    input_tokens: int = 0
    """Input tokens not read from or written to the cache."""
    output_tokens: int = 0
    """Output tokens, reasoning included."""
    cache_creation_input_tokens: int = 0
    """Input tokens written to the cache."""
    cache_read_input_tokens: int = 0
    """Input tokens read from the cache."""
    cost: Decimal | None = None
    """Total cost in USD, exact; None when not priced."""
    counters: dict[str, int | Decimal] = msgspec.field(default_factory=dict)
    """Further counters: `reasoningTokens`, `images`, `audioSeconds`, `toolCalls.web_search`, ..."""
    cost_lines: list[CostLine] = msgspec.field(default_factory=list)
    """The line items behind `cost`."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    @property
    def total_input_tokens(self) -> int:
        """Input tokens including cache reads and writes."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def merge(self, later: Usage) -> Usage:
        """Combine two reports of the same call: each counter of `later` that is not zero (or not None) wins."""
        counters = dict(self.counters)
        for key, value in later.counters.items():
            if value or key not in counters:
                counters[key] = value
        extra = dict(self.extra)
        for key, value in later.extra.items():
            if value is not None or key not in extra:
                extra[key] = value
        return Usage(
            model=later.model if later.model is not None else self.model,
            service_tier=later.service_tier if later.service_tier is not None else self.service_tier,
            input_tokens=later.input_tokens or self.input_tokens,
            output_tokens=later.output_tokens or self.output_tokens,
            cache_creation_input_tokens=later.cache_creation_input_tokens or self.cache_creation_input_tokens,
            cache_read_input_tokens=later.cache_read_input_tokens or self.cache_read_input_tokens,
            cost=later.cost if later.cost is not None else self.cost,
            counters=counters,
            cost_lines=list(later.cost_lines) if later.cost_lines else list(self.cost_lines),
            extra=extra,
        )

    @classmethod
    def from_data(cls, data: Mapping[str, Any], path: str = "usage") -> Usage:
        """Read usage from plain data."""
        d = need_mapping(data, path)
        u = cls()
        extra: dict[str, Any] = {}
        for key, value in d.items():
            if key == "inputTokens":
                u.input_tokens = need_int(value, path, ".inputTokens")
            elif key == "outputTokens":
                u.output_tokens = need_int(value, path, ".outputTokens")
            elif key == "cacheReadInputTokens":
                u.cache_read_input_tokens = need_int(value, path, ".cacheReadInputTokens")
            elif key == "cacheCreationInputTokens":
                u.cache_creation_input_tokens = need_int(value, path, ".cacheCreationInputTokens")
            elif key == "model":
                u.model = opt_str(value, path, ".model")
            elif key == "serviceTier":
                u.service_tier = opt_str(value, path, ".serviceTier")
            elif key == "cost":
                u.cost = opt_decimal(value, path, ".cost")
            elif key == "counters":
                if value is not None:
                    cpath = path + ".counters"
                    u.counters = {
                        _counter_name(k, cpath): quantity(v, cpath, f".{k}")
                        for k, v in need_mapping(value, cpath).items()
                    }
            elif key == "costLines":
                if value is not None:
                    lpath = path + ".costLines"
                    u.cost_lines = read_list(CostLine.from_data, value, lpath)
            else:
                extra[key] = value
        u.extra = extra
        set_layout(u, tuple(d))
        return u

    def to_data(self) -> dict[str, Any]:
        """Usage as plain data, camelCase keys in the spec's order."""
        out: dict[str, Any] = {}
        if self.model is not None:
            out["model"] = self.model
        if self.service_tier is not None:
            out["serviceTier"] = self.service_tier
        out["inputTokens"] = self.input_tokens
        out["outputTokens"] = self.output_tokens
        if self.cache_creation_input_tokens:
            out["cacheCreationInputTokens"] = self.cache_creation_input_tokens
        if self.cache_read_input_tokens:
            out["cacheReadInputTokens"] = self.cache_read_input_tokens
        if self.cost is not None:
            out["cost"] = self.cost
        if self.counters:
            out["counters"] = dict(self.counters)
        if self.cost_lines:
            out["costLines"] = [line.to_data() for line in self.cost_lines]
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, _USAGE_DEFAULTS, keys)
        return out


_USAGE_DEFAULTS: dict[str, Any] = {
    "model": None,
    "serviceTier": None,
    "inputTokens": 0,
    "outputTokens": 0,
    "cacheCreationInputTokens": 0,
    "cacheReadInputTokens": 0,
    "cost": None,
    "counters": {},
    "costLines": [],
}


def _counter_name(key: Any, path: str) -> str:
    if isinstance(key, str):
        return key
    raise bad(path, f"counter names are strings, found {type_name(key)}")


class CallWarning(Model, kw_only=True):
    """Something a call did that the caller may want to know: a price missing, a parameter stripped or clamped."""

    kind: str
    """`pricing`, `parameter_stripped`, `parameter_clamped`, ..."""
    message: str
    """What happened, in a sentence."""
    detail: dict[str, Any] | None = None
    """Structured detail (parameter name, old and new value, ...)."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    @classmethod
    def from_data(cls, data: Mapping[str, Any], path: str = "warning") -> CallWarning:
        """Read a warning from plain data."""
        d = need_mapping(data, path)
        kind = message = None
        detail: dict[str, Any] | None = None
        extra: dict[str, Any] = {}
        for key, value in d.items():
            if key == "kind":
                kind = need_str(value, path, ".kind")
            elif key == "message":
                message = need_str(value, path, ".message")
            elif key == "detail":
                detail = None if value is None else dict(need_mapping(value, path, ".detail"))
            else:
                extra[key] = value
        if kind is None:
            raise bad(f"{path}.kind", "a warning needs a kind")
        w = cls(kind=kind, message=message or "", detail=detail, extra=extra)
        set_layout(w, tuple(d))
        return w

    def to_data(self) -> dict[str, Any]:
        """The warning as plain data."""
        out: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.detail is not None:
            out["detail"] = self.detail
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, {"detail": None, "message": ""}, keys)
        return out


class Cost(msgspec.Struct, kw_only=True, frozen=True):
    """The priced cost of a call: its line items, their exact total, and warnings raised while pricing."""

    lines: tuple[CostLine, ...] = ()
    """The line items."""
    total: Decimal = _ZERO
    """The exact sum of the lines' amounts."""
    warnings: tuple[CallWarning, ...] = ()
    """Warnings, for example a counter with no price."""
    priced: bool = True
    """False when the model has no price in the catalog (the total is then not the real cost)."""

    @classmethod
    def of(cls, lines: Iterable[CostLine], *, warnings: Iterable[CallWarning] = (), priced: bool = True) -> Cost:
        """A cost whose total is the exact sum of `lines`."""
        items = tuple(lines)
        total = _ZERO
        for line in items:
            total = _EXACT.add(total, line.amount)
        return cls(lines=items, total=total, warnings=tuple(warnings), priced=priced)

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            lines=self.lines + other.lines,
            total=_EXACT.add(self.total, other.total),
            warnings=self.warnings + other.warnings,
            priced=self.priced and other.priced,
        )

    def display(self, places: int = 6) -> str:
        """The total rounded half away from zero to `places` decimal places (`0.0000005` -> `0.000001`)."""
        return format_money(self.total, places)

    @classmethod
    def from_data(cls, data: Mapping[str, Any], path: str = "cost") -> Cost:
        """Read a cost from plain data (`lines`, `total`, `warnings`, `priced`). A missing total is the lines' sum."""
        d = need_mapping(data, path)
        lines: tuple[CostLine, ...] = ()
        warnings: tuple[CallWarning, ...] = ()
        total: Decimal | None = None
        priced = True
        for key, value in d.items():
            if key == "lines":
                if value is not None:
                    lines = tuple(read_list(CostLine.from_data, value, path + ".lines"))
            elif key == "total":
                total = opt_decimal(value, path, ".total")
            elif key == "warnings":
                if value is not None:
                    warnings = tuple(read_list(CallWarning.from_data, value, path + ".warnings"))
            elif key == "priced":
                if value is not None and type(value) is not bool:
                    raise bad(f"{path}.priced", f"expected true or false, found {type_name(value)}")
                priced = value is not False
            else:
                raise bad(f"{path}.{key}", f"unknown cost key {key!r}")
        if total is None:
            total = sum((line.amount for line in lines), _ZERO)
        return cls(lines=lines, total=total, warnings=warnings, priced=priced)

    def to_data(self) -> dict[str, Any]:
        """The cost as plain data: `lines`, `total`, then `warnings` and `priced` when they say something."""
        out: dict[str, Any] = {"lines": [line.to_data() for line in self.lines], "total": self.total}
        if self.warnings:
            out["warnings"] = [w.to_data() for w in self.warnings]
        if not self.priced:
            out["priced"] = False
        return out
