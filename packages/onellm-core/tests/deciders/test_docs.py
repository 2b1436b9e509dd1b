"""The examples of docs/deciders.md run in order, in one namespace, and print what the page shows after each."""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

import onellm

DOC = Path(__file__).resolve().parents[4] / "docs" / "deciders.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def test_the_page_runs_and_prints_what_it_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = BLOCK.findall(DOC.read_text(encoding="utf-8"))
    assert sum(1 for kind, _ in blocks if kind == "python") >= 8
    namespace: dict[str, Any] = {}
    checked = 0
    try:
        for index, (kind, body) in enumerate(blocks):
            if kind == "yaml" and body.startswith("# ") and body.split("\n", 1)[0].endswith(".yaml"):
                target = tmp_path / body.split("\n", 1)[0][2:].strip()
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(body, encoding="utf-8")
            if kind != "python":
                continue
            code = compile(body, f"deciders.md block {index}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            out = io.StringIO()

            async def run(code: Any = code) -> None:
                result = eval(code, namespace)
                if result is not None:
                    await result

            with contextlib.redirect_stdout(out):
                anyio.run(run)
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            if following is not None and following[0] == "text":
                assert out.getvalue() == following[1], f"block {index}"
                checked += 1
    finally:
        onellm.set_default_runtime(None)
    assert checked >= 8
