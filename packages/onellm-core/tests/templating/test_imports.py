"""The template engine and the Go emulation import without cycles, and the Go emulation stands alone.

Every import counts, including those inside functions (a lazy import still ties two modules together), so the
modules of each folder must form a graph without a cycle: the error types live in their own module that the others
import, and `onellm._go` imports nothing from the template engine or the tools.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "onellm"


def _imports(path: Path, package: str) -> set[str]:
    """The modules of `package` that the file imports, anywhere in it (as dotted names)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == package:
                found.update(f"{package}.{a.name}" for a in node.names)
            elif node.module.startswith(package + "."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(package + "."))
    return found


def _graph(folder: str) -> dict[str, set[str]]:
    package = f"onellm.{folder}"
    modules = {f"{package}.{p.stem}": p for p in sorted((SRC / folder).glob("*.py")) if p.stem != "__init__"}
    return {name: _imports(path, package) & modules.keys() for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return [*path[path.index(n) :], n]
            if n not in state and (found := visit(n)) is not None:
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)) is not None:
            return found
    return None


@pytest.mark.parametrize("folder", ["templating", "_go"])
def test_no_module_imports_in_a_cycle(folder: str) -> None:
    graph = _graph(folder)
    assert len(graph) >= 4
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_go_emulation_imports_neither_templates_nor_tools() -> None:
    for path in sorted((SRC / "_go").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        imported = _imports(path, "onellm")
        assert not {m for m in imported if m.startswith(("onellm.templating", "onellm.tools"))}, path.name
        assert "onellm.templating" not in text.replace("onellm.templating`", ""), path.name
