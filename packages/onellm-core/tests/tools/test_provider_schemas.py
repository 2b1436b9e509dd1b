"""Down-conversion of onellm's schemas for each provider's strict mode, following the rejection table."""

import dataclasses
import json
from datetime import timedelta
from typing import Annotated, Any
from uuid import UUID

import msgspec

from onellm.tools import compile_type, json_schema_for, tool
from onellm.tools._provider_schemas import for_anthropic, for_gemini, for_openai, restore_optional_nulls


def same(actual: Any, expected: Any) -> None:
    assert json.dumps(actual) == json.dumps(expected)


@dataclasses.dataclass
class Line:
    sku: Annotated[str, msgspec.Meta(min_length=2, max_length=8, pattern="^[A-Z]+$")]
    qty: Annotated[int, msgspec.Meta(ge=1, le=99)] = 1
    tags: Annotated[set[str], msgspec.Meta(min_length=2, max_length=5)] = dataclasses.field(default_factory=set)
    ref: UUID | None = None
    site: Annotated[str, msgspec.Meta(pattern="^(?=www)[a-z.]+$")] = "www"
    blob: bytes = b""
    wait: timedelta = timedelta(0)


SCHEMA = json_schema_for(Line)


def test_anthropic_strict_drops_what_it_rejects() -> None:
    out = for_anthropic(SCHEMA)
    assert out.strict
    same(
        out.schema,
        {
            "type": "object",
            "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z]+$"},
                "qty": {"type": "integer", "default": 1},
                "tags": {"type": "array", "items": {"type": "string"}},
                "ref": {"type": ["string", "null"], "format": "uuid"},
                "site": {"type": "string", "default": "www"},
                "blob": {"type": "string"},
                "wait": {"type": "string", "format": "duration"},
            },
            "required": ["sku"],
            "additionalProperties": False,
        },
    )
    assert out.removed == [
        "/properties/sku/minLength",
        "/properties/sku/maxLength",
        "/properties/qty/minimum",
        "/properties/qty/maximum",
        "/properties/tags/uniqueItems",
        "/properties/tags/maxItems",
        "/properties/tags/minItems",
        "/properties/site/pattern",
        "/properties/blob/contentEncoding",
    ]


def test_anthropic_keeps_min_items_of_zero_or_one() -> None:
    schema = json_schema_for(Annotated[list[int], msgspec.Meta(min_length=1)])
    same(for_anthropic(schema).schema, {"type": "array", "items": {"type": "integer"}, "minItems": 1})


def test_openai_strict_requires_every_property_and_makes_optionals_nullable() -> None:
    out = for_openai(SCHEMA)
    assert out.strict
    same(
        out.schema,
        {
            "type": "object",
            "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z]+$"},
                "qty": {"type": ["integer", "null"], "minimum": 1, "maximum": 99},
                "tags": {"type": ["array", "null"], "items": {"type": "string"}, "minItems": 2, "maxItems": 5},
                "ref": {"type": ["string", "null"], "format": "uuid"},
                "site": {"type": ["string", "null"], "pattern": "^(?=www)[a-z.]+$"},
                "blob": {"type": ["string", "null"]},
                "wait": {"type": ["string", "null"], "format": "duration"},
            },
            "required": ["sku", "qty", "tags", "ref", "site", "blob", "wait"],
            "additionalProperties": False,
        },
    )
    assert "/properties/qty/default" in out.removed


def test_openai_drops_uri_format() -> None:
    schema = {"type": "string", "format": "uri"}
    assert for_openai(schema).schema == {"type": "string"}
    assert for_anthropic(schema).schema == schema


def test_gemini_keeps_ranges_and_drops_patterns_defaults_and_other_formats() -> None:
    out = for_gemini(SCHEMA)
    props = out.schema["properties"]
    same(props["qty"], {"type": "integer", "minimum": 1, "maximum": 99})
    same(props["sku"], {"type": "string", "minLength": 2, "maxLength": 8})
    same(props["ref"], {"type": ["string", "null"]})
    same(
        props["tags"], {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 5, "uniqueItems": True}
    )


def test_maps_do_not_fit_strict_mode() -> None:
    schema = json_schema_for(dict[str, int])
    for convert in (for_anthropic, for_openai):
        out = convert(schema)
        assert not out.strict
        assert out.schema == schema
        assert "holds a map" in (out.reason or "")
    assert for_gemini(schema).strict


def test_openai_nulls_for_optional_arguments_become_absent_and_the_invoker_accepts_them() -> None:
    @dataclasses.dataclass
    class Inner:
        a: int
        b: int = 2

    @tool
    def f(x: int, inner: Inner, y: str = "d", z: int | None = None) -> None:
        """F."""

    sent = {"x": 1, "inner": {"a": 1, "b": None}, "y": None, "z": None}
    restored = restore_optional_nulls(sent, f.input_schema)
    assert restored == {"x": 1, "inner": {"a": 1}, "z": None}
    assert f.convert_arguments(restored)["inner"] == Inner(1, 2)
    assert compile_type(list[Inner]).convert(
        restore_optional_nulls([{"a": 1, "b": None}], json_schema_for(list[Inner]))
    )
