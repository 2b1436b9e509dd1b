"""The public face of `onellm` and of every public module: a sorted `__all__` that lists exactly what the module offers,
every exported name resolves, public classes say their public path, and moving a class there keeps pickling, msgspec
and `typing.get_type_hints` working."""

from __future__ import annotations

import ast
import importlib
import inspect
import pickle
import pkgutil
import re
import subprocess
import sys
import types
import typing
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import msgspec
import pytest

import onellm

PACKAGES = ["onellm", "onellm_web", "onellm_js", "onellm_sqlalchemy", "onellm_sqlite", "onellm_cli"]


def _public_modules() -> list[str]:
    found: list[str] = []
    for top in PACKAGES:
        package = importlib.import_module(top)
        found.append(top)
        found.extend(
            info.name
            for info in pkgutil.walk_packages(package.__path__, f"{top}.")
            if not any(part.startswith("_") for part in info.name.split(".")[1:])
        )
    return found


PUBLIC_MODULES = _public_modules()


def isort_key(name: str) -> tuple[int, list[int | str]]:
    """The order ruff's RUF022 keeps `__all__` in: CONSTANTS, then Classes, then everything else, each naturally."""
    if len(name) > 1 and name.isupper():
        kind = 0
    elif name[:1].isupper():
        kind = 1
    else:
        kind = 2
    return kind, [int(piece) if piece.isdigit() else piece for piece in re.split(r"(\d+)", name)]


def _defined_names(module: types.ModuleType) -> set[str]:
    """What the module's own source binds at the top level without an underscore: its defs, classes and assignments,
    and, in a package's `__init__`, what it imports from its own modules (re-exports, lazy ones included)."""
    source = Path(module.__file__ or "").read_text(encoding="utf-8")
    tree = ast.parse(source)
    names: set[str] = set()
    own = module.__name__ + "."
    is_package = hasattr(module, "__path__")

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.ImportFrom) and is_package and (node.module or "").startswith(own):
                names.update(alias.asname or alias.name for alias in node.names)
            elif isinstance(node, ast.If):
                visit(node.body)

    visit(tree.body)
    return {name for name in names if not name.startswith("_") and name != "__getattr__"}


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_and_lists_exactly_what_the_module_offers(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=isort_key), f"{name}.__all__ is not in ruff's RUF022 order"
    assert len(exported) == len(set(exported))
    for item in exported:
        assert getattr(module, item) is not None, f"{name}.{item} does not resolve"
    assert _defined_names(module) - set(exported) == set(), f"{name} defines public names missing from __all__"


@pytest.mark.parametrize("name", PACKAGES)
def test_every_public_name_of_a_package_is_exported_and_nothing_else(name: str) -> None:
    package = importlib.import_module(name)
    for item in package.__all__:
        getattr(package, item)
    public = {
        n for n in dir(package) if not n.startswith("_") and not isinstance(getattr(package, n), types.ModuleType)
    }
    assert public == set(package.__all__) - {"__version__"}


def test_the_top_level_surface() -> None:
    """The names a user of the verbs needs are at the top; the machinery beneath them stays in its folder."""
    top = set(onellm.__all__)
    events = set(typing.get_args(onellm.StreamEvent))
    assert {e.__name__ for e in events} <= top
    assert {"RequestOptions", "Content", "ToolChoice", "ReasoningOptions", "CacheOptions", "StreamEvent"} <= top
    assert {"ArgumentError", "InvalidInstanceIdError"} <= top
    machinery = {
        "RequestAdjuster": "onellm.catalog",
        "SpendGuard": "onellm.catalog",
        "CostEstimator": "onellm.catalog",
        "LocalTokenizer": "onellm.catalog",
        "TokenCount": "onellm.catalog",
        "CatalogLayer": "onellm.catalog",
        "ToolReferenceResolver": "onellm.tools",
        "BuiltinOptions": "onellm.tools.builtin",
    }
    assert top & set(machinery) == set()
    assert set(machinery) & set(dir(onellm)) == set()
    for name, home in machinery.items():
        with pytest.warns(DeprecationWarning, match=rf"onellm\.{name} moved to {re.escape(home)}\.{name}"):
            old = getattr(onellm, name)
        assert old is getattr(importlib.import_module(home), name)


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = onellm.nope  # type: ignore[attr-defined]


def test_import_is_lazy() -> None:
    code = "import sys, onellm; heavy = [m for m in ('httpx', 'ruamel.yaml', 'opentelemetry', 'anyio') if m in sys.modules]; print(heavy)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def _homes() -> dict[type, str]:
    """Each public class of core and the path users import it from: `onellm` when it is at the top, else the
    shortest public module that exports it."""
    exporters: dict[type, list[str]] = defaultdict(list)
    for name in PUBLIC_MODULES:
        if not name.startswith("onellm.") and name != "onellm":
            continue
        module = importlib.import_module(name)
        for item in module.__all__:
            value = getattr(module, item)
            if inspect.isclass(value) and value.__module__.split(".")[0] == "onellm":
                exporters[value].append(name)
    return {
        cls: "onellm" if "onellm" in where else min(where, key=lambda m: (m.count("."), m))
        for cls, where in exporters.items()
    }


def test_public_classes_name_their_public_path() -> None:
    wrong = {
        f"{cls.__qualname__}: {cls.__module__} != {home}" for cls, home in _homes().items() if cls.__module__ != home
    }
    assert wrong == set()
    assert repr(onellm.Message) == "<class 'onellm.Message'>"
    assert repr(onellm.catalog.SpendGuard) == "<class 'onellm.catalog.SpendGuard'>"


def test_the_public_path_holds_whichever_module_is_imported_first() -> None:
    """A class is moved where it is defined or where its package is first imported, so importing the private module
    directly in a fresh interpreter already shows the public path."""
    code = (
        "import importlib, inspect, sys\n"
        "checks = [('onellm.catalog.spend', 'SpendGuard', 'onellm.catalog'), ('onellm.catalog.spend', 'SpendCap', 'onellm'),"
        " ('onellm.catalog._catalog', 'Catalog', 'onellm'), ('onellm.messages._events', 'TextDelta', 'onellm'),"
        " ('onellm.providers.openai._provider', 'OpenAIProvider', 'onellm'),"
        " ('onellm.capabilities._egress', 'EgressClient', 'onellm'),"
        " ('onellm.tools.builtin.agent', 'AskUserRequest', 'onellm.tools.builtin'),"
        " ('onellm.runtime._call', 'StreamingAnswer', 'onellm')]\n"
        "for module, name, home in checks:\n"
        "    got = getattr(importlib.import_module(module), name).__module__\n"
        "    print(module, name, got == home, got)\n"
    )
    for line in subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines():
        assert " True " in line, line


def test_moved_classes_still_pickle_decode_and_resolve_their_types() -> None:
    message = onellm.Message(
        id="m1",
        user=[onellm.TextPart("Hi")],
        assistant=[onellm.TextPart("Hello")],
        usage=onellm.Usage(input_tokens=3, output_tokens=2),
    )
    assert pickle.loads(pickle.dumps(message)) == message
    assert onellm.Message.from_data(message.to_data()) == message
    done = onellm.Done(finish_reason="stop", extra={"id": "r1"})
    assert msgspec.json.decode(msgspec.json.encode(done), type=onellm.Done) == done
    assert pickle.loads(pickle.dumps(onellm.TextDelta(0, "x"))) == onellm.TextDelta(0, "x")
    line = onellm.CostLine(counter="inputTokens", quantity=5, unit_price=Decimal("0.1"), amount=Decimal("0.5"))
    cost = onellm.Cost(total=Decimal("0.5"), lines=(line,))
    assert msgspec.convert(msgspec.to_builtins(cost), onellm.Cost) == cost
    hints = typing.get_type_hints(onellm.Message)
    assert hints["usage"] == onellm.Usage | None
    assert typing.get_type_hints(onellm.RequestOptions)["temperature"] == float | None
    error = pickle.loads(pickle.dumps(onellm.StorageError("disk full", path="/runs", operation="save")))
    assert (type(error), str(error), error.path) == (onellm.StorageError, "disk full", "/runs")
    assert pickle.loads(pickle.dumps(onellm.BudgetKind.SPEND)) is onellm.BudgetKind.SPEND
