"""The media codecs' own rules: WAV wrapping, multipart encoding of hostile names, UTF-16 counting, content sniffing,
which settings each model family takes, and the answers and streams that must fail rather than pass as a result."""

from __future__ import annotations

import base64
import io
import json
import wave
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

import httpx
import pytest

from onellm.errors import (
    AuthError,
    ContentFilterError,
    MalformedResponseError,
    ProviderError,
    RateLimitError,
    RefusedError,
    UnsupportedParameterError,
)
from onellm.providers._media import (
    ImageInput,
    ImageRequest,
    ModerationRequest,
    SpeakerVoice,
    SpeechRequest,
    TranscriptionRequest,
    audio_file_name,
    encode_multipart,
    pcm_to_wav,
    sniff_audio_type,
    sniff_image_type,
    utf16_length,
)
from onellm.providers.gemini import GeminiProvider
from onellm.providers.gemini._media import encode_speech_body
from onellm.providers.openai import OpenAIProvider
from onellm.providers.openai._media import decode_images, decode_moderation, encode_image_request

from ._cases import KEY, Chunks, parse_multipart

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\nbody"


def _json(status: int, body: Any) -> httpx.Response:
    return httpx.Response(status, json=body)


def _openai(handler: Any) -> tuple[OpenAIProvider, httpx.AsyncClient]:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return OpenAIProvider(api_key=KEY, http_client=client, retry=None), client


def _gemini(handler: Any) -> tuple[GeminiProvider, httpx.AsyncClient]:
    from onellm.providers import RetryPolicy

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return GeminiProvider(api_key=KEY, http_client=client, retry=RetryPolicy(max_retries=0)), client


# -- helpers ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("pcm", "kind", "rate"), [(b"\x01\x00\x02\x00", "audio/L16;codec=pcm;rate=16000", 16000)])
def test_pcm_is_wrapped_as_a_wav_file_that_reads_back(pcm: bytes, kind: str, rate: int) -> None:
    data = pcm_to_wav(pcm * 500, kind)
    with wave.open(io.BytesIO(data)) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate(), wav.getnframes()) == (1, 2, rate, 1000)
        assert wav.readframes(1000) == pcm * 500


def test_wav_defaults_and_odd_lengths() -> None:
    data = pcm_to_wav(b"\x01\x02\x03", "audio/L16;codec=pcm;rate=24000;channels=2")
    assert data[22:24] == b"\x02\x00"
    assert data[24:28] == (24000).to_bytes(4, "little")
    assert data[40:44] == (3).to_bytes(4, "little")  # the data chunk counts its bytes, not the pad
    assert len(data) == 44 + 4
    assert data.endswith(b"\x03\x00")
    with pytest.raises(ValueError, match="rate 0"):
        pcm_to_wav(b"", "audio/L16;rate=0")


def test_utf16_length_counts_astral_characters_twice() -> None:
    assert [utf16_length(t) for t in ("", "abc", "héllo", "👋", "a𝄞b", "日本")] == [0, 3, 5, 2, 4, 2]


def test_sniffing() -> None:
    assert [sniff_image_type(b) for b in (PNG, b"\xff\xd8\xff\xdb", b"GIF89a..", b"RIFF\0\0\0\0WEBPVP8 ", b"text")] == [
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        None,
    ]
    audio = [
        b"RIFF\0\0\0\0WAVEfmt ",
        b"ID3\x04",
        b"\xff\xfb\x90",
        b"OggS",
        b"fLaC",
        b"\0\0\0\x18ftypM4A ",
        b"\x1aE\xdf\xa3",
    ]
    assert [sniff_audio_type(b) for b in audio] == [
        "audio/wav",
        "audio/mpeg",
        "audio/mpeg",
        "audio/ogg",
        "audio/flac",
        "audio/mp4",
        "audio/webm",
    ]
    assert sniff_audio_type(b"%PDF-1.7") is None
    assert audio_file_name("C:\\clips\\a.mp3", "audio/mpeg") == "a.mp3"
    assert audio_file_name(None, "audio/x-m4a") == "audio.m4a"
    assert audio_file_name("", "application/x-unknown") == "audio.bin"


def test_multipart_escapes_hostile_names_so_no_header_is_injected() -> None:
    hostile = 'evil".mp3\r\nContent-Type: text/html\r\n\r\n<script>'
    body, content_type = encode_multipart(
        [("prompt", "line one\r\nline two --not-a-boundary"), ('x"y', "v")],
        [("file", hostile, "audio/mpeg\r\nX-Injected: 1", b"\r\n--" + b"a" * 40 + b"\r\n")],
    )
    parts = parse_multipart(body, content_type)
    assert parts[0] == {"name": "prompt", "value": "line one\r\nline two --not-a-boundary"}
    assert parts[1] == {"name": "x%22y", "value": "v"}
    assert parts[2]["filename"] == "evil%22.mp3%0D%0AContent-Type: text/html%0D%0A%0D%0A<script>"
    assert parts[2]["contentType"] == "audio/mpegX-Injected: 1"
    assert base64.b64decode(parts[2]["base64"]) == b"\r\n--" + b"a" * 40 + b"\r\n"
    # the standard library's MIME parser reads the same three parts
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    assert [p.get_param("name", header="content-disposition") for p in message.iter_parts()] == [
        "prompt",
        "x%22y",
        "file",
    ]


def test_multipart_boundary_never_occurs_in_the_content(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = iter([b"\x00" * 16, b"\x01" * 16])
    monkeypatch.setattr("onellm.providers._media.os.urandom", lambda n: next(draws))
    taken = ("onellm-" + "00" * 16).encode()
    body, content_type = encode_multipart([], [("file", "a.wav", "audio/wav", b"x" + taken + b"y")])
    assert content_type.endswith("01" * 16)
    assert parse_multipart(body, content_type)[0]["base64"] == base64.b64encode(b"x" + taken + b"y").decode()


# -- which settings each model takes ---------------------------------------------------------------------------------


def _names(warnings: list[Any]) -> list[str]:
    return [w.detail["parameter"] for w in warnings]


def test_gpt_image_models_drop_style_and_aspect_ratio() -> None:
    path, body, warnings = encode_image_request(
        ImageRequest(model="gpt-image-2", prompt="p", style="vivid", aspect_ratio="1:1", partial_images=1)
    )
    assert (path, body) == ("/images/generations", {"model": "gpt-image-2", "prompt": "p"})
    assert _names(warnings) == ["aspect_ratio", "style", "partial_images"]
    assert warnings[0].kind == "parameter_stripped"
    assert "size, not an aspect ratio" in warnings[0].message


def test_dall_e_asks_for_base64_and_drops_what_it_lacks() -> None:
    _, body, warnings = encode_image_request(
        ImageRequest(model="dall-e-3", prompt="p", quality="hd", style="natural", background="transparent")
    )
    assert body == {
        "model": "dall-e-3",
        "prompt": "p",
        "quality": "hd",
        "style": "natural",
        "response_format": "b64_json",
    }
    assert _names(warnings) == ["background"]
    _, body, warnings = encode_image_request(ImageRequest(model="dall-e-2", prompt="p", quality="hd", size="256x256"))
    assert body == {"model": "dall-e-2", "prompt": "p", "size": "256x256", "response_format": "b64_json"}
    assert _names(warnings) == ["quality"]


def test_input_fidelity_applies_to_edits_only() -> None:
    _, body, warnings = encode_image_request(ImageRequest(model="gpt-image-1.5", prompt="p", input_fidelity="high"))
    assert "input_fidelity" not in body
    assert _names(warnings) == ["input_fidelity"]


@pytest.mark.parametrize(
    ("request_", "stream", "parameter"),
    [
        (ImageRequest(model="dall-e-2", prompt="p", images=[ImageInput(PNG, "image/png")]), False, "images"),
        (ImageRequest(model="gpt-image-2", prompt="p", mask=ImageInput(PNG, "image/png")), False, "mask"),
        (ImageRequest(model="dall-e-3", prompt="p", count=2), False, "count"),
        (ImageRequest(model="gpt-image-2", prompt="p", count=0), False, "count"),
        (ImageRequest(model="gpt-image-2", prompt="p", count=2), True, "count"),
        (ImageRequest(model="dall-e-3", prompt="p"), True, "stream"),
    ],
)
def test_image_requests_that_cannot_mean_what_they_say_are_refused(
    request_: ImageRequest, stream: bool, parameter: str
) -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        encode_image_request(request_, stream=stream)
    assert caught.value.parameter == parameter


def test_gemini_speech_takes_one_voice_or_speakers_not_both() -> None:
    with pytest.raises(UnsupportedParameterError, match="not both"):
        encode_speech_body(SpeechRequest(model="g", text="t", voice="Kore", speakers=[SpeakerVoice("A", "Puck")]))
    body, warnings = encode_speech_body(SpeechRequest(model="g", text="t", format="mp3", instructions="calm"))
    assert body["generationConfig"] == {"responseModalities": ["AUDIO"]}
    assert _names(warnings) == ["instructions", "format"]


# -- answers that are not results ------------------------------------------------------------------------------------


def test_an_image_answer_with_a_url_or_bad_base64_is_malformed() -> None:
    request = ImageRequest(model="gpt-image-2", prompt="p")
    with pytest.raises(MalformedResponseError, match="URL instead of the image"):
        decode_images(json.dumps({"data": [{"url": "https://x/y.png"}]}).encode(), request)
    with pytest.raises(MalformedResponseError, match="not valid base64"):
        decode_images(json.dumps({"data": [{"b64_json": "%%%"}]}).encode(), request)
    with pytest.raises(MalformedResponseError, match="no image"):
        decode_images(b'{"data": []}', request)
    with pytest.raises(MalformedResponseError, match="not a count"):
        decode_images(json.dumps({"data": [{"b64_json": "iVBORw=="}], "usage": {"input_tokens": -1}}).encode(), request)


def test_a_moderation_answer_must_match_its_inputs() -> None:
    request = ModerationRequest(model="m", texts=["a", "b", "c"])
    result = {"flagged": False, "categories": {}, "category_scores": {}}
    with pytest.raises(MalformedResponseError, match="2 results for 3 inputs"):
        decode_moderation(json.dumps({"results": [result, result]}).encode(), request)
    with pytest.raises(MalformedResponseError, match="lacks flagged"):
        decode_moderation(json.dumps({"results": [{"flagged": "yes"}]}).encode(), request)


async def test_a_provider_error_never_carries_the_key() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return _json(401, {"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}})

    provider, client = _openai(handler)
    async with client:
        with pytest.raises(AuthError) as caught:
            await provider.generate_image(ImageRequest(model="gpt-image-2", prompt="p"))
        with pytest.raises(AuthError) as spoken:
            await provider.synthesize(SpeechRequest(model="tts-1", text="t"))
        with pytest.raises(AuthError) as heard:
            await provider.transcribe(
                TranscriptionRequest(model="whisper-1", audio=b"RIFF0000WAVE", content_type="audio/wav")
            )
    for error in (caught.value, spoken.value, heard.value):
        assert KEY not in str(error)
        assert KEY not in (error.body or "")
        assert "****" in str(error)


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


async def _drain(stream: Any) -> list[Any]:
    return [event async for event in stream]


@pytest.mark.parametrize(
    ("body", "error", "match"),
    [
        (_sse({"type": "speech.audio.delta", "audio": "AAA="}), MalformedResponseError, "before the audio"),
        (_sse({"type": "error", "error": {"message": "overloaded"}}), ProviderError, "overloaded"),
        (
            _sse({"type": "speech.audio.done", "usage": {}}, {"type": "speech.audio.delta", "audio": "AAA="}),
            MalformedResponseError,
            "after its end",
        ),
        (_sse({"type": "speech.audio.delta", "audio": "not base64!"}), MalformedResponseError, "base64"),
        (b"data: {not json}\n\n", MalformedResponseError, "not valid JSON"),
    ],
    ids=["cut", "error-event", "after-end", "bad-audio", "bad-json"],
)
async def test_a_broken_speech_stream_fails(body: bytes, error: type[Exception], match: str) -> None:
    provider, client = _openai(lambda r: httpx.Response(200, content=body))
    async with client:
        with pytest.raises(error, match=match):
            await _drain(provider.stream_speech(SpeechRequest(model="gpt-4o-mini-tts", text="t")))


async def test_an_image_stream_that_ends_before_its_image_fails() -> None:
    partial = {"type": "image_generation.partial_image", "b64_json": "iVBORw==", "partial_image_index": 0}
    provider, client = _openai(lambda r: httpx.Response(200, content=_sse(partial)))
    async with client:
        with pytest.raises(MalformedResponseError, match="before the image was complete"):
            await _drain(provider.stream_image(ImageRequest(model="gpt-image-2", prompt="p")))


async def test_a_transcript_stream_of_whisper_is_the_whole_text_with_a_warning() -> None:
    provider, client = _openai(lambda r: _json(200, {"text": "hello", "duration": 1.5}))
    async with client:
        events = await _drain(
            provider.stream_transcription(
                TranscriptionRequest(model="whisper-1", audio=b"RIFF0000WAVE", content_type="audio/wav")
            )
        )
    assert [type(e).__name__ for e in events] == ["TranscriptDelta", "MediaDone"]
    response = events[-1].response
    assert (response.text, str(response.duration), response.usage.counters) == ("hello", "1.5", {"audioSeconds": 1.5})
    assert [w.message for w in response.warnings] == [
        "stream is not sent: whisper-1 does not stream; the text came whole"
    ]


async def test_raw_audio_stream_releases_its_connection_when_closed_early() -> None:
    body = Chunks([b"ID3one", b"two", b"three"])
    provider, client = _openai(lambda r: httpx.Response(200, headers={"content-type": "audio/mpeg"}, stream=body))
    async with client:
        stream = provider.stream_speech(SpeechRequest(model="tts-1", text="t"))
        first = await stream.__anext__()
        await stream.aclose()
    assert first.data == b"ID3one"
    assert body.closed


# -- Gemini ----------------------------------------------------------------------------------------------------------


def _answer(parts: list[dict[str, Any]], finish: str = "STOP", usage: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}],
        "usageMetadata": usage or {"promptTokenCount": 5, "candidatesTokenCount": 7},
    }


IMAGE_PART = {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}}


@pytest.mark.parametrize(
    ("answer", "error", "match"),
    [
        ({"promptFeedback": {"blockReason": "SAFETY"}}, ContentFilterError, r"prompt was blocked \(SAFETY\)"),
        (_answer([], "IMAGE_SAFETY"), ContentFilterError, r"filtered \(IMAGE_SAFETY\)"),
        (_answer([{"text": "I cannot draw that."}]), RefusedError, "without an image: I cannot draw that."),
        (_answer([{"inlineData": {"mimeType": "image/png", "data": "%%"}}]), MalformedResponseError, "base64"),
    ],
    ids=["blocked", "filtered", "text-only", "bad-data"],
)
async def test_a_gemini_answer_without_an_image_fails(answer: Any, error: type[Exception], match: str) -> None:
    provider, client = _gemini(lambda r: _json(200, answer))
    async with client:
        with pytest.raises(error, match=match):
            await provider.generate_image(ImageRequest(model="gemini-3.1-flash-image", prompt="p"))


async def test_gemini_returns_the_images_made_when_some_calls_fail() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 2:
            return _json(429, {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}})
        return _json(200, _answer([IMAGE_PART]))

    provider, client = _gemini(handler)
    async with client:
        response = await provider.generate_image(ImageRequest(model="gemini-3.1-flash-image", prompt="p", count=3))
    assert len(calls) == 3
    assert len(response.images) == 2
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (10, 14)
    [warning] = response.warnings
    assert warning.kind == "partial_result"
    assert warning.detail == {"asked": 3, "made": 2, "failed": [1]}
    assert "RateLimitError: quota" in warning.message


async def test_gemini_raises_when_every_image_call_fails() -> None:
    provider, client = _gemini(
        lambda r: _json(429, {"error": {"code": 429, "message": f"quota for {KEY}", "status": "RESOURCE_EXHAUSTED"}})
    )
    async with client:
        with pytest.raises(RateLimitError) as caught:
            await provider.generate_image(ImageRequest(model="gemini-3.1-flash-image", prompt="p", count=2))
    assert KEY not in str(caught.value)


async def test_gemini_speech_without_audio_is_refused_and_unknown_audio_kept_as_is() -> None:
    provider, client = _gemini(lambda r: _json(200, _answer([{"text": "no"}], "SAFETY")))
    async with client:
        with pytest.raises(ContentFilterError):
            await provider.synthesize(SpeechRequest(model="gemini-3.8-flash-tts", text="t"))
    mp3 = {"inlineData": {"mimeType": "audio/mpeg", "data": base64.b64encode(b"ID3x").decode()}}
    provider, client = _gemini(lambda r: _json(200, _answer([mp3])))
    async with client:
        response = await provider.synthesize(SpeechRequest(model="gemini-3.8-flash-tts", text="t"))
    assert (response.audio, response.content_type) == (b"ID3x", "audio/mpeg")


async def test_a_stream_error_that_echoes_the_key_is_cleaned() -> None:
    body = _sse({"type": "error", "error": {"message": f"bad key {KEY}"}})
    provider, client = _openai(lambda r: httpx.Response(200, content=body))
    async with client:
        with pytest.raises(ProviderError) as caught:
            await _drain(provider.stream_image(ImageRequest(model="gpt-image-2", prompt="p")))
    assert KEY not in str(caught.value)
    assert "bad key ****" in str(caught.value)


async def test_a_hostile_audio_format_is_malformed_not_a_crash() -> None:
    part = {"inlineData": {"mimeType": "audio/L16;codec=pcm;rate=99999999999", "data": "AAAA"}}
    provider, client = _gemini(lambda r: _json(200, _answer([part])))
    async with client:
        with pytest.raises(MalformedResponseError, match="not usable"):
            await provider.synthesize(SpeechRequest(model="gemini-3.8-flash-tts", text="t"))
