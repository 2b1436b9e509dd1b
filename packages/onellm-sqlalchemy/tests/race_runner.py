"""One runner of the distributed race (`test_distributed.py`): takes leases on unfinished instances and runs their
turns until none is left. Run as `python race_runner.py NAME LOCATION LEASE_SECONDS [sync|async] [stall-at]`.

Each turn appends one message and saves; ten turns finish an instance. It prints `turn NAME ID N` when a turn starts,
`done NAME ID` when it finishes an instance. With `stall-at=K:N` it stops dead in turn N of its K-th instance (a
model call that never returns) after printing `stalled NAME ID`, so the test can SIGKILL it mid-turn.
"""

from __future__ import annotations

import random
import sys
from typing import Any

import anyio
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy_databases import postgres_tables, postgres_url

from onellm.errors import InstanceLockedError
from onellm.messages import Message, TextPart
from onellm_sqlalchemy import SqlAlchemyInstanceStore

TURNS = 10


async def main(name: str, location: str, lease_seconds: float, mode: str, stall: str | None) -> None:
    engine: Any = create_async_engine(postgres_url()) if mode == "async" else create_engine(postgres_url())
    store = SqlAlchemyInstanceStore(engine, tables=postgres_tables(location), lease_seconds=lease_seconds)
    stall_at = tuple(int(x) for x in stall.split(":")) if stall else None
    taken = 0
    rng = random.Random(name)
    while True:
        open_ids = [s.id for s in await store.list(state="queued")] + [s.id for s in await store.list(state="running")]
        if not open_ids:
            break
        rng.shuffle(open_ids)
        progressed = False
        for instance_id in open_ids:
            try:
                lease = await store.acquire(instance_id)
            except InstanceLockedError:
                continue
            async with lease:
                try:
                    inst = await store.load(instance_id)
                    assert inst is not None
                    if inst.state == "done":
                        continue
                    taken += 1
                    progressed = True
                    turn = len(inst.messages)
                    while turn < TURNS:
                        turn += 1
                        print(f"turn {name} {instance_id} {turn}", flush=True)
                        if stall_at == (taken, turn):
                            print(f"stalled {name} {instance_id}", flush=True)
                            await anyio.sleep(3600)
                        await anyio.sleep(0.001)  # the model call
                        inst.messages.append(
                            Message(id=f"{instance_id}-t{turn}", user=[TextPart(text=f"turn {turn} by {name}")])
                        )
                        inst.state = "done" if turn == TURNS else "running"
                        await store.save(inst)
                    print(f"done {name} {instance_id}", flush=True)
                except InstanceLockedError:
                    # This runner stalled past its lease (a loaded machine) and another took the instance over: its save was
                    # refused, so nothing is overwritten; leave the instance to the new holder.
                    print(f"lost {name} {instance_id}", flush=True)
        if not progressed:
            await anyio.sleep(0.05)  # what is left is leased: wait for it to finish or lapse
    print(f"exit {name}", flush=True)
    if mode == "async":
        await engine.dispose()
    else:
        engine.dispose()


if __name__ == "__main__":
    anyio.run(
        main, sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else None
    )
