"""Context-length control: the number of noise statements that brings a prompt to a token target."""

from __future__ import annotations

from collections.abc import Callable

TOLERANCE = 0.01


def fit_noise(length_of: Callable[[int], int], target: int, *, max_noise: int, probe: int = 32) -> tuple[int, int]:
    """Smallest-error ``n_noise`` with ``length_of(n_noise)`` close to ``target``; returns ``(n, length)``.

    ``length_of(n)`` renders the problem with ``n`` noise statements and counts its tokens with the
    configured tokenizer, so any tokenizer works.  Secant steps from a probe, then a bisection on
    the bracket; stops within 1 % of the target or at the best count found.
    """
    base = length_of(0)
    if target < base:
        raise ValueError(f"target_tokens={target} is below the zero-noise length {base}; use at least {base}")
    if target == base:
        return 0, base
    probe = min(probe, max_noise)
    lengths = {0: base, probe: length_of(probe)}
    slope = max((lengths[probe] - base) / probe, 1e-9) if probe else 1.0
    n = min(max_noise, max(0, round((target - base) / slope)))
    for _ in range(6):
        if n not in lengths:
            lengths[n] = length_of(n)
        if abs(lengths[n] - target) <= TOLERANCE * target:
            return n, lengths[n]
        slope = max((lengths[n] - base) / n, 1e-9) if n else slope
        step = min(max_noise, max(0, n + round((target - lengths[n]) / slope)))
        if step == n:
            break
        n = step
    below = max((k for k, v in lengths.items() if v <= target), default=0)
    above = min((k for k, v in lengths.items() if v >= target), default=max_noise)
    if above not in lengths:
        lengths[above] = length_of(above)
    while above - below > 1:
        mid = (below + above) // 2
        lengths[mid] = length_of(mid)
        if lengths[mid] < target:
            below = mid
        else:
            above = mid
    best = min(lengths, key=lambda k: (abs(lengths[k] - target), k))
    return best, lengths[best]
