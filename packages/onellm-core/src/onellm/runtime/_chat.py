"""`ChatSession`: a conversation kept in one instance, `waiting` between turns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

import anyio

from onellm.messages import Message
from onellm.runtime._runtime import ModelCall, StreamingAnswer, _parts, new_message_id

if TYPE_CHECKING:
    from onellm.instances import Instance
    from onellm.runtime._results import AskResult
    from onellm.runtime._runtime import Content, Runtime

__all__ = ["ChatSession"]

T = TypeVar("T")


class ChatSession:
    """A conversation with one model, kept in one instance that is saved `waiting` after every turn.

    ```python
    async with onellm.chat("claude-sonnet", system="Be brief.") as chat:
        await chat.ask("Name a prime.")
        await chat.ask("And the next one?")
    ```

    Turns run one at a time. `instance=` continues a saved conversation.
    """

    def __init__(
        self,
        runtime: Runtime,
        model: str,
        *,
        system: str | None = None,
        instance: Instance | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.runtime = runtime
        self.requested_model = model
        self.resolved, self.provider = runtime.route(model)
        if instance is None:
            instance = runtime.new_instance(self.resolved, model, system)
        elif system is None:
            system = instance.rendered_system_prompt or instance.system_prompt
        self.instance: Instance = instance
        self.system = system
        self.options = dict(options or {})
        self._lock = anyio.Lock()

    def __repr__(self) -> str:
        return f"ChatSession({self.resolved.qualified_name!r}, instance={self.instance.id!r})"

    def _call(self, content: tuple[Content, ...], output: Any, options: Mapping[str, Any]) -> ModelCall:
        from onellm.runtime._runtime import _check_options

        settings = {**self.options, **_check_options(options)}
        turn = Message(id=new_message_id(), user=_parts(content), date_time=self.runtime.now())
        history = [*self.instance.messages, turn]
        self.instance.state = "running"
        self.instance.error = None
        self.instance.messages.append(turn)
        return ModelCall(
            self.runtime,
            self.resolved,
            self.provider,
            self.instance,
            turn,
            self.system,
            output,
            settings,
            final_state="waiting",
            history=history,
            owns_instance=False,
        )

    @overload
    async def send(self, *content: Content, output: None = None, **options: Any) -> AskResult[Any]: ...
    @overload
    async def send(self, *content: Content, output: type[T], **options: Any) -> AskResult[T]: ...
    async def send(self, *content: Content, output: type[T] | None = None, **options: Any) -> AskResult[Any]:
        """One turn: the answer with its usage and cost."""
        async with self._lock:
            call = self._call(content, output, options)
            try:
                return await call.whole()
            except BaseException:
                call.drop_unsent()
                raise

    async def ask(self, *content: Content, output: type[T] | None = None, **options: Any) -> Any:
        """One turn: the answer's text, or a value of the `output` type."""
        result = await self.send(*content, output=output, **options)
        return result.value if output is not None else result.text

    @overload
    def stream(self, *content: Content, output: None = None, **options: Any) -> StreamingAnswer[Any]: ...
    @overload
    def stream(self, *content: Content, output: type[T], **options: Any) -> StreamingAnswer[T]: ...
    def stream(self, *content: Content, output: type[T] | None = None, **options: Any) -> StreamingAnswer[Any]:
        """One streamed turn. Read it to its end (or close it) before the next turn."""
        return StreamingAnswer(lambda: self._call(content, output, options))

    def ask_sync(self, *content: Content, output: type[T] | None = None, **options: Any) -> Any:
        """Blocking form of `ask`, for scripts and notebooks. Not for use inside async code."""
        from onellm.runtime._sync import drive

        return drive(self.ask(*content, output=output, **options), "chat(...).ask")

    def send_sync(self, *content: Content, output: type[T] | None = None, **options: Any) -> AskResult[Any]:
        """Blocking form of `send`. Not for use inside async code."""
        from onellm.runtime._sync import drive

        return drive(self.send(*content, output=output, **options), "chat(...).send")

    def __enter__(self) -> ChatSession:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    async def __aenter__(self) -> ChatSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None
