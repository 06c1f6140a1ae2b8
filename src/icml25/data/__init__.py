"""Offline data shared by the papers: bundled scikit-learn sets with seeded splits,
a seeded Dirichlet label partitioner and a per-user cache folder for generated sets.

Nothing here downloads; generators that later papers add live in submodules of this package.
"""

from icml25.data.bundled import Split, load_breast_cancer_split, load_diabetes_split, load_digits_split
from icml25.data.cache import cache_dir, cached_npz
from icml25.data.partition import dirichlet_partition

__all__ = [
    "Split",
    "cache_dir",
    "cached_npz",
    "dirichlet_partition",
    "load_breast_cancer_split",
    "load_diabetes_split",
    "load_digits_split",
]
