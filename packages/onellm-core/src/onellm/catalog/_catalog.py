"""Catalog layers, the merged catalog, and model-name resolution."""

from __future__ import annotations

import _thread
import datetime as _dt
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, cast

from onellm._public import publish as _publish
from onellm.catalog._merge import BLOCKED, FOUND, lookup, merge_values, parse_value_path, probe
from onellm.catalog._schema import SchemaError, check_provider
from onellm.catalog.entries import ModelEntry, PresetEntry, ProviderEntry
from onellm.errors import BadDefinitionError, ModelNotFoundError

if TYPE_CHECKING:
    from pathlib import Path

    from onellm.catalog._profile import ModelProfile
    from onellm.messages import Cost, Usage

__all__ = ["Catalog", "CatalogLayer", "ResolvedModel", "ValueOrigin"]

ENV_VAR = "ONELLM_CATALOG"
FILE_NAME = "llm-provider.yaml"
_DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
_RANKS = {"shipped": 0, "user": 1, "code": 2}


class ValueOrigin(NamedTuple):
    """Where an effective catalog value was set: the layer's name and, when it came from a file, that file."""

    layer: str
    file: str | None = None

    def __str__(self) -> str:
        return self.layer


class _Source(NamedTuple):
    file: str | None
    providers: tuple[dict[str, Any], ...]


class CatalogLayer:
    """One layer of the catalog: provider entries from one or more files (or from code), all at one precedence.

    `name` is `shipped`, `user` or `code` (the precedence, lowest first); any other name ranks with `code`.
    """

    __slots__ = ("_sources", "name")

    def __init__(self, name: str, sources: Iterable[_Source]) -> None:
        self.name = name
        self._sources = tuple(sources)

    def __repr__(self) -> str:
        files = [s.file for s in self._sources if s.file]
        return f"CatalogLayer({self.name!r}, files={files!r})"

    @property
    def rank(self) -> int:
        return _RANKS.get(self.name, 2)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(s.file for s in self._sources if s.file is not None)

    def providers(self) -> Iterator[tuple[str | None, dict[str, Any]]]:
        """(file, provider mapping) pairs, in the order they were read."""
        for source in self._sources:
            for provider in source.providers:
                yield source.file, provider

    def to_data(self) -> list[dict[str, Any]]:
        """The layer's provider entries as plain values, unknown keys included, in the order they were read."""
        import copy

        return [copy.deepcopy(provider) for _, provider in self.providers()]

    def dumps(self) -> str:
        """The layer as `llm-provider.yaml` text, one document per provider; reading it back gives the same entries."""
        from onellm.yamlio import dump_document

        return "---\n".join(dump_document(provider) for provider in self.to_data())

    # -- building layers ---------------------------------------------------------------------------------------------

    @classmethod
    def shipped(cls) -> CatalogLayer:
        """The catalog that ships inside the package (parsed once per process)."""
        return _shipped_layer()

    @classmethod
    def from_text(cls, text: str, *, name: str = "user", file: str | None = None) -> CatalogLayer:
        """A layer from the text of an `llm-provider.yaml` file: one provider per document, or a `providers:` list."""
        return cls(name, [_source_from_text(text, file)])

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, name: str = "user") -> CatalogLayer:
        """A layer from one file, or from every `*.yaml`/`*.yml` file under a directory (sorted by path)."""
        from pathlib import Path

        p = Path(path)
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.suffix in (".yaml", ".yml") and f.is_file())
        elif p.is_file():
            files = [p]
        else:
            raise BadDefinitionError("no such catalog file or directory", file=str(p))
        return cls(name, [_source_from_text(_read(f), str(f)) for f in files])

    @classmethod
    def from_paths(cls, paths: Iterable[str | os.PathLike[str]], *, name: str = "user") -> CatalogLayer:
        sources: list[_Source] = []
        for path in paths:
            sources.extend(cls.from_file(path, name=name)._sources)
        return cls(name, sources)

    @classmethod
    def from_data(
        cls, data: Mapping[str, Any] | Sequence[Mapping[str, Any]], *, name: str = "code", file: str | None = None
    ) -> CatalogLayer:
        """A layer from plain values built in code: one provider mapping, a list of them, or `{"providers": [...]}`."""
        return cls(name, [_source_from_documents([data], file=file, text=None)])


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadDefinitionError(f"the file is not UTF-8 text ({exc.reason})", file=str(path)) from None
    except OSError as exc:
        raise BadDefinitionError(f"cannot read the file: {exc.strerror}", file=str(path)) from None


def _source_from_text(text: str, file: str | None) -> _Source:
    from onellm.catalog._yaml import load_documents

    return _source_from_documents(load_documents(text, file=file), file=file, text=text)


def _source_from_documents(docs: Sequence[Any], *, file: str | None, text: str | None) -> _Source:
    if text is None:
        from onellm.catalog._yaml import check_size

        for doc in docs:
            check_size(doc, file)
    providers: list[dict[str, Any]] = []
    for index, doc in enumerate(docs):
        items: list[tuple[str, Any]]
        if isinstance(doc, Mapping) and "providers" in doc and "name" not in doc:
            listed = doc["providers"]
            if not isinstance(listed, list):
                raise _positioned("'providers' must be a list of provider entries", "providers", file, text, index)
            items = [(f"providers[{i}]", p) for i, p in enumerate(listed)]
        elif isinstance(doc, Sequence) and not isinstance(doc, (str, bytes, Mapping)):
            items = [(f"[{i}]", p) for i, p in enumerate(doc)]
        else:
            items = [("", doc)]
        for path, provider in items:
            try:
                providers.append(check_provider(provider, path))
            except SchemaError as exc:
                raise _positioned(exc.message, exc.path, file, text, index) from None
    return _Source(file, tuple(providers))


def _positioned(message: str, path: str, file: str | None, text: str | None, document: int) -> BadDefinitionError:
    line = column = None
    if text is not None:
        from onellm.catalog._yaml import position_of

        line, column = position_of(text, document, path)
    return BadDefinitionError(message, file=file, line=line, column=column, path=path or None)


_shipped_lock = _thread.allocate_lock()  # not `threading`: resolving a model should not import it
_shipped_cache: list[CatalogLayer] = []


def _shipped_layer() -> CatalogLayer:
    if _shipped_cache:
        return _shipped_cache[0]
    with _shipped_lock:
        if not _shipped_cache:
            import json

            with open(os.path.join(_DATA_DIR, "shipped.json"), encoding="utf-8") as handle:
                raw = json.load(handle, parse_float=Decimal)
            sources = [_Source(f"<shipped>/{entry['file']}", tuple(entry["providers"])) for entry in raw["files"]]
            _shipped_cache.append(CatalogLayer("shipped", sources))
    return _shipped_cache[0]


# -- patterns ----------------------------------------------------------------------------------------------------------


class _Pattern(NamedTuple):
    text: str
    literal: int
    folded: str
    provider: str
    preset: str | None

    def matches(self, name: str) -> bool:
        return glob_match(self.folded, name.lower())


def glob_match(pattern: str, text: str) -> bool:
    """`*` matches any run of characters, `?` one character; everything else itself. Linear in practice and never
    worse than len(pattern) * len(text): no backtracking blow-up on hostile names."""
    p = t = 0
    star = -1
    mark = 0
    np, nt = len(pattern), len(text)
    while t < nt:
        if p < np and (pattern[p] == "?" or pattern[p] == text[t]):
            p += 1
            t += 1
        elif p < np and pattern[p] == "*":
            star = p
            mark = t
            p += 1
        elif star >= 0:
            p = star + 1
            mark += 1
            t = mark
        else:
            return False
    while p < np and pattern[p] == "*":
        p += 1
    return p == np


def _literal_count(glob: str) -> int:
    return sum(1 for ch in glob if ch not in "*?")


# -- the resolved model ------------------------------------------------------------------------------------------------

Via = Literal["alias", "name", "pattern", "open"]


class ResolvedModel:
    """A model name resolved against the catalog: which provider (and preset) serves it, and its merged entry."""

    __slots__ = ("__dict__", "entry", "preset", "preset_entry", "provider", "provider_entry", "requested", "via")

    def __init__(
        self,
        *,
        requested: str,
        provider_entry: ProviderEntry,
        preset_entry: PresetEntry | None,
        entry: ModelEntry,
        via: Via,
    ) -> None:
        self.requested = requested
        self.provider_entry = provider_entry
        self.preset_entry = preset_entry
        self.provider: str = provider_entry.name
        self.preset: str | None = preset_entry.name if preset_entry is not None else None
        self.entry = entry
        self.via: Via = via

    def __repr__(self) -> str:
        return f"ResolvedModel({self.qualified_name!r}, via={self.via!r})"

    @cached_property
    def name(self) -> str:
        """The model's name: as the catalog spells it when listed, as asked for when a pattern or preset matched.
        Kept after the first read, like the other values worked out from the entries (a new catalog resolves new
        models)."""
        return self.entry.name

    @cached_property
    def qualified_name(self) -> str:
        """`provider:model`, or `preset:model` for a preset."""
        return f"{self.preset or self.provider}:{self.name}"

    @property
    def base_url(self) -> str | None:
        if self.preset_entry is not None and self.preset_entry.base_url:
            return self.preset_entry.base_url
        return self.provider_entry.base_url

    @property
    def api_key_env_var(self) -> str | None:
        if self.preset_entry is not None and "apiKeyEnvVar" in self.preset_entry.data:
            return self.preset_entry.api_key_env_var
        return self.provider_entry.api_key_env_var

    @cached_property
    def properties(self) -> dict[str, Any]:
        """Free-form properties: the model's over the preset's over the provider's."""
        merged = self.provider_entry.properties
        if self.preset_entry is not None:
            merged = merge_values(merged, self.preset_entry.properties)
        return merge_values(merged, self.entry.properties)

    @cached_property
    def capabilities(self) -> tuple[str, ...] | None:
        if self.preset_entry is not None and self.preset_entry.capabilities is not None:
            return self.preset_entry.capabilities
        return self.provider_entry.capabilities

    @cached_property
    def profile(self) -> ModelProfile:
        """What a provider needs to know about this model (limits, schema form, thinking style, base URL, key
        variable, properties), built once; the runtime hands it to the provider with each request."""
        from onellm.catalog._profile import ModelProfile

        return ModelProfile.from_resolved(self)

    @cached_property
    def _derived(self) -> dict[str, Any]:
        """Values worked out from this model's entries once per resolved model and kept for its later calls (the
        adjuster's decisions, price lookups). A replaced catalog resolves new models, so nothing outlives it."""
        return {}

    @property
    def local(self) -> bool:
        """True for a server on this machine: a `local: true` preset or provider, or a loopback base URL."""
        if self.preset_entry is not None and self.preset_entry.local:
            return True
        if self.provider_entry.local:
            return True
        return is_loopback_url(self.base_url)

    def price(
        self,
        usage: Usage,
        *,
        service_tier: str | None = None,
        batch: bool = False,
        region: str | None = None,
        multipliers: Sequence[str] = (),
        qualifiers: Mapping[str, Any] | None = None,
        today: _dt.date | None = None,
        at: _dt.date | _dt.datetime | Any | None = None,
        base_url: str | None = None,
    ) -> Cost:
        """Price one call's usage with this model's catalog prices. See `onellm.catalog.pricing.price_usage`."""
        if not (batch or region or multipliers or qualifiers) and today is None and base_url is None:
            # A model call's question: the options left at their defaults are not passed on (passing them costs
            # more than the pricing's fast path).
            price_call = _PRICE_CALL[0] if _PRICE_CALL else _load_pricing()[1]
            plain: Cost = price_call(self, usage, service_tier, at)
            return plain
        price_usage = _PRICE_USAGE[0] if _PRICE_USAGE else _load_pricing()[0]
        cost: Cost = price_usage(
            self,
            usage,
            service_tier=service_tier,
            batch=batch,
            region=region,
            multipliers=multipliers,
            qualifiers=qualifiers,
            today=today,
            at=at,
            base_url=base_url,
        )
        return cost


_PRICE_USAGE: list[Any] = []
_PRICE_CALL: list[Any] = []


def _load_pricing() -> tuple[Any, Any]:
    """`price_usage` and `_price_call`, imported on the first call priced."""
    from onellm.catalog.pricing import _price_call, price_usage

    if not _PRICE_USAGE:
        _PRICE_USAGE.append(price_usage)
        _PRICE_CALL.append(_price_call)
    return price_usage, _price_call


def is_loopback_url(url: str | None) -> bool:
    """True when `url`'s host is `localhost`, in 127.0.0.0/8, or `::1`."""
    if not url:
        return False
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url if "//" in url else "//" + url).hostname
    except ValueError:
        return False
    if host is None:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# -- the catalog ---------------------------------------------------------------------------------------------------------

_Scope = tuple[str, str | None]  # (provider name lower, preset name or None)


class Catalog:
    """The merged catalog: layers stacked shipped < user < code, and model-name resolution over them."""

    _CACHE_LIMIT: ClassVar[int] = 4096
    _default_lock: ClassVar[_thread.LockType] = _thread.allocate_lock()
    _default_cache: ClassVar[dict[tuple[Any, ...], Catalog]] = {}

    def __init__(self, layers: Iterable[CatalogLayer]) -> None:
        ordered = sorted(enumerate(layers), key=lambda pair: (pair[1].rank, pair[0]))
        self.layers: tuple[CatalogLayer, ...] = tuple(layer for _, layer in ordered)
        merged: dict[str, dict[str, Any]] = {}
        for layer in self.layers:
            for _file, provider in layer.providers():
                key = provider["name"].lower()
                below = merged.get(key)
                if below is None:
                    merged[key] = provider
                else:
                    merged[key] = merge_values(below, provider)
                    merged[key]["name"] = below["name"]
        self._providers = {key: ProviderEntry(data) for key, data in merged.items()}
        self._resolved: dict[str, ResolvedModel] = {}
        self._build_index()

    def __repr__(self) -> str:
        layers = ", ".join(layer.name for layer in self.layers)
        return f"Catalog(layers=[{layers}], providers={list(self._providers)!r})"

    # -- construction ------------------------------------------------------------------------------------------------

    @classmethod
    def shipped(cls) -> Catalog:
        """The catalog that ships with onellm, alone."""
        return cls([CatalogLayer.shipped()])

    @classmethod
    def from_layers(
        cls,
        *layers: CatalogLayer | Mapping[str, Any] | Sequence[Any] | str | os.PathLike[str],
        shipped: bool = False,
        user: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
        code: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    ) -> Catalog:
        """A catalog of exactly these layers.

        Positional layers: a `CatalogLayer`, a mapping or a list of mappings (a `code` layer), or a path to a file or
        directory (a `user` layer). Keywords add the common ones: `shipped=True` the shipped catalog, `user=` one path
        or several, `code=` provider entries. Layers stack by precedence (shipped < user < code) whatever the order.
        """
        built: list[CatalogLayer] = []
        if shipped:
            built.append(CatalogLayer.shipped())
        if user is not None:
            paths = [user] if isinstance(user, (str, os.PathLike)) else list(user)
            built.append(CatalogLayer.from_paths(paths))
        if code is not None:
            built.append(CatalogLayer.from_data(code))
        for layer in layers:
            if isinstance(layer, CatalogLayer):
                built.append(layer)
            elif isinstance(layer, (str, os.PathLike)):
                built.append(CatalogLayer.from_file(layer))
            elif isinstance(layer, (Mapping, Sequence)):
                built.append(CatalogLayer.from_data(cast("Mapping[str, Any] | Sequence[Mapping[str, Any]]", layer)))
            else:
                raise TypeError(f"a catalog layer is a CatalogLayer, a mapping or a path, not {type(layer).__name__}")
        return cls(built)

    @classmethod
    def default(cls) -> Catalog:
        """The shipped catalog plus the user layer named by `ONELLM_CATALOG` (files or directories, `os.pathsep`
        separated). Cached until the variable or a named file changes."""
        setting = os.environ.get(ENV_VAR, "").strip()
        paths = [p for p in setting.split(os.pathsep) if p.strip()] if setting else []
        key: tuple[Any, ...] = (setting, *(_stamp(p) for p in paths))
        found = cls._default_cache.get(key)
        if found is not None:
            return found
        with cls._default_lock:
            found = cls._default_cache.get(key)
            if found is None:
                layers = [CatalogLayer.shipped()]
                if paths:
                    layers.append(CatalogLayer.from_paths(paths))
                found = cls(layers)
                if len(cls._default_cache) > 16:
                    cls._default_cache.clear()
                cls._default_cache[key] = found
        return found

    def with_layers(
        self, *layers: CatalogLayer | Mapping[str, Any] | Sequence[Any] | str | os.PathLike[str]
    ) -> Catalog:
        """A new catalog with these layers added to this one's."""
        return Catalog.from_layers(*self.layers, *layers)

    def with_overrides(self, data: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> Catalog:
        """A new catalog with a `code` layer of these provider entries on top."""
        return Catalog([*self.layers, CatalogLayer.from_data(data)])

    # -- reading -----------------------------------------------------------------------------------------------------

    @property
    def providers(self) -> tuple[ProviderEntry, ...]:
        return tuple(self._providers.values())

    def provider(self, name: str) -> ProviderEntry:
        found = self._providers.get(name.lower())
        if found is None:
            raise ModelNotFoundError(
                f"no provider named {name!r} in the catalog", name=name, candidates=tuple(self._providers)
            )
        return found

    def models(self) -> Iterator[tuple[ProviderEntry, PresetEntry | None, ModelEntry]]:
        """Every listed model: (provider, preset or None, model)."""
        for provider in self._providers.values():
            for model in provider.models:
                yield provider, None, model
            for preset in provider.presets.values():
                for model in preset.models:
                    yield provider, preset, model

    def source_of(self, provider: str, path: str) -> str | None:
        """The name of the layer that set the effective value at `path` (`models[name].pricing.inputPerMillion`)."""
        origin = self.origin_of(provider, path)
        return origin.layer if origin is not None else None

    def origin_of(self, provider: str, path: str) -> ValueOrigin | None:
        """The layer and file that set the effective value at `path`, or None when no layer sets it."""
        steps = parse_value_path(path)
        key = provider.lower()
        # A name is the merge key, not a value a higher layer changes: it comes from the layer that introduced the
        # provider or model.
        introduced = steps[-1] == ("name", None) and (len(steps) == 1 or steps[-2][0] == "models")
        layers = self.layers if introduced else tuple(reversed(self.layers))
        for layer in layers:
            sources = list(layer.providers())
            for file, data in sources if introduced else reversed(sources):
                if data["name"].lower() != key:
                    continue
                status, _ = probe(data, steps)
                if status == FOUND:
                    return ValueOrigin(layer.name, file)
                if status == BLOCKED and not introduced:
                    return None  # a higher layer replaced what lay on the path: the value is gone
        return None

    def value_of(self, provider: str, path: str) -> Any:
        """The effective (merged) value at `path`, or None."""
        entry = self._providers.get(provider.lower())
        if entry is None:
            return None
        _, value = lookup(entry.data, parse_value_path(path))
        return value

    # -- resolution --------------------------------------------------------------------------------------------------

    def _build_index(self) -> None:
        self._prefixes: dict[str, _Scope] = {}
        self._aliases: dict[str, list[tuple[_Scope, str]]] = {}
        self._exact: dict[str, list[tuple[_Scope, ModelEntry]]] = {}
        patterns: list[_Pattern] = []
        self._open_scopes: set[_Scope] = set()
        for key, provider in self._providers.items():
            scope: _Scope = (key, None)
            self._prefixes[key] = scope
            self._index_scope(scope, provider.aliases, provider.models, provider.data.get("modelPatterns"), patterns)
            for preset_name, preset in provider.presets.items():
                pkey = preset_name.lower()
                if pkey in self._prefixes and self._prefixes[pkey] != (key, preset_name):
                    other = self._prefixes[pkey]
                    raise BadDefinitionError(
                        f"preset '{preset_name}' of provider '{provider.name}' has the same name as "
                        + (f"provider '{other[0]}'" if other[1] is None else f"a preset of provider '{other[0]}'")
                    )
                pscope: _Scope = (key, preset_name)
                self._prefixes[pkey] = pscope
                self._index_scope(pscope, preset.aliases, preset.models, preset.data.get("modelPatterns"), patterns)
        for key in self._providers:
            if self._prefixes[key] != (key, None):
                raise BadDefinitionError(f"provider '{key}' has the same name as a preset")
        self._patterns = tuple(sorted(patterns, key=lambda p: -p.literal))

    def _index_scope(
        self,
        scope: _Scope,
        aliases: Mapping[str, str],
        models: Sequence[ModelEntry],
        globs: Sequence[str] | None,
        patterns: list[_Pattern],
    ) -> None:
        for alias, target in aliases.items():
            self._aliases.setdefault(alias.lower(), []).append((scope, target))
        for model in models:
            self._exact.setdefault(model.name.lower(), []).append((scope, model))
        if globs is None:
            self._open_scopes.add(scope)
        else:
            patterns.extend(_Pattern(g, _literal_count(g), g.lower(), scope[0], scope[1]) for g in globs)

    def resolve(self, name: str) -> ResolvedModel:
        """Resolve a model name: optional `provider:` or `preset:` prefix, then alias, exact name, patterns.

        Raises:
            ModelNotFoundError: the name is unknown, or two providers match it at the same step (`candidates`).
        """
        found = self._resolved.get(name)
        if found is not None:
            return found
        if not isinstance(name, str):
            raise TypeError(f"a model name is a str, not {type(name).__name__}")
        text = name.strip()
        if not text:
            raise ModelNotFoundError("the model name is empty", name=name)
        scope: _Scope | None = None
        model = text
        head, sep, rest = text.partition(":")
        if sep:
            hit = self._prefixes.get(head.strip().lower())
            if hit is not None:
                scope = hit
                model = rest.strip()
                if not model:
                    raise ModelNotFoundError(f"{name!r} names a provider but no model", name=name)
        resolved = self._resolve_in(scope, model, name)
        if len(self._resolved) >= self._CACHE_LIMIT:
            self._resolved.clear()
        self._resolved[name] = resolved
        return resolved

    def _make(self, scope: _Scope, entry: ModelEntry | None, model: str, requested: str, via: Via) -> ResolvedModel:
        provider = self._providers[scope[0]]
        preset = provider.presets[scope[1]] if scope[1] is not None else None
        if entry is None:
            entry = ModelEntry({"name": model}, provider=provider.name, preset=scope[1])
        return ResolvedModel(requested=requested, provider_entry=provider, preset_entry=preset, entry=entry, via=via)

    def _describe(self, scope: _Scope, model: str) -> str:
        provider = self._providers[scope[0]].name
        return f"{scope[1]}:{model}" if scope[1] is not None else f"{provider}:{model}"

    def _ambiguous(self, requested: str, step: str, hits: Sequence[tuple[_Scope, str]]) -> ModelNotFoundError:
        candidates = tuple(dict.fromkeys(self._describe(scope, model) for scope, model in hits))
        return ModelNotFoundError(
            f"model {requested!r} is ambiguous: more than one provider matches it by {step} "
            f"({', '.join(candidates)}); name one with a 'provider:' prefix",
            name=requested,
            candidates=candidates,
        )

    def _resolve_in(self, scope: _Scope | None, model: str, requested: str) -> ResolvedModel:
        key = model.lower()

        def in_scope(s: _Scope) -> bool:
            if scope is None:
                return True
            return s == scope

        # 1. alias
        alias_hits = [(s, target) for s, target in self._aliases.get(key, ()) if in_scope(s)]
        if alias_hits:
            if len({s for s, _ in alias_hits}) > 1:
                raise self._ambiguous(requested, "alias", alias_hits)
            alias_scope, target = alias_hits[0]
            resolved = self._resolve_target(alias_scope, target, requested)
            if resolved is None:
                raise ModelNotFoundError(
                    f"alias {model!r} points at {target!r}, which provider "
                    f"'{self._describe(alias_scope, target)}' does not serve",
                    name=requested,
                )
            return resolved
        # 2. exact name
        exact_hits = [(s, m) for s, m in self._exact.get(key, ()) if in_scope(s)]
        if exact_hits:
            if len({s for s, _ in exact_hits}) > 1:
                raise self._ambiguous(requested, "name", [(s, m.name) for s, m in exact_hits])
            s, entry = exact_hits[0]
            return self._make(s, entry, entry.name, requested, "name")
        # 3. patterns: the most literal characters wins
        best: list[_Pattern] = []
        for pattern in self._patterns:
            if best and pattern.literal < best[0].literal:
                break
            if scope is not None and (pattern.provider, pattern.preset) != scope:
                continue
            if pattern.matches(model):
                best.append(pattern)
        if best:
            scopes = {(p.provider, p.preset) for p in best}
            if len(scopes) > 1:
                raise self._ambiguous(requested, "pattern", [((p.provider, p.preset), model) for p in best])
            top = best[0]
            return self._make((top.provider, top.preset), None, model, requested, "pattern")
        # 4. a provider or preset named by prefix that lists no patterns serves any name
        if scope is not None and scope in self._open_scopes:
            return self._make(scope, None, model, requested, "open")
        raise self._not_found(requested, model, scope)

    def _resolve_target(self, scope: _Scope, target: str, requested: str) -> ResolvedModel | None:
        key = target.lower()
        for s, entry in self._exact.get(key, ()):
            if s == scope:
                return self._make(s, entry, entry.name, requested, "alias")
        for pattern in self._patterns:
            if (pattern.provider, pattern.preset) == scope and pattern.matches(target):
                return self._make(scope, None, target, requested, "alias")
        if scope in self._open_scopes:
            return self._make(scope, None, target, requested, "alias")
        return None

    def _not_found(self, requested: str, model: str, scope: _Scope | None) -> ModelNotFoundError:
        import difflib

        names: list[str] = []
        for key, hits in list(self._exact.items()) + list(self._aliases.items()):
            if scope is None or any(s == scope for s, _ in hits):
                names.append(key)
        near = tuple(difflib.get_close_matches(model.lower(), names, n=5, cutoff=0.6))
        where = f" from {self._describe(scope, '').rstrip(':')}" if scope is not None else ""
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        return ModelNotFoundError(
            f"no model named {model!r}{where} in the catalog{hint}", name=requested, candidates=near
        )

    def describe(self, name: str) -> list[tuple[str, Any, str | None]]:
        """A resolved model's effective values with the layer that set each: (path, value, layer).

        Paths are relative to the model (`pricing.inputPerMillion`); mappings are flattened, lists are shown whole.
        A model matched by a pattern (not listed) shows only its name.
        """
        resolved = self.resolve(name)
        prefix = f"presets.{resolved.preset}." if resolved.preset is not None else ""
        base = f"{prefix}models[{resolved.name}]"
        out: list[tuple[str, Any, str | None]] = []

        def walk(value: Any, path: str) -> None:
            if isinstance(value, Mapping) and value:
                for key, item in value.items():
                    step = f"{path}.{key}" if "." not in str(key) else f"{path}[{key}]"
                    walk(item, step)
                return
            rel = path[len(base) + 1 :]
            out.append((rel, value, self.source_of(resolved.provider, path)))

        listed = self.value_of(resolved.provider, base)
        if listed is None:
            return [("name", resolved.name, None)]
        walk(resolved.entry.data, base)
        return out

    def find_stale(self, today: _dt.date, *, max_age_days: int = 180) -> list[tuple[str, str, _dt.date]]:
        """Every price older than `max_age_days` on `today`: (provider:model, value path, asOf)."""
        out: list[tuple[str, str, _dt.date]] = []
        for provider, preset, model in self.models():
            prefix = f"presets.{preset.name}." if preset is not None else ""
            pricing = model.data.get("pricing") or {}
            label = f"{preset.name if preset else provider.name}:{model.name}"
            as_of = pricing.get("asOf")
            if as_of and (today - _dt.date.fromisoformat(as_of)).days > max_age_days:
                out.append((label, f"{prefix}models[{model.name}].pricing.asOf", _dt.date.fromisoformat(as_of)))
            for i, item in enumerate(pricing.get("items") or ()):
                item_as_of = item.get("asOf")
                if item_as_of and (today - _dt.date.fromisoformat(item_as_of)).days > max_age_days:
                    out.append(
                        (
                            label,
                            f"{prefix}models[{model.name}].pricing.items[{i}].asOf",
                            _dt.date.fromisoformat(item_as_of),
                        )
                    )
        return out


def _stamp(name: str) -> tuple[str, float]:
    from pathlib import Path

    path = Path(name)
    try:
        if path.is_dir():
            newest = max((f.stat().st_mtime for f in path.rglob("*.y*ml")), default=path.stat().st_mtime)
            return str(path), newest
        return str(path), path.stat().st_mtime
    except OSError:
        return str(path), -1.0


_publish("onellm", Catalog, ResolvedModel)
_publish("onellm.catalog", CatalogLayer, ValueOrigin)
