"""`contextStrategy: providerNative` over OpenAI's Responses API: the compaction call (`POST /responses/compact`) at
the trigger, its `compactions` record priced from the catalog, the `compaction` item sent back unchanged on the next
request and kept through a save and a load, a failing compaction call, a `beforeCompaction` veto, and the providers that
cannot compact.

The HTTP answers are fixtures written from OpenAI's API reference (/work/shared/vendor/openai/openapi.yaml): the
`/responses/compact` example and the `CompactResource` and `CompactionBody` schemas for the compaction, the `Response`
object with a `function_call` output item for the turns. None was recorded from a live call."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

import onellm
from onellm.agents import Block
from onellm.agents._result import instance_cost
from onellm.instances import FileInstanceStore, Instance
from onellm.messages import ProviderPart, TextPart
from onellm.providers import RetryPolicy
from onellm.providers.openai import OpenAIProvider
from onellm.records import CompactionRecord, ErrorRecord, EventRecordSink, InferenceRecord, Record, total_cost

from .conftest import tool_functions

pytestmark = pytest.mark.anyio

ENCRYPTED = "gAAAAABpM0Yj-Zk0bW9vbi1jb21wYWN0aW9uLWZpeHR1cmU="

COMPACTED: dict[str, Any] = {
    # CompactResource, as in the reference's `/responses/compact` example: the user message kept, then the compaction
    # item (CompactionBody: type, id, encrypted_content) standing for everything else.
    "id": "resp_001",
    "object": "response.compaction",
    "created_at": 1764967971,
    "output": [
        {
            "id": "msg_000",
            "type": "message",
            "status": "completed",
            "content": [{"type": "input_text", "text": "Do the task."}],
            "role": "user",
        },
        {"id": "cmp_001", "type": "compaction", "encrypted_content": ENCRYPTED},
    ],
    "usage": {
        "input_tokens": 1400,
        "input_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 0},
        "output_tokens": 438,
        "output_tokens_details": {"reasoning_tokens": 64},
        "total_tokens": 1838,
    },
}
COMPACTION_COST = Decimal("0.00782")
"""gpt-5.4 in the catalog: 400 input tokens at $2.50, 1,000 cached at $0.25 and 438 output at $15 per million."""


def turn(rid: str, call_id: str, name: str, arguments: dict[str, Any], input_tokens: int) -> dict[str, Any]:
    """A `Response` whose output is one `function_call` item."""
    return {
        "id": rid,
        "object": "response",
        "created_at": 1764967900,
        "status": "completed",
        "model": "gpt-5.4",
        "output": [
            {
                "type": "function_call",
                "id": f"fc_{rid}",
                "call_id": call_id,
                "name": name,
                "arguments": json.dumps(arguments),
                "status": "completed",
            }
        ],
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + 20,
        },
    }


class OpenAI:
    """A MockTransport that answers `/responses` from a queue and `/responses/compact` with one answer."""

    def __init__(self, *turns: dict[str, Any], compact: httpx.Response | None = None) -> None:
        self.turns = list(turns)
        self.compact = compact or httpx.Response(200, json=COMPACTED)
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.sent.append((request.url.path, body))
        if request.url.path == "/v1/responses/compact":
            return self.compact
        assert request.url.path == "/v1/responses"
        return httpx.Response(200, json=self.turns.pop(0))

    def paths(self) -> list[str]:
        return [p for p, _ in self.sent]


def runtime_for(folder: Path, transport: OpenAI, records: list[Record], **provider: Any) -> onellm.Runtime:
    runtime = onellm.Runtime(
        store=FileInstanceStore(folder / "instances", durable=False),
        records=[EventRecordSink(records.append)],
        capabilities=onellm.Capabilities.files(folder),
        environ={},
    )
    client = httpx.AsyncClient(transport=httpx.MockTransport(transport))
    runtime.providers.set(
        "openai",
        OpenAIProvider(api_key="sk-test", http_client=client, retry=RetryPolicy(max_retries=0), **provider),
    )
    for fn in tool_functions([]):
        runtime.tools.add(fn)
    return runtime


def agent(folder: Path, strategy: str = "{type: providerNative, triggerTokens: 1000}") -> Path:
    path = folder / "agent.yaml"
    path.write_text(
        "name: helper\nmodel: gpt-5.4\nsystemPrompt: You help.\nreferences:\n  - tools: [echo, task_complete]\n"
        f"initialPrompts:\n  - user:\n      - text: Do the task.\ncontextStrategy: {strategy}\n",
        encoding="utf-8",
    )
    return path


def script() -> OpenAI:
    return OpenAI(
        turn("resp_1", "call_1", "echo", {"text": "big"}, 1200),
        turn("resp_2", "call_2", "task_complete", {"result": "done", "summary": "did it"}, 300),
    )


async def test_openai_compacts_at_the_trigger_and_the_item_goes_back_unchanged(tmp_path: Path) -> None:
    transport = script()
    records: list[Record] = []
    runtime = runtime_for(tmp_path, transport, records)
    run = await runtime.start_agent(agent(tmp_path))
    events = [e async for e in run.events()]
    result = await run.result()
    inst = result.instance
    assert result.stop_reason.value == "completed"
    assert transport.paths() == ["/v1/responses", "/v1/responses/compact", "/v1/responses"]

    # the compaction call: the conversation so far as input, with the model and the instructions
    compact = transport.sent[1][1]
    assert compact == {
        "model": "gpt-5.4",
        "input": [
            {"role": "user", "content": "Do the task."},
            {"type": "function_call", "call_id": "call_1", "name": "echo", "arguments": '{"text":"big"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "echo: big"},
        ],
        "instructions": "You help.",
    }
    # the next turn starts from the compacted items: the kept user message, then the compaction item verbatim
    after = transport.sent[2][1]["input"]
    assert after[:2] == [
        {"role": "user", "content": "Do the task."},
        {"id": "cmp_001", "type": "compaction", "encrypted_content": ENCRYPTED},
    ]
    assert len(after) == 2
    assert transport.sent[2][1]["instructions"] == "You help."

    [entry] = inst.compactions
    assert entry.strategy == "providerNative"
    assert entry.cost == COMPACTION_COST
    assert entry.at is not None
    assert entry.replaced_message_ids
    assert entry.at_message_id == entry.replaced_message_ids[0]
    kept, state = inst.messages[0], inst.messages[1]
    assert kept.user == [TextPart("Do the task.")]
    assert not kept.assistant
    assert kept.id not in entry.replaced_message_ids
    assert state.id == entry.summary_message_id
    assert state.user == [ProviderPart(type="openai.compaction", raw=COMPACTED["output"][1])]
    assert [c.tool for c in state.tool_calls] == ["task_complete"]  # the next turn answered into it
    assert entry.replaced_cost == Decimal("0.0033")  # the first turn: 1,200 input and 20 output tokens
    # the compaction, the removed turn and the last turn (300 input and 20 output tokens)
    assert instance_cost(inst).total == COMPACTION_COST + Decimal("0.0033") + Decimal("0.00105")
    compacted = [e for e in events if type(e).__name__ == "ContextCompacted"]
    assert [(e.strategy, e.context_tokens, e.cost) for e in compacted] == [("providerNative", 1220, COMPACTION_COST)]
    assert not [w for w in result.warnings if w.kind == "contextStrategy"]

    # the compaction call is an inference record of its own, priced, then the compaction record; the records' total
    # is the instance's cost, the compaction counted once
    inference = [r for r in records if isinstance(r, InferenceRecord)]
    assert [r.operation for r in inference] == ["chat", "compact", "chat"]
    call = inference[1]
    assert (call.instance_id, call.message_id, call.provider) == (inst.id, entry.summary_message_id, "openai")
    assert call.usage is not None
    usage = call.usage
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens) == (400, 1000, 438)
    assert usage.cost == COMPACTION_COST
    assert usage.cost_lines
    [record] = [r for r in records if isinstance(r, CompactionRecord)]
    assert (record.strategy, record.cost, record.replaced_message_ids) == (
        "providerNative",
        COMPACTION_COST,
        entry.replaced_message_ids,
    )
    assert records.index(record) == records.index(call) + 1
    assert total_cost(records) == instance_cost(inst).total

    # saved, loaded and saved again unchanged; the loaded instance sends the same items
    store = runtime.store
    assert isinstance(store, FileInstanceStore)
    path = store.path_of(inst.id or "")
    text = path.read_text(encoding="utf-8")
    assert "encrypted_content: " + ENCRYPTED in text
    loaded = Instance.loads(text)
    assert loaded.dumps() == text
    assert loaded.messages[1].user == state.user
    assert loaded.compactions[0].to_data() == entry.to_data()
    again = FileInstanceStore(tmp_path / "copy", durable=False)
    await again.save(Instance.loads(text))
    assert again.path_of(inst.id or "").read_text(encoding="utf-8") == text


async def test_the_compaction_item_goes_back_on_every_later_request(tmp_path: Path) -> None:
    transport = OpenAI(
        turn("resp_1", "call_1", "echo", {"text": "big"}, 1200),
        turn("resp_2", "call_2", "echo", {"text": "more"}, 300),
        turn("resp_3", "call_3", "task_complete", {"result": "done", "summary": "did it"}, 400),
    )
    runtime = runtime_for(tmp_path, transport, [])
    result = await runtime.run_agent(agent(tmp_path))
    assert transport.paths() == ["/v1/responses", "/v1/responses/compact", "/v1/responses", "/v1/responses"]
    last = transport.sent[-1][1]["input"]
    assert last[:2] == [
        {"role": "user", "content": "Do the task."},
        {"id": "cmp_001", "type": "compaction", "encrypted_content": ENCRYPTED},
    ]
    assert [i.get("call_id") for i in last[2:]] == ["call_2", "call_2"]
    assert len(result.instance.compactions) == 1


def said(rid: str, text: str, input_tokens: int) -> dict[str, Any]:
    """A `Response` whose output is one assistant `message` item."""
    answer = turn(rid, "", "", {}, input_tokens)
    answer["output"] = [
        {
            "type": "message",
            "id": f"msg_{rid}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    ]
    return answer


async def test_a_new_message_stays_after_the_compacted_conversation(tmp_path: Path) -> None:
    transport = OpenAI(
        said("resp_1", "First answer.", 1200),
        turn("resp_2", "call_2", "task_complete", {"result": "done", "summary": "did it"}, 300),
    )
    runtime = runtime_for(tmp_path, transport, [])
    run = await runtime.start_agent(agent(tmp_path))
    await run.result()
    assert transport.paths() == ["/v1/responses"]
    await run.message("Second.")
    result = await run.result()
    assert transport.paths() == ["/v1/responses", "/v1/responses/compact", "/v1/responses"]
    assert transport.sent[1][1]["input"] == [
        {"role": "user", "content": "Do the task."},
        {"role": "assistant", "content": "First answer."},
    ]
    assert transport.sent[2][1]["input"] == [
        {"role": "user", "content": "Do the task."},
        {"id": "cmp_001", "type": "compaction", "encrypted_content": ENCRYPTED},
        {"role": "user", "content": "Second."},
    ]
    inst = result.instance
    [entry] = inst.compactions
    second = inst.messages[-1]
    assert second.user == [TextPart("Second.")]
    assert second.id not in entry.replaced_message_ids
    assert [c.tool for c in second.tool_calls] == ["task_complete"]
    assert inst.messages[1].id == entry.summary_message_id


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(500, json={"error": {"message": "The server had an error", "type": "server_error"}}),
        httpx.Response(200, json={"id": "resp_001", "object": "response", "output": [], "usage": {}}),
        httpx.Response(200, json={**COMPACTED, "output": COMPACTED["output"][:1]}),
        httpx.Response(200, content=b"{not json"),
    ],
    ids=["http-500", "not-a-compaction", "no-compaction-item", "bad-json"],
)
async def test_a_failing_compaction_call_leaves_the_run_going_uncompacted(
    tmp_path: Path, answer: httpx.Response
) -> None:
    transport = script()
    transport.compact = answer
    records: list[Record] = []
    runtime = runtime_for(tmp_path, transport, records)
    result = await runtime.run_agent(agent(tmp_path))
    inst = result.instance
    assert result.stop_reason.value == "completed"
    assert transport.paths() == ["/v1/responses", "/v1/responses/compact", "/v1/responses"]
    assert inst.compactions == []
    assert inst.messages[0].user == [TextPart("Do the task.")]
    assert [c.id for m in inst.messages for c in m.tool_calls] == ["call_1", "call_2"]
    # the next turn sent the whole conversation
    assert transport.sent[2][1]["input"][0] == {"role": "user", "content": "Do the task."}
    assert transport.sent[2][1]["input"][1]["type"] == "function_call"
    errors = [r for r in records if isinstance(r, ErrorRecord)]
    assert len(errors) == 1
    assert "contextStrategy providerNative" in str(errors[0].to_data())
    [warning] = [w for w in result.warnings if w.kind == "contextStrategy"]
    assert warning.message.startswith("contextStrategy providerNative failed, the run goes on uncompacted:")


async def test_a_before_compaction_hook_vetoes_it(tmp_path: Path) -> None:
    transport = script()
    runtime = runtime_for(tmp_path, transport, [])
    seen: list[str] = []

    async def veto(ctx: Any) -> Block:
        seen.append(ctx.strategy)
        return Block("not now")

    runtime.hooks.before_compaction(veto)
    result = await runtime.run_agent(agent(tmp_path))
    assert seen == ["providerNative"]
    assert transport.paths() == ["/v1/responses", "/v1/responses"]
    assert result.instance.compactions == []


@pytest.mark.parametrize("options", [{"api": "chat"}], ids=["chat-completions"])
async def test_a_provider_that_cannot_compact_is_skipped_with_one_warning(
    tmp_path: Path, options: dict[str, Any]
) -> None:
    chat = [
        {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 1764967900,
            "model": "gpt-5.4",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": args}}
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 20, "total_tokens": tokens + 20},
        }
        for n, name, args, tokens in [
            (1, "echo", '{"text": "a"}', 1200),
            (2, "echo", '{"text": "b"}', 1300),
            (3, "task_complete", '{"result": "done", "summary": "did it"}', 1400),
        ]
    ]
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.path)
        return httpx.Response(200, json=chat.pop(0))

    runtime = onellm.Runtime(capabilities=onellm.Capabilities.files(tmp_path), environ={})
    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    runtime.providers.set("openai", OpenAIProvider(api_key="sk-test", http_client=client, **options))
    for fn in tool_functions([]):
        runtime.tools.add(fn)
    result = await runtime.run_agent(agent(tmp_path))
    assert sent == ["/v1/chat/completions"] * 3
    assert result.instance.compactions == []
    assert [w.message for w in result.warnings if w.kind == "contextStrategy"] == [
        "contextStrategy providerNative: the openai provider cannot compact a conversation; the run goes on uncompacted"
    ]
