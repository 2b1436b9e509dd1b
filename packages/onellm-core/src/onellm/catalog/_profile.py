"""`ModelProfile`: the per-model facts a provider needs to speak to one model, read once from a resolved model.

A provider serves many models. What differs between them (the output limit Anthropic requires, the schema form and
thinking style Gemini takes, the prompt-cache options of an OpenAI model, a server's quirks) is read from the catalog
entry the runtime resolved, user layers included, and handed to the provider with each request. No provider looks a
model up in a catalog itself, so a provider and the runtime can never disagree about a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from onellm._public import publish as _publish

if TYPE_CHECKING:
    from onellm.catalog._catalog import ResolvedModel

__all__ = ["SCHEMA_FORMS", "THINKING_STYLES", "ModelProfile"]

SCHEMA_FORMS: Final = ("responseJsonSchema", "responseSchema")
"""How a Gemini model takes a JSON schema: as JSON Schema (`responseJsonSchema`, `parametersJsonSchema`), or converted
to the OpenAPI subset (`responseSchema`, `parameters`)."""

THINKING_STYLES: Final = ("budget", "levels")
"""How a model takes a reasoning setting: a token budget, or a named level. Unknown (`None`): decided per request."""

_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True, eq=True)
class ModelProfile:
    """What a provider needs to know about one model. Every field may be unknown; a provider then uses its own
    default (and says so in a warning where the API needs a value, as Anthropic's `max_tokens`).

    ```python
    from onellm.catalog import Catalog
    from onellm.messages import Message, TextPart
    from onellm.providers import ChatRequest
    from onellm.providers.anthropic import AnthropicProvider

    profile = Catalog.shipped().resolve("claude-sonnet").profile
    messages = [Message(user=[TextPart("Hello")])]
    async with AnthropicProvider() as provider:
        response = await provider.send(ChatRequest("claude-sonnet-5-5", messages, profile=profile))
    ```
    """

    model: str | None = None
    """The model as `provider:model` (or `preset:model`), for messages; the name sent is the request's."""
    provider: str | None = None
    """The catalog provider that serves the model."""
    preset: str | None = None
    """The preset (`ollama`, `openrouter`, ...) when one matched."""
    protocol: str | None = None
    """The wire protocol the catalog names (`anthropic`, `openai`, `openai-compatible`, `gemini`)."""
    base_url: str | None = None
    """Where the provider's API lives (the preset's, else the provider's `baseUrl`)."""
    api_key_env_var: str | None = None
    """The environment variable that holds the key."""
    local: bool = False
    """A server on this machine: needs no key."""
    context_window: int | None = None
    max_output_tokens: int | None = None
    """The catalog's `maxOutputTokens`: what Anthropic is sent as `max_tokens` when the request sets none."""
    schema_form: str | None = None
    """Gemini's schema form (one of `SCHEMA_FORMS`), from the property `schemaForm`."""
    thinking: str | None = None
    """`budget` or `levels` (see `THINKING_STYLES`), from the entry's `thinking` or the property `thinking`."""
    properties: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    """Free-form properties, the model's over the preset's over the provider's (servers' quirks, `promptCacheOptions`)."""

    def __post_init__(self) -> None:
        if self.schema_form is not None and self.schema_form not in SCHEMA_FORMS:
            raise ValueError(f"schema_form must be one of {', '.join(SCHEMA_FORMS)}, not {self.schema_form!r}")
        if self.thinking is not None and self.thinking not in THINKING_STYLES:
            raise ValueError(f"thinking must be one of {', '.join(THINKING_STYLES)}, not {self.thinking!r}")
        if not isinstance(self.properties, MappingProxyType):
            object.__setattr__(self, "properties", MappingProxyType(dict(self.properties)))

    def __hash__(self) -> int:
        return hash((self.model, self.provider, self.preset, self.base_url, self.max_output_tokens))

    @classmethod
    def from_resolved(cls, resolved: ResolvedModel) -> ModelProfile:
        """The profile of a model the catalog resolved (`ResolvedModel.profile` caches it)."""
        entry = resolved.entry
        properties = resolved.properties
        schema_form = properties.get("schemaForm")
        thinking = properties.get("thinking")
        if thinking not in THINKING_STYLES:
            thinking = None
            settings = entry.thinking
            if settings is not None and not isinstance(settings, bool):
                if settings.budget:
                    thinking = "budget"
                elif settings.efforts:
                    thinking = "levels"
        limit = entry.max_output_tokens
        window = entry.context_window
        return cls(
            model=resolved.qualified_name,
            provider=resolved.provider,
            preset=resolved.preset,
            protocol=resolved.provider_entry.protocol,
            base_url=resolved.base_url,
            api_key_env_var=resolved.api_key_env_var,
            local=resolved.local,
            context_window=window if isinstance(window, int) and not isinstance(window, bool) else None,
            max_output_tokens=limit if isinstance(limit, int) and not isinstance(limit, bool) else None,
            schema_form=schema_form if schema_form in SCHEMA_FORMS else None,
            thinking=thinking,
            properties=properties,
        )


_publish("onellm.catalog", ModelProfile)
