"""Train the bit-width agent shipped with the package (``agent_policy.npz``) on the digits proxy task.

``python -m icml25.federated.lbi_fl.train [--episodes 30] [--out PATH]`` regenerates the shipped weights
(deterministic for a given torch build; a few minutes on 2 CPU cores).  The proxy task: a quarter of the
digits training split over 5 clients (Dirichlet 0.5), MLP 64-256-128-10, 30 rounds, decisions every 5
rounds, 2 local epochs of SGD (lr 0.1, batch 32); the reward's reference is one all-INT8 run of it.
Why a quarter (not 10%) of the data: ``docs/papers/lbi_fl.md``, section "Calibration notes".
"""

from __future__ import annotations

import argparse
from pathlib import Path

from icml25.data.partition import dirichlet_partition
from icml25.data.tensors import digits_tensors
from icml25.federated.lbi_fl.agent import PRETRAINED_PATH, RLPolicy, train_agent
from icml25.federated.lbi_fl.fl import ProxyTask
from icml25.utils.nn import make_mlp
from icml25.utils.random import Seed

__all__ = ["proxy_task", "train_default_agent"]


def proxy_task(seed: Seed = 0, fraction: float = 0.25, n_clients: int = 5, rounds: int = 30) -> ProxyTask:
    """The agent's proxy task on a ``fraction`` of the digits training split (see the module docstring)."""
    data = digits_tensors(test_size=0.25, seed=seed)
    n = int(fraction * data.X_train.shape[0])
    X, y = data.X_train[:n], data.y_train[:n]
    parts = dirichlet_partition(y.numpy(), n_clients, 0.5, seed=seed, min_size=5)
    clients = [(X[p], y[p]) for p in parts]
    return ProxyTask(lambda: make_mlp([64, 256, 128, 10], seed=seed), clients, data.X_test, data.y_test,
                     rounds=rounds, itv=5, local_epochs=2, lr=0.1, batch_size=32, seed=seed)


def train_default_agent(episodes: int = 30, seed: int = 0, verbose: bool = False) -> RLPolicy:
    """REINFORCE + behaviour cloning (weight 1, decay 0.95 per episode) on :func:`proxy_task`."""
    log = (lambda e, ret, bc: print(f"episode {e}: return {ret:.3f}, bc {bc:.3f}", flush=True)) if verbose else None
    return train_agent(proxy_task(seed), episodes=episodes, bc_weight=1.0, bc_decay=0.95, lr=1e-2, seed=seed,
                       log=log)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=PRETRAINED_PATH)
    args = parser.parse_args()
    from icml25.harness.threads import single_thread

    with single_thread():  # one torch and BLAS thread, as the shipped weights were trained
        policy = train_default_agent(args.episodes, args.seed, verbose=True)
    policy.save(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
