"""Round-trip YAML documents: a person's file, read with its comments and layout, and saved back unchanged.

`load_document` checks the text with the same guards as the fast loader, then reads it with ruamel.yaml's round-trip
loader. `YamlDocument.dumps()` returns the original text byte for byte while the data equals what was loaded; once it
differs, the tree (with its comments) is written again by ruamel.yaml, verified by reading it back, and written by the
canonical emitter if ruamel's output would not read back the same. ruamel.yaml keeps the style of what the person
wrote; a value that needs quotes and has no style of its own (one the program added) is quoted by the canonical rules
of `_emit` (double quotes with JSON escapes, or a literal block for text that spans lines).
"""

from __future__ import annotations

import copy
import io
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from onellm._describe import format_path
from onellm._describe import parse_path as _parse_path
from onellm.errors import BadDefinitionError
from onellm.yamlio._emit import decimal_text, dump_document, literal_ok, plain, plain_key, quote
from onellm.yamlio._guard import event_guard, parse_float, parse_int, walk_events
from onellm.yamlio._load import c_events, convert_error, decode_text, safe_load

__all__ = [
    "MAX_DOCUMENT_CHARS",
    "MAX_DOCUMENT_NODES",
    "PathLike",
    "YamlDocument",
    "load_document",
    "parse_path",
    "to_plain",
]

PathLike = str | Sequence[str | int]


def parse_path(path: PathLike) -> list[str | int]:
    """`'questions["line-ok"].criteria[2]'` or `("questions", "line-ok", "criteria", 2)` as a list of keys and
    indexes (the text as `format_path` writes it)."""
    if not isinstance(path, str):
        return list(path)
    return _parse_path(path)


class _NewText(str):
    """A string value the program put into a person's document: written by the canonical quoting rules."""

    __slots__ = ()


class _NewKey(str):
    """A key the program put into a person's document: written by the canonical key rules."""

    __slots__ = ()


def _yaml_types() -> tuple[Any, Any, Any, Any]:
    from ruamel.yaml.constructor import RoundTripConstructor
    from ruamel.yaml.emitter import RoundTripEmitter
    from ruamel.yaml.parser import RoundTripParser
    from ruamel.yaml.representer import RoundTripRepresenter
    from ruamel.yaml.scalarfloat import ScalarFloat

    class Constructor(RoundTripConstructor):
        """Round-trip construction with the same number and timestamp rules as the fast loader."""

        def construct_yaml_int(self, node: Any) -> Any:
            if parse_int(node.value) is None:
                return self.construct_yaml_str(node)
            return super().construct_yaml_int(node)

        def construct_yaml_float(self, node: Any) -> Any:
            if parse_float(node.value) is None:
                return self.construct_yaml_str(node)
            value = super().construct_yaml_float(node)
            if not isinstance(value, ScalarFloat):
                value = ScalarFloat(value)
            value._onellm_text = node.value
            return value

    Constructor.add_constructor("tag:yaml.org,2002:int", Constructor.construct_yaml_int)
    Constructor.add_constructor("tag:yaml.org,2002:float", Constructor.construct_yaml_float)
    Constructor.add_constructor("tag:yaml.org,2002:timestamp", Constructor.construct_yaml_str)
    Constructor.add_constructor("tag:yaml.org,2002:value", Constructor.construct_yaml_str)
    Constructor.add_constructor("tag:yaml.org,2002:merge", Constructor.construct_yaml_str)

    class Representer(RoundTripRepresenter):
        def represent_decimal(self, data: Decimal) -> Any:
            text = decimal_text(data)
            numeric = not data.is_finite() or "." in text or "e" in text.lower()
            return self.represent_scalar("tag:yaml.org,2002:" + ("float" if numeric else "int"), text)

        def represent_new_text(self, data: str) -> Any:
            if plain(data):
                style = None
            elif "\n" in data and literal_ok(data):
                style = "|"
            else:
                style = '"'
            return self.represent_scalar("tag:yaml.org,2002:str", str(data), style=style)

        def represent_new_key(self, data: str) -> Any:
            style = None if plain_key(data) else '"'
            return self.represent_scalar("tag:yaml.org,2002:str", str(data), style=style)

    Representer.add_representer(Decimal, Representer.represent_decimal)
    Representer.add_representer(_NewText, Representer.represent_new_text)
    Representer.add_representer(_NewKey, Representer.represent_new_key)

    class Parser(RoundTripParser):
        """The round-trip parser, with every event checked by the guard the moment it is made."""

        def _advance(self) -> None:
            if self.current_event is None and self.state:
                event = self.state()
                self.current_event = event
                if event is not None:
                    self.loader._onellm_guard(event)

        def check_event(self, *choices: Any) -> bool:
            self._advance()
            return bool(super().check_event(*choices))

        def peek_event(self) -> Any:
            self._advance()
            return super().peek_event()

        def get_event(self) -> Any:
            self._advance()
            return super().get_event()

    class Emitter(RoundTripEmitter):
        """ruamel's writer, with the canonical quoting rules for scalars that carry no style of their own."""

        def choose_scalar_style(self) -> Any:
            style = super().choose_scalar_style()
            if self.event.style or not style or self.flow_level:
                return style  # plain, in a flow collection, or styled as the person wrote it
            value = self.event.value
            if not self.simple_key_context and "\n" in value and literal_ok(value):
                return "|"
            return '"'

        def write_double_quoted(self, text: Any, split: Any = True) -> None:
            # One way of writing double quotes for every file onellm writes: JSON escapes, one line.
            if self.root_context and self.requested_indent is not None:
                self.write_line_break()
                if self.requested_indent != 0:
                    self.write_indent()
            self.write_indicator(quote(str(text)), True)

    return Constructor, Representer, Parser, Emitter


_TYPES: tuple[Any, Any, Any, Any] | None = None


def _types() -> tuple[Any, Any, Any, Any]:
    global _TYPES
    if _TYPES is None:
        _TYPES = _yaml_types()
    return _TYPES


def _round_trip_loader(file: str | None, max_nodes: int) -> Any:
    from ruamel.yaml import YAML

    constructor, _, parser, _ = _types()
    loader = YAML(typ="rt", pure=True)
    loader.Constructor = constructor
    loader.Parser = parser
    loader.preserve_quotes = True
    loader._onellm_guard = event_guard(file=file, build=False, max_nodes=max_nodes)  # type: ignore[attr-defined]
    return loader


def to_plain(node: Any) -> Any:
    """A ruamel round-trip tree as plain values: dict, list, str, bool, int, Decimal, None (merged keys included)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarbool import ScalarBoolean
    from ruamel.yaml.scalarfloat import ScalarFloat

    if node is None or type(node) in (str, int, bool, Decimal):
        return node
    if isinstance(node, (CommentedMap, dict)):
        return {to_plain(k): to_plain(v) for k, v in node.items()}
    if isinstance(node, (CommentedSeq, list, tuple)):
        return [to_plain(v) for v in node]
    if isinstance(node, ScalarBoolean):
        return bool(node)
    if isinstance(node, bool):
        return bool(node)
    if isinstance(node, ScalarFloat):
        text = getattr(node, "_onellm_text", None)
        if text is not None:
            parsed = parse_float(text)
            if parsed is not None:
                return parsed
        return Decimal(repr(float(node)))
    if isinstance(node, float):
        return Decimal(repr(node))
    if isinstance(node, int):
        return int(node)
    if isinstance(node, str):
        return str(node)
    return node


def _guess_indent(text: str) -> tuple[int, int, int]:
    """(mapping indent, sequence indent, dash offset) as the file uses them, for re-emitting in its style."""
    mapping = 2
    offset: int | None = None
    previous_indent: int | None = None
    previous_opens = False
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(stripped)
        if previous_opens and previous_indent is not None and indent > previous_indent:
            if stripped.startswith("- ") or stripped == "-":
                if offset is None:
                    offset = indent - previous_indent
            elif mapping == 2 and indent - previous_indent in (2, 3, 4):
                mapping = indent - previous_indent
        previous_indent = indent
        body = stripped.split(" #", 1)[0].rstrip()
        previous_opens = body.endswith(":")
    if offset is None:
        offset = 2
    return mapping, offset + 2, offset


class YamlDocument:
    """A YAML file read in round-trip mode.

    `data` is the ruamel tree (a `CommentedMap` for a mapping document). `text` is the text as loaded. `dumps()` gives
    the loaded text unchanged while the data still equals what was loaded.
    """

    __slots__ = ("_baseline", "data", "file", "text")

    def __init__(self, text: str, data: Any, *, file: str | None) -> None:
        self.text = text
        self.data = data
        self.file = file
        self._baseline = to_plain(data)

    @property
    def plain(self) -> Any:
        """The document's current data as plain values."""
        return to_plain(self.data)

    def changed(self) -> bool:
        return bool(to_plain(self.data) != self._baseline)

    def position(self, path: PathLike, *, key: bool = False) -> tuple[int, int]:
        """1-based (line, column) of the node at `path` (of its key, with `key=True`).

        A path that leaves the document stops at the deepest node that exists; the document itself is (1, 1).
        """
        node = self.data
        where: tuple[int, int] | None = None
        for step in parse_path(path):
            lc = getattr(node, "lc", None)
            if lc is None:
                break
            try:
                if isinstance(step, int) and isinstance(node, list):
                    if not 0 <= step < len(node):
                        break
                    where = lc.item(step)
                    node = node[step]
                elif isinstance(node, Mapping):
                    found = _find_key(node, step)
                    if found is _MISSING:
                        break
                    where = lc.key(found) if key else lc.value(found)
                    node = node[found]
                else:
                    break
            except (KeyError, IndexError, TypeError, AttributeError):
                break
            if where is None:
                break
        if where is None:
            lc = getattr(self.data, "lc", None)
            if lc is not None and lc.line is not None:
                return lc.line + 1, lc.col + 1
            return 1, 1
        return where[0] + 1, where[1] + 1

    def error(self, message: str, path: PathLike | None = None, *, key: bool = False) -> BadDefinitionError:
        """A `BadDefinitionError` for this file, at the node `path` names."""
        if path is None:
            line, column = 1, 1
            shown: str | None = None
        else:
            line, column = self.position(path, key=key)
            shown = format_path(parse_path(path)) or None
        return BadDefinitionError(message, file=self.file, line=line, column=column, path=shown)

    def update(self, new: Any) -> None:
        """Bring the tree to the plain value `new`, keeping the nodes (and their comments) that did not change."""
        self.data = _merge(self.data, new)

    def dumps(self) -> str:
        """The document as text: the original when nothing changed, otherwise written again from the data."""
        plain = to_plain(self.data)
        if plain == self._baseline:
            return self.text
        return self._emit(plain)

    def mark_saved(self, text: str) -> None:
        """Record `text` as what is now on disk, so that the next unchanged save returns it."""
        self.text = text
        self._baseline = to_plain(self.data)

    def _emit(self, plain: Any) -> str:
        crlf = "\r\n" in self.text
        bom = self.text.startswith("\ufeff")
        out: str | None = None
        try:
            out = self._emit_ruamel()
            if safe_load(out, file=self.file) != plain:
                out = None
        except Exception:
            out = None
        if out is None:
            out = dump_document(plain)
        if crlf:
            out = out.replace("\r\n", "\n").replace("\n", "\r\n")
        if bom and not out.startswith("\ufeff"):
            out = "\ufeff" + out
        return out

    def _emit_ruamel(self) -> str:
        from ruamel.yaml import YAML

        _, representer, _, emitter = _types()
        yaml = YAML(typ="rt", pure=True)
        yaml.Representer = representer
        yaml.Emitter = emitter
        yaml.width = 4096
        mapping, sequence, offset = _guess_indent(self.text)
        yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
        yaml.preserve_quotes = True
        stream = io.StringIO()
        yaml.dump(self.data, stream)
        return stream.getvalue()


class _Missing:
    pass


_MISSING: Any = _Missing()


def _find_key(mapping: Mapping[Any, Any], step: str | int) -> Any:
    if step in mapping:
        return step
    for k in mapping:
        if str(k) == str(step):
            return k
    return _MISSING


def _merge(old: Any, new: Any) -> Any:
    """`new` (plain values), reusing `old`'s ruamel nodes wherever they hold the same value."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(old, CommentedMap) and isinstance(new, Mapping):
        if to_plain(old) == new:
            return old
        own = list(old.keys())
        for k in own:
            if k not in new and not any(str(k) == str(n) for n in new if type(n) is not type(k)):
                if old[k] is None:
                    continue  # null and absent mean the same; keep the line as the person wrote it
                del old[k]
        for k, v in new.items():
            if k in old:
                merged = _merge(old[k], v)
                if merged is not old[k]:
                    old[k] = merged
            else:
                old[_new_key(k)] = _fresh(v)
        return old
    if isinstance(old, CommentedSeq) and isinstance(new, Sequence) and not isinstance(new, str):
        if to_plain(old) == list(new):
            return old
        if len(old) == len(new):
            for i, v in enumerate(new):
                merged = _merge(old[i], v)
                if merged is not old[i]:
                    old[i] = merged
            return old
        return _fresh(new)
    if to_plain(old) == new and type(to_plain(old)) is type(new):
        return old
    return _fresh(new)


def _fresh(value: Any) -> Any:
    """A plain value as a new ruamel node tree (block style)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, Mapping):
        m = CommentedMap()
        for k, v in value.items():
            m[_new_key(k)] = _fresh(v)
        return m
    if isinstance(value, (list, tuple)):
        s = CommentedSeq()
        s.extend(_fresh(v) for v in value)
        return s
    if type(value) is str:
        return _NewText(value)
    return copy.copy(value)


def _new_key(key: Any) -> Any:
    return _NewKey(key) if type(key) is str else key


MAX_DOCUMENT_CHARS = 2_000_000
"""The longest text `load_document` reads: round-trip loading costs about a second per megabyte of long lines."""
MAX_DOCUMENT_NODES = 20_000
"""The most values (scalars, mappings, lists, aliases) `load_document` reads: round-trip loading costs about 0.1 ms
and several kilobytes per value, so 20,000 is about two seconds and 100 MB at most."""


def load_document(
    text: str | bytes,
    *,
    file: str | None = None,
    max_chars: int = MAX_DOCUMENT_CHARS,
    max_nodes: int = MAX_DOCUMENT_NODES,
) -> YamlDocument:
    """Read a person's YAML file in round-trip mode, after the hostile-input checks.

    The round-trip loader is slow (pure Python, a node object with positions and comments for every value), so its
    work is bounded before it starts: the text may be at most `max_chars` characters long and hold at most
    `max_nodes` values, both checked by the fast C parser first. Failures are `BadDefinitionError` with the file and
    the 1-based line and column; an over-long file names the limit it broke.
    """
    if len(text) > max_chars * (4 if isinstance(text, bytes | bytearray | memoryview) else 1):
        raise _too_long(len(text), max_chars, file, "bytes" if not isinstance(text, str) else "characters")
    text = decode_text(text, file=file)
    if len(text) > max_chars:
        raise _too_long(len(text), max_chars, file, "characters")
    try:
        _precheck(text, file, max_nodes)
        data = _round_trip_loader(file, max_nodes).load(text)
    except BadDefinitionError:
        raise
    except Exception as exc:
        raise convert_error(exc, text, file) from None
    return YamlDocument(text, data, file=file)


def _too_long(size: int, limit: int, file: str | None, unit: str) -> BadDefinitionError:
    return BadDefinitionError(
        f"the file is {size:,} {unit} long; a definition may be at most {limit:,} characters",
        file=file,
        line=1,
        column=1,
    )


def _precheck(text: str, file: str | None, max_nodes: int) -> None:
    """Run the guards on libyaml's events first: hostile input fails there in a fraction of the pure parser's time.

    Where libyaml cannot parse the text at all, the pure parser's verdict (which follows, with the same guards event
    by event) is the one that counts.
    """
    from ruamel.yaml.error import YAMLError

    events = c_events(text)
    if events is None:  # pragma: no cover - the C extension is a dependency
        return
    try:
        walk_events(events, file=file, build=False, max_nodes=max_nodes)
    except YAMLError:
        return
