"""Checking one provider entry against the catalog format, and putting its values in one canonical form.

Known keys are type-checked; unknown keys are kept unchanged. Money becomes `Decimal` (a float given in code is read
through its shortest text, so `0.1` is exactly one tenth), dates become `YYYY-MM-DD` text. A failure is a
`_SchemaError` carrying the path of the offending value inside the document; the loader turns it into a positioned
`BadDefinitionError`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from onellm._describe import join_path, type_name

__all__ = ["KNOWN_PRICE_COUNTERS", "SchemaError", "check_provider", "to_decimal"]

# The four counters that have a flat price field, in the order cost lines list them.
KNOWN_PRICE_COUNTERS = {
    "inputTokens": "inputPerMillion",
    "outputTokens": "outputPerMillion",
    "cacheCreationInputTokens": "cacheCreationPerMillion",
    "cacheReadInputTokens": "cacheReadPerMillion",
}


class SchemaError(Exception):
    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


Checker = Callable[[Any, str], Any]


_join = join_path
_type_name = type_name


def _str(value: Any, path: str) -> Any:
    if value is None or isinstance(value, str):
        return value
    raise SchemaError(f"expected text, found {_type_name(value)}", path)


def _name(value: Any, path: str) -> Any:
    if isinstance(value, str) and value.strip():
        return value
    raise SchemaError(f"expected a non-empty name, found {_type_name(value)}", path)


def _bool(value: Any, path: str) -> Any:
    if value is None or isinstance(value, bool):
        return value
    raise SchemaError(f"expected true or false, found {_type_name(value)}", path)


_MAX_COUNT = 10**15


def _count(value: Any, path: str) -> Any:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_COUNT:
        return value
    if isinstance(value, Decimal) and 0 <= value <= _MAX_COUNT and value == value.to_integral_value():
        return int(value)
    raise SchemaError(
        f"expected a whole number from 0 to {_MAX_COUNT}, found {_type_name(value)} {str(value)[:40]!r}", path
    )


def to_decimal(value: Any) -> Decimal | None:
    """A money or factor value as an exact `Decimal`; None when it is not a finite number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        return value if value.is_finite() else None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        result = Decimal(repr(value))
        return result if result.is_finite() else None
    if isinstance(value, str):
        try:
            result = Decimal(value.strip())
        except InvalidOperation:
            return None
        return result if result.is_finite() else None
    return None


def _money(value: Any, path: str) -> Any:
    if value is None:
        return None
    result = to_decimal(value)
    if result is None:
        if isinstance(value, Decimal):
            raise SchemaError(f"{value} is not a finite number", path)
        raise SchemaError(f"expected a number, found {_type_name(value)} {value!r}", path)
    if result < 0:
        raise SchemaError(f"a price or factor cannot be negative ({value})", path)
    if result.adjusted() > 15 or result.adjusted() < -30:
        raise SchemaError(f"{str(value)[:40]} is out of range for a price or factor", path)
    return result


def _date(value: Any, path: str) -> Any:
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str):
        text = value.strip()
        try:
            return _dt.date.fromisoformat(text).isoformat()
        except ValueError:
            pass
        try:  # a full timestamp: its date
            return _dt.datetime.fromisoformat(text.replace("Z", "+00:00")).date().isoformat()
        except ValueError:
            pass
    raise SchemaError(f"expected a date (YYYY-MM-DD), found {_type_name(value)} {value!r}", path)


def _list_of(item: Checker) -> Checker:
    def check(value: Any, path: str) -> Any:
        if value is None:
            return None
        if not isinstance(value, list):
            raise SchemaError(f"expected a list, found {_type_name(value)}", path)
        return [item(v, _join(path, i)) for i, v in enumerate(value)]

    return check


def _map_of(item: Checker) -> Checker:
    def check(value: Any, path: str) -> Any:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise SchemaError(f"expected a mapping, found {_type_name(value)}", path)
        out: dict[str, Any] = {}
        for key, v in value.items():
            if not isinstance(key, str):
                raise SchemaError(f"keys must be text, found {_type_name(key)} {key!r}", path)
            out[key] = item(v, _join(path, key))
        return out

    return check


def _plain(value: Any, path: str) -> Any:
    """Unknown values are kept as they are; dates become their text so every layer reads alike."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v, path) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, path) for v in value]
    if isinstance(value, _dt.datetime):
        return value.isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, float):
        return to_decimal(value)
    return value


def _record(fields: dict[str, Checker], *, required: tuple[str, ...] = (), extra: Checker | None = None) -> Checker:
    """A mapping with known keys checked by `fields`, every other key kept (or checked by `extra`)."""

    def check(value: Any, path: str) -> Any:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise SchemaError(f"expected a mapping, found {_type_name(value)}", path)
        out: dict[str, Any] = {}
        for key, v in value.items():
            if not isinstance(key, str):
                raise SchemaError(f"keys must be text, found {_type_name(key)} {key!r}", path)
            checker = fields.get(key)
            if checker is not None:
                out[key] = checker(v, _join(path, key))
            elif extra is not None:
                out[key] = extra(v, _join(path, key))
            else:
                out[key] = _plain(v, path)
        for key in required:
            if key not in out or out[key] is None:
                raise SchemaError(f"'{key}' is required", path)
        return out

    return check


def _supports_flag(key: str) -> bool:
    return key.startswith("supports") and len(key) > 8 and key[8].isupper()


def _model_record(fields: dict[str, Checker], *, required: tuple[str, ...]) -> Checker:
    base = _record(fields, required=required)

    def check(value: Any, path: str) -> Any:
        out = base(value, path)
        if out is None:
            return None
        for key, v in out.items():
            if _supports_flag(key) and key not in fields:
                _bool(v, _join(path, key))
        return out

    return check


def _thinking(value: Any, path: str) -> Any:
    if value is None or value is False:
        return value
    if value is True:
        return {}
    return _THINKING(value, path)


def _when(value: Any, path: str) -> Any:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise SchemaError(f"expected a mapping of qualifiers, found {_type_name(value)}", path)
    out: dict[str, str] = {}
    for key, v in value.items():
        if isinstance(v, (dict, list)) or v is None:
            raise SchemaError("a qualifier value must be text, a number or a boolean", _join(path, str(key)))
        out[str(key)] = _qualifier_text(v)
    return out


def _qualifier_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_ITEM = _record(
    {
        "counter": _name,
        "price": _money,
        "per": _money,
        "when": _when,
        "label": _str,
        "asOf": _date,
        "source": _str,
    },
    required=("counter", "price"),
)

_TIER = _record(
    {
        "above": _count,
        "basis": _str,
        "multipliers": _map_of(_money),
        "label": _str,
    },
    required=("above",),
)

_PRICING = _record(
    {
        "inputPerMillion": _money,
        "outputPerMillion": _money,
        "cacheCreationPerMillion": _money,
        "cacheReadPerMillion": _money,
        "longContextInputPerMillion": _money,
        "longContextOutputPerMillion": _money,
        "longContextThreshold": _count,
        "items": _list_of(_ITEM),
        "tiers": _list_of(_TIER),
        "multipliers": _map_of(_money),
        "subsetOf": _map_of(_name),
        "asOf": _date,
        "source": _str,
        "free": _bool,
    }
)

_PERIOD = _record({"from": _date, "until": _date, "pricing": _PRICING}, required=("pricing",))

_THINKING = _record(
    {
        "budget": _bool,
        "minBudget": _count,
        "maxBudget": _count,
        "efforts": _list_of(_name),
        "adaptive": _bool,
    }
)

_SERVICE_TIER_RECORD = _record({"pricingMultiplier": _money, "displayName": _str})


def _service_tier(value: Any, path: str) -> Any:
    """A tier is a mapping; a bare number is read as its `pricingMultiplier`."""
    if value is None:
        return {}
    if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
        return {"pricingMultiplier": _money(value, path)}
    return _SERVICE_TIER_RECORD(value, path)


def _capabilities(value: Any, path: str) -> Any:
    """A list of names, or a mapping of name to true/false."""
    if isinstance(value, Mapping):
        return _map_of(_bool)(value, path)
    return _list_of(_name)(value, path)


# Only `name` is required of a model: a higher layer may change single fields of a model a lower layer lists.
_MODEL = _model_record(
    {
        "name": _name,
        "displayName": _str,
        "kind": _str,
        "contextWindow": _count,
        "maxOutputTokens": _count,
        "thinking": _thinking,
        "serviceTiers": _map_of(_service_tier),
        "pricing": _PRICING,
        "pricingPeriods": _list_of(_PERIOD),
        "properties": _map_of(_plain),
        "maxImageBytes": _count,
        "maxImageWidth": _count,
        "maxImageHeight": _count,
        "maxImagesPerRequest": _count,
        "deprecated": _bool,
    },
    required=("name",),
)

_PRESET = _record(
    {
        "displayName": _str,
        "baseUrl": _str,
        "apiKeyEnvVar": _str,
        "local": _bool,
        "modelPatterns": _list_of(_name),
        "aliases": _map_of(_name),
        "capabilities": _capabilities,
        "models": _list_of(_MODEL),
        "properties": _map_of(_plain),
    }
)

_PROVIDER = _record(
    {
        "name": _name,
        "displayName": _str,
        "modelPatterns": _list_of(_name),
        "aliases": _map_of(_name),
        "apiKeyEnvVar": _str,
        "capabilities": _capabilities,
        "presets": _map_of(_PRESET),
        "models": _list_of(_MODEL),
        "properties": _map_of(_plain),
        "baseUrl": _str,
        "protocol": _str,
        "local": _bool,
    },
    required=("name",),
)


def _check_periods(model: Mapping[str, Any], path: str) -> None:
    periods = model.get("pricingPeriods") or []
    spans: list[tuple[str, str, int]] = []
    for i, period in enumerate(periods):
        start = period.get("from") or "0000-01-01"
        end = period.get("until") or "9999-12-31"
        if start >= end:
            raise SchemaError("'from' must be before 'until'", _join(_join(path, "pricingPeriods"), i))
        for other_start, other_end, j in spans:
            if start < other_end and other_start < end:
                raise SchemaError(
                    f"overlaps pricingPeriods[{j}]; price periods must not overlap",
                    _join(_join(path, "pricingPeriods"), i),
                )
        spans.append((start, end, i))


def _check_models(models: list[dict[str, Any]] | None, path: str) -> None:
    seen: dict[str, int] = {}
    for i, model in enumerate(models or []):
        key = model["name"].lower()
        if key in seen:
            raise SchemaError(
                f"model '{model['name']}' is listed twice (also models[{seen[key]}])", _join(_join(path, "models"), i)
            )
        seen[key] = i
        _check_periods(model, _join(_join(path, "models"), i))


def check_provider(value: Any, path: str = "") -> dict[str, Any]:
    """Check one provider document and return its canonical plain form."""
    out: dict[str, Any] | None = _PROVIDER(value, path)
    if out is None:
        raise SchemaError("expected a provider mapping", path)
    _check_models(out.get("models"), path)
    for preset_name, preset in (out.get("presets") or {}).items():
        if preset is not None:
            _check_models(preset.get("models"), _join(_join(path, "presets"), preset_name))
    return out
