"""`JsSource`: a script or module as the sandbox runs it, with its original text for error reports.

Files are read as the host (a path the host chose) or through a run's read grant (`Capabilities.open_read`, the same
double-checked open as `read_file`). A `.ts` file is erased to JavaScript first (`erase_types`). A module may not import
other files: a static `import ... from` that is left after erasure is refused with its position.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from onellm.errors import BadDefinitionError, CapabilityDeniedError, CapabilityMissingError
from onellm_js._lexer import LexError, Positions, tokenize

if TYPE_CHECKING:
    from onellm.capabilities import Capabilities

__all__ = ["MAX_SOURCE_BYTES", "JsSource"]

MAX_SOURCE_BYTES = 4 * 1024 * 1024
"""The largest script file read (4 MiB)."""


def _decode(data: bytes, file: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        raise BadDefinitionError("the file is not UTF-8 text", file=file, line=line, column=column) from None
    return text[1:] if text.startswith("\ufeff") else text


@dataclass(frozen=True, slots=True)
class JsSource:
    """A script's text as the engine runs it (`text`, types erased) and as written (`original`)."""

    file: str
    """The name errors give it: the file's name as given to the loader, never its directory."""
    text: str
    """The JavaScript the engine runs."""
    original: str
    """The text as written (for the source line in reports); equal to `text` for JavaScript."""
    path: Path | None = None
    """Where it was read from, when it was read from a file."""

    @classmethod
    def from_text(cls, text: str, *, file: str, typescript: bool = False, path: Path | None = None) -> JsSource:
        """A source from text; `typescript` erases the types first (raising `BadDefinitionError` for constructs that
        cannot be erased)."""
        if typescript:
            from onellm_js._typescript import erase_types

            return cls(file=file, text=erase_types(text, file=file), original=text, path=path)
        return cls(file=file, text=text, original=text, path=path)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> JsSource:
        """Read a file the host chose (as the host). `.ts` files are erased to JavaScript.

        Raises:
            BadDefinitionError: the file is missing, too large, not UTF-8, or not erasable TypeScript.
        """
        resolved = Path(path)
        name = resolved.name
        try:
            with open(resolved, "rb") as handle:
                data = handle.read(MAX_SOURCE_BYTES + 1)
        except OSError as exc:
            raise BadDefinitionError(f"cannot read the file: {exc.strerror or exc}", file=name) from None
        if len(data) > MAX_SOURCE_BYTES:
            raise BadDefinitionError(f"the file is larger than {MAX_SOURCE_BYTES} bytes", file=name)
        return cls.from_text(
            _decode(data, name), file=name, typescript=resolved.suffix.lower() == ".ts", path=resolved.absolute()
        )

    @classmethod
    def read_granted(
        cls, path: str, capabilities: Capabilities, *, base: str | os.PathLike[str] | None = None
    ) -> JsSource:
        """Read a file through the read grant (the roots, link resolution and protected names `read_file` obeys).

        Raises:
            CapabilityMissingError: the grant does not reach the file, or the file cannot be opened; the message names
                the path as given and shows none of the file.
            BadDefinitionError: the file is too large, not UTF-8, or not erasable TypeScript.
        """
        name = Path(path).name
        try:
            with capabilities.open_read(path, base=base) as handle:
                data = handle.read(MAX_SOURCE_BYTES + 1)
        except CapabilityDeniedError as exc:
            raise CapabilityMissingError(
                f"{path!r} cannot be read through the run's read grant ({exc.rule or 'refused'})"
            ) from None
        except OSError as exc:
            raise CapabilityMissingError(f"{path!r} cannot be read: {exc.strerror or 'not a readable file'}") from None
        if len(data) > MAX_SOURCE_BYTES:
            raise BadDefinitionError(f"the file is larger than {MAX_SOURCE_BYTES} bytes", file=name)
        return cls.from_text(_decode(data, name), file=name, typescript=name.lower().endswith(".ts"))

    def check_module(self) -> None:
        """Refuse a module that imports another file (a static `import ... from` or `export ... from`).

        Raises:
            BadDefinitionError: at the `import` or `export`, or where the text cannot be tokenized.
        """
        try:
            tokens = tokenize(self.text)
        except LexError as exc:
            line, column = Positions(self.text).at(exc.offset)
            raise BadDefinitionError(exc.message, file=self.file, line=line, column=column) from None
        depth = 0
        for i, t in enumerate(tokens):
            if t.kind == "punct" and t.value in "([{":
                depth += 1
            elif t.kind == "punct" and t.value in ")]}":
                depth -= 1
            if depth != 0 or t.kind != "name" or t.value not in ("import", "export"):
                continue
            nxt = tokens[i + 1]
            if t.value == "import" and (
                nxt.kind == "str" or (nxt.kind in ("name", "punct") and nxt.value not in ("(", "."))
            ):
                line, column = Positions(self.text).at(t.start)
                raise BadDefinitionError(
                    "a module cannot import other files; put everything it needs in this file",
                    file=self.file,
                    line=line,
                    column=column,
                )
            if t.value == "export":
                # `export ... from "x"` re-exports another file
                j = i + 1
                while (
                    j < len(tokens) and not (tokens[j].kind == "punct" and tokens[j].value == ";") and not tokens[j].nl
                ):
                    if tokens[j].kind == "name" and tokens[j].value == "from" and tokens[j + 1].kind == "str":
                        line, column = Positions(self.text).at(t.start)
                        raise BadDefinitionError(
                            "a module cannot export from other files", file=self.file, line=line, column=column
                        )
                    if tokens[j].kind == "punct" and tokens[j].value in "({[":
                        break
                    j += 1

    def position(self, offset: int) -> tuple[int, int]:
        return Positions(self.original).at(offset)

    def excerpt(self, line: int, column: int | None) -> str:
        """The source line (from the text as written) with a caret under the column, for reports."""
        lines = self.original.splitlines()
        if not 1 <= line <= len(lines):
            return ""
        text = lines[line - 1]
        col = max(1, column or 1)
        start = 0
        if len(text) > 160:
            start = max(0, min(col - 80, len(text) - 160))
            text = text[start : start + 160]
        prefix = f"{line:>5} | "
        shown = ("..." if start else "") + text
        out = prefix + shown
        if column is not None:
            pad = "".join(c if c == "\t" else " " for c in text[: col - 1 - start])
            out += "\n" + " " * (len(prefix) - 2) + "| " + (" " * 3 if start else "") + pad + "^"
        return out
