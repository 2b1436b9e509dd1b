"""Erasable TypeScript: types replaced by spaces, so the JavaScript that is left keeps every line and column.

What is erased: annotations (`x: T`, `(): R`, `x?: T`, `x!: T`), `interface` and `type` declarations, `as T`,
`as const`, `satisfies T`, non-null assertions (`x!`), type parameters and arguments (`<T>` on functions, classes,
methods and calls), `import type` / `export type` (and `type` specifiers), `declare` statements and members, `abstract`
and access modifiers of class members, `implements` clauses, index signatures, overload signatures, `this` parameters,
and namespaces that hold only types. A statement erased whole leaves a `;` where it began, so no two statements run
together. Nothing is type-checked.

What is refused, with the file, line and column of the construct (each has a JavaScript rewrite): `enum`, a
`namespace` (or `module`) with values, constructor parameter properties (`constructor(private x: T)`), `import x =
require(...)` (and other `import x =` aliases), `export =`, `<T>x` type assertions, and parameter decorators.

The reader works on tokens with a small model of where it is (statements, class bodies, object literals, parameter
lists, expressions); it is not a full parser, and syntax it does not know is left for the engine to report.
"""

from __future__ import annotations

from dataclasses import dataclass

from onellm.errors import BadDefinitionError
from onellm_js._lexer import LexError, Positions, Token, tokenize

__all__ = ["erase_types"]

_TS_MEMBER_MODIFIERS = frozenset({"public", "private", "protected", "readonly", "override", "declare", "abstract"})
_JS_MEMBER_MODIFIERS = frozenset({"static", "accessor", "async", "get", "set"})
_PARAMETER_PROPERTY = frozenset({"public", "private", "protected", "readonly", "override"})
_OPERATOR_WORDS = frozenset(
    {
        "typeof", "instanceof", "in", "of", "new", "delete", "void", "return", "throw", "case", "yield", "await",
        "else", "do", "extends", "as", "satisfies", "keyof", "is", "asserts", "default", "export", "import",
        "let", "const", "var", "if", "while", "for", "switch", "try", "catch", "finally", "function", "class",
    }
)  # fmt: skip
_BLOCK_AFTER_WORDS = frozenset({"else", "do", "try", "finally"})


class _NotAType(Exception):
    """The tokens at this point do not form a type."""


@dataclass
class _Frame:
    kind: str
    """`block` (statements), `class` (a class body), `object` (an object literal or pattern), `params` (a parameter
    list), `expr` (anything else in brackets)."""
    close: int
    """Index of the closing token (the end of input for the outermost block)."""
    state: str = "start"
    constructor: bool = False
    annotate: bool = False
    """A declared pattern: an annotation may follow the closing bracket."""
    signature: int | None = None
    """For the parameters of a function declaration: where the declaration starts, to erase it if it has no body."""


class _Eraser:
    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        try:
            self.toks = tokenize(text)
        except LexError as exc:
            line, column = Positions(text).at(exc.offset)
            raise BadDefinitionError(exc.message, file=file, line=line, column=column) from None
        self.match = self._match()
        self.blank: list[tuple[int, int]] = []
        self.semicolons: list[int] = []

    # ------------------------------------------------------------------------------------------------ helpers

    def _match(self) -> dict[int, int]:
        """Index of the closing token for each opening bracket, and of the tail for each template head."""
        pairs: dict[int, int] = {}
        stack: list[int] = []
        closers = {")": "(", "]": "[", "}": "{"}
        for i, t in enumerate(self.toks):
            if (t.kind == "punct" and t.value in "([{") or t.kind == "head":
                stack.append(i)
            elif t.kind in ("middle", "tail"):
                if stack and self.toks[stack[-1]].kind == "head":
                    if t.kind == "tail":
                        pairs[stack.pop()] = i
                else:
                    self._refuse_at(t, "a template literal that does not close")
            elif t.kind == "punct" and t.value in closers:
                if stack and self.toks[stack[-1]].value == closers[t.value] and self.toks[stack[-1]].kind == "punct":
                    pairs[stack.pop()] = i
                else:
                    raise self._error(t, f"unexpected {t.value!r}")
        if stack:
            raise self._error(self.toks[stack[-1]], f"{self.toks[stack[-1]].value!r} is never closed")
        return pairs

    def _error(self, token: Token, message: str) -> BadDefinitionError:
        line, column = Positions(self.text).at(token.start)
        return BadDefinitionError(message, file=self.file, line=line, column=column)

    def _refuse_at(self, token: Token, construct: str, rewrite: str = "") -> None:
        detail = f"{construct} is not erasable TypeScript"
        if rewrite:
            detail += f"; {rewrite}"
        raise self._error(token, detail)

    def t(self, i: int) -> Token:
        return self.toks[min(i, len(self.toks) - 1)]

    def erase(self, i: int, j: int, *, statement: bool = False) -> None:
        """Blank tokens i..j-1 (and what lies between them)."""
        if j <= i:
            return
        start, end = self.toks[i].start, self.toks[j - 1].end
        self.blank.append((start, end))
        if statement:
            self.semicolons.append(start)

    def closes(self, i: int) -> int:
        return self.match.get(i, i)

    def ends_operand(self, i: int) -> bool:
        """Whether token i can end an expression operand (so what follows is an operator, not an operand)."""
        if i < 0:
            return False
        t = self.toks[i]
        if t.kind in ("num", "str", "template", "tail", "regex", "private"):
            return True
        if t.kind == "name":
            return t.value not in _OPERATOR_WORDS
        return t.kind == "punct" and t.value in (")", "]", "}", "++", "--", "!")

    def at_start(self, i: int, frame_open: int) -> bool:
        """Whether token i begins a statement (or is the first token of its block)."""
        if i == frame_open + 1 or i == 0:
            return True
        prev = self.toks[i - 1]
        if prev.kind == "punct" and prev.value in (";", "{", "}"):
            return True
        return self.toks[i].nl and self.ends_operand(i - 1)

    # ------------------------------------------------------------------------------------------------ types

    def type_(self, i: int, *, conditional: bool = True) -> int:
        """Index just after the type starting at token i."""
        t = self.t(i)
        if t.is_("<"):
            j = self.angle(i, params=True)
            if self.t(j).is_("(") and self.t(self.closes(j) + 1).is_("=>"):
                return self.type_(self.closes(j) + 2)
            raise _NotAType
        if t.is_("new") or (t.is_("abstract") and self.t(i + 1).is_("new")):
            j = i + 1 if t.is_("new") else i + 2
            if self.t(j).is_("<"):
                j = self.angle(j, params=True)
            if self.t(j).is_("(") and self.t(self.closes(j) + 1).is_("=>"):
                return self.type_(self.closes(j) + 2)
            raise _NotAType
        if t.is_("(") and self.t(self.closes(i) + 1).is_("=>"):
            return self.type_(self.closes(i) + 2)
        if t.is_("asserts") and self.t(i + 1).kind == "name" and not self.t(i + 1).nl:
            j = i + 2
            if self.t(j).is_("is"):
                return self.type_(j + 1)
            return j
        j = self.union(i)
        if conditional and self.t(j).is_("extends") and not self.t(j).nl:
            j = self.union(j + 1)
            if not self.t(j).is_("?"):
                raise _NotAType
            j = self.type_(j + 1)
            if not self.t(j).is_(":"):
                raise _NotAType
            return self.type_(j + 1)
        return j

    def union(self, i: int) -> int:
        if self.t(i).is_("|") or self.t(i).is_("&"):
            i += 1
        j = self.operand(i)
        while self.t(j).is_("|") or self.t(j).is_("&"):
            j = self.operand(j + 1)
        return j

    def operand(self, i: int) -> int:
        t = self.t(i)
        if t.kind == "name" and t.value in ("keyof", "unique", "readonly") and self._starts_type(i + 1):
            return self.operand(i + 1)
        if t.is_("infer") and self.t(i + 1).kind == "name":
            j = i + 2
            if self.t(j).is_("extends") and not self.t(j).nl:
                try:
                    k = self.type_(j + 1, conditional=False)
                    if not self.t(k).is_("?"):
                        return k
                except _NotAType:
                    pass
            return j
        if t.is_("typeof"):
            j = i + 1
            if self.t(j).is_("import") and self.t(j + 1).is_("("):
                j = self.closes(j + 1) + 1
            elif self.t(j).kind in ("name", "private"):
                j += 1
            else:
                raise _NotAType
            while self.t(j).is_(".") and self.t(j + 1).kind in ("name", "private"):
                j += 2
            if self.t(j).is_("<") and not self.t(j).nl:
                j = self.angle(j)
            return self.postfix(j)
        j = self.primary(i)
        if self.t(j).is_("is") and not self.t(j).nl and self.t(i).kind == "name":
            return self.type_(j + 1)
        return self.postfix(j)

    def postfix(self, j: int) -> int:
        while self.t(j).is_("[") and not self.t(j).nl:
            j = self.closes(j) + 1
        return j

    def _starts_type(self, i: int) -> bool:
        t = self.t(i)
        return t.kind in ("name", "str", "num", "template", "head") or (
            t.kind == "punct" and t.value in ("(", "[", "{", "<", "-")
        )

    def primary(self, i: int) -> int:
        t = self.t(i)
        if t.kind == "punct" and t.value in ("(", "[", "{"):
            return self.closes(i) + 1
        if t.kind in ("str", "num", "template"):
            return i + 1
        if t.kind == "head":
            return self.closes(i) + 1
        if t.is_("-") and self.t(i + 1).kind == "num":
            return i + 2
        if t.is_("import") and self.t(i + 1).is_("("):
            j = self.closes(i + 1) + 1
            while self.t(j).is_(".") and self.t(j + 1).kind == "name":
                j += 2
            if self.t(j).is_("<"):
                j = self.angle(j)
            return j
        if t.kind == "name" and t.value not in ("as", "satisfies", "in", "instanceof", "extends"):
            j = i + 1
            while self.t(j).is_(".") and self.t(j + 1).kind == "name":
                j += 2
            if self.t(j).is_("<"):
                j = self.angle(j)
            return j
        raise _NotAType

    def angle(self, i: int, *, params: bool = False) -> int:
        """Index just after a `<...>` list of types (or, with `params`, of type parameters) starting at token i."""
        if not self.t(i).is_("<"):
            raise _NotAType
        j = i + 1
        while True:
            if self.t(j).is_(">"):
                return j + 1
            if params:
                while (
                    self.t(j).kind == "name"
                    and self.t(j).value in ("const", "in", "out")
                    and self.t(j + 1).kind == "name"
                ):
                    j += 1
                if self.t(j).kind != "name":
                    raise _NotAType
                j += 1
                if self.t(j).is_("extends"):
                    j = self.type_(j + 1)
                if self.t(j).is_("="):
                    j = self.type_(j + 1)
            else:
                j = self.type_(j)
            if self.t(j).is_(","):
                j += 1
                continue
            if self.t(j).is_(">"):
                return j + 1
            raise _NotAType

    def try_type(self, i: int) -> int | None:
        try:
            return self.type_(i)
        except _NotAType:
            return None

    def annotation(self, colon: int) -> int:
        """Erase `: Type` starting at the colon; returns the index after the type."""
        j = self.try_type(colon + 1)
        if j is None:
            raise self._error(self.t(colon + 1), "a type was expected here")
        self.erase(colon, j)
        return j

    def statement_end(self, j: int) -> int:
        """Past an optional `;` at j."""
        return j + 1 if self.t(j).is_(";") else j

    # ------------------------------------------------------------------------------------------------ declarations

    def ts_declaration(self, i: int) -> int | None:
        """A TypeScript-only declaration at statement start (token i, after any `export`/`default`): returns the index
        after it once erased or refused, or None when the tokens are JavaScript after all."""
        t = self.t(i)
        n1, n2 = self.t(i + 1), self.t(i + 2)
        if t.is_("interface") and n1.kind == "name" and not n1.nl:
            j = i + 2
            try:
                if self.t(j).is_("<"):
                    j = self.angle(j, params=True)
                if self.t(j).is_("extends"):
                    j = self.type_(j + 1)
                    while self.t(j).is_(","):
                        j = self.type_(j + 1)
            except _NotAType:
                raise self._error(self.t(j), "cannot read this interface's heading") from None
            if not self.t(j).is_("{"):
                raise self._error(self.t(j), "'{' was expected to open the interface")
            return self.closes(j) + 1
        if t.is_("type") and n1.kind == "name" and not n1.nl and (n2.is_("=") or n2.is_("<")):
            j = i + 2
            if self.t(j).is_("<"):
                try:
                    j = self.angle(j, params=True)
                except _NotAType:
                    raise self._error(self.t(j), "cannot read the type parameters") from None
            if not self.t(j).is_("="):
                raise self._error(self.t(j), "'=' was expected in the type alias")
            k = self.try_type(j + 1)
            if k is None:
                raise self._error(self.t(j + 1), "a type was expected here")
            return self.statement_end(k)
        if (t.is_("enum") and n1.kind == "name") or (t.is_("const") and n1.is_("enum") and n2.kind == "name"):
            self._refuse_at(t, "'enum'", "use a frozen object of constants instead")
        if (t.is_("namespace") or t.is_("module")) and n1.kind in ("name", "str") and not n1.nl:
            j = i + 1
            while self.t(j).kind in ("name", "str") or self.t(j).is_("."):
                j += 1
            if not self.t(j).is_("{"):
                return None
            end = self.closes(j)
            if not self._types_only(j, end):
                self._refuse_at(t, f"a '{t.value}' with values", "use a plain object or separate functions")
            return end + 1
        if t.is_("declare") and not n1.nl and n1.kind == "name":
            return self.declare(i)
        if t.is_("abstract") and n1.is_("class") and not n1.nl:
            self.erase(i, i + 1)
            return None
        return None

    def _types_only(self, open_: int, close: int) -> bool:
        """Whether every statement of the block between `open_` and `close` is a type declaration."""
        i = open_ + 1
        while i < close:
            if self.t(i).is_(";"):
                i += 1
                continue
            j = i + 1 if self.t(i).is_("export") else i
            saved = (len(self.blank), len(self.semicolons))
            try:
                end = self.ts_declaration(j)
            except BadDefinitionError:
                end = None
            del self.blank[saved[0] :]
            del self.semicolons[saved[1] :]
            if end is None or end > close:
                return False
            i = end
        return True

    def declare(self, i: int) -> int:
        """`declare ...`: the whole declaration is erased; returns the index after it."""
        j = i + 1
        while (
            self.t(j).kind == "name"
            and self.t(j).value in ("abstract", "async", "const")
            and self.t(j + 1).kind == "name"
        ):
            if self.t(j).is_("const") and not self.t(j + 1).is_("enum"):
                break
            j += 1
        kw = self.t(j)
        if kw.value in ("const", "let", "var"):
            k = j + 1
            while True:
                while self.t(k).kind == "name" or self.t(k).is_("!"):
                    k += 1
                if self.t(k).is_(":"):
                    k = self.try_type(k + 1) or k + 1
                if self.t(k).is_(","):
                    k += 1
                    continue
                return self.statement_end(k)
        if kw.value == "function":
            k = j + 1
            while not self.t(k).is_("(") and self.t(k).kind != "eof":
                k = self.angle(k, params=True) if self.t(k).is_("<") else k + 1
            k = self.closes(k) + 1
            if self.t(k).is_(":"):
                k = self.try_type(k + 1) or k + 1
            return self.statement_end(k)
        if kw.value in ("class", "enum", "interface", "namespace", "module", "global"):
            k = j + 1
            while (
                not self.t(k).is_("{")
                and not self.t(k).is_(";")
                and self.t(k).kind != "eof"
                and not (self.t(k).nl and k > j + 1 and self.t(k - 1).kind == "str")
            ):
                k += 1
            if self.t(k).is_("{"):
                return self.statement_end(self.closes(k) + 1)
            return self.statement_end(k)
        if kw.value == "type":
            end = self.ts_declaration(j)
            if end is not None:
                return end
        raise self._error(kw, "cannot read this 'declare' statement")

    def import_statement(self, i: int) -> int:
        """An `import` at statement start: erased when it imports types only; refused when it is `import x =`.
        Returns the index after the statement (JavaScript imports are left for the engine)."""
        j = i + 1
        t = self.t(j)
        if t.is_("(") or t.is_("."):
            return i + 1  # import() or import.meta: an expression
        if t.is_("type") and not self.t(j + 1).is_("from") and not self.t(j + 1).is_(","):
            if self.t(j + 1).kind == "name" and self.t(j + 2).is_("="):
                self._refuse_at(self.t(i), "'import x = require(...)'", "use an ES import")
            end = self._import_end(j + 1)
            self.erase(i, end, statement=True)
            return end
        if t.kind == "name" and self.t(j + 1).is_("="):
            self._refuse_at(self.t(i), "'import x = require(...)'", "use an ES import")
        if t.is_("{"):
            close = self.closes(j)
            specifiers = self._specifiers(j, close)
            if specifiers and all(typed for typed, _s, _e in specifiers):
                end = self._import_end(close + 1)
                self.erase(i, end, statement=True)
                return end
            self._erase_typed_specifiers(specifiers)
            return self._import_end(close + 1)
        return self._import_end(j)

    def _import_end(self, j: int) -> int:
        while self.t(j).kind != "eof" and self.t(j).kind != "str":
            if self.t(j).is_("{"):
                j = self.closes(j)
            j += 1
        j += 1  # the module name
        if (self.t(j).is_("with") or self.t(j).is_("assert")) and self.t(j + 1).is_("{"):
            j = self.closes(j + 1) + 1
        return self.statement_end(j)

    def _specifiers(self, open_: int, close: int) -> list[tuple[bool, int, int]]:
        """The specifiers of `{ ... }`: (is a `type` specifier, first token, index after its comma)."""
        out: list[tuple[bool, int, int]] = []
        j = open_ + 1
        while j < close:
            start = j
            typed = (
                self.t(j).is_("type") and self.t(j + 1).kind in ("name", "str") and not self.t(j + 1).is_("as")
            ) or (self.t(j).is_("type") and self.t(j + 1).is_("as") and self.t(j + 2).is_("as"))
            while j < close and not self.t(j).is_(","):
                j += 1
            if self.t(j).is_(","):
                j += 1
            out.append((bool(typed), start, j))
        return out

    def _erase_typed_specifiers(self, specifiers: list[tuple[bool, int, int]]) -> None:
        for typed, start, end in specifiers:
            if typed:
                self.erase(start, end)

    def export_statement(self, i: int) -> int | None:
        """An `export` at statement start. Returns the index after an erased or checked statement, or None to go on
        reading after `export` (and `default`) as usual."""
        j = i + 1
        t = self.t(j)
        if t.is_("="):
            self._refuse_at(self.t(i), "'export ='", "use 'export default'")
        if t.is_("as") and self.t(j + 1).is_("namespace"):
            end = self.statement_end(j + 3)
            self.erase(i, end, statement=True)
            return end
        if t.is_("import") and self.t(j + 1).kind == "name" and self.t(j + 2).is_("="):
            self._refuse_at(self.t(j), "'import x = require(...)'", "use an ES import")
        if t.is_("type") and self.t(j + 1).is_("{"):
            close = self.closes(j + 1)
            end = self._export_end(close + 1)
            self.erase(i, end, statement=True)
            return end
        if t.is_("type") and self.t(j + 1).is_("*"):
            end = self._import_end(j + 1)
            self.erase(i, end, statement=True)
            return end
        if t.is_("{"):
            close = self.closes(j)
            specifiers = self._specifiers(j, close)
            end = self._export_end(close + 1)
            if specifiers and all(typed for typed, _s, _e in specifiers):
                self.erase(i, end, statement=True)
            else:
                self._erase_typed_specifiers(specifiers)
            return end
        if t.is_("default"):
            j += 1
        declared = self.ts_declaration(j)
        if declared is not None:
            self.erase(i, declared, statement=True)
            return declared
        return None

    def _export_end(self, j: int) -> int:
        if self.t(j).is_("from"):
            return self._import_end(j)
        return self.statement_end(j)

    # ------------------------------------------------------------------------------------------------ the walk

    def run(self) -> str:
        self.walk()
        if not self.blank:
            return self.text
        chars = list(self.text)
        for start, end in self.blank:
            for k in range(start, end):
                if chars[k] not in "\n\r\u2028\u2029":
                    chars[k] = " "
        for start in self.semicolons:
            chars[start] = ";"
        return "".join(chars)

    def walk(self) -> None:
        eof = len(self.toks) - 1
        self.stack = [_Frame("block", eof)]
        self.opens = [-1]
        i = 0
        while i < eof:
            frame = self.stack[-1]
            if i >= frame.close and len(self.stack) > 1:
                self.stack.pop()
                opened = self.opens.pop()
                i = self._after_close(self.stack[-1], frame, opened, frame.close) if i == frame.close else i
                continue
            i = self.step(i, frame, self.opens[-1])

    def push(self, kind: str, i: int, **kw: object) -> int:
        """Enter the bracket at token i as a frame of `kind`; returns the index of its first inner token."""
        self.stack.append(_Frame(kind, self.closes(i), **kw))  # type: ignore[arg-type]
        self.opens.append(i)
        return i + 1

    def _after_close(self, outer: _Frame, frame: _Frame, opened: int, close: int) -> int:
        """What follows a closing bracket: an annotation, a parameter list's return type, a missing body."""
        j = close + 1
        if frame.annotate:
            if self.t(j).is_("!"):
                self.erase(j, j + 1)
                j += 1
            if self.t(j).is_(":"):
                j = self.annotation(j)
        if frame.kind == "params":
            if self.t(j).is_(":"):
                j = self.annotation(j)
            if frame.signature is not None and not self.t(j).is_("{"):
                # a function declaration without a body: an overload signature
                end = self.statement_end(j)
                self.erase(frame.signature, end, statement=True)
                return end
            if self.t(j).is_("{"):
                return self.push("block", j)
        if outer.kind == "class" and frame.kind == "block":
            outer.state = "start"
        return j

    def step(self, i: int, frame: _Frame, opened: int) -> int:
        kind = frame.kind
        if kind == "class":
            return self.class_member(i, frame)
        if kind == "params":
            return self.parameter(i, frame)
        if kind == "object" and frame.state == "start":
            return self.object_member(i, frame)
        if kind == "block" and self.at_start(i, opened):
            j = self.statement_start(i, frame)
            if j is not None:
                return j
        return self.expression_token(i, frame)

    # ------------------------------------------------------------------------------------------------ statements

    def statement_start(self, i: int, frame: _Frame) -> int | None:
        t = self.toks[i]
        if t.kind != "name":
            return None
        frame.state = "start"
        if t.value == "export":
            end = self.export_statement(i)
            if end is not None:
                return end
            k = i + 2 if self.t(i + 1).is_("default") else i + 1
            return self.statement_start(k, frame) or k
        if t.value == "import":
            if self.t(i + 1).is_("(") or self.t(i + 1).is_("."):
                return None
            return self.import_statement(i)
        end = self.ts_declaration(i)
        if end is not None:
            self.erase(i, end, statement=True)
            return end
        if t.value in ("let", "const", "var", "using"):
            nxt = self.t(i + 1)
            if nxt.kind == "name" or nxt.is_("{") or nxt.is_("["):
                frame.state = "declaration"
                return self.binding(i + 1)
            return None
        if t.value in ("case", "default") or (self.t(i + 1).is_(":") and t.value not in _OPERATOR_WORDS):
            frame.state = "case"  # a case clause or a label: the next ':' is followed by a block
        return None

    def binding(self, i: int) -> int:
        """A declared name or pattern, then its `!` and `: Type`."""
        t = self.t(i)
        if t.is_("{") or t.is_("["):
            return self.push("object" if t.is_("{") else "expr", i, annotate=True)
        j = i + 1 if t.kind == "name" else i
        if self.t(j).is_("!"):
            self.erase(j, j + 1)
            j += 1
        if self.t(j).is_(":"):
            j = self.annotation(j)
        return j

    # ------------------------------------------------------------------------------------------------ expressions

    def expression_token(self, i: int, frame: _Frame) -> int:
        t = self.toks[i]
        if t.kind == "name":
            if t.value == "function":
                return self.function(i, frame)
            if t.value == "class":
                return self.class_header(i)
            if t.value in ("as", "satisfies") and self.ends_operand(i - 1) and not t.nl:
                j = i + 2 if self.t(i + 1).is_("const") else self.try_type(i + 1)
                if j is not None:
                    self.erase(i, j)
                    return j
            return i + 1
        if t.kind != "punct":
            return i + 1
        v = t.value
        if v == ",":
            if frame.kind == "object":
                frame.state = "start"
            elif frame.kind == "block" and frame.state == "declaration":
                return self.binding(i + 1)
            return i + 1
        if v == ";":
            if frame.kind == "block":
                frame.state = "start"
            return i + 1
        if v == "!" and self.ends_operand(i - 1) and not t.nl and not self.t(i - 1).is_("!"):
            self.erase(i, i + 1)
            return i + 1
        if v == "<":
            return self.angle_in_expression(i)
        if v == "(":
            return self.paren(i)
        if v == "[":
            return self.push("expr", i)
        if v == "{":
            return self.push(self.brace_kind(i, frame), i)
        if v == ":" and frame.kind == "block" and frame.state == "case":
            frame.state = "after-case"
        return i + 1

    def brace_kind(self, i: int, frame: _Frame) -> str:
        prev = self.t(i - 1) if i > 0 else None
        if prev is None:
            return "block"
        if prev.kind == "punct":
            if prev.value in (";", "{", "}", ")", "=>"):
                return "block"
            if prev.value == ":" and frame.kind == "block" and frame.state == "after-case":
                frame.state = "start"
                return "block"
            return "object"
        if prev.kind == "name":
            if prev.value in _BLOCK_AFTER_WORDS:
                return "block"
            if prev.value in _OPERATOR_WORDS:
                return "object"
            return "block"
        return "object"

    def angle_in_expression(self, i: int) -> int:
        if self.ends_operand(i - 1):
            prev = self.t(i - 1)
            if prev.kind == "name" or prev.is_(")") or prev.is_("]"):
                try:
                    j = self.angle(i)
                except _NotAType:
                    return i + 1
                after = self.t(j)
                if after.is_("(") or after.kind in ("template", "head"):
                    self.erase(i, j)
                    return j
            return i + 1
        # An operand cannot start with '<' in JavaScript: a generic arrow function, or a type assertion.
        try:
            end: int | None = self.angle(i, params=True)
        except _NotAType:
            end = None
        if end is not None and self.t(end).is_("(") and self._is_arrow(end):
            self.erase(i, end)
            return end
        self._refuse_at(self.toks[i], "a '<T>x' type assertion", "write 'x as T'")
        return i + 1

    def _is_arrow(self, open_: int) -> bool:
        """Whether the parenthesis at `open_` holds an arrow function's parameters (`=>`, or `: Type =>`, after it)."""
        close = self.closes(open_)
        after = self.t(close + 1)
        if after.is_("=>") and not after.nl:
            return True
        if after.is_(":"):
            j = self.try_type(close + 2)
            return j is not None and self.t(j).is_("=>")
        return False

    def paren(self, i: int) -> int:
        prev = self.t(i - 1) if i > 0 else None
        if prev is not None and prev.is_("catch"):
            return self.push("params", i)
        if prev is not None and prev.is_("for"):
            return self.push("block", i)
        if self._is_arrow(i):
            return self.push("params", i)
        return self.push("expr", i)

    def function(self, i: int, frame: _Frame) -> int:
        """`function [*] [name] [<T>] (params) [: R]`; a declaration without a body is an overload, erased."""
        start = i
        if start > 0 and self.t(start - 1).is_("async"):
            start -= 1
        if start > 0 and self.t(start - 1).is_("default"):
            start -= 1
        if start > 0 and self.t(start - 1).is_("export"):
            start -= 1
        j = i + 1
        if self.t(j).is_("*"):
            j += 1
        if self.t(j).kind == "name":
            j += 1
        if self.t(j).is_("<"):
            try:
                k = self.angle(j, params=True)
            except _NotAType:
                raise self._error(self.t(j), "cannot read the type parameters") from None
            self.erase(j, k)
            j = k
        if not self.t(j).is_("("):
            return j
        statement = frame.kind == "block" and self.at_start(start, -2)
        return self.push("params", j, signature=start if statement else None)

    def class_header(self, i: int) -> int:
        j = i + 1
        if self.t(j).kind == "name" and not self.t(j).is_("extends") and not self.t(j).is_("implements"):
            j += 1
        if self.t(j).is_("<"):
            try:
                k = self.angle(j, params=True)
            except _NotAType:
                raise self._error(self.t(j), "cannot read the type parameters") from None
            self.erase(j, k)
            j = k
        if self.t(j).is_("extends"):
            j += 1
            while not self.t(j).is_("{") and not self.t(j).is_("implements") and self.t(j).kind != "eof":
                if self.t(j).is_("<"):
                    try:
                        k = self.angle(j)
                    except _NotAType:
                        j += 1
                        continue
                    self.erase(j, k)
                    j = k
                elif self.t(j).kind == "punct" and self.t(j).value in "([":
                    j = self.closes(j) + 1
                else:
                    j += 1
        if self.t(j).is_("implements"):
            k = j + 1
            while not self.t(k).is_("{") and self.t(k).kind != "eof":
                k = self.closes(k) + 1 if self.t(k).is_("(") or self.t(k).is_("[") else k + 1
            self.erase(j, k)
            j = k
        if self.t(j).is_("{"):
            return self.push("class", j)
        return j

    # ------------------------------------------------------------------------------------------------ members

    def _member_name_end(self, j: int) -> int | None:
        """Index after a property name at j (identifier, string, number, private name, or computed `[...]`)."""
        t = self.t(j)
        if t.kind in ("name", "str", "num", "private"):
            return j + 1
        if t.is_("["):
            return self.closes(j) + 1
        return None

    def class_member(self, i: int, frame: _Frame) -> int:
        t = self.toks[i]
        if frame.state != "start":
            # inside a field initializer or between a method's parameters and its body
            if t.is_(";"):
                frame.state = "start"
                return i + 1
            starts_member = t.kind in ("name", "str", "num", "private") or t.value in ("[", "*", "@", "#")
            if frame.state == "field" and t.nl and self.ends_operand(i - 1) and starts_member:
                frame.state = "start"
                return self.class_member(i, frame)
            return self.expression_token(i, frame)
        if t.is_(";"):
            return i + 1
        start = i
        j = i
        while self.t(j).is_("@"):
            j += 1
            while self.t(j).kind == "name" or self.t(j).is_("."):
                j += 1
            if self.t(j).is_("("):
                j = self.closes(j) + 1
        if self.t(j).is_("[") and self.t(j + 1).kind == "name" and self.t(j + 2).is_(":"):
            end = self._member_end(self.closes(j) + 1)
            self.erase(j, end, statement=True)
            return end
        declared = abstract = False
        while self.t(j).kind == "name" and self._is_modifier(j):
            word = self.t(j).value
            if word in _TS_MEMBER_MODIFIERS:
                declared = declared or word == "declare"
                abstract = abstract or word == "abstract"
                self.erase(j, j + 1)
            j += 1
        if self.t(j).is_("*"):
            j += 1
        name_end = self._member_name_end(j)
        if name_end is None:
            frame.state = "field"
            return max(j, i + 1)
        k = name_end
        if self.t(k).is_("?") or self.t(k).is_("!"):
            self.erase(k, k + 1)
            k += 1
        if declared:
            end = self._member_end(k)
            self.erase(start, end, statement=True)
            return end
        if self.t(k).is_("<"):
            try:
                m = self.angle(k, params=True)
            except _NotAType:
                raise self._error(self.t(k), "cannot read the type parameters") from None
            self.erase(k, m)
            k = m
        if self.t(k).is_("("):
            constructor = self.t(j).value in ("constructor", "'constructor'", '"constructor"')
            close = self.closes(k)
            after = close + 1
            if self.t(after).is_(":"):
                after = self.try_type(after + 1) or after + 1
            if not self.t(after).is_("{"):
                # an overload or an abstract method: no body
                self._check_parameters(k, close)
                end = self._member_end(after)
                self.erase(start, end, statement=True)
                return end
            frame.state = "method"
            return self.push("params", k, constructor=constructor)
        if self.t(k).is_(":"):
            k = self.annotation(k)
        if abstract:
            end = self._member_end(k)
            self.erase(start, end, statement=True)
            return end
        frame.state = "field"
        return k

    def _check_parameters(self, open_: int, close: int) -> None:
        j = open_ + 1
        at_start = True
        while j < close:
            t = self.t(j)
            if at_start:
                if t.is_("@"):
                    self._refuse_at(t, "a parameter decorator", "decorate the method or class instead")
                if (
                    t.kind == "name"
                    and t.value in _PARAMETER_PROPERTY
                    and (self.t(j + 1).kind == "name" or self.t(j + 1).is_("{") or self.t(j + 1).is_("["))
                ):
                    self._refuse_at(t, "a constructor parameter property", "assign the field in the constructor body")
            at_start = t.is_(",")
            if t.kind == "punct" and t.value in "([{":
                j = self.closes(j)
            j += 1

    def _is_modifier(self, j: int) -> bool:
        word = self.t(j).value
        if word not in _TS_MEMBER_MODIFIERS and word not in _JS_MEMBER_MODIFIERS:
            return False
        nxt = self.t(j + 1)
        if nxt.nl and word not in _TS_MEMBER_MODIFIERS:
            return False
        if nxt.kind in ("name", "str", "num", "private"):
            return True
        return nxt.kind == "punct" and nxt.value in ("[", "*")

    def _member_end(self, j: int) -> int:
        """Past the end of a member that has no body: its `;`, or the end of its line."""
        while self.t(j).kind != "eof" and not self.t(j).is_(";") and not self.t(j).is_("}"):
            if self.t(j).nl:
                return j
            if self.t(j).kind == "punct" and self.t(j).value in "([{":
                j = self.closes(j)
            j += 1
        return self.statement_end(j)

    def object_member(self, i: int, frame: _Frame) -> int:
        frame.state = "value"
        j = i
        while self.t(j).kind == "name" and self.t(j).value in ("async", "get", "set") and self._is_modifier(j):
            j += 1
        if self.t(j).is_("*"):
            j += 1
        name_end = self._member_name_end(j)
        if name_end is None:
            return self.expression_token(i, frame)
        k = name_end
        if self.t(k).is_("<"):
            try:
                m = self.angle(k, params=True)
            except _NotAType:
                return name_end
            if self.t(m).is_("("):
                self.erase(k, m)
                k = m
        if self.t(k).is_("("):
            after = self.t(self.closes(k) + 1)
            if after.is_("{") or after.is_(":"):
                return self.push("params", k)
        return name_end

    def parameter(self, i: int, frame: _Frame) -> int:
        t = self.toks[i]
        if frame.state == "default":
            if t.is_(","):
                frame.state = "start"
                return i + 1
            return self.expression_token(i, frame)
        if frame.state == "start":
            if t.is_("@"):
                self._refuse_at(t, "a parameter decorator", "decorate the method or class instead")
            if (
                t.kind == "name"
                and t.value in _PARAMETER_PROPERTY
                and (self.t(i + 1).kind == "name" or self.t(i + 1).is_("{") or self.t(i + 1).is_("["))
            ):
                self._refuse_at(t, "a constructor parameter property", "assign the field in the constructor body")
            if t.is_("this") and self.t(i + 1).is_(":"):
                j = self.try_type(i + 2) or i + 2
                if self.t(j).is_(","):
                    j += 1
                self.erase(i, j)
                return j
            if t.is_("..."):
                return i + 1
            frame.state = "after"
            if t.is_("{") or t.is_("["):
                return self.push("object" if t.is_("{") else "expr", i)
            return i + 1
        if t.is_("?"):
            self.erase(i, i + 1)
            return i + 1
        if t.is_(":"):
            return self.annotation(i)
        if t.is_("="):
            frame.state = "default"
            return i + 1
        if t.is_(","):
            frame.state = "start"
            return i + 1
        return self.expression_token(i, frame)


def erase_types(text: str, *, file: str = "<input>") -> str:
    """The JavaScript of an erasable TypeScript module: types replaced by spaces (line breaks kept), so lines and
    columns stay those of `text`.

    Raises:
        BadDefinitionError: a construct that cannot be erased (named, with the file, line and column), or text that
            cannot be tokenized.
    """
    return _Eraser(text, file).run()
