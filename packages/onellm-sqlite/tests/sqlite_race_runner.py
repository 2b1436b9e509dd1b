"""One runner of the SQLite race (`test_many_processes.py`): takes leases on unfinished instances and runs their turns
until none is left. Run as `python sqlite_race_runner.py NAME DB LEASE_SECONDS TURNS [stall-at]`.

Prints `turn NAME ID N` when a turn starts and `done NAME ID` when an instance is finished. With `stall-at=K:N` it
stops dead in turn N of its K-th instance after printing `stalled NAME ID`, so the test can SIGKILL it mid-turn.
"""

from __future__ import annotations

import random
import sys

import anyio

from onellm.errors import InstanceLockedError
from onellm.messages import Message, TextPart
from onellm_sqlite import SqliteInstanceStore


async def main(name: str, db: str, lease_seconds: float, turns: int, stall: str | None) -> None:
    stall_at = tuple(int(x) for x in stall.split(":")) if stall else None
    taken = 0
    rng = random.Random(name)
    with SqliteInstanceStore(db, lease_seconds=lease_seconds, durable=False) as store:
        while True:
            open_ids = [s.id for s in await store.list(state="queued")]
            open_ids += [s.id for s in await store.list(state="running")]
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
                        while turn < turns:
                            turn += 1
                            print(f"turn {name} {instance_id} {turn}", flush=True)
                            if stall_at == (taken, turn):
                                print(f"stalled {name} {instance_id}", flush=True)
                                await anyio.sleep(3600)
                            inst.messages.append(
                                Message(id=f"{instance_id}-t{turn}", user=[TextPart(text=f"turn {turn} by {name}")])
                            )
                            inst.state = "done" if turn == turns else "running"
                            await store.save(inst)
                        print(f"done {name} {instance_id}", flush=True)
                    except InstanceLockedError:
                        # This runner stalled past its lease (a loaded machine) and another took the instance over: its save was
                        # refused, so nothing is overwritten; leave the instance to the new holder.
                        print(f"lost {name} {instance_id}", flush=True)
            if not progressed:
                await anyio.sleep(0.05)
    print(f"exit {name}", flush=True)


if __name__ == "__main__":
    anyio.run(
        main, sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5] if len(sys.argv) > 5 else None
    )
