"""OpenAI's Batch API and input-token counting, against a MockTransport that plays the API's documented objects
(OpenAPI 2.3.0: `Batch`, `OpenAIFile`, `TokenCountsResource`; the batch file line format of the Batch guide)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from onellm.clock import FakeClock
from onellm.errors import MalformedResponseError, ProviderError
from onellm.messages import Message, TextPart
from onellm.providers._request import ChatRequest
from onellm.providers.openai import OpenAICompatibleProvider, OpenAIProvider

BATCH = {
    "id": "batch_abc123",
    "object": "batch",
    "endpoint": "/v1/responses",
    "errors": None,
    "input_file_id": "file-abc123",
    "completion_window": "24h",
    "status": "completed",
    "output_file_id": "file-cvaTdG",
    "error_file_id": None,
    "created_at": 1711471533,
    "request_counts": {"total": 2, "completed": 2, "failed": 0},
}


def answer(text: str, rid: str) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "status": "completed",
        "model": "gpt-5.4",
        "output": [
            {
                "type": "message",
                "id": f"msg_{rid}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 2,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 12,
        },
    }


def output_file(rows: list[dict[str, Any]]) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode() + b"\n"


class Api:
    """Answers the batch and count endpoints and keeps what it was sent."""

    def __init__(self, batch: dict[str, Any], output: bytes) -> None:
        self.batch = batch
        self.output = output
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        path = request.url.path
        if path == "/v1/files" and request.method == "POST":
            return httpx.Response(200, json={"id": "file-abc123", "object": "file", "purpose": "batch", "bytes": 120})
        if path == "/v1/batches" and request.method == "POST":
            return httpx.Response(200, json={**self.batch, "status": "validating"})
        if path == f"/v1/batches/{self.batch['id']}":
            return httpx.Response(200, json=self.batch)
        if path == f"/v1/files/{self.batch['output_file_id']}/content":
            return httpx.Response(200, content=self.output)
        if path == "/v1/responses/input_tokens":
            return httpx.Response(200, json={"object": "response.input_tokens", "input_tokens": 11})
        return httpx.Response(404, json={"error": {"message": f"no route {path}"}})


def provider(api: Api) -> OpenAIProvider:
    return OpenAIProvider(
        api_key="sk-test", http_client=httpx.AsyncClient(transport=httpx.MockTransport(api)), clock=FakeClock()
    )


def requests() -> list[ChatRequest]:
    return [
        ChatRequest(model="gpt-5.4", messages=[Message(user=[TextPart(text="one")])]),
        ChatRequest(model="gpt-5.4", messages=[Message(user=[TextPart(text="two")])], system="Be brief."),
    ]


def test_submit_uploads_one_jsonl_line_per_request_then_creates_the_batch() -> None:
    api = Api(BATCH, b"")
    batch_id = anyio.run(provider(api).submit_batch, requests())
    assert batch_id == "batch_abc123"
    upload, create = api.seen
    assert upload.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert b'name="purpose"\r\n\r\nbatch' in upload.content
    start = upload.content.index(b"application/jsonl\r\n\r\n") + len(b"application/jsonl\r\n\r\n")
    lines = upload.content[start:].split(b"\r\n--")[0].decode().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["custom_id"] for r in rows] == ["request-0", "request-1"]
    assert {r["url"] for r in rows} == {"/v1/responses"}
    assert rows[1]["body"]["instructions"] == "Be brief."
    assert json.loads(create.content) == {
        "input_file_id": "file-abc123",
        "endpoint": "/v1/responses",
        "completion_window": "24h",
    }


def test_results_come_back_in_submission_order() -> None:
    rows = [
        {
            "id": "batch_req_2",
            "custom_id": "request-1",
            "response": {"status_code": 200, "request_id": "r2", "body": answer("Two.", "resp_2")},
            "error": None,
        },
        {
            "id": "batch_req_1",
            "custom_id": "request-0",
            "response": {"status_code": 200, "request_id": "r1", "body": answer("One.", "resp_1")},
            "error": None,
        },
    ]
    results = anyio.run(provider(Api(BATCH, output_file(rows))).batch_results, "batch_abc123")
    assert [r.message.text for r in results] == ["One.", "Two."]
    assert results[0].usage is not None
    assert results[0].usage.input_tokens == 10


def test_a_batch_still_running_is_not_read() -> None:
    api = Api({**BATCH, "status": "in_progress"}, b"")
    with pytest.raises(ProviderError, match="'in_progress', not completed"):
        anyio.run(provider(api).batch_results, "batch_abc123")


def test_failed_requests_are_reported_not_dropped() -> None:
    batch = {**BATCH, "request_counts": {"total": 100, "completed": 95, "failed": 5}, "error_file_id": "file-HOWS94"}
    with pytest.raises(ProviderError, match="5 of 100 requests failed; their errors are in file 'file-HOWS94'"):
        anyio.run(provider(Api(batch, b"")).batch_results, "batch_abc123")


def test_a_missing_answer_is_malformed() -> None:
    rows = [
        {
            "id": "b1",
            "custom_id": "request-0",
            "response": {"status_code": 200, "body": answer("One.", "r1")},
            "error": None,
        }
    ]
    with pytest.raises(MalformedResponseError, match=r"lacks answers for request\(s\) \[1\]"):
        anyio.run(provider(Api(BATCH, output_file(rows))).batch_results, "batch_abc123")


def test_a_foreign_custom_id_is_malformed() -> None:
    rows = [
        {"id": "b1", "custom_id": "mine-7", "response": {"status_code": 200, "body": answer("x", "r")}, "error": None}
    ]
    with pytest.raises(MalformedResponseError, match="custom_id 'mine-7'"):
        anyio.run(provider(Api(BATCH, output_file(rows))).batch_results, "batch_abc123")


def test_count_tokens_sends_only_the_fields_the_endpoint_takes() -> None:
    api = Api(BATCH, b"")
    request = ChatRequest(
        model="gpt-5", messages=[Message(user=[TextPart(text="Tell me a joke.")])], max_output_tokens=50, user_id="u"
    )
    assert anyio.run(provider(api).count_tokens, request) == 11
    assert json.loads(api.seen[0].content) == {
        "model": "gpt-5",
        "input": [{"role": "user", "content": "Tell me a joke."}],
    }


def test_a_missing_key_fails_before_anything_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    from onellm.errors import AuthError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    api = Api(BATCH, b"")
    bare = OpenAIProvider(http_client=httpx.AsyncClient(transport=httpx.MockTransport(api)), clock=FakeClock())
    with pytest.raises(AuthError, match="OPENAI_API_KEY"):
        anyio.run(bare.send, requests()[0])
    assert api.seen == []


# -- the same Batch API on an OpenAI-compatible server -----------------------------------------------------------


def completion(text: str, cid: str) -> dict[str, Any]:
    """A `CreateChatCompletionResponse` as a batch output line's body holds it."""
    return {
        "id": cid,
        "object": "chat.completion",
        "created": 1711471533,
        "model": "llama-3.3-70b",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": None}
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
    }


def compatible(api: Api, **options: Any) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        base_url="https://api.groq.com/openai/v1",
        api_key="gsk-test",
        name="groq",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(CompatibleApi(api))),
        clock=FakeClock(),
        **options,
    )


class CompatibleApi:
    """The same routes under a compatible server's base path (`/openai/v1`)."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path.startswith("/openai/v1/")
        assert request.headers["authorization"] == "Bearer gsk-test"
        moved = httpx.Request(
            request.method,
            request.url.copy_with(path=request.url.path.removeprefix("/openai")),
            headers=request.headers,
            content=request.content,
        )
        return self.api(moved)


def test_a_compatible_server_takes_batches_of_chat_completions() -> None:
    batch = {**BATCH, "endpoint": "/v1/chat/completions"}
    rows = [
        {
            "id": "batch_req_2",
            "custom_id": "request-1",
            "response": {"status_code": 200, "request_id": "r2", "body": completion("two", "c2")},
            "error": None,
        },
        {
            "id": "batch_req_1",
            "custom_id": "request-0",
            "response": {"status_code": 200, "request_id": "r1", "body": completion("one", "c1")},
            "error": None,
        },
    ]
    api = Api(batch, output_file(rows))
    server = compatible(api)
    chats = [
        ChatRequest(model="llama-3.3-70b", messages=[Message(user=[TextPart(text="one")])], max_output_tokens=5),
        ChatRequest(model="llama-3.3-70b", messages=[Message(user=[TextPart(text="two")])]),
    ]

    async def run() -> tuple[str, dict[str, Any], list[Any]]:
        batch_id = await server.submit_batch(chats)
        return batch_id, await server.get_batch(batch_id), await server.batch_results(batch_id)

    batch_id, status, results = anyio.run(run)
    assert (batch_id, status["endpoint"]) == ("batch_abc123", "/v1/chat/completions")
    upload, create = api.seen[:2]
    start = upload.content.index(b"application/jsonl\r\n\r\n") + len(b"application/jsonl\r\n\r\n")
    lines = [json.loads(line) for line in upload.content[start:].split(b"\r\n--")[0].decode().splitlines()]
    assert lines == [
        {
            "custom_id": "request-0",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {
                "model": "llama-3.3-70b",
                "messages": [{"role": "user", "content": "one"}],
                "max_tokens": 5,
            },
        },
        {
            "custom_id": "request-1",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": "llama-3.3-70b", "messages": [{"role": "user", "content": "two"}]},
        },
    ]
    assert json.loads(create.content) == {
        "input_file_id": "file-abc123",
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
    }
    assert [r.message.text for r in results] == ["one", "two"]
    assert [r.usage.input_tokens for r in results if r.usage] == [9, 9]


def test_a_compatible_batch_with_a_failed_request_fails_naming_it() -> None:
    batch = {**BATCH, "endpoint": "/v1/chat/completions"}
    rows = [
        {
            "custom_id": "request-0",
            "response": {"status_code": 400, "body": {"error": {"message": "model not found"}}},
            "error": None,
        }
    ]
    server = compatible(Api({**batch, "request_counts": {"total": 1, "completed": 1, "failed": 0}}, output_file(rows)))
    with pytest.raises(ProviderError, match="request-0 failed: model not found"):
        anyio.run(server.batch_results, "batch_abc123")


@pytest.mark.parametrize("bad", ["../files", "a/b", "x?y", "", "..", "id#frag", "a%2Fb"])
def test_a_batch_id_that_would_change_the_path_is_refused(bad: str) -> None:
    api = Api(BATCH, b"")
    with pytest.raises(ValueError, match="not a batch id"):
        anyio.run(compatible(api).get_batch, bad)
    assert api.seen == []
