"""Schemas given as data (`Tool.from_schema`): arguments are checked against the schema with the same paths and
messages as typed tools, and a schema with a rule the checker cannot enforce is refused when the tool is built."""

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from onellm.tools import ArgumentError, Tool, ToolContext, json_schema_for, to_json_value
from onellm.tools._validate import compile_schema

pytestmark = pytest.mark.anyio


def _cases() -> Any:
    # The typed conversion cases, loaded by path (tests run with --import-mode=importlib, so no sibling imports).
    spec = importlib.util.spec_from_file_location("tool_argument_cases", Path(__file__).with_name("test_arguments.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CASES = _cases()
GOOD = _CASES.GOOD
BAD = _CASES.BAD

# Checks that only the Python type can make: base64 text, a time zone requirement, unhashable set members after
# conversion (1 and 1.0), a record's own __post_init__, huge-number guards, non-empty paths.
PYTHON_ONLY = {
    "non-empty path",
    "a base64 string",
    "time zone",
    "repeats item",
    "digits",
    "range of a float",
    "not a valid",
}


@pytest.mark.parametrize(("tp", "value", "expected"), GOOD)
def test_values_the_types_accept_pass_the_schema(tp: Any, value: Any, expected: Any) -> None:
    check = compile_schema(json_schema_for(tp))
    assert check(value) == value
    assert check(to_json_value(expected)) == to_json_value(expected)


@pytest.mark.parametrize(("tp", "value", "message"), BAD)
def test_values_the_types_refuse_fail_the_schema_at_the_same_path(tp: Any, value: Any, message: str) -> None:
    if any(marker in message for marker in PYTHON_ONLY):
        pytest.skip("a check only the Python type makes")
    with pytest.raises(ArgumentError) as info:
        compile_schema(json_schema_for(tp))(value)
    expected_path = message.split("'")[1] if message.startswith("Argument '") else ""
    assert info.value.path == expected_path


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        ({"type": ["integer", "null"]}, "x", "Argument must be an integer or null, not a string."),
        ({"type": "integer"}, 3.0, None),
        ({"type": "number"}, 3, None),
        ({"enum": ["a", 1, None]}, 2, "Argument must be one of 'a', 1, null, not 2."),
        ({"const": "x"}, "y", "Argument must be 'x'."),
        ({"exclusiveMinimum": 0}, 0, "Argument must be more than 0, not 0."),
        ({"exclusiveMaximum": 1}, 1.5, "Argument must be less than 1, not 1.5."),
        ({"type": "object"}, {"any": "thing"}, None),
        (
            {"type": "object", "additionalProperties": {"type": "integer"}},
            {"a": "b"},
            "Argument 'a' must be an integer, not a string.",
        ),
        ({"type": "object", "properties": {"a": False}}, {"a": 1}, "Argument 'a' is not allowed."),
        ({"uniqueItems": True}, [{"a": 1}, {"a": 1.0}], "Argument must hold unique items; item 1 repeats item 0."),
        ({"format": "uuid"}, "nope", "Argument must be a UUID string, not 'nope'."),
        ({"format": "email", "title": "Mail"}, "anything", None),
    ],
)
def test_schema_keywords(schema: dict[str, Any], value: Any, message: str | None) -> None:
    check = compile_schema(schema)
    if message is None:
        assert check(value) == value
        return
    with pytest.raises(ArgumentError) as info:
        check(value)
    assert info.value.message() == message


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"oneOf": [{"type": "string"}]}, "the keyword 'oneOf' is not supported"),
        ({"properties": {"a": {"$ref": "#/x"}}}, "schema.properties.a: the keyword '$ref'"),
        ({"type": "decimal"}, "type must name JSON types"),
        ({"minLength": -1}, "minLength must be a non-negative integer"),
        ({"pattern": "("}, "is not a valid regular expression"),
        ({"minimum": "1"}, "minimum must be a number"),
    ],
)
def test_schemas_the_checker_cannot_enforce_are_refused(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=message.replace("$", r"\$")):
        compile_schema(schema)


async def test_from_schema_tool_checks_arguments_before_the_handler_runs() -> None:
    calls: list[dict[str, Any]] = []

    async def handler(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        calls.append(arguments)
        return "ok"

    t = Tool.from_schema(
        "lookup",
        "Looks up.",
        {
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"type": "object", "properties": {"qty": {"type": "integer"}}}}
            },
            "required": ["items"],
            "additionalProperties": False,
        },
        handler,
    )
    bad = await t.invoke({"items": [{"qty": 1}, {"qty": 2}, {"qty": "3"}]})
    assert bad.text == "Argument 'items[2].qty' must be an integer, not a string."
    assert (await t.invoke({})).text == "Argument 'items' is required."
    assert (await t.invoke({"items": [], "x": 1})).text == "Argument 'x' is not accepted (accepted: items)."
    assert calls == []
    assert (await t.invoke('{"items": [{"qty": 1}]}')).text == "ok"
    assert calls == [{"items": [{"qty": 1}]}]


def test_from_schema_refuses_an_unenforceable_schema() -> None:
    async def handler(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        return None

    with pytest.raises(TypeError, match="tool 'x', input schema: the keyword 'anyOf'"):
        Tool.from_schema("x", "X.", {"type": "object", "anyOf": []}, handler)
