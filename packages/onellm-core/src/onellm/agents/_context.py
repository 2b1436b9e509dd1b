"""Context strategies (`contextStrategy`): what keeps a long run inside its model's window.

At a turn boundary, when the previous model call's context (input plus output tokens) reached the trigger
(`triggerTokens`, or `triggerPercent` of the window, default 70), the strategy runs once for that call:

- `clearToolResults`: the results of all but the latest `keepLast` (default 3) tool-calling turns become the note
  `[tool result cleared to save context]`. Every call keeps a result slot; messages before the first change are the same
  objects, so a provider's cached prefix holds up to there; a second run changes nothing.
- `compact`: the messages before a user message at least `keepLast` (default 6) from the end are summarized by
  the compact agent (`Runtime.compact_flow`, else the shipped one), run as a child instance so its cost is in the
  subtree, and replaced by one user message starting `[Summary of the earlier conversation]`. A failing summary leaves
  the conversation as it was, with an error record.
- `providerNative`: the provider compacts, when it can (`compacts_context` and `compact_context`: OpenAI over the
  Responses API), all but a user message the next turn answers; the call is priced from the catalog. A provider that
  cannot is skipped with a warning; a failing call leaves the conversation as it was, with an error record.

Each run is recorded in `compactions`; a `beforeCompaction` hook can veto it. The instance is saved in one write after
the change, so a crash during a compaction leaves the file as it was before.
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from onellm.messages import Message, TextPart

if TYPE_CHECKING:
    from onellm.definitions import ContextStrategy

__all__ = [
    "CLEARED_NOTE",
    "COMPACT_DEFINITION",
    "SUMMARY_PREFIX",
    "clear_tool_results",
    "compact_cut",
    "strategy_threshold",
    "transcript",
]

CLEARED_NOTE = "[tool result cleared to save context]"
SUMMARY_PREFIX = "[Summary of the earlier conversation]"
_ZERO = Decimal(0)

COMPACT_DEFINITION = """\
name: compact
description: Summarizes the earlier part of an agent's conversation so the agent can go on in a smaller context.
model: claude-sonnet
maxIterations: 1
systemPrompt: |
  You write the summary an agent will work from after its earlier conversation is removed. Keep every fact it still
  needs: the task and its constraints, decisions taken and why, files and names touched, results of tools that still
  matter, open questions and what was about to happen next. Leave out chatter. Write plain text, no preamble.
initialPrompts:
  - user:
      - text: |
          The earlier conversation:

          {{ .inputs.conversation }}
"""
"""The shipped summarizer, an agent definition run once without tools (`Runtime.compact_flow` replaces it)."""


def strategy_threshold(strategy: ContextStrategy, window: int | None) -> int | None:
    """The context, in tokens, at which `strategy` runs (None when the window is unknown and no token count is set)."""
    if strategy.trigger_tokens is not None:
        return strategy.trigger_tokens
    percent = strategy.trigger_percent if strategy.trigger_percent is not None else 70
    if not window:
        return None
    return int(window * Decimal(str(percent)) / 100)


def clear_tool_results(messages: Sequence[Message], keep_last: int) -> tuple[list[Message], list[str]]:
    """(the messages with old results replaced by the note, the ids of the messages that changed). Untouched messages
    are the same objects."""
    turns = [i for i, m in enumerate(messages) if m.tool_calls]
    old = turns[: max(0, len(turns) - keep_last)]
    out = list(messages)
    changed: list[str] = []
    for i in old:
        message = messages[i]
        if all(_cleared(c.result) for c in message.tool_calls if c.result is not None):
            continue
        calls = []
        for call in message.tool_calls:
            if call.result is None or _cleared(call.result):
                calls.append(call)
                continue
            copy = _copy.copy(call)
            copy.result = [TextPart(CLEARED_NOTE)]
            calls.append(copy)
        new = _copy.copy(message)
        new.tool_calls = calls
        out[i] = new
        changed.append(message.id or "")
    return out, changed


def _cleared(result: Any) -> bool:
    return (
        isinstance(result, list)
        and len(result) == 1
        and isinstance(result[0], TextPart)
        and result[0].text == CLEARED_NOTE
    )


def compact_cut(messages: Sequence[Message], keep_last: int) -> int:
    """The index of the user message the kept part starts at (at least `keep_last` from the end), or 0 when there is
    nothing to summarize."""
    for i in range(len(messages) - keep_last, 0, -1):
        if messages[i].user:
            return i
    return 0


def transcript(messages: Sequence[Message]) -> str:
    """The messages as text for the summarizer."""
    lines: list[str] = []
    for message in messages:
        if message.user_text:
            kind = message.source.kind if message.source is not None and message.source.kind else "user"
            lines.append(f"[{kind}] {message.user_text}")
        if message.text:
            lines.append(f"[assistant] {message.text}")
        for call in message.tool_calls:
            lines.append(f"[tool call {call.tool}] {call.inputs}")
            if call.result:
                text = "".join(p.text for p in call.result if isinstance(p, TextPart))
                lines.append(f"[tool result] {text[:4000]}")
    return "\n".join(lines)


def removed_cost(messages: Sequence[Message]) -> Decimal:
    """What the removed messages and their tool calls cost (kept as `replacedCost`)."""
    total = _ZERO
    for message in messages:
        usage = message.usage
        if usage is not None:
            if usage.cost is not None:
                total += usage.cost
            elif usage.cost_lines:
                total += sum((line.amount for line in usage.cost_lines), _ZERO)
        for call in message.tool_calls:
            if call.cost is not None:
                total += call.cost
    return total
