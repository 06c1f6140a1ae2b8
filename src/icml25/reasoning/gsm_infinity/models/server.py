"""Serve any ``ChatModel`` as an OpenAI-compatible endpoint on 127.0.0.1 (a stub server for tests).

``http.server`` in a background thread, port 0 (the OS picks a free port), closed cleanly by the
context manager.  ``faults`` injects failures in order, one per request, to exercise clients:
``"malformed"`` (a body that is not JSON), ``"no_choices"``, ``"500"``, ``"429"``, ``"400"``, ``"slow"``
(answers after ``slow_seconds``, to trip a client's timeout).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from icml25.reasoning.gsm_infinity.models.base import ChatModel, as_chat_model
from icml25.utils.validation import check_choice, check_scalar

FAULTS = ("malformed", "no_choices", "500", "429", "400", "slow")


class ChatServer:
    """A running server: ``base_url`` (``http://127.0.0.1:<port>/v1``), ``requests`` served, ``close()``."""

    def __init__(self, model: ChatModel, faults: list[str] | None = None, slow_seconds: float = 1.0) -> None:
        for i, fault in enumerate(faults or []):
            check_choice(fault, f"faults[{i}]", FAULTS)
        slow_seconds = check_scalar(slow_seconds, "slow_seconds", "real", min=0.0)
        self.model = as_chat_model(model)
        self.faults = list(faults or [])
        self.slow_seconds = slow_seconds
        self.requests = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="gsm-infinity-stub", daemon=True)
        self._thread.start()

    def _next_fault(self) -> str | None:
        with self._lock:
            self.requests += 1
            return self.faults.pop(0) if self.faults else None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - keep tests quiet
                return

            def _send(self, code: int, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
                    return
                fault = server._next_fault()
                if fault == "slow":
                    time.sleep(server.slow_seconds)
                if fault in ("500", "429", "400"):
                    self._send(int(fault), json.dumps({"error": {"message": f"injected {fault}"}}).encode())
                    return
                if fault == "malformed":
                    self._send(200, b"{not json")
                    return
                try:
                    body = json.loads(raw)
                    replies = server.model.generate(body["messages"], max_tokens=int(body.get("max_tokens", 4096)),
                                                    temperature=float(body.get("temperature", 0.0)),
                                                    n=int(body.get("n", 1)))
                except (KeyError, TypeError, ValueError) as error:
                    self._send(400, json.dumps({"error": {"message": f"bad request: {error}"}}).encode())
                    return
                choices = [] if fault == "no_choices" else [
                    {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    for i, text in enumerate(replies)]
                self._send(200, json.dumps({"object": "chat.completion", "model": body.get("model", ""),
                                            "choices": choices}).encode())

        return Handler

    def close(self) -> None:
        """Stop serving and join the thread."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@contextmanager
def serve_chat_model(model: ChatModel, faults: list[str] | None = None,
                     slow_seconds: float = 1.0) -> Iterator[ChatServer]:
    """``with serve_chat_model(model) as server: OpenAICompatibleClient(server.base_url, "stub")``."""
    server = ChatServer(model, faults, slow_seconds)
    try:
        yield server
    finally:
        server.close()
