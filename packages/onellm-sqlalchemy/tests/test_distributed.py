"""Running many workers on one database: four runner processes share one PostgreSQL store and race for 200 instances
that need ten turns each; one runner is killed with SIGKILL in the middle of a turn.

Every instance must finish exactly once with its ten turns in order (no turn lost or run twice, no save lost: each
row's version counts exactly one save per turn), and the killed runner's instance must be picked up by another runner
only after its lease has lapsed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.pool import NullPool
from sqlalchemy_databases import postgres_tables, postgres_url

from onellm.instances import Instance
from onellm_sqlalchemy import SqlAlchemyInstanceStore

INSTANCES = 200
TURNS = 10
LEASE = 1.5
KILLED = -signal.SIGKILL if sys.platform != "win32" else 1
HERE = Path(__file__).resolve().parent


@pytest.mark.slow
@pytest.mark.usefixtures("postgres_schema")
def test_four_runners_finish_every_instance_exactly_once_through_a_crash(tmp_path: Path) -> None:
    engine = create_engine(postgres_url(), poolclass=NullPool)
    found = postgres_tables(tmp_path)
    found.create_all(engine)
    store = SqlAlchemyInstanceStore(engine, tables=found)
    ids = [f"job-{n:03d}" for n in range(INSTANCES)]

    async def queue() -> None:
        for instance_id in ids:
            await store.save(Instance(id=instance_id, name="race", state="queued"))

    anyio.run(queue)

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    lines: list[tuple[float, str]] = []
    lock = threading.Lock()
    runners: dict[str, subprocess.Popen[str]] = {}
    # Two runners on a sync Engine, two on an AsyncEngine; r0 stalls in turn 5 of its third instance.
    plans = {"r0": ("sync", "3:5"), "r1": ("async", None), "r2": ("sync", None), "r3": ("async", None)}
    for name, (mode, stall) in plans.items():
        args = [sys.executable, str(HERE / "race_runner.py"), name, str(tmp_path), str(LEASE), mode]
        if stall:
            args.append(stall)
        runners[name] = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=env)

    killed_at: list[float] = []
    expiry: list[int] = []  # the killed runner's lease, as it was left: 100 ns ticks since the epoch

    def follow(name: str, child: subprocess.Popen[str]) -> None:
        assert child.stdout is not None
        for raw in child.stdout:
            line = raw.strip()
            now = time.time()
            with lock:
                lines.append((now, line))
            if line.startswith("stalled "):
                child.kill()  # SIGKILL on POSIX, TerminateProcess on Windows
                child.wait()
                killed_at.append(time.time())
                with engine.connect() as conn:
                    expiry.append(
                        conn.execute(
                            select(found.leases.c.expires_at).where(found.leases.c.instance_id == line.split()[2])
                        ).scalar_one()
                    )

    readers = [threading.Thread(target=follow, args=item) for item in runners.items()]
    for reader in readers:
        reader.start()
    try:
        for child in runners.values():
            child.wait(timeout=240)
    finally:
        for child in runners.values():
            if child.poll() is None:
                child.kill()
        for reader in readers:
            reader.join(timeout=30)

    assert runners["r0"].returncode == KILLED
    assert [runners[n].returncode for n in ("r1", "r2", "r3")] == [0, 0, 0]
    assert len(killed_at) == 1

    words = [line.split() for _, line in lines]
    done = [w[2] for w in words if w[0] == "done"]
    assert sorted(done) == ids  # every instance finished, and only once
    (victim,) = [w[2] for w in words if w[0] == "stalled"]
    assert victim not in {w[2] for w in words if w[0] == "done" and w[1] == "r0"}
    # The victim's fifth turn started again elsewhere, and only once its lease had lapsed.
    fifth = [(t, w[1]) for (t, _), w in zip(lines, words, strict=True) if w[0] == "turn" and w[2:] == [victim, "5"]]
    assert len(fifth) >= 2  # more only if a loaded machine stalled the rescuer past its own lease
    (_, staller), (restart_time, rescuer) = fifth[:2]
    assert (staller, rescuer != "r0") == ("r0", True)
    # Not before the lease it held lapsed (the holder renews every third of it, so that is 2/3 to 1 lease after).
    assert restart_time >= expiry[0] / 10_000_000
    assert restart_time - killed_at[0] >= LEASE * 2 / 3 - 0.05

    with engine.connect() as conn:
        versions = {row[0]: row[1] for row in conn.execute(select(found.instances.c.id, found.instances.c.version))}
    assert versions == dict.fromkeys(ids, 1 + TURNS)  # the queueing save plus one save per turn: none lost

    async def check() -> None:
        for instance_id in ids:
            inst = await store.load(instance_id)
            assert inst is not None
            assert inst.state == "done"
            assert [m.id for m in inst.messages] == [f"{instance_id}-t{n}" for n in range(1, TURNS + 1)]
        loaded = await store.load(victim)
        assert loaded is not None
        authors = [m.user_text.rsplit(" ", 1)[1] for m in loaded.messages]
        assert authors[:5] == ["r0"] * 4 + [rescuer]
        assert "r0" not in authors[4:]
        assert await store.list(state="running") == []

    anyio.run(check)
    engine.dispose()
