"""Rendering a decider: its state and questions with the run's inputs, `forEach` expanded (`spec/definitions.md`,
"Templates in a decider").

Every string holding `{{` is a template, rendered with `.inputs` in scope (and `.item` and `.index` inside a
`forEach` question), missing names an error (`missingKey: error`), no `embed`, code regions not escaped. A string
that is exactly one action (`"{{ .inputs.customer }}"`) is a whole-value template: the action's value goes into the
request as it is, an object as an object, a list as a list, null as null. The value is taken by running the same
action with one more command at the end of its pipeline (`{{ .inputs.customer | capture }}`), which hands the
pipeline's result to the renderer; the text of the action is otherwise untouched, so an error points at the same
line and column.

An error names the file and the line and column of the template in it, and the key path (`state.ticket.title`).
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from onellm._describe import format_path, join_path, type_name
from onellm.errors import DeciderInputError, TemplateError
from onellm.messages import AssetPart
from onellm.providers import DecisionQuestion

if TYPE_CHECKING:
    from onellm.definitions import Decider

__all__ = ["Rendered", "render_decider", "take_images", "whole_value_action"]

_CAPTURE = "onellmCaptureValue"
_captured: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("onellm_decider_capture", default=None)
_EXECUTING = re.compile(r'^executing "(?:[^"\\]|\\.)*" at ')
_KEYWORDS = re.compile(r"\s*(?:if|else|end|range|with|define|template|block|break|continue)\b|\s*/\*")


def _capture(value: Any) -> str:
    held = _captured.get()
    if held is not None:
        held.append(value)
    return ""


_FUNCTIONS = {_CAPTURE: _capture}


def whole_value_action(text: str) -> str | None:
    """The text rewritten to hand the action's value over, when `text` is exactly one action that gives a value;
    None otherwise (the text then renders as text)."""
    if not (text.startswith("{{") and text.endswith("}}")) or text.count("{{") != 1 or text.count("}}") != 1:
        return None
    inner = text[2:-2]
    if inner.startswith("-") and inner[1:2] in (" ", "\t", "\n", "\r"):
        inner = inner[1:]
    if _KEYWORDS.match(inner) or not inner.strip():
        return None
    end = len(text) - 2
    if text[:end].endswith((" -", "\t-", "\n-", "\r-")):
        end -= 2
    return f"{text[:end]} | {_CAPTURE}{text[end:]}"


@dataclass
class Rendered:
    """A decider's state and questions, rendered for one run."""

    state: Any
    """The state as plain data (images still in it; see `take_images`)."""
    questions: list[DecisionQuestion]
    """Every question to ask, `forEach` questions once per element."""
    for_each: dict[str, int]
    """The number of elements of each `forEach` question (0: asked nothing)."""


class _Renderer:
    def __init__(self, decider: Decider) -> None:
        self.decider = decider
        self.file = decider.file or (f"decider {decider.name}" if decider.name else "decider")

    def error(self, steps: list[Any], error: TemplateError) -> TemplateError:
        """The template's error, placed in the decider's file and named by its key path."""
        where = format_path(steps)
        line = error.line
        column = error.column
        doc = getattr(self.decider, "_doc", None)
        if doc is not None:
            try:
                line, column = self._in_file(doc, steps, error)
            except (KeyError, IndexError, TypeError, ValueError, LookupError):
                line, column = error.line, error.column
        detail = _EXECUTING.sub("at ", error.detail, count=1)
        return TemplateError(f"{detail} (at {where})", kind=error.kind, name=self.file, line=line, column=column)

    def _in_file(self, doc: Any, steps: list[Any], error: TemplateError) -> tuple[int | None, int | None]:
        node_line, node_column = doc.position(tuple(self._file_steps(steps)))
        if error.line is None or error.column is None:
            return node_line, node_column
        text_line = doc.text.splitlines()[node_line - 1]
        source = self._source(steps)
        first = source.splitlines()[0] if source else ""
        start = node_column - 1
        if error.line == 1 and text_line[start:].startswith(first):
            return node_line, node_column + error.column - 1
        if error.line == 1 and text_line[start : start + 1] in ('"', "'") and text_line[start + 1 :].startswith(first):
            return node_line, node_column + error.column
        return node_line, node_column  # a block or an escaped scalar: the value's own position

    def _file_steps(self, steps: list[Any]) -> list[Any]:
        if len(steps) >= 2 and steps[0] == "questions":
            keys: dict[str, Any] = getattr(self.decider, "_question_keys", {})
            return ["questions", keys.get(steps[1], steps[1]), *steps[2:]]
        return steps

    def _source(self, steps: list[Any]) -> str:
        value: Any = self.decider.to_data()
        for step in self._file_steps(steps):
            value = value[step]
        return value if isinstance(value, str) else ""

    def text(self, text: str, scope: Mapping[str, Any], steps: list[Any]) -> str:
        if "{{" not in text:
            return text
        from onellm.templating import render

        try:
            return render(
                text,
                scope,
                missing_key="error",
                name=format_path(steps),
                escape_code_regions=False,
            )
        except TemplateError as error:
            raise self.error(steps, error) from None

    def value(self, text: str, scope: Mapping[str, Any], steps: list[Any]) -> Any:
        """A whole-value template's value, or the rendered text of any other string."""
        if "{{" not in text:
            return text
        action = whole_value_action(text)
        if action is None:
            return self.text(text, scope, steps)
        from onellm.templating import render

        held: list[Any] = []
        token = _captured.set(held)
        try:
            rendered = render(
                action,
                scope,
                missing_key="error",
                name=format_path(steps),
                functions=_FUNCTIONS,
                escape_code_regions=False,
            )
        except TemplateError as error:
            raise self.error(steps, error) from None
        finally:
            _captured.reset(token)
        return held[-1] if held else rendered

    def tree(self, value: Any, scope: Mapping[str, Any], steps: list[Any]) -> Any:
        if isinstance(value, str):
            return self.value(value, scope, steps)
        if isinstance(value, Mapping):
            return {k: self.tree(v, scope, [*steps, k]) for k, v in value.items()}
        if isinstance(value, list):
            return [self.tree(v, scope, [*steps, i]) for i, v in enumerate(value)]
        return value

    def instructions(self, given: str | dict[str, str], scope: Mapping[str, Any], steps: list[Any]) -> Any:
        if isinstance(given, str):
            return self.text(given, scope, [*steps, "instructions"])
        return {str(k): self.text(v, scope, [*steps, "instructions", k]) for k, v in given.items()}

    def criteria(self, kind: str, criteria: Any, scope: Mapping[str, Any], steps: list[Any]) -> Any:
        where = [*steps, "criteria"]
        if criteria is None:
            return None
        if isinstance(criteria, list):
            return [self.text(v, scope, [*where, i]) for i, v in enumerate(criteria)]
        out: dict[str, Any] = {}
        for key, description in criteria.items():
            name = _key_text(key)
            out[name] = None if description is None else self.text(description, scope, [*where, key])
        if kind == "noul":
            return {k: v for k, v in out.items() if v is not None} or None
        return out


def _key_text(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def render_decider(decider: Decider, inputs: Any) -> Rendered:
    """Render the state and every question with `inputs` (what `prepare` gave, else the caller's inputs).

    Raises:
        TemplateError: a template failed (a missing name, a bad action), naming the file, line, column and key path.
        DeciderInputError: a `forEach` gave something that is not a list, naming the question.
    """
    r = _Renderer(decider)
    scope: dict[str, Any] = {"inputs": inputs}
    state = r.tree(decider.state, scope, ["state"]) if decider.state is not None else None
    questions: list[DecisionQuestion] = []
    counts: dict[str, int] = {}
    for qid, q in decider.questions.items():
        steps: list[Any] = ["questions", qid]
        if q.for_each is None:
            questions.append(
                DecisionQuestion(
                    key=qid,
                    type=q.type,
                    instructions=r.instructions(q.instructions, scope, steps),
                    criteria=r.criteria(q.type, q.criteria, scope, steps),
                    question_id=qid,
                )
            )
            continue
        items = r.value(q.for_each.strip(), scope, [*steps, "forEach"])
        if items is None:
            items = []
        if not isinstance(items, list | tuple):
            raise DeciderInputError(
                f"{decider.file or decider.name or 'decider'}: the forEach of question {qid!r} gives "
                f"{type_name(items)}, not a list (at {format_path([*steps, 'forEach'])})",
                path=format_path([*steps, "forEach"]),
                decider=decider.name,
            )
        counts[qid] = len(items)
        for index, item in enumerate(items):
            inner = {"inputs": inputs, "item": item, "index": index}
            questions.append(
                DecisionQuestion(
                    key=f"{qid}[{index}]",
                    type=q.type,
                    instructions=r.instructions(q.instructions, inner, steps),
                    criteria=r.criteria(q.type, q.criteria, inner, steps),
                    question_id=qid,
                    index=index,
                )
            )
    return Rendered(state=state, questions=questions, for_each=counts)


def take_images(state: Any, path: str = "state") -> tuple[Any, list[tuple[str, AssetPart]]]:
    """The state with each image (an `AssetPart` of an image type) replaced by a marker (`[image 1]`), and the
    images taken out, with where each was.

    Raises:
        DeciderInputError: an asset that is not an image (a PDF, audio), which no decision engine takes.
    """
    found: list[tuple[str, AssetPart]] = []

    def walk(value: Any, where: str) -> Any:
        if isinstance(value, AssetPart):
            kind = (value.content_type or "").lower()
            if not kind.startswith("image/"):
                raise DeciderInputError(
                    f"{where} is a {kind or 'file'} asset; a decider's state takes images only", path=where
                )
            found.append((where, value))
            return f"[image {len(found)}]"
        if isinstance(value, Mapping):
            return {k: walk(v, join_path(where, k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [walk(v, join_path(where, i)) for i, v in enumerate(value)]
        return value

    return walk(state, path), found
