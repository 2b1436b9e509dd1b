"""Counting input tokens: the provider's endpoint, a local tokenizer, or the estimate, and each count says which.

The estimate (`docs/pricing-and-counting.md`, "Token counting") errs high:

- text: characters per token by family (4.0 for OpenAI-style and Gemini models, 3.5 otherwise; the model's property
  `charsPerToken` overrides), two-byte characters (U+0080 to U+07FF) weigh double, CJK and every other wider character
  is one token of its own;
- 4 tokens per message, 3 for the reply, 8 per tool (plus its name, description and schema as text), and 346 once for
  Anthropic when any tool is present;
- images by the vendor's formula: Anthropic `width × height / 750` capped at 1,600; OpenAI 85 + 170 per 512 px tile
  after fitting in 2048 × 2048 and bringing the short side down to 768; Gemini 258 up to 384 × 384, else 258 per
  768 px tile;
- PDFs by pages (258 a page for Gemini, 3,000 for the others: the top of Anthropic's published 1,500 to 3,000), audio
  at 32 tokens a second and video at 263 (Gemini's published rates), with durations estimated from the byte size at a
  low bitrate when the length is not known.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from onellm._public import publish as _publish
from onellm.catalog._schema import to_decimal

if TYPE_CHECKING:
    from onellm.catalog._catalog import ResolvedModel
    from onellm.messages import Usage

__all__ = [
    "CountSource",
    "LocalTokenizer",
    "TokenCount",
    "TokenEstimator",
    "audio_tokens",
    "chars_per_token",
    "context_usage",
    "count_tokens",
    "estimate_text",
    "family_of",
    "image_size",
    "image_tokens",
    "pdf_page_count",
    "pdf_tokens",
    "video_tokens",
]

_Family = Literal["openai", "gemini", "anthropic", "other"]
CountSource = Literal["provider", "tokenizer", "estimate"]

_PER_MESSAGE = 4
_PER_REPLY = 3
_PER_TOOL = 8
_ANTHROPIC_TOOL_ALLOWANCE = 346
_AUDIO_TOKENS_PER_SECOND = 32
_VIDEO_TOKENS_PER_SECOND = 263
_AUDIO_BYTES_PER_SECOND = 4_000  # 32 kbit/s: a low bitrate, so a guessed duration is long rather than short
_VIDEO_BYTES_PER_SECOND = 125_000  # 1 Mbit/s
_PDF_TOKENS_PER_PAGE = {"gemini": 258, "anthropic": 3_000, "openai": 3_000, "other": 3_000}
_PDF_BYTES_PER_PAGE = 3_000  # page count guessed from size when the file cannot be read: small pages, so more pages


@runtime_checkable
class LocalTokenizer(Protocol):
    """A tokenizer built from a vendor's published vocabulary. It counts text exactly; allowances stay the estimate's."""

    def count(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class TokenCount:
    """A token count and which tier answered: `provider`, `tokenizer` or `estimate`."""

    tokens: int
    source: CountSource


def family_of(model: ResolvedModel) -> _Family:
    """The counting family of a resolved model, from its provider's protocol (or name)."""
    protocol = (model.provider_entry.protocol or model.provider).lower()
    if protocol in ("anthropic",):
        return "anthropic"
    if protocol in ("gemini", "google", "vertex"):
        return "gemini"
    if protocol.startswith("openai") or model.preset is not None:
        return "openai"
    return "other"


def chars_per_token(model: ResolvedModel) -> Decimal:
    """The model's `charsPerToken` property, else 4.0 for OpenAI-style and Gemini models and 3.5 otherwise."""
    value = to_decimal(model.properties.get("charsPerToken"))
    if value is not None and value > 0:
        return value
    return Decimal("4.0") if family_of(model) in ("openai", "gemini") else Decimal("3.5")


def _is_wide(code: int) -> bool:
    return code >= 0x800


def estimate_text(text: str, cpt: Decimal | float | int) -> int:
    """Tokens for `text`: weighted characters over `cpt` (rounded up), plus one token per wide character.

    ASCII characters weigh 1 and two-byte characters (U+0080 to U+07FF) weigh 2; CJK and every character from U+0800
    up is one token on its own.
    """
    if not text:
        return 0
    if text.isascii():
        weighted = len(text)
        wide = 0
    else:
        weighted = 0
        wide = 0
        for ch in text:
            code = ord(ch)
            if code < 0x80:
                weighted += 1
            elif code < 0x800:
                weighted += 2
            else:
                wide += 1
    per = Decimal(cpt) if not isinstance(cpt, Decimal) else cpt
    return math.ceil(Decimal(weighted) / per) + wide if weighted else wide


def image_tokens(family: _Family, width: int | None, height: int | None, *, detail: str | None = None) -> int:
    """Tokens for one image by the vendor's documented formula; unknown dimensions take the family's largest figure."""
    if family == "anthropic" or family == "other":
        if not width or not height:
            return 1_600
        return min(1_600, math.ceil(width * height / 750))
    if family == "openai":
        if detail == "low":
            return 85
        if not width or not height:
            width = height = 2048
        w, h = float(width), float(height)
        if max(w, h) > 2048:
            scale = 2048 / max(w, h)
            w, h = w * scale, h * scale
        if min(w, h) > 768:
            scale = 768 / min(w, h)
            w, h = w * scale, h * scale
        tiles = math.ceil(w / 512) * math.ceil(h / 512)
        return 85 + 170 * tiles
    # gemini
    if not width or not height:
        width = height = 3072
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


def pdf_tokens(family: _Family, pages: int) -> int:
    return _PDF_TOKENS_PER_PAGE[family] * max(1, pages)


def audio_tokens(seconds: float | Decimal) -> int:
    return math.ceil(Decimal(str(seconds)) * _AUDIO_TOKENS_PER_SECOND)


def video_tokens(seconds: float | Decimal) -> int:
    return math.ceil(Decimal(str(seconds)) * _VIDEO_TOKENS_PER_SECOND)


def pdf_page_count(data: bytes) -> int:
    """Pages of a PDF, counted from its page objects; from the size when none are found."""
    count = data.count(b"/Type /Page") + data.count(b"/Type/Page")
    count -= data.count(b"/Type /Pages") + data.count(b"/Type/Pages")
    if count > 0:
        return count
    return max(1, math.ceil(len(data) / _PDF_BYTES_PER_PAGE))


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, GIF, JPEG or WebP header; None for anything else."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        w, h = struct.unpack(">II", data[16:24])
        return int(w), int(h)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        w, h = struct.unpack("<HH", data[6:10])
        return int(w), int(h)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            w = 1 + int.from_bytes(data[24:27], "little")
            h = 1 + int.from_bytes(data[27:30], "little")
            return w, h
        if chunk == b"VP8 ":
            w, h = struct.unpack("<HH", data[26:30])
            return int(w) & 0x3FFF, int(h) & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        return None
    if data[:2] == b"\xff\xd8":
        i = 2
        n = len(data)
        while i + 9 < n:
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                i += 2
                continue
            length = int.from_bytes(data[i + 2 : i + 4], "big")
            if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
                h = int.from_bytes(data[i + 5 : i + 7], "big")
                w = int.from_bytes(data[i + 7 : i + 9], "big")
                return w, h
            i += 2 + length
    return None


def _asset_bytes(part: Any) -> bytes | None:
    data = getattr(part, "data", None)
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, str):
        import base64
        import binascii

        try:
            return base64.b64decode(data, validate=False)
        except (binascii.Error, ValueError):
            return None
    return None


def _asset_meta(part: Any, key: str) -> Any:
    for holder in (getattr(part, "asset_extra", None), getattr(part, "extra", None)):
        if isinstance(holder, Mapping) and key in holder:
            return holder[key]
    return None


class TokenEstimator:
    """The estimate tier for one model, with an optional local tokenizer for the text."""

    def __init__(self, model: ResolvedModel, *, tokenizer: LocalTokenizer | None = None) -> None:
        self.model = model
        self.family: _Family = family_of(model)
        self.chars_per_token = chars_per_token(model)
        self.tokenizer = tokenizer

    @property
    def source(self) -> CountSource:
        return "tokenizer" if self.tokenizer is not None else "estimate"

    def text(self, text: str) -> int:
        if not text:
            return 0
        if self.tokenizer is not None:
            return int(self.tokenizer.count(text))
        return estimate_text(text, self.chars_per_token)

    def asset(self, part: Any) -> int:
        """Tokens for one asset (image, PDF, audio, video) or file reference."""
        content_type = (getattr(part, "content_type", None) or "").lower()
        size = getattr(part, "size", None)
        data = _asset_bytes(part)
        if size is None and data is not None:
            size = len(data)
        if content_type.startswith("image/"):
            width, height = _asset_meta(part, "width"), _asset_meta(part, "height")
            if (not width or not height) and data is not None:
                found = image_size(data)
                if found is not None:
                    width, height = found
            return image_tokens(self.family, width, height, detail=_asset_meta(part, "detail"))
        if content_type == "application/pdf":
            pages = _asset_meta(part, "pages")
            if not pages:
                if data is not None:
                    pages = pdf_page_count(data)
                else:
                    pages = max(1, math.ceil((size or _PDF_BYTES_PER_PAGE) / _PDF_BYTES_PER_PAGE))
            return pdf_tokens(self.family, int(pages))
        if content_type.startswith(("audio/", "video/")):
            seconds = _asset_meta(part, "durationSeconds") or _asset_meta(part, "duration")
            video = content_type.startswith("video/")
            if not seconds:
                rate = _VIDEO_BYTES_PER_SECOND if video else _AUDIO_BYTES_PER_SECOND
                seconds = Decimal(max(1, math.ceil((size or rate) / rate)))
            return video_tokens(seconds) if video else audio_tokens(seconds)
        if data is not None and (
            content_type.startswith("text/") or content_type in ("application/json", "application/xml")
        ):
            return self.text(data.decode("utf-8", "replace"))
        # Anything else: by size, as text would be.
        return math.ceil(Decimal(size or 0) / self.chars_per_token)

    def part(self, part: Any) -> int:
        kind = getattr(part, "kind", None)
        if kind == "text" or kind == "reasoning":
            return self.text(getattr(part, "text", "") or "")
        if kind == "refusal":
            return self.text(getattr(part, "refusal", "") or "")
        if kind == "json":
            return self.text(json.dumps(getattr(part, "json", None), default=str, ensure_ascii=False))
        if kind in ("asset", "fileRef"):
            return self.asset(part)
        if kind == "hostedToolCall":
            return self.text(json.dumps(getattr(part, "inputs", None), default=str, ensure_ascii=False)) + self.text(
                json.dumps(getattr(part, "result", None), default=str, ensure_ascii=False)
            )
        if isinstance(part, str):
            return self.text(part)
        return 0

    def tools(self, tools: Sequence[Any]) -> int:
        """8 per tool plus its name, description and schema as text; Anthropic adds 346 once."""
        if not tools:
            return 0
        total = 0
        for tool in tools:
            total += _PER_TOOL
            if isinstance(tool, Mapping):
                total += self.text(json.dumps(tool, default=str, ensure_ascii=False))
            else:
                total += self.text(str(getattr(tool, "name", "") or ""))
                total += self.text(str(getattr(tool, "description", "") or ""))
                schema = getattr(tool, "input_schema", None)
                if schema is not None:
                    total += self.text(json.dumps(schema, default=str, ensure_ascii=False))
        if self.family == "anthropic":
            total += _ANTHROPIC_TOOL_ALLOWANCE
        return total

    def messages(self, messages: Iterable[Any], *, system: str | None = None, tools: Sequence[Any] = ()) -> int:
        """Input tokens of a request: system prompt, every message with its allowance, the reply, the tools."""
        total = _PER_REPLY
        if system:
            total += _PER_MESSAGE + self.text(system)
        for message in messages:
            total += self._message_once(message)
        return total + self.tools(tools)

    def _message_once(self, message: Any) -> int:
        """`_message`, kept in the message's memo while it is unchanged (a spend cap estimates the whole history on
        every turn). Not with a local tokenizer, whose counts are its own affair."""
        if self.tokenizer is not None or isinstance(message, str):
            return self._message(message)
        from onellm.messages import Message
        from onellm.messages.memo import memo_for

        if type(message) is not Message:
            return self._message(message)
        key = ("tokens", self.family, self.chars_per_token)
        memo = memo_for(message, key)
        if memo is None:
            return self._message(message)
        found = memo.get(key)
        if found is None:
            found = memo.put(key, self._message(message))
        return int(found)

    def _message(self, message: Any) -> int:
        if isinstance(message, str):
            return _PER_MESSAGE + self.text(message)
        total = 0
        user = getattr(message, "user", None) or ()
        if user:
            total += _PER_MESSAGE + sum(self.part(p) for p in user)
        assistant = getattr(message, "assistant", None) or ()
        tool_calls = getattr(message, "tool_calls", None) or ()
        if assistant or tool_calls:
            total += _PER_MESSAGE + sum(self.part(p) for p in assistant)
        for call in tool_calls:
            total += self.text(str(getattr(call, "tool", "") or ""))
            total += self.text(json.dumps(getattr(call, "inputs", None), default=str, ensure_ascii=False))
            result = getattr(call, "result", None) or ()
            total += _PER_MESSAGE + sum(self.part(p) for p in result)
        return total

    def count(self, messages: Iterable[Any], *, system: str | None = None, tools: Sequence[Any] = ()) -> TokenCount:
        return TokenCount(self.messages(messages, system=system, tools=tools), self.source)


async def count_tokens(
    model: ResolvedModel,
    messages: Iterable[Any],
    *,
    system: str | None = None,
    tools: Sequence[Any] = (),
    provider_count: Callable[[], Awaitable[int | None]] | None = None,
    tokenizer: LocalTokenizer | None = None,
) -> TokenCount:
    """Count a request's input tokens with the first tier that answers: the provider's count endpoint (when given and
    it returns a number), then the local tokenizer, then the estimate."""
    items = list(messages)
    if provider_count is not None:
        answer = await provider_count()
        if answer is not None:
            return TokenCount(int(answer), "provider")
    return TokenEstimator(model, tokenizer=tokenizer).count(items, system=system, tools=tools)


def context_usage(usage: Usage | None, model: ResolvedModel) -> Decimal | None:
    """The last turn's total input tokens (uncached, cache writes, cache reads) over the model's context window."""
    window = model.entry.context_window
    if usage is None or not window:
        return None
    return Decimal(usage.total_input_tokens) / Decimal(window)


_publish("onellm.catalog", LocalTokenizer, TokenCount, TokenEstimator)
