"""Optimal transport on trees and graphs."""

from icml25.transport.tree_wasserstein import subtree_masses, tree_wasserstein, tree_wasserstein_pairwise

__all__ = ["subtree_masses", "tree_wasserstein", "tree_wasserstein_pairwise"]
