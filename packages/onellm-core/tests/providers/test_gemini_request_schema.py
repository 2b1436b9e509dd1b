"""Every field a Gemini request body uses exists in the v1beta protos, in its JSON (lowerCamelCase) spelling, in the
message type where it is used. The protos are parsed from `testdata/providers/gemini/protos/`; the few fields the API
takes that those protos predate are listed, with their references, in `newer-fields.json`."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onellm.messages import Message
from onellm.providers._request import ChatRequest, ReasoningOptions, ResponseFormat, ToolChoice, ToolDefinition
from onellm.providers.gemini._request import encode_request

from ._fixtures import PROVIDERS, case_id, cases, load

PROTOS = PROVIDERS / "gemini" / "protos"
PACKAGE = "google.ai.generativelanguage.v1beta"
OPAQUE = {"google.protobuf.Value", "google.protobuf.Struct", "google.protobuf.ListValue", "google.protobuf.Any"}

_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_.]*|\d+|[^\s\w]', re.S)


@dataclass
class Field:
    type: str
    scope: str
    map_value: bool = False


@dataclass
class Schema:
    messages: dict[str, dict[str, Field]] = field(default_factory=dict)

    def resolve(self, scope: str, name: str) -> str | None:
        """A field type name as the message it names, looked up from the inside out as protoc does."""
        if name.startswith("."):
            name = name[1:]
        parts = scope.split(".")
        while parts:
            candidate = ".".join([*parts, name])
            if candidate in self.messages:
                return candidate
            parts.pop()
        return name if name in self.messages else None


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _scope(package: str, stack: list[tuple[str, str]]) -> str:
    return ".".join([package, *(name for kind, name in stack if kind == "message")])


def parse(paths: list[Path]) -> Schema:
    """The message definitions of the files: message name -> JSON field name -> field type."""
    schema = Schema()
    for path in paths:
        tokens = [t for t in _TOKEN.findall(path.read_text(encoding="utf-8")) if not t.startswith(("//", "/*"))]
        package = ""
        stack: list[tuple[str, str]] = []
        i = 0

        while i < len(tokens):
            token = tokens[i]
            if token == "package" and not stack:
                package = tokens[i + 1]
                i += 3
            elif token in ("message", "enum", "oneof", "service") and i + 2 < len(tokens) and tokens[i + 2] == "{":
                stack.append((token, tokens[i + 1]))
                if token == "message":
                    schema.messages[_scope(package, stack)] = {}
                i += 3
            elif token == "{":
                stack.append(("block", ""))
                i += 1
            elif token == "}":
                stack.pop()
                i += 1
            elif token in ("option", "import", "syntax", "reserved", "extensions", "rpc"):
                while tokens[i] not in (";", "{"):
                    i += 1
                if tokens[i] == "{":
                    stack.append(("block", ""))
                i += 1
            elif stack and stack[-1][0] in ("message", "oneof") and token != ";":
                j = i + 1 if token in ("optional", "repeated", "required") else i
                is_map = tokens[j] == "map"
                if is_map:  # map < key , value > name = n
                    kind, j = tokens[j + 4], j + 6
                else:
                    kind, j = tokens[j], j + 1
                name = tokens[j]
                assert tokens[j + 1] == "=", f"{path.name}: cannot read the field at token {i} ({token!r})"
                where = _scope(package, stack)
                schema.messages[where][camel(name)] = Field(kind, where, is_map)
                depth = 0
                while tokens[j] != ";" or depth:
                    depth += {"[": 1, "]": -1}.get(tokens[j], 0)
                    j += 1
                i = j + 1
            else:
                i += 1
    return schema


SCHEMA = parse(sorted(PROTOS.glob("*.proto")))
NEWER = json.loads((PROTOS / "newer-fields.json").read_text(encoding="utf-8"))["fields"]


def lookup(message: str, name: str) -> Field | None:
    found = SCHEMA.messages[message].get(name)
    if found is not None:
        return found
    newer = NEWER.get(message.rsplit(".", 1)[-1], {}).get(name)
    return Field(newer["type"], message) if newer is not None else None


def unknown_fields(value: Any, message: str, path: str = "$") -> list[str]:
    """Paths of the fields in `value` that the message type (and those it nests) does not define."""
    if not isinstance(value, dict):
        return [f"{path}: expected a {message.rsplit('.', 1)[-1]} object, got {type(value).__name__}"]
    problems: list[str] = []
    for name, item in value.items():
        spec = lookup(message, name)
        if spec is None:
            problems.append(f"{path}.{name}: not a field of {message.rsplit('.', 1)[-1]}")
            continue
        if spec.type in OPAQUE:
            continue
        target = SCHEMA.resolve(spec.scope, spec.type)
        if target is None:  # a scalar or an enum
            continue
        if spec.map_value:
            for key, sub in item.items():
                problems.extend(unknown_fields(sub, target, f"{path}.{name}[{key!r}]"))
        elif isinstance(item, list):
            for n, sub in enumerate(item):
                problems.extend(unknown_fields(sub, target, f"{path}.{name}[{n}]"))
        else:
            problems.extend(unknown_fields(item, target, f"{path}.{name}"))
    return problems


def body_problems(case: dict[str, Any]) -> list[str]:
    body = case["expectedRequest"]["body"] if case.get("expectedRequest") else None
    if body is None:
        return []
    operation = case.get("operation", "generateContent")
    if operation == "countTokens":
        return unknown_fields(body, f"{PACKAGE}.CountTokensRequest")
    if operation == "embed":
        return unknown_fields(body, f"{PACKAGE}.BatchEmbedContentsRequest")
    if operation == "batch":
        requests = body["batch"]["inputConfig"]["requests"]["requests"]
        return [
            p
            for n, r in enumerate(requests)
            for p in unknown_fields(r["request"], f"{PACKAGE}.GenerateContentRequest", f"$.requests[{n}]")
        ]
    return unknown_fields(body, f"{PACKAGE}.GenerateContentRequest")


def test_the_parser_reads_the_messages_the_codec_uses() -> None:
    part = SCHEMA.messages[f"{PACKAGE}.Part"]
    assert {"text", "inlineData", "functionCall", "functionResponse", "thoughtSignature", "thought"} <= set(part)
    config = SCHEMA.messages[f"{PACKAGE}.GenerationConfig"]
    assert config["responseJsonSchema"].type == "google.protobuf.Value"
    assert SCHEMA.resolve(f"{PACKAGE}.Tool", "GoogleSearch") == f"{PACKAGE}.Tool.GoogleSearch"
    assert SCHEMA.messages[f"{PACKAGE}.Schema"]["properties"].map_value


def test_the_newer_fields_are_not_in_the_protos() -> None:
    for message, fields in NEWER.items():
        defined = SCHEMA.messages[f"{PACKAGE}.{message}"]
        for name, spec in fields.items():
            assert name not in defined, f"{message}.{name} is in the protos now: remove it from newer-fields.json"
            assert spec["reference"]


def test_a_misspelt_field_is_caught() -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "x", "thought_signature": "c2ln"}]}]}
    assert unknown_fields(body, f"{PACKAGE}.GenerateContentRequest") == [
        "$.contents[0].parts[0].thought_signature: not a field of Part"
    ]
    nested = {"generationConfig": {"thinkingConfig": {"budget": 3}}}
    assert unknown_fields(nested, f"{PACKAGE}.GenerateContentRequest") == [
        "$.generationConfig.thinkingConfig.budget: not a field of ThinkingConfig"
    ]
    schema = {
        "generationConfig": {"responseSchema": {"type": "OBJECT", "properties": {"a": {"additionalProperties": False}}}}
    }
    assert unknown_fields(schema, f"{PACKAGE}.GenerateContentRequest") == [
        "$.generationConfig.responseSchema.properties['a'].additionalProperties: not a field of Schema"
    ]


@pytest.mark.parametrize("path", cases("gemini"), ids=case_id)
def test_fixture_request_bodies_use_only_proto_fields(path: Path) -> None:
    assert body_problems(load(path)) == []


_SCHEMAS = st.sampled_from(
    [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "properties": {"n": {"type": ["number", "null"]}, "k": {"const": "x"}}},
        {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "minItems": 1},
        {"$defs": {"t": {"type": "string"}}, "type": "object", "properties": {"t": {"$ref": "#/$defs/t"}}},
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    schema=_SCHEMAS,
    form=st.sampled_from(["responseJsonSchema", "responseSchema"]),
    thinking=st.sampled_from(["auto", "budget", "levels"]),
    effort=st.sampled_from([None, "disabled", "dynamic", "low", "high"]),
    summary=st.sampled_from([None, "auto"]),
    choice=st.sampled_from(
        [None, ToolChoice("auto"), ToolChoice("none"), ToolChoice("required"), ToolChoice.named("f")]
    ),
    tier=st.sampled_from([None, "flex", "priority"]),
)
def test_any_option_mix_uses_only_proto_fields(
    schema: dict[str, Any],
    form: str,
    thinking: str,
    effort: str | None,
    summary: str | None,
    choice: ToolChoice | None,
    tier: str | None,
) -> None:
    request = ChatRequest(
        model="gemini-flash-latest",
        messages=[Message.from_data({"user": [{"text": "hi"}]})],
        system="be brief",
        max_output_tokens=10,
        temperature=0.2,
        top_p=0.5,
        stop_sequences=["x"],
        tools=[ToolDefinition("f", "a tool", schema)],
        tool_choice=choice,
        response_format=ResponseFormat.json_schema(schema),
        reasoning=ReasoningOptions(effort=effort, summary=summary),
        service_tier=tier,
    )
    body, _ = encode_request(request, schema_form=form, thinking=thinking)
    assert unknown_fields(body, f"{PACKAGE}.GenerateContentRequest") == []
