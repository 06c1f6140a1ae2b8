import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml25.federated import FitIns, FitRes  # noqa: E402
from icml25.federated.can_fcl import (  # noqa: E402
    CANClient,
    CANConfig,
    allocate_buffer,
    average_accuracy,
    average_forgetting,
    backward_transfer,
    bn_stat_loss,
    bn_statistics,
    build_fcl,
    class_incremental_tasks,
    fcl_mlp,
    forgetting_profile,
    gaussian_mixture,
    invert,
    run_fcl,
    select_teachers,
    split_task_across_clients,
    uniform_allocation,
)

SMALL = {"rounds_per_task": 2, "local_epochs": 2, "gen_steps_per_class": 30, "buffer_size": 24, "gen_batch": 32}


@pytest.fixture(scope="module")
def stream():
    X, y = gaussian_mixture(6, 8, 60, separation=6.0, seed=0)
    return class_incremental_tasks(X / np.abs(X).max(), y, 3, order_seed=None, seed=0)  # the generator's range


# --- streams -------------------------------------------------------------------------------------------------------

def test_tasks_are_disjoint_and_split_per_class(stream):
    assert [t.classes for t in stream] == [(0, 1), (2, 3), (4, 5)]
    for t in stream:
        assert set(np.unique(t.y_train)) == set(t.classes) == set(np.unique(t.y_test))
        assert len(t.y_test) == 2 * 12 and len(t.y_train) == 2 * 48


def test_overlapping_or_unknown_classes_are_rejected():
    X, y = gaussian_mixture(4, 3, 10, seed=1)
    with pytest.raises(ValueError, match="more than one task"):
        class_incremental_tasks(X, y, task_classes=[[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="no samples"):
        class_incremental_tasks(X, y, task_classes=[[0, 9]])
    with pytest.raises(ValueError, match="n_tasks"):
        class_incremental_tasks(X, y, 5)
    with pytest.raises(ValueError, match="X must be"):
        class_incremental_tasks(X[:, 0], y, 2)


def test_client_split_covers_the_task_once(stream):
    for alpha in (0.1, None):
        parts = split_task_across_clients(stream[0], 4, alpha, seed=3)
        assert sorted(np.concatenate(parts).tolist()) == list(range(len(stream[0].y_train)))
    iid = split_task_across_clients(stream[0], 4, None, seed=3)
    assert [len(p) for p in iid] == [24, 24, 24, 24]


# --- metrics -------------------------------------------------------------------------------------------------------

def test_metrics_on_a_known_matrix():
    A = np.array([[0.9, np.nan, np.nan], [0.6, 0.8, np.nan], [0.5, 0.7, 1.0]])
    assert average_accuracy(A) == pytest.approx((0.5 + 0.7 + 1.0) / 3)
    assert average_forgetting(A) == pytest.approx(((0.9 - 0.5) + (0.8 - 0.7)) / 2)
    assert backward_transfer(A) == pytest.approx(((0.5 - 0.9) + (0.7 - 0.8)) / 2)
    assert average_forgetting(np.array([[0.7]])) == 0.0
    with pytest.raises(ValueError, match="square"):
        average_accuracy(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        average_accuracy(np.array([[np.nan]]))


# --- navigation ----------------------------------------------------------------------------------------------------

def test_teachers_are_the_top_holders_and_nobody_teaches_an_absent_class():
    counts = np.array([[5, 0, 1], [9, 0, 1], [9, 0, 0]])
    assert select_teachers(counts) == {0: [1], 1: [], 2: [0]}
    assert select_teachers(counts, classes=[0], k=2) == {0: [1, 2]}
    with pytest.raises(ValueError, match="non-negative"):
        select_teachers(-counts)
    with pytest.raises(ValueError, match="k must"):
        select_teachers(counts, k=0)


def test_allocation_sums_to_b_and_follows_forgetting():
    acc = {0: 0.9, 1: 0.2, 2: 0.5, 3: 0.9}
    for b in (4, 7, 60, 61):
        alloc = allocate_buffer(acc, b)
        assert sum(alloc.values()) == b and min(alloc.values()) >= 1
    alloc = allocate_buffer(acc, 60)
    assert alloc[1] > alloc[2] > alloc[0] == alloc[3]
    assert allocate_buffer({0: 0.3, 1: 0.3, 2: 0.3}, 9) == {0: 3, 1: 3, 2: 3}
    assert uniform_allocation([4, 5, 6], 10) == {4: 4, 5: 3, 6: 3}
    soft = allocate_buffer(acc, 60, rule="softmax", temperature=0.1)
    assert soft[1] > alloc[1]


def test_small_buffer_goes_to_the_most_forgotten_classes():
    assert allocate_buffer({0: 0.9, 1: 0.1, 2: 0.5}, 2) == {0: 0, 1: 1, 2: 1}


def test_allocation_bad_input_and_nan():
    with pytest.raises(ValueError, match=r"per_class_acc\[0\]"):  # NaN is no accuracy: refused, not counted
        allocate_buffer({0: float("nan"), 1: 0.9}, 12)
    with pytest.raises(TypeError, match="per_class_acc"):
        allocate_buffer([0.5, 0.5], 12)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        allocate_buffer({0: 1.5}, 3)
    with pytest.raises(ValueError, match="rule"):
        allocate_buffer({0: 0.5}, 3, rule="cubic")
    with pytest.raises(ValueError, match="buffer_size"):
        allocate_buffer({0: 0.5}, -1)
    with pytest.raises(ValueError, match="empty"):
        allocate_buffer({}, 3)


# --- synthesis -----------------------------------------------------------------------------------------------------

def _trained_teacher(stream, seed=0):
    model = fcl_mlp(8, 6, hidden=32, seed=seed)
    X, y = torch.as_tensor(stream[0].X_train), torch.as_tensor(stream[0].y_train)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(X)[:, :2], y).backward()
        opt.step()
    return model.eval()


def test_inversion_produces_samples_the_teacher_labels_and_is_seeded(stream):
    teacher = _trained_teacher(stream)
    kwargs = {"n_classes": 6, "in_dim": 8, "n_per_class": 20, "steps": 150, "batch_size": 32, "seen": [0, 1]}
    _, samples = invert(teacher, [0, 1], seed=4, **kwargs)
    assert samples[0].shape == (20, 8) and samples[1].shape == (20, 8)
    with torch.no_grad():
        hits = [(teacher(samples[c])[:, :2].argmax(1) == c).float().mean() for c in (0, 1)]
    assert min(hits) >= 0.8, hits
    _, again = invert(teacher, [0, 1], seed=4, **kwargs)
    torch.testing.assert_close(samples[0], again[0])
    with pytest.raises(ValueError, match="distinct"):
        invert(teacher, [0, 0], **kwargs)


def test_bn_loss_vanishes_on_the_data_that_defined_the_statistics(stream):
    teacher = _trained_teacher(stream)
    X, y = torch.as_tensor(stream[0].X_train), torch.as_tensor(stream[0].y_train)
    targets = {c: bn_statistics(teacher, X[y == c]) for c in (0, 1)}
    _, loss = bn_stat_loss(teacher, X, y, targets)
    assert float(loss.detach()) < 1e-4
    _, shifted = bn_stat_loss(teacher, X + 1.0, y, targets)
    assert float(shifted.detach()) > 0.1


def test_teacher_without_batchnorm_warns(stream):
    model = torch.nn.Sequential(torch.nn.Linear(8, 6))
    with pytest.warns(RuntimeWarning, match="no BatchNorm"):
        invert(model, [0], n_classes=6, in_dim=8, n_per_class=2, steps=2)


# --- the federated method ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def runs(stream):
    return {m: run_fcl(stream, m, n_clients=3, seed=0, **SMALL) for m in ("can", "server_gr", "finetune")}


def test_replay_beats_finetuning_and_everything_goes_through_the_ledger(runs):
    can, gr, ft = runs["can"], runs["server_gr"], runs["finetune"]
    assert ft.forgetting > 0.5 and can.acc > ft.acc + 0.2
    assert can.history.ledger.total("up") == can.up_bits
    synth_rounds = [i + 1 for i, (phase, _, _) in enumerate(can.strategy.schedule) if phase == "synthesize"]
    uploaded = sum(e.payload_bits for e in can.history.ledger.entries
                   if e.round in synth_rounds and e.direction == "up")
    samples = sum(len(can.strategy.pool[c]) for t in (0, 1) for c in can.strategy.task_classes[t])
    assert uploaded == samples * (8 * 32 + 32)  # float32 features + int32 label per synthetic sample
    assert can.strategy.server_synthesised == [] and gr.strategy.server_synthesised == [0, 1, 2, 3]
    assert [p for p, _, _ in gr.strategy.schedule].count("census") == 0
    assert all(sum(a) == 24 for a in map(lambda v: v.tolist(), can.strategy.allocations[2].values()))


def test_teachers_are_the_largest_holders(runs, stream):
    can = runs["can"]
    for c, ids in can.strategy.teachers[0].items():
        counts = [int((stream[0].y_train[part] == c).sum()) for part in can.split[0]]
        assert ids == [int(np.argmax(counts))]


def test_same_seed_same_run(stream, runs):
    again = run_fcl(stream, "can", n_clients=3, seed=0, **SMALL)
    np.testing.assert_array_equal(again.acc_matrix, runs["can"].acc_matrix)


def test_one_task_is_fedavg(stream):
    res = run_fcl(stream[:1], "can", n_clients=2, seed=0, **SMALL)
    assert [p for p, _, _ in res.strategy.schedule] == ["train", "train"]
    assert res.forgetting == 0.0 and res.acc > 0.9


def test_forgetting_profile_measures_each_clients_damage_to_old_classes(stream, runs):
    gr = runs["server_gr"].strategy
    shares = [(stream[1].X_train[:40], stream[1].y_train[:40]), (stream[1].X_train[:1], stream[1].y_train[:1])]
    args = (gr.model_fn, gr.task_end_arrays[0], shares, stream[0].X_test, stream[0].y_test, gr.seen(1))
    none = forgetting_profile(*args, epochs=0)
    np.testing.assert_array_equal(none[0], [0.0, 0.0])
    assert np.isnan(none[1]).all()
    drop = forgetting_profile(*args, epochs=20, lr=1e-2)
    assert drop.shape == (2, 2) and drop[0].max() > 0.3


class CrashingTeacher(CANClient):
    def fit(self, ins):
        if ins.config["phase"] == "synthesize":
            raise RuntimeError("teacher out of memory")
        return super().fit(ins)


class BadAllocation(CANClient):
    def fit(self, ins):
        res = super().fit(ins)
        if ins.config["phase"] == "replay":
            return FitRes({"allocation": np.full(3, 99, np.int32)}, 1)
        return res


def _run_with(stream, client_cls, cid, on_failure="skip"):
    from icml25.federated import simulate

    clients, strategy, _ = build_fcl(stream, "can", n_clients=3, seed=0, **SMALL)
    if cid >= 0:
        c = clients[cid]
        clients[cid] = client_cls(c.model_fn, [(X.numpy(), y.numpy()) for X, y in c.data], c.config, seed=c.seed)
    return strategy, simulate(clients, strategy, strategy.n_rounds, on_failure=on_failure)


def test_a_failing_teacher_is_reported_and_the_server_teaches_instead(stream):
    strategy, _ = _run_with(stream, CANClient, -1)
    crashing = sorted({c for t in strategy.teachers.values() for ids in t.values() for c in ids})[0]
    with pytest.warns(RuntimeWarning, match="global model teaches"):
        strategy, history = _run_with(stream, CrashingTeacher, crashing)
    assert {f.client for f in history.failures} == {crashing}
    assert "teacher out of memory" in history.failures[0].error
    assert strategy.server_synthesised and set(strategy.pool) == {0, 1, 2, 3}
    assert history.stopped is None and len(history.rounds) == strategy.n_rounds


def test_a_malformed_allocation_is_reported_and_stop_ends_cleanly(stream):
    _, history = _run_with(stream, BadAllocation, 1)
    assert {f.client for f in history.failures} == {1} and "allocation" in history.failures[0].error
    strategy, stopped = _run_with(stream, BadAllocation, 1, on_failure="stop")
    assert stopped.stopped.startswith(f"round {stopped.rounds[-1].round}: client 1")
    assert strategy.phase(stopped.rounds[-1].round)[0] == "replay"


def test_bad_configuration_and_messages(stream):
    with pytest.raises(ValueError, match="method"):
        CANConfig.for_method("magic")
    with pytest.raises(ValueError, match="allocation"):
        CANConfig(allocation="random")
    with pytest.raises(ValueError, match="buffer_size"):
        CANConfig(buffer_size=-5)
    with pytest.raises(ValueError, match="synthesis"):
        CANConfig(replay="synthetic", synthesis="none")
    with pytest.raises(ValueError, match="empty"):
        run_fcl([], "can")
    client = CANClient(lambda: fcl_mlp(8, 6), [(stream[0].X_train, stream[0].y_train)], CANConfig())
    with pytest.raises(ValueError, match="phase must be one of"):
        client.fit(FitIns({"w": np.zeros(1, np.float32)}, {"phase": "dance", "task": 0}))
    with pytest.raises(ValueError, match="outside"):
        client.fit(FitIns({"w": np.zeros(1, np.float32)}, {"phase": "train", "task": 3}))
    with pytest.raises(ValueError, match="must have the same length"):
        CANClient(lambda: fcl_mlp(8, 6), [(stream[0].X_train, stream[0].y_train[:3])], CANConfig())
    with pytest.raises(TypeError, match="config must be"):
        CANClient(lambda: fcl_mlp(8, 6), [(stream[0].X_train, stream[0].y_train)], {"buffer_size": 3})
    with pytest.raises(TypeError, match="buffer_size must be an integer >= 0"):
        CANConfig(buffer_size=2.5)


def test_synthetic_replay_needs_features_in_the_generators_range(stream):
    # the generator ends in tanh: features outside [-1, 1] cannot be imitated, so they are refused up front
    X, y = gaussian_mixture(4, 3, 10, separation=6.0, seed=1)
    wide = class_incremental_tasks(X, y, 2, seed=0)
    with pytest.raises(ValueError, match=r"tasks\[0\].X_train must lie in \[-1, 1\]"):
        build_fcl(wide, "can", n_clients=2)
    with pytest.raises(ValueError, match=r"data\[0\] X must lie in \[-1, 1\]"):
        CANClient(lambda: fcl_mlp(3, 4), [(wide[0].X_train, wide[0].y_train)], CANConfig())
    clients, _, _ = build_fcl(wide, "exemplar", n_clients=2)  # real replay keeps any range
    assert len(clients) == 2
    _, samples = invert(fcl_mlp(8, 6), [0], n_classes=6, in_dim=8, n_per_class=4, steps=2)
    assert float(samples[0].abs().max()) <= 1.0


def test_flower_adapter_runs_every_phase_like_simulate(stream):
    pytest.importorskip("flwr")
    from icml25.federated.flower import FlowerStrategy, drive_in_process

    small = {**SMALL, "rounds_per_task": 1}
    ref = run_fcl(stream[:2], "can", n_clients=3, seed=0, **small)
    assert [p for p, _, _ in ref.strategy.schedule] == ["train", "census", "synthesize", "replay", "train"]
    clients, strategy, _ = build_fcl(stream[:2], "can", n_clients=3, seed=0, **small)
    flower = FlowerStrategy(strategy)
    log = drive_in_process(clients, flower, rounds=strategy.n_rounds)
    assert flower.failures == [] and len(log) == strategy.n_rounds
    for name, value in ref.history.arrays.items():
        np.testing.assert_allclose(flower.arrays[name], value, rtol=1e-4, atol=1e-5)
    assert sorted(strategy.pool) == [0, 1] and strategy.teachers == ref.strategy.teachers
    np.testing.assert_allclose(strategy.acc_rows[1], ref.strategy.acc_rows[1], atol=1e-6)
    assert log[-1]["evaluate"]["accuracy"] == pytest.approx(ref.acc, abs=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_runs_on_cuda(stream):
    res = run_fcl(stream[:2], "can", n_clients=2, seed=0, device="cuda", **SMALL)
    assert res.acc > 0.5
