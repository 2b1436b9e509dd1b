"""The network tools: `http_request`, `search_web`, and the URL form of `read_file`.

Model-chosen URLs go through `EgressClient` (the grant's host check before sending, the address check when the
connection opens, redirects followed by hand with each hop checked). `search_web` calls the Brave Search API: the key
comes from `BRAVE_API_KEY` (or `BuiltinOptions.brave_api_key`) and is held in a `Secret` whose text is scrubbed from any
error; its host must be in the network grant like any other; each query is charged as one cost line.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from onellm.errors import CapabilityDeniedError, CapabilityMissingError, Secret
from onellm.tools import Tool, ToolContext
from onellm.tools.builtin._options import BuiltinOptions
from onellm.tools.builtin._text import describe, truncate_middle

if TYPE_CHECKING:
    import httpx

__all__ = ["fetch_text", "web_tools"]

_Count = Annotated[int, msgspec.Meta(ge=1, le=20)]
_MAX_QUERY_CHARS = 400
_MAX_QUERY_WORDS = 50
_SHOWN_HEADERS = ("content-type", "content-length", "location", "last-modified", "etag", "retry-after")
# RFC 9110: a field name is a token; a value is visible ASCII, spaces and tabs (httpx sends values as ASCII).
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml", "application/javascript")


class _WebError(RuntimeError):
    """A network tool call failed after the request was allowed (a transport failure, a bad answer)."""


def _is_text(content_type: str) -> bool:
    ct = content_type.split(";", 1)[0].strip().lower()
    return not ct or ct.startswith(_TEXT_TYPES) or ct.endswith(("+json", "+xml"))


async def _read_capped(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """Read at most `limit` bytes of the body; True when more was left unread (the connection is then dropped)."""
    data = bytearray()
    async for chunk in response.aiter_bytes():
        room = limit - len(data)
        if len(chunk) > room:
            data += chunk[:room]
            return bytes(data), True
        data += chunk
    return bytes(data), False


def _body_text(response: httpx.Response, data: bytes, more: bool, limit: int) -> str:
    content_type = response.headers.get("content-type", "")
    if not _is_text(content_type):
        size = f"more than {len(data)}" if more else str(len(data))
        return f"[binary body: {size} bytes of {content_type or 'unknown type'}]"
    text = data.decode(response.encoding or "utf-8", "replace")
    shown, _ = truncate_middle(text, limit)
    if more:
        shown += f"\n[the body was cut after {len(data)} bytes]"
    return shown


async def fetch_text(ctx: ToolContext, options: BuiltinOptions, url: str) -> str:
    """GET a URL under the network grant and return its text (for `read_file` of a URL)."""
    import httpx

    from onellm.capabilities import EgressClient

    client = EgressClient.shared(ctx.capabilities)
    try:
        async with client.stream("GET", url, timeout=options.http_timeout_seconds) as response:
            if response.status_code >= 400:
                raise _WebError(f"GET {url} answered {response.status_code} {response.reason_phrase}")
            content_type = response.headers.get("content-type", "")
            if not _is_text(content_type):
                raise _WebError(f"{url} is not text ({content_type or 'no content type'})")
            data, more = await _read_capped(response, options.max_file_bytes)
    except (httpx.HTTPError, OSError) as exc:
        raise _WebError(f"GET {url} failed: {type(exc).__name__}: {exc}") from None
    if more:
        raise _WebError(f"{url} is larger than {options.max_file_bytes} bytes")
    return data.decode(response.encoding or "utf-8", "replace")


def _brave_key(options: BuiltinOptions) -> Secret:
    if options.brave_api_key is not None:
        return options.brave_api_key
    env = os.environ if options.environment is None else options.environment
    value = env.get("BRAVE_API_KEY", "")
    if not value:
        raise CapabilityMissingError("search_web needs a Brave Search API key: set BRAVE_API_KEY")
    return Secret(value)


def web_tools(options: BuiltinOptions) -> list[Tool[..., object]]:
    """`http_request` and `search_web`, bound to `options`."""

    async def http_request(
        url: str,
        ctx: ToolContext,
        method: Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] = "GET",
        headers: dict[str, str] | None = None,
        body: str | None = None,
    ) -> str:
        """Sends an HTTP request to a host the network grant allows and returns the status, main headers and body.

        Redirects are followed (each hop checked against the grant). Long bodies keep their beginning and end.

        Args:
            url: The http or https URL.
            method: The HTTP method.
            headers: Request headers.
            body: The request body, as text.
        """
        from onellm.capabilities import EgressClient

        data = body.encode("utf-8") if body is not None else None
        if data is not None and len(data) > options.http_request_body_limit_bytes:
            raise ValueError(f"body is {len(data)} bytes, above the limit of {options.http_request_body_limit_bytes}")
        for name, value in (headers or {}).items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(
                    f"header name {name!r} is not valid: letters, digits and !#$%&'*+-.^_`|~ only, no spaces"
                )
            if not _HEADER_VALUE.fullmatch(value):
                raise ValueError(
                    f"header {name!r} has a value with line breaks, control characters or non-ASCII text; "
                    "HTTP header values are ASCII"
                )
        client = EgressClient.shared(ctx.capabilities)
        import httpx

        try:
            async with client.stream(
                method, url, headers=headers, content=data, timeout=options.http_timeout_seconds
            ) as response:
                received, more = await _read_capped(response, options.max_file_bytes)
        except httpx.TooManyRedirects as exc:
            raise _WebError(f"{method} {url}: {exc}") from None
        except (httpx.HTTPError, OSError) as exc:
            raise _WebError(f"{method} {url} failed: {type(exc).__name__}: {exc}") from None
        lines = [f"HTTP {response.status_code} {response.reason_phrase}"]
        if str(response.url) != url:
            lines.append(f"final URL: {response.url}")
        lines.extend(f"{name}: {response.headers[name]}" for name in _SHOWN_HEADERS if name in response.headers)
        if method != "HEAD" and received:
            lines.append("")
            lines.append(_body_text(response, received, more, options.http_response_limit_chars))
        return "\n".join(lines)

    async def search_web(query: str, ctx: ToolContext, count: _Count = 10) -> str:
        """Searches the web (Brave Search) and returns the top results: title, URL and a short description.

        Args:
            query: The search terms (at most 400 characters and 50 words).
            count: How many results to return, 1 to 20.
        """
        if not query.strip():
            raise ValueError("query is empty")
        if len(query) > _MAX_QUERY_CHARS or len(query.split()) > _MAX_QUERY_WORDS:
            raise ValueError(f"query is longer than {_MAX_QUERY_CHARS} characters or {_MAX_QUERY_WORDS} words")
        if not 1 <= count <= 20:
            raise ValueError("count must be between 1 and 20")
        key = _brave_key(options)
        try:
            data = await _brave_search(ctx, options, key, query, count)
        except CapabilityDeniedError:
            raise
        except _WebError as exc:
            raise _WebError(key.redact(str(exc))) from None
        except Exception as exc:
            raise _WebError(key.redact(f"Brave Search failed: {type(exc).__name__}: {exc}")) from None
        return _render_results(query, data, count)

    return [
        Tool.create(http_request, description=describe(http_request), required_grants=("network",)),
        Tool.create(search_web, description=describe(search_web), required_grants=("network",)),
    ]


async def _brave_search(
    ctx: ToolContext, options: BuiltinOptions, key: Secret, query: str, count: int
) -> dict[str, Any]:
    import httpx

    from onellm.capabilities import check_url
    from onellm.messages import CostLine

    headers = {"Accept": "application/json", "X-Subscription-Token": key.reveal()}
    params = {"q": query, "count": str(count)}
    caps = ctx.capabilities
    # The endpoint is checked against the grant before anything is sent, whichever client sends it.
    try:
        url = check_url(caps.network_grant, options.brave_endpoint)
    except CapabilityDeniedError as exc:
        if exc.rule not in ("network-off", "host-not-granted"):
            raise
        host = httpx.URL(options.brave_endpoint).host
        raise CapabilityDeniedError(
            f"search_web needs {host} in the network grant (Capabilities.network({host!r}) or "
            f"Capabilities.any_public_hosts()) (rule: {exc.rule})",
            target=exc.target,
            rule=exc.rule,
        ) from None
    if options.search_transport is not None:
        # A host-supplied transport (tests): the URL check above still applied.
        async with httpx.AsyncClient(transport=options.search_transport, trust_env=False) as plain:
            response = await plain.get(url, params=params, headers=headers, timeout=options.http_timeout_seconds)
            await response.aread()
    else:
        from onellm.capabilities import EgressClient

        client = EgressClient.shared(caps)
        response = await client.request(
            "GET", url, params=params, headers=headers, timeout=options.http_timeout_seconds
        )
    # The query was sent: it is charged whatever the answer says.
    pricing = options.search_pricing
    ctx.add_cost_line(
        CostLine.compute(
            "search_queries",
            1,
            pricing.per,
            pricing.unit_price,
            label=pricing.label,
            source=pricing.source,
            as_of=pricing.as_of,
        )
    )
    if response.status_code != 200:
        detail = response.text[:300]
        raise _WebError(f"Brave Search answered {response.status_code}: {detail}")
    try:
        data = response.json()
    except ValueError:
        raise _WebError("Brave Search answered with a body that is not JSON") from None
    if not isinstance(data, dict):
        raise _WebError("Brave Search answered with JSON that is not an object")
    return data


def _render_results(query: str, data: dict[str, Any], count: int) -> str:
    web = data.get("web")
    results = web.get("results") if isinstance(web, dict) else None
    if not isinstance(results, list) or not results:
        return f"No results for {query!r}."
    lines = [f"Results for {query!r}:"]
    shown = 0
    for item in results:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            continue
        shown += 1
        title = str(item.get("title") or item["url"])
        lines.append(f"{shown}. {title}\n   {item['url']}")
        description = item.get("description")
        if isinstance(description, str) and description:
            lines.append(f"   {_strip_tags(description)}")
        age = item.get("age")
        if isinstance(age, str) and age:
            lines.append(f"   ({age})")
        if shown >= count:
            break
    return "\n".join(lines)


def _strip_tags(text: str) -> str:
    """Brave marks the matched words with <strong> and escapes entities; the model reads plain text."""
    import html

    return html.unescape(text.replace("<strong>", "").replace("</strong>", ""))
