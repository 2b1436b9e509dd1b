"""RequestAdjuster: strip with `parameter_stripped`, clamp with `parameter_clamped`, refuse with
`UnsupportedParameterError`; a field the catalog leaves out never strips or refuses."""

from __future__ import annotations

from typing import Any

import pytest

from onellm.catalog import Catalog, RequestAdjuster, RequestSettings
from onellm.errors import UnsupportedParameterError

CATALOG = Catalog.from_layers(
    [
        {
            "name": "p",
            "capabilities": ["chat", "tools"],
            "models": [
                {
                    "name": "strict",
                    "maxOutputTokens": 4000,
                    "supportsTemperature": False,
                    "supportsTools": False,
                    "supportsStructuredOutput": False,
                    "supportsImages": False,
                    "supportsPdf": False,
                    "supportsAudio": False,
                    "supportsVideo": False,
                    "supportsCaching": False,
                    "thinking": False,
                    "serviceTiers": {"flex": {"pricingMultiplier": 0.5}},
                },
                {
                    "name": "thinker",
                    "maxOutputTokens": 64000,
                    "supportsTemperature": True,
                    "thinking": {"budget": True, "minBudget": 1024, "maxBudget": 32000, "efforts": ["low", "high"]},
                },
                {"name": "effort-only", "thinking": {"budget": False, "efforts": ["low", "medium", "high"]}},
                {"name": "unknown"},
            ],
        },
        {"name": "decider", "capabilities": ["decisions"], "models": [{"name": "judge"}]},
        {
            "name": "compat",
            "presets": {
                "quirky": {"properties": {"supportsStructuredOutput": False, "supportsReasoningEffort": False}}
            },
        },
    ]
)


def adjust(model: str, **settings: Any) -> Any:
    return RequestAdjuster(CATALOG.resolve(model)).adjust(RequestSettings(**settings))


def kinds(result: Any) -> list[tuple[str, str]]:
    return [(w.kind, w.detail["parameter"]) for w in result.warnings]


def test_temperature_and_top_p_stripped() -> None:
    result = adjust("strict", temperature=0.2, top_p=0.9)
    assert result.settings.temperature is None
    assert result.settings.top_p is None
    assert kinds(result) == [("parameter_stripped", "temperature"), ("parameter_stripped", "top_p")]


def test_reasoning_settings_stripped_for_a_model_that_does_not_think() -> None:
    result = adjust("strict", reasoning_effort="high", thinking_budget=2000, reasoning_summary="auto")
    assert (result.settings.reasoning_effort, result.settings.thinking_budget, result.settings.reasoning_summary) == (
        None,
        None,
        None,
    )
    assert [p for _, p in kinds(result)] == ["reasoning_effort", "thinking_budget", "reasoning_summary"]


def test_budget_stripped_when_the_model_takes_none() -> None:
    result = adjust("effort-only", thinking_budget=5000, reasoning_effort="medium")
    assert result.settings.thinking_budget is None
    assert result.settings.reasoning_effort == "medium"
    assert kinds(result) == [("parameter_stripped", "thinking_budget")]


def test_caching_stripped() -> None:
    result = adjust("strict", cache=True)
    assert result.settings.cache is False
    assert kinds(result) == [("parameter_stripped", "cache")]


@pytest.mark.parametrize(("budget", "want"), [(100, 1024), (1024, 1024), (5000, 5000), (32000, 32000), (50000, 32000)])
def test_thinking_budget_clamped(budget: int, want: int) -> None:
    result = adjust("thinker", thinking_budget=budget)
    assert result.settings.thinking_budget == want
    assert kinds(result) == ([] if budget == want else [("parameter_clamped", "thinking_budget")])


def test_max_output_tokens_clamped() -> None:
    result = adjust("strict", max_output_tokens=10000)
    assert result.settings.max_output_tokens == 4000
    assert kinds(result) == [("parameter_clamped", "max_output_tokens")]
    assert result.warnings[0].detail == {"parameter": "max_output_tokens", "value": 10000, "clampedTo": 4000}
    assert adjust("strict", max_output_tokens=4000).warnings == ()


@pytest.mark.parametrize(
    ("settings", "parameter"),
    [
        ({"tools": 1}, "tools"),
        ({"tool_choice_forced": True}, "tools"),
        ({"json_schema": True}, "json_schema"),
        ({"images": 1}, "images"),
        ({"pdfs": 2}, "pdf"),
        ({"audio": 1}, "audio"),
        ({"video": 1}, "video"),
        ({"service_tier": "priority"}, "service_tier"),
    ],
)
def test_refusals(settings: dict[str, Any], parameter: str) -> None:
    with pytest.raises(UnsupportedParameterError) as info:
        adjust("strict", **settings)
    assert info.value.parameter == parameter
    assert info.value.model == "p:strict"


def test_known_and_neutral_service_tiers_pass() -> None:
    assert adjust("strict", service_tier="flex").warnings == ()
    assert adjust("strict", service_tier="auto").warnings == ()


def test_effort_the_model_does_not_list_is_refused() -> None:
    with pytest.raises(UnsupportedParameterError, match="'max'"):
        adjust("thinker", reasoning_effort="max")
    assert adjust("thinker", reasoning_effort="HIGH").warnings == ()


def test_chat_on_a_decisions_only_provider_is_refused() -> None:
    with pytest.raises(UnsupportedParameterError, match="decisions only"):
        adjust("judge")


def test_unknown_fields_never_strip_or_refuse() -> None:
    settings = RequestSettings(
        temperature=0.5,
        top_p=0.5,
        reasoning_effort="extreme",
        thinking_budget=99,
        max_output_tokens=10**9,
        cache=True,
        tools=3,
        tool_choice_forced=True,
        json_schema=True,
        images=1,
        pdfs=1,
        audio=1,
        video=1,
        service_tier="anything",
    )
    result = RequestAdjuster(CATALOG.resolve("unknown")).adjust(settings)
    assert result.settings == settings
    assert result.warnings == ()
    assert not result.changed


def test_preset_quirks_come_from_properties() -> None:
    with pytest.raises(UnsupportedParameterError, match="structured output"):
        adjust("quirky:any-model", json_schema=True)
    with pytest.raises(UnsupportedParameterError, match="reasoning effort"):
        adjust("quirky:any-model", reasoning_effort="low")


def test_shipped_deepseek_refuses_a_json_schema() -> None:
    model = Catalog.shipped().resolve("deepseek:deepseek-chat")
    with pytest.raises(UnsupportedParameterError):
        RequestAdjuster(model).adjust(RequestSettings(json_schema=True))


def test_shipped_sonnet_strips_temperature_and_clamps_output() -> None:
    model = Catalog.shipped().resolve("claude-sonnet")
    result = RequestAdjuster(model).adjust(RequestSettings(temperature=0.7, max_output_tokens=500_000))
    assert result.settings.temperature is None
    assert result.settings.max_output_tokens == 128_000


def test_adjust_request_rewrites_a_chat_request() -> None:
    from onellm.messages import AssetPart, Message, TextPart
    from onellm.providers import ChatRequest
    from onellm.providers._request import CacheOptions, ReasoningOptions

    request = ChatRequest(
        model="p:strict",
        messages=[Message(user=[TextPart(text="hi")])],
        temperature=0.3,
        max_output_tokens=9000,
        reasoning=ReasoningOptions(effort="high"),
        cache=CacheOptions(key="k"),
    )
    adjuster = RequestAdjuster(CATALOG.resolve("p:strict"))
    sent = adjuster.adjust_request(request)
    assert sent is not request
    assert (sent.temperature, sent.max_output_tokens, sent.reasoning, sent.cache) == (None, 4000, None, None)
    assert [w.kind for w in sent.warnings] == [
        "parameter_stripped",
        "parameter_stripped",
        "parameter_stripped",
        "parameter_clamped",
    ]
    assert request.temperature == 0.3  # the caller's request is left alone
    with pytest.raises(UnsupportedParameterError):
        adjuster.adjust_request(
            ChatRequest(model="p:strict", messages=[Message(user=[AssetPart(content_type="image/png", data=b"x")])])
        )
    plain = ChatRequest(model="p:thinker", messages=[], reasoning=ReasoningOptions(effort="low", budget_tokens=10))
    clamped = RequestAdjuster(CATALOG.resolve("p:thinker")).adjust_request(plain)
    assert clamped.reasoning == ReasoningOptions(effort="low", budget_tokens=1024)
    untouched = ChatRequest(model="p:unknown", messages=[], temperature=0.1)
    assert RequestAdjuster(CATALOG.resolve("p:unknown")).adjust_request(untouched) is untouched


def test_shipped_openai_strips_a_thinking_budget() -> None:
    model = Catalog.shipped().resolve("gpt-6-luna")
    result = RequestAdjuster(model).adjust(RequestSettings(thinking_budget=4000, reasoning_effort="low"))
    assert result.settings.thinking_budget is None
    assert result.settings.reasoning_effort == "low"
    with pytest.raises(UnsupportedParameterError):
        RequestAdjuster(model).adjust(RequestSettings(reasoning_effort="minimal"))


def test_a_request_that_passed_once_is_judged_again_when_it_carries_media_or_the_catalog_changes() -> None:
    from onellm.messages import AssetPart, Message, TextPart
    from onellm.providers import ChatRequest

    catalog = Catalog.from_layers([{"name": "p", "models": [{"name": "plain", "supportsAudio": False}]}])
    model = catalog.resolve("p:plain")
    text = ChatRequest(model="plain", messages=[Message(user=[TextPart(text="hi")])], temperature=0.5)
    assert RequestAdjuster(model).adjust_request(text) is text
    assert RequestAdjuster(model).adjust_request(text) is text  # the second time from what the model kept
    # The same options with an audio file in the history: refused, not passed for having passed before.
    heard = ChatRequest(
        model="plain",
        messages=[Message(user=[TextPart(text="hi")]), Message(user=[AssetPart(content_type="audio/wav", data=b"x")])],
        temperature=0.5,
    )
    with pytest.raises(UnsupportedParameterError, match="audio"):
        RequestAdjuster(model).adjust_request(heard)
    # A catalog that now says the model takes no temperature resolves a new model, which strips it.
    stricter = Catalog.from_layers(
        [{"name": "p", "models": [{"name": "plain", "supportsAudio": False, "supportsTemperature": False}]}]
    )
    sent = RequestAdjuster(stricter.resolve("p:plain")).adjust_request(text)
    assert sent is not text
    assert sent.temperature is None
    assert [w.kind for w in sent.warnings] == ["parameter_stripped"]


def test_media_anywhere_in_the_history_is_counted_and_refused() -> None:
    from onellm.catalog.adjust import settings_of
    from onellm.messages import AssetPart, Message, ReasoningPart, TextPart, ToolCall
    from onellm.providers import ChatRequest

    image = AssetPart(content_type="image/png", data=b"x")
    pdf = AssetPart(content_type="application/pdf", data=b"%PDF")
    history = [
        Message(user=[TextPart(text="look")], assistant=[ReasoningPart("thinking"), TextPart(text="ok")]),
        Message(assistant=[image], tool_calls=[ToolCall(id="c1", tool="t", inputs={}, result=[TextPart("r"), pdf])]),
        Message(user=[image]),
    ]
    request = ChatRequest(model="plain", messages=history)
    settings = settings_of(request)
    assert (settings.images, settings.pdfs, settings.audio, settings.video) == (2, 1, 0, 0)
    plain = ChatRequest(model="plain", messages=history[:1])
    assert (settings_of(plain).images, settings_of(plain).pdfs) == (0, 0)
    catalog = Catalog.from_layers([{"name": "p", "models": [{"name": "blind", "supportsPdf": False}]}])
    model = catalog.resolve("p:blind")
    assert RequestAdjuster(model).adjust_request(plain) is plain
    with pytest.raises(UnsupportedParameterError, match="PDF"):
        RequestAdjuster(model).adjust_request(request)  # the PDF is in a tool call's result


def test_adjust_request_for_a_model_misses_what_it_kept_when_any_setting_changes() -> None:
    """`adjust_request(model, request)` returns a request whose settings passed before as it is; a request that differs
    in any setting, or a model from a reloaded catalog, is judged again."""
    from dataclasses import replace

    from onellm.catalog.adjust import adjust_request
    from onellm.messages import AssetPart, Message, TextPart
    from onellm.providers import ChatRequest, ToolDefinition
    from onellm.providers._request import CacheOptions, ReasoningOptions, ResponseFormat, ToolChoice

    layers = [
        {
            "name": "p",
            "models": [
                {
                    "name": "m",
                    "maxOutputTokens": 4000,
                    "supportsTools": False,
                    "supportsStructuredOutput": False,
                    "supportsCaching": False,
                    "supportsAudio": False,
                    "thinking": {"budget": True, "minBudget": 1024, "efforts": ["low"]},
                    "serviceTiers": {"flex": {"pricingMultiplier": 0.5}},
                }
            ],
        }
    ]
    model = Catalog.from_layers(layers).resolve("p:m")
    base = ChatRequest(model="m", messages=[Message(user=[TextPart("hi")])], max_output_tokens=100)
    assert adjust_request(model, base) is base
    assert adjust_request(model, base) is base  # kept: the same settings pass again
    clamped = adjust_request(model, replace(base, max_output_tokens=9000))
    assert clamped.max_output_tokens == 4000
    assert [w.kind for w in clamped.warnings] == ["parameter_clamped"]
    budget = adjust_request(model, replace(base, reasoning=ReasoningOptions(effort="low", budget_tokens=10)))
    assert budget.reasoning == ReasoningOptions(effort="low", budget_tokens=1024)
    assert adjust_request(model, replace(base, cache=CacheOptions())).cache is None
    for refused in (
        replace(base, tools=[ToolDefinition("t")]),
        replace(base, tool_choice=ToolChoice("required")),
        replace(base, response_format=ResponseFormat.json_schema({"type": "object"})),
        replace(base, reasoning=ReasoningOptions(effort="high")),
        replace(base, service_tier="priority"),
        replace(base, messages=[*base.messages, Message(user=[AssetPart(content_type="audio/wav", data=b"x")])]),
    ):
        with pytest.raises(UnsupportedParameterError):
            adjust_request(model, refused)
    assert adjust_request(model, base) is base
    # A reloaded catalog that takes no temperature: its model keeps nothing of the old one's.
    warm = replace(base, temperature=0.5)
    assert adjust_request(model, warm) is warm
    layers[0]["models"][0]["supportsTemperature"] = False  # type: ignore[index]
    stripped = adjust_request(Catalog.from_layers(layers).resolve("p:m"), warm)
    assert stripped.temperature is None
