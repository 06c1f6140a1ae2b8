"""Valid calls of ``icml25.federated.ferret`` (Ferret and the FedKSeed baseline)."""

import functools

import numpy as np

from api_examples._core import Example
from icml25.federated.ferret import (
    Block,
    Coords,
    FedKSeed,
    FedKSeedClient,
    Ferret,
    FerretClient,
    LocalSGDClient,
    SharedSeedServer,
    allocate_directions,
    basis,
    candidate_seeds,
    iter_basis_chunks,
    local_sgd,
    make_blocks,
    parameter_aliases,
    project,
    reconstruct,
    round_seeds,
    seed_digest,
)

P = "icml25.federated.ferret."


def _torch():
    import torch

    return torch


def _model():
    from icml25.utils.nn import make_mlp

    return make_mlp([4, 6, 3], seed=0)


def _data(n=8, seed=0):
    torch = _torch()
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 4, generator=g), torch.randint(0, 3, (n,), generator=g)


def _arrays():
    from icml25.federated.torch_clients import module_to_arrays

    return module_to_arrays(_model())


def _block():
    return Block(("w", "b"), ((2, 3), (2,)))


def _coords():
    return Coords([np.array([0, 2]), np.array([1])], [np.array([0.5, -1.0], np.float32), np.array([2.0], np.float32)])


@functools.cache
def _ferret_client():
    X, y = _data()
    return FerretClient(_model, X, y, K=4, local_steps=2, batch_size=4)


@functools.cache
def _fedkseed_client():
    X, y = _data()
    return FedKSeedClient(_model, X, y, K=4, local_steps=2, batch_size=4)


def _fedkseed():
    return FedKSeed(_model(), K=4, lr=1e-3)


def _ferret():
    return Ferret(_model(), K=4)


def _fedkseed_ins():
    strategy = _fedkseed()
    return strategy.configure_fit(1, strategy.initialize(), [0])[0]


def _ferret_ins():
    strategy = _ferret()
    return strategy.configure_fit(1, strategy.initialize(), [0])[0]


@functools.cache
def _fedkseed_reply():
    return _fedkseed_client().fit(_fedkseed_ins())


_SERVER = {"model": None, "K": 4, "root_seed": 0, "server_lr": 1.0, "seed_schedule": "fixed", "kind": "gaussian",
           "blocks": "official", "weighting": "equal", "momentum": 0.0, "clip": None, "evaluate_fn": None}
_CHUNK = {"chunk": "a streaming buffer size (positive int); mutated through the other examples"}

EXAMPLES = {
    P + "Block": Example(Block, {"names": ("w", "b"), "shapes": ((2, 3), (2,))}, paired=[("names", "shapes")]),
    P + "Block.flatten": Example(lambda **kw: _block().flatten(**kw),
                                 lambda: {"arrays": {"w": np.ones((2, 3), np.float32), "b": np.zeros(2, np.float32)}}),
    P + "Block.split": Example(lambda **kw: _block().split(**kw), lambda: {"vector": np.arange(8, dtype=np.float32)}),
    P + "Coords": Example(Coords, lambda: {"index": [np.array([0, 2]), np.array([1])],
                                           "values": [np.array([0.5, -1.0], np.float32), np.array([2.0], np.float32)]},
                          paired=[("index", "values")]),
    P + "Coords.dense": Example(lambda **kw: _coords().dense(**kw), {"K": 4}, positive=["K"]),
    P + "Coords.to_arrays": Example(lambda **kw: _coords().to_arrays(**kw), {"K": 4}, positive=["K"]),
    P + "basis": Example(basis, {"seed": 12345, "dim": 4, "kind": "gaussian", "block": 0, "chunk": 3},
                         positive=["dim", "chunk"]),
    P + "iter_basis_chunks": Example(lambda **kw: list(iter_basis_chunks(**kw)),
                                     {"seed": 12345, "dim": 4, "kind": "gaussian", "block": 0, "chunk": 3},
                                     positive=["dim", "chunk"]),
    P + "candidate_seeds": Example(candidate_seeds, {"root_seed": 0, "K": 4}, positive=["K"]),
    P + "round_seeds": Example(round_seeds, {"root_seed": 0, "K": 4, "server_round": 2, "schedule": "per_round"},
                               positive=["K"]),
    P + "seed_digest": Example(seed_digest, {"root_seed": 0, "K": 4, "schedule": "fixed", "kind": "gaussian"},
                               positive=["K"]),
    P + "make_blocks": Example(make_blocks, lambda: {"params": _model(), "target_numel": 20},
                               positive=["target_numel"]),
    P + "parameter_aliases": Example(parameter_aliases, lambda: {"module": _model()}),
    P + "allocate_directions": Example(allocate_directions, {"block_norms": [1.0, 0.5, 0.01], "K": 10,
                                                             "dims": [20, 30, 40]},
                                       paired=[("block_norms", "dims")], positive=["K"]),
    P + "project": Example(project, lambda: {"deltas": [np.ones(6, np.float32), np.ones(3, np.float32)],
                                             "seeds": candidate_seeds(0, 4), "counts": [2, 3]},
                           paired=[("deltas", "counts")], positive=["chunk"]),
    P + "reconstruct": Example(reconstruct, lambda: {"dense": np.array([[0.5, 0.0, 1.0, 0.0]], np.float32),
                                                     "seeds": candidate_seeds(0, 4), "dims": [6], "clip": 10.0},
                               positive=["clip", "chunk"], allow={"clip": "none"}),  # None: no clipping
    P + "local_sgd": Example(lambda **kw: local_sgd(**kw),
                             lambda: {"model": _model(), "X": _data()[0], "y": _data()[1], "steps": 2,
                                      "batch_size": 4, "lr": 0.05, "seed": 0},
                             paired=[("X", "y")], positive=["steps", "batch_size", "lr", "grad_clip"]),
    P + "LocalSGDClient": Example(LocalSGDClient, lambda: {"model_fn": _model, "X": _data()[0], "y": _data()[1],
                                                           "local_steps": 2, "batch_size": 4},
                                  paired=[("X", "y")], positive=["local_steps", "lr", "batch_size"]),
    P + "FerretClient": Example(FerretClient, lambda: {"model_fn": _model, "X": _data()[0], "y": _data()[1], "K": 4,
                                                       "local_steps": 2, "batch_size": 4},
                                paired=[("X", "y")], positive=["K", "local_steps", "lr", "batch_size"]),
    P + "FerretClient.fit": Example(lambda **kw: _ferret_client().fit(**kw), lambda: {"ins": _ferret_ins()}),
    P + "FedKSeedClient": Example(FedKSeedClient, lambda: {"model_fn": _model, "X": _data()[0], "y": _data()[1],
                                                           "K": 4, "local_steps": 2, "batch_size": 4},
                                  paired=[("X", "y")], positive=["K", "local_steps", "lr", "eps", "batch_size"]),
    P + "FedKSeedClient.fit": Example(lambda **kw: _fedkseed_client().fit(**kw), lambda: {"ins": _fedkseed_ins()}),
    P + "Ferret": Example(Ferret, lambda: {"model": _model(), "K": 4, "blocks": 20, "clip": 10.0},
                          positive=["K", "server_lr", "blocks", "clip"], nonneg=["momentum"],
                          allow={"clip": "none"}),  # None: no clipping
    P + "SharedSeedServer": Example(SharedSeedServer, lambda: {**_SERVER, "model": _model()},
                                    positive=["K", "server_lr"], nonneg=["momentum"]),
    P + "FedKSeed": Example(FedKSeed, lambda: {"model": _model(), "K": 4, "lr": 1e-3}, positive=["K", "lr"]),
    P + "FedKSeed.fit_config": Example(lambda **kw: _fedkseed().fit_config(**kw), {"server_round": 1},
                                       positive=["server_round"]),
    P + "FedKSeed.validate_fit": Example(lambda **kw: _fedkseed().validate_fit(**kw),
                                         lambda: {"server_round": 1, "arrays": _arrays(), "res": _fedkseed_reply()},
                                         positive=["server_round"]),
    P + "FedKSeed.aggregate_fit": Example(lambda **kw: _fedkseed().aggregate_fit(**kw),
                                          lambda: {"server_round": 1, "arrays": _arrays(),
                                                   "results": [(0, _fedkseed_reply())], "failures": []},
                                          positive=["server_round"],
                                          allow={"results": "empty", "failures": "empty"}),  # a round without replies
    P + "FedKSeed.evaluate": Example(lambda **kw: _fedkseed().evaluate(**kw),
                                     lambda: {"server_round": 1, "arrays": _arrays()}, positive=["server_round"]),
}


@functools.cache
def _local_client():
    X, y = _data()
    return LocalSGDClient(_model, X, y, local_steps=2, batch_size=4)


def _fit_ins():
    from icml25.federated.messages import FitIns

    return FitIns(_arrays(), {"round": 1})


EXAMPLES.update({
    P + "Coords.from_arrays": Example(
        Coords.from_arrays, lambda: {"arrays": _coords().to_arrays(4), "blocks": [_block(), _block()], "K": 4},
        positive=["K"]),
    P + "LocalSGDClient.fit": Example(lambda **kw: _local_client().fit(**kw), lambda: {"ins": _fit_ins()}),
})
