"""onellm-web: `fetch_webpage_markdown`, web pages as Markdown under the host's network grant.

```python
from onellm.capabilities import Capabilities
from onellm_web import fetch_webpage_markdown

page = await fetch_webpage_markdown("https://example.org/", capabilities=Capabilities.any_public_hosts())
```

Installing the package makes the tool available to definitions (through the `onellm.tools` entry point); `register`
adds it to a runtime with host options. See `docs/web.md`.
"""

from onellm_web._errors import BinaryContentError, WebPageError
from onellm_web._fetch import fetch_webpage_markdown, fetch_webpage_markdown_sync
from onellm_web._options import WebOptions
from onellm_web._page import WebPage, html_to_markdown
from onellm_web._tool import register, web_tool
from onellm_web._version import __version__

__all__ = [
    "BinaryContentError",
    "WebOptions",
    "WebPage",
    "WebPageError",
    "__version__",
    "fetch_webpage_markdown",
    "fetch_webpage_markdown_sync",
    "html_to_markdown",
    "register",
    "web_tool",
]
