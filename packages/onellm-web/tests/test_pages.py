"""Pages written by hand in the structure of public sites, fetched from the loopback server under a public name and
compared whole with their expected Markdown (`testdata/web/pages/<page>/expected.md`).

Set ONELLM_UPDATE_GOLDENS=1 to rewrite the expected files after a deliberate change, and read the diff.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from onellm.capabilities import Capabilities
from onellm_web import fetch_webpage_markdown

from .conftest import PAGES

pytestmark = pytest.mark.anyio

NAMES = sorted(p.name for p in PAGES.iterdir())
CHARSETS = {"shift-jis": "cp932", "legacy-latin1": "cp1252"}


@pytest.mark.parametrize("name", NAMES)
async def test_page_converts_to_its_expected_markdown(public: Any, name: str) -> None:
    url = f"http://www.{name}.test/pages/{name}/"
    page = await fetch_webpage_markdown(url, capabilities=Capabilities.any_public_hosts(), options=public.options)
    text = page.render()
    expected = PAGES / name / "expected.md"
    if os.environ.get("ONELLM_UPDATE_GOLDENS") == "1":
        expected.write_text(text + "\n", encoding="utf-8")
    assert text + "\n" == expected.read_text(encoding="utf-8")
    assert (page.url, page.content_type, page.is_html, page.status) == (url, "text/html", True, 200)
    assert page.charset == CHARSETS.get(name, "utf-8")
    assert public.backend.dialled == ["93.184.216.34"]


def test_every_page_has_its_expected_markdown_and_no_other_files() -> None:
    for name in NAMES:
        assert sorted(p.name for p in (PAGES / name).iterdir()) == ["expected.md", "page.html"], name
    assert len(NAMES) >= 10
