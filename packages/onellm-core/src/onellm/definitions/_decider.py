"""Deciders (`decider.yaml`): typed questions about a state, with every rule of the format checked on load."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from onellm.definitions._common import DefinitionWarning, Persisted, Reader, Step, layout, read_source, type_name
from onellm.yamlio import load_document

__all__ = ["CacheOptions", "Decider", "LlmOptions", "Question", "decider_name", "read_schema"]

QUESTION_TYPES = ("choice", "score", "noul")
_QUESTION_ID = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_ACTION = re.compile(r"\{\{.*?\}\}", re.S)


def decider_name(path: Path) -> str:
    """The decider's name from its file: the folder of a `decider.yaml`, else the file name before `.decider.yaml`."""
    name = path.name
    if name in ("decider.yaml", "decider.yml"):
        return path.resolve().parent.name
    for suffix in (".decider.yaml", ".decider.yml", ".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


@dataclass
class Question:
    """One question: `type` (`choice`, `score`, `noul`), `instructions`, `criteria`, and optionally `forEach`."""

    type: str
    instructions: str | dict[str, str]
    criteria: Any = None
    """choice: a mapping value -> description; score: a list of levels (lowest first) or a mapping label ->
    description; noul: optional `true`/`false` conditions."""
    for_each: str | None = None
    """One `{{ ... }}` action that gives a list; the question is asked once per element."""
    extra: dict[str, Any] = field(default_factory=dict)
    _keys: tuple[Any, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def read(cls, r: Reader, value: Any, path: Sequence[Step]) -> Question:
        d = r.mapping(value, path)
        qtype: str | None = None
        instructions: Any = None
        criteria: Any = None
        for_each: str | None = None
        extra: dict[str, Any] = {}
        for key, v in d.items():
            p = [*path, key]
            if key == "type":
                qtype = r.one_of(v, p, QUESTION_TYPES)
            elif key == "instructions":
                instructions = _read_instructions(r, v, p)
            elif key == "criteria":
                criteria = v
            elif key == "forEach":
                for_each = _read_for_each(r, v, p)
            else:
                extra[key] = v
        if qtype is None:
            raise r.error(f"a question needs a type ({', '.join(QUESTION_TYPES)})", path)
        if instructions is None:
            raise r.error("a question needs instructions", path)
        _check_criteria(r, qtype, criteria, [*path, "criteria"], path)
        obj = cls(type=qtype, instructions=instructions, criteria=criteria, for_each=for_each, extra=extra)
        obj._keys = tuple(d)
        return obj

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "instructions": self.instructions}
        if self.criteria is not None:
            out["criteria"] = self.criteria
        if self.for_each is not None:
            out["forEach"] = self.for_each
        out.update(self.extra)
        return layout(out, self._keys)


def _read_instructions(r: Reader, value: Any, path: Sequence[Step]) -> str | dict[str, str] | None:
    if value is None:
        return None
    if type(value) is str:
        if not value.strip():
            raise r.error("instructions must not be empty", path)
        return value
    if isinstance(value, dict):
        if not value:
            raise r.error("instructions must name at least one part", path)
        for key, part in value.items():
            if type(key) is not str:
                raise r.error("an instructions part is named by a string", [*path, key], key=True)
            if type(part) is not str:
                raise r.error(f"an instructions part is a template string, found {type_name(part)}", [*path, key])
        return value
    raise r.error(f"instructions are a template string or a mapping of named parts, found {type_name(value)}", path)


def _read_for_each(r: Reader, value: Any, path: Sequence[Step]) -> str | None:
    text = r.string(value, path)
    if text is None:
        return None
    actions = _ACTION.findall(text)
    stripped = text.strip()
    if len(actions) != 1 or stripped != actions[0] or stripped.count("{{") != 1:
        raise r.error("forEach must be exactly one {{ ... }} action that gives a list", path)
    return text


def _check_criteria(r: Reader, qtype: str, criteria: Any, path: list[Any], question: Sequence[Step]) -> None:
    if qtype == "choice":
        if criteria is None:
            raise r.error("a choice question needs criteria: a mapping from value to description", question)
        if not isinstance(criteria, dict):
            raise r.error(f"choice criteria are a mapping from value to description, found {type_name(criteria)}", path)
        if not 2 <= len(criteria) <= 255:
            raise r.error(f"a choice question takes 2 to 255 criteria, found {len(criteria)}", path)
        for key, description in criteria.items():
            if isinstance(key, (dict, list)) or key is None or (type(key) is str and not key):
                raise r.error("a choice value must be a non-empty plain value", [*path, key], key=True)
            if description is not None and type(description) is not str:
                raise r.error(f"a choice description is a string, found {type_name(description)}", [*path, key])
    elif qtype == "score":
        if criteria is None:
            raise r.error("a score question needs criteria: its levels, lowest first", question)
        if isinstance(criteria, list):
            if not 2 <= len(criteria) <= 10:
                raise r.error(f"a score question takes 2 to 10 levels, found {len(criteria)}", path)
            for i, level in enumerate(criteria):
                if type(level) is not str:
                    raise r.error(f"a score level is a string, found {type_name(level)}", [*path, i])
        elif isinstance(criteria, dict):
            if not 2 <= len(criteria) <= 10:
                raise r.error(f"a score question takes 2 to 10 levels, found {len(criteria)}", path)
            for key, description in criteria.items():
                if description is not None and type(description) is not str:
                    raise r.error(f"a level description is a string, found {type_name(description)}", [*path, key])
        else:
            raise r.error(f"score criteria are a list of levels or a mapping, found {type_name(criteria)}", path)
    elif criteria is not None:  # noul
        if not isinstance(criteria, dict):
            raise r.error(f"noul criteria are a mapping with true and false, found {type_name(criteria)}", path)
        for key, condition in criteria.items():
            if key not in (True, False, "true", "false") or type(key) is int:
                raise r.error(f"noul criteria take only the keys true and false, found {key!r}", [*path, key], key=True)
            if condition is not None and type(condition) is not str:
                raise r.error(f"a noul condition is a string, found {type_name(condition)}", [*path, key])


@dataclass
class LlmOptions:
    """Options for chat-model engines: `samples` (1-100), `temperature` (0-2), `thinking`, `serviceTier`."""

    samples: int | None = None
    temperature: int | Decimal | None = None
    thinking: str | dict[str, Any] | None = None
    """An effort name, or `{effort, budget}`."""
    service_tier: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    _keys: tuple[Any, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def read(cls, r: Reader, value: Any, path: Sequence[Step]) -> LlmOptions:
        d = r.mapping(value, path)
        obj = cls()
        for key, v in d.items():
            p = [*path, key]
            if key == "samples":
                obj.samples = r.integer(v, p, low=1, high=100)
            elif key == "temperature":
                obj.temperature = r.number(v, p, low=0, high=2)
            elif key == "thinking":
                obj.thinking = _read_thinking(r, v, p)
            elif key == "serviceTier":
                obj.service_tier = r.string(v, p)
            else:
                obj.extra[key] = v
        obj._keys = tuple(d)
        return obj

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.samples is not None:
            out["samples"] = self.samples
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.thinking is not None:
            out["thinking"] = self.thinking
        if self.service_tier is not None:
            out["serviceTier"] = self.service_tier
        out.update(self.extra)
        return layout(out, self._keys)


def _read_thinking(r: Reader, value: Any, path: Sequence[Step]) -> str | dict[str, Any] | None:
    if value is None or type(value) is str:
        return value
    if isinstance(value, dict):
        for key, v in value.items():
            if key == "effort":
                r.string(v, [*path, key])
            elif key == "budget":
                r.integer(v, [*path, key], low=0)
        return value
    raise r.error(f"thinking is an effort name or {{effort, budget}}, found {type_name(value)}", path)


@dataclass
class CacheOptions:
    """Prompt-cache options: `key` (1-64 characters; default the decider's name) and `explicit`."""

    key: str | None = None
    explicit: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    _keys: tuple[Any, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def read(cls, r: Reader, value: Any, path: Sequence[Step]) -> CacheOptions:
        d = r.mapping(value, path)
        obj = cls()
        for k, v in d.items():
            p = [*path, k]
            if k == "key":
                obj.key = r.string(v, p)
                if obj.key is not None and not 1 <= len(obj.key) <= 64:
                    raise r.error(f"a cache key has 1 to 64 characters, found {len(obj.key)}", p)
            elif k == "explicit":
                obj.explicit = r.boolean(v, p)
            else:
                obj.extra[k] = v
        obj._keys = tuple(d)
        return obj

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.key is not None:
            out["key"] = self.key
        if self.explicit is not None:
            out["explicit"] = self.explicit
        out.update(self.extra)
        return layout(out, self._keys)


@dataclass(eq=False)
class Decider(Persisted):
    """A decider definition: `model`, `state`, `questions`, and optional `llm` and `cache` options.

    Every rule of the format is checked on load (question ids, criteria counts per type, `forEach` as one action,
    `llm.samples` 1-100, `llm.temperature` 0-2, the cache key's length); a broken rule fails with the file, line and
    column of the node. Unknown keys are kept at every level.
    """

    model: str = ""
    state: Any = None
    """A template tree rendered with the run's inputs."""
    questions: dict[str, Question] = field(default_factory=dict)
    llm: LlmOptions | None = None
    cache: CacheOptions | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    """The decider's name (from its file or folder); not a key of the file."""
    schema: dict[str, Any] | None = None
    """The `decider.schema.json` beside the definition (`inputs`, `outputs`), when `load` found one."""
    warnings: list[DefinitionWarning] = field(default_factory=list)
    file: str | None = None
    _keys: tuple[Any, ...] | None = field(default=None, init=False, repr=False, compare=False)
    _question_keys: dict[str, Any] = field(default_factory=dict, repr=False)
    _doc: Any = field(default=None, init=False, repr=False, compare=False)
    _snapshot: Any = field(default=None, init=False, repr=False, compare=False)
    _path: Path | None = field(default=None, init=False, repr=False, compare=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decider):
            return NotImplemented
        return self.to_data() == other.to_data()

    __hash__ = None  # type: ignore[assignment]

    @property
    def cache_key(self) -> str | None:
        """The prompt-cache partition: `cache.key`, or the decider's name."""
        if self.cache is not None and self.cache.key:
            return self.cache.key
        return self.name

    @property
    def input_schema(self) -> dict[str, Any] | None:
        """The `inputs` schema of the `decider.schema.json` beside the definition, if it declares one."""
        found = self.schema.get("inputs") if self.schema else None
        return found if isinstance(found, dict) else None

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The `outputs` schema of the `decider.schema.json` beside the definition, if it declares one."""
        found = self.schema.get("outputs") if self.schema else None
        return found if isinstance(found, dict) else None

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, strict: bool = True) -> Decider:
        """Read a `decider.yaml` (or the one in a directory), and the `decider.schema.json` beside it if present.

        The schema file is the definition's name with `.yaml` replaced by `.schema.json` (`decider.schema.json`,
        `triage.decider.schema.json`).

        Raises:
            BadDefinitionError: with the file and the 1-based line and column of the offending node.
        """
        text, file, resolved = read_source(path, default_name="decider.yaml")
        decider = cls.loads(text, file=file, strict=strict, name=decider_name(resolved))
        decider._path = resolved
        stem = resolved.name[: -len(resolved.suffix)] if resolved.suffix else resolved.name
        beside = resolved.with_name(stem + ".schema.json")
        if beside.is_file():
            decider.schema = read_schema(beside)
        return decider

    @classmethod
    def loads(
        cls, text: str | bytes, *, file: str | None = None, strict: bool = True, name: str | None = None
    ) -> Decider:
        """Read a decider from text. The rules of the format are the same in strict and lenient loading."""
        doc = load_document(text, file=file)
        if name is None and file is not None:
            name = decider_name(Path(file))
        obj = cls._build(doc.plain, Reader(doc, file=file, strict=strict), name)
        obj._attach(doc, None)
        return obj

    @classmethod
    def from_data(cls, data: Mapping[str, Any], *, name: str | None = None) -> Decider:
        """Read a decider from plain data (a parsed mapping). The same rules apply; errors name the key path."""
        return cls._build(data, Reader(None, file=None, strict=True), name)

    @classmethod
    def _build(cls, data: Any, r: Reader, name: str | None) -> Decider:
        d = r.mapping({} if data is None else data, [])
        obj = cls(file=r.file, name=name)
        model: str | None = None
        seen_questions = False
        for key, value in d.items():
            p: list[Step] = [key]
            if key == "model":
                model = r.string(value, p)
            elif key == "state":
                obj.state = value
            elif key == "questions":
                seen_questions = True
                obj._read_questions(r, value)
            elif key == "llm":
                obj.llm = None if value is None else LlmOptions.read(r, value, p)
            elif key == "cache":
                obj.cache = None if value is None else CacheOptions.read(r, value, p)
            else:
                obj.extra[key] = value
        if not model:
            raise r.error("a decider needs a model", ["model"] if "model" in d else [])
        if not seen_questions or not obj.questions:
            raise r.error("a decider needs at least one question", ["questions"] if seen_questions else [])
        obj.model = model
        obj._keys = tuple(d)
        obj.warnings = r.warnings
        return obj

    def _read_questions(self, r: Reader, value: Any) -> None:
        if value is None:
            return
        d = r.mapping(value, ["questions"])
        for key, item in d.items():
            qid = str(key) if type(key) in (str, int) else None
            if qid is None or not _QUESTION_ID.fullmatch(qid):
                raise r.error(
                    f"a question id has 1 to 64 letters, digits, '_', '-' or '.'; found {key!r}",
                    ["questions", key],
                    key=True,
                )
            if qid in self.questions:
                raise r.error(f"the question id {qid!r} is used twice", ["questions", key], key=True)
            self.questions[qid] = Question.read(r, item, ["questions", key])
            self._question_keys[qid] = key

    def to_data(self) -> dict[str, Any]:
        """The decider as plain data, keys in the order they were read, unknown keys kept."""
        out: dict[str, Any] = {"model": self.model}
        if self.state is not None:
            out["state"] = self.state
        out["questions"] = {self._question_keys.get(qid, qid): q.to_data() for qid, q in self.questions.items()}
        if self.llm is not None:
            out["llm"] = self.llm.to_data()
        if self.cache is not None:
            out["cache"] = self.cache.to_data()
        out.update(self.extra)
        return layout(out, self._keys)


_BYTE = re.compile(r"\(byte (\d+)\)")


def read_schema(path: Path) -> dict[str, Any]:
    """Read a `decider.schema.json`: a JSON object. Errors carry the file, line and column."""
    import msgspec

    from onellm.errors import BadDefinitionError
    from onellm.yamlio import decode_text, position_of_offset

    raw = path.read_bytes()
    text = decode_text(raw, file=str(path))
    try:
        data = msgspec.json.Decoder(float_hook=Decimal).decode(raw)
    except msgspec.DecodeError as exc:
        found = _BYTE.search(str(exc))
        offset = len(raw[: int(found[1])].decode("utf-8", errors="replace")) if found else 0
        line, column = position_of_offset(text, offset)
        detail = str(exc).split(" (byte")[0]
        raise BadDefinitionError(detail, file=str(path), line=line, column=column) from None
    if not isinstance(data, dict):
        raise BadDefinitionError("a decider schema file holds a JSON object", file=str(path), line=1, column=1)
    return data
