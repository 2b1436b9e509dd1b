"""`JsDeciderLogic`: a decider's logic in JavaScript (`decider.js`) or erasable TypeScript (`decider.ts`).

The module exports `prepare(inputs)` (turns the caller's inputs into what the templates read) and/or
`decide({ answers, inputs })` (turns the answers into the outcome). Both are pure: no grants, no `ctx`, a fresh engine
per call. They may be `async` and return JSON; a property that is `undefined` is written as `null`, and so is an
`undefined` result, the form compiled decider bundles have always produced.

This is the JavaScript side of the decider-logic seam: an engine calls `await logic.prepare(inputs)` before rendering,
and `await logic.decide(answers, inputs)` after the questions are answered. A missing function passes its input
through (`prepare` returns the inputs, `decide` the answers).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onellm.errors import BadDefinitionError
from onellm_js._errors import JsSandboxError
from onellm_js._limiter import JsSlot
from onellm_js._options import JsSandboxOptions
from onellm_js._sandbox import JsSandbox
from onellm_js._source import JsSource

if TYPE_CHECKING:
    from onellm.definitions import Decider

__all__ = ["JsDeciderLogic"]

_LOGIC_FILES = ("decider.js", "decider.ts")


def _read_decider(folder: Path, strict: bool) -> tuple[Decider, Path | None]:
    from onellm.definitions import Decider

    decider = Decider.load(folder, strict=strict)
    for candidate in _LOGIC_FILES:
        path = folder / candidate
        if path.is_file():
            return decider, path
    return decider, None


class JsDeciderLogic:
    """A decider's `prepare` and `decide`, run in the sandbox."""

    def __init__(self, source: JsSource, exports: frozenset[str], *, sandbox: JsSandbox, name: str) -> None:
        self.source = source
        """The module (types already erased for `.ts`)."""
        self.name = name
        """The decider's name: the limiter's per-decider share is counted by it."""
        self.sandbox = sandbox
        self.has_prepare = "prepare" in exports
        """Whether the module exports `prepare`."""
        self.has_decide = "decide" in exports
        """Whether the module exports `decide`."""

    def __repr__(self) -> str:
        return f"JsDeciderLogic({self.source.file!r}, prepare={self.has_prepare}, decide={self.has_decide})"

    @classmethod
    async def load(
        cls,
        path: str | os.PathLike[str],
        *,
        options: JsSandboxOptions | None = None,
        sandbox: JsSandbox | None = None,
        name: str | None = None,
    ) -> JsDeciderLogic:
        """Load a `.js` or `.ts` logic file the host chose (read as the host), running its top level once.

        Raises:
            BadDefinitionError: the file does not parse, uses TypeScript that cannot be erased (the construct named,
                with file, line and column), imports another file, fails or passes a limit at its top level, or
                exports neither `prepare` nor `decide`.
        """
        import anyio.to_thread

        box = sandbox or JsSandbox(options)
        file = Path(path)
        source = await anyio.to_thread.run_sync(JsSource.read, file)
        source.check_module()
        try:
            described = await box.describe(source, slot=JsSlot(kind="load"))
        except JsSandboxError as exc:
            raise BadDefinitionError(
                f"the decider logic failed to load: {exc.message}", file=source.file, line=exc.line, column=exc.column
            ) from None
        exports = frozenset(described.get("exports") or ())
        if "prepare" not in exports and "decide" not in exports:
            raise BadDefinitionError(
                "decider logic must export prepare(inputs) and/or decide({ answers, inputs })", file=source.file
            )
        return cls(source, exports, sandbox=box, name=name or (source.path or file).parent.name)

    @classmethod
    async def load_decider(
        cls,
        directory: str | os.PathLike[str],
        *,
        options: JsSandboxOptions | None = None,
        sandbox: JsSandbox | None = None,
        strict: bool = True,
    ) -> tuple[Decider, JsDeciderLogic | None]:
        """Read `decider.yaml` in `directory` and the logic beside it: `decider.js` when it exists, else `decider.ts`,
        else none.

        Raises:
            BadDefinitionError: the definition or the logic is invalid.
        """
        import anyio.to_thread

        folder = Path(directory)
        decider, logic_file = await anyio.to_thread.run_sync(_read_decider, folder, strict)
        if logic_file is None:
            return decider, None
        logic = await cls.load(logic_file, options=options, sandbox=sandbox, name=decider.name or folder.name)
        return decider, logic

    @classmethod
    def load_sync(cls, path: str | os.PathLike[str], *, options: JsSandboxOptions | None = None) -> JsDeciderLogic:
        """Blocking form of `load`, for scripts. Not for use inside async code."""
        import anyio

        return anyio.run(lambda: cls.load(path, options=options))

    async def prepare(self, inputs: Any) -> Any:
        """The template inputs: `prepare(inputs)` of the module, or `inputs` unchanged when it has none.

        Raises:
            JsSandboxError: the function threw, hit a limit, or returned something that is not JSON.
        """
        if not self.has_prepare:
            return inputs
        result = await self.sandbox.call(
            self.source, "prepare", [inputs], pass_ctx=False, undefined_as_null=True, slot=self._slot()
        )
        return result.value

    async def decide(self, answers: Any, inputs: Any) -> Any:
        """The outcome: `decide({ answers, inputs })` of the module, or `answers` unchanged when it has none.

        Raises:
            JsSandboxError: the function threw, hit a limit, or returned something that is not JSON.
        """
        if not self.has_decide:
            return answers
        result = await self.sandbox.call(
            self.source,
            "decide",
            [{"answers": answers, "inputs": inputs}],
            pass_ctx=False,
            undefined_as_null=True,
            slot=self._slot(),
        )
        return result.value

    def _slot(self) -> JsSlot:
        return JsSlot(kind="decider", owner=self.name)
