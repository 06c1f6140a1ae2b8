"""Synthetic multimodal workloads: Poisson arrivals, images per request, prompt and output lengths drawn uniformly
(Singh et al., arXiv 2501.05460, Section 5: synthetic image-heavy workloads).  Images are random tensors: their
content does not change any latency; the MM cache test repeats images on purpose (``repeat``)."""

from __future__ import annotations

import math

import numpy as np

from icml25.serving.request import Request, SamplingParams
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_scalar


def _range(value, name: str, low: int) -> tuple[int, int]:
    if (not isinstance(value, (tuple, list)) or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise TypeError(f"{name} must be a (low, high) pair of ints, got {value!r}")
    a, b = value
    if a < low or b < a:
        raise ValueError(f"{name} must satisfy {low} <= low <= high, got {value!r}")
    return a, b


def make_trace(n: int, rate: float, images: tuple[int, int] = (1, 8), prompt: tuple[int, int] = (16, 64),
               output: tuple[int, int] = (32, 64), image_size: int = 64, vocab: int = 512, repeat: float = 0.0,
               seed: Seed = None) -> list[Request]:
    """``n`` requests with Poisson arrivals at ``rate`` requests/s (``math.inf``: all at time 0).

    ``images``, ``prompt``, ``output``: inclusive ranges of images per request, text tokens and new tokens.
    ``repeat``: probability that an image is a copy of an earlier one (exercises the MM cache).
    """
    n = check_scalar(n, "n", "int", min=1)
    rate = check_scalar(rate, "rate", "real", min=0, inclusive="neither", allow_inf=True)
    images, prompt, output = _range(images, "images", 0), _range(prompt, "prompt", 0), _range(output, "output", 1)
    image_size = check_scalar(image_size, "image_size", "int", min=1)
    vocab = check_scalar(vocab, "vocab", "int", min=2)
    repeat = check_scalar(repeat, "repeat", "real", min=0, max=1)
    if images[1] == 0 and prompt[1] == 0:
        raise ValueError("images and prompt cannot both be (0, 0): every request needs a prompt or an image")
    rng = as_generator(seed)
    gaps = np.zeros(n) if math.isinf(rate) else rng.exponential(1.0 / rate, n)
    arrivals = np.cumsum(gaps) - gaps[0]
    seen: list[np.ndarray] = []
    trace = []
    for i in range(n):
        k = int(rng.integers(images[0], images[1] + 1))
        t = int(rng.integers(max(prompt[0], 1 if k == 0 else 0), max(prompt[1], 1 if k == 0 else 0) + 1))
        imgs = []
        for _ in range(k):
            if seen and rng.random() < repeat:
                imgs.append(seen[int(rng.integers(len(seen)))])
            else:
                imgs.append(rng.standard_normal((3, image_size, image_size)).astype(np.float32))
                seen.append(imgs[-1])
        trace.append(Request(f"req-{i}", rng.integers(0, vocab, t), np.stack(imgs) if imgs else None,
                             SamplingParams(int(rng.integers(output[0], output[1] + 1))), float(arrivals[i])))
    return trace
