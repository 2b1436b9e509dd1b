"""The `fetch_webpage_markdown` tool, and registering it with a runtime.

The tool needs the network grant (`Tool.required_grants`), so a definition that references it loads only under a
runtime that grants network access. Installing the package is enough for a definition to find it: the distribution
offers the tool in the `onellm.tools` entry-point group, which core's tool registry reads for a name it does not
have. `register(runtime)` adds it explicitly, with host options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from onellm.tools import Tool, ToolContext
from onellm_web._fetch import fetch_webpage_markdown as _fetch
from onellm_web._options import WebOptions

if TYPE_CHECKING:
    from onellm import Runtime
    from onellm.tools import ToolRegistry

__all__ = ["register", "web_tool"]

_Start = Annotated[int, msgspec.Meta(ge=0)]
_MaxChars = Annotated[int, msgspec.Meta(ge=100)]

_DESCRIPTION = (
    "Fetches a web page and returns its main content as Markdown: the title first, then the text with links kept "
    "absolute. Navigation, headers, footers, forms and scripts are left out. Text pages (plain text, JSON, XML, CSV, "
    "...) come back as text; images, PDFs and other binary files are refused. A long page is cut with a note saying "
    "where; call again with `start` to read on."
)


def web_tool(options: WebOptions | None = None) -> Tool[..., object]:
    """The `fetch_webpage_markdown` tool, bound to `options` (`WebOptions()` when None). Needs the network grant."""
    opts = options if options is not None else WebOptions()

    async def fetch_webpage_markdown(
        url: str, ctx: ToolContext, start: _Start = 0, max_chars: _MaxChars | None = None
    ) -> str:
        """Fetches a web page and returns its main content as Markdown.

        Args:
            url: The http or https address of the page.
            start: Character of the content to start from, to read on after a cut.
            max_chars: Most characters to return; the host's limit applies when this is larger or absent.
        """
        page = await _fetch(url, capabilities=ctx.capabilities, options=opts)
        limit = opts.max_chars if max_chars is None else min(max_chars, opts.max_chars)
        return page.render(start=start, max_chars=limit)

    return Tool.create(
        fetch_webpage_markdown,
        description=_DESCRIPTION,
        required_grants=("network",),
        package="onellm-web",
    )


def register(target: Runtime | ToolRegistry, options: WebOptions | None = None) -> Tool[..., object]:
    """Add `fetch_webpage_markdown` to a runtime's tools (or a `ToolRegistry`), replacing one registered before.

    ```python
    import onellm_web
    from onellm import Runtime
    from onellm.capabilities import Capabilities
    from onellm_web import WebOptions

    rt = Runtime(capabilities=Capabilities.any_public_hosts())
    onellm_web.register(rt, WebOptions(max_chars=20_000))
    ```

    Returns:
        The tool registered.
    """
    from onellm.tools import ToolRegistry

    registry: Any = target if isinstance(target, ToolRegistry) else target.tools
    tool = web_tool(options)
    registry.add(tool, replace=True)
    return tool
