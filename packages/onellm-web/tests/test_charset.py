"""Which encoding a body is read in: byte-order mark, then header, then `<meta>` or the XML declaration, then UTF-8
or windows-1252; labels mapped as browsers map them. Through `html_to_markdown`, the public face of the conversion."""

from __future__ import annotations

import codecs

import pytest

from onellm_web import html_to_markdown
from onellm_web._charset import codec_for, detect

TEXT = "東京の天気 ①～"


@pytest.mark.parametrize(
    ("label", "codec"),
    [
        ("UTF-8", "utf-8"),
        ("utf8", "utf-8"),
        ("Shift_JIS", "cp932"),
        ("x-sjis", "cp932"),
        ("windows-31j", "cp932"),
        ("EUC-JP", "euc_jp"),
        ("iso-2022-jp", "iso2022_jp"),
        ("ISO-8859-1", "cp1252"),
        ("us-ascii", "cp1252"),
        ("latin1", "cp1252"),
        ("iso-8859-2", "iso8859_2"),
        ("ISO-8859-9", "cp1254"),
        ("iso-8859-15", "iso8859_15"),
        ("windows-1251", "cp1251"),
        ("cp1250", "cp1250"),
        ("GB2312", "gb18030"),
        ("gbk", "gb18030"),
        ("big5", "big5hkscs"),
        ("EUC-KR", "cp949"),
        ("koi8-r", "koi8_r"),
        ("'utf-8'", "utf-8"),
        (' "Shift_JIS" ', "cp932"),
    ],
)
def test_labels_map_as_browsers_map_them(label: str, codec: str) -> None:
    assert codec_for(label) == codec


@pytest.mark.parametrize("label", ["utf-7", "base64", "rot13", "idna", "unicode_escape", "iso-8859-99", "", "x" * 300])
def test_labels_browsers_do_not_know_are_ignored(label: str) -> None:
    assert codec_for(label) is None


@pytest.mark.parametrize(
    ("data", "content_type", "expected"),
    [
        (codecs.BOM_UTF8 + TEXT.encode(), "text/html; charset=shift_jis", ("utf-8", 3)),
        (codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"), "text/html; charset=utf-8", ("utf-16-le", 2)),
        (codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"), None, ("utf-16-be", 2)),
        (b'<meta charset="utf-8">' + TEXT.encode("cp932"), "text/html; charset=Shift_JIS", ("cp932", 0)),
        (b'<meta charset="euc-jp">', "text/html", ("euc_jp", 0)),
        (b"<META HTTP-EQUIV='Content-Type' CONTENT='text/html; charset=windows-1251'>", None, ("cp1251", 0)),
        (b'<meta content="text/html;charset=gb2312" http-equiv="content-type">', None, ("gb18030", 0)),
        (b'<!-- <meta charset="koi8-r"> --><meta charset="iso-8859-2">', None, ("iso8859_2", 0)),
        (b'<meta charset="utf-16">', None, ("utf-8", 0)),
        (b'<meta charset="bogus"><p>plain</p>', None, ("utf-8", 0)),
        (b'<meta name="description" content="charset=koi8-r">', None, ("utf-8", 0)),
        (b'<?xml version="1.0" encoding="Shift_JIS"?><html>', "application/xhtml+xml", ("cp932", 0)),
        (TEXT.encode("utf-8"), "text/html", ("utf-8", 0)),
        ("café".encode("cp1252"), "text/html", ("cp1252", 0)),
        (b"<p>" + b" " * 20000 + b'<meta charset="koi8-r">', None, ("utf-8", 0)),
    ],
)
def test_detection_order(data: bytes, content_type: str | None, expected: tuple[str, int]) -> None:
    assert detect(data, content_type, html=True) == expected


def test_a_multibyte_character_cut_at_the_limit_does_not_make_utf8_look_like_windows_1252() -> None:
    data = "ok 東京".encode()[:-1]
    assert detect(data, None, html=True, cut=True) == ("utf-8", 0)
    assert detect(data, None, html=True, cut=False) == ("cp1252", 0)


@pytest.mark.parametrize("codec", ["cp932", "euc_jp", "gb18030", "big5hkscs", "cp1251", "utf-8"])
def test_a_page_comes_out_right_in_each_declared_encoding(codec: str) -> None:
    text = {
        "cp932": "北浜町の桜まつり ①～",
        "euc_jp": "北浜町の桜まつり",
        "gb18030": "北京天气预报",
        "big5hkscs": "臺北天氣",
        "cp1251": "Погода в Москве",
        "utf-8": "Grüße — 東京",
    }[codec]
    label = {"cp932": "Shift_JIS", "euc_jp": "EUC-JP", "gb18030": "GB2312", "big5hkscs": "Big5"}.get(codec, codec)
    body = f'<html><head><meta charset="{label}"><title>{text}</title></head><body><p>{text}</p></body></html>'
    page = html_to_markdown(body.encode(codec), url="http://x.test/", content_type="text/html")
    assert (page.charset, page.title, page.markdown) == (codec, text, text)


def test_undecodable_bytes_become_replacement_characters() -> None:
    page = html_to_markdown(b'<meta charset="shift_jis"><p>ok \x82</p>', url="http://x.test/")
    assert page.markdown == "ok \ufffd"
