"""Agent definitions, flows and deciders: the files people write, loaded with positions and saved without loss.

`Definition.load(path)` reads an `agent.yaml` or a `.flow` (with its `flow.yaml` metadata); `Decider.load(path)` reads a
`decider.yaml`. Both have `loads(text)`, `dumps()` and `save(path)`; top-level values are snake_case attributes.
Saving an unchanged object returns the loaded text byte for byte; a changed one is written again with every unknown
key kept. Errors are `onellm.BadDefinitionError` with the file and the 1-based line and column. The format is
`spec/definitions.md`.
"""

from __future__ import annotations

from onellm._public import publish as _publish
from onellm.definitions._agent import (
    HOOK_POINTS,
    ContextStrategy,
    Definition,
    FlowMetadata,
    HookEntry,
    Reference,
    ReferenceCheck,
    Thinking,
)
from onellm.definitions._common import DefinitionWarning
from onellm.definitions._decider import CacheOptions, Decider, LlmOptions, Question, decider_name, read_schema

__all__ = [
    "HOOK_POINTS",
    "CacheOptions",
    "ContextStrategy",
    "Decider",
    "Definition",
    "DefinitionWarning",
    "FlowMetadata",
    "HookEntry",
    "LlmOptions",
    "Question",
    "Reference",
    "ReferenceCheck",
    "Thinking",
    "decider_name",
    "read_schema",
]

_publish("onellm", Decider, Definition)
_publish(
    "onellm.definitions",
    CacheOptions,
    ContextStrategy,
    DefinitionWarning,
    FlowMetadata,
    HookEntry,
    LlmOptions,
    Question,
    Reference,
    Thinking,
)
