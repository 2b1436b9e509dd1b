"""Capabilities: what the host lets tools touch.

`Capabilities` composes three peer grants, `FileGrant`, `ShellGrant` and `NetworkGrant`, each with its own checks, and
is what the built-in tools ask before they read a file, start a process or open a connection. `EgressClient` is the
HTTP client for tool traffic under a network grant (imported on first use, because it loads httpx).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from onellm._public import publish as _publish
from onellm.capabilities._caps import Capabilities
from onellm.capabilities._file_io import DirectoryHandle
from onellm.capabilities._files import FileGrant
from onellm.capabilities._network import NetworkEntry, NetworkGrant
from onellm.capabilities._process import CommandResult, run_process
from onellm.capabilities._shell import (
    CommandDecision,
    CommandRequest,
    PreparedCommand,
    ShellGrant,
    ShellMode,
    ShellOptions,
)

if TYPE_CHECKING:
    from onellm.capabilities._egress import EgressClient, Resolver, check_url

__all__ = [
    "Capabilities",
    "CommandDecision",
    "CommandRequest",
    "CommandResult",
    "DirectoryHandle",
    "EgressClient",
    "FileGrant",
    "NetworkEntry",
    "NetworkGrant",
    "PreparedCommand",
    "Resolver",
    "ShellGrant",
    "ShellMode",
    "ShellOptions",
    "check_url",
    "run_process",
]


def __getattr__(name: str) -> Any:
    if name in ("EgressClient", "Resolver", "check_url"):
        from onellm.capabilities import _egress

        return getattr(_egress, name)
    raise AttributeError(f"module 'onellm.capabilities' has no attribute {name!r}")


_publish("onellm", Capabilities)
_publish(
    "onellm.capabilities",
    CommandDecision,
    CommandRequest,
    CommandResult,
    DirectoryHandle,
    FileGrant,
    NetworkEntry,
    NetworkGrant,
    PreparedCommand,
    ShellGrant,
    ShellMode,
    ShellOptions,
)
