"""Decider logic: the `DeciderLogic` seam, logic written in Python, and finding the logic beside a definition.

A decider's logic is optional and separate from its file: `prepare(inputs)` turns the caller's inputs into what the
templates read, and `decide(answers, inputs)` turns the answers into the outputs. Without logic the answers are the
outputs. Three ways to give it:

- **A JavaScript module beside the definition** (`decider.js`, else `decider.ts`; `triage.decider.js` beside
  `triage.decider.yaml`), run in onellm-js's sandbox. Core finds the package through the `onellm.decider_logic` entry
  point it installs (never by importing it); without it, `CapabilityMissingError` names `onellm-js`.
- **A Python module beside the definition** (`decider.py`; `triage.decider.py`) with top-level `prepare` and/or
  `decide` functions. It is ordinary code run in this process: load it only from folders you trust (the
  `run_decider` tool refuses one).
- **A class decorated with `@decider_logic("triage.decider.yaml")`** (the path relative to the class's module), whose
  `prepare` and/or `decide` are static or class methods; `onellm.decide(Triage, inputs)` runs it, and `Triage.decider`
  is the loaded definition.

Python logic may be sync or async. `decide` gets typed answers when its first parameter is annotated with a record
type (a dataclass, `TypedDict` or `msgspec.Struct`) whose fields are `ChoiceAnswer[E]`, `ScoreAnswer`, `NoulAnswer`, or a
`list` of one of them for a `forEach` question: a field named like the question id (`line-ok` as `line_ok`) gets its
answer. What `decide` returns (a record, an enum, plain data) is stored as plain JSON data.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import hashlib
import importlib.util
import inspect
import os
import sys
import threading
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, get_args, get_origin, runtime_checkable

from onellm._public import publish as _publish
from onellm.deciders._answers import ChoiceAnswer, NoulAnswer, ScoreAnswer, answer_from_data
from onellm.errors import BadDefinitionError, CapabilityMissingError, DeciderInputError, DeciderOutputError

if TYPE_CHECKING:
    from onellm.definitions import Decider

__all__ = [
    "ENTRY_POINT_GROUP",
    "DeciderLogic",
    "PythonDeciderLogic",
    "attach_logic",
    "decider_logic",
    "find_logic",
    "logic_files",
    "logic_of",
]

ENTRY_POINT_GROUP = "onellm.decider_logic"
"""Where an installed package offers a loader for logic files, by file kind (`javascript`)."""

_ATTRIBUTE = "_onellm_decider_logic"
T = TypeVar("T")


@runtime_checkable
class DeciderLogic(Protocol):
    """What a decider's logic offers the run. Both functions are optional: `has_prepare` and `has_decide` say which
    exist, and a missing one passes its input through (`prepare` returns the inputs, `decide` the answers).

    `onellm_js.JsDeciderLogic` implements it for `decider.js`/`decider.ts`; `PythonDeciderLogic` for Python.
    """

    @property
    def has_prepare(self) -> bool:
        """Whether the logic has `prepare`."""
        ...

    @property
    def has_decide(self) -> bool:
        """Whether the logic has `decide`."""
        ...

    async def prepare(self, inputs: Any) -> Any:
        """The template inputs for the caller's `inputs` (plain JSON data in, plain JSON data out)."""
        ...

    async def decide(self, answers: Any, inputs: Any) -> Any:
        """The outputs for the answers (plain, by question id) and the caller's inputs."""
        ...


# ------------------------------------------------------------------------------------------------ typed answers


def _question_for(field: str, decider: Decider) -> str | None:
    if field in decider.questions:
        return field
    for qid in decider.questions:
        if qid.replace("-", "_").replace(".", "_") == field:
            return qid
    return None


_KINDS: dict[Any, str] = {ChoiceAnswer: "choice", ScoreAnswer: "score", NoulAnswer: "noul"}


def _answer_kind(tp: Any) -> tuple[str, Any, bool] | None:
    """(question type, choice type, is a list) for an answer annotation, or None when it is not one."""
    listed = False
    origin = get_origin(tp)
    if origin in (list, collections.abc.Sequence):
        args = get_args(tp)
        if len(args) != 1:
            return None
        tp = args[0]
        listed = True
        origin = get_origin(tp)
    base = origin if origin is not None else tp
    kind = _KINDS.get(base)
    if kind is None:
        return None
    choice_type = get_args(tp)[0] if kind == "choice" and get_args(tp) else None
    return kind, choice_type, listed


def _record_fields(tp: Any) -> dict[str, Any] | None:
    """The fields of a record type (dataclass, TypedDict, msgspec Struct) with their resolved annotations."""
    if not isinstance(tp, type):
        return None
    is_typeddict = hasattr(tp, "__required_keys__") and hasattr(tp, "__annotations__")
    is_struct = hasattr(tp, "__struct_fields__")
    if not (dataclasses.is_dataclass(tp) or is_typeddict or is_struct):
        return None
    hints = typing.get_type_hints(tp)
    if dataclasses.is_dataclass(tp):
        return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(tp)}
    if is_struct:
        return {name: hints.get(name, Any) for name in getattr(tp, "__struct_fields__", ())}
    return dict(hints)


class _AnswersReader:
    """Turns plain answers into the record type `decide` asks for."""

    def __init__(self, tp: type[Any], fields: dict[str, tuple[str, str, Any, bool]]) -> None:
        self.tp = tp
        self.fields = fields

    def __call__(self, answers: Mapping[str, Any]) -> Any:
        values: dict[str, Any] = {}
        for name, (qid, _kind, choice_type, listed) in self.fields.items():
            raw = answers.get(qid)
            if listed:
                values[name] = [answer_from_data(item, choice_type) for item in raw or ()]
            else:
                values[name] = answer_from_data(raw, choice_type) if raw is not None else None
        return self.tp(**values)


def _answers_reader(annotation: Any, decider: Decider, where: str) -> _AnswersReader | None:
    fields = _record_fields(annotation)
    if fields is None:
        return None
    plan: dict[str, tuple[str, str, Any, bool]] = {}
    for name, tp in fields.items():
        kind = _answer_kind(tp)
        if kind is None:
            raise BadDefinitionError(
                f"{where}: field {name!r} of {annotation.__name__} is not ChoiceAnswer, ScoreAnswer, NoulAnswer or a "
                "list of one (for a forEach question)",
                file=decider.file,
            )
        qid = _question_for(name, decider)
        if qid is None:
            raise BadDefinitionError(
                f"{where}: field {name!r} of {annotation.__name__} names no question of the decider "
                f"({', '.join(decider.questions)})",
                file=decider.file,
            )
        question = decider.questions[qid]
        qtype, choice_type, listed = kind
        if qtype != question.type:
            raise BadDefinitionError(
                f"{where}: field {name!r} is a {qtype} answer, but question {qid!r} is a {question.type}",
                file=decider.file,
            )
        if listed != (question.for_each is not None):
            want = "a list (the question has forEach)" if question.for_each is not None else "one answer, not a list"
            raise BadDefinitionError(f"{where}: field {name!r} must be {want}", file=decider.file)
        if isinstance(choice_type, type) and issubclass(choice_type, enum.Enum) and isinstance(question.criteria, dict):
            from onellm.deciders._answers import _member

            for value in question.criteria:
                text = ("true" if value else "false") if isinstance(value, bool) else str(value)
                try:
                    _member(choice_type, text)
                except ValueError:
                    raise BadDefinitionError(
                        f"{where}: choice {text!r} of question {qid!r} is not a member of {choice_type.__name__}",
                        file=decider.file,
                    ) from None
        plan[name] = (qid, qtype, choice_type, listed)
    return _AnswersReader(annotation, plan)


async def _call(function: Callable[..., Any], *args: Any) -> Any:
    result = function(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _plain(value: Any, what: str, error_type: type[DeciderInputError | DeciderOutputError], path: str) -> Any:
    from onellm.schema import to_json_value

    try:
        return to_json_value(value)
    except TypeError as error:
        raise error_type(f"{what} returned a value that is not JSON data: {error}", path=path) from None


class PythonDeciderLogic:
    """Decider logic written in Python: a `prepare` and/or a `decide` function (sync or async).

    Args:
        prepare: `prepare(inputs) -> inputs for the templates`.
        decide: `decide(answers, inputs) -> outputs`. Typed answers when its first parameter is annotated with a
            record type of answers (see the module docstring).
        decider: The decider the logic belongs to: checks a typed `decide` against its questions at once.
        name: How the logic is named in errors.
    """

    def __init__(
        self,
        *,
        prepare: Callable[[Any], Any] | None = None,
        decide: Callable[..., Any] | None = None,
        decider: Decider | None = None,
        name: str = "decider logic",
    ) -> None:
        if prepare is None and decide is None:
            raise TypeError(f"{name}: decider logic needs prepare and/or decide")
        self._prepare = prepare
        self._decide = decide
        self.name = name
        self._reader: _AnswersReader | None = None
        if decide is not None and decider is not None:
            self.bind(decider)

    def __repr__(self) -> str:
        return f"PythonDeciderLogic({self.name!r}, prepare={self.has_prepare}, decide={self.has_decide})"

    @property
    def has_prepare(self) -> bool:
        return self._prepare is not None

    @property
    def has_decide(self) -> bool:
        return self._decide is not None

    def bind(self, decider: Decider) -> None:
        """Check a typed `decide` against the decider's questions (a field for a question it lacks, a choice enum
        missing a value, a list for a question without `forEach`).

        Raises:
            BadDefinitionError: naming the field and the question.
        """
        if self._decide is None:
            return
        try:
            hints = typing.get_type_hints(self._decide)
            params = list(inspect.signature(self._decide).parameters)
        except (TypeError, ValueError, NameError):
            return
        if not params:
            raise BadDefinitionError(f"{self.name}: decide takes (answers, inputs)", file=decider.file)
        annotation = hints.get(params[0])
        if annotation is not None:
            self._reader = _answers_reader(annotation, decider, f"{self.name}: decide")

    async def prepare(self, inputs: Any) -> Any:
        if self._prepare is None:
            return inputs
        return _plain(await _call(self._prepare, inputs), f"{self.name}: prepare", DeciderInputError, "inputs")

    async def decide(self, answers: Any, inputs: Any) -> Any:
        if self._decide is None:
            return answers
        given = self._reader(answers) if self._reader is not None else answers
        return _plain(await _call(self._decide, given, inputs), f"{self.name}: decide", DeciderOutputError, "outputs")


# ------------------------------------------------------------------------------------------ attaching and finding


def attach_logic(decider: Decider, logic: DeciderLogic | None) -> Decider:
    """Make `logic` the logic runs of `decider` use (returns the decider)."""
    object.__setattr__(decider, _ATTRIBUTE, logic)
    if isinstance(logic, PythonDeciderLogic):
        logic.bind(decider)
    return decider


def logic_of(decider: Decider) -> tuple[bool, DeciderLogic | None]:
    """(whether logic was attached, the logic) for a decider."""
    if hasattr(decider, _ATTRIBUTE):
        return True, getattr(decider, _ATTRIBUTE)
    return False, None


def decider_logic(path: str | os.PathLike[str]) -> Callable[[type[T]], type[T]]:
    """Make a class the logic of the decider at `path` (relative to the class's module file, or absolute).

    <!-- skip: next "an outline; docs/deciders.md runs a decorated class whole" -->

    ```python
    @decider_logic("triage.decider.yaml")
    class Triage:
        @staticmethod
        def decide(answers: TriageAnswers, inputs: dict) -> Routing: ...

    result = await onellm.decide(Triage, {"title": "Refund please"})
    ```

    The definition is loaded (and the typed `decide` checked against its questions) when the class is decorated;
    `Triage.decider` is the loaded `Decider`.

    Raises:
        BadDefinitionError: the definition is invalid, or a typed `decide` does not fit its questions.
    """

    def wrap(cls: type[T]) -> type[T]:
        from onellm.definitions import Decider

        given = Path(path)
        if not given.is_absolute():
            module = sys.modules.get(cls.__module__)
            module_file = getattr(module, "__file__", None)
            base = Path(module_file).parent if module_file else Path.cwd()
            given = base / given
        decider = Decider.load(given)
        prepare = getattr(cls, "prepare", None)
        decide = getattr(cls, "decide", None)
        logic = PythonDeciderLogic(
            prepare=prepare if callable(prepare) else None,
            decide=decide if callable(decide) else None,
            name=cls.__qualname__,
        )
        attach_logic(decider, logic)
        cls.decider = decider  # type: ignore[attr-defined]
        return cls

    return wrap


def logic_files(definition: Path) -> dict[str, Path]:
    """The logic files beside a definition, by kind (`python`, `javascript`): `decider.py`, `decider.js` (else
    `decider.ts`) beside `decider.yaml`; `triage.decider.py` and so on beside `triage.decider.yaml`."""
    stem = definition.name
    for suffix in (".yaml", ".yml"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    found: dict[str, Path] = {}
    python = definition.with_name(stem + ".py")
    if python.is_file():
        found["python"] = python
    for extension in (".js", ".ts"):
        candidate = definition.with_name(stem + extension)
        if candidate.is_file():
            found["javascript"] = candidate
            break
    return found


_LOADED: dict[tuple[str, int, int], Any] = {}
_LOADED_LOCK = threading.Lock()


def _stamp(path: Path) -> tuple[str, int, int]:
    info = path.stat()
    return str(path.resolve()), info.st_mtime_ns, info.st_size


def _python_logic(path: Path, decider: Decider) -> PythonDeciderLogic:
    stamp = _stamp(path)
    with _LOADED_LOCK:
        module = _LOADED.get(stamp)
    if module is None:
        name = "onellm_decider_" + hashlib.sha256(stamp[0].encode()).hexdigest()[:16]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise BadDefinitionError("the decider logic cannot be loaded as a Python module", file=str(path))
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except SyntaxError as error:
            raise BadDefinitionError(
                f"the decider logic does not parse: {error.msg}", file=str(path), line=error.lineno, column=error.offset
            ) from None
        with _LOADED_LOCK:
            _LOADED[stamp] = module
    prepare = getattr(module, "prepare", None)
    decide = getattr(module, "decide", None)
    if not callable(prepare) and not callable(decide):
        raise BadDefinitionError(
            "decider logic must define prepare(inputs) and/or decide(answers, inputs)", file=str(path)
        )
    return PythonDeciderLogic(
        prepare=prepare if callable(prepare) else None,
        decide=decide if callable(decide) else None,
        decider=decider,
        name=path.name,
    )


def _entry_points() -> list[Any]:
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINT_GROUP, name="javascript"))


async def _javascript_logic(path: Path, decider: Decider) -> DeciderLogic:
    entries = _entry_points()
    if not entries:
        raise CapabilityMissingError(
            f"{path}: a decider's JavaScript logic runs in onellm-js's sandbox, which is not installed; "
            "install it with `pip install onellm-js`"
        )
    entry = entries[0]
    try:
        loader = entry.load()
    except Exception as error:
        raise CapabilityMissingError(
            f"{path}: onellm-js could not be loaded ({type(error).__name__}: {error}); reinstall onellm-js"
        ) from error
    logic = await loader.load(path, name=decider.name or path.parent.name)
    if not isinstance(logic, DeciderLogic):
        raise CapabilityMissingError(f"{path}: the installed onellm-js does not give decider logic; reinstall it")
    return logic


async def find_logic(decider: Decider, *, allow_python: bool = True) -> DeciderLogic | None:
    """The logic of a decider: what was attached to it, else the logic file beside its definition, else None.

    Raises:
        BadDefinitionError: two kinds of logic file beside one definition, or a file that does not load.
        CapabilityMissingError: a `decider.js` without onellm-js installed, naming the package.
        CapabilityDeniedError: a `decider.py` where Python logic is not allowed (`allow_python=False`).
    """
    attached, logic = logic_of(decider)
    if attached:
        return logic
    definition: Path | None = getattr(decider, "_path", None)
    if definition is None:
        return None
    files = logic_files(definition)
    if "python" in files and "javascript" in files:
        raise BadDefinitionError(
            f"two logic files beside the decider: {files['python'].name} and {files['javascript'].name}; keep one",
            file=str(definition),
        )
    if "python" in files:
        if not allow_python:
            from onellm.errors import CapabilityDeniedError

            raise CapabilityDeniedError(
                f"{files['python'].name}: Python decider logic runs unsandboxed in the host and is not run here; "
                "use decider.js, which runs in the sandbox",
                target=files["python"].name,
                rule="python-logic",
            )
        return _python_logic(files["python"], decider)
    if "javascript" in files:
        return await _javascript_logic(files["javascript"], decider)
    return None


_publish("onellm", DeciderLogic)
_publish("onellm.deciders", PythonDeciderLogic)
