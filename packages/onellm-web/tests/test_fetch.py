"""`fetch_webpage_markdown` against the loopback server: the grant on every hop, limits, time, types, encodings."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

import onellm
from onellm import Runtime
from onellm.capabilities import Capabilities
from onellm.errors import CapabilityDeniedError
from onellm_web import BinaryContentError, WebOptions, WebPageError, fetch_webpage_markdown, fetch_webpage_markdown_sync

from .conftest import BIG, PAGES, Site

pytestmark = pytest.mark.anyio

LOOPBACK = Capabilities.network("127.0.0.1")
PUBLIC = Capabilities.any_public_hosts()


def expected(name: str, origin: str) -> str:
    """The Markdown body of a page's golden file (after the title and Source lines), its links on `origin`."""
    body = (PAGES / name / "expected.md").read_text(encoding="utf-8").split("\n\n", 1)[1].rstrip("\n")
    return body.replace(f"http://www.{name}.test", origin)


# ------------------------------------------------------------------------------------------------- the grant


async def test_loopback_under_an_address_grant_through_the_shared_client(fresh: Site) -> None:
    page = await fetch_webpage_markdown(f"{fresh.origin}/pages/no-body/", capabilities=LOOPBACK)
    assert page.title == "Service status — Parcelwise"
    assert page.markdown == expected("no-body", fresh.origin)
    assert fresh.paths() == ["/pages/no-body/"]


async def test_without_a_network_grant_nothing_is_sent(fresh: Site) -> None:
    with pytest.raises(CapabilityDeniedError, match="no network grant") as info:
        await fetch_webpage_markdown(f"{fresh.origin}/pages/no-body/", capabilities=Capabilities.default())
    assert info.value.rule == "network-off"
    with pytest.raises(CapabilityDeniedError, match=r"host 127\.0\.0\.1:\d+ is not in the network grant"):
        await fetch_webpage_markdown(f"{fresh.origin}/", capabilities=Capabilities.network("docs.example.test"))
    assert fresh.requests == []


async def test_the_current_runtime_grants_by_default(fresh: Site) -> None:
    with onellm.use_runtime(Runtime(capabilities=LOOPBACK)):
        page = await fetch_webpage_markdown(f"{fresh.origin}/notes.txt")
    assert page.markdown == "Grüße\nline two\n"
    with onellm.use_runtime(Runtime()), pytest.raises(CapabilityDeniedError, match="no network grant"):
        await fetch_webpage_markdown(f"{fresh.origin}/notes.txt")


@pytest.mark.parametrize(
    ("path", "target", "rule"),
    [
        ("/to-private", "10.0.0.7:80", "host-not-granted"),
        ("/to-metadata", "169.254.169.254:80", "host-not-granted"),
        ("/to-localhost", "localhost:", "host-not-granted"),
        ("/to-intranet", "intranet.test:80", "host-not-granted"),
        ("/to-file", "file:", "scheme"),
    ],
)
async def test_a_redirect_out_of_an_address_grant_is_refused_before_it_is_followed(
    fresh: Site, path: str, target: str, rule: str
) -> None:
    with pytest.raises(CapabilityDeniedError) as info:
        await fetch_webpage_markdown(fresh.origin + path, capabilities=LOOPBACK)
    assert info.value.rule == rule
    assert (info.value.target or "").startswith(target)
    assert fresh.paths() == [path], "the refused hop was never requested"


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("/to-loopback", "host-not-granted"),
        ("/to-mapped-loopback", "host-not-granted"),
        ("/to-localhost", "address-not-allowed"),
        ("/to-private", "host-not-granted"),
        ("/to-metadata", "host-not-granted"),
        ("/to-intranet", "address-not-allowed"),
        ("/to-rebind", "address-not-allowed"),
    ],
)
async def test_a_public_page_cannot_redirect_to_a_private_or_loopback_address(
    public: Any, fresh: Site, path: str, rule: str
) -> None:
    with pytest.raises(CapabilityDeniedError) as info:
        await fetch_webpage_markdown(f"http://www.news.test{path}", capabilities=PUBLIC, options=public.options)
    assert info.value.rule == rule
    assert fresh.paths() == [path]
    assert public.backend.dialled == ["93.184.216.34"], "only the public address was ever dialled"


async def test_every_hop_is_checked_and_a_later_one_can_be_refused(public: Any, fresh: Site) -> None:
    with pytest.raises(CapabilityDeniedError, match=r"10\.0\.0\.7"):
        await fetch_webpage_markdown("http://www.news.test/hop-1", capabilities=PUBLIC, options=public.options)
    assert fresh.paths() == ["/hop-1", "/hop-2", "/to-private"]
    assert [host for host, _, _ in fresh.requests] == ["www.news.test", "www.news.test", "www.other-site.test"]


async def test_a_redirect_to_an_allowed_host_is_followed_and_the_final_url_kept(public: Any, fresh: Site) -> None:
    page = await fetch_webpage_markdown("http://www.news.test/to-public", capabilities=PUBLIC, options=public.options)
    assert page.url == "http://docs.example-two.test/pages/docs-page/"
    assert "[Choosing the worker count](http://docs.example-two.test/pages/docs-page/deployment.html#workers)" in (
        page.markdown
    ), "links are resolved against the final URL"
    moved = await fetch_webpage_markdown(f"{fresh.origin}/moved", capabilities=LOOPBACK)
    assert moved.url == f"{fresh.origin}/pages/docs-page/"


async def test_a_redirect_loop_is_an_error(fresh: Site) -> None:
    with pytest.raises(WebPageError, match="more than 10 redirects"):
        await fetch_webpage_markdown(f"{fresh.origin}/loop", capabilities=LOOPBACK)


# ---------------------------------------------------------------------------------------------- status and url


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/gone", 410, "answered 410 Gone"),
        ("/broken", 503, "answered 503 Service Unavailable"),
        ("/nowhere", 404, "answered 404 Not Found"),
        ("/not-modified", 304, "answered 304 without a redirect to follow"),
    ],
)
async def test_an_error_status_is_a_web_page_error(fresh: Site, path: str, status: int, message: str) -> None:
    with pytest.raises(WebPageError, match=message) as info:
        await fetch_webpage_markdown(fresh.origin + path, capabilities=LOOPBACK)
    assert (info.value.status, info.value.url) == (status, fresh.origin + path)


@pytest.mark.parametrize(
    ("url", "error", "message"),
    [
        ("  ", WebPageError, "the URL is empty"),
        ("ftp://files.example.test/a.txt", CapabilityDeniedError, "only http and https"),
        ("javascript:alert(1)", CapabilityDeniedError, "only http and https"),
        ("http://", CapabilityDeniedError, "refused"),
    ],
)
async def test_bad_urls(url: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        await fetch_webpage_markdown(url, capabilities=PUBLIC)


async def test_a_bare_host_is_read_as_https_and_the_fragment_is_not_sent(public: Any, fresh: Site) -> None:
    # The forwarding backend speaks plain HTTP, so the https attempt fails at TLS: what matters is the URL asked for.
    with pytest.raises(WebPageError) as info:
        await fetch_webpage_markdown("www.news.test/pages/no-body/#top", capabilities=PUBLIC, options=public.options)
    assert info.value.url == "https://www.news.test/pages/no-body/"
    page = await fetch_webpage_markdown(
        "http://www.news.test/pages/no-body/#top", capabilities=PUBLIC, options=public.options
    )
    assert page.url == "http://www.news.test/pages/no-body/"


async def test_a_password_in_the_url_is_never_shown(fresh: Site) -> None:
    url = f"http://reader:hunter2@127.0.0.1:{fresh.port}"
    page = await fetch_webpage_markdown(f"{url}/notes.txt", capabilities=LOOPBACK)
    assert page.url == f"http://reader:****@127.0.0.1:{fresh.port}/notes.txt"
    assert fresh.requests[0][2]["authorization"] == "Basic cmVhZGVyOmh1bnRlcjI="
    with pytest.raises(WebPageError) as info:
        await fetch_webpage_markdown(f"{url}/gone", capabilities=LOOPBACK)
    assert "hunter2" not in str(info.value)
    assert info.value.url == f"http://reader:****@127.0.0.1:{fresh.port}/gone"


async def test_request_headers(public: Any, fresh: Site) -> None:
    options = WebOptions(client_factory=public.options.client_factory, accept_language="ja,en;q=0.5")
    await fetch_webpage_markdown("http://www.news.test/notes.txt", capabilities=PUBLIC, options=options)
    headers = fresh.requests[0][2]
    assert headers["accept"].startswith("text/html,application/xhtml+xml")
    assert headers["accept-encoding"] == "gzip, deflate"
    assert headers["accept-language"] == "ja,en;q=0.5"
    assert headers["user-agent"].startswith("Mozilla/5.0 (compatible; onellm-web/")
    assert "cookie" not in headers


# ------------------------------------------------------------------------------------------------ size and time


async def test_a_50_mb_body_is_cut_at_the_limit_without_being_read_whole(fresh: Site) -> None:
    tracemalloc.start()
    try:
        page = await fetch_webpage_markdown(f"{fresh.origin}/big-text", capabilities=LOOPBACK)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    limit = WebOptions().max_bytes
    assert (page.cut, page.bytes_read, len(page.markdown)) == (True, limit, limit)
    assert peak < 8 * limit < BIG, f"peak {peak} bytes"
    # The connection was dropped at the limit: the server got no further than its socket buffers.
    assert fresh.written("/big-text") < BIG // 2
    text = page.render(max_chars=1000)
    assert f"[The page is longer than {limit} bytes; only its first {limit} were read.]" in text
    assert text.endswith(f"of {limit} shown. Call again with start=1000 to read on.]")


async def test_a_long_html_body_is_cut_and_converted(fresh: Site) -> None:
    options = WebOptions(max_bytes=256 * 1024)
    page = await fetch_webpage_markdown(f"{fresh.origin}/big-html", capabilities=LOOPBACK, options=options)
    assert (page.cut, page.bytes_read, page.is_html) == (True, 256 * 1024, True)
    assert page.markdown.startswith("word word")
    assert fresh.written("/big-html") < BIG // 2


async def test_a_gzip_bomb_is_decompressed_only_up_to_the_limit(fresh: Site) -> None:
    options = WebOptions(max_bytes=1024 * 1024)
    tracemalloc.start()
    try:
        page = await fetch_webpage_markdown(f"{fresh.origin}/gzip-bomb", capabilities=LOOPBACK, options=options)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (page.cut, page.bytes_read, page.title) == (True, 1024 * 1024, "Bomb")
    assert peak < 40 * 1024 * 1024, f"peak {peak} bytes for a body that expands to {BIG}"


async def test_a_slow_server_runs_into_the_deadline(fresh: Site) -> None:
    options = WebOptions(timeout_seconds=0.4)
    with pytest.raises(WebPageError, match=r"did not finish within 0\.4 s"):
        await fetch_webpage_markdown(f"{fresh.origin}/slow", capabilities=LOOPBACK, options=options)


def test_options_are_checked() -> None:
    for bad in ({"max_bytes": 0}, {"timeout_seconds": 0}, {"max_chars": 10}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            WebOptions(**bad)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ encodings and types


@pytest.mark.parametrize("path", ["/gzip", "/deflate-raw", "/deflate-zlib"])
async def test_compressed_bodies(fresh: Site, path: str) -> None:
    page = await fetch_webpage_markdown(fresh.origin + path, capabilities=LOOPBACK)
    assert page.markdown == expected("news-article", fresh.origin)
    assert page.bytes_read == len((PAGES / "news-article" / "page.html").read_bytes())


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/gzip-corrupt", "the gzip body does not decompress"),
        ("/brotli", "Content-Encoding 'br', which is not supported"),
    ],
)
async def test_bodies_that_cannot_be_decoded(fresh: Site, path: str, message: str) -> None:
    with pytest.raises(WebPageError, match=message):
        await fetch_webpage_markdown(fresh.origin + path, capabilities=LOOPBACK)


async def test_shift_jis_from_the_header_alone_and_the_header_over_the_meta(fresh: Site) -> None:
    for path in ("/sjis-header-only", "/sjis-header-wins"):
        page = await fetch_webpage_markdown(fresh.origin + path, capabilities=LOOPBACK)
        assert page.charset == "cp932"
        assert page.title == "北浜町の桜まつり ― 北浜町観光協会"
        assert page.markdown == expected("shift-jis", fresh.origin)


@pytest.mark.parametrize(
    ("path", "media", "charset", "text"),
    [
        ("/notes.txt", "text/plain", "utf-8", "Grüße\nline two\n"),
        ("/data.json", "application/json", "utf-8", '{"name": "café", "n": 2}'),
        (
            "/feed.xml",
            "application/rss+xml",
            "cp1252",
            '<?xml version="1.0" encoding="ISO-8859-1"?><rss><channel><title>Café news</title></channel></rss>',
        ),
    ],
)
async def test_text_types_come_back_as_text(fresh: Site, path: str, media: str, charset: str, text: str) -> None:
    page = await fetch_webpage_markdown(fresh.origin + path, capabilities=LOOPBACK)
    assert (page.is_html, page.content_type, page.charset, page.markdown, page.title) == (
        False,
        media,
        charset,
        text,
        None,
    )
    assert page.render() == f"Source: {fresh.origin}{path}\nContent-Type: {media}\n\n{text.strip()}"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/photo.png", r"/photo\.png is image/png, 5008 bytes, not a web page or text"),
        ("/report.pdf", r"/report\.pdf is application/pdf, 52428800 bytes, not a web page or text"),
        ("/no-type-binary", r"/no-type-binary holds binary data \(308 bytes\), not a web page or text"),
        ("/mislabelled", r"/mislabelled holds binary data \(14 bytes sent as text/plain\)"),
    ],
)
async def test_binary_types_are_refused_with_a_clear_message(fresh: Site, path: str, message: str) -> None:
    with pytest.raises(BinaryContentError, match=message) as info:
        await fetch_webpage_markdown(fresh.origin + path, capabilities=LOOPBACK)
    assert str(info.value).endswith("fetch_webpage_markdown reads HTML and text only")
    if path == "/report.pdf":
        assert fresh.written(path) < BIG // 2, "a refused type is not downloaded"


async def test_untyped_html_and_utf16_are_recognised(fresh: Site) -> None:
    untyped = await fetch_webpage_markdown(f"{fresh.origin}/no-type-html", capabilities=LOOPBACK)
    assert (untyped.is_html, untyped.title, untyped.markdown) == (True, "Untyped", "Served without a type.")
    wide = await fetch_webpage_markdown(f"{fresh.origin}/utf16", capabilities=LOOPBACK)
    assert (wide.charset, wide.title, wide.markdown) == ("utf-16-le", "Wide", "ütf-16 text")


# ---------------------------------------------------------------------------------------------- the blocking form


def test_the_blocking_form(site: Site) -> None:
    page = fetch_webpage_markdown_sync(f"{site.origin}/pages/no-body/", capabilities=LOOPBACK)
    assert page.markdown == expected("no-body", site.origin)
    again = fetch_webpage_markdown_sync(f"{site.origin}/notes.txt", capabilities=LOOPBACK)
    assert again.markdown == "Grüße\nline two\n"


async def test_the_blocking_form_refuses_a_running_loop(site: Site) -> None:
    with pytest.raises(RuntimeError, match=r"use `await onellm_web\.fetch_webpage_markdown\(\.\.\.\)`"):
        fetch_webpage_markdown_sync(f"{site.origin}/notes.txt", capabilities=LOOPBACK)
