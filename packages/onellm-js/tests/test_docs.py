"""The examples of docs/javascript.md and of the package README run as written.

Code blocks of JavaScript, TypeScript and YAML whose first line is a comment naming a path (`// tools/reshape.js`,
`# tools/convert-units.tool.yaml`) are written to that path first; then the page's Python blocks run in order, in one
namespace, with top-level `await`, in a fresh working directory.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "docs" / "javascript.md", ROOT / "packages" / "onellm-js" / "README.md"]
_BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
_PATH = re.compile(r"^(?://|#) ([\w./-]+\.(?:js|ts|yaml))\s*$")

pytestmark = pytest.mark.anyio


def blocks(page: Path) -> list[tuple[str, str]]:
    return [(lang, text) for lang, text in _BLOCK.findall(page.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
async def test_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    found = blocks(page)
    python = [text for lang, text in found if lang == "python"]
    assert python, "the page has Python examples"
    for lang, text in found:
        first = text.splitlines()[0] if text.strip() else ""
        match = _PATH.match(first)
        if lang in ("js", "ts", "yaml") and match:
            target = tmp_path / match.group(1)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    namespace: dict[str, object] = {"__name__": "docs_example"}
    exec("from decimal import Decimal\nfrom pathlib import Path", namespace)
    for index, text in enumerate(python):
        code = compile(textwrap.dedent(text), f"{page.name}[{index}]", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(code, namespace)
        if result is not None:
            await result
