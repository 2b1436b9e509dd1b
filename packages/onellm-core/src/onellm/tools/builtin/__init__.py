"""The built-in tools: files, search, shell, network, the agent's plan and memory, questions to a person, and
running a decider.

`builtin_tools()` returns them as `Tool` objects bound to one set of `BuiltinOptions`. Each tool asks the call's
`Capabilities` before it reads a file, starts a process or opens a connection, and declares the grants it needs in
`Tool.required_grants` so a definition that references it without them fails to load. `docs/built-in-tools.md`
describes every tool, its properties and its limits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from onellm._public import publish as _publish
from onellm.tools.builtin._options import BuiltinOptions, SearchPricing

if TYPE_CHECKING:
    from onellm.tools import Tool

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "AskUserRequest",
    "BuiltinOptions",
    "SearchPricing",
    "ask_user_request",
    "builtin_tools",
]

BUILTIN_TOOL_NAMES: tuple[str, ...] = (
    "read_file",
    "list_files",
    "search_files_regex",
    "write_file",
    "replace_string",
    "apply_patch",
    "execute_terminal_command",
    "http_request",
    "search_web",
    "todo",
    "memory",
    "ask_user",
    "run_decider",
)
"""The names of the built-in tools, in the order `builtin_tools()` returns them."""


def builtin_tools(options: BuiltinOptions | None = None) -> list[Tool[..., object]]:
    """Every built-in tool, bound to `options` (the defaults when None).

    Args:
        options: Limits and settings shared by the tools: state directory, size limits, shell options, the Brave key.
    """
    from onellm.tools.builtin.agent import agent_tools
    from onellm.tools.builtin.decider import decider_tools
    from onellm.tools.builtin.files import file_tools
    from onellm.tools.builtin.shell import shell_tools
    from onellm.tools.builtin.web import web_tools

    opts = options if options is not None else BuiltinOptions()
    tools = [*file_tools(opts), *shell_tools(opts), *web_tools(opts), *agent_tools(opts), *decider_tools(opts)]
    by_name = {t.name: t for t in tools}
    return [by_name[name] for name in BUILTIN_TOOL_NAMES]


def __getattr__(name: str) -> object:
    if name in ("AskUserRequest", "ask_user_request"):
        from onellm.tools.builtin import agent

        return getattr(agent, name)
    raise AttributeError(f"module 'onellm.tools.builtin' has no attribute {name!r}")


_publish("onellm.tools.builtin", BuiltinOptions, SearchPricing)
