"""What every definition file shares: reading with positions, warnings, key layout, and byte-for-byte saving."""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from onellm._describe import find_unplain, format_path, type_name
from onellm._files import read_regular, write_atomic
from onellm.errors import BadDefinitionError, StorageError, UnwritableValueError
from onellm.yamlio import MAX_DOCUMENT_CHARS, YamlDocument, decode_text, dump_document, load_document

__all__ = ["DefinitionWarning", "Reader", "Step", "format_path", "layout", "read_source", "type_name", "write_text"]

Step = Any  # a mapping key (usually a string) or a list index
Path_ = tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class DefinitionWarning:
    """Something a lenient load left out or could not use, and where it was."""

    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    path: str | None = None

    def __str__(self) -> str:
        where = self.file or "<string>"
        if self.line is not None:
            where += f":{self.line}:{self.column}"
        at = f" (at {self.path})" if self.path else ""
        return f"{where}: {self.message}{at}"


class Reader:
    """Typed access to a loaded document's plain data, failing with the file, line and column of the node."""

    def __init__(self, doc: YamlDocument | None, *, file: str | None, strict: bool) -> None:
        self.doc = doc
        self.file = file
        self.strict = strict
        self.warnings: list[DefinitionWarning] = []

    def error(self, message: str, path: Sequence[Step], *, key: bool = False) -> BadDefinitionError:
        shown = format_path(path) or None
        if self.doc is None:
            return BadDefinitionError(message, file=self.file, path=shown)
        line, column = self.doc.position(tuple(path), key=key)
        return BadDefinitionError(message, file=self.file, line=line, column=column, path=shown)

    def warn(self, message: str, path: Sequence[Step]) -> None:
        line = column = None
        if self.doc is not None:
            line, column = self.doc.position(tuple(path))
        self.warnings.append(DefinitionWarning(message, self.file, line, column, format_path(path) or None))

    def refuse(self, message: str, path: Sequence[Step]) -> None:
        """Strict: fail. Lenient: record a warning (the caller leaves the entry out)."""
        if self.strict:
            raise self.error(message, path)
        self.warn(message, path)

    def tolerate(self, message: str, path: Sequence[Step]) -> None:
        """A value the seeds accept in lenient loading (out of range, a name this version does not know). Strict:
        fail. Lenient: record a warning; the caller keeps the value as written."""
        if self.strict:
            raise self.error(message, path)
        self.warn(f"{message}; kept as written (strict loading refuses it)", path)

    def located(self, exc: BadDefinitionError) -> BadDefinitionError:
        """An error from a nested reader (the message model), whose path starts at the document root, positioned."""
        from onellm.yamlio import parse_path

        return self.error(exc.detail, parse_path(exc.path) if exc.path else [])

    # -- typed values -----------------------------------------------------------------------------------------------

    def mapping(self, value: Any, path: Sequence[Step]) -> dict[Any, Any]:
        if isinstance(value, dict):
            return value
        raise self.error(f"expected a mapping, found {type_name(value)}", path)

    def sequence(self, value: Any, path: Sequence[Step]) -> list[Any]:
        if isinstance(value, list):
            return value
        raise self.error(f"expected a list, found {type_name(value)}", path)

    def string(self, value: Any, path: Sequence[Step]) -> str | None:
        if value is None or type(value) is str:
            return value
        raise self.error(f"expected a string, found {type_name(value)}", path)

    def boolean(self, value: Any, path: Sequence[Step]) -> bool | None:
        if value is None or type(value) is bool:
            return value
        raise self.error(f"expected true or false, found {type_name(value)}", path)

    def integer(
        self,
        value: Any,
        path: Sequence[Step],
        *,
        low: int | None = None,
        high: int | None = None,
        soft: bool = False,
    ) -> int | None:
        """A whole number (or None) within `low`..`high`. With `soft`, a number out of range is only a warning in
        lenient loading; a value of another type always fails."""
        if value is None:
            return None
        if type(value) is not int:
            raise self.error(f"expected a whole number, found {type_name(value)}", path)
        self._range(value, path, low, high, soft)
        return value

    def number(
        self,
        value: Any,
        path: Sequence[Step],
        *,
        low: int | None = None,
        high: int | None = None,
        soft: bool = False,
    ) -> int | Decimal | None:
        """A number (or None) within `low`..`high`; `soft` as for `integer`."""
        if value is None:
            return None
        if type(value) is int:
            number: int | Decimal = value
        elif isinstance(value, Decimal):
            if not value.is_finite():
                raise self.error("expected a finite number", path)
            number = value
        elif type(value) is float:
            number = Decimal(repr(value))
        else:
            raise self.error(f"expected a number, found {type_name(value)}", path)
        self._range(number, path, low, high, soft)
        return number

    def _range(self, value: int | Decimal, path: Sequence[Step], low: int | None, high: int | None, soft: bool) -> None:
        if (low is not None and value < low) or (high is not None and value > high):
            if low is not None and high is not None:
                message = f"must be between {low} and {high}, found {value}"
            elif low is not None:
                message = f"must be at least {low}, found {value}"
            else:
                message = f"must be at most {high}, found {value}"
            if soft:
                self.tolerate(message, path)
            else:
                raise self.error(message, path)

    def one_of(self, value: Any, path: Sequence[Step], allowed: Sequence[str], *, soft: bool = False) -> str | None:
        """A string (or None) among `allowed`. With `soft`, another string is only a warning in lenient loading."""
        text = self.string(value, path)
        if text is not None and text not in allowed:
            message = f"must be one of {', '.join(allowed)}; found {text!r}"
            if not soft:
                raise self.error(message, path)
            self.tolerate(message, path)
        return text

    def strings(self, value: Any, path: Sequence[Step]) -> list[str] | None:
        if value is None:
            return None
        items = self.sequence(value, path)
        for i, item in enumerate(items):
            if type(item) is not str:
                raise self.error(f"expected a string, found {type_name(item)}", [*path, i])
        return list(items)


def layout(out: dict[str, Any], keys: tuple[Any, ...] | None) -> dict[str, Any]:
    """`out` with its keys in the order they were read (`keys`), then keys added since, in `out`'s order."""
    if not keys:
        return out
    result: dict[str, Any] = {}
    for key in keys:
        if key in out:
            result[key] = out[key]
    if len(result) != len(out):
        for key, value in out.items():
            if key not in result:
                result[key] = value
    return result


def read_source(source: str | os.PathLike[str], *, default_name: str) -> tuple[str, str, Path]:
    """(text, file name for messages, path) of a definition file; a directory means `<dir>/<default_name>`.

    Only a regular file is read (a pipe or a device is refused before a byte is read), and only up to the size the
    round-trip loader accepts (`onellm.yamlio.MAX_DOCUMENT_CHARS`).
    """
    path = Path(source)
    if path.is_dir():
        path = path / default_name
    limit = MAX_DOCUMENT_CHARS * 4  # UTF-8: up to four bytes a character; the text is measured again once decoded
    try:
        raw = read_regular(path, max_bytes=limit, operation="read", follow_symlinks=True)
    except StorageError as exc:
        cause = exc.__cause__
        if isinstance(cause, IsADirectoryError):
            raise BadDefinitionError("expected a file, found a directory", file=str(path)) from None
        detail = str(exc).split(": ", 1)[-1]
        if "allowed" in detail:
            detail = f"{detail}; a definition may be at most {MAX_DOCUMENT_CHARS:,} characters"
        raise BadDefinitionError(f"the file cannot be read: {detail}", file=str(path)) from None
    if raw is None:
        raise BadDefinitionError("the file does not exist", file=str(path))
    return decode_text(raw, file=str(path)), str(path), path


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` as UTF-8 bytes, exactly (no newline translation), replacing the file atomically.

    Raises:
        StorageError: the file cannot be written (a full or read-only disk, a missing directory); the old file is
            untouched.
    """
    write_atomic(Path(path), text.encode("utf-8"), operation="save")


class Persisted:
    """The byte-for-byte saving every definition type shares.

    A loaded object keeps its `YamlDocument` and the plain data it had when loaded. While `to_data()` still equals
    that, `dumps()` returns the loaded text; once it differs, the document is brought to the new data (unchanged
    nodes keep their comments) and written again.
    """

    _doc: YamlDocument | None
    _snapshot: Any
    _path: Path | None

    def to_data(self) -> dict[str, Any]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _attach(self, doc: YamlDocument | None, path: Path | None) -> None:
        self._doc = doc
        self._path = path
        self._snapshot = copy.deepcopy(self.to_data()) if doc is not None else None

    def position(self, path: Sequence[Step]) -> tuple[int, int] | None:
        """1-based (line, column) of the node at `path` (keys and list indexes) in the loaded text, if loaded."""
        if self._doc is None:
            return None
        return self._doc.position(tuple(path))

    def dumps(self) -> str:
        """The file text: the loaded text unchanged when nothing changed, otherwise written again from the values.

        Raises:
            UnwritableValueError: a value has no form in the file (a datetime, say); `path` names it.
        """
        data = self.to_data()
        try:
            return self._dumps(data)
        except TypeError as error:
            found = find_unplain(data)
            if found is None:
                raise
            path = format_path(found[0])
            where = self._path if self._path is not None else "definition"
            raise UnwritableValueError(
                f"{where}: {path} cannot be written: a definition file holds text, numbers, booleans, null, lists and "
                f"mappings only, not a value of type {found[1]}",
                path=path,
            ) from error

    def _dumps(self, data: dict[str, Any]) -> str:
        doc = self._doc
        if doc is None:
            return dump_document(data) if data else "{}\n"
        if data == self._snapshot:
            return doc.text
        doc.update(data)
        return doc.dumps()

    def save(self, path: str | os.PathLike[str] | None = None) -> None:
        """Write the file (to `path`, or where it was loaded from) atomically, as UTF-8."""
        target = Path(path) if path is not None else self._path
        if target is None:
            raise ValueError("this object was not loaded from a file; pass the path to save to")
        text = self.dumps()
        write_text(target, text)
        if self._doc is None:
            self._doc = load_document(text, file=str(target))
        else:
            self._doc.mark_saved(text)
        self._path = target
        self._snapshot = copy.deepcopy(self.to_data())
