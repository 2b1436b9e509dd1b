"""Test plumbing shared by every package: the testdata folder and a guard that keeps tests off the network."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTDATA = Path(__file__).resolve().parent / "testdata"


@pytest.fixture
def testdata() -> Path:
    return TESTDATA


def _is_local(address: Any) -> bool:
    if isinstance(address, tuple) and address:
        host = address[0]
    else:
        return True  # unix sockets and the like
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Refuse any connection that leaves this machine: tests replay fixtures or talk to 127.0.0.1."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> Any:
        if not _is_local(address):
            raise OSError(f"tests may not reach the network (tried {address!r})")
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if not _is_local(address):
            raise OSError(f"tests may not reach the network (tried {address!r})")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    return
