"""Valid calls of the federated runtime (``icml25.federated``: messages, ledger, simulator, FedAvg).

The papers built on it (GHOST, CAN, Ferret, LBI-FL) register their own names elsewhere.
"""

import numpy as np

from api_examples._core import Example, Exempt
from icml25 import federated as fed


def _w(n=2):
    return {"w": np.zeros(n, np.float32)}


class _Shift(fed.Client):
    def fit(self, ins):
        return fed.FitRes({"w": ins.arrays["w"] + 1.0}, 1)


def _fedavg():
    return fed.FedAvg(_w())


def _history():
    return fed.simulate([_Shift(), _Shift()], fed.FedAvg(_w(), evaluate_fn=lambda a: {"acc": float(a["w"][0])}),
                        rounds=2)


def _accuracy(arrays):
    return {"acc": float(arrays["w"].sum())}


_LABEL = {"what": "a free-text label used in messages"}

EXAMPLES = {
    "icml25.federated.Client": Exempt("abstract"),
    "icml25.federated.Client.fit": Exempt("abstract"),
    "icml25.federated.Client.evaluate": Exempt("abstract"),
    "icml25.federated.Strategy": Exempt("abstract"),
    "icml25.federated.ClientFailure": Exempt("record"),
    "icml25.federated.LedgerEntry": Exempt("record"),
    "icml25.federated.RoundRecord": Exempt("record"),
    "icml25.federated.History": Exempt("record"),
    "icml25.federated.History.curve": Example(lambda **kw: _history().curve(**kw), {"metric": "acc"}),
    "icml25.federated.CommunicationLedger": Example(fed.CommunicationLedger, lambda: {"entries": []},
                                                    allow={"entries": "empty"}),
    "icml25.federated.CommunicationLedger.record": Example(
        lambda **kw: fed.CommunicationLedger().record(**kw),
        lambda: {"round": 1, "client": 0, "direction": "up", "arrays": _w()}),
    "icml25.federated.CommunicationLedger.total": Example(
        lambda **kw: fed.CommunicationLedger().total(**kw), {"direction": "up", "kind": "message"}),
    "icml25.federated.CommunicationLedger.per_round": Example(
        lambda **kw: fed.CommunicationLedger().per_round(**kw), {"direction": "down", "kind": "payload"}),
    "icml25.federated.FitIns": Example(fed.FitIns, lambda: {"arrays": _w(), "config": {"round": 1}}),
    "icml25.federated.FitRes": Example(fed.FitRes, lambda: {"arrays": _w(), "num_examples": 3,
                                                            "metrics": {"loss": 0.5}}),
    "icml25.federated.EvaluateIns": Example(fed.EvaluateIns, lambda: {"arrays": _w(), "config": {"round": 1}}),
    "icml25.federated.EvaluateRes": Example(fed.EvaluateRes, lambda: {"loss": 0.5, "num_examples": 3,
                                                                      "metrics": {"accuracy": 0.9}}),
    "icml25.federated.FedAvg": Example(fed.FedAvg, lambda: {"initial_arrays": _w(), "config": {"lr": 0.1},
                                                            "evaluate_fn": _accuracy}),
    "icml25.federated.FedAvg.fit_config": Example(lambda **kw: _fedavg().fit_config(**kw), {"server_round": 1}),
    "icml25.federated.FedAvg.configure_fit": Example(
        lambda **kw: _fedavg().configure_fit(**kw), lambda: {"server_round": 1, "arrays": _w(), "clients": [0, 1]},
        allow={"clients": "empty"}),
    "icml25.federated.FedAvg.validate_fit": Example(
        lambda **kw: _fedavg().validate_fit(**kw),
        lambda: {"server_round": 1, "arrays": _w(), "res": fed.FitRes(_w(), 1)}),
    "icml25.federated.FedAvg.aggregate_fit": Example(
        lambda **kw: _fedavg().aggregate_fit(**kw),
        lambda: {"server_round": 1, "arrays": _w(), "results": [(0, fed.FitRes(_w(), 1)), (1, fed.FitRes(_w(), 2))],
                 "failures": [fed.ClientFailure(1, 2, "RuntimeError: x")]},
        allow={"failures": "empty"}),
    "icml25.federated.FedAvg.evaluate": Example(
        lambda **kw: fed.FedAvg(_w(), evaluate_fn=_accuracy).evaluate(**kw), lambda: {"server_round": 1,
                                                                                     "arrays": _w()}),
    "icml25.federated.check_arrays": Example(fed.check_arrays, lambda: {"arrays": _w()}, skip=_LABEL),
    "icml25.federated.check_same_layout": Example(fed.check_same_layout,
                                                  lambda: {"reference": _w(), "arrays": _w()}),
    "icml25.federated.serialize": Example(fed.serialize, lambda: {"arrays": _w()}),
    "icml25.federated.deserialize": Example(fed.deserialize, lambda: {"blob": fed.serialize(_w())}),
    "icml25.federated.payload_bits": Example(fed.payload_bits, lambda: {"arrays": _w()}),
    "icml25.federated.pack_uint": Example(fed.pack_uint, lambda: {"values": np.array([1, 3, 0, 2]), "bits": 2},
                                          positive=("bits",),
                                          allow={"values": ("empty", "ndim")}),
    "icml25.federated.unpack_uint": Example(
        fed.unpack_uint, lambda: {"packed": fed.pack_uint(np.array([1, 3, 0, 2]), 2), "bits": 2, "count": 4},
        positive=("bits",)),
    "icml25.federated.sample_clients": Example(fed.sample_clients, {"n_clients": 4, "n_sampled": 2, "seed": 0},
                                               positive=("n_clients", "n_sampled"), allow={"n_sampled": "none"},
                                               labels={"n_sampled": "clients_per_round"}),
    "icml25.federated.weighted_average": Example(
        fed.weighted_average, lambda: {"items": [(_w(), 1.0), ({"w": np.ones(2, np.float32)}, 3.0)]}),
    "icml25.federated.simulate": Example(
        fed.simulate, lambda: {"clients": [_Shift(), _Shift()], "strategy": _fedavg(), "rounds": 2,
                               "clients_per_round": 1, "seed": 0, "on_failure": "skip",
                               "ledger": fed.CommunicationLedger()},
        positive=("rounds", "clients_per_round")),
}
