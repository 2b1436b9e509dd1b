"""Reading YAML events safely: the limits every onellm file is held to, and the plain-value builder.

Every YAML text onellm reads goes through `walk_events` first. It works on the parser's event stream with an explicit
stack (never recursion), so a document nested a hundred thousand levels deep costs memory proportional to the text and
fails cleanly. On the way it enforces:

- nesting depth (`MAX_DEPTH` collections);
- alias expansion: aliases may add at most `MAX_ALIAS_WEIGHT` units of data (a node is one unit, plus one per 64
  characters of scalar text), so a billion-laughs document fails on its first few aliases; an alias to an anchor that is
  still open (a recursive structure) or to no anchor fails too;
- tags: only the core tags (`!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!map`, `!!seq`) and the non-specific
  `!`; anything else (`!!python/object`, `!custom`, `!!binary`, `!!timestamp`, ...) is refused;
- numbers: a plain scalar that reads as a number may have at most `MAX_NUMBER_CHARS` characters;
- keys must be scalars; one document per file;
- when asked (`max_nodes`), the number of nodes (scalars, mappings, lists, aliases), which bounds the work of the
  round-trip loader that follows.

When asked to build, it also produces plain values (str, bool, int, Decimal, None, list, dict) with duplicate keys
refused, following YAML 1.2's core schema as ruamel.yaml reads it (so the fast path and the round-trip path agree):
timestamps stay strings, every non-integer number is an exact `Decimal`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

from onellm.errors import BadDefinitionError

__all__ = [
    "MAX_ALIAS_WEIGHT",
    "MAX_DEPTH",
    "MAX_NUMBER_CHARS",
    "error_at",
    "event_guard",
    "parse_float",
    "parse_int",
    "resolve_plain",
    "walk_events",
]

MAX_DEPTH = 100
MAX_ALIAS_WEIGHT = 100_000
MAX_NUMBER_CHARS = 1000

_CORE = "tag:yaml.org,2002:"
_STR = _CORE + "str"
_INT = _CORE + "int"
_FLOAT = _CORE + "float"
_BOOL = _CORE + "bool"
_NULL = _CORE + "null"
_MAP = _CORE + "map"
_SEQ = _CORE + "seq"

_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
# The YAML 1.2 number forms, as ruamel.yaml resolves them.
_FLOAT_RE = re.compile(
    r"""[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN)""",
    re.X,
)
_INT_RE = re.compile(r"[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+")
_NUMBER_START = frozenset("-+0123456789.")

_MERGE = object()  # the `<<` key
_NODE_EVENTS = frozenset({"ScalarEvent", "MappingStartEvent", "SequenceStartEvent", "AliasEvent"})
_RESOLVE_FIRST = frozenset("~nNtTfF<-+0123456789.")


class _Undefined:
    """The value of a plain scalar that is not a number after all (for example `_`): it stays a string."""


def error_at(message: str, file: str | None, mark: Any) -> BadDefinitionError:
    """A `BadDefinitionError` at a ruamel mark (0-based line and column), reported 1-based."""
    if mark is None:
        return BadDefinitionError(message, file=file)
    return BadDefinitionError(message, file=file, line=mark.line + 1, column=mark.column + 1)


def parse_int(text: str) -> int | None:
    """The value of a plain integer scalar, or None when it has no digits (it is then a string)."""
    s = text.replace("_", "")
    sign = 1
    if s[:1] in ("-", "+"):
        if s[0] == "-":
            sign = -1
        s = s[1:]
    try:
        if s.startswith("0b"):
            return sign * int(s[2:], 2)
        if s.startswith("0x"):
            return sign * int(s[2:], 16)
        if s.startswith("0o"):
            return sign * int(s[2:], 8)
        return sign * int(s)
    except ValueError:
        return None


def parse_float(text: str) -> Decimal | None:
    """The exact value of a plain non-integer number, or None when it is not one after all."""
    s = text.replace("_", "")
    low = s.lower()
    if low in (".inf", "+.inf"):
        return Decimal("Infinity")
    if low == "-.inf":
        return Decimal("-Infinity")
    if low == ".nan":
        return Decimal("NaN")
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


def resolve_plain(value: str, file: str | None, mark: Any) -> Any:
    """The value of a plain (unquoted, untagged) scalar: null, bool, int, Decimal, or the text itself."""
    if value in _NULLS:
        return None
    first = value[0]
    if first in "tTfF":
        b = _BOOLS.get(value)
        if b is not None:
            return b
        return value
    if first in _NUMBER_START:
        if _FLOAT_RE.fullmatch(value):
            _check_number_length(value, file, mark)
            f = parse_float(value)
            return value if f is None else f
        if _INT_RE.fullmatch(value):
            _check_number_length(value, file, mark)
            i = parse_int(value)
            return value if i is None else i
        return value
    if value == "<<":
        return _MERGE
    return value


def _check_number_length(value: str, file: str | None, mark: Any) -> None:
    if len(value) > MAX_NUMBER_CHARS:
        raise error_at(f"a number of {len(value)} characters is longer than the {MAX_NUMBER_CHARS} allowed", file, mark)


def _tag_name(tag: Any) -> str | None:
    if tag is None:
        return None
    return str(tag)


def _scalar_value(event: Any, file: str | None) -> Any:
    """The plain value of a scalar event, after the tag checks."""
    tag = _tag_name(event.tag)
    value: str = event.value
    plain = event.style in (None, "") and event.implicit[0]
    if tag is None or tag == "!":
        if plain and tag is None:
            return resolve_plain(value, file, event.start_mark)
        if tag == "!" and not value and event.style in (None, ""):
            return None  # a bare `!` with nothing after it: null, as the round-trip loader reads it
        return value
    if tag == _STR:
        return value
    if tag == _INT:
        if _INT_RE.fullmatch(value):
            _check_number_length(value, file, event.start_mark)
            i = parse_int(value)
            if i is not None:
                return i
        raise error_at(f"{value!r} is not an integer", file, event.start_mark)
    if tag == _FLOAT:
        if _FLOAT_RE.fullmatch(value) or _INT_RE.fullmatch(value):
            _check_number_length(value, file, event.start_mark)
            f = parse_float(value)
            if f is not None:
                return f
        raise error_at(f"{value!r} is not a number", file, event.start_mark)
    if tag == _BOOL:
        b = _BOOLS.get(value)
        if b is None:
            raise error_at(f"{value!r} is not a boolean", file, event.start_mark)
        return b
    if tag == _NULL:
        return None
    if tag in (_MAP, _SEQ):
        raise error_at(f"the tag {tag} cannot be used on a scalar", file, event.start_mark)
    raise error_at(f"the tag {_short_tag(tag)} is not allowed", file, event.start_mark)


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag


class _Frame:
    __slots__ = ("anchor", "has_key", "is_map", "key", "key_mark", "mark", "merged", "value", "weight")

    def __init__(self, is_map: bool, anchor: str | None, mark: Any, build: bool) -> None:
        self.is_map = is_map
        self.anchor = anchor
        self.mark = mark
        self.weight = 1
        self.value: Any = ({} if is_map else []) if build else None
        self.has_key = False
        self.key: Any = None
        self.key_mark: Any = None
        self.merged: list[dict[Any, Any]] | None = None


def walk_events(
    events: Iterable[Any], *, file: str | None, build: bool, multi: bool = False, max_nodes: int | None = None
) -> Any:
    """Consume a parser's events, enforce the limits, and (when `build`) return the document as plain values.

    Parser errors from ruamel.yaml propagate unchanged; `convert_error` turns them into `BadDefinitionError`.
    """
    send = event_guard(file=file, build=build, multi=multi, max_nodes=max_nodes)
    for event in events:
        send(event)
    return send(None)


def event_guard(
    *, file: str | None, build: bool, multi: bool = False, max_nodes: int | None = None
) -> Callable[[Any], Any]:
    """A push-style guard: call it with each event as the parser makes it, then with None for the document.

    Each call raises `BadDefinitionError` as soon as an event breaks a limit, before anything is built from it.
    """
    guard = _guard(file, build, multi, max_nodes)
    next(guard)

    def send(event: Any) -> Any:
        try:
            return guard.send(event)
        except StopIteration as done:
            return done.value

    return send


def _guard(file: str | None, build: bool, multi: bool, max_nodes: int | None) -> Generator[None, Any, Any]:
    nodes = 0
    stack: list[_Frame] = []
    anchors: dict[str, tuple[Any, int, bool]] = {}
    open_anchors: set[str] = set()
    alias_weight = 0
    documents = 0
    roots: list[Any] = []
    root: Any = None

    def attach(value: Any, weight: int, mark: Any, is_scalar: bool) -> None:
        nonlocal root
        if not stack:
            root = "<<" if value is _MERGE else value
            return
        parent = stack[-1]
        parent.weight += weight
        if not parent.is_map:
            if build:
                parent.value.append("<<" if value is _MERGE else value)
            return
        if not parent.has_key:
            if not is_scalar:
                raise error_at("a mapping key must be a plain value, not a mapping or a list", file, mark)
            parent.has_key = True
            parent.key = value
            parent.key_mark = mark
            return
        parent.has_key = False
        if value is _MERGE:
            value = "<<"  # `<<` is a merge only as a key
        if not build:
            return
        key = parent.key
        if key is _MERGE:
            merged = parent.merged if parent.merged is not None else []
            sources = value if isinstance(value, list) else [value]
            for source in sources:
                if not isinstance(source, dict):
                    raise error_at("a merge key (<<) takes a mapping or a list of mappings", file, mark)
                merged.append(source)
            parent.merged = merged
            return
        mapping: dict[Any, Any] = parent.value
        try:
            duplicate = key in mapping
        except TypeError:
            raise error_at("a mapping key must be a plain value", file, parent.key_mark) from None
        if duplicate:
            raise error_at(f"duplicate key {key!r}", file, parent.key_mark)
        mapping[key] = value

    while True:
        event = yield
        if event is None:
            return roots if multi else root
        name = type(event).__name__
        if max_nodes is not None and name in _NODE_EVENTS:
            nodes += 1
            if nodes > max_nodes:
                raise error_at(
                    f"the file holds more than {max_nodes:,} values (mapping entries, list items, scalars); "
                    f"a definition may hold at most {max_nodes:,}",
                    file,
                    event.start_mark,
                )
        if name == "ScalarEvent":
            raw: str = event.value
            if event.tag is None and (event.style is None or event.style == ""):
                # A plain scalar: only text starting like null, a boolean, a number or `<<` needs resolving.
                value = resolve_plain(raw, file, event.start_mark) if not raw or raw[0] in _RESOLVE_FIRST else raw
            elif event.tag is None:
                value = raw
            else:
                value = _scalar_value(event, file)
            weight = 1 + len(raw) // 64
            if event.anchor is not None:
                anchors[event.anchor] = ("<<" if value is _MERGE else value, weight, True)
            attach(value, weight, event.start_mark, True)
        elif name == "MappingStartEvent" or name == "SequenceStartEvent":
            is_map = name == "MappingStartEvent"
            tag = _tag_name(event.tag)
            if tag not in (None, "!", _MAP if is_map else _SEQ):
                raise error_at(f"the tag {_short_tag(tag)} is not allowed here", file, event.start_mark)
            if stack and stack[-1].is_map and not stack[-1].has_key:
                raise error_at("a mapping key must be a plain value, not a mapping or a list", file, event.start_mark)
            if len(stack) >= MAX_DEPTH:
                raise error_at(f"nested deeper than {MAX_DEPTH} levels", file, event.start_mark)
            if event.anchor is not None:
                open_anchors.add(event.anchor)
            stack.append(_Frame(is_map, event.anchor, event.start_mark, build))
        elif name == "MappingEndEvent" or name == "SequenceEndEvent":
            frame = stack.pop()
            value = frame.value
            if build and frame.merged:
                for source in frame.merged:
                    for k, v in source.items():
                        if k not in value:
                            value[k] = v
            if frame.anchor is not None:
                open_anchors.discard(frame.anchor)
                anchors[frame.anchor] = (value, frame.weight, False)
            attach(value, frame.weight, frame.mark, False)
        elif name == "AliasEvent":
            anchor = event.anchor
            if anchor in open_anchors:
                raise error_at(f"the alias *{anchor} refers to a node that contains it", file, event.start_mark)
            target = anchors.get(anchor)
            if target is None:
                raise error_at(f"the alias *{anchor} names no anchor", file, event.start_mark)
            alias_weight += target[1]
            if alias_weight > MAX_ALIAS_WEIGHT:
                raise error_at("aliases expand to more data than allowed (an alias bomb?)", file, event.start_mark)
            attach(target[0], target[1], event.start_mark, target[2])
        elif name == "DocumentEndEvent":
            if multi:
                roots.append(root)
        elif name == "DocumentStartEvent":
            documents += 1
            if multi:
                anchors.clear()
                root = None
            elif documents > 1:
                raise error_at("a file holds one YAML document; found a second", file, event.start_mark)
