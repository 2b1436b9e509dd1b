"""Reconciling a chat request with the model's catalog entry before it is sent.

`RequestAdjuster` strips what is harmless to drop, clamps what is out of range (each with a warning of kind
`parameter_stripped` or `parameter_clamped`), and refuses with `UnsupportedParameterError` what would change the
request's meaning. A field the catalog leaves out means "not known" and never strips or refuses.

Providers describe their request with `RequestSettings` (the parts of a request the catalog has an opinion on), run
the adjuster once per request, and apply the adjusted settings to their wire request.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from onellm._public import publish as _publish
from onellm.catalog.entries import ThinkingSettings
from onellm.errors import UnsupportedParameterError
from onellm.messages import TextPart

if TYPE_CHECKING:
    from onellm.catalog._catalog import ResolvedModel
    from onellm.messages import CallWarning

__all__ = ["Adjustment", "RequestAdjuster", "RequestSettings", "adjust_request", "settings_of"]

_NEUTRAL_TIERS = frozenset({"standard", "default", "auto"})
_PASSING_LIMIT = 256
"""How many distinct settings one model remembers as passing unchanged."""


@dataclass(frozen=True, slots=True)
class RequestSettings:
    """The parts of a chat request the catalog can judge. Counts are how many of each input the request carries."""

    temperature: float | None = None
    top_p: float | None = None
    reasoning_effort: str | None = None
    thinking_budget: int | None = None
    reasoning_summary: str | None = None
    max_output_tokens: int | None = None
    cache: bool = False
    tools: int = 0
    tool_choice_forced: bool = False
    json_schema: bool = False
    images: int = 0
    pdfs: int = 0
    audio: int = 0
    video: int = 0
    service_tier: str | None = None


@dataclass(frozen=True, slots=True)
class Adjustment:
    """The adjusted settings and one warning per change."""

    settings: RequestSettings
    warnings: tuple[CallWarning, ...]

    @property
    def changed(self) -> bool:
        return bool(self.warnings)


def settings_of(request: Any) -> RequestSettings:
    """The `RequestSettings` of a provider `ChatRequest`: its options, and how many images, PDFs, audio and video
    files its messages carry."""
    return _settings_of(request, count_media=True)


_MEDIA_KINDS = frozenset({"asset", "fileRef"})


def _media_counts(request: Any) -> tuple[int, int, int, int]:
    """How many images, PDFs, audio and video files (asset and file reference parts) the request's messages carry."""
    text = TextPart
    kinds = _MEDIA_KINDS
    try:
        # Messages as the runtime builds them, read without defaults; text parts are passed over at a glance. The
        # first medium found has them all counted below.
        # Messages with neither a user nor an assistant side (an agent's tool turns: most of its history) are passed
        # over with one test.
        for message in request.messages or ():
            if message.user or message.assistant:
                for part in message.user:
                    if type(part) is not text and getattr(part, "kind", None) in kinds:
                        return _media_counts_of(request)
                for part in message.assistant:
                    if type(part) is not text and getattr(part, "kind", None) in kinds:
                        return _media_counts_of(request)
            for call in message.tool_calls:
                for part in call.result or ():
                    if type(part) is not text and getattr(part, "kind", None) in kinds:
                        return _media_counts_of(request)
    except (AttributeError, TypeError):  # something else shaped like a request
        return _media_counts_of(request)
    return _NO_MEDIA


_NO_MEDIA = (0, 0, 0, 0)


def _media_counts_of(request: Any) -> tuple[int, int, int, int]:
    """`_media_counts` of any object with messages, read with defaults for what it lacks."""
    counts = [0, 0, 0, 0]
    kinds = _MEDIA_KINDS
    for message in getattr(request, "messages", None) or ():
        for part in getattr(message, "user", None) or ():
            if type(part) is not TextPart and getattr(part, "kind", None) in kinds:
                _count_medium(part, counts)
        for part in getattr(message, "assistant", None) or ():
            if type(part) is not TextPart and getattr(part, "kind", None) in kinds:
                _count_medium(part, counts)
        calls = getattr(message, "tool_calls", None)
        if calls:
            for call in calls:
                for part in getattr(call, "result", None) or ():
                    if type(part) is not TextPart and getattr(part, "kind", None) in kinds:
                        _count_medium(part, counts)
    return counts[0], counts[1], counts[2], counts[3]


def _count_medium(part: Any, counts: list[int]) -> None:
    """Count an asset or file reference part as an image, a PDF, audio or video by its content type."""
    content_type = (getattr(part, "content_type", None) or "").lower()
    if content_type.startswith("image/"):
        counts[0] += 1
    elif content_type == "application/pdf":
        counts[1] += 1
    elif content_type.startswith("audio/"):
        counts[2] += 1
    elif content_type.startswith("video/"):
        counts[3] += 1


def _settings_of(request: Any, *, count_media: bool) -> RequestSettings:
    """`settings_of`, leaving the media counts at 0 unless `count_media`."""
    return RequestSettings(*_settings_values(request, count_media=count_media))


def _settings_values(request: Any, *, count_media: bool) -> tuple[Any, ...]:
    """The fields of the request's `RequestSettings`, in their order; the media counts 0 unless `count_media` (walking
    the messages is the costly part, and only a model that cannot read some medium needs the counts)."""
    try:  # a `ChatRequest` (or anything with its fields): read without defaults
        reasoning = request.reasoning
        cache = request.cache
        tool_choice = request.tool_choice
        response_format = request.response_format
        tools = request.tools
        hosted = request.hosted_tools
        temperature = request.temperature
        top_p = request.top_p
        max_output_tokens = request.max_output_tokens
        service_tier = request.service_tier
    except AttributeError:
        return _values_with_defaults(request, count_media=count_media)
    images, pdfs, audio, video = _media_counts(request) if count_media else _NO_MEDIA
    if reasoning is None:
        effort = budget = summary = None
    else:
        effort = getattr(reasoning, "effort", None)
        budget = getattr(reasoning, "budget_tokens", None)
        summary = getattr(reasoning, "summary", None)
    return (
        temperature,
        top_p,
        effort,
        budget,
        summary,
        max_output_tokens,
        cache is not None and getattr(cache, "enabled", True) is not False,
        len(tools or ()) + len(hosted or ()),
        tool_choice is not None and getattr(tool_choice, "mode", "auto") in ("required", "tool"),
        response_format is not None and getattr(response_format, "type", None) == "json_schema",
        images,
        pdfs,
        audio,
        video,
        service_tier,
    )


def _values_with_defaults(request: Any, *, count_media: bool) -> tuple[Any, ...]:
    """`_settings_values` of an object that lacks some of a request's fields."""
    reasoning = getattr(request, "reasoning", None)
    cache = getattr(request, "cache", None)
    images, pdfs, audio, video = _media_counts(request) if count_media else (0, 0, 0, 0)
    return (
        getattr(request, "temperature", None),
        getattr(request, "top_p", None),
        getattr(reasoning, "effort", None),
        getattr(reasoning, "budget_tokens", None),
        getattr(reasoning, "summary", None),
        getattr(request, "max_output_tokens", None),
        cache is not None and getattr(cache, "enabled", True) is not False,
        len(getattr(request, "tools", None) or ()) + len(getattr(request, "hosted_tools", None) or ()),
        getattr(getattr(request, "tool_choice", None), "mode", "auto") in ("required", "tool"),
        getattr(getattr(request, "response_format", None), "type", None) == "json_schema",
        images,
        pdfs,
        audio,
        video,
        getattr(request, "service_tier", None),
    )


def adjust_request(model: ResolvedModel, request: Any) -> Any:
    """`RequestAdjuster(model).adjust_request(request)`; settings the model was seen to pass unchanged (what the
    adjuster keeps on the resolved model) return the request without making an adjuster."""
    memo = getattr(model, "_derived", None)
    if type(memo) is dict:
        passing = memo.get("adjust.passing")
        if passing and _settings_values(request, count_media=memo["adjust.refuses_media"]) in passing:
            return request
    return RequestAdjuster(model).adjust_request(request)


def _warning(kind: str, message: str, **detail: Any) -> CallWarning:
    from onellm.messages import CallWarning

    return CallWarning(kind=kind, message=message, detail=detail)


class RequestAdjuster:
    """Adjusts requests for one resolved model."""

    def __init__(self, model: ResolvedModel) -> None:
        self.model = model

    def _refuse(self, parameter: str, message: str) -> UnsupportedParameterError:
        name = self.model.qualified_name
        return UnsupportedParameterError(f"{name}: {message}", parameter=parameter, model=name)

    def adjust_request(self, request: Any) -> Any:
        """Adjust a provider `ChatRequest` in one step: read its settings, adjust them, and return the request to
        send (a copy when anything changed) with the warnings added to its `warnings`. Raises
        `UnsupportedParameterError` like `adjust`."""
        _dc = dataclasses
        cls = type(self)
        memo = getattr(self.model, "_derived", None)
        if (
            type(memo) is not dict  # not a catalog's resolved model (a stand-in in a test): nothing is kept
            or cls.adjust is not RequestAdjuster.adjust
            or cls.supports is not RequestAdjuster.supports
        ):
            result = self.adjust(settings_of(request))
        else:
            # The decision depends on the model and the settings alone: settings seen to pass unchanged are kept on
            # the resolved model (a new catalog resolves new models). The messages are walked for media only when
            # the model cannot read one of them (only a refusal reads the counts).
            refuses_media = memo.get("adjust.refuses_media")
            if refuses_media is None:
                refuses_media = memo["adjust.refuses_media"] = any(
                    self.supports(flag) is False for flag in ("images", "pdf", "audio", "video")
                )
            values = _settings_values(request, count_media=refuses_media)
            passing: set[tuple[Any, ...]] | None = memo.get("adjust.passing")
            if passing is None:
                passing = memo["adjust.passing"] = set()
            if values in passing:
                return request
            result = self.adjust(RequestSettings(*values))
            if not result.changed:
                if len(passing) >= _PASSING_LIMIT:
                    passing.clear()
                passing.add(values)
        if not result.changed:
            return request
        new = result.settings
        reasoning = getattr(request, "reasoning", None)
        if reasoning is not None:
            if new.reasoning_effort is None and new.thinking_budget is None and new.reasoning_summary is None:
                reasoning = None
            else:
                reasoning = _dc.replace(
                    reasoning,
                    effort=new.reasoning_effort,
                    budget_tokens=new.thinking_budget,
                    summary=new.reasoning_summary,
                )
        return _dc.replace(
            request,
            temperature=new.temperature,
            top_p=new.top_p,
            max_output_tokens=new.max_output_tokens,
            reasoning=reasoning,
            cache=request.cache if new.cache else None,
            warnings=[*request.warnings, *result.warnings],
        )

    def supports(self, feature: str) -> bool | None:
        """The model's `supports<Feature>` flag, else the same key in the merged properties (where presets record
        their servers' quirks), else None: not known."""
        flag = self.model.entry.supports(feature)
        if flag is not None:
            return flag
        value = self.model.properties.get("supports" + feature[:1].upper() + feature[1:])
        return value if isinstance(value, bool) else None

    def adjust(self, settings: RequestSettings) -> Adjustment:
        """Return the settings to send and the warnings; raise `UnsupportedParameterError` for what cannot be sent."""
        entry = self.model.entry
        supports = self.supports
        name = self.model.qualified_name
        warnings: list[CallWarning] = []
        changes: dict[str, Any] = {}

        # Refusals first: nothing is adjusted for a request that cannot be sent.
        capabilities = self.model.capabilities
        if capabilities is not None and "chat" not in capabilities and "decisions" in capabilities:
            raise self._refuse("chat", "the provider answers decisions only, not chat")
        if (settings.tools or settings.tool_choice_forced) and supports("tools") is False:
            raise self._refuse("tools", "the model does not take tools")
        if settings.json_schema and supports("structuredOutput") is False:
            raise self._refuse("json_schema", "the model has no structured output")
        for count, flag, what in (
            (settings.images, "images", "an image"),
            (settings.pdfs, "pdf", "a PDF"),
            (settings.audio, "audio", "audio"),
            (settings.video, "video", "video"),
        ):
            if count and supports(flag) is False:
                raise self._refuse(flag, f"the model cannot read {what}")
        thinking = entry.thinking
        if settings.reasoning_effort is not None and thinking is not False and supports("reasoningEffort") is False:
            raise self._refuse("reasoning_effort", "the model takes no reasoning effort")
        if (
            settings.reasoning_effort is not None
            and isinstance(thinking, ThinkingSettings)
            and thinking.efforts is not None
            and settings.reasoning_effort.lower() not in {e.lower() for e in thinking.efforts}
        ):
            raise self._refuse(
                "reasoning_effort",
                f"reasoning effort {settings.reasoning_effort!r} is not one the model lists ({', '.join(thinking.efforts)})",
            )
        tier = settings.service_tier
        tiers = entry.service_tiers
        if (
            tier is not None
            and tiers is not None
            and tier.lower() not in _NEUTRAL_TIERS
            and tier.lower() not in {t.lower() for t in tiers}
        ):
            raise self._refuse("service_tier", f"the model has no service tier {tier!r}")

        # Strips.
        def strip(field: str, value: Any, reason: str) -> None:
            changes[field] = None
            warnings.append(
                _warning(
                    "parameter_stripped", f"{field} was not sent to {name}: {reason}", parameter=field, value=value
                )
            )

        if supports("temperature") is False:
            if settings.temperature is not None:
                strip("temperature", settings.temperature, "the model takes no temperature")
            if settings.top_p is not None:
                strip("top_p", settings.top_p, "the model takes no top_p")
        if thinking is False:
            if settings.reasoning_effort is not None:
                strip("reasoning_effort", settings.reasoning_effort, "the model does not reason")
            if settings.thinking_budget is not None:
                strip("thinking_budget", settings.thinking_budget, "the model does not reason")
            if settings.reasoning_summary is not None:
                strip("reasoning_summary", settings.reasoning_summary, "the model does not reason")
        elif isinstance(thinking, ThinkingSettings) and settings.thinking_budget is not None:
            if thinking.budget is False:
                strip("thinking_budget", settings.thinking_budget, "the model takes no thinking budget")
            else:
                budget = settings.thinking_budget
                low, high = thinking.min_budget, thinking.max_budget
                clamped = budget
                if low is not None and clamped < low:
                    clamped = low
                if high is not None and clamped > high:
                    clamped = high
                if clamped != budget:
                    changes["thinking_budget"] = clamped
                    warnings.append(
                        _warning(
                            "parameter_clamped",
                            f"thinking_budget {budget} was clamped to {clamped} for {name}",
                            parameter="thinking_budget",
                            value=budget,
                            clampedTo=clamped,
                        )
                    )
        if settings.cache and supports("caching") is False:
            changes["cache"] = False
            warnings.append(
                _warning(
                    "parameter_stripped",
                    f"caching was not asked of {name}: the model has no prompt caching",
                    parameter="cache",
                    value=True,
                )
            )

        # Clamps.
        limit = entry.max_output_tokens
        if settings.max_output_tokens is not None and limit is not None and settings.max_output_tokens > limit:
            changes["max_output_tokens"] = limit
            warnings.append(
                _warning(
                    "parameter_clamped",
                    f"max_output_tokens {settings.max_output_tokens} was clamped to {limit}, the most {name} writes",
                    parameter="max_output_tokens",
                    value=settings.max_output_tokens,
                    clampedTo=limit,
                )
            )
        adjusted = dataclasses.replace(settings, **changes) if changes else settings
        return Adjustment(adjusted, tuple(warnings))


_publish("onellm", RequestSettings)
_publish("onellm.catalog", Adjustment, RequestAdjuster)
