"""Where a bad value is, said the same way everywhere: definitions, catalogs, tool arguments and structured output all
write a value's path as `ArgumentError.path` does (`items[2].qty`, `headers["X-Api-Key"]`)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, TypedDict

import pytest

from onellm import Runtime
from onellm._describe import format_path, join_path, parse_path, type_name
from onellm.catalog import CatalogLayer
from onellm.definitions import Decider, Definition
from onellm.errors import BadDefinitionError, MalformedResponseError
from onellm.instances import MemoryInstanceStore
from onellm.schema import ArgumentError, compile_type
from onellm.testing import ScriptedProvider, ScriptStep

SEGMENTS: list[list[str | int]] = [
    [],
    ["items", 2, "qty"],
    [0, "a"],
    ["headers", "X-Api-Key"],
    ["notes", "a b", 3],
    ['quote"and\\slash', "é"],
    ["", "x"],
]


@pytest.mark.parametrize("segments", SEGMENTS, ids=str)
def test_one_way_to_write_a_path(segments: list[str | int]) -> None:
    text = format_path(segments)
    assert text == ArgumentError("bad", segments).path
    assert parse_path(text) == segments
    built = ""
    for segment in segments:
        built = join_path(built, segment)
    assert built == text


def test_paths_as_written() -> None:
    assert format_path(["items", 2, "qty"]) == "items[2].qty"
    assert format_path(["headers", "X-Api-Key"]) == 'headers["X-Api-Key"]'
    assert format_path([1]) == "[1]"


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (None, "null"),
        (True, "a boolean"),
        (1, "a number"),
        (Decimal("1.5"), "a number"),
        ("x", "a string"),
        ([1], "a list"),
        ({"a": 1}, "a mapping"),
        (object(), "object"),
    ],
)
def test_type_names(value: Any, name: str) -> None:
    assert type_name(value) == name


def test_a_definition_names_a_key_that_is_not_an_identifier_as_arguments_do() -> None:
    text = "name: x\nheaders:\n  X-Api-Key: 3\n"
    with pytest.raises(BadDefinitionError) as caught:
        Definition.loads(text, file="agent.yaml")
    err = caught.value
    assert err.path == 'headers["X-Api-Key"]'
    assert (err.line, err.column) == (3, 14)
    assert (
        str(err)
        == 'agent.yaml:3:14: a header value must be a string (a template), found a number (at headers["X-Api-Key"])'
    )


def test_a_decider_question_id_with_a_dash_is_quoted_in_the_path_and_placed() -> None:
    text = "model: m\nquestions:\n  line-ok:\n    type: maybe\n    instructions: Is it?\n"
    with pytest.raises(BadDefinitionError) as caught:
        Decider.loads(text, file="d.decider.yaml")
    assert caught.value.path == 'questions["line-ok"].type'
    assert (caught.value.line, caught.value.column) == (4, 11)


def test_a_catalog_key_with_a_dot_is_quoted_in_the_path_and_placed() -> None:
    text = "name: p\npresets:\n  lm.studio:\n    models:\n      - name: a\n        contextWindow: lots\n"
    with pytest.raises(BadDefinitionError) as caught:
        CatalogLayer.from_text(text, file="llm-provider.yaml")
    assert caught.value.path == 'presets["lm.studio"].models[0].contextWindow'
    assert (caught.value.line, caught.value.column) == (6, 24)


class Odd(TypedDict):
    total: Decimal


Awkward = TypedDict("Awkward", {"line items": list[Odd]})


@pytest.mark.anyio
async def test_structured_output_names_the_path_as_argument_errors_do() -> None:
    provider = ScriptedProvider("openai")
    runtime = Runtime(store=MemoryInstanceStore(), environ={})
    runtime.providers.set("openai", provider)
    provider.enqueue(ScriptStep.text('{"line items": [{"total": 1}, {"total": "x"}]}'))
    with pytest.raises(MalformedResponseError) as caught:
        await runtime.ask("gpt-6-luna", "x", output=Awkward)
    expected = ArgumentError("", ["line items", 1, "total"]).path
    assert expected == '["line items"][1].total'
    assert f"at {expected}:" in str(caught.value)
    assert compile_type(Awkward).schema["required"] == ["line items"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
