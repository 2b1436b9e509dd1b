"""Which character encoding a body is in, and its text.

The order is the HTML standard's: a byte-order mark wins, then the `charset` of the `Content-Type` header, then (for
HTML) a `<meta charset>` or `<meta http-equiv="Content-Type">` near the start of the page, or (for XML types) the XML
declaration. Without any of these, a body that is valid UTF-8 is UTF-8, and anything else is read as windows-1252, the
standard's default. Labels are mapped as browsers map them: `Shift_JIS` reads as Microsoft's superset (cp932),
`ISO-8859-1` and `US-ASCII` as windows-1252, `GB2312` and `GBK` as GB18030; a label no browser knows is ignored.
"""

from __future__ import annotations

import codecs
import re
from typing import Final

__all__ = ["decode", "detect"]

_PRESCAN_BYTES: Final = 16 * 1024

_BOMS: Final = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))

_LABELS: Final = {
    **dict.fromkeys(
        ("utf-8", "utf8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"), "utf-8"
    ),
    **dict.fromkeys(
        (
            "us-ascii",
            "ascii",
            "ansi_x3.4-1968",
            "iso-8859-1",
            "iso8859-1",
            "iso88591",
            "iso_8859-1",
            "iso_8859-1:1987",
            "latin1",
            "l1",
            "cp819",
            "ibm819",
            "csisolatin1",
            "iso-ir-100",
            "windows-1252",
            "cp1252",
            "x-cp1252",
        ),
        "cp1252",
    ),
    **dict.fromkeys(
        ("shift_jis", "shift-jis", "sjis", "x-sjis", "ms_kanji", "ms932", "windows-31j", "csshiftjis"), "cp932"
    ),
    **dict.fromkeys(("euc-jp", "x-euc-jp", "cseucpkdfmtjapanese"), "euc_jp"),
    **dict.fromkeys(("iso-2022-jp", "csiso2022jp"), "iso2022_jp"),
    **dict.fromkeys(
        (
            "euc-kr",
            "cseuckr",
            "csksc56011987",
            "iso-ir-149",
            "korean",
            "ks_c_5601-1987",
            "ks_c_5601-1989",
            "ksc5601",
            "ksc_5601",
            "windows-949",
        ),
        "cp949",
    ),
    **dict.fromkeys(
        (
            "gb2312",
            "gbk",
            "x-gbk",
            "chinese",
            "csgb2312",
            "csiso58gb231280",
            "gb_2312",
            "gb_2312-80",
            "iso-ir-58",
            "cp936",
            "ms936",
            "windows-936",
            "gb18030",
        ),
        "gb18030",
    ),
    **dict.fromkeys(("big5", "big5-hkscs", "cn-big5", "csbig5", "x-x-big5"), "big5hkscs"),
    **dict.fromkeys(("koi8-r", "koi8r", "koi", "koi8", "cskoi8r", "koi8_r"), "koi8_r"),
    **dict.fromkeys(("koi8-u", "koi8-ru"), "koi8_u"),
    **dict.fromkeys(("utf-16", "utf-16le"), "utf-16-le"),
    "utf-16be": "utf-16-be",
    **dict.fromkeys(("tis-620", "iso-8859-11", "windows-874", "dos-874"), "cp874"),
    **dict.fromkeys(("macintosh", "mac", "x-mac-roman", "csmacintosh"), "mac_roman"),
    "x-mac-cyrillic": "mac_cyrillic",
    "ibm866": "cp866",
    "cp866": "cp866",
    "866": "cp866",
}
_NUMBERED: Final = re.compile(r"(?:iso[-_]?8859[-_]?(\d{1,2})|(?:windows|cp|x-cp)[-_]?(125\d))\Z")
_META_ATTRIBUTE: Final = re.compile(rb"""([a-zA-Z-]+)\s*=\s*("[^"]*"|'[^']*'|[^\s>"']+)""")
_CONTENT_CHARSET: Final = re.compile(rb"""charset\s*=\s*["']?\s*([A-Za-z0-9_:.+-]+)""", re.IGNORECASE)
_XML_DECLARATION: Final = re.compile(rb"""<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9_.:+-]+)["']""")


def codec_for(label: str | None) -> str | None:
    """The Python codec a browser would use for a charset `label`, or None for a label browsers do not know."""
    if not label:
        return None
    key = label.strip().strip("\"'").strip().lower()
    if key in _LABELS:
        return _LABELS[key]
    match = _NUMBERED.match(key)
    if match:
        if match.group(1):
            number = int(match.group(1))
            # ISO-8859-9 is read as windows-1254 by browsers; the other parts exist as Python codecs.
            if number == 9:
                return "cp1254"
            return f"iso8859_{number}" if number in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16) else None
        return f"cp{match.group(2)}"
    return None


def _header_charset(content_type: str | None) -> str | None:
    if not content_type:
        return None
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            return value
    return None


def _meta_charset(data: bytes) -> str | None:
    """The charset a `<meta>` near the start names (comments skipped), in one forward pass."""
    window = data[:_PRESCAN_BYTES].lower()
    pos = 0
    comment = window.find(b"<!--")
    while True:
        tag = window.find(b"<meta", pos)
        if 0 <= comment < pos:
            comment = window.find(b"<!--", pos)
        if comment >= 0 and (tag < 0 or comment < tag):
            end = window.find(b"-->", comment + 4)
            if end < 0:
                return None
            pos = end + 3
            continue
        if tag < 0:
            return None
        end = window.find(b">", tag)
        if end < 0:
            return None
        attributes: dict[bytes, bytes] = {}
        for key, value in _META_ATTRIBUTE.findall(window[tag + 5 : end]):
            attributes.setdefault(key, value.strip(b"\"'"))
        if b"charset" in attributes:
            return attributes[b"charset"].decode("ascii", "replace")
        if attributes.get(b"http-equiv", b"").strip() == b"content-type":
            found = _CONTENT_CHARSET.search(attributes.get(b"content", b""))
            if found:
                return found.group(1).decode("ascii", "replace")
        pos = end + 1


def _looks_utf8(data: bytes, cut: bool) -> bool:
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        decoder.decode(data, final=not cut)
    except UnicodeDecodeError:
        return False
    return True


def detect(data: bytes, content_type: str | None, *, html: bool, cut: bool = False) -> tuple[str, int]:
    """The codec to decode `data` with, and the length of its byte-order mark (0 without one).

    Args:
        data: The body, or its first part.
        content_type: The `Content-Type` header, for its `charset`.
        html: Look for a `<meta>` charset (HTML) rather than an XML declaration.
        cut: The body was cut at a size limit (a multibyte character may be cut at the end).
    """
    for mark, named in _BOMS:
        if data.startswith(mark):
            return named, len(mark)
    codec = codec_for(_header_charset(content_type))
    if codec is not None:
        return codec, 0
    if html:
        label = _meta_charset(data)
        if label is not None:
            codec = codec_for(label)
            if codec is not None:
                # A page that says UTF-16 in ASCII bytes is not UTF-16: browsers read it as UTF-8.
                return ("utf-8" if codec.startswith("utf-16") else codec), 0
    else:
        declared = _XML_DECLARATION.match(data[:512].lstrip())
        if declared is not None:
            codec = codec_for(declared.group(1).decode("ascii", "replace"))
            if codec is not None and not codec.startswith("utf-16"):
                return codec, 0
    if html:
        # An XHTML page may carry only the XML declaration.
        declared = _XML_DECLARATION.match(data[:512].lstrip())
        if declared is not None:
            codec = codec_for(declared.group(1).decode("ascii", "replace"))
            if codec is not None and not codec.startswith("utf-16"):
                return codec, 0
    return ("utf-8" if _looks_utf8(data, cut) else "cp1252"), 0


def decode(data: bytes, codec: str, bom: int, *, cut: bool = False) -> str:
    """`data` as text; a character cut at the end of a cut body is dropped, bytes that do not decode become U+FFFD."""
    decoder = codecs.getincrementaldecoder(codec)("replace")
    return decoder.decode(data[bom:], final=not cut)
