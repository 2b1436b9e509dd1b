"""The public face of `onellm`: every exported name resolves, and nothing public is left out of `__all__`."""

from __future__ import annotations

import subprocess
import sys

import pytest

import onellm


def test_all_is_sorted_within_its_groups_and_unique() -> None:
    assert len(onellm.__all__) == len(set(onellm.__all__))


@pytest.mark.parametrize("name", onellm.__all__)
def test_every_exported_name_resolves(name: str) -> None:
    assert getattr(onellm, name) is not None


def test_public_names_are_all_exported() -> None:
    public = {n for n in dir(onellm) if not n.startswith("_")}
    exported = set(onellm.__all__)
    # submodules become attributes once imported; they are reached by their dotted path, not exported
    import types

    public = {n for n in public if not isinstance(getattr(onellm, n), types.ModuleType)}
    assert public == exported - {"__version__"}


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = onellm.nope  # type: ignore[attr-defined]


def test_import_is_lazy() -> None:
    code = "import sys, onellm; heavy = [m for m in ('httpx', 'ruamel.yaml', 'opentelemetry', 'anyio') if m in sys.modules]; print(heavy)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
