"""An OpenAI-compatible HTTP front end (``/v1/models``, ``/v1/chat/completions`` with streaming by server-sent
events) over a :class:`~icml25.serving.engine.ServingSystem`, built on FastAPI and served by uvicorn on 127.0.0.1.

Text is tokenised byte-wise (UTF-8 bytes modulo the vocabulary); images are ``image_url`` content parts holding
``data:image/png;base64,...`` URLs (decoded with Pillow, resized to the encoder's size, scaled to [-1, 1]).  The
model is random, so the completion text is meaningless but deterministic: ``<id>`` per generated token id.
"""

from __future__ import annotations

import base64
import io
import json
import queue
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from icml25.serving.engine import ServingSystem
from icml25.serving.request import Request, SamplingParams

MODEL_NAME = "icml25-tiny-lmm"


def encode_text(text: str, vocab: int) -> list[int]:
    """Byte-level tokens of ``text`` (UTF-8 bytes, modulo ``vocab``)."""
    return [b % vocab for b in text.encode("utf-8")]


def decode_tokens(tokens: list[int]) -> str:
    """The text of generated token ids: ``<id>`` each."""
    return "".join(f"<{t}>" for t in tokens)


def _image(url: str, size: int) -> np.ndarray:
    from PIL import Image

    if not url.startswith("data:image/") or ";base64," not in url:
        raise ValueError("image_url must be a data:image/...;base64 URL (nothing is downloaded)")
    img = Image.open(io.BytesIO(base64.b64decode(url.split(";base64,", 1)[1]))).convert("RGB").resize((size, size))
    return (np.asarray(img, dtype=np.float32).transpose(2, 0, 1) / 127.5 - 1.0)


def _parse(body: dict, system: ServingSystem) -> tuple[list[int], np.ndarray | None]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    text, images = [], []
    for msg in messages:
        content = msg.get("content") if isinstance(msg, dict) else None
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(parts, list):
            raise ValueError("each message needs a content string or a list of content parts")
        for part in parts:
            if part.get("type") == "text":
                text.append(str(part.get("text", "")))
            elif part.get("type") == "image_url":
                images.append(_image(part.get("image_url", {}).get("url", ""), system.enc_cfg.image_size))
            else:
                raise ValueError(f"unsupported content part type {part.get('type')!r}")
    return encode_text("\n".join(text), system.llm_cfg.vocab), (np.stack(images) if images else None)


def create_app(system: ServingSystem):
    """A FastAPI app serving ``system`` (which must be started)."""
    from fastapi import FastAPI, HTTPException
    from fastapi.responses import JSONResponse, StreamingResponse

    if not isinstance(system, ServingSystem):
        raise TypeError(f"system must be a ServingSystem, got {type(system).__name__}")
    app = FastAPI(title="icml25 EPD serving")
    counter = iter(range(1 << 62))

    def error(status: int, message: str):
        return JSONResponse({"error": {"message": message, "type": "invalid_request_error"}}, status_code=status)

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "created": 0, "owned_by": "icml25"}]}

    @app.post("/v1/chat/completions")
    def chat(body: dict):
        try:
            prompt, images = _parse(body, system)
            max_tokens = body.get("max_tokens") or body.get("max_completion_tokens") or 16
            req = Request(f"chatcmpl-{next(counter)}-{uuid.uuid4().hex[:8]}", prompt, images,
                          SamplingParams(int(max_tokens)))
        except (ValueError, TypeError) as exc:
            return error(400, str(exc))
        events: queue.Queue = queue.Queue()
        try:
            metrics = system.submit(req, on_event=lambda kind, value: events.put((kind, value)))
        except RuntimeError as exc:
            raise HTTPException(503, str(exc)) from None
        created = int(time.time())

        def chunk(delta: dict, finish: str | None) -> str:
            payload = {"id": req.id, "object": "chat.completion.chunk", "created": created, "model": MODEL_NAME,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            return f"data: {json.dumps(payload)}\n\n"

        def stream() -> Iterator[str]:
            yield chunk({"role": "assistant", "content": ""}, None)
            while True:
                kind, value = events.get()
                if kind == "token":
                    yield chunk({"content": decode_tokens([value])}, None)
                elif kind == "done":
                    yield chunk({}, "length" if len(metrics.tokens) >= req.sampling.max_new_tokens else "stop")
                    break
                else:
                    yield f"data: {json.dumps({'error': {'message': value}})}\n\n"
                    break
            yield "data: [DONE]\n\n"

        if body.get("stream"):
            return StreamingResponse(stream(), media_type="text/event-stream")
        while True:
            kind, value = events.get()
            if kind == "done":
                break
            if kind == "error":
                return error(400 if str(value).startswith("rejected") else 500, value)
        usage = {"prompt_tokens": metrics.prompt_len, "completion_tokens": len(metrics.tokens),
                 "total_tokens": metrics.prompt_len + len(metrics.tokens)}
        return {"id": req.id, "object": "chat.completion", "created": created, "model": MODEL_NAME,
                "choices": [{"index": 0, "finish_reason": "length" if len(metrics.tokens) >= req.sampling.max_new_tokens
                             else "stop", "message": {"role": "assistant", "content": decode_tokens(metrics.tokens)}}],
                "usage": usage}

    return app


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that is free now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def running_server(system: ServingSystem, port: int | None = None, host: str = "127.0.0.1"):
    """A context manager serving ``system`` with uvicorn in a background thread; it yields the base URL
    (``http://host:port/v1``) and stops the server on exit (the system itself is left to its owner).
    ``port`` None picks a free port; ``host`` must be 127.0.0.1."""
    if not isinstance(system, ServingSystem):
        raise TypeError(f"system must be a ServingSystem, got {type(system).__name__}")
    if host != "127.0.0.1":
        raise ValueError(f"host must be 127.0.0.1 (the server is for local use only), got {host!r}")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
        raise ValueError(f"port must be an int in [1, 65535] or None, got {port!r}")
    return _serving(system, port, host)


@contextmanager
def _serving(system: ServingSystem, port: int | None, host: str) -> Iterator[str]:
    import uvicorn

    port = free_port(host) if port is None else port
    server = uvicorn.Server(uvicorn.Config(create_app(system), host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="icml25-epd-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the HTTP server did not start on {host}:{port}")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(10)
