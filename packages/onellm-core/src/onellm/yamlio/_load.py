"""Decoding, the fast plain-value loader, and turning ruamel.yaml's errors into positioned `BadDefinitionError`s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from onellm.errors import BadDefinitionError
from onellm.yamlio._guard import walk_events

MAX_IMPLICIT_KEY = 1024
"""The longest implicit (`key: value`) key YAML allows, in characters as written, quotes included."""

__all__ = [
    "MAX_IMPLICIT_KEY",
    "c_events",
    "convert_error",
    "decode_text",
    "locate",
    "position_of_offset",
    "python_events",
    "safe_load",
    "safe_load_all",
]


def position_of_offset(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of a character offset in `text`."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start + 1


def decode_text(data: bytes | bytearray | memoryview | str, *, file: str | None = None) -> str:
    """The text of a YAML file: UTF-8, strictly. An invalid byte fails with its line and column."""
    if isinstance(data, str):
        return data
    raw = bytes(data)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        line_start = before.rfind(b"\n") + 1
        column = len(before[line_start:].decode("utf-8", errors="replace")) + 1
        raise BadDefinitionError(
            f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
            file=file,
            line=line,
            column=column,
        ) from None


def convert_error(exc: BaseException, text: str, file: str | None) -> BadDefinitionError:
    """A `BadDefinitionError` for an exception raised while parsing `text`, positioned as well as it can be."""
    from ruamel.yaml.error import MarkedYAMLError
    from ruamel.yaml.reader import ReaderError

    if isinstance(exc, BadDefinitionError):
        return exc
    if isinstance(exc, MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = str(exc.problem or exc.context or "the YAML is malformed").strip()
        if exc.context and exc.problem:
            problem = f"{problem} ({str(exc.context).strip()})"
        if mark is None:
            return BadDefinitionError(problem, file=file)
        long_key = _long_key(text, mark.line, mark.column)
        if long_key is not None:
            column, length = long_key
            return BadDefinitionError(
                f"an implicit key may be at most {MAX_IMPLICIT_KEY} characters long; this one has {length} "
                "(write a longer key in the explicit form, `? key`)",
                file=file,
                line=mark.line + 1,
                column=column + 1,
            )
        return BadDefinitionError(problem, file=file, line=mark.line + 1, column=mark.column + 1)
    if isinstance(exc, ReaderError):
        position = exc.position if isinstance(exc.position, int) else 0
        line, column = position_of_offset(text, position)
        character = exc.character
        code = ord(character) if isinstance(character, str) and len(character) == 1 else character
        detail = f"character {code:#06x} is not allowed in YAML" if isinstance(code, int) else str(exc.reason)
        return BadDefinitionError(detail, file=file, line=line, column=column)
    if isinstance(exc, RecursionError):
        return BadDefinitionError("the YAML is nested too deeply", file=file, line=1, column=1)
    if isinstance(exc, MemoryError):
        return BadDefinitionError("the YAML is too large to read", file=file, line=1, column=1)
    return BadDefinitionError(f"the YAML could not be read: {exc}", file=file, line=1, column=1)


def _long_key(text: str, line: int, column: int) -> tuple[int, int] | None:
    """(0-based column, length) of an implicit key longer than YAML allows that ends at `column` of `line`, if the
    parser stopped at the `:` after one."""
    start = 0
    for _ in range(line):
        start = text.find("\n", start) + 1
        if start == 0:
            return None
    end = text.find("\n", start)
    row = text[start : end if end >= 0 else len(text)]
    if column >= len(row) or row[column] != ":":
        return None
    key = len(row) - len(row.lstrip(" "))
    while row.startswith("- ", key) or row.startswith("? ", key):
        key += 2
        key += len(row) - key - len(row[key:].lstrip(" "))
    length = column - key
    return (key, length) if length > MAX_IMPLICIT_KEY else None


def c_events(text: str) -> Iterator[Any] | None:
    try:
        from _ruamel_yaml import CParser  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - the C extension is a dependency; the pure parser is the fallback
        return None

    def events() -> Iterator[Any]:
        parser = CParser(text)
        try:
            while parser.check_event():
                yield parser.get_event()
        finally:
            parser.dispose()

    return events()


def python_events(text: str) -> Iterator[Any]:
    """The events of ruamel.yaml's pure-Python parser (the one the round-trip loader uses)."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    return iter(yaml.parse(text))


def safe_load_all(text: str | bytes, *, file: str | None = None) -> list[Any]:
    """Every document of a multi-document YAML stream (`---` separated), as plain values, with `safe_load`'s checks.

    Anchors do not reach across documents; the alias budget covers the whole stream.
    """
    return list(_load(text, file, multi=True))


def safe_load(text: str | bytes, *, file: str | None = None) -> Any:
    """Parse YAML into plain values (str, bool, int, Decimal, None, list, dict), on the C parser when present.

    Nesting depth, alias expansion, tags, duplicate keys and number sizes are checked (see `onellm.yamlio._guard`);
    every failure is a `BadDefinitionError` with the file and the 1-based line and column.
    """
    return _load(text, file, multi=False)


def _load(text: str | bytes, file: str | None, *, multi: bool) -> Any:
    text = decode_text(text, file=file)
    events = c_events(text)
    try:
        if events is not None:
            return walk_events(events, file=file, build=True, multi=multi)
    except BadDefinitionError:
        raise
    except Exception as exc:
        from ruamel.yaml.error import YAMLError

        if not isinstance(exc, YAMLError) or events is None:
            raise convert_error(exc, text, file) from None
        # libyaml is stricter than ruamel.yaml's own parser in a few corners (a `:` inside a flow collection, for
        # one). The round-trip loader uses ruamel's parser, so its verdict is the one that counts.
    try:
        return walk_events(python_events(text), file=file, build=True, multi=multi)
    except BadDefinitionError:
        raise
    except Exception as exc:
        raise convert_error(exc, text, file) from None


def locate(text: str, steps: list[str | int]) -> tuple[int, int]:
    """1-based (line, column) of the node at `steps` (keys and list indexes) in `text`, found on the C parser's events
    without building anything: fast on files of any size. A path that leaves the document stops at the deepest node
    that exists; the document itself is (1, 1). Anchors and merge keys are not followed."""
    events = c_events(text)
    if events is None:  # pragma: no cover - the C extension is a dependency
        events = python_events(text)
    # Each open collection: [is_mapping, next item is a key, path segment of the item being read].
    stack: list[list[Any]] = []
    depth_matched = 0  # how many collections on the stack lie on the path
    best = (1, 1)
    want = [str(step) if not isinstance(step, int) else step for step in steps]
    skipping = 0  # nesting depth inside a collection used as a key, or off the path
    try:
        for event in events:
            name = type(event).__name__
            starts = name in ("ScalarEvent", "MappingStartEvent", "SequenceStartEvent", "AliasEvent")
            if name in ("MappingEndEvent", "SequenceEndEvent"):
                if skipping:
                    skipping -= 1
                    continue
                stack.pop()
                depth_matched = min(depth_matched, len(stack))
                _advance(stack)
                continue
            if not starts:
                continue
            opens = name in ("MappingStartEvent", "SequenceStartEvent")
            if skipping:
                skipping += 1 if opens else 0
                continue
            if stack and stack[-1][0] and stack[-1][1]:
                # A key: remember it as the segment of the value that follows.
                stack[-1][1] = False
                stack[-1][2] = event.value if name == "ScalarEvent" else None
                if opens:
                    skipping = 1
                continue
            on_path = len(stack) == depth_matched and (
                not stack or (depth_matched - 1 < len(want) and _same(stack[-1][2], want[depth_matched - 1]))
            )
            if on_path:
                mark = event.start_mark
                best = (mark.line + 1, mark.column + 1)
                if len(stack) == len(want):
                    return best
            if opens:
                stack.append([name == "MappingStartEvent", True, 0])
                if on_path:
                    depth_matched = len(stack)
            else:
                _advance(stack)
    except Exception:
        return best
    return best


def _same(segment: Any, step: str | int) -> bool:
    return segment is not None and (segment == step if isinstance(step, int) else str(segment) == step)


def _advance(stack: list[list[Any]]) -> None:
    """One item of the innermost collection is done: a mapping waits for its next key, a list counts on."""
    if not stack:
        return
    top = stack[-1]
    if top[0]:
        top[1] = True
    else:
        top[2] += 1
