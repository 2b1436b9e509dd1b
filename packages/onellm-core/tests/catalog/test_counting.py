"""Token counting: the estimate's formulas, the tokenizer hook, the provider tier, and context usage."""

from __future__ import annotations

import struct
from decimal import Decimal

import pytest

from onellm.catalog import Catalog, LocalTokenizer, TokenEstimator, context_usage, count_tokens, estimate_text
from onellm.catalog.counting import (
    audio_tokens,
    chars_per_token,
    family_of,
    image_size,
    image_tokens,
    pdf_page_count,
    pdf_tokens,
    video_tokens,
)
from onellm.messages import AssetPart, Message, TextPart, Usage

SHIPPED = Catalog.shipped()


@pytest.mark.parametrize(
    ("text", "cpt", "want"),
    [
        ("", "4", 0),
        ("abcd", "4", 1),
        ("abcde", "4", 2),  # ceil(5/4)
        ("abcdefg", "3.5", 2),
        ("abcdefgh", "3.5", 3),  # ceil(8/3.5)
        ("é", "4", 1),  # two-byte: weight 2 -> ceil(2/4)
        ("éé", "4", 1),  # weight 4
        ("ééé", "4", 2),  # weight 6
        ("日本語", "4", 3),  # CJK: one token each
        ("ab日本", "4", 3),  # ceil(2/4) + 2
        ("😀", "4", 1),  # beyond the BMP: one token
    ],
)
def test_estimate_text(text: str, cpt: str, want: int) -> None:
    assert estimate_text(text, Decimal(cpt)) == want


def test_family_and_chars_per_token() -> None:
    assert family_of(SHIPPED.resolve("claude-sonnet")) == "anthropic"
    assert family_of(SHIPPED.resolve("gpt-6-luna")) == "openai"
    assert family_of(SHIPPED.resolve("gemini-flash")) == "gemini"
    assert family_of(SHIPPED.resolve("ollama:llama3")) == "openai"
    assert chars_per_token(SHIPPED.resolve("claude-sonnet")) == Decimal("3.5")
    assert chars_per_token(SHIPPED.resolve("gpt-6-luna")) == Decimal("4.0")
    assert chars_per_token(SHIPPED.resolve("gemini-flash")) == Decimal("4.0")
    assert chars_per_token(SHIPPED.resolve("jev-latest")) == Decimal("3.5")
    custom = Catalog.from_layers({"name": "x", "models": [{"name": "m", "properties": {"charsPerToken": 2.5}}]})
    assert chars_per_token(custom.resolve("x:m")) == Decimal("2.5")


@pytest.mark.parametrize(
    ("family", "w", "h", "want"),
    [
        ("anthropic", 750, 1, 1),
        ("anthropic", 1000, 1000, 1334),  # ceil(1e6/750)
        ("anthropic", 2000, 2000, 1600),  # capped
        ("anthropic", None, None, 1600),
        ("openai", 512, 512, 255),  # 85 + 170
        ("openai", 1024, 1024, 765),  # short side to 768: 768x768 -> 4 tiles
        ("openai", 4096, 2048, 1105),  # fit 2048x1024, short side 768 -> 1536x768: 3x2 tiles -> 85+1020
        ("openai", 100, 100, 255),
        ("gemini", 384, 384, 258),
        ("gemini", 385, 100, 258),  # above 384 on one side: 1x1 tile of 768
        ("gemini", 1536, 1536, 1032),  # 2x2 tiles
        ("gemini", 800, 100, 516),  # 2x1 tiles
    ],
)
def test_image_formulas(family: str, w: int | None, h: int | None, want: int) -> None:
    assert image_tokens(family, w, h) == want  # type: ignore[arg-type]


def test_openai_low_detail_is_flat() -> None:
    assert image_tokens("openai", 4000, 4000, detail="low") == 85


def test_pdf_audio_video() -> None:
    assert pdf_tokens("gemini", 3) == 774
    assert pdf_tokens("anthropic", 2) == 6000
    assert audio_tokens(10) == 320
    assert video_tokens(Decimal("1.5")) == 395  # ceil(394.5)
    pdf = b"%PDF-1.4 /Type /Pages /Type /Page x /Type /Page y /Type/Page"
    assert pdf_page_count(pdf) == 3


def _png(width: int, height: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + struct.pack(">II", width, height) + b"\x08\x02\x00\x00\x00"


def _jpeg(width: int, height: int) -> bytes:
    sof = b"\xff\xc0\x00\x11\x08" + struct.pack(">HH", height, width) + b"\x03" + b"\x00" * 9
    return b"\xff\xd8" + b"\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + sof + b"\xff\xd9"


def test_image_size_sniffing() -> None:
    assert image_size(_png(640, 480)) == (640, 480)
    assert image_size(_jpeg(1024, 768)) == (1024, 768)
    assert image_size(b"GIF89a" + struct.pack("<HH", 10, 20)) == (10, 20)
    assert image_size(b"nothing") is None


def test_messages_estimate_for_anthropic() -> None:
    est = TokenEstimator(SHIPPED.resolve("claude-sonnet"))
    msgs = [Message(user=[TextPart(text="abcdefg")], assistant=[TextPart(text="abcdefg")])]
    # reply 3 + system (4 + ceil(7/3.5)=2) + user (4 + 2) + assistant (4 + 2)
    assert est.messages(msgs, system="abcdefg") == 3 + 6 + 6 + 6
    tool = {"name": "t", "description": "", "input_schema": {}}
    with_tool = est.messages(msgs, system="abcdefg", tools=[tool])
    import json

    tool_text = estimate_text(json.dumps(tool), Decimal("3.5"))
    assert with_tool == 21 + 8 + tool_text + 346


def test_image_asset_counted_by_sniffed_size() -> None:
    est = TokenEstimator(SHIPPED.resolve("gpt-6-luna"))
    part = AssetPart(content_type="image/png", data=_png(512, 512))
    assert est.asset(part) == 255
    msgs = [Message(user=[TextPart(text="abcd"), part])]
    assert est.messages(msgs) == 3 + 4 + 1 + 255


def test_tokenizer_tier_counts_text() -> None:
    class Words:
        def count(self, text: str) -> int:
            return len(text.split())

    tokenizer = Words()
    assert isinstance(tokenizer, LocalTokenizer)
    est = TokenEstimator(SHIPPED.resolve("gpt-6-luna"), tokenizer=tokenizer)
    count = est.count([Message(user=[TextPart(text="one two three")])])
    assert (count.tokens, count.source) == (3 + 4 + 3, "tokenizer")


@pytest.mark.anyio
async def test_count_tokens_tries_the_provider_first() -> None:
    model = SHIPPED.resolve("claude-sonnet")
    msgs = [Message(user=[TextPart(text="hello")])]

    async def provider() -> int:
        return 42

    async def declines() -> int | None:
        return None

    assert (await count_tokens(model, msgs, provider_count=provider)).source == "provider"
    assert (await count_tokens(model, msgs, provider_count=provider)).tokens == 42
    fallback = await count_tokens(model, msgs, provider_count=declines)
    assert fallback.source == "estimate"
    assert fallback.tokens == 3 + 4 + 2  # ceil(5/3.5)


def test_context_usage() -> None:
    model = SHIPPED.resolve("claude-sonnet")
    usage = Usage(input_tokens=100_000, cache_read_input_tokens=150_000, cache_creation_input_tokens=50_000)
    assert context_usage(usage, model) == Decimal("0.3")
    assert context_usage(None, model) is None
    assert context_usage(usage, SHIPPED.resolve("tts-1")) is None


def test_inline_base64_image_is_sniffed() -> None:
    import base64

    est = TokenEstimator(SHIPPED.resolve("claude-sonnet"))
    part = AssetPart(content_type="image/png", data=base64.b64encode(_png(750, 750)).decode())
    assert est.asset(part) == 750  # 750 * 750 / 750
