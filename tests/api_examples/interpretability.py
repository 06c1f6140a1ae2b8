"""Valid calls of ``icml25.interpretability`` (model-independence tests, sparse autoencoders)."""

import functools
import os
import tempfile

import numpy as np

from api_examples._core import Example, Exempt
from icml25 import interpretability as mi


def _torch():
    import torch

    return torch


def _randn(*shape, seed=0):
    torch = _torch()
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# a forward pass propagates NaN as torch does, takes any leading batch dimensions and an empty batch
_FORWARD = {"x": ("nan", "ndim", "empty")}
_SAE_FORWARD = {"x": "nan"}
_DEVICE = {"device": "any torch device spec (None: the default device)"}
_PATH = {"path": "a filesystem path: any name is a valid folder name"}
_TMP = tempfile.mkdtemp(prefix="icml25-sae-")
# models take any leading batch dimensions (a sequence model takes (batch, seq, d)), so inputs[None] is valid
_INPUTS = {"inputs": "ndim"}


@functools.cache
def _glu(seed=1):
    return mi.TinyGLU(d_in=8, d=4, h=8, n_blocks=2, n_out=3, seed=seed)


def _pair():
    return {"model1": _glu(1), "model2": _glu(2)}


def _inputs():
    return {**_pair(), "inputs": _randn(32, 8)}


def _sae(cls=None, **kw):
    cls = cls or mi.BatchTopKSAE
    return cls(d_in=4, d_sae=8, k=2, seed=0, **kw)


@functools.cache
def _saved_sae():
    return str(_sae().save(os.path.join(_TMP, "saved")))


def _block(x):
    return x * 0.5


def _features():
    return mi.HierarchicalFeatures(n_parents=2, children_per_parent=2, d=8, seed=0)


def _absorption_kwargs():
    x, active, _ = _features().sample(64, seed=1)
    f = _torch().relu(_randn(64, 8, seed=2))
    return {"f": f, "active": active, "parents": [0, 1], "children": [[2, 3], [4, 5]], "latent_of": [0, 1]}


def _orthogonal():
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))
    return q


_PATTERNS = {"gate_pattern": "mlp.gate_proj", "up_pattern": "mlp.up_proj", "down_pattern": "mlp.down_proj"}

EXAMPLES = {
    # results
    "icml25.interpretability.BlockTest": Exempt("record"),
    "icml25.interpretability.IndependenceTest": Exempt("record"),
    "icml25.interpretability.PermTestResult": Exempt("record"),
    "icml25.interpretability.TrainHistory": Exempt("record"),
    # models
    "icml25.interpretability.RMSNorm": Example(mi.RMSNorm, {"eps": 1e-6}, nonneg=["eps"]),
    "icml25.interpretability.RMSNorm.forward": Example(lambda **kw: mi.RMSNorm()(**kw), lambda: {"x": _randn(5, 4)},
                                                       allow=_FORWARD),
    "icml25.interpretability.GLUMLP": Example(mi.GLUMLP, {"d": 4, "h": 8, "seed": 0}, positive=["d", "h"]),
    "icml25.interpretability.GLUMLP.forward": Example(lambda **kw: mi.GLUMLP(4, 8)(**kw),
                                                      lambda: {"x": _randn(5, 4)}, allow=_FORWARD),
    "icml25.interpretability.TinyGLU": Example(mi.TinyGLU, {"d_in": 8, "d": 4, "h": 8, "n_blocks": 2, "n_out": 3,
                                                            "seed": 0},
                                               positive=["d_in", "d", "h", "n_blocks", "n_out"]),
    "icml25.interpretability.TinyGLU.forward": Example(lambda **kw: _glu()(**kw), lambda: {"x": _randn(5, 8)},
                                                       allow=_FORWARD),
    # statistics and tests
    "icml25.interpretability.fisher_combine": Example(mi.fisher_combine, {"pvalues": [0.2, 0.5]}),
    "icml25.interpretability.spearman_pvalue": Example(
        mi.spearman_pvalue, lambda: {"perm_a": np.arange(8), "perm_b": np.array([1, 0, 2, 3, 5, 4, 7, 6]),
                                     "alternative": "two-sided"}, paired=[("perm_a", "perm_b")]),
    "icml25.interpretability.match_rows": Example(
        mi.match_rows, lambda: {"A": np.random.default_rng(0).standard_normal((6, 3)),
                                "B": np.random.default_rng(1).standard_normal((6, 3)), "metric": "cosine"}),
    "icml25.interpretability.phi_l2": Example(mi.phi_l2, _pair),
    "icml25.interpretability.phi_cosine": Example(mi.phi_cosine, _pair),
    "icml25.interpretability.phi_jsd": Example(mi.phi_jsd, _inputs, allow=_INPUTS),
    "icml25.interpretability.phi_u": Example(mi.phi_u, lambda: {**_pair(), "up_pattern": "mlp.up_proj",
                                                                "alternative": "two-sided"}),
    "icml25.interpretability.phi_h": Example(mi.phi_h, lambda: {**_inputs(), "hidden_pattern": "mlp.down_proj",
                                                                "alternative": "two-sided"}, allow=_INPUTS),
    "icml25.interpretability.weight_match_test": Example(mi.weight_match_test,
                                                         lambda: {**_pair(), "gate_pattern": "mlp.gate_proj",
                                                                  "up_pattern": "mlp.up_proj",
                                                                  "alternative": "two-sided"}),
    "icml25.interpretability.match_test": Example(mi.match_test, lambda: {**_inputs(), "block_pairs": "diagonal",
                                                                          "metric": "l2",
                                                                          "alternative": "two-sided"},
                                                  allow=_INPUTS),
    "icml25.interpretability.localize": Example(mi.localize, lambda: {**_inputs(), "threshold": 1e-6},
                                                positive=["threshold"], allow=_INPUTS),
    "icml25.interpretability.perm_test": Example(mi.perm_test, lambda: {**_pair(), "statistic": mi.phi_l2, "T": 19,
                                                                        "seed": 0, **_PATTERNS},
                                                 positive=["T"]),
    "icml25.interpretability.distill_glu": Example(mi.distill_glu, {"block": _block, "d_in": 4, "h": 8, "steps": 2,
                                                                    "batch_size": 8, "lr": 1e-3, "seed": 0},
                                                   positive=["d_in", "h", "steps", "batch_size", "lr"],
                                                   skip={"device": "any torch device spec"}),
    "icml25.interpretability.generalized_match_test": Example(
        mi.generalized_match_test, {"block1": _block, "block2": _block, "d_in": 4, "h": 8, "steps": 2,
                                    "n_inputs": 32, "lr": 1e-3, "seed": 0},
        positive=["d_in", "h", "steps", "n_inputs", "lr"]),
    # transformations
    "icml25.interpretability.permute_hidden": Example(mi.permute_hidden,
                                                      lambda: {"model": _glu(), "block": 0,
                                                               "perm": np.arange(8)[::-1].copy(), **_PATTERNS}),
    "icml25.interpretability.prune_hidden": Example(mi.prune_hidden, lambda: {"model": _glu(), "block": 1,
                                                                              "keep_idx": np.arange(6),
                                                                              **_PATTERNS}),
    "icml25.interpretability.reinit_block": Example(mi.reinit_block, lambda: {"model": _glu(), "block": 0, "seed": 3,
                                                                              **_PATTERNS}),
    "icml25.interpretability.rotate_residual": Example(mi.rotate_residual,
                                                       lambda: {"model": _glu(), "Q": _orthogonal(), "atol": 1e-5},
                                                       nonneg=["atol"]),
    # sparse autoencoders
    "icml25.interpretability.BatchTopKSAE": Example(mi.BatchTopKSAE, {"d_in": 4, "d_sae": 8, "k": 2, "seed": 0},
                                                    positive=["d_in", "d_sae", "k"], nonneg=["l1_coefficient"],
                                                    skip=_DEVICE),
    "icml25.interpretability.BatchTopKSAE.encode_pre": Example(lambda **kw: _sae().encode_pre(**kw),
                                                               lambda: {"x": _randn(5, 4)}, allow=_SAE_FORWARD),
    "icml25.interpretability.BatchTopKSAE.sparsify": Example(lambda **kw: _sae().sparsify(**kw),
                                                             lambda: {"pre": _torch().relu(_randn(5, 8))},
                                                             allow={"pre": "nan"}),
    "icml25.interpretability.BatchTopKSAE.encode": Example(lambda **kw: _sae().encode(**kw),
                                                           lambda: {"x": _randn(5, 4)}, allow=_SAE_FORWARD),
    "icml25.interpretability.BatchTopKSAE.decode": Example(lambda **kw: _sae().decode(**kw),
                                                           lambda: {"f": _torch().relu(_randn(5, 8)), "width": 4},
                                                           allow={"f": "nan"}, positive=["width"]),
    "icml25.interpretability.BatchTopKSAE.forward": Example(lambda **kw: _sae()(**kw), lambda: {"x": _randn(5, 4)},
                                                            allow=_SAE_FORWARD),
    "icml25.interpretability.BatchTopKSAE.prefix_reconstructions": Example(
        lambda **kw: _sae(mi.MatryoshkaSAE, matryoshka_widths=[2, 8]).prefix_reconstructions(**kw),
        lambda: {"x": _randn(5, 4), "widths": [2, 8]}, allow=_SAE_FORWARD),
    "icml25.interpretability.BatchTopKSAE.loss": Example(lambda **kw: _sae().loss(**kw),
                                                         lambda: {"x": _randn(5, 4), "aux_loss_coefficient": 0.03,
                                                                  "dead_tokens": 10, "seed": 0},
                                                         nonneg=["aux_loss_coefficient"], positive=["dead_tokens"]),
    "icml25.interpretability.BatchTopKSAE.update_training_stats": Example(
        lambda **kw: _sae().update_training_stats(**kw),
        lambda: {"f": _torch().relu(_randn(5, 8)), "update_threshold": True, "beta": 0.9}, nonneg=["beta"]),
    "icml25.interpretability.BatchTopKSAE.save": Example(lambda **kw: _sae().save(**kw),
                                                         {"path": os.path.join(_TMP, "out")},
                                                         skip=_PATH),
    "icml25.interpretability.MatryoshkaSAE": Example(
        mi.MatryoshkaSAE, {"d_in": 4, "d_sae": 8, "k": 2, "matryoshka_widths": [2, 8], "group_weights": [0.5, 0.5],
                           "seed": 0},
        positive=["d_in", "d_sae", "k", "n_prefixes", "pareto_alpha"], nonneg=["l1_coefficient"], skip=_DEVICE),
    "icml25.interpretability.load_sae": Example(mi.load_sae, lambda: {"path": _saved_sae()},
                                                skip={"path": "a folder path; a missing folder raises "
                                                              "FileNotFoundError, the standard exception for it",
                                                      **_DEVICE}),
    "icml25.interpretability.HierarchicalFeatures": Example(
        mi.HierarchicalFeatures, {"n_parents": 2, "children_per_parent": 2, "n_independent": 1, "d": 8,
                                  "p_parent": 0.25, "p_child_given_parent": 0.4, "magnitude": (0.5, 1.5),
                                  "noise_std": 0.01, "max_cos": 0.9, "seed": 0},
        positive=["n_parents", "children_per_parent", "d", "max_cos"],
        nonneg=["p_parent", "p_child_given_parent", "noise_std"]),
    "icml25.interpretability.HierarchicalFeatures.sample": Example(lambda **kw: _features().sample(**kw),
                                                                   {"n": 16, "seed": 0}, positive=["n"]),
    "icml25.interpretability.HierarchicalFeatures.batches": Example(lambda **kw: next(_features().batches(**kw)),
                                                                    {"batch_size": 16, "seed": 0},
                                                                    positive=["batch_size"]),
    "icml25.interpretability.fvu": Example(mi.fvu, lambda: {"x": _randn(16, 4), "x_hat": _randn(16, 4, seed=1)},
                                           paired=[("x", "x_hat")]),
    "icml25.interpretability.l0": Example(mi.l0, lambda: {"f": _torch().relu(_randn(16, 8))}),
    "icml25.interpretability.match_latents_f1": Example(
        mi.match_latents_f1, lambda: {"f": _torch().relu(_randn(64, 8)), "active": _features().sample(64, seed=1)[1]},
        paired=[("f", "active")]),
    "icml25.interpretability.match_latents_cosine": Example(
        mi.match_latents_cosine, lambda: {"W_dec": _randn(8, 4), "directions": _randn(3, 4, seed=1)}),
    "icml25.interpretability.absorption_rate": Example(mi.absorption_rate, _absorption_kwargs,
                                                       paired=[("f", "active")]),
    "icml25.interpretability.evaluate_sae": Example(mi.evaluate_sae, lambda: {"sae": _sae(), "x": _randn(16, 4),
                                                                              "batch_size": 8},
                                                    positive=["batch_size"]),
    "icml25.interpretability.geometric_median": Example(mi.geometric_median,
                                                        lambda: {"x": _randn(16, 4), "max_iter": 20, "tol": 1e-5},
                                                        positive=["max_iter"], nonneg=["tol"]),
    "icml25.interpretability.train_sae": Example(
        mi.train_sae, lambda: {"sae": _sae(), "data": _randn(64, 4), "steps": 3, "batch_size": 16,
                               "warmup_steps": 1, "threshold_start_step": 1, "threshold_beta": 0.9, "seed": 0,
                               "log_every": 1},
        positive=["steps", "batch_size", "max_grad_norm", "log_every"],
        nonneg=["aux_loss_coefficient", "threshold_beta"]),
}

EXAMPLES.update({
    "icml25.interpretability.BatchTopKSAE.load": Example(mi.BatchTopKSAE.load, lambda: {"path": _saved_sae()},
                                                         skip={"path": "any file name; a missing file raises "
                                                                       "FileNotFoundError",
                                                               "device": "any torch device spec"}),
})
