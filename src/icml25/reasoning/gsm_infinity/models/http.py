"""``OpenAICompatibleClient``: POST ``/chat/completions`` with the standard library (vLLM, SGLang, OpenAI...)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from icml25.reasoning.gsm_infinity.models.base import check_generation
from icml25.utils.validation import check_instance, check_scalar


class ModelRequestError(RuntimeError):
    """The server rejected the request (4xx other than 429): fail fast, with the server's message."""


class ModelResponseError(RuntimeError):
    """No usable reply: malformed JSON or shape, or retries exhausted (timeouts, 429, 5xx)."""


class OpenAICompatibleClient:
    """Chat-completions client for any OpenAI-compatible endpoint, using only ``urllib``.

    ``base_url`` is the API root, e.g. ``http://127.0.0.1:8000/v1``.  HTTP 429/5xx, timeouts and
    connection errors are retried with exponential backoff (``backoff * 2**attempt`` seconds,
    ``max_retries`` times), then raise ``ModelResponseError``; other 4xx raise ``ModelRequestError``.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 120.0,
                 max_retries: int = 5, backoff: float = 1.0, extra_body: dict | None = None) -> None:
        check_instance(base_url, "base_url", str, "a URL string")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        check_instance(model, "model", str, "a model name string")
        if not model:
            raise ValueError("model must be a non-empty string, got ''")
        if api_key is not None:
            check_instance(api_key, "api_key", str, "a string or None")
        timeout = check_scalar(timeout, "timeout", "real", min=0.0, inclusive="neither")
        max_retries = check_scalar(max_retries, "max_retries", "int", min=0)
        backoff = check_scalar(backoff, "backoff", "real", min=0.0)
        if extra_body is not None:
            check_instance(extra_body, "extra_body", dict, "a dict or None")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.api_key, self.timeout = model, api_key, timeout
        self.max_retries, self.backoff, self.extra_body = max_retries, backoff, dict(extra_body or {})

    def _post(self, body: dict) -> dict:
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = "no attempt"
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
            except urllib.error.HTTPError as error:
                message = error.read().decode("utf-8", errors="replace")[:500]
                if error.code == 429 or error.code >= 500:
                    last = f"HTTP {error.code}: {message}"
                    continue
                raise ModelRequestError(f"HTTP {error.code} from {self.url}: {message}") from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
                last = f"{type(error).__name__}: {error}"
                continue
            try:
                return json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                raise ModelResponseError(f"malformed JSON from {self.url}: {error}") from None
        raise ModelResponseError(f"{self.url} failed after {self.max_retries + 1} attempts: {last}")

    def generate(self, messages: list[dict], *, max_tokens: int = 4096, temperature: float = 0.0,
                 n: int = 1) -> list[str]:
        """``n`` replies (asks again if the server returns fewer choices than ``n``)."""
        check_generation(messages, max_tokens, temperature, n)
        replies: list[str] = []
        while len(replies) < n:
            body = {"model": self.model, "messages": messages, "max_tokens": max_tokens,
                    "temperature": temperature, "n": n - len(replies), **self.extra_body}
            payload = self._post(body)
            try:
                choices = payload["choices"]
                got = [choice["message"]["content"] or "" for choice in choices]
            except (KeyError, TypeError, IndexError) as error:
                raise ModelResponseError(f"response without choices[i].message.content: {error!r}") from None
            if not got or not all(isinstance(text, str) for text in got):
                raise ModelResponseError("response choices carry no text")
            replies += got
        return replies[:n]
