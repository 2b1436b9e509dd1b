"""`fetch_webpage_markdown`: a page fetched under the network grant and turned into a `WebPage`.

Every request goes through core's `EgressClient`: the host is checked against the grant before anything is sent, the
address when the connection opens (a name never reaches a loopback, private or link-local address unless an address
entry grants it), and redirects are followed by hand with every hop checked the same way. The body is read as it
arrives and decompressed here, a bounded piece at a time, so neither a long body nor a compressed one that expands
without end is held beyond `WebOptions.max_bytes`; the connection is dropped at the limit. One deadline covers the
whole fetch. The conversion runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import threading
import zlib
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import urlsplit, urlunsplit

import anyio

from onellm_web._errors import BinaryContentError, WebPageError
from onellm_web._options import WebOptions
from onellm_web._page import WebPage, kind_of, media_type, page_from_body

if TYPE_CHECKING:
    import httpx

    from onellm.capabilities import Capabilities, EgressClient

__all__ = ["fetch_webpage_markdown", "fetch_webpage_markdown_sync"]

T = TypeVar("T")

_ACCEPT: Final = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,*/*;q=0.5"
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(?!\d)")


class _Inflater:
    """Decompresses gzip or deflate a bounded piece at a time (`zlib` with `max_length`)."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._first = True
        self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
        self._pending = b""

    def feed(self, data: bytes) -> None:
        self._pending += data

    def take(self, limit: int) -> bytes:
        """Up to `limit` decompressed bytes of what was fed so far."""
        out = bytearray()
        while len(out) < limit and self._pending:
            data, self._pending = self._pending, b""
            try:
                out += self._zlib.decompress(data, limit - len(out))
            except zlib.error:
                if self.encoding == "deflate" and self._first:
                    # Some servers send raw deflate without the zlib wrapper.
                    self._first = False
                    self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._pending = data
                    continue
                raise
            self._first = False
            self._pending = self._zlib.unconsumed_tail
            if self._zlib.eof:
                rest = self._zlib.unused_data
                if not rest.strip(b"\x00"):
                    self._pending = b""
                    break
                # Another gzip member follows.
                self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS if self.encoding == "gzip" else zlib.MAX_WBITS)
                self._pending = rest
        return bytes(out)


async def _read_body(response: httpx.Response, limit: int, url: str) -> tuple[bytes, bool]:
    """At most `limit` bytes of the decoded body, and whether more was left unread."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    inflater: _Inflater | None = None
    if encoding in ("gzip", "x-gzip"):
        inflater = _Inflater("gzip")
    elif encoding == "deflate":
        inflater = _Inflater("deflate")
    elif encoding not in ("", "identity"):
        raise WebPageError(
            f"{url} was sent with Content-Encoding {encoding!r}, which is not supported (gzip and deflate are)",
            url=url,
            status=response.status_code,
            content_type=response.headers.get("content-type"),
        )
    data = bytearray()
    async for raw in response.aiter_raw():
        if inflater is None:
            room = limit - len(data)
            if len(raw) > room:
                data += raw[:room]
                return bytes(data), True
            data += raw
            continue
        inflater.feed(raw)
        try:
            # One byte beyond the limit tells a body of exactly `limit` bytes from a longer one.
            data += inflater.take(limit + 1 - len(data))
        except zlib.error as exc:
            raise WebPageError(
                f"{url}: the {encoding} body does not decompress ({exc})",
                url=url,
                status=response.status_code,
                content_type=response.headers.get("content-type"),
            ) from None
        if len(data) > limit:
            return bytes(data[:limit]), True
    return bytes(data), False


def _target(url: str) -> str:
    """The URL to request: a bare `host/path` (as models often write it) read as https, the fragment dropped."""
    text = url.strip()
    if not text:
        raise WebPageError("the URL is empty", url=url)
    if text.startswith("//"):
        text = "https:" + text
    elif "://" not in text and not text.startswith(("/", "?", "#")) and not _SCHEME.match(text):
        text = "https://" + text
    return text.split("#", 1)[0]


def _shown(url: str) -> str:
    """`url` with the password of its user information masked, for messages and the page's URL."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
    except ValueError:
        return url
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user.split(':', 1)[0]}:****@{host}"))


def _client(capabilities: Capabilities, options: WebOptions) -> EgressClient:
    from onellm.capabilities import EgressClient

    if options.client_factory is not None:
        return options.client_factory(capabilities)
    return EgressClient.shared(capabilities)


async def fetch_webpage_markdown(
    url: str,
    *,
    capabilities: Capabilities | None = None,
    options: WebOptions | None = None,
) -> WebPage:
    """Fetch a page under the network grant and return its main content as Markdown.

    ```python
    from onellm.capabilities import Capabilities
    from onellm_web import fetch_webpage_markdown

    page = await fetch_webpage_markdown("https://example.org/post", capabilities=Capabilities.any_public_hosts())
    print(page.title, page.markdown)
    ```

    Args:
        url: The http or https URL (a bare `host/path` is read as https).
        capabilities: The grants to fetch under; by default those of the current runtime (`onellm.current_runtime()`),
            whose network is off unless the host granted it.
        options: Limits and settings (`WebOptions()` when None).

    Raises:
        CapabilityDeniedError: The network grant refuses the URL, a redirect hop, or the address a name resolves to.
        BinaryContentError: The URL answered with a binary type (an image, a PDF, ...).
        WebPageError: The fetch failed: a connection error, an error status, the time limit, an undecodable body.
    """
    import httpx

    opts = options if options is not None else WebOptions()
    target = _target(url)
    if capabilities is None:
        from onellm import current_runtime

        capabilities = current_runtime().capabilities
    client = _client(capabilities, opts)
    headers = {"Accept": _ACCEPT, "Accept-Encoding": "gzip, deflate", "User-Agent": opts.user_agent}
    if opts.accept_language:
        headers["Accept-Language"] = opts.accept_language
    final = _shown(target)
    try:
        with anyio.fail_after(opts.timeout_seconds):
            async with client.stream("GET", target, headers=headers, timeout=opts.timeout_seconds) as response:
                final = _shown(str(response.url))
                status = response.status_code
                content_type = response.headers.get("content-type")
                if status >= 300:
                    message = (
                        f"GET {final} answered {status} {response.reason_phrase}".rstrip()
                        if status >= 400
                        else f"GET {final} answered {status} without a redirect to follow"
                    )
                    raise WebPageError(message, url=final, status=status, content_type=content_type)
                if kind_of(content_type) == "binary":
                    length = response.headers.get("content-length", "").strip()
                    size = f", {length} bytes" if length.isdigit() else ""
                    raise BinaryContentError(
                        f"{final} is {media_type(content_type)}{size}, not a web page or text; fetch_webpage_markdown "
                        "reads HTML and text only",
                        url=final,
                        status=status,
                        content_type=content_type,
                    )
                body, cut = await _read_body(response, opts.max_bytes, final)
    except TimeoutError:
        raise WebPageError(f"GET {final} did not finish within {opts.timeout_seconds:g} s", url=final) from None
    except httpx.TooManyRedirects as exc:
        raise WebPageError(f"GET {final}: {exc}", url=final) from None
    except httpx.TimeoutException:
        raise WebPageError(f"GET {final} did not finish within {opts.timeout_seconds:g} s", url=final) from None
    except (httpx.HTTPError, OSError) as exc:
        raise WebPageError(f"GET {final} failed: {type(exc).__name__}: {exc}", url=final) from None
    convert = functools.partial(
        page_from_body, body, url=final, content_type=content_type, images=opts.images, status=status, cut=cut
    )
    return await anyio.to_thread.run_sync(convert)


# ------------------------------------------------------------------------------------------------------ blocking form

_LOCAL = threading.local()


def _drive(awaitable: Coroutine[Any, Any, T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        awaitable.close()
        raise RuntimeError(
            "fetch_webpage_markdown_sync cannot be called when an event loop is already running; use "
            "`await onellm_web.fetch_webpage_markdown(...)`"
        )
    loop: asyncio.AbstractEventLoop | None = getattr(_LOCAL, "loop", None)
    if loop is None or loop.is_closed():
        # One loop per thread: the egress client's connections belong to the loop that opened them.
        loop = asyncio.new_event_loop()
        _LOCAL.loop = loop
    task = loop.create_task(awaitable)
    try:
        return loop.run_until_complete(task)
    except KeyboardInterrupt:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(task)
        raise


def fetch_webpage_markdown_sync(
    url: str,
    *,
    capabilities: Capabilities | None = None,
    options: WebOptions | None = None,
) -> WebPage:
    """Blocking form of `fetch_webpage_markdown`, for scripts and notebooks. Not for use inside async code."""
    return _drive(fetch_webpage_markdown(url, capabilities=capabilities, options=options))
