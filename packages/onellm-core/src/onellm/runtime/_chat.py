"""`ChatSession`: a conversation kept in one instance, `waiting` between turns."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, Unpack, cast, overload

import anyio

from onellm.messages import Message
from onellm.runtime._call import ModelCall, StreamingAnswer
from onellm.runtime._prompt import api_source, check_options, new_message_id, prompt_parts

if TYPE_CHECKING:
    from onellm.instances import Instance
    from onellm.runtime._prompt import Content, RequestOptions
    from onellm.runtime._results import AskResult
    from onellm.runtime._services import RuntimeServices

__all__ = ["ChatSession"]

T = TypeVar("T")


class ChatSession:
    """A conversation with one model, kept in one instance that is saved `waiting` after every turn.

    ```python
    import onellm

    async with onellm.chat("claude-sonnet", system="Be brief.") as chat:
        await chat.ask("Name a prime.")
        await chat.ask("And the next one?")
    ```

    Turns run one at a time. `instance=` continues a saved conversation. Each turn is a run: it holds the instance's
    lease while it runs and saves (a turn while another handle holds it is an `InstanceLockedError`, before anything
    is sent) and writes its `run` records.

    Args:
        runtime: The runtime (or its `services`) the turns run on.
        model: The model name, as the verbs take it.
        system: The system prompt (default: a continued instance's own).
        instance: A saved conversation to continue.
        options: Request options for every turn.
    """

    def __init__(
        self,
        runtime: Any,
        model: str,
        *,
        system: str | None = None,
        instance: Instance | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        services: RuntimeServices = getattr(runtime, "services", runtime)
        self.services = services
        self.requested_model = model
        self.resolved, self.provider = services.route(model)
        if instance is None:
            instance = services.new_instance(self.resolved, model, system)
        elif system is None:
            system = instance.rendered_system_prompt or instance.system_prompt
        self.instance: Instance = instance
        self.system = system
        self.options = dict(options or {})
        self._lock = anyio.Lock(fast_acquire=True)  # no pass through the event loop when no turn runs

    def __repr__(self) -> str:
        return f"ChatSession({self.resolved.qualified_name!r}, instance={self.instance.id!r})"

    def _call(self, content: tuple[Content, ...], output: Any, options: Mapping[str, Any]) -> ModelCall:
        settings = {**self.options, **check_options(options)}
        turn = Message(
            id=new_message_id(), user=prompt_parts(content), date_time=self.services.now(), source=api_source()
        )
        instance = self.instance
        instance.state = "running"
        instance.error = None
        instance.messages.append(turn)
        return ModelCall(
            self.services,
            self.resolved,
            self.provider,
            instance,
            turn,
            system=self.system,
            output=output,
            settings=settings,
            final_state="waiting",
            requested_model=self.requested_model,
            owns_instance=False,
        )

    @overload
    async def send(
        self, *content: Content, output: None = None, **options: Unpack[RequestOptions]
    ) -> AskResult[Any]: ...
    @overload
    async def send(self, *content: Content, output: type[T], **options: Unpack[RequestOptions]) -> AskResult[T]: ...
    async def send(
        self, *content: Content, output: type[T] | None = None, **options: Unpack[RequestOptions]
    ) -> AskResult[Any]:
        """One turn: the answer with its usage and cost.

        Raises:
            InstanceLockedError: another handle holds the conversation's lease (nothing was sent).
            RunCancelledError: cancelled; the conversation is saved with what had arrived.
            StorageError: the answer could not be saved; `result` holds it, and `save()` tries again.
        """
        async with self._lock:
            call = self._call(content, output, options)
            try:
                return await call.whole()
            except BaseException:
                call.drop_unsent()
                raise

    @overload
    async def ask(self, *content: Content, output: None = None, **options: Unpack[RequestOptions]) -> str: ...
    @overload
    async def ask(self, *content: Content, output: type[T], **options: Unpack[RequestOptions]) -> T: ...
    async def ask(self, *content: Content, output: type[T] | None = None, **options: Unpack[RequestOptions]) -> str | T:
        """One turn: the answer's text, or a value of the `output` type."""
        if output is None:
            return (await self.send(*content, **options)).text
        return cast(T, (await self.send(*content, output=output, **options)).value)

    @overload
    def stream(
        self, *content: Content, output: None = None, **options: Unpack[RequestOptions]
    ) -> StreamingAnswer[Any]: ...
    @overload
    def stream(self, *content: Content, output: type[T], **options: Unpack[RequestOptions]) -> StreamingAnswer[T]: ...
    def stream(
        self, *content: Content, output: type[T] | None = None, **options: Unpack[RequestOptions]
    ) -> StreamingAnswer[Any]:
        """One streamed turn. Read it to its end (or close it) before the next turn."""
        return StreamingAnswer(lambda: self._call(content, output, options))

    async def save(self) -> None:
        """Save the conversation as it stands, holding its lease: after a `StorageError`, once the disk is fixed.

        Raises:
            InstanceLockedError: another handle holds the lease.
            StorageError: the store still cannot write it.
        """
        async with self._lock:
            lease = await self.services.lease(self.instance)
            try:
                await self.services.save(self.instance)
            finally:
                if lease is not None:
                    with anyio.CancelScope(shield=True), contextlib.suppress(OSError):
                        await lease.release()

    @overload
    def ask_sync(self, *content: Content, output: None = None, **options: Unpack[RequestOptions]) -> str: ...
    @overload
    def ask_sync(self, *content: Content, output: type[T], **options: Unpack[RequestOptions]) -> T: ...
    def ask_sync(self, *content: Content, output: type[T] | None = None, **options: Unpack[RequestOptions]) -> str | T:
        """Blocking form of `ask`, for scripts and notebooks. Not for use inside async code."""
        from onellm.runtime._sync import drive

        if output is None:
            return drive(self.ask(*content, **options), "chat(...).ask")
        return drive(self.ask(*content, output=output, **options), "chat(...).ask")

    @overload
    def send_sync(
        self, *content: Content, output: None = None, **options: Unpack[RequestOptions]
    ) -> AskResult[Any]: ...
    @overload
    def send_sync(self, *content: Content, output: type[T], **options: Unpack[RequestOptions]) -> AskResult[T]: ...
    def send_sync(
        self, *content: Content, output: type[T] | None = None, **options: Unpack[RequestOptions]
    ) -> AskResult[Any]:
        """Blocking form of `send`. Not for use inside async code."""
        from onellm.runtime._sync import drive

        return drive(self.send(*content, output=output, **options), "chat(...).send")

    def save_sync(self) -> None:
        """Blocking form of `save`. Not for use inside async code."""
        from onellm.runtime._sync import drive

        drive(self.save(), "chat(...).save")

    def __enter__(self) -> ChatSession:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    async def __aenter__(self) -> ChatSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None
