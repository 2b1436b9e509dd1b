"""onellm-web's page conversion beside plain markdownify, and its parsing beside raw `html.parser`, in one run.

Run with `uv run python bench/web.py`. Times are medians of several repeats; ratios are onellm-web's time over the
peer's.

Rows:
- each hand-written test page (`testdata/web/pages`): `html_to_markdown` (sanitize, tree, main content, markdownify on
  the main content) beside `markdownify.markdownify` of the whole page (no extraction, no charset handling).
- a long article (about 1 MB of paragraphs and links, built here): the same pair.
- hostile forms at growing sizes: the sanitizing pass plus `html.parser` on its output, beside `html.parser` on the raw
  text. The raw parser is quadratic on constructs left open, so its sizes stay small; watch how each column grows
  when the size doubles.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import markdownify

from onellm_web import html_to_markdown
from onellm_web._extract import _KEPT_ATTRIBUTES
from onellm_web._sanitize import sanitize

PAGES = Path(__file__).resolve().parents[1] / "testdata" / "web" / "pages"


def timed(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def parse(text: str) -> None:
    parser = HTMLParser(convert_charrefs=True)
    parser.feed(text)
    parser.close()


def main() -> None:
    print(f"{'page':<28}{'onellm-web':>14}{'markdownify':>14}{'ratio':>8}")
    for folder in sorted(PAGES.iterdir()):
        data = (folder / "page.html").read_bytes()
        text = data.decode("utf-8", "replace")
        ours = timed(lambda d=data: html_to_markdown(d, url="https://x.test/", content_type="text/html"))
        peer = timed(lambda t=text: markdownify.markdownify(t))
        print(f"{folder.name:<28}{ours * 1e3:>11.2f} ms{peer * 1e3:>11.2f} ms{ours / peer:>8.2f}")
    article = (
        "<html><head><title>Long</title></head><body><nav>"
        + "<a href='/n'>nav</a>" * 200
        + "</nav><main>"
        + "<p>Some text with <a href='/x'>a link</a> and <b>bold</b> words, then more words.</p>" * 12000
        + "</main></body></html>"
    )
    data = article.encode()
    ours = timed(lambda: html_to_markdown(data, url="https://x.test/", content_type="text/html"), 3)
    peer = timed(lambda: markdownify.markdownify(article), 3)
    print(f"{'long article (1 MB)':<28}{ours * 1e3:>11.0f} ms{peer * 1e3:>11.0f} ms{ours / peer:>8.2f}")
    print()
    print(f"{'hostile form':<28}{'size':>10}{'sanitized':>14}{'raw parser':>14}")
    for name, unit in (("'<a ' repeated", "<a "), ("'<!--' repeated", "<!--"), ("'</' repeated", "</")):
        for count in (5_000, 10_000, 20_000):
            text = unit * count
            ours = timed(lambda t=text: parse(sanitize(t, _KEPT_ATTRIBUTES)), 3)
            peer = timed(lambda t=text: parse(t), 1)
            print(f"{name:<28}{len(text):>10}{ours * 1e3:>11.2f} ms{peer * 1e3:>11.0f} ms")


if __name__ == "__main__":
    main()
