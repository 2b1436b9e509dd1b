"""Properties that hold for every usage and every shipped model: exact line arithmetic, exact totals, display
rounding half away from zero, and resolution of every listed model by its own name."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from onellm.catalog import Catalog
from onellm.messages import Usage

SHIPPED = Catalog.shipped()
PRICED = sorted(
    f"{preset.name if preset else provider.name}:{model.name}"
    for provider, preset, model in SHIPPED.models()
    if model.data.get("pricing")
)
COUNTERS = ["reasoningTokens", "inputAudioTokens", "cacheCreation1hInputTokens", "toolCalls.web_search", "images"]

tokens = st.integers(min_value=0, max_value=3_000_000)


@st.composite
def usages(draw: st.DrawFn) -> Usage:
    counters = draw(st.dictionaries(st.sampled_from(COUNTERS), st.integers(min_value=0, max_value=500_000), max_size=3))
    return Usage(
        input_tokens=draw(tokens),
        output_tokens=draw(tokens),
        cache_creation_input_tokens=draw(tokens),
        cache_read_input_tokens=draw(tokens),
        counters=counters,
    )


@settings(max_examples=300, deadline=None)
@given(
    model=st.sampled_from(PRICED),
    usage=usages(),
    tier=st.sampled_from([None, "flex", "priority", "standard"]),
    batch=st.booleans(),
)
def test_lines_are_exact_and_sum_to_the_total(model: str, usage: Usage, tier: str | None, batch: bool) -> None:
    cost = SHIPPED.resolve(model).price(usage, service_tier=tier, batch=batch)
    total = Fraction(0)
    for line in cost.lines:
        want = Fraction(line.quantity) / Fraction(line.per) * Fraction(line.unit_price) * Fraction(line.multiplier)
        assert Fraction(line.amount) == want
        assert line.amount >= 0
        total += want
    assert Fraction(cost.total) == total
    rounded = cost.total.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)
    assert cost.display() == f"{abs(rounded) if rounded.is_zero() else rounded:f}"


@settings(max_examples=200, deadline=None)
@given(model=st.sampled_from(PRICED), usage=usages())
def test_subsets_never_charge_a_token_twice(model: str, usage: Usage) -> None:
    """Every token of the main counters is charged once: line quantities of a parent and its priced subsets add up to
    at most the parent's reported quantity (exactly, when the subsets fit inside it)."""
    resolved = SHIPPED.resolve(model)
    cost = resolved.price(usage)
    table = resolved.entry.price_table
    by_counter = {line.counter: line.quantity for line in cost.lines}
    reported = {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheCreationInputTokens": usage.cache_creation_input_tokens,
        "cacheReadInputTokens": usage.cache_read_input_tokens,
    }
    for parent, quantity in reported.items():
        if table.price_of(parent, {}) is None:
            continue  # an unpriced parent is left out with a warning
        children = [c for c, p in table.subset_of.items() if p == parent and c in by_counter]
        charged = by_counter.get(parent, 0) + sum(by_counter[c] for c in children)
        if sum(usage.counters.get(c, 0) for c in children) <= quantity:
            assert charged == quantity


def test_every_listed_model_resolves_by_its_names() -> None:
    for provider, preset, model in SHIPPED.models():
        scope = preset.name if preset else provider.name
        assert SHIPPED.resolve(f"{scope}:{model.name}").entry is model
        assert SHIPPED.resolve(f"{scope}:{model.name.upper()}").entry is model


# -- the merge rules, on random layers ------------------------------------------------------------------------------------

keys = st.sampled_from(["a", "b", "c", "d"])
scalars = st.one_of(st.integers(min_value=0, max_value=9), st.sampled_from(["x", "y"]), st.booleans())
props = st.recursive(
    st.dictionaries(keys, scalars, max_size=3),
    lambda inner: st.dictionaries(keys, st.one_of(scalars, inner, st.lists(scalars, max_size=2)), max_size=3),
    max_leaves=8,
)
model_names = st.sampled_from(["m1", "m2", "M1", "m3"])
models = st.lists(
    st.fixed_dictionaries({"name": model_names}, optional={"contextWindow": st.integers(0, 9), "properties": props}),
    max_size=3,
    unique_by=lambda m: m["name"].lower(),
)
providers = st.fixed_dictionaries(
    {"name": st.just("p")},
    optional={"properties": props, "models": models, "modelPatterns": st.lists(st.sampled_from(["p-*", "q?"]))},
)


def _leaves(value: object, path: str) -> list[tuple[str, object]]:
    """The values a layer sets: an empty mapping sets nothing (mappings merge key by key)."""
    if isinstance(value, dict):
        out: list[tuple[str, object]] = []
        for key, item in value.items():
            out.extend(_leaves(item, f"{path}.{key}"))
        return out
    return [(path, value)]


@settings(max_examples=150, deadline=None)
@given(lower=providers, higher=providers)
def test_merge_rules_hold_for_random_layers(lower: dict[str, object], higher: dict[str, object]) -> None:
    from onellm.catalog import CatalogLayer

    catalog = Catalog.from_layers(CatalogLayer.from_data(lower, name="user"), CatalogLayer.from_data(higher))
    # every value the higher layer sets is the effective value, and is traced to it
    for key in ("properties", "modelPatterns"):
        if key in higher:
            for path, value in _leaves(higher[key], key):
                assert catalog.value_of("p", path) == value
                assert catalog.source_of("p", path) == "code"
    # a value only the lower layer sets survives, traced to it
    if "properties" in lower:
        for path, value in _leaves(lower["properties"], "properties"):
            if catalog.source_of("p", path) == "user":
                assert catalog.value_of("p", path) == value
    # models merge by name (ignoring case): one per name, lower order first, fields of both
    merged = catalog.value_of("p", "models") or []
    names = [m["name"].lower() for m in merged]
    assert len(names) == len(set(names))
    lower_names = [m["name"].lower() for m in lower.get("models", [])]  # type: ignore[attr-defined]
    assert names[: len(lower_names)] == lower_names
    for model in higher.get("models", []):  # type: ignore[attr-defined]
        for field, value in model.items():
            if field == "name" or isinstance(value, dict):
                continue
            assert catalog.value_of("p", f"models[{model['name']}].{field}") == value
    # a list other than models is replaced whole
    if "modelPatterns" in higher:
        assert catalog.provider("p").model_patterns == tuple(higher["modelPatterns"])  # type: ignore[arg-type]
