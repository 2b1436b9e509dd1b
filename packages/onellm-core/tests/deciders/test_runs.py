"""Runs are instances: named after the decider, `stopped` or `error`, the `decider` key with engine, origin, models,
calls with cost and answers; records; replay as a new instance; get, list and statistics (excluded origins left
out); cancellation, spend caps and a disk that will not save."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest

import onellm
from onellm.errors import BudgetExceededError, ProviderError, RunCancelledError, StorageError
from onellm.instances import FileInstanceStore, Instance
from onellm.testing import ScriptedDecisionProvider, disk_fault

pytestmark = pytest.mark.anyio

TRIAGE = """\
model: jev-latest
state:
  title: "{{ .inputs.title }}"
questions:
  topic:
    type: choice
    instructions: Which team should handle the ticket?
    criteria:
      billing: Charges and refunds
      orders: Delivery and returns
  angry:
    type: noul
    instructions: Is the customer angry?
"""


async def test_a_run_is_an_instance_named_after_the_decider(h: Any, tmp_path: Path) -> None:
    events: list[Any] = []
    runtime = h.runtime_with(ScriptedDecisionProvider("typesafe"), events=events)
    runtime.store = FileInstanceStore(tmp_path / "runs", durable=False)
    folder = h.write_decider(tmp_path / "triage-ticket", TRIAGE)
    result = await runtime.decide(folder, {"title": "Refund please"}, origin="playground")
    instance = result.instance
    assert (instance.name, instance.state, instance.model) == ("triage-ticket", "stopped", "typesafe:jev-latest")
    assert instance.agent_definition == str(folder / "decider.yaml")
    assert instance.inputs == {"title": "Refund please"}
    extension = instance.extra["decider"]
    assert list(extension) == ["engine", "origin", "models", "calls", "answers", "definition"]
    assert (extension["engine"], extension["origin"], extension["models"]) == (
        "jev",
        "playground",
        ["typesafe:jev-latest"],
    )
    [call] = extension["calls"]
    assert call["questions"] == ["topic", "angry"]
    assert call["usage"]["cost"] == result.cost.total > 0
    assert extension["answers"] == result.answers
    # Saved, and read back the same.
    stored = Instance.load(runtime.store.path_of(instance.id))
    assert stored.dumps() == instance.dumps()
    again = await runtime.get_decision(instance.id)
    assert again is not None
    assert (again.answers, again.outputs, again.cost.total, again.engine, again.origin) == (
        result.answers,
        result.answers,
        result.cost.total,
        "jev",
        "playground",
    )
    # Recorded: the run's start and end and the call with its cost.
    kinds = [(type(r).__name__, getattr(r, "event", None)) for r in events]
    assert kinds == [("RunRecord", "started"), ("InferenceRecord", None), ("RunRecord", "stopped")]
    inference = events[1]
    assert (inference.operation, inference.provider, inference.usage.cost) == ("decide", "typesafe", result.cost.total)


async def test_a_failed_run_is_saved_in_error_with_the_calls_paid_for(h: Any, tmp_path: Path) -> None:
    def answer(question: Any) -> Any:
        if question.key == "angry":
            raise ProviderError("the engine fell over", provider="typesafe", status=500)
        return None

    events: list[Any] = []
    runtime = h.runtime_with(ScriptedDecisionProvider("typesafe", answer=answer), events=events)
    with pytest.raises(ProviderError, match="fell over"):
        await runtime.decide(h.write_decider(tmp_path / "t", TRIAGE), {"title": "x"})
    [summary] = await runtime.list_decisions()
    stored = await runtime.get_decision(summary.instance_id)
    assert stored is not None
    assert stored.instance.state == "error"
    assert stored.instance.error is not None
    assert (stored.instance.error.type, stored.instance.error.message) == (
        "ProviderError",
        "the engine fell over (typesafe, 500)",
    )
    assert stored.calls == []  # the one request failed: nothing was paid
    assert [type(r).__name__ for r in events] == ["RunRecord", "ErrorRecord", "RunRecord"]
    assert events[-1].state == "error"


async def test_an_origin_outside_the_list_is_refused(h: Any, tmp_path: Path) -> None:
    runtime = h.runtime_with(ScriptedDecisionProvider("typesafe"))
    with pytest.raises(ValueError, match="origin must be one of api, agent, playground, replay, eval"):
        await runtime.decide(h.write_decider(tmp_path / "t", TRIAGE), {"title": "x"}, origin="cron")


async def test_replay_asks_the_recorded_inputs_again_as_a_new_instance_optionally_on_another_model(
    h: Any, tmp_path: Path
) -> None:
    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    first = await runtime.decide(h.write_decider(tmp_path / "t", TRIAGE), {"title": "Refund please"})
    replayed = await runtime.replay_decision(first.instance.id, model="jev-1.14.0")
    assert replayed.instance.id != first.instance.id
    assert replayed.origin == "replay"
    assert replayed.model == "typesafe:jev-1.14.0"
    assert replayed.instance.extra["decider"]["replayOf"] == first.instance.id
    assert [r.model for r in engine.requests] == ["jev-latest", "jev-1.14.0"]
    assert engine.requests[1].state == {"title": "Refund please"}
    with pytest.raises(LookupError):
        await runtime.replay_decision("no-such-run")


async def test_replay_uses_the_kept_definition_when_the_file_is_gone(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    folder = h.write_decider(tmp_path / "t", TRIAGE)
    first = await runtime.decide(folder, {"title": "Refund please"})
    (folder / "decider.yaml").unlink()
    replayed = await runtime.replay_decision(first.instance.id)
    assert replayed.answers == first.answers
    assert replayed.instance.name == "t"


async def test_list_and_stats_filter_and_leave_out_excluded_origins(h: Any, tmp_path: Path) -> None:
    answers = iter(["billing", "orders", "billing", "orders", "billing"])
    engine = ScriptedDecisionProvider(
        "typesafe", answer=lambda q: next(answers) if q.type == "choice" else (0.8 if q.type == "noul" else None)
    )
    runtime = h.runtime_with(engine)
    folder = h.write_decider(tmp_path / "t", TRIAGE)
    other = h.write_decider(tmp_path / "other", TRIAGE)
    first = await runtime.decide(folder, {"title": "a"})
    await runtime.decide(folder, {"title": "b"}, origin="agent")
    await runtime.decide(folder, {"title": "c"}, origin="eval")
    await runtime.replay_decision(first.instance.id)
    await runtime.decide(other, {"title": "d"})
    everything = await runtime.list_decisions()
    assert len(everything) == 5
    assert [s.origin for s in await runtime.list_decisions(decider="t")] == ["replay", "eval", "agent", "api"]
    assert [s.origin for s in await runtime.list_decisions(decider="t", origin="agent")] == ["agent"]
    assert len(await runtime.list_decisions(limit=2)) == 2
    assert await runtime.list_decisions(state="error") == []

    stats = await runtime.decision_stats(decider="t")
    assert (stats.runs, stats.answered, stats.failed, stats.excluded) == (2, 2, 0, 2)
    assert stats.by_origin == {"api": 1, "agent": 1}
    assert stats.questions["topic"].choices == {"billing": 1, "orders": 1}
    assert stats.questions["angry"].mean == pytest.approx(0.8)
    assert stats.questions["angry"].yes == 2
    assert stats.calls == 2
    summaries = await runtime.list_decisions(decider="t")
    assert stats.cost == sum(s.cost for s in summaries if s.origin in ("api", "agent"))
    everything_counted = await runtime.decision_stats(decider="t", exclude_origins=())
    assert (everything_counted.runs, everything_counted.excluded) == (4, 0)
    only_api = await runtime.decision_stats(exclude_origins=("agent", "eval", "replay"))
    assert only_api.by_origin == {"api": 2}
    assert only_api.by_model == {"typesafe:jev-latest": 2}


async def test_get_decision_of_an_unknown_or_other_instance_is_none(h: Any) -> None:
    runtime = h.runtime_with(ScriptedDecisionProvider("typesafe"))
    assert await runtime.get_decision("nothing-here") is None
    await runtime.store.save(Instance(id="a-chat", name="chat", state="waiting"))
    assert await runtime.get_decision("a-chat") is None


async def test_a_cancelled_run_is_saved_stopped_and_cancelled(h: Any, tmp_path: Path) -> None:
    engine = h.SlowDecisions("typesafe", delay=10)
    runtime = h.runtime_with(engine)
    with anyio.move_on_after(0.05), pytest.raises(RunCancelledError) as caught:
        await runtime.decide(h.write_decider(tmp_path / "t", TRIAGE), {"title": "x"})
    instance = caught.value.instance
    assert (instance.state, instance.cancelled) == ("stopped", True)
    stored = await runtime.store.load(instance.id)
    assert stored is not None
    assert stored.cancelled is True


async def test_a_spend_cap_holds_each_request_and_refuses_an_unpriced_engine(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine, ScriptedDecisionProvider("openai"), spend_cap="0.01")
    result = await runtime.decide(h.write_decider(tmp_path / "t", TRIAGE), {"title": "x"})
    assert runtime.spent == result.cost.total
    openai = h.write_decider(tmp_path / "o", TRIAGE.replace("jev-latest", "openai-decisions"))
    with pytest.raises(BudgetExceededError):
        await runtime.decide(openai, {"title": "x"})
    tiny = h.runtime_with(ScriptedDecisionProvider("typesafe"), max_cost_per_call="0.0000000001")
    with pytest.raises(BudgetExceededError):
        await tiny.decide(h.write_decider(tmp_path / "t2", TRIAGE), {"title": "x"})


async def test_an_answer_the_disk_cannot_save_is_still_given_back(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    runtime.store = FileInstanceStore(tmp_path / "runs", durable=False)
    folder = h.write_decider(tmp_path / "t", TRIAGE)
    with disk_fault("read-only"), pytest.raises(StorageError, match="lock"):
        await runtime.decide(folder, {"title": "x"})
    assert engine.requests == []  # the lease could not be taken: nothing was sent
    with disk_fault("full"), pytest.raises(StorageError) as caught:
        await runtime.decide(folder, {"title": "x"})
    assert caught.value.result is not None
    assert caught.value.result.answers["topic"]["choice"] == "billing"
    assert caught.value.result.cost.total > Decimal(0)


def test_decide_sync_drives_the_run_and_refuses_inside_a_loop(h: Any, tmp_path: Path) -> None:
    runtime = h.runtime_with(ScriptedDecisionProvider("typesafe"))
    folder = h.write_decider(tmp_path / "t", TRIAGE)
    with onellm.use_runtime(runtime):
        result = onellm.decide_sync(folder, {"title": "x"})
        assert result.answers["angry"] == {"type": "noul", "noul": 0.5}

        async def inside() -> None:
            with pytest.raises(RuntimeError, match=r"await onellm\.decide"):
                onellm.decide_sync(folder, {"title": "x"})

        anyio.run(inside)


async def test_decide_takes_a_file_a_folder_or_a_loaded_decider(h: Any, tmp_path: Path) -> None:
    runtime = h.runtime_with(ScriptedDecisionProvider("typesafe"))
    folder = h.write_decider(tmp_path / "t", TRIAGE)
    with onellm.use_runtime(runtime):
        a = await onellm.decide(folder, {"title": "x"})
        b = await onellm.decide(str(folder / "decider.yaml"), {"title": "x"})
        c = await onellm.decide(onellm.Decider.load(folder), {"title": "x"})
    assert a.answers == b.answers == c.answers
    with pytest.raises(TypeError, match="decider: expected"):
        await runtime.decide(42, {})
    with pytest.raises(TypeError, match="inputs: expected a mapping"):
        await runtime.decide(folder, ["x"])  # type: ignore[arg-type]


async def test_an_unreadable_instance_is_left_out_of_lists_with_a_warning(
    h: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from onellm.errors import BadDefinitionError
    from onellm.instances import MemoryInstanceStore

    class Damaged(MemoryInstanceStore):
        async def load(self, instance_id: str) -> Instance | None:
            if instance_id == "broken":
                raise BadDefinitionError("expected a mapping", file="broken.yaml", line=3, column=1)
            return await super().load(instance_id)

    runtime = h.runtime_with(ScriptedDecisionProvider("typesafe"))
    runtime.store = Damaged()
    result = await runtime.decide(h.write_decider(tmp_path / "t", TRIAGE), {"title": "x"})
    await runtime.store.save(Instance(id="broken", name="t", state="stopped"))
    with caplog.at_level("WARNING", logger="onellm.deciders"):
        summaries = await runtime.list_decisions()
        stats = await runtime.decision_stats()
    assert [s.instance_id for s in summaries] == [result.instance.id]
    assert stats.runs == 1
    assert "instance broken cannot be read and is left out: broken.yaml:3:1: expected a mapping" in caplog.text


async def test_llm_options_on_a_decisions_engine_are_said_to_be_unused(h: Any, tmp_path: Path) -> None:
    runtime = h.runtime_with(ScriptedDecisionProvider("typesafe"))
    result = await runtime.decide(h.write_decider(tmp_path / "t", TRIAGE + "llm: {samples: 3}\n"), {"title": "x"})
    assert [w.message for w in result.warnings if w.kind == "decider"] == [
        "llm options apply to chat engines only; typesafe:jev-latest is a decisions engine, so they are not used"
    ]
