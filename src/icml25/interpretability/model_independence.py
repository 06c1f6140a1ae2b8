"""Independence Tests for Language Models (Zhu, Ahmed, Kuditipudi and Liang, ICML 2025): were two models trained apart?

Example
-------
>>> import torch
>>> from icml25.interpretability import TinyGLU, match_test, permute_hidden, perm_test, phi_l2, phi_u
>>> a, b = TinyGLU(seed=1), TinyGLU(seed=2)
>>> child = permute_hidden(a, 0, torch.randperm(64, generator=torch.Generator().manual_seed(0)))
>>> phi_u(a, b).p_value > 1e-3                                 # independent: a p-value, uniform under H0
True
>>> perm_test(a, a, phi_l2, T=99, seed=0).p_value                # constrained exact test: minimum 1/(T+1)
0.01
>>> match_test(a, child, torch.randn(256, 64)).p_value < 1e-12   # robust test sees through the permutation
True

Constrained setting (Sections 2-3): if initialisation is invariant to permuting hidden units and
training is permutation-equivariant, then under H0 "independent initialisations" the pair
``(theta1, theta2)`` has the law of ``(theta1, pi(theta2))`` for any hidden-unit permutation ``pi``.
``perm_test`` (Algorithm 1, PERMTEST) turns any similarity statistic into an exact p-value with T
permuted copies.  ``phi_u`` / ``phi_h`` align hidden units by linear assignment (Algorithm 2, MATCH)
on up-projection weights / hidden activations and read an exact p-value off the Spearman
correlation of the matched permutation with the identity (Algorithm 3), one per MLP block,
combined with Fisher's method (Algorithm 4).  Unconstrained setting (Section 4): ``match_test``
feeds the same inputs through both models and compares the matching found from gate-projection
activations with the one found from up-projection activations; the two agree only if the models
share weights, whatever hidden permutation or residual-stream rotation an adversary applied and
whatever the widths.  ``localize`` runs it for every pair of blocks to say which layers are
shared; ``generalized_match_test`` (Algorithm 5) first distils a block into a fresh GLU MLP.

Models are ``nn.Module``s (weight statistics also take state dicts); MLP blocks are found by
module-name patterns as in mergekit/Hugging Face (``mlp.gate_proj``, ``mlp.up_proj``,
``mlp.down_proj``).  ``TinyGLU`` is a small SwiGLU residual network with these names, and
``permute_hidden``, ``rotate_residual``, ``prune_hidden`` and ``reinit_block`` are the
output-preserving (or partially re-training) transformations the tests are evaluated against.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from scipy.stats import chi2, spearmanr
from scipy.stats import t as student_t
from torch import nn

from icml25.utils.random import Seed, int_seed, torch_generator
from icml25.utils.validation import (
    check_array,
    check_callable,
    check_choice,
    check_instance,
    check_scalar,
    check_sequence,
    check_tensor,
)

GATE, UP, DOWN = "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"
TINY = float(np.finfo(np.float64).tiny)
ModelLike = nn.Module | Mapping[str, torch.Tensor]

__all__ = [
    "BlockTest",
    "GLUMLP",
    "IndependenceTest",
    "PermTestResult",
    "RMSNorm",
    "TinyGLU",
    "distill_glu",
    "fisher_combine",
    "generalized_match_test",
    "localize",
    "match_rows",
    "match_test",
    "perm_test",
    "permute_hidden",
    "phi_cosine",
    "phi_h",
    "phi_jsd",
    "phi_l2",
    "phi_u",
    "prune_hidden",
    "reinit_block",
    "rotate_residual",
    "spearman_pvalue",
    "weight_match_test",
]


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BlockTest:
    """One block's test: block ``block1`` of model 1 against block ``block2`` of model 2.

    ``rho`` is the Spearman correlation behind ``p_value``; ``n_units`` the number of matched hidden
    units; ``truncated`` names the model whose extra hidden units were left unmatched (``None``
    when the widths agree); ``dropped`` counts dead units removed per model.
    """

    block1: int
    block2: int
    name1: str
    name2: str
    p_value: float
    rho: float
    n_units: int
    truncated: str | None = None
    dropped: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class IndependenceTest:
    """A test over several blocks: the per-block results and their Fisher combination."""

    method: str
    p_value: float
    fisher_statistic: float
    blocks: tuple[BlockTest, ...] = field(default_factory=tuple)

    @property
    def block_pvalues(self) -> list[float]:
        """The per-block p-values, in block order."""
        return [b.p_value for b in self.blocks]


@dataclass(frozen=True)
class PermTestResult:
    """PERMTEST output: the exact p-value, the observed statistic and the T permuted-copy values."""

    p_value: float
    observed: float
    null_values: np.ndarray


# --------------------------------------------------------------------------------------------
# Matching and p-values (Algorithms 2-4)
# --------------------------------------------------------------------------------------------
def _as_matrix(M: Any, name: str) -> np.ndarray:
    arr = check_array(M, name, ndim=2, dtype=np.float64)
    if min(arr.shape) == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (rows = hidden units), got shape {arr.shape}")
    return arr


def _match(A: np.ndarray, B: np.ndarray, metric: str) -> tuple[np.ndarray, str | None]:
    """LAP matching of the smaller row set into the larger one; returns (perm, truncated side)."""
    swapped = A.shape[0] > B.shape[0]
    small, large = (B, A) if swapped else (A, B)
    if metric == "cosine":
        sn = small / np.maximum(np.linalg.norm(small, axis=1, keepdims=True), TINY)
        ln = large / np.maximum(np.linalg.norm(large, axis=1, keepdims=True), TINY)
        rows, cols = linear_sum_assignment(sn @ ln.T, maximize=True)
    else:
        cost = (small**2).sum(1)[:, None] + (large**2).sum(1)[None, :] - 2.0 * small @ large.T
        rows, cols = linear_sum_assignment(cost)
    perm = np.empty(small.shape[0], dtype=np.int64)
    perm[rows] = cols
    if A.shape[0] == B.shape[0]:
        return perm, None
    return perm, ("A" if swapped else "B")


def match_rows(A: Any, B: Any, metric: str = "cosine") -> np.ndarray:
    """Algorithm 2 (MATCH): the linear assignment of rows of ``A`` to rows of ``B``.

    Rows are hidden units (weight rows or activation vectors).  ``metric="cosine"`` maximises the
    summed cosine similarity (the paper's weight matching), ``"l2"`` minimises summed squared
    distances (the official activation matching).  With equal row counts ``perm[i]`` is the row of
    ``B`` matched to row ``i`` of ``A``.  With different counts the smaller set is matched into the
    larger: if ``A`` has fewer rows, ``perm[i]`` indexes ``B``; otherwise ``perm[j]`` is the row of
    ``A`` matched to row ``j`` of ``B``.
    """
    check_choice(metric, "metric", ("cosine", "l2"))
    A, B = _as_matrix(A, "A"), _as_matrix(B, "B")
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"A and B must have the same number of columns, got {A.shape[1]} and {B.shape[1]}")
    return _match(A, B, metric)[0]


def spearman_pvalue(perm_a: Any, perm_b: Any, *, alternative: str = "two-sided") -> float:
    """Algorithm 3 (SPEARMAN): p-value of the Spearman correlation between two index vectors.

    Under H0 one of the permutations is uniformly random, and the t approximation of SciPy's
    ``spearmanr`` is accurate for the widths of MLP blocks (h >= 50); the result is clamped to the
    smallest positive float so that it can be combined with ``fisher_combine``.
    """
    return _spearman(perm_a, perm_b, alternative)[0]


def _spearman(perm_a: Any, perm_b: Any, alternative: str) -> tuple[float, float]:
    check_choice(alternative, "alternative", ("two-sided", "greater", "less"))
    a = check_array(perm_a, "perm_a", ndim=1, dtype=np.float64)
    b = check_array(perm_b, "perm_b", ndim=1, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"perm_a and perm_b must have the same length, got {a.size} and {b.size}")
    if a.size < 4:
        raise ValueError(f"at least 4 matched hidden units are needed for a Spearman p-value, got {a.size}")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 1.0, 0.0
    if np.unique(a).size < a.size or np.unique(b).size < b.size:  # ties: SciPy's mid-ranks
        res = spearmanr(a, b, alternative=alternative)
        p, rho = float(res.pvalue), float(res.statistic)
    else:  # matchings have distinct indices: ranks by argsort, then SciPy's t approximation
        ra, rb = np.argsort(np.argsort(a)) - (a.size - 1) / 2, np.argsort(np.argsort(b)) - (b.size - 1) / 2
        rho = float(np.clip(ra @ rb / (ra @ ra), -1.0, 1.0))
        dof = a.size - 2
        t = rho * math.sqrt(dof / (1.0 - rho**2)) if abs(rho) < 1 else math.copysign(math.inf, rho)
        p = {"two-sided": 2 * student_t.sf(abs(t), dof), "greater": student_t.sf(t, dof),
             "less": student_t.cdf(t, dof)}[alternative]
    return (1.0 if math.isnan(p) else min(max(float(p), TINY), 1.0)), rho


def fisher_combine(pvalues: Sequence[float]) -> float:
    """Algorithm 4 (FISHER): ``P(chi2_{2L} >= -2 sum log p_l)`` for L independent p-values."""
    return _fisher(pvalues)[0]


def _fisher(pvalues: Sequence[float]) -> tuple[float, float]:
    p = check_array(pvalues, "pvalues", dtype=np.float64).ravel()
    if p.size == 0:
        raise ValueError("pvalues must have at least 1 entry, got 0")
    if np.any(p < 0) or np.any(p > 1):
        raise ValueError(f"pvalues must lie in [0, 1], got {p.tolist()}")
    stat = float(-2.0 * np.log(np.maximum(p, TINY)).sum())
    return max(float(chi2.sf(stat, df=2 * p.size)), TINY), stat


def _combine(method: str, blocks: list[BlockTest]) -> IndependenceTest:
    p, stat = _fisher([b.p_value for b in blocks])
    return IndependenceTest(method=method, p_value=p, fisher_statistic=stat, blocks=tuple(blocks))


# --------------------------------------------------------------------------------------------
# Weights: state dicts, block discovery, architecture checks
# --------------------------------------------------------------------------------------------
def _weights(model: Any, name: str) -> dict[str, torch.Tensor]:
    if isinstance(model, nn.Module):
        return dict(model.state_dict())
    if isinstance(model, Mapping):
        if not all(isinstance(v, torch.Tensor) for v in model.values()):
            raise TypeError(f"{name} state dict must map names to tensors")
        return dict(model)
    raise TypeError(f"{name} must be an nn.Module or a state dict (a mapping of names to tensors), "
                    f"got {type(model).__name__}")


def _check_same_architecture(w1: Mapping[str, torch.Tensor], w2: Mapping[str, torch.Tensor]) -> None:
    hint = "weight statistics need the same architecture; match_test compares models of different architectures"
    for key in w1:
        if key not in w2:
            raise ValueError(f"parameter {key!r} of model1 is missing from model2 ({hint})")
        if tuple(w1[key].shape) != tuple(w2[key].shape):
            raise ValueError(f"parameter {key!r} has shape {tuple(w1[key].shape)} in model1 but "
                             f"{tuple(w2[key].shape)} in model2 ({hint})")
    extra = [k for k in w2 if k not in w1]
    if extra:
        raise ValueError(f"parameter {extra[0]!r} of model2 is missing from model1 ({hint})")
    for key, value in {**w1, **{f"{k} (model2)": v for k, v in w2.items()}}.items():
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise ValueError(f"parameter {key!r} contains NaN or infinite values")


def _block_prefixes(keys: Sequence[str], pattern: str) -> list[str]:
    """Prefixes ``p`` such that ``p + pattern + '.weight'`` is a key, in key order."""
    suffix = f"{pattern}.weight"
    return [k[: -len(suffix)] for k in keys if k == suffix or k.endswith("." + suffix)]


def _blocks_or_raise(keys: Sequence[str], pattern: str, what: str, arg: str = "up_pattern") -> list[str]:
    check_instance(pattern, arg, str, "a module-name pattern (a string)")
    prefixes = _block_prefixes(keys, pattern)
    if not prefixes:
        raise ValueError(f"{arg} {pattern!r} matches no parameter named '*{pattern}.weight' in {what}; set the "
                         f"name pattern of the MLP projections (e.g. gate_pattern='mlp.gate_proj', "
                         f"up_pattern='mlp.up_proj')")
    return prefixes


def _weight_rows(w: Mapping[str, torch.Tensor], key: str) -> np.ndarray:
    return w[key].detach().cpu().double().reshape(w[key].shape[0], -1).numpy()


def _block_test(b1: int, b2: int, n1: str, n2: str, perm_a: np.ndarray, perm_b: np.ndarray,
                truncated: str | None, alternative: str, dropped: tuple[int, int] = (0, 0)) -> BlockTest:
    p, rho = _spearman(perm_a, perm_b, alternative)
    return BlockTest(b1, b2, n1, n2, p, rho, int(perm_a.size), truncated, dropped)


def _side(truncated: str | None) -> str | None:
    return {"A": "model1", "B": "model2", None: None}[truncated]


# --------------------------------------------------------------------------------------------
# Constrained setting: statistics and PERMTEST
# --------------------------------------------------------------------------------------------
def phi_u(model1: ModelLike, model2: ModelLike, *, up_pattern: str = UP,
          alternative: str = "two-sided") -> IndependenceTest:
    """phi_U (Section 3): per block, LAP on cosine similarity of up-projection rows, then Spearman vs identity.

    Exact under the constrained null (the matched permutation is then uniform), combined over
    blocks with Fisher.  Evaded by a hidden-unit permutation or a residual rotation of either
    model (the matching is then compared with the wrong reference); see ``match_test``.
    """
    w1, w2 = _weights(model1, "model1"), _weights(model2, "model2")
    _check_same_architecture(w1, w2)
    blocks = []
    for i, prefix in enumerate(_blocks_or_raise(list(w1), up_pattern, "model1", "up_pattern")):
        key = f"{prefix}{up_pattern}.weight"
        perm, _ = _match(_weight_rows(w1, key), _weight_rows(w2, key), "cosine")
        blocks.append(_block_test(i, i, prefix, prefix, np.arange(perm.size), perm, None, alternative))
    return _combine("phi_u", blocks)


def weight_match_test(model1: ModelLike, model2: ModelLike, *, gate_pattern: str = GATE, up_pattern: str = UP,
                      alternative: str = "two-sided") -> IndependenceTest:
    """MATCH on weights: Spearman between the gate-row matching and the up-row matching, per block.

    Robust to hidden-unit permutations (both matchings move together) and to different widths, but
    not to a rotation of the residual stream (rows are compared in the residual basis).  Not exact:
    like ``match_test`` it behaves as a p-value under independence empirically.
    """
    w1, w2 = _weights(model1, "model1"), _weights(model2, "model2")
    p1 = _blocks_or_raise(list(w1), gate_pattern, "model1", "gate_pattern")
    p2 = _blocks_or_raise(list(w2), gate_pattern, "model2", "gate_pattern")
    check_instance(up_pattern, "up_pattern", str, "a module-name pattern (a string)")
    if len(p1) != len(p2):
        raise ValueError(f"model1 has {len(p1)} blocks and model2 {len(p2)}; use match_test(block_pairs=...)")
    blocks = []
    for i, (a, b) in enumerate(zip(p1, p2, strict=True)):
        rows = {}
        for arg, pattern in (("gate_pattern", gate_pattern), ("up_pattern", up_pattern)):
            for w, prefix, name in ((w1, a, "model1"), (w2, b, "model2")):
                if f"{prefix}{pattern}.weight" not in w:
                    raise ValueError(f"{arg} {pattern!r}: {name} has no parameter '{prefix}{pattern}.weight'")
            A, B = _weight_rows(w1, f"{a}{pattern}.weight"), _weight_rows(w2, f"{b}{pattern}.weight")
            if A.shape[1] != B.shape[1]:
                raise ValueError(f"{a}{pattern} reads {A.shape[1]} features in model1 but {B.shape[1]} in model2; "
                                 f"weight rows are not comparable (use match_test)")
            rows[pattern] = _match(A, B, "cosine")
        (pg, trunc), (pu, _) = rows[gate_pattern], rows[up_pattern]
        blocks.append(_block_test(i, i, a, b, pg, pu, _side(trunc), alternative))
    return _combine("weight_match", blocks)


def phi_l2(model1: ModelLike, model2: ModelLike) -> float:
    """Naive statistic phi_L2 = -||theta1 - theta2||_2 over all floating-point parameters (larger = closer)."""
    w1, w2 = _weights(model1, "model1"), _weights(model2, "model2")
    _check_same_architecture(w1, w2)
    sq = sum(float(((w1[k].double() - w2[k].double()) ** 2).sum()) for k in w1 if w1[k].is_floating_point())
    return -math.sqrt(sq)


def phi_cosine(model1: ModelLike, model2: ModelLike) -> float:
    """Naive statistic: cosine similarity of the flattened parameter vectors, without alignment."""
    w1, w2 = _weights(model1, "model1"), _weights(model2, "model2")
    _check_same_architecture(w1, w2)
    keys = [k for k in w1 if w1[k].is_floating_point()]
    a = torch.cat([w1[k].detach().cpu().double().ravel() for k in keys])
    b = torch.cat([w2[k].detach().cpu().double().ravel() for k in keys])
    return float(a @ b / max(float(a.norm() * b.norm()), TINY))


@torch.no_grad()
def phi_jsd(model1: nn.Module, model2: nn.Module, inputs: torch.Tensor) -> float:
    """Naive statistic phi_JSD = -mean Jensen-Shannon divergence (nats) of the two output distributions."""
    out1, out2 = _forward(model1, inputs, "model1"), _forward(model2, inputs, "model2")
    if out1.shape != out2.shape:
        raise ValueError(f"the models' outputs differ in shape: {tuple(out1.shape)} and {tuple(out2.shape)}")
    lp, lq = out1.double().log_softmax(-1), out2.double().log_softmax(-1)
    lm = torch.logaddexp(lp, lq) - math.log(2.0)
    jsd = 0.5 * ((lp.exp() * (lp - lm)).sum(-1) + (lq.exp() * (lq - lm)).sum(-1))
    return -float(jsd.mean())


def phi_h(model1: nn.Module, model2: nn.Module, inputs: torch.Tensor, *, hidden_pattern: str = DOWN,
          alternative: str = "two-sided") -> IndependenceTest:
    """phi_H (Section 3): phi_U on hidden activations (the inputs of ``hidden_pattern``) on fixed inputs.

    Rows are hidden units, columns the activations on ``inputs``; exact under the constrained null
    and unaffected by a rotation of the residual stream (but not by a hidden-unit permutation).
    """
    acts1, acts2 = _activations(model1, model2, inputs, (hidden_pattern,), ("hidden_pattern",), hook="input")
    if len(acts1) != len(acts2):
        raise ValueError(f"model1 has {len(acts1)} blocks and model2 {len(acts2)}")
    blocks = []
    for i, ((n1, a), (n2, b)) in enumerate(zip(acts1.items(), acts2.items(), strict=True)):
        A, B = a[hidden_pattern], b[hidden_pattern]
        if A.shape[0] != B.shape[0]:
            raise ValueError(f"block {i} has {A.shape[0]} hidden units in model1 and {B.shape[0]} in model2; "
                             f"phi_h compares against the identity and needs equal widths (use match_test)")
        keep = _alive([A], [B], i)
        perm, _ = _match(A[keep], B[keep], "cosine")
        dropped = (A.shape[0] - keep.size,) * 2
        blocks.append(_block_test(i, i, n1, n2, np.arange(perm.size), perm, None, alternative, dropped))
    return _combine("phi_h", blocks)


def _hidden_permutations(w: Mapping[str, torch.Tensor], patterns: tuple[str, str, str],
                         generator: torch.Generator) -> dict[str, torch.Tensor]:
    gate, up, down = patterns
    out = dict(w)
    for prefix in _blocks_or_raise(list(w), up, "model2", "up_pattern"):
        perm = torch.randperm(w[f"{prefix}{up}.weight"].shape[0], generator=generator)
        out.update(_permuted_block(w, prefix, perm, patterns))
    return out


def perm_test(model1: ModelLike, model2: ModelLike, statistic: Callable[[Any, Any], float], *, T: int = 99,
              seed: Seed | torch.Generator = 0,
              transform: str | Callable[[dict[str, torch.Tensor], torch.Generator], dict[str, torch.Tensor]]
              = "hidden_perm", gate_pattern: str = GATE, up_pattern: str = UP,
              down_pattern: str = DOWN) -> PermTestResult:
    """Algorithm 1 (PERMTEST): exact p-value ``(1 + #{t: phi_t >= phi_0}) / (T + 1)``.

    ``statistic(model1, model2)`` is any similarity (larger = more similar), called on the original
    pair and on T copies of ``model2`` whose hidden units are independently, uniformly permuted in
    every MLP block (``transform="hidden_perm"``; or a callable ``(state_dict, generator) -> state_dict``
    drawing from another transformation class).  The copies have the same type as ``model2``
    (a module or a state dict).  Valid for any statistic and any training data under the
    constrained null; the smallest reachable p-value is ``1 / (T + 1)``.  ``seed`` draws the permutations
    (a ``torch.Generator`` is used as is and advanced).
    """
    check_callable(statistic, "statistic")
    T = check_scalar(T, "T", "int", min=1)
    if T < 19:
        warnings.warn(f"with T = {T} permuted copies the p-value cannot go below {1 / (T + 1):.3g} (use T >= 19)",
                      stacklevel=2)
    w1, w2 = _weights(model1, "model1"), _weights(model2, "model2")
    _check_same_architecture(w1, w2)
    if transform == "hidden_perm":
        patterns = (gate_pattern, up_pattern, down_pattern)
        draw: Callable = lambda w, g: _hidden_permutations(w, patterns, g)  # noqa: E731
    elif callable(transform):
        draw = transform
    else:
        raise ValueError(f"transform must be 'hidden_perm' or a callable (state_dict, generator) -> state_dict, "
                         f"got {transform!r}")
    generator = torch_generator(seed)
    observed = float(statistic(model1, model2))
    holder = copy.deepcopy(model2) if isinstance(model2, nn.Module) else None
    null = np.empty(T)
    for t in range(T):
        permuted = draw(w2, generator)
        if holder is not None:
            holder.load_state_dict(permuted)
            null[t] = float(statistic(model1, holder))
        else:
            null[t] = float(statistic(model1, permuted))
    if math.isnan(observed) or np.isnan(null).any():
        raise ValueError("the statistic returned NaN")
    return PermTestResult(p_value=float((1 + np.sum(null >= observed)) / (T + 1)), observed=observed, null_values=null)


# --------------------------------------------------------------------------------------------
# Unconstrained setting: activation MATCH, localisation, generalised test
# --------------------------------------------------------------------------------------------
def _forward(model: Any, inputs: torch.Tensor, name: str) -> torch.Tensor:
    if not isinstance(model, nn.Module):
        raise TypeError(f"{name} must be an nn.Module to run inputs through it (got {type(model).__name__}); "
                        f"load a state dict into its module first")
    check_instance(inputs, "inputs", torch.Tensor, "a torch.Tensor")
    if inputs.is_floating_point() and not bool(torch.isfinite(inputs).all()):
        raise ValueError("inputs must contain only finite values, got NaN or inf")
    if inputs.ndim < 1 or inputs.numel() == 0:
        raise ValueError(f"inputs must hold at least one sample, got shape {tuple(inputs.shape)}")
    was_training = model.training
    model.eval()
    try:
        return model(inputs)
    except (RuntimeError, ValueError) as exc:
        raise ValueError(f"{name} cannot take inputs of shape {tuple(inputs.shape)} ({exc}); "
                         f"the test feeds identical inputs to both models") from exc
    finally:
        model.train(was_training)


@torch.no_grad()
def _activations(model1: nn.Module, model2: nn.Module, inputs: torch.Tensor, patterns: Sequence[str],
                 args: Sequence[str] = ("gate_pattern", "up_pattern"),
                 hook: str = "output") -> tuple[dict[str, dict[str, np.ndarray]], ...]:
    """Per model: ``{block prefix: {pattern: (units, samples) array}}`` on ``inputs`` (``args``: the argument
    names of ``patterns``, for the messages)."""
    for arg, pattern in zip(args, patterns, strict=True):
        check_instance(pattern, arg, str, "a module-name pattern (a string)")
    result = []
    for model, name in ((model1, "model1"), (model2, "model2")):
        if not isinstance(model, nn.Module):
            raise TypeError(f"{name} must be an nn.Module to run inputs through it (got {type(model).__name__}); "
                            f"load a state dict into its module first")
        modules = dict(model.named_modules())
        prefixes = _blocks_or_raise([f"{n}.weight" for n in modules], patterns[0], name, args[0])
        store: dict[str, dict[str, list[torch.Tensor]]] = {p: {q: [] for q in patterns} for p in prefixes}
        handles = []
        for prefix in prefixes:
            for arg, pattern in zip(args, patterns, strict=True):
                module = modules.get(f"{prefix}{pattern}")
                if module is None:
                    raise ValueError(f"{arg} {pattern!r}: {name} has '{prefix}{patterns[0]}' but no "
                                     f"'{prefix}{pattern}'")
                sink = store[prefix][pattern]
                if hook == "output":
                    handles.append(module.register_forward_hook(lambda m, i, o, s=sink: s.append(o.detach())))
                else:
                    handles.append(module.register_forward_pre_hook(lambda m, i, s=sink: s.append(i[0].detach())))
        try:
            _forward(model, inputs, name)
        finally:
            for h in handles:
                h.remove()
        acts: dict[str, dict[str, np.ndarray]] = {}
        for prefix in prefixes:
            acts[prefix] = {}
            for pattern in patterns:
                if not store[prefix][pattern]:
                    raise ValueError(f"{name}'s module '{prefix}{pattern}' was not called on the inputs")
                a = torch.cat([x.reshape(-1, x.shape[-1]) for x in store[prefix][pattern]])
                arr = a.cpu().double().numpy().T
                if not np.all(np.isfinite(arr)):
                    raise ValueError(f"{name}'s activations of '{prefix}{pattern}' contain NaN or infinite values")
                acts[prefix][pattern] = arr
        result.append(acts)
    return tuple(result)


def _alive(mats1: Sequence[np.ndarray], mats2: Sequence[np.ndarray] | None, block: int,
           which: str = "model") -> np.ndarray:
    """Indices of hidden units with non-constant activations in every matrix (dead units are dropped)."""
    mats = list(mats1) + list(mats2 or [])
    keep = np.flatnonzero(np.all([np.ptp(m, axis=1) > 0 for m in mats], axis=0))
    n = mats[0].shape[0]
    if keep.size < n:
        warnings.warn(f"block {block}: dropping {n - keep.size} dead hidden unit(s) of {which} "
                      f"(constant activations on the inputs)", stacklevel=3)
    if keep.size < 4:
        raise ValueError(f"block {block}: only {keep.size} hidden units with non-constant activations; "
                         f"at least 4 are needed")
    return keep


def _match_block(i: int, j: int, n1: str, n2: str, a: dict[str, np.ndarray], b: dict[str, np.ndarray],
                 gate: str, up: str, metric: str, alternative: str) -> BlockTest:
    for pattern in (gate, up):
        if a[pattern].shape[1] != b[pattern].shape[1]:
            raise ValueError(f"'{n1}{pattern}' and '{n2}{pattern}' saw {a[pattern].shape[1]} and "
                             f"{b[pattern].shape[1]} activation vectors; inputs must be identical")
    k1 = _alive([a[gate], a[up]], None, i, "model1")
    k2 = _alive([b[gate], b[up]], None, j, "model2")
    pg, trunc = _match(a[gate][k1], b[gate][k2], metric)
    pu, _ = _match(a[up][k1], b[up][k2], metric)
    dropped = (a[gate].shape[0] - k1.size, b[gate].shape[0] - k2.size)
    return _block_test(i, j, n1, n2, pg, pu, _side(trunc), alternative, dropped)


def match_test(model1: nn.Module, model2: nn.Module, inputs: torch.Tensor, *, gate_pattern: str = GATE,
               up_pattern: str = UP, block_pairs: str | Sequence[tuple[int, int]] = "diagonal",
               metric: str = "l2", alternative: str = "two-sided") -> IndependenceTest:
    """phi_MATCH (Section 4): compare the gate-activation and up-activation matchings of each block pair.

    ``inputs`` go through both full models; for block ``l`` of model 1 and ``l'`` of model 2 the
    outputs of the gate projections (rows = hidden units, columns = input positions) are matched by
    LAP, likewise the up projections, and the p-value is that of the Spearman correlation between
    the two matchings.  Widths may differ (the smaller block is matched into the larger).
    ``block_pairs`` is ``"diagonal"`` (block l with block l), ``"all"`` (every pair, see
    ``localize``) or a list of ``(l, l')``.  The p-value of the result is the Fisher combination of
    the tested pairs (independent under H0 only for disjoint pairs, e.g. the diagonal).
    """
    check_choice(metric, "metric", ("cosine", "l2"))
    acts1, acts2 = _activations(model1, model2, inputs, (gate_pattern, up_pattern))
    names1, names2 = list(acts1), list(acts2)
    if isinstance(block_pairs, str):
        if block_pairs == "diagonal":
            pairs = [(i, i) for i in range(min(len(names1), len(names2)))]
        elif block_pairs == "all":
            pairs = [(i, j) for i in range(len(names1)) for j in range(len(names2))]
        else:
            raise ValueError(f"block_pairs must be 'diagonal', 'all' or a list of (l1, l2), got {block_pairs!r}")
    else:
        pairs = [tuple(p) for p in check_sequence(block_pairs, "block_pairs",
                                                  item=lambda p, name: check_sequence(p, name))]
        bad = [p for p in pairs if len(p) != 2 or not (0 <= p[0] < len(names1) and 0 <= p[1] < len(names2))]
        if not pairs or bad:
            raise ValueError(f"block_pairs must be a non-empty list of (l1, l2) with 0 <= l1 < {len(names1)} and "
                             f"0 <= l2 < {len(names2)}, got {list(block_pairs)!r}")
    blocks = [_match_block(i, j, names1[i], names2[j], acts1[names1[i]], acts2[names2[j]], gate_pattern,
                           up_pattern, metric, alternative) for i, j in pairs]
    return _combine("match", blocks)


def localize(model1: nn.Module, model2: nn.Module, inputs: torch.Tensor, *, threshold: float = 1e-6,
             gate_pattern: str = GATE, up_pattern: str = UP, metric: str = "l2") -> dict[int, int]:
    """Which block of model 2 derives from which block of model 1 (Section 4, localised testing).

    Runs ``match_test`` on every block pair and pairs blocks greedily, smallest p-value first, each
    block at most once, keeping pairs with ``p < threshold`` (1e-6 as in the official code).
    Returns ``{block of model1: block of model2}`` (0-based).
    """
    check_scalar(threshold, "threshold", "real", min=0.0, max=1.0, inclusive="neither")
    res = match_test(model1, model2, inputs, gate_pattern=gate_pattern, up_pattern=up_pattern, block_pairs="all",
                     metric=metric)
    mapping: dict[int, int] = {}
    for b in sorted(res.blocks, key=lambda b: (b.p_value, b.block1, b.block2)):
        if b.p_value < threshold and b.block1 not in mapping and b.block2 not in mapping.values():
            mapping[b.block1] = b.block2
    return dict(sorted(mapping.items()))


def distill_glu(block: Callable[[torch.Tensor], torch.Tensor], d_in: int, h: int, *, steps: int = 2000,
                batch_size: int = 512, lr: float = 1e-3, seed: Seed = 0, dtype: torch.dtype = torch.float32,
                device: str | torch.device = "cpu") -> GLUMLP:
    """Fit a fresh GLU MLP (width ``h``) to ``block`` on Gaussian inputs ``x ~ N(0, I_{d_in})`` (MSE, Adam).

    The first step of the generalised robust test (Algorithm 5): any MLP (GLU or not, retrained or
    not) is replaced by a GLU student whose gate and up activations MATCH can compare.  ``seed`` initialises
    the student and draws the inputs.
    """
    check_callable(block, "block")
    d_in, h, steps, batch_size = (check_scalar(v, name, "int", min=1) for v, name in (
        (d_in, "d_in"), (h, "h"), (steps, "steps"), (batch_size, "batch_size")))
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype (e.g. torch.float32), got {dtype!r}")
    seed = int_seed(seed)
    generator = torch_generator(seed)
    student = GLUMLP(d_in, h, seed=seed).to(device=device, dtype=dtype)
    opt = torch.optim.Adam(student.parameters(), lr=lr)
    with torch.enable_grad():  # also when called under torch.no_grad()
        for _ in range(steps):
            x = torch.randn(batch_size, d_in, generator=generator).to(device=device, dtype=dtype)
            with torch.no_grad():
                target = block(x)
            if target.shape != x.shape:
                raise ValueError(f"block must map (n, {d_in}) to (n, {d_in}), got {tuple(target.shape)}")
            opt.zero_grad()
            nn.functional.mse_loss(student(x), target).backward()
            opt.step()
    return student.eval()


def generalized_match_test(block1: Callable[[torch.Tensor], torch.Tensor],
                           block2: Callable[[torch.Tensor], torch.Tensor], d_in: int, h: int, *, steps: int = 2000,
                           n_inputs: int = 2048, lr: float = 1e-3, seed: Seed = 0,
                           alternative: str = "two-sided") -> BlockTest:
    """Algorithm 5: distil each block into a GLU MLP (``distill_glu``), then MATCH the two students.

    Both students see the same Gaussian probe inputs.  Students start from different seeds
    (``seed`` and ``seed + 1``): a shared start would make the students of any two blocks look
    related.
    """
    check_callable(block1, "block1")
    check_callable(block2, "block2")
    seed = int_seed(seed)
    n_inputs = check_scalar(n_inputs, "n_inputs", "int", min=1)
    check_choice(alternative, "alternative", ("two-sided", "greater", "less"))
    s1 = distill_glu(block1, d_in, h, steps=steps, lr=lr, seed=seed)
    s2 = distill_glu(block2, d_in, h, steps=steps, lr=lr, seed=seed + 1)
    probe = torch.randn(n_inputs, d_in, generator=torch_generator(seed + 2))
    acts1, acts2 = _activations(s1, s2, probe, ("gate_proj", "up_proj"))
    a, b = next(iter(acts1.values())), next(iter(acts2.values()))
    return _match_block(0, 0, "student1.", "student2.", a, b, "gate_proj", "up_proj", "l2", alternative)


# --------------------------------------------------------------------------------------------
# Models: TinyGLU (RMSNorm without gain, SwiGLU MLP blocks)
# --------------------------------------------------------------------------------------------
def _linear(d_in: int, d_out: int, generator: torch.Generator, bias: bool = True) -> nn.Linear:
    """A Linear layer initialised from ``generator`` only (never from the global torch RNG)."""
    return _init_linear(nn.utils.skip_init(nn.Linear, d_in, d_out, bias=bias), generator)


def _init_linear(layer: nn.Linear, generator: torch.Generator) -> nn.Linear:
    """PyTorch's default Linear initialisation U(-1/sqrt(fan_in), 1/sqrt(fan_in)), i.i.d. and seeded."""
    bound = 1.0 / math.sqrt(layer.in_features)
    with torch.no_grad():
        layer.weight.uniform_(-bound, bound, generator=generator)
        if layer.bias is not None:
            layer.bias.uniform_(-bound, bound, generator=generator)
    return layer


def _check_features(x: Any, d: int | None, name: str = "x") -> torch.Tensor:
    """Raise a clear error unless ``x`` is a floating tensor with at least one axis, the last of size ``d``."""
    check_tensor(x, name, floating=True)
    if x.ndim < 1 or (d is not None and x.shape[-1] != d):
        raise ValueError(f"{name} must have shape (..., {'d' if d is None else d}), got {tuple(x.shape)}")
    return x


class RMSNorm(nn.Module):
    """RMS normalisation without a per-channel gain (so a rotation of the residual stream commutes with it)."""

    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = check_scalar(eps, "eps", "real", min=0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x / rms(x)`` over the last axis; ``x`` : (..., d) floating tensor, any leading dimensions."""
        _check_features(x, None)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class GLUMLP(nn.Module):
    """SwiGLU MLP ``down(silu(gate(x)) * up(x))`` without biases, as in Llama.

    Weights are i.i.d. PyTorch-default Linear draws from ``seed`` (a ``torch.Generator`` is used as is and
    advanced); the caller's global torch RNG is not touched.
    """

    def __init__(self, d: int, h: int, *, seed: Seed | torch.Generator = 0) -> None:
        super().__init__()
        d, h = check_scalar(d, "d", "int", min=1), check_scalar(h, "h", "int", min=1)
        g = torch_generator(seed)
        self.gate_proj = _linear(d, h, g, bias=False)
        self.up_proj = _linear(d, h, g, bias=False)
        self.down_proj = _linear(h, d, g, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` : (..., d) floating tensor (any leading dimensions) -> (..., d)."""
        _check_features(x, self.gate_proj.in_features)
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class _Block(nn.Module):
    def __init__(self, d: int, h: int, generator: torch.Generator) -> None:
        super().__init__()
        self.norm = RMSNorm()
        self.mlp = GLUMLP(d, h, seed=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(self.norm(x))


class TinyGLU(nn.Module):
    """Input -> linear embed (d) -> residual blocks [RMSNorm -> SwiGLU MLP (h)] -> linear head.

    A Llama-shaped classifier small enough for CPU: parameter names are ``embed``,
    ``blocks.<l>.mlp.{gate,up,down}_proj`` and ``head``.  ``h`` is one width or one per block.
    Initialisation is i.i.d. (PyTorch's default Linear law) from ``seed``, hence invariant to
    hidden-unit permutations, as the constrained test assumes; the caller's global torch RNG is not touched.
    """

    def __init__(self, d_in: int = 64, d: int = 32, h: int | Sequence[int] = 64, n_blocks: int = 2,
                 n_out: int = 10, *, seed: Seed = 0) -> None:
        super().__init__()
        d_in, d, n_blocks, n_out = (check_scalar(v, name, "int", min=1) for v, name in (
            (d_in, "d_in"), (d, "d"), (n_blocks, "n_blocks"), (n_out, "n_out")))
        one = isinstance(h, (int, np.integer)) and not isinstance(h, bool)
        widths = check_sequence([h] * n_blocks if one else h, "h",
                                item=lambda w, name: check_scalar(w, name, "int", min=1))
        if len(widths) != n_blocks:
            raise ValueError(f"h must list one width per block ({n_blocks}), got {len(widths)}")
        g = torch_generator(seed)
        self.embed = _linear(d_in, d, g)
        self.blocks = nn.ModuleList(_Block(d, w, g) for w in widths)
        self.head = _linear(d, n_out, g)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` : (..., d_in) floating tensor (any leading dimensions) -> logits (..., n_out)."""
        _check_features(x, self.embed.in_features)
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


# --------------------------------------------------------------------------------------------
# Transformations (evasion attacks and partial re-use)
# --------------------------------------------------------------------------------------------
def _permuted_block(w: Mapping[str, torch.Tensor], prefix: str, perm: torch.Tensor,
                    patterns: tuple[str, str, str]) -> dict[str, torch.Tensor]:
    gate, up, down = patterns
    out = {}
    for arg, pattern in (("gate_pattern", gate), ("up_pattern", up)):
        if f"{prefix}{pattern}.weight" not in w:
            raise ValueError(f"{arg} {pattern!r}: no parameter '{prefix}{pattern}.weight'")
        for kind in ("weight", "bias"):
            key = f"{prefix}{pattern}.{kind}"
            if key in w:
                out[key] = w[key][perm.to(w[key].device)]
    key = f"{prefix}{down}.weight"
    if key not in w:
        raise ValueError(f"down_pattern {down!r}: no parameter {key!r}")
    out[key] = w[key][:, perm.to(w[key].device)]
    return out


def _block_prefix(w: Mapping[str, torch.Tensor], block: int, up: str) -> str:
    prefixes = _blocks_or_raise(list(w), up, "model", "up_pattern")
    return prefixes[check_scalar(block, "block", "int", min=0, max=len(prefixes) - 1)]


def _as_index(idx: Any, n: int, name: str, *, permutation: bool) -> torch.Tensor:
    arr = check_array(idx, name, ndim=1)
    if arr.dtype.kind not in "iu" and not np.all(arr == np.round(arr)):
        raise TypeError(f"{name} must hold integer indices, got {arr.tolist()}")
    t = torch.as_tensor(arr.astype(np.int64))
    if t.numel() == 0 or int(t.min()) < 0 or int(t.max()) >= n or t.unique().numel() != t.numel():
        raise ValueError(f"{name} must list distinct indices in [0, {n}), got {t.tolist()}")
    if permutation and t.numel() != n:
        raise ValueError(f"{name} must be a permutation of range({n}), got {t.numel()} indices")
    return t


def _with_weights(model: ModelLike, new: Mapping[str, torch.Tensor]) -> ModelLike:
    if isinstance(model, nn.Module):
        out = copy.deepcopy(model)
        out.load_state_dict({**out.state_dict(), **new})
        return out
    return {**model, **new}


def permute_hidden(model: ModelLike, block: int, perm: Any, *, gate_pattern: str = GATE, up_pattern: str = UP,
                   down_pattern: str = DOWN) -> ModelLike:
    """A copy of ``model`` with the hidden units of MLP ``block`` reordered by ``perm`` (function unchanged).

    Rows of the gate and up projections and columns of the down projection move together.
    Returns the type it was given (module or state dict).
    """
    w = _weights(model, "model")
    prefix = _block_prefix(w, block, up_pattern)
    p = _as_index(perm, w[f"{prefix}{up_pattern}.weight"].shape[0], "perm", permutation=True)
    return _with_weights(model, _permuted_block(w, prefix, p, (gate_pattern, up_pattern, down_pattern)))


def prune_hidden(model: nn.Module, block: int, keep_idx: Any, *, gate_pattern: str = GATE, up_pattern: str = UP,
                 down_pattern: str = DOWN) -> nn.Module:
    """A copy of ``model`` whose MLP ``block`` keeps only the hidden units ``keep_idx`` (in that order)."""
    check_instance(model, "model", nn.Module, "an nn.Module (pruning changes layer shapes)")
    out = copy.deepcopy(model)
    modules = dict(out.named_modules())
    prefix = _block_prefix(out.state_dict(), block, up_pattern)
    width = modules[f"{prefix}{up_pattern}"].out_features
    keep = _as_index(keep_idx, width, "keep_idx", permutation=False)
    if keep.numel() < 4:
        raise ValueError(f"keep at least 4 hidden units, got {keep.numel()}")
    for arg, pattern, rows in (("gate_pattern", gate_pattern, True), ("up_pattern", up_pattern, True),
                               ("down_pattern", down_pattern, False)):
        name = f"{prefix}{pattern}"
        old = modules.get(name)
        if not isinstance(old, nn.Linear):
            raise ValueError(f"{arg} {pattern!r}: {name!r} must be an nn.Linear to be pruned, "
                             f"got {type(old).__name__}")
        shape = (old.in_features, keep.numel()) if rows else (keep.numel(), old.out_features)
        new = nn.Linear(*shape, bias=old.bias is not None, device=old.weight.device, dtype=old.weight.dtype)
        with torch.no_grad():
            new.weight.copy_(old.weight[keep] if rows else old.weight[:, keep])
            if old.bias is not None:
                new.bias.copy_(old.bias[keep] if rows else old.bias)
        parent, _, child = name.rpartition(".")
        setattr(out.get_submodule(parent) if parent else out, child, new)
    return out


def reinit_block(model: nn.Module, block: int, *, seed: Seed = 0, gate_pattern: str = GATE, up_pattern: str = UP,
                 down_pattern: str = DOWN) -> nn.Module:
    """A copy of ``model`` with MLP ``block`` re-initialised from scratch (fresh i.i.d. weights from ``seed``)."""
    check_instance(model, "model", nn.Module, "an nn.Module")
    out = copy.deepcopy(model)
    modules = dict(out.named_modules())
    prefix = _block_prefix(out.state_dict(), block, up_pattern)
    g = torch_generator(seed)
    for arg, pattern in (("gate_pattern", gate_pattern), ("up_pattern", up_pattern), ("down_pattern", down_pattern)):
        layer = modules.get(f"{prefix}{pattern}")
        if not isinstance(layer, nn.Linear):
            raise ValueError(f"{arg} {pattern!r}: '{prefix}{pattern}' must be an nn.Linear, got {type(layer).__name__}")
        _init_linear(layer, g)
    return out


def rotate_residual(model: nn.Module, Q: Any, *, reads: Sequence[str] = ("gate_proj", "up_proj", "head"),
                    writes: Sequence[str] = ("embed", "down_proj"), atol: float = 1e-5) -> nn.Module:
    """A copy of ``model`` with its residual stream rotated by the orthogonal ``Q`` (outputs unchanged).

    Linear layers whose name ends with a ``writes`` pattern map into the residual stream
    (``W <- Q W``, ``b <- Q b``); those ending with a ``reads`` pattern read from it (``W <- W Q^T``).
    Exact only if every layer touching the stream is listed and normalisations have no per-channel
    gain (fold gains into the next layer first): modules with a learnt norm gain are rejected.
    """
    check_instance(model, "model", nn.Module, "an nn.Module")
    reads, writes = (check_sequence(v, arg, min_len=1, item=lambda p, n: check_instance(p, n, str))
                     for arg, v in (("reads", reads), ("writes", writes)))
    for name, m in model.named_modules():
        if isinstance(m, (nn.LayerNorm, nn.GroupNorm)) or (isinstance(m, nn.RMSNorm) and m.weight is not None):
            raise ValueError(f"module {name!r} ({type(m).__name__}) is not rotation-equivariant; use an RMS norm "
                             f"without gain (fold the gain into the following linear layer)")
    out = copy.deepcopy(model)
    ref = next(out.parameters())
    Qt = torch.from_numpy(check_array(Q, "Q", ndim=2, dtype=np.float64, copy=True)).to(ref.device)
    if Qt.shape[0] != Qt.shape[1]:
        raise ValueError(f"Q must be a square matrix, got shape {tuple(Qt.shape)}")
    atol = check_scalar(atol, "atol", "real", min=0.0)
    if float((Qt @ Qt.T - torch.eye(Qt.shape[0], dtype=Qt.dtype, device=Qt.device)).abs().max()) > atol:
        raise ValueError("Q must be orthogonal (Q @ Q.T == I)")
    touched = 0
    with torch.no_grad():
        for name, m in out.named_modules():
            if not isinstance(m, nn.Linear):
                continue
            if any(name.endswith(p) for p in writes):
                if m.out_features != Qt.shape[0]:
                    raise ValueError(f"{name!r} writes {m.out_features} features but Q is {Qt.shape[0]}x{Qt.shape[0]}")
                m.weight.copy_((Qt @ m.weight.double()).to(m.weight.dtype))
                if m.bias is not None:
                    m.bias.copy_((Qt @ m.bias.double()).to(m.bias.dtype))
                touched += 1
            elif any(name.endswith(p) for p in reads):
                if m.in_features != Qt.shape[0]:
                    raise ValueError(f"{name!r} reads {m.in_features} features but Q is {Qt.shape[0]}x{Qt.shape[0]}")
                m.weight.copy_((m.weight.double() @ Qt.T).to(m.weight.dtype))
                touched += 1
    if touched == 0:
        raise ValueError(f"no nn.Linear matches reads={list(reads)} or writes={list(writes)}")
    return out
