"""The media tools as a model calls them: outputs as inline asset parts, cost lines on the tool result, input files
read only through the call's grant (and every refusal naming the argument before the provider is called), the limits
in the schemas, approval and the timeout, for OpenAI and Gemini."""

from __future__ import annotations

import base64
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from onellm import Capabilities, ToolContext
from onellm.catalog import Catalog
from onellm.messages import AssetPart, JsonPart, TextPart
from onellm.providers.gemini import GeminiProvider
from onellm.providers.openai import OpenAIProvider
from onellm.testing import ScriptedProvider
from onellm.tools import Tool
from onellm.tools.builtin.media import MEDIA_TOOL_NAMES, MediaToolOptions, media_tools

from ._cases import KEY, Recorder, load, parse_multipart, plain

pytestmark = pytest.mark.anyio

MEDIA = Path(__file__).resolve().parents[4] / "testdata" / "providers"
PNG = b"\x89PNG\r\n\x1a\nonellm fixture input"
MP3 = b"ID3\x04\x00\x00\x00\x00\x00\x00onellm fixture mp3 audio bytes"
OPTIONS = MediaToolOptions(catalog=Catalog.shipped())


def case(name: str) -> dict[str, Any]:
    folder, _, leaf = name.partition("/")
    return load(MEDIA / folder / leaf / "case.json")


def tools_for(
    recorder: Any, *, gemini: bool = False, options: MediaToolOptions = OPTIONS
) -> tuple[dict[str, Tool[..., object]], httpx.AsyncClient]:
    client = httpx.AsyncClient(transport=httpx.MockTransport(recorder))
    if gemini:
        provider: Any = GeminiProvider(api_key=KEY, http_client=client)
        made = media_tools(
            provider, image_model="gemini-3.1-flash-image", speech_model="gemini-3.8-flash-tts", options=options
        )
    else:
        provider = OpenAIProvider(api_key=KEY, http_client=client)
        made = media_tools(
            provider,
            image_model="gpt-image-1.5",
            speech_model="tts-1",
            transcription_model="gpt-4o-transcribe",
            moderation_model="omni-moderation-latest",
            options=options,
        )
    return {t.name: t for t in made}, client


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "photo.png").write_bytes(PNG)
    (root / "speech.mp3").write_bytes(MP3)
    (root / "notes.txt").write_text("not an image")
    (tmp_path / "secret.png").write_bytes(PNG)
    return root


def context(work: Path, caps: Capabilities | None = None) -> ToolContext:
    return ToolContext(capabilities=caps or Capabilities.files(work), working_directory=work)


def lines(result: Any) -> list[Any]:
    """The tool result's cost lines as the fixtures write them."""
    return [plain(line.to_data()) for line in result.cost_lines]


# -- outputs and costs -----------------------------------------------------------------------------------------------


async def test_generate_image_edits_a_granted_file_and_charges_its_cost(work: Path) -> None:
    found = case("openai-media/image-edit")
    recorder = Recorder([found["response"]])
    tools, client = tools_for(recorder)
    async with client:
        result = await tools["generate_image"].invoke(
            {"prompt": "Put it in a gift basket", "images": ["photo.png"], "output_format": "webp"}, context(work)
        )
    assert not result.is_error, result.text
    body = json.loads(recorder.requests[0].content)
    assert body["images"] == [{"image_url": "data:image/png;base64," + base64.b64encode(PNG).decode()}]
    text, image = result.parts
    assert text == TextPart(text="1 image (image/webp).")
    assert isinstance(image, AssetPart)
    assert (image.storage, image.content_type, image.data) == (
        "inline",
        "image/webp",
        base64.b64decode(found["expected"]["images"][0]["base64"]),
    )
    assert lines(result) == found["expected"]["costLines"]


async def test_speak_returns_audio_and_the_characters_charged(work: Path) -> None:
    found = case("openai-media/speech-tts-1")
    tools, client = tools_for(Recorder([found["response"]]))
    async with client:
        result = await tools["speak"].invoke({"text": "Hello 👋 world", "voice": "nova"}, context(work))
    text, audio = result.parts
    assert text == TextPart(text=f"Audio (audio/mpeg, {len(MP3)} bytes).")
    assert audio == AssetPart(storage="inline", content_type="audio/mpeg", size=len(MP3), data=MP3)
    assert lines(result) == found["expected"]["costLines"]


async def test_speak_reports_a_cost_it_cannot_know(work: Path) -> None:
    found = case("openai-media/speech-no-usage")
    client = httpx.AsyncClient(transport=httpx.MockTransport(Recorder([found["response"]])))
    [speak] = media_tools(
        OpenAIProvider(api_key=KEY, http_client=client), speech_model="gpt-4o-mini-tts", options=OPTIONS
    )
    async with client:
        result = await speak.invoke({"text": "hi", "instructions": "calm"}, context(work))
    assert result.cost_lines == []
    assert result.parts[0] == TextPart(
        text=f"Audio (audio/mpeg, {len(MP3)} bytes).\nNote: openai:gpt-4o-mini-tts: the service reported no usage for "
        "this call; its cost is unknown and not estimated\nNote: the cost of this call is unknown."
    )


async def test_transcribe_reads_the_file_and_returns_its_text(work: Path) -> None:
    found = case("openai-media/transcription-tokens")
    recorder = Recorder([found["response"]])
    tools, client = tools_for(recorder)
    async with client:
        result = await tools["transcribe"].invoke({"path": "speech.mp3", "language": "en"}, context(work))
    assert result.text == found["expected"]["text"]
    parts = parse_multipart(recorder.requests[0].content, recorder.requests[0].headers["content-type"])
    assert parts[-1] == {
        "name": "file",
        "filename": "speech.mp3",
        "contentType": "audio/mpeg",
        "base64": base64.b64encode(MP3).decode(),
    }
    assert lines(result) == found["expected"]["costLines"]
    assert tools["transcribe"].required_grants == ("files_read",)
    assert all(tools[name].required_grants == () for name in ("generate_image", "speak", "moderate"))


async def test_moderate_returns_the_verdict_per_input_at_no_cost(work: Path) -> None:
    found = case("openai-media/moderation-text-and-image")
    tools, client = tools_for(Recorder([found["response"]]))
    async with client:
        result = await tools["moderate"].invoke(
            {"texts": ["...text to classify goes here..."], "images": ["photo.png"]}, context(work)
        )
    [part] = result.parts
    assert isinstance(part, JsonPart)
    assert part.json["flagged"] is True
    assert [(r["input"], r["flagged"], r["categories"]) for r in part.json["results"]] == [
        ("all", True, ["violence/graphic", "violence"])
    ]
    assert part.json["results"][0]["scores"]["violence"] == pytest.approx(0.9999992735124786)
    assert result.cost_lines == []


async def test_moderate_labels_each_input(work: Path) -> None:
    found = case("openai-media/moderation-texts")
    tools, client = tools_for(Recorder([found["response"]]))
    async with client:
        result = await tools["moderate"].invoke(
            {"texts": ["I want to kill them.", "What a lovely day."]}, context(work)
        )
    [part] = result.parts
    assert [(r["input"], r["flagged"]) for r in part.json["results"]] == [("texts[0]", True), ("texts[1]", False)]  # type: ignore[union-attr]


async def test_gemini_tools_make_images_and_speech_with_their_costs(work: Path) -> None:
    image_case = case("gemini-media/image-generate")
    speech_case = case("gemini-media/speech-prebuilt")
    recorder = Recorder([image_case["response"], speech_case["response"]])
    tools, client = tools_for(recorder, gemini=True)
    async with client:
        image = await tools["generate_image"].invoke(
            {"prompt": "A nano banana dish", "aspect_ratio": "16:9", "quality": "high"}, context(work)
        )
        speech = await tools["speak"].invoke({"text": "Have a wonderful day!", "voice": "Kore"}, context(work))
    assert sorted(tools) == ["generate_image", "speak"]
    assert image.parts[0] == TextPart(
        text="1 image (image/png).\nThe model said: Here is your dish.\nNote: quality is not sent: Gemini does not take it"
    )
    assert lines(image) == image_case["expected"]["costLines"]
    assert speech.parts[1].content_type == "audio/wav"  # type: ignore[union-attr]
    assert lines(speech) == speech_case["expected"]["costLines"]
    assert sum(line.amount for line in speech.cost_lines) == Decimal("0.0018045")


# -- files through the grant -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "caps", "message"),
    [
        ({"images": ["../secret.png"]}, None, "images[0]: "),
        ({"images": ["photo.png", "missing.png"]}, None, "images[1]: missing.png does not exist"),
        ({"images": ["notes.txt"]}, None, "images[0]: notes.txt is not a PNG, JPEG, GIF or WebP image"),
        ({"images": ["photo.png"], "mask": "../secret.png"}, None, "mask: "),
        ({"images": ["photo.png"]}, "none", "images[0]: "),
        ({"mask": "photo.png"}, None, "mask: a mask needs images to edit"),
    ],
    ids=["outside-roots", "missing", "not-an-image", "mask-outside", "no-grant", "mask-alone"],
)
async def test_bad_input_files_are_errors_naming_the_argument_before_any_call(
    work: Path, arguments: dict[str, Any], caps: str | None, message: str
) -> None:
    recorder = Recorder([case("openai-media/image-edit")["response"]])
    tools, client = tools_for(recorder)
    grant = Capabilities.none() if caps == "none" else None
    async with client:
        result = await tools["generate_image"].invoke({"prompt": "p", **arguments}, context(work, grant))
    assert result.is_error
    assert message in result.text
    assert recorder.requests == []


async def test_a_run_without_capabilities_cannot_read_a_file(work: Path) -> None:
    recorder = Recorder([case("openai-media/transcription-tokens")["response"]])
    tools, client = tools_for(recorder)
    async with client:
        result = await tools["transcribe"].invoke({"path": "speech.mp3"}, ToolContext(working_directory=work))
    assert result.is_error
    assert "CapabilityMissingError: path: this run has no file grant" in result.text
    assert recorder.requests == []


@pytest.mark.skipif(os.name == "nt", reason="symbolic links need privileges on Windows")
async def test_a_link_out_of_the_roots_is_refused(work: Path) -> None:
    (work / "link.png").symlink_to(work.parent / "secret.png")
    recorder = Recorder([case("openai-media/image-edit")["response"]])
    tools, client = tools_for(recorder)
    async with client:
        result = await tools["generate_image"].invoke({"prompt": "p", "images": ["link.png"]}, context(work))
    assert result.is_error
    assert "CapabilityDeniedError: images[0]: " in result.text
    assert recorder.requests == []


async def test_a_file_over_the_size_limit_is_refused(work: Path) -> None:
    recorder = Recorder([case("openai-media/transcription-tokens")["response"]])
    tools, client = tools_for(recorder, options=MediaToolOptions(catalog=Catalog.shipped(), max_input_bytes=16))
    async with client:
        result = await tools["transcribe"].invoke({"path": "speech.mp3"}, context(work))
    assert result.is_error
    assert f"path: speech.mp3 is {len(MP3)} bytes, above the limit of 16 bytes" in result.text
    assert recorder.requests == []


# -- limits, approval, timeout ---------------------------------------------------------------------------------------


async def test_the_limits_are_in_the_schemas_and_enforced(work: Path) -> None:
    recorder = Recorder([case("openai-media/speech-tts-1")["response"]])
    tools, client = tools_for(recorder, options=MediaToolOptions(catalog=Catalog.shipped(), max_speech_chars=10))
    schema = tools["generate_image"].input_schema["properties"]
    assert (schema["count"]["maximum"], schema["images"]["maxItems"]) == (4, 4)
    assert tools["speak"].input_schema["properties"]["text"]["maxLength"] == 10
    async with client:
        too_many = await tools["generate_image"].invoke({"prompt": "p", "count": 5}, context(work))
        too_long = await tools["speak"].invoke({"text": "x" * 11}, context(work))
    assert too_many.is_error
    assert "count" in too_many.text
    assert too_long.is_error
    assert "text" in too_long.text
    assert recorder.requests == []


def test_defaults_approval_and_cost_hint() -> None:
    provider = OpenAIProvider(api_key=KEY)
    names = [
        t.name
        for t in media_tools(provider, image_model="a", speech_model="b", transcription_model="c", moderation_model="d")
    ]
    assert tuple(names) == MEDIA_TOOL_NAMES
    default = media_tools(provider, image_model="gpt-image-2")[0]
    assert (default.timeout_seconds, default.requires_approval) == (300.0, False)
    hinted = media_tools(
        provider, image_model="gpt-image-2", options=MediaToolOptions(require_approval=True, cost_hint="About $0.04.")
    )[0]
    assert hinted.requires_approval
    assert hinted.description.endswith("About $0.04.")
    assert media_tools(ScriptedProvider("x"), image_model="a", speech_model="b") == []
    assert media_tools(provider) == []
    with pytest.raises(ValueError, match="max_images"):
        MediaToolOptions(max_images=0)
    with pytest.raises(ValueError, match="timeout_seconds"):
        MediaToolOptions(timeout_seconds=0)


async def test_a_call_that_outlasts_the_timeout_is_an_error_result(work: Path) -> None:
    async def stall(request: httpx.Request) -> httpx.Response:
        await anyio.sleep(30)
        return httpx.Response(500)

    tools, client = tools_for(stall, options=MediaToolOptions(catalog=Catalog.shipped(), timeout_seconds=0.05))
    async with client:
        result = await tools["speak"].invoke({"text": "hi"}, context(work))
    assert result.is_error
    assert result.text == "Tool 'speak' timed out after 0.05 s."


async def test_an_unpriced_model_says_so_and_charges_nothing(work: Path) -> None:
    found = case("openai-media/speech-tts-1")
    client = httpx.AsyncClient(transport=httpx.MockTransport(Recorder([found["response"]])))
    [speak] = media_tools(OpenAIProvider(api_key=KEY, http_client=client), speech_model="tts-9", options=OPTIONS)
    async with client:
        result = await speak.invoke({"text": "hi"}, context(work))
    assert not result.is_error
    assert result.cost_lines == []
    assert result.parts[0].text.endswith("\nNote: the cost of this call is unknown.")  # type: ignore[union-attr]


async def test_a_refusal_keeps_what_it_says_besides_its_text(work: Path) -> None:
    from onellm.errors import CapabilityDeniedError
    from onellm.tools.builtin.media import _read

    with pytest.raises(CapabilityDeniedError) as caught:
        await _read(context(work), "../secret.png", "images[2]", 100)
    assert str(caught.value).startswith("images[2]: Path '../secret.png' is outside the read roots")
    assert caught.value.rule == "outside-roots"
