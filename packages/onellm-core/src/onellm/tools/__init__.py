"""Tools the model can call: `@tool`, `Tool`, the call's `ToolContext` and its `ToolResult`.

A tool is a plain function (sync or async); its parameters become a closed JSON Schema object by the rules in
`docs/tool-schemas.md`, and `Tool.invoke` turns every failure of the tool into an error result the model reads.
The type-to-schema compiler is `onellm.schema`; its public names (`compile_type`, `json_schema_for`, `ArgumentError`,
...) are also importable from here.
"""

from onellm._public import publish as _publish
from onellm.schema import ArgumentError, JsonType, compile_type, json_schema_for, to_json_value
from onellm.tools._provider_schemas import (
    SchemaConversion,
    for_anthropic,
    for_gemini,
    for_openai,
    restore_optional_nulls,
)
from onellm.tools._references import ResolvedReferences, ToolReferenceResolver, ToolRegistry
from onellm.tools._tool import GRANT_KINDS, Tool, ToolContext, ToolResult, to_parts, tool
from onellm.tools._validate import compile_schema

__all__ = [
    "GRANT_KINDS",
    "ArgumentError",
    "JsonType",
    "ResolvedReferences",
    "SchemaConversion",
    "Tool",
    "ToolContext",
    "ToolReferenceResolver",
    "ToolRegistry",
    "ToolResult",
    "compile_schema",
    "compile_type",
    "for_anthropic",
    "for_gemini",
    "for_openai",
    "json_schema_for",
    "restore_optional_nulls",
    "to_json_value",
    "to_parts",
    "tool",
]

_publish("onellm", Tool, ToolContext, ToolResult)
_publish("onellm.tools", ResolvedReferences, ToolReferenceResolver, ToolRegistry)
