"""Reading `llm-provider.yaml` text into plain values, and finding where a value sits in that text.

The catalog loads its files with `onellm.yamlio`'s guarded safe loader: numbers with a fraction become `Decimal` built
from the text as written (never a float), timestamps stay the text as written, and duplicate keys are an error. The loader is
imported only here, and only when a YAML file is read: the shipped catalog loads from its compiled JSON twin.
"""

from __future__ import annotations

from typing import Any

from onellm._describe import parse_path
from onellm.errors import BadDefinitionError

__all__ = ["check_size", "load_documents", "position_of"]

_MAX_NODES = 200_000
_MAX_DEPTH = 64


def _count_nodes(value: Any, file: str | None) -> None:
    """Refuse trees that aliases blow up beyond any real catalog (an alias bomb expands on every walk), and trees
    nested deeper than any real catalog (the checks that follow walk them recursively)."""
    seen = 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > _MAX_NODES:
            raise BadDefinitionError(f"the file expands to more than {_MAX_NODES} values", file=file)
        if depth > _MAX_DEPTH:
            raise BadDefinitionError(f"the file nests deeper than {_MAX_DEPTH} levels", file=file)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def check_size(value: Any, file: str | None) -> None:
    """The same size and depth limits for entries built in code."""
    _count_nodes(value, file)


def load_documents(text: str, *, file: str | None = None) -> list[Any]:
    """Every YAML document in `text` as plain values. Errors are `BadDefinitionError` with file, line and column.

    Parsing goes through `onellm.yamlio.safe_load_all`, which checks nesting, aliases, tags, duplicate keys and number
    sizes event by event, so a hostile file fails with a positioned error instead of recursing in the C parser.
    """
    from onellm.yamlio import safe_load_all

    docs = [doc for doc in safe_load_all(text, file=file) if doc is not None]
    for doc in docs:
        _count_nodes(doc, file)
    return docs


def _parse_path(path: str) -> list[str | int]:
    """`models[2].pricing.items[0]` -> ["models", 2, "pricing", "items", 0] (indexes are positions in the file)."""
    return parse_path(path)


def position_of(text: str, document: int, path: str) -> tuple[int | None, int | None]:
    """1-based line and column of the value at `path` in the `document`-th non-empty document of `text`.

    Goes as deep as the path exists and returns the deepest position found (the whole document when nothing matched).
    """
    from ruamel.yaml import YAML

    try:
        nodes = [n for n in YAML(typ="safe", pure=False).compose_all(text) if n is not None]
    except Exception:
        return None, None
    if document >= len(nodes):
        return None, None
    node = nodes[document]
    for step in _parse_path(path):
        found = None
        if isinstance(step, int):
            values = node.value if node.id == "sequence" else None
            if values is not None and 0 <= step < len(values):
                found = values[step]
        elif node.id == "mapping":
            for key, value in node.value:
                if key.id == "scalar" and key.value == step:
                    found = value
                    break
        if found is None:
            break
        node = found
    return node.start_mark.line + 1, node.start_mark.column + 1
