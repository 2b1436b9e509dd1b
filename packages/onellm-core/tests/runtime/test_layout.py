"""The runtime package's own layout, read from its source: no import loop between its modules, the runs built on
`RuntimeServices` instead of `Runtime`, and the plumbing kept off `Runtime`'s public face.

These read the modules' syntax trees rather than importing them: importing a submodule runs the package's
`__init__` first, which would hide a loop instead of showing it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import onellm.runtime
from onellm import Runtime
from onellm.runtime import RuntimeServices

PACKAGE = Path(onellm.runtime.__file__).parent
NAME = "onellm.runtime"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path) -> set[str]:
    """The `onellm.runtime` modules `path` imports at run time (anywhere in it, in functions too), leaving out
    imports made only for type checkers."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            if node.module == NAME:
                found.add("__init__")
            elif node.module.startswith(NAME + "."):
                found.add(node.module[len(NAME) + 1 :].split(".")[0])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == NAME:
                    found.add("__init__")
                elif alias.name.startswith(NAME + "."):
                    found.add(alias.name[len(NAME) + 1 :].split(".")[0])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return found


def _graph() -> dict[str, set[str]]:
    modules = {p.stem: p for p in PACKAGE.glob("*.py")}
    return {name: _imports(path) & set(modules) - {name} for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    trail: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        trail.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*trail[trail.index(nxt) :], nxt]
            if nxt not in state and (found := walk(nxt)) is not None:
                return found
        trail.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := walk(start)) is not None:
            return found
    return None


def test_no_module_of_the_runtime_imports_itself_round_a_loop() -> None:
    graph = _graph()
    assert {"_call", "_chat", "_default", "_embed", "_output", "_runtime", "_script", "_services", "_spend"} <= set(
        graph
    )
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_cycle_finder_finds_a_loop() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_runs_depend_on_the_services_protocol_not_on_the_runtime() -> None:
    graph = _graph()
    for module in ("_call", "_chat", "_embed", "_script", "_services", "_spend", "_output", "_prompt"):
        assert "_runtime" not in graph[module], f"{module} imports the Runtime"
        assert "__init__" not in graph[module], f"{module} imports the package"
        tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        annotations = {
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and " " not in n.value
        }
        assert "Runtime" not in names | annotations, f"{module} names the Runtime"


def test_the_plumbing_is_off_the_runtime_and_on_its_services() -> None:
    plumbing = ("route", "reserve", "record", "save", "new_instance", "now", "lease")
    assert [name for name in plumbing if hasattr(Runtime, name)] == []
    runtime = Runtime(environ={})
    services = runtime.services
    members = [n for n in vars(RuntimeServices) if not n.startswith("_")]
    assert set(plumbing) - {"reserve"} <= set(members)
    assert [n for n in members if not hasattr(services, n)] == []
    assert services.store is runtime.store
    assert services.spend.spent == runtime.spent
