"""A local stand-in for an OpenAI-compatible chat-completions endpoint, for tests and offline plumbing checks:
a stdlib HTTP server on 127.0.0.1 (a free port) that answers ``POST /v1/chat/completions`` with canned replies
in turn (``None`` in the list answers HTTP 500). No model, no network beyond the loopback interface."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from icml25.utils.validation import check_sequence


class FakeOpenAIServer:
    """``with FakeOpenAIServer(["```python ...```", None]) as server: client = OpenAICompatibleClient(server.url,
    "fake")``; ``server.requests`` keeps every request body received."""

    def __init__(self, replies: Sequence[str | None]) -> None:
        self.replies = check_sequence(replies, "replies", min_len=1)
        for i, r in enumerate(self.replies):
            if r is not None and not isinstance(r, str):
                raise TypeError(f"replies[{i}] must be a string or None (an HTTP 500), got {type(r).__name__}")
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the server is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _next(self, body: dict[str, Any]) -> str | None:
        with self._lock:
            self.requests.append(body)
            return self.replies[(len(self.requests) - 1) % len(self.replies)]

    def __enter__(self) -> FakeOpenAIServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                reply = owner._next(body)
                if reply is None or not self.path.endswith("/chat/completions"):
                    payload, status = {"error": {"message": "canned failure", "type": "server_error"}}, 500
                else:
                    payload, status = {
                        "id": f"fake-{len(owner.requests)}", "object": "chat.completion", "created": 0,
                        "model": body.get("model", "fake"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": reply}}],
                        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}, 200
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._server = self._thread = None
