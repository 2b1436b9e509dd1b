from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

from onellm import Runtime
from onellm.clock import FakeClock
from onellm.errors import TemplateError
from onellm.instances import MemoryInstanceStore
from onellm.testing import ScriptedProvider, ScriptStep

pytestmark = pytest.mark.anyio

COMMIT_FLOW = """\
model: gpt-6-luna
systemPrompt: You write git commit messages.
initialPrompts:
  - user:
      - text: "Summarize this change in one sentence: {{ .inputs.diff }}"
  - user:
      - text: "Now write the commit message from your summary: {{ (index .turns 0).text }}"
"""


def _setup(**options: object) -> tuple[Runtime, ScriptedProvider]:
    provider = ScriptedProvider("openai")
    runtime = Runtime(store=MemoryInstanceStore(), environ={"VISIBLE": "yes", "HIDDEN": "no"}, **options)  # type: ignore[arg-type]
    runtime.providers.set("openai", provider)
    return runtime, provider


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


async def test_commit_message_flow(tmp_path: Path) -> None:
    runtime, provider = _setup()
    flow = _write(tmp_path, "commit-message.flow", COMMIT_FLOW)
    provider.enqueue(
        ScriptStep.text_with_usage("Raises the retry count from 1 to 3.", 40, 10),
        ScriptStep.text_with_usage(
            "Raise retries from 1 to 3\n\nTransient failures now get two more attempts.", 70, 16
        ),
    )
    result = await runtime.run_script(flow, {"diff": "- retries = 1\n+ retries = 3"})
    assert result.text == "Raise retries from 1 to 3\n\nTransient failures now get two more attempts."
    assert len(result.turns) == 2
    assert result.cost.total == Decimal("0.000024")
    assert str(result.cost.total) == "0.0000240"  # at the scale of its lines, as the seeds print it
    assert result.cost.display(7) == "0.0000240"
    first, second = provider.requests
    assert first.system == "You write git commit messages."
    assert first.messages[0].user_text == "Summarize this change in one sentence: - retries = 1\n+ retries = 3"
    assert [m.user_text for m in second.messages] == [
        first.messages[0].user_text,
        "Now write the commit message from your summary: Raises the retry count from 1 to 3.",
    ]
    assert second.messages[0].text == "Raises the retry count from 1 to 3."
    instance = result.instance
    assert instance.state == "stopped"
    assert instance.rendered_system_prompt == "You write git commit messages."
    assert instance.inputs == {"diff": "- retries = 1\n+ retries = 3"}
    assert instance.id in runtime.store  # type: ignore[operator]


async def test_scope_when_rules_assistant_prompts_and_output_schema(tmp_path: Path) -> None:
    clock = FakeClock(dt.datetime(2026, 11, 5, 12, 0, tzinfo=dt.UTC))
    runtime, provider = _setup(clock=clock, allowed_environment=["VISIBLE"], scope_values={"git": {"branch": "main"}})
    _write(tmp_path, "style.md", "Use the imperative mood.")
    flow = _write(
        tmp_path,
        "scope.flow",
        """\
model: gpt-6-luna
inputs:
  who: nobody
  skip: "no"
systemPrompt: '{{ embed "style.md" }} Today is {{ .time.today }}.'
initialPrompts:
  - user:
      - text: "{{ .inputs.who }} {{ .env.VISIBLE }}{{ .env.HIDDEN }} {{ .git.branch }} {{ .invocationMode }}"
  - user:
      - text: skipped
    when: "{{ .inputs.skip }}"
  - assistant:
      - text: "noted: {{ (index .turns 0).json.n }}"
  - user:
      - text: "last"
outputSchema:
  type: object
  properties:
    ok: {type: boolean}
  required: [ok]
  additionalProperties: false
""",
    )
    provider.enqueue(ScriptStep.text('{"n": 7}'), ScriptStep.text('{"ok": true}'))
    result = await runtime.run_script(flow, {"who": "Ada"})
    first, last = provider.requests
    assert first.system == "Use the imperative mood. Today is 2026-11-05."
    assert first.messages[0].user_text == "Ada yes<no value> main autonomous"
    assert first.response_format is None
    assert [m.user_text for m in last.messages] == ["Ada yes<no value> main autonomous", "", "last"]
    assert last.messages[1].text == "noted: 7"
    assert last.response_format is not None
    assert last.response_format.type == "json_schema"
    assert result.output == {"ok": True}
    assert len(result.turns) == 2


async def test_missing_key_error_and_embed_confined(tmp_path: Path) -> None:
    runtime, provider = _setup()
    strict = _write(
        tmp_path,
        "strict.flow",
        'model: gpt-6-luna\nmissingKey: error\ninitialPrompts:\n  - user:\n      - text: "{{ .inputs.nope }}"\n',
    )
    with pytest.raises(TemplateError):
        await runtime.run_script(strict)
    (tmp_path / "outside.md").write_text("secret", encoding="utf-8")
    inner = tmp_path / "inner"
    inner.mkdir()
    escape = _write(
        inner,
        "escape.flow",
        "model: gpt-6-luna\ninitialPrompts:\n  - user:\n      - text: '{{ embed \"../outside.md\" }}'\n",
    )
    with pytest.raises(TemplateError, match="embed"):
        await runtime.run_script(escape)
    assert provider.requests == []


async def test_tool_calls_in_a_script_are_ignored_with_a_warning(tmp_path: Path) -> None:
    from onellm.testing import ScriptedToolCall

    runtime, provider = _setup()
    flow = _write(tmp_path, "tools.flow", 'model: gpt-6-luna\ninitialPrompts:\n  - user:\n      - text: "go"\n')
    provider.enqueue(ScriptStep.calls(ScriptedToolCall("c1", "get_docket", {}), text="calling"))
    result = await runtime.run_script(flow)
    assert result.text == "calling"
    assert any(w.kind == "script" and "tool calls" in w.message for w in result.warnings)


def test_the_tour_prints_the_getting_started_figures(capsys: pytest.CaptureFixture[str]) -> None:
    from onellm.tour import main

    assert main([]) == 0
    out = capsys.readouterr().out
    for line in [
        "A monad is a type that wraps a value and chains computations on it.",
        "2, 3 and 5. [13 in, 7 out, 0.0000048]",
        "  inputTokens: 13 x 0.1 per 1000000 = 0.0000013",
        "  outputTokens: 7 x 0.5 per 1000000 = 0.0000035",
        "Invoice(customer='ACME Ltd', total=Decimal('120.50'))",
        "Green lights at midnight, the queue drains one job at a time, dawn finds the build red.",
        "result text matches: True",
        "calls: 2, cost: 0.0000240",
        "Completed: Docket 24-1234 is open. (0.001730)",
        '{"topic":{"type":"choice","choice":"billing","confidence":0.5,"probabilities":{}},"angry":{"type":"noul","noul":0.5}}',
    ]:
        assert line in out.splitlines()
    assert out.count(".yaml") == 7


async def test_an_agent_definition_runs_as_a_script(tmp_path: Path) -> None:
    runtime, provider = _setup()
    agent = tmp_path / "clerk"
    agent.mkdir()
    _write(
        agent,
        "agent.yaml",
        """\
name: clerk
model: gpt-6-luna
systemPrompt: You look up dockets.
inputs:
  caseNo: ""
initialPrompts:
  - user:
      - text: "Find docket {{ .inputs.caseNo }}."
references:
  - routine: tools/docket.tool.yaml
    tools: [get_docket]
""",
    )
    provider.enqueue(ScriptStep.text_with_usage("Docket 24-1234 is open.", 300, 20))
    result = await runtime.run_script(agent, {"caseNo": "24-1234"})
    assert result.text == "Docket 24-1234 is open."
    assert provider.requests[0].messages[0].user_text == "Find docket 24-1234."
    assert provider.requests[0].tools == []
    assert any("tool references are ignored" in w.message for w in result.warnings)
    assert result.instance.name == "clerk"


def test_the_live_tour_without_a_key_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from onellm.tour import main

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["--live"]) == 3
    assert "Set the environment variable ANTHROPIC_API_KEY." in capsys.readouterr().err


async def test_from_parts_expand_a_list_of_the_template_data(tmp_path: Path) -> None:
    from onellm import Asset, BadDefinitionError
    from onellm.messages import AssetPart, TextPart

    runtime, provider = _setup()
    flow = _write(
        tmp_path,
        "images.flow",
        "model: gpt-6-luna\ninputs:\n  images: []\ninitialPrompts:\n  - user:\n      - text: Compare these.\n"
        "      - from: inputs.images\n",
    )
    provider.enqueue(ScriptStep.text("They match."))
    images = [Asset.from_bytes(b"one", "image/png", "a.png"), Asset.from_bytes(b"two", "image/png", "b.png")]
    result = await runtime.run_script(flow, {"images": images})
    assert result.text == "They match."
    user = provider.requests[0].messages[0].user
    assert isinstance(user[0], TextPart)
    assert [p.name for p in user[1:] if isinstance(p, AssetPart)] == ["a.png", "b.png"]
    with pytest.raises(BadDefinitionError, match="not a list"):
        await runtime.run_script(flow, {"images": "a.png"})


async def test_script_records_every_message(tmp_path: Path) -> None:
    from onellm.records import EventRecordSink, Record

    seen: list[Record] = []

    async def keep(record: Record) -> None:
        seen.append(record)

    runtime, provider = _setup(records=[EventRecordSink(keep)])
    flow = _write(
        tmp_path,
        "r.flow",
        'model: gpt-6-luna\ninitialPrompts:\n  - user:\n      - text: "a"\n  - assistant:\n      - text: "b"\n'
        '  - user:\n      - text: "c"\n',
    )
    provider.enqueue(ScriptStep.text_with_usage("1", 1, 1), ScriptStep.text_with_usage("2", 1, 1))
    await runtime.run_script(flow)
    assert [(r.kind, getattr(r, "event", None)) for r in seen] == [
        ("run", "started"),
        ("message", None),
        ("inference", None),
        ("message", None),
        ("message", None),
        ("inference", None),
        ("run", "stopped"),
    ]


def test_the_system_scope_reads_the_user_name_once_and_the_folders_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onellm.definitions import Definition
    from onellm.runtime import _script, template_scope

    asked: list[str] = []

    def getuser() -> str:
        asked.append("getuser")
        return "ada"

    runtime, _ = _setup()
    definition = Definition.loads("model: gpt-6-luna\n", file="x.yaml")
    _script._process_identity.cache_clear()
    monkeypatch.setattr(_script.getpass, "getuser", getuser)
    try:
        first_dir = tmp_path / "first"
        second_dir = tmp_path / "second"
        first_dir.mkdir()
        second_dir.mkdir()
        monkeypatch.chdir(first_dir)
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        first = template_scope(runtime._services, definition, {})["system"]
        monkeypatch.chdir(second_dir)
        monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
        second = template_scope(runtime._services, definition, {})["system"]
    finally:
        _script._process_identity.cache_clear()  # the next reader asks the real user name again
    assert asked == ["getuser"]  # the user name is read once for the process
    assert first["username"] == "ada"
    assert second["username"] == "ada"
    assert first["hostname"] == second["hostname"]
    assert Path(first["workingDir"]).resolve() == first_dir.resolve()  # the working directory is read every time
    assert Path(second["workingDir"]).resolve() == second_dir.resolve()
    assert second["homeDir"] == str(tmp_path / "elsewhere")
