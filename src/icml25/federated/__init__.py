"""Federated learning: one shared runtime (messages, ledger, simulator) and the federated papers.

The runtime is NumPy-only; :mod:`icml25.federated.torch_clients` adds PyTorch glue and
:mod:`icml25.federated.flower` an adapter to Flower (``icml25[flower]``).

Example
-------
>>> import numpy as np
>>> from icml25.federated import FedAvg, FitRes, Client, simulate
>>> class Shift(Client):
...     def __init__(self, c): self.c = c
...     def fit(self, ins): return FitRes({"w": ins.arrays["w"] + self.c}, num_examples=1)
>>> history = simulate([Shift(1.0), Shift(3.0)], FedAvg({"w": np.zeros(2, np.float32)}), rounds=2)
>>> history.arrays["w"].tolist(), history.ledger.total("up")
([4.0, 4.0], 256)
"""

from icml25.data.partition import dirichlet_partition
from icml25.federated.ledger import CommunicationLedger, LedgerEntry
from icml25.federated.messages import (
    EvaluateIns,
    EvaluateRes,
    FitIns,
    FitRes,
    MalformedMessageError,
    check_arrays,
    deserialize,
    pack_uint,
    payload_bits,
    serialize,
    unpack_uint,
)
from icml25.federated.simulation import (
    Client,
    ClientFailure,
    FedAvg,
    History,
    RoundFailedError,
    RoundRecord,
    Strategy,
    check_same_layout,
    sample_clients,
    simulate,
    weighted_average,
)

__all__ = [
    "dirichlet_partition", "CommunicationLedger", "LedgerEntry",
    "EvaluateIns", "EvaluateRes", "FitIns", "FitRes", "MalformedMessageError", "check_arrays", "deserialize",
    "pack_uint", "payload_bits", "serialize", "unpack_uint",
    "Client", "ClientFailure", "FedAvg", "History", "RoundFailedError", "RoundRecord", "Strategy", "check_same_layout",
    "sample_clients", "simulate", "weighted_average",
]
