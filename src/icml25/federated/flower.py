"""Flower adapter (optional extra ``icml25[flower]``): run any runtime strategy in Flower.

The Message API needs a Flower with ``flwr.app``, ``flwr.serverapp`` and ``flwr.clientapp``
(tested with flwr 1.42); the legacy wrappers use the older ``flwr.client`` / ``flwr.server`` API.

Message API (Flower's current ``ServerApp`` / ``ClientApp``)
-----------------------------------------------------------
:func:`client_app` turns ``client_fn(partition_id) -> Client`` into a Flower ``ClientApp``;
:class:`FlowerServer` runs a :class:`~icml25.federated.simulation.Strategy` as a Flower
``ServerApp`` with the same round loop as :func:`~icml25.federated.simulation.simulate`
(:func:`~icml25.federated.simulation.run_rounds`), so sampling, failures, the ledger and the
history are those of an in-process run.  :func:`run_flower_simulation` runs both in Flower's
simulation engine (``flwr.simulation.run_simulation``, Ray backend) and returns the
:class:`~icml25.federated.simulation.History`.

Flower names its nodes with random 64-bit ids; the methods see client ids ``0..n-1`` (or the
ids of a mapping given to :func:`run_flower_simulation`).  Before round 1 the server asks every
node for its ``partition-id`` (Flower's node config, set by the simulation engine or by
``flower-supernode --node-config "partition-id=3"``) and maps client ``i`` to the node holding
partition ``i``.  A client object lives on its node between rounds: the ``ClientApp`` keeps it
(cloudpickled) in the node's ``Context.state``, so stateful clients behave as in ``simulate``.
Arrays travel as Flower ``ArrayRecord``s (names, dtypes and shapes kept, 0-d included); the
history's ledger counts the runtime's own serialization of the same arrays, so its bits equal
those of ``simulate``.

Legacy API (flwr's ``NumPyClient`` / ``Strategy``)
--------------------------------------------------
:func:`to_flower_client` and :class:`FlowerStrategy` wrap a client / strategy for Flower's
legacy interfaces, and :func:`drive_in_process` drives them synchronously in this process.

Example
-------
>>> import numpy as np
>>> from icml25.federated import FedAvg
>>> from icml25.federated.flower import FlowerServer, client_app
>>> server = FlowerServer(FedAvg({"w": np.zeros(3, np.float32)}), rounds=2, n_clients=2)
>>> server.history is None       # filled in by the ServerApp's run
True
"""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from icml25.federated.ledger import CommunicationLedger
from icml25.federated.messages import (
    EvaluateIns,
    FitIns,
    FitRes,
    MalformedMessageError,
    check_arrays,
    check_fit_res,
)
from icml25.federated.simulation import (
    Client,
    ClientFailure,
    History,
    Strategy,
    _ReportedError,
    client_table,
    run_rounds,
)
from icml25.utils.random import Seed, check_seed
from icml25.utils.validation import (
    check_bool,
    check_callable,
    check_choice,
    check_instance,
    check_scalar,
    check_sequence,
)

__all__ = ["NAMES_KEY", "client_app", "FlowerServer", "run_flower_simulation",
           "to_flower_client", "FlowerStrategy", "drive_in_process"]

NAMES_KEY = "icml25.names"
_STATE_KEY = "icml25.client"


def _message_api():
    try:
        import flwr.app
        import flwr.clientapp
        import flwr.serverapp
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("the Flower Message API adapter needs a flwr with flwr.app, flwr.serverapp and "
                          "flwr.clientapp (tested with 1.42): pip install -U 'icml25[flower]'") from exc
    return flwr


def _array_record(arrays: Mapping[str, np.ndarray]):
    app = _message_api().app
    return app.ArrayRecord({name: app.Array(np.asarray(value)) for name, value in arrays.items()})


def _config_record(values: Mapping[str, Any]):
    # NumPy scalars become Python scalars: Flower's records take bool, int, float, str and bytes
    return _message_api().app.ConfigRecord({k: v.item() if isinstance(v, np.generic) else v
                                            for k, v in values.items()})


def _dumps(client: Client) -> bytes:
    try:
        import cloudpickle
    except ImportError:  # pragma: no cover - cloudpickle comes with Ray
        return pickle.dumps(client)
    return cloudpickle.dumps(client)


def _node_client(context, client_fn: Callable[[int], Client]) -> Client:
    if _STATE_KEY in context.state:
        return pickle.loads(context.state[_STATE_KEY]["client"])
    if "partition-id" not in context.node_config:
        raise ValueError("the node config has no 'partition-id' (start the SuperNode with "
                         "--node-config 'partition-id=<i>')")
    partition = int(context.node_config["partition-id"])
    return check_instance(client_fn(partition), f"client_fn({partition})", Client, "an icml25.federated.Client")


def client_app(client_fn: Callable[[int], Client]):
    """A Flower ``ClientApp`` serving ``client_fn(partition_id)`` (a runtime :class:`Client`).

    ``client_fn`` is called once per node with the node's ``partition-id``; the client then stays
    in the node's ``Context.state`` between messages.  Handles ``query`` (replies the partition
    id) and ``train`` (``Client.fit``), the messages of the runtime's round loop (which evaluates on
    the server, as :func:`~icml25.federated.simulation.simulate` does).  A client that raises
    or replies with a malformed ``FitRes`` answers with the error text instead of arrays.
    """
    flwr = _message_api()
    check_callable(client_fn, "client_fn")
    app_types = flwr.app
    app = flwr.clientapp.ClientApp()

    def reply(msg, records):
        return app_types.Message(app_types.RecordDict(records), reply_to=msg)

    @app.query()
    def query(msg, context):
        partition = context.node_config.get("partition-id", -1)
        return reply(msg, {"node": app_types.ConfigRecord({"partition-id": int(partition)})})

    @app.train()
    def train(msg, context):
        client = None
        try:
            client = _node_client(context, client_fn)
            arrays = {name: a.numpy() for name, a in msg.content["arrays"].items()}
            res = check_fit_res(client.fit(FitIns(arrays, dict(msg.content["config"]))))
            records = {"arrays": _array_record(res.arrays), "metrics": _config_record(res.metrics),
                       "reply": app_types.ConfigRecord({"num_examples": int(res.num_examples)})}
        except Exception as exc:  # the client's error goes back to the server as its reply
            records = {"error": app_types.ConfigRecord({"error": f"{type(exc).__name__}: {exc}"})}
        finally:
            if client is not None:  # the client, changed by fit, stays on its node for the next round
                context.state[_STATE_KEY] = app_types.ConfigRecord({"client": _dumps(client)})
        return reply(msg, records)

    return app


class FlowerServer:
    """A runtime :class:`Strategy` as a Flower ``ServerApp`` (``server.app()``), Message API.

    Parameters
    ----------
    strategy : Strategy
        The server-side logic of the method.
    rounds : int >= 1
        Rounds to run.
    n_clients : int >= 1
        Nodes to wait for; node ``partition-id`` ``i`` serves client ``client_ids[i]``.
    clients_per_round, seed, on_failure, ledger
        As in :func:`~icml25.federated.simulation.simulate`.
    client_ids : sequence of n_clients distinct ints, optional
        The ids the strategy sees (default ``0..n_clients-1``).
    timeout : float > 0
        Seconds to wait for the nodes to connect and for each round's replies.

    After the run, ``history`` holds the :class:`History` and ``nodes`` the client id -> Flower node id map.
    """

    def __init__(self, strategy: Strategy, rounds: int, n_clients: int, clients_per_round: int | None = None,
                 seed: Seed = 0, on_failure: str = "skip", ledger: CommunicationLedger | None = None,
                 client_ids: Sequence[int] | None = None, timeout: float = 600.0) -> None:
        self.strategy = check_instance(strategy, "strategy", Strategy, "an icml25.federated.Strategy")
        self.rounds = check_scalar(rounds, "rounds", "int", min=1)
        self.n_clients = check_scalar(n_clients, "n_clients", "int", min=1)
        if clients_per_round is not None:
            clients_per_round = check_scalar(clients_per_round, "clients_per_round", "int", min=1, max=n_clients)
        self.clients_per_round, self.seed = clients_per_round, check_seed(seed)
        self.on_failure = check_choice(on_failure, "on_failure", ("skip", "stop"))
        if ledger is not None:
            check_instance(ledger, "ledger", CommunicationLedger)
        self.ledger = ledger
        if client_ids is None:
            client_ids = range(n_clients)
        ids = check_sequence(client_ids, "client_ids", item=lambda c, name: check_scalar(c, name, "int", min=0))
        if len(ids) != n_clients or len(set(ids)) != n_clients:
            raise ValueError(f"client_ids must be {n_clients} distinct ints >= 0 (n_clients), got {ids!r}")
        self.client_ids = ids
        self.timeout = check_scalar(timeout, "timeout", "real", min=0.0, inclusive="neither")
        self.history: History | None = None
        self.nodes: dict[int, int] = {}

    def app(self):
        """The Flower ``ServerApp`` whose ``main`` is :meth:`main`."""
        flwr = _message_api()
        app = flwr.serverapp.ServerApp()
        app.main()(self.main)
        return app

    def _map_nodes(self, grid) -> dict[int, int]:
        app = _message_api().app
        deadline = time.monotonic() + self.timeout
        while len(node_ids := sorted(grid.get_node_ids())) < self.n_clients:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(node_ids)} of n_clients={self.n_clients} Flower nodes connected "
                                   f"within timeout={self.timeout} s")
            time.sleep(0.05)
        queries = [app.Message(app.RecordDict({}), dst_node_id=node, message_type="query") for node in node_ids]
        partition_of: dict[int, int] = {}
        for msg in grid.send_and_receive(queries, timeout=self.timeout):
            node = msg.metadata.src_node_id
            if msg.has_error():
                raise ValueError(f"Flower node {node} did not answer the partition query: {msg.error.reason}")
            partition_of[node] = int(msg.content["node"]["partition-id"])
        by_partition = {p: node for node, p in partition_of.items()}
        missing = [i for i in range(self.n_clients) if i not in by_partition]
        if missing or len(by_partition) != len(partition_of):
            raise ValueError(f"Flower nodes must hold the partitions 0..{self.n_clients - 1} once each; "
                             f"node -> partition-id: {partition_of}")
        return {cid: by_partition[i] for i, cid in enumerate(self.client_ids)}

    def main(self, grid, context) -> None:
        """The ServerApp's main: map nodes to client ids, then run the rounds over ``grid``."""
        app = _message_api().app
        self.nodes = self._map_nodes(grid)

        def transport(server_round: int, sent: Iterator[tuple[int, FitIns]]):
            sent = list(sent)
            messages = [app.Message(app.RecordDict({"arrays": _array_record(ins.arrays),
                                                    "config": _config_record(ins.config)}),
                                    dst_node_id=self.nodes[cid], message_type="train") for cid, ins in sent]
            replies = {m.metadata.src_node_id: m for m in grid.send_and_receive(messages, timeout=self.timeout)}
            for cid, _ in sent:
                try:
                    reply = _fit_reply(replies.get(self.nodes[cid]), self.nodes[cid], self.timeout)
                except Exception as exc:  # an unreadable reply is this client's failure
                    reply = exc
                yield cid, reply

        self.history = run_rounds(self.client_ids, self.strategy, self.rounds, transport, self.clients_per_round,
                                  self.seed, self.on_failure, self.ledger)


def _fit_reply(msg, node: int, timeout: float) -> FitRes | BaseException:
    if msg is None:
        return TimeoutError(f"Flower node {node} sent no reply within {timeout} s")
    if msg.has_error():
        return RuntimeError(f"Flower node {node} reported error {msg.error.code}: {msg.error.reason}")
    if "error" in msg.content:
        return _ReportedError(msg.content["error"]["error"])
    arrays = {name: a.numpy() for name, a in msg.content["arrays"].items()}
    return FitRes(arrays, int(msg.content["reply"]["num_examples"]), dict(msg.content["metrics"]))


class _Partitions:
    """``client_fn`` of :func:`run_flower_simulation`: partition ``i`` is the i-th client."""

    def __init__(self, clients: Sequence[Client]) -> None:
        self.clients = list(clients)

    def __call__(self, partition_id: int) -> Client:
        return self.clients[partition_id]


def run_flower_simulation(clients: Sequence[Client] | Mapping[int, Client], strategy: Strategy, rounds: int,
                          clients_per_round: int | None = None, seed: Seed = 0, on_failure: str = "skip",
                          ledger: CommunicationLedger | None = None, num_cpus: int = 2,
                          timeout: float = 600.0, verbose: bool = False) -> History:
    """:func:`~icml25.federated.simulation.simulate`, but through Flower's engine (``ServerApp``,
    ``ClientApp``, ``flwr.simulation.run_simulation`` on Ray, one virtual node per client).

    Arguments as in ``simulate``; ``num_cpus`` (int >= 1) is the Ray cluster size (one CPU per
    client app), ``timeout`` (seconds > 0) bounds the wait for nodes and replies, ``verbose``
    turns on Flower's debug log.  Ray is started for the run and shut down at its end.  Returns
    the same :class:`History` as ``simulate`` for a deterministic method.
    """
    table = client_table(clients)
    check_instance(strategy, "strategy", Strategy, "an icml25.federated.Strategy")
    num_cpus = check_scalar(num_cpus, "num_cpus", "int", min=1)
    verbose = check_bool(verbose, "verbose")
    ids = sorted(table)
    server = FlowerServer(strategy, rounds, len(ids), clients_per_round, seed, on_failure, ledger, ids, timeout)
    from flwr.simulation import run_simulation

    backend_config = {"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                      "init_args": {"num_cpus": num_cpus, "include_dashboard": False, "log_to_driver": verbose}}
    run_simulation(server.app(), client_app(_Partitions([table[i] for i in ids])), num_supernodes=len(ids),
                   backend_name="ray", backend_config=backend_config, verbose_logging=verbose)
    if server.history is None:  # pragma: no cover - Flower ended the run without running the ServerApp
        raise RuntimeError("Flower's simulation ended before the ServerApp ran")
    return server.history



# --- legacy API: flwr's NumPyClient / Strategy --------------------------------------------------------------

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


def _partitions(proxies) -> dict[str, int]:
    """Flower client ids -> ``0..n-1``: kept when they already are ``0..n-1``, else by sorted node id.

    Flower's engine names clients with random 64-bit node ids; the strategies index per-client
    state by ``0..n-1`` ids.
    """
    cids = sorted({str(p.cid) for p in proxies}, key=lambda c: (not c.isdigit(), int(c) if c.isdigit() else 0, c))
    if all(c.isdigit() for c in cids) and sorted(int(c) for c in cids) == list(range(len(cids))):
        return {c: int(c) for c in cids}
    return {c: i for i, c in enumerate(cids)}


class FlowerStrategy:
    """A Flower ``Strategy`` running a runtime :class:`Strategy` (built lazily as a flwr subclass).

    ``clients_per_round`` clients are sampled by Flower's client manager each round (all available
    when None); ``on_failure`` is ``"skip"`` (aggregate the replies that arrived) or ``"stop"``
    (keep the previous global arrays for a round with any failure).  ``failures`` lists every
    :class:`ClientFailure`, ``bits`` the (round, direction, bits) of Flower's serialized tensors.
    Flower's client ids are mapped to ``0..n-1`` (``partition_of``): kept when they already are,
    else in sorted node-id order (Flower's engine uses random 64-bit node ids).
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
                self.partition_of: dict[str, int] = {}

            def _cid(self, proxy) -> int:
                if str(proxy.cid) not in self.partition_of:  # a node that joined after round 1
                    self.partition_of[str(proxy.cid)] = len(self.partition_of)
                return self.partition_of[str(proxy.cid)]

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
                if not self.partition_of:
                    self.partition_of = _partitions(client_manager.all().values())
                proxies = client_manager.sample(num_clients=n, min_num_clients=n)
                by_id = {self._cid(p): p for p in proxies}
                out = []
                for cid, ins in self.strategy.configure_fit(server_round, self.arrays, sorted(by_id)).items():
                    params = self._parameters(ins.arrays)
                    self.bits.append((server_round, "down", 8 * sum(len(t) for t in params.tensors)))
                    config = {**ins.config, NAMES_KEY: json.dumps(list(ins.arrays))}
                    out.append((by_id[cid], common.FitIns(params, config)))
                return out

            def aggregate_fit(self, server_round, results, failures):
                ok, lost = [], []
                for proxy, fit_res in results:
                    cid = self._cid(proxy)
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
                for failure in failures:
                    proxy = failure[0] if isinstance(failure, tuple) else None
                    cid = self._cid(proxy) if proxy is not None else -1
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
