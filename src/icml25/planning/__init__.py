"""Planning: robust Monte-Carlo tree search under model ambiguity (robust_mcts)."""

from icml25.planning.ambiguity import (
    KINDS,
    chi2_worst,
    robust_expectation,
    robust_value_iteration,
    tv_worst,
    w1_worst,
    worst_case,
)
from icml25.planning.robust_mcts import (
    ChanceNode,
    DecisionNode,
    FrozenLake,
    GamblerProblem,
    GenerativeModel,
    RandomTreeMDP,
    RobustPowerUCT,
    SearchResult,
    TabularMDP,
    check_theory_exponents,
    power_mean,
    success_probability,
)

__all__ = [
    "KINDS",
    "ChanceNode",
    "DecisionNode",
    "FrozenLake",
    "GamblerProblem",
    "GenerativeModel",
    "RandomTreeMDP",
    "RobustPowerUCT",
    "SearchResult",
    "TabularMDP",
    "check_theory_exponents",
    "chi2_worst",
    "power_mean",
    "robust_expectation",
    "robust_value_iteration",
    "success_probability",
    "tv_worst",
    "w1_worst",
    "worst_case",
]
