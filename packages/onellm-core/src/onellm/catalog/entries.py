"""Typed, read-only views over merged catalog entries.

Each view wraps the merged plain mapping (`data`) and reads the known keys from it; keys the format does not know are in
`extra`, unchanged. A key that no layer sets reads as `None`: the catalog does not know, which is different from `False`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from decimal import Decimal
from functools import cached_property
from typing import TYPE_CHECKING, Any

from onellm._public import publish as _publish

if TYPE_CHECKING:
    from onellm.catalog.pricing import PriceTable

__all__ = ["ModelEntry", "PresetEntry", "ProviderEntry", "ServiceTier", "ThinkingSettings"]

_MODEL_KEYS = frozenset(
    {
        "name",
        "displayName",
        "kind",
        "contextWindow",
        "maxOutputTokens",
        "thinking",
        "serviceTiers",
        "pricing",
        "pricingPeriods",
        "properties",
        "maxImageBytes",
        "maxImageWidth",
        "maxImageHeight",
        "maxImagesPerRequest",
        "deprecated",
    }
)
_PROVIDER_KEYS = frozenset(
    {
        "name",
        "displayName",
        "modelPatterns",
        "aliases",
        "apiKeyEnvVar",
        "capabilities",
        "presets",
        "models",
        "properties",
        "baseUrl",
        "protocol",
        "local",
    }
)
_PRESET_KEYS = _PROVIDER_KEYS - {"name", "presets", "protocol"}


class ThinkingSettings:
    """A model's `thinking` mapping: whether it takes a token budget, the budget's bounds, the efforts it lists."""

    __slots__ = ("adaptive", "budget", "data", "efforts", "max_budget", "min_budget")

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = dict(data)
        self.budget: bool | None = data.get("budget")
        self.min_budget: int | None = data.get("minBudget")
        self.max_budget: int | None = data.get("maxBudget")
        efforts = data.get("efforts")
        self.efforts: tuple[str, ...] | None = tuple(efforts) if efforts is not None else None
        self.adaptive: bool | None = data.get("adaptive")

    def __repr__(self) -> str:
        return f"ThinkingSettings({self.data!r})"


class ServiceTier:
    """One entry of `serviceTiers`: its name and the factor on every price (`None`: the catalog gives none)."""

    __slots__ = ("data", "name", "pricing_multiplier")

    def __init__(self, name: str, data: Mapping[str, Any]) -> None:
        self.name = name
        self.data = dict(data)
        self.pricing_multiplier: Decimal | None = data.get("pricingMultiplier")

    def __repr__(self) -> str:
        return f"ServiceTier({self.name!r}, {self.data!r})"


class ModelEntry:
    """One model of the merged catalog."""

    def __init__(self, data: Mapping[str, Any], *, provider: str, preset: str | None = None) -> None:
        self.data: dict[str, Any] = dict(data)
        self.provider = provider
        self.preset = preset

    def __repr__(self) -> str:
        where = f"{self.provider}/{self.preset}" if self.preset else self.provider
        return f"ModelEntry({where}:{self.name})"

    @property
    def name(self) -> str:
        return str(self.data["name"])

    @property
    def display_name(self) -> str | None:
        return self.data.get("displayName")

    @property
    def kind(self) -> str | None:
        """`chat`, `embedding`, `decision`, `image`, `speech`, `transcription`, `moderation`, or None (not said)."""
        return self.data.get("kind")

    @property
    def context_window(self) -> int | None:
        return self.data.get("contextWindow")

    @property
    def max_output_tokens(self) -> int | None:
        return self.data.get("maxOutputTokens")

    def supports(self, feature: str) -> bool | None:
        """`supports("tools")` reads `supportsTools`: True, False, or None when the catalog does not say."""
        key = feature if feature.startswith("supports") else "supports" + feature[:1].upper() + feature[1:]
        value = self.data.get(key)
        return value if isinstance(value, bool) else None

    @cached_property
    def thinking(self) -> ThinkingSettings | bool | None:
        """`False`: the model does not think. `None`: the catalog does not say. Otherwise its settings."""
        value = self.data.get("thinking")
        if value is None or value is False:
            return value
        if value is True:
            return ThinkingSettings({})
        return ThinkingSettings(value)

    @cached_property
    def service_tiers(self) -> dict[str, ServiceTier] | None:
        tiers = self.data.get("serviceTiers")
        if tiers is None:
            return None
        return {name: ServiceTier(name, value or {}) for name, value in tiers.items()}

    @property
    def properties(self) -> dict[str, Any]:
        return dict(self.data.get("properties") or {})

    @property
    def extra(self) -> dict[str, Any]:
        """Keys the format does not define, as written."""
        return {k: v for k, v in self.data.items() if k not in _MODEL_KEYS and not _is_flag(k)}

    @property
    def pricing(self) -> dict[str, Any] | None:
        value = self.data.get("pricing")
        return dict(value) if value is not None else None

    @cached_property
    def price_table(self) -> PriceTable:
        """The compiled price table of the model's base `pricing`."""
        from onellm.catalog.pricing import PriceTable

        return PriceTable.compile(self.data.get("pricing"))

    @cached_property
    def _periods(self) -> tuple[tuple[str, str, PriceTable], ...]:
        from onellm.catalog._merge import merge_values
        from onellm.catalog.pricing import PriceTable

        out = []
        for period in self.data.get("pricingPeriods") or ():
            merged = merge_values(self.data.get("pricing") or {}, period["pricing"])
            table = PriceTable.compile(merged)
            table.until = period.get("until")
            out.append((period.get("from") or "0000-01-01", period.get("until") or "9999-12-31", table))
        return tuple(out)

    def price_table_at(self, day: _dt.date | None) -> PriceTable:
        """The price table in force on `day`: a `pricingPeriods` entry that covers it, else the base `pricing`."""
        periods = self._periods
        if not periods or day is None:
            return self.price_table
        key = day.isoformat()
        for start, end, table in periods:
            if start <= key < end:
                return table
        return self.price_table


def _capability_names(caps: Any) -> tuple[str, ...] | None:
    if caps is None:
        return None
    if isinstance(caps, Mapping):
        return tuple(name for name, on in caps.items() if on)
    return tuple(caps)


def _is_flag(key: str) -> bool:
    return key.startswith("supports") and len(key) > 8 and key[8].isupper()


class PresetEntry:
    """A named variant of a provider for an OpenAI-compatible server: its base URL, key variable, quirks and models."""

    def __init__(self, name: str, data: Mapping[str, Any], *, provider: str) -> None:
        self.name = name
        self.provider = provider
        self.data: dict[str, Any] = dict(data)

    def __repr__(self) -> str:
        return f"PresetEntry({self.provider}/{self.name})"

    @property
    def display_name(self) -> str | None:
        return self.data.get("displayName")

    @property
    def base_url(self) -> str | None:
        return self.data.get("baseUrl")

    @property
    def api_key_env_var(self) -> str | None:
        return self.data.get("apiKeyEnvVar")

    @property
    def local(self) -> bool:
        return self.data.get("local") is True

    @property
    def model_patterns(self) -> tuple[str, ...] | None:
        patterns = self.data.get("modelPatterns")
        return tuple(patterns) if patterns is not None else None

    @property
    def aliases(self) -> dict[str, str]:
        return dict(self.data.get("aliases") or {})

    @property
    def properties(self) -> dict[str, Any]:
        return dict(self.data.get("properties") or {})

    @property
    def capabilities(self) -> tuple[str, ...] | None:
        return _capability_names(self.data.get("capabilities"))

    @cached_property
    def models(self) -> tuple[ModelEntry, ...]:
        return tuple(ModelEntry(m, provider=self.provider, preset=self.name) for m in self.data.get("models") or ())

    @property
    def extra(self) -> dict[str, Any]:
        return {k: v for k, v in self.data.items() if k not in _PRESET_KEYS}


class ProviderEntry:
    """One provider of the merged catalog."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data: dict[str, Any] = dict(data)

    def __repr__(self) -> str:
        return f"ProviderEntry({self.name})"

    @property
    def name(self) -> str:
        return str(self.data["name"])

    @property
    def display_name(self) -> str | None:
        return self.data.get("displayName")

    @property
    def model_patterns(self) -> tuple[str, ...]:
        return tuple(self.data.get("modelPatterns") or ())

    @property
    def aliases(self) -> dict[str, str]:
        return dict(self.data.get("aliases") or {})

    @property
    def api_key_env_var(self) -> str | None:
        return self.data.get("apiKeyEnvVar")

    @property
    def base_url(self) -> str | None:
        return self.data.get("baseUrl")

    @property
    def protocol(self) -> str | None:
        return self.data.get("protocol")

    @property
    def local(self) -> bool:
        return self.data.get("local") is True

    @property
    def capabilities(self) -> tuple[str, ...] | None:
        return _capability_names(self.data.get("capabilities"))

    @property
    def properties(self) -> dict[str, Any]:
        return dict(self.data.get("properties") or {})

    @cached_property
    def models(self) -> tuple[ModelEntry, ...]:
        return tuple(ModelEntry(m, provider=self.name) for m in self.data.get("models") or ())

    @cached_property
    def presets(self) -> dict[str, PresetEntry]:
        return {
            name: PresetEntry(name, value or {}, provider=self.name)
            for name, value in (self.data.get("presets") or {}).items()
        }

    @property
    def extra(self) -> dict[str, Any]:
        return {k: v for k, v in self.data.items() if k not in _PROVIDER_KEYS}


_publish("onellm.catalog", ModelEntry, PresetEntry, ProviderEntry, ServiceTier, ThinkingSettings)
