"""The provider registry: which provider object serves a catalog provider, preset or protocol.

A ready provider is plugged in with `set(name, provider)`. Otherwise one is created on first use from the catalog:
its protocol picks the factory, its base URL and key variable configure it. The key is read from the environment
then, and a missing key is an `AuthError` naming the variable, raised before anything is sent. The providers the
registry creates share its `ClientPool`: one HTTP client per event loop for all of them (or the client given to the
registry), closed by `aclose()`.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from onellm.errors import AuthError, CapabilityMissingError, Secret

if TYPE_CHECKING:
    import httpx

    from onellm.catalog import Catalog, ResolvedModel
    from onellm.providers import ClientPool

__all__ = ["ProviderFactory", "ProviderRegistry"]

ProviderFactory = Callable[["ResolvedModel", "Secret | None"], Any]
"""Builds a provider for a resolved model from its key (None when the catalog names no key variable)."""


def _server_properties(model: ResolvedModel) -> dict[str, Any]:
    """The provider's and the preset's properties: a server's quirks, the same for every model it serves (each
    request's profile adds the model's own)."""
    props = model.provider_entry.properties
    if model.preset_entry is not None:
        props.update(model.preset_entry.properties)
    return props


def _openai(model: ResolvedModel, key: Secret | None, pool: ClientPool, environ: Mapping[str, str]) -> Any:
    from onellm.providers.openai import OpenAIProvider

    return OpenAIProvider(
        api_key=key,
        base_url=model.base_url,
        properties=_server_properties(model),
        name=model.provider,
        http_client=pool,
        environ=environ,
    )


def _compatible(model: ResolvedModel, key: Secret | None, pool: ClientPool, environ: Mapping[str, str]) -> Any:
    from onellm.providers.openai import OpenAICompatibleProvider

    if not model.base_url:
        raise CapabilityMissingError(
            f"{model.qualified_name}: the catalog gives no base URL for this OpenAI-compatible server; add `baseUrl` "
            "to its preset or provider, or register a provider with runtime.providers.set(...)"
        )
    return OpenAICompatibleProvider(
        base_url=model.base_url,
        api_key=key,
        name=model.preset or model.provider,
        properties=_server_properties(model),
        http_client=pool,
        environ=environ,
    )


def _by_import(module: str, class_name: str, what: str) -> _BuiltinFactory:
    def make(model: ResolvedModel, key: Secret | None, pool: ClientPool, environ: Mapping[str, str]) -> Any:
        try:
            cls = getattr(importlib.import_module(module), class_name)
        except (ImportError, AttributeError) as error:
            raise CapabilityMissingError(
                f"{model.qualified_name}: the {what} provider ({module}.{class_name}) is not available in this "
                f"installation; register one with runtime.providers.set({model.provider!r}, provider)"
            ) from error
        # Per-model facts (output limits, schema form, thinking style) travel with each request as its profile.
        return cls(api_key=key, base_url=model.base_url, http_client=pool, environ=environ)

    return make


# The built-in factories also take the registry's client pool and environment.
_BuiltinFactory = Callable[["ResolvedModel", "Secret | None", "ClientPool", "Mapping[str, str]"], Any]

_BUILTIN: dict[str, _BuiltinFactory] = {
    "openai": _openai,
    "openai-compatible": _compatible,
    "anthropic": _by_import("onellm.providers.anthropic", "AnthropicProvider", "Anthropic"),
    "gemini": _by_import("onellm.providers.gemini", "GeminiProvider", "Gemini"),
    "typesafe": _by_import("onellm.providers.typesafe", "JevProvider", "TypeSafe Jev"),
}


class ProviderRegistry:
    """Providers by catalog provider name, preset name or protocol.

    ```python
    from onellm import Runtime
    from onellm.testing import ScriptedProvider

    runtime = Runtime()
    runtime.providers.set("openai", ScriptedProvider("openai"))
    ```
    """

    def __init__(
        self, environ: Mapping[str, str] | None = None, *, http_client: httpx.AsyncClient | None = None
    ) -> None:
        self._providers: dict[str, Any] = {}
        self._http_client = http_client
        self._pool: ClientPool | None = None
        self._factories: dict[str, ProviderFactory] = {}  # set by the host; they come before the built-in ones
        self._environ = environ
        self._lock = threading.Lock()
        self._created: list[Any] = []

    def __repr__(self) -> str:
        return f"ProviderRegistry({sorted(self._providers)})"

    def set(self, name: str, provider: Any) -> None:
        """Serve `name` (a catalog provider, a preset such as `ollama`, or a protocol) with `provider`."""
        if not name:
            raise ValueError("a provider name is required")
        with self._lock:
            self._providers[name] = provider

    def get(self, name: str) -> Any | None:
        return self._providers.get(name)

    def remove(self, name: str) -> Any | None:
        with self._lock:
            return self._providers.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._providers

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._providers))

    def set_factory(self, protocol: str, factory: ProviderFactory) -> None:
        """Create providers for catalog entries of `protocol` with `factory` (replacing the built-in one, if any)."""
        self._factories[protocol] = factory

    def _environment(self) -> Mapping[str, str]:
        return self._environ if self._environ is not None else os.environ

    def registered_for(self, model: ResolvedModel) -> Any | None:
        """The provider registered for the model's preset, provider or protocol, in that order; None if none is."""
        providers = self._providers
        if model.preset is not None:
            found = providers.get(model.preset)
            if found is not None:
                return found
        found = providers.get(model.provider)
        if found is not None:
            return found
        protocol = model.provider_entry.protocol
        return providers.get(protocol) if protocol else None

    @property
    def pool(self) -> ClientPool:
        """The HTTP clients the providers this registry creates share: one per event loop, or the client given."""
        with self._lock:
            if self._pool is None:
                from onellm.providers import ClientPool

                self._pool = ClientPool(self._http_client)
            return self._pool

    def for_model(self, model: ResolvedModel, catalog: Catalog | None = None) -> Any:
        """The provider that serves `model`, created on first use from the catalog. Per-model facts do not come from
        here: each request carries its model's profile (`ResolvedModel.profile`), so `catalog` is not needed.

        Raises:
            AuthError: the catalog names a key variable that is not set (the message names it).
            CapabilityMissingError: no provider is registered and none can be created for the protocol.
        """
        found = self.registered_for(model)
        if found is not None:
            return found
        name = model.preset or model.provider
        protocol = model.provider_entry.protocol or model.provider
        factory = self._factories.get(protocol)
        builtin = _BUILTIN.get(protocol)
        if factory is None and builtin is None:
            raise CapabilityMissingError(
                f"{model.qualified_name}: no provider for protocol {protocol!r}; register one with "
                f"runtime.providers.set({name!r}, provider)"
            )
        variable = model.api_key_env_var
        environ = self._environment()
        key: Secret | None = None
        if variable:
            from onellm.providers import read_key

            key = read_key(None, (variable,), environ)
            if key is None and not model.local:
                raise AuthError(f"{name}: No API key. Set the environment variable {variable}.", provider=name)
        pool = self.pool if factory is None else None
        with self._lock:
            existing = self._providers.get(name)
            if existing is not None:
                return existing
            if factory is not None:
                provider = factory(model, key)
            else:
                assert builtin is not None
                assert pool is not None
                provider = builtin(model, key, pool, environ)
            self._providers[name] = provider
            self._created.append(provider)
            return provider

    async def aclose(self) -> None:
        """Close the providers this registry created and their shared HTTP clients; providers given with `set` and a
        client given to the registry are the caller's to close. Providers are created again on next use."""
        with self._lock:
            created, self._created = self._created, []
            pool, self._pool = self._pool, None
            for provider in created:
                for name, value in list(self._providers.items()):
                    if value is provider:
                        del self._providers[name]
        for provider in created:
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()
        if pool is not None:
            await pool.aclose()
