"""Requests, sampling parameters and per-request metrics of the serving system.

Lifecycle timestamps follow Singh et al. (arXiv 2501.05460, Section 3): arrival, encode start/end, first token
(end of prefill: TTFT), every decode token, finish.  Times are ``time.perf_counter()`` seconds of the process that
runs the :class:`~icml25.serving.engine.ServingSystem` (CLOCK_MONOTONIC: comparable across processes on Linux).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class SamplingParams:
    """Greedy decoding of ``max_new_tokens`` tokens, stopping early at ``stop_token`` when one is given."""

    max_new_tokens: int = 32
    stop_token: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.max_new_tokens, bool) or not isinstance(self.max_new_tokens, int):
            raise TypeError(f"max_new_tokens must be an int, got {type(self.max_new_tokens).__name__}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.stop_token is not None and (isinstance(self.stop_token, bool) or not isinstance(self.stop_token, int)):
            raise TypeError(f"stop_token must be an int or None, got {type(self.stop_token).__name__}")


@dataclass
class Request:
    """One multimodal request: ``prompt`` token ids, ``images`` ``[n, 3, H, W]`` (n may be 0), sampling
    parameters and ``arrival`` (seconds after the start of a trace; :meth:`ServingSystem.run_trace` uses it)."""

    id: str
    prompt: Sequence[int]
    images: np.ndarray | None = None
    sampling: SamplingParams = field(default_factory=SamplingParams)
    arrival: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise TypeError(f"id must be a non-empty string, got {self.id!r}")
        prompt = np.asarray(self.prompt)
        if prompt.ndim != 1 or (prompt.size and not np.issubdtype(prompt.dtype, np.integer)):
            raise TypeError(f"prompt must be a 1-d sequence of token ids, got {prompt.dtype} of shape {prompt.shape}")
        if prompt.size and prompt.min() < 0:
            raise ValueError("prompt token ids must be >= 0")
        self.prompt = [int(t) for t in prompt]
        if self.images is not None:
            images = np.asarray(self.images)
            if images.ndim != 4 or images.shape[1] != 3 or not np.issubdtype(images.dtype, np.floating):
                raise ValueError(f"images must be a float array [n, 3, H, W], got {images.dtype} {images.shape}")
            if not np.isfinite(images).all():
                raise ValueError("images must be finite")
            self.images = images if len(images) else None
        if not self.prompt and self.images is None:
            raise ValueError(f"request {self.id!r} has an empty prompt and no image")
        if not isinstance(self.sampling, SamplingParams):
            raise TypeError(f"sampling must be a SamplingParams, got {type(self.sampling).__name__}")
        if isinstance(self.arrival, bool) or not isinstance(self.arrival, (int, float)) or not self.arrival >= 0:
            raise ValueError(f"arrival must be a real >= 0, got {self.arrival!r}")

    @property
    def n_images(self) -> int:
        return 0 if self.images is None else len(self.images)


@dataclass
class RequestMetrics:
    """What happened to one request; ``error`` is set (and ``tokens`` may be short) when it failed or was rejected."""

    id: str
    arrival: float
    n_images: int = 0
    prompt_len: int = 0
    tokens: list[int] = field(default_factory=list)
    token_times: list[float] = field(default_factory=list)
    encode_start: float | None = None
    encode_end: float | None = None
    prefill_start: float | None = None
    decode_start: float | None = None
    finish: float | None = None
    error: str | None = None
    cached_images: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None and self.finish is not None

    @property
    def ttft(self) -> float | None:
        """Time to first token: first token time minus arrival."""
        return self.token_times[0] - self.arrival if self.token_times else None

    @property
    def tpot(self) -> float | None:
        """Time per output token after the first: (t_last - t_first) / (n_out - 1); None with one token."""
        n = len(self.token_times)
        return (self.token_times[-1] - self.token_times[0]) / (n - 1) if n > 1 else None

    @property
    def itl(self) -> list[float]:
        """Inter-token latencies (gaps between consecutive tokens)."""
        return list(np.diff(self.token_times)) if len(self.token_times) > 1 else []

    @property
    def e2e(self) -> float | None:
        return self.finish - self.arrival if self.finish is not None else None
