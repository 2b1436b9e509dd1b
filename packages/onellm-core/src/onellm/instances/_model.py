"""The instance model and its file format (`spec/instances.md`).

An instance file is an agent definition (as it was when the run started) plus the run's own keys, with `messages`
last. `Instance.loads` reads any valid instance file; `dumps` returns the loaded text byte for byte while nothing
changed, and otherwise writes the canonical layout: header keys in the spec's order, unknown keys after them, then
`pendingApprovals`, `compactions` and `messages`, one block per message.

**Reading fast.** A file in the canonical layout is cut into header and message blocks by text (`_layout`), and each
piece is read by the fast reader for onellm's own YAML shape (`onellm.yamlio.parse_entries`), or by the guarded C
loader when it declines. Any other file (another key after the messages, flow style, carriage returns, ...) is read
whole by the general loader, and a file with an error is walked once more on the C parser's events to give the error
its line and column.

**Saving cheaply.** The instance remembers the text of every message it read or wrote, keyed by the message object.
A save writes the header again (or reuses its text when it did not change: a `marshal` dump of its values tells,
containers edited in place included) and reuses the text of every message it has seen; the leading messages the last
save wrote, still in their places, are taken over in one piece without being looked at one by one. So appending a turn
to a long conversation costs the new turn plus the file write. This relies on the rule of the format that messages
are immutable once appended: to change a message, put a new `Message` object in its place (for example
`msgspec.structs.replace(old, ...)`), do not edit the old one in place.
"""

from __future__ import annotations

import errno
import functools
import gc
import itertools
import marshal
import operator
import os
import pickle
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from onellm import yamlio
from onellm._describe import find_unplain, format_path, type_name
from onellm._files import read_regular, storage_error, write_atomic
from onellm.errors import BadDefinitionError, UnwritableValueError
from onellm.instances import _layout
from onellm.instances._ids import is_valid_instance_id, new_instance_id, validate_instance_id
from onellm.instances._parts import (
    AskUser,
    Compaction,
    ForkOrigin,
    InstanceFailure,
    PendingApproval,
    bad,
    opt_bool,
    opt_int,
    opt_list,
    opt_number,
    opt_str,
    opt_timestamp,
    plain_copy,
)
from onellm.instances._write import message_lines, usage_lines
from onellm.messages import CostLine, Message, TextPart, Timestamp, ToolCall, Usage
from onellm.messages.memo import memo_for, snapshot

if TYPE_CHECKING:
    from onellm.definitions import Definition

__all__ = ["HEADER_KEYS", "Instance", "InstanceState", "read_header"]


class InstanceState(StrEnum):
    """The lifecycle states onellm writes. `Instance.state` is a plain string: other values load and save unchanged."""

    RUNNING = "running"
    """A run is in progress."""
    WAITING = "waiting"
    """The agent finished its turn and waits for input."""
    WAITING_FOR_APPROVAL = "waiting_for_approval"
    """A tool call needs a person's decision; see `pending_approvals`."""
    STOPPED = "stopped"
    """The run ended; a new message continues the instance."""
    ERROR = "error"
    """The run failed; see `error`."""


_STATES = {s.value: s for s in InstanceState}


def _opt_mapping(value: Any, path: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return dict(value)
    raise bad(path, f"expected a mapping, found {type_name(value)}")


def _opt_strategy(value: Any, path: str) -> str | dict[str, Any] | None:
    if value is None or type(value) is str:
        return value
    if isinstance(value, Mapping):
        return dict(value)
    raise bad(path, f"expected a strategy name or a mapping, found {type_name(value)}")


def _opt_instance_id(value: Any, path: str) -> str | None:
    text = opt_str(value, path)
    if text is not None and not is_valid_instance_id(text):
        raise bad(path, f"{text!r} is not a valid instance id (1 to 128 ASCII letters, digits, '-' and '_')")
    return text


# The simple header keys, in the order onellm writes them: (file key, attribute, reader).
_SIMPLE: tuple[tuple[str, str, Callable[[Any, str], Any]], ...] = (
    ("instanceId", "id", _opt_instance_id),
    ("agentDefinition", "agent_definition", opt_str),
    # The agent definition, as it was when the run started (`spec/definitions.md`).
    ("name", "name", opt_str),
    ("description", "description", opt_str),
    ("model", "model", opt_str),
    ("serviceTier", "service_tier", opt_str),
    ("thinking", "thinking", _opt_mapping),
    ("temperature", "temperature", opt_number),
    ("maxIterations", "max_iterations", opt_int),
    ("maxTokens", "max_tokens", opt_int),
    ("systemPrompt", "system_prompt", opt_str),
    ("references", "references", opt_list),
    ("workingDirectory", "working_directory", opt_str),
    ("initialPrompts", "initial_prompts", opt_list),
    ("inputs", "inputs", _opt_mapping),
    ("headers", "headers", _opt_mapping),
    ("invocationMode", "invocation_mode", opt_str),
    ("llmTurnLogs", "llm_turn_logs", opt_bool),
    ("missingKey", "missing_key", opt_str),
    ("hooks", "hooks", opt_list),
    ("contextStrategy", "context_strategy", _opt_strategy),
    # The run.
    ("requestedModel", "requested_model", opt_str),
    ("maxImageSize", "max_image_size", opt_int),
    ("state", "state", opt_str),
    ("callerInstanceId", "caller_instance_id", opt_str),
    ("spawnerInstanceId", "spawner_instance_id", opt_str),
    ("callerToolCallId", "caller_tool_call_id", opt_str),
    ("delegationPrompt", "delegation_prompt", opt_str),
    ("runStartedAt", "run_started_at", opt_timestamp),
    ("metadata", "metadata", _opt_mapping),
    # Keys the agent loop adds (unknown keys to other readers).
    ("error", "error", lambda v, p: None if v is None else InstanceFailure.from_data(v, p)),
    ("cancelled", "cancelled", opt_bool),
    ("capabilities", "capabilities", _opt_mapping),
    ("capabilitiesRecorded", "capabilities_recorded", opt_bool),
    ("askUser", "ask_user", lambda v, p: None if v is None else AskUser.from_data(v, p)),
    ("forkedFrom", "forked_from", lambda v, p: None if v is None else ForkOrigin.from_data(v, p)),
)
_SIMPLE_BY_KEY = {key: (attr, read) for key, attr, read in _SIMPLE}
# The agent definition's keys (`spec/definitions.md`), as they sit in `_SIMPLE`.
_DEFINITION_KEYS = tuple(key for key, _, _ in _SIMPLE[2:21])
_LISTS = ("pendingApprovals", "compactions", "messages")
HEADER_KEYS: tuple[str, ...] = (*(key for key, _, _ in _SIMPLE), *_LISTS)
"""Every key the format defines, in the order onellm writes them (unknown keys go before `pendingApprovals`)."""

# The header's values but two (`run_started_at` and `temperature`, which `_signature` takes apart), for `_signature`.
_TAKEN_APART = ("run_started_at", "temperature")
_HEADER_VALUES = operator.attrgetter(
    *(attr for _, attr, _ in _SIMPLE if attr not in _TAKEN_APART),
    "extra",
    "pending_approvals",
    "compactions",
)
# The header key each value of `_signature` belongs to: those of `_HEADER_VALUES` (None for `extra`, any key), then
# the values after them.
_VALUE_KEYS: tuple[str | None, ...] = (
    *(key for key, attr, _ in _SIMPLE if attr not in _TAKEN_APART),
    None,
    "pendingApprovals",
    "compactions",
)
_FLAT = frozenset({str, bool, int, type(None)})
"""Types compared with `==` alone by `Instance._changed_keys` (a float also needs its sign and digits)."""
_TAIL_KEYS = ("runStartedAt", "runStartedAt", "temperature", "temperature", "pendingApprovals", "compactions")


def _written_alike(a: Any, b: Any) -> bool:
    """True when two plain values are written as the same text: equal values of the same types (`1`, `True` and `1.0`
    differ), keys in the same order, decimals and floats with the same digits (`1.0` and `1.00` differ, as do `0.0`
    and `-0.0`)."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return len(a) == len(b) and all(
            _written_alike(ka, kb) and _written_alike(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if kind is list or kind is tuple:
        return len(a) == len(b) and all(_written_alike(x, y) for x, y in zip(a, b, strict=True))
    if kind is Decimal or kind is float:
        return str(a) == str(b)
    return bool(a == b)


def _copy(value: Any) -> Any:
    """`plain_copy(value)`, made in C by marshal when it takes the value (exact built-in types only, so a subclass is
    still made plain by `plain_copy`)."""
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:
        return plain_copy(value)


_KEPT: dict[bytes, Any] = {}
"""Copies of lists and mappings in the headers saves remember, by their marshal dump: every instance whose value dumps
alike shares one (a remembered header is only read, never changed)."""
_KEPT_MAX = 500


def _kept_copy(value: Any) -> Any:
    """`_copy(value)`, or the copy a remembered header already holds of an equal value."""
    try:
        dump = marshal.dumps(value)
    except ValueError:
        return plain_copy(value)
    found = _KEPT.get(dump)
    if found is None:
        found = marshal.loads(dump)
        if len(_KEPT) < _KEPT_MAX and len(dump) <= _ENTRY_BYTES:
            _KEPT[dump] = found
    return found


def _data_of(value: Any, copy: Callable[[Any], Any] = _copy) -> Any:
    if value is None or isinstance(value, str | bool | int | Decimal | float):
        return value
    if isinstance(value, Timestamp):
        return value.text
    if isinstance(value, InstanceFailure | AskUser | ForkOrigin):
        return value.to_data()
    return copy(value)


_ENTRIES: dict[tuple[str, bytes], str] = {}
"""The text of header entries holding a list or a mapping, by key and the value's marshal dump (equal dumps are equal
values of equal types): every run of a definition writes the same references, initial prompts and capabilities."""
_ENTRIES_KEPT = 500
_ENTRY_BYTES = 4096
"""Values whose dump is longer than this are written each time, not kept."""


def _entry_text(key: str, value: Any) -> str:
    """The text of the header entry `key: value`, as `yamlio.emit_entries` writes it."""
    kind = type(value)
    if kind is dict or kind is list:
        try:
            dump: bytes | None = marshal.dumps(value)
        except ValueError:
            dump = None
        if dump is not None:
            found = _ENTRIES.get((key, dump))
            if found is None:
                found = yamlio.emit_entry(key, value)
                if len(_ENTRIES) < _ENTRIES_KEPT and len(dump) <= _ENTRY_BYTES:
                    _ENTRIES[(key, dump)] = found
            return found
    return yamlio.emit_entry(key, value)


@dataclass(slots=True)
class _Source:
    """What the instance text looked like when it was last read or written: its pieces (joined when asked for)."""

    parts: tuple[str, ...]
    header: dict[str, Any]
    messages: tuple[Message, ...]
    header_text: str | None = None
    entries: tuple[str, ...] | None = None
    """The text of each key of `header`, in its order, when `header_text` was written from it (they join to it); None
    for text as it was read."""
    signature: bytes | None = None
    """`Instance._signature()` when `header` was taken: equal bytes mean an equal header."""
    values: tuple[Any, ...] | None = None
    """The values `signature` was made of (`Instance._signature_values()`), as they were: those of a type that cannot
    change in place still hold what was written (lists and mappings may have changed since: `header` holds copies)."""
    extended: bool = True
    """`extra` held keys when `header` was taken."""
    messages_line: str | None = None
    prefix: str = ""
    indent: int = 0
    body: int = 0
    """Where the message blocks start in `parts` (when `ends` is set)."""
    ends: tuple[int, ...] | None = None
    """For each message, where its block ends in `parts`, counted from `body` (a separating newline after it is not
    counted); None when `parts` was not written block by block (text as it was read)."""


_HEADER_ATTRS: tuple[str, ...] = (
    *(attr for _, attr, _ in _SIMPLE if attr not in _TAKEN_APART),
    "extra",
    "pending_approvals",
    "compactions",
)
"""The attributes `_HEADER_VALUES` takes, in its order."""
_HEADER_ITEMS = operator.itemgetter(*_HEADER_ATTRS)
"""`_HEADER_VALUES` read from an `Instance`'s own `__dict__`, where its dataclass `__init__` puts every field: a
mapping lookup for each, not an attribute lookup through the class."""

_PLAIN_LEAVES = frozenset({str, int, float, bool, type(None), Decimal})
_LOOK_AT_MOST = 100_000
"""Containers `_plain` looks into before it gives up (a save of more writes its text at once, which finds a loop)."""


def _plain(values: list[Any]) -> bool:
    """True when each of `values` (lists, tuples and mappings) holds plain data the file writer takes (text, numbers,
    booleans, null, lists and mappings of them), each of its exact type. False says only that this quick look cannot
    vouch for them (a subclass, an object of another type, a value that holds itself). `values` is used up."""
    budget = _LOOK_AT_MOST
    pop, push, leaves = values.pop, values.append, _PLAIN_LEAVES
    while values:
        budget -= 1
        if budget < 0:
            return False
        value = pop()
        kind = type(value)
        if kind is dict:
            for key in value:
                if type(key) not in leaves:
                    return False
            items = value.values()
        elif kind is list or kind is tuple:
            items = value
        else:
            return False
        # Only what holds more is looked at later: most values are text or numbers.
        for item in items:
            if type(item) not in leaves:
                push(item)
    return True


def _scalar(annotation: Any) -> bool:
    """True for a field type that is text, a number, a boolean or null (or a union of them)."""
    args = typing.get_args(annotation)
    if args and typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return all(_scalar(arg) for arg in args)
    return annotation in _PLAIN_LEAVES


def _fields_to_check(cls: type[Any]) -> tuple[Callable[[Any], tuple[Any, ...]] | None, tuple[bool, ...]]:
    """The fields of a message model class that may hold more than a scalar (its `Any` fields, its lists, other
    model objects, a timestamp or a date), as a getter of their values, and for each whether it holds any plain data
    (`Any`) rather than typed values."""
    found = [(f.name, "Any" in repr(f.type)) for f in msgspec.structs.fields(cls) if not _scalar(f.type)]
    if not found:
        return None, ()
    names = tuple(name for name, _ in found)
    getter = operator.attrgetter(*names)
    return (getter if len(names) > 1 else lambda obj: (getter(obj),)), tuple(free for _, free in found)


def _model_classes(annotation: Any) -> list[type[Any]]:
    """The message model classes a field type names, within unions and lists."""
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return [annotation]
    return [cls for arg in typing.get_args(annotation) for cls in _model_classes(arg)]


def _model_fields() -> dict[type[Any], tuple[Callable[[Any], tuple[Any, ...]] | None, tuple[bool, ...]]]:
    """`_fields_to_check` of every class a message can hold, found from `Message`'s own fields down."""
    found: dict[type[Any], tuple[Callable[[Any], tuple[Any, ...]] | None, tuple[bool, ...]]] = {}
    todo: list[type[Any]] = [Message]
    while todo:
        cls = todo.pop()
        if cls not in found:
            found[cls] = _fields_to_check(cls)
            todo.extend(inner for f in msgspec.structs.fields(cls) for inner in _model_classes(f.type))
    return found


_MODEL_FIELDS = _model_fields()
"""The message model's classes (not subclasses of them, whose fields may be anything), with the fields to look at."""
_TYPED_LEAVES = frozenset({Timestamp, date})


def _writable(message: Message) -> bool:
    """`_plain` for a message: the fields its model declares as scalars are taken at their word; the others hold what
    the model declares (a timestamp, a date, model objects, lists of them), its `Any` fields and mappings plain
    data."""
    if type(message) is not Message:
        return False
    # What every turn holds is looked at directly (its parts, its calls and their results, its usage and cost lines:
    # a text part or a cost line with nothing more in it is passed over at once, and so are a call's arguments when
    # they map text to scalars); any other model object by the fields of its class. Every message saved is looked at
    # once, so each step here is paid once per turn (plain loops: `extend` over a generator costs more).
    models: list[Any] = []
    data: list[Any] = []
    if message.extra:
        data.append(message.extra)
    parts: list[Any] | None = message.user
    if parts:
        for part in parts:
            if type(part) is not TextPart or part.extra or part.annotations:
                models.append(part)  # noqa: PERF401
    parts = message.assistant
    if parts:
        for part in parts:
            if type(part) is not TextPart or part.extra or part.annotations:
                models.append(part)  # noqa: PERF401
    for call in message.tool_calls:
        if type(call) is not ToolCall:
            return False
        inputs = call.inputs
        if inputs:
            if type(inputs) is dict:
                for key, value in inputs.items():
                    if type(key) is not str or type(value) not in _PLAIN_LEAVES:
                        data.append(inputs)  # `_plain` looks at it whole
                        break
            else:
                data.append(inputs)
        if call.extra:
            data.append(call.extra)
        parts = call.result
        if parts:
            for part in parts:
                if type(part) is not TextPart or part.extra or part.annotations:
                    models.append(part)  # noqa: PERF401
        if call.cost_lines:
            for line in call.cost_lines:
                if type(line) is not CostLine or line.extra or type(line.as_of) not in _DATE_OR_NONE:
                    models.append(line)  # noqa: PERF401
    usage = message.usage
    if usage is not None:
        if type(usage) is not Usage:
            return False
        if usage.extra:
            data.append(usage.extra)
        if usage.counters:
            data.append(usage.counters)
        for line in usage.cost_lines:
            if type(line) is not CostLine or line.extra or type(line.as_of) not in _DATE_OR_NONE:
                models.append(line)  # noqa: PERF401
    if message.source is not None:
        models.append(message.source)
    if message.date_time is not None and type(message.date_time) is not Timestamp:
        return False
    if models and not _models_writable(models, data):
        return False
    return not data or _plain(data)


_DATE_OR_NONE = frozenset({date, type(None)})


def _models_writable(models: list[Any], data: list[Any]) -> bool:
    """The rest of `_writable`: each model object of `models` (used up) by the fields of its class, adding to `data`
    the plain data they hold. False for an object that is not of a message model class, or holds a value of a type its
    field does not declare."""
    keep, push, extend, pop = data.append, models.append, models.extend, models.pop
    plans = _MODEL_FIELDS
    while models:
        obj = pop()
        kind = type(obj)
        if kind is TextPart:
            if obj.extra:
                keep(obj.extra)
            if obj.annotations:
                extend(obj.annotations)
            continue
        if kind is CostLine:
            if obj.extra:
                keep(obj.extra)
            if type(obj.as_of) not in _DATE_OR_NONE:
                return False
            continue
        plan = plans.get(kind)
        if plan is None:
            return False  # not a model object, or a subclass of one
        getter, flags = plan
        if getter is None:
            continue
        for item, free in zip(getter(obj), flags):  # noqa: B905  # made of one list of fields
            if not item:
                continue  # None, or an empty list or mapping
            kind = type(item)
            if kind in _PLAIN_LEAVES:
                continue
            if free or kind is dict:
                keep(item)
            elif kind is list:
                extend(item)  # model objects, each looked at in turn
            elif kind not in _TYPED_LEAVES:
                push(item)
    return True


_NO_LISTS: frozenset[str] = frozenset()


@dataclass(slots=True, eq=False)
class Frozen:
    """An instance as one save found it, kept without writing its text (`Instance._freeze`): the text is written when
    first asked for (`thaw().dumps()`), and is the text a save would have written then.

    The header is kept as its `marshal` dump (a copy of every value, containers included, that nothing can change);
    the messages as the objects themselves, which are immutable once appended, but for those that may still be
    completed in place (an open prompt, a tool call without its result): each is kept as a copy (`_open_copy`) that
    completing the message does not reach, or failing that as its text, written at once."""

    signature: bytes
    messages: tuple[Message, ...]
    written: dict[int, tuple[Message, str]]
    """The text of each message that may still be completed in place and could not be copied, by the object's id, as
    it was when saved."""
    copies: tuple[tuple[int, Message], ...]
    """Each message that may still be completed in place, as a copy made when saved, with its place in `messages`."""
    open_at: tuple[int, ...]
    """Where the messages that may still be completed in place are in `messages`."""
    empty_lists: frozenset[str]

    def thaw(self) -> Instance:
        """A new instance holding what was saved, whose `dumps()` is the text of the save."""
        values = marshal.loads(self.signature[1:])
        header, started, is_timestamp, temperature, is_decimal, _, _ = values
        inst = Instance(**dict(zip(_HEADER_ATTRS, header, strict=True)))
        inst.run_started_at = Timestamp(started) if is_timestamp else started
        inst.temperature = Decimal(temperature) if is_decimal else temperature
        messages = inst.messages = list(self.messages)
        for index, copy in self.copies:
            messages[index] = copy
        inst._blocks = dict(self.written)
        inst._empty_lists = set(self.empty_lists)
        return inst


@dataclass(kw_only=True, eq=True, repr=False)
class Instance:
    """One run of a definition and everything it has said and done (`spec/instances.md`).

    Every key of the format is an attribute in snake_case; keys onellm does not know are kept in `extra` and written
    back. A key holding null and an absent key are the same (None here).
    """

    id: str | None = None
    """The instance id (`instanceId`): 1 to 128 ASCII letters, digits, `-` and `_`. It names the file."""
    agent_definition: str | None = None
    """Path or URI of the definition the run started from."""
    name: str | None = None
    """The definition's display name."""
    description: str | None = None
    """The definition's one-line description."""
    model: str | None = None
    """The resolved model name (see `requested_model` for the name first asked for)."""
    service_tier: str | None = None
    """The service tier requested."""
    thinking: dict[str, Any] | None = None
    """Request-side reasoning controls: `effort` and/or `budget`."""
    temperature: int | Decimal | float | None = None
    """Sampling temperature."""
    max_iterations: int | None = None
    """The most model turns one run may take (the loop's default is 200)."""
    max_tokens: int | None = None
    """The most output tokens per turn."""
    system_prompt: str | None = None
    """The system prompt template."""
    references: list[Any] | None = None
    """Tool sources, as plain data (`spec/definitions.md`, `references`)."""
    working_directory: str | None = None
    """The working directory template."""
    initial_prompts: list[Any] | None = None
    """The messages that open every run, as plain data in the message format."""
    inputs: dict[str, Any] | None = None
    """Input values."""
    headers: dict[str, Any] | None = None
    """Extra HTTP headers for HTTP tool sources."""
    invocation_mode: str | None = None
    """`interactive`, `delegated` or `autonomous`."""
    llm_turn_logs: bool | None = None
    """Keep raw request and response logs for each turn."""
    missing_key: str | None = None
    """`default` or `error`: what a template does with a key it cannot find."""
    hooks: list[Any] | None = None
    """Hook files, as plain data."""
    context_strategy: str | dict[str, Any] | None = None
    """The context strategy: a type name or `{type, triggerTokens | triggerPercent, keepLast}`."""
    requested_model: str | None = None
    """The model as first requested, before alias resolution."""
    max_image_size: int | None = None
    """The longest image edge in pixels the instance sends. Only ever tightened."""
    state: str | None = None
    """The lifecycle state, a string; see `InstanceState` and `effective_state`."""
    caller_instance_id: str | None = None
    """The instance that last messaged this one."""
    spawner_instance_id: str | None = None
    """The instance that started this one. Set once."""
    caller_tool_call_id: str | None = None
    """The tool call of the caller that started this instance."""
    delegation_prompt: str | None = None
    """The prompt a calling agent gave when it started this instance."""
    run_started_at: Timestamp | None = None
    """When the current run started."""
    metadata: dict[str, Any] | None = None
    """`renderedSystemPrompt` and any other metadata keys (kept)."""
    error: InstanceFailure | None = None
    """The failure that put the instance in error."""
    cancelled: bool | None = None
    """True when the latest run was cancelled."""
    capabilities: dict[str, Any] | None = None
    """The grants the run started with, as plain data (`readRoots`, `writeRoots`, `shell`, `network`, `tools`, ...)."""
    capabilities_recorded: bool | None = None
    """The marker written with `capabilities`."""
    ask_user: AskUser | None = None
    """An `ask_user` call that has no answer yet."""
    forked_from: ForkOrigin | None = None
    """Where this instance was forked from."""
    pending_approvals: list[PendingApproval] = field(default_factory=list)
    """Tool calls waiting for a decision."""
    compactions: list[Compaction] = field(default_factory=list)
    """Records of context compaction."""
    messages: list[Message] = field(default_factory=list)
    """The conversation. Messages are immutable once appended: replace one with a new object to change it."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Top-level keys this version does not know, in the order read, written back unchanged."""

    # A list written empty stays written as an empty list; one that was absent stays absent.
    _empty_lists: set[str] = field(default_factory=set, init=False, repr=False, compare=False)
    _source: _Source | None = field(default=None, init=False, repr=False, compare=False)
    _blocks: dict[int, tuple[Message, str]] = field(default_factory=dict, init=False, repr=False, compare=False)
    # Messages that may still be completed in place (no answer yet, or a tool call without its result), each with a
    # snapshot of what it held when its text was read or written: that text is used again only while it still does.
    _open: dict[int, tuple[Message, Any]] = field(default_factory=dict, init=False, repr=False, compare=False)
    # The loaded text's message blocks, cut apart only when a save first asks for them: the text, where the entries
    # start, their indentation, and the messages read from them.
    _uncut: tuple[str, int, int, tuple[Message, ...]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __repr__(self) -> str:
        parts = [f"id={self.id!r}"]
        for attr in ("name", "state", "model"):
            value = getattr(self, attr)
            if value is not None:
                parts.append(f"{attr}={value!r}")
        parts.append(f"messages={len(self.messages)}")
        return f"Instance({', '.join(parts)})"

    # -- convenience -----------------------------------------------------------------------------------------------

    @property
    def effective_state(self) -> InstanceState:
        """The state a runner acts on: an unknown or missing state is treated as stopped."""
        if self.state is None:
            return InstanceState.STOPPED
        return _STATES.get(self.state, InstanceState.STOPPED)

    @property
    def rendered_system_prompt(self) -> str | None:
        """`metadata.renderedSystemPrompt`: the system prompt as rendered for the latest turn."""
        if self.metadata is None:
            return None
        value = self.metadata.get("renderedSystemPrompt")
        return value if isinstance(value, str) else None

    @rendered_system_prompt.setter
    def rendered_system_prompt(self, value: str | None) -> None:
        if value is None:
            if self.metadata is not None:
                self.metadata.pop("renderedSystemPrompt", None)
            return
        if self.metadata is None:
            self.metadata = {}
        self.metadata["renderedSystemPrompt"] = value

    def message(self, message_id: str) -> Message | None:
        """The message with this id, or None."""
        for msg in self.messages:
            if msg.id == message_id:
                return msg
        return None

    # -- the definition --------------------------------------------------------------------------------------------

    def definition_data(self) -> dict[str, Any]:
        """The agent definition the run started from, as plain data: the definition's keys plus the instance's
        unknown top-level keys (a definition keeps keys it does not know, such as `outputSchema`)."""
        header = self._header_data()
        out = {key: header[key] for key in _DEFINITION_KEYS if key in header}
        for key, value in self.extra.items():
            if value is not None and key not in out:
                out[key] = plain_copy(value)
        return out

    def definition(self, *, strict: bool = False) -> Definition:
        """The agent definition the run started from, as a `Definition` (lenient by default: an entry it cannot use
        is dropped with a warning instead of failing).

        Raises:
            BadDefinitionError: a definition key has a value of the wrong shape (or, with `strict`, any refusal).
        """
        from onellm.definitions import Definition

        return Definition.from_data(self.definition_data(), strict=strict)

    # -- fork and duplicate ----------------------------------------------------------------------------------------

    def fork(self, new_id: str | None = None, *, through: str | None = None) -> Instance:
        """A copy under a new id, with the conversation up to and including the message `through` (all when None).

        The fork starts stopped, with no pending approvals and no `run_started_at`, and records its origin in
        `forked_from`. Messages are shared with this instance (they are immutable), so a first save of the fork reuses
        their text.

        Raises:
            InvalidInstanceIdError: `new_id` is not a valid id.
            LookupError: no message has the id `through`.
        """
        new_id = new_instance_id() if new_id is None else validate_instance_id(new_id)
        messages = list(self.messages)
        if through is not None:
            for i, msg in enumerate(messages):
                if msg.id == through:
                    messages = messages[: i + 1]
                    break
            else:
                raise LookupError(f"instance {self.id!r} has no message {through!r}")
        copy = Instance.from_data(self._header_data())
        copy.id = new_id
        copy.state = InstanceState.STOPPED.value
        copy.pending_approvals = []
        copy._empty_lists.discard("pendingApprovals")
        copy.run_started_at = None
        copy.forked_from = ForkOrigin(instance_id=self.id, message_id=messages[-1].id if messages else None)
        copy.messages = messages
        self._settle()
        copy._blocks = {id(m): self._blocks[id(m)] for m in messages if self._block_of(m) is not None}
        copy._open = {key: entry for key, entry in self._open.items() if key in copy._blocks}
        if "messages" in self._empty_lists:
            copy._empty_lists.add("messages")
        source = self._source
        if source is not None and source.header_text is not None:
            # Keep the message-list layout (indentation) so the shared block texts stay valid.
            copy._source = _Source(
                parts=("",),
                header={},
                messages=(),
                messages_line=source.messages_line,
                prefix=source.prefix,
                indent=source.indent,
            )
        return copy

    def duplicate(self, new_id: str | None = None) -> Instance:
        """A fork of the whole conversation (see `fork`)."""
        return self.fork(new_id)

    # -- plain data ------------------------------------------------------------------------------------------------

    def _header_data(self, *, kept: bool = False) -> dict[str, Any]:
        """The header as plain data, in the written order. `kept`: for the header a save remembers, which is only read,
        so its lists and mappings may be copies shared with other instances (`_kept_copy`)."""
        copy = _kept_copy if kept else _copy
        out: dict[str, Any] = {}
        for key, attr, _ in _SIMPLE:
            value = getattr(self, attr)
            if value is not None:
                out[key] = _data_of(value, copy)
        for key, value in self.extra.items():
            if value is not None and key not in out and key not in _LISTS:
                out[key] = plain_copy(value)
        if self.pending_approvals or "pendingApprovals" in self._empty_lists:
            out["pendingApprovals"] = [entry.to_data() for entry in self.pending_approvals]
        if self.compactions or "compactions" in self._empty_lists:
            out["compactions"] = [entry.to_data() for entry in self.compactions]
        return out

    def _signature(self, values: tuple[Any, ...]) -> bytes | None:
        """Every header value serialized (`values`, `_signature_values()`): two equal signatures mean the same header
        (the same types, values and key order), so a save can skip building and comparing the header's plain data.
        Serializing looks at the values as they are now, so a container edited in place is seen too. None when a value
        cannot be serialized."""
        try:
            # marshal takes only the exact built-in types (no subclass) and writes each with its type: equal bytes mean
            # equal values of equal types in the same order. The current version writes ASCII text without encoding it
            # (three times faster than version 0); it may write equal values apart (an interned string and a copy, an
            # object that is shared or not), which only sends a save the longer way, never the other way round.
            return b"m" + marshal.dumps(values)
        except ValueError:  # a record, a Decimal, a subclass: pickled
            pass
        try:
            return b"p" + pickle.dumps(values, pickle.HIGHEST_PROTOCOL)
        except Exception:  # an object of any kind may sit in `extra`: the slow comparison takes it
            return None

    def _signature_values(self) -> tuple[Any, ...]:
        """The values `_signature` serializes: `_HEADER_VALUES`, then those of `_TAIL_KEYS`."""
        started = self.run_started_at
        temperature = self.temperature
        header: tuple[Any, ...] | None = None
        if type(self) is Instance:
            # Not `contextlib.suppress`: a try costs nothing when nothing is raised, a context manager three calls.
            try:  # noqa: SIM105
                header = _HEADER_ITEMS(self.__dict__)
            except KeyError:  # an attribute deleted reads the class's default: taken below
                pass
        return (
            header if header is not None else _HEADER_VALUES(self),
            # The two header values of a type marshal does not take, as the text they are written as.
            started._text if type(started) is Timestamp else started,  # `text`, without the property call
            type(started) is Timestamp,
            str(temperature) if type(temperature) is Decimal else temperature,
            type(temperature) is Decimal,
            "pendingApprovals" in self._empty_lists,
            "compactions" in self._empty_lists,
        )

    def _patched_header(self, old: dict[str, Any], changed: set[str]) -> dict[str, Any]:
        """`_header_data()` made from `old`, the last save's, with the values of the keys in `changed` taken again
        (`_changed_keys`: the others, extension keys included, hold what they held)."""
        if all(key in old and key in _SIMPLE_BY_KEY for key in changed):
            # Values that changed and are still set (the state, say) keep their keys' places.
            patched = dict(old)
            for key in changed:
                value = getattr(self, _SIMPLE_BY_KEY[key][0])
                if value is None:
                    break
                patched[key] = _data_of(value, _kept_copy)
            else:
                return patched
        out: dict[str, Any] = {}
        for key, attr, _ in _SIMPLE:
            value = getattr(self, attr)
            if value is not None:
                out[key] = _data_of(value, _kept_copy) if key in changed else old[key]
        for key, value in self.extra.items():
            if value is not None and key not in out and key not in _LISTS:
                out[key] = old[key]
        records: tuple[tuple[str, Sequence[Any]], ...] = (
            ("pendingApprovals", self.pending_approvals),
            ("compactions", self.compactions),
        )
        for key, entries in records:
            if key in changed:
                if entries or key in self._empty_lists:
                    out[key] = [entry.to_data() for entry in entries]
            elif key in old:
                out[key] = old[key]
        return out

    def _changed_keys(self, source: _Source, after: tuple[Any, ...], signature: bytes | None) -> set[str] | None:
        """The header keys whose values changed since `source` was written, told apart by the values of the two
        signatures (`after` is what `signature` holds), so the unchanged keys keep their text; None when that cannot
        tell (a signature that is not a `marshal` dump, a change in `extra`, a changed key that is also an extension
        key, text as it was read)."""
        old = source.signature
        if source.entries is None or old is None or signature is None or old[:1] != b"m" or signature[:1] != b"m":
            return None
        header: dict[str, Any] | None = None
        if source.values is not None and not source.extended and not self.extra:
            # Without extension keys then and now, the values the last save held are at hand: those that cannot change
            # in place as they were, the lists and mappings as copies in its header.
            before: tuple[Any, ...] = source.values
            header = source.header
        else:
            before = marshal.loads(old[1:])
        dumps = marshal.dumps
        changed: set[str] = set()
        deep: list[tuple[str | None, Any, Any]] = []
        for keys, a, b in ((_VALUE_KEYS, before[0], after[0]), (_TAIL_KEYS, before[1:], after[1:])):
            for key, x, y in zip(keys, a, b, strict=True):
                kind = type(x)
                if kind is type(y) and (kind in _FLAT or kind is float) and x == y:
                    if kind is not float or x.hex() == y.hex():  # `0.0` and `-0.0` are written apart
                        continue
                elif kind not in _FLAT:
                    if header is not None and kind is not float:
                        if key is None:
                            continue  # `extra`, empty then and now
                        # The list of a record kind (empty: a record is pickled) is absent while nothing says keep it.
                        x = header.get(key, [])
                    deep.append((key, x, y))
                    continue
                if key is None:
                    return None
                changed.add(key)
        # Equal dumps are equal values of equal types, containers included (see `_signature`; version 0 writes equal
        # values alike). The containers are compared all at once first: most often none of them changed.
        if deep and dumps(tuple(x for _, x, _ in deep), 0) != dumps(tuple(y for _, _, y in deep), 0):
            for key, x, y in deep:
                if dumps(x, 0) != dumps(y, 0):
                    if key is None:
                        return None
                    changed.add(key)
        extra = self.extra
        if extra and any(key in extra for key in changed):
            return None
        return changed

    def to_data(self) -> dict[str, Any]:
        """The whole instance as plain data (str, bool, int, Decimal, None, list, dict), keys in the written order."""
        out = self._header_data()
        if self.messages or "messages" in self._empty_lists:
            out["messages"] = [msg.to_data() for msg in self.messages]
        return out

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Instance:
        """Build an instance from plain data (a parsed instance file).

        Raises:
            BadDefinitionError: a value has the wrong type or shape; its `path` names the key.
        """
        if not isinstance(data, Mapping):
            raise BadDefinitionError(f"an instance is a mapping, not {type_name(data)}", path="")
        inst = cls()
        inst._read_header(data)
        raw = data.get("messages")
        if raw is not None:
            if not isinstance(raw, list):
                raise bad("messages", f"expected a list, found {type_name(raw)}")
            inst.messages = [Message.from_data(item, f"messages[{i}]") for i, item in enumerate(raw)]
            if not raw:
                inst._empty_lists.add("messages")
        return inst

    def _read_header(self, data: Mapping[str, Any]) -> None:
        extra: dict[str, Any] = {}
        for key, value in data.items():
            found = _SIMPLE_BY_KEY.get(key)
            if found is not None:
                attr, read = found
                setattr(self, attr, read(value, key))
            elif key == "pendingApprovals":
                entries = opt_list(value, key)
                if entries is not None:
                    self.pending_approvals = [
                        PendingApproval.from_data(e, f"{key}[{i}]") for i, e in enumerate(entries)
                    ]
                    if not entries:
                        self._empty_lists.add(key)
            elif key == "compactions":
                entries = opt_list(value, key)
                if entries is not None:
                    self.compactions = [Compaction.from_data(e, f"{key}[{i}]") for i, e in enumerate(entries)]
                    if not entries:
                        self._empty_lists.add(key)
            elif key == "messages":
                continue
            elif value is not None:
                extra[key] = value
        self.extra = extra

    # -- text ------------------------------------------------------------------------------------------------------

    @classmethod
    def loads(cls, text: str | bytes, *, file: str | None = None) -> Instance:
        """Read an instance from the text of an instance file.

        Raises:
            BadDefinitionError: the text is not valid YAML, not a valid instance, or hostile (alias bombs, deep
                nesting, duplicate keys, unknown tags, invalid UTF-8, huge numbers); carries `file`, line and column.
        """
        text = _decode(text, file)
        layout = _layout.split(text)
        if layout is not None:
            # A long instance is tens of thousands of new objects, none of them garbage: the cyclic collector would
            # only walk them again and again, so it waits until they are built.
            collecting = gc.isenabled()
            gc.disable()
            try:
                inst = cls._from_layout(text, layout, file)
            except BadDefinitionError:
                inst = None  # read again by the general loader, which places the error
            finally:
                if collecting:
                    gc.enable()
            if inst is not None:
                return inst
        return cls._from_general(text, file)

    @classmethod
    def _from_layout(cls, text: str, layout: _layout.Layout, file: str | None) -> Instance | None:
        header_text = layout.header
        try:
            header = yamlio.parse_mapping(header_text)
        except yamlio.NotCanonical:
            header = _safe_load(header_text, file)
            if header is None:
                header = {}
        if not isinstance(header, dict) or "messages" in header:
            return None
        if not header and layout.messages_line is None:
            return None  # an empty document: let the general loader say so
        inst = cls()
        inst._read_header(header)
        indent = layout.indent
        try:
            entries: list[Any] | None = yamlio.parse_entries(text, layout.start, indent)
        except yamlio.NotCanonical:
            entries = None
        texts: list[str] | None = None
        if entries is None:
            # Some block is outside the canonical shape: read the blocks one by one, each by the fast reader if it
            # can, else by the general loader; unless a line fits no block, and the file must be read whole.
            if layout.has_strays(text):
                return None
            texts = layout.blocks(text)
            entries = []
            for block in texts:
                try:
                    entries.append(yamlio.parse_block(block, indent))
                except yamlio.NotCanonical:
                    parsed = _safe_load(block, file)
                    if not isinstance(parsed, list) or len(parsed) != 1:
                        return None
                    entries.append(parsed[0])
        messages = [Message.from_data(data, f"messages[{i}]") for i, data in enumerate(entries)]
        inst.messages = messages
        if texts is None:
            inst._uncut = (text, layout.start, indent, tuple(messages))
        else:
            inst._blocks = {id(msg): (msg, block) for msg, block in zip(messages, texts, strict=True)}
        if layout.explicit_empty:
            inst._empty_lists.add("messages")
        inst._watch(messages)
        inst._source = _Source(
            parts=(text,),
            header=inst._header_data(kept=True),
            messages=tuple(messages),
            header_text=header_text,
            signature=inst._signature(inst._signature_values()),
            messages_line=None if layout.explicit_empty else layout.messages_line,
            prefix="" if layout.explicit_empty else layout.prefix,
            indent=indent,
        )
        return inst

    @classmethod
    def _from_general(cls, text: str, file: str | None) -> Instance:
        from onellm.yamlio import locate, parse_path, safe_load

        data = safe_load(text, file=file)
        if not isinstance(data, dict):
            found = "an empty document" if data is None else type_name(data)
            raise BadDefinitionError(f"an instance file holds a mapping, not {found}", file=file, line=1, column=1)
        try:
            inst = cls.from_data(data)
        except BadDefinitionError as exc:
            if exc.line is not None or not exc.path:
                raise
            line, column = locate(text, parse_path(exc.path))
            raise BadDefinitionError(exc.detail, file=file, line=line, column=column, path=exc.path) from None
        inst._watch(inst.messages)
        inst._source = _Source(
            parts=(text,),
            header=inst._header_data(kept=True),
            messages=tuple(inst.messages),
            signature=inst._signature(inst._signature_values()),
        )
        return inst

    def forget_written_text(self) -> None:
        """Forget the remembered text of the file and of every message, so the next save writes everything from the
        model. Only needed after editing a message object in place, which the format's rule (messages are immutable
        once appended) otherwise forbids."""
        self._blocks = {}
        self._open = {}
        self._uncut = None
        self._source = None

    def _watch(self, messages: list[Message]) -> None:
        """Snapshot the messages just read that may still be completed in place."""
        self._open = {id(m): (m, snapshot(m)) for m in messages if _may_change(m)}

    def _settle(self) -> bool:
        """Forget the kept text of every message that may still be completed and changed since; True when one did."""
        if not self._open:
            return False
        changed = [key for key, (msg, stamp) in self._open.items() if stamp is None or snapshot(msg) != stamp]
        if not changed:
            return False
        if self._uncut is not None:
            self._block_of(self._open[changed[0]][0])  # cut the loaded text first, so the blocks can be forgotten
        for key in changed:
            del self._open[key]
            self._blocks.pop(key, None)
        return True

    def _block_of(self, msg: Message) -> str | None:
        if self._uncut is not None:
            text, start, indent, read = self._uncut
            self._uncut = None
            texts = _layout.cut(text, start, indent)
            if len(texts) == len(read):
                self._blocks = {id(m): (m, block) for m, block in zip(read, texts, strict=True)}
        entry = self._blocks.get(id(msg))
        if entry is not None and entry[0] is msg:
            return entry[1]
        return None

    def dumps(self) -> str:
        """The instance file text: the loaded text byte for byte while nothing changed, else the canonical layout."""
        parts = self.dump_parts()
        return parts[0] if len(parts) == 1 else "".join(parts)

    def dump_parts(self) -> tuple[str, ...]:
        """The instance file text in pieces that join to `dumps()`: the header, then each message's block, kept
        between saves. A store that writes them one after the other (or keeps them) never copies the conversation
        into one string.

        Raises:
            UnwritableValueError: a value has no form in the file (a datetime in `inputs`, say); nothing is written.
        """
        try:
            return self._dump_parts()
        except TypeError as error:
            raise _unwritable(self, error) from error

    def _freeze(self, prior: Frozen | None = None) -> Frozen | None:
        """What a save keeps instead of the text when the text may be written later (`Frozen`), checked now as the
        text would be: a value the file has no form for fails here, not when the text is read. `prior` is what the
        last save of this instance kept (its header and messages are not looked at again while they are the same).

        None when the instance's text is better written now: text it was read from or wrote before (reused by the
        next save), a header value `marshal` does not take, a value the quick check cannot vouch for.

        Raises:
            UnwritableValueError: a message that may still change holds a value the file has no form for.
        """
        if self._source is not None or self._blocks or self._uncut is not None or self._open:
            return None
        values = self._signature_values()
        signature = self._signature(values)
        if signature is None or signature[:1] != b"m":
            return None
        if (prior is None or signature != prior.signature) and not _plain([values]):
            return None
        messages = tuple(self.messages)
        start = 0
        written: dict[int, tuple[Message, str]] = {}
        copies: list[tuple[int, Message]] = []
        open_at: list[int] = []
        if prior is not None:
            old = prior.messages
            if len(old) <= len(messages) and all(map(operator.is_, old, messages)):
                start = len(old)
            else:
                same = list(map(operator.is_, old, messages))
                start = same.index(False) if False in same else len(same)
            # The messages that could still change when last saved, still in their places, are looked at again.
            for index in prior.open_at:
                if index < start:
                    msg = messages[index]
                    if _may_change(msg):
                        self._keep_open(msg, index, written, copies, open_at)
                    elif not _writable(msg):
                        return None
        for index in range(start, len(messages)):
            msg = messages[index]
            if _may_change(msg):
                self._keep_open(msg, index, written, copies, open_at)
            elif not _writable(msg):
                return None
        empty = frozenset(self._empty_lists) if self._empty_lists else _NO_LISTS
        return Frozen(signature, messages, written, tuple(copies), tuple(open_at), empty)

    def _keep_open(
        self,
        msg: Message,
        index: int,
        written: dict[int, tuple[Message, str]],
        copies: list[tuple[int, Message]],
        open_at: list[int],
    ) -> None:
        """Keep, for `_freeze`, the message at `index`, which may still be completed in place: as a copy when the quick
        check vouches for it, else as its text, written now (which finds a value the file has no form for)."""
        open_at.append(index)
        copy = _open_copy(msg) if _writable(msg) else None
        if copy is not None:
            copies.append((index, copy))
            return
        try:
            written[id(msg)] = (msg, self._emit(msg, index, None, 0))
        except TypeError as error:
            raise _unwritable(self, error) from error

    def _dump_parts(self) -> tuple[str, ...]:
        source = self._source
        values = self._signature_values()
        signature = self._signature(values)
        unchanged = source is not None and signature is not None and signature == source.signature
        keys: set[str] | None = None
        if source is not None and unchanged:
            header = source.header
        else:
            keys = None if source is None else self._changed_keys(source, values, signature)
            if keys is not None:
                # A few keys changed (the state, say): only their values are taken again, and written again.
                assert source is not None
                header = self._patched_header(source.header, keys)
                unchanged = False
            else:
                header = self._header_data(kept=True)
                unchanged = source is not None and _written_alike(header, source.header)
        messages = self.messages
        header_text: str | None = None
        entries: tuple[str, ...] | None = None
        changed = self._settle()
        if source is not None and unchanged:
            if (
                not changed
                and len(messages) == len(source.messages)
                and all(map(operator.is_, messages, source.messages))
            ):
                return source.parts
            header_text = source.header_text
            entries = source.entries
        if header_text is None:
            if keys is not None:
                # Only the keys that changed are written again.
                assert source is not None
                assert source.entries is not None
                written = dict(zip(source.header, source.entries, strict=True))
                entries = tuple(
                    _entry_text(key, value) if key in keys or key not in written else written[key]
                    for key, value in header.items()
                )
            else:
                entries = tuple(_entry_text(key, value) for key, value in header.items())
            header_text = "".join(entries)
        parts = [header_text]
        if header_text and not header_text.endswith("\n"):
            parts.append("\n")
        messages_line = "messages:\n"
        prefix = ""
        indent = 0
        if source is not None and source.messages_line is not None:
            messages_line = source.messages_line if source.messages_line.endswith("\n") else "messages:\n"
            prefix = source.prefix
            indent = source.indent
        blocks: dict[int, tuple[Message, str]] = {}
        watched: dict[int, tuple[Message, Any]] = {}
        kept = self._open
        body = 0
        ends: list[int] | None = None
        if messages:
            parts.append(messages_line)
            parts.append(prefix)
            body = len(parts)
            ends = []
            # The messages the last save wrote, in the same place and unchanged, keep their pieces as they are: only
            # the messages after them are looked at (an appended turn, the last message replaced).
            start = 0
            if not changed and source is not None and source.ends is not None:
                start = len(source.messages)
                if start > len(messages) or not all(map(operator.is_, source.messages, messages)):
                    # Not a plain append: the first message that is no longer the same object starts the rest.
                    same = list(map(operator.is_, source.messages, messages))
                    start = same.index(False) if False in same else len(same)
                if start:
                    ends.extend(source.ends[:start])
                    parts.extend(source.parts[source.body : source.body + ends[-1]])
                    if start < len(messages) and not parts[-1].endswith("\n"):
                        parts.append("\n")
            last = len(messages) - 1
            key = ("yaml", indent)
            for i in range(start, len(messages)):
                msg = messages[i]
                block = self._block_of(msg)
                stamp: Any = None
                if block is None:
                    # A block another instance wrote, from this very message as it is now; else written here.
                    memo = memo_for(msg, key)
                    if memo is not None:
                        stamp = memo.stamp
                        block = memo.get(key)
                    if block is None:
                        block = self._emit(msg, i, source, indent)
                        if memo is not None:
                            memo.put(key, block)
                if _may_change(msg):
                    entry = kept.get(id(msg))
                    watched[id(msg)] = (
                        entry if entry is not None and entry[0] is msg else (msg, stamp if stamp else snapshot(msg))
                    )
                blocks[id(msg)] = (msg, block)
                parts.append(block)
                ends.append(len(parts) - body)
                if i != last and not block.endswith("\n"):
                    parts.append("\n")
            if start:
                # Keep what is known of the unchanged messages; forget the messages that left the list.
                assert source is not None
                kept_blocks = self._blocks
                gone = source.messages[start:]
                head = messages[:start] if gone else ()
                for old in gone:
                    if not any(map(operator.is_, head, itertools.repeat(old))):
                        kept_blocks.pop(id(old), None)
                        kept.pop(id(old), None)
                kept_blocks.update(blocks)
                kept.update(watched)
                blocks = kept_blocks
                watched = kept
        elif "messages" in self._empty_lists:
            parts.append("messages: []\n")
            messages_line = "messages: []\n"
            prefix = ""
        pieces = tuple(parts)
        self._blocks = blocks
        self._open = watched
        self._uncut = None
        self._source = _Source(
            parts=pieces,
            header=header,
            messages=tuple(messages),
            header_text=header_text,
            entries=entries,
            signature=signature,
            values=values,
            extended=bool(self.extra),
            messages_line=messages_line if messages else None,
            prefix=prefix,
            indent=indent,
            body=body,
            ends=None if ends is None else tuple(ends),
        )
        return pieces

    def _emit(self, msg: Message, index: int, source: _Source | None, indent: int) -> str:
        """The block of `msg`, written out. A message that took the place of one with the same id (a turn's calls
        answered, say) and still holds that one's `usage` object reuses the written `usage` lines: they are most of a
        turn's block, and the object's text is still good while the old message's is (see `_settle`)."""
        usage = msg.usage
        head = message_lines(msg, indent)
        if head is not None:
            if usage is None:
                return head
            tail = self._usage_tail(msg, index, source, indent)
            if tail is None:
                tail = usage_lines(usage, indent)
            if tail is None:
                tail = yamlio.emit_mapping({"usage": usage.to_data()}, indent + 2)
            return head + tail
        if usage is not None and type(msg) is Message and msg._keys is None and not msg.extra and msg.when is None:
            # The usage is the block's last key unless an order index or extra parts follow it.
            data = msg._data(False)
            if data and "partOrder" not in data and "extraParts" not in data:
                tail = self._usage_tail(msg, index, source, indent)
                if tail is None:
                    tail = usage_lines(usage, indent)
                if tail is not None:
                    return yamlio.emit_block(data, indent) + tail
                data["usage"] = usage.to_data()
                return yamlio.emit_block(data, indent)
        data = msg.to_data()
        tail = self._usage_tail(msg, index, source, indent) if next(reversed(data), None) == "usage" else None
        if tail is None:
            return yamlio.emit_block(data, indent)
        del data["usage"]
        return yamlio.emit_block(data, indent) + tail

    def _usage_tail(self, msg: Message, index: int, source: _Source | None, indent: int) -> str | None:
        """The `usage` lines that end the written block of the message `msg` replaced, when they hold `msg`'s own
        `usage` object and nothing follows them; else None."""
        if msg.usage is None or source is None or index >= len(source.messages):
            return None
        old = source.messages[index]
        if old is msg or old.usage is not msg.usage or old.id is None or old.id != msg.id:
            return None
        entry = self._blocks.get(id(old))
        if entry is None or entry[0] is not old:
            return None
        text = entry[1]
        at = text.rfind(f"\n{' ' * (indent + 2)}usage:")
        if at < 0 or _top_key(indent).search(text, at + 2) is not None:  # another key follows usage there
            return None
        return text[at + 1 :]

    # -- files -----------------------------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, max_bytes: int = 1 << 30) -> Instance:
        """Read an instance file (a regular file of at most `max_bytes`, 1 GiB by default).

        Raises:
            BadDefinitionError: see `loads`.
            StorageError: the file does not exist, cannot be read, is not a regular file (a directory, a pipe, a
                device) or is larger than `max_bytes`.
        """
        data = read_regular(path, max_bytes=max_bytes, operation="load", follow_symlinks=True)
        if data is None:
            missing = FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))
            raise storage_error(missing, path, "load") from missing
        return cls.loads(data, file=os.fspath(path))

    def save(self, path: str | os.PathLike[str], *, durable: bool = True) -> None:
        """Write the instance file atomically: a temporary file beside it, flushed to disk, renamed over it.

        A reader sees the old file or the new one, never a mix. `durable=False` skips the flush to disk (the rename
        is still atomic, but a power cut may lose the latest save).

        Raises:
            StorageError: the file cannot be written (a full or read-only disk, a missing directory); the old file is
                untouched.
        """
        write_atomic(Path(path), encoded_parts(self), durable=durable, operation="save")


def encoded_parts(instance: Instance) -> list[bytes]:
    """The instance file's bytes in pieces (`Instance.dump_parts`, each encoded), for `write_atomic`."""
    return [part.encode("utf-8") for part in instance.dump_parts()]


def _unwritable(instance: Instance, error: TypeError) -> TypeError:
    """`error`, raised while writing `instance`, as an `UnwritableValueError` naming the first value that has no form
    in the file (the error itself when it found none, or was one already)."""
    if isinstance(error, UnwritableValueError):
        return error
    found = find_unplain(instance._header_data())
    if found is None:
        for index, msg in enumerate(instance.messages):
            try:
                data = msg.to_data()
            except TypeError:
                found = (["messages", index], type(msg).__name__)
                break
            found = find_unplain(data, ["messages", index])
            if found is not None:
                break
    if found is None:
        return error
    segments, kind = found
    path = format_path(segments)
    return UnwritableValueError(
        f"instance {instance.id}: {path} cannot be written: an instance file holds text, numbers, booleans, null, "
        f"lists and mappings only, not a value of type {kind}",
        instance_id=instance.id,
        path=path,
    )


@functools.cache
def _top_key(indent: int) -> re.Pattern[str]:
    """A line holding a key of a message block whose dash sits at column `indent`."""
    return re.compile(f"\n {{{indent + 2}}}[^ \\-\n]")


def _open_copy(msg: Message) -> Message | None:
    """A copy of a message that may still be completed in place, which completing it does not reach: the message, its
    calls, its usage and its source are copied, and so are their lists and mappings (what the code that completes a
    turn assigns or appends to); the parts, the cost lines and the values in the mappings are shared, as a message
    appended is (immutable). None when a list or mapping is not of its declared type (its text is written instead)."""
    calls = []
    for call in msg.tool_calls:
        result = call.result
        if (
            type(call.inputs) is not dict
            or type(call.extra) is not dict
            or type(call.cost_lines) is not list
            or (result is not None and type(result) is not list)
        ):
            return None
        kept = call.__copy__()
        kept.inputs = dict(call.inputs)
        kept.extra = dict(call.extra)
        kept.cost_lines = list(call.cost_lines)
        if result is not None:
            kept.result = list(result)
        calls.append(kept)
    if (
        type(msg.tool_calls) is not list
        or type(msg.user) is not list
        or type(msg.assistant) is not list
        or type(msg.extra) is not dict
    ):
        return None
    copy = msg.__copy__()
    copy.user = list(msg.user)
    copy.assistant = list(msg.assistant)
    copy.tool_calls = calls
    copy.extra = dict(msg.extra)
    usage = msg.usage
    if usage is not None:
        if type(usage.counters) is not dict or type(usage.cost_lines) is not list or type(usage.extra) is not dict:
            return None
        kept_usage = copy.usage = usage.__copy__()
        kept_usage.counters = dict(usage.counters)
        kept_usage.cost_lines = list(usage.cost_lines)
        kept_usage.extra = dict(usage.extra)
    if msg.source is not None:
        copy.source = msg.source.__copy__()
    return copy


def _may_change(msg: Message) -> bool:
    """A message that may still be completed in place: no answer yet, or a tool call without its result."""
    calls = msg.tool_calls
    if not msg.assistant and not calls:
        return True
    for call in calls:  # noqa: SIM110  # a plain loop: `any` over a generator costs more than a turn's one call
        if call.result is None:
            return True
    return False


def read_header(text: str | bytes, *, file: str | None = None) -> dict[str, Any]:
    """The top-level keys of an instance file other than `messages`, as plain data.

    A file in the canonical layout is read only up to its `messages:` line, so listing many long instances stays cheap.

    Raises:
        BadDefinitionError: the text is not valid YAML or not a mapping.
    """
    text = _decode(text, file)
    end = _layout.header_end(text)
    data: Any
    if end is not None:
        head = text[:end]
        try:
            data = yamlio.parse_mapping(head)
        except yamlio.NotCanonical:
            data = _safe_load(head, file)
    else:
        data = _safe_load(text, file)
    if not isinstance(data, dict):
        found = "an empty document" if data is None else type_name(data)
        raise BadDefinitionError(f"an instance file holds a mapping, not {found}", file=file, line=1, column=1)
    data.pop("messages", None)
    return data


def _decode(data: str | bytes, file: str | None) -> str:
    """The text of an instance file. Decoding here keeps the YAML layer unimported while a file in the canonical
    layout is read; it is asked only to place an invalid byte."""
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        from onellm.yamlio import decode_text

        return decode_text(data, file=file)


def _safe_load(text: str, file: str | None) -> Any:
    """A piece of an instance file outside the canonical shape, read by the general loader."""
    from onellm.yamlio import safe_load

    return safe_load(text, file=file)
