"""Explicit randomness: seeds, generators and the seeded torch context leave global state alone."""

import numpy as np
import pytest

from icml25.utils.random import as_generator, check_seed, int_seed, seeded, spawn, torch_generator


def test_as_generator_accepts_int_generator_none():
    g = np.random.default_rng(0)
    assert as_generator(g) is g
    assert as_generator(3).integers(100) == np.random.default_rng(3).integers(100)
    assert isinstance(as_generator(None), np.random.Generator)
    assert as_generator(np.int64(3)).integers(100) == as_generator(3).integers(100)


@pytest.mark.parametrize(("seed", "exc"), [("1", TypeError), (1.5, TypeError), (True, TypeError), (-1, ValueError)])
def test_bad_seeds(seed, exc):
    with pytest.raises(exc, match="seed must be an int"):
        check_seed(seed)


def test_int_seed_and_spawn_are_reproducible():
    assert int_seed(5) == 5 and int_seed(np.random.default_rng(1)) == int_seed(np.random.default_rng(1))
    a, b = spawn(0, 2)
    assert a.integers(10**9) != b.integers(10**9)
    assert [g.integers(10**9) for g in spawn(0, 2)] == [g.integers(10**9) for g in spawn(0, 2)]


def test_torch_seeded_restores_global_state():
    torch = pytest.importorskip("torch")
    before = torch.random.get_rng_state()
    with seeded(7):
        x = torch.randn(3)
    with seeded(7):
        y = torch.randn(3)
    assert torch.equal(x, y) and torch.equal(torch.random.get_rng_state(), before)
    g1, g2 = torch_generator(4), torch_generator(4)
    assert torch.equal(torch.randn(2, generator=g1), torch.randn(2, generator=g2))
