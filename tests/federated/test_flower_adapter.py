import numpy as np
import pytest

pytest.importorskip("flwr")

from icml25.federated import Client, FedAvg, FitRes, simulate  # noqa: E402
from icml25.federated.flower import FlowerStrategy, drive_in_process, to_flower_client  # noqa: E402


class Shift(Client):
    def __init__(self, c, n=1):
        self.c, self.n = c, n

    def fit(self, ins):
        return FitRes({"w": ins.arrays["w"] + self.c, "b": ins.arrays["b"] * 0 + self.n}, self.n)


def initial():
    return {"w": np.zeros(3, np.float32), "b": np.zeros(1, np.float32)}


def test_flower_rounds_match_the_simulator():
    clients = [Shift(1.0, 1), Shift(2.0, 3)]
    strategy = FlowerStrategy(FedAvg(initial()))
    drive_in_process(clients, strategy, rounds=3)
    reference = simulate(clients, FedAvg(initial()), rounds=3)
    for name in ("w", "b"):
        np.testing.assert_allclose(strategy.arrays[name], reference.arrays[name])
    down = sum(b for _, d, b in strategy.bits if d == "down")
    assert down >= reference.ledger.total("down")


def test_flower_reports_failing_and_malformed_clients():
    class Raises(Client):
        def fit(self, ins):
            raise RuntimeError("client crashed")

    class WrongShape(Client):
        def fit(self, ins):
            return FitRes({"w": np.zeros(5, np.float32), "b": ins.arrays["b"]}, 1)

    strategy = FlowerStrategy(FedAvg(initial()))
    log = drive_in_process([Shift(1.0), Raises(), WrongShape()], strategy, rounds=2)
    assert [f.client for f in strategy.failures] == [2, 1, 2, 1]
    assert "shape" in strategy.failures[0].error and "client crashed" in strategy.failures[1].error
    assert log[-1]["fit"]["failures"] == 2
    np.testing.assert_allclose(strategy.arrays["w"], [2.0, 2.0, 2.0])

    stopping = FlowerStrategy(FedAvg(initial()), on_failure="stop")
    drive_in_process([Shift(1.0), Raises()], stopping, rounds=3)
    assert stopping.stopped.startswith("round 1: client 1")
    np.testing.assert_allclose(stopping.arrays["w"], [0.0, 0.0, 0.0])


def test_adapter_rejects_wrong_types():
    with pytest.raises(TypeError, match="Client"):
        to_flower_client(object())
    with pytest.raises(TypeError, match="Strategy"):
        FlowerStrategy(object())
    with pytest.raises(ValueError, match="on_failure"):
        FlowerStrategy(FedAvg(initial()), on_failure="retry")
