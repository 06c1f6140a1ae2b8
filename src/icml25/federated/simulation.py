"""Synchronous in-process federated simulator: clients, strategies, client sampling, FedAvg.

A round: the strategy configures a ``FitIns`` per sampled client; every message is serialized
(and counted by the :class:`~icml25.federated.ledger.CommunicationLedger`) and deserialized on the
other side, so clients and server only ever see what went over the "wire"; the strategy
aggregates the replies.  A client that raises or replies with malformed arrays is recorded as a
:class:`ClientFailure` with its id; ``on_failure="skip"`` goes on with the other clients,
``on_failure="stop"`` ends the run cleanly after that round's failure, keeping the history and
the last global arrays.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from icml25.federated.ledger import CommunicationLedger
from icml25.federated.messages import (
    EvaluateIns,
    EvaluateRes,
    FitIns,
    FitRes,
    MalformedMessageError,
    Scalar,
    check_arrays,
    check_fit_res,
    deserialize,
)
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_choice, check_scalar

__all__ = [
    "Client", "Strategy", "FedAvg", "ClientFailure", "RoundRecord", "History",
    "sample_clients", "weighted_average", "check_same_layout", "simulate",
]

Arrays = dict[str, np.ndarray]


class Client(ABC):
    """A federated client: trains on its own data from the arrays it is sent."""

    @abstractmethod
    def fit(self, ins: FitIns) -> FitRes:
        """Train locally from ``ins.arrays`` and return the arrays to send back."""

    def evaluate(self, ins: EvaluateIns) -> EvaluateRes:
        """Evaluate ``ins.arrays`` on local data (optional)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement evaluate")


class Strategy(ABC):
    """Server-side logic of a federated method (the shape of Flower's ``Strategy``)."""

    @abstractmethod
    def initialize(self) -> Arrays:
        """The global arrays before round 1."""

    def fit_config(self, server_round: int) -> dict[str, Scalar]:
        """Config sent to every client in ``server_round`` (default: the round number)."""
        return {"round": server_round}

    def configure_fit(self, server_round: int, arrays: Arrays, clients: Sequence[int]) -> dict[int, FitIns]:
        """One ``FitIns`` per sampled client (default: the same arrays and config for all)."""
        return {cid: FitIns(arrays, self.fit_config(server_round)) for cid in clients}

    def validate_fit(self, server_round: int, arrays: Arrays, res: FitRes) -> None:
        """Raise :class:`MalformedMessageError` if a reply cannot be aggregated (default: accept)."""
        return None

    @abstractmethod
    def aggregate_fit(self, server_round: int, arrays: Arrays, results: list[tuple[int, FitRes]],
                      failures: list[ClientFailure]) -> tuple[Arrays, dict[str, Scalar]]:
        """New global arrays and round metrics from the replies of the clients that succeeded."""

    def evaluate(self, server_round: int, arrays: Arrays) -> dict[str, Scalar]:
        """Server-side evaluation of the global arrays after a round (default: nothing)."""
        return {}


@dataclass(frozen=True)
class ClientFailure:
    """A client that raised or replied with a malformed message in a round."""

    round: int
    client: int
    error: str


@dataclass
class RoundRecord:
    """What happened in one round."""

    round: int
    clients: list[int]
    failures: list[ClientFailure]
    fit_metrics: dict[str, Scalar]
    eval_metrics: dict[str, Scalar]


@dataclass
class History:
    """The run: per-round records, the final global arrays, the ledger and why it stopped early, if it did."""

    rounds: list[RoundRecord] = field(default_factory=list)
    arrays: Arrays = field(default_factory=dict)
    ledger: CommunicationLedger = field(default_factory=CommunicationLedger)
    stopped: str | None = None

    @property
    def failures(self) -> list[ClientFailure]:
        return [f for r in self.rounds for f in r.failures]

    def curve(self, metric: str) -> list[float]:
        """Server-side evaluation metric per completed round."""
        return [float(r.eval_metrics[metric]) for r in self.rounds if metric in r.eval_metrics]


def sample_clients(n_clients: int, n_sampled: int | None, seed: Seed = None) -> list[int]:
    """``n_sampled`` distinct client ids out of ``range(n_clients)``, sorted (all when None).

    ``seed`` is an int, ``None`` or a ``numpy.random.Generator``; a Generator is drawn from (and advanced).
    """
    n_clients = check_scalar(n_clients, "n_clients", "int", min=1)
    if n_sampled is None or n_sampled == n_clients:
        return list(range(n_clients))
    n_sampled = check_scalar(n_sampled, "clients_per_round", "int", min=1, max=n_clients)
    return sorted(int(c) for c in as_generator(seed).choice(n_clients, size=n_sampled, replace=False))


def check_same_layout(reference: Mapping[str, np.ndarray], arrays: Mapping[str, np.ndarray]) -> None:
    """Raise :class:`MalformedMessageError` unless ``arrays`` has the names and shapes of ``reference``."""
    if set(arrays) != set(reference):
        missing, extra = sorted(set(reference) - set(arrays)), sorted(set(arrays) - set(reference))
        raise MalformedMessageError(f"array names differ from the global model: missing {missing}, unexpected {extra}")
    for name, ref in reference.items():
        if arrays[name].shape != ref.shape:
            raise MalformedMessageError(f"array {name!r} has shape {arrays[name].shape}, expected {ref.shape}")


def weighted_average(items: Sequence[tuple[Mapping[str, np.ndarray], float]]) -> Arrays:
    """Average named arrays with weights (FedAvg uses the clients' example counts)."""
    if not items:
        raise ValueError("weighted_average needs at least one (arrays, weight) pair")
    weights = check_array([w for _, w in items], "weights", ndim=1, dtype=float)
    if np.any(weights < 0):
        raise ValueError(f"weights must be >= 0, got {weights.tolist()}")
    if weights.sum() == 0:
        weights = np.ones_like(weights)
    weights = weights / weights.sum()
    first = items[0][0]
    for arrays, _ in items[1:]:
        check_same_layout(first, arrays)
    return {name: sum(w * np.asarray(a[name], dtype=np.float64) for (a, _), w in zip(items, weights, strict=True))
            .astype(np.result_type(first[name].dtype, np.float32)) for name in first}


class FedAvg(Strategy):
    """FedAvg (McMahan et al. 2017): average the clients' arrays weighted by their example counts.

    ``evaluate_fn(arrays) -> metrics`` (optional) evaluates the global arrays after every round.
    """

    def __init__(self, initial_arrays: Mapping[str, np.ndarray], config: Mapping[str, Scalar] | None = None,
                 evaluate_fn: Callable[[Arrays], dict[str, Scalar]] | None = None) -> None:
        self.initial_arrays = check_arrays(initial_arrays, "initial_arrays")
        self.config = dict(config or {})
        self.evaluate_fn = evaluate_fn

    def initialize(self) -> Arrays:
        return {k: v.copy() for k, v in self.initial_arrays.items()}

    def fit_config(self, server_round: int) -> dict[str, Scalar]:
        return {"round": server_round, **self.config}

    def validate_fit(self, server_round: int, arrays: Arrays, res: FitRes) -> None:
        check_same_layout(arrays, res.arrays)

    def aggregate_fit(self, server_round, arrays, results, failures):
        new = weighted_average([(res.arrays, res.num_examples) for _, res in results])
        return new, {"clients": len(results), "examples": int(sum(res.num_examples for _, res in results))}

    def evaluate(self, server_round: int, arrays: Arrays) -> dict[str, Scalar]:
        return {} if self.evaluate_fn is None else dict(self.evaluate_fn(arrays))


def _fit_one(client: Client, ins: FitIns, server_round: int, cid: int, ledger: CommunicationLedger,
             strategy: Strategy, arrays: Arrays) -> FitRes:
    sent = FitIns(deserialize(ledger.record(server_round, cid, "down", ins.arrays)), dict(ins.config))
    res = check_fit_res(client.fit(sent))
    received = FitRes(deserialize(ledger.record(server_round, cid, "up", res.arrays)), int(res.num_examples),
                      dict(res.metrics))
    strategy.validate_fit(server_round, arrays, received)
    return received


def simulate(clients: Sequence[Client] | Mapping[int, Client], strategy: Strategy, rounds: int,
             clients_per_round: int | None = None, seed: Seed = 0,
             on_failure: str = "skip", ledger: CommunicationLedger | None = None) -> History:
    """Run ``rounds`` synchronous rounds of ``strategy`` over ``clients`` in this process.

    ``clients`` is a sequence (ids 0..n-1) or a mapping id -> client; ``clients_per_round`` clients
    are sampled per round with ``seed`` (all when None).  ``on_failure`` is ``"skip"`` (drop the
    failing client from the round and go on) or ``"stop"`` (end the run after the round's first
    failure, keeping the previous global arrays).  Every message goes through ``ledger``.
    """
    check_choice(on_failure, "on_failure", ("skip", "stop"))
    rounds = check_scalar(rounds, "rounds", "int", min=1)
    table = dict(clients) if isinstance(clients, Mapping) else dict(enumerate(clients))
    if not table:
        raise ValueError("simulate needs at least one client")
    ids = sorted(table)
    rng = as_generator(seed)
    history = History(arrays=check_arrays(strategy.initialize(), "initial arrays"),
                      ledger=ledger if ledger is not None else CommunicationLedger())
    for server_round in range(1, rounds + 1):
        sampled = [ids[i] for i in sample_clients(len(ids), clients_per_round, rng)]
        instructions = strategy.configure_fit(server_round, history.arrays, sampled)
        results, failures = [], []
        for cid, ins in instructions.items():
            try:
                results.append((cid, _fit_one(table[cid], ins, server_round, cid, history.ledger, strategy,
                                              history.arrays)))
            except Exception as exc:  # a client's fault is recorded with its id; the run decides what follows
                failures.append(ClientFailure(server_round, cid, f"{type(exc).__name__}: {exc}"))
                if on_failure == "stop":
                    break
        if failures and on_failure == "stop":
            history.rounds.append(RoundRecord(server_round, sampled, failures, {}, {}))
            history.stopped = f"round {server_round}: client {failures[0].client} failed ({failures[0].error})"
            return history
        fit_metrics: dict[str, Scalar] = {}
        if results:
            new_arrays, fit_metrics = strategy.aggregate_fit(server_round, history.arrays, results, failures)
            history.arrays = check_arrays(new_arrays, "aggregated arrays")
        history.rounds.append(RoundRecord(server_round, sampled, failures, dict(fit_metrics),
                                          dict(strategy.evaluate(server_round, history.arrays))))
    return history
