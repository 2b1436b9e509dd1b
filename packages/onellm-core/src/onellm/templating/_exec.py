"""Compiling parse trees to Python closures, and running them.

Every node becomes a closure once, when the template is parsed; rendering calls closures and never looks at nodes.
Statement closures take `(state, write, dot, frame)`; expression closures take `(state, dot, frame[, final])`, where
`final` is the value piped in from the previous command. Variables live in a per-invocation frame (a list), at
slots fixed at compile time, so `$x` is one list index.

The semantics follow Go's `text/template/exec.go`: field chains over maps, the missing-key modes, truth, `range`
over lists, maps (sorted keys) and integers, `break`/`continue`, `template` with a fresh variable scope, argument
conversion by declared parameter type, and its error messages (`executing "t" at <.x>: map has no entry for key
"x"`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from onellm._go.fmt import MISSING, U8, go_quote, go_type, sorted_items, value_text
from onellm.templating._errors import (
    MAX_TEMPLATE_DEPTH,
    CallError,
    DepthUnwind,
    ExecFail,
    LimitError,
    LimitFail,
    Where,
)
from onellm.templating._funcs import ANY, INT, STRING, VALUE, FuncSpec, go_call, truth
from onellm.templating._parse import (
    ActionNode,
    BoolNode,
    BranchNode,
    BreakNode,
    ChainNode,
    CommandNode,
    ContinueNode,
    DotNode,
    FieldNode,
    IdentifierNode,
    IfNode,
    ListNode,
    NilNode,
    Node,
    NumberNode,
    PipeNode,
    RangeNode,
    StringNode,
    TemplateNode,
    TextNode,
    VariableNode,
    WithNode,
)

__all__ = ["HostState", "Program", "State", "compile_program"]

NOFINAL: Any = object()

Stmt = Callable[["State", Callable[[str], Any], Any, list[Any]], None]
Expr = Callable[..., Any]


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


_BREAK = _Break()
_CONTINUE = _Continue()


class State:
    """What one render needs besides the program: missing-key mode, template depth, output accounting.

    `HostState` adds the host hooks (cancellation, embed, time); plain renders use this lighter class.
    """

    __slots__ = (
        "andor",
        "counted",
        "deadline",
        "depth",
        "int_loops",
        "limit",
        "missing_error",
        "out",
        "timeout",
        "total",
    )

    cancel: Callable[[], bool] | None = None
    embed: Any = None
    now: Callable[[], Any] | None = None

    def __init__(self, missing_error: bool, limit: int, out: list[str], timeout: float | None = None) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout if timeout is not None else 0.0
        self.missing_error = missing_error
        self.depth = 0
        self.out = out
        self.counted = 0
        self.total = 0
        self.limit = limit
        self.int_loops: set[Any] = set()
        self.andor: dict[Any, int] = {}
        """Which argument each `and` and `or` command stopped at, last time it ran."""
        """The ranges now counting up to an integer: their elements are ints, not `interface {}`s."""

    def check(self) -> None:
        """Count new output against the limit and honour cancellation."""
        out = self.out
        n = len(out)
        if n > self.counted:
            total = self.total
            for i in range(self.counted, n):
                total += len(out[i])
            self.total = total
            self.counted = n
            if total > self.limit:
                raise LimitFail(f"output exceeds the limit of {self.limit} characters")
        if self.deadline and time.monotonic() > self.deadline:
            raise LimitFail(f"rendering took longer than the limit of {self.timeout:g} seconds")
        cancel = self.cancel
        if cancel is not None and cancel():
            raise LimitFail("rendering was cancelled")


class HostState(State):
    """A render with host hooks."""

    __slots__ = ("cancel", "embed", "now")

    def __init__(
        self,
        missing_error: bool,
        limit: int,
        out: list[str],
        cancel: Callable[[], bool] | None,
        now: Callable[[], Any] | None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(missing_error, limit, out, timeout)
        self.cancel = cancel
        self.now = now
        self.embed = None


class Tree:
    __slots__ = ("nslots", "run", "where")

    def __init__(self, run: Stmt, nslots: int, where: Where) -> None:
        self.run = run
        self.nslots = nslots
        self.where = where


class Program:
    """The compiled trees of one parsed text, by name."""

    __slots__ = ("trees",)

    def __init__(self) -> None:
        self.trees: dict[str, Tree] = {}


def compile_program(trees: dict[str, ListNode], source: Any, funcs: Mapping[str, FuncSpec]) -> Program:
    prog = Program()
    for name, root in trees.items():
        where = Where(source, name)
        c = _Compiler(prog, where, funcs)
        run = c.block(root)
        prog.trees[name] = Tree(run, c.nslots, where)
    return prog


def _noop(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
    return None


def _dig(v: Any) -> Any:
    return MISSING if v is None else v


class _Compiler:
    def __init__(self, prog: Program, where: Where, funcs: Mapping[str, FuncSpec]) -> None:
        self.prog = prog
        self.where = where
        self.funcs = funcs
        self.scopes: list[dict[str, int]] = [{"$": 0}]
        self.nslots = 1
        # Whether dot (and which variable slots) hold a list or map element, whose static Go type is
        # `interface {}`: it only shows in error messages.
        # False, or the range whose element dot is: an `interface {}`, unless that range counts up to an integer.
        self.dot_iface: Any = False
        self.iface_slots: dict[int, Node] = {}

    # -- errors

    def fail(self, node: Node | None, message: str) -> ExecFail:
        return ExecFail(self.where, node, message)

    def raiser(self, node: Node | None, message: str) -> Expr:
        where = self.where

        def f(st: State, dot: Any, vs: list[Any], final: Any = NOFINAL) -> Any:
            raise ExecFail(where, node, message)

        return f

    # -- variables

    def lookup(self, name: str) -> int | None:
        for scope in reversed(self.scopes):
            slot = scope.get(name)
            if slot is not None:
                return slot
        return None

    def declare(self, name: str) -> int:
        slot = self.nslots
        self.nslots += 1
        self.scopes[-1][name] = slot
        return slot

    # -- statements

    def block(self, lst: ListNode) -> Stmt:
        # Adjacent texts merge; a run of texts and plain `{{ .field }}` actions becomes one generated function.
        items: list[str | Node] = []
        for n in lst.nodes:
            if isinstance(n, TextNode):
                if items and isinstance(items[-1], str):
                    items[-1] += n.text
                else:
                    items.append(n.text)
            else:
                items.append(n)
        parts: list[Stmt] = []
        run: list[str | Node] = []

        def flush_run() -> None:
            if not run:
                return
            singles = [_text_stmt(x) if isinstance(x, str) else self.node(x) for x in run]
            if len(run) >= 2 and any(not isinstance(x, str) for x in run):
                parts.append(_fused(run, singles))
            else:
                parts.extend(singles)
            run.clear()

        for it in items:
            if isinstance(it, str) or _plain_field_action(it):
                run.append(it)
                continue
            flush_run()
            parts.append(self.node(it))
        flush_run()
        if not parts:
            return _noop
        if len(parts) == 1:
            return parts[0]
        if len(parts) == 2:
            a, b = parts

            def two(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
                a(st, w, dot, vs)
                b(st, w, dot, vs)

            return two
        seq = tuple(parts)

        def many(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
            for f in seq:
                f(st, w, dot, vs)

        return many

    def node(self, n: Node) -> Stmt:
        if isinstance(n, ActionNode):
            return self.action(n)
        if isinstance(n, IfNode):
            return self.if_with(n, False)
        if isinstance(n, WithNode):
            return self.if_with(n, True)
        if isinstance(n, RangeNode):
            return self.range_node(n)
        if isinstance(n, TemplateNode):
            return self.template(n)
        if isinstance(n, BreakNode):

            def brk(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
                raise _BREAK

            return brk
        if isinstance(n, ContinueNode):

            def cont(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
                raise _CONTINUE

            return cont
        if isinstance(n, TextNode):
            return _text_stmt(n.text)
        raise self.fail(n, f"unknown node: {n}")

    def action(self, n: ActionNode) -> Stmt:
        ev = self.pipe(n.pipe)
        if n.pipe.decl:

            def assign(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
                ev(st, dot, vs)

            return assign
        cmd = n.pipe.cmds[0]
        if len(n.pipe.cmds) == 1 and len(cmd.args) == 1 and isinstance(cmd.args[0], FieldNode):
            field = cmd.args[0]
            if len(field.ident) == 1:
                return self._print_field1(field)

        def act(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
            v = ev(st, dot, vs)
            t = type(v)
            if t is str:
                w(v)
            elif t is int:
                w(str(v))
            elif v is None or v is MISSING:
                w("<no value>")
            else:
                w(value_text(v))

        return act

    def _print_field1(self, field: FieldNode) -> Stmt:
        name = field.ident[0]
        where = self.where
        concrete = self.dot_iface or True

        def act(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
            if type(dot) is dict:
                v = dot.get(name, MISSING)
                if v is MISSING and st.missing_error:
                    raise ExecFail(where, field, f"map has no entry for key {go_quote(name)}")
            else:
                v = _field(st, where, field, dot, name, False, concrete)
            t = type(v)
            if t is str:
                w(v)
            elif t is int:
                w(str(v))
            elif v is None or v is MISSING:
                w("<no value>")
            else:
                w(value_text(v))

        return act

    def if_with(self, n: BranchNode, is_with: bool) -> Stmt:
        self.scopes.append({})
        try:
            cond = self.pipe(n.pipe)
            saved_iface = self.dot_iface
            if is_with:
                self.dot_iface = False
            # What the body declares is gone in the else branch when it runs (Go's parser still knows the name,
            # so using it there is an execution error, not a parse error).
            self.scopes.append({})
            try:
                body = self.block(n.list)
            finally:
                self.dot_iface = saved_iface
                self.scopes.pop()
            other = self.block(n.else_list) if n.else_list is not None else None
        finally:
            self.scopes.pop()
        if is_with:
            if other is None:

                def with_(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
                    v = cond(st, dot, vs)
                    if truth(v):
                        body(st, w, v, vs)

                return with_

            def with_else(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
                v = cond(st, dot, vs)
                if truth(v):
                    body(st, w, v, vs)
                else:
                    other(st, w, dot, vs)

            return with_else
        if other is None:

            def if_(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
                if truth(cond(st, dot, vs)):
                    body(st, w, dot, vs)

            return if_

        def if_else(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
            if truth(cond(st, dot, vs)):
                body(st, w, dot, vs)
            else:
                other(st, w, dot, vs)

        return if_else

    def range_node(self, n: BranchNode) -> Stmt:
        where = self.where
        pipe = n.pipe
        self.scopes.append({})
        try:
            # The range pipeline itself assigns nothing: iterations set the variables.
            cmds_ev = self._commands(pipe)
            decl_slots: list[int] = []
            assign_missing: str | None = None
            if pipe.is_assign:
                for v in pipe.decl:
                    slot = self.lookup(v.ident[0])
                    if slot is None:
                        assign_missing = v.ident[0]
                        decl_slots.append(0)
                    else:
                        decl_slots.append(slot)
            else:
                decl_slots = [self.declare(v.ident[0]) for v in pipe.decl]
            self.scopes.append({})
            saved_iface = self.dot_iface
            self.dot_iface = n
            if decl_slots:
                self.iface_slots[decl_slots[-1]] = n
            try:
                body = self.block(n.list)
            finally:
                self.dot_iface = saved_iface
            self.scopes.pop()
            other = self.block(n.else_list) if n.else_list is not None else None
        finally:
            self.scopes.pop()
        ndecl = len(pipe.decl)
        if ndecl == 2:
            idx_slot, elem_slot = decl_slots
        elif ndecl == 1:
            idx_slot, elem_slot = -1, decl_slots[0]
        else:
            idx_slot = elem_slot = -1
        pipe_node = self.site(pipe)
        range_node = n

        def run(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
            val = cmds_ev(st, dot, vs)
            if val is None:
                val = MISSING
            if assign_missing is not None:
                raise ExecFail(where, _at(st, pipe_node), f"undefined variable: {assign_missing}")
            for s in decl_slots:
                vs[s] = val
            t = type(val)
            if t is list or t is tuple:
                items: Any = val
                if not items:
                    if other is not None:
                        other(st, w, dot, vs)
                    return None
                if idx_slot < 0:
                    return _loop_values(st, w, vs, body, items, elem_slot, where, pipe_node)
                pairs: Any = enumerate(items)
            elif isinstance(val, Mapping):
                if not val:
                    if other is not None:
                        other(st, w, dot, vs)
                    return None
                pairs = sorted_items(val)
            elif t is int or (isinstance(val, int) and not isinstance(val, bool)):
                if ndecl > 1:
                    raise ExecFail(
                        where,
                        _at(st, pipe_node),
                        f"can't use {value_text(val)} to iterate over more than one variable",
                    )
                if val <= 0:
                    if other is not None:
                        other(st, w, dot, vs)
                    return None
                loops = st.int_loops
                if range_node in loops:
                    return _loop_values(st, w, vs, body, range(val), elem_slot, where, pipe_node)
                loops.add(range_node)
                try:
                    return _loop_values(st, w, vs, body, range(val), elem_slot, where, pipe_node)
                finally:
                    loops.discard(range_node)
            elif val is MISSING or val is None:
                if other is not None:
                    other(st, w, dot, vs)
                return None
            elif isinstance(val, (list, tuple)):
                pairs = enumerate(val)
                if not val:
                    if other is not None:
                        other(st, w, dot, vs)
                    return None
            else:
                raise ExecFail(where, _at(st, pipe_node), f"range can't iterate over {value_text(val)}")
            i = 0
            for k, e in pairs:
                if idx_slot >= 0:
                    vs[idx_slot] = k
                if elem_slot >= 0:
                    vs[elem_slot] = e
                i += 1  # noqa: SIM113 (a counter in the hot loop is cheaper than enumerate)
                if not i & 63:
                    _check(st, where, pipe_node)
                try:
                    body(st, w, e, vs)
                except _Continue:
                    pass
                except _Break:
                    break
            return None

        return run

    def template(self, n: TemplateNode) -> Stmt:
        where = self.where
        prog = self.prog
        name = n.name
        ev = self.pipe(n.pipe, dig=True) if n.pipe is not None else None

        def call(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
            tree = prog.trees.get(name)
            if tree is None:
                raise ExecFail(where, n, f"template {go_quote(name)} not defined")
            if st.depth >= MAX_TEMPLATE_DEPTH:
                raise ExecFail(where, n, f"exceeded maximum template depth ({MAX_TEMPLATE_DEPTH})")
            newdot = ev(st, dot, vs) if ev is not None else MISSING
            frame = [None] * tree.nslots
            frame[0] = newdot
            depth = st.depth
            st.depth = depth + 1
            try:
                tree.run(st, w, newdot, frame)
            except RecursionError:
                raise DepthUnwind([(where, n, depth)]) from None
            except DepthUnwind as u:
                u.calls.append((where, n, depth))
                if depth == 0:
                    raise u.fail() from None
                raise
            finally:
                st.depth = depth
            if not st.depth & 15:
                _check(st, where, n)

        return call

    # -- pipelines

    def _commands(self, pipe: PipeNode) -> Expr:
        """The commands of a pipeline, chained through `final`; no declarations."""
        cmds = [self.command(c, i > 0, pipe.cmds[i - 1] if i else pipe) for i, c in enumerate(pipe.cmds)]
        if len(cmds) == 1:
            return cmds[0]
        first, rest = cmds[0], tuple(cmds[1:])

        def chain(st: State, dot: Any, vs: list[Any]) -> Any:
            v = first(st, dot, vs)
            for c in rest:
                v = c(st, dot, vs, _dig(v))
            return v

        return chain

    def pipe(self, pipe: PipeNode, dig: bool = False) -> Expr:
        ev = self._commands(pipe)
        if not pipe.decl:
            if not dig:
                return ev

            def dug(st: State, dot: Any, vs: list[Any]) -> Any:
                v = ev(st, dot, vs)
                return MISSING if v is None else v

            return dug
        where = self.where
        slots: list[int] = []
        missing_name: str | None = None
        for v in pipe.decl:
            if pipe.is_assign:
                slot = self.lookup(v.ident[0])
                if slot is None:
                    missing_name = v.ident[0]
                    slot = 0
                slots.append(slot)
            else:
                slots.append(self.declare(v.ident[0]))
        slot0 = slots[0]
        last_node = self.site(pipe)

        def declare(st: State, dot: Any, vs: list[Any]) -> Any:
            v = ev(st, dot, vs)
            if v is None:
                v = MISSING
            if missing_name is not None:
                raise ExecFail(where, _at(st, last_node), f"undefined variable: {missing_name}")
            vs[slot0] = v
            return v

        return declare

    def command(self, cmd: CommandNode, has_final: bool, prev: Node | None = None) -> Expr:
        """One command of a pipeline; `prev` is the command before it (whose value arrives as `final`), or the
        pipeline itself for its first command: what Go last evaluated when the command starts."""
        first = cmd.args[0]
        if isinstance(first, FieldNode):
            return self.field_cmd(first, first.ident, None, len(cmd.args) > 1, has_final, self.dot_iface)
        if isinstance(first, ChainNode):
            if isinstance(first.node, NilNode):
                return self.raiser(first, f"indirection through explicit nil in {first}")
            base = self.arg(first.node, None)
            return self.field_cmd(_last_eval(first.node), first.field, base, len(cmd.args) > 1, has_final)
        if isinstance(first, IdentifierNode):
            return self.function(first, cmd, cmd.args[1:], has_final)
        if isinstance(first, PipeNode):
            if len(cmd.args) > 1 or has_final:
                # Go reports it where evaluation last stood: this command, or the end of the previous one.
                at = cmd if prev is None else _last_eval(prev) if has_final else prev
                return self.raiser(at, f"can't give argument to non-function {cmd.args[0]}")
            return self.pipe(first, dig=True)
        if isinstance(first, VariableNode):
            slot = self.lookup(first.ident[0])
            if slot is None:
                return self.raiser(first, f"undefined variable: {first.ident[0]}")
            if len(first.ident) == 1:
                if len(cmd.args) > 1 or has_final:
                    return self.raiser(first, f"can't give argument to non-function {first}")

                def var(st: State, dot: Any, vs: list[Any], final: Any = NOFINAL) -> Any:
                    return vs[slot]

                return var
            s = slot

            def base_var(st: State, dot: Any, vs: list[Any]) -> Any:
                return vs[s]

            iface = self.iface_slots.get(slot, False)
            return self.field_cmd(first, first.ident[1:], base_var, len(cmd.args) > 1, has_final, iface)
        if len(cmd.args) > 1 or has_final:
            return self.raiser(first, f"can't give argument to non-function {first}")
        if isinstance(first, BoolNode):
            return _const(first.value)
        if isinstance(first, DotNode):

            def dot_(st: State, dot: Any, vs: list[Any], final: Any = NOFINAL) -> Any:
                return dot

            return dot_
        if isinstance(first, NilNode):
            return self.raiser(first, "nil is not a command")
        if isinstance(first, NumberNode):
            return self.ideal(first)
        if isinstance(first, StringNode):
            return _const(first.text)
        return self.raiser(first, f"can't evaluate command {go_quote(str(first))}")

    def ideal(self, n: NumberNode) -> Expr:
        text = n.text
        if n.is_complex:
            return _const(n.complex_value)
        is_hex_int = len(text) > 2 and text[0] == "0" and text[1] in "xX" and not any(c in text for c in "pP")
        if n.is_float and not is_hex_int and not text.startswith("'") and any(c in text for c in ".eEpP"):
            return _const(n.float_value)
        if n.is_int:
            return _const(n.int_value)
        if n.is_uint:
            return self.raiser(n, f"{text} overflows int")
        return _const(MISSING)

    def field_cmd(
        self, node: Node, names: list[str], base: Expr | None, extra_args: bool, has_final: bool, iface: Any = False
    ) -> Expr:
        where = self.where
        concrete = iface or True
        has_args = extra_args or has_final
        names_t = tuple(names)
        last = names_t[-1]
        init = names_t[:-1]
        if base is None and len(names_t) == 1:
            name = last

            def field1(st: State, dot: Any, vs: list[Any], final: Any = NOFINAL) -> Any:
                if type(dot) is dict and not has_args:
                    v = dot.get(name, MISSING)
                    if v is MISSING and st.missing_error:
                        raise ExecFail(where, node, f"map has no entry for key {go_quote(name)}")
                    return v
                return _field(st, where, node, dot, name, has_args, concrete)

            return field1

        def chain(st: State, dot: Any, vs: list[Any], final: Any = NOFINAL) -> Any:
            if base is None:
                recv = dot
            else:
                recv = base(st, dot, vs)
                if recv is None:
                    recv = MISSING
            first = concrete
            for nm in init:
                if type(recv) is dict:
                    v = recv.get(nm, MISSING)
                    if v is MISSING and st.missing_error:
                        raise ExecFail(where, node, f"map has no entry for key {go_quote(nm)}")
                    recv = v
                else:
                    recv = _field(st, where, node, recv, nm, False, first)
                first = False
            return _field(st, where, node, recv, last, has_args, first)

        return chain

    # -- functions

    def function(self, ident: IdentifierNode, cmd: Node, args: list[Node], has_final: bool) -> Expr:
        where = self.where
        name = ident.ident
        spec = self.funcs.get(name)
        if spec is None:
            return self.raiser(ident, f"{go_quote(name)} is not a defined function")
        num_in = len(args) + (1 if has_final else 0)
        nparams = len(spec.params)
        if spec.variadic is not None:
            if num_in < nparams:
                return self.raiser(ident, f"wrong number of args for {name}: want at least {nparams} got {len(args)}")
        elif num_in != nparams:
            return self.raiser(ident, f"wrong number of args for {name}: want {nparams} got {num_in}")

        def kind_at(i: int) -> int:
            if i < nparams:
                return spec.params[i]
            return spec.variadic if spec.variadic is not None else ANY

        final_kind = kind_at(num_in - 1) if has_final else ANY
        final_node: Any = self.site(args[-1]) if args else ident
        special = spec.special
        if special in ("and", "or"):
            evs = [self.arg(a, VALUE) for a in args]
            want = special == "or"

            # Where it stopped is where Go's evaluation stands afterwards (see `site`).
            key = cmd

            def and_or(st: State, dot: Any, vs: list[Any], final: Any = NOFINAL) -> Any:
                v: Any = MISSING
                for i, e in enumerate(evs):
                    v = e(st, dot, vs)
                    if truth(v) == want:
                        st.andor[key] = i
                        return v
                st.andor[key] = len(evs) - 1
                if final is not NOFINAL:
                    v = final
                return v

            return and_or
        evs = [self.arg(a, kind_at(i)) for i, a in enumerate(args)]
        impl = spec.impl
        if special == "call":
            callee = str(args[0]) if args else ""

            def call_(st: State, dot: Any, vs: list[Any], final: Any = NOFINAL) -> Any:
                argv = [e(st, dot, vs) for e in evs]
                if final is not NOFINAL:
                    argv.append(final)
                nm = callee if args else f"<{go_type(final)} Value>"
                try:
                    return go_call(nm, *argv)
                except CallError as e:
                    raise ExecFail(where, cmd, f"error calling {name}: {e}") from None

            return call_
        if special == "embed":
            impl = _embed_impl(where, cmd)
        elif special == "now":
            impl = _now_impl
        elif special == "date":
            impl = _date_impl

        needs_state = special in ("embed", "now", "date")

        if len(evs) == 1 and not has_final and not needs_state:
            e0 = evs[0]

            def call1(st: State, dot: Any, vs: list[Any], final: Any = NOFINAL) -> Any:
                a0 = e0(st, dot, vs)
                try:
                    r = impl(a0)
                except CallError as e:
                    raise ExecFail(where, cmd, f"error calling {name}: {e}") from None
                except LimitError:
                    raise ExecFail(where, cmd, f"{name}: the result exceeds the output limit", kind="limit") from None
                if type(r) is str and len(r) > st.limit:
                    raise ExecFail(where, cmd, f"{name}: the result exceeds the output limit", kind="limit")
                return r

            return call1

        def call(st: State, dot: Any, vs: list[Any], final: Any = NOFINAL) -> Any:
            argv = [e(st, dot, vs) for e in evs]
            if final is not NOFINAL:
                argv.append(_validate(where, final_node, final, final_kind, st))
            try:
                r = impl(st, *argv) if needs_state else impl(*argv)
            except CallError as e:
                raise ExecFail(where, cmd, f"error calling {name}: {e}") from None
            except LimitError:
                raise ExecFail(where, cmd, f"{name}: the result exceeds the output limit", kind="limit") from None
            # A value that could never be printed is refused as it is made: `printf "%s%s" $x $x` in a loop would
            # otherwise double its way to gigabytes without writing anything.
            if type(r) is str and len(r) > st.limit:
                raise ExecFail(where, cmd, f"{name}: the result exceeds the output limit", kind="limit")
            return r

        return call

    def site(self, n: Node) -> Node | _AndOr:
        """Where Go's evaluation stands after evaluating `n` (Go reports later errors there): its last node, or, when
        that is a short-circuiting `and` or `or`, the argument it stopped at, known only while running."""
        if isinstance(n, PipeNode):
            return self.site(n.cmds[-1])
        if isinstance(n, CommandNode):
            first = n.args[0]
            if isinstance(first, IdentifierNode) and len(n.args) > 1:
                spec = self.funcs.get(first.ident)
                if spec is not None and spec.special in ("and", "or"):
                    return _AndOr(n, tuple(self.site(a) for a in n.args[1:]))
                return self.site(n.args[-1])
            return self.site(first)
        if isinstance(n, ChainNode):
            return self.site(n.node)
        return n

    def arg(self, n: Node, kind: int | None) -> Expr:
        """An argument converted to the parameter kind (None: untyped, as for the head of a chain)."""
        where = self.where
        if isinstance(n, DotNode):
            if kind in (None, VALUE, ANY):
                if kind == ANY:

                    def dot_any(st: State, dot: Any, vs: list[Any]) -> Any:
                        return None if dot is MISSING else dot

                    return dot_any

                def dot_(st: State, dot: Any, vs: list[Any]) -> Any:
                    return dot

                return dot_

            def dot_typed(st: State, dot: Any, vs: list[Any]) -> Any:
                return _validate(where, n, dot, kind)

            return dot_typed
        if isinstance(n, NilNode):
            if kind in (STRING, INT):
                return self.raiser(n, f"cannot assign nil to {'string' if kind == STRING else 'int'}")
            return _const(None if kind == ANY else MISSING)
        ev: Expr | None = None
        if isinstance(n, FieldNode):
            ev = self.field_cmd(n, n.ident, None, False, False, self.dot_iface)
        elif isinstance(n, VariableNode):
            slot = self.lookup(n.ident[0])
            if slot is None:
                return self.raiser(n, f"undefined variable: {n.ident[0]}")
            if len(n.ident) == 1:
                s = slot

                def var(st: State, dot: Any, vs: list[Any]) -> Any:
                    return vs[s]

                ev = var
            else:
                s2 = slot

                def base_var(st: State, dot: Any, vs: list[Any]) -> Any:
                    return vs[s2]

                ev = self.field_cmd(n, n.ident[1:], base_var, False, False, self.iface_slots.get(s2, False))
        elif isinstance(n, PipeNode):
            ev = self.pipe(n, dig=True)
        elif isinstance(n, IdentifierNode):
            ev = self.function(n, n, [], False)
        elif isinstance(n, ChainNode):
            if isinstance(n.node, NilNode):
                return self.raiser(n, f"indirection through explicit nil in {n}")
            ev = self.field_cmd(_last_eval(n.node), n.field, self.arg(n.node, None), False, False)
        if ev is not None:
            if kind is None or kind == VALUE:
                return ev
            inner = ev
            if kind == ANY:

                def any_(st: State, dot: Any, vs: list[Any]) -> Any:
                    v = inner(st, dot, vs)
                    return None if v is MISSING else v

                return any_

            # A wrong type is reported where evaluation last stood: inside a parenthesised pipeline, its last node.
            at = self.site(n)

            def typed(st: State, dot: Any, vs: list[Any]) -> Any:
                return _validate(where, at, inner(st, dot, vs), kind, st)

            return typed
        if kind == STRING:
            if isinstance(n, StringNode):
                return _const(n.text)
            return self.raiser(n, f"expected string; found {n}")
        if kind == INT:
            if isinstance(n, NumberNode) and n.is_int:
                return _const(n.int_value)
            return self.raiser(n, f"expected integer; found {n}")
        if isinstance(n, BoolNode):
            return _const(n.value)
        if isinstance(n, NumberNode):
            return self.ideal(n)
        if isinstance(n, StringNode):
            return _const(n.text)
        return self.raiser(n, f"can't handle {n} for arg")


def _plain_field_action(n: Node) -> bool:
    """`{{ .name }}`: one field of dot, printed."""
    if not isinstance(n, ActionNode) or n.pipe.decl or len(n.pipe.cmds) != 1:
        return False
    args = n.pipe.cmds[0].args
    return len(args) == 1 and isinstance(args[0], FieldNode) and len(args[0].ident) == 1


def _print_other(v: Any) -> str:
    if type(v) is int:
        return str(v)
    if v is None or v is MISSING:
        return "<no value>"
    return value_text(v)


def _fused(run: list[str | Node], singles: list[Stmt]) -> Stmt:
    """One function for a run of texts and `{{ .field }}` actions, for a dot that is a dict in the default
    missing-key mode; anything else runs the per-node closures."""

    def fallback(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
        for f in singles:
            f(st, w, dot, vs)

    ns: dict[str, Any] = {"MISSING": MISSING, "_pt": _print_other, "FB": fallback}
    lines = [
        "def fused(st, w, dot, vs):",
        "    if type(dot) is dict and not st.missing_error:",
        "        get = dot.get",
    ]
    for i, it in enumerate(run):
        if isinstance(it, str):
            ns[f"T{i}"] = it
            lines.append(f"        w(T{i})")
        else:
            assert isinstance(it, ActionNode)
            field = it.pipe.cmds[0].args[0]
            assert isinstance(field, FieldNode)
            ns[f"N{i}"] = field.ident[0]
            lines.append(f"        v = get(N{i}, MISSING)")
            lines.append("        w(v if type(v) is str else _pt(v))")
    lines.append("    else:")
    lines.append("        FB(st, w, dot, vs)")
    exec(compile("\n".join(lines), "<template>", "exec"), ns)
    fn: Stmt = ns["fused"]
    return fn


def _text_stmt(text: str) -> Stmt:
    def text_(st: State, w: Any, dot: Any, vs: list[Any]) -> None:
        w(text)

    return text_


def _const(c: Any) -> Expr:
    def const(st: State, dot: Any, vs: list[Any], final: Any = NOFINAL) -> Any:
        return c

    return const


def _last_eval(n: Node) -> Node:
    """The last node Go marks while evaluating `n`; its errors that carry no node of their own report it."""
    if isinstance(n, PipeNode):
        return _last_eval(n.cmds[-1])
    if isinstance(n, CommandNode):
        first = n.args[0]
        if isinstance(first, IdentifierNode) and len(n.args) > 1:
            return _last_eval(n.args[-1])
        return _last_eval(first)
    if isinstance(n, ChainNode):
        return _last_eval(n.node)
    return n


class _AndOr:
    """The place of an `and` or `or` command in error messages: the argument it stopped at in the latest run."""

    __slots__ = ("cmd", "sites")

    def __init__(self, cmd: Node, sites: tuple[Node | _AndOr, ...]) -> None:
        self.cmd = cmd
        self.sites = sites

    def resolve(self, st: State) -> Node:
        site = self.sites[st.andor.get(self.cmd, len(self.sites) - 1)]
        return site if not isinstance(site, _AndOr) else site.resolve(st)


def _at(st: State, site: Any) -> Any:
    """The node of a place given by `site`."""
    return site.resolve(st) if isinstance(site, _AndOr) else site


def _check(st: State, where: Where, node: Any) -> None:
    """`State.check`, with the position of the loop or call that was running when a limit was reached."""
    try:
        st.check()
    except LimitFail as e:
        raise ExecFail(where, _at(st, node), str(e), kind="limit") from None


def _loop_values(
    st: State, w: Any, vs: list[Any], body: Stmt, items: Any, elem_slot: int, where: Where, node: Any
) -> None:
    i = 0
    for e in items:
        if elem_slot >= 0:
            vs[elem_slot] = e
        i += 1  # noqa: SIM113 (a counter in the hot loop is cheaper than enumerate)
        if not i & 63:
            _check(st, where, node)
        try:
            body(st, w, e, vs)
        except _Continue:
            pass
        except _Break:
            break


def _field(st: State, where: Where, node: Node, recv: Any, name: str, has_args: bool, first: bool) -> Any:
    """One step of a field chain on a value that is not a plain dict (or has arguments)."""
    if recv is MISSING:
        if st.missing_error:
            raise ExecFail(where, node, f"nil data; no entry for key {go_quote(name)}")
        return MISSING
    if recv is None:
        raise ExecFail(where, node, f"nil pointer evaluating interface {{}}.{name}")
    if isinstance(recv, Mapping):
        if has_args:
            raise ExecFail(where, node, f"{name} is not a method but has arguments")
        v = recv.get(name, MISSING)
        if v is MISSING and st.missing_error:
            raise ExecFail(where, node, f"map has no entry for key {go_quote(name)}")
        return v
    # `first`: True for a value of concrete type, False for an `interface {}`, or the range whose element it is
    # (an `interface {}` from a list or map, an int while that range counts up to an integer).
    concrete = first is True or (first is not False and first in st.int_loops)
    typ = go_type(recv) if concrete else "interface {}"
    raise ExecFail(where, node, f"can't evaluate field {name} in type {typ}")


def _validate(where: Where, node: Any, v: Any, kind: int, st: State | None = None) -> Any:
    if kind == ANY:
        return None if v is MISSING else v
    if kind == VALUE:
        return v
    if kind == STRING:
        if type(v) is str or isinstance(v, str):
            return v
        want = "string"
    else:
        if type(v) is int or (isinstance(v, int) and not isinstance(v, (bool, U8))):
            return v
        want = "int"
    if st is not None:
        node = _at(st, node)
    if v is MISSING:
        raise ExecFail(where, node, f"invalid value; expected {want}")
    got = "interface {}" if v is None else go_type(v)
    raise ExecFail(where, node, f"wrong type for value; expected {want}; got {got}")


# ---------------------------------------------------------------------------------------------------------------
# Functions that need the render state


def _embed_impl(where: Where, node: Node) -> Callable[..., Any]:
    def embed(st: State, ref: str) -> str:
        if st.embed is None:
            raise ExecFail(where, node, f"embed {go_quote(ref)}: no embed source is configured", kind="embed")
        return st.embed(st, where, node, ref)  # type: ignore[no-any-return]

    return embed


def _now_impl(st: State) -> Any:
    if st.now is None:
        raise CallError("no time provider was given to the render")
    try:
        return st.now()
    except Exception as e:
        raise CallError(str(e) or type(e).__name__) from e


def _date_impl(st: State, layout: str, t: Any) -> str:
    from onellm._go.timefmt import format_date

    return format_date(layout, t)
