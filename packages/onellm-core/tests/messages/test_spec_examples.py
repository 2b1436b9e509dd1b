"""The examples in `spec/messages.md` are real: each YAML block loads and writes back unchanged."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from onellm.messages import (
    Done,
    Message,
    MessageAccumulator,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from onellm.yamlio import safe_load

SPEC = Path(__file__).resolve().parents[4] / "spec" / "messages.md"
BLOCKS = re.findall(r"```yaml\n(.*?)```", SPEC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_spec_has_examples() -> None:
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_spec_example_round_trips(block: str) -> None:
    data: Any = safe_load(block, file="spec/messages.md")
    messages = data if isinstance(data, list) else [data]
    for item in messages:
        msg = Message.from_data(item)
        assert msg.to_data() == item
        assert list(msg.to_data()) == list(item)


def test_spec_stream_example_builds_the_spec_message() -> None:
    acc = MessageAccumulator()
    for event in [
        TextDelta(0, "Let me "),
        ReasoningDelta(2, "Then…"),
        TextDelta(0, "check."),
        ToolCallStart(1, "call_1", "get_forecast"),
        ToolCallArgumentsDelta(1, '{"city": "Os'),
        ToolCallArgumentsDelta(1, 'lo"}'),
        ToolCallEnd(1),
        Done("tool_calls"),
    ]:
        acc.add(event)
    assert acc.message().to_data() == safe_load(BLOCKS[-1], file="spec/messages.md")
