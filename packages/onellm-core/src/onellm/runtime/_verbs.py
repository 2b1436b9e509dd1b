"""The happy-path verbs on the current runtime, and their blocking `_sync` twins."""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, Unpack, overload

from onellm.runtime._default import current_runtime
from onellm.runtime._sync import drive

if TYPE_CHECKING:
    from onellm.instances import Instance
    from onellm.runtime._call import StreamingAnswer
    from onellm.runtime._chat import ChatSession
    from onellm.runtime._prompt import Content, RequestOptions
    from onellm.runtime._results import AskResult, ScriptResult

__all__ = [
    "ask",
    "ask_sync",
    "chat",
    "embed",
    "embed_sync",
    "generate",
    "generate_sync",
    "run_script",
    "run_script_sync",
    "stream",
    "stream_text",
    "stream_text_sync",
]

T = TypeVar("T")


@overload
async def ask(
    model: str,
    *content: Content,
    system: str | None = None,
    output: None = None,
    **options: Unpack[RequestOptions],
) -> str: ...
@overload
async def ask(
    model: str, *content: Content, system: str | None = None, output: type[T], **options: Unpack[RequestOptions]
) -> T: ...
async def ask(
    model: str,
    *content: Content,
    system: str | None = None,
    output: type[T] | None = None,
    **options: Unpack[RequestOptions],
) -> str | T:
    """Ask `model` and return the answer's text (or, with `output=`, a value of that type through the provider's
    native structured output). The call is saved as an instance in the current runtime's store."""
    if output is None:
        return await current_runtime().ask(model, *content, system=system, **options)
    return await current_runtime().ask(model, *content, system=system, output=output, **options)


@overload
async def generate(
    model: str, *content: Content, system: str | None = None, output: None = None, **options: Unpack[RequestOptions]
) -> AskResult[Any]: ...
@overload
async def generate(
    model: str, *content: Content, system: str | None = None, output: type[T], **options: Unpack[RequestOptions]
) -> AskResult[T]: ...
async def generate(
    model: str,
    *content: Content,
    system: str | None = None,
    output: type[T] | None = None,
    **options: Unpack[RequestOptions],
) -> AskResult[Any]:
    """Ask `model` and return the whole result: text or value, usage, cost lines and total, warnings, the saved
    instance and the finish reason."""
    return await current_runtime().generate(model, *content, system=system, output=output, **options)


@overload
def stream(
    model: str, *content: Content, system: str | None = None, output: None = None, **options: Unpack[RequestOptions]
) -> StreamingAnswer[Any]: ...
@overload
def stream(
    model: str, *content: Content, system: str | None = None, output: type[T], **options: Unpack[RequestOptions]
) -> StreamingAnswer[T]: ...
def stream(
    model: str,
    *content: Content,
    system: str | None = None,
    output: type[T] | None = None,
    **options: Unpack[RequestOptions],
) -> StreamingAnswer[Any]:
    """Stream an answer: `async for event in answer`, then `await answer.result()`."""
    return current_runtime().stream(model, *content, system=system, output=output, **options)


async def stream_text(
    model: str, *content: Content, system: str | None = None, **options: Unpack[RequestOptions]
) -> AsyncGenerator[str, None]:
    """The answer's text, piece by piece as it arrives."""
    async for piece in current_runtime().stream_text(model, *content, system=system, **options):
        yield piece


@overload
async def embed(model: str, text: str, *, dimensions: int | None = None) -> list[float]: ...  # type: ignore[overload-overlap]
@overload
async def embed(model: str, text: Sequence[str], *, dimensions: int | None = None) -> list[list[float]]: ...
async def embed(
    model: str, text: str | Sequence[str], *, dimensions: int | None = None
) -> list[float] | list[list[float]]:
    """One embedding vector for a string, or one per string. Priced and recorded; no instance."""
    return await current_runtime().embed(model, text, dimensions=dimensions)


def chat(
    model: str, *, system: str | None = None, instance: Instance | None = None, **options: Unpack[RequestOptions]
) -> ChatSession:
    """A conversation kept in one instance: `await chat.ask(...)`, `chat.send(...)`, `chat.stream(...)`."""
    return current_runtime().chat(model, system=system, instance=instance, **options)


async def run_script(
    path: str | os.PathLike[str], inputs: Mapping[str, Any] | None = None, *, model: str | None = None
) -> ScriptResult:
    """Run a `.flow` (or an agent definition) as a script: prompts rendered in order, one call per user prompt.
    `model=` overrides the definition's model."""
    return await current_runtime().run_script(path, inputs, model=model)


@overload
def ask_sync(
    model: str,
    *content: Content,
    system: str | None = None,
    output: None = None,
    **options: Unpack[RequestOptions],
) -> str: ...
@overload
def ask_sync(
    model: str, *content: Content, system: str | None = None, output: type[T], **options: Unpack[RequestOptions]
) -> T: ...
def ask_sync(
    model: str,
    *content: Content,
    system: str | None = None,
    output: type[T] | None = None,
    **options: Unpack[RequestOptions],
) -> str | T:
    """Blocking form of `onellm.ask`, for scripts and notebooks. Not for use inside async code."""
    if output is None:
        return drive(ask(model, *content, system=system, **options), "ask")
    return drive(ask(model, *content, system=system, output=output, **options), "ask")


@overload
def generate_sync(
    model: str,
    *content: Content,
    system: str | None = None,
    output: None = None,
    **options: Unpack[RequestOptions],
) -> AskResult[Any]: ...
@overload
def generate_sync(
    model: str, *content: Content, system: str | None = None, output: type[T], **options: Unpack[RequestOptions]
) -> AskResult[T]: ...
def generate_sync(
    model: str,
    *content: Content,
    system: str | None = None,
    output: type[T] | None = None,
    **options: Unpack[RequestOptions],
) -> AskResult[Any]:
    """Blocking form of `onellm.generate`. Not for use inside async code."""
    return drive(generate(model, *content, system=system, output=output, **options), "generate")


@overload
def embed_sync(model: str, text: str, *, dimensions: int | None = None) -> list[float]: ...  # type: ignore[overload-overlap]
@overload
def embed_sync(model: str, text: Sequence[str], *, dimensions: int | None = None) -> list[list[float]]: ...
def embed_sync(
    model: str, text: str | Sequence[str], *, dimensions: int | None = None
) -> list[float] | list[list[float]]:
    """Blocking form of `onellm.embed`. Not for use inside async code."""
    return drive(embed(model, text, dimensions=dimensions), "embed")


def run_script_sync(
    path: str | os.PathLike[str], inputs: Mapping[str, Any] | None = None, *, model: str | None = None
) -> ScriptResult:
    """Blocking form of `onellm.run_script`. Not for use inside async code."""
    return drive(run_script(path, inputs, model=model), "run_script")


def stream_text_sync(
    model: str, *content: Content, system: str | None = None, **options: Unpack[RequestOptions]
) -> Iterator[str]:
    """Blocking form of `onellm.stream_text`: a plain iterator of text pieces. Not for use inside async code."""
    pieces: AsyncGenerator[str, None] = stream_text(model, *content, system=system, **options)
    try:
        while True:
            try:
                yield drive(pieces.__anext__(), "stream_text")
            except StopAsyncIteration:
                return
    finally:
        drive(pieces.aclose(), "stream_text")
