"""The model catalog: which models exist, what they can do and what they cost.

The catalog is a stack of `llm-provider.yaml` layers (shipped < user < code) merged by the rules of `spec/catalog.md`.
`Catalog.resolve` turns a model name into a `ResolvedModel`, whose `price` turns a usage report into exact cost lines.
Token counting, request adjustment, the worst-case estimate and the spend guard live here too.
"""

from onellm.catalog._catalog import Catalog, CatalogLayer, ResolvedModel, ValueOrigin, is_loopback_url
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

__all__ = [
    "Adjustment",
    "Catalog",
    "CatalogLayer",
    "CostEstimate",
    "CostEstimator",
    "LocalTokenizer",
    "ModelEntry",
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
