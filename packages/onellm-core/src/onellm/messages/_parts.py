"""Parts: the pieces of content a message holds (`spec/messages.md`, "Parts").

A part is one mapping whose kind key says what it is: `text`, `asset`, `reasoning`, `hostedToolCall`, `refusal`,
`json`, `fileRef`, `providerPart`, or `from` (a template expansion, used in a definition's initial prompts). A part has
exactly one kind key. A part with none of them but one of the legacy inline media keys (`image`, `audio`, `video`,
`pdf`) is an asset part without a storage reference; the legacy keys stay in its `extra` and are written back as read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, ClassVar, TypeAlias

import msgspec

from onellm._describe import type_name
from onellm.messages._base import (
    Model,
    bad,
    need_int,
    need_mapping,
    need_str,
    opt_decimal,
    opt_str,
    read_list,
    relayout,
    set_layout,
)

__all__ = [
    "LEGACY_MEDIA_KEYS",
    "PART_KINDS",
    "Annotation",
    "AssetPart",
    "FileRefPart",
    "FromPart",
    "HostedToolCallPart",
    "JsonPart",
    "Part",
    "ProviderPart",
    "ReasoningPart",
    "RefusalPart",
    "TextPart",
    "part_from_data",
    "reasoning_entry_from_data",
]

LEGACY_MEDIA_KEYS = ("image", "audio", "video", "pdf")
"""Inline media keys of older files, read as asset parts."""


class Annotation(Model, kw_only=True):
    """A citation or note attached to a text part."""

    type: str | None = None
    """What the annotation is: `url_citation`, `file_citation`, ..."""
    url: str | None = None
    """The cited address."""
    title: str | None = None
    """The cited page's title."""
    start_index: int | None = None
    """First character of the cited span in the text."""
    end_index: int | None = None
    """One past the last character of the cited span."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know (cited text, file ids, ...), written back unchanged."""

    @classmethod
    def from_data(cls, data: Mapping[str, Any], path: str = "annotation") -> Annotation:
        """Read an annotation from plain data."""
        d = need_mapping(data, path)
        a = cls()
        extra: dict[str, Any] = {}
        for key, value in d.items():
            if key == "type":
                a.type = opt_str(value, path, ".type")
            elif key == "url":
                a.url = opt_str(value, path, ".url")
            elif key == "title":
                a.title = opt_str(value, path, ".title")
            elif key == "startIndex":
                a.start_index = None if value is None else need_int(value, path, ".startIndex")
            elif key == "endIndex":
                a.end_index = None if value is None else need_int(value, path, ".endIndex")
            else:
                extra[key] = value
        a.extra = extra
        set_layout(a, tuple(d))
        return a

    def to_data(self) -> dict[str, Any]:
        """The annotation as plain data."""
        out: dict[str, Any] = {}
        if self.type is not None:
            out["type"] = self.type
        if self.url is not None:
            out["url"] = self.url
        if self.title is not None:
            out["title"] = self.title
        if self.start_index is not None:
            out["startIndex"] = self.start_index
        if self.end_index is not None:
            out["endIndex"] = self.end_index
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, _ANNOTATION_DEFAULTS, keys)
        return out


_ANNOTATION_DEFAULTS: dict[str, Any] = {"type": None, "url": None, "title": None, "startIndex": None, "endIndex": None}


class TextPart(Model):
    """Text, with optional annotations (citations)."""

    kind: ClassVar[str] = "text"
    text: str
    """The text."""
    annotations: list[Annotation] = msgspec.field(default_factory=list)
    """Citations into the text."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    def to_data(self) -> dict[str, Any]:
        """The part as plain data."""
        out: dict[str, Any] = {"text": self.text}
        if self.annotations:
            out["annotations"] = [a.to_data() for a in self.annotations]
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, _TEXT_DEFAULTS, keys)
        return out


_TEXT_DEFAULTS: dict[str, Any] = {"annotations": []}


class AssetPart(Model):
    """Binary content (image, audio, video, document) held in the asset store and named by reference.

    `data` carries inline content on input only (a definition may embed it); it is never written. A legacy part
    (`image:`, `audio:`, `video:` or `pdf:` inline) has `legacy` set to that key and keeps its keys in `extra`.
    """

    kind: ClassVar[str] = "asset"
    storage: str | None = None
    """Which asset store holds the content."""
    key: str | None = None
    """The content's key in that store."""
    hash: str | None = None
    """Content hash, for example `sha256:...`."""
    content_type: str | None = None
    """Media type, for example `image/png`."""
    size: int | None = None
    """Size in bytes."""
    name: str | None = None
    """Original file name."""
    data: Any = None
    """Inline content given on input (never written)."""
    asset_extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Unknown keys inside the `asset` mapping, written back unchanged."""
    legacy: str | None = None
    """For a legacy inline media part, the key it was read from (`image`, `audio`, `video` or `pdf`)."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys of the part this version does not know, written back unchanged."""

    @property
    def legacy_media(self) -> Any:
        """The value under the legacy inline media key, or None for a stored asset."""
        return None if self.legacy is None else self.extra.get(self.legacy)

    def to_data(self) -> dict[str, Any]:
        """The part as plain data. A legacy part writes back its own keys only."""
        if self.legacy is not None:
            return dict(self.extra)
        asset: dict[str, Any] = {}
        if self.storage is not None:
            asset["storage"] = self.storage
        if self.key is not None:
            asset["key"] = self.key
        if self.hash is not None:
            asset["hash"] = self.hash
        if self.content_type is not None:
            asset["contentType"] = self.content_type
        if self.size is not None:
            asset["size"] = self.size
        if self.name is not None:
            asset["name"] = self.name
        if self.asset_extra:
            asset.update(self.asset_extra)
        inner_keys: tuple[str, ...] | None = self.__dict__.get("_asset_keys")
        if inner_keys is not None:
            asset = relayout(asset, _ASSET_DEFAULTS, inner_keys)
        out: dict[str, Any] = {"asset": asset}
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, {}, keys)
        return out


_ASSET_DEFAULTS: dict[str, Any] = {
    "storage": None,
    "key": None,
    "hash": None,
    "contentType": None,
    "size": None,
    "name": None,
}


class ReasoningPart(Model):
    """Provider reasoning, kept so it can be replayed. `data` is opaque and replayed verbatim."""

    kind: ClassVar[str] = "reasoning"
    text: str = ""
    """The reasoning text (may be empty when the provider sends only encrypted content)."""
    provider: str | None = None
    """The provider that produced it; other providers do not receive it."""
    display: str | None = None
    """A summary meant for people, when the provider gives one."""
    data: Any = None
    """Opaque provider content: signatures, encrypted content, ids."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    def to_data(self) -> dict[str, Any]:
        """The reasoning entry as plain data."""
        out: dict[str, Any] = {"reasoning": self.text}
        if self.provider is not None:
            out["provider"] = self.provider
        if self.display is not None:
            out["display"] = self.display
        if self.data is not None:
            out["data"] = self.data
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, _REASONING_DEFAULTS, keys)
        return out


_REASONING_DEFAULTS: dict[str, Any] = {"reasoning": "", "provider": None, "display": None, "data": None}


class HostedToolCallPart(Model):
    """A tool the provider ran itself (web search, code interpreter, ...), with its inputs and result as given."""

    kind: ClassVar[str] = "hostedToolCall"
    tool: str
    """The hosted tool's name."""
    provider: str | None = None
    """The provider that ran it."""
    id: str | None = None
    """The provider's id for the call."""
    status: str | None = None
    """The provider's status for the call (`completed`, `failed`, ...)."""
    inputs: Any = None
    """The call's inputs, as plain data."""
    result: Any = None
    """The call's result, as plain data."""
    cost: Decimal | None = None
    """What the call cost, exact USD."""
    data: Any = None
    """Opaque provider content replayed verbatim."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    def to_data(self) -> dict[str, Any]:
        """The part as plain data."""
        out: dict[str, Any] = {"hostedToolCall": self.tool}
        if self.provider is not None:
            out["provider"] = self.provider
        if self.id is not None:
            out["id"] = self.id
        if self.status is not None:
            out["status"] = self.status
        if self.inputs is not None:
            out["inputs"] = self.inputs
        if self.result is not None:
            out["result"] = self.result
        if self.cost is not None:
            out["cost"] = self.cost
        if self.data is not None:
            out["data"] = self.data
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, _HOSTED_DEFAULTS, keys)
        return out


_HOSTED_DEFAULTS: dict[str, Any] = {
    "provider": None,
    "id": None,
    "status": None,
    "inputs": None,
    "result": None,
    "cost": None,
    "data": None,
}


class RefusalPart(Model):
    """The model declined to answer."""

    kind: ClassVar[str] = "refusal"
    refusal: str
    """The refusal text."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    def to_data(self) -> dict[str, Any]:
        """The part as plain data."""
        out: dict[str, Any] = {"refusal": self.refusal}
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, {}, keys)
        return out


class JsonPart(Model):
    """A structured value (any plain JSON value, null included)."""

    kind: ClassVar[str] = "json"
    json: Any
    """The value."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    def to_data(self) -> dict[str, Any]:
        """The part as plain data."""
        out: dict[str, Any] = {"json": self.json}
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, {}, keys)
        return out


class FileRefPart(Model):
    """A file already uploaded to a provider, named by the provider's id."""

    kind: ClassVar[str] = "fileRef"
    file_ref: str
    """The provider's file id."""
    provider: str | None = None
    """The provider holding the file."""
    content_type: str | None = None
    """Media type."""
    name: str | None = None
    """File name."""
    uri: str | None = None
    """The file's address, when the provider gives one."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    def to_data(self) -> dict[str, Any]:
        """The part as plain data."""
        out: dict[str, Any] = {"fileRef": self.file_ref}
        if self.provider is not None:
            out["provider"] = self.provider
        if self.content_type is not None:
            out["contentType"] = self.content_type
        if self.name is not None:
            out["name"] = self.name
        if self.uri is not None:
            out["uri"] = self.uri
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, _FILE_REF_DEFAULTS, keys)
        return out


_FILE_REF_DEFAULTS: dict[str, Any] = {"provider": None, "contentType": None, "name": None, "uri": None}


class ProviderPart(Model):
    """Provider-specific content with no common kind, kept as raw JSON and replayed to the same provider."""

    kind: ClassVar[str] = "providerPart"
    type: str
    """The provider's type name for the content."""
    raw: Any = None
    """The content as the provider sent it."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    def to_data(self) -> dict[str, Any]:
        """The part as plain data."""
        out: dict[str, Any] = {"providerPart": self.type}
        if self.raw is not None:
            out["raw"] = self.raw
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, {"raw": None}, keys)
        return out


class FromPart(Model):
    """`from: <path>` in a definition's initial prompts: expands a list from the template data into several parts."""

    kind: ClassVar[str] = "from"
    path: str
    """The template data path, for example `inputs.images`."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys this version does not know, written back unchanged."""

    def to_data(self) -> dict[str, Any]:
        """The part as plain data."""
        out: dict[str, Any] = {"from": self.path}
        if self.extra:
            out.update(self.extra)
        keys = self._keys
        if keys is not None:
            return relayout(out, {}, keys)
        return out


Part: TypeAlias = (
    TextPart
    | AssetPart
    | ReasoningPart
    | HostedToolCallPart
    | RefusalPart
    | JsonPart
    | FileRefPart
    | ProviderPart
    | FromPart
)
"""Any part."""


# -- reading -------------------------------------------------------------------------------------------------------


def _read_text(d: Mapping[str, Any], path: str) -> TextPart:
    text = d["text"]
    if not isinstance(text, str):
        raise bad(f"{path}.text", f"expected a string, found {type_name(text)}")
    if len(d) == 1:
        return TextPart(text)
    annotations: list[Annotation] = []
    extra: dict[str, Any] = {}
    for key, value in d.items():
        if key == "text":
            continue
        if key == "annotations":
            if value is not None:
                apath = path + ".annotations"
                annotations = read_list(Annotation.from_data, value, apath)
        else:
            extra[key] = value
    part = TextPart(text, annotations, extra)
    set_layout(part, tuple(d))
    return part


def _read_asset(d: Mapping[str, Any], path: str) -> AssetPart:
    part = AssetPart()
    extra: dict[str, Any] = {}
    for key, value in d.items():
        if key == "asset":
            apath = path + ".asset"
            inner = need_mapping(value, apath)
            asset_extra: dict[str, Any] = {}
            for k, v in inner.items():
                if k == "storage":
                    part.storage = opt_str(v, apath, ".storage")
                elif k == "key":
                    part.key = opt_str(v, apath, ".key")
                elif k == "hash":
                    part.hash = opt_str(v, apath, ".hash")
                elif k == "contentType":
                    part.content_type = opt_str(v, apath, ".contentType")
                elif k == "size":
                    part.size = None if v is None else need_int(v, apath, ".size")
                elif k == "name":
                    part.name = opt_str(v, apath, ".name")
                elif k == "data":
                    part.data = v
                else:
                    asset_extra[k] = v
            part.asset_extra = asset_extra
            part.__dict__["_asset_keys"] = tuple(k for k in inner if k != "data")
        else:
            extra[key] = value
    part.extra = extra
    set_layout(part, tuple(d))
    return part


def _read_legacy(d: Mapping[str, Any], key: str) -> AssetPart:
    part = AssetPart(legacy=key, extra=dict(d))
    return part


def _read_reasoning(d: Mapping[str, Any], path: str) -> ReasoningPart:
    part = ReasoningPart()
    extra: dict[str, Any] = {}
    for key, value in d.items():
        if key == "reasoning":
            part.text = "" if value is None else need_str(value, path, ".reasoning")
        elif key == "provider":
            part.provider = opt_str(value, path, ".provider")
        elif key == "display":
            part.display = opt_str(value, path, ".display")
        elif key == "data":
            part.data = value
        else:
            extra[key] = value
    part.extra = extra
    set_layout(part, tuple(d))
    return part


def _read_hosted(d: Mapping[str, Any], path: str) -> HostedToolCallPart:
    part = HostedToolCallPart(need_str(d["hostedToolCall"], path, ".hostedToolCall"))
    extra: dict[str, Any] = {}
    for key, value in d.items():
        if key == "hostedToolCall":
            continue
        if key == "provider":
            part.provider = opt_str(value, path, ".provider")
        elif key == "id":
            part.id = opt_str(value, path, ".id")
        elif key == "status":
            part.status = opt_str(value, path, ".status")
        elif key == "inputs":
            part.inputs = value
        elif key == "result":
            part.result = value
        elif key == "cost":
            part.cost = opt_decimal(value, path, ".cost")
        elif key == "data":
            part.data = value
        else:
            extra[key] = value
    part.extra = extra
    set_layout(part, tuple(d))
    return part


def _read_refusal(d: Mapping[str, Any], path: str) -> RefusalPart:
    part = RefusalPart(need_str(d["refusal"], path, ".refusal"), {k: v for k, v in d.items() if k != "refusal"})
    set_layout(part, tuple(d))
    return part


def _read_json(d: Mapping[str, Any], path: str) -> JsonPart:
    part = JsonPart(d["json"], {k: v for k, v in d.items() if k != "json"})
    set_layout(part, tuple(d))
    return part


def _read_file_ref(d: Mapping[str, Any], path: str) -> FileRefPart:
    part = FileRefPart(need_str(d["fileRef"], path, ".fileRef"))
    extra: dict[str, Any] = {}
    for key, value in d.items():
        if key == "fileRef":
            continue
        if key == "provider":
            part.provider = opt_str(value, path, ".provider")
        elif key == "contentType":
            part.content_type = opt_str(value, path, ".contentType")
        elif key == "name":
            part.name = opt_str(value, path, ".name")
        elif key == "uri":
            part.uri = opt_str(value, path, ".uri")
        else:
            extra[key] = value
    part.extra = extra
    set_layout(part, tuple(d))
    return part


def _read_provider_part(d: Mapping[str, Any], path: str) -> ProviderPart:
    part = ProviderPart(need_str(d["providerPart"], path, ".providerPart"))
    extra: dict[str, Any] = {}
    for key, value in d.items():
        if key == "providerPart":
            continue
        if key == "raw":
            part.raw = value
        else:
            extra[key] = value
    part.extra = extra
    set_layout(part, tuple(d))
    return part


def _read_from(d: Mapping[str, Any], path: str) -> FromPart:
    part = FromPart(need_str(d["from"], path, ".from"), {k: v for k, v in d.items() if k != "from"})
    set_layout(part, tuple(d))
    return part


_READERS: dict[str, Callable[[Mapping[str, Any], str], Part]] = {
    "text": _read_text,
    "asset": _read_asset,
    "reasoning": _read_reasoning,
    "hostedToolCall": _read_hosted,
    "refusal": _read_refusal,
    "json": _read_json,
    "fileRef": _read_file_ref,
    "providerPart": _read_provider_part,
    "from": _read_from,
}

PART_KINDS = tuple(_READERS)
"""The kind keys, in the order of the spec's table."""


def _kind_of(d: Mapping[str, Any], path: str) -> str | None:
    kind: str | None = None
    for key in d:
        if key in _READERS:
            if kind is not None:
                raise bad(path, f"a part has exactly one kind key; found both {kind!r} and {key!r}")
            kind = key
    return kind


def part_from_data(data: Mapping[str, Any], path: str = "part") -> Part:
    """Read one part from plain data.

    Raises:
        BadDefinitionError: the data is not a mapping, has no kind key or several, or a value has the wrong type;
            `path` names where.
    """
    if type(data) is dict and "text" in data and len(data) == 1:
        text = data["text"]
        if type(text) is str:
            return TextPart(text)
    d = need_mapping(data, path)
    kind = _kind_of(d, path)
    if kind is None:
        for legacy in LEGACY_MEDIA_KEYS:
            if legacy in d:
                return _read_legacy(d, legacy)
        raise bad(
            path, f"a part needs one kind key ({', '.join(PART_KINDS)}); found {', '.join(map(repr, d)) or 'none'}"
        )
    return _READERS[kind](d, path)


def reasoning_entry_from_data(data: Mapping[str, Any], path: str = "reasoning") -> Part:
    """Read one entry of a message's `reasoning` list: a reasoning part whose `reasoning` key may be absent."""
    d = need_mapping(data, path)
    kind = _kind_of(d, path)
    if kind is None or kind == "reasoning":
        return _read_reasoning(d, path)
    return _READERS[kind](d, path)
