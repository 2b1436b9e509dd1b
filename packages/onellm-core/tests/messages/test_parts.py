"""Parts: every kind reads and writes back unchanged, unknown keys at every level, legacy inline media, bad input."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from onellm import BadDefinitionError
from onellm.messages import (
    PART_KINDS,
    Annotation,
    AssetPart,
    FileRefPart,
    FromPart,
    HostedToolCallPart,
    JsonPart,
    ProviderPart,
    ReasoningPart,
    RefusalPart,
    TextPart,
    part_from_data,
)

EVERY_KIND: list[tuple[dict[str, Any], Any]] = [
    ({"text": "hello"}, TextPart("hello")),
    (
        {
            "text": "see the page",
            "annotations": [
                {
                    "type": "url_citation",
                    "url": "https://example.com",
                    "title": "Example",
                    "startIndex": 4,
                    "endIndex": 12,
                    "citedText": "the page",
                }
            ],
            "lang": "en",
        },
        TextPart(
            "see the page",
            [
                Annotation(
                    type="url_citation",
                    url="https://example.com",
                    title="Example",
                    start_index=4,
                    end_index=12,
                    extra={"citedText": "the page"},
                )
            ],
            {"lang": "en"},
        ),
    ),
    (
        {
            "asset": {
                "storage": "file",
                "key": "ab/cd.png",
                "hash": "sha256:00ff",
                "contentType": "image/png",
                "size": 1024,
                "name": "chart.png",
                "width": 640,
            },
            "detail": "high",
        },
        AssetPart(
            storage="file",
            key="ab/cd.png",
            hash="sha256:00ff",
            content_type="image/png",
            size=1024,
            name="chart.png",
            asset_extra={"width": 640},
            extra={"detail": "high"},
        ),
    ),
    (
        {"reasoning": "step one", "provider": "anthropic", "display": "Thinking", "data": {"signature": "c2ln"}},
        ReasoningPart("step one", "anthropic", "Thinking", {"signature": "c2ln"}),
    ),
    (
        {
            "hostedToolCall": "web_search",
            "provider": "openai",
            "id": "ws_1",
            "status": "completed",
            "inputs": {"query": "weather"},
            "result": [{"url": "https://example.com"}],
            "cost": Decimal("0.01"),
            "data": {"action": "search"},
            "future": [1, 2],
        },
        HostedToolCallPart(
            "web_search",
            "openai",
            "ws_1",
            "completed",
            {"query": "weather"},
            [{"url": "https://example.com"}],
            Decimal("0.01"),
            {"action": "search"},
            {"future": [1, 2]},
        ),
    ),
    ({"refusal": "I can't help with that."}, RefusalPart("I can't help with that.")),
    ({"json": {"b": 1, "a": [True, None]}}, JsonPart({"b": 1, "a": [True, None]})),
    ({"json": None}, JsonPart(None)),
    (
        {"fileRef": "file-123", "provider": "openai", "contentType": "application/pdf", "name": "a.pdf", "uri": "u"},
        FileRefPart("file-123", "openai", "application/pdf", "a.pdf", "u"),
    ),
    (
        {"providerPart": "image_generation_call", "raw": {"id": "ig_1"}},
        ProviderPart("image_generation_call", {"id": "ig_1"}),
    ),
    ({"from": "inputs.images"}, FromPart("inputs.images")),
]


@pytest.mark.parametrize(("data", "part"), EVERY_KIND)
def test_every_part_kind_round_trips(data: dict[str, Any], part: Any) -> None:
    read = part_from_data(data)
    assert read == part
    assert read.to_data() == data
    assert list(read.to_data()) == list(data)
    assert part.to_data() == data  # built in code: the canonical shape is the same
    assert part_from_data(part.to_data()) == part


def test_kinds_listed_in_spec_order() -> None:
    assert PART_KINDS == (
        "text",
        "asset",
        "reasoning",
        "hostedToolCall",
        "refusal",
        "json",
        "fileRef",
        "providerPart",
        "from",
    )


@pytest.mark.parametrize("key", ["image", "audio", "video", "pdf"])
def test_legacy_inline_media_reads_as_asset_and_writes_back_unchanged(key: str) -> None:
    data = {key: {"data": "aGVsbG8=", "mediaType": "x/y"}, "caption": "a picture"}
    part = part_from_data(data)
    assert isinstance(part, AssetPart)
    assert part.legacy == key
    assert part.storage is None
    assert part.key is None
    assert part.legacy_media == {"data": "aGVsbG8=", "mediaType": "x/y"}
    assert part.to_data() == data
    assert list(part.to_data()) == list(data)
    assert part_from_data(part.to_data()) == part


def test_legacy_media_with_plain_string_value() -> None:
    part = part_from_data({"image": "https://example.com/cat.png"})
    assert isinstance(part, AssetPart)
    assert part.to_data() == {"image": "https://example.com/cat.png"}


def test_asset_inline_data_is_read_but_never_written() -> None:
    part = part_from_data({"asset": {"contentType": "image/png", "data": "iVBORw0KGgo="}})
    assert isinstance(part, AssetPart)
    assert part.data == "iVBORw0KGgo="
    assert part.to_data() == {"asset": {"contentType": "image/png"}}


def test_reasoning_text_may_be_empty_for_encrypted_content() -> None:
    part = ReasoningPart(provider="openai", data={"encrypted_content": "gAAA"})
    assert part.to_data() == {"reasoning": "", "provider": "openai", "data": {"encrypted_content": "gAAA"}}


def test_unknown_keys_keep_order_and_interleaving() -> None:
    data = {"zeta": 1, "text": "hi", "alpha": {"nested": [1, {"deep": None}]}, "annotations": [], "omega": []}
    part = part_from_data(data)
    assert part.to_data() == data
    assert list(part.to_data()) == ["zeta", "text", "alpha", "annotations", "omega"]


def test_null_unknown_key_is_written_back_as_read() -> None:
    data = {"text": "x", "future": None}
    assert part_from_data(data).to_data() == data


def test_empty_list_written_stays_an_empty_list() -> None:
    data = {"text": "x", "annotations": []}
    assert part_from_data(data).to_data() == data
    assert TextPart("x").to_data() == {"text": "x"}


def test_changed_value_keeps_unknown_keys() -> None:
    part = part_from_data({"fileRef": "f1", "x-tag": {"a": 1}, "name": "old.pdf"})
    assert isinstance(part, FileRefPart)
    part.name = "new.pdf"
    assert part.to_data() == {"fileRef": "f1", "x-tag": {"a": 1}, "name": "new.pdf"}


@pytest.mark.parametrize(
    ("data", "path", "words"),
    [
        ({"nothing": 1}, "part", "one kind key"),
        ({}, "part", "one kind key"),
        ({"text": "a", "json": 1}, "part", "exactly one kind key"),
        ({"text": 3}, "part.text", "string"),
        ({"asset": "x"}, "part.asset", "mapping"),
        ({"asset": {"size": "big"}}, "part.asset.size", "whole number"),
        ({"text": "a", "annotations": {"url": "u"}}, "part.annotations", "list"),
        ({"text": "a", "annotations": [{"startIndex": "one"}]}, "part.annotations[0].startIndex", "whole number"),
        ({"hostedToolCall": None}, "part.hostedToolCall", "string"),
        ({"hostedToolCall": "ws", "cost": "cheap"}, "part.cost", "number"),
        ({"refusal": ["no"]}, "part.refusal", "string"),
        ({"fileRef": "f", "uri": 1}, "part.uri", "string"),
        ({"providerPart": 5}, "part.providerPart", "string"),
        ("just text", "part", "mapping"),
    ],
)
def test_bad_parts_fail_with_a_path(data: Any, path: str, words: str) -> None:
    with pytest.raises(BadDefinitionError) as info:
        part_from_data(data)
    assert info.value.path == path
    assert words in str(info.value)
