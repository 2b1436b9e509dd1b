"""Down-converting onellm's schemas for what each provider accepts.

onellm writes one schema (see `_schema`); a provider's strict tool use or structured output accepts only part of
JSON Schema. Each provider's rules live beside its codec (`onellm.providers.anthropic`, `.openai`, `.gemini`), following the "What each provider rejects" table of the tool-schema page; they are gathered here
for tools that prepare schemas themselves. The invoker still checks every removed constraint when the call arrives, so
removing a keyword only changes what the model is told, never what a tool accepts.
"""

from __future__ import annotations

from onellm.providers import SchemaConversion
from onellm.providers.anthropic import for_anthropic
from onellm.providers.gemini import for_gemini
from onellm.providers.openai import for_openai, restore_optional_nulls

__all__ = ["SchemaConversion", "for_anthropic", "for_gemini", "for_openai", "restore_optional_nulls"]
