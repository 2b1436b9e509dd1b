"""`FileInstanceStore` in a directory someone else can write to: planted links, pipes, devices, directories and files
that lie about what they hold, killed writers' leftovers, and full or read-only disks. Every case fails typed
(`StorageError` naming the file and the operation), touches nothing outside the store, and loses nothing saved."""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import anyio
import pytest

import onellm._files
from onellm.errors import StorageError
from onellm.instances import FileAssetStore, FileInstanceStore, Instance
from onellm.instances._layout import header_end
from onellm.messages import Message, TextPart
from onellm.testing import disk_fault
from onellm.testing.store_conformance import make_instance

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="links, pipes and devices as POSIX has them")


def victim(tmp_path: Path) -> Path:
    """A file outside the store that no store operation may touch."""
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    target = outside / "precious.txt"
    target.write_text("do not touch\n")
    return target


@pytest.mark.anyio
async def test_a_lock_file_planted_as_a_link_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    store = FileInstanceStore(tmp_path / "store")
    target = victim(tmp_path)
    (store.directory / "x.lock").symlink_to(target)
    with pytest.raises(StorageError) as caught:
        await store.acquire("x")
    assert caught.value.operation == "acquire"
    assert caught.value.path == str(store.directory / "x.lock")
    assert "symbolic link" in str(caught.value)
    assert target.read_text() == "do not touch\n"


@pytest.mark.anyio
async def test_a_lock_file_that_is_a_pipe_is_refused(tmp_path: Path) -> None:
    store = FileInstanceStore(tmp_path)
    os.mkfifo(tmp_path / "x.lock")
    with anyio.fail_after(10), pytest.raises(StorageError, match="named pipe"):
        await store.acquire("x")


@pytest.mark.anyio
async def test_an_instance_file_planted_as_a_link_is_neither_loaded_nor_listed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FileInstanceStore(tmp_path / "store")
    outside = tmp_path / "outside.yaml"
    outside.write_text("instanceId: x\nname: Secret\nstate: waiting\n")
    (store.directory / "x.yaml").symlink_to(outside)
    await store.save(make_instance("real", state="waiting"))
    with pytest.raises(StorageError) as caught:
        await store.load("x")
    assert (caught.value.operation, caught.value.path) == ("load", str(store.directory / "x.yaml"))
    with caplog.at_level(logging.WARNING, logger="onellm.instances"):
        assert [s.id for s in await store.list()] == ["real"]
    assert "x.yaml" in caplog.text


@pytest.mark.parametrize("kind", ["loop", "directory", "pipe", "device"])
@pytest.mark.anyio
async def test_what_is_not_a_regular_file_fails_typed_at_once(tmp_path: Path, kind: str) -> None:
    store = FileInstanceStore(tmp_path)
    path = tmp_path / "odd.yaml"
    if kind == "loop":
        path.symlink_to(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "pipe":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    with anyio.fail_after(10):
        with pytest.raises(StorageError) as caught:
            await store.load("odd")
        assert caught.value.operation == "load"
        assert caught.value.path == str(path)
        assert await store.list() == []
    if kind == "directory":
        with pytest.raises(StorageError, match="directory"):
            await store.save(make_instance("odd"))
        with pytest.raises(StorageError, match="directory"):
            await store.delete("odd")
        assert path.is_dir()


@pytest.mark.parametrize("source", ["/dev/zero", "fifo"])
def test_instance_load_reads_only_regular_files(tmp_path: Path, source: str) -> None:
    path = Path(source) if source.startswith("/") else tmp_path / source
    if source == "fifo":
        os.mkfifo(path)
    failures: list[BaseException] = []

    def load() -> None:
        try:
            Instance.load(path)
        except BaseException as exc:
            failures.append(exc)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "the reader blocked"
    [failure] = failures
    assert isinstance(failure, StorageError)
    assert "not a regular file" in str(failure)
    with pytest.raises(StorageError, match="No such file"):
        Instance.load(tmp_path / "missing.yaml")


@pytest.mark.anyio
async def test_a_file_larger_than_the_cap_is_refused(tmp_path: Path) -> None:
    store = FileInstanceStore(tmp_path, max_file_bytes=4096)
    big = make_instance("big")
    big.messages.append(Message(id="long", user=[TextPart(text="word " * 2000)]))
    await store.save(big)
    with pytest.raises(StorageError, match="more than the 4,096 allowed"):
        await store.load("big")
    assert await store.list() == []


@pytest.mark.anyio
async def test_a_file_that_holds_another_instance_is_refused_by_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FileInstanceStore(tmp_path)
    (tmp_path / "mine.yaml").write_text("instanceId: theirs\nstate: waiting\n")
    with pytest.raises(StorageError) as caught:
        await store.load("mine")
    assert "holds instance 'theirs', not 'mine'" in str(caught.value)
    with caplog.at_level(logging.WARNING, logger="onellm.instances"):
        assert await store.list() == []
    assert "theirs" in caplog.text


@pytest.mark.anyio
async def test_an_assets_directory_planted_as_a_link_is_not_written_through(tmp_path: Path) -> None:
    store = FileInstanceStore(tmp_path / "store")
    outside = tmp_path / "outside"
    outside.mkdir()
    (store.directory / "x.assets").symlink_to(outside, target_is_directory=True)
    assets = store.assets("x")
    with pytest.raises(StorageError) as caught:
        assets.put(b"payload")
    assert caught.value.operation == "put"
    with pytest.raises(StorageError):
        assets.get("0" * 64)
    assert list(outside.iterdir()) == []
    (outside / "keep.txt").write_text("mine")
    await store.save(make_instance("x"))
    assert await store.delete("x")
    assert not (store.directory / "x.assets").exists()
    assert (outside / "keep.txt").read_text() == "mine"


@pytest.mark.anyio
async def test_an_asset_file_planted_as_a_link_is_refused(tmp_path: Path) -> None:
    assets = FileAssetStore(tmp_path / "a.assets")
    part = assets.put(b"real bytes")
    assert part.key is not None
    target = victim(tmp_path)
    (assets.directory / part.key).unlink()
    (assets.directory / part.key).symlink_to(target)
    with pytest.raises(StorageError, match="symbolic link"):
        assets.get(part.key)
    assert not assets.exists(part.key)
    assets.put(b"real bytes")  # replaces the link with the real content
    assert assets.get(part.key) == b"real bytes"
    assert target.read_text() == "do not touch\n"


@pytest.mark.anyio
async def test_an_asset_whose_content_no_longer_matches_its_hash_is_not_used(tmp_path: Path) -> None:
    assets = FileAssetStore(tmp_path / "a.assets")
    part = assets.put(b"\x89PNG the real picture")
    assert part.key is not None
    path = assets.directory / part.key
    path.write_bytes(b"\x89PNG another picture")
    with pytest.raises(StorageError) as caught:
        assets.get(part.key)
    assert caught.value.path == str(path)
    assert "no longer matches its hash" in str(caught.value)
    assert assets.put(b"\x89PNG the real picture").key == part.key  # a put writes it again
    assert assets.get(part.key) == b"\x89PNG the real picture"
    path.write_bytes(b"\x89PNG the re")  # cut short
    with pytest.raises(StorageError):
        assets.get(part.key)


def test_leftovers_of_killed_writers_are_cleaned_and_live_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    old = time.time() - 60
    stale = tmp_path / ".a.yaml.0123456789ab.tmp"
    stale.write_text("half a save")
    os.utime(stale, (old, old))
    fresh = tmp_path / ".b.yaml.0123456789ac.tmp"
    fresh.write_text("a save that just started")
    held = tmp_path / ".c.yaml.0123456789ad.tmp"
    held.write_text("a save in progress in another process")
    os.utime(held, (old, old))
    not_ours = tmp_path / ".d.yaml.tmp"
    not_ours.write_text("someone else's")
    os.utime(not_ours, (old, old))
    assets = tmp_path / "a.assets"
    assets.mkdir()
    stale_asset = assets / f".{'0' * 64}.0123456789ab.tmp"
    stale_asset.write_bytes(b"half an asset")
    os.utime(stale_asset, (old, old))
    with open(held, "rb") as writer:
        fcntl.flock(writer.fileno(), fcntl.LOCK_EX)
        store = FileInstanceStore(tmp_path)
        assert not stale.exists()
        assert fresh.exists()
        assert held.exists()
        assert not_ours.exists()
        os.utime(fresh, (old, old))
        store._list_sync()
        assert not fresh.exists()
        assert held.exists()
    store.assets("a").exists("0" * 64)
    assert not stale_asset.exists()


def test_the_header_of_a_file_ending_in_a_newline_is_found() -> None:
    text = "instanceId: a\nstate: waiting\nmessages:\n- id: m\n  user:\n  - text: hi\n"
    assert header_end(text) == text.index("messages:")
    assert header_end(text + "late: key\n") is None


def _write_garbage(path: Path, head: bytes, size: int) -> None:
    garbage = ('- id: [unclosed\n  text: "no end\n  ? : ] } {\n' * 1000).encode()
    with open(path, "wb") as handle:
        handle.write(head)
        for _ in range(size // len(garbage)):
            handle.write(garbage)


def _rchar() -> int:
    with open("/proc/self/io") as handle:
        for line in handle:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise AssertionError("no rchar")


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts bytes read through /proc/self/io")
@pytest.mark.anyio
async def test_listing_reads_headers_only(tmp_path: Path) -> None:
    """An 8 MB instance whose messages are garbage lists at the cost of its header: the garbage is never parsed and
    the file is read only up to its `messages:` line and in its last 64 KiB."""
    store = FileInstanceStore(tmp_path)
    header = make_instance("long", state="waiting", name="Long one").dumps().split("messages:")[0]
    _write_garbage(tmp_path / "long.yaml", header.encode() + b"messages:\n", 8_000_000)
    await store.save(make_instance("short", state="stopped"))
    before = _rchar()
    listed = await store.list()
    read = _rchar() - before
    assert [(s.id, s.state, s.name) for s in listed] == [("short", "stopped", None), ("long", "waiting", "Long one")]
    assert read < 1_000_000, read
    with pytest.raises(Exception):  # noqa: B017 - loading does parse the garbage
        await store.load("long")


@pytest.mark.anyio
async def test_a_key_after_the_messages_of_a_long_file_is_still_listed(tmp_path: Path) -> None:
    inst = make_instance("late")
    inst.messages.extend(Message(id=f"m{i}", user=[TextPart(text="text " * 200)]) for i in range(400))
    (tmp_path / "late.yaml").write_text(inst.dumps() + "state: waiting\nname: Late keys\n")
    assert (tmp_path / "late.yaml").stat().st_size > 200_000
    (summary,) = await FileInstanceStore(tmp_path).list()
    assert (summary.id, summary.state, summary.name) == ("late", "waiting", "Late keys")


@pytest.mark.anyio
async def test_a_full_disk_fails_a_save_typed_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    store = FileInstanceStore(tmp_path, durable=False)
    old = make_instance("full", state="waiting")
    await store.save(old)
    with disk_fault("full") as disk:
        with pytest.raises(StorageError) as caught:
            await store.save(make_instance("full", state="running"))
        assert disk.failures == 1
    err = caught.value
    assert (err.operation, err.path) == ("save", str(tmp_path / "full.yaml"))
    assert isinstance(err.__cause__, OSError)
    assert err.__cause__.errno == errno.ENOSPC
    assert "No space left on device" in str(err)
    assert sorted(os.listdir(tmp_path)) == ["full.yaml"]
    assert (await store.load("full")).dumps() == old.dumps()  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_store_cannot_be_opened_where_no_directory_can_be_made(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("in the way")
    with pytest.raises(StorageError) as caught:
        FileInstanceStore(tmp_path / "file" / "store")
    assert caught.value.operation == "open"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
@pytest.mark.anyio
async def test_a_read_only_directory_fails_typed(tmp_path: Path) -> None:
    store = FileInstanceStore(tmp_path)
    await store.save(make_instance("ro", state="waiting"))
    os.chmod(tmp_path, 0o500)
    try:
        with pytest.raises(StorageError) as caught:
            await store.save(make_instance("ro", state="running"))
        assert caught.value.operation == "save"
        with pytest.raises(StorageError):
            await store.acquire("ro")
        assert (await store.load("ro")).state == "waiting"  # type: ignore[union-attr]
    finally:
        os.chmod(tmp_path, 0o700)


EFBIG_SCRIPT = """
import errno, os, resource, sys
from onellm.errors import StorageError
from onellm.instances import FileInstanceStore, Instance

directory = sys.argv[1]
store = FileInstanceStore(directory, durable=False)
store.save_sync(Instance(id="big", name="small"))
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
try:
    store.save_sync(Instance(id="big", name="x" * 100_000))
    print("saved")
except StorageError as exc:
    print(exc.operation, errno.errorcode[exc.__cause__.errno])
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
print(store.load_sync("big").name, *sorted(os.listdir(directory)))
"""


def test_a_file_size_limit_fails_a_save_typed_and_keeps_the_old_file(tmp_path: Path) -> None:
    """The kernel's own EFBIG (RLIMIT_FSIZE), not an injected one."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(EFBIG_SCRIPT), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["save EFBIG", "small big.yaml"]


def test_stale_time_is_a_module_setting() -> None:
    assert onellm._files.STALE_SECONDS > 0


@pytest.mark.anyio
async def test_a_messages_line_inside_a_quoted_header_value_does_not_cut_the_header(tmp_path: Path) -> None:
    text = 'instanceId: odd\nsystemPrompt: "first\nmessages: not a key\n  still the prompt"\nstate: waiting\n'
    (tmp_path / "odd.yaml").write_text(text + "messages:\n- id: a\n" + "  note: x\n" * 20_000)
    (summary,) = await FileInstanceStore(tmp_path).list()
    assert (summary.id, summary.state) == ("odd", "waiting")
