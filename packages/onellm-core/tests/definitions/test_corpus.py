"""The definitions corpus: every file loads, saves back byte for byte, and survives a one-value change whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onellm.definitions import Decider, Definition, FlowMetadata
from onellm.yamlio import load_document

CORPUS = Path(__file__).resolve().parents[4] / "testdata" / "formats" / "definitions"
FILES = sorted(p for p in CORPUS.rglob("*") if p.is_file())


def _kind(path: Path) -> str:
    if path.name == "flow.yaml":
        return "metadata"
    if path.name == "decider.yaml" or path.name.endswith(".decider.yaml"):
        return "decider"
    return "definition"


def _load(path: Path) -> Any:
    kind = _kind(path)
    if kind == "metadata":
        return FlowMetadata.load(path)
    if kind == "decider":
        return Decider.load(path)
    return Definition.load(path)


def _loads(path: Path, text: str) -> Any:
    kind = _kind(path)
    if kind == "metadata":
        return FlowMetadata.loads(text, file=str(path))
    if kind == "decider":
        return Decider.loads(text, file=str(path))
    return Definition.loads(text, file=str(path))


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(CORPUS)) for p in paths]


def test_corpus_is_large_enough() -> None:
    assert len(FILES) >= 40
    kinds = [_kind(p) for p in FILES]
    assert kinds.count("decider") >= 10
    assert sum(1 for p in FILES if p.suffix == ".flow") >= 5


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_unchanged_save_is_byte_for_byte(path: Path, tmp_path: Path) -> None:
    raw = path.read_bytes()
    obj = _load(path)
    assert obj.dumps().encode("utf-8") == raw
    target = tmp_path / path.name
    obj.save(target)
    assert target.read_bytes() == raw


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_one_changed_value_keeps_everything_else(path: Path) -> None:
    text = path.read_bytes().decode("utf-8")
    obj = _load(path)
    before = load_document(text).plain or {}
    if isinstance(obj, FlowMetadata):
        obj.description = "changed description"
        key, value = "description", "changed description"
    else:
        obj.model = "changed-model"
        key, value = "model", "changed-model"
    out = obj.dumps()
    assert out != text
    after = load_document(out, file=str(path)).plain
    assert after == {**before, key: value}
    again = _loads(path, out)
    assert again.to_data() == obj.to_data()
    if "\r\n" in text:
        assert out.count("\n") == out.count("\r\n"), "a CRLF file stays CRLF"


def test_flow_metadata_is_read_beside_the_flow() -> None:
    flow = Definition.load(CORPUS / "flows" / "summarize" / "summarize.flow")
    assert flow.kind == "flow"
    assert flow.metadata is not None
    assert flow.metadata.name == "summarize"
    assert flow.metadata.version == 3
    assert [h["version"] for h in flow.metadata.other["history"]] == [1, 2, 3]
    assert set(flow.metadata.other) == {"history", "examples", "rubrics"}


def test_references_in_a_flow_are_kept_and_warned_about() -> None:
    flow = Definition.load(CORPUS / "flows" / "with-references.flow")
    assert flow.references is not None
    assert flow.references[0].routine == "tools/search.tool.yaml"
    assert len(flow.warnings) == 1
    warning = flow.warnings[0]
    assert "ignored" in warning.message
    assert (warning.line, warning.column) == (4, 3)


def test_a_folder_loads_its_agent_yaml() -> None:
    agent = Definition.load(CORPUS / "agents" / "folder-agent")
    assert agent.name == "folder-agent"
    assert agent.kind == "agent"


def test_a_decider_folder_names_the_decider() -> None:
    decider = Decider.load(CORPUS / "deciders" / "triage-ticket")
    assert decider.name == "triage-ticket"
    assert decider.cache_key == "triage-ticket"
    assert list(decider.questions) == ["topic", "urgency", "angry"]
    assert decider.questions["angry"].criteria == {
        True: "Insults, shouting, threats to leave",
        False: "Calm or merely disappointed",
    }


def _keys_at(data: Any, path: tuple[str, ...], out: dict[tuple[str, ...], set[str]]) -> None:
    """Collect the keys found at each level, naming list levels by their key ('references[]')."""
    if isinstance(data, dict):
        out.setdefault(path, set()).update(str(k) for k in data)
        for key, value in data.items():
            _keys_at(value, (*path, str(key)), out)
    elif isinstance(data, list):
        for item in data:
            _keys_at(item, (*path[:-1], path[-1] + "[]") if path else ("[]",), out)


def test_corpus_covers_every_key_and_extension_point() -> None:
    agents: dict[tuple[str, ...], set[str]] = {}
    deciders: dict[tuple[str, ...], set[str]] = {}
    metadata: dict[tuple[str, ...], set[str]] = {}
    for path in FILES:
        kind = _kind(path)
        target = {"definition": agents, "decider": deciders, "metadata": metadata}[kind]
        _keys_at(load_document(path.read_bytes()).plain or {}, (), target)
    agent_keys = {
        "name", "description", "model", "serviceTier", "thinking", "temperature", "maxIterations", "maxTokens",
        "systemPrompt", "references", "workingDirectory", "initialPrompts", "inputs", "headers", "invocationMode",
        "llmTurnLogs", "missingKey", "hooks", "contextStrategy",
    }  # fmt: skip
    assert agent_keys <= agents[()]
    assert agents[()] - agent_keys, "unknown top-level keys"
    assert {"routine", "swarm", "tools", "required"} < agents[("references[]",)]
    assert {"file", "points"} < agents[("hooks[]",)]
    assert {"effort", "budget"} < agents[("thinking",)]
    assert {"type", "triggerTokens", "triggerPercent", "keepLast"} < agents[("contextStrategy",)]
    assert {"user", "assistant", "toolCalls", "when", "cache", "id"} < agents[("initialPrompts[]",)]
    assert {"text", "from", "json", "asset", "image"} < agents[("initialPrompts[]", "user[]")]
    assert {"emphasis"} <= agents[("initialPrompts[]", "user[]")]
    assert {
        "tool",
        "inputs",
        "result",
        "id",
        "when",
        "injected",
        "injectedBy",
        "isError",
        "routine",
        "retries",
    } <= agents[("initialPrompts[]", "toolCalls[]")]
    assert {"model", "state", "questions", "llm", "cache"} < deciders[()]
    assert {"samples", "temperature", "thinking", "serviceTier", "topP"} <= deciders[("llm",)]
    assert {"key", "explicit", "ttlSeconds"} <= deciders[("cache",)]
    question_keys = set().union(
        *(keys for level, keys in deciders.items() if len(level) == 2 and level[0] == "questions")
    )
    assert {"type", "instructions", "criteria", "forEach", "weight"} <= question_keys
    assert {"name", "description", "version", "history", "examples", "rubrics", "owner"} <= metadata[()]
