"""Every request body in the OpenAI fixtures validates against the OpenAPI document's request schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from ._fixtures import PROVIDERS, case_id, cases, load

SCHEMAS = json.loads((PROVIDERS / "openai" / "openapi-request-schemas.json").read_text(encoding="utf-8"))
ROOT_FOR_PATH = {
    "/v1/chat/completions": "CreateChatCompletionRequest",
    "/v1/responses": "CreateResponse",
    "/v1/responses/compact": "CompactResponseMethodPublicBody",
    "/v1/embeddings": "CreateEmbeddingRequest",
}


def any_of(node: Any) -> Any:
    """The document's `oneOf` read as `anyOf`. OpenAPI picks a branch by its discriminator; plain JSON Schema fails a
    `oneOf` when two branches accept a value (a user message with a content list fits both `EasyInputMessage` and
    `InputMessage`), which the API itself accepts."""
    if isinstance(node, dict):
        return {("anyOf" if k == "oneOf" else k): any_of(v) for k, v in node.items()}
    if isinstance(node, list):
        return [any_of(v) for v in node]
    return node


def validator(root: str) -> Draft202012Validator:
    document = {"$ref": f"#/components/schemas/{root}", "components": any_of(SCHEMAS["components"])}
    return Draft202012Validator(document)


VALIDATORS = {path: validator(root) for path, root in ROOT_FOR_PATH.items()}
FIRST_PARTY = [
    p for p in cases("openai-chat", "openai-responses", "openai-embeddings") if load(p)["expectedRequest"] is not None
]


def errors_for(path: str, body: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATORS[path].iter_errors(body)]


@pytest.mark.parametrize("path", FIRST_PARTY, ids=case_id)
def test_request_body_follows_the_openapi_schema(path: Path) -> None:
    request = load(path)["expectedRequest"]
    assert errors_for(request["path"], request["body"]) == []


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
        ("/v1/chat/completions", {"model": "m", "messages": [{"role": "wizard", "content": "hi"}]}),
        ("/v1/responses", {"model": "m", "input": "hi", "store": "no"}),
        ("/v1/responses", {"model": "m", "input": [{"role": "assistant", "content": 7}]}),
        ("/v1/embeddings", {"model": "m"}),
        ("/v1/responses/compact", {"input": "hi"}),
        ("/v1/responses", {"model": "m", "input": [{"type": "compaction", "id": "cmp_1"}]}),
    ],
)
def test_the_schema_check_catches_bad_bodies(path: str, body: dict[str, Any]) -> None:
    assert errors_for(path, body) != []


def test_compaction_bodies_follow_the_openapi_schema() -> None:
    """The `/responses/compact` body of a conversation, and a `/responses` body that sends a compaction item back."""
    from onellm.messages import Message, ProviderPart, TextPart, ToolCall
    from onellm.providers import CacheOptions, ChatRequest
    from onellm.providers.openai._compact import compact_body
    from onellm.providers.openai._responses import encode_responses_request

    item = {"id": "cmp_001", "type": "compaction", "encrypted_content": "gAAAAABpM0Yj-...="}
    conversation = [
        Message(
            id="m1",
            user=[TextPart("Create a simple landing page.")],
            assistant=[TextPart("Calling.")],
            tool_calls=[ToolCall(id="call_1", tool="write", inputs={"path": "a.html"}, result=[TextPart("ok")])],
        )
    ]
    request = ChatRequest(
        model="gpt-5.4",
        messages=conversation,
        system="You help.",
        service_tier="flex",
        cache=CacheOptions(key="k1"),
    )
    body = compact_body(encode_responses_request(request)[0])
    assert sorted(body) == ["input", "instructions", "model", "prompt_cache_key", "service_tier"]
    assert errors_for("/v1/responses/compact", body) == []
    later = ChatRequest(
        model="gpt-5.4",
        messages=[
            Message(id="k", user=[TextPart("Create a simple landing page.")]),
            Message(id="c", user=[ProviderPart(type="openai.compaction", raw=item)]),
            Message(id="n", user=[TextPart("Now the footer.")]),
        ],
    )
    sent = encode_responses_request(later)[0]
    assert sent["input"] == [
        {"role": "user", "content": "Create a simple landing page."},
        item,
        {"role": "user", "content": "Now the footer."},
    ]
    assert errors_for("/v1/responses", sent) == []
