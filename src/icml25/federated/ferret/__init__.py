"""Ferret: federated full-parameter tuning with shared randomness (Shu et al., ICML 2025), and FedKSeed.

Clients train with plain SGD, project their update onto ``K`` directions regenerated from shared
seeds and send only the coordinates; the server regenerates each direction once per round and
rebuilds the averaged update.  FedKSeed (zeroth-order, the same seed-regenerated bases) is the
baseline.  Everything runs on the shared runtime (:func:`icml25.federated.simulate`, Flower adapter).

Example
-------
>>> import torch
>>> from icml25.utils.nn import make_mlp
>>> from icml25.federated import simulate
>>> from icml25.federated.ferret import Ferret, FerretClient
>>> X, y = torch.randn(64, 4), torch.randint(0, 3, (64,))
>>> model_fn = lambda: make_mlp([4, 8, 3], seed=0)
>>> clients = [FerretClient(model_fn, X[i::2], y[i::2], K=16, seed=i) for i in range(2)]
>>> history = simulate(clients, Ferret(model_fn(), K=16, server_lr=0.2), rounds=2)
>>> [r.fit_metrics["clients"] for r in history.rounds], history.ledger.total("up") > 0
([2, 2], True)
"""

from icml25.federated.ferret.bases import basis, candidate_seeds, iter_basis_chunks, round_seeds, seed_digest
from icml25.federated.ferret.fedkseed import FedKSeed, FedKSeedClient
from icml25.federated.ferret.ferret import Ferret, FerretClient, LocalSGDClient, SharedSeedServer, local_sgd
from icml25.federated.ferret.projection import (
    Block,
    Coords,
    allocate_directions,
    make_blocks,
    parameter_aliases,
    project,
    reconstruct,
)

__all__ = [
    "basis", "candidate_seeds", "iter_basis_chunks", "round_seeds", "seed_digest",
    "FedKSeed", "FedKSeedClient", "Ferret", "FerretClient", "LocalSGDClient", "SharedSeedServer", "local_sgd",
    "Block", "Coords", "allocate_directions", "make_blocks", "parameter_aliases", "project", "reconstruct",
]
