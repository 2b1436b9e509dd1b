"""Replaying the media fixtures (`testdata/providers/openai-media`, `gemini-media`): a runtime whose provider talks
to an `httpx.MockTransport` that records each request and answers with the case's response, whole or in chunks."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import msgspec

from onellm import Runtime
from onellm.catalog import Catalog
from onellm.messages import AssetPart
from onellm.providers._media import ImageInput

ROOT = Path(__file__).resolve().parents[4]
PROVIDERS = ROOT / "testdata" / "providers"
KEY = "sk-fixture-key"
_ENCODE = msgspec.json.Encoder(decimal_format="string")


def cases(*folders: str) -> list[Path]:
    found: list[Path] = []
    for folder in folders:
        found.extend(sorted((PROVIDERS / folder).glob("*/case.json")))
    return found


def case_id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def plain(value: Any) -> Any:
    """Decimals as their text, dates as ISO text: a value comparable with a fixture's JSON."""
    return json.loads(_ENCODE.encode(value))


class Chunks(httpx.AsyncByteStream):
    """A response body that arrives in the given pieces."""

    def __init__(self, pieces: Sequence[bytes]) -> None:
        self.pieces = list(pieces)
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece

    async def aclose(self) -> None:
        self.closed = True


def split(data: bytes, size: int | None) -> list[bytes]:
    if not size:
        return [data]
    return [data[i : i + size] for i in range(0, len(data), size)]


def answer(recorded: dict[str, Any], size: int | None = None) -> httpx.Response:
    headers = recorded.get("headers", {})
    status = recorded.get("status", 200)
    if "stream" in recorded:
        return httpx.Response(status, headers=headers, stream=Chunks(split(recorded["stream"].encode(), size)))
    if "chunksBase64" in recorded:
        return httpx.Response(
            status, headers=headers, stream=Chunks([base64.b64decode(c) for c in recorded["chunksBase64"]])
        )
    if "bodyBase64" in recorded:
        return httpx.Response(status, headers=headers, content=base64.b64decode(recorded["bodyBase64"]))
    return httpx.Response(status, headers=headers, content=json.dumps(recorded["body"]).encode())


class Recorder:
    """The mock server: keeps every request, answers in order."""

    def __init__(self, responses: Sequence[dict[str, Any]], size: int | None = None) -> None:
        self.responses = list(responses)
        self.size = size
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        recorded = self.responses[min(len(self.requests), len(self.responses)) - 1]
        return answer(recorded, self.size)


def runtime_for(
    handler: Callable[[httpx.Request], httpx.Response], **options: Any
) -> tuple[Runtime, httpx.AsyncClient]:
    """A runtime on the shipped catalog whose OpenAI and Gemini providers send through `handler`."""
    from onellm.providers.gemini import GeminiProvider
    from onellm.providers.openai import OpenAIProvider

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    rt = Runtime(catalog=Catalog.shipped(), environ={}, **options)
    rt.providers.set("openai", OpenAIProvider(api_key=KEY, http_client=client))
    rt.providers.set("gemini", GeminiProvider(api_key=KEY, http_client=client))
    return rt, client


def blob(value: dict[str, Any]) -> Any:
    data = base64.b64decode(value["base64"])
    if "contentType" not in value and "name" not in value:
        return data
    return AssetPart(content_type=value.get("contentType"), name=value.get("name"), size=len(data), data=data)


def image(value: dict[str, Any]) -> ImageInput:
    return ImageInput(base64.b64decode(value["base64"]), value["contentType"])


def arguments(request: dict[str, Any]) -> dict[str, Any]:
    """The case's request as keyword arguments of a verb."""
    out: dict[str, Any] = {}
    for key, value in request.items():
        if key == "images":
            out[key] = [image(v) for v in value]
        elif key == "mask":
            out[key] = image(value)
        elif key == "audio":
            out[key] = blob(value)
        else:
            out[key] = value
    return out


# -- multipart -------------------------------------------------------------------------------------------------------


def parse_multipart(body: bytes, content_type: str) -> list[dict[str, Any]]:
    """A `multipart/form-data` body as its parts, strictly: every part needs a name; a file part its file name and
    content type. A body that is not well formed fails the test."""
    kind, _, params = content_type.partition(";")
    assert kind.strip() == "multipart/form-data", content_type
    boundary = params.strip().removeprefix("boundary=").strip('"').encode()
    assert boundary, content_type
    delimiter = b"--" + boundary
    assert body.startswith(delimiter + b"\r\n"), body[:80]
    assert body.endswith(delimiter + b"--\r\n"), body[-80:]
    inner = body[len(delimiter) + 2 : -(len(delimiter) + 4)]
    parts: list[dict[str, Any]] = []
    for raw in inner.split(b"\r\n" + delimiter + b"\r\n"):
        head, sep, content = raw.partition(b"\r\n\r\n")
        assert sep, raw[:80]
        content = content.removesuffix(b"\r\n")
        headers = {}
        for header_line in head.decode("utf-8").split("\r\n"):
            name, _, value = header_line.partition(":")
            headers[name.strip().lower()] = value.strip()
        disposition = headers.pop("content-disposition")
        fields = {k.strip(): v.strip().strip('"') for k, _, v in (p.partition("=") for p in disposition.split(";")[1:])}
        part: dict[str, Any] = {"name": fields["name"]}
        if "filename" in fields:
            part["filename"] = fields["filename"]
            part["contentType"] = headers.pop("content-type")
            part["base64"] = base64.b64encode(content).decode()
        else:
            part["value"] = content.decode("utf-8")
        assert not headers, headers
        parts.append(part)
    return parts


def check_request(request: httpx.Request, expected: dict[str, Any], *, streamed: bool = False) -> None:
    assert request.method == expected["method"]
    assert request.url.path == expected["path"]
    for name, value in expected.get("headers", {}).items():
        assert request.headers.get(name) == value, name
    if "parts" in expected:
        assert parse_multipart(request.content, request.headers["content-type"]) == expected["parts"]
    else:
        assert json.loads(request.content) == expected["body"]


# -- what a result says ----------------------------------------------------------------------------------------------


def warning_names(warnings: Sequence[Any]) -> list[str]:
    out = []
    for w in warnings:
        parameter = (w.detail or {}).get("parameter") if w.kind == "parameter_stripped" else None
        out.append(f"{w.kind}:{parameter}" if parameter else w.kind)
    return out


def usage_data(usage: Any) -> Any:
    if usage is None:
        return None
    data = plain(usage.to_data())
    data.pop("cost", None)
    data.pop("costLines", None)
    return data


def cost_data(cost: Any) -> tuple[Any, Any]:
    if cost is None:
        return None, None
    return [plain(line.to_data()) for line in cost.lines], str(cost.total)
