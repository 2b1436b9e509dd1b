from __future__ import annotations

import anyio
import pytest

from onellm.errors import ProviderError, RateLimitError
from onellm.messages import CallWarning, Message, TextPart, Usage
from onellm.messages._events import Done, MessageAccumulator, TextDelta, UsageEvent
from onellm.providers._protocols import EmbeddingRequest
from onellm.providers._request import ChatRequest, FinishReason
from onellm.providers._stream import collect
from onellm.testing import ScriptedProvider, ScriptedToolCall, ScriptStep

pytestmark = pytest.mark.anyio


def _request(text: str = "hi") -> ChatRequest:
    return ChatRequest(model="gpt-6-luna", messages=[Message(user=[TextPart(text)])])


async def test_whole_and_streamed_answers_build_equal_messages() -> None:
    steps = [
        ScriptStep.text_with_usage(["Green lights, ", "red build."], 10, 4),
        ScriptStep.calls(ScriptedToolCall("c1", "get_docket", {"caseNo": "24-1234"}), text="Looking.", input_tokens=3),
    ]
    whole = ScriptedProvider("openai").enqueue(*steps)
    streamed = ScriptedProvider("openai").enqueue(*steps)
    for _ in steps:
        answer = await whole.send(_request())
        acc = MessageAccumulator()
        async for event in streamed.stream(_request()):
            acc.add(event)
        assert acc.message() == answer.message
    whole.assert_complete()
    streamed.assert_complete()


@pytest.mark.parametrize(
    "step",
    [
        ScriptStep.text_with_usage(["Green lights, ", "", "red build."], 10, 4),
        ScriptStep.text("", ""),
        ScriptStep(),
        ScriptStep.calls(ScriptedToolCall("c1", "get_docket", {"caseNo": "24-1234"}), text="Looking.", input_tokens=3),
        ScriptStep.calls(ScriptedToolCall("c1", "a", "not json"), ScriptedToolCall("c2", "b", "[1]")),
        ScriptStep.calls(ScriptedToolCall("c1", "a", ""), ScriptedToolCall(None, "b", {"n": (1, 2)})),  # type: ignore[arg-type]
        ScriptStep(pieces=("x",), finish_reason="length", model="answering-model", usage=Usage(service_tier="flex")),
        ScriptStep(pieces=("x",), finish_reason="a reason of its own"),
    ],
)
async def test_a_whole_answer_is_the_response_its_events_make(step: ScriptStep) -> None:
    """`send` builds an answer without pauses whole; it equals the response the same step's events make."""
    warning = CallWarning(kind="parameter_stripped", message="temperature was not sent")
    request = ChatRequest(model="gpt-6-luna", messages=[Message(user=[TextPart("hi")])], warnings=[warning])
    whole = ScriptedProvider("openai").enqueue(step)
    streamed = ScriptedProvider("openai").enqueue(step)
    answer = await whole.send(request)
    events = await collect(streamed.stream(request), request.warnings)
    assert answer == events
    assert answer.message.to_data() == events.message.to_data()
    assert answer.usage is answer.message.usage
    assert answer.warnings == [warning]
    assert answer.warnings is not request.warnings


async def test_text_usage_and_finish() -> None:
    provider = ScriptedProvider("openai").enqueue(ScriptStep.text_with_usage("2, 3 and 5.", 13, 7))
    answer = await provider.send(_request("Name three primes."))
    assert answer.message.text == "2, 3 and 5."
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (13, 7)
    assert answer.finish_reason is FinishReason.STOP
    assert provider.requests[0].messages[0].user_text == "Name three primes."


async def test_tool_calls_parse_arguments() -> None:
    provider = ScriptedProvider().enqueue(ScriptStep.calls(ScriptedToolCall("c1", "get_docket", '{"caseNo":"1"}')))
    answer = await provider.send(_request())
    assert answer.finish_reason is FinishReason.TOOL_CALLS
    [call] = answer.message.tool_calls
    assert (call.id, call.tool, call.inputs) == ("c1", "get_docket", {"caseNo": "1"})


async def test_stream_events_in_order() -> None:
    provider = ScriptedProvider().enqueue(ScriptStep.text_with_usage(["a", "b"], 1, 2))
    events = [e async for e in provider.stream(_request())]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["a", "b"]
    assert isinstance(events[-2], UsageEvent)
    assert isinstance(events[-1], Done)


async def test_failure_after_pieces() -> None:
    provider = ScriptedProvider().enqueue(ScriptStep.failure(RateLimitError("slow down", provider="openai"), "par"))
    seen: list[str] = []

    async def read() -> None:
        async for event in provider.stream(_request()):
            if isinstance(event, TextDelta):
                seen.append(str(event.text))  # noqa: PERF401

    with pytest.raises(RateLimitError):
        await read()
    assert seen == ["par"]


async def test_empty_queue_is_a_provider_error() -> None:
    provider = ScriptedProvider("anthropic")
    with pytest.raises(ProviderError, match="no queued answer"):
        await provider.send(_request())


async def test_assert_complete_fails_on_unused_steps() -> None:
    provider = ScriptedProvider().enqueue_text("one", "two")
    await provider.send(_request())
    with pytest.raises(AssertionError, match="1 queued step"):
        provider.assert_complete()


async def test_pause_waits_for_event() -> None:
    gate = anyio.Event()
    provider = ScriptedProvider().enqueue(ScriptStep.paused("before ", event=gate, then=["after"]))
    pieces: list[str] = []

    async def read() -> None:
        async for event in provider.stream(_request()):
            if isinstance(event, TextDelta):
                pieces.append(str(event.text))  # noqa: PERF401

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        await anyio.wait_all_tasks_blocked()
        assert pieces == ["before "]
        gate.set()
    assert pieces == ["before ", "after"]


async def test_pause_forever_is_cancellable() -> None:
    provider = ScriptedProvider().enqueue(ScriptStep.paused("x"))
    with anyio.move_on_after(0.05) as scope:
        await provider.send(_request())
    assert scope.cancelled_caught


async def test_embeddings_scripted_and_default() -> None:
    provider = ScriptedProvider("openai").enqueue(ScriptStep.embedding([1.0, 0.0], [0.0, 1.0], input_tokens=6))
    scripted = await provider.embed(EmbeddingRequest(model="text-embedding-3-small", inputs=["a", "b"]))
    assert scripted.vectors == [[1.0, 0.0], [0.0, 1.0]]
    assert scripted.usage == Usage(model="text-embedding-3-small", input_tokens=6)
    default = await provider.embed(EmbeddingRequest(model="m", inputs=["reset my password"]))
    again = await provider.embed(EmbeddingRequest(model="m", inputs=["reset my password"]))
    assert default.vectors == again.vectors
    assert len(default.vectors[0]) == 8
    assert abs(sum(x * x for x in default.vectors[0]) - 1.0) < 1e-9
