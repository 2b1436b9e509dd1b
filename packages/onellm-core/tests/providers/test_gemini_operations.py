"""Gemini token counting, embeddings and batches from their fixtures; keys, base URL and per-model settings; the
replay of an answer into the next request; grounding offsets over any multi-byte text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import onellm.errors
from onellm.catalog import Catalog, ModelProfile
from onellm.clock import FakeClock
from onellm.messages import Message, TextPart
from onellm.providers._protocols import EmbeddingRequest
from onellm.providers._request import ChatRequest, ReasoningOptions
from onellm.providers.gemini import GeminiProvider, decode_generate_content
from onellm.providers.gemini._request import encode_request

from ._fixtures import KEY, PROVIDERS, UPDATE, Recorder, chat_request, decode, load, save, whole_responses

GEMINI = PROVIDERS / "gemini"


def provider(case: dict[str, Any], recorder: Recorder, **options: Any) -> GeminiProvider:
    return GeminiProvider(
        base_url=case["provider"]["baseUrl"],
        api_key=KEY,
        properties=case["provider"].get("properties", {}),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(recorder)),
        clock=FakeClock(),
        **options,
    )


def check(recorder: Recorder, path: Path, case: dict[str, Any]) -> None:
    problems = recorder.check_last(streamed=False)
    if UPDATE:
        save(path, case)
    assert problems == [], "\n".join(problems)


def test_count_tokens_sends_the_whole_request() -> None:
    path = GEMINI / "count-tokens" / "case.json"
    case = load(path)
    recorder = Recorder(case, whole_responses(case))
    count = anyio.run(provider(case, recorder).count_tokens, chat_request(case["request"]))
    assert count == case["expectedCount"]
    check(recorder, path, case)
    body = decode(recorder.requests[-1].content)
    assert body["generateContentRequest"]["model"] == "models/gemini-flash-latest"


def test_count_tokens_without_a_total_is_malformed() -> None:
    case = load(GEMINI / "count-tokens" / "case.json")
    recorder = Recorder(case, lambda: httpx.Response(200, json={"totalTokens": "many"}))
    with pytest.raises(onellm.errors.MalformedResponseError, match="totalTokens"):
        anyio.run(provider(case, recorder).count_tokens, chat_request(case["request"]))


def test_embeddings_come_back_in_input_order() -> None:
    path = GEMINI / "embeddings" / "case.json"
    case = load(path)
    recorder = Recorder(case, whole_responses(case))
    request = EmbeddingRequest(
        model=case["request"]["model"], inputs=case["request"]["inputs"], dimensions=case["request"]["dimensions"]
    )
    result = anyio.run(provider(case, recorder).embed, request)
    assert result.vectors == [[float(x) for x in v] for v in case["expectedVectors"]]
    check(recorder, path, case)


def test_embeddings_of_the_wrong_count_are_malformed() -> None:
    case = load(GEMINI / "embeddings" / "case.json")
    recorder = Recorder(case, lambda: httpx.Response(200, json={"embeddings": [{"values": [1.0]}]}))
    request = EmbeddingRequest(model="gemini-embedding-2", inputs=["a", "b"])
    with pytest.raises(onellm.errors.MalformedResponseError, match="asked for 2 embeddings, got 1"):
        anyio.run(provider(case, recorder).embed, request)


def test_batch_submits_inline_requests_and_reads_results_in_order() -> None:
    path = GEMINI / "batch" / "case.json"
    case = load(path)
    recorder = Recorder(case, whole_responses(case))
    gemini = provider(case, recorder)
    requests = [chat_request(r) for r in case["request"]["requests"]]

    async def go() -> tuple[str, list[Any]]:
        batch_id = await gemini.submit_batch(requests)
        check(recorder, path, case)
        return batch_id, await gemini.batch_results(batch_id)

    batch_id, results = anyio.run(go)
    assert batch_id == case["expectedBatchId"]
    assert recorder.requests[-1].method == "GET"
    assert recorder.requests[-1].url.path == case["expectedGetPath"]
    assert [[p.text for p in r.message.assistant if isinstance(p, TextPart)] for r in results] == [["Paris."], []]
    assert results[1].message.tool_calls[0].inputs == {"city": "Rome"}
    assert results[1].message.tool_calls[0].id == "gemini-call-resp-b-2-0"
    body = decode(recorder.requests[0].content)
    assert [r["metadata"]["key"] for r in body["batch"]["inputConfig"]["requests"]["requests"]] == [
        "request-0",
        "request-1",
    ]


def test_a_batch_of_two_models_is_refused_before_sending() -> None:
    case = load(GEMINI / "batch" / "case.json")
    recorder = Recorder(case, whole_responses(case))
    requests = [chat_request(r) for r in case["request"]["requests"]]
    requests[1].model = "gemini-pro-latest"
    with pytest.raises(onellm.errors.UnsupportedParameterError, match=r"requests\[1\]"):
        anyio.run(provider(case, recorder).submit_batch, requests)
    assert recorder.requests == []


@pytest.mark.parametrize(
    ("operation", "message"),
    [
        ({"name": "batches/1", "done": False, "metadata": {"state": "BATCH_STATE_RUNNING"}}, "BATCH_STATE_RUNNING"),
        (
            {
                "name": "batches/1",
                "done": True,
                "metadata": {"state": "BATCH_STATE_SUCCEEDED"},
                "response": {"inlinedResponses": {"inlinedResponses": [{"error": {"code": 400, "message": "bad"}}]}},
            },
            "request 0 failed: bad",
        ),
        ({"name": "batches/1", "done": True, "error": {"code": 13, "message": "internal"}}, "failed: internal"),
    ],
)
def test_an_unfinished_or_failed_batch_is_an_error(operation: dict[str, Any], message: str) -> None:
    case = load(GEMINI / "batch" / "case.json")
    recorder = Recorder(case, lambda: httpx.Response(200, json=operation))
    with pytest.raises(onellm.errors.ProviderError, match=message):
        anyio.run(provider(case, recorder).batch_results, "batches/1")


# -- keys, addresses, settings -------------------------------------------------------------------------------------


def _sent_headers(gemini: GeminiProvider) -> httpx.Request:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, json={"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}
        )

    gemini._transport = type(gemini._transport)(httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    request = ChatRequest(model="gemini-flash", messages=[Message.from_data({"user": [{"text": "hi"}]})])
    anyio.run(gemini.send, request)
    return seen[0]


def test_the_key_comes_from_gemini_api_key_then_google_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
    sent = _sent_headers(GeminiProvider())
    assert sent.headers["x-goog-api-key"] == "google-key"
    assert "authorization" not in sent.headers
    assert "key" not in sent.url.params
    assert str(sent.url) == "https://generativelanguage.googleapis.com/v1beta/models/gemini-flash:generateContent"
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    assert _sent_headers(GeminiProvider()).headers["x-goog-api-key"] == "gemini-key"


def test_the_base_url_variable_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9/proxy/v1beta/")
    sent = _sent_headers(GeminiProvider(api_key="k"))
    assert str(sent.url) == "http://127.0.0.1:9/proxy/v1beta/models/gemini-flash:generateContent"


def _for(model: str, profile: ModelProfile | None = None) -> ChatRequest:
    return ChatRequest(model=model, messages=[], profile=profile)


def test_settings_come_from_the_profile_unless_given() -> None:
    flash = Catalog.shipped().resolve("gemini-flash")
    gemini = GeminiProvider(api_key="k")
    assert gemini._settings(_for(flash.name, flash.profile)) == ("responseJsonSchema", "auto")
    forced = GeminiProvider(api_key="k", schema_form="responseSchema", thinking="levels")
    assert forced._settings(_for(flash.name, flash.profile)) == ("responseSchema", "levels")
    assert gemini._settings(_for("not-a-listed-model-at-all")) == ("responseJsonSchema", "auto")
    with pytest.raises(ValueError, match="schema_form"):
        GeminiProvider(api_key="k", schema_form="openapi")


def test_a_catalog_entry_chooses_the_schema_form_and_thinking_style_through_its_profile() -> None:
    catalog = Catalog.shipped().with_overrides(
        {
            "name": "gemini",
            "models": [
                {
                    "name": "gemini-budget-x",
                    "kind": "chat",
                    "thinking": {"budget": True, "minBudget": 0},
                    "properties": {"schemaForm": "responseSchema"},
                },
                {"name": "gemini-levels-x", "kind": "chat", "thinking": {"efforts": ["low", "high"]}},
            ],
        }
    )
    budget, levels = catalog.resolve("gemini-budget-x").profile, catalog.resolve("gemini-levels-x").profile
    assert (budget.schema_form, budget.thinking, levels.schema_form, levels.thinking) == (
        "responseSchema",
        "budget",
        None,
        "levels",
    )
    gemini = GeminiProvider(api_key="k")
    assert gemini._settings(_for("gemini-budget-x", budget)) == ("responseSchema", "budget")
    assert gemini._settings(_for("gemini-levels-x", levels)) == ("responseJsonSchema", "levels")
    assert gemini._settings(_for("gemini-budget-x")) == ("responseJsonSchema", "auto")  # no profile: the defaults
    request = ChatRequest(
        model="gemini-levels-x", messages=[], reasoning=ReasoningOptions(effort="high"), profile=levels
    )
    assert gemini._body(request)[0]["generationConfig"] == {"thinkingConfig": {"thinkingLevel": "HIGH"}}
    request = ChatRequest(
        model="gemini-budget-x", messages=[], reasoning=ReasoningOptions(effort="disabled"), profile=budget
    )
    assert gemini._body(request)[0]["generationConfig"] == {"thinkingConfig": {"thinkingBudget": 0}}


@pytest.mark.parametrize(
    ("style", "options", "expected", "warned"),
    [
        ("budget", ReasoningOptions(effort="disabled"), {"thinkingBudget": 0}, False),
        ("budget", ReasoningOptions(effort="dynamic"), {"thinkingBudget": -1}, False),
        (
            "budget",
            ReasoningOptions(budget_tokens=2048, summary="auto"),
            {"includeThoughts": True, "thinkingBudget": 2048},
            False,
        ),
        ("budget", ReasoningOptions(effort="high"), None, True),
        ("levels", ReasoningOptions(effort="low"), {"thinkingLevel": "LOW"}, False),
        ("levels", ReasoningOptions(effort="dynamic"), None, False),
        ("levels", ReasoningOptions(budget_tokens=512), None, True),
        ("auto", ReasoningOptions(effort="medium"), {"thinkingLevel": "MEDIUM"}, False),
        ("auto", ReasoningOptions(budget_tokens=100), {"thinkingBudget": 100}, False),
    ],
)
def test_effort_mapping(style: str, options: ReasoningOptions, expected: dict[str, Any] | None, warned: bool) -> None:
    request = ChatRequest(model="m", messages=[], reasoning=options)
    body, warnings = encode_request(request, thinking=style)
    assert body.get("generationConfig", {}).get("thinkingConfig") == expected
    assert bool(warnings) == warned
    assert request.warnings == []


def test_an_unknown_hosted_tool_is_refused() -> None:
    from onellm.providers._request import HostedToolDefinition

    request = ChatRequest(model="m", messages=[], hosted_tools=[HostedToolDefinition("image_generation")])
    with pytest.raises(onellm.errors.UnsupportedParameterError, match="image_generation"):
        encode_request(request)


# -- replay --------------------------------------------------------------------------------------------------------


def test_an_answer_replays_as_the_model_content_it_came_from() -> None:
    """Decode an answer into the message model and send it back: the model content has the same parts, signatures
    on the same parts, hosted parts verbatim, and no made-up call id."""
    parts: list[dict[str, Any]] = [
        {"text": "Thinking it over.", "thought": True, "thoughtSignature": "dGhvdWdodA=="},
        {"text": "Let me run code.", "thoughtSignature": "dGV4dA=="},
        {"executableCode": {"language": "PYTHON", "code": "print(6*7)"}, "thoughtSignature": "Y29kZQ=="},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "42\n"}},
        {"functionCall": {"name": "save", "args": {"value": 42}}, "thoughtSignature": "Y2FsbA=="},
        {"functionCall": {"id": "given-id", "name": "save", "args": {"value": 43}}},
        {"text": "Done."},
        {"text": "", "thoughtSignature": "ZW5k"},
    ]
    answer = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "responseId": "r9",
    }
    message = decode_generate_content(msgspec.json.encode(answer)).message
    assert [c.id for c in message.tool_calls] == ["gemini-call-r9-0", "given-id"]
    round_tripped = Message.from_data(message.to_data())
    body, _ = encode_request(ChatRequest(model="m", messages=[round_tripped]))
    assert body["contents"] == [{"role": "model", "parts": parts}]


def test_results_go_back_in_call_order_with_errors_marked() -> None:
    data = {
        "user": [{"text": "go"}],
        "toolCalls": [
            {"id": "gemini-call-r-0", "tool": "a", "inputs": {}, "result": [{"text": "one"}]},
            {"id": "gemini-call-r-1", "tool": "b", "inputs": {"x": 1}, "result": [{"text": "boom"}], "isError": True},
        ],
    }
    body, _ = encode_request(ChatRequest(model="m", messages=[Message.from_data(data)]))
    assert body["contents"][2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "a", "response": {"output": "one"}}},
            {"functionResponse": {"name": "b", "response": {"error": "boom"}}},
        ],
    }


def test_an_image_in_a_tool_result_goes_as_a_function_response_part() -> None:
    data = {
        "toolCalls": [
            {
                "id": "fc-9",
                "tool": "screenshot",
                "inputs": {},
                "result": [{"text": "the screen"}, {"image": {"data": "iVBORw0K", "mimeType": "image/png"}}],
            }
        ],
    }
    body, _ = encode_request(ChatRequest(model="m", messages=[Message.from_data(data)]))
    assert body["contents"][1]["parts"] == [
        {
            "functionResponse": {
                "name": "screenshot",
                "response": {"output": "the screen"},
                "parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBORw0K"}}],
                "id": "fc-9",
            }
        }
    ]
    assert _proto_problems(body) == []


def _proto_problems(body: dict[str, Any]) -> list[str]:
    from .test_gemini_request_schema import PACKAGE, unknown_fields

    problems: list[str] = unknown_fields(body, f"{PACKAGE}.GenerateContentRequest")
    return problems


def test_other_providers_reasoning_is_not_sent() -> None:
    data = {
        "reasoning": [{"reasoning": "hidden", "provider": "anthropic", "data": {"signature": "x"}}],
        "assistant": [{"text": "hi"}],
    }
    body, _ = encode_request(ChatRequest(model="m", messages=[Message.from_data(data)]))
    assert body["contents"] == [{"role": "model", "parts": [{"text": "hi"}]}]


# -- grounding offsets ---------------------------------------------------------------------------------------------


_TEXT = st.text(alphabet=st.sampled_from(["a", "ß", "é", "東", "🏆", " ", "ж", "\u0301"]), min_size=1, max_size=12)


@settings(max_examples=120, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=4), st.data())
def test_grounding_byte_offsets_become_character_positions_per_block(blocks: list[str], data: st.DataObject) -> None:
    whole = "".join(blocks)
    block = data.draw(st.integers(0, len(blocks) - 1))
    text = blocks[block]
    a = data.draw(st.integers(0, len(text) - 1))
    b = data.draw(st.integers(a + 1, len(text)))
    before = "".join(blocks[:block])
    start = len((before + text[:a]).encode())
    end = len((before + text[:b]).encode())
    # each block after the first starts a new text block (a signature part separates them)
    parts = [{"text": t, **({"thoughtSignature": "c2ln"} if i else {})} for i, t in enumerate(blocks)]
    grounding = {
        "groundingChunks": [{"web": {"uri": "https://example.com", "title": "ex"}}],
        "groundingSupports": [{"segment": {"startIndex": start, "endIndex": end}, "groundingChunkIndices": [0]}],
    }
    answer = {"candidates": [{"content": {"parts": parts}, "finishReason": "STOP", "groundingMetadata": grounding}]}
    message = decode_generate_content(msgspec.json.encode(answer)).message
    texts = [p for p in message.assistant if isinstance(p, TextPart)]
    assert "".join(t.text for t in texts) == whole
    cited = [(t, a) for t in texts for a in t.annotations]
    assert len(cited) == 1
    holder, annotation = cited[0]
    assert holder.text == text
    assert holder.text[annotation.start_index : annotation.end_index] == text[a:b]


def test_a_grounding_support_naming_a_missing_chunk_is_malformed() -> None:
    answer = {
        "candidates": [
            {
                "content": {"parts": [{"text": "x"}]},
                "finishReason": "STOP",
                "groundingMetadata": {
                    "groundingChunks": [],
                    "groundingSupports": [{"segment": {"endIndex": 1}, "groundingChunkIndices": [3]}],
                },
            }
        ]
    }
    with pytest.raises(onellm.errors.MalformedResponseError, match="chunk 3"):
        decode_generate_content(msgspec.json.encode(answer))


# -- stream = whole, for any split of an answer into chunks ----------------------------------------------------------

_PART = st.one_of(
    st.builds(lambda t: {"text": t}, st.text(min_size=1, max_size=8)),
    st.builds(lambda t: {"text": t, "thoughtSignature": "c2ln"}, st.text(min_size=1, max_size=8)),
    st.builds(lambda t: {"text": t, "thought": True}, st.text(min_size=1, max_size=8)),
    st.builds(lambda n: {"functionCall": {"name": "f", "args": {"n": n}}}, st.integers(0, 9)),
    st.just({"functionCall": {"name": "g", "args": {}}, "thoughtSignature": "Y2FsbA=="}),
    st.just({"executableCode": {"language": "PYTHON", "code": "print(1)"}}),
    st.just({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}}),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_PART, min_size=1, max_size=8), st.data())
def test_any_split_of_an_answer_into_chunks_builds_the_whole_message(
    parts: list[dict[str, Any]], data: st.DataObject
) -> None:
    """Split text parts into pieces (a signature stays on the first piece) and the parts into chunks: the stream
    decoder builds the message the whole answer builds."""
    pieces: list[dict[str, Any]] = []
    for part in parts:
        text = part.get("text")
        if isinstance(text, str) and len(text) > 1:
            cut = data.draw(st.integers(1, len(text) - 1))
            pieces.append({**part, "text": text[:cut]})
            pieces.append({k: v for k, v in part.items() if k != "thoughtSignature"} | {"text": text[cut:]})
        else:
            pieces.append(part)
    bounds = sorted(set(data.draw(st.lists(st.integers(1, len(pieces)), max_size=4))) | {len(pieces)})
    chunks: list[dict[str, Any]] = []
    start = 0
    for end in bounds:
        if end > start:
            chunks.append(
                {"candidates": [{"content": {"role": "model", "parts": pieces[start:end]}}], "responseId": "r"}
            )
            start = end
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    chunks[-1]["usageMetadata"] = {"promptTokenCount": 3, "candidatesTokenCount": 4}
    whole = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4},
        "responseId": "r",
    }
    from onellm.messages._events import MessageAccumulator
    from onellm.providers.gemini._response import ResponseDecoder

    decoder = ResponseDecoder()
    accumulator = MessageAccumulator()
    for chunk in chunks:
        for event in decoder.feed(msgspec.json.encode(chunk)):
            accumulator.add(event)
    for event in decoder.finish(require_finish_reason=True):
        accumulator.add(event)
    assert accumulator.message().to_data() == decode_generate_content(msgspec.json.encode(whole)).message.to_data()
