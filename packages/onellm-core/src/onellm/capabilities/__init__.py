"""Capabilities: what the host lets tools touch.

`Capabilities` holds the file roots, the shell policy and the network policy, and makes every check the built-in tools
rely on. `EgressClient` is the HTTP client for tool traffic under a network grant (imported on first use, because it
loads httpx).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from onellm.capabilities._caps import Capabilities, DirectoryHandle, PreparedCommand, ShellGrant
from onellm.capabilities._network import NetworkEntry, NetworkGrant
from onellm.capabilities._shell import CommandRequest, CommandResult, ShellMode, ShellOptions, run_process

if TYPE_CHECKING:
    from onellm.capabilities._egress import EgressClient, Resolver

__all__ = [
    "Capabilities",
    "CommandRequest",
    "CommandResult",
    "DirectoryHandle",
    "EgressClient",
    "NetworkEntry",
    "NetworkGrant",
    "PreparedCommand",
    "Resolver",
    "ShellGrant",
    "ShellMode",
    "ShellOptions",
    "run_process",
]


def __getattr__(name: str) -> Any:
    if name in ("EgressClient", "Resolver"):
        from onellm.capabilities import _egress

        return getattr(_egress, name)
    raise AttributeError(f"module 'onellm.capabilities' has no attribute {name!r}")
