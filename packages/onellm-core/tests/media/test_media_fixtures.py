"""Every media fixture through the runtime's verbs, whole and (where the case is a stream) in chunks of every size
tried: the request sent (JSON body or multipart parts), the result decoded, and the cost lines priced from the
shipped catalog, all compared whole."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from onellm.messages import AssetPart
from onellm.providers._media import AudioChunk, ImagePartial, TranscriptDelta

from ._cases import (
    Recorder,
    case_id,
    cases,
    check_request,
    cost_data,
    load,
    runtime_for,
    usage_data,
    warning_names,
)

pytestmark = pytest.mark.anyio

WHOLE = [p for p in cases("openai-media", "gemini-media") if not load(p)["call"].startswith("stream_")]
STREAMED = [p for p in cases("openai-media", "gemini-media") if load(p)["call"].startswith("stream_")]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def summary(call: str, result: Any, events: list[Any]) -> dict[str, Any]:
    """What a result says, in the fixtures' `expected` shape."""
    out: dict[str, Any] = {}
    if events:
        shown: list[dict[str, Any]] = []
        for event in events:
            if isinstance(event, ImagePartial):
                shown.append({"partial": event.index, "base64": _b64(event.image.data)})
            elif isinstance(event, AudioChunk):
                shown.append({"audio": _b64(event.data)})
            elif isinstance(event, TranscriptDelta):
                shown.append({"text": event.text})
        out["events"] = shown
    if call.endswith("image"):
        out["images"] = [{"contentType": i.content_type, "base64": _b64(i.data)} for i in result.images]
        if result.text is not None:
            out["text"] = result.text
    elif call in ("synthesize", "stream_speech"):
        out["audio"] = {"contentType": result.content_type, "base64": _b64(result.data)}
    elif call.endswith("transcription") or call == "transcribe":
        out["text"] = result.text
        if result.language is not None:
            out["language"] = result.language
        if result.duration is not None:
            out["duration"] = str(result.duration)
        if result.words:
            out["words"] = len(result.words)
    if call == "moderate":
        out["flagged"] = result.flagged
        out["verdicts"] = [
            {
                "input": v.input_index,
                "flagged": v.flagged,
                "categories": v.flagged_categories,
                "violence": v.scores["violence"],
            }
            for v in result.verdicts
        ]
    else:
        out["usage"] = usage_data(result.usage)
    out["warnings"] = warning_names(result.warnings)
    out["costLines"], out["total"] = cost_data(result.cost)
    return out


def expected_of(case: dict[str, Any]) -> dict[str, Any]:
    expected = dict(case["expected"])
    expected.pop("note", None)
    if "imageCount" in expected:
        expected.pop("imageCount")
    return expected


async def run_whole(case: dict[str, Any], recorder: Recorder) -> Any:
    rt, client = runtime_for(recorder)
    args = dict(case["request"])
    model = case["model"]
    call = case["call"]
    try:
        from ._cases import arguments

        kwargs = arguments(args)
        if call == "generate_image":
            return await rt.generate_image(model, kwargs.pop("prompt"), **kwargs)
        if call == "synthesize":
            return await rt.speak(model, kwargs.pop("text"), **kwargs)
        if call == "transcribe":
            return await rt.transcribe(model, kwargs.pop("audio"), **kwargs)
        if call == "moderate":
            return await rt.moderate(model, kwargs.pop("texts", ()), **kwargs)
        raise AssertionError(call)
    finally:
        await client.aclose()


@pytest.mark.parametrize("path", WHOLE, ids=case_id)
async def test_whole_call(path: Path) -> None:
    case = load(path)
    recorder = Recorder(case.get("responses") or [case["response"]])
    result = await run_whole(case, recorder)
    expected = case["expectedRequest"]
    assert len(recorder.requests) == expected.get("calls", 1)
    for request in recorder.requests:
        check_request(request, expected)
    got = summary(case["call"], result, [])
    want = expected_of(case)
    if "imageCount" in case["expected"]:
        assert len(got.pop("images")) == case["expected"]["imageCount"]
    assert got == want


@pytest.mark.parametrize("size", [None, 1, 13, 200])
@pytest.mark.parametrize("path", STREAMED, ids=case_id)
async def test_streamed_call(path: Path, size: int | None) -> None:
    case = load(path)
    recorder = Recorder([case["response"]], size)
    rt, client = runtime_for(recorder)
    from ._cases import arguments

    kwargs = arguments(dict(case["request"]))
    model = case["model"]
    call = case["call"]
    try:
        if call == "stream_image":
            stream: Any = rt.stream_image(model, kwargs.pop("prompt"), **kwargs)
        elif call == "stream_speech":
            stream = rt.stream_speech(model, kwargs.pop("text"), **kwargs)
        else:
            stream = rt.stream_transcription(model, kwargs.pop("audio"), **kwargs)
        async with stream:
            events = [event async for event in stream]
            result = await stream.result()
    finally:
        await client.aclose()
    assert len(recorder.requests) == 1
    check_request(recorder.requests[0], case["expectedRequest"], streamed=True)
    assert summary(call, result, events) == expected_of(case)


@pytest.mark.parametrize("path", STREAMED, ids=case_id)
async def test_stream_result_alone_equals_the_events_path(path: Path) -> None:
    """`result()` without iterating reads the stream to its end and gives the same result."""
    case = load(path)
    recorder = Recorder([case["response"]], 7)
    rt, client = runtime_for(recorder)
    from ._cases import arguments

    kwargs = arguments(dict(case["request"]))
    call = case["call"]
    try:
        method = {"stream_image": rt.stream_image, "stream_speech": rt.stream_speech}.get(call, rt.stream_transcription)
        first = next(iter(kwargs))
        stream = method(case["model"], kwargs.pop(first), **kwargs)
        result = await stream.result()
    finally:
        await client.aclose()
    got = summary(call, result, [])
    want = expected_of(case)
    want.pop("events")
    assert got == want


async def test_speech_result_is_an_asset_part() -> None:
    case = load(next(p for p in WHOLE if p.parent.name == "speech-tts-1"))
    result = await run_whole(case, Recorder([case["response"]]))
    part = result.part()
    assert part == AssetPart(storage="inline", content_type="audio/mpeg", size=len(result.data), data=result.data)
