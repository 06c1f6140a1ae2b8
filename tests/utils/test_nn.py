"""The shared small-model helpers (icml25.utils.nn) and the digits as tensors."""

from __future__ import annotations

import pytest
import torch

from icml25.data.tensors import digits_tensors
from icml25.utils.nn import accuracy, make_mlp, train_classifier


def test_trains_digits_and_is_deterministic():
    data = digits_tensors(seed=0)
    results = []
    for _ in range(2):
        model = make_mlp([64, 32, 10], seed=1)
        opt = train_classifier(model, data.X_train, data.y_train, epochs=5, lr=3e-3, seed=2)
        results.append((accuracy(model, data.X_test, data.y_test), [p.detach().clone() for p in model.parameters()]))
        assert "exp_avg_sq" in opt.state[next(iter(model.parameters()))]
    assert results[0][0] > 0.85
    assert results[0][0] == results[1][0]
    assert all(torch.equal(a, b) for a, b in zip(results[0][1], results[1][1], strict=True))


def test_make_mlp_shapes_and_seed():
    a, b = make_mlp([4, 3, 2], seed=0), make_mlp([4, 3, 2], seed=0)
    assert torch.equal(a[0].weight, b[0].weight) and len(a) == 3
    assert not torch.equal(a[0].weight, make_mlp([4, 3, 2], seed=1)[0].weight)


@pytest.mark.parametrize(("sizes", "exc"), [([4], ValueError), ([4, 0], ValueError), ([4, 2.5], TypeError)])
def test_make_mlp_bad_sizes(sizes, exc):
    with pytest.raises(exc, match="sizes"):
        make_mlp(sizes)


def test_train_bad_input():
    model = make_mlp([3, 2])
    with pytest.raises(ValueError, match="X must be"):
        train_classifier(model, torch.zeros(4, 3), torch.zeros(5, dtype=torch.int64))
    with pytest.raises(ValueError, match="epochs"):
        train_classifier(model, torch.zeros(4, 3), torch.zeros(4, dtype=torch.int64), epochs=0)
    with pytest.raises(ValueError, match="lr"):
        train_classifier(model, torch.zeros(4, 3), torch.zeros(4, dtype=torch.int64), lr=0)
