"""The examples of docs/media.md run as written, in order and in one namespace, against a runtime whose providers
answer from the media fixtures; the values their comments show are then checked."""

from __future__ import annotations

import ast
import json
import re
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

import onellm

from ._cases import answer, load, runtime_for

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[4]
PAGE = ROOT / "docs" / "media.md"
FIXTURES = ROOT / "testdata" / "providers"
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def recorded(name: str) -> dict[str, Any]:
    folder, _, leaf = name.partition("/")
    return load(FIXTURES / folder / leaf / "case.json")["response"]  # type: ignore[no-any-return]


def server(request: httpx.Request) -> httpx.Response:
    path = request.url.path
    body = request.content
    if path == "/v1/images/generations":
        stream = json.loads(body).get("stream")
        return answer(recorded("openai-media/image-stream" if stream else "openai-media/image-generate"))
    if path == "/v1/images/edits":
        return answer(recorded("openai-media/image-edit"))
    if path == "/v1/audio/speech":
        sse = json.loads(body).get("stream_format") == "sse"
        return answer(recorded("openai-media/speech-stream" if sse else "openai-media/speech-tts-1"))
    if path == "/v1/audio/transcriptions":
        streamed = b'name="stream"' in body
        return answer(
            recorded("openai-media/transcription-stream" if streamed else "openai-media/transcription-tokens")
        )
    if path == "/v1/moderations":
        return answer(recorded("openai-media/moderation-texts"))
    if path.endswith("gemini-3.1-flash-image:generateContent"):
        return answer(recorded("gemini-media/image-generate"))
    if path.endswith("gemini-3.8-flash-tts:generateContent"):
        return answer(recorded("gemini-media/speech-multi-speaker"))
    return httpx.Response(404, json={"error": {"message": f"no fixture for {path}"}})


def drafts(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("draft-*.png"))


class Player:
    def __init__(self) -> None:
        self.fed: list[bytes] = []

    def feed(self, data: bytes) -> None:
        self.fed.append(data)


async def test_the_examples_run_and_show_what_they_say(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("soap.png", "lotion.png", "mask.png"):
        (tmp_path / name).write_bytes(b"\x89PNG\r\n\x1a\n" + name.encode())
    (tmp_path / "speech.mp3").write_bytes(b"ID3\x04\x00\x00\x00\x00\x00\x00mp3")
    rt, client = runtime_for(server)
    player = Player()
    namespace: dict[str, Any] = {"__name__": "docs_example", "Path": Path, "player": player}
    blocks = _BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 8
    async with client:
        with onellm.use_runtime(rt):
            for index, text in enumerate(blocks):
                code = compile(
                    textwrap.dedent(text), f"media.md[{index}]", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
                )
                result = eval(code, namespace)
                if result is not None:
                    await result
    ns = namespace
    assert (tmp_path / "lighthouse.png").read_bytes() == ns["result"].data
    assert (ns["result"].content_type, ns["result"].cost.total) == ("image/png", Decimal("0.001870"))
    assert drafts(tmp_path) == ["draft-0.png", "draft-1.png"]
    assert [(w.kind, w.detail["parameter"]) for w in ns["banana"].warnings] == [("parameter_stripped", "quality")]
    assert ns["speech"].content_type == "audio/mpeg"
    assert ns["speech"].usage.counters == {"characters": 14}
    assert ns["dialogue"].content_type == "audio/wav"
    assert ns["spoken"].cost.total == Decimal("0.0012204")
    assert b"".join(player.fed) == ns["spoken"].data
    assert ns["transcript"].text == "I see skies of blue."
    assert ns["verdict"].flagged
    assert [(v.input_index, v.flagged_categories) for v in ns["verdict"].verdicts] == [
        (0, ["harassment", "harassment/threatening", "violence"]),
        (1, []),
    ]
    assert ns["verdict"].cost.total == 0
    assert [t.name for t in ns["tools"]] == ["generate_image", "speak", "transcribe", "moderate"]
    assert ns["tools"][0].requires_approval
