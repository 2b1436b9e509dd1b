"""The Python examples in docs/templating.md run, and the results they show in comments are the real ones."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[4] / "docs" / "templating.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_page_has_examples() -> None:
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_doc_example_runs_and_shows_true_results(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    lines = block.splitlines()
    code: list[str] = []
    for line in lines:
        shown = re.fullmatch(r"# (['\"].*['\"])", line.strip())
        if shown and code:
            # The comment shows the value of the expression on the previous line.
            expr = code.pop()
            exec("\n".join(code), namespace)
            code = []
            assert eval(expr, namespace) == ast.literal_eval(shown.group(1))
            continue
        code.append(line)
    exec("\n".join(code), namespace)
