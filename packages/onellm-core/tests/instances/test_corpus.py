"""The instance corpus in `testdata/formats/instances`: every valid file loads and saves back byte for byte and
survives a change of one value with its unknown keys intact; every malformed file fails with its line and column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onellm.errors import BadDefinitionError
from onellm.instances import Instance
from onellm.yamlio import safe_load

CORPUS = Path(__file__).resolve().parents[4] / "testdata" / "formats" / "instances"
VALID = sorted((CORPUS / "valid").glob("*.yaml"))
MALFORMED = sorted((CORPUS / "malformed").glob("*.yaml"))
EXPECTED = json.loads((CORPUS / "malformed" / "EXPECTED.json").read_text())


def test_the_corpus_is_large_enough() -> None:
    assert len(VALID) >= 20
    assert len(MALFORMED) >= 30
    assert sorted(EXPECTED) == [p.name for p in MALFORMED]


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_file_saves_back_byte_for_byte(path: Path, tmp_path: Path) -> None:
    inst = Instance.load(path)
    assert inst.dumps().encode("utf-8") == path.read_bytes()
    copy = tmp_path / path.name
    inst.save(copy)
    assert copy.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_file_survives_a_change_of_one_value(path: Path) -> None:
    inst = Instance.load(path)
    before = inst.to_data()
    inst.state = "changed_by_test"
    text = inst.dumps()
    again = Instance.loads(text)
    assert again == inst
    after = again.to_data()
    assert after.pop("state") == "changed_by_test"
    before.pop("state", None)
    assert after == before
    assert list(after) == [k for k in before if k in after]
    assert again.dumps() == text


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_fast_reader_and_general_loader_agree(path: Path) -> None:
    """The canonical-layout reader (text splitting plus the fast scalar reader) must build exactly what the general
    loader builds from the same file."""
    fast = Instance.load(path)
    general = Instance.from_data(safe_load(path.read_bytes()))
    assert fast == general
    assert fast.to_data() == general.to_data()


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_unknown_keys_are_kept_after_a_change(path: Path) -> None:
    raw = safe_load(path.read_bytes())
    inst = Instance.load(path)
    inst.name = "renamed"
    reloaded = safe_load(inst.dumps())
    unknown = {k for k in raw if k not in {"name", "state"} and raw[k] is not None}
    for key in unknown:
        assert key in reloaded, key
    if raw.get("messages"):
        for old, new in zip(raw["messages"], reloaded["messages"], strict=True):
            for key, value in old.items():
                if value is not None and key not in ("partOrder",):
                    assert key in new, key


@pytest.mark.parametrize("path", MALFORMED, ids=lambda p: p.name)
def test_malformed_file_fails_with_its_position(path: Path) -> None:
    expected = EXPECTED[path.name]
    with pytest.raises(BadDefinitionError) as caught:
        Instance.load(path)
    error = caught.value
    assert (error.line, error.column) == (expected["line"], expected["column"])
    assert error.file == str(path)
    assert expected["message"] in error.detail
    if "path" in expected:
        assert error.path == expected["path"]
    assert f"{path}:{expected['line']}:{expected['column']}" in str(error)


def test_onellm_shape_files_are_read_by_the_fast_path() -> None:
    """Files in the shape onellm writes are cut into message blocks and keep each block's text."""
    for path in VALID:
        if not path.name.startswith("onellm-"):
            continue
        inst = Instance.load(path)
        assert inst._source is not None
        assert inst._source.header_text is not None, path.name
        assert all(inst._block_of(msg) is not None for msg in inst.messages), path.name


def test_onellm_shape_files_are_what_onellm_writes() -> None:
    for path in VALID:
        if not path.name.startswith("onellm-"):
            continue
        inst = Instance.load(path)
        fresh = Instance.from_data(inst.to_data())
        assert fresh.dumps() == path.read_text(encoding="utf-8"), path.name


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_the_memory_store_keeps_what_a_file_store_writes_whatever_happens_after(path: Path, tmp_path: Path) -> None:
    # Each file goes through a run's kind of saves; after each, both stores hold the same text, and edits made to the
    # instance after a save (an open message completed in place, the header edited in place) show in neither until the
    # next save.
    from onellm.instances import FileInstanceStore, MemoryInstanceStore
    from onellm.messages import Message, TextPart, ToolCall

    inst = Instance.load(path)
    inst.id = inst.id or "corpus"
    memory = MemoryInstanceStore()
    files = FileInstanceStore(tmp_path / "store", durable=False)

    def saved() -> str:
        memory.save_sync(inst)
        files.save_sync(inst)
        return check()

    def check() -> str:
        assert inst.id is not None
        text = files.path_of(inst.id).read_bytes().decode("utf-8")
        assert memory.text_of(inst.id) == text
        loaded = memory.load_sync(inst.id)
        assert loaded is not None
        assert loaded.to_data() == Instance.loads(text).to_data()
        return text

    saved()
    pending = Message(id="open", tool_calls=[ToolCall(id="c9", tool="t", inputs={"n": 1})])
    inst.messages.append(pending)
    text = saved()
    pending.tool_calls[0].result = [TextPart(text="done in place")]  # the open message completed in place
    assert check() == text
    text = saved()
    assert "done in place" in text
    inst.extra.setdefault("notes", []).append("x")  # the header edited in place
    inst.metadata = inst.metadata or {}
    inst.metadata["k"] = 1
    assert check() == text
    text = saved()
    assert "notes:" in text
    inst.messages[-1] = Message(id="answer", assistant=[TextPart(text="fine")])
    saved()
    inst.messages.pop()
    inst.state = "waiting"
    saved()
