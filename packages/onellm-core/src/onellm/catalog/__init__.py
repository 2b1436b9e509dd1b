"""The model catalog: which models exist, what they can do and what they cost.

The catalog is a stack of `llm-provider.yaml` layers (shipped < user < code) merged by the rules of `spec/catalog.md`.
`Catalog.resolve` turns a model name into a `ResolvedModel`, whose `price` turns a usage report into exact cost lines.
Token counting, request adjustment, the worst-case estimate and the spend guard live here too. Names load on first use,
so resolving a model does not import the pricing engine or the counters.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from onellm.catalog._catalog import Catalog, CatalogLayer, ResolvedModel, ValueOrigin, is_loopback_url
    from onellm.catalog._profile import SCHEMA_FORMS, THINKING_STYLES, ModelProfile
    from onellm.catalog.adjust import Adjustment, RequestAdjuster, RequestSettings
    from onellm.catalog.counting import (
        LocalTokenizer,
        TokenCount,
        TokenEstimator,
        context_usage,
        count_tokens,
        estimate_text,
        image_tokens,
    )
    from onellm.catalog.entries import ModelEntry, PresetEntry, ProviderEntry, ServiceTier, ThinkingSettings
    from onellm.catalog.pricing import PriceTable, price_usage
    from onellm.catalog.spend import CostEstimate, CostEstimator, Reservation, SpendCap, SpendGuard

_LAZY = {
    "Catalog": "onellm.catalog._catalog",
    "CatalogLayer": "onellm.catalog._catalog",
    "ResolvedModel": "onellm.catalog._catalog",
    "ValueOrigin": "onellm.catalog._catalog",
    "is_loopback_url": "onellm.catalog._catalog",
    "ModelProfile": "onellm.catalog._profile",
    "SCHEMA_FORMS": "onellm.catalog._profile",
    "THINKING_STYLES": "onellm.catalog._profile",
    "Adjustment": "onellm.catalog.adjust",
    "RequestAdjuster": "onellm.catalog.adjust",
    "RequestSettings": "onellm.catalog.adjust",
    "LocalTokenizer": "onellm.catalog.counting",
    "TokenCount": "onellm.catalog.counting",
    "TokenEstimator": "onellm.catalog.counting",
    "context_usage": "onellm.catalog.counting",
    "count_tokens": "onellm.catalog.counting",
    "estimate_text": "onellm.catalog.counting",
    "image_tokens": "onellm.catalog.counting",
    "ModelEntry": "onellm.catalog.entries",
    "PresetEntry": "onellm.catalog.entries",
    "ProviderEntry": "onellm.catalog.entries",
    "ServiceTier": "onellm.catalog.entries",
    "ThinkingSettings": "onellm.catalog.entries",
    "PriceTable": "onellm.catalog.pricing",
    "price_usage": "onellm.catalog.pricing",
    "CostEstimate": "onellm.catalog.spend",
    "CostEstimator": "onellm.catalog.spend",
    "Reservation": "onellm.catalog.spend",
    "SpendCap": "onellm.catalog.spend",
    "SpendGuard": "onellm.catalog.spend",
}

__all__ = [
    "SCHEMA_FORMS",
    "THINKING_STYLES",
    "Adjustment",
    "Catalog",
    "CatalogLayer",
    "CostEstimate",
    "CostEstimator",
    "LocalTokenizer",
    "ModelEntry",
    "ModelProfile",
    "PresetEntry",
    "PriceTable",
    "ProviderEntry",
    "RequestAdjuster",
    "RequestSettings",
    "Reservation",
    "ResolvedModel",
    "ServiceTier",
    "SpendCap",
    "SpendGuard",
    "ThinkingSettings",
    "TokenCount",
    "TokenEstimator",
    "ValueOrigin",
    "context_usage",
    "count_tokens",
    "estimate_text",
    "image_tokens",
    "is_loopback_url",
    "price_usage",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'onellm.catalog' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
