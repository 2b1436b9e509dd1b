"""The OpenAI wire protocols: Chat Completions (any compatible server) and, for OpenAI itself, Responses."""

from onellm.providers.openai._chat import ChatFlavor
from onellm.providers.openai._provider import OpenAICompatibleProvider, OpenAIProvider, collect

__all__ = ["ChatFlavor", "OpenAICompatibleProvider", "OpenAIProvider", "collect"]
