"""Shared randomness: seed pools and seed-regenerated random directions, identical on every machine.

A direction is a pure function of ``(seed, block, dim, kind)``: a NumPy ``Philox`` counter-based
generator with the 128-bit key ``(seed, block)`` (counter from 0) draws float32 values on the CPU, so the same
seed gives bit-identical vectors whatever the device, dtype or thread count of the model (no CUDA
RNG, no bf16/fp16 generation).  Directions are streamed chunk by chunk; the chunking does not
change the values.

Kinds (all with ``E[v v^T]`` proportional to the identity):

* ``"gaussian"``: standard normal, ``E[v v^T] = I`` (default, unbiased reconstruction);
* ``"rademacher"``: +-1 with probability 1/2 each (one raw Philox bit per value, about 100x faster
  to generate than the Gaussian), ``E[v v^T] = I``;
* ``"official"``: a standard normal truncated to +-1/sqrt(dim) (the official Ferret code),
  ``E[v v^T] ~= I / (3 dim)``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy.special import ndtr, ndtri

from icml25.utils.validation import check_choice, check_scalar

__all__ = ["KINDS", "SCHEDULES", "basis", "rademacher_rows", "iter_basis_chunks", "candidate_seeds", "round_seeds",
           "seed_digest"]

KINDS = ("gaussian", "rademacher", "official")
SCHEDULES = ("fixed", "per_round")
_MAX_SEED = 10**11
_SIGNS = np.array([1.0, -1.0], dtype=np.float32)  # bit 0 -> +1, bit 1 -> -1


def iter_basis_chunks(seed: int, dim: int, kind: str = "gaussian", block: int = 0,
                      chunk: int = 2**20) -> Iterator[np.ndarray]:
    """Yield the direction ``basis(seed, dim, kind, block)`` as consecutive float32 chunks of ``chunk`` values."""
    seed, dim = check_scalar(seed, "seed", "int", min=0), check_scalar(dim, "dim", "int", min=1)
    block, chunk = check_scalar(block, "block", "int", min=0), check_scalar(chunk, "chunk", "int", min=1)
    check_choice(kind, "kind", KINDS)
    rng = np.random.Generator(np.random.Philox(key=np.array([seed, block], dtype=np.uint64)))
    if kind == "rademacher":
        chunk = -(-chunk // 64) * 64  # whole 64-bit words per chunk, so the chunking never changes the values
    if kind == "official":
        a = 1.0 / np.sqrt(dim)
        low, high = ndtr(-a), ndtr(a)
    for start in range(0, dim, chunk):
        n = min(chunk, dim - start)
        if kind == "gaussian":
            yield rng.standard_normal(n, dtype=np.float32)
        elif kind == "rademacher":
            words = rng.bit_generator.random_raw(-(-n // 64)).astype("<u8")
            yield _SIGNS[np.unpackbits(words.view(np.uint8), count=n, bitorder="little")]
        else:
            yield ndtri(low + (high - low) * rng.random(n)).astype(np.float32)


def basis(seed: int, dim: int, kind: str = "gaussian", block: int = 0, chunk: int = 2**20) -> np.ndarray:
    """The random direction of ``seed`` for block ``block`` of size ``dim`` (float32, CPU, deterministic)."""
    parts = list(iter_basis_chunks(seed, dim, kind, block, chunk))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def rademacher_rows(seeds: np.ndarray, dim: int, block: int = 0) -> np.ndarray:
    """``np.stack([basis(s, dim, "rademacher", block) for s in seeds])``, generated in one pass (fast path)."""
    n_words = -(-int(dim) // 64)
    words = np.concatenate([np.zeros(0, np.uint64)] + [
        np.random.Philox(key=np.array([int(s), block], dtype=np.uint64)).random_raw(n_words) for s in seeds])
    bits = np.unpackbits(words.astype("<u8").view(np.uint8), bitorder="little").reshape(len(seeds), 64 * n_words)
    return _SIGNS[bits[:, :dim]]


def candidate_seeds(root_seed: int, K: int) -> np.ndarray:
    """The official seed pool: ``K`` seeds in ``[1, 1e11)`` drawn once from ``root_seed`` (int64)."""
    root_seed, K = check_scalar(root_seed, "root_seed", "int", min=0), check_scalar(K, "K", "int", min=1)
    rng = np.random.Generator(np.random.Philox(np.random.SeedSequence([root_seed, 0x5EED])))
    return rng.integers(1, _MAX_SEED, size=K, dtype=np.int64)


def round_seeds(root_seed: int, K: int, server_round: int, schedule: str = "fixed") -> np.ndarray:
    """The ``K`` seeds used in ``server_round``: the fixed pool, or ``hash(root_seed, round, k)`` per round."""
    check_choice(schedule, "schedule", SCHEDULES)
    if schedule == "fixed":
        return candidate_seeds(root_seed, K)
    root_seed, K = check_scalar(root_seed, "root_seed", "int", min=0), check_scalar(K, "K", "int", min=1)
    server_round = check_scalar(server_round, "server_round", "int", min=0)
    states = [np.random.SeedSequence([root_seed, server_round, k]).generate_state(1, np.uint64)[0] for k in range(K)]
    return np.array([int(s) % (_MAX_SEED - 1) + 1 for s in states], dtype=np.int64)


def seed_digest(root_seed: int, K: int, schedule: str, kind: str) -> int:
    """A 62-bit digest of what both sides must share (root seed, K, seed schedule, basis kind)."""
    check_choice(schedule, "schedule", SCHEDULES)
    words = [check_scalar(root_seed, "root_seed", "int", min=0), check_scalar(K, "K", "int", min=1),
             SCHEDULES.index(schedule), KINDS.index(check_choice(kind, "kind", KINDS))]
    return int(np.random.SeedSequence(words).generate_state(1, np.uint64)[0] >> np.uint64(2))
