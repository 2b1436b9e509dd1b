"""Several processes on one SQLite file: three runners race for 60 instances of five turns each, and one of them is
killed with SIGKILL in the middle of a turn. Every instance finishes exactly once with its turns in order, every row's
version counts one save per turn, and the killed runner's instance is continued by another after its lease lapsed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from onellm.instances import Instance
from onellm_sqlite import SqliteInstanceStore

INSTANCES = 60
TURNS = 5
LEASE = 1.5
KILLED = -signal.SIGKILL if sys.platform != "win32" else 1
HERE = Path(__file__).resolve().parent


@pytest.mark.slow
def test_three_runners_on_one_file_finish_every_instance_once_through_a_crash(tmp_path: Path) -> None:
    db = tmp_path / "onellm.db"
    ids = [f"job-{n:02d}" for n in range(INSTANCES)]
    with SqliteInstanceStore(db, durable=False) as store:
        for instance_id in ids:
            store.save_sync(Instance(id=instance_id, state="queued"))

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    lines: list[tuple[float, str]] = []
    killed_at: list[float] = []
    expiry: list[int] = []  # the killed runner's lease, as it was left: 100 ns ticks since the epoch
    lock = threading.Lock()
    started = threading.Event()  # the runner to be killed has begun its first turn

    def launch(name: str, extra: list[str]) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, str(HERE / "sqlite_race_runner.py"), name, str(db), str(LEASE), str(TURNS), *extra],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def follow(child: subprocess.Popen[str]) -> None:
        assert child.stdout is not None
        for raw in child.stdout:
            with lock:
                lines.append((time.time(), raw.strip()))
            if raw.startswith("turn "):
                started.set()
            if raw.startswith("stalled "):
                child.kill()  # SIGKILL on POSIX, TerminateProcess on Windows
                child.wait()
                killed_at.append(time.time())
                with sqlite3.connect(db) as conn:
                    (expires,) = conn.execute(
                        "SELECT expires_at FROM leases WHERE instance_id = ?", (raw.split()[2],)
                    ).fetchone()
                expiry.append(expires)

    # The runner that stalls starts first, so it is racing before the others could finish every instance on a loaded
    # machine (a runner that starts late may find no work left, and never reach the turn it stalls in).
    runners = {"r0": launch("r0", ["2:3"])}
    readers = [threading.Thread(target=follow, args=(runners["r0"],))]
    readers[0].start()
    assert started.wait(timeout=120), "the first runner never began a turn"
    for name in ("r1", "r2"):
        runners[name] = launch(name, [])
        readers.append(threading.Thread(target=follow, args=(runners[name],)))
        readers[-1].start()
    try:
        for child in runners.values():
            child.wait(timeout=240)
    finally:
        for child in runners.values():
            if child.poll() is None:
                child.kill()
        for reader in readers:
            reader.join(timeout=30)

    assert [runners[n].returncode for n in ("r1", "r2")] == [0, 0]
    assert runners["r0"].returncode == KILLED
    words = [line.split() for _, line in lines]
    assert sorted(w[2] for w in words if w[0] == "done") == ids
    (victim,) = [w[2] for w in words if w[0] == "stalled"]
    third = [(t, w[1]) for (t, _), w in zip(lines, words, strict=True) if w[0] == "turn" and w[2:] == [victim, "3"]]
    assert len(third) >= 2  # more only if a loaded machine stalled the rescuer past its own lease
    (_, staller), (restart_time, rescuer) = third[:2]
    assert (staller, rescuer != "r0") == ("r0", True)
    # Not before the lease it held lapsed (the holder renews every third of it, so that is 2/3 to 1 lease after).
    assert restart_time >= expiry[0] / 10_000_000
    assert restart_time - killed_at[0] >= LEASE * 2 / 3 - 0.05
    with sqlite3.connect(db) as conn:
        assert dict(conn.execute("SELECT id, version FROM instances").fetchall()) == dict.fromkeys(ids, 1 + TURNS)
    with SqliteInstanceStore(db) as store:
        for instance_id in ids:
            inst = store.load_sync(instance_id)
            assert inst is not None
            assert inst.state == "done"
            assert [m.id for m in inst.messages] == [f"{instance_id}-t{n}" for n in range(1, TURNS + 1)]
