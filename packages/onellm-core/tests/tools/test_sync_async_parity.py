"""The same tool written sync and async gives the same schema and the same results, case by case."""

from decimal import Decimal
from typing import Any

import anyio
import pytest

from onellm.messages import CostLine
from onellm.tools import Tool, ToolContext

pytestmark = pytest.mark.anyio


def lookup_sync(case_no: str, ctx: ToolContext, times: int = 1) -> Any:
    """Looks up a docket.

    Args:
        case_no: Case number.
        times: Repeat count.
    """
    ctx.add_cost_line(CostLine.compute("lookups", 1, 1, Decimal("0.01")))
    if case_no == "boom":
        raise LookupError("no such case")
    if case_no == "slow":
        import time

        for _ in range(200):
            time.sleep(0.01)
            ctx.check_cancelled()
    if case_no == "none":
        return None
    if case_no == "json":
        return {"case": case_no, "times": times}
    return f"{case_no} x{times}"


async def lookup_async(case_no: str, ctx: ToolContext, times: int = 1) -> Any:
    """Looks up a docket.

    Args:
        case_no: Case number.
        times: Repeat count.
    """
    ctx.add_cost_line(CostLine.compute("lookups", 1, 1, Decimal("0.01")))
    if case_no == "boom":
        raise LookupError("no such case")
    if case_no == "slow":
        await anyio.sleep(2)
    if case_no == "none":
        return None
    if case_no == "json":
        return {"case": case_no, "times": times}
    return f"{case_no} x{times}"


SYNC = Tool.create(lookup_sync, name="lookup", timeout_seconds=0.2)
ASYNC = Tool.create(lookup_async, name="lookup", timeout_seconds=0.2)

CASES: list[Any] = [
    {"case_no": "24-1"},
    {"case_no": "24-1", "times": 3},
    {"case_no": "json", "times": 2},
    {"case_no": "none"},
    {"case_no": "boom"},
    {"case_no": "slow"},
    {"times": 1},
    {"case_no": 5},
    {"case_no": "x", "extra": True},
    '{"case_no": "text"}',
]


def test_same_schema() -> None:
    assert SYNC.input_schema == ASYNC.input_schema
    assert SYNC.description == ASYNC.description == "Looks up a docket."


@pytest.mark.parametrize("arguments", CASES, ids=[str(c) for c in CASES])
async def test_same_result(arguments: Any) -> None:
    a = await SYNC.invoke(arguments, ToolContext())
    b = await ASYNC.invoke(arguments, ToolContext())
    assert (a.parts, a.is_error, a.cost_lines) == (b.parts, b.is_error, b.cost_lines)
