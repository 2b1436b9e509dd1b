"""Message ids: version 4 UUIDs as 32 hex digits, drawn from the system's random source several at a time, never the
same twice, and not shared with a forked child."""

from __future__ import annotations

import os
import re
import sys
import threading
import uuid

import pytest

from onellm.runtime import new_message_id


def test_ids_are_version_4_uuids_and_never_repeat() -> None:
    ids = [new_message_id() for _ in range(1000)]  # several draws from the random source
    assert len(set(ids)) == len(ids)
    for made in ids:
        assert re.fullmatch(r"[0-9a-f]{32}", made)
        as_uuid = uuid.UUID(made)
        assert as_uuid.version == 4
        assert as_uuid.variant == uuid.RFC_4122
        assert as_uuid.hex == made


def test_threads_taking_ids_at_once_never_get_the_same() -> None:
    taken: list[list[str]] = [[] for _ in range(8)]

    def take(into: list[str]) -> None:
        into.extend(new_message_id() for _ in range(2000))

    threads = [threading.Thread(target=take, args=(into,)) for into in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [made for into in taken for made in into]
    assert len(set(every)) == len(every) == 16000


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs os.fork")
def test_a_forked_child_does_not_hand_out_the_parents_ids() -> None:
    new_message_id()  # ids drawn and waiting
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write its next ids and leave at once
        try:
            os.write(writer, " ".join(new_message_id() for _ in range(3)).encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as pipe:
        child = set(pipe.read().split())
    os.waitpid(pid, 0)
    parent = {new_message_id() for _ in range(3)}
    assert len(child) == 3
    assert not child & parent
