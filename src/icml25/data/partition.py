"""Seeded label-skew partitioning of a data set over clients."""

from __future__ import annotations

import numpy as np

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_scalar


def dirichlet_partition(
    labels: np.ndarray,
    n_clients: int,
    alpha: float,
    *,
    seed: Seed = 0,
    min_size: int = 1,
    max_tries: int = 100,
) -> list[np.ndarray]:
    """Split sample indices over ``n_clients`` with label proportions ~ Dirichlet(alpha).

    For every class, the class's indices are shuffled and cut according to a draw from
    Dirichlet(alpha * 1) over the clients (Hsu et al. 2019).  Small ``alpha`` gives strong
    label skew, large ``alpha`` nearly IID shards.  Draws are repeated until every client
    holds at least ``min_size`` samples.  Returns one sorted index array per client.
    """
    labels = check_array(labels, "labels", ndim=1, dtype=None, min_len=1)
    n_clients = check_scalar(n_clients, "n_clients", "int", min=1)
    alpha = check_scalar(alpha, "alpha", "real", min=0.0, inclusive="neither")
    min_size = check_scalar(min_size, "min_size", "int", min=0)
    max_tries = check_scalar(max_tries, "max_tries", "int", min=1)
    if n_clients * min_size > labels.size:
        raise ValueError(f"cannot give {n_clients} clients {min_size} samples each from {labels.size} samples")
    rng = as_generator(seed)
    classes = np.unique(labels)
    for _ in range(max_tries):
        parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
        for c in classes:
            idx = rng.permutation(np.flatnonzero(labels == c))
            cuts = (np.cumsum(rng.dirichlet(np.full(n_clients, alpha))) * idx.size).astype(int)[:-1]
            for client, chunk in enumerate(np.split(idx, cuts)):
                parts[client].append(chunk)
        shards = [np.sort(np.concatenate(p)) for p in parts]
        if min(s.size for s in shards) >= min_size:
            return shards
    raise ValueError(f"no partition with min_size={min_size} found in {max_tries} draws; raise alpha")
