"""`JsonlRecordSink` when appends are cut short: by another writer killed half way, by a full disk, by a file size
limit. A torn line costs that line alone; the next record is always whole, whoever wrote the torn one and whenever."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import msgspec
import pytest

from onellm.errors import StorageError
from onellm.records import ErrorRecord, JsonlRecordSink, RecordSinkFailure, RecordSinks, RunRecord, read_records
from onellm.testing import disk_fault

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="uses fork, SIGKILL and RLIMIT_FSIZE")


def run_script(script: str, *args: str, timeout: float = 120) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args], capture_output=True, text=True, env=env, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def events(path: Path) -> list[str | None]:
    return [r.event for r in read_records(path) if isinstance(r, RunRecord)]


def test_a_line_torn_after_this_sink_first_wrote_is_not_glued_to_its_next_record(tmp_path: Path) -> None:
    """The check for a torn last line is made on every append, not once per file."""
    sink = JsonlRecordSink(tmp_path)
    path = sink.path_for("i")
    sink.write_sync(RunRecord(instance_id="i", event="started"))
    for n in range(3):
        with open(path, "ab") as other_writer:
            other_writer.write(b'{"kind":"run","event":"torn by a writer that was kil')
        sink.write_sync(RunRecord(instance_id="i", event=f"after-{n}"))
    assert events(path) == ["started", "after-0", "after-1", "after-2"]
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert sum(1 for line in lines if line.startswith(b'{"kind":"run","event":"torn')) == 3


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_an_append_the_disk_refuses_fails_typed_and_leaves_whole_lines(tmp_path: Path, fault: str) -> None:
    sink = JsonlRecordSink(tmp_path)
    path = sink.path_for("i")
    sink.write_sync(RunRecord(instance_id="i", event="started"))
    before = path.read_bytes()
    with disk_fault(fault), pytest.raises(StorageError) as caught:
        sink.write_sync(ErrorRecord(instance_id="i", error_type="Big", message="x" * 10_000))
    err = caught.value
    assert (err.operation, err.path) == ("append", str(path))
    assert isinstance(err.__cause__, OSError)
    assert err.__cause__.errno == (errno.ENOSPC if fault == "full" else errno.EROFS)
    assert path.read_bytes() == before  # the half-written line was cut off again
    sink.write_sync(RunRecord(instance_id="i", event="stopped"))
    assert events(path) == ["started", "stopped"]


@pytest.mark.anyio
async def test_a_sink_on_a_full_disk_is_reported_and_the_other_sinks_go_on(tmp_path: Path) -> None:
    failures: list[RecordSinkFailure] = []
    seen: list[str] = []

    class Keeper:
        async def write(self, record: RunRecord) -> None:  # type: ignore[override]
            seen.append(record.kind)

    sinks = RecordSinks(JsonlRecordSink(tmp_path), Keeper(), on_error=failures.append)  # type: ignore[arg-type]
    with disk_fault("full"):
        await sinks.write(RunRecord(instance_id="i", event="started"))
    assert seen == ["run"]
    [failure] = failures
    assert isinstance(failure.error, StorageError)
    assert "No space left on device" in str(failure.error)


@posix_only
@pytest.mark.parametrize("kind", ["link", "pipe", "directory"])
def test_a_records_file_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    sink = JsonlRecordSink(tmp_path)
    path = sink.path_for("i")
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    if kind == "link":
        path.symlink_to(outside)
    elif kind == "pipe":
        os.mkfifo(path)
    else:
        path.mkdir()
    with pytest.raises(StorageError) as caught:
        sink.write_sync(RunRecord(instance_id="i", event="started"))
    assert caught.value.operation == "append"
    assert outside.read_text() == "keep\n"
    if kind != "link":
        with pytest.raises(StorageError):
            sink.read("i")


EFBIG_SCRIPT = """
import errno, resource, sys
from onellm.errors import StorageError
from onellm.records import ErrorRecord, JsonlRecordSink, RunRecord

sink = JsonlRecordSink(sys.argv[1])
path = sink.path_for("i")
sink.write_sync(RunRecord(instance_id="i", event="started"))
size = path.stat().st_size
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 100, hard))
try:
    sink.write_sync(ErrorRecord(instance_id="i", error_type="Big", message="x" * 5000))
    print("written")
except StorageError as exc:
    print(exc.operation, errno.errorcode[exc.__cause__.errno], path.stat().st_size == size)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
sink.write_sync(RunRecord(instance_id="i", event="stopped"))
print(*[r.event for r in sink.read("i")])
"""


@posix_only
def test_a_file_size_limit_cuts_an_append_short_and_the_next_record_stays_whole(tmp_path: Path) -> None:
    """The kernel's own EFBIG (RLIMIT_FSIZE) stops a write half way; the sink removes the partial line."""
    out = run_script(EFBIG_SCRIPT, str(tmp_path)).splitlines()
    assert out == ["append EFBIG True", "started stopped"]


KILL_SCRIPT = """
import os, random, signal, sys, time
from onellm.records import ErrorRecord, JsonlRecordSink, RunRecord

directory, seconds = sys.argv[1], float(sys.argv[2])
sink = JsonlRecordSink(directory)          # one sink for the whole run: it must notice every torn line
path = sink.path_for("i")
big = "x" * 400_000
rng = random.Random(11)
deadline = time.monotonic() + seconds
rounds = torn = 0
# at least five rounds and the time asked for; on a slow machine, on (for ten seconds more) until a kill tore a line
while rounds < 150 and (time.monotonic() < deadline or rounds < 5 or (not torn and time.monotonic() < deadline + 10)):
    ready, started = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready)
        other = JsonlRecordSink(directory)
        os.write(started, b"!")             # the writer is about to append: kill it in the middle of its writes
        while True:
            other.write_sync(ErrorRecord(instance_id="i", error_type="Big", message=big))
    os.close(started)
    os.read(ready, 1)
    os.close(ready)
    time.sleep(rng.uniform(0.0002, 0.002))
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    if path.exists():
        with open(path, "rb") as f:
            if f.seek(0, os.SEEK_END):
                f.seek(-1, os.SEEK_END)
                torn += f.read(1) != b"\\n"
    sink.write_sync(RunRecord(instance_id="i", event="resumed", state=str(rounds)))
    rounds += 1
print(rounds)
"""


@posix_only
def test_appends_survive_writers_killed_in_the_middle_of_theirs(tmp_path: Path) -> None:
    """Writers appending multi-megabyte lines are killed at random moments; after each kill this process appends
    through one long-lived sink. Every one of its records is read back, and the only lines lost are torn ones."""
    rounds = int(run_script(KILL_SCRIPT, str(tmp_path), "1.0"))
    path = tmp_path / "i.jsonl"
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    decoder = msgspec.json.Decoder()
    torn = whole = 0
    for line in lines[:-1]:
        try:
            decoder.decode(line)
        except msgspec.DecodeError:
            torn += 1
            assert line.startswith(b'{"kind":"error"'), line[:80]
        else:
            whole += 1
    ours = [r.state for r in read_records(path) if isinstance(r, RunRecord)]
    assert ours == [str(n) for n in range(rounds)]
    assert torn >= 1, "no kill landed in the middle of a write; the loop did not test what it should"
    print(f"{rounds} rounds, {whole} whole lines, {torn} torn, {path.stat().st_size:,} bytes")
