"""What the command writes where: results on standard output, everything about the run on standard error.

Standard error carries the tool-call lines (hidden by `--quiet`), a line per model turn (a progress line redrawn in
place when standard error is a terminal, plain lines when it is not), approval prompts, and last of all one line with
the instance id, its state, its turns and its cost in US dollars at six places, halves rounded away from zero.

The reporter learns what a flow, a decider or a chat does from the run's records (`EventRecordSink`); what an agent
does from the events of the run the command drives (`AgentRun.events()`), which are the main run's alone.
"""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from onellm.agents import AgentEvent
    from onellm.deciders import DecisionCall
    from onellm.instances import Instance
    from onellm.records import Record

__all__ = [
    "Reporter",
    "clip",
    "decider_calls",
    "instance_cost",
    "instance_turns",
    "money",
    "safe_text",
    "show_json",
]

_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_LINE_LIMIT = 200
_ENCODER: Any = None


def money(amount: Decimal | None) -> str:
    """Dollars at six places, halves rounded away from zero: `$0.000001` for 0.0000005."""
    value = amount if amount is not None else Decimal(0)
    rounded = value.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)
    if rounded.is_zero():
        rounded = abs(rounded)
    sign = "-" if rounded < 0 else ""
    return f"{sign}${abs(rounded):f}"


def safe_text(text: str) -> str:
    """`text` with control and format characters (escape sequences, bidirectional overrides) shown as `\\uXXXX`, so
    nothing a model or a file wrote can move the cursor, recolour the terminal or reorder what a person reads."""
    if text.isprintable():
        return text
    out: list[str] = []
    for ch in text:
        if ch == "\n" or ch == "\t" or unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"):
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return "".join(out)


def clip(text: str, limit: int = _LINE_LIMIT) -> str:
    """`text` on one line, cut to `limit` characters with `…` when longer."""
    flat = safe_text(text).replace("\n", "\\n").replace("\t", " ")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def show_json(value: Any, *, indent: int | None = None) -> str:
    """`value` as JSON text: decimals as numbers, keys in their order, non-ASCII letters as they are."""
    import msgspec

    global _ENCODER
    if _ENCODER is None:
        _ENCODER = msgspec.json.Encoder(decimal_format="number")
    data = _ENCODER.encode(value)
    if indent is not None:
        data = msgspec.json.format(data, indent=indent)
    text: str = data.decode("utf-8")
    return text


def decider_calls(instance: Instance) -> list[DecisionCall]:
    """The engine calls of a decider run (its `decider.calls`); empty for any other instance. An entry that cannot
    be read is left out."""
    extension = instance.extra.get("decider")
    if not isinstance(extension, dict):
        return []
    from onellm.deciders import DecisionCall
    from onellm.errors import OnellmError

    calls: list[DecisionCall] = []
    for entry in extension.get("calls") or ():
        if isinstance(entry, dict):
            try:
                calls.append(DecisionCall.from_data(entry))
            except (OnellmError, TypeError, ValueError, ArithmeticError):
                continue
    return calls


def instance_turns(instance: Instance) -> int:
    """Model turns in an instance: messages with an answer or tool calls that did not come from the runtime, and a
    decider run's engine calls."""
    count = 0
    for message in instance.messages:
        source = message.source.kind if message.source is not None else None
        if (message.assistant or message.tool_calls or message.usage is not None) and source != "runtime":
            count += 1
    return count + len(decider_calls(instance))


def instance_cost(instance: Instance) -> Decimal:
    """What an instance spent: every model call's priced usage, every tool call's cost and a decider run's engine
    calls, exact."""
    total = Decimal(0)
    for message in instance.messages:
        if message.usage is not None and message.usage.cost is not None:
            total += message.usage.cost
        for call in message.tool_calls:
            if call.cost is not None:
                total += call.cost
    for engine_call in decider_calls(instance):
        if engine_call.cost is not None:
            total += engine_call.cost
    return total


class Reporter:
    """Standard error for one command: tool and turn lines, a live progress line on a terminal, and the last line.

    Args:
        quiet: Hide tool-call and turn lines (the last line and prompts still show).
        stream: Where to write (standard error).
        tty: Whether `stream` is a terminal; read from the stream when None.
    """

    def __init__(self, *, quiet: bool = False, stream: IO[str] | None = None, tty: bool | None = None) -> None:
        self.stream: IO[str] = stream if stream is not None else sys.stderr
        self.quiet = quiet
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty()) if callable(isatty) else False
        self.tty = tty
        self.turns = 0
        self.unit = "turn"
        """What one model call is called in the turn lines: a `turn`, or a decider's `call`."""
        self.cost = Decimal(0)
        self.instance_id: str | None = None
        self.following = False
        """True while an agent run's events are reported: its records then only name the instance."""
        self._inputs: dict[str | None, Any] = {}
        self._status = ""
        self._frame = 0
        self._drawn = False

    # ------------------------------------------------------------------------------------------------- plain lines
    def line(self, text: str) -> None:
        """A line that stays (the progress line, if any, is cleared first and drawn again below it)."""
        self._clear()
        self.stream.write(text + "\n")
        self.stream.flush()
        self._draw()

    def prompt(self, text: str) -> None:
        """A question left open on its line for the answer (the progress line is cleared and not redrawn)."""
        self._clear()
        self.stream.write(text)
        self.stream.flush()

    def finish(self, text: str) -> None:
        """The last line of the command."""
        self._clear()
        self._status = ""
        self.stream.write(text + "\n")
        self.stream.flush()

    # ---------------------------------------------------------------------------------------------- progress line
    def status(self, text: str) -> None:
        """What the run is doing now: redrawn in place on a terminal; nothing when not (turn lines say it there)."""
        self._status = text
        self._draw()

    def tick(self) -> None:
        """Advance the spinner (called a few times a second while a run is in progress)."""
        self._frame += 1
        self._draw()

    def _draw(self) -> None:
        if not self.tty or not self._status:
            return
        frame = _SPINNER[self._frame % len(_SPINNER)]
        self.stream.write(f"\r{frame} {clip(self._status, 150)}\x1b[K")
        self.stream.flush()
        self._drawn = True

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self._drawn = False

    def started(self, instance_id: str, model: str | None) -> None:
        """The command's run has an instance: its line (`instance <id> started on <model>`) and the progress line."""
        self.instance_id = instance_id
        where = f" on {model}" if model else ""
        if not self.quiet:
            self.line(f"instance {instance_id} started{where}")
        self.status(f"instance {instance_id}{where}")

    # -------------------------------------------------------------------------------------------------- records
    def on_record(self, record: Record) -> None:
        """Report one record of the run (an `EventRecordSink` handler)."""
        from onellm.records import ApprovalRecord, InferenceRecord, RunRecord, ToolCallRecord

        if isinstance(record, RunRecord):
            if record.event == "started" and record.instance_id is not None and self.instance_id is None:
                self.started(record.instance_id, record.model)
        elif self.following:
            return  # the run's events say the rest
        elif isinstance(record, InferenceRecord):
            self.turns += 1
            usage = record.usage
            cost = usage.cost if usage is not None else None
            if cost is not None:
                self.cost += cost
            tokens = ""
            if usage is not None:
                tokens = f", {usage.total_input_tokens} in / {usage.output_tokens} out"
            text = f"{self.unit} {self.turns}{tokens}, {money(cost) if cost is not None else 'not priced'}"
            if self.tty:
                self.status(f"{text} (total {money(self.cost)})")
            elif not self.quiet:
                self.line(text)
        elif isinstance(record, ToolCallRecord) and record.call is not None:
            call = record.call
            if call.cost is not None:
                self.cost += call.cost
            if not self.quiet:
                self.line(tool_line(call.tool, call.inputs, call.result, call.is_error, call.invalid_inputs))
        elif isinstance(record, ApprovalRecord) and not self.quiet:
            decision = getattr(record, "decision", None) or "requested"
            self.line(f"approval {decision}: {record.tool or 'tool'} ({record.tool_call_id or '?'})")

    # --------------------------------------------------------------------------------------------------- events
    def on_event(self, event: AgentEvent) -> None:
        """Report one event of the agent run the command drives (`AgentRun.events()`)."""
        from onellm.agents import CostIncurred, ToolCallEnded, ToolCallStarted, TurnEnded, TurnStarted

        if isinstance(event, ToolCallStarted):
            self._inputs[event.call_id] = event.inputs
            if self.tty:
                self.status(f"running {event.tool} (total {money(self.cost)})")
        elif isinstance(event, ToolCallEnded):
            inputs = self._inputs.pop(event.call_id, None)
            if not self.quiet:
                self.line(tool_line(event.tool, inputs, event.result, event.is_error, None))
        elif isinstance(event, TurnStarted):
            if self.tty:
                self.status(f"turn {self.turns + 1}: waiting for the model (total {money(self.cost)})")
        elif isinstance(event, TurnEnded):
            self.turns += 1
            usage = event.usage
            tokens = f", {usage.total_input_tokens} in / {usage.output_tokens} out" if usage is not None else ""
            priced = money(event.cost.total) if event.cost.priced else "not priced"
            text = f"turn {self.turns}{tokens}, {priced}"
            if self.tty:
                self.status(f"{text} (total {money(self.cost)})")
            elif not self.quiet:
                self.line(text)
        elif isinstance(event, CostIncurred):
            self.cost = event.total

    def denied(self, tool: str, inputs: Any) -> None:
        """A held call the person denied (the model reads the denial as the call's result)."""
        if not self.quiet:
            self.line(f"denied {safe_text(tool)} {safe_text(show_json(inputs if inputs is not None else {}))}")


def tool_line(name: str, inputs: Any, result: Iterable[Any] | None, is_error: bool, invalid: str | None) -> str:
    """One tool call as a line: `tool name {inputs} -> what came back` (clipped)."""
    shown = invalid if invalid is not None else show_json(inputs or {})
    outcome = ""
    if result is not None:
        text = _result_text(result)
        outcome = (" -> error: " if is_error else " -> ") + clip(text, 80)
    return f"tool {clip(name, 60)} {clip(shown, 120)}{outcome}"


def _result_text(parts: Iterable[Any]) -> str:
    from onellm.messages import JsonPart

    pieces: list[str] = []
    for part in parts:
        text = getattr(part, "text", None)
        if isinstance(text, str):
            pieces.append(text)
            continue
        if isinstance(part, JsonPart):  # a tool's JSON result: the value itself
            pieces.append(show_json(part.json))
            continue
        to_data = getattr(part, "to_data", None)
        pieces.append(show_json(to_data()) if callable(to_data) else str(part))
    return " ".join(pieces) if pieces else "(empty)"
