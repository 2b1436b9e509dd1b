"""The layer merge rules, and finding which layer set a value.

- A scalar in a higher layer replaces the lower value (an explicit `null` clears it).
- Mappings merge key by key, at every depth.
- A list under the key `models` merges by model name (case-insensitive): a layer adds a model or changes fields of one.
- Any other list is replaced as a whole.
- A key a layer leaves out is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ABSENT", "BLOCKED", "FOUND", "lookup", "merge_models", "merge_values", "parse_value_path", "probe"]


def merge_models(lower: Sequence[Any], higher: Sequence[Any]) -> list[Any]:
    out = list(lower)
    index = {m["name"].lower(): i for i, m in enumerate(out) if isinstance(m, Mapping) and "name" in m}
    for model in higher:
        key = model["name"].lower() if isinstance(model, Mapping) and "name" in model else None
        if key is not None and key in index:
            below = out[index[key]]
            merged = merge_values(below, model)
            merged["name"] = below["name"]  # the spelling of the layer that introduced the model stays
            out[index[key]] = merged
        else:
            if key is not None:
                index[key] = len(out)
            out.append(model)
    return out


def merge_values(lower: Mapping[str, Any], higher: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(lower)
    for key, value in higher.items():
        below = out.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            out[key] = merge_values(below, value)
        elif key == "models" and isinstance(value, list) and isinstance(below, list):
            out[key] = merge_models(below, value)
        else:
            out[key] = value
    return out


def parse_value_path(path: str) -> list[tuple[str, str | None]]:
    """`models[claude-sonnet-5-5].pricing.inputPerMillion` -> [("models", "claude-sonnet-5-5"), ("pricing", None), ...].

    A bracket after a key selects a model by name (for `models`) or an element by position (other lists). Keys holding
    dots can be written in brackets of their own: `multipliers[region:eu]` selects the key `region:eu`.
    """
    steps: list[tuple[str, str | None]] = []
    i = 0
    n = len(path)
    while i < n:
        j = i
        while j < n and path[j] not in ".[":
            j += 1
        key = path[i:j]
        selector: str | None = None
        if j < n and path[j] == "[":
            end = path.find("]", j)
            if end < 0:
                raise ValueError(f"unclosed '[' in {path!r}")
            selector = path[j + 1 : end]
            j = end + 1
        if key:
            steps.append((key, selector))
        elif selector is not None:
            steps.append((selector, None))
        if j < n and path[j] == ".":
            j += 1
        i = j
    return steps


_MISSING = object()


FOUND = "found"
ABSENT = "absent"
BLOCKED = "blocked"


def probe(data: Mapping[str, Any], steps: Sequence[tuple[str, str | None]]) -> tuple[str, Any]:
    """Follow `steps` in one layer's provider mapping. Returns (status, value):

    - `found`: the layer sets the value (a list that the merge replaces whole counts as found as soon as the layer has
      the list: whichever element the path names, the layer that set the list set it);
    - `absent`: the layer says nothing about it;
    - `blocked`: the layer sets something on the way to it that is not a mapping (a scalar, or `null`), which
      replaces whatever lower layers had there, so the path does not exist below this layer.
    """
    node: Any = data
    for key, selector in steps:
        if not isinstance(node, Mapping):
            return BLOCKED, None
        if key not in node:
            return ABSENT, None
        node = node[key]
        if selector is None:
            continue
        if isinstance(node, Mapping):
            if selector not in node:
                return ABSENT, None
            node = node[selector]
        elif isinstance(node, list):
            if key == "models":
                wanted = selector.lower()
                found = _MISSING
                for model in node:
                    if isinstance(model, Mapping) and str(model.get("name", "")).lower() == wanted:
                        found = model
                        break
                if found is _MISSING:
                    return ABSENT, None
                node = found
            else:
                return FOUND, node
        else:
            return BLOCKED, None
    return FOUND, node


def lookup(data: Mapping[str, Any], steps: Sequence[tuple[str, str | None]]) -> tuple[bool, Any]:
    """Follow `steps` in a (merged) provider mapping. Returns (found, value)."""
    status, value = probe(data, steps)
    return status == FOUND, value
