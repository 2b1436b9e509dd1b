"""The pricing engine: a usage report and a model's catalog prices become exact cost lines and their total.

Every rule is in `docs/pricing-and-counting.md`. In short, one line per counter with a quantity:
`amount = quantity / per × unit price × multiplier`, where the unit price comes from an `items` entry for the counter
(the one whose `when` names the most matching qualifiers) or from the flat field of the four main counters, subset
counters are taken out of their parent when they have a price of their own, long-context requests switch to the
long-context rates, the highest applying tier factors the prices of the counters it names, and the service tier,
batch, region and any named multiplier factor every line. Nothing is rounded.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal, Inexact, InvalidOperation
from typing import TYPE_CHECKING, Any

import msgspec

from onellm._public import publish as _publish
from onellm.catalog._schema import KNOWN_PRICE_COUNTERS, to_decimal
from onellm.messages import CallWarning, Cost, CostLine, at_price_scale

if TYPE_CHECKING:
    from onellm.catalog._catalog import ResolvedModel
    from onellm.catalog.entries import ServiceTier
    from onellm.messages import Usage

__all__ = [
    "BUILTIN_SUBSETS",
    "DEFAULT_LONG_CONTEXT_THRESHOLD",
    "STALE_AFTER_DAYS",
    "PriceItem",
    "PriceTable",
    "PriceTier",
    "price_media",
    "price_usage",
    "usage_missing",
]

DEFAULT_LONG_CONTEXT_THRESHOLD = 200_000
STALE_AFTER_DAYS = 180
_MILLION = 1_000_000
_ZERO = Decimal(0)
_ONE = Decimal(1)
_NEUTRAL_TIERS = frozenset({"standard", "default", "auto"})
_MAIN = ("inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")
_CACHE_COUNTERS = frozenset({"cacheCreationInputTokens", "cacheReadInputTokens"})
_EXACT = Context(prec=100)
_CHECK = Context(prec=250)
_ADD_ZEROS = Context(prec=80, traps=[Inexact, InvalidOperation])  # a quantize that would round raises instead
_QUANTUM = [Decimal(1).scaleb(-k) for k in range(128)]

BUILTIN_SUBSETS: dict[str, str] = {
    "reasoningTokens": "outputTokens",
    "outputAudioTokens": "outputTokens",
    "outputImageTokens": "outputTokens",
    "outputVideoTokens": "outputTokens",
    "acceptedPredictionTokens": "outputTokens",
    "rejectedPredictionTokens": "outputTokens",
    "inputAudioTokens": "inputTokens",
    "inputImageTokens": "inputTokens",
    "inputVideoTokens": "inputTokens",
    "cacheCreation1hInputTokens": "cacheCreationInputTokens",
    "cacheCreation5mInputTokens": "cacheCreationInputTokens",
}
"""Counters that count tokens already inside another counter: child -> parent. The reference lists all but
`outputVideoTokens` (Gemini), the two predicted-output counters (OpenAI Chat Completions) and
`cacheCreation5mInputTokens` (Anthropic), which the providers report the same way."""

_LABELS = {
    "inputTokens": "input tokens",
    "outputTokens": "output tokens",
    "cacheCreationInputTokens": "cache write tokens",
    "cacheReadInputTokens": "cache read tokens",
}


def _default_per(counter: str) -> int:
    """1,000,000 for counters ending in `Tokens`, otherwise 1."""
    return _MILLION if counter.endswith("Tokens") else 1


@dataclass(frozen=True, slots=True)
class PriceItem:
    counter: str
    price: Decimal
    per: int | Decimal
    when: tuple[tuple[str, str], ...]
    label: str | None
    as_of: _dt.date | None
    source: str | None
    resolved: _Price


@dataclass(frozen=True, slots=True)
class PriceTier:
    above: int
    basis: str | None
    multipliers: Mapping[str, Decimal]
    label: str | None


@dataclass(frozen=True, slots=True)
class _Price:
    unit: Decimal
    per: int | Decimal
    label: str | None
    as_of: _dt.date | None
    source: str | None


def _date(value: Any) -> _dt.date | None:
    if value is None:
        return None
    if isinstance(value, _dt.date):
        return value
    return _dt.date.fromisoformat(str(value))


class PriceTable:
    """One model's `pricing` mapping, compiled for fast repeated use."""

    __slots__ = (
        "_fixed",
        "_flat_prices",
        "_main_apart",
        "_main_plan",
        "as_of",
        "data",
        "flat",
        "free",
        "has_price",
        "items",
        "long_input",
        "long_output",
        "long_threshold",
        "multipliers",
        "simple",
        "source",
        "subset_of",
        "tiers",
        "until",
    )

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = dict(data)
        self.as_of = _date(data.get("asOf"))
        self.source: str | None = data.get("source")
        self.flat: dict[str, Decimal] = {}
        for counter, field in KNOWN_PRICE_COUNTERS.items():
            value = to_decimal(data.get(field))
            if value is not None:
                self.flat[counter] = value
        self.long_input = to_decimal(data.get("longContextInputPerMillion"))
        self.long_output = to_decimal(data.get("longContextOutputPerMillion"))
        threshold = data.get("longContextThreshold")
        self.long_threshold: int = int(threshold) if threshold is not None else DEFAULT_LONG_CONTEXT_THRESHOLD
        items: dict[str, list[PriceItem]] = {}
        for raw in data.get("items") or ():
            counter = str(raw["counter"])
            price = to_decimal(raw["price"])
            if price is None:
                continue
            per_raw = raw.get("per")
            per: int | Decimal = _default_per(counter) if per_raw is None else _as_quantity(per_raw)
            when = tuple((str(k), _qualifier(v)) for k, v in (raw.get("when") or {}).items())
            as_of = _date(raw.get("asOf"))
            source = raw.get("source")
            label = raw.get("label")
            resolved = _Price(price, per, label, as_of or self.as_of, source or self.source)
            items.setdefault(counter, []).append(PriceItem(counter, price, per, when, label, as_of, source, resolved))
        # Most specific first; among equally specific items the one listed first wins (sort is stable).
        self.items = {c: tuple(sorted(v, key=lambda it: -len(it.when))) for c, v in items.items()}
        tiers = []
        for raw in data.get("tiers") or ():
            mults = {str(k): d for k, v in (raw.get("multipliers") or {}).items() if (d := to_decimal(v)) is not None}
            tiers.append(PriceTier(int(raw["above"]), raw.get("basis"), mults, raw.get("label")))
        # Highest `above` first; a tie keeps the listed order.
        self.tiers = tuple(sorted(tiers, key=lambda t: -t.above))
        self.multipliers: dict[str, Decimal] = {
            str(k): d for k, v in (data.get("multipliers") or {}).items() if (d := to_decimal(v)) is not None
        }
        self.subset_of = dict(BUILTIN_SUBSETS)
        for child, parent in (data.get("subsetOf") or {}).items():
            self.subset_of[str(child)] = str(parent)
        self.until: str | None = None  # set on a past price period: its prices can no longer go stale
        self.free = data.get("free") is True
        self.has_price = bool(self.flat) or bool(self.items) or self.free
        self._flat_prices = {c: _Price(v, _MILLION, None, self.as_of, self.source) for c, v in self.flat.items()}
        # Counters whose price never depends on qualifiers: looked up once, reused for every call.
        self._fixed: dict[str, _Price | None] = {}
        for counter in {*self.flat, *self.items}:
            candidates = self.items.get(counter, ())
            if all(not item.when for item in candidates):
                self._fixed[counter] = candidates[0].resolved if candidates else self._flat_prices[counter]
        self._main_plan: tuple[_MainStep | None, ...] | None = None
        """What the fast path prices the four main counters with, made on first use (`_main_plan`)."""
        self._main_apart = not any(c in self.subset_of for c in KNOWN_PRICE_COUNTERS)
        """No main counter counts tokens inside another."""
        self.simple = not self.tiers and self.long_input is None and self._main_apart

    @classmethod
    def compile(cls, data: Mapping[str, Any] | None) -> PriceTable:
        return cls(data or {})

    def price_of(self, counter: str, qualifiers: Mapping[str, str]) -> _Price | None:
        """The unit price of `counter` for a call with these qualifiers, before any factor; None when unpriced."""
        fixed = self._fixed.get(counter)
        if fixed is not None:
            return fixed
        candidates = self.items.get(counter)
        if candidates:
            for item in candidates:
                if all(qualifiers.get(k) == v for k, v in item.when):
                    return item.resolved
        flat = self._flat_prices.get(counter)
        if flat is not None:
            return flat
        if self.free:
            return _Price(_ZERO, _default_per(counter), "free", self.as_of, self.source)
        return None

    def in_cache_family(self, counter: str) -> bool:
        """The two cache counters and every counter that is (through `subsetOf`) inside one of them."""
        seen = 0
        while counter not in _CACHE_COUNTERS:
            parent = self.subset_of.get(counter)
            if parent is None or seen > 16:
                return False
            counter = parent
            seen += 1
        return True


def _as_quantity(value: Any) -> int | Decimal:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    d = to_decimal(value)
    if d is None or d <= 0:
        raise ValueError(f"'per' must be a positive number, not {value!r}")
    return int(d) if d == d.to_integral_value() else d


def _qualifier(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _warning(message: str, **detail: Any) -> CallWarning:
    return CallWarning(kind="pricing", message=message, detail=detail)


def _quantities(usage: Usage, warnings: list[CallWarning], model: str) -> dict[str, int | Decimal]:
    q: dict[str, int | Decimal] = {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheCreationInputTokens": usage.cache_creation_input_tokens,
        "cacheReadInputTokens": usage.cache_read_input_tokens,
    }
    for counter, amount in usage.counters.items():
        if counter in q:
            warnings.append(
                _warning(
                    f"usage counter {counter!r} repeats a main usage field; the field's value is priced",
                    reason="duplicate_counter",
                    model=model,
                    counter=counter,
                )
            )
            continue
        q[counter] = amount
    return q


def _service_factor(
    tiers: Mapping[str, ServiceTier] | None, tier: str | None, model: str, warnings: list[CallWarning]
) -> Decimal | None:
    if tier is None:
        return None
    known = tiers.get(tier) if tiers else None
    if known is None and tiers:
        lowered = tier.lower()
        known = next((t for name, t in tiers.items() if name.lower() == lowered), None)
    if known is not None:
        if known.pricing_multiplier is not None:
            return known.pricing_multiplier
        if tier.lower() in _NEUTRAL_TIERS:
            return None
        warnings.append(
            _warning(
                f"service tier {tier!r} of {model} has no pricingMultiplier; priced at the standard rate",
                reason="unpriced_service_tier",
                model=model,
                serviceTier=tier,
            )
        )
        return None
    if tier.lower() in _NEUTRAL_TIERS:
        return None
    warnings.append(
        _warning(
            f"service tier {tier!r} is not in the catalog for {model}; priced at the standard rate",
            reason="unknown_service_tier",
            model=model,
            serviceTier=tier,
        )
    )
    return None


def price_usage(
    model: ResolvedModel,
    usage: Usage,
    *,
    service_tier: str | None = None,
    batch: bool = False,
    region: str | None = None,
    multipliers: Sequence[str] = (),
    qualifiers: Mapping[str, Any] | None = None,
    today: _dt.date | None = None,
    at: _dt.date | _dt.datetime | Any | None = None,
    base_url: str | None = None,
) -> Cost:
    """Price `usage` with `model`'s catalog prices.

    Args:
        service_tier: the tier the call ran on; defaults to `usage.service_tier`.
        batch: the call ran through a batch API (applies `multipliers.batch`).
        region: applies `multipliers["region:<region>"]`.
        multipliers: further named multipliers to apply (`"fast"`, ...).
        qualifiers: the call's qualifiers that `items[].when` can name (`{"size": "1024x1024", "quality": "high"}`).
        today: when given, prices checked more than 180 days before it add a `pricing` warning.
        at: the call's time (a date, a datetime, a message `Timestamp` or RFC 3339 text); selects the
            `pricingPeriods` entry in force on its UTC date (default: `today`, else the base price).
        base_url: the server the call went to, when it differs from the catalog's (a loopback server is free unless
            the catalog prices the model).
    """
    entry = model.entry
    if at is not None and (entry._periods or not isinstance(at, _dt.date)):
        table = entry.price_table_at(_day_of(at))
    elif today is None:  # no day: the base prices (what `price_table_at(None)` gives)
        table = entry.price_table
    else:  # no price periods: a date or datetime cannot change the table (other values are still checked)
        table = entry.price_table_at(today)
    tier_name = service_tier if service_tier is not None else usage.service_tier
    if (
        (table.simple or (table._main_apart and _at_base_rates(table, usage)))
        and table.has_price
        and not usage.counters
        and tier_name is None
        and not batch
        and not region
        and not multipliers
        and not qualifiers
        and today is None
    ):
        fast = _price_main(table, usage)
        if fast is not None:
            return fast
    name = model.qualified_name
    warnings: list[CallWarning] = []

    if not table.has_price:
        local = model.local or (base_url is not None and _loopback(base_url))
        quantities = _quantities(usage, warnings, name)
        used = any(v for v in quantities.values())
        if local or not used:
            return Cost(warnings=tuple(warnings))
        if usage.cost is not None:
            return _reported(usage.cost, name, warnings)
        warnings.append(
            _warning(
                f"{name} has no price in the catalog; its cost is unknown (total 0)",
                reason="unknown_price",
                model=name,
            )
        )
        return Cost(warnings=tuple(warnings), priced=False)
    return _price_with(
        table,
        entry.service_tiers,
        usage,
        name,
        warnings,
        service_tier=tier_name,
        batch=batch,
        region=region,
        multipliers=multipliers,
        qualifiers=qualifiers,
        today=today,
    )


def _price_call(model: ResolvedModel, usage: Usage, service_tier: str | None, at: Any) -> Cost:
    """`price_usage(model, usage, service_tier=service_tier, at=at)`: a model call's question, every other option
    at its default. A call at the base prices with only the four main counters is priced here at once."""
    if (
        at is None
        and service_tier is None
        and usage.service_tier is None
        and not usage.counters
        and (table := model.entry.price_table).has_price
        and (table.simple or (table._main_apart and _at_base_rates(table, usage)))
    ):
        fast = _price_main(table, usage)
        if fast is not None:
            return fast
    return price_usage(model, usage, service_tier=service_tier, at=at)


def _day_of(at: Any) -> _dt.date:
    """The UTC date of a call's time: a date, a datetime (naive ones are taken as UTC), a message `Timestamp`, or
    RFC 3339 text."""
    if isinstance(at, str):
        at = _dt.datetime.fromisoformat(at.replace("Z", "+00:00")) if "T" in at else _dt.date.fromisoformat(at)
    elif not isinstance(at, _dt.date) and isinstance(getattr(at, "datetime", None), _dt.datetime):
        at = at.datetime
    if isinstance(at, _dt.datetime):
        return at.astimezone(_dt.UTC).date() if at.tzinfo is not None else at.date()
    if isinstance(at, _dt.date):
        return at
    raise TypeError(f"'at' is a date, a datetime or a Timestamp, not {type(at).__name__}")


_NO_QUALIFIERS: Mapping[str, str] = {}
# Dividing by these never leaves a remainder in decimal: amounts are exact without checking.
_DECIMAL_PERS = frozenset({1, 10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000})


def _at_base_rates(table: PriceTable, usage: Usage) -> bool:
    """Whether a call with only the four main counters stays below the table's long-context threshold and every
    tier (then it is priced as a simple table would price it)."""
    total_input = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
    if table.long_input is not None and total_input > table.long_threshold:
        return False
    for tier in table.tiers:
        basis = tier.basis
        if basis is None or basis == "totalInputTokens":
            value = total_input
        elif basis == "inputTokens":
            value = usage.input_tokens
        elif basis == "outputTokens":
            value = usage.output_tokens
        elif basis == "cacheCreationInputTokens":
            value = usage.cache_creation_input_tokens
        elif basis == "cacheReadInputTokens":
            value = usage.cache_read_input_tokens
        else:
            value = 0  # a counter the call does not report
        if value > tier.above:
            return False
    return True


def _price_main(table: PriceTable, usage: Usage) -> Cost | None:
    """The common case: only the four main counters, no factor, no tier, no long context. None: take the full path."""
    plan = table._main_plan
    if plan is None:
        plan = table._main_plan = _main_plan(table)
    lines = []
    total = _ZERO
    # A plain `zip` over the four counters (in `_MAIN`'s order, each read as an attribute: `attrgetter` costs more)
    # and their steps (both always have four): an argument to `zip` costs more than the loop.
    amounts = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_creation_input_tokens,
        usage.cache_read_input_tokens,
    )
    for amount, step in zip(amounts, plan):  # noqa: B905
        if not amount:
            continue
        if step is None:
            return None
        line, price, divisor, quantum, digits, shift = step
        # `_line` for a main counter: quantity × unit ÷ per (a power of ten), at the price's scale.
        if digits is not None and type(amount) is int and _FUSED_FLOOR < (whole := amount * digits) < _FUSED_LIMIT:
            # The same amount in one step: the unit's digits times the quantity, the point moved to the price's
            # scale (nothing is rounded, and the quantize below would only have added zeros). The context's
            # `scaleb` takes the integer as it is: one call, no decimal made of it first.
            value = _SCALEB(whole, shift)
            # Zero plus an amount with no positive exponent is that amount, digit for digit.
            total = value if total is _ZERO else _ADD(total, value)
        else:
            value = _EXACT.multiply(Decimal(amount), price.unit)
            if divisor is not None:
                value = _EXACT.divide(value, divisor)
            if quantum is not None and type(amount) is int:
                value = _to_quantum(value, quantum)
            else:
                value = at_price_scale(value, amount, price.per, price.unit, _ONE)
            total = _EXACT.add(total, value)
        # The step's line with this call's quantity and amount (and an `extra` of its own): the other fields are
        # the price's, the same on every call.
        lines.append(_replace(line, quantity=amount, amount=value, extra={}))
    return Cost(lines=tuple(lines), total=total)


_MainStep = tuple[CostLine, "_Price", Decimal | None, Decimal | None, int | None, Decimal]
_FUSED_LIMIT = 10**80
"""Amounts with fewer digits than this are made in one step (`_ADD_ZEROS` quantizes at 80 digits)."""
_FUSED_FLOOR = -_FUSED_LIMIT
_ADD = _EXACT.add
_SCALEB = _EXACT.scaleb
_replace = msgspec.structs.replace


def _main_plan(table: PriceTable) -> tuple[_MainStep | None, ...]:
    """What `_price_main` needs of each main counter, in `_MAIN`'s order, worked out once per table: its line with
    no quantity yet (the counter, the label, the price's fields), its price, the divisor (None for a `per` of 1) and
    the quantum of its amounts (`at_price_scale`'s, None when it leaves amounts as they are); None for a counter the
    fast path cannot price."""
    plan: list[_MainStep | None] = []
    for counter in _MAIN:
        price = table.price_of(counter, _NO_QUALIFIERS)
        if price is None or price.per not in _DECIMAL_PERS:
            plan.append(None)
            continue
        per = int(price.per)
        divisor = None if price.per == 1 else Decimal(price.per)
        places = _unit_places(price.unit) + len(str(per)) - 1
        quantum = _QUANTUM[places] if places < len(_QUANTUM) else None
        # quantity × unit ÷ 10^k at `places` is the integer quantity × (the unit's digits, its positive exponent
        # applied) with the point `places` from the right; a signed unit (-0 among them) keeps the general path.
        unit = price.unit
        digits: int | None = None
        sign, unit_digits, exponent = unit.as_tuple()
        if quantum is not None and not sign and isinstance(exponent, int):
            digits = int("".join(map(str, unit_digits)) or "0") * 10 ** max(exponent, 0)
        # The shift as a decimal: `scaleb` would make one of an int on every call.
        line = CostLine(
            counter=counter,
            quantity=0,
            per=price.per,
            unit_price=price.unit,
            multiplier=_ONE,
            amount=_ZERO,
            label=price.label or _LABELS[counter],
            source=price.source,
            as_of=price.as_of,
        )
        plan.append((line, price, divisor, quantum, digits, Decimal(-places)))
    return tuple(plan)


def _to_quantum(value: Decimal, quantum: Decimal) -> Decimal:
    """`value` with the places of `quantum` when that only adds zeros, else as it is (`at_price_scale`)."""
    try:
        return value.quantize(quantum, context=_ADD_ZEROS)
    except ArithmeticError:
        return value


def _unit_places(value: Decimal) -> int:
    exponent = value.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def _is_exact(line: CostLine) -> bool:
    """Whether `amount × per` gives back `quantity × unit × multiplier` (checked at twice the working precision)."""
    whole = _CHECK.multiply(_CHECK.multiply(Decimal(line.quantity), line.unit_price), line.multiplier)
    return _CHECK.multiply(line.amount, Decimal(line.per)) == whole


def _line(
    counter: str,
    quantity: int | Decimal,
    per: int | Decimal,
    unit: Decimal,
    multiplier: Decimal,
    label: str | None,
    source: str | None,
    as_of: _dt.date | None,
) -> CostLine:
    """One line, `quantity / per * unit * multiplier` computed exactly (100 significant digits: every amount a
    catalog price can produce fits; only a `per` with a prime factor other than 2 and 5 can cut a quotient)."""
    amount = _EXACT.multiply(Decimal(quantity), unit)
    if multiplier != _ONE:
        amount = _EXACT.multiply(amount, multiplier)
    if per != 1:
        amount = _EXACT.divide(amount, Decimal(per))
    amount = at_price_scale(amount, quantity, per, unit, multiplier)  # 0.0000040, not 0.000004: the price's scale
    return CostLine(
        counter=counter,
        quantity=quantity,
        per=per,
        unit_price=unit,
        multiplier=multiplier,
        amount=amount,
        label=label,
        source=source,
        as_of=as_of,
    )


def _loopback(url: str) -> bool:
    from onellm.catalog._catalog import is_loopback_url

    return is_loopback_url(url)


def _reported(amount: Decimal, name: str, warnings: list[CallWarning]) -> Cost:
    line = CostLine.compute("cost", 1, 1, amount, label="cost reported by the provider")
    warnings.append(
        _warning(
            f"{name} has no price in the catalog; the cost the provider reported is used",
            reason="reported_cost",
            model=name,
        )
    )
    return Cost(lines=(line,), total=line.amount, warnings=tuple(warnings))


def _price_with(
    table: PriceTable,
    service_tiers: Mapping[str, ServiceTier] | None,
    usage: Usage,
    name: str,
    warnings: list[CallWarning],
    *,
    service_tier: str | None,
    batch: bool,
    region: str | None,
    multipliers: Sequence[str],
    qualifiers: Mapping[str, Any] | None,
    today: _dt.date | None,
) -> Cost:
    quals = {str(k): _qualifier(v) for k, v in qualifiers.items()} if qualifiers else {}
    quantities = _quantities(usage, warnings, name)
    subset_of = table.subset_of

    # Prices first: a subset counter with a price is taken out of its parent.
    prices: dict[str, _Price | None] = {}
    for counter, amount in quantities.items():
        if amount:
            prices[counter] = table.price_of(counter, quals)
    effective = dict(quantities)
    for counter, price in prices.items():
        parent = subset_of.get(counter)
        if parent is None or price is None:
            continue
        # The tokens leave the nearest ancestor that is priced on its own: an unpriced (or unreported) subset keeps
        # its tokens inside its own parent, so they are taken out further up.
        hops = 0
        while parent in subset_of and prices.get(parent) is None and hops < 16:
            parent = subset_of[parent]
            hops += 1
        effective[parent] = effective.get(parent, 0) - quantities[counter]
    for counter, amount in effective.items():
        if amount < 0:
            warnings.append(
                _warning(
                    f"the subset counters of {counter!r} add up to more than its {quantities.get(counter, 0)}; "
                    f"{counter} is priced at zero",
                    reason="subset_exceeds_parent",
                    model=name,
                    counter=counter,
                )
            )
            effective[counter] = 0

    # Long context: the whole request at the long-context rates.
    total_input = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
    long_context = table.long_input is not None and total_input > table.long_threshold
    cache_scale: Decimal | None = None
    if long_context:
        base_input = table.flat.get("inputTokens")
        if base_input:
            assert table.long_input is not None
            scale = Context(prec=60, traps=[])  # a context of its own: its flags are this call's alone
            cache_scale = scale.divide(table.long_input, base_input)
            if scale.flags[Inexact]:
                warnings.append(
                    _warning(
                        "the long-context cache price ratio does not terminate; it is cut at 60 significant digits",
                        reason="inexact_scale",
                        model=name,
                    )
                )
        elif any(table.in_cache_family(c) for c in prices):
            warnings.append(
                _warning(
                    f"{name} has a long-context input price but no normal input price; cache prices are not scaled",
                    reason="long_context_unscaled",
                    model=name,
                )
            )

    # The tier with the highest `above` among those that apply.
    tier = None
    for candidate in table.tiers:
        basis = candidate.basis
        if basis is None or basis == "totalInputTokens":
            value: int | Decimal = total_input
        else:
            value = quantities.get(basis, 0)
        if value > candidate.above:
            tier = candidate
            break

    # Factors on every line.
    common = _ONE
    factor = _service_factor(service_tiers, service_tier, name, warnings)
    if factor is not None:
        common = _EXACT.multiply(common, factor)
    named: list[str] = []
    if batch:
        named.append("batch")
    if region:
        named.append(f"region:{region}")
    named.extend(multipliers)
    for key in named:
        value_m = table.multipliers.get(key)
        if value_m is None:
            warnings.append(
                _warning(
                    f"{name} has no {key!r} multiplier in the catalog; it is not applied",
                    reason="missing_multiplier",
                    model=name,
                    multiplier=key,
                )
            )
        else:
            common = _EXACT.multiply(common, value_m)

    lines: list[CostLine] = []
    stale: list[str] = []
    for counter, price in prices.items():
        amount = effective[counter]
        if not amount:
            continue
        if price is None:
            if counter in subset_of:
                continue  # stays inside its parent, which is priced (or warned) there
            warnings.append(
                _warning(
                    f"{name} has no price for {counter!r} ({quantities[counter]}); it is left out of the cost",
                    reason="unpriced_counter",
                    model=name,
                    counter=counter,
                    quantity=quantities[counter],
                )
            )
            continue
        unit = price.unit
        per = price.per
        label = price.label
        if long_context:
            if counter == "inputTokens":
                assert table.long_input is not None
                unit, per, label = table.long_input, _MILLION, "long context"
            elif counter == "outputTokens":
                if table.long_output is not None:
                    unit, per, label = table.long_output, _MILLION, "long context"
            elif cache_scale is not None and table.in_cache_family(counter):
                unit = _EXACT.multiply(unit, cache_scale)
                label = "long context"
        mult = common
        if tier is not None:
            tier_factor = tier.multipliers.get(counter, tier.multipliers.get("*"))
            if tier_factor is not None:
                mult = _EXACT.multiply(mult, tier_factor)
        if label is None:
            label = _LABELS.get(counter)
        if (
            today is not None
            and price.as_of is not None
            and (today - price.as_of).days > STALE_AFTER_DAYS
            and (table.until is None or table.until > today.isoformat())
        ):
            stale.append(counter)
        lines.append(_line(counter, amount, per, unit, mult, label, price.source, price.as_of))
    warnings.extend(
        _warning(
            f"{line.counter}: {line.quantity} / {line.per} does not terminate; the amount is cut at "
            "100 significant digits",
            reason="inexact_amount",
            model=name,
            counter=line.counter,
        )
        for line in lines
        if line.per not in _DECIMAL_PERS and not _is_exact(line)
    )
    if stale:
        warnings.append(
            _warning(
                f"prices of {name} are more than {STALE_AFTER_DAYS} days old ({', '.join(stale)})",
                reason="stale",
                model=name,
                counters=stale,
            )
        )
    priced = not any(w.detail is not None and w.detail.get("reason") == "unpriced_counter" for w in warnings)
    total = _ZERO
    for line in lines:
        total = _EXACT.add(total, line.amount)
    return Cost(lines=tuple(lines), total=total, warnings=tuple(warnings), priced=priced)


_publish("onellm.catalog", PriceTable)


# -- media ------------------------------------------------------------------------------------------------------------


def usage_missing(model: str) -> CallWarning:
    """The warning a call gets when its service reported no usage: its cost is unknown, never estimated."""
    return CallWarning(
        kind="usage_missing",
        message=f"{model}: the service reported no usage for this call; its cost is unknown and not estimated",
        detail={"model": model},
    )


def price_media(
    resolved: ResolvedModel,
    usage: Usage | None,
    operation: str,
    *,
    qualifiers: Mapping[str, str] | None = None,
    at: _dt.date | _dt.datetime | Any | None = None,
    batch: bool = False,
) -> tuple[Cost | None, list[CallWarning]]:
    """The cost of one media call and the warnings pricing raised. Moderation is free (zero); a call without usage
    has no cost (None, with a `usage_missing` warning) unless the model is free."""
    if operation == "moderation":
        return Cost(), []
    if usage is None:
        if resolved.entry.price_table_at(_day_of(at) if at is not None else None).free:
            return Cost(), []
        return None, [usage_missing(resolved.qualified_name)]
    cost = resolved.price(usage, qualifiers=qualifiers or None, at=at, batch=batch)
    return cost, list(cost.warnings)
