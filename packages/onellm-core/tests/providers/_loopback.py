"""A loopback HTTP/1.1 server for the tests where the transport itself is under test: it counts the connections it
accepts and answers each request from a handler the test gives (a whole body, or a body sent piece by piece with
pauses, as a slow or stalling stream would)."""

from __future__ import annotations

import http.server
import socketserver
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    """What the server sends: a status, headers, and the body as pieces (`float` pieces are pauses, in seconds).
    With `length`, the body is sent with a Content-Length; otherwise chunked."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    pieces: Iterable[bytes | float] = ()
    length: bool = True


Handler = Callable[[str, bytes], Answer]


class LoopbackServer:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[tuple[str, bytes]] = []
        self.disconnects: list[float] = []
        self._lock = threading.Lock()
        server = self

        class RequestHandler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(size)
                with server._lock:
                    server.requests.append((self.path, body))
                answer = server.handler(self.path, body)
                pieces = list(answer.pieces)
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                data = [p for p in pieces if isinstance(p, bytes)]
                if answer.length:
                    self.send_header("content-length", str(sum(len(d) for d in data)))
                else:
                    self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                try:
                    for piece in pieces:
                        if isinstance(piece, float):
                            self.wfile.flush()
                            time.sleep(piece)
                            continue
                        if answer.length:
                            self.wfile.write(piece)
                        elif piece:
                            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    if not answer.length:
                        self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    with server._lock:
                        server.disconnects.append(time.monotonic())
                    self.close_connection = True

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def process_request(self, request: Any, client_address: Any) -> None:
                with server._lock:
                    server.connections += 1
                super().process_request(request, client_address)

        self._server = Server(("127.0.0.1", 0), RequestHandler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def serve(handler: Handler) -> Iterator[LoopbackServer]:
    with LoopbackServer(handler) as server:
        yield server
