"""Rep-CodeGen: crystal operations, node-order-free graph comparison, the checkers on reference codes, the
sandbox against hostile code (and that none of its processes survive), the LLM clients and the loop."""

import os

import numpy as np
import pytest

pytest.importorskip("ase")

from icml25.materials import (  # noqa: E402
    REFERENCE_GENES,
    CandidateError,
    Crystal,
    Discriminativeness,
    FakeOpenAIServer,
    Graph,
    LipschitzContinuity,
    LLMError,
    OpenAICompatibleClient,
    PeriodicInvariance,
    ReflectionEquivariance,
    RepCodeGen,
    Sandbox,
    ScriptedClient,
    TranslationInvariance,
    amd,
    chiral_structure,
    compose,
    default_constraints,
    emt_dataset,
    extract_code,
    fit_property,
    genes_of,
    graphs_equivalent,
    local_representation,
    random_search,
    random_unimodular,
    run_candidate,
    screen_source,
    structure_bank,
)

BANK = structure_bank(0)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _distances(c):
    return np.sort(np.concatenate([amd(c, 30)]))


def test_change_basis_supercell_and_mirror_keep_the_crystal():
    c = BANK[2]
    rng = np.random.default_rng(0)
    other = c.change_basis(random_unimodular(rng))
    assert np.isclose(abs(np.linalg.det(other.lattice)), abs(np.linalg.det(c.lattice)))
    assert np.allclose(amd(other, 30), amd(c, 30))
    assert np.allclose(amd(c.supercell([2, 1, 1]), 30), amd(c, 30))
    m = c.mirror()
    assert np.linalg.det(m.lattice) > 0 and np.allclose(amd(m, 30), amd(c, 30))


def test_crystal_rejects_bad_structures():
    with pytest.raises(ValueError, match="non-singular"):
        Crystal(np.zeros((3, 3)), [[0, 0, 0]], [1])
    with pytest.raises(ValueError, match="closer than"):
        Crystal(np.eye(3) * 4, [[0, 0, 0], [0.05, 0, 0]], [1, 1])
    with pytest.raises(ValueError, match="numbers"):
        Crystal(np.eye(3) * 4, [[0, 0, 0]], [0])
    left = Crystal(np.diag([3.0, 3.0, -3.0]), [[0.1, 0.2, 0.3]], [1])
    assert np.linalg.det(left.lattice) > 0


def test_graphs_equivalent_ignores_node_order_but_sees_feature_changes():
    rep = local_representation(compose(REFERENCE_GENES["smooth_triple"]))
    c = BANK[2]
    g, gp = rep([c, c.permute([3, 1, 0, 2])])
    assert graphs_equivalent(g, gp)
    moved = rep([c.displace(np.full((4, 3), 0.0) + [[0.05, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]])])[0]
    assert not graphs_equivalent(g, moved)
    sc = rep([c.supercell([1, 2, 1])])[0]
    assert graphs_equivalent(sc, g, repeat=2) and not graphs_equivalent(sc, g)


@pytest.mark.parametrize("name, expected", [
    ("cgcnn", (1, 1, 1, 1, 0, 0)), ("frac_nodes", (1, 0, 1, 0, 0, 0)), ("smooth_triple", (1, 1, 1, 1, 1, 1)),
    ("hard_cutoff", (1, 1, 1, 1, 1, 0)), ("matformer", (1, 1, 1, 0, 0, 0))])
def test_checkers_on_reference_codes(name, expected):
    rep = local_representation(compose(REFERENCE_GENES[name]))
    got = tuple(int(c.check(rep, BANK, rng=0).passed) for c in default_constraints())
    assert got == expected


def test_chirality_is_detected_and_lipschitz_catches_a_hard_cutoff():
    se = chiral_structure()
    rep = local_representation(compose(REFERENCE_GENES["smooth_triple"]))
    g, gm = rep([se, se.mirror()])
    assert not graphs_equivalent(g, gm) and graphs_equivalent(g.negate_pseudo(), gm)
    hard = local_representation(compose(REFERENCE_GENES["hard_cutoff"]))
    assert LipschitzContinuity().check(hard, BANK[:1], rng=0).violation > 1e3
    assert ReflectionEquivariance().check(hard, BANK[:1], rng=0).passed


def test_discriminativeness_rejects_constant_features():
    constant = local_representation(compose(REFERENCE_GENES["constant"]))
    assert PeriodicInvariance().check(constant, BANK, rng=0).passed
    assert not Discriminativeness().check(constant, BANK).passed
    assert Discriminativeness().check(local_representation(compose(REFERENCE_GENES["cgcnn"])), BANK).passed
    assert len(default_constraints(discriminative=True)) == 7


def test_sandbox_matches_in_process_results():
    source = compose(REFERENCE_GENES["cgcnn"])
    with Sandbox(source) as box:
        remote = box.represent(BANK)
        pid = box.pid
    assert not _alive(pid)
    local = local_representation(source)(BANK)
    assert all(graphs_equivalent(a, b, atol=0.0) for a, b in zip(remote, local, strict=True))
    report = run_candidate(source, BANK, [TranslationInvariance(), PeriodicInvariance()], seed=0)
    assert report.ok and report.n_passed == 2


@pytest.mark.parametrize("source, reason", [
    ("def represent(a, b, c):\n    while True:\n        pass\n", "timed out"),
    ("def represent(a, b, c):\n    x = []\n    while True:\n        x.append(np.empty(10**8))\n", "MemoryError"),
    ("def represent(a, b, c):\n    raise RuntimeError('boom')\n", "boom"),
    ("def represent(a, b, c):\n    return Graph(np.full((len(c), 1), np.nan), np.zeros((2, 0), int), "
     "np.zeros((0, 1)))\n", "finite"),
    ("def represent(a, b, c):\n    return 3\n", "Graph"),
    ("def represent(a, b, c):\n    print('x' * 100000)\n    return Graph(np.ones((len(c) + 1, 1)), "
     "np.zeros((2, 0), int), np.zeros((0, 1)))\n", "nodes for"),
])
def test_hostile_candidates_are_failures_and_their_process_is_gone(source, reason):
    report = run_candidate(source, BANK[:2], [TranslationInvariance()], timeout=3.0, seed=0)
    assert not report.ok and reason in report.error
    assert report.pid is not None and not _alive(report.pid)


@pytest.mark.parametrize("source", [
    "import os\ndef represent(a, b, c):\n    pass\n", "import socket\ndef represent(a, b, c):\n    pass\n",
    "def represent(a, b, c):\n    return open('/etc/passwd')\n", "def represent(a, b, c):\n    return ().__class__\n",
    "def represent(a, b, c):\n    np.save('x', a)\n", "def represent(a, b c):\n    pass\n", "x = 1\n"])
def test_screen_rejects_before_running(source):
    with pytest.raises(CandidateError):
        screen_source(source)
    report = run_candidate(source, BANK[:1], [TranslationInvariance()], seed=0)
    assert not report.ok and report.pid is None


def test_extract_code_and_scripted_agent_are_deterministic():
    assert extract_code("text\n```python\ndef represent(a, b, c):\n    pass\n```\nmore") .startswith("def represent")
    with pytest.raises(ValueError):
        extract_code("no code here")
    parent = compose(REFERENCE_GENES["cgcnn"])
    msg = [{"role": "user", "content": f"```python\n{parent}```"}]
    a, b = ScriptedClient(3).complete(msg), ScriptedClient(3).complete(msg)
    assert a == b and genes_of(extract_code(a)) != genes_of(parent)


def test_openai_client_against_a_local_fake_server():
    code = compose(REFERENCE_GENES["smooth_triple"])
    with FakeOpenAIServer([f"```python\n{code}```", None]) as server:
        client = OpenAICompatibleClient(server.url, "fake", api_key="x", retries=0, timeout=5.0)
        assert extract_code(client.complete([{"role": "user", "content": "hi"}])) == code
        with pytest.raises(LLMError, match="after 1 attempts"):
            client.complete([{"role": "user", "content": "hi"}])
        assert server.requests[0]["model"] == "fake"
        history = RepCodeGen([client], default_constraints()[:2], BANK[:2], population=2, generations=1).run()
    assert history.agent_failures == 1 and history.best.report.n_passed == 2


def test_openai_client_reads_its_endpoint_from_the_environment(monkeypatch):
    monkeypatch.setenv("REP_CODEGEN_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("REP_CODEGEN_MODEL", "m")
    client = OpenAICompatibleClient()
    assert client.model == "m" and client.base_url.endswith(":9/v1")
    monkeypatch.delenv("REP_CODEGEN_MODEL")
    with pytest.raises(TypeError, match="model"):
        OpenAICompatibleClient()


def test_loop_is_elitist_and_no_process_survives():
    constraints = default_constraints()[:3]
    history = RepCodeGen([ScriptedClient(0)], constraints, BANK[:2], population=3, generations=2, seed=0).run()
    curve = history.best_per_generation
    assert len(curve) == 3 and all(b >= a for a, b in zip(curve, curve[1:], strict=False))
    rand = random_search(4, constraints, BANK[:2], seed=0)
    pids = [c.report.pid for c in history.candidates + rand.candidates if c.report.pid]
    assert pids and not any(_alive(p) for p in pids)


def test_property_models_run_and_beat_the_mean():
    crystals, y = emt_dataset(60, seed=0)
    assert np.allclose(y, emt_dataset(60, seed=0)[1])
    graphs = local_representation(compose(REFERENCE_GENES["smooth_triple"]))(crystals)
    _, mae = fit_property(graphs[:45], y[:45], graphs[45:], y[45:], epochs=15, seed=0)
    assert np.isfinite(mae) and mae < np.abs(y[45:] - y[:45].mean()).mean()
    cu = Crystal([[0.0, 1.8, 1.8], [1.8, 0.0, 1.8], [1.8, 1.8, 0.0]], [[0.0, 0.0, 0.0]], [29])
    assert np.allclose(amd(cu, 12), 1.8 * np.sqrt(2))


def test_graph_validation():
    with pytest.raises(ValueError, match="edge_index"):
        Graph(np.ones((2, 1)), np.array([[0], [5]]), np.ones((1, 1)))
    with pytest.raises(ValueError, match="edge_feats"):
        Graph(np.ones((2, 1)), np.array([[0], [1]]), np.ones((2, 1)))
