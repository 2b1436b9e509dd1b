"""The media verbs as a user meets them: the happy path and its `_sync` twins on the current runtime, what is refused
before anything is sent (a model of another kind, a provider without the capability, a spend cap that cannot be
checked), records and spend, streams closed early, inputs given as paths, bytes or asset parts, and pricing rules
(batch, moderation free, usage missing)."""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

import onellm
from onellm import Asset
from onellm.catalog import Catalog
from onellm.errors import BudgetExceededError, CapabilityMissingError, UnsupportedParameterError
from onellm.messages import AssetPart, Usage
from onellm.providers._media import ImageInput
from onellm.records import EventRecordSink
from onellm.runtime._media import audio_input, image_input, price_media
from onellm.testing import ScriptedProvider

from ._cases import Chunks, Recorder, case_id, load, runtime_for

pytestmark = pytest.mark.anyio

MEDIA = Path(__file__).resolve().parents[4] / "testdata" / "providers"
PNG = b"\x89PNG\r\n\x1a\nbody"


def case(name: str) -> dict[str, Any]:
    folder, _, leaf = name.partition("/")
    return load(MEDIA / folder / leaf / "case.json")


def recorder_for(name: str, size: int | None = None) -> Recorder:
    found = case(name)
    return Recorder(found.get("responses") or [found["response"]], size)


def _sink() -> tuple[EventRecordSink, list[Any]]:
    seen: list[Any] = []
    return EventRecordSink(seen.append), seen


# -- the happy path --------------------------------------------------------------------------------------------------


async def test_the_verbs_run_on_the_current_runtime() -> None:
    recorder = recorder_for("openai-media/image-generate")
    rt, client = runtime_for(recorder)
    async with client:
        with onellm.use_runtime(rt):
            result = await onellm.generate_image("gpt-image-2", "A cute baby sea otter", size="1024x1024")
    assert result.content_type == "image/png"
    assert result.data.startswith(b"\x89PNG")
    assert result.model == "openai:gpt-image-2"
    assert str(result.cost.total) == "0.001870"
    assert result.usage is not None
    assert result.usage.cost == Decimal("0.001870")
    assert [p.content_type for p in result.parts()] == ["image/png"]


def test_the_sync_twins_drive_the_same_calls() -> None:
    from onellm.runtime._sync import drive

    answers = {
        "/v1/audio/speech": case("openai-media/speech-tts-1")["response"],
        "/v1/audio/transcriptions": case("openai-media/transcription-tokens")["response"],
        "/v1/moderations": case("openai-media/moderation-texts")["response"],
        "/v1/images/generations": case("openai-media/image-generate")["response"],
    }
    from ._cases import answer

    rt, client = runtime_for(lambda request: answer(answers[request.url.path]))
    try:
        with onellm.use_runtime(rt):
            spoken = onellm.speak_sync("tts-1", "Hello 👋 world", voice="nova")
            heard = onellm.transcribe_sync("gpt-4o-transcribe", b"ID3\x04 some mp3")
            verdict = onellm.moderate_sync("omni-moderation-latest", ["I want to kill them.", "What a lovely day."])
            made = onellm.generate_image_sync("gpt-image-2", "otter")
    finally:
        drive(client.aclose(), "aclose")
    assert spoken.content_type == "audio/mpeg"
    assert str(spoken.cost.total) == "0.000210"
    assert heard.text.startswith("Imagine")
    assert str(heard.cost.total) == "0.0004850"
    assert verdict.flagged
    assert verdict.cost.total == 0
    assert verdict.to_data()["results"][0] == {
        "input": 0,
        "flagged": True,
        "categories": ["harassment", "harassment/threatening", "violence"],
        "scores": verdict.verdicts[0].scores,
    }
    assert len(made.images) == 1


async def test_the_sync_twin_refuses_inside_async_code() -> None:
    with pytest.raises(RuntimeError, match="speak"):
        onellm.speak_sync("tts-1", "x")


# -- refused before anything is sent ---------------------------------------------------------------------------------


async def test_a_model_of_another_kind_is_refused() -> None:
    recorder = recorder_for("openai-media/image-generate")
    rt, client = runtime_for(recorder)
    async with client:
        with pytest.raises(UnsupportedParameterError, match="openai:gpt-6-luna is a chat model") as caught:
            await rt.generate_image("gpt-6-luna", "otter")
        with pytest.raises(UnsupportedParameterError, match="is a speech model"):
            await rt.transcribe("tts-1", b"ID3\x04 mp3")
    assert caught.value.parameter == "model"
    assert recorder.requests == []


async def test_a_provider_without_the_capability_is_named() -> None:
    rt, client = runtime_for(lambda r: httpx.Response(500))
    rt.providers.set("openai", ScriptedProvider("openai"))
    async with client:
        with pytest.raises(CapabilityMissingError, match="provider 'openai' does not make images"):
            await rt.generate_image("gpt-image-2", "otter")
        stream = rt.stream_speech("gemini-3.8-flash-tts", "hello")
        with pytest.raises(CapabilityMissingError, match="does not speak as a stream"):
            await stream.result()


async def test_bad_arguments_are_named() -> None:
    rt, client = runtime_for(lambda r: httpx.Response(500))
    async with client:
        with pytest.raises(ValueError, match="prompt"):
            await rt.generate_image("gpt-image-2", "  ")
        with pytest.raises(ValueError, match="count"):
            await rt.generate_image("gpt-image-2", "p", count=0)
        with pytest.raises(TypeError, match="unknown image option 'colour'"):
            await rt.generate_image("gpt-image-2", "p", colour="red")  # type: ignore[call-arg]
        with pytest.raises(ValueError, match=r"images\[1\]: the bytes are not a PNG"):
            await rt.generate_image("gpt-image-2", "p", images=[PNG, b"plain text"])
        with pytest.raises(ValueError, match=r"timestamps\[0\]"):
            await rt.transcribe("whisper-1", b"ID3\x04", timestamps=["second"])
        with pytest.raises(ValueError, match="at least one text or image"):
            await rt.moderate("omni-moderation-latest")
        with pytest.raises(TypeError, match=r"texts\[1\]"):
            await rt.moderate("omni-moderation-latest", ["ok", 3])  # type: ignore[list-item]


async def test_a_spend_cap_refuses_a_call_whose_cost_cannot_be_known_before() -> None:
    recorder = recorder_for("openai-media/transcription-tokens")
    rt, client = runtime_for(recorder, spend_cap=Decimal("1"))
    async with client:
        with pytest.raises(BudgetExceededError, match="not known before the audio is heard"):
            await rt.transcribe("gpt-4o-transcribe", b"ID3\x04 mp3")
        with pytest.raises(BudgetExceededError, match="has no output limit"):
            await rt.generate_image("gpt-image-2", "otter")
    assert recorder.requests == []
    assert rt.spent == 0


async def test_a_spend_cap_holds_the_exact_worst_case_of_character_billed_speech() -> None:
    recorder = recorder_for("openai-media/speech-tts-1")
    rt, client = runtime_for(recorder, max_cost_per_call=Decimal("0.0002"))
    async with client:
        with pytest.raises(BudgetExceededError, match=r"up to 0\.000210 USD"):
            await rt.speak("tts-1", "Hello 👋 world", voice="nova")
        assert recorder.requests == []
        rt.max_cost_per_call = Decimal("0.00021")
        rt.spend_cap = Decimal("1")
        result = await rt.speak("tts-1", "Hello 👋 world", voice="nova")
    assert rt.spent == result.cost.total == Decimal("0.000210")  # type: ignore[union-attr]


async def test_a_spend_cap_counts_gemini_images_at_their_real_cost() -> None:
    recorder = recorder_for("gemini-media/image-two-calls")
    rt, client = runtime_for(recorder, spend_cap=Decimal("5"))
    async with client:
        result = await rt.generate_image("gemini-3.1-flash-lite-image", "A lighthouse", count=2)
        moderated = recorder_for("openai-media/moderation-texts")
        rt.providers.set(
            "openai",
            onellm.OpenAIProvider(
                api_key="k" * 12, http_client=httpx.AsyncClient(transport=httpx.MockTransport(moderated))
            ),
        )
        verdict = await rt.moderate("omni-moderation-latest", ["a", "b"])
    assert rt.spent == result.cost.total == Decimal("0.07740400")  # type: ignore[union-attr]
    assert verdict.cost.total == 0


async def test_each_call_is_recorded_with_its_operation_and_cost_lines() -> None:
    sink, seen = _sink()
    recorder = recorder_for("openai-media/speech-stream")
    rt, client = runtime_for(recorder, records=[sink])
    async with client:
        stream = rt.stream_speech("gpt-4o-mini-tts", "The quick brown fox jumped over the lazy dog.")
        result = await stream.result()
        failing = Recorder([{"status": 400, "body": {"error": {"message": "bad voice"}}}])
        rt.providers.set(
            "openai",
            onellm.OpenAIProvider(
                api_key="k" * 12, http_client=httpx.AsyncClient(transport=httpx.MockTransport(failing))
            ),
        )
        with pytest.raises(onellm.BadRequestError):
            await rt.speak("tts-1", "x", voice="nobody")
    inference, error = (r.to_data() for r in seen)
    assert inference["kind"] == "inference"
    assert inference["operation"] == "speech"
    assert inference["provider"] == "openai"
    assert [line["counter"] for line in inference["usage"]["costLines"]] == ["inputTokens", "outputAudioTokens"]
    assert inference["usage"]["cost"] == result.cost.total  # type: ignore[union-attr]
    assert (error["kind"], error["errorType"], error["where"]) == ("error", "BadRequestError", "speech")


async def test_a_stream_closed_early_releases_its_connection() -> None:
    body = Chunks([b"ID3one", b"two", b"three"])
    rt, client = runtime_for(lambda r: httpx.Response(200, headers={"content-type": "audio/mpeg"}, stream=body))
    async with client:
        async with rt.stream_speech("tts-1", "Chunks, as they come.") as stream:
            async for chunk in stream:
                assert chunk.data == b"ID3one"
                break
        with pytest.raises(RuntimeError, match="closed before its end"):
            await stream.result()
    assert body.closed


# -- inputs ----------------------------------------------------------------------------------------------------------


def test_image_inputs_from_paths_bytes_and_assets(tmp_path: Path) -> None:
    path = tmp_path / "photo.png"
    path.write_bytes(PNG)
    assert image_input(path) == ImageInput(PNG, "image/png", "photo.png")
    assert image_input(str(path)).content_type == "image/png"
    assert image_input(PNG) == ImageInput(PNG, "image/png")
    assert image_input(Asset.from_bytes(PNG, "image/png")).data == PNG
    encoded = AssetPart(content_type="image/png", data=base64.b64encode(PNG).decode())
    assert image_input(encoded).data == PNG
    with pytest.raises(ValueError, match="no inline data"):
        image_input(AssetPart(content_type="image/png", key="sha256:abc"))
    with pytest.raises(ValueError, match="is text/plain, not an image"):
        image_input(AssetPart(content_type="text/plain", name="notes.txt", data=b"hello"))
    with pytest.raises(FileNotFoundError):
        image_input(tmp_path / "missing.png")
    with pytest.raises(TypeError, match="not int"):
        image_input(7)


def test_audio_inputs_tell_their_type(tmp_path: Path) -> None:
    path = tmp_path / "clip.ogg"
    path.write_bytes(b"OggS....")
    assert audio_input(path) == (b"OggS....", "audio/ogg", "clip.ogg")
    assert audio_input(b"RIFF\0\0\0\0WAVE") == (b"RIFF\0\0\0\0WAVE", "audio/wav", None)
    assert audio_input(b"raw", "audio/L16") == (b"raw", "audio/L16", None)
    with pytest.raises(ValueError, match="give content_type="):
        audio_input(b"raw bytes")
    with pytest.raises(ValueError, match="empty"):
        audio_input(b"")


# -- pricing ---------------------------------------------------------------------------------------------------------


def test_batch_applies_the_models_batch_multiplier() -> None:
    model = Catalog.shipped().resolve("gpt-image-2")
    usage = Usage(input_tokens=50, output_tokens=50, counters={"inputImageTokens": 40, "outputImageTokens": 50})
    cost, warnings = price_media(model, usage, "images", batch=True)
    assert cost is not None
    assert warnings == []
    assert [(line.counter, line.multiplier, line.amount) for line in cost.lines] == [
        ("inputTokens", Decimal("0.5"), Decimal("0.0000250")),
        ("inputImageTokens", Decimal("0.5"), Decimal("0.0001600")),
        ("outputImageTokens", Decimal("0.5"), Decimal("0.0007500")),
    ]
    assert cost.total == Decimal("0.0009350")


def test_moderation_is_free_and_missing_usage_is_not_estimated() -> None:
    catalog = Catalog.shipped()
    unpriced = catalog.resolve("openai:omni-moderation-2024-09-26")
    assert price_media(unpriced, None, "moderation") == (onellm.Cost(), [])
    assert price_media(catalog.resolve("omni-moderation-latest"), None, "speech") == (onellm.Cost(), [])
    cost, [warning] = price_media(catalog.resolve("gpt-4o-mini-tts"), None, "speech")
    assert cost is None
    assert warning.kind == "usage_missing"


@pytest.mark.parametrize("name", ["openai-media/speech-no-usage", "openai-media/translation"])
async def test_usage_missing_leaves_the_cost_none(name: str) -> None:
    found = case(name)
    rt, client = runtime_for(Recorder([found["response"]]), spend_cap=None)
    async with client:
        if "speech" in name:
            result: Any = await rt.speak(found["model"], found["request"]["text"])
        else:
            result = await rt.transcribe(found["model"], b"\0\0\0\x18ftypM4A ", translate=True)
    assert result.cost is None
    assert result.usage is None
    assert result.warnings[-1].kind == "usage_missing"
    assert json.dumps(result.warnings[-1].detail) == json.dumps({"model": f"openai:{found['model']}"})


def test_case_ids_are_stable() -> None:
    assert case_id(MEDIA / "openai-media" / "translation" / "case.json") == "openai-media/translation"
