"""Data-free model inversion for generative replay (MFCL / TARGET recipe), as a teaching client runs it.

A conditional generator ``G(z, c)`` is trained so that a frozen classifier (the teacher) labels
its outputs ``c`` while the statistics of the teacher's BatchNorm inputs match the teacher's
stored statistics (DeepInversion's BN prior), plus a diversity term:

    L_gen = CE(f(G(z, c)), c) + lambda_bn * sum_l (||mu_l(G) - mu_l*||_2 + ||var_l(G) - var_l*||_2)
            + lambda_div * sum_k pbar_k log pbar_k,

with ``pbar`` the batch mean of the softmax over the classes being synthesised (a class-balanced batch).

The targets ``mu*, var*`` are the BN running statistics, or (``bn_targets``) per-class statistics
that a client computes on its own data — the teaching client's expertise (our reading of CAN).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from icml25.utils.random import Seed, int_seed, seeded, torch_generator
from icml25.utils.validation import check_instance, check_scalar, check_sequence, check_tensor

__all__ = ["ConditionalGenerator", "bn_layers", "bn_statistics", "bn_stat_loss", "masked_logits", "invert"]

_BN = (nn.BatchNorm1d, nn.BatchNorm2d)


class ConditionalGenerator(nn.Module):
    """``G(z, c)``: noise and a one-hot class through a 2-hidden-layer MLP with BatchNorm, tanh output.

    The tanh bounds every synthetic feature to [-1, 1]: the real features it imitates must be scaled
    into that range (the CAN pipeline checks it, :func:`~icml25.federated.can_fcl.can.build_fcl`).
    The weights are initialised from ``seed`` without touching the caller's global torch RNG.
    """

    def __init__(self, z_dim: int, n_classes: int, out_dim: int, hidden: int = 128, seed: Seed = 0) -> None:
        super().__init__()
        for name, value in (("z_dim", z_dim), ("n_classes", n_classes), ("out_dim", out_dim), ("hidden", hidden)):
            check_scalar(value, name, "int", min=1)
        self.z_dim, self.n_classes = z_dim, n_classes
        with seeded(seed):
            self.net = nn.Sequential(
                nn.Linear(z_dim + n_classes, hidden), nn.BatchNorm1d(hidden), nn.LeakyReLU(0.2),
                nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.LeakyReLU(0.2),
                nn.Linear(hidden, out_dim), nn.Tanh())

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """``(n, out_dim)`` samples from noise ``z`` (n, z_dim) and class ids ``labels`` (n,) in [0, n_classes)."""
        check_tensor(z, "z", ndim=2, floating=True, shape=(None, self.z_dim))
        _check_labels(labels, "labels", len(z), self.n_classes, "z")
        return self.net(torch.cat([z, F.one_hot(labels, self.n_classes).to(z.dtype)], dim=1))


def _check_labels(labels: object, name: str, n: int, n_classes: int | None, partner: str) -> None:
    check_tensor(labels, name, ndim=1)
    if labels.is_floating_point() or labels.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer class ids, got dtype {labels.dtype}")
    if len(labels) != n:
        raise ValueError(f"{partner} and {name} must have the same length, got {n}, {len(labels)}")
    if n_classes is not None and len(labels) and (int(labels.min()) < 0 or int(labels.max()) >= n_classes):
        raise ValueError(f"{name} must be class ids in [0, {n_classes}), got {labels.tolist()}")


def _forward(model: nn.Module, x: torch.Tensor, name: str) -> torch.Tensor:
    try:
        return model(x)
    except RuntimeError as exc:
        raise ValueError(f"{name} of shape {tuple(x.shape)} does not fit the model: {exc}") from exc


def bn_layers(model: nn.Module) -> list[nn.Module]:
    """The model's BatchNorm layers, in forward order of registration."""
    return [m for m in model.modules() if isinstance(m, _BN)]


def _capture(model: nn.Module):
    inputs: list[torch.Tensor] = []
    hooks = [m.register_forward_hook(lambda mod, args, out: inputs.append(args[0])) for m in bn_layers(model)]
    return inputs, hooks


def _moments(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    dims = [0] + list(range(2, x.ndim))
    return x.mean(dim=dims), x.var(dim=dims, unbiased=False)


@torch.no_grad()
def bn_statistics(model: nn.Module, X: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Mean and variance of every BatchNorm layer's input when ``model`` (eval mode) sees ``X`` (non-empty, finite)."""
    check_instance(model, "model", nn.Module, "an nn.Module")
    check_tensor(X, "X", floating=True, finite=True)
    if X.ndim == 0 or len(X) == 0:
        raise ValueError(f"X must hold at least one sample, got shape {tuple(X.shape)}")
    was_training = model.training
    model.eval()
    inputs, hooks = _capture(model)
    try:
        _forward(model, X, "X")
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    return [_moments(x) for x in inputs]


def bn_stat_loss(model: nn.Module, x: torch.Tensor, labels: torch.Tensor | None = None,
                 targets: Mapping[int, Sequence[tuple[torch.Tensor, torch.Tensor]]] | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits of ``model(x)`` and the BN-statistic matching loss (0 without BatchNorm layers).

    Without ``targets`` the whole batch is matched to each layer's running statistics; with
    ``targets`` (class -> per-layer (mean, var)) the samples of each listed class are matched to
    that class's statistics and the loss is averaged over classes.  ``x`` is a non-empty floating batch,
    ``labels`` (when given) one integer class id per row.
    """
    check_instance(model, "model", nn.Module, "an nn.Module")
    check_tensor(x, "x", floating=True)
    if x.ndim == 0 or len(x) == 0:
        raise ValueError(f"x must hold at least one sample, got shape {tuple(x.shape)}")
    if labels is not None:
        _check_labels(labels, "labels", len(x), None, "x")
    if targets is not None:
        check_instance(targets, "targets", Mapping, "a mapping class -> per-layer (mean, var)")
    inputs, hooks = _capture(model)
    try:
        logits = _forward(model, x, "x")
    finally:
        for h in hooks:
            h.remove()
    loss = x.new_zeros(())
    if targets is None:
        for layer, h in zip(bn_layers(model), inputs, strict=True):
            mu, var = _moments(h)
            loss = loss + torch.linalg.vector_norm(mu - layer.running_mean) + torch.linalg.vector_norm(
                var - layer.running_var)
        return logits, loss
    groups = [c for c in targets if labels is not None and bool((labels == c).any())]
    for c in groups:
        rows = labels == c
        for (mu_t, var_t), h in zip(targets[c], inputs, strict=True):
            mu, var = _moments(h[rows])
            loss = loss + (torch.linalg.vector_norm(mu - mu_t) + torch.linalg.vector_norm(var - var_t)) / len(groups)
    return logits, loss


def masked_logits(logits: torch.Tensor, allowed: Sequence[int] | torch.Tensor) -> torch.Tensor:
    """Logits with every class outside ``allowed`` set to a large negative value (single-head CIL)."""
    mask = torch.ones(logits.shape[-1], dtype=torch.bool, device=logits.device)
    mask[torch.as_tensor(list(allowed) if not torch.is_tensor(allowed) else allowed, device=logits.device)] = False
    return logits.masked_fill(mask, -1e4)


def invert(teacher: nn.Module, classes: Sequence[int], *, n_classes: int, in_dim: int, n_per_class: int,
           steps: int = 300, batch_size: int = 64, z_dim: int = 32, hidden: int = 128, lambda_bn: float = 1.0,
           lambda_div: float = 1.0, lr: float = 1e-3, seen: Sequence[int] | None = None,
           bn_targets: Mapping[int, Sequence[tuple[torch.Tensor, torch.Tensor]]] | None = None,
           seed: Seed = 0) -> tuple[ConditionalGenerator, dict[int, torch.Tensor]]:
    """Train a conditional generator against the frozen ``teacher`` and draw ``n_per_class`` samples per class.

    ``seen`` lists the classes whose logits take part (default: all); ``bn_targets`` optionally
    gives per-class BN statistics (see :func:`bn_stat_loss`).  The generator and the samples live
    on the teacher's device.  ``seed`` fixes the generator's initialisation and its noise; the caller's
    global torch RNG is left untouched.  Returns the generator and ``{class: (n_per_class, in_dim) tensor}``,
    every value in [-1, 1] (tanh output): the teacher's inputs must live in that range too.
    """
    check_instance(teacher, "teacher", nn.Module, "an nn.Module")
    n_classes = check_scalar(n_classes, "n_classes", "int", min=1)
    in_dim = check_scalar(in_dim, "in_dim", "int", min=1)
    classes = check_sequence(classes, "classes", item=lambda v, n: check_scalar(v, n, "int"))
    if not classes or len(set(classes)) != len(classes) or not all(0 <= c < n_classes for c in classes):
        raise ValueError(f"classes must be distinct ids in [0, {n_classes}), got {classes}")
    for name, value in (("n_per_class", n_per_class), ("steps", steps), ("batch_size", batch_size),
                        ("z_dim", z_dim), ("hidden", hidden)):
        check_scalar(value, name, "int", min=1)
    lambda_bn = check_scalar(lambda_bn, "lambda_bn", "real", min=0.0)
    lambda_div = check_scalar(lambda_div, "lambda_div", "real", min=0.0)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    if seen is not None:
        seen = check_sequence(seen, "seen", item=lambda v, n: check_scalar(v, n, "int", min=0, max=n_classes - 1))
    if bn_targets is not None:
        check_instance(bn_targets, "bn_targets", Mapping, "a mapping class -> per-layer (mean, var)")
    seen = list(range(n_classes)) if seen is None else sorted({int(c) for c in seen} | set(classes))
    if lambda_bn and not bn_layers(teacher):
        warnings.warn("the teacher has no BatchNorm layer: the BN-statistic term is disabled", RuntimeWarning,
                      stacklevel=2)
    param = next(teacher.parameters())
    device, dtype = param.device, param.dtype
    seed = int_seed(seed)
    gen_seed = torch_generator(seed)
    generator = ConditionalGenerator(z_dim, n_classes, in_dim, hidden, seed=seed).to(device=device, dtype=dtype)
    was_training = teacher.training
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    labels_cycle = torch.tensor(classes, device=device).repeat(-(-batch_size // len(classes)))[:batch_size]
    opt = torch.optim.Adam(generator.parameters(), lr=lr)
    try:
        generator.train()
        for _ in range(steps):
            z = torch.randn(batch_size, z_dim, generator=gen_seed).to(device=device, dtype=dtype)
            x = generator(z, labels_cycle)
            logits, loss_bn = bn_stat_loss(teacher, x, labels_cycle, bn_targets)
            p_mean = F.softmax(masked_logits(logits, classes), dim=1).mean(dim=0)[classes]
            logits = masked_logits(logits, seen)
            loss_div = (p_mean * torch.log(p_mean + 1e-8)).sum()
            loss = F.cross_entropy(logits, labels_cycle) + lambda_bn * loss_bn + lambda_div * loss_div
            opt.zero_grad()
            loss.backward()
            opt.step()
        generator.eval()
        with torch.no_grad():
            samples = {}
            for c in classes:
                z = torch.randn(n_per_class, z_dim, generator=gen_seed).to(device=device, dtype=dtype)
                samples[c] = generator(z, torch.full((n_per_class,), c, device=device))
    finally:
        for p in teacher.parameters():
            p.requires_grad_(True)
        teacher.train(was_training)
    return generator, samples
