"""The errors of onellm-web: a page that cannot be fetched or read."""

from __future__ import annotations

from onellm.errors import OnellmError

__all__ = ["BinaryContentError", "WebPageError"]


class WebPageError(OnellmError):
    """A page could not be fetched or read: a failed connection, an error status, a timeout, a body that does not
    decode. A request the network grant refuses raises `CapabilityDeniedError` instead."""

    def __init__(self, message: str, *, url: str, status: int | None = None, content_type: str | None = None) -> None:
        super().__init__(message)
        self.url = url
        """The URL asked for (or reached, after redirects)."""
        self.status = status
        """The HTTP status, when an answer came."""
        self.content_type = content_type
        """The answer's `Content-Type`, when it had one."""


class BinaryContentError(WebPageError):
    """The URL answered with a binary type (an image, a PDF, an archive, ...), which is neither a page nor text."""
