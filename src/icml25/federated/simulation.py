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
from collections.abc import Callable, Iterator, Mapping, Sequence
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
    check_scalars,
    deserialize,
)
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import (
    check_array,
    check_callable,
    check_choice,
    check_instance,
    check_scalar,
    check_sequence,
)

__all__ = [
    "Client", "Strategy", "FedAvg", "ClientFailure", "RoundRecord", "History",
    "sample_clients", "weighted_average", "check_same_layout", "simulate", "run_rounds", "client_table",
    "RoundFailedError", "Transport",
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
        """Config sent to every client in ``server_round`` (int >= 0; default: the round number)."""
        return {"round": check_scalar(server_round, "server_round", "int", min=0)}

    def configure_fit(self, server_round: int, arrays: Arrays, clients: Sequence[int]) -> dict[int, FitIns]:
        """One ``FitIns`` per sampled client (default: the same arrays and config for all).

        ``clients`` is a sequence of client ids (ints >= 0; may be empty)."""
        arrays = check_arrays(arrays, "arrays")
        clients = check_sequence(clients, "clients", item=lambda c, n: check_scalar(c, n, "int", min=0))
        return {cid: FitIns(arrays, self.fit_config(server_round)) for cid in clients}

    def validate_fit(self, server_round: int, arrays: Arrays, res: FitRes) -> None:
        """Raise :class:`MalformedMessageError` if a reply cannot be aggregated (default: accept)."""
        _check_hook(server_round, arrays)
        check_instance(res, "res", FitRes)
        return None

    @abstractmethod
    def aggregate_fit(self, server_round: int, arrays: Arrays, results: list[tuple[int, FitRes]],
                      failures: list[ClientFailure]) -> tuple[Arrays, dict[str, Scalar]]:
        """New global arrays and round metrics from the replies of the clients that succeeded."""

    def evaluate(self, server_round: int, arrays: Arrays) -> dict[str, Scalar]:
        """Server-side evaluation of the global arrays after a round (default: nothing)."""
        _check_hook(server_round, arrays)
        return {}


def _check_hook(server_round: object, arrays: object) -> None:
    check_scalar(server_round, "server_round", "int", min=0)
    check_arrays(arrays, "arrays")


def _check_results(results: object, failures: object) -> list[tuple[int, FitRes]]:
    def pair(item: object, name: str) -> tuple[int, FitRes]:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"{name} must be a (client id, FitRes) pair, got {item!r}")
        check_scalar(item[0], f"{name} client id", "int", min=0)
        check_instance(item[1], f"{name} reply", FitRes)
        return item

    results = check_sequence(results, "results", min_len=1, item=pair)
    check_sequence(failures, "failures", item=lambda f, n: check_instance(f, n, ClientFailure))
    return results


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
        """Server-side evaluation metric per completed round (empty when nothing was evaluated).

        A ``metric`` that no evaluated round reports raises ValueError naming the metrics there are.
        """
        check_instance(metric, "metric", str)
        known = sorted({k for r in self.rounds for k in r.eval_metrics})
        if known and metric not in known:
            raise ValueError(f"metric must be one of the evaluated metrics {known}, got {metric!r}")
        return [float(r.eval_metrics[metric]) for r in self.rounds if metric in r.eval_metrics]


def sample_clients(n_clients: int, n_sampled: int | None, seed: Seed = None) -> list[int]:
    """``n_sampled`` distinct client ids out of ``range(n_clients)``, sorted (all when None).

    ``n_sampled`` is simulate's ``clients_per_round`` (an int in [1, n_clients]); messages call it so.

    ``seed`` is an int, ``None`` or a ``numpy.random.Generator``; a Generator is drawn from (and advanced).
    """
    n_clients = check_scalar(n_clients, "n_clients", "int", min=1)
    rng = as_generator(seed)
    if n_sampled is None:
        return list(range(n_clients))
    n_sampled = check_scalar(n_sampled, "clients_per_round", "int", min=1, max=n_clients)
    if n_sampled == n_clients:
        return list(range(n_clients))
    return sorted(int(c) for c in rng.choice(n_clients, size=n_sampled, replace=False))


def check_same_layout(reference: Mapping[str, np.ndarray], arrays: Mapping[str, np.ndarray]) -> None:
    """Raise :class:`MalformedMessageError` unless ``arrays`` has the names and shapes of ``reference``."""
    check_arrays(reference, "reference")
    check_arrays(arrays, "arrays")
    if set(arrays) != set(reference):
        missing, extra = sorted(set(reference) - set(arrays)), sorted(set(arrays) - set(reference))
        raise MalformedMessageError(f"array names differ from the global model: missing {missing}, unexpected {extra}")
    for name, ref in reference.items():
        if arrays[name].shape != ref.shape:
            raise MalformedMessageError(f"array {name!r} has shape {arrays[name].shape}, expected {ref.shape}")


def weighted_average(items: Sequence[tuple[Mapping[str, np.ndarray], float]]) -> Arrays:
    """Average named arrays with weights (FedAvg uses the clients' example counts).

    ``items`` is a non-empty sequence of ``(arrays, weight)`` pairs, weights finite and >= 0
    (all zero: a plain mean).
    """
    def pair(item: object, name: str) -> tuple[Mapping[str, np.ndarray], float]:
        if not isinstance(item, tuple | list) or len(item) != 2:
            raise TypeError(f"{name} must be an (arrays, weight) pair, got {item!r}")
        check_arrays(item[0], f"{name} arrays")
        check_scalar(item[1], f"{name} weight", "real")
        return tuple(item)

    items = check_sequence(items, "items", min_len=1, item=pair)
    weights = check_array([w for _, w in items], "weights", ndim=1, dtype=float)
    if np.any(weights < 0):
        raise ValueError(f"weights must be >= 0, got {weights.tolist()}")
    if weights.sum() == 0:
        weights = np.ones_like(weights)
    weights = weights / weights.sum()
    first = items[0][0]
    for arrays, _ in items[1:]:
        check_same_layout(first, arrays)
    # np.asarray keeps a 0-d array an array (arithmetic on 0-d arrays returns NumPy scalars)
    return {name: np.asarray(sum(w * np.asarray(a[name], dtype=np.float64) for (a, _), w in zip(items, weights,
                                                                                                 strict=True)),
                             dtype=np.result_type(first[name].dtype, np.float32)) for name in first}


class FedAvg(Strategy):
    """FedAvg (McMahan et al. 2017): average the clients' arrays weighted by their example counts.

    ``evaluate_fn(arrays) -> metrics`` (optional) evaluates the global arrays after every round.
    """

    def __init__(self, initial_arrays: Mapping[str, np.ndarray], config: Mapping[str, Scalar] | None = None,
                 evaluate_fn: Callable[[Arrays], dict[str, Scalar]] | None = None) -> None:
        self.initial_arrays = check_arrays(initial_arrays, "initial_arrays")
        self.config = {} if config is None else check_scalars(config, "config")
        self.evaluate_fn = None if evaluate_fn is None else check_callable(evaluate_fn, "evaluate_fn")

    def initialize(self) -> Arrays:
        return {k: v.copy() for k, v in self.initial_arrays.items()}

    def fit_config(self, server_round: int) -> dict[str, Scalar]:
        return {"round": check_scalar(server_round, "server_round", "int", min=0), **self.config}

    def validate_fit(self, server_round: int, arrays: Arrays, res: FitRes) -> None:
        _check_hook(server_round, arrays)
        check_instance(res, "res", FitRes)
        check_same_layout(arrays, res.arrays)

    def aggregate_fit(self, server_round, arrays, results, failures):
        _check_hook(server_round, arrays)
        results = _check_results(results, failures)
        new = weighted_average([(res.arrays, res.num_examples) for _, res in results])
        return new, {"clients": len(results), "examples": int(sum(res.num_examples for _, res in results))}

    def evaluate(self, server_round: int, arrays: Arrays) -> dict[str, Scalar]:
        _check_hook(server_round, arrays)
        return {} if self.evaluate_fn is None else dict(self.evaluate_fn(arrays))


class RoundFailedError(ValueError):
    """No client of a round returned a usable result (the message quotes the first client's error)."""


class _ReportedError(Exception):
    """A client's error reported by a remote transport, its text already "<type>: <message>"."""


#: A transport takes a round number and an iterator of ``(client id, FitIns)`` (each ``FitIns``
#: already went through the ledger) and yields ``(client id, FitRes or the exception)`` in the
#: same order; it may stop consuming when the caller stops iterating.
Transport = Callable[[int, Iterator[tuple[int, FitIns]]], Iterator[tuple[int, "FitRes | BaseException"]]]


def run_rounds(ids: Sequence[int], strategy: Strategy, rounds: int, transport: Transport,
               clients_per_round: int | None = None, seed: Seed = 0, on_failure: str = "skip",
               ledger: CommunicationLedger | None = None) -> History:
    """The synchronous round loop shared by :func:`simulate` and the Flower adapter.

    ``transport`` carries the messages to the clients (see :data:`Transport`); everything else
    (sampling, the ledger, reply checks, failures, aggregation, evaluation) happens here, so an
    in-process run and a Flower run of the same strategy give the same history.
    """
    check_instance(strategy, "strategy", Strategy, "an icml25.federated.Strategy")
    check_choice(on_failure, "on_failure", ("skip", "stop"))
    rounds = check_scalar(rounds, "rounds", "int", min=1)
    ids = list(ids)
    if not ids:
        raise ValueError("clients must hold at least one client, got none")
    if clients_per_round is not None:
        check_scalar(clients_per_round, "clients_per_round", "int", min=1, max=len(ids))
    rng = as_generator(seed)
    history = History(arrays=check_arrays(strategy.initialize(), "initial arrays"),
                      ledger=ledger if ledger is not None else CommunicationLedger())
    for server_round in range(1, rounds + 1):
        sampled = [ids[i] for i in sample_clients(len(ids), clients_per_round, rng)]
        instructions = strategy.configure_fit(server_round, history.arrays, sampled)
        arrays = history.arrays

        def sent(server_round=server_round, instructions=instructions):
            for cid, ins in instructions.items():
                yield cid, FitIns(deserialize(history.ledger.record(server_round, cid, "down", ins.arrays)),
                                  dict(ins.config))

        results, failures, errors = [], [], []
        replies = transport(server_round, sent())
        for cid, reply in replies:
            try:
                if isinstance(reply, BaseException):
                    raise reply
                res = check_fit_res(reply)
                received = FitRes(deserialize(history.ledger.record(server_round, cid, "up", res.arrays)),
                                  int(res.num_examples), dict(res.metrics))
                strategy.validate_fit(server_round, arrays, received)
                results.append((cid, received))
            except Exception as exc:  # a client's fault is recorded with its id; the run decides what follows
                text = str(exc) if isinstance(exc, _ReportedError) else f"{type(exc).__name__}: {exc}"
                failures.append(ClientFailure(server_round, cid, text))
                errors.append(exc)
                if on_failure == "stop":
                    break
        if hasattr(replies, "close"):
            replies.close()
        if instructions and not results:
            first = failures[0] if failures else None
            detail = f"; first error, client {first.client}: {first.error}" if first else ""
            raise RoundFailedError(f"round {server_round}: no client returned a usable result "
                                   f"({len(failures)} of {len(instructions)} failed){detail}") from (
                errors[0] if errors else None)
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


def client_table(clients: object) -> dict[int, Client]:
    """``clients`` (a sequence, ids 0..n-1, or a mapping id -> client) as a dict, every entry checked."""
    if isinstance(clients, Mapping):
        table = dict(clients)
    elif isinstance(clients, Sequence) and not isinstance(clients, str | bytes):
        table = dict(enumerate(clients))
    else:
        raise TypeError(f"clients must be a sequence or a mapping of icml25.federated.Client, "
                        f"got {type(clients).__name__}")
    if not table:
        raise ValueError("clients must hold at least one client, got none")
    for cid, client in table.items():
        if isinstance(cid, bool) or not isinstance(cid, int | np.integer) or cid < 0:
            raise TypeError(f"clients: client ids must be integers >= 0, got {cid!r}")
        check_instance(client, f"clients[{cid}]", Client, "an icml25.federated.Client")
    return {int(cid): client for cid, client in table.items()}


def simulate(clients: Sequence[Client] | Mapping[int, Client], strategy: Strategy, rounds: int,
             clients_per_round: int | None = None, seed: Seed = 0,
             on_failure: str = "skip", ledger: CommunicationLedger | None = None) -> History:
    """Run ``rounds`` synchronous rounds of ``strategy`` over ``clients`` in this process.

    ``clients`` is a non-empty sequence (ids 0..n-1) or a mapping id -> client; ``clients_per_round``
    clients (1..n, all when None) are sampled per round with ``seed``.  ``on_failure`` is ``"skip"``
    (drop the failing client from the round and go on) or ``"stop"`` (end the run after the round's
    first failure, keeping the previous global arrays).  Every message goes through ``ledger``.

    Raises :class:`RoundFailedError` (a ``ValueError``) when no client of a round returns a usable
    result: the message quotes the first client's error.
    """
    table = client_table(clients)
    if ledger is not None:
        check_instance(ledger, "ledger", CommunicationLedger)

    def in_process(server_round, sent):
        for cid, ins in sent:
            try:
                reply = table[cid].fit(ins)
            except Exception as exc:  # reported by run_rounds as this client's failure
                reply = exc
            yield cid, reply

    return run_rounds(sorted(table), strategy, rounds, in_process, clients_per_round, seed, on_failure, ledger)
