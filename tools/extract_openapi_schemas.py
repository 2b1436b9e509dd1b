"""Copy the request schemas onellm's OpenAI fixtures are validated against out of OpenAI's OpenAPI document.

    uv run python tools/extract_openapi_schemas.py path/to/openapi.yaml

Writes `testdata/providers/openai/openapi-request-schemas.json`: the component schemas reachable from the request
bodies of `/chat/completions`, `/responses`, `/responses/compact` and `/embeddings`, with the document's version, so
the tests need neither the whole 3 MB document nor the network; and `openapi-media-request-schemas.json`, the same for
the media endpoints (`/images/generations`, `/images/edits`, `/audio/speech`, `/audio/transcriptions`,
`/audio/translations`, `/moderations`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

ROOTS = ("CreateChatCompletionRequest", "CreateResponse", "CreateEmbeddingRequest", "CompactResponseMethodPublicBody")
OUT = Path(__file__).resolve().parents[1] / "testdata" / "providers" / "openai" / "openapi-request-schemas.json"
MEDIA_ROOTS = (
    "CreateImageRequest",
    "EditImageBodyJsonParam",
    "CreateSpeechRequest",
    "CreateTranscriptionRequest",
    "CreateTranslationRequest",
    "CreateModerationRequest",
)
MEDIA_OUT = OUT.with_name("openapi-media-request-schemas.json")


def refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            found.add(ref.rsplit("/", 1)[1])
        for value in node.values():
            found |= refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= refs(value)
    return found


def main(source: str) -> None:
    yaml = YAML(typ="safe", pure=False)
    document = yaml.load(Path(source).read_text(encoding="utf-8"))
    write(document, ROOTS, OUT)
    write(document, MEDIA_ROOTS, MEDIA_OUT)


def write(document: Any, roots: tuple[str, ...], target: Path) -> None:
    schemas = document["components"]["schemas"]
    wanted: dict[str, Any] = {}
    queue = list(roots)
    while queue:
        name = queue.pop()
        if name in wanted:
            continue
        wanted[name] = schemas[name]
        queue.extend(refs(schemas[name]) - wanted.keys())
    out = {
        "source": f"openai/openai-openapi openapi.yaml, info.version {document['info']['version']}",
        "roots": list(roots),
        "components": {"schemas": dict(sorted(wanted.items()))},
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, indent=1, sort_keys=False, default=str) + "\n", encoding="utf-8")
    print(f"{len(wanted)} schemas -> {target}")


if __name__ == "__main__":
    main(sys.argv[1])
