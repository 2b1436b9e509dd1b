"""The Anthropic Messages protocol: `AnthropicProvider` for Anthropic's own deployment."""

from onellm.providers.anthropic._provider import AnthropicProvider, collect

__all__ = ["AnthropicProvider", "collect"]
