"""Building tools from functions, and the invoker: failures become results, cancellation propagates, costs are kept."""

import dataclasses
import enum
import threading
import time as time_module
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, ClassVar
from uuid import UUID

import anyio
import msgspec
import pytest
from annotated_doc import Doc

import onellm
from onellm import CapabilityMissingError
from onellm.messages import CostLine, JsonPart, TextPart
from onellm.tools import Tool, ToolContext, ToolResult, tool

pytestmark = pytest.mark.anyio


def line(amount: str = "0.01") -> CostLine:
    return CostLine.compute("queries", 1, 1, Decimal(amount))


# -------------------------------------------------------------------------------------------------------- building


def test_public_names() -> None:
    assert onellm.tool is tool
    assert onellm.Tool is Tool
    assert onellm.ToolContext is ToolContext
    assert onellm.ToolResult is ToolResult


def test_name_description_and_parameter_descriptions_come_from_the_function() -> None:
    @tool
    async def get_docket_async(case_no: str, court: Annotated[str, Doc("Court code")] = "SC") -> str:
        """Looks up a docket entry.

        Returns the entry text. This second paragraph is not the summary.

        Args:
            case_no: Case number,
                for example 24-1234.
            court: Ignored, because the annotation's description wins.

        Returns:
            The entry.
        """
        return case_no

    assert get_docket_async.name == "get_docket"
    assert get_docket_async.description == "Looks up a docket entry."
    assert get_docket_async.input_schema == {
        "type": "object",
        "properties": {
            "case_no": {"type": "string", "description": "Case number, for example 24-1234."},
            "court": {"type": "string", "description": "Court code", "default": "SC"},
        },
        "required": ["case_no"],
        "additionalProperties": False,
    }
    assert list(get_docket_async.input_schema["properties"]["court"]) == ["type", "description", "default"]
    assert get_docket_async.output_schema is None


def test_explicit_options_and_metadata() -> None:
    def lookup(q: str) -> str:
        return q

    t = Tool.create(
        lookup,
        name="find-it",
        description="Finds it.",
        ends_loop=True,
        requires_approval=True,
        parallel_safe=False,
        timeout_seconds=5,
        required_grants=["network"],
    )
    assert (t.name, t.description, t.ends_loop, t.requires_approval, t.parallel_safe, t.timeout_seconds) == (
        "find-it",
        "Finds it.",
        True,
        True,
        False,
        5,
    )
    assert t.required_grants == ("network",)
    assert t("x") == "x"
    defaults = tool(lookup)
    assert (defaults.ends_loop, defaults.requires_approval, defaults.parallel_safe, defaults.timeout_seconds) == (
        False,
        False,
        True,
        None,
    )
    assert defaults.description == ""


def test_decorator_with_options() -> None:
    @tool(name="renamed", timeout_seconds=0)
    def original() -> None:
        """Nothing."""

    assert original.name == "renamed"
    assert original.timeout_seconds is None
    assert original.input_schema == {"type": "object", "properties": {}, "additionalProperties": False}


class Mood(enum.Enum):
    HAPPY = 1
    SAD = 2


def test_defaults_written_only_for_plain_values() -> None:
    @tool
    def f(
        a: str = "x",
        b: int = 3,
        c: float = 1.5,
        d: bool = True,
        e: Mood = Mood.SAD,
        g: int | None = None,
        h: list[int] = [],  # noqa: B006
        i: Decimal = Decimal("2.50"),
    ) -> None:
        """F."""

    props = f.input_schema["properties"]
    assert [props[k].get("default") for k in "abcdeghi"] == ["x", 3, 1.5, True, "SAD", None, None, 2.5]
    assert "required" not in f.input_schema


def test_context_parameter_is_filled_in_and_never_in_the_schema() -> None:
    @tool
    def f(ctx: ToolContext, x: int) -> None:
        """F."""

    assert list(f.input_schema["properties"]) == ["x"]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f(a: ToolContext, b: ToolContext) -> None: ...", "more than one ToolContext"),
        ("def f(*args: int) -> None: ...", "*args and **args parameters have no schema"),
        ("def f(**kw: int) -> None: ...", "have no schema"),
        ("def f(x) -> None: ...", "parameter 'x' needs a type annotation"),
        ("def f(x: object) -> None: ...", "tool 'f', parameter 'x': object has no schema"),
        ("def f(x: int | str) -> None: ...", "only `T | None` is supported"),
        ("def f() -> complex: ...", "tool 'f', return type: complex has no schema"),
        ("def f(x: 'Missing') -> None: ...", "cannot read the signature"),
    ],
)
def test_bad_signatures_are_refused_at_decoration(source: str, message: str) -> None:
    namespace: dict[str, Any] = {"ToolContext": ToolContext}
    exec(source, namespace)
    with pytest.raises(TypeError) as info:
        tool(namespace["f"])
    assert message in str(info.value)


@pytest.mark.parametrize("name", ["", "a b", "x" * 65, "caf\u00e9"])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(TypeError, match="must be 1 to 64 letters"):
        Tool.create(lambda: None, name=name)


def test_a_lambda_needs_a_name() -> None:
    with pytest.raises(TypeError, match="give one with name="):
        Tool.create(lambda: None)


def test_unknown_grant_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown grant 'disk'"):
        Tool.create(lambda: None, name="x", required_grants=["disk"])


def test_output_schema_for_a_typed_return() -> None:
    @dataclasses.dataclass
    class Verdict:
        ok: bool

    @tool(ends_loop=True)
    def decide() -> Verdict:
        """Decide."""
        return Verdict(True)

    assert decide.output_schema == {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "additionalProperties": False,
    }


def test_context_without_capabilities_fails_closed() -> None:
    ctx = ToolContext()
    assert not ctx.has_capabilities
    with pytest.raises(CapabilityMissingError):
        _ = ctx.capabilities
    assert ctx.working_directory == Path.cwd()


def test_context_keeps_a_path_it_is_given_and_converts_anything_else(tmp_path: Path) -> None:
    class Marked(type(Path())):  # type: ignore[misc]  # a subclass of the concrete path type
        pass

    given = Path(tmp_path)
    assert ToolContext(working_directory=given).working_directory is given  # a path is immutable: shared, not copied
    from_text = ToolContext(working_directory=str(tmp_path)).working_directory
    assert type(from_text) is type(Path())
    assert from_text == given
    from_subclass = ToolContext(working_directory=Marked(tmp_path)).working_directory
    assert type(from_subclass) is type(Path())  # made a plain path, as before
    assert from_subclass == given


# -------------------------------------------------------------------------------------------------------- invoking


async def test_results_by_return_value() -> None:
    @dataclasses.dataclass
    class Row:
        id: UUID
        mood: Mood

    @tool
    def nothing() -> None:
        """N."""

    @tool
    def text() -> str:
        """T."""
        return "hello"

    @tool
    def parts() -> list[TextPart]:
        """P."""
        return [TextPart(text="a"), TextPart(text="b")]

    @tool
    def number() -> int:
        """N."""
        return 42

    @tool
    def record() -> Row:
        """R."""
        return Row(UUID(int=1), Mood.HAPPY)

    @tool
    def passthrough() -> ToolResult:
        """P."""
        return ToolResult(parts=[TextPart(text="raw")], is_error=True)

    assert (await nothing.invoke({})).parts == []
    assert (await text.invoke({})).parts == [TextPart(text="hello")]
    assert (await parts.invoke({})).parts == [TextPart(text="a"), TextPart(text="b")]
    assert (await number.invoke({})).parts == [JsonPart(json=42)]
    result = await record.invoke({})
    assert result.parts == [JsonPart(json={"id": "00000000-0000-0000-0000-000000000001", "mood": "HAPPY"})]
    assert result.value == Row(UUID(int=1), Mood.HAPPY)
    assert not result.is_error
    passed = await passthrough.invoke({})
    assert (passed.parts, passed.is_error) == ([TextPart(text="raw")], True)


async def test_a_struct_result_is_one_json_part_with_encoded_names() -> None:
    class Out(msgspec.Struct, rename="camel"):
        total_due: Decimal

    @tool
    async def bill() -> Out:
        """B."""
        return Out(Decimal("1.10"))

    assert (await bill.invoke({})).parts == [JsonPart(json={"totalDue": Decimal("1.10")})]


async def test_a_value_with_no_json_form_is_an_error_result() -> None:
    @tool
    def weird() -> Any:
        """W."""
        return object()

    result = await weird.invoke({})
    assert result.is_error
    assert result.text == "Tool 'weird' returned a value that cannot be sent: a object cannot be sent as JSON"


async def test_exception_becomes_an_error_result_without_a_traceback() -> None:
    @tool
    def explode(n: int) -> str:
        """E."""
        raise ValueError(f"bad n {n}")

    result = await explode.invoke({"n": 3})
    assert result.is_error
    assert result.parts == [TextPart(text="Tool 'explode' failed: ValueError: bad n 3")]
    assert "Traceback" not in result.text


async def test_exception_without_a_message() -> None:
    @tool
    async def explode() -> str:
        """E."""
        raise KeyError

    assert (await explode.invoke({})).text == "Tool 'explode' failed: KeyError"


async def test_a_timeout_error_raised_by_the_tool_is_a_failure_not_a_timeout() -> None:
    @tool(timeout_seconds=5)
    async def remote() -> str:
        """R."""
        raise TimeoutError("upstream slow")

    assert (await remote.invoke({})).text == "Tool 'remote' failed: TimeoutError: upstream slow"


async def test_argument_errors_are_results() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    result = await add.invoke({"a": 1, "b": "2"})
    assert result.is_error
    assert result.text == "Argument 'b' must be an integer, not a string."
    assert (await add.invoke('{"a": 1, "b": 2}')).parts == [JsonPart(json=3)]
    assert (await add.invoke({"a": 1})).text == "Argument 'b' is required."
    assert (await add.invoke({"a": 1, "b": 2, "c": 3})).text == "Argument 'c' is not accepted (accepted: a, b)."
    assert (await add.invoke({"a": None, "b": 2})).text == "Argument 'a' must be an integer, not null."


async def test_async_timeout() -> None:
    @tool(timeout_seconds=0.05)
    async def slow(ctx: ToolContext) -> str:
        """S."""
        ctx.add_cost_line(line())
        await anyio.sleep(10)
        return "never"

    ctx = ToolContext()
    started = time_module.monotonic()
    result = await slow.invoke({}, ctx)
    assert time_module.monotonic() - started < 5
    assert result.is_error
    assert result.text == "Tool 'slow' timed out after 0.05 s."
    assert result.cost_lines == [line()]


async def test_sync_timeout_does_not_wait_for_the_thread() -> None:
    release = threading.Event()

    @tool(timeout_seconds=0.05)
    def stuck() -> str:
        """S."""
        release.wait(10)
        return "late"

    started = time_module.monotonic()
    result = await stuck.invoke({})
    release.set()
    assert time_module.monotonic() - started < 5
    assert result.text == "Tool 'stuck' timed out after 0.05 s."


async def test_whole_second_timeout_message() -> None:
    @tool(timeout_seconds=1)
    async def slow() -> None:
        """S."""
        await anyio.sleep(60)

    result = await slow.invoke({})
    assert result.text == "Tool 'slow' timed out after 1 s."


async def test_cancellation_propagates_and_keeps_cost_lines_in_the_context() -> None:
    started = anyio.Event()

    @tool(timeout_seconds=30)
    async def wait(ctx: ToolContext) -> str:
        """W."""
        ctx.add_cost_line(line("0.5"))
        started.set()
        await anyio.sleep(60)
        return "never"

    ctx = ToolContext()
    outcome: list[ToolResult] = []
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            outcome.append(await wait.invoke({}, ctx))

        tg.start_soon(run)
        await started.wait()
        tg.cancel_scope.cancel()
    assert outcome == []
    assert ctx.cost_lines == [line("0.5")]


async def test_cost_lines_kept_on_success_and_on_failure() -> None:
    @tool
    async def charge(fail: bool, ctx: ToolContext) -> str:
        """C."""
        ctx.add_cost_line(line())
        if fail:
            raise RuntimeError("after charging")
        return "ok"

    ok = await charge.invoke({"fail": False})
    bad = await charge.invoke({"fail": True})
    assert (ok.cost_lines, ok.is_error) == ([line()], False)
    assert (bad.cost_lines, bad.is_error, bad.text) == (
        [line()],
        True,
        "Tool 'charge' failed: RuntimeError: after charging",
    )


async def test_cost_lines_of_a_returned_tool_result_are_merged() -> None:
    @tool
    def both(ctx: ToolContext) -> ToolResult:
        """B."""
        ctx.add_cost_line(line("1"))
        return ToolResult(parts=[], cost_lines=[line("2")])

    assert (await both.invoke({})).cost_lines == [line("2"), line("1")]


async def test_sync_tools_run_in_a_worker_thread_unless_told_not_to() -> None:
    loop_thread = threading.get_ident()

    def where() -> bool:
        return threading.get_ident() == loop_thread

    threaded = Tool.create(where)
    inline = Tool.create(where, in_thread=False)
    assert (await threaded.invoke({})).parts == [JsonPart(json=False)]
    assert (await inline.invoke({})).parts == [JsonPart(json=True)]


async def test_sync_tool_sees_cancellation_through_the_context() -> None:
    stopped = threading.Event()

    @tool(timeout_seconds=0.05)
    def polite(ctx: ToolContext) -> str:
        """P."""
        for _ in range(500):
            time_module.sleep(0.01)
            try:
                ctx.check_cancelled()
            except BaseException:
                stopped.set()
                raise
        return "done"

    result = await polite.invoke({})
    assert result.text == "Tool 'polite' timed out after 0.05 s."
    assert await anyio.to_thread.run_sync(stopped.wait, 5)


async def test_positional_only_and_keyword_only_parameters() -> None:
    @tool
    def f(a: int, /, b: int, *, c: int = 10) -> int:
        """F."""
        return a * 100 + b * 10 + c

    assert (await f.invoke({"a": 1, "b": 2})).parts == [JsonPart(json=130)]
    assert (await f.invoke({"a": 1, "b": 2, "c": 3})).parts == [JsonPart(json=123)]


async def test_context_fields_reach_the_tool() -> None:
    seen: dict[str, Any] = {}

    @tool
    async def peek(ctx: ToolContext) -> None:
        """P."""
        seen.update(name=ctx.tool_name, call=ctx.call_id, instance=ctx.instance_id, cwd=ctx.working_directory)

    await peek.invoke({}, ToolContext(call_id="c1", instance_id="i1", working_directory="/tmp"))
    assert seen == {"name": "peek", "call": "c1", "instance": "i1", "cwd": Path("/tmp")}


async def test_tool_from_schema_gets_the_raw_object() -> None:
    async def handler(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        return {"echo": arguments}

    t = Tool.from_schema(
        "echo",
        "Echo.",
        {"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": False},
        handler,
    )
    assert (await t.invoke({"x": 1})).parts == [JsonPart(json={"echo": {"x": 1}})]
    assert (await t.invoke("[]")).text == "Argument must be a JSON object, not list."
    with pytest.raises(TypeError, match="cannot be called directly"):
        t()


def test_generator_functions_are_refused() -> None:
    def numbers() -> Any:
        yield 1

    async def stream() -> Any:
        yield 1

    for fn in (numbers, stream):
        with pytest.raises(TypeError, match="a generator function cannot be a tool"):
            Tool.create(fn)


async def test_optional_context_parameter_is_filled_in() -> None:
    @tool
    async def f(x: int, ctx: ToolContext | None = None) -> bool:
        """F."""
        return ctx is not None

    assert list(f.input_schema["properties"]) == ["x"]
    assert (await f.invoke({"x": 1})).parts == [JsonPart(json=True)]


async def test_an_unexpected_failure_while_reading_arguments_is_a_result() -> None:
    class Odd(msgspec.Struct):
        x: int

        def __post_init__(self) -> None:
            raise ValueError("no")

    @tool
    def f(o: Odd) -> None:
        """F."""

    result = await f.invoke({"o": {"x": 1}})
    assert result.is_error
    assert result.text == "Argument 'o' is not a valid Odd: ValueError: no."


async def test_an_exception_whose_message_cannot_be_read() -> None:
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    @tool
    def f() -> None:
        """F."""
        raise Broken

    assert (await f.invoke({})).text == "Tool 'f' failed: Broken: (the error's message could not be read)"


async def test_a_result_that_fails_while_encoding_is_an_error_result() -> None:
    class Model:
        model_fields: ClassVar[dict[str, Any]] = {}

        @staticmethod
        def model_validate(value: Any) -> Any:
            return value

        def model_dump(self, **kwargs: Any) -> Any:
            raise ValueError("cannot dump")

    @tool
    def f() -> Any:
        """F."""
        return Model()

    result = await f.invoke({})
    assert result.is_error
    assert result.text == "Tool 'f' returned a value that cannot be sent: cannot dump"


async def test_methods_are_made_tools_through_the_bound_method() -> None:
    with pytest.raises(TypeError, match=r"make a tool of the bound method instead: Tool.create\(instance.method\)"):

        class Decorated:
            @tool
            def lookup(self, q: str) -> str:
                return q

    class Docket:
        def __init__(self, prefix: str) -> None:
            self.prefix = prefix

        def lookup(self, q: str) -> str:
            """Looks up."""
            return self.prefix + q

    bound = Tool.create(Docket("D-").lookup)
    assert list(bound.input_schema["properties"]) == ["q"]
    assert (await bound.invoke({"q": "1"})).parts == [TextPart(text="D-1")]


async def test_a_path_result_is_sent_as_text_json() -> None:
    @tool
    def where() -> Path:
        """W."""
        return Path("/srv/data/file.txt")

    assert where.output_schema == {"type": "string"}
    assert (await where.invoke({})).parts == [JsonPart(json="/srv/data/file.txt")]
