import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml25.data.graphs import (  # noqa: E402
    GraphData,
    dirichlet_node_split,
    edge_homophily,
    from_pyg,
    induced_subgraph,
    knn_graph,
    load_cora,
    make_csbm,
    random_node_masks,
    to_undirected,
)
from icml25.federated import FitIns, FitRes, MalformedMessageError, simulate  # noqa: E402
from icml25.federated.ghost import (  # noqa: E402
    GCN,
    GcnClient,
    GhostClient,
    GhostStrategy,
    feature_alignment_loss,
    fgw_loss,
    gcn_accuracy,
    normalized_adjacency,
    run_ghost,
    split_graph,
    topology_consistency,
)

NO_INSTRUCTION = FitIns({}, {})  # GHOST's server sends nothing down


def small_graph(seed=0, n=60, homophily=0.9):
    return make_csbm(n, n_classes=3, n_features=8, avg_degree=5, homophily=homophily, class_sep=4.0, seed=seed)


def client_graphs(seed=0, n_clients=2):
    clients, test, val, _ = split_graph(small_graph(seed, n=90), n_clients, alpha=1.0, seed=seed)
    return clients, test


# ---------------------------------------------------------------- graph helpers


def test_to_undirected_symmetrizes_dedups_and_drops_self_loops():
    ei = np.array([[0, 1, 1, 2, 2], [1, 0, 2, 2, 1]])
    np.testing.assert_array_equal(to_undirected(ei, 3), [[0, 1, 1, 2], [1, 0, 2, 1]])
    with pytest.raises(ValueError, match="node ids"):
        to_undirected(np.array([[0], [5]]), 3)
    with pytest.raises(ValueError, match="edge_index must have shape"):
        to_undirected(np.zeros((3, 2), int), 3)


def test_graphdata_rejects_bad_input():
    x, ei, y = np.zeros((3, 2)), np.array([[0], [1]]), np.array([0, 1, 1])
    with pytest.raises(ValueError, match="NaN"):
        GraphData(np.full((3, 2), np.nan), ei, y, 2)
    with pytest.raises(ValueError, match="y must hold labels in"):
        GraphData(x, ei, np.array([0, 1, 2]), 2)
    with pytest.raises(TypeError, match="train_mask must be a boolean array"):
        GraphData(x, ei, y, 2, train_mask=np.array([1, 0, 1]))
    with pytest.raises(TypeError, match="y must be integer"):
        GraphData(x, ei, y.astype(float), 2)
    g = GraphData(x, ei, y, 2)
    assert g.num_edges == 1 and g.edge_index.shape == (2, 2)


def test_csbm_hits_degree_and_homophily():
    for h in (0.8, 0.2):
        g = make_csbm(1500, 5, 16, avg_degree=8, homophily=h, seed=1)
        assert abs(2 * g.num_edges / g.num_nodes - 8) < 0.6
        assert abs(edge_homophily(g) - h) < 0.04
    np.testing.assert_array_equal(make_csbm(100, 2, 4, seed=3).x, make_csbm(100, 2, 4, seed=3).x)
    with pytest.raises(ValueError, match="homophily"):
        make_csbm(100, 2, 4, homophily=1.5)
    with pytest.raises(TypeError, match="n_nodes must be an integer"):
        make_csbm(100.0, 2, 4)


def test_induced_subgraph_keeps_inner_edges_and_relabels():
    g = GraphData(np.arange(8, dtype=float).reshape(4, 2), np.array([[0, 1, 2], [1, 2, 3]]), np.array([0, 1, 0, 1]), 2)
    sub = induced_subgraph(g, np.array([2, 1, 3]))
    np.testing.assert_array_equal(sub.x[:, 0], [4, 2, 6])
    assert sorted(map(tuple, sub.edge_index.T)) == [(0, 1), (0, 2), (1, 0), (2, 0)]
    with pytest.raises(ValueError, match="duplicates"):
        induced_subgraph(g, np.array([1, 1]))


def test_dirichlet_split_and_impossible_split_names_alpha():
    y = np.repeat(np.arange(4), 50)
    parts = dirichlet_node_split(y, 4, alpha=0.5, min_nodes=5, seed=0)
    assert sorted(np.concatenate(parts).tolist()) == list(range(200)) and min(map(len, parts)) >= 5
    with pytest.raises(ValueError, match="alpha=0.001"):
        dirichlet_node_split(y, 3, alpha=0.001, min_nodes=55, max_tries=20, seed=0)


def test_knn_graph_known_answer_and_masks():
    x = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    assert sorted(map(tuple, knn_graph(x, k=2).T)) == [(0, 1), (1, 0), (2, 3), (3, 2)]
    assert knn_graph(x[:1], 5).shape == (2, 0)
    g = random_node_masks(small_graph(), seed=0)
    assert (g.train_mask.sum(), g.val_mask.sum(), g.test_mask.sum()) == (12, 24, 24)
    assert not (g.train_mask & g.test_mask).any()


def test_from_pyg_accepts_tensors():
    class Data:
        x, edge_index, y = torch.ones(3, 2), torch.tensor([[0, 1], [1, 2]]), torch.tensor([0, 1, 0])
    g = from_pyg(Data())
    assert g.num_nodes == 3 and g.n_classes == 2 and g.num_edges == 2
    with pytest.raises(ValueError, match="edge_index"):
        from_pyg(type("D", (), {"x": torch.ones(2, 2), "y": torch.zeros(2)})())


def test_bundled_cora():
    try:
        g = load_cora()
    except FileNotFoundError:
        pytest.skip("cora_planetoid.npz is not bundled")
    assert (g.num_nodes, g.num_features, g.n_classes, g.num_edges) == (2708, 1433, 7, 5278)
    assert (g.train_mask.sum(), g.val_mask.sum(), g.test_mask.sum()) == (140, 500, 1000)
    assert set(np.unique(g.x)) == {0.0, 1.0}


# ---------------------------------------------------------------- model pieces


def test_normalized_adjacency_known_values():
    adj = normalized_adjacency(np.array([[0, 1], [1, 0]]), 3).to_dense()
    expected = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    torch.testing.assert_close(adj, expected)


def test_gcn_outputs_log_probabilities():
    g = small_graph()
    h, logp = GCN(8, 3, hidden=16)(torch.as_tensor(g.x), normalized_adjacency(g.edge_index, g.num_nodes))
    assert h.shape == (60, 16) and (h >= 0).all()
    torch.testing.assert_close(logp.exp().sum(1), torch.ones(60))


def test_topology_consistency_matches_a_loop_over_edges():
    g = small_graph()
    torch.manual_seed(0)
    model = GCN(8, 3, hidden=6)
    x, adj, ei = torch.as_tensor(g.x), normalized_adjacency(g.edge_index, 60), torch.as_tensor(g.edge_index)
    omega = topology_consistency(model, x, adj, ei)
    assert set(omega) == {"conv1.lin.weight", "conv1.bias"}
    w = model.conv1.lin.weight
    p = torch.relu(model.conv1(x, adj)) @ w
    edges = [(int(i), int(j)) for i, j in ei.T] + [(i, i) for i in range(60)]
    energy = sum((p[i] @ torch.tanh(p[j])) ** 2 for i, j in edges)
    expected = torch.autograd.grad(energy, w)[0].abs()
    torch.testing.assert_close(omega["conv1.lin.weight"], expected, rtol=1e-4, atol=1e-6)


def test_alignment_losses():
    x = torch.randn(10, 4)
    assert float(feature_alignment_loss(x, x)) == pytest.approx(0.0, abs=1e-6)
    assert float(feature_alignment_loss(-x, x)) > 1.9
    a = (torch.rand(10, 10) < 0.3).float()
    a = torch.maximum(a, a.T)
    assert float(fgw_loss(a, a, x, x.clone())) == pytest.approx(0.0, abs=1e-5)
    moved = (x + 1.0).requires_grad_()
    loss = fgw_loss(a, a, x, moved)
    loss.backward()
    assert float(loss.detach()) > 0 and moved.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="alpha"):
        fgw_loss(a, a, x, x, alpha=2.0)


# ---------------------------------------------------------------- client and server


def test_client_upload_is_generator_histogram_and_size():
    clients, _ = client_graphs()
    res = GhostClient(clients[0], gen_epochs=3, seed=0).fit(NO_INSTRUCTION)
    assert set(res.arrays) >= {"label_hist", "n_nodes", "gen.embed.weight"}
    np.testing.assert_array_equal(res.arrays["label_hist"], np.bincount(clients[0].y[clients[0].train_mask],
                                                                         minlength=3))
    assert res.arrays["n_nodes"].tolist() == [clients[0].num_nodes]
    again = GhostClient(clients[0], gen_epochs=3, seed=0).fit(NO_INSTRUCTION)
    for k in res.arrays:
        np.testing.assert_array_equal(res.arrays[k], again.arrays[k])
    for ablation in ({"feature_loss": False}, {"lambda_f": 0.0}):
        other = GhostClient(clients[0], gen_epochs=3, seed=0, **ablation).fit(NO_INSTRUCTION)
        assert not np.array_equal(other.arrays["gen.net.9.weight"], res.arrays["gen.net.9.weight"])


def test_client_bad_input():
    g = small_graph()
    with pytest.raises(ValueError, match="no training nodes"):
        GhostClient(g)
    with pytest.warns(UserWarning, match="untrained"):
        res = GhostClient(g, allow_untrained=True, gen_epochs=2).fit(NO_INSTRUCTION)
    assert res.num_examples == 0
    with pytest.raises(TypeError, match="GraphData"):
        GhostClient(object())
    tiny = random_node_masks(induced_subgraph(g, np.arange(3)), (0.67, 0.0, 0.33), seed=0)
    assert GhostClient(tiny, gen_epochs=2, k=5).fit(NO_INSTRUCTION).arrays["n_nodes"][0] == 3   # k clamped to n - 1
    single = random_node_masks(induced_subgraph(g, np.arange(3)), (0.34, 0.33, 0.33), seed=0)
    assert single.train_mask.sum() == 1   # no structure term and, without the feature term, nothing to train
    assert GhostClient(single, gen_epochs=2, feature_loss=False).fit(NO_INSTRUCTION).num_examples == 1


def test_strategy_options_are_checked():
    with pytest.raises(ValueError, match="importance"):
        GhostStrategy(8, 3, importance="fisher")
    with pytest.raises(ValueError, match="proxy_labels"):
        GhostStrategy(8, 3, proxy_labels="random")
    with pytest.raises(ValueError, match="lambda_r"):
        GhostStrategy(8, 3, lambda_r=-1.0)
    with pytest.raises(ValueError, match="at least one"):
        GhostStrategy(8, 3).integrate([])


def test_one_shot_round_trains_a_useful_model_and_ledger_counts_the_upload():
    clients, test = client_graphs()
    ghost = [GhostClient(g, gen_epochs=40, seed=i) for i, g in enumerate(clients)]
    strategy = GhostStrategy(8, 3, hidden=16, seed=0, evaluate_fn=lambda m: {"accuracy": gcn_accuracy(m, test)})
    history = simulate(ghost, strategy, rounds=1)
    assert history.ledger.total("down") == 0 and len(history.curve("accuracy")) == 1
    upload_bits = sum(8 * a.nbytes for _, arrs in strategy.uploads_ for a in arrs.values())
    assert history.ledger.total("up") == upload_bits
    model = strategy.make_model()
    from icml25.federated.torch_clients import load_arrays
    acc = gcn_accuracy(load_arrays(model, history.arrays), test)
    assert acc > 0.6 and acc == pytest.approx(history.curve("accuracy")[0])   # 3 separated classes: chance is 1/3
    assert [cid for cid, _ in strategy.trace_] != [] and len(strategy.trace_) == 2


def test_consolidation_anchors_the_first_layer():
    clients, _ = client_graphs(n_clients=2)
    ups = [(i, GhostClient(g, gen_epochs=5, seed=i).fit(NO_INSTRUCTION).arrays) for i, g in enumerate(clients)]
    drift = {}
    for lam in (0.0, 1e4):
        s = GhostStrategy(8, 3, hidden=16, lambda_r=lam, seed=0)
        s.integrate(ups)
        first, last = s.trace_[0][1]["conv1.lin.weight"], s.trace_[1][1]["conv1.lin.weight"]
        drift[lam] = float(np.abs(last - first).sum())
    assert drift[1e4] < 0.5 * drift[0.0]


def test_malformed_and_failing_clients_are_reported_with_their_id():
    clients, _ = client_graphs(n_clients=3)

    class WrongFeatures(GhostClient):
        def fit(self, ins):
            res = super().fit(ins)
            return FitRes({**res.arrays, "gen.net.9.weight": np.zeros((5, 256), np.float32)}, res.num_examples)

    class Crashes(GhostClient):
        def fit(self, ins):
            raise RuntimeError("generator diverged")

    good = GhostClient(clients[0], gen_epochs=2, seed=0)
    table = [good, WrongFeatures(clients[1], gen_epochs=2), Crashes(clients[2], gen_epochs=2)]
    history = simulate(table, GhostStrategy(8, 3, hidden=16), rounds=1)
    assert [(f.client, f.error.split(":")[0]) for f in history.failures] == [(1, "MalformedMessageError"),
                                                                             (2, "RuntimeError")]
    stopped = simulate(table, GhostStrategy(8, 3, hidden=16), rounds=1, on_failure="stop")
    assert stopped.stopped.startswith("round 1: client 1")
    s = GhostStrategy(8, 3)
    bad_hist = {**good.fit(NO_INSTRUCTION).arrays, "label_hist": np.array([1, 2], np.int64)}
    with pytest.raises(MalformedMessageError, match="label_hist"):
        s.validate_fit(1, {}, FitRes(bad_hist, 1))


def test_gcn_client_and_run_ghost():
    clients, test = client_graphs()
    res = GcnClient(clients[0], epochs=2).fit(FitIns(GhostStrategy(8, 3).initialize(), {}))
    assert res.num_examples == int(clients[0].train_mask.sum())
    out = run_ghost(small_graph(n=90), n_clients=2, alpha=1.0, gen_epochs=2, seed=0, hidden=16)
    assert 0 <= out["accuracy"] <= 1 and out["uplink_bytes"] > 0


def test_flower_adapter_matches_simulate():
    pytest.importorskip("flwr")
    from icml25.federated.flower import FlowerStrategy, drive_in_process

    clients, _ = client_graphs()
    make = lambda: [GhostClient(g, gen_epochs=3, seed=i) for i, g in enumerate(clients)]  # noqa: E731
    flower = FlowerStrategy(GhostStrategy(8, 3, hidden=16, seed=0))
    drive_in_process(make(), flower, rounds=2)
    reference = simulate(make(), GhostStrategy(8, 3, hidden=16, seed=0), rounds=2)
    assert not flower.failures
    for name, value in reference.arrays.items():
        np.testing.assert_allclose(flower.arrays[name], value, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda():
    clients, test = client_graphs()
    ups = [(i, GhostClient(g, gen_epochs=3, seed=i, device="cuda").fit(NO_INSTRUCTION).arrays)
           for i, g in enumerate(clients)]
    model = GhostStrategy(8, 3, hidden=16, device="cuda").integrate(ups)
    assert next(model.parameters()).is_cuda and 0 <= gcn_accuracy(model, test) <= 1
