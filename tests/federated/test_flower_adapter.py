import os
import time

import numpy as np
import pytest

pytest.importorskip("flwr")

from icml25.federated import Client, FedAvg, FitRes, RoundFailedError, simulate  # noqa: E402
from icml25.federated.flower import (  # noqa: E402
    FlowerServer,
    FlowerStrategy,
    client_app,
    drive_in_process,
    run_flower_simulation,
    to_flower_client,
)


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


# --- Flower's current Message API: ServerApp / ClientApp through flwr.simulation.run_simulation ------------------

def _descendants() -> list[str]:
    """Command lines of the processes below this one (Ray's raylet, GCS and workers would show up here)."""
    parents, commands = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    commands[int(entry)] = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
    mine, out = os.getpid(), []
    for pid in parents:
        p, seen = pid, set()
        while p in parents and p not in seen and p > 1:
            seen.add(p)
            p = parents[p]
            if p == mine:
                out.append(commands.get(pid, ""))
                break
    return out


@pytest.fixture
def no_process_left():
    """The test's Flower run must stop every process it started (Ray included)."""
    pytest.importorskip("ray")
    before = set(_descendants())
    yield
    deadline = time.monotonic() + 20
    while (left := [c for c in _descendants() if c not in before and "ray" in c]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left == []
    import ray
    assert not ray.is_initialized()


def _same_history(flower, reference):
    assert set(flower.arrays) == set(reference.arrays)
    for name, value in reference.arrays.items():
        assert flower.arrays[name].shape == value.shape and flower.arrays[name].dtype == value.dtype
        np.testing.assert_array_equal(flower.arrays[name], value)
    assert flower.rounds == reference.rounds and flower.stopped == reference.stopped
    # the same messages; Flower sends a round's messages before the replies come back, simulate one by one
    order = lambda e: (e.round, e.direction, e.client)  # noqa: E731
    assert sorted(flower.ledger.entries, key=order) == sorted(reference.ledger.entries, key=order)
    assert flower.ledger.summary() == reference.ledger.summary()


class Counting(Client):
    """A stateful client with a 0-d parameter: its reply depends on how often it was called."""

    def __init__(self, c, n=1):
        self.c, self.n, self.calls = c, n, 0

    def fit(self, ins):
        self.calls += 1
        return FitRes({"w": ins.arrays["w"] + self.c * self.calls, "b": np.asarray(ins.arrays["b"] + 1, np.float32)},
                      self.n, {"calls": self.calls, "name": f"c{self.c}"})


class Raises(Client):
    def fit(self, ins):
        raise RuntimeError("client crashed")


class WrongShape(Client):
    def fit(self, ins):
        return FitRes({"w": np.zeros(5, np.float32), "b": ins.arrays["b"]}, 1)


def scalar_initial():
    return {"w": np.zeros(3, np.float32), "b": np.array(0.0, np.float32)}


def test_message_api_run_equals_simulate_with_state_failures_and_ids(no_process_left):
    def make():
        return {3: Counting(1.0, 1), 5: Raises(), 8: Counting(2.0, 3), 9: WrongShape()}

    reference = simulate(make(), FedAvg(scalar_initial()), rounds=2, clients_per_round=3, seed=1)
    flower = run_flower_simulation(make(), FedAvg(scalar_initial()), rounds=2, clients_per_round=3, seed=1,
                                   num_cpus=1)
    _same_history(flower, reference)
    assert flower.arrays["b"].shape == () and {f.error for f in flower.failures} >= {"RuntimeError: client crashed"}


def test_message_api_raises_when_every_client_fails(no_process_left):
    with pytest.raises(RoundFailedError, match="round 1: no client .*client 0: RuntimeError: client crashed"):
        run_flower_simulation([Raises(), Raises()], FedAvg(scalar_initial()), rounds=2, num_cpus=1)


class _Reply:
    def __init__(self, node, partition):
        self.metadata = type("M", (), {"src_node_id": node})()
        self.content = {"node": {"partition-id": partition}}

    def has_error(self):
        return False


class _Grid:
    """A stand-in for Flower's Grid: nodes with random 64-bit ids, partition ids in another order."""

    def __init__(self, partitions):
        self.partitions = partitions

    def get_node_ids(self):
        return list(self.partitions)

    def send_and_receive(self, messages, timeout=None):
        return [_Reply(m.metadata.dst_node_id, self.partitions[m.metadata.dst_node_id]) for m in messages]


def test_flower_node_ids_are_mapped_to_partition_indices():
    # regression: int(proxy.cid) took Flower's random node ids (e.g. 9547092095284888324) as client ids
    grid = _Grid({9547092095284888324: 1, 17269230285754433909: 0, 42: 2})
    server = FlowerServer(FedAvg(scalar_initial()), rounds=1, n_clients=3, client_ids=[10, 20, 30])
    assert server._map_nodes(grid) == {10: 17269230285754433909, 20: 9547092095284888324, 30: 42}
    with pytest.raises(ValueError, match="partitions 0..2"):
        FlowerServer(FedAvg(scalar_initial()), rounds=1, n_clients=3)._map_nodes(_Grid({7: 0, 8: 0, 9: 1}))
    with pytest.raises(TimeoutError, match="n_clients=4"):
        FlowerServer(FedAvg(scalar_initial()), rounds=1, n_clients=4, timeout=0.2)._map_nodes(grid)


def test_legacy_strategy_maps_random_node_ids_to_client_indices():
    # regression: LBI-FL's strategy keeps per-client state for ids 0..n-1 and rejected Flower's node ids
    torch = pytest.importorskip("torch")
    from icml25.federated.lbi_fl import LBIFLClient, LBIFLStrategy, TeacherSchedulePolicy
    from icml25.federated.torch_clients import module_to_arrays
    from icml25.utils.nn import make_mlp

    gen = torch.Generator().manual_seed(0)
    X = torch.randn(40, 8, generator=gen)
    y = (X[:, 0] > 0).long()
    model_fn = lambda: make_mlp([8, 4, 2], seed=0)  # noqa: E731
    clients = {9547092095284888324: LBIFLClient(model_fn, X[:20], y[:20]),
               17269230285754433909: LBIFLClient(model_fn, X[20:], y[20:])}
    strategy = FlowerStrategy(LBIFLStrategy(module_to_arrays(model_fn()), TeacherSchedulePolicy(), 2, 2))
    drive_in_process(clients, strategy, rounds=1)
    assert strategy.failures == [] and strategy.partition_of == {"9547092095284888324": 0,
                                                                 "17269230285754433909": 1}


def test_message_api_rejects_bad_arguments():
    with pytest.raises(TypeError, match="client_fn"):
        client_app("not callable")
    with pytest.raises(TypeError, match="strategy"):
        FlowerServer(object(), rounds=1, n_clients=2)
    with pytest.raises(ValueError, match="rounds"):
        FlowerServer(FedAvg(scalar_initial()), rounds=0, n_clients=2)
    with pytest.raises(ValueError, match="client_ids"):
        FlowerServer(FedAvg(scalar_initial()), rounds=1, n_clients=2, client_ids=[1, 1])
    with pytest.raises(ValueError, match="clients_per_round"):
        FlowerServer(FedAvg(scalar_initial()), rounds=1, n_clients=2, clients_per_round=3)
    with pytest.raises(TypeError, match=r"clients\[0\]"):
        run_flower_simulation([object()], FedAvg(scalar_initial()), rounds=1)
    with pytest.raises(ValueError, match="timeout"):
        run_flower_simulation([Counting(1.0)], FedAvg(scalar_initial()), rounds=1, timeout=0)


# --- every federated paper through Flower's engine, smoke scale (2 clients, 1-2 rounds) ---------------------------

def _flower_equals_simulate(build, rounds_of=lambda strategy: 2):
    """``build()`` -> (clients, strategy): the Flower run's history equals simulate's, exactly."""
    clients, strategy = build()
    reference = simulate(clients, strategy, rounds=rounds_of(strategy))
    clients, flower_strategy = build()
    flower = run_flower_simulation(clients, flower_strategy, rounds=rounds_of(flower_strategy), num_cpus=1)
    assert reference.failures == [] and flower.failures == []
    _same_history(flower, reference)
    return flower_strategy, strategy


def test_ghost_runs_through_flower_like_simulate(no_process_left):
    pytest.importorskip("torch")
    from icml25.data.graphs import make_csbm
    from icml25.federated.ghost import GhostClient, GhostStrategy, split_graph

    graph = make_csbm(60, n_classes=3, n_features=8, avg_degree=5, homophily=0.9, class_sep=4.0, seed=0)
    parts, _, _, _ = split_graph(graph, 2, alpha=1.0, seed=0)

    def build():
        return [GhostClient(g, gen_epochs=2, seed=i) for i, g in enumerate(parts)], GhostStrategy(8, 3, hidden=8,
                                                                                                  seed=0)

    _flower_equals_simulate(build, lambda strategy: 1)


def test_ferret_runs_through_flower_like_simulate(no_process_left):
    torch = pytest.importorskip("torch")
    from icml25.federated.ferret import Ferret, FerretClient
    from icml25.utils.nn import make_mlp

    def model_fn():
        return make_mlp([4, 8, 3], seed=0)

    gen = torch.Generator().manual_seed(0)
    X, y = torch.randn(32, 4, generator=gen), torch.randint(0, 3, (32,), generator=gen)

    def build():
        clients = [FerretClient(model_fn, X[i::2], y[i::2], K=8, lr=0.1, local_steps=2, batch_size=8, seed=i)
                   for i in range(2)]
        return clients, Ferret(model_fn(), K=8, server_lr=0.5)

    _flower_equals_simulate(build)


def test_lbi_fl_runs_through_flower_like_simulate(no_process_left):
    torch = pytest.importorskip("torch")
    from icml25.federated.lbi_fl import LBIFLClient, LBIFLStrategy, TeacherSchedulePolicy, lowbit_accuracy_evaluator
    from icml25.federated.torch_clients import module_to_arrays
    from icml25.utils.nn import make_mlp

    def model_fn():
        return make_mlp([8, 16, 2], seed=0)

    gen = torch.Generator().manual_seed(0)
    X = torch.randn(60, 8, generator=gen)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).long()

    def build():
        clients = [LBIFLClient(model_fn, X[i * 30:(i + 1) * 30], y[i * 30:(i + 1) * 30], seed=i) for i in range(2)]
        return clients, LBIFLStrategy(module_to_arrays(model_fn()), TeacherSchedulePolicy(), rounds=2, n_clients=2,
                                      itv=1, evaluate_fn=lowbit_accuracy_evaluator(model_fn, X, y))

    flower, reference = _flower_equals_simulate(build)
    assert flower.bits_log == reference.bits_log and flower.bitops == reference.bitops


def test_can_fcl_runs_every_phase_through_flower_like_simulate(no_process_left):
    pytest.importorskip("torch")
    from icml25.federated.can_fcl import build_fcl, class_incremental_tasks, gaussian_mixture

    X, y = gaussian_mixture(4, 8, 30, separation=6.0, seed=0)
    X = X / np.abs(X).max()  # synthetic replay's generator ends in tanh: features in [-1, 1]
    tasks = class_incremental_tasks(X, y, 2, order_seed=None, seed=0)
    small = {"rounds_per_task": 1, "local_epochs": 1, "gen_steps_per_class": 5, "buffer_size": 8, "gen_batch": 8}

    def build():
        clients, strategy, _ = build_fcl(tasks, "can", n_clients=2, seed=0, **small)
        return clients, strategy

    flower, reference = _flower_equals_simulate(build, lambda strategy: strategy.n_rounds)
    assert [p for p, _, _ in flower.schedule] == ["train", "census", "synthesize", "replay", "train"]
    assert flower.teachers == reference.teachers
    np.testing.assert_array_equal(flower.acc_rows[1], reference.acc_rows[1])
