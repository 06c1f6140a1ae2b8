import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from icml25.federated import FitRes, MalformedMessageError, simulate  # noqa: E402
from icml25.federated.ferret import (  # noqa: E402
    Coords,
    FedKSeed,
    FedKSeedClient,
    Ferret,
    FerretClient,
    allocate_directions,
    basis,
    candidate_seeds,
    iter_basis_chunks,
    make_blocks,
    parameter_aliases,
    project,
    reconstruct,
    round_seeds,
    seed_digest,
)
from icml25.federated.torch_clients import module_to_arrays  # noqa: E402
from icml25.utils.nn import make_mlp  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:more directions than values")


def model_fn():
    return make_mlp([4, 8, 3], seed=0)


def shards(n_clients=3, n=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    X, y = torch.randn(n_clients * n, 4, generator=g), torch.randint(0, 3, (n_clients * n,), generator=g)
    return [(X[i::n_clients], y[i::n_clients]) for i in range(n_clients)]


def ferret_clients(K=8, **kw):
    return [FerretClient(model_fn, X, y, K=K, lr=0.1, local_steps=3, batch_size=8, seed=i, **kw)
            for i, (X, y) in enumerate(shards())]


# --- shared randomness: golden numbers pin the generator on every platform ---------------------------

def test_golden_directions_and_seeds():
    np.testing.assert_array_equal(basis(12345, 4, "gaussian"), np.array(
        [-0.0765472799539566, 0.34252315759658813, -0.3746684193611145, 1.526304841041565], dtype=np.float32))
    np.testing.assert_array_equal(basis(12345, 2, "gaussian", block=1),
                                  np.array([-1.3092581033706665, -0.690781831741333], dtype=np.float32))
    assert basis(12345, 16, "rademacher").astype(int).tolist() == [1, 1, 1, 1, 1, -1, -1, 1, -1, 1, -1, 1, 1, -1,
                                                                   1, -1]
    np.testing.assert_array_equal(basis(12345, 6, "official")[:2],
                                  np.array([0.11654362082481384, 0.2196233868598938], dtype=np.float32))
    assert candidate_seeds(0, 3).tolist() == [10759721097, 98663080988, 30169250041]
    assert round_seeds(7, 2, 3, "per_round").tolist() == [56774693297, 60820421763]
    assert seed_digest(0, 100, "fixed", "gaussian") == 3464987555662872537


@pytest.mark.parametrize("kind", ["gaussian", "rademacher", "official"])
def test_chunking_never_changes_a_direction(kind):
    whole = basis(3, 1000, kind)
    for chunk in (1, 7, 64, 333):
        np.testing.assert_array_equal(np.concatenate(list(iter_basis_chunks(3, 1000, kind, chunk=chunk))), whole)
    assert whole.dtype == np.float32 and not np.array_equal(whole, basis(4, 1000, kind))


@pytest.mark.parametrize(("kind", "variance"), [("gaussian", 1.0), ("rademacher", 1.0), ("official", 1 / 3000)])
def test_direction_moments(kind, variance):
    v = basis(11, 200_000, kind) if kind != "official" else basis(11, 1000, kind)
    assert abs(v.mean()) < 5 * np.sqrt(variance / v.size)
    assert v.var() == pytest.approx(variance, rel=0.1)


def test_seed_schedules():
    fixed = [round_seeds(1, 5, r, "fixed") for r in (1, 2)]
    np.testing.assert_array_equal(fixed[0], fixed[1])
    moving = [round_seeds(1, 5, r, "per_round") for r in (1, 2)]
    assert not np.array_equal(moving[0], moving[1])
    assert seed_digest(1, 5, "fixed", "gaussian") != seed_digest(1, 5, "per_round", "gaussian")


# --- blocks, allocation, projection ------------------------------------------------------------------

def test_blocks_follow_the_official_rule_and_skip_frozen_and_tied():
    arrays = {"a": np.zeros((10, 10)), "b": np.zeros(10), "c": np.zeros(3), "d": np.zeros((10, 10))}
    blocks = make_blocks(arrays)  # median numel 55 -> target 49: [a], [b, c], [d]
    assert [b.names for b in blocks] == [("a",), ("b", "c"), ("d",)]
    assert [b.numel for b in make_blocks(arrays, target_numel=10**9)] == [213]

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc, self.dec, self.frozen = nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3)
            self.dec.weight = self.enc.weight
            self.frozen.requires_grad_(False)

    model = Tied()
    names = [n for b in make_blocks(model, target_numel=10**9) for n in b.names]
    assert names == ["enc.weight", "enc.bias", "dec.bias"]
    assert parameter_aliases(model) == {"dec.weight": "enc.weight"}
    block = make_blocks(model)[0]
    flat = block.flatten(module_to_arrays(model))
    np.testing.assert_array_equal(block.split(flat)["enc.weight"], model.enc.weight.detach().numpy())


def test_allocation_rule():
    assert allocate_directions([1.0, 0.5, 0.01], K=10) == [10, 5, 2]
    assert allocate_directions([1.0, 0.5], K=10, rule="uniform") == [10, 10]
    assert allocate_directions([0.0, 0.0], K=10) == [0, 0]
    with pytest.warns(RuntimeWarning, match="capped"):
        assert allocate_directions([1.0, 1.0], K=10, dims=[4, 100]) == [4, 10]
    with pytest.raises(ValueError, match="K must be an integer >= 1"):
        allocate_directions([1.0], K=0)
    with pytest.raises(ValueError, match="block_norms"):
        allocate_directions([np.nan], K=3)


@pytest.mark.parametrize("kind", ["gaussian", "rademacher", "official"])
def test_projection_and_reconstruction_match_the_explicit_matrix(kind):
    rng = np.random.default_rng(0)
    deltas = [rng.standard_normal(30).astype(np.float32), rng.standard_normal(7).astype(np.float32)]
    seeds = candidate_seeds(5, 6)
    coords = project(deltas, seeds, [4, 6], kind, seed=np.random.default_rng(1))
    updates, count = reconstruct(coords.dense(6), seeds, [30, 7], kind)
    assert count == 10
    for block, (delta, idx, update) in enumerate(zip(deltas, coords.index, updates, strict=True)):
        V = np.stack([basis(int(seeds[k]), delta.size, kind, block) for k in idx])
        scale = (delta.size if kind == "official" else 1.0) / len(idx)
        np.testing.assert_allclose(coords.values[block], scale * V @ delta, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(update, scale * V.T @ (V @ delta), rtol=1e-4, atol=1e-4)


def test_reconstruction_is_unbiased_and_has_the_predicted_error():
    d, K, n = 20, 5, 3000
    delta = np.random.default_rng(0).standard_normal(d).astype(np.float32)
    est = np.stack([reconstruct(project([delta], s, [K]).dense(K), s, [d])[0][0]
                    for s in (candidate_seeds(i, K) for i in range(n))])
    assert np.linalg.norm(est.mean(0) - delta) / np.linalg.norm(delta) <= 3 * np.sqrt((d + 1) / (K * n))
    err = np.mean(np.sum((est - delta) ** 2, axis=1)) / np.sum(delta**2)
    assert err == pytest.approx((d + 1) / K, rel=0.1)


def test_clip_caps_each_seed_term():
    seeds = candidate_seeds(0, 3)
    dense = np.array([[100.0, 0.0, 0.0]], dtype=np.float32)
    (update,), _ = reconstruct(dense, seeds, [50], clip=1.0)
    assert np.linalg.norm(update) == pytest.approx(1.0, rel=1e-5)


def test_zero_update_sends_nothing_and_bad_updates_are_rejected():
    seeds = candidate_seeds(0, 4)
    coords = project([np.zeros(5, np.float32)], seeds, [0])
    assert coords.n_coords == 0 and reconstruct(coords.dense(4), seeds, [5])[1] == 0
    with pytest.raises(ValueError, match="NaN or Inf"):
        project([np.array([1.0, np.nan], np.float32)], seeds, [2])
    with pytest.raises(ValueError, match="directions"):
        project([np.ones(3, np.float32)], seeds, [4])


def test_coords_wire_format_round_trip_and_malformed_messages():
    blocks = make_blocks({"a": np.zeros(10), "b": np.zeros(4)}, target_numel=5)
    coords = Coords([np.array([0, 3]), np.array([1])], [np.array([0.5, -1.0], np.float32), np.array([2.0], np.float32)])
    arrays = coords.to_arrays(4)
    assert arrays["index"].dtype == np.uint16 and arrays["coords"].dtype == np.float32
    back = Coords.from_arrays(arrays, blocks, 4)
    np.testing.assert_array_equal(back.dense(4), coords.dense(4))
    bad = [({**arrays, "index": np.array([0, 0, 1], np.uint16)}, "repeats"),
           ({**arrays, "index": np.array([0, 9, 1], np.uint16)}, "out of range"),
           ({**arrays, "counts": np.array([2], np.uint16)}, "block counts"),
           ({**arrays, "coords": np.array([0.5, np.nan, 1.0], np.float32)}, "NaN"),
           ({k: v for k, v in arrays.items() if k != "index"}, "lacks"),
           ({**arrays, "counts": np.array([2, 5], np.uint16)}, "exceed")]
    for message, match in bad:
        with pytest.raises(MalformedMessageError, match=match):
            Coords.from_arrays(message, blocks, 4)


# --- the federated method on the shared runtime ------------------------------------------------------

def test_ferret_round_uplink_is_what_was_serialized_and_runs_are_deterministic():
    histories = [simulate(ferret_clients(), Ferret(model_fn(), K=8, server_lr=0.5), rounds=3, seed=1)
                 for _ in range(2)]
    for name in histories[0].arrays:
        np.testing.assert_array_equal(histories[0].arrays[name], histories[1].arrays[name])
    h = histories[0]
    assert not h.failures and h.stopped is None
    n_coords = sum(r.fit_metrics["client_coords"] for r in h.rounds)
    n_blocks = len(make_blocks(model_fn()))
    n_messages = sum(len(r.clients) for r in h.rounds)
    assert h.ledger.total("up") == n_coords * (32 + 16) + n_messages * (16 * n_blocks + 128)
    assert h.ledger.total("up") < h.ledger.total("down")
    assert any(not np.array_equal(h.arrays[k], v) for k, v in module_to_arrays(model_fn()).items())


def test_single_client_single_round_moves_along_the_reconstruction():
    (X, y), = shards(1)
    client = FerretClient(model_fn, X, y, K=8, lr=0.1, local_steps=2, batch_size=8, blocks="single")
    strategy = Ferret(model_fn(), K=8, blocks="single", server_lr=1.0)
    arrays = strategy.initialize()
    res = client.fit(strategy.configure_fit(1, arrays, [0])[0])
    strategy.validate_fit(1, arrays, res)
    new, metrics = strategy.aggregate_fit(1, arrays, [(0, res)], [])
    block = strategy.blocks[0]
    coords = Coords.from_arrays(res.arrays, strategy.blocks, 8)
    expected, _ = reconstruct(coords.dense(8), candidate_seeds(0, 8), [block.numel])
    np.testing.assert_allclose(block.flatten(arrays) - block.flatten(new), expected[0], atol=1e-6)
    assert metrics["directions_regenerated"] == coords.n_coords == 8


@pytest.mark.parametrize("schedule", ["fixed", "per_round"])
def test_server_momentum_is_the_parameter_space_recursion(schedule):
    # u_r = m u_{r-1} + R_r(mean_r), w_{r+1} = w_r - eta u_r, with R_r the reconstruction on round r's seeds;
    # with per_round seeds the momentum must not rebuild last round's coordinates on this round's directions
    (X, y), = shards(1)
    client = FerretClient(model_fn, X, y, K=8, lr=0.1, local_steps=2, batch_size=8, blocks="single",
                          seed_schedule=schedule)
    strategy = Ferret(model_fn(), K=8, blocks="single", server_lr=0.5, momentum=0.9, seed_schedule=schedule)
    arrays = strategy.initialize()
    block = strategy.blocks[0]
    velocity = np.zeros(block.numel, dtype=np.float32)
    for server_round in (1, 2, 3):
        res = client.fit(strategy.configure_fit(server_round, arrays, [0])[0])
        dense = Coords.from_arrays(res.arrays, strategy.blocks, 8).dense(8)
        (step,), _ = reconstruct(dense, round_seeds(0, 8, server_round, schedule), [block.numel])
        velocity = 0.9 * velocity + step
        expected = block.flatten(arrays) - 0.5 * velocity
        arrays, _ = strategy.aggregate_fit(server_round, arrays, [(0, res)], [])
        np.testing.assert_allclose(block.flatten(arrays), expected, atol=1e-5)


def test_fedkseed_server_replay_equals_the_clients_local_model():
    (X, y), = shards(1)
    client = FedKSeedClient(model_fn, X, y, K=4, lr=0.01, local_steps=5, batch_size=8)
    strategy = FedKSeed(model_fn(), K=4, lr=0.01)
    arrays = strategy.initialize()
    res = client.fit(strategy.configure_fit(1, arrays, [0])[0])
    new, _ = strategy.aggregate_fit(1, arrays, [(0, res)], [])
    # replay the client's steps explicitly: w_T = w_0 - lr sum_s acc_s z_s
    block = strategy.blocks[0]
    z = np.stack([basis(int(s), block.numel) for s in candidate_seeds(0, 4)])
    expected = block.flatten(arrays) - 0.01 * res.arrays["accumulators"] @ z
    np.testing.assert_allclose(block.flatten(new), expected, atol=1e-5)
    assert res.arrays["accumulators"].dtype == np.float32 and res.arrays["accumulators"].shape == (4,)


def test_wrong_round_wrong_seed_and_nan_replies_are_reported_with_the_client_id():
    class Stale(FerretClient):
        def fit(self, ins):
            res = super().fit(ins)
            res.arrays["meta"] = np.array([ins.config["round"] + 1, self.digest], dtype=np.uint64)
            return res

    class Diverged(FerretClient):
        def fit(self, ins):
            res = super().fit(ins)
            res.arrays["coords"] = res.arrays["coords"] * np.inf
            return res

    (X, y), = shards(1)
    clients = ferret_clients()
    clients += [Stale(model_fn, X, y, K=8), FerretClient(model_fn, X, y, K=8, root_seed=99),
                Diverged(model_fn, X, y, K=8)]
    h = simulate(clients, Ferret(model_fn(), K=8, server_lr=0.5), rounds=2)
    by_client = {f.client: f.error for f in h.failures if f.round == 1}
    assert "expected round 1" in by_client[3]
    assert "seed digest" in by_client[4]
    assert "NaN" in by_client[5]
    assert set(h.rounds[-1].clients) == set(range(6)) and h.rounds[-1].fit_metrics["clients"] == 3
    stopped = simulate(clients, Ferret(model_fn(), K=8), rounds=3, on_failure="stop")
    assert stopped.stopped.startswith("round 1: client 3")

    strategy = Ferret(model_fn(), K=8)
    good = clients[0].fit(strategy.configure_fit(1, strategy.initialize(), [0])[0])
    with pytest.raises(MalformedMessageError, match="digest"):
        strategy.validate_fit(1, {}, FitRes({**good.arrays, "meta": np.array([1, 5], np.uint64)}, 1))
    with pytest.raises(MalformedMessageError, match="meta"):
        strategy.validate_fit(1, {}, FitRes({k: v for k, v in good.arrays.items() if k != "meta"}, 1))
    with pytest.raises(MalformedMessageError, match="accumulators"):
        FedKSeed(model_fn(), K=8, lr=0.1).validate_fit(
            1, {}, FitRes({"meta": np.array([1, seed_digest(0, 8, "fixed", "gaussian")], np.uint64)}, 1))


def test_zero_example_clients_under_data_size_weighting_keep_the_model():
    empty = FerretClient(model_fn, torch.zeros(0, 4), torch.zeros(0, dtype=torch.long), K=8)
    h = simulate([empty], Ferret(model_fn(), K=8, weighting="num_examples"), rounds=1)
    assert not h.failures
    for name, value in module_to_arrays(model_fn()).items():
        np.testing.assert_array_equal(h.arrays[name], value)


def test_bfloat16_model_trains_and_projects_in_float32():
    def bf16_fn():
        return model_fn().to(torch.bfloat16)

    (X, y), = shards(1)
    client = FerretClient(bf16_fn, X.to(torch.bfloat16), y, K=8, lr=0.1, local_steps=2, batch_size=8)
    h = simulate([client], Ferret(bf16_fn(), K=8), rounds=2)
    assert not h.failures and h.rounds[-1].fit_metrics["directions_regenerated"] > 0


def test_bad_arguments():
    (X, y), = shards(1)
    with pytest.raises(ValueError, match="K must be an integer >= 1"):
        Ferret(model_fn(), K=0)
    with pytest.raises(ValueError, match="K must be an integer >= 1"):
        FerretClient(model_fn, X, y, K=-1)
    with pytest.raises(ValueError, match="kind must be one of"):
        Ferret(model_fn(), K=4, kind="uniform")
    with pytest.raises(ValueError, match="weighting"):
        Ferret(model_fn(), K=4, weighting="median")
    with pytest.raises(ValueError, match="seed_schedule"):
        FerretClient(model_fn, X, y, K=4, seed_schedule="daily")
    with pytest.raises(ValueError, match="momentum"):
        Ferret(model_fn(), K=4, momentum=1.0)
    with pytest.raises(TypeError, match="nn.Module"):
        Ferret({"w": np.zeros(3)}, K=4)
    with pytest.raises(ValueError, match="dim must be"):
        basis(1, 0)
    with pytest.raises(ValueError, match="eps"):
        FedKSeedClient(model_fn, X, y, K=4, eps=0.0)
    with pytest.raises(ValueError, match="blocks must be"):
        Ferret(model_fn(), K=4, blocks=0)
    with pytest.raises(TypeError, match="K must be an integer"):
        Ferret(model_fn(), K="4")
    with pytest.raises(TypeError, match="lr must be a real number"):
        FerretClient(model_fn, X, y, K=4, lr="0.1")


def test_flower_adapter_runs_ferret_like_the_simulator():
    pytest.importorskip("flwr")
    from icml25.federated.flower import FlowerStrategy, drive_in_process

    strategy = FlowerStrategy(Ferret(model_fn(), K=8, server_lr=0.5))
    drive_in_process(ferret_clients(), strategy, rounds=2)
    reference = simulate(ferret_clients(), Ferret(model_fn(), K=8, server_lr=0.5), rounds=2)
    assert not strategy.failures
    for name, value in reference.arrays.items():
        np.testing.assert_allclose(strategy.arrays[name], value, atol=1e-6)
    up = sum(b for _, d, b in strategy.bits if d == "up")
    assert up < sum(b for _, d, b in strategy.bits if d == "down")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_clients_send_the_same_directions():
    (X, y), = shards(1)
    cpu = FerretClient(model_fn, X, y, K=8, local_steps=1)
    gpu = FerretClient(model_fn, X.cuda(), y.cuda(), K=8, local_steps=1)
    strategy = Ferret(model_fn(), K=8)
    ins = strategy.configure_fit(1, strategy.initialize(), [0])[0]
    a, b = cpu.fit(ins), gpu.fit(ins)
    np.testing.assert_array_equal(a.arrays["index"], b.arrays["index"])
    np.testing.assert_allclose(a.arrays["coords"], b.arrays["coords"], rtol=1e-3, atol=1e-4)
