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
