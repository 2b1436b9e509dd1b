"""The typed error hierarchy and `Secret`.

Every failure onellm raises derives from `OnellmError`. Provider failures derive from `ProviderError`, which carries the
provider name and the HTTP status. API keys travel as `Secret` values, whose text never appears in a message, a repr, a
log line or a record.

```
OnellmError
├── ProviderError              a model call failed: provider, status, body, request id
│   ├── AuthError              the key is missing, wrong or not allowed
│   ├── BadRequestError        the request is wrong; never retried
│   ├── ContentFilterError
│   ├── ContextOverflowError
│   ├── MalformedResponseError the response is not what the API documents
│   ├── OverloadedError        with `retry_after`
│   ├── RateLimitError         with `retry_after` and `quota_exhausted`
│   ├── RefusedError
│   ├── SpendLimitReachedError the account's own limit at the provider
│   └── TransportError         the connection failed or timed out
├── ArgumentError              a value does not fit its type: `path` (`items[2].qty`) and `problem`
├── BadDefinitionError         a file is wrong: file, line, column, path
├── BudgetExceededError        a spend, token, turn or tool-call cap: `kind`, `limit`, `spent`
├── CapabilityDeniedError      a grant refused a path, command or host: `target`, `rule`
├── CapabilityMissingError     a package or a grant is missing, and how to get it
├── InstanceLockedError        another holder has the instance's lease
├── InvalidInstanceIdError     also a `ValueError`
├── ModelNotFoundError         `name`, `candidates`
├── RunCancelledError          `instance`, saved with what had arrived
├── StorageError               a store, sink or file failed: `path`, `operation`, `result`
├── TemplateError              `kind`, `name`, `line`, `column`, `offset`
└── UnsupportedParameterError  `parameter`, `model`
```
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from onellm._public import publish as _publish

__all__ = [
    "AgentStateError",
    "ArgumentError",
    "AuthError",
    "BadDefinitionError",
    "BadRequestError",
    "BudgetExceededError",
    "BudgetKind",
    "CapabilityDeniedError",
    "CapabilityMissingError",
    "ConfigurationError",
    "ContentFilterError",
    "ContextOverflowError",
    "DeciderInputError",
    "DeciderOutputError",
    "HookBlockedError",
    "InstanceLockedError",
    "InstanceNotFoundError",
    "InvalidInstanceIdError",
    "MalformedResponseError",
    "ModelNotFoundError",
    "OnellmError",
    "OverloadedError",
    "ProviderError",
    "RateLimitError",
    "RefusedError",
    "RunCancelledError",
    "Secret",
    "SpendLimitReachedError",
    "StorageError",
    "TemplateError",
    "TransportError",
    "UnsupportedParameterError",
    "UnwritableValueError",
]


class Secret:
    """A value that must never be shown: API keys, tokens, passwords.

    `str()` and `repr()` print a mask; `reveal()` is the one way to read the value, and is meant for the single place
    that puts it on the wire.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"Secret takes a str, not {type(value).__name__}")
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('****')"

    def __str__(self) -> str:
        return "****"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("onellm.Secret", self._value))

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self) -> Any:
        raise TypeError("a Secret cannot be pickled")

    def redact(self, text: str) -> str:
        """Return `text` with every occurrence of the secret replaced by the mask."""
        if self._value and self._value in text:
            return text.replace(self._value, "****")
        return text


class OnellmError(Exception):
    """The root of every error onellm raises."""


class ProviderError(OnellmError):
    """A model provider failed the call. Carries the provider name and the HTTP status when there was one."""

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status: int | None = None,
        body: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status
        self.body = body
        self.request_id = request_id

    def __str__(self) -> str:
        where = []
        if self.provider:
            where.append(self.provider)
        if self.status is not None:
            where.append(str(self.status))
        return f"{self.message} ({', '.join(where)})" if where else self.message


class _RetryAfterError(ProviderError):
    def __init__(self, message: str, *, retry_after: timedelta | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class AuthError(ProviderError):
    """401 or 403, or a key that is missing before anything is sent: the key is missing, wrong or not allowed."""


class RateLimitError(_RetryAfterError):
    """429. `retry_after` is the wait the provider asked for, when it said."""

    def __init__(self, message: str, *, quota_exhausted: bool = False, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.quota_exhausted = quota_exhausted


class OverloadedError(_RetryAfterError):
    """503 or 529: the provider is overloaded. `retry_after` as for `RateLimitError`."""


class ContextOverflowError(ProviderError):
    """The request is larger than the model's context window."""


class ContentFilterError(ProviderError):
    """The provider's safety filter blocked the request or the response."""

    def __init__(self, message: str, *, categories: dict[str, dict[str, Any]] | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.categories: dict[str, dict[str, Any]] = dict(categories or {})
        """What the filter said per category, when the provider says (Azure: `hate`, `self_harm`, `jailbreak`, ...
        each with `filtered` and its `severity` or `detected`)."""

    @property
    def severities(self) -> dict[str, str]:
        """The categories that were filtered, each with its severity (`high`, ...; `detected` for a detector)."""
        out: dict[str, str] = {}
        for name, result in self.categories.items():
            if result.get("filtered"):
                severity = result.get("severity")
                out[name] = severity if isinstance(severity, str) else "detected"
        return out


class SpendLimitReachedError(ProviderError):
    """The account's own spending limit at the provider was reached. Never retried."""


class BadRequestError(ProviderError):
    """400, 404, 409, 413 or 422: the request is wrong. Never retried."""


class TransportError(ProviderError):
    """The connection failed or timed out."""


class MalformedResponseError(ProviderError):
    """The response is not what the API documents."""


class RefusedError(ProviderError):
    """The model declined to answer. For a decider, `questions` names the questions it declined."""

    def __init__(self, message: str, *, questions: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.questions = questions
        """The questions refused (a decider's question ids, `line-ok[2]` for one element of a `forEach`)."""


class BudgetKind(enum.Enum):
    """Which cap a `BudgetExceededError` hit."""

    SPEND = "spend"
    INSTANCE_SPEND = "instanceSpend"
    CALL_COST = "callCost"
    TOKENS = "tokens"
    TURNS = "turns"
    TOOL_CALLS = "toolCalls"


class BudgetExceededError(OnellmError):
    """A spend or token cap was reached, or a call could pass one and was not sent."""

    def __init__(self, message: str, *, kind: BudgetKind, limit: Any = None, spent: Any = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.limit = limit
        self.spent = spent


class CapabilityMissingError(OnellmError):
    """A feature needs a package or a grant that is not present. The message names what to add."""


class ConfigurationError(OnellmError, ValueError):
    """A setting given in code or the environment cannot be used: `setting` names it, the message says why (never
    showing a secret value). Also a `ValueError`, as a bad argument is."""

    def __init__(self, message: str, *, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


class CapabilityDeniedError(OnellmError):
    """A tool asked for something its grants do not allow: names the path, command or host and the rule that refused."""

    def __init__(self, message: str, *, target: str | None = None, rule: str | None = None) -> None:
        super().__init__(message)
        self.target = target
        self.rule = rule


class BadDefinitionError(OnellmError):
    """A definition, flow, decider, instance or catalog file is invalid. Carries the file, 1-based line and column."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        path: str | None = None,
    ) -> None:
        self.detail = message
        self.file = file
        self.line = line
        self.column = column
        self.path = path
        super().__init__(self._format())

    def _format(self) -> str:
        where = self.file or "<string>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        at = f" (at {self.path})" if self.path else ""
        return f"{where}: {self.detail}{at}"


class DeciderInputError(OnellmError):
    """A decider's inputs do not fit the `inputs` of its `decider.schema.json`, or cannot be sent (a value that is not
    JSON). Raised before anything is sent. `path` names the value (`inputs.ticket.title`)."""

    def __init__(self, message: str, *, path: str | None = None, decider: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        """Where the value is, starting at `inputs`."""
        self.decider = decider
        """The decider's name."""


class DeciderOutputError(OnellmError):
    """What a decider's logic returned (its answers, when it has none) does not fit the `outputs` of its
    `decider.schema.json`, or the `output=` type asked for. `path` names the value (`outputs.route`)."""

    def __init__(self, message: str, *, path: str | None = None, decider: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        """Where the value is, starting at `outputs`."""
        self.decider = decider
        """The decider's name."""


class ModelNotFoundError(OnellmError):
    """A model name resolves to nothing, or to several models. `candidates` lists the near or ambiguous names."""

    def __init__(self, message: str, *, name: str | None = None, candidates: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.candidates = candidates


class UnsupportedParameterError(OnellmError):
    """The model cannot take a request parameter that cannot be stripped without changing the answer's meaning."""

    def __init__(self, message: str, *, parameter: str | None = None, model: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter
        self.model = model


class InstanceLockedError(OnellmError):
    """Another holder has the lease on this instance."""

    def __init__(self, message: str, *, instance_id: str | None = None) -> None:
        super().__init__(message)
        self.instance_id = instance_id


class InvalidInstanceIdError(OnellmError, ValueError):
    """An instance id is not 1 to 128 characters of ASCII letters, digits, `-` and `_`."""

    def __init__(self, message: str, *, instance_id: object = None) -> None:
        super().__init__(message)
        self.instance_id = instance_id
        """The value that was refused."""


class ArgumentError(OnellmError):
    """A JSON value does not fit the type: `path` names it (`items[2].qty`), `problem` says how."""

    def __init__(self, problem: str, path: Sequence[str | int] = ()) -> None:
        super().__init__(problem)
        self.problem = problem
        """What is wrong, for example `must be an integer, not a string`."""
        self.segments: list[str | int] = list(path)
        """The keys and indexes from the top value down to the one that does not fit."""

    def within(self, segment: str | int) -> ArgumentError:
        """Put this error one level down, under `segment` (an object key or an array index); returns self."""
        self.segments.insert(0, segment)
        return self

    @property
    def path(self) -> str:
        """The path as text: `items[2].qty`, `notes["a b"]`; empty for the top value."""
        from onellm._describe import format_path

        return format_path(self.segments)

    def message(self, subject: str = "Argument") -> str:
        """The sentence shown to the model, for example `Argument 'items[2].qty' must be an integer, not a string.`"""
        path = self.path
        if path:
            return f"{subject} '{path}' {self.problem}."
        return f"{subject} {self.problem}."

    def __str__(self) -> str:
        return self.message()


class InstanceNotFoundError(OnellmError, LookupError):
    """No instance with this id is in the store (or, with `message_id`, the instance holds no such message)."""

    def __init__(self, message: str, *, instance_id: str | None = None, message_id: str | None = None) -> None:
        super().__init__(message)
        self.instance_id = instance_id
        self.message_id = message_id


class StorageError(OnellmError):
    """A store, record sink or file could not be read or written: a full or read-only disk, a path that is not a
    regular file, a link leading out of the store, a file that is not what it claims to be.

    `path` names the file or directory, `operation` what was being done (``"save"``, ``"load"``, ``"list"``,
    ``"acquire"``, ``"delete"``, ``"append"``, ...), and the `OSError` or parse failure is chained as `__cause__`.
    When a paid-for answer could not be saved, `result` holds it so the caller loses nothing and can save again.
    """

    def __init__(
        self, message: str, *, path: str | None = None, operation: str | None = None, result: Any = None
    ) -> None:
        super().__init__(message)
        self.path = path
        self.operation = operation
        self.result = result


class UnwritableValueError(OnellmError, TypeError):
    """A value an instance or a definition holds has no form in its file: only text, numbers, booleans, null, lists
    and mappings with such keys can be written. `path` names the value (`inputs.when`,
    `messages[3].toolCalls[0].inputs.at`), `instance_id` the instance (None for a definition), and nothing is saved.
    A `TypeError` too, as writing such a value always was."""

    def __init__(self, message: str, *, instance_id: str | None = None, path: str | None = None) -> None:
        super().__init__(message)
        self.instance_id = instance_id
        self.path = path


class RunCancelledError(OnellmError):
    """A run was cancelled. `instance` is the saved instance, with what arrived before the cancellation."""

    def __init__(self, message: str, *, instance: Any = None) -> None:
        super().__init__(message)
        self.instance = instance


class HookBlockedError(OnellmError):
    """A hook stopped an agent's run: `point` names where (`beforeInference`, `afterInference`), `hook` which hook,
    `reason` why (for a hook that failed, its failure), and `instance` is the instance, saved in `error`."""

    def __init__(
        self,
        message: str,
        *,
        point: str | None = None,
        hook: str | None = None,
        reason: str | None = None,
        instance: Any = None,
    ) -> None:
        super().__init__(message)
        self.point = point
        self.hook = hook
        self.reason = reason
        self.instance = instance


class AgentStateError(OnellmError):
    """An agent was asked for something its state does not allow: approving when no approval is pending, naming a
    tool call that waits for no decision, following a run that another caller is already driving. `instance_id` names
    the instance and `state` is the state it is in."""

    def __init__(self, message: str, *, instance_id: str | None = None, state: str | None = None) -> None:
        super().__init__(message)
        self.instance_id = instance_id
        self.state = state


class TemplateError(OnellmError):
    """A template failed to parse, execute, embed, or stay within its limits.

    `kind` is one of ``"parse"``, ``"execute"``, ``"embed"``, ``"limit"``; `line` and `column` are 1-based, `offset` is
    the byte offset in the template's original text.
    """

    def __init__(
        self,
        detail: str,
        *,
        kind: str,
        name: str | None = None,
        line: int | None = None,
        column: int | None = None,
        offset: int | None = None,
    ) -> None:
        self.detail = detail
        self.kind = kind
        self.name = name
        self.line = line
        self.column = column
        self.offset = offset
        where = name or "template"
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}"
        super().__init__(f"{where}: {kind} error: {detail}")


_publish(
    "onellm",
    AgentStateError,
    ArgumentError,
    AuthError,
    BadDefinitionError,
    BadRequestError,
    BudgetExceededError,
    BudgetKind,
    CapabilityDeniedError,
    CapabilityMissingError,
    ConfigurationError,
    ContentFilterError,
    ContextOverflowError,
    DeciderInputError,
    DeciderOutputError,
    HookBlockedError,
    InstanceLockedError,
    InstanceNotFoundError,
    InvalidInstanceIdError,
    MalformedResponseError,
    ModelNotFoundError,
    OnellmError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    RefusedError,
    RunCancelledError,
    Secret,
    SpendLimitReachedError,
    StorageError,
    TemplateError,
    TransportError,
    UnsupportedParameterError,
    UnwritableValueError,
)
