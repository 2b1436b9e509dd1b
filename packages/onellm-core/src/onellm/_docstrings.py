"""Google-style docstrings: the summary and the `Args:` (or `Attributes:`) entries.

Only what a tool schema needs is read: the first paragraph, flattened to one line, and one description per name.
Whitespace inside a description is collapsed, so a description wrapped over several lines reads as one sentence.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import re

__all__ = ["Docstring", "parse_docstring"]

_SECTION = re.compile(r"^(\w[\w ]*):\s*$")
_ENTRY = re.compile(r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NAME_SECTIONS = {"args", "arguments", "parameters", "params", "attributes", "keyword args", "keyword arguments"}


class Docstring:
    """The parts of a docstring a schema uses."""

    __slots__ = ("params", "summary")

    def __init__(self, summary: str, params: dict[str, str]) -> None:
        self.summary = summary
        """The first paragraph, whitespace collapsed; empty when there is no docstring."""
        self.params = params
        """Description per name, from the `Args:`, `Parameters:` and `Attributes:` sections."""


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str | None) -> Docstring:
    """Read the summary and the per-name descriptions of a Google-style docstring."""
    if not doc or not doc.strip():
        return Docstring("", {})
    lines = inspect.cleandoc(doc).splitlines()
    summary_lines: list[str] = []
    for line in lines:
        if not line.strip() or (_SECTION.match(line.strip()) and line == line.lstrip()):
            break
        summary_lines.append(line)
    params: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        header = _SECTION.match(line.strip())
        if header is None or header.group(1).lower() not in _NAME_SECTIONS:
            i += 1
            continue
        section_indent = _indent(line)
        i += 1
        entry_indent: int | None = None
        name: str | None = None
        parts: list[str] = []
        while i < len(lines):
            body = lines[i]
            if not body.strip():
                i += 1
                continue
            indent = _indent(body)
            if indent <= section_indent:
                break
            if entry_indent is None:
                entry_indent = indent
            if indent == entry_indent:
                entry = _ENTRY.match(body.strip())
                if name is not None:
                    params[name] = _collapse(" ".join(parts))
                if entry is None:
                    name, parts = None, []
                else:
                    name, parts = entry.group(1), [entry.group(2)]
            elif name is not None:
                parts.append(body.strip())
            i += 1
        if name is not None:
            params[name] = _collapse(" ".join(parts))
    return Docstring(_collapse(" ".join(summary_lines)), params)


@functools.lru_cache(maxsize=512)
def attribute_docs(cls: type) -> dict[str, str]:
    """Docstrings written under annotated class attributes (`qty: int` then `\"\"\"How many.\"\"\"`), base classes first.

    Read from the source when it is available; a class without source (built at run time) has none.
    """
    import ast
    import textwrap

    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or klass.__module__ == "builtins":
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
            tree = ast.parse(source)
        except (OSError, TypeError, SyntaxError, IndentationError):
            continue
        node = tree.body[0] if tree.body else None
        if not isinstance(node, ast.ClassDef):
            continue
        body = node.body
        for current, following in itertools.pairwise(body):
            if (
                isinstance(current, ast.AnnAssign)
                and isinstance(current.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                out[current.target.id] = _collapse(inspect.cleandoc(following.value.value))
    return out
