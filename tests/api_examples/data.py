"""Valid calls of ``icml25.data`` (bundled scikit-learn splits, the Dirichlet partitioner, the cache)."""

import contextlib
import os
import tempfile

import numpy as np

from api_examples._core import Example, Exempt
from icml25 import data


@contextlib.contextmanager
def _private_cache():
    """A throw-away cache folder (``ICML25_CACHE``) for one call; the previous setting comes back after."""
    before = os.environ.get("ICML25_CACHE")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ICML25_CACHE"] = tmp
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("ICML25_CACHE", None)
            else:
                os.environ["ICML25_CACHE"] = before


def _cached(**kw):
    with _private_cache():
        return data.cached_npz(**kw)


def _cache_dir():
    with _private_cache():
        return data.cache_dir()


def _make():
    return {"x": np.arange(3)}


_SPLIT = {"test_size": 0.25, "seed": 0}

EXAMPLES = {
    "icml25.data.Split": Exempt("record"),
    "icml25.data.cache_dir": Example(_cache_dir),
    "icml25.data.cached_npz": Example(_cached, {"name": "example-v1", "make": _make},
                                      skip={"name": "any plain file name is a valid cache name"}),
    "icml25.data.dirichlet_partition": Example(
        data.dirichlet_partition, lambda: {"labels": np.array([0, 1, 0, 1, 2, 2, 0, 1]), "n_clients": 2,
                                           "alpha": 0.5, "seed": 0, "min_size": 1, "max_tries": 10},
        positive=("n_clients", "alpha", "max_tries"), nonneg=("min_size",)),
    "icml25.data.load_breast_cancer_split": Example(data.load_breast_cancer_split, _SPLIT,
                                                    positive=("test_size",)),
    "icml25.data.load_diabetes_split": Example(data.load_diabetes_split, _SPLIT, positive=("test_size",)),
    "icml25.data.load_digits_split": Example(data.load_digits_split, _SPLIT, positive=("test_size",)),
}
