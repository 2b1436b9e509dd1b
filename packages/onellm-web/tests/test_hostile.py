"""Hostile pages served from the loopback server: deep nesting, huge attributes, unclosed tags and constructs, too
many elements, dangerous links. Each must come back as bounded, well-formed Markdown keeping the text it can.

Several sizes are picked so that `html.parser` fed the raw page would take minutes (it rescans to the end of the input
for every construct left open: 300 KB of `<a ` took longer than 111 s for 120 KB on CPython 3.11.7); the sanitizing
pass in front of it keeps these in milliseconds, and the suite's timeout would catch a return to quadratic time.
"""

from __future__ import annotations

import itertools

import pytest

from onellm.capabilities import Capabilities
from onellm_web import BinaryContentError, WebPage, fetch_webpage_markdown, html_to_markdown
from onellm_web._extract import MAX_DEPTH, MAX_WRITTEN

from .conftest import Answer, Site

pytestmark = pytest.mark.anyio

LOOPBACK = Capabilities.network("127.0.0.1")
_serial = itertools.count()


async def serve(site: Site, body: str | bytes, content_type: str = "text/html; charset=utf-8") -> WebPage:
    path = f"/hostile/{next(_serial)}"
    data = body.encode("utf-8") if isinstance(body, str) else body
    site.routes[path] = Answer(200, {"Content-Type": content_type}, data)
    return await fetch_webpage_markdown(site.origin + path, capabilities=LOOPBACK)


async def test_deep_nesting_is_flattened_and_keeps_its_text(site: Site) -> None:
    depth = 100_000
    page = await serve(site, "<p>top</p>" + "<div><span>" * depth + "<b>bottom</b>" + "</span></div>" * depth)
    # The `b` lies below the depth limit: its tag is dropped, its text kept.
    assert page.markdown == "top\n\nbottom"
    unclosed = await serve(site, "<blockquote>" * 5000 + "deep text" + "<p>after")
    assert "deep text" in unclosed.markdown
    assert unclosed.markdown.count(">") <= MAX_DEPTH, "quote markers stop at the depth limit"


async def test_huge_attributes_are_dropped_and_the_text_kept(site: Site) -> None:
    huge = "x" * 1_000_000
    page = await serve(
        site,
        f'<p title="{huge}" class="{huge}">first</p><a href="/{huge}">long link</a>'
        f"<img src=\"data:image/png;base64,{huge}\" alt='inline'><p data-x={huge}>last</p>",
    )
    assert page.markdown == "first\n\nlong link\n\nlast"
    many = await serve(site, "<p " + " ".join(f"a{i}=v" for i in range(200_000)) + ">many attributes</p>")
    assert many.markdown == "many attributes"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("<p>kept</p>" + "<a " * 100_000, "kept"),
        ("<p>kept</p>" + "<a b='" * 100_000, "kept"),
        ("<p>kept</p>" + "<!--" * 200_000, "kept"),
        ("<p>kept</p>" + "</" * 200_000, "kept"),
        ("<p>kept</p>" + "<![CDATA[" * 100_000, "kept"),
        ("<p>kept</p>" + "<?xml" * 100_000, "kept"),
        ("<p>kept</p><script>" + "</scrip" * 100_000, "kept"),
        ("<p>kept</p><style>" + "a{}" * 100_000, "kept"),
        ("<title>never closed" + "<p>x" * 10, "kept"),
        ("<p>kept</p><p>" + "<" * 300_000, "kept\n\n" + "<" * 300_000),
    ],
    ids=["tag", "quote", "comment", "end-tag", "cdata", "pi", "script", "style", "title", "lt"],
)
async def test_constructs_left_open_swallow_the_rest_in_linear_time(site: Site, body: str, expected: str) -> None:
    page = await serve(site, body)
    if body.startswith("<title>"):
        assert page.title == "never closed" + "<p>x" * 10
        assert page.markdown == ""
        return
    assert page.markdown == expected


async def test_unclosed_tags_are_closed_where_a_browser_closes_them(site: Site) -> None:
    page = await serve(
        site,
        "<ul><li>one<li>two<li>three</ul>"
        "<dl><dt>term<dd>definition<dt>term 2<dd>definition 2</dl>"
        "<table><tr><th>a<th>b<tr><td>1<td>2<tr><td>3<td>4</table>"
        "<p>para one<p>para <b>two<div>block</div>"
        "<h2>heading<h3>next heading</h3>"
        "<a href=/one>first<a href=/two>second</a>"
        "</div></span></section>stray end tags",
    )
    assert page.markdown == (
        "- one\n- two\n- three\n\n"
        "term\n:   definition\n\nterm 2\n:   definition 2\n\n"
        "| a | b |\n| --- | --- |\n| 1 | 2 |\n| 3 | 4 |\n\n"
        "para one\n\npara **two**\n\nblock\n\n"
        "## heading\n\n### next heading\n\n"
        f"[first]({site.origin}/one)[second]({site.origin}/two)stray end tags"
    )


async def test_too_many_elements_are_cut_with_a_note(site: Site) -> None:
    page = await serve(site, "<p>x</p>" * (MAX_WRITTEN + 5000))
    assert page.markdown.endswith(
        f"[The rest of the page was left out: its main content has more than {MAX_WRITTEN} elements.]"
    )
    assert page.markdown.count("x") == MAX_WRITTEN


async def test_dangerous_links_and_sources_lose_their_targets(site: Site) -> None:
    page = await serve(
        site,
        '<base href="javascript:alert(1)//">'
        "<p><a href='javascript:alert(1)'>js</a> <a href=' JAVASCRIPT:x'>js2</a> <a href='vbscript:x'>vb</a> "
        "<a href='data:text/html,<script>x</script>'>data</a> <a href='file:///etc/passwd'>file</a> "
        "<a href='mailto:a@b.test'>mail</a> <a href='/ok'>ok</a> <a href='//cdn.test/x'>cdn</a></p>"
        "<img src='javascript:x' alt='no'><img srcset='/small.png 1x, /big.png 2x' alt='set'>",
    )
    assert page.markdown == (
        f"js js2 vb data file [mail](mailto:a@b.test) [ok]({site.origin}/ok) [cdn](http://cdn.test/x)\n\n"
        f"![set]({site.origin}/small.png)"
    )


async def test_markup_in_text_and_entities_stay_text(site: Site) -> None:
    page = await serve(
        site,
        "<p>1 &lt; 2 &amp;&amp; 3 &gt; 2, &#x1F600; &unknown; a<b c</p><p>tag-like &lt;script&gt;alert(1)&lt;/script&gt;</p>",
    )
    assert page.markdown == "1 < 2 && 3 > 2, 😀 &unknown; a\n\ntag-like <script>alert(1)</script>"


async def test_nul_bytes_in_a_body_mean_binary_but_in_given_text_become_replacement_characters(site: Site) -> None:
    with pytest.raises(BinaryContentError, match="holds binary data"):
        await serve(site, b"<p>a\x00b</p>")
    assert html_to_markdown("<p>a\x00b</p>", url="http://x.test/").markdown == "a\ufffdb"


async def test_hidden_and_hostile_structure_is_left_out(site: Site) -> None:
    page = await serve(
        site,
        "<body><div hidden>hidden attribute</div><div aria-hidden=true>aria hidden</div>"
        "<div style='display: none'>styled away</div><template><p>template</p></template>"
        "<svg><title>svg title</title><text>svg text</text></svg><math><mi>x</mi></math>"
        "<select><option>option</option></select><button>button</button><iframe>frame text</iframe>"
        "<noscript>noscript</noscript><object>object</object><textarea><p>typed</p></textarea>"
        "<p>visible</p></body>",
    )
    assert page.markdown == "visible"
    assert page.title is None
