"""Explicit randomness across the federated papers: ``seed`` arguments, and no change to the global torch RNG."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml25.federated import sample_clients
from icml25.federated.can_fcl import fcl_mlp
from icml25.federated.ferret import candidate_seeds, project
from icml25.federated.ghost import GhostStrategy
from icml25.federated.lbi_fl import BitConfig, QLinear, RLPolicy, fake_quant


def test_sample_clients_takes_a_seed_or_a_generator():
    assert sample_clients(10, 3, seed=4) == sample_clients(10, 3, seed=4)
    a, b = np.random.default_rng(7), np.random.default_rng(7)
    assert [sample_clients(10, 3, seed=a) for _ in range(3)] == [sample_clients(10, 3, seed=b) for _ in range(3)]
    with pytest.raises(ValueError, match="clients_per_round must be an integer in"):
        sample_clients(10, 11, seed=0)
    with pytest.raises(TypeError, match="seed"):
        sample_clients(10, 3, seed="0")


@pytest.mark.parametrize("build", [lambda: fcl_mlp(8, 4, seed=3), lambda: RLPolicy(seed=3),
                                   lambda: GhostStrategy(8, 3, seed=3).make_model()])
def test_seeded_modules_leave_the_global_torch_rng_alone(build):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    first = build()
    after = torch.rand(3)
    assert torch.equal(after, expected)
    second = build()
    for p, q in zip(first.parameters(), second.parameters(), strict=True):
        assert torch.equal(p, q)


def test_stochastic_quantizers_take_an_int_or_a_torch_generator():
    x = torch.linspace(-1.0, 1.0, 50)
    by_int = fake_quant(x, 4, "stochastic", seed=5)
    by_generator = fake_quant(x, 4, "stochastic", seed=torch.Generator().manual_seed(5))
    assert torch.equal(by_int, by_generator)
    layer = QLinear(4, 2, bits=BitConfig(4, 4, 4), seed=1)
    assert isinstance(layer.generator, torch.Generator)


def test_project_takes_a_seed():
    seeds = candidate_seeds(0, 8)
    delta = [np.random.default_rng(0).standard_normal(30).astype(np.float32)]
    a = project(delta, seeds, [4], seed=3)
    b = project(delta, seeds, [4], seed=np.random.default_rng(3))
    np.testing.assert_array_equal(a.index[0], b.index[0])
    np.testing.assert_array_equal(a.values[0], b.values[0])
