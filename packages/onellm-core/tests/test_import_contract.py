"""The import contract, read from the source with `ast` (no import runs): layers point down, private modules stay in
their folder, and no folder has an import loop.

**Layers.** Core's folders in dependency order, lowest first; a module imports only from its own folder and from
folders in lower layers, and the folders of one layer do not import each other. Every import counts: at module level,
inside a function, and under `if TYPE_CHECKING:` (a type-only import is still a dependency a reader has to follow).
`docs/architecture.md` draws the same table; when a folder is added, place it here and there.

**Private modules.** `onellm.x._y` is for `onellm.x` and the folders inside it; the modules at the root of `onellm`
(`_describe`, `_docstrings`, `_files`, `_public`, `_go`, ...) are helpers for all of core. The other distributions
(`onellm_web`, ...) import core only through public modules.

**Loops.** Inside one folder, the imports that run when a module is imported (module level, not under
`TYPE_CHECKING`, not inside a function) form no cycle.

A justified exception goes in `EXCEPTIONS` with its reason.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGES = Path(__file__).resolve().parents[2]
CORE = PACKAGES / "onellm-core" / "src"

LAYERS: list[tuple[str, ...]] = [
    ("_version", "_public", "_describe", "_docstrings"),
    ("_go",),
    ("errors", "clock"),
    ("_files", "messages", "yamlio", "schema", "capabilities", "templating"),
    ("catalog", "definitions", "records", "telemetry"),
    ("instances", "providers"),
    ("tools",),
    ("runtime",),
    ("agents", "media"),
    ("deciders",),
    ("testing", "__init__"),
    ("tour",),
]
"""Core's folders (and root modules), lowest layer first. `__init__` is `onellm` itself, the public face."""

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("onellm.providers.gemini._provider", "onellm.providers.deployments._vertex"): (
        "on Vertex AI, Gemini embeddings are one embedContent call per input; the deployment owns that body"
    ),
}
"""(importing module, imported module) -> why the rule does not apply to this import."""

UPWARD_CALLS: dict[tuple[str, str], str] = {
    ("onellm.runtime._runtime", "deciders"): "Runtime's decider methods are a facade over onellm.deciders",
    ("onellm.runtime._runtime", "agents"): "Runtime's agent methods are a facade over onellm.agents",
    ("onellm.runtime._services", "agents"): "the services protocol names the hook registry's types for type checkers",
    ("onellm.tools.builtin.decider", "deciders"): "the run_decider tool runs a decider",
    ("onellm.tools.builtin.decider", "runtime"): "the run_decider tool runs in the calling runtime",
}
"""(importing module, higher folder) -> why it may call up. Only imports that do not run when the module is imported
qualify (inside a function, or for type checkers): the lower layer still loads without the higher one, which is
imported when the call is made."""

LAYER_OF = {unit: index for index, layer in enumerate(LAYERS) for unit in layer}


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    line: int
    runs_at_import: bool


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(dotted: str, root: Path) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(path: Path, root: Path) -> Iterator[Import]:
    """Every import of `path` that names a module of `onellm` (or of the other distributions), resolved to a module:
    `from onellm import yamlio` imports `onellm.yamlio`, `from onellm.catalog import Catalog` imports
    `onellm.catalog`."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))

    def walk(nodes: list[ast.stmt], at_import: bool) -> Iterator[Import]:
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(name, alias.name, node.lineno, at_import)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join([*base, node.module] if node.module else base)
                else:
                    source = node.module or ""
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    root_of = CORE if sub.startswith("onellm.") or sub == "onellm" else root
                    yield Import(name, sub if _is_module(sub, root_of) else source, node.lineno, at_import)
            elif isinstance(node, ast.If):
                type_only = "TYPE_CHECKING" in ast.unparse(node.test)
                yield from walk(node.body, at_import and not type_only)
                yield from walk(node.orelse, at_import)
            elif isinstance(node, ast.Try):
                for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                    yield from walk(block, at_import)
            elif isinstance(node, ast.With):
                yield from walk(node.body, at_import)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                yield from walk(list(_inner_statements(node)), False)

    yield from walk(tree.body, True)


def _inner_statements(node: ast.AST) -> Iterator[ast.stmt]:
    for child in ast.walk(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def private_owner(target: str) -> str | None:
    """The folder that owns the private module `target` imports, or None when no segment is private."""
    parts = target.split(".")
    for index, part in enumerate(parts[1:], 1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:index])
    return None


def core_imports() -> list[Import]:
    found: list[Import] = []
    for path in sorted((CORE / "onellm").rglob("*.py")):
        found.extend(i for i in imports_of(path, CORE) if i.target.split(".")[0] == "onellm")
    return found


CORE_IMPORTS = core_imports()


def test_every_folder_of_core_has_a_layer() -> None:
    units = {unit_of(module_name(path, CORE)) for path in (CORE / "onellm").glob("*") if path.name != "py.typed"}
    units = {u.removesuffix(".py") for u in units if not u.startswith("__pycache__")}
    unplaced = sorted(u for u in units if u not in LAYER_OF and not u.endswith(".typed"))
    assert unplaced == [], "place each new folder of onellm in LAYERS (and in docs/architecture.md)"


def test_no_module_imports_a_higher_layer_or_a_peer() -> None:
    wrong: list[str] = []
    for item in CORE_IMPORTS:
        source, target = unit_of(item.importer), unit_of(item.target)
        if source == target or (item.importer, item.target) in EXCEPTIONS:
            continue
        if (item.importer, target) in UPWARD_CALLS and not item.runs_at_import:
            continue
        if LAYER_OF[target] >= LAYER_OF[source]:
            kind = "a peer" if LAYER_OF[target] == LAYER_OF[source] else "a higher layer"
            wrong.append(f"{item.importer}:{item.line} imports {item.target} ({kind}: {source} -> {target})")
    assert wrong == []


def test_private_modules_stay_in_their_folder() -> None:
    wrong: list[str] = []
    for item in CORE_IMPORTS:
        owner = private_owner(item.target)
        if owner is None or owner == "onellm" or (item.importer, item.target) in EXCEPTIONS:
            continue
        if item.importer != owner and not item.importer.startswith(owner + "."):
            wrong.append(f"{item.importer}:{item.line} imports {item.target}, private to {owner}")
    assert wrong == []


@pytest.mark.parametrize(
    "distribution",
    sorted(p.name for p in PACKAGES.iterdir() if p.name.startswith("onellm-") and p.name != "onellm-core"),
)
def test_the_other_distributions_use_only_public_modules_of_core(distribution: str) -> None:
    root = PACKAGES / distribution / "src"
    wrong = [
        f"{item.importer}:{item.line} imports {item.target}"
        for path in sorted(root.rglob("*.py"))
        for item in imports_of(path, root)
        if item.target.split(".")[0] == "onellm" and private_owner(item.target) is not None
    ]
    assert wrong == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module, or a module that imports itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in edges.get(node, ()):
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_folder_has_an_import_loop() -> None:
    edges: dict[str, set[str]] = {}
    for item in CORE_IMPORTS:
        if not item.runs_at_import or item.importer == item.target:
            continue
        if unit_of(item.importer) == unit_of(item.target) and unit_of(item.importer) != "__init__":
            # A submodule that imports its own package's `__init__` (which imports the submodule) is a loop too.
            edges.setdefault(item.importer, set()).add(item.target)
    assert _cycles(edges) == []


def test_the_contract_sees_imports() -> None:
    """The reader finds the imports it must judge: a test that could not fail would prove nothing."""
    runtime = {i.target for i in CORE_IMPORTS if i.importer == "onellm.runtime._runtime"}
    assert {"onellm.errors", "onellm.messages", "onellm.runtime._call"} <= runtime
    assert any(i.importer == "onellm.instances._model" and i.target == "onellm.yamlio" for i in CORE_IMPORTS)
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert private_owner("onellm.providers.anthropic._codec") == "onellm.providers.anthropic"
