"""Flower adapter (optional extra ``icml25[flower]``, flwr 1.x): any runtime client or strategy in Flower.

:func:`to_flower_client` wraps a :class:`~icml25.federated.simulation.Client` as a Flower
``NumPyClient``; :class:`FlowerStrategy` wraps a :class:`~icml25.federated.simulation.Strategy`
as a Flower ``Strategy``.  Flower's payloads are ordered lists of arrays, so the array names
travel in the config / metrics under :data:`NAMES_KEY` (a JSON list).  Flower serializes the
arrays itself; :class:`FlowerStrategy` records the bytes of Flower's own ``Parameters`` tensors in
a :class:`~icml25.federated.ledger.CommunicationLedger`-like list (``FlowerStrategy.bits``).

Example
-------
>>> import numpy as np
>>> from icml25.federated import FedAvg
>>> from icml25.federated.flower import FlowerStrategy
>>> strategy = FlowerStrategy(FedAvg({"w": np.zeros(3, np.float32)}), clients_per_round=2)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from icml25.federated.messages import EvaluateIns, FitIns, FitRes, MalformedMessageError, check_arrays, check_fit_res
from icml25.federated.simulation import Client, ClientFailure, Strategy
from icml25.utils.validation import check_choice, check_instance, check_scalar

__all__ = ["NAMES_KEY", "to_flower_client", "FlowerStrategy", "drive_in_process"]

NAMES_KEY = "icml25.names"


def _flwr():
    try:
        import flwr.client
        import flwr.common
        import flwr.server.client_proxy
        import flwr.server.strategy
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("the Flower adapter needs flwr 1.x: pip install 'icml25[flower]'") from exc
    return flwr


def _named(arrays: Sequence[np.ndarray], names_json: Any, what: str) -> dict[str, np.ndarray]:
    try:
        names = json.loads(names_json)
    except (TypeError, ValueError) as exc:
        raise MalformedMessageError(f"{what}: missing or unreadable {NAMES_KEY!r}") from exc
    if not isinstance(names, list) or len(names) != len(arrays):
        raise MalformedMessageError(f"{what}: {len(arrays)} arrays but names {names!r}")
    return check_arrays(dict(zip(names, arrays, strict=True)), what)


def to_flower_client(client: Client):
    """Wrap a runtime :class:`Client` as a ``flwr.client.NumPyClient`` (call ``.to_client()`` for Flower)."""
    flwr = _flwr()
    check_instance(client, "client", Client, "an icml25.federated.Client")

    class _Adapter(flwr.client.NumPyClient):
        def get_parameters(self, config):
            return []

        def fit(self, parameters, config):
            config = dict(config)
            arrays = _named(parameters, config.pop(NAMES_KEY, None), "fit parameters")
            res = check_fit_res(client.fit(FitIns(arrays, config)))
            names = list(res.arrays)
            return [res.arrays[n] for n in names], int(res.num_examples), {**res.metrics, NAMES_KEY: json.dumps(names)}

        def evaluate(self, parameters, config):
            config = dict(config)
            arrays = _named(parameters, config.pop(NAMES_KEY, None), "evaluate parameters")
            res = client.evaluate(EvaluateIns(arrays, config))
            return float(res.loss), int(res.num_examples), dict(res.metrics)

    return _Adapter()


def _cid(proxy, position: int) -> int:
    return int(proxy.cid) if str(proxy.cid).isdigit() else position


class FlowerStrategy:
    """A Flower ``Strategy`` running a runtime :class:`Strategy` (built lazily as a flwr subclass).

    ``clients_per_round`` clients are sampled by Flower's client manager each round (all available
    when None); ``on_failure`` is ``"skip"`` (aggregate the replies that arrived) or ``"stop"``
    (keep the previous global arrays for a round with any failure).  ``failures`` lists every
    :class:`ClientFailure`, ``bits`` the (round, direction, bits) of Flower's serialized tensors.
    """

    def __new__(cls, strategy: Strategy, clients_per_round: int | None = None, on_failure: str = "skip"):
        flwr = _flwr()
        check_instance(strategy, "strategy", Strategy, "an icml25.federated.Strategy")
        check_choice(on_failure, "on_failure", ("skip", "stop"))
        if clients_per_round is not None:
            clients_per_round = check_scalar(clients_per_round, "clients_per_round", "int", min=1)
        common = flwr.common

        class _FlowerStrategy(flwr.server.strategy.Strategy):
            def __init__(self) -> None:
                self.strategy, self.clients_per_round, self.on_failure = strategy, clients_per_round, on_failure
                self.arrays: dict[str, np.ndarray] = {}
                self.failures: list[ClientFailure] = []
                self.bits: list[tuple[int, str, int]] = []
                self.stopped: str | None = None

            def _parameters(self, arrays: Mapping[str, np.ndarray]):
                return common.ndarrays_to_parameters([arrays[n] for n in arrays])

            def initialize_parameters(self, client_manager):
                self.arrays = check_arrays(self.strategy.initialize(), "initial arrays")
                return self._parameters(self.arrays)

            def configure_fit(self, server_round, parameters, client_manager):
                self.arrays = dict(zip(self.arrays, common.parameters_to_ndarrays(parameters), strict=True))
                if self.stopped is not None:
                    return []
                n = self.clients_per_round or client_manager.num_available()
                proxies = client_manager.sample(num_clients=n, min_num_clients=n)
                by_id = {_cid(p, i): p for i, p in enumerate(proxies)}
                out = []
                for cid, ins in self.strategy.configure_fit(server_round, self.arrays, sorted(by_id)).items():
                    params = self._parameters(ins.arrays)
                    self.bits.append((server_round, "down", 8 * sum(len(t) for t in params.tensors)))
                    config = {**ins.config, NAMES_KEY: json.dumps(list(ins.arrays))}
                    out.append((by_id[cid], common.FitIns(params, config)))
                return out

            def aggregate_fit(self, server_round, results, failures):
                ok, lost = [], []
                for position, (proxy, fit_res) in enumerate(results):
                    cid = _cid(proxy, position)
                    try:
                        self.bits.append((server_round, "up", 8 * sum(len(t) for t in fit_res.parameters.tensors)))
                        metrics = dict(fit_res.metrics)
                        arrays = _named(common.parameters_to_ndarrays(fit_res.parameters),
                                        metrics.pop(NAMES_KEY, None), f"client {cid} reply")
                        res = check_fit_res(FitRes(arrays, int(fit_res.num_examples), metrics))
                        self.strategy.validate_fit(server_round, self.arrays, res)
                        ok.append((cid, res))
                    except MalformedMessageError as exc:
                        lost.append(ClientFailure(server_round, cid, f"MalformedMessageError: {exc}"))
                for position, failure in enumerate(failures):
                    proxy = failure[0] if isinstance(failure, tuple) else None
                    cid = _cid(proxy, position) if proxy is not None else -1
                    lost.append(ClientFailure(server_round, cid, repr(failure[1] if proxy is not None else failure)))
                self.failures += lost
                if (lost and self.on_failure == "stop") or not ok:
                    if lost and self.on_failure == "stop":
                        self.stopped = f"round {server_round}: client {lost[0].client} failed ({lost[0].error})"
                    return self._parameters(self.arrays), {"failures": len(lost)}
                self.arrays, metrics = self.strategy.aggregate_fit(server_round, self.arrays, ok, lost)
                self.arrays = check_arrays(self.arrays, "aggregated arrays")
                return self._parameters(self.arrays), {**metrics, "failures": len(lost)}

            def configure_evaluate(self, server_round, parameters, client_manager):
                return []

            def aggregate_evaluate(self, server_round, results, failures):
                return None, {}

            def evaluate(self, server_round, parameters):
                if server_round == 0:
                    return None
                arrays = dict(zip(self.arrays, common.parameters_to_ndarrays(parameters), strict=True))
                metrics = self.strategy.evaluate(server_round, arrays)
                return (float(metrics.get("loss", 0.0)), dict(metrics)) if metrics else None

        return _FlowerStrategy()


def drive_in_process(clients: Mapping[int, Client] | Sequence[Client], strategy, rounds: int) -> list[dict]:
    """Run ``rounds`` rounds through Flower's own client and strategy interfaces, in this process.

    ``strategy`` is a :class:`FlowerStrategy`; every client is wrapped with :func:`to_flower_client`
    and reached through a Flower ``ClientProxy`` registered with Flower's ``SimpleClientManager``.
    A client that raises becomes one of Flower's ``failures``.  This is a small synchronous driver
    for tests and debugging; deployments use Flower's own engine.  Returns per-round metrics.
    """
    flwr = _flwr()
    from flwr.server.client_manager import SimpleClientManager

    class _Proxy(flwr.server.client_proxy.ClientProxy):
        def __init__(self, cid: int, client: Client) -> None:
            super().__init__(str(cid))
            self.client = to_flower_client(client).to_client()

        def fit(self, ins, timeout, group_id):
            return self.client.fit(ins)

        def evaluate(self, ins, timeout, group_id):
            return self.client.evaluate(ins)

        def get_properties(self, ins, timeout, group_id):
            raise NotImplementedError

        def get_parameters(self, ins, timeout, group_id):
            raise NotImplementedError

        def reconnect(self, ins, timeout, group_id):
            raise NotImplementedError

    table = dict(clients) if isinstance(clients, Mapping) else dict(enumerate(clients))
    manager = SimpleClientManager()
    for cid, client in sorted(table.items()):
        manager.register(_Proxy(cid, client))
    parameters = strategy.initialize_parameters(manager)
    log = []
    for server_round in range(1, rounds + 1):
        results, failures = [], []
        for proxy, ins in strategy.configure_fit(server_round, parameters, manager):
            try:
                results.append((proxy, proxy.fit(ins, None, None)))
            except Exception as exc:  # Flower reports a client's exception as a failure
                failures.append((proxy, exc))
        parameters, fit_metrics = strategy.aggregate_fit(server_round, results, failures)
        evaluated = strategy.evaluate(server_round, parameters)
        log.append({"round": server_round, "fit": fit_metrics, "evaluate": evaluated[1] if evaluated else {}})
    return log
