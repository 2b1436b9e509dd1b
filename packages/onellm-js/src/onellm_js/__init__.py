"""onellm-js: JavaScript tools, hooks, decider logic and `run_javascript` for onellm, sandboxed on QuickJS-NG.

Every run builds a fresh engine in a worker process: nothing of the host is reachable but `console`, `input` and
`ctx`, data goes in and out as JSON, `ctx`'s host functions are checked twice (declared by the script, granted by the
host) and every limit ends the run with a `JsSandboxError` the script cannot catch. See `docs/javascript.md`.
"""

from onellm_js._decider import JsDeciderLogic
from onellm_js._errors import JsFailure, JsSandboxError
from onellm_js._hooks import HOOK_POINTS, INTERCEPTOR_POINTS, OBSERVER_POINTS, HookDecision, JsHook, JsHookSource
from onellm_js._host import JsLogLine
from onellm_js._limiter import JsLease, JsRunLimiter, JsSlot
from onellm_js._options import JsSandboxOptions
from onellm_js._pool import JsWorkerPool
from onellm_js._sandbox import JsRunResult, JsSandbox
from onellm_js._source import JsSource
from onellm_js._tools import (
    TOOL_KEYS,
    JsTool,
    load_tool,
    load_tool_directory,
    load_tool_directory_sync,
    load_tool_sync,
    run_javascript,
)
from onellm_js._typescript import erase_types
from onellm_js._version import __version__

__all__ = [
    "HOOK_POINTS",
    "INTERCEPTOR_POINTS",
    "OBSERVER_POINTS",
    "TOOL_KEYS",
    "HookDecision",
    "JsDeciderLogic",
    "JsFailure",
    "JsHook",
    "JsHookSource",
    "JsLease",
    "JsLogLine",
    "JsRunLimiter",
    "JsRunResult",
    "JsSandbox",
    "JsSandboxError",
    "JsSandboxOptions",
    "JsSlot",
    "JsSource",
    "JsTool",
    "JsWorkerPool",
    "__version__",
    "erase_types",
    "load_tool",
    "load_tool_directory",
    "load_tool_directory_sync",
    "load_tool_sync",
    "run_javascript",
]
