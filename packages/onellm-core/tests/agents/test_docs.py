"""The examples of docs/agents.md run as written: YAML blocks whose first line names a path are written there, then
the page's Python blocks run in order, in one namespace, with top-level `await`, in a fresh working directory."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[4] / "docs" / "agents.md"
_BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
_PATH = re.compile(r"^# ([\w./-]+\.yaml)\s*$")

pytestmark = pytest.mark.anyio


async def test_the_agents_page_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    found = _BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    python = [text for lang, text in found if lang == "python"]
    assert len(python) >= 6
    for lang, text in found:
        match = _PATH.match(text.splitlines()[0]) if lang == "yaml" and text.strip() else None
        if match:
            target = tmp_path / match.group(1)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    namespace: dict[str, object] = {"__name__": "docs_example"}
    for index, text in enumerate(python):
        code = compile(textwrap.dedent(text), f"agents.md[{index}]", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(code, namespace)
        if result is not None:
            await result
