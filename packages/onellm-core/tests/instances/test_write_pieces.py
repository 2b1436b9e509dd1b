"""A file written from pieces (an instance's header and message blocks) holds exactly their bytes, whatever the
system call writes at a time; an instance saved from pieces reads back the same."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from onellm._files import write_atomic
from onellm.instances import FileInstanceStore, Instance
from onellm.messages import Message, TextPart


@pytest.mark.parametrize("step", [1, 7, 4096, None])
def test_pieces_are_written_whole_whatever_each_call_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: int | None
) -> None:
    real = os.writev

    def short(fd: int, buffers: Any) -> int:  # a system call that writes at most `step` bytes, across pieces
        taken = []
        room = step or 0
        for buffer in buffers:
            piece = bytes(buffer[:room])
            taken.append(piece)
            room -= len(piece)
            if not room:
                break
        return os.write(fd, b"".join(taken))

    monkeypatch.setattr(os, "writev", short if step is not None else real)
    pieces = [b"head\n", b"", b"x" * 500, b"\xc3\xa9", *(bytes([65 + i % 26]) * (i % 9) for i in range(600))]
    target = tmp_path / "f.yaml"
    write_atomic(target, pieces, durable=False)
    assert target.read_bytes() == b"".join(pieces)
    assert [p.name for p in tmp_path.iterdir()] == ["f.yaml"]


def test_an_instance_saved_from_its_pieces_reads_back(tmp_path: Path) -> None:
    inst = Instance(id="pieces", messages=[Message(id=f"m{i}", user=[TextPart(f"é {i}\n" * 50)]) for i in range(40)])
    store = FileInstanceStore(tmp_path, durable=False)
    store.save_sync(inst)
    assert (tmp_path / "pieces.yaml").read_text(encoding="utf-8") == inst.dumps() == "".join(inst.dump_parts())
    assert store.load_sync("pieces") == inst


def _fresh(inst: Instance) -> str:
    return Instance.from_data(inst.to_data()).dumps()


def test_a_save_after_any_change_to_the_list_writes_what_a_fresh_instance_writes() -> None:
    # Each save but the first starts from the pieces of the one before: an append or the last message replaced keeps
    # the head as it was; a change further up (replaced, removed, reordered, inserted) must be seen all the same.
    def msg(i: int, text: str = "") -> Message:
        return Message(id=f"m{i}", user=[TextPart(text or f"message {i}")])

    inst = Instance(id="steps", messages=[msg(i) for i in range(5)])
    assert inst.dumps() == _fresh(inst)
    steps = [
        lambda m: m.append(msg(5)),  # appended
        lambda m: m.__setitem__(-1, msg(5, "replaced")),  # the last one replaced
        lambda m: m.__setitem__(2, msg(2, "changed in the middle")),
        lambda m: m.pop(1),  # one removed from the middle
        lambda m: m.pop(),  # the last one removed
        lambda m: m.reverse(),  # reordered
        lambda m: m.insert(0, msg(9)),  # one put in front
        lambda m: m.extend([msg(10), msg(11)]),  # two appended
        lambda m: m.__setitem__(slice(None), [m[0], msg(1, "new"), *m[2:], msg(13)]),  # one replaced, one appended
        lambda m: m.__setitem__(slice(None), m[:2]),  # cut short
        lambda m: m.clear(),
        lambda m: m.append(msg(12)),
    ]
    for step in steps:
        step(inst.messages)
        assert inst.dumps() == "".join(inst.dump_parts()) == _fresh(inst)
