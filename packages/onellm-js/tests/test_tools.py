"""Tool files (exported description or `.tool.yaml`), their errors, and `run_javascript`."""

from __future__ import annotations

import shutil
import textwrap
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from onellm import Runtime
from onellm.errors import BadDefinitionError
from onellm.messages import JsonPart, TextPart
from onellm.tools import ToolContext, ToolRegistry
from onellm_js import JsSandbox, JsSandboxOptions, JsTool, load_tool, load_tool_directory, run_javascript

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "fixtures" / "js-tools"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


async def bad(path: Path, sandbox: JsSandbox) -> BadDefinitionError:
    with pytest.raises(BadDefinitionError) as info:
        await load_tool(path, sandbox=sandbox)
    return info.value


async def test_an_exported_description(sandbox: JsSandbox) -> None:
    tool = await load_tool(FIXTURES / "reshape.js", sandbox=sandbox)
    assert isinstance(tool, JsTool)
    assert (tool.name, tool.description, tool.requires, tool.required_grants, tool.package) == (
        "reshape_json",
        "Picks fields out of a list of objects.",
        (),
        (),
        "onellm-js",
    )
    assert tool.input_schema["required"] == ["items"]
    result = await tool.invoke({"items": [{"id": 1, "x": 2}, {"id": 2}], "fields": ["id", "x"]}, ToolContext())
    assert (result.is_error, result.parts) == (False, [JsonPart(json=[{"id": 1, "x": 2}, {"id": 2, "x": None}])])


async def test_the_yaml_description_wins_and_every_key_is_read(sandbox: JsSandbox) -> None:
    tool = await load_tool(FIXTURES / "convert-units.js", sandbox=sandbox)
    assert (tool.name, tool.cost_hint, tool.timeout, tool.ends_loop, tool.requires_approval, tool.parallel_safe) == (
        "convert_units",
        Decimal("0.0001"),
        5.0,
        False,
        False,
        True,
    )
    assert tool.output_schema == {
        "type": "object",
        "properties": {"value": {"type": "number"}, "unit": {"type": "string"}},
    }
    ctx = ToolContext(capabilities=None)
    result = await tool.invoke({"value": 2, "from": "km", "to": "m"}, ctx)
    assert result.parts == [JsonPart(json={"value": 2000, "unit": "m"})]
    assert [(line.counter, line.amount, line.label) for line in result.cost_lines] == [
        ("conversions", Decimal("0.0001"), "unit conversion")
    ]
    refused = await tool.invoke({"value": 2, "from": "km", "to": "parsec"}, ToolContext())
    assert refused.is_error
    assert "parsec" in refused.text


async def test_results_by_type(tmp_path: Path, sandbox: JsSandbox) -> None:
    write(
        tmp_path,
        "kinds.js",
        """
        export const tool = { description: "Returns what it is asked for.", inputSchema: { type: "object", properties: { kind: { type: "string" } } } };
        export async function invoke({ kind }) {
          if (kind === "text") return "plain text";
          if (kind === "nothing") return undefined;
          if (kind === "null") return null;
          if (kind === "throw") throw new TypeError("refused: " + kind);
          return { kind };
        }
        """,
    )
    tool = await load_tool(tmp_path / "kinds.js", sandbox=sandbox)
    assert tool.name == "kinds"

    async def call(kind: str) -> Any:
        return await tool.invoke({"kind": kind}, ToolContext())

    assert (await call("text")).parts == [TextPart(text="plain text")]
    assert (await call("nothing")).parts == []
    assert (await call("null")).parts == [JsonPart(json=None)]
    assert (await call("other")).parts == [JsonPart(json={"kind": "other"})]
    thrown = await call("throw")
    assert thrown.is_error
    assert thrown.text == (
        "Error: TypeError: refused: throw\n"
        "    at kinds.js:6:59\n"
        '    6 |   if (kind === "throw") throw new TypeError("refused: " + kind);\n'
        "      |                                                           ^"
    )
    wrong = await tool.invoke({"kind": 5}, ToolContext())
    assert wrong.is_error
    assert "kind" in wrong.text


async def test_requires_maps_to_grants_and_ctx_uses_them(tmp_path: Path, sandbox: JsSandbox) -> None:
    folder = tmp_path / "tools"
    folder.mkdir()
    write(
        folder,
        "reader.js",
        """
        export const tool = {
          description: "Reads a file.",
          inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
          requires: ["fileRead", "network"],
        };
        export const invoke = ({ path }, ctx) => ctx.readFile(path);
        """,
    )
    tool = await load_tool(folder / "reader.js", sandbox=sandbox)
    assert tool.required_grants == ("files_read", "network")
    from onellm.capabilities import Capabilities

    (tmp_path / "note.txt").write_text("a note")
    ctx = ToolContext(capabilities=Capabilities.files(tmp_path), working_directory=tmp_path)
    result = await tool.invoke({"path": "note.txt"}, ctx)
    assert result.parts == [TextPart(text="a note")]
    registry = ToolRegistry([tool])
    assert registry.get("reader") is tool


async def test_a_tool_registers_in_a_runtime(sandbox: JsSandbox) -> None:
    runtime = Runtime(environ={})
    tool = await load_tool(FIXTURES / "reshape.js", sandbox=sandbox)
    runtime.tools.add(tool, run_javascript(sandbox=sandbox))
    assert runtime.tools.get("reshape_json") is tool
    assert runtime.tools.get("run_javascript") is not None


async def test_timeout_shortens_the_time_limit(tmp_path: Path, sandbox: JsSandbox) -> None:
    write(
        tmp_path,
        "slow.js",
        """
        export const tool = { description: "Searches slowly.", timeout: 0.3 };
        export function invoke() { return 'a'.repeat(8e6).indexOf('a'.repeat(4000) + 'b') }
        """,
    )
    tool = await load_tool(tmp_path / "slow.js", sandbox=sandbox)
    started = time.monotonic()
    result = await tool.invoke({}, ToolContext())
    assert time.monotonic() - started < 0.3 + 0.25 + 1.0
    assert (result.is_error, result.text) == (
        True,
        "Error: time limit: the script ran for more than 0.3 s and was stopped",
    )


@pytest.mark.parametrize(
    ("name", "text", "message", "line", "column"),
    [
        ("syntax.js", "export const tool = {\n  description: 'x',\n  name: ,\n};\n", "SyntaxError", 3, 9),
        ("noinvoke.js", "export const tool = { description: 'x' };\n", "must export a function named invoke", 1, 14),
        (
            "nodescription.js",
            "export const tool = { name: 'x' };\nexport function invoke() {}\n",
            "needs a description",
            1,
            14,
        ),
        (
            "typo.js",
            "export const tool = {\n  description: 'x',\n  requries: ['fileRead'],\n};\nexport function invoke() {}\n",
            "unknown key 'requries' in the tool description; did you mean 'requires'?",
            3,
            3,
        ),
        (
            "badcap.js",
            "export const tool = {\n  description: 'x',\n  requires: ['shell'],\n};\nexport function invoke() {}\n",
            "unknown capability 'shell' in requires",
            3,
            3,
        ),
        (
            "badschema.js",
            "export const tool = {\n  description: 'x',\n  inputSchema: { type: 'object', oneOf: [] },\n};\nexport function invoke() {}\n",
            "the keyword 'oneOf' is not supported",
            3,
            3,
        ),
        (
            "imports.js",
            "// a helper\nimport { helper } from './helper.js';\nexport const tool = { description: 'x' };\nexport function invoke() {}\n",
            "a module cannot import other files",
            2,
            1,
        ),
        (
            "throws.js",
            "export const tool = { description: 'x' };\nexport function invoke() {}\nthrow new Error('at load');\n",
            "the tool file failed to load: Error: at load",
            3,
            11,
        ),
        (
            "badname.js",
            "export const tool = { name: 'no spaces allowed', description: 'x' };\nexport function invoke() {}\n",
            "must be 1 to 64 letters",
            1,
            23,
        ),
    ],
)
async def test_bad_tool_files_name_file_line_and_column(
    tmp_path: Path, sandbox: JsSandbox, name: str, text: str, message: str, line: int, column: int
) -> None:
    error = await bad(write(tmp_path, name, text), sandbox)
    assert error.file == name
    assert message in error.detail
    assert (error.line, error.column) == (line, column)


async def test_bad_yaml_descriptions_name_the_yaml_position(tmp_path: Path, sandbox: JsSandbox) -> None:
    write(tmp_path, "t.js", "export function invoke() { return 1 }\n")
    write(tmp_path, "t.tool.yaml", "description: Does things.\ntimeout: -1\n")
    error = await bad(tmp_path / "t.js", sandbox)
    assert (error.file, error.line, error.column, error.detail) == (
        "t.tool.yaml",
        2,
        1,
        "timeout must be a positive number of seconds",
    )
    write(tmp_path, "t.tool.yaml", "description: Does things.\ncostHint: free\n")
    error = await bad(tmp_path / "t.js", sandbox)
    assert (error.line, error.detail) == (2, "costHint must be a non-negative number (a string for an exact decimal)")


async def test_no_description_at_all(tmp_path: Path, sandbox: JsSandbox) -> None:
    error = await bad(write(tmp_path, "bare.js", "export function invoke() {}\n"), sandbox)
    assert error.detail == "the tool file exports no 'tool' description and there is no bare.tool.yaml beside it"


async def test_a_top_level_that_never_ends_fails_to_load(
    tmp_path: Path, make_options: Callable[..., JsSandboxOptions]
) -> None:
    box = JsSandbox(make_options(fuel=10_000_000, time_limit=2.0))
    started = time.monotonic()
    error = await bad(write(tmp_path, "loop.js", "export const tool = { description: 'x' };\nwhile (true) {}\n"), box)
    assert time.monotonic() - started < 2.0 + 0.25 + 1.0
    assert error.detail.startswith("the tool file failed to load: fuel limit")


async def test_a_directory_of_tools(tmp_path: Path, sandbox: JsSandbox) -> None:
    for name in ("reshape.js", "convert-units.js", "convert-units.tool.yaml"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    (tmp_path / "notes.txt").write_text("not a tool")
    tools = await load_tool_directory(tmp_path, sandbox=sandbox)
    assert [t.name for t in tools] == ["convert_units", "reshape_json"]
    write(
        tmp_path,
        "again.js",
        "export const tool = { name: 'reshape_json', description: 'x' };\nexport function invoke() {}\n",
    )
    with pytest.raises(BadDefinitionError, match="also given by"):
        await load_tool_directory(tmp_path, sandbox=sandbox)


# ---------------------------------------------------------------------------------------------------- run_javascript


async def test_run_javascript_output(sandbox: JsSandbox) -> None:
    tool = run_javascript(sandbox=sandbox)
    assert (tool.name, tool.parallel_safe, tool.required_grants, tool.package) == (
        "run_javascript",
        True,
        (),
        "onellm-js",
    )
    assert tool.input_schema["required"] == ["code"]

    async def run(arguments: dict[str, Any]) -> Any:
        return await tool.invoke(arguments, ToolContext())

    both = await run({"code": "console.log('sum of', input); return input.reduce((a, b) => a + b)", "input": [1, 2]})
    assert (both.is_error, both.text) == (False, "sum of [1,2]\n=> 3")
    assert (await run({"code": "return {a: [1]}"})).text == '=> {"a":[1]}'
    assert (await run({"code": "console.log('only')"})).text == "only"
    assert (await run({"code": "let x = 1"})).text == "(no output)"
    failed = await run({"code": "console.log('before');\nnull.x"})
    assert (failed.is_error, failed.text) == (
        True,
        "before\nError: TypeError: cannot read property 'x' of null\n    at <code>:2:1\n    2 | null.x\n      | ^",
    )
    assert (await run({"code": 5})).is_error


async def test_run_javascript_caps_output_like_the_shell_tool(make_options: Callable[..., JsSandboxOptions]) -> None:
    tool = run_javascript(make_options(max_output_chars=100))
    result = await tool.invoke({"code": "console.log('x'.repeat(500)); return 'y'.repeat(500)"}, ToolContext())
    text = result.text
    printed, returned = text.split("\n=> ")
    assert printed == "x" * 50 + "\n[... 401 characters elided ...]\n" + "x" * 49
    assert returned == '"' + "y" * 49 + "\n[... 402 characters elided ...]\n" + "y" * 49 + '"'


async def test_run_javascript_uses_the_call_grants(
    sandbox: JsSandbox, root: Path, make_context: Callable[..., ToolContext]
) -> None:
    (root / "data.json").write_text('{"n": 41}')
    tool = run_javascript(sandbox=sandbox)
    granted = await tool.invoke(
        {"code": "return JSON.parse(await ctx.readFile('data.json')).n + 1"}, make_context(root)
    )
    assert granted.text == "=> 42"
    refused = await tool.invoke({"code": "return await ctx.readFile('data.json')"}, ToolContext())
    assert refused.is_error
    assert "reading files is not available" in refused.text
