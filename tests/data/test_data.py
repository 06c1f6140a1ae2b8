"""Shared offline data helpers."""

from __future__ import annotations

import numpy as np
import pytest

from icml25.data import (
    cache_dir,
    cached_npz,
    dirichlet_partition,
    load_breast_cancer_split,
    load_diabetes_split,
    load_digits_split,
)


def test_digits_scaled_and_split_is_seeded():
    a, b = load_digits_split(seed=3), load_digits_split(seed=3)
    assert a.X_train.min() >= 0 and a.X_train.max() <= 1 and a.X_train.shape[1] == 64
    assert np.array_equal(a.y_test, b.y_test)
    assert len(a.y_train) + len(a.y_test) == 1797
    assert not np.array_equal(a.y_test, load_digits_split(seed=4).y_test)


def test_other_bundled_sets():
    d = load_diabetes_split(test_size=0.5, seed=0)
    assert d.X_train.shape[1] == 10 and len(d.y_train) + len(d.y_test) == 442
    c = load_breast_cancer_split(seed=0)
    assert c.X_train.shape[1] == 30 and set(np.unique(c.y_train)) == {0, 1}


@pytest.mark.parametrize(("bad", "exc"), [(0.0, ValueError), (1.0, ValueError), (-0.2, ValueError),
                                          (float("nan"), ValueError), ("0.3", TypeError), (True, TypeError)])
def test_bad_test_size(bad, exc):
    with pytest.raises(exc, match=r"test_size must be a real number in \(0, 1\), got"):
        load_digits_split(test_size=bad)


def test_bad_seed_type():
    with pytest.raises(TypeError, match="seed"):
        load_diabetes_split(seed=1.5)


def test_dirichlet_partition_covers_all_indices_once():
    labels = np.repeat(np.arange(10), 50)
    shards = dirichlet_partition(labels, n_clients=7, alpha=0.3, seed=1)
    joined = np.sort(np.concatenate(shards))
    assert np.array_equal(joined, np.arange(500))
    again = dirichlet_partition(labels, n_clients=7, alpha=0.3, seed=1)
    assert all(np.array_equal(x, y) for x, y in zip(shards, again, strict=True))


def test_dirichlet_skew_grows_as_alpha_shrinks():
    labels = np.repeat(np.arange(10), 100)

    def mean_classes(alpha):
        shards = dirichlet_partition(labels, n_clients=10, alpha=alpha, seed=0)
        return np.mean([len(np.unique(labels[s])) for s in shards])

    assert mean_classes(0.05) < mean_classes(100.0) == 10


@pytest.mark.parametrize("kwargs, match", [
    ({"n_clients": 0, "alpha": 1.0}, "n_clients"),
    ({"n_clients": 2, "alpha": -1.0}, "alpha"),
    ({"n_clients": 2, "alpha": float("nan")}, "alpha"),
    ({"n_clients": 200, "alpha": 1.0, "min_size": 5}, "cannot give"),
])
def test_dirichlet_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dirichlet_partition(np.repeat(np.arange(3), 10), **kwargs)


def test_dirichlet_bad_seed_type():
    with pytest.raises(TypeError, match="seed"):
        dirichlet_partition(np.arange(10), 2, 1.0, seed="x")


def test_cache_builds_once(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML25_CACHE", str(tmp_path))
    calls = []

    def make():
        calls.append(1)
        return {"x": np.arange(4)}

    assert cache_dir() == tmp_path
    first = cached_npz("demo_seed0", make)
    second = cached_npz("demo_seed0", make)
    assert np.array_equal(first["x"], second["x"]) and len(calls) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["demo_seed0.npz"]
    with pytest.raises(ValueError, match="plain file name"):
        cached_npz("../escape", make)


def test_digits_expert_stream_checks_its_arguments():
    from icml25.data.expert_advice import digits_expert_stream

    advice, losses = digits_expert_stream(3, 20, seed=0, max_depth=(1, 2))
    assert advice.shape == (20, 3) and losses.shape == (20, 10)
    with pytest.raises(ValueError, match="n_experts must be an integer >= 1"):
        digits_expert_stream(0, 20)
    with pytest.raises(TypeError, match="horizon must be an integer >= 1"):
        digits_expert_stream(3, 20.0)
    with pytest.raises(ValueError, match=r"n_features must be an integer in \[1, 64\]"):
        digits_expert_stream(3, 20, n_features=65)
    with pytest.raises(ValueError, match="max_depth must be a pair"):
        digits_expert_stream(3, 20, max_depth=(4, 2))


def test_bundled_split_seed_is_a_seed_like_everywhere():
    same = load_diabetes_split(seed=3), load_diabetes_split(seed=3)
    np.testing.assert_array_equal(same[0].y_test, same[1].y_test)
    assert load_diabetes_split(seed=None).X_train.shape == same[0].X_train.shape
    with pytest.raises(ValueError, match="seed"):
        load_diabetes_split(seed=-1)


def test_cache_checks_name_and_make(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML25_CACHE", str(tmp_path))
    with pytest.raises(TypeError, match="make must be callable"):
        cached_npz("demo", 3)
    with pytest.raises(TypeError, match="name must be a str"):
        cached_npz(None, lambda: {"x": np.arange(2)})
    with pytest.raises(TypeError, match="make must return a dict"):
        cached_npz("demo", lambda: [np.arange(2)])
