"""For tests only: answer model calls from a script file instead of the real providers.

When the environment variable `ONELLM_CLI_SCRIPT` names a JSON file, every provider named in it is replaced by a
scripted one; nothing is sent anywhere and no key is needed for those providers. Models still resolve through the
catalog and are priced as real calls are, so cost lines and exit codes are those of a real run. The file:

```json
{"providers": {"anthropic": [
    {"text": "Hello.", "usage": [12, 3]},
    {"calls": [{"id": "c1", "tool": "write_file", "arguments": {"path": "a.txt", "content": "hi"}}],
     "usage": {"input": 30, "output": 8}},
    {"error": {"type": "RateLimitError", "message": "slow down", "status": 429}},
    {"text": "partial ", "pause": true}
 ]},
 "decisions": {"typesafe": {"answers": {"topic": "orders", "angry": 0.93}, "refuse": ["legal"]}}}
```

`providers` are chat providers (`onellm.testing.ScriptedProvider`), for agents, flows, chats and deciders on a chat
model (the chat engine asks one question a call, and a step's `text` is the reply, such as
`{"probabilities": {"yes": 0.8, "no": 0.2}}`). `decisions` are decisions engines
(`onellm.testing.ScriptedDecisionProvider`), for deciders on `jev-latest` (provider `typesafe`) or `openai-decisions`
(provider `openai`). An engine answers each question from `answers`, by the question's key (`line-ok[1]` for one
element of a `forEach`) or its id: a number (a noul's probability of yes, or a score), a text (a choice), the plain
form of an answer (a mapping), or null for the engine's placeholder (also what an unlisted question gets). `refuse`
lists questions it declines, `omit` questions it leaves unanswered, and `error` (as for a step) fails every request.
A provider name is either scripted chat or a scripted engine, not both.

A step is `text` (a string, or a list of streamed pieces), `calls`, `usage` (`[input, output]` or a mapping with
`input`, `output`, `cacheRead`, `cacheWrite`), `finishReason`, `error` (an `onellm` error type's name, a message and
optional `status`) and `pause` (after its text, wait until cancelled, to test Ctrl-C). Steps left unused when the
command ends are reported on standard error (`scripted: 1 step(s) left unused for anthropic`), and so are an engine's
answers for questions never asked (`scripted: answer for 'topic' never asked of typesafe`), so a test sees a run
that made fewer calls than it scripted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from onellm_cli._errors import EXIT_SETUP, CliError

if TYPE_CHECKING:
    from onellm import Runtime
    from onellm.providers import DecisionQuestion
    from onellm.testing import ScriptedDecisionProvider, ScriptedProvider, ScriptStep

    Scripted = ScriptedProvider | ScriptedDecisionProvider

__all__ = ["ENV_VAR", "install", "unused_steps"]

ENV_VAR = "ONELLM_CLI_SCRIPT"


def install(runtime: Runtime, environ: Mapping[str, str] | None = None) -> dict[str, Scripted]:
    """Register the scripted providers and engines of `ONELLM_CLI_SCRIPT` on `runtime` (nothing when it is not set).

    Raises:
        CliError: the file cannot be read, or is not a script (exit code 3, naming the key).
    """
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
    if not isinstance(data, dict):
        raise CliError(f"{ENV_VAR}={name}: expected an object with 'providers' or 'decisions'", EXIT_SETUP)
    providers = data.get("providers", {})
    engines = data.get("decisions", {})
    if not isinstance(providers, dict) or not isinstance(engines, dict) or not (providers or engines):
        raise CliError(f"{ENV_VAR}={name}: expected an object with 'providers' or 'decisions'", EXIT_SETUP)
    made: dict[str, Scripted] = {}
    for provider_name, steps in providers.items():
        if not isinstance(steps, list):
            raise CliError(f"{ENV_VAR}: providers.{provider_name} must be a list of steps", EXIT_SETUP)
        provider = ScriptedProvider(provider_name)
        provider.enqueue(*(_step(step, f"providers.{provider_name}[{i}]") for i, step in enumerate(steps)))
        runtime.providers.set(provider_name, provider)
        made[provider_name] = provider
    for engine_name, script in engines.items():
        if engine_name in made:
            raise CliError(
                f"{ENV_VAR}: {engine_name!r} is under both 'providers' and 'decisions'; script it as one", EXIT_SETUP
            )
        engine = _engine(engine_name, script, f"decisions.{engine_name}")
        runtime.providers.set(engine_name, engine)
        made[engine_name] = engine
    return made


def unused_steps(providers: Mapping[str, Scripted]) -> list[str]:
    """One line per scripted provider that still has queued steps, and per engine answer never asked for."""
    from onellm.testing import ScriptedProvider

    lines: list[str] = []
    for name, provider in providers.items():
        if isinstance(provider, ScriptedProvider):
            if provider.pending:
                lines.append(f"scripted: {provider.pending} step(s) left unused for {name}")
            continue
        answer = provider.answer
        given = answer.keys if isinstance(answer, _Answers) else ()
        asked = {key for request in provider.requests for q in request.questions for key in (q.key, q.question_id)}
        lines.extend(f"scripted: answer for {key!r} never asked of {name}" for key in given if key not in asked)
    return lines


class _Answers:
    """An engine's answers from the script: by question key, else by question id; declined, left out, or failing."""

    def __init__(
        self, answers: dict[str, Any], refuse: list[str], omit: list[str], error: BaseException | None
    ) -> None:
        self.answers = answers
        self.refuse = set(refuse)
        self.omit = set(omit)
        self.error = error

    @property
    def keys(self) -> list[str]:
        return [*self.answers, *self.refuse, *self.omit]

    def __call__(self, question: DecisionQuestion) -> Any:
        from onellm.testing import OMIT, REFUSE

        if self.error is not None:
            raise self.error
        for key in (question.key, question.question_id):
            if key in self.refuse:
                return REFUSE
            if key in self.omit:
                return OMIT
            if key in self.answers:
                return self.answers[key]
        return None


def _engine(name: str, data: Any, where: str) -> ScriptedDecisionProvider:
    from onellm.testing import ScriptedDecisionProvider

    if not isinstance(data, dict):
        raise CliError(f"{ENV_VAR}: {where} must be an object with 'answers', 'refuse', 'omit' or 'error'", EXIT_SETUP)
    unknown = sorted(set(data) - {"answers", "refuse", "omit", "error"})
    if unknown:
        raise CliError(f"{ENV_VAR}: {where}: unknown key(s) {', '.join(unknown)}", EXIT_SETUP)
    answers = data.get("answers", {})
    if not isinstance(answers, dict):
        raise CliError(f"{ENV_VAR}: {where}.answers must map question keys to answers", EXIT_SETUP)
    lists: dict[str, list[str]] = {}
    for key in ("refuse", "omit"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CliError(f"{ENV_VAR}: {where}.{key} must be a list of question keys", EXIT_SETUP)
        lists[key] = value
    error = _error(data["error"], where) if isinstance(data.get("error"), dict) else None
    return ScriptedDecisionProvider(name, answer=_Answers(answers, lists["refuse"], lists["omit"], error))


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
