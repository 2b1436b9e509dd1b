"""Reading `llm-provider.yaml` text into plain values, and finding where a value sits in that text.

The catalog loads its files with ruamel's safe loader on the C parser: numbers with a fraction become `Decimal` built from
the text as written (never a float), timestamps stay the text as written, and duplicate keys are an error. The loader is
imported only here, and only when a YAML file is read: the shipped catalog loads from its compiled JSON twin.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from onellm.errors import BadDefinitionError

__all__ = ["check_size", "load_documents", "position_of"]

_MAX_NODES = 200_000
_MAX_DEPTH = 64


def _loader() -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import SafeConstructor

    class _Constructor(SafeConstructor):
        """Floats as exact decimals, timestamps as their text."""

        def construct_yaml_float(self, node: Any) -> Any:
            text = str(self.construct_scalar(node)).replace("_", "")
            lowered = text.lower()
            if lowered in (".inf", "+.inf", "-.inf", ".nan"):
                mark = node.start_mark
                raise BadDefinitionError(f"{text} is not a finite number", line=mark.line + 1, column=mark.column + 1)
            try:
                return Decimal(text)
            except InvalidOperation as exc:  # pragma: no cover - the resolver only tags valid floats
                raise BadDefinitionError(f"{text!r} is not a number") from exc

        def construct_yaml_timestamp(self, node: Any, values: Any = None) -> Any:
            return str(self.construct_scalar(node))

    _Constructor.add_constructor("tag:yaml.org,2002:float", _Constructor.construct_yaml_float)
    _Constructor.add_constructor("tag:yaml.org,2002:timestamp", _Constructor.construct_yaml_timestamp)
    yaml = YAML(typ="safe", pure=False)
    yaml.Constructor = _Constructor
    yaml.allow_duplicate_keys = False
    return yaml


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
    """Every YAML document in `text` as plain values. Errors are `BadDefinitionError` with file, line and column."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    yaml = _loader()
    try:
        docs = [doc for doc in yaml.load_all(text) if doc is not None]
    except BadDefinitionError as exc:
        raise BadDefinitionError(exc.detail, file=file, line=exc.line, column=exc.column) from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if mark is None:
            raise BadDefinitionError(str(problem), file=file) from None
        raise BadDefinitionError(str(problem), file=file, line=mark.line + 1, column=mark.column + 1) from None
    except YAMLError as exc:
        raise BadDefinitionError(str(exc), file=file) from None
    except RecursionError:
        raise BadDefinitionError("the file nests too deeply", file=file) from None
    except ValueError as exc:  # for example an integer literal beyond Python's digit limit
        raise BadDefinitionError(f"a value cannot be read: {str(exc)[:200]}", file=file) from None
    for doc in docs:
        _count_nodes(doc, file)
    return docs


def _parse_path(path: str) -> list[str | int]:
    """`models[2].pricing.items[0]` -> ["models", 2, "pricing", "items", 0] (indexes are positions in the file)."""
    out: list[str | int] = []
    for part in path.split("."):
        while part:
            if part.startswith("["):
                end = part.index("]")
                out.append(int(part[1:end]))
                part = part[end + 1 :]
                continue
            cut = part.find("[")
            key = part if cut < 0 else part[:cut]
            out.append(key)
            part = "" if cut < 0 else part[cut:]
    return out


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
