"""Exit codes, and every failure turned into one line on standard error and the code the command-line page names.

| Code | Meaning |
|---|---|
| 0 | done; also an agent that answered and waits for the next message, or a held call left for later |
| 1 | the run failed: a provider error after retries, a spend cap, a hook block, an instance ended in `error`, an
  unknown instance id |
| 2 | the command line is wrong (also: a decider's inputs do not fit its `decider.schema.json`) |
| 3 | a file, definition, grant, model or key problem |
| 4 | the agent used all its iterations without finishing |
| 130 | cancelled with Ctrl-C; the partial run is kept as a stopped instance |
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "EXIT_CANCELLED",
    "EXIT_FAILED",
    "EXIT_MAX_ITERATIONS",
    "EXIT_OK",
    "EXIT_SETUP",
    "EXIT_USAGE",
    "CliError",
    "classify",
    "one_line",
]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_SETUP: Final = 3
EXIT_MAX_ITERATIONS: Final = 4
EXIT_CANCELLED: Final = 130


class CliError(Exception):
    """A failure the command reports as one line with its exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message = message
        """What went wrong, for a person."""
        self.code = code
        """The process exit code."""


_BREAKS = re.compile(r"\s*[\r\n]+\s*")


def one_line(text: str) -> str:
    """`text` on one line: line breaks (and the blanks around them) become `; `."""
    return _BREAKS.sub("; ", text.strip())


def _leaf(error: BaseException) -> BaseException:
    """The one exception inside nested single-member exception groups (what a task group wraps around a failure)."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def classify(error: BaseException) -> tuple[int, str]:
    """The exit code and the one-line message for a failure.

    The message names what went wrong as the error does (file, line and column; the variable to set; the model; the
    instance); it never carries a traceback.
    """
    from onellm import errors

    error = _leaf(error)
    if isinstance(error, CliError):
        return error.code, error.message
    if isinstance(error, errors.RunCancelledError):
        return EXIT_CANCELLED, "cancelled"
    if isinstance(error, errors.DeciderInputError):
        return EXIT_USAGE, str(error)  # the inputs came from --input and --input-json: nothing was sent
    if isinstance(error, errors.AuthError) and error.status is None:
        return EXIT_SETUP, error.message  # the key is missing (the message names the variable): nothing was sent
    if isinstance(
        error,
        errors.BadDefinitionError
        | errors.CapabilityMissingError
        | errors.ModelNotFoundError
        | errors.TemplateError
        | errors.UnsupportedParameterError,
    ):
        return EXIT_SETUP, str(error)
    if isinstance(error, errors.OnellmError):
        return EXIT_FAILED, str(error) or type(error).__name__
    if isinstance(error, FileNotFoundError | NotADirectoryError | IsADirectoryError | PermissionError):
        name = error.filename if error.filename is not None else ""
        reason = error.strerror or type(error).__name__
        return EXIT_SETUP, f"{name}: {reason}" if name else reason
    if isinstance(error, OSError):
        name = f"{error.filename}: " if error.filename is not None else ""
        return EXIT_FAILED, f"{name}{error.strerror or error}"
    if isinstance(error, BaseExceptionGroup):
        parts = [classify(e) for e in error.exceptions]
        return max(code for code, _ in parts), "; ".join(message for _, message in parts)
    return EXIT_FAILED, f"internal error: {type(error).__name__}: {error}"
