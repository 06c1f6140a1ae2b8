"""The ``ChatModel`` protocol and ``CallableModel`` (a local Python function as a model)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from icml25.utils.validation import check_bool, check_callable, check_scalar


@runtime_checkable
class ChatModel(Protocol):
    """Anything with ``generate(messages, *, max_tokens, temperature, n) -> list[str]`` (n replies)."""

    def generate(self, messages: list[dict], *, max_tokens: int, temperature: float, n: int) -> list[str]: ...


def check_generation(messages: object, max_tokens: object, temperature: object, n: object) -> None:
    """Check the arguments of ``generate``: a non-empty list of message dicts, ``max_tokens`` and
    ``n`` integers >= 1, ``temperature`` a real >= 0."""
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise TypeError(f"messages must be a list of dicts, got {type(messages).__name__}")
    if not messages:
        raise ValueError("messages must be a non-empty list of dicts, got []")
    check_scalar(max_tokens, "max_tokens", "int", min=1)
    check_scalar(temperature, "temperature", "real", min=0.0)
    check_scalar(n, "n", "int", min=1)


def prompt_of(messages: list[dict]) -> str:
    """The content of the last user message (``ValueError`` if there is none)."""
    if not isinstance(messages, list):
        raise TypeError(f"messages must be a list of dicts, got {type(messages).__name__}")
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return str(message.get("content", ""))
    raise ValueError("messages contain no user message")


class CallableModel:
    """Wrap ``fn(prompt: str) -> str`` (or ``fn(messages: list[dict]) -> str`` with ``messages=True``).

    ``fn`` may also take ``temperature``/``max_tokens`` keyword arguments; they are passed when it does.
    """

    def __init__(self, fn: Callable[..., object], *, messages: bool = False) -> None:
        self.fn, self.messages = check_callable(fn, "fn"), check_bool(messages, "messages")
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}
        self._kwargs = {name for name in ("temperature", "max_tokens") if name in params}

    def generate(self, messages: list[dict], *, max_tokens: int = 4096, temperature: float = 0.0,
                 n: int = 1) -> list[str]:
        check_generation(messages, max_tokens, temperature, n)
        arg = messages if self.messages else prompt_of(messages)
        kwargs = {k: v for k, v in (("temperature", temperature), ("max_tokens", max_tokens)) if k in self._kwargs}
        return [self.fn(arg, **kwargs) for _ in range(n)]


def as_chat_model(model: object) -> ChatModel:
    """A ``ChatModel`` as is, or a plain callable wrapped in ``CallableModel``."""
    if isinstance(model, ChatModel):
        return model
    if callable(model):
        return CallableModel(model)
    raise TypeError(f"model must have generate(messages, ...) or be callable, got {type(model).__name__}")
