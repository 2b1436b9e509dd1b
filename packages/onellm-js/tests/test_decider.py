"""Decider logic: `prepare` and `decide` from `decider.js` or erasable `decider.ts`."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from onellm.errors import BadDefinitionError
from onellm_js import JsDeciderLogic, JsSandbox, JsSandboxError

pytestmark = pytest.mark.anyio

TRIAGE = Path(__file__).parent / "fixtures" / "deciders" / "triage-ticket"
ANSWERS = {"topic": {"choice": "billing"}, "urgency": {"score": 3}, "angry": {"probability": 0.1}}


async def test_a_typescript_decider_beside_its_definition(tmp_path: Path, sandbox: JsSandbox) -> None:
    folder = tmp_path / "triage-ticket"
    shutil.copytree(TRIAGE, folder)
    decider, logic = await JsDeciderLogic.load_decider(folder, sandbox=sandbox)
    assert decider.name == "triage-ticket"
    assert logic is not None
    assert (logic.source.file, logic.has_prepare, logic.has_decide, logic.name) == (
        "decider.ts",
        True,
        True,
        "triage-ticket",
    )
    prepared = await logic.prepare({"title": "Refund", "customer": "ACME"})
    assert prepared == {"title": "Refund", "customer": "ACME", "body": "(no body)"}
    outcome = await logic.decide(ANSWERS, prepared)
    assert outcome == {"team": "billing", "escalate": True, "note": "escalated for ACME"}
    calm = await logic.decide({**ANSWERS, "urgency": {"score": 0}}, prepared)
    assert calm == {"team": "billing", "escalate": False, "note": None}


async def test_decider_js_is_preferred_and_undefined_becomes_null(tmp_path: Path, sandbox: JsSandbox) -> None:
    folder = tmp_path / "triage-ticket"
    shutil.copytree(TRIAGE, folder)
    (folder / "decider.js").write_text(
        "export function decide({ answers }) { return { team: answers.topic.choice, missing: undefined, list: [undefined] } }\n"
    )
    _decider, logic = await JsDeciderLogic.load_decider(folder, sandbox=sandbox)
    assert logic is not None
    assert (logic.source.file, logic.has_prepare) == ("decider.js", False)
    assert await logic.prepare({"title": "t"}) == {"title": "t"}
    assert await logic.decide(ANSWERS, {}) == {"team": "billing", "missing": None, "list": [None]}
    (folder / "decider.js").write_text("export function decide() { return undefined }\n")
    _decider, logic = await JsDeciderLogic.load_decider(folder, sandbox=sandbox)
    assert logic is not None
    assert await logic.decide(ANSWERS, {}) is None


async def test_a_decider_without_logic(tmp_path: Path, sandbox: JsSandbox) -> None:
    folder = tmp_path / "triage-ticket"
    folder.mkdir()
    shutil.copy(TRIAGE / "decider.yaml", folder / "decider.yaml")
    _decider, logic = await JsDeciderLogic.load_decider(folder, sandbox=sandbox)
    assert logic is None


async def test_logic_is_pure(tmp_path: Path, sandbox: JsSandbox) -> None:
    path = tmp_path / "decider.js"
    path.write_text(
        "export async function prepare(inputs) { return [typeof ctx, typeof input, await Promise.resolve(inputs.n)] }\n"
    )
    logic = await JsDeciderLogic.load(path, sandbox=sandbox)
    assert await logic.prepare({"n": 3}) == ["undefined", "undefined", 3]


async def test_a_throwing_decide_reports_the_typescript_position(tmp_path: Path, sandbox: JsSandbox) -> None:
    path = tmp_path / "decider.ts"
    path.write_text(
        textwrap.dedent(
            """\
            type In = { answers: { topic: { choice: string } } };
            export function decide({ answers }: In): string {
              const team: string = answers.topic.choice;
              if (team === "other") throw new Error(`no route for ${team as string}`);
              return team;
            }
            """
        )
    )
    logic = await JsDeciderLogic.load(path, sandbox=sandbox)
    with pytest.raises(JsSandboxError) as info:
        await logic.decide({"topic": {"choice": "other"}}, {})
    error = info.value
    assert (error.file, error.line) == ("decider.ts", 4)
    assert (
        str(error).splitlines()[2]
        == '    4 |   if (team === "other") throw new Error(`no route for ${team as string}`);'
    )


@pytest.mark.parametrize(
    ("name", "text", "detail", "line", "column"),
    [
        (
            "decider.ts",
            "enum Team { Billing }\nexport function decide() {}\n",
            "'enum' is not erasable TypeScript",
            1,
            1,
        ),
        ("decider.js", "export const x = 1;\n", "must export prepare(inputs) and/or decide", None, None),
        (
            "decider.js",
            "import helper from './helper.js';\nexport function decide() {}\n",
            "cannot import other files",
            1,
            1,
        ),
        ("decider.js", "export function decide() {\n  return {;\n}\n", "SyntaxError", 2, 11),
    ],
)
async def test_bad_logic_files(
    tmp_path: Path, sandbox: JsSandbox, name: str, text: str, detail: str, line: int | None, column: int | None
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(BadDefinitionError) as info:
        await JsDeciderLogic.load(path, sandbox=sandbox)
    assert info.value.file == name
    assert detail in info.value.detail
    assert (info.value.line, info.value.column) == (line, column)
