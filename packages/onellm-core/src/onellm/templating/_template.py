"""`Template`, `render` and the embed sources."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

from onellm._go.fmt import MISSING, go_quote
from onellm.errors import TemplateError
from onellm.templating._errors import DepthUnwind, ExecFail, LimitError, LimitFail, ParseFail, Where
from onellm.templating._exec import HostState, Program, State, compile_program
from onellm.templating._funcs import OUTPUT_LIMIT, FuncSpec, host_spec, standard_functions
from onellm.templating._parse import parse

__all__ = [
    "DEFAULT_NAME",
    "EmbedSource",
    "Embedded",
    "FileEmbedSource",
    "MissingKey",
    "PromptEmbedSource",
    "Template",
    "render",
]

DEFAULT_NAME = "template"
MAX_EMBED_DEPTH = 16
TIMEOUT = 10.0
"""Seconds a render may take by default (`timeout=`; None: no time bound)."""

MissingKey = Literal["default", "error", "zero", "invalid"]

_SURROGATES = re.compile("[\udc80-\udcff]")
_IDENT = re.compile(r"[^\W\d]\w*")


class Embedded:
    """What an embed source found for a reference."""

    __slots__ = ("base", "key", "name", "text")

    key: str
    """Identity of the prompt, for cycle detection (for a file, its resolved path)."""
    text: str
    """The template text."""
    name: str
    """The name the embedded template is parsed under; it appears in its errors."""
    base: str | None
    """Where references inside this prompt are resolved from (for a file, its path)."""

    def __init__(self, key: str, text: str, name: str, base: str | None = None) -> None:
        self.key = key
        self.text = text
        self.name = name
        self.base = base

    def __repr__(self) -> str:
        return f"Embedded(key={self.key!r}, name={self.name!r})"


@runtime_checkable
class EmbedSource(Protocol):
    """Something that can supply the text of `{{ embed "ref" }}`; `None` means "not here, ask the next source"."""

    def load(self, ref: str, base: str | None) -> Embedded | None: ...


class FileEmbedSource:
    """Files under a root directory: references are relative to the including file (or the root), symbolic links
    are resolved, and anything that resolves outside the root, and every absolute reference, is not found."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        from pathlib import Path

        self.root = Path(root).resolve()

    def load(self, ref: str, base: str | None) -> Embedded | None:
        from pathlib import Path

        if not ref or ref.startswith(("/", "\\")) or os.path.isabs(ref) or re.match(r"[A-Za-z]:", ref):
            return None
        start = self.root
        if base is not None:
            b = Path(base)
            if b.is_relative_to(self.root):
                start = b.parent
        try:
            target = (start / ref).resolve()
            if not target.is_relative_to(self.root) or not target.is_file():
                return None
        except (OSError, RuntimeError, ValueError):
            return None
        try:
            text = target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        return Embedded(key=f"file:{target}", text=text, name=ref, base=str(target))


class PromptEmbedSource:
    """Prompts registered by name."""

    def __init__(self, prompts: Mapping[str, str]) -> None:
        self._found = {ref: Embedded(key=f"prompt:{ref}", text=text, name=ref) for ref, text in prompts.items()}

    @property
    def prompts(self) -> dict[str, str]:
        """The registered prompts, by name."""
        return {ref: e.text for ref, e in self._found.items()}

    def load(self, ref: str, base: str | None) -> Embedded | None:
        return self._found.get(ref)


class _CallableSource:
    def __init__(self, fn: Callable[[str], str | None]) -> None:
        self.fn = fn

    def load(self, ref: str, base: str | None) -> Embedded | None:
        text = self.fn(ref)
        if text is None:
            return None
        return Embedded(key=f"host:{id(self.fn)}:{ref}", text=text, name=ref)


EmbedSourceLike = EmbedSource | Callable[[str], "str | None"]


def _sources(sources: Any) -> tuple[EmbedSource, ...]:
    out: list[EmbedSource] = []
    for s in sources or ():
        if hasattr(s, "load"):
            out.append(s)
        elif callable(s):
            out.append(_CallableSource(s))
        else:
            raise TypeError(f"an embed source must have a load(ref, base) method or be callable, not {s!r}")
    return tuple(out)


class _Source:
    __slots__ = ("name", "text")

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text


def _position(text: str, pos: int) -> tuple[int, int, int]:
    """(1-based line, 1-based column in characters, byte offset) of a character index."""
    pos = max(0, min(pos, len(text)))
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    prefix = text[:pos]
    offset = len(prefix) if prefix.isascii() else len(prefix.encode("utf-8", "surrogatepass"))
    return line, col, offset


def _missing_error(mode: str) -> bool:
    if mode == "error":
        return True
    if mode in ("default", "zero", "invalid"):
        return False
    raise ValueError(f"missing_key must be 'default' or 'error', not {mode!r}")


def _func_table(functions: tuple[tuple[str, Callable[..., Any]], ...] | None) -> Mapping[str, FuncSpec]:
    base = standard_functions()
    if not functions:
        return base
    table = dict(base)
    for name, fn in functions:
        if not isinstance(name, str) or not _IDENT.fullmatch(name):
            raise ValueError(f"function name {name!r} is not a valid identifier")
        if not callable(fn):
            raise TypeError(f"function {name!r} is not callable")
        table[name] = host_spec(name, fn)
    return table


def _funcs_key(functions: Mapping[str, Callable[..., Any]] | None) -> tuple[tuple[str, Callable[..., Any]], ...] | None:
    if not functions:
        return None
    return tuple(sorted(functions.items(), key=lambda kv: kv[0]))


class Template:
    """A parsed template: immutable, cached by `Template.parse`, safe to render from many threads at once."""

    __slots__ = ("_code_regions", "_funcs_key", "_main", "_nslots", "_program", "_source")

    def __init__(self, source: _Source, program: Program, code_regions: bool, funcs_key: Any) -> None:
        self._source = source
        self._program = program
        self._code_regions = code_regions
        self._funcs_key = funcs_key
        main = program.trees[source.name]
        self._main = main.run
        self._nslots = main.nslots

    @classmethod
    def parse(
        cls,
        text: str,
        *,
        name: str | None = None,
        functions: Mapping[str, Callable[..., Any]] | None = None,
        escape_code_regions: bool = True,
    ) -> Template:
        """Parse `text` (or return the cached template for the same text and options).

        Args:
            text: The template text.
            name: The name the text is parsed under; `{{template "name"}}` can call it and errors show it.
            functions: Host functions by name; a name that exists already (a standard function or a builtin)
                is replaced. Their parameters accept any value.
            escape_code_regions: Treat `{{` inside Markdown code (fenced blocks, inline spans) as text.

        Raises:
            TemplateError: with kind "parse", the position and Go's message.
        """
        if not isinstance(text, str):
            raise TypeError(f"template text must be a str, not {type(text).__name__}")
        return _parse_cached(text, name or DEFAULT_NAME, bool(escape_code_regions), _funcs_key(functions))

    @property
    def name(self) -> str:
        """The name the template was parsed under."""
        return self._source.name

    @property
    def text(self) -> str:
        """The original text."""
        return self._source.text

    @property
    def template_names(self) -> list[str]:
        """Every template the text defines (with `define` and `block`), the main one included, sorted."""
        return sorted(self._program.trees)

    def __repr__(self) -> str:
        return f"Template(name={self.name!r})"

    def render(
        self,
        scope: Any = None,
        *,
        missing_key: MissingKey = "default",
        embed_sources: Any = None,
        cancel: Callable[[], bool] | Any = None,
        now: Callable[[], Any] | Any = None,
        max_output: int = OUTPUT_LIMIT,
        max_embed_depth: int = MAX_EMBED_DEPTH,
        timeout: float | None = TIMEOUT,
    ) -> str:
        """Render with `scope` as dot and `$`.

        Args:
            scope: The data: None, str, bool, int, float, Decimal (as float64), mappings and lists, nested.
            missing_key: "default" prints `<no value>` for a missing key; "error" fails and names the key.
            embed_sources: Where `{{ embed "ref" }}` looks, in order: `EmbedSource` objects or callables
                `ref -> text | None`. None are configured by default.
            cancel: Checked while rendering: a callable returning True, or an object with `is_set()`
                (such as `threading.Event`), stops the render with a "limit" error.
            now: The time provider for the `now` function: a callable returning a datetime, or a clock
                (an object with a `now()` method, such as `onellm.FakeClock`).
            max_output: Output limit in characters (64 Mi by default); a function result longer than this (a string
                built by `printf` in a loop, say) fails too, as soon as it is made.
            max_embed_depth: How deep embeds may nest (16 by default).
            timeout: Seconds the render may take (10 by default; None for no bound), checked every 64 iterations
                of a loop and on template calls.

        Raises:
            TemplateError: kind "execute", "embed" or "limit", with the position of the failing action.
        """
        if missing_key == "default":
            missing_error = False
        else:
            missing_error = _missing_error(missing_key)
        if not isinstance(max_output, int) or max_output < 0:
            raise ValueError(f"max_output must be a non-negative int, not {max_output!r}")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds or None, not {timeout!r}")
        if embed_sources is None and cancel is None and now is None and max_output == OUTPUT_LIMIT:
            # The common case: no host hooks.
            out: list[str] = []
            st = State(missing_error, OUTPUT_LIMIT, out, timeout)
            root = MISSING if scope is None else scope
            frame: list[Any] = [None] * self._nslots
            frame[0] = root
            try:
                self._main(st, out.append, root, frame)
            except (ExecFail, DepthUnwind, LimitFail, LimitError, RecursionError) as e:
                raise self._error(e) from None
            result = "".join(out)
            if len(result) > OUTPUT_LIMIT or not result.isascii():
                return self._finish(result, OUTPUT_LIMIT, False)
            return result
        clock = getattr(now, "now", None)
        if callable(clock):
            now = clock
        return self._run(
            scope,
            missing_error,
            _sources(embed_sources),
            _cancel_fn(cancel),
            now,
            max_output,
            max_embed_depth,
            (),
            timeout=timeout,
        )

    def _run(
        self,
        scope: Any,
        missing_error: bool,
        sources: tuple[EmbedSource, ...],
        cancel: Callable[[], bool] | None,
        now: Callable[[], Any] | None,
        limit: int,
        max_embed_depth: int,
        chain: tuple[tuple[str, str, str], ...],
        keep_bytes: bool = False,
        timeout: float | None = TIMEOUT,
    ) -> str:
        out: list[str] = []
        st = HostState(missing_error, limit, out, cancel, now, timeout)
        root = MISSING if scope is None else scope
        if sources:
            st.embed = _Embedder(self, root, sources, cancel, now, limit, max_embed_depth, chain)
        frame: list[Any] = [None] * self._nslots
        frame[0] = root
        try:
            self._main(st, out.append, root, frame)
        except (ExecFail, DepthUnwind, LimitFail, LimitError, RecursionError) as e:
            raise self._error(e) from None
        return self._finish("".join(out), limit, keep_bytes)

    def _finish(self, result: str, limit: int, keep_bytes: bool) -> str:
        if len(result) > limit:
            raise TemplateError(f"output exceeds the limit of {limit} characters", kind="limit", name=self._source.name)
        if not keep_bytes and not result.isascii() and _SURROGATES.search(result):
            result = _SURROGATES.sub("\ufffd", result)
        return result

    def _error(self, e: Exception) -> TemplateError:
        if isinstance(e, ExecFail):
            return self._exec_error(e)
        if isinstance(e, DepthUnwind):
            return self._exec_error(e.fail())
        if isinstance(e, LimitFail | LimitError):
            return TemplateError(str(e), kind="limit", name=self._source.name)
        return TemplateError("exceeded maximum template depth (100000)", kind="execute", name=self._source.name)

    def _render_bytes(self, scope: Any, missing_key: MissingKey = "default") -> bytes:
        """The exact bytes Go would write, including bytes that are not valid UTF-8 (for conformance tests)."""
        text = self._run(scope, _missing_error(missing_key), (), None, None, OUTPUT_LIMIT, MAX_EMBED_DEPTH, (), True)
        return text.encode("utf-8", "surrogateescape")

    def _exec_error(self, e: ExecFail) -> TemplateError:
        src: _Source = e.where.source
        if e.node is None:
            return TemplateError(e.detail, kind=e.kind, name=src.name)
        line, col, offset = _position(src.text, e.node.pos)
        return TemplateError(e.detail, kind=e.kind, name=src.name, line=line, column=col, offset=offset)


def _cancel_fn(cancel: Any) -> Callable[[], bool] | None:
    if cancel is None:
        return None
    is_set = getattr(cancel, "is_set", None)
    if callable(is_set):
        return is_set  # type: ignore[no-any-return]
    if callable(cancel):
        return cancel  # type: ignore[no-any-return]
    raise TypeError("cancel must be a callable returning bool or an object with is_set()")


class _Embedder:
    """Resolves and renders `{{ embed "ref" }}` for one render."""

    __slots__ = ("cancel", "chain", "limit", "max_depth", "now", "root", "sources", "template")

    def __init__(
        self,
        template: Template,
        root: Any,
        sources: tuple[EmbedSource, ...],
        cancel: Callable[[], bool] | None,
        now: Callable[[], Any] | None,
        limit: int,
        max_depth: int,
        chain: tuple[tuple[str, str, str], ...],
    ) -> None:
        self.template = template
        self.root = root
        self.sources = sources
        self.cancel = cancel
        self.now = now
        self.limit = limit
        self.max_depth = max_depth
        self.chain = chain

    def __call__(self, st: State, where: Where, node: Any, ref: str) -> str:
        if len(self.chain) >= self.max_depth:
            raise ExecFail(
                where, node, f"embed {go_quote(ref)}: nesting deeper than {self.max_depth} levels", kind="limit"
            )
        base = self.chain[-1][1] if self.chain else None
        found: Embedded | None = None
        for src in self.sources:
            try:
                found = src.load(ref, base or None)
            except Exception as e:
                detail = f"embed {go_quote(ref)}: the embed source failed: {e or type(e).__name__}"
                raise ExecFail(where, node, detail, kind="embed") from e
            if found is not None:
                break
        if found is None:
            raise ExecFail(where, node, f"embed {go_quote(ref)}: not found in any embed source", kind="embed")
        if any(found.key == k for k, _b, _n in self.chain):
            names = [n for _k, _b, n in self.chain]
            start = next(i for i, (k, _b, _n) in enumerate(self.chain) if k == found.key)
            cycle = [*names[start:], found.name]
            raise ExecFail(where, node, "embed cycle: " + " -> ".join(cycle), kind="embed")
        tmpl = _parse_cached(found.text, found.name, self.template._code_regions, self.template._funcs_key)
        out: list[str] = []
        inner = HostState(st.missing_error, self.limit, out, self.cancel, self.now)
        inner.timeout, inner.deadline = st.timeout, st.deadline
        inner.embed = _Embedder(
            tmpl,
            self.root,
            self.sources,
            self.cancel,
            self.now,
            self.limit,
            self.max_depth,
            (*self.chain, (found.key, found.base or "", found.name)),
        )
        frame: list[Any] = [None] * tmpl._nslots
        frame[0] = self.root
        tmpl._main(inner, out.append, self.root, frame)
        text = "".join(out)
        return text


@functools.lru_cache(maxsize=1024)
def _parse_cached(text: str, name: str, code_regions: bool, funcs_key: Any) -> Template:
    funcs = _func_table(funcs_key)
    source = _Source(name, text)
    try:
        trees = parse(text, name, funcs, code_regions)
    except ParseFail as e:
        _line, col, offset = _position(text, e.pos)
        raise TemplateError(e.message, kind="parse", name=name, line=e.line, column=col, offset=offset) from None
    except RecursionError:
        raise TemplateError("template nested too deeply", kind="parse", name=name) from None
    try:
        program = compile_program(trees, source, funcs)
    except RecursionError:
        raise TemplateError("template nested too deeply", kind="parse", name=name) from None
    return Template(source, program, code_regions, funcs_key)


def render(
    text: str,
    scope: Any = None,
    *,
    missing_key: MissingKey = "default",
    name: str | None = None,
    functions: Mapping[str, Callable[..., Any]] | None = None,
    escape_code_regions: bool = True,
    embed_sources: Any = None,
    cancel: Any = None,
    now: Callable[[], Any] | Any = None,
    max_output: int = OUTPUT_LIMIT,
    max_embed_depth: int = MAX_EMBED_DEPTH,
    timeout: float | None = TIMEOUT,
) -> str:
    """Parse (cached) and render `text` with `scope`. See `Template.parse` and `Template.render`.

    The limits are those of `Template.render`: output (and any function result) at most `max_output` characters,
    64 Mi by default; at most `timeout` seconds, 10 by default; both fail with a `TemplateError` of kind "limit".
    """
    if type(text) is not str:
        raise TypeError(f"template text must be a str, not {type(text).__name__}")
    tmpl = _parse_cached(
        text, name or DEFAULT_NAME, escape_code_regions is not False, _funcs_key(functions) if functions else None
    )
    return tmpl.render(
        scope,
        missing_key=missing_key,
        embed_sources=embed_sources,
        cancel=cancel,
        now=now,
        max_output=max_output,
        max_embed_depth=max_embed_depth,
        timeout=timeout,
    )
