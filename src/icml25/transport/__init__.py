"""Optimal transport on trees and graphs."""

from icml25.transport.tree_wasserstein import subtree_masses, tree_wasserstein, tree_wasserstein_pairwise
from icml25.transport.trees import average_linkage_tree, cluster_tree, quadtree, single_linkage_tree
from icml25.transport.ultratwd import (
    UltrametricTree,
    UltraTWD,
    WeightedTree,
    fit_ultrametric,
    is_ultrametric,
    subdominant_ultrametric,
    tree_fit_error,
    ultratwd,
    ultratwd_pairwise,
)
from icml25.transport.wilt import WLLabelingTree, distill, rmse_without_outliers

__all__ = [
    "subtree_masses",
    "tree_wasserstein",
    "tree_wasserstein_pairwise",
    "UltraTWD",
    "UltrametricTree",
    "WeightedTree",
    "average_linkage_tree",
    "cluster_tree",
    "fit_ultrametric",
    "is_ultrametric",
    "quadtree",
    "single_linkage_tree",
    "subdominant_ultrametric",
    "tree_fit_error",
    "ultratwd",
    "ultratwd_pairwise",
    "WLLabelingTree",
    "distill",
    "rmse_without_outliers",
]
