"""Compiles the shipped `llm-provider.yaml` files into `data/shipped.json`, the form the catalog loads at run time.

Loading JSON with msgspec takes well under a millisecond, while importing and running the YAML loader takes over
100 ms; the YAML files stay the source, and a test checks that the JSON matches them. Run after editing a shipped file:

    uv run python -m onellm.catalog._compile
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from onellm.catalog._catalog import _DATA_DIR, FILE_NAME, _source_from_text

_DATA = Path(_DATA_DIR)

__all__ = ["compile_shipped", "shipped_files"]


def shipped_files() -> list[Path]:
    return sorted(_DATA.rglob(FILE_NAME))


def compile_shipped() -> bytes:
    import msgspec

    files: list[dict[str, Any]] = []
    for path in shipped_files():
        rel = path.relative_to(_DATA).as_posix()
        source = _source_from_text(path.read_text(encoding="utf-8"), rel)
        files.append({"file": rel, "providers": list(source.providers)})
    encoder = msgspec.json.Encoder(decimal_format="number")
    return msgspec.json.format(encoder.encode({"files": files}), indent=1) + b"\n"


def main() -> int:
    out = _DATA / "shipped.json"
    data = compile_shipped()
    out.write_bytes(data)
    print(f"wrote {out} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
