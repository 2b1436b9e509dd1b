"""Every media request body validates against its vendor's reference: OpenAI's JSON bodies and multipart forms against
the OpenAPI document's request schemas (`openapi-media-request-schemas.json`, extracted by
`tools/extract_openapi_schemas.py`), Gemini's bodies against the v1beta protos. Both the fixtures' bodies and bodies
the codecs build from requests with every setting given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from onellm.providers._media import (
    ImageInput,
    ImageRequest,
    ModerationRequest,
    SpeakerVoice,
    SpeechRequest,
    TranscriptionRequest,
)
from onellm.providers.gemini._media import encode_image_body, encode_speech_body
from onellm.providers.openai._media import (
    encode_image_request,
    encode_moderation_request,
    encode_speech_request,
    encode_transcription_request,
)

from ._fixtures import PROVIDERS, case_id, cases, load
from .test_gemini_request_schema import PACKAGE, unknown_fields

SCHEMAS = json.loads((PROVIDERS / "openai" / "openapi-media-request-schemas.json").read_text(encoding="utf-8"))
ROOT_FOR_PATH = {
    "/v1/images/generations": "CreateImageRequest",
    "/v1/images/edits": "EditImageBodyJsonParam",
    "/v1/audio/speech": "CreateSpeechRequest",
    "/v1/audio/transcriptions": "CreateTranscriptionRequest",
    "/v1/audio/translations": "CreateTranslationRequest",
    "/v1/moderations": "CreateModerationRequest",
}
PNG = ImageInput(b"\x89PNG\r\n\x1a\nx", "image/png")


def any_of(node: Any) -> Any:
    """`oneOf` read as `anyOf`, as the chat schema test does (OpenAPI picks a branch by discriminator)."""
    if isinstance(node, dict):
        return {("anyOf" if k == "oneOf" else k): any_of(v) for k, v in node.items()}
    if isinstance(node, list):
        return [any_of(v) for v in node]
    return node


VALIDATORS = {
    path: Draft202012Validator({"$ref": f"#/components/schemas/{root}", "components": any_of(SCHEMAS["components"])})
    for path, root in ROOT_FOR_PATH.items()
}
_NUMBERS = {"temperature"}
_BOOLEANS = {"stream"}


def form_object(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """A multipart form as the object its schema describes: `name[]` fields as arrays, numbers and booleans from
    their text, the file as a string."""
    out: dict[str, Any] = {}
    for part in parts:
        name = part["name"]
        if "filename" in part:
            out[name] = "<binary>"
        elif name.endswith("[]"):
            out.setdefault(name[:-2], []).append(part["value"])
        elif name in _NUMBERS:
            out[name] = float(part["value"])
        elif name in _BOOLEANS:
            assert part["value"] in ("true", "false")
            out[name] = part["value"] == "true"
        else:
            out[name] = part["value"]
    return out


def problems(path: str, body: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATORS[path].iter_errors(body)]


@pytest.mark.parametrize("path", cases("openai-media"), ids=case_id)
def test_openai_fixture_request_follows_the_openapi_schema(path: Path) -> None:
    expected = load(path)["expectedRequest"]
    body = form_object(expected["parts"]) if "parts" in expected else expected["body"]
    assert problems(expected["path"], body) == []


@pytest.mark.parametrize("path", cases("gemini-media"), ids=case_id)
def test_gemini_fixture_request_uses_only_proto_fields(path: Path) -> None:
    body = load(path)["expectedRequest"]["body"]
    assert unknown_fields(body, f"{PACKAGE}.GenerateContentRequest") == []


def _multipart_parts(fields: list[tuple[str, str]], files: list[tuple[str, str, str, bytes]]) -> list[dict[str, Any]]:
    return [{"name": n, "value": v} for n, v in fields] + [{"name": n, "filename": f} for n, f, _, _ in files]


@pytest.mark.parametrize(
    "request_",
    [
        ImageRequest(
            model="gpt-image-2",
            prompt="p",
            count=3,
            size="1536x1024",
            quality="low",
            background="transparent",
            output_format="webp",
            output_compression=50,
            moderation="low",
            user_id="u-1",
        ),
        ImageRequest(model="gpt-image-1.5", prompt="p", images=[PNG, PNG], mask=PNG, input_fidelity="low", size="auto"),
        ImageRequest(model="dall-e-3", prompt="p", size="1792x1024", quality="hd", style="natural"),
        ImageRequest(model="gpt-image-2", prompt="p", partial_images=3),
    ],
    ids=["generation", "edit", "dall-e-3", "partial"],
)
@pytest.mark.parametrize("stream", [False, True])
def test_every_image_setting_sent_is_in_the_schema(request_: ImageRequest, stream: bool) -> None:
    if stream and (request_.count > 1 or request_.model.startswith("dall-e")):
        pytest.skip("not streamable; refused (tested elsewhere)")
    path, body, _ = encode_image_request(request_, stream=stream)
    assert problems(f"/v1{path}", body) == []


@pytest.mark.parametrize("model", ["tts-1", "gpt-4o-mini-tts"])
@pytest.mark.parametrize("stream", [False, True])
def test_every_speech_setting_sent_is_in_the_schema(model: str, stream: bool) -> None:
    request = SpeechRequest(
        model=model,
        text="hi",
        voice="voice_123",
        instructions="calm",
        format="flac",
        speed=2.0,
        language="en",
        speakers=[SpeakerVoice("A", "alloy")],
    )
    body, _ = encode_speech_request(request, stream=stream)
    assert problems("/v1/audio/speech", body) == []


@pytest.mark.parametrize("model", ["whisper-1", "gpt-4o-transcribe", "gpt-transcribe"])
@pytest.mark.parametrize("translate", [False, True])
@pytest.mark.parametrize("stream", [False, True])
def test_every_transcription_setting_sent_is_in_the_schema(model: str, translate: bool, stream: bool) -> None:
    request = TranscriptionRequest(
        model=model,
        audio=b"RIFF0000WAVE",
        content_type="audio/wav",
        language="de",
        prompt="p",
        translate=translate,
        temperature=0.4,
        timestamps=["word", "segment"],
        logprobs=True,
    )
    path, fields, files, _ = encode_transcription_request(request, stream=stream)
    assert problems(f"/v1{path}", form_object(_multipart_parts(fields, files))) == []


@pytest.mark.parametrize(
    ("texts", "images"), [(["a", "b"], []), (["a"], [PNG, PNG]), ([], [PNG])], ids=["texts", "both", "image"]
)
def test_every_moderation_input_is_in_the_schema(texts: list[str], images: list[ImageInput]) -> None:
    body = encode_moderation_request(ModerationRequest(model="omni-moderation-latest", texts=texts, images=images))
    assert problems("/v1/moderations", body) == []


def test_a_wrong_field_fails_the_schema() -> None:
    """The validators catch what they should (a misspelt field in a closed schema, a bad enum value)."""
    assert problems("/v1/audio/speech", {"model": "tts-1", "input": "x", "voice": "alloy", "speeed": 1})
    assert problems("/v1/audio/transcriptions", {"file": "<binary>", "model": "m", "response_format": "yaml"})


def test_every_gemini_setting_sent_is_in_the_protos() -> None:
    image, _ = encode_image_body(
        ImageRequest(model="gemini-3-pro-image", prompt="p", images=[PNG], aspect_ratio="21:9", size="1x1")
    )
    assert unknown_fields(image, f"{PACKAGE}.GenerateContentRequest") == []
    for request in (
        SpeechRequest(model="gemini-3.8-flash-tts", text="t", voice="Kore", language="de-DE"),
        SpeechRequest(model="gemini-3.8-flash-tts", text="t", speakers=[SpeakerVoice("A", "Kore")]),
    ):
        speech, _ = encode_speech_body(request)
        assert unknown_fields(speech, f"{PACKAGE}.GenerateContentRequest") == []
