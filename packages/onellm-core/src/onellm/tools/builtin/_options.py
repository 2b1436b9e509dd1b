"""Host settings for the built-in tools."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

    from onellm.capabilities import ShellOptions
    from onellm.errors import Secret

__all__ = ["BuiltinOptions", "SearchPricing"]


@dataclass(frozen=True, slots=True)
class SearchPricing:
    """What one `search_web` query costs, as a cost line: `unit_price` per `per` queries."""

    unit_price: Decimal = Decimal("5")
    """Price of `per` queries, in USD."""
    per: int = 1000
    """How many queries `unit_price` buys."""
    source: str = "https://brave.com/search/api/"
    """Where the price was read."""
    as_of: date = date(2026, 1, 1)
    """When the price was read."""
    label: str = "Brave Search web queries"


@dataclass(frozen=True, slots=True)
class BuiltinOptions:
    """Limits and settings of the built-in tools. Every limit is a size the model cannot raise."""

    state_directory: Path | None = None
    """Where `todo` and `memory` keep their files; None is `.onellm` under the call's working directory. A directory
    moved elsewhere must be protected from the file tools by the host (`Capabilities.with_protected_paths`)."""
    read_limit_chars: int = 100_000
    """Characters `read_file` returns in one call; longer files are cut at a line boundary with a note."""
    max_file_bytes: int = 10 * 1024 * 1024
    """Largest file `read_file`, `replace_string` and `apply_patch` load, and `write_file` writes."""
    list_limit_entries: int = 1000
    """Entries `list_files` prints before it stops."""
    search_max_results: int = 200
    """Most matching lines `search_files_regex` returns, whatever the call asks for."""
    search_max_file_bytes: int = 2 * 1024 * 1024
    """Files larger than this are skipped by `search_files_regex` (and counted as skipped)."""
    search_max_total_bytes: int = 64 * 1024 * 1024
    """Bytes `search_files_regex` reads in one call before it stops."""
    search_max_regex_steps: int = 20_000_000
    """Automaton steps `search_files_regex` may spend building its DFA in one call (a few seconds); a pattern that
    needs more on the files searched stops the search with a note, keeping the matches found so far."""
    max_patterns: int = 64
    """Most globs in `inclusionPatterns` or `exclusionPatterns`."""
    max_patch_chars: int = 1024 * 1024
    """Longest patch `apply_patch` takes."""
    shell: ShellOptions | None = None
    """Environment names, output limit and timeouts of `execute_terminal_command`; None uses the defaults (10 KB of
    head and tail per stream, 30 s, at most 600 s)."""
    http_response_limit_chars: int = 100_000
    """Characters of a response body `http_request` and `read_file` of a URL return."""
    http_request_body_limit_bytes: int = 1024 * 1024
    """Largest request body `http_request` sends."""
    http_timeout_seconds: float = 30.0
    """Timeout of one `http_request` (and `search_web`) exchange."""
    brave_api_key: Secret | None = None
    """The Brave Search key; None reads `BRAVE_API_KEY` from the environment at call time."""
    brave_endpoint: str = "https://api.search.brave.com/res/v1/web/search"
    """The Brave web search endpoint."""
    search_pricing: SearchPricing = field(default_factory=SearchPricing)
    """The price of one `search_web` query, charged as a cost line."""
    search_transport: httpx.AsyncBaseTransport | None = None
    """A transport for `search_web`'s requests to Brave (tests hand in `httpx.MockTransport`); the grant's host check
    still applies. None sends through `EgressClient`, which also checks each address as the connection opens."""
    environment: Mapping[str, str] | None = None
    """The environment read for `BRAVE_API_KEY`; None is `os.environ`."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Anything else an adapter wants to pass to its own tools."""
