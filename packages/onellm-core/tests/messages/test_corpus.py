"""The message corpus in `testdata/formats/messages/`: valid files write back unchanged, bad ones name the path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onellm import BadDefinitionError
from onellm.messages import Message
from onellm.yamlio import safe_load

CORPUS = Path(__file__).resolve().parents[4] / "testdata" / "formats" / "messages"
VALID = sorted((CORPUS / "valid").glob("*.yaml"))
INVALID = sorted((CORPUS / "invalid").glob("*.yaml"))


def shape(value: Any) -> Any:
    """The key order at every level (values compared separately: an integer price reads back as an equal Decimal)."""
    if isinstance(value, dict):
        return [(k, shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [shape(v) for v in value]
    return None


def _messages(path: Path) -> list[Any]:
    data = safe_load(path.read_text(encoding="utf-8"), file=path.name)
    return data if isinstance(data, list) else [data]


def test_corpus_is_there() -> None:
    assert len(VALID) >= 20
    assert len(INVALID) >= 20


@pytest.mark.parametrize("path", VALID, ids=[p.name for p in VALID])
def test_valid_file_writes_back_unchanged(path: Path) -> None:
    for item in _messages(path):
        msg = Message.from_data(item)
        out = msg.to_data()
        assert out == item
        assert shape(out) == shape(item)
        assert Message.from_data(out) == msg


@pytest.mark.parametrize("path", VALID, ids=[p.name for p in VALID])
def test_changing_one_value_keeps_everything_else(path: Path) -> None:
    for item in _messages(path):
        msg = Message.from_data(item)
        msg.id = "changed"
        out = msg.to_data()
        expected = dict(item)
        if "id" in expected:
            expected["id"] = "changed"
        else:
            # A key set after reading takes its place in the spec's order among the keys that were read.
            expected = {"id": "changed", **expected}
        assert out == expected
        assert shape(out) == shape(expected)


@pytest.mark.parametrize("path", INVALID, ids=[p.name for p in INVALID])
def test_invalid_file_names_the_path(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    first = text.splitlines()[0]
    assert first.startswith("# error: ")
    expected = first.removeprefix("# error: ")
    data = safe_load(text, file=path.name)
    with pytest.raises(BadDefinitionError) as info:
        Message.from_data(data)
    assert info.value.path == expected
