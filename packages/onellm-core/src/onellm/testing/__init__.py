"""Test helpers that are part of the public API.

- `onellm.testing.ScriptedProvider`: a provider that answers from queued `ScriptStep`s (text, usage, tool calls,
  failures, pauses) and records the requests it received; register it under a real provider name so catalog prices
  apply.
- `onellm.testing.ScriptedDecisionProvider`: a decisions engine (for deciders on `jev-latest` or `openai-decisions`)
  that answers from a function (placeholders by default) and records the requests it received.
- `onellm.testing.store_conformance`: the behaviour every `InstanceStore` must have, as a pytest base class that a
  store's own test module subclasses (it needs pytest and anyio's pytest plugin, which the tests already use).
- `onellm.testing.disk_fault("full" | "read-only")`: a context in which onellm's own file work (file stores, asset
  stores, the JSON-lines sink) meets a full or read-only disk, for testing what your code does with `StorageError`.
- `onellm.testing.sink_conformance`: the same for record sinks that keep records: the JSON lines they give back and
  the exact costs they sum, so every sink that passes gives the same results for the same records.
"""

from __future__ import annotations

from onellm._public import publish as _publish
from onellm.testing._decisions import OMIT, REFUSE, ScriptedDecisionProvider, placeholder_answer
from onellm.testing._faults import disk_fault
from onellm.testing._scripted import Pause, ScriptedProvider, ScriptedToolCall, ScriptStep

__all__ = [
    "OMIT",
    "REFUSE",
    "Pause",
    "ScriptStep",
    "ScriptedDecisionProvider",
    "ScriptedProvider",
    "ScriptedToolCall",
    "disk_fault",
    "placeholder_answer",
]

_publish("onellm.testing", Pause, ScriptStep, ScriptedDecisionProvider, ScriptedProvider, ScriptedToolCall)
