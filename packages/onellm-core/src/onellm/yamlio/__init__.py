"""The YAML layer: round-trip documents for files people edit, a guarded fast loader, and the canonical emitter.

- `load_document(text, file=)` reads a file with its comments and layout; `doc.dumps()` returns the same text byte for
  byte while nothing changed, and writes it again (keeping unknown keys, and comments where ruamel can) once something
  did. `doc.position(path)` gives the 1-based line and column of a node for error messages.
- `safe_load(text, file=)` reads plain values (str, bool, int, Decimal, None, list, dict) on the C parser;
  `safe_load_all` reads every document of a `---` separated stream.
- `dump_scalar(value)`, `dump_block(data, indent)` and `dump_document(data)` write plain values by the one set of
  canonical rules (`_emit`), in the layout of the files people edit; `emit_mapping` and `emit_block` write the same
  values in the instance layout (`one_line(text)` is how they write a one-line string; `emit_entries` is
  `emit_mapping` cut into its entries, `emit_entry` one of them), and `parse_mapping`, `parse_block` and `parse_entries` read that layout back
  without a general parser, raising `NotCanonical` for anything outside it.

Both loaders refuse hostile input (alias bombs, deep nesting, duplicate keys, unknown tags such as `!!python/object`,
invalid UTF-8, numbers with thousands of digits, implicit keys longer than 1,024 characters) with a
`BadDefinitionError` carrying file, line and column. The round-trip loader also bounds its own work: at most
`MAX_DOCUMENT_CHARS` characters and `MAX_DOCUMENT_NODES` values, checked on the C parser before it starts.
`locate(text, path)` finds a node's line and column on the C parser, for files too large to read in round-trip mode.
"""

from __future__ import annotations

from onellm._public import publish as _publish
from onellm.yamlio._document import (
    MAX_DOCUMENT_CHARS,
    MAX_DOCUMENT_NODES,
    PathLike,
    YamlDocument,
    load_document,
    parse_path,
    to_plain,
)
from onellm.yamlio._emit import (
    decimal_text,
    dump_block,
    dump_document,
    dump_scalar,
    emit_block,
    emit_entries,
    emit_entry,
    emit_mapping,
    one_line,
    printable,
)
from onellm.yamlio._fast import NotCanonical, parse_block, parse_entries, parse_mapping
from onellm.yamlio._guard import MAX_ALIAS_WEIGHT, MAX_DEPTH, MAX_NUMBER_CHARS
from onellm.yamlio._load import decode_text, locate, position_of_offset, safe_load, safe_load_all

__all__ = [
    "MAX_ALIAS_WEIGHT",
    "MAX_DEPTH",
    "MAX_DOCUMENT_CHARS",
    "MAX_DOCUMENT_NODES",
    "MAX_NUMBER_CHARS",
    "NotCanonical",
    "PathLike",
    "YamlDocument",
    "decimal_text",
    "decode_text",
    "dump_block",
    "dump_document",
    "dump_scalar",
    "emit_block",
    "emit_entries",
    "emit_entry",
    "emit_mapping",
    "load_document",
    "locate",
    "one_line",
    "parse_block",
    "parse_entries",
    "parse_mapping",
    "parse_path",
    "position_of_offset",
    "printable",
    "safe_load",
    "safe_load_all",
    "to_plain",
]

_publish("onellm.yamlio", NotCanonical, YamlDocument)
