"""One conversation through the three codecs: Anthropic answers with thinking, text and a tool call; OpenAI
(Responses) continues with reasoning, text and a tool call; Gemini continues with a thought and text; Anthropic
closes. After every answer the conversation is saved and reloaded, and each provider is sent every part it can
take: text and tool calls with their results from everyone, reasoning only from itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import httpx
import msgspec

from onellm.messages import Message, TextPart, ToolCall
from onellm.providers._request import ChatRequest, ChatResponse, ToolDefinition
from onellm.providers.anthropic import AnthropicProvider
from onellm.providers.gemini import GeminiProvider
from onellm.providers.openai import OpenAIProvider

WEATHER = ToolDefinition(
    "get_weather",
    "Current weather of a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
THINKING = {"type": "thinking", "thinking": "I need the weather first.", "signature": "EqQBCgIYAhIM1gbc..."}

ANTHROPIC_FIRST = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-5-5",
    "content": [
        THINKING,
        {"type": "text", "text": "Let me look that up."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 50, "output_tokens": 40},
}
OPENAI_REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Compare with Rome."}],
    "encrypted_content": "gAAAAB...",
}
OPENAI_SECOND = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "model": "gpt-5.4",
    "output": [
        OPENAI_REASONING,
        {
            "type": "message",
            "id": "msg_2",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Paris is rainy; checking Rome.", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_2",
            "name": "get_weather",
            "arguments": '{"city":"Rome"}',
            "status": "completed",
        },
    ],
    "usage": {"input_tokens": 80, "output_tokens": 30, "total_tokens": 110},
}
GEMINI_THIRD = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Both cities compared.", "thought": True},
                    {"text": "Take an umbrella in Paris; Rome is sunny.", "thoughtSignature": "CiQBcsjafA=="},
                ],
            },
            "finishReason": "STOP",
        }
    ],
    "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 12, "thoughtsTokenCount": 6},
    "modelVersion": "gemini-3-flash",
    "responseId": "resp_gemini_1",
}
ANTHROPIC_LAST = {
    "id": "msg_4",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-5-5",
    "content": [{"type": "text", "text": "You are welcome."}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 200, "output_tokens": 5},
}


def client(answer: dict[str, Any], sent: list[Any]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(msgspec.json.decode(request.content))
        return httpx.Response(200, json=answer)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def turn(make: Callable[[httpx.AsyncClient], Any], model: str, history: list[Message], answer: dict[str, Any]) -> Any:
    sent: list[Any] = []
    provider = make(client(answer, sent))
    response: ChatResponse = anyio.run(provider.send, ChatRequest(model, history, tools=[WEATHER]))
    history.append(reload(response.message))
    return sent[0]


def reload(message: Message) -> Message:
    return Message.from_data(msgspec.json.decode(msgspec.json.encode(message.to_data())))


def test_one_conversation_through_anthropic_openai_and_gemini_keeps_every_part() -> None:
    history = [Message(user=[TextPart("Weather in Paris and Rome?")])]

    def anthropic(http: httpx.AsyncClient) -> AnthropicProvider:
        return AnthropicProvider(api_key="k", max_tokens=1000, http_client=http)

    turn(anthropic, "claude-sonnet-5-5", history, ANTHROPIC_FIRST)
    first = history[1]
    assert [type(p).__name__ for p in first.entries()] == ["ReasoningPart", "TextPart", "ToolCall"]
    assert first.reasoning[0].data == THINKING
    first.tool_calls[0].result = [TextPart("15 degrees, rain")]
    history.append(Message(user=[TextPart("And Rome?")]))

    body = turn(lambda http: OpenAIProvider(api_key="k", http_client=http), "gpt-5.4", history, OPENAI_SECOND)
    kinds = [item.get("type", item.get("role")) for item in body["input"]]
    assert kinds == ["user", "assistant", "function_call", "function_call_output", "user"]  # no Anthropic thinking
    assert body["input"][3]["output"] == "15 degrees, rain"
    second = history[3]
    assert [type(p).__name__ for p in second.entries()] == ["ReasoningPart", "TextPart", "ToolCall"]
    second.tool_calls[0].result = [TextPart("25 degrees, sun")]
    history.append(Message(user=[TextPart("Summarize.")]))

    body = turn(lambda http: GeminiProvider(api_key="k", http_client=http), "gemini-3-flash", history, GEMINI_THIRD)
    wire = msgspec.json.encode(body).decode()
    for text in ("Let me look that up.", "Paris is rainy; checking Rome.", "15 degrees, rain", "25 degrees, sun"):
        assert text in wire
    assert "I need the weather first." not in wire  # Anthropic thinking stays with Anthropic
    assert wire.count('"functionCall"') == 2
    assert wire.count('"functionResponse"') == 2
    third = history[5]
    assert "Take an umbrella in Paris" in third.text
    assert [(p.provider, p.text) for p in third.reasoning] == [("gemini", "Both cities compared."), ("gemini", "")]
    history.append(Message(user=[TextPart("Thanks!")]))

    body = turn(anthropic, "claude-sonnet-5-5", history, ANTHROPIC_LAST)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert body["messages"][1]["content"][0] == THINKING  # its own thinking, verbatim
    assert body["messages"][1]["content"][2] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "get_weather",
        "input": {"city": "Paris"},
    }
    assert body["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "15 degrees, rain",
    }
    openai_turn = body["messages"][3]["content"]
    assert openai_turn == [
        {"type": "text", "text": "Paris is rainy; checking Rome."},
        {"type": "tool_use", "id": "call_2", "name": "get_weather", "input": {"city": "Rome"}},
    ]
    assert body["messages"][4]["content"][0]["tool_use_id"] == "call_2"
    assert body["messages"][5]["content"] == "Take an umbrella in Paris; Rome is sunny."
    assert history[-1].text == "You are welcome."

    # nothing was lost on the way: every assistant part and call is still in the saved conversation
    counts = [(len(m.assistant), len(m.tool_calls)) for m in history if m.assistant or m.tool_calls]
    assert counts == [(2, 1), (2, 1), (3, 0), (1, 0)]
    assert all(isinstance(call, ToolCall) and call.result for m in history for call in m.tool_calls)
