"""Host settings of `fetch_webpage_markdown`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from onellm_web._version import __version__

if TYPE_CHECKING:
    from onellm.capabilities import Capabilities, EgressClient

__all__ = ["WebOptions"]


@dataclass(frozen=True, slots=True)
class WebOptions:
    """Limits and settings of `fetch_webpage_markdown`. Every limit is one the model cannot raise."""

    max_bytes: int = 5 * 1024 * 1024
    """Bytes of a body read, after decompression. A longer body is cut there (the rest is never read) and the page
    says so."""
    timeout_seconds: float = 30.0
    """Time for the whole fetch: connecting, redirects and reading the body."""
    max_chars: int = 40_000
    """Characters the tool returns in one call; a longer page is cut with a note, and the model calls again with
    `start` to read on."""
    images: bool = True
    """Keep images as Markdown image links (absolute); off leaves them out."""
    user_agent: str = f"Mozilla/5.0 (compatible; onellm-web/{__version__})"
    """The `User-Agent` header sent."""
    accept_language: str | None = None
    """The `Accept-Language` header sent, if any (for example `en-US,en;q=0.8`)."""
    client_factory: Callable[[Capabilities], EgressClient] | None = None
    """How the egress client for a call's grants is made; None uses `EgressClient.shared(capabilities)`. A host (or a
    test) can pass one that builds an `EgressClient` with its own resolver or network backend: every request still goes
    through the grant's checks."""

    def __post_init__(self) -> None:
        if self.max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, not {self.max_bytes}")
        if not self.timeout_seconds > 0:
            raise ValueError(f"timeout_seconds must be positive, not {self.timeout_seconds}")
        if self.max_chars < 100:
            raise ValueError(f"max_chars must be at least 100, not {self.max_chars}")
