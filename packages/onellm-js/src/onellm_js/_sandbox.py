"""`JsSandbox`: one JavaScript run, from the host's side.

A run borrows a slot from the `JsRunLimiter` and a process from the `JsWorkerPool`, sends the script, serves its host
calls (`ctx.*`) as they arrive, and races all of it against the time limit plus a grace period and against the
caller's cancellation. A run that loses the race is abandoned: its process is killed (and reaped before the slot is
given back) and the caller gets a `time` failure, or its cancellation. A backstop watches the process's resident
memory while the run lasts.

The run is closed on every way out, before the caller gets its answer: host calls still in flight are cancelled (a
write already running is waited for), and nothing the script asked for afterwards is done.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from onellm_js._errors import JsFailure, JsSandboxError, cap_message
from onellm_js._host import CAPABILITY_GRANTS, JsLogLine, RunHost
from onellm_js._limiter import JsLease, JsRunLimiter, JsSlot
from onellm_js._options import JsSandboxOptions
from onellm_js._pool import JsWorkerPool, Worker, WorkerLostError
from onellm_js._source import JsSource

if TYPE_CHECKING:
    import anyio.abc

    from onellm.messages import CostLine
    from onellm.tools import ToolContext

__all__ = ["JsLogLine", "JsRunResult", "JsSandbox"]

_ENCODER = msgspec.json.Encoder(decimal_format="number")
_DECODER = msgspec.json.Decoder()
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MEMORY_HEADROOM = 4 * 1024 * 1024
_WATCH_INTERVAL = 0.05
_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_EVERY_CAPABILITY = frozenset(CAPABILITY_GRANTS)


@dataclass(slots=True)
class JsRunResult:
    """What a run returned."""

    value: Any
    """The returned value, decoded from its JSON (None for `undefined` and `null`)."""
    type: str
    """The JavaScript `typeof` of the returned value (`undefined`, `string`, `number`, `object`, ...)."""
    json: str | None
    """The returned value's JSON text; None for `undefined`."""
    output: str = ""
    """What the script wrote to `console` (head and tail kept within `max_output_chars`)."""
    logs: list[str] = field(default_factory=list)
    """The `ctx.log` lines of the run, in order."""
    cost_lines: list[CostLine] = field(default_factory=list)
    """The `ctx.addCost` lines of the run (also added to the call's `ToolContext`, when there was one)."""


def _epoch_ms(moment: dt.datetime) -> float:
    return (moment - _EPOCH).total_seconds() * 1000.0


def _depth(text: str) -> int:
    deepest = depth = 0
    for match in _BRACKETS.finditer(text):
        token = match.group(0)
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def _console(data: Any) -> str:
    if not isinstance(data, dict):
        return ""
    head = data.get("head")
    tail = data.get("tail")
    total = data.get("total")
    head = head if isinstance(head, str) else ""
    tail = tail if isinstance(tail, str) else ""
    total = total if isinstance(total, int) else 0
    kept = len(head) + len(tail)
    if total <= kept:
        return head + tail
    return f"{head}\n[... {total - kept} characters elided ...]\n{tail}"


class JsSandbox:
    """Runs JavaScript under `JsSandboxOptions`: code snippets (`run_code`) and functions exported by module files
    (`call`). Every run builds a fresh engine, so nothing one run leaves behind reaches the next."""

    abandoned_runs: ClassVar[int] = 0
    """Runs abandoned in this process: the host gave up waiting (time limit, cancellation, memory backstop) and killed
    the process that ran them."""
    _counter_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, options: JsSandboxOptions | None = None) -> None:
        self.options = options or JsSandboxOptions()

    @property
    def limiter(self) -> JsRunLimiter:
        return self.options.limiter or JsRunLimiter.shared()

    @property
    def pool(self) -> JsWorkerPool:
        return self.options.pool or JsWorkerPool.shared()

    # ---------------------------------------------------------------------------------------------------- runs

    async def run_code(
        self,
        code: str,
        *,
        input: Any = None,
        context: ToolContext | None = None,
        requires: Iterable[str] = _EVERY_CAPABILITY,
        slot: JsSlot | None = None,
        file: str = "<code>",
        time_limit: float | None = None,
    ) -> JsRunResult:
        """Run `code` as the body of an async function with `input` and `ctx` in scope (top-level `await` and `return`
        allowed).

        Args:
            code: The function body.
            input: A JSON-compatible value, `input` in the script.
            context: The call's context: grants, working directory, ids, where cost lines go. None: no grants.
            requires: The capabilities the script may use when the grants allow them (all three by default).
            slot: What to ask the limiter for; by default a tool run of the context's instance.
            file: The name errors give the code.
            time_limit: Seconds, at most the options' `time_limit`.

        Raises:
            JsSandboxError: the script threw, did not parse, hit a limit, or returned something unusable.
        """
        if not isinstance(code, str):
            raise TypeError("code must be a string")
        source = JsSource.from_text(code, file=file)
        wrapper = "(async function (input, ctx) {\n" + source.text + "\n})"
        job = self._job(
            mode="body",
            text=wrapper,
            context=context,
            line_offset=1,
            input=input,
            pass_ctx=True,
            undefined_as_null=False,
            time_limit=time_limit,
        )
        return await self._run(job, source, context, frozenset(requires), slot or self._tool_slot(context))

    async def call(
        self,
        source: JsSource,
        export: str,
        args: Sequence[Any] = (),
        *,
        context: ToolContext | None = None,
        requires: Iterable[str] = (),
        slot: JsSlot | None = None,
        pass_ctx: bool = True,
        undefined_as_null: bool = False,
        time_limit: float | None = None,
    ) -> JsRunResult:
        """Evaluate a module in a fresh engine and call one of its exported functions with `args` (and `ctx` last
        when `pass_ctx`). An `async` function is awaited.

        Args:
            source: The module.
            export: The exported function's name.
            args: JSON-compatible arguments.
            context: The call's context (grants, ids, cost lines). None: no grants.
            requires: The capabilities the module declared.
            slot: What to ask the limiter for; by default a tool run of the context's instance.
            pass_ctx: Pass `ctx` after the arguments.
            undefined_as_null: Write `undefined` properties (and an `undefined` result) as `null`.
            time_limit: Seconds, at most the options' `time_limit`.

        Raises:
            JsSandboxError: as for `run_code`.
        """
        job = self._job(
            mode="module",
            text=source.text,
            context=context,
            line_offset=0,
            entry=export,
            args=list(args),
            pass_ctx=pass_ctx,
            undefined_as_null=undefined_as_null,
            time_limit=time_limit,
        )
        return await self._run(job, source, context, frozenset(requires), slot or self._tool_slot(context))

    async def describe(self, source: JsSource, *, slot: JsSlot | None = None) -> dict[str, Any]:
        """Evaluate a module's top level once (under every limit) and return what it exports: `exports` (names), and
        the JSON text of its `tool` and `hook` objects (or None)."""
        job = self._job(
            mode="module",
            text=source.text,
            context=None,
            line_offset=0,
            entry=None,
            args=[],
            pass_ctx=False,
            undefined_as_null=True,
            time_limit=None,
        )
        result = await self._run(job, source, None, frozenset(), slot or JsSlot(kind="load"))
        described = result.value
        if not isinstance(described, dict):
            raise JsSandboxError("the module could not be described", kind=JsFailure.SCRIPT, file=source.file)
        if isinstance(described.get("error"), dict):
            error = described["error"]
            raise JsSandboxError(
                f"{error.get('name') or 'Error'}: {error.get('message', '')} (reading the exported description)",
                kind=JsFailure.SCRIPT,
                file=source.file,
            )
        return described

    # ---------------------------------------------------------------------------------------------------- plumbing

    @staticmethod
    def _tool_slot(context: ToolContext | None) -> JsSlot:
        caller = context.instance_id if context is not None else None
        if context is not None and isinstance(context.extra.get("root_instance_id"), str):
            caller = context.extra["root_instance_id"]
        return JsSlot(kind="tool", caller=caller)

    def _job(
        self,
        *,
        mode: str,
        text: str,
        context: ToolContext | None,
        line_offset: int,
        input: Any = None,
        entry: str | None = None,
        args: list[Any] | None = None,
        pass_ctx: bool,
        undefined_as_null: bool,
        time_limit: float | None,
    ) -> dict[str, Any]:
        options = self.options
        limit = options.time_limit if time_limit is None else max(0.001, min(time_limit, options.time_limit))
        clock: dict[str, Any] | None = None
        seed = options.random_seed
        if options.deterministic:
            clock = {"now": _epoch_ms(options.fixed_time or _EPOCH), "fixed": True}
            seed = seed or 0
        else:
            source_clock = options.clock
            if source_clock is None and context is not None:
                source_clock = getattr(context.runtime, "clock", None)
            if source_clock is not None and type(source_clock).__name__ != "SystemClock":
                clock = {"now": _epoch_ms(source_clock.now()), "fixed": False}
        try:
            input_json = _ENCODER.encode(input).decode("utf-8")
            args_json = _ENCODER.encode(args or []).decode("utf-8")
        except (TypeError, msgspec.EncodeError) as exc:
            raise TypeError(f"the script's input must be JSON-compatible: {exc}") from None
        return {
            "t": "run",
            "mode": mode,
            "source": text,
            "lineOffset": line_offset,
            "entry": entry,
            "args": args_json,
            "input": input_json,
            "config": {
                "limits": {
                    "output": options.max_output_chars,
                    "costLines": options.max_cost_lines,
                    "stringLength": options.max_string_length,
                    "result": options.max_result_chars,
                    "logChars": options.max_log_chars,
                    "message": JsSandboxError.MAX_MESSAGE_CHARS,
                },
                "ids": {
                    "instanceId": context.instance_id if context is not None else None,
                    "toolCallId": context.call_id if context is not None else None,
                },
                "clock": clock,
                "seed": seed,
                "undefinedAsNull": undefined_as_null,
                "passCtx": pass_ctx,
            },
            "limits": {
                "memory": options.max_allocated_bytes + _MEMORY_HEADROOM,
                "stack": options.stack_bytes,
                "cpu": options.cpu_seconds,
                "time": limit,
            },
        }

    async def _run(
        self,
        job: dict[str, Any],
        source: JsSource,
        context: ToolContext | None,
        requires: frozenset[str],
        slot: JsSlot,
    ) -> JsRunResult:
        unknown = sorted(requires - _EVERY_CAPABILITY)
        if unknown:
            raise ValueError(
                f"unknown capability {unknown[0]!r}; capabilities are {', '.join(sorted(CAPABILITY_GRANTS))}"
            )
        limiter = self.limiter
        lease = await limiter.acquire(slot)
        try:
            host = RunHost(self.options, file=source.file, context=context, requires=requires, on_bytes=lease.charge)
            return await self._on_worker(job, source, host, limiter, lease)
        finally:
            lease.release()

    async def _on_worker(
        self, job: dict[str, Any], source: JsSource, host: RunHost, limiter: JsRunLimiter, lease: JsLease
    ) -> JsRunResult:
        import anyio
        import anyio.to_thread

        pool = self.pool
        try:
            worker = await pool.acquire()
        except WorkerLostError as exc:
            raise JsSandboxError(f"busy: {exc}", kind=JsFailure.BUSY, file=source.file) from None
        watch = _Watch()
        reply: dict[str, Any] | None = None
        time_limit = float(job["limits"]["time"])
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + time_limit + self.options.grace) as deadline:
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(self._watch, worker, host, lease, watch, tasks.cancel_scope)
                    try:
                        reply = await self._converse(worker, job, host, tasks)
                    except WorkerLostError:
                        reply = None
                    tasks.cancel_scope.cancel()
        except BaseException:
            # The caller cancelled (or something unexpected happened): the run is abandoned.
            host.close()
            with anyio.CancelScope(shield=True):
                await self._abandon(pool, limiter, worker)
            raise
        host.close()
        if reply is None or host.over_budget:
            with anyio.CancelScope(shield=True):
                await self._abandon(pool, limiter, worker)
            output = ""
            if host.over_budget or watch.over_budget:
                raise JsSandboxError(
                    f"busy: the JavaScript runs together hold more than {limiter.max_total_bytes} bytes",
                    kind=JsFailure.BUSY,
                    file=source.file,
                )
            if watch.over_memory:
                raise JsSandboxError(
                    "memory limit: the sandbox process grew by more than "
                    f"{self.options.max_host_allocated_bytes} bytes during the run",
                    kind=JsFailure.MEMORY,
                    file=source.file,
                )
            if deadline.cancelled_caught:
                raise JsSandboxError(
                    f"time limit: the script ran for more than {time_limit:g} s and was stopped",
                    kind=JsFailure.TIME,
                    file=source.file,
                    output=output,
                )
            raise JsSandboxError(
                "memory limit: the sandbox process ended during the run (it ran out of memory or crashed)",
                kind=JsFailure.MEMORY,
                file=source.file,
            )
        pool.release(worker)
        return self._outcome(reply, source, host)

    async def _abandon(self, pool: JsWorkerPool, limiter: JsRunLimiter, worker: Worker) -> None:
        import anyio.to_thread

        worker.kill()
        limiter._note_abandoned()
        with JsSandbox._counter_lock:
            JsSandbox.abandoned_runs += 1
        # The slot is given back only once the process has really ended.
        await anyio.to_thread.run_sync(pool.discard, worker)

    async def _watch(
        self, worker: Worker, host: RunHost, lease: JsLease, watch: _Watch, scope: anyio.CancelScope
    ) -> None:
        import anyio

        baseline = worker.rss()
        limit = self.options.max_host_allocated_bytes
        while True:
            await anyio.sleep(_WATCH_INTERVAL)
            rss = worker.rss()
            growth = max(0, rss - baseline) if rss is not None and baseline is not None else 0
            if growth > limit:
                watch.over_memory = True
            elif not lease.charge(max(host.held_bytes, growth)):
                watch.over_budget = True
            else:
                continue
            worker.kill()
            scope.cancel()
            return

    async def _converse(
        self, worker: Worker, job: dict[str, Any], host: RunHost, tasks: anyio.abc.TaskGroup
    ) -> dict[str, Any]:
        import anyio

        send_lock = anyio.Lock()
        await worker.send(job)
        while True:
            message = await worker.receive()
            kind = message.get("t")
            calls = message.get("calls")
            if not isinstance(calls, list):
                calls = []
            for call in calls:
                if not (isinstance(call, list) and len(call) == 3 and isinstance(call[0], int)):
                    raise WorkerLostError("the worker sent a malformed call")
                call_id, name, args_text = call
                try:
                    args = _DECODER.decode(args_text) if isinstance(args_text, str) else None
                except msgspec.DecodeError:
                    args = None
                if not isinstance(name, str) or not isinstance(args, list):
                    raise WorkerLostError("the worker sent a malformed call")
                if call_id == 0:
                    host.one_way(name, args)
                elif kind == "calls":
                    tasks.start_soon(self._serve, worker, host, call_id, name, args, send_lock)
            if kind == "done":
                host.close()
                return message
            if kind != "calls":
                raise WorkerLostError(f"the worker sent an unexpected message {kind!r}")
            if host.over_budget:
                raise WorkerLostError("over budget")

    async def _serve(
        self, worker: Worker, host: RunHost, call_id: int, name: str, args: list[Any], send_lock: Any
    ) -> None:
        outcome, value = await host.perform(name, args)
        if not host.open:
            return
        if host.over_budget:
            worker.kill()
            return
        async with send_lock:
            try:
                await worker.send({"t": "settle", "id": call_id, "ok": outcome, "value": value})
            except WorkerLostError:
                return

    # ---------------------------------------------------------------------------------------------------- outcomes

    def _outcome(self, reply: dict[str, Any], source: JsSource, host: RunHost) -> JsRunResult:
        output = _console(reply.get("console"))
        error = reply.get("error")
        if isinstance(error, dict):
            raise self._failure(error, source, output)
        result = reply.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("type"), str):
            raise JsSandboxError("the sandbox returned no result", kind=JsFailure.RESULT, file=source.file)
        kind = result["type"]
        text = result.get("json")
        if kind == "undefined" or not isinstance(text, str):
            return JsRunResult(
                value=None, type="undefined", json=None, output=output, logs=host.logs, cost_lines=host.cost_lines
            )
        if len(text) > self.options.max_result_chars:
            raise JsSandboxError(
                f"result limit: the result is {len(text)} characters of JSON, more than the limit of "
                f"{self.options.max_result_chars}",
                kind=JsFailure.RESULT,
                file=source.file,
                output=output,
            )
        if _depth(text) > self.options.max_result_depth:
            raise JsSandboxError(
                f"result limit: the result nests deeper than {self.options.max_result_depth} levels",
                kind=JsFailure.RESULT,
                file=source.file,
                output=output,
            )
        try:
            value = _DECODER.decode(text)
        except msgspec.DecodeError:
            raise JsSandboxError(
                "result limit: the result is not valid JSON", kind=JsFailure.RESULT, file=source.file, output=output
            ) from None
        return JsRunResult(value=value, type=kind, json=text, output=output, logs=host.logs, cost_lines=host.cost_lines)

    def _failure(self, error: dict[str, Any], source: JsSource, output: str) -> JsSandboxError:
        options = self.options
        kind = error.get("kind")
        file = source.file
        if kind == JsFailure.FUEL:
            return JsSandboxError(
                f"fuel limit: the script spent its {options.fuel:,} steps (about {options.cpu_seconds:g} s of CPU)",
                kind=JsFailure.FUEL,
                file=file,
                output=output,
            )
        if kind == JsFailure.MEMORY:
            return JsSandboxError(
                f"memory limit: the script allocated more than the {options.max_allocated_bytes} bytes it may use",
                kind=JsFailure.MEMORY,
                file=file,
                output=output,
            )
        if kind == JsFailure.TIME:
            return JsSandboxError(
                "time limit: the script ran past its time limit", kind=JsFailure.TIME, file=file, output=output
            )
        if kind == JsFailure.RESULT:
            return JsSandboxError(
                f"result limit: {error.get('message', '')}", kind=JsFailure.RESULT, file=file, output=output
            )
        name = error.get("name")
        name = name if isinstance(name, str) else ""
        message = error.get("message")
        message = message if isinstance(message, str) else ""
        length = error.get("messageLength")
        length = length if isinstance(length, int) else len(message)
        message = cap_message(message, JsSandboxError.MAX_MESSAGE_CHARS)
        if length > len(message):
            message += f" [... {length - len(message)} characters left out]"
        if name:
            head = f"{name}: {message}" if message else name
        elif error.get("isError") is False:
            head = f"Uncaught {message}"
        else:
            head = message
        line = column = None
        for frame in error.get("frames") or ():
            if isinstance(frame, list) and len(frame) == 3 and isinstance(frame[1], int):
                line, column = frame[1], frame[2] if isinstance(frame[2], int) else None
                break
        report = head
        if line is not None:
            report += f"\n    at {file}:{line}" + (f":{column}" if column is not None else "")
            excerpt = source.excerpt(line, column)
            if excerpt:
                report += "\n" + excerpt
        failure = JsFailure.SYNTAX if kind == JsFailure.SYNTAX else JsFailure.SCRIPT
        return JsSandboxError(report, kind=failure, file=file, line=line, column=column, output=output)


class _Watch:
    __slots__ = ("over_budget", "over_memory")

    def __init__(self) -> None:
        self.over_memory = False
        self.over_budget = False
