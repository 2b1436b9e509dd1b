"""The sandbox: what a script sees, what comes back, and how failures are reported."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import pytest

from onellm.clock import FakeClock
from onellm_js import JsFailure, JsSandbox, JsSandboxError, JsSandboxOptions

pytestmark = pytest.mark.anyio


async def fails(box: JsSandbox, code: str, **kw: Any) -> JsSandboxError:
    with pytest.raises(JsSandboxError) as info:
        await box.run_code(code, **kw)
    return info.value


async def test_code_runs_as_an_async_function_body_with_input(sandbox: JsSandbox) -> None:
    result = await sandbox.run_code(
        "const doubled = input.items.map(x => x * 2);\nawait null;\nreturn { doubled, sum: doubled.reduce((a, b) => a + b) }",
        input={"items": [1, 2, 3]},
    )
    assert (result.value, result.type, result.json) == (
        {"doubled": [2, 4, 6], "sum": 12},
        "object",
        '{"doubled":[2,4,6],"sum":12}',
    )


async def test_returned_values_keep_their_javascript_type(sandbox: JsSandbox) -> None:
    cases = {
        "return 'text'": ("text", "string"),
        "return 42.5": (42.5, "number"),
        "return true": (True, "boolean"),
        "return null": (None, "object"),
        "return [1, 'a', null]": ([1, "a", None], "object"),
    }
    for code, expected in cases.items():
        result = await sandbox.run_code(code)
        assert (result.value, result.type) == expected, code
    nothing = await sandbox.run_code("1 + 1")
    assert (nothing.value, nothing.type, nothing.json) == (None, "undefined", None)


async def test_console_output_is_kept_in_order(sandbox: JsSandbox) -> None:
    result = await sandbox.run_code(
        "console.log('a', 1, {b: [2]}, null, undefined);\nconsole.error(new TypeError('t'));\nconsole.info(10n, Symbol('s'));"
    )
    assert result.output == 'a 1 {"b":[2]} null undefined\nTypeError: t\n10n Symbol(s)\n'


async def test_only_the_sandbox_globals_are_reachable(sandbox: JsSandbox) -> None:
    result = await sandbox.run_code(
        "return ['require', 'process', 'std', 'os', 'setTimeout', 'fetch', 'performance', 'print', 'scriptArgs']"
        ".map(n => typeof globalThis[n])"
    )
    assert result.value == ["undefined"] * 9
    imported = await sandbox.run_code(
        "try { await import('/etc/passwd'); return 'loaded' } catch (e) { return String(e) }"
    )
    assert imported.value == "ReferenceError: could not load module '/etc/passwd'"


async def test_each_run_gets_a_fresh_engine(sandbox: JsSandbox) -> None:
    await sandbox.run_code("globalThis.leak = 1; Array.prototype.evil = () => 'x'; Object.freeze(Object.prototype)")
    result = await sandbox.run_code("return [typeof leak, typeof [].evil, Object.isFrozen(Object.prototype)]")
    assert result.value == ["undefined", "undefined", False]


async def test_a_script_cannot_unhook_the_plumbing(sandbox: JsSandbox) -> None:
    code = """
    Error.prepareStackTrace = () => 'mine';
    Error.stackTraceLimit = 0;
    JSON.stringify = () => '"tampered"';
    Array.prototype.push = function () { throw new Error('no') };
    console.log('still', 'works');
    return { plain: [1, 2] };
    """
    result = await sandbox.run_code(code)
    assert (result.value, result.output) == ({"plain": [1, 2]}, "still works\n")


async def test_a_script_error_reports_the_error_position_and_source_line(sandbox: JsSandbox) -> None:
    error = await fails(sandbox, "const a = 1;\nconst b = null;\n  return b.value + a;")
    assert error.kind is JsFailure.SCRIPT
    assert (error.file, error.line, error.column) == ("<code>", 3, 10)
    assert str(error) == (
        "TypeError: cannot read property 'value' of null\n"
        "    at <code>:3:10\n"
        "    3 |   return b.value + a;\n"
        "      |          ^"
    )


async def test_a_syntax_error_is_its_own_kind(sandbox: JsSandbox) -> None:
    error = await fails(sandbox, "let x = 1;\nlet y = ;")
    assert (error.kind, error.line, error.column) == (JsFailure.SYNTAX, 2, 9)
    assert str(error).startswith("SyntaxError: unexpected token in expression: ';'\n    at <code>:2:9\n")


async def test_thrown_values_that_are_not_errors(sandbox: JsSandbox) -> None:
    assert str(await fails(sandbox, "throw 'boom'")) == "Uncaught boom"
    assert str(await fails(sandbox, "throw { code: 7 }")) == 'Uncaught {"code":7}'
    assert str(await fails(sandbox, "await Promise.reject(new RangeError('late'))")).startswith("RangeError: late")


async def test_messages_are_capped_and_say_how_much_was_left_out(sandbox: JsSandbox) -> None:
    error = await fails(sandbox, "throw new Error('x'.repeat(50000))")
    text = str(error)
    assert len(text) <= JsSandboxError.MAX_MESSAGE_CHARS
    assert re.search(r"\[\.\.\. \d+ characters left out", text)
    assert text.startswith("Error: xxxx")


async def test_reports_show_no_host_stack_path_or_python_type(sandbox: JsSandbox) -> None:
    error = await fails(
        sandbox,
        "try { await ctx.readFile('/etc/passwd') } catch (e) { console.log(e.message, e.stack) }\n"
        "function deep() { return undefinedName }\nreturn deep()",
    )
    text = str(error) + error.output
    assert "ReferenceError: undefinedName is not defined" in text
    for leak in ("Traceback", "/work/", "site-packages", "_worker", "_prelude", "Capability", "Error(", "onellm"):
        assert leak not in text, leak


async def test_a_promise_that_can_never_settle_ends_the_run(sandbox: JsSandbox) -> None:
    error = await fails(sandbox, "await new Promise(() => {})")
    assert error.kind is JsFailure.SCRIPT
    assert "never settle" in str(error)


async def test_deterministic_runs_repeat_time_and_chance(make_options: Callable[..., JsSandboxOptions]) -> None:
    fixed = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
    box = JsSandbox(make_options(deterministic=True, fixed_time=fixed, random_seed=7))
    code = "return [Date.now(), new Date().toISOString(), Date(), Math.random(), Math.random(), new Date(0).getTime(), new Date() instanceof Date]"
    first = (await box.run_code(code)).value
    second = (await box.run_code(code)).value
    assert first == second
    assert first[:3] == [fixed.timestamp() * 1000, "2026-03-01T12:00:00.000Z", first[2]]
    assert first[2].startswith("Sun Mar 01 2026")
    assert 0 <= first[3] < 1
    assert first[3] != first[4]
    assert first[5:] == [0, True]
    other = JsSandbox(make_options(deterministic=True, fixed_time=fixed, random_seed=8))
    assert (await other.run_code(code)).value[3] != first[3]


async def test_without_deterministic_mode_randomness_differs(sandbox: JsSandbox) -> None:
    values = {(await sandbox.run_code("return Math.random()")).value for _ in range(3)}
    assert len(values) == 3


async def test_the_clock_is_the_runtime_clock(make_options: Callable[..., JsSandboxOptions]) -> None:
    clock = FakeClock(dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.UTC))
    box = JsSandbox(make_options(clock=clock))
    now = (await box.run_code("return new Date().toISOString()")).value
    assert now.startswith("2030-01-02T03:04:0")


async def test_input_must_be_json(sandbox: JsSandbox) -> None:
    with pytest.raises(TypeError, match="JSON-compatible"):
        await sandbox.run_code("return input", input=object())


async def test_lone_surrogates_come_back_as_replacement_characters(sandbox: JsSandbox) -> None:
    result = await sandbox.run_code("console.log('a\\ud800b'); return { s: 'x\\udc00y\\ud83d\\ude00' }")
    assert result.value == {"s": "x\ufffdy\U0001f600"}
    assert result.output == "a\ufffdb\n"
