"""The parser: tokens to a tree of nodes, with Go's checks and messages.

It mirrors the grammar of Go's `text/template/parse`: actions with pipelines and variable declarations, control
structures (`if`, `range`, `with`, each with `else`, and `else if` / `else with` chains), `define`, `block`,
`template`, `break` and `continue`. Like Go it checks at parse time that functions exist, that variables are
declared before use and that `break`/`continue` sit inside a `range`; everything else is checked when the template
runs. Node `__str__` reproduces Go's `String()`, which error messages quote.
"""

from __future__ import annotations

import re
from collections.abc import Container

from onellm._go.fmt import from_bytes, go_quote
from onellm.templating._errors import ParseFail
from onellm.templating._lexer import (
    T_ASSIGN,
    T_BLOCK,
    T_BOOL,
    T_BREAK,
    T_CHAR,
    T_CHARCONST,
    T_COMPLEX,
    T_CONTINUE,
    T_DECLARE,
    T_DEFINE,
    T_DOT,
    T_ELSE,
    T_END,
    T_EOF,
    T_ERROR,
    T_FIELD,
    T_IDENT,
    T_IF,
    T_LDELIM,
    T_LPAREN,
    T_NIL,
    T_NUMBER,
    T_PIPE,
    T_RANGE,
    T_RAWSTRING,
    T_RDELIM,
    T_RPAREN,
    T_SPACE,
    T_STRING,
    T_TEMPLATE,
    T_TEXT,
    T_VARIABLE,
    T_WITH,
    Token,
    lex,
    token_text,
)

__all__ = ["parse"]

# Deepest nesting of parentheses and of control structures. Go allows more (10000 parentheses, no limit on
# structures); Python's stack is smaller, and a limit keeps parsing from exhausting it.
MAX_PAREN_DEPTH = 100
MAX_NESTING = 150

# Go's unicode.IsSpace: ASCII white space, NEL, NBSP and the Unicode White_Space characters.
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


# ---------------------------------------------------------------------------------------------------------------
# Nodes


class Node:
    __slots__ = ("pos",)

    def __init__(self, pos: int) -> None:
        self.pos = pos


class ListNode(Node):
    __slots__ = ("nodes",)

    def __init__(self, pos: int) -> None:
        super().__init__(pos)
        self.nodes: list[Node] = []

    def __str__(self) -> str:
        return "".join(str(n) for n in self.nodes)


class TextNode(Node):
    __slots__ = ("text",)

    def __init__(self, pos: int, text: str) -> None:
        super().__init__(pos)
        self.text = text

    def __str__(self) -> str:
        return go_quote(self.text)


class VariableNode(Node):
    __slots__ = ("ident",)

    def __init__(self, pos: int, name: str) -> None:
        super().__init__(pos)
        self.ident = name.split(".")

    def __str__(self) -> str:
        return ".".join(self.ident)


class CommandNode(Node):
    __slots__ = ("args",)

    def __init__(self, pos: int) -> None:
        super().__init__(pos)
        self.args: list[Node] = []

    def __str__(self) -> str:
        return " ".join(f"({a})" if isinstance(a, PipeNode) else str(a) for a in self.args)


class PipeNode(Node):
    __slots__ = ("cmds", "decl", "is_assign", "line")

    def __init__(self, pos: int, line: int) -> None:
        super().__init__(pos)
        self.line = line
        self.is_assign = False
        self.decl: list[VariableNode] = []
        self.cmds: list[CommandNode] = []

    def __str__(self) -> str:
        s = ""
        if self.decl:
            s = ", ".join(str(v) for v in self.decl) + (" = " if self.is_assign else " := ")
        return s + " | ".join(str(c) for c in self.cmds)


class ActionNode(Node):
    __slots__ = ("line", "pipe")

    def __init__(self, pos: int, line: int, pipe: PipeNode) -> None:
        super().__init__(pos)
        self.line = line
        self.pipe = pipe

    def __str__(self) -> str:
        return "{{" + str(self.pipe) + "}}"


class IdentifierNode(Node):
    __slots__ = ("ident",)

    def __init__(self, pos: int, ident: str) -> None:
        super().__init__(pos)
        self.ident = ident

    def __str__(self) -> str:
        return self.ident


class DotNode(Node):
    __slots__ = ()

    def __str__(self) -> str:
        return "."


class NilNode(Node):
    __slots__ = ()

    def __str__(self) -> str:
        return "nil"


class FieldNode(Node):
    __slots__ = ("ident",)

    def __init__(self, pos: int, ident: str) -> None:
        super().__init__(pos)
        self.ident = ident[1:].split(".")

    def __str__(self) -> str:
        return "." + ".".join(self.ident)


class ChainNode(Node):
    __slots__ = ("field", "node")

    def __init__(self, pos: int, node: Node) -> None:
        super().__init__(pos)
        self.node = node
        self.field: list[str] = []

    def __str__(self) -> str:
        s = f"({self.node})" if isinstance(self.node, PipeNode) else str(self.node)
        return s + "".join("." + f for f in self.field)


class BoolNode(Node):
    __slots__ = ("value",)

    def __init__(self, pos: int, value: bool) -> None:
        super().__init__(pos)
        self.value = value

    def __str__(self) -> str:
        return "true" if self.value else "false"


class NumberNode(Node):
    __slots__ = ("complex_value", "float_value", "int_value", "is_complex", "is_float", "is_int", "is_uint", "text")

    def __init__(self, pos: int, text: str) -> None:
        super().__init__(pos)
        self.text = text
        self.is_int = self.is_uint = self.is_float = self.is_complex = False
        self.int_value = 0
        self.float_value = 0.0
        self.complex_value = 0j

    def __str__(self) -> str:
        return self.text


class StringNode(Node):
    __slots__ = ("quoted", "text")

    def __init__(self, pos: int, quoted: str, text: str) -> None:
        super().__init__(pos)
        self.quoted = quoted
        self.text = text

    def __str__(self) -> str:
        return self.quoted


class EndNode(Node):
    __slots__ = ()

    def __str__(self) -> str:
        return "{{end}}"


class ElseNode(Node):
    __slots__ = ()

    def __str__(self) -> str:
        return "{{else}}"


class BreakNode(Node):
    __slots__ = ()

    def __str__(self) -> str:
        return "{{break}}"


class ContinueNode(Node):
    __slots__ = ()

    def __str__(self) -> str:
        return "{{continue}}"


class BranchNode(Node):
    __slots__ = ("else_list", "keyword", "line", "list", "pipe")

    def __init__(self, keyword: str, pos: int, line: int, pipe: PipeNode, lst: ListNode, else_list: ListNode | None):
        super().__init__(pos)
        self.keyword = keyword
        self.line = line
        self.pipe = pipe
        self.list = lst
        self.else_list = else_list

    def __str__(self) -> str:
        s = "{{" + self.keyword + " " + str(self.pipe) + "}}" + str(self.list)
        if self.else_list is not None:
            s += "{{else}}" + str(self.else_list)
        return s + "{{end}}"


class IfNode(BranchNode):
    __slots__ = ()


class RangeNode(BranchNode):
    __slots__ = ()


class WithNode(BranchNode):
    __slots__ = ()


class TemplateNode(Node):
    __slots__ = ("line", "name", "pipe")

    def __init__(self, pos: int, line: int, name: str, pipe: PipeNode | None) -> None:
        super().__init__(pos)
        self.line = line
        self.name = name
        self.pipe = pipe

    def __str__(self) -> str:
        if self.pipe is None:
            return "{{template " + go_quote(self.name) + "}}"
        return "{{template " + go_quote(self.name) + " " + str(self.pipe) + "}}"


def is_empty_tree(n: Node | None) -> bool:
    if n is None:
        return True
    if isinstance(n, ListNode):
        return all(is_empty_tree(c) for c in n.nodes)
    if isinstance(n, TextNode):
        return n.text.strip(GO_SPACE) == ""
    return False


# ---------------------------------------------------------------------------------------------------------------
# Literals


def _unhex(c: str) -> int:
    if "0" <= c <= "9":
        return ord(c) - 48
    if "a" <= c <= "f":
        return ord(c) - 87
    if "A" <= c <= "F":
        return ord(c) - 55
    return -1


def unquote_char(s: str, quote: str) -> tuple[int, bool, str]:
    """Go's `strconv.UnquoteChar`: (value, is_rune, tail); raises ValueError('invalid syntax')."""
    if not s:
        raise ValueError("invalid syntax")
    c = s[0]
    if c == quote and quote in "'\"":
        raise ValueError("invalid syntax")
    if ord(c) >= 0x80:
        return ord(c), True, s[1:]
    if c != "\\":
        return ord(c), False, s[1:]
    if len(s) <= 1:
        raise ValueError("invalid syntax")
    c = s[1]
    s = s[2:]
    simple = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}
    if c in simple:
        return simple[c], False, s
    if c in "xuU":
        n = {"x": 2, "u": 4, "U": 8}[c]
        if len(s) < n:
            raise ValueError("invalid syntax")
        v = 0
        for j in range(n):
            x = _unhex(s[j])
            if x < 0:
                raise ValueError("invalid syntax")
            v = (v << 4) | x
        s = s[n:]
        if c == "x":
            return v, False, s
        if v > 0x10FFFF or 0xD800 <= v <= 0xDFFF:
            raise ValueError("invalid syntax")
        return v, True, s
    if "0" <= c <= "7":
        v = ord(c) - 48
        if len(s) < 2:
            raise ValueError("invalid syntax")
        for j in range(2):
            x = ord(s[j]) - 48
            if x < 0 or x > 7:
                raise ValueError("invalid syntax")
            v = (v << 3) | x
        s = s[2:]
        if v > 255:
            raise ValueError("invalid syntax")
        return v, False, s
    if c in "'\"":
        if c != quote:
            raise ValueError("invalid syntax")
        return ord(c), False, s
    raise ValueError("invalid syntax")


def unquote(s: str) -> str:
    """Go's `strconv.Unquote` for "..." and `...` strings."""
    if len(s) < 2 or s[0] != s[-1]:
        raise ValueError("invalid syntax")
    q = s[0]
    body = s[1:-1]
    if q == "`":
        if "`" in body:
            raise ValueError("invalid syntax")
        return body.replace("\r", "")
    if q != '"':
        raise ValueError("invalid syntax")
    if "\\" not in body and "\n" not in body:
        return body
    out = bytearray()
    while body:
        v, is_rune, body = unquote_char(body, '"')
        if v < 0x80 or not is_rune:
            if v < 0x100:
                out.append(v)
            else:
                out += chr(v).encode("utf-8", "surrogatepass")
        else:
            out += chr(v).encode("utf-8", "surrogatepass")
    return from_bytes(bytes(out))


def _underscore_ok(s: str) -> bool:
    saw = "^"
    i = 0
    if s[:1] in ("+", "-"):
        s = s[1:]
    hexa = False
    if len(s) >= 2 and s[0] == "0" and s[1].lower() in "box":
        i = 2
        saw = "0"
        hexa = s[1].lower() == "x"
    while i < len(s):
        c = s[i]
        if "0" <= c <= "9" or (hexa and "a" <= c.lower() <= "f"):
            saw = "0"
        elif c == "_":
            if saw != "0":
                return False
            saw = "_"
        else:
            if saw == "_":
                return False
            saw = "!"
        i += 1
    return saw != "_"


_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}


def _parse_int(text: str, unsigned: bool) -> int | None:
    s = text
    neg = False
    if s[:1] in ("+", "-"):
        if unsigned:
            return None
        neg = s[0] == "-"
        s = s[1:]
    if not s:
        return None
    if "_" in s and not _underscore_ok(s):
        return None
    base = 10
    body = s
    if s[0] == "0" and len(s) > 1:
        c = s[1].lower()
        if c == "x":
            base, body = 16, s[2:]
        elif c == "o":
            base, body = 8, s[2:]
        elif c == "b":
            base, body = 2, s[2:]
        else:
            base, body = 8, s[1:]
    body = body.replace("_", "")
    if not body:
        return None
    valid = _DIGITS[base]
    for ch in body:
        if ch not in valid:
            return None
    v = int(body, base)
    if neg:
        v = -v
    if unsigned:
        return v if v < (1 << 64) else None
    return v if -(1 << 63) <= v < (1 << 63) else None


_DEC_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_HEX_FLOAT = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+")


def _parse_float(text: str) -> float | None:
    s = text
    if "_" in s:
        if not _underscore_ok(s):
            return None
        s = s.replace("_", "")
    if _DEC_FLOAT.fullmatch(s):
        v = float(s)
        if v in (float("inf"), float("-inf")):
            return None
        return v
    if _HEX_FLOAT.fullmatch(s):
        try:
            return float.fromhex(s)
        except OverflowError:
            return None
    return None


def new_number(pos: int, text: str, typ: int) -> NumberNode:
    """Go's parse.newNumber; raises ValueError with Go's message."""
    n = NumberNode(pos, text)
    if typ == T_CHARCONST:
        r, _is_rune, tail = unquote_char(text[1:], text[0])
        if tail != "'":
            raise ValueError(f"malformed character constant: {text}")
        n.int_value = r
        n.is_int = n.is_uint = n.is_float = True
        n.float_value = float(r)
        return n
    if typ == T_COMPLEX:
        try:
            c = complex(text.replace("_", "").replace("i", "j"))
        except ValueError:
            raise ValueError(f"illegal number syntax: {go_quote(text)}") from None
        n.is_complex = True
        n.complex_value = c
        _simplify_complex(n)
        return n
    if text.endswith("i"):
        f = _parse_float(text[:-1])
        if f is None:
            iv = _parse_int(text[:-1], False)
            f = float(iv) if iv is not None else None
        if f is not None:
            n.is_complex = True
            n.complex_value = complex(0, f)
            _simplify_complex(n)
            return n
    u = _parse_int(text, True)
    if u is not None:
        n.is_uint = True
    i = _parse_int(text, False)
    if i is not None:
        n.is_int = True
        n.int_value = i
        if i == 0:
            n.is_uint = True
    if n.is_int:
        n.is_float = True
        n.float_value = float(n.int_value)
    elif n.is_uint and u is not None:
        n.is_float = True
        n.float_value = float(u)
        n.int_value = u
    else:
        f = _parse_float(text)
        if f is not None:
            if not any(ch in text for ch in ".eEpP"):
                raise ValueError(f"integer overflow: {go_quote(text)}")
            n.is_float = True
            n.float_value = f
            if f == int(f) and -(1 << 63) <= int(f) < (1 << 63):
                n.is_int = True
                n.int_value = int(f)
            if f == int(f) and 0 <= int(f) < (1 << 64):
                n.is_uint = True
    if not (n.is_int or n.is_uint or n.is_float):
        raise ValueError(f"illegal number syntax: {go_quote(text)}")
    return n


def _simplify_complex(n: NumberNode) -> None:
    c = n.complex_value
    if c.imag == 0:
        n.is_float = True
        n.float_value = c.real
        if c.real == int(c.real) and -(1 << 63) <= int(c.real) < (1 << 63):
            n.is_int = True
            n.int_value = int(c.real)
        if c.real == int(c.real) and 0 <= int(c.real) < (1 << 64):
            n.is_uint = True


# ---------------------------------------------------------------------------------------------------------------
# Parser

_OPERAND_START = frozenset(
    (
        T_BOOL,
        T_CHARCONST,
        T_COMPLEX,
        T_DOT,
        T_FIELD,
        T_IDENT,
        T_NUMBER,
        T_NIL,
        T_RAWSTRING,
        T_STRING,
        T_VARIABLE,
        T_LPAREN,
    )
)


class _Parser:
    def __init__(self, text: str, name: str, funcs: Container[str], code_regions: bool) -> None:
        self.toks: list[Token] = lex(text, code_regions)
        self.ntoks = len(self.toks)
        self.i = 0
        self.hi = 0
        self.name = name
        self.funcs = funcs
        self.vars: list[str] = ["$"]
        self.range_depth = 0
        self.action_line = 0
        self.paren_depth = 0
        self.nesting = 0
        self.trees: dict[str, ListNode] = {}

    # -- tokens

    def next(self) -> Token:
        i = self.i
        if i >= self.ntoks:
            return self.toks[-1]
        self.i = i + 1
        if self.i > self.hi:
            self.hi = self.i
        return self.toks[i]

    def backup(self) -> None:
        self.i -= 1

    def peek(self) -> Token:
        tok = self.next()
        self.backup()
        return tok

    def next_non_space(self) -> Token:
        while True:
            tok = self.next()
            if tok[0] != T_SPACE:
                return tok

    def peek_non_space(self) -> Token:
        tok = self.next_non_space()
        self.backup()
        return tok

    # -- errors

    def errorf(self, message: str, pos: int | None = None) -> ParseFail:
        last = self.toks[min(self.hi, self.ntoks) - 1] if self.hi else self.toks[0]
        if pos is None:
            pos = self.toks[max(self.i - 1, 0)][1] if self.i else 0
        return ParseFail(message, pos, last[3])

    def expect(self, typ: int, context: str) -> Token:
        tok = self.next_non_space()
        if tok[0] != typ:
            raise self.unexpected(tok, context)
        return tok

    def unexpected(self, tok: Token, context: str) -> ParseFail:
        if tok[0] == T_ERROR:
            extra = ""
            if self.action_line != 0 and self.action_line != tok[3]:
                extra = f" in action started at {self.name}:{self.action_line}"
                if tok[2].endswith(" action"):
                    extra = extra[len(" in action") :]
            return ParseFail(tok[2] + extra, tok[1], tok[3])
        return self.errorf(f"unexpected {token_text(tok)} in {context}", tok[1])

    # -- structure

    def add(self, name: str, root: ListNode) -> None:
        existing = self.trees.get(name)
        if existing is None or is_empty_tree(existing):
            self.trees[name] = root
            return
        if not is_empty_tree(root):
            raise self.errorf(f"template: multiple definition of template {go_quote(name)}")

    def parse(self) -> dict[str, ListNode]:
        root = ListNode(self.peek()[1])
        while self.peek()[0] != T_EOF:
            if self.peek()[0] == T_LDELIM:
                mark = self.i
                self.next()
                if self.next_non_space()[0] == T_DEFINE:
                    self._in_new_tree(self.parse_definition)
                    continue
                self.i = mark
            n = self.text_or_action()
            if isinstance(n, (EndNode, ElseNode)):
                raise self.errorf(f"unexpected {n}", n.pos)
            root.nodes.append(n)
        self.add(self.name, root)
        return self.trees

    def _in_new_tree(self, fn: object) -> None:
        saved = (self.vars, self.range_depth)
        self.vars = ["$"]
        self.range_depth = 0
        try:
            fn()  # type: ignore[operator]
        finally:
            self.vars, self.range_depth = saved

    def parse_definition(self) -> None:
        context = "define clause"
        tok = self.next_non_space()
        if tok[0] not in (T_STRING, T_RAWSTRING):
            raise self.unexpected(tok, context)
        try:
            name = unquote(tok[2])
        except ValueError as e:
            raise self.errorf(str(e), tok[1]) from None
        self.expect(T_RDELIM, context)
        root, end = self.item_list()
        if not isinstance(end, EndNode):
            raise self.errorf(f"unexpected {end} in {context}", end.pos)
        self.add(name, root)

    def item_list(self) -> tuple[ListNode, Node]:
        lst = ListNode(self.peek_non_space()[1])
        while self.peek_non_space()[0] != T_EOF:
            n = self.text_or_action()
            if isinstance(n, (EndNode, ElseNode)):
                return lst, n
            lst.nodes.append(n)
        raise self.errorf("unexpected EOF")

    def text_or_action(self) -> Node:
        tok = self.next_non_space()
        if tok[0] == T_TEXT:
            return TextNode(tok[1], tok[2])
        if tok[0] == T_LDELIM:
            self.action_line = tok[3]
            try:
                return self.action()
            finally:
                self.action_line = 0
        raise self.unexpected(tok, "input")

    def action(self) -> Node:
        tok = self.next_non_space()
        typ = tok[0]
        if typ == T_BLOCK:
            return self.block_control()
        if typ in (T_BREAK, T_CONTINUE):
            word = "break" if typ == T_BREAK else "continue"
            nxt = self.next_non_space()
            if nxt[0] != T_RDELIM:
                raise self.unexpected(nxt, "{{" + word + "}}")
            if self.range_depth == 0:
                raise self.errorf("{{" + word + "}} outside {{range}}", tok[1])
            return BreakNode(tok[1]) if typ == T_BREAK else ContinueNode(tok[1])
        if typ == T_ELSE:
            peek = self.peek_non_space()
            if peek[0] == T_IF or peek[0] == T_WITH:
                return ElseNode(peek[1])
            t = self.expect(T_RDELIM, "else")
            return ElseNode(t[1])
        if typ == T_END:
            t = self.expect(T_RDELIM, "end")
            return EndNode(t[1])
        if typ == T_IF:
            return self.control("if", IfNode)
        if typ == T_RANGE:
            return self.control("range", RangeNode)
        if typ == T_WITH:
            return self.control("with", WithNode)
        if typ == T_TEMPLATE:
            return self.template_control()
        self.backup()
        tok = self.peek()
        return ActionNode(tok[1], tok[3], self.pipeline("command", T_RDELIM))

    def control(self, context: str, cls: type[BranchNode]) -> BranchNode:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise self.errorf("max nesting depth exceeded")
        saved = len(self.vars)
        try:
            pipe = self.pipeline(context, T_RDELIM)
            if context == "range":
                self.range_depth += 1
            lst, nxt = self.item_list()
            if context == "range":
                self.range_depth -= 1
            else_list: ListNode | None = None
            if isinstance(nxt, ElseNode):
                if context == "if" and self.peek()[0] == T_IF:
                    self.next()
                    else_list = ListNode(nxt.pos)
                    else_list.nodes.append(self.control("if", IfNode))
                elif context == "with" and self.peek()[0] == T_WITH:
                    self.next()
                    else_list = ListNode(nxt.pos)
                    else_list.nodes.append(self.control("with", WithNode))
                else:
                    else_list, nxt = self.item_list()
                    if not isinstance(nxt, EndNode):
                        raise self.errorf(f"expected end; found {nxt}", nxt.pos)
            return cls(context, pipe.pos, pipe.line, pipe, lst, else_list)
        finally:
            del self.vars[saved:]
            self.nesting -= 1

    def parse_template_name(self, tok: Token, context: str) -> str:
        if tok[0] in (T_STRING, T_RAWSTRING):
            try:
                return unquote(tok[2])
            except ValueError as e:
                raise self.errorf(str(e), tok[1]) from None
        raise self.unexpected(tok, context)

    def block_control(self) -> Node:
        context = "block clause"
        tok = self.next_non_space()
        name = self.parse_template_name(tok, context)
        pipe = self.pipeline(context, T_RDELIM)
        # Go parses the body as a separate tree and reports its wrong ending through the outer tree, whose last
        # token is the end of this header: that is the line Go names.
        header_line = self.toks[min(self.hi, self.ntoks) - 1][3]

        def body() -> None:
            self.nesting += 1
            try:
                if self.nesting > MAX_NESTING:
                    raise self.errorf("max nesting depth exceeded")
                root, end = self.item_list()
                if not isinstance(end, EndNode):
                    raise ParseFail(f"unexpected {end} in {context}", end.pos, header_line)
                self.add(name, root)
            finally:
                self.nesting -= 1

        self._in_new_tree(body)
        return TemplateNode(tok[1], tok[3], name, pipe)

    def template_control(self) -> Node:
        context = "template clause"
        tok = self.next_non_space()
        name = self.parse_template_name(tok, context)
        pipe: PipeNode | None = None
        if self.next_non_space()[0] != T_RDELIM:
            self.backup()
            pipe = self.pipeline(context, T_RDELIM)
        return TemplateNode(tok[1], tok[3], name, pipe)

    def pipeline(self, context: str, end: int) -> PipeNode:
        tok = self.peek_non_space()
        pipe = PipeNode(tok[1], tok[3])
        while True:
            v = self.peek_non_space()
            if v[0] != T_VARIABLE:
                break
            mark = self.i
            self.next()
            token_after = self.peek()
            nxt = self.peek_non_space()
            if nxt[0] == T_ASSIGN or nxt[0] == T_DECLARE:
                pipe.is_assign = nxt[0] == T_ASSIGN
                self.next_non_space()
                pipe.decl.append(VariableNode(v[1], v[2]))
                self.vars.append(v[2])
                break
            if nxt[0] == T_CHAR and nxt[2] == ",":
                self.next_non_space()
                pipe.decl.append(VariableNode(v[1], v[2]))
                self.vars.append(v[2])
                if context == "range" and len(pipe.decl) < 2:
                    if self.peek_non_space()[0] in (T_VARIABLE, T_RDELIM, T_RPAREN):
                        continue
                    raise self.errorf("range can only initialize variables")
                raise self.errorf(f"too many declarations in {context}")
            del token_after
            self.i = mark
            break
        while True:
            tok = self.next_non_space()
            if tok[0] == end:
                if not pipe.cmds:
                    raise self.errorf(f"missing value for {context}", tok[1])
                for i, c in enumerate(pipe.cmds[1:]):
                    if isinstance(c.args[0], (BoolNode, DotNode, NilNode, NumberNode, StringNode)):
                        raise self.errorf(f"non executable command in pipeline stage {i + 2}", c.pos)
                return pipe
            if tok[0] in _OPERAND_START:
                self.backup()
                pipe.cmds.append(self.command())
            else:
                raise self.unexpected(tok, context)

    def command(self) -> CommandNode:
        cmd = CommandNode(self.peek_non_space()[1])
        while True:
            self.peek_non_space()
            operand = self.operand()
            if operand is not None:
                cmd.args.append(operand)
            tok = self.next()
            if tok[0] == T_SPACE:
                continue
            if tok[0] == T_RDELIM or tok[0] == T_RPAREN:
                self.backup()
            elif tok[0] != T_PIPE:
                raise self.unexpected(tok, "operand")
            break
        if not cmd.args:
            raise self.errorf("empty command")
        return cmd

    def operand(self) -> Node | None:
        node = self.term()
        if node is None:
            return None
        if self.peek()[0] == T_FIELD:
            chain = ChainNode(self.peek()[1], node)
            while self.peek()[0] == T_FIELD:
                chain.field.append(self.next()[2][1:])
            if isinstance(node, FieldNode):
                return FieldNode(chain.pos, str(chain))
            if isinstance(node, VariableNode):
                return VariableNode(chain.pos, str(chain))
            if isinstance(node, (BoolNode, StringNode, NumberNode, NilNode, DotNode)):
                raise self.errorf(f"unexpected . after term {go_quote(str(node))}")
            return chain
        return node

    def term(self) -> Node | None:
        tok = self.next_non_space()
        typ, pos, val, _line = tok
        if typ == T_IDENT:
            if val not in self.funcs:
                raise self.errorf(f"function {go_quote(val)} not defined", pos)
            return IdentifierNode(pos, val)
        if typ == T_DOT:
            return DotNode(pos)
        if typ == T_NIL:
            return NilNode(pos)
        if typ == T_VARIABLE:
            v = VariableNode(pos, val)
            if v.ident[0] not in self.vars:
                raise self.errorf(f"undefined variable {go_quote(v.ident[0])}", pos)
            return v
        if typ == T_FIELD:
            return FieldNode(pos, val)
        if typ == T_BOOL:
            return BoolNode(pos, val == "true")
        if typ in (T_CHARCONST, T_COMPLEX, T_NUMBER):
            try:
                return new_number(pos, val, typ)
            except ValueError as e:
                raise self.errorf(str(e), pos) from None
        if typ == T_LPAREN:
            if self.paren_depth >= MAX_PAREN_DEPTH:
                raise self.errorf("max expression depth exceeded", pos)
            self.paren_depth += 1
            try:
                return self.pipeline("parenthesized pipeline", T_RPAREN)
            finally:
                self.paren_depth -= 1
        if typ in (T_STRING, T_RAWSTRING):
            try:
                s = unquote(val)
            except ValueError as e:
                raise self.errorf(str(e), pos) from None
            return StringNode(pos, val, s)
        self.backup()
        return None


def parse(text: str, name: str, funcs: Container[str], code_regions: bool) -> dict[str, ListNode]:
    """Parse `text` as the template `name`; returns every tree it defines, by name. Raises ParseFail."""
    p = _Parser(text, name, funcs, code_regions)
    return p.parse()
