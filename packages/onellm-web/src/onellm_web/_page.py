"""`WebPage`, and turning a fetched body into one: HTML to Markdown, text as text, binary refused."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from onellm_web._charset import decode, detect
from onellm_web._errors import BinaryContentError

__all__ = ["WebPage", "html_to_markdown", "media_type", "page_from_body"]

_HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_APPLICATION_TYPES: Final = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/graphql",
        "application/x-ndjson",
        "application/x-www-form-urlencoded",
        "application/csv",
        "application/x-tex",
        "application/x-httpd-php",
    }
)
_BLANK_LINES: Final = re.compile(r"\n{3,}")
_SNIFF_HTML: Final = re.compile(rb"\s*(?:<!doctype\s+html|<html|<head|<body|<title|<meta|<!--)", re.IGNORECASE)


def media_type(content_type: str | None) -> str:
    """The media type of a `Content-Type` value, lower-case, without parameters ("" when there is none)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def kind_of(content_type: str | None) -> str:
    """`html`, `text`, `binary`, or `unknown` (no type given) for a `Content-Type` value."""
    media = media_type(content_type)
    if not media:
        return "unknown"
    if media in _HTML_TYPES:
        return "html"
    if media.startswith("text/") or media in _TEXT_APPLICATION_TYPES or media.endswith(("+json", "+xml")):
        return "text"
    return "binary"


def _looks_binary(data: bytes, bom: int) -> bool:
    return bom == 0 and b"\x00" in data[:1024]


@dataclass(frozen=True, slots=True)
class WebPage:
    """A fetched page: its main content as Markdown (or a text body as text), with where it came from."""

    url: str
    """The final URL, after redirects."""
    title: str | None
    """The page's title (`<title>`, else `og:title`, else the first `h1`); None for text and untitled pages."""
    markdown: str
    """The main content as Markdown with absolute links; for a text type, the text as it came."""
    content_type: str
    """The media type of the body, for example `text/html`."""
    charset: str
    """The codec the body was decoded with, for example `utf-8` or `cp932` (Shift_JIS)."""
    is_html: bool
    """Whether the body was HTML (converted) rather than text (returned as is)."""
    status: int = 200
    """The HTTP status."""
    bytes_read: int = 0
    """Bytes of the body read (after decompression)."""
    cut: bool = False
    """Whether the body was longer than the byte limit: only its first `bytes_read` bytes were read."""

    def render(self, *, start: int = 0, max_chars: int | None = None) -> str:
        """The text the tool returns: the title first, the source URL, then the content from character `start`, at
        most `max_chars` characters of it (cut at a line break when one is near), with a note saying where it stopped
        and how to read on.

        Raises:
            ValueError: `start` is negative or past the end of the content, or `max_chars` is below 1.
        """
        total = len(self.markdown)
        if start < 0 or (start > 0 and start >= total):
            raise ValueError(f"start must be between 0 and {max(total - 1, 0)} (the content has {total} characters)")
        if max_chars is not None and max_chars < 1:
            raise ValueError(f"max_chars must be at least 1, not {max_chars}")
        head = [f"# {self.title}"] if self.title else []
        head.append(f"Source: {self.url}")
        if not self.is_html:
            head.append(f"Content-Type: {self.content_type}")
        if self.cut:
            head.append(
                f"[The page is longer than {self.bytes_read} bytes; only its first {self.bytes_read} were read.]"
            )
        parts = ["\n".join(head)]
        if start > 0:
            parts.append(f"[Continued from character {start} of {total}.]")
        end = total if max_chars is None else min(total, start + max_chars)
        if end < total:
            assert max_chars is not None
            line_break = self.markdown.rfind("\n", start + (max_chars * 4) // 5, end)
            if line_break > start:
                end = line_break
        piece = self.markdown[start:end].strip("\n")
        if piece:
            parts.append(piece)
        elif total == 0:
            parts.append("[The page has no text content.]")
        if end < total:
            parts.append(
                f"[Cut: characters {start} to {end} of {total} shown. Call again with start={end} to read on.]"
            )
        return "\n\n".join(parts)


def _code_language(element: Any) -> str | None:
    classes = element.get("class") or []
    if isinstance(classes, str):
        classes = classes.split()
    for name in classes:
        if isinstance(name, str) and name.startswith("language-"):
            return name[len("language-") :]
    return None


def _markdown(fragment: str) -> str:
    from markdownify import ATX, BACKSLASH, MarkdownConverter

    converter = MarkdownConverter(
        heading_style=ATX,
        bullets="-",
        newline_style=BACKSLASH,
        escape_asterisks=False,
        escape_underscores=False,
        code_language_callback=_code_language,
        table_infer_header=True,
    )
    text = converter.convert(fragment)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", text).strip("\n")


def _without_leading_title(markdown: str, title: str | None) -> str:
    """The Markdown without a first heading that repeats the title (the title is printed first anyway)."""
    if not title:
        return markdown
    first, _, rest = markdown.partition("\n")
    if first.startswith("#") and first.lstrip("#").strip().casefold() == title.casefold():
        return rest.lstrip("\n")
    return markdown


def html_to_markdown(body: bytes | str, *, url: str, content_type: str = "text/html", images: bool = True) -> WebPage:
    """Turn a page already fetched into a `WebPage`: its main content as Markdown, title first, links absolute.

    Args:
        body: The page, as bytes (decoded by its byte-order mark, the `charset` of `content_type`, its `<meta>`
            charset, or UTF-8 / windows-1252) or as text.
        url: Where the page came from: relative links are resolved against it.
        content_type: The `Content-Type` header. A text type other than HTML is returned as text.
        images: Keep images as Markdown image links.

    Raises:
        BinaryContentError: `content_type` is a binary type, or the body holds NUL bytes.
    """
    if isinstance(body, str):
        header = f"{media_type(content_type) or 'text/html'}; charset=utf-8"
        return page_from_body(body.encode("utf-8"), url=url, content_type=header, images=images, given_text=True)
    return page_from_body(body, url=url, content_type=content_type, images=images)


def page_from_body(
    data: bytes,
    *,
    url: str,
    content_type: str | None,
    images: bool = True,
    status: int = 200,
    cut: bool = False,
    given_text: bool = False,
) -> WebPage:
    """The `WebPage` of a body: HTML converted, text kept, binary refused (see `html_to_markdown`). `given_text` says
    the caller handed text, so NUL characters are not taken for binary data."""
    from onellm_web._extract import MAX_WRITTEN, extract

    kind = kind_of(content_type)
    media = media_type(content_type)
    if kind == "binary":
        raise BinaryContentError(
            f"{url} is {media} ({len(data)} bytes), not a web page or text; fetch_webpage_markdown reads HTML and "
            "text only",
            url=url,
            status=status,
            content_type=content_type,
        )
    if kind == "unknown":
        kind = "html" if _SNIFF_HTML.match(data[:1024]) else "text"
        media = "text/html" if kind == "html" else "text/plain"
    codec, bom = detect(data, content_type, html=kind == "html", cut=cut)
    if not given_text and _looks_binary(data, bom) and not codec.startswith("utf-16"):
        raise BinaryContentError(
            f"{url} holds binary data ({len(data)} bytes{f' sent as {media}' if content_type else ''}), not a web "
            "page or text; fetch_webpage_markdown reads HTML and text only",
            url=url,
            status=status,
            content_type=content_type,
        )
    text = decode(data, codec, bom, cut=cut)
    if kind == "text":
        return WebPage(
            url=url,
            title=None,
            markdown=text,
            content_type=media,
            charset=codec,
            is_html=False,
            status=status,
            bytes_read=len(data),
            cut=cut,
        )
    extracted = extract(text, url, images=images)
    markdown = _without_leading_title(_markdown(extracted.html), extracted.title)
    if not extracted.complete:
        markdown += f"\n\n[The rest of the page was left out: its main content has more than {MAX_WRITTEN} elements.]"
    return WebPage(
        url=url,
        title=extracted.title,
        markdown=markdown,
        content_type=media,
        charset=codec,
        is_html=True,
        status=status,
        bytes_read=len(data),
        cut=cut,
    )
