"""For tests only: answer model calls from a script file instead of the real providers.

When the environment variable `ONELLM_CLI_SCRIPT` names a JSON file, every provider named in it is replaced by an
`onellm.testing.ScriptedProvider` that answers from the listed steps, in order; nothing is sent anywhere and no key
is needed for those providers. Models still resolve through the catalog and are priced as real calls are, so cost
lines and exit codes are those of a real run. The file:

```json
{"providers": {"anthropic": [
    {"text": "Hello.", "usage": [12, 3]},
    {"calls": [{"id": "c1", "tool": "write_file", "arguments": {"path": "a.txt", "content": "hi"}}],
     "usage": {"input": 30, "output": 8}},
    {"error": {"type": "RateLimitError", "message": "slow down", "status": 429}},
    {"text": "partial ", "pause": true}
]}}
```

A step is `text` (a string, or a list of streamed pieces), `calls`, `usage` (`[input, output]` or a mapping with
`input`, `output`, `cacheRead`, `cacheWrite`), `finishReason`, `error` (an `onellm` error type's name, a message and
optional `status`) and `pause` (after its text, wait until cancelled, to test Ctrl-C). Steps left unused when the
command ends are reported on standard error (`scripted: 1 step left unused for anthropic`), so a test sees a run that
made fewer calls than it scripted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from onellm_cli._errors import EXIT_SETUP, CliError

if TYPE_CHECKING:
    from onellm import Runtime
    from onellm.testing import ScriptedProvider, ScriptStep

__all__ = ["ENV_VAR", "install", "unused_steps"]

ENV_VAR = "ONELLM_CLI_SCRIPT"


def install(runtime: Runtime, environ: Mapping[str, str] | None = None) -> dict[str, ScriptedProvider]:
    """Register the scripted providers of `ONELLM_CLI_SCRIPT` on `runtime` (nothing when it is not set)."""
    env = os.environ if environ is None else environ
    name = env.get(ENV_VAR)
    if not name:
        return {}
    import msgspec

    from onellm.testing import ScriptedProvider

    try:
        with open(name, "rb") as handle:
            data = msgspec.json.decode(handle.read())
    except (OSError, msgspec.DecodeError) as error:
        raise CliError(f"{ENV_VAR}={name}: {error}", EXIT_SETUP) from None
    providers = data.get("providers") if isinstance(data, dict) else None
    if not isinstance(providers, dict):
        raise CliError(f"{ENV_VAR}={name}: expected an object with 'providers'", EXIT_SETUP)
    made: dict[str, ScriptedProvider] = {}
    for provider_name, steps in providers.items():
        if not isinstance(steps, list):
            raise CliError(f"{ENV_VAR}: providers.{provider_name} must be a list of steps", EXIT_SETUP)
        provider = ScriptedProvider(provider_name)
        provider.enqueue(*(_step(step, f"providers.{provider_name}[{i}]") for i, step in enumerate(steps)))
        runtime.providers.set(provider_name, provider)
        made[provider_name] = provider
    return made


def unused_steps(providers: Mapping[str, ScriptedProvider]) -> list[str]:
    """One line per scripted provider that still has queued steps."""
    lines: list[str] = []
    for name, provider in providers.items():
        if provider.pending:
            lines.append(f"scripted: {provider.pending} step(s) left unused for {name}")
    return lines


def _step(data: Any, where: str) -> ScriptStep:
    from onellm.messages import Usage
    from onellm.testing import Pause, ScriptedToolCall, ScriptStep

    if not isinstance(data, dict):
        raise CliError(f"{ENV_VAR}: {where} must be an object", EXIT_SETUP)
    text = data.get("text")
    pieces: list[str | Pause] = []
    if isinstance(text, str):
        pieces.append(text)
    elif isinstance(text, list):
        pieces.extend(str(p) for p in text)
    if data.get("pause"):
        pieces.append(Pause())
    calls = tuple(
        ScriptedToolCall(str(c.get("id") or f"call{i}"), str(c["tool"]), c.get("arguments", {}))
        for i, c in enumerate(data.get("calls") or [])
    )
    usage = None
    raw = data.get("usage")
    if isinstance(raw, list) and len(raw) == 2:
        usage = Usage(input_tokens=int(raw[0]), output_tokens=int(raw[1]))
    elif isinstance(raw, dict):
        usage = Usage(
            input_tokens=int(raw.get("input", 0)),
            output_tokens=int(raw.get("output", 0)),
            cache_read_input_tokens=int(raw.get("cacheRead", 0)),
            cache_creation_input_tokens=int(raw.get("cacheWrite", 0)),
        )
    error = None
    if isinstance(data.get("error"), dict):
        error = _error(data["error"], where)
    return ScriptStep(
        pieces=tuple(pieces), tool_calls=calls, usage=usage, finish_reason=data.get("finishReason"), error=error
    )


def _error(data: dict[str, Any], where: str) -> BaseException:
    from onellm import errors

    kind = str(data.get("type") or "ProviderError")
    cls = getattr(errors, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, errors.ProviderError)):
        raise CliError(f"{ENV_VAR}: {where}.error.type {kind!r} is not a provider error of onellm.errors", EXIT_SETUP)
    message = str(data.get("message") or kind)
    status = data.get("status")
    return cls(message, provider=data.get("provider") or "scripted", status=int(status) if status else None)
