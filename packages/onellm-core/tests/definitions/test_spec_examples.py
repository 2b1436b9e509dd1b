"""Every YAML example in spec/definitions.md loads, and saves back unchanged."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onellm.definitions import Decider, Definition, FlowMetadata

SPEC = Path(__file__).resolve().parents[4] / "spec" / "definitions.md"
BLOCKS = re.findall(r"```yaml\n(.*?)```", SPEC.read_text(encoding="utf-8"), re.S)


def test_the_spec_has_examples() -> None:
    assert len(BLOCKS) >= 7


@pytest.mark.parametrize("text", BLOCKS, ids=[f"example-{i}" for i in range(len(BLOCKS))])
def test_spec_example_loads_and_saves_unchanged(text: str) -> None:
    if "questions:" in text:
        obj: Decider | Definition | FlowMetadata = Decider.loads(text, file="decider.yaml")
    elif "flow.yaml" in text.splitlines()[0]:
        obj = FlowMetadata.loads(text)
    else:
        obj = Definition.loads(text)
    assert obj.dumps() == text
