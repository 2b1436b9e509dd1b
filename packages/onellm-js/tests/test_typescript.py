"""Erasable TypeScript: types become spaces (lines and columns kept), constructs that cannot be erased are refused."""

from __future__ import annotations

import pytest

from onellm.errors import BadDefinitionError
from onellm_js import JsSandbox, JsSource, erase_types

pytestmark = pytest.mark.anyio


def same_layout(before: str, after: str) -> None:
    assert len(after) == len(before)
    assert [i for i, c in enumerate(after) if c == "\n"] == [i for i, c in enumerate(before) if c == "\n"]


def blank(source: str, *pieces: str, statement: bool = False) -> str:
    """`source` with each piece (found in order) replaced by spaces; a statement erased whole starts with `;`."""
    out = source
    at = 0
    for piece in pieces:
        at = out.index(piece, at)
        filler = "".join(c if c == "\n" else " " for c in piece)
        if statement:
            filler = ";" + filler[1:]
        out = out[:at] + filler + out[at + len(piece) :]
        at += len(piece)
    return out


CLASS = """abstract class C<T> extends B<T> implements I, J {
  private x: number = 1;
  readonly y?: string;
  declare z: number;
  [key: string]: any;
  abstract m(): void;
  n<U>(u: U): U { return u }
}"""


@pytest.mark.parametrize(
    ("source", "erased"),
    [
        ("let x: number = 1;", blank("let x: number = 1;", ": number")),
        ("let z!: string;", blank("let z!: string;", "!: string")),
        ("const a: A = 1, b: Array<B<C>> = [];", blank("const a: A = 1, b: Array<B<C>> = [];", ": A", ": Array<B<C>>")),
        ("const { a, b }: Props = p;", blank("const { a, b }: Props = p;", ": Props")),
        (
            "function f(a: string, b?: number): void {}",
            blank("function f(a: string, b?: number): void {}", ": string", "?: number", ": void"),
        ),
        (
            "function f<T extends X = Y>(a: T): T[] { return [a] }",
            blank("function f<T extends X = Y>(a: T): T[] { return [a] }", "<T extends X = Y>", ": T", ": T[]"),
        ),
        (
            "const f = async (a: number): Promise<void> => {};",
            blank("const f = async (a: number): Promise<void> => {};", ": number", ": Promise<void>"),
        ),
        ("const g = <T,>(v: T): T => v;", blank("const g = <T,>(v: T): T => v;", "<T,>", ": T", ": T")),
        ("x = y as unknown as Z;", blank("x = y as unknown as Z;", " as unknown", " as Z")),
        ("x = [1, 2] as const;", blank("x = [1, 2] as const;", " as const")),
        ("x = cfg satisfies Config;", blank("x = cfg satisfies Config;", " satisfies Config")),
        ("x = a!.b!.c;", "x = a .b .c;"),
        ("f<string>(1); new Map<K, V>();", blank("f<string>(1); new Map<K, V>();", "<string>", "<K, V>")),
        ("if (a < b && c > (d)) {}", "if (a < b && c > (d)) {}"),
        (
            "interface I extends J<K> { a: string }\nlet q = 1;",
            blank(
                "interface I extends J<K> { a: string }\nlet q = 1;",
                "interface I extends J<K> { a: string }",
                statement=True,
            ),
        ),
        ("type R = 'a' | 'b';", blank("type R = 'a' | 'b';", "type R = 'a' | 'b';", statement=True)),
        (
            "export type { A } from './a';",
            blank("export type { A } from './a';", "export type { A } from './a';", statement=True),
        ),
        (
            "import type { A } from './a';",
            blank("import type { A } from './a';", "import type { A } from './a';", statement=True),
        ),
        ("import { type A, b } from './a';", blank("import { type A, b } from './a';", "type A, ")),
        ("declare const g: number;", blank("declare const g: number;", "declare const g: number;", statement=True)),
        (
            "namespace T { export type A = string }",
            blank("namespace T { export type A = string }", "namespace T { export type A = string }", statement=True),
        ),
        (
            "function o(a: string): string;\nfunction o(a: any) { return a }",
            blank("function o(a: string): string;", "function o(a: string): string;", statement=True)
            + blank("\nfunction o(a: any) { return a }", ": any"),
        ),
        ("try {} catch (e: unknown) {}", blank("try {} catch (e: unknown) {}", ": unknown")),
        ("for (const k: string of ks) {}", blank("for (const k: string of ks) {}", ": string")),
        ("const t = `a${b as string}c`;", blank("const t = `a${b as string}c`;", " as string")),
        (
            "function f(this: Window, a: number) {}",
            blank("function f(this: Window, a: number) {}", "this: Window, ", ": number"),
        ),
        (
            CLASS,
            blank(CLASS, "abstract", "<T>", "<T>", "implements I, J ", "private", ": number", "readonly", "?: string")
            .replace("  declare z: number;", "  ;" + " " * 17)
            .replace("  [key: string]: any;", "  ;" + " " * 18)
            .replace("  abstract m(): void;", "  ;" + " " * 18)
            .replace("n<U>(u: U): U", "n   (u   )   "),
        ),
        (
            "const o = { m<T>(a: T): T { return a }, k: 1 };",
            blank("const o = { m<T>(a: T): T { return a }, k: 1 };", "<T>", ": T", ": T"),
        ),
        ("let plain = a ? (b) : c;", "let plain = a ? (b) : c;"),
        ("const re = /<T>/g; const s = '<T>x';", "const re = /<T>/g; const s = '<T>x';"),
    ],
)
def test_types_become_spaces(source: str, erased: str) -> None:
    out = erase_types(source, file="x.ts")
    same_layout(source, out)
    assert out == erased


@pytest.mark.parametrize(
    ("source", "construct", "line", "column"),
    [
        ("let a = 1;\nenum Color { Red }", "'enum'", 2, 1),
        ("const enum E { A }", "'enum'", 1, 1),
        ("export namespace N {\n  export const a = 1;\n}", "a 'namespace' with values", 1, 8),
        ("class P {\n  constructor(private x: number) {}\n}", "a constructor parameter property", 2, 15),
        ("import fs = require('fs');", "'import x = require(...)'", 1, 1),
        ("export = thing;", "'export ='", 1, 1),
        ("const n = <number>value;", "a '<T>x' type assertion", 1, 11),
        ("class A {\n  m(@inject x: X) {}\n}", "a parameter decorator", 2, 5),
    ],
)
def test_constructs_that_cannot_be_erased_are_refused(source: str, construct: str, line: int, column: int) -> None:
    with pytest.raises(BadDefinitionError) as info:
        erase_types(source, file="decider.ts")
    error = info.value
    assert (error.file, error.line, error.column) == ("decider.ts", line, column)
    assert error.detail.startswith(f"{construct} is not erasable TypeScript; ")


def test_untokenizable_text_is_refused_with_its_position() -> None:
    with pytest.raises(BadDefinitionError) as info:
        erase_types("let a = 1;\nlet s = 'open", file="d.ts")
    assert (info.value.line, info.value.column, info.value.detail) == (2, 9, "unterminated string")


async def test_errors_in_typescript_point_at_the_original_text(sandbox: JsSandbox) -> None:
    text = "interface Args { n: number }\nexport function decide({ n }: Args): number {\n  const limit: number = 3;\n  if (n > limit) throw new RangeError(`too big: ${n as number}`);\n  return n;\n}\n"
    source = JsSource.from_text(text, file="decider.ts", typescript=True)
    assert (await sandbox.call(source, "decide", [{"n": 2}], pass_ctx=False)).value == 2
    with pytest.raises(Exception) as info:
        await sandbox.call(source, "decide", [{"n": 9}], pass_ctx=False)
    report = str(info.value)
    assert report.splitlines()[0] == "RangeError: too big: 9"
    assert report.splitlines()[1].startswith("    at decider.ts:4:")
    assert report.splitlines()[2] == "    4 |   if (n > limit) throw new RangeError(`too big: ${n as number}`);"
