"""Catalog layers, the merge rules, value origins, name resolution, file errors and the shipped catalog."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from onellm.catalog import Catalog, CatalogLayer
from onellm.catalog._catalog import _DATA_DIR, glob_match
from onellm.catalog._compile import compile_shipped
from onellm.catalog._yaml import load_documents
from onellm.errors import BadDefinitionError, ModelNotFoundError

DATA = Path(__file__).resolve().parents[4] / "testdata" / "catalog"


def _yaml(path: Path) -> Any:
    (doc,) = load_documents(path.read_text(encoding="utf-8"), file=str(path))
    return doc


# -- merge rules and origins ------------------------------------------------------------------------------------------

MERGE = _yaml(DATA / "merge-cases.yaml")


@pytest.fixture(scope="module")
def layered() -> Catalog:
    return Catalog.from_layers(
        CatalogLayer.from_file(DATA / "layered" / "base.llm-provider.yaml", name="shipped"),
        DATA / "layered" / "user",
        MERGE["code"],
    )


@pytest.mark.parametrize("case", MERGE["cases"], ids=[f"{c['provider']}.{c['path']}" for c in MERGE["cases"]])
def test_merge_case(layered: Catalog, case: dict[str, Any]) -> None:
    assert layered.value_of(case["provider"], case["path"]) == case["value"]
    assert layered.source_of(case["provider"], case["path"]) == case["source"]
    if "file" in case:
        origin = layered.origin_of(case["provider"], case["path"])
        assert origin is not None
        if case["file"] is None:
            assert origin.file is None
        else:
            assert origin.file is not None
            assert Path(origin.file).name == case["file"]


def test_models_merge_by_name_and_keep_order(layered: Catalog) -> None:
    names = [m.name for m in layered.provider("alpha").models]
    assert names == ["alpha-small", "alpha-large", "alpha-tiny"]


def test_layers_stack_by_precedence_whatever_order_they_are_given() -> None:
    shipped = CatalogLayer.from_data({"name": "p", "displayName": "shipped"}, name="shipped")
    user = CatalogLayer.from_data({"name": "p", "displayName": "user"}, name="user")
    code = CatalogLayer.from_data({"name": "p", "displayName": "code"})
    catalog = Catalog.from_layers(code, user, shipped)
    assert catalog.provider("p").display_name == "code"
    assert [layer.name for layer in catalog.layers] == ["shipped", "user", "code"]
    assert Catalog.from_layers(user, shipped).provider("p").display_name == "user"


def test_explicit_null_clears_a_lower_value() -> None:
    catalog = Catalog.from_layers(
        CatalogLayer.from_data(
            {"name": "p", "models": [{"name": "m", "pricing": {"inputPerMillion": 1}}]}, name="user"
        ),
        {"name": "p", "models": [{"name": "m", "pricing": None}]},
    )
    assert catalog.resolve("p:m").entry.pricing is None
    assert catalog.source_of("p", "models[m].pricing") == "code"


def test_unknown_keys_are_kept_at_every_level(layered: Catalog) -> None:
    alpha = layered.provider("alpha")
    assert alpha.extra == {"vendorNote": "kept as written"}
    small = layered.resolve("alpha-small").entry
    assert small.extra == {"customKey": {"x": 1}}


def test_with_overrides_adds_a_code_layer(layered: Catalog) -> None:
    changed = layered.with_overrides({"name": "alpha", "models": [{"name": "alpha-large", "contextWindow": 7}]})
    assert changed.resolve("alpha-large").entry.context_window == 7
    assert layered.resolve("alpha-large").entry.context_window == 200000
    assert changed.source_of("alpha", "models[alpha-large].contextWindow") == "code"


# -- resolution --------------------------------------------------------------------------------------------------------

RESOLVE = _yaml(DATA / "resolve-cases.yaml")
RESOLVE_CATALOG = Catalog.from_layers(RESOLVE["providers"])


@pytest.mark.parametrize("case", RESOLVE["cases"], ids=[repr(c["name"]) for c in RESOLVE["cases"]])
def test_resolve_case(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(ModelNotFoundError) as info:
            RESOLVE_CATALOG.resolve(case["name"])
        if case["error"] == "ambiguous":
            assert "ambiguous" in str(info.value)
            assert list(info.value.candidates) == case["candidates"]
        return
    resolved = RESOLVE_CATALOG.resolve(case["name"])
    assert resolved.qualified_name == case["want"]
    assert resolved.via == case["via"]


def test_resolution_is_cached_per_name() -> None:
    catalog = Catalog.from_layers(RESOLVE["providers"])
    first = catalog.resolve("sonnet")
    assert catalog.resolve("sonnet") is first


def test_a_resolved_models_names_are_kept_and_a_changed_catalog_resolves_new_ones() -> None:
    catalog = Catalog.from_layers([{"name": "p", "aliases": {"fast": "m-1"}, "models": [{"name": "m-1"}]}])
    fast = catalog.resolve("fast")
    assert (fast.name, fast.qualified_name) == ("m-1", "p:m-1")
    assert (fast.name, fast.qualified_name) == ("m-1", "p:m-1")  # read again from what the model kept
    changed = catalog.with_overrides({"name": "p", "aliases": {"fast": "m-2"}, "models": [{"name": "m-2"}]})
    moved = changed.resolve("fast")
    assert (moved.name, moved.qualified_name) == ("m-2", "p:m-2")
    assert catalog.resolve("fast").qualified_name == "p:m-1"  # the old catalog is unchanged


def test_unknown_name_suggests_near_names() -> None:
    with pytest.raises(ModelNotFoundError) as info:
        RESOLVE_CATALOG.resolve("sonet")
    assert "sonnet" in info.value.candidates
    assert "did you mean" in str(info.value)


def test_preset_sharing_a_provider_name_is_an_error() -> None:
    with pytest.raises(BadDefinitionError, match="same name"):
        Catalog.from_layers([{"name": "a"}, {"name": "b", "presets": {"a": {}}}])


def test_preset_entry_supplies_base_url_key_and_locality() -> None:
    catalog = Catalog.shipped()
    ollama = catalog.resolve("ollama:llama3")
    assert ollama.provider == "openai-compatible"
    assert ollama.preset == "ollama"
    assert ollama.base_url == "http://localhost:11434/v1"
    assert ollama.api_key_env_var is None
    assert ollama.local is True
    groq = catalog.resolve("groq:llama-4")
    assert groq.base_url == "https://api.groq.com/openai/v1"
    assert groq.api_key_env_var == "GROQ_API_KEY"
    assert groq.local is False


def test_glob_matching() -> None:
    assert glob_match("gpt-*", "gpt-6-luna")
    assert glob_match("a?c", "abc")
    assert not glob_match("a?c", "ac")
    assert glob_match("*-preview", "x-preview")
    assert glob_match("*a*b*", "xxaxxbxx")
    assert not glob_match("*a*b", "xxaxxbxx")
    assert glob_match("*", "")
    hostile = "a" * 5000
    assert not glob_match("*a*a*a*a*a*a*a*b", hostile)


# -- files and errors --------------------------------------------------------------------------------------------------

BAD = load_documents((DATA / "bad" / "cases.yaml").read_text(encoding="utf-8"))[0]


@pytest.mark.parametrize("case", BAD, ids=[c["file"] for c in BAD])
def test_bad_file_reports_position(case: dict[str, Any]) -> None:
    path = DATA / "bad" / case["file"]
    with pytest.raises(BadDefinitionError) as info:
        CatalogLayer.from_file(path)
    err = info.value
    assert err.file == str(path)
    assert (err.line, err.column) == (case["line"], case["column"]), str(err)
    assert err.path == case["path"], str(err)
    assert case["message"] in str(err)


def test_providers_list_and_multi_document_forms() -> None:
    layer = CatalogLayer.from_text(
        "name: one\n---\nname: two\n---\nproviders:\n  - name: three\n  - name: four\n", file="x.yaml"
    )
    assert [p["name"] for _, p in layer.providers()] == ["one", "two", "three", "four"]


def test_directory_layer_reads_files_in_order(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text("name: p\ndisplayName: from b\n")
    (tmp_path / "a.yaml").write_text("name: p\ndisplayName: from a\napiKeyEnvVar: A\n")
    (tmp_path / "notes.txt").write_text("not a catalog")
    catalog = Catalog.from_layers(tmp_path)
    assert catalog.provider("p").display_name == "from b"
    assert catalog.provider("p").api_key_env_var == "A"


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BadDefinitionError, match="no such catalog file"):
        CatalogLayer.from_file(tmp_path / "nope.yaml")


def test_prices_read_as_exact_decimals() -> None:
    layer = CatalogLayer.from_text(
        "name: p\nmodels:\n  - name: m\n    pricing: {inputPerMillion: 0.30000000000000004}\n"
    )
    ((_, provider),) = list(layer.providers())
    assert provider["models"][0]["pricing"]["inputPerMillion"] == Decimal("0.30000000000000004")


def test_code_layer_floats_read_through_their_text() -> None:
    catalog = Catalog.from_layers({"name": "p", "models": [{"name": "m", "pricing": {"inputPerMillion": 0.1}}]})
    assert catalog.resolve("p:m").entry.price_table.flat["inputTokens"] == Decimal("0.1")


def test_alias_bomb_is_refused() -> None:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines.extend(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8))
    text = "name: p\nproperties:\n" + "\n".join("  " + line for line in lines) + "\n"
    with pytest.raises(BadDefinitionError, match="alias"):
        CatalogLayer.from_text(text)


# -- the default catalog and the shipped data ---------------------------------------------------------------------------


def test_default_reads_onellm_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine.yaml").write_text("name: mine\nmodels:\n  - name: my-model\n    pricing: {inputPerMillion: 7}\n")
    monkeypatch.setenv("ONELLM_CATALOG", str(tmp_path))
    catalog = Catalog.default()
    assert catalog.resolve("my-model").qualified_name == "mine:my-model"
    assert catalog.resolve("claude-sonnet").name == "claude-sonnet-5-5"
    assert catalog.source_of("mine", "models[my-model].pricing.inputPerMillion") == "user"
    assert Catalog.default() is catalog
    monkeypatch.delenv("ONELLM_CATALOG")
    with pytest.raises(ModelNotFoundError):
        Catalog.default().resolve("my-model")


def test_shipped_json_matches_the_yaml_files() -> None:
    assert (Path(_DATA_DIR) / "shipped.json").read_bytes() == compile_shipped(), (
        "run `uv run python -m onellm.catalog._compile` after editing a shipped llm-provider.yaml"
    )


def test_every_shipped_price_has_as_of_and_source() -> None:
    for provider, preset, model in Catalog.shipped().models():
        pricing = model.data.get("pricing")
        if pricing is None:
            continue
        where = f"{provider.name}/{preset.name if preset else ''}/{model.name}"
        assert pricing.get("asOf"), where
        assert pricing.get("source"), where
        dt.date.fromisoformat(pricing["asOf"])


def test_shipped_catalog_names_the_getting_started_models() -> None:
    catalog = Catalog.shipped()
    sonnet = catalog.resolve("claude-sonnet")
    assert (sonnet.provider, sonnet.name) == ("anthropic", "claude-sonnet-5-5")
    assert sonnet.entry.context_window == 1_000_000
    assert catalog.source_of("anthropic", "models[claude-sonnet-5-5].pricing.inputPerMillion") == "shipped"
    assert catalog.resolve("openai:gpt-6-luna").api_key_env_var == "OPENAI_API_KEY"
    assert catalog.resolve("gemini-flash").provider == "gemini"
    assert catalog.resolve("jev-latest").entry.kind == "decision"
    assert catalog.resolve("embedding-small").entry.kind == "embedding"


@pytest.mark.parametrize(
    ("preset", "base_url", "key"),
    [
        ("ollama", "http://localhost:11434/v1", None),
        ("vllm", "http://localhost:8000/v1", None),
        ("lmstudio", "http://localhost:1234/v1", None),
        ("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        ("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        ("deepseek", "https://api.deepseek.com", "DEEPSEEK_API_KEY"),
        ("xai", "https://api.x.ai/v1", "XAI_API_KEY"),
        ("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
        ("together", "https://api.together.ai/v1", "TOGETHER_API_KEY"),
    ],
)
def test_shipped_presets(preset: str, base_url: str, key: str | None) -> None:
    resolved = Catalog.shipped().resolve(f"{preset}:some-model")
    assert resolved.preset == preset
    assert resolved.base_url == base_url
    assert resolved.api_key_env_var == key
    assert resolved.local is (key is None)


def test_find_stale_lists_old_prices() -> None:
    catalog = Catalog.shipped()
    assert catalog.find_stale(dt.date(2026, 12, 2)) == []
    stale = catalog.find_stale(dt.date(2027, 6, 1))
    labels = {label for label, _, _ in stale}
    assert "openai:gpt-6-luna" in labels
    assert "anthropic:claude-sonnet-5-5" in labels


def test_import_onellm_does_not_load_the_catalog() -> None:
    import subprocess
    import sys

    code = "import sys, onellm; print('onellm.catalog' in sys.modules, 'ruamel.yaml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False False"


def test_shipped_catalog_loads_without_the_yaml_loader() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from onellm.catalog import Catalog; Catalog.default().resolve('claude-sonnet');"
        "print('ruamel.yaml' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "ONELLM_CATALOG"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "False"


def test_describe_lists_values_with_their_layer() -> None:
    catalog = Catalog.shipped().with_overrides(
        {"name": "anthropic", "models": [{"name": "claude-sonnet-5-5", "pricing": {"outputPerMillion": 9}}]}
    )
    rows = {path: (value, layer) for path, value, layer in catalog.describe("claude-sonnet")}
    assert rows["name"] == ("claude-sonnet-5-5", "shipped")
    assert rows["contextWindow"] == (1_000_000, "shipped")
    assert rows["pricing.inputPerMillion"] == (2, "shipped")
    assert rows["pricing.outputPerMillion"] == (9, "code")
    assert rows["pricing.asOf"] == ("2026-11-05", "shipped")
    assert rows["pricing.multipliers.region:us"][1] == "shipped"
    assert catalog.describe("gpt-9") == [("name", "gpt-9", None)]


def test_names_keep_the_spelling_of_the_layer_that_introduced_them() -> None:
    catalog = Catalog.from_layers(
        CatalogLayer.from_data({"name": "Acme", "models": [{"name": "Model-One"}]}, name="shipped"),
        {"name": "ACME", "models": [{"name": "model-one", "contextWindow": 5}]},
    )
    resolved = catalog.resolve("acme:MODEL-ONE")
    assert (resolved.provider, resolved.name, resolved.entry.context_window) == ("Acme", "Model-One", 5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: p\nmodels:\n  - name: m\n    contextWindow: 1" + "0" * 30 + "\n", "whole number"),
        ("name: p\nmodels:\n  - name: m\n    pricing: {inputPerMillion: 1e400}\n", "out of range"),
        ("name: p\nmodels:\n  - name: m\n    contextWindow: " + "9" * 5000 + "\n", "longer than"),
        ("name: p\nproperties: {a: " + "[" * 5000 + "]" * 5000 + "}\n", "nested deeper"),
    ],
)
def test_hostile_values_are_typed_errors(text: str, message: str) -> None:
    with pytest.raises(BadDefinitionError, match=message):
        CatalogLayer.from_text(text, file="hostile.yaml")


def test_lenient_shapes_of_known_keys() -> None:
    layer = CatalogLayer.from_text(
        "name: p\n"
        "capabilities: {chat: true, streaming: false, tools: true}\n"
        "models:\n"
        "  - name: m\n"
        "    serviceTiers: {flex: 0.5, priority: {pricingMultiplier: 2}}\n"
        "    pricing: {inputPerMillion: 1, asOf: '2026-11-05T10:00:00Z'}\n"
    )
    catalog = Catalog([layer])
    resolved = catalog.resolve("p:m")
    assert resolved.capabilities == ("chat", "tools")
    tiers = resolved.entry.service_tiers
    assert tiers is not None
    assert tiers["flex"].pricing_multiplier == Decimal("0.5")
    assert resolved.entry.pricing is not None
    assert resolved.entry.pricing["asOf"] == "2026-11-05"


def test_from_layers_keywords() -> None:
    catalog = Catalog.from_layers(
        shipped=True,
        user=DATA / "layered" / "user",
        code={"name": "anthropic", "aliases": {"house": "claude-haiku-5-5"}},
    )
    assert catalog.resolve("house").name == "claude-haiku-5-5"
    assert catalog.source_of("anthropic", "aliases.house") == "code"
    assert catalog.source_of("gamma", "modelPatterns") == "user"
    assert catalog.source_of("anthropic", "aliases.claude-sonnet") == "shipped"


def test_shipped_names_resolve_unprefixed_except_deliberate_duplicates() -> None:
    catalog = Catalog.shipped()
    ambiguous = set()
    for _provider, _preset, model in catalog.models():
        try:
            resolved = catalog.resolve(model.name)
        except ModelNotFoundError:
            ambiguous.add(model.name)
            continue
        assert resolved.entry is model
    for provider in catalog.providers:
        for alias, target in provider.aliases.items():
            assert catalog.resolve(alias).name == target
    assert ambiguous == {"openai/gpt-oss-120b"}  # served by both Groq and Together: name one with a prefix


def test_a_scalar_over_a_mapping_hides_what_was_below() -> None:
    catalog = Catalog.from_layers(
        CatalogLayer.from_data({"name": "p", "properties": {"a": {"b": 1}}}, name="user"),
        {"name": "p", "properties": {"a": 0}},
    )
    assert catalog.value_of("p", "properties.a") == 0
    assert catalog.source_of("p", "properties.a") == "code"
    assert catalog.value_of("p", "properties.a.b") is None
    assert catalog.source_of("p", "properties.a.b") is None


def test_a_layer_writes_back_what_it_read_unknown_keys_included() -> None:
    original = CatalogLayer.from_file(DATA / "layered" / "base.llm-provider.yaml")
    text = original.dumps()
    again = CatalogLayer.from_text(text, file="again.yaml")
    assert again.to_data() == original.to_data()
    assert again.to_data()[0]["vendorNote"] == "kept as written"
    assert again.to_data()[0]["models"][0]["customKey"] == {"x": 1}


def test_the_shipped_layer_round_trips_through_yaml() -> None:
    shipped = CatalogLayer.shipped()
    assert CatalogLayer.from_text(shipped.dumps()).to_data() == shipped.to_data()


def test_a_deeply_nested_file_is_a_typed_error_not_a_crash() -> None:
    # the C parser recurses; the guarded loader must refuse this before it gets there
    with pytest.raises(BadDefinitionError, match="nested deeper"):
        CatalogLayer.from_text("name: p\nproperties: {a: " + "[" * 100_000 + "]" * 100_000 + "}\n", file="deep.yaml")
