"""Grokking in the Wild: Abramov, Steinbauer & Kasneci, "Grokking in the Wild: Data Augmentation for Real-World
Multi-Hop Reasoning with Transformers", ICML 2025 (arXiv 2504.20752).

Example
-------
>>> from icml25.reasoning.grokking_multihop import (TinyGPT, augment_with_synthetic_entities,
...     make_composition_splits, random_kg, train_facts)
>>> kg = random_kg(n_entities=50, n_relations=5, facts_per_entity=4, seed=0)
>>> splits = make_composition_splits(kg, phi=1.8, seed=0)                  # phi = #inferred / #atomic
>>> splits = augment_with_synthetic_entities(splits, target_phi=3.0, seed=0)  # synthetic heads raise phi
>>> model = TinyGPT(splits.vocab_size, d_model=32, n_layers=1, n_heads=2, seed=0)
>>> history = train_facts(model, splits, steps=20, batch_size=64, eval_every=10, seed=0)
>>> sorted(history.accuracy)
['atomic', 'test_id', 'test_ood', 'train_inferred']

The model is a small decoder-only GPT (the shared pre-norm block ``icml25.attention.transformer``,
learned positions) trained as in Wang et al. 2024: the input tokens of a fact are not scored, only
the next-token cross-entropy of the target entity; AdamW with weight decay on the matrices, linear
warm-up then a constant learning rate.  The data side (knowledge graph, composition splits with a
controlled inferred/atomic ratio phi, synthetic-entity augmentation, the GeoNames KG) lives in
``icml25.data.knowledge_graph`` and is re-exported here.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml25.attention.transformer import TransformerStack, init_gpt_weights
from icml25.data.knowledge_graph import (
    CompositionSplits,
    KnowledgeGraph,
    assert_no_leakage,
    augment_with_synthetic_entities,
    bridge_free_accuracy,
    geonames_kg,
    leakage_counts,
    make_composition_splits,
    random_kg,
)
from icml25.utils.random import Seed, as_generator, init_rng, torch_generator
from icml25.utils.validation import check_array, check_choice, check_instance, check_scalar, check_tensor

__all__ = [
    "KnowledgeGraph",
    "CompositionSplits",
    "random_kg",
    "geonames_kg",
    "make_composition_splits",
    "augment_with_synthetic_entities",
    "assert_no_leakage",
    "leakage_counts",
    "bridge_free_accuracy",
    "TinyGPT",
    "History",
    "train_facts",
    "evaluate",
    "steps_to_accuracy",
]

EVAL_SPLITS = ("atomic", "train_inferred", "test_id", "test_ood")


class TinyGPT(nn.Module):
    """Decoder-only GPT over fact tokens: token + learned position embeddings, ``n_layers`` causal
    pre-norm blocks, and a linear read-out of the hidden state at the query position.

    ``forward(tokens (B, L) long, positions (B,) long or None) -> logits (B, vocab_size)``; with
    ``positions=None`` the last position is read.  Only the query position goes through the head.
    ``seed`` fixes the initial weights (GPT-2 init) without touching the caller's global torch RNG;
    ``seed=None`` draws them from the global RNG, as ``nn`` layers do.
    """

    def __init__(self, vocab_size: int, d_model: int = 128, n_layers: int = 2, n_heads: int = 4, max_len: int = 4,
                 d_ff: int | None = None, dropout: float = 0.0, seed: Seed = None) -> None:
        super().__init__()
        self.vocab_size = check_scalar(vocab_size, "vocab_size", "int", min=1)
        self.max_len = check_scalar(max_len, "max_len", "int", min=1)
        self.d_model = check_scalar(d_model, "d_model", "int", min=1)
        n_layers = check_scalar(n_layers, "n_layers", "int", min=1)
        n_heads = check_scalar(n_heads, "n_heads", "int", min=1)
        dropout = check_scalar(dropout, "dropout", "real", min=0.0, max=1.0, inclusive="left")
        # the layers' default initialisation is overwritten below; with a seed it must not advance the caller's RNG
        with torch.random.fork_rng(devices=[]) if seed is not None else nullcontext():
            self.tok = nn.Embedding(vocab_size, d_model)
            self.pos = nn.Embedding(max_len, d_model)
            self.stack = TransformerStack(n_layers, d_model, n_heads, d_ff, dropout, causal=True)
            self.head = nn.Linear(d_model, vocab_size, bias=False)
        with init_rng(seed):
            init_gpt_weights(self, n_layers)

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        check_tensor(tokens, "tokens", ndim=2)
        if tokens.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"tokens must be an integer tensor, got dtype {tokens.dtype}")
        B, L = tokens.shape
        if not 1 <= L <= self.max_len:
            raise ValueError(f"tokens must have a length in [1, {self.max_len}], got {L}")
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.vocab_size):
            raise ValueError(f"tokens must have ids in [0, {self.vocab_size}), "
                             f"got [{int(tokens.min())}, {int(tokens.max())}]")
        if positions is None:
            positions = torch.full((B,), L - 1, dtype=torch.long, device=tokens.device)
        else:
            check_tensor(positions, "positions", ndim=1)
            if positions.dtype not in (torch.int64, torch.int32):
                raise TypeError(f"positions must be an integer tensor, got dtype {positions.dtype}")
            if positions.shape != (B,):
                raise ValueError(f"positions must have shape ({B},), got shape {tuple(positions.shape)}")
            if B and (positions.min() < 0 or positions.max() >= L):
                raise ValueError(f"positions must have values in [0, {L}), "
                                 f"got [{int(positions.min())}, {int(positions.max())}]")
        x = self.tok(tokens) + self.pos(torch.arange(L, device=tokens.device))
        h = self.stack(x)
        return self.head(h[torch.arange(B, device=tokens.device), positions.long()])


@dataclass
class History:
    """Per-split exact-match accuracy (and training loss, weight norm) at each evaluation step."""

    steps: list[int] = field(default_factory=list)
    accuracy: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in EVAL_SPLITS})
    loss: list[float] = field(default_factory=list)
    weight_norm: list[float] = field(default_factory=list)

    def final(self, split: str) -> float:
        """Accuracy on ``split`` at the last evaluation."""
        check_choice(split, "split", sorted(self.accuracy))
        return self.accuracy[split][-1] if self.accuracy[split] else float("nan")

    def to_dict(self) -> dict[str, object]:
        return {"steps": list(self.steps), "accuracy": {k: list(v) for k, v in self.accuracy.items()},
                "loss": list(self.loss), "weight_norm": list(self.weight_norm)}


def steps_to_accuracy(history: History, split: str = "test_id", level: float = 0.9) -> float:
    """First evaluated step at which ``split`` accuracy reaches ``level`` (``inf`` if never)."""
    check_instance(history, "history", History)
    check_choice(split, "split", sorted(history.accuracy))
    level = check_scalar(level, "level", "real")
    for step, acc in zip(history.steps, history.accuracy[split], strict=True):
        if acc >= level:
            return float(step)
    return math.inf


@torch.no_grad()
def evaluate(model: TinyGPT, splits: CompositionSplits, facts: np.ndarray, batch_size: int = 4096) -> float:
    """Exact-match accuracy of argmax at the query position on ``facts`` (an array of triples; nan if there are
    none)."""
    check_instance(model, "model", TinyGPT)
    check_instance(splits, "splits", CompositionSplits)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    facts = check_array(facts, "facts", dtype=None)
    if not len(facts):
        return float("nan")
    device = next(model.parameters()).device
    tokens, pos, targets = (torch.as_tensor(a, device=device) for a in splits.encode(facts))
    was_training = model.training
    model.eval()
    correct = 0
    for i in range(0, len(tokens), batch_size):
        pred = model(tokens[i:i + batch_size], pos[i:i + batch_size]).argmax(-1)
        correct += int((pred == targets[i:i + batch_size]).sum())
    model.train(was_training)
    return correct / len(tokens)


def train_facts(model: TinyGPT, splits: CompositionSplits, steps: int, batch_size: int = 512, lr: float = 1e-3,
                weight_decay: float = 0.1, warmup: int = 100, eval_every: int = 250, eval_size: int = 2000,
                grad_clip: float | None = 1.0, seed: Seed = 0, history: History | None = None) -> History:
    """Train on all atomic facts + the training inferred facts (shuffled epochs of ``batch_size``).

    Loss: cross-entropy of the target token only.  AdamW (``weight_decay`` on matrices and embeddings,
    not on biases and norms), linear warm-up for ``warmup`` steps, then constant ``lr``; gradients
    clipped to norm ``grad_clip`` (1.0, the Hugging Face Trainer default of Wang et al.; None: off).  Every
    ``eval_every`` steps (and at the end) records accuracy on the atomic facts and the training
    inferred facts (random samples of ``eval_size``), ``test_id`` and ``test_ood``.  Tensors are created
    on the model's device.  Pass a ``history`` to append to it.  ``seed`` drives the evaluation samples and
    the epoch shuffles (an explicit generator each; the global RNGs are not touched).
    """
    check_instance(model, "model", TinyGPT)
    check_instance(splits, "splits", CompositionSplits)
    if model.vocab_size < splits.vocab_size:
        raise ValueError(f"model must have vocab_size >= the splits' {splits.vocab_size} (build it after "
                         f"augmentation), got {model.vocab_size}")
    steps, batch_size = check_scalar(steps, "steps", "int", min=1), check_scalar(batch_size, "batch_size", "int", min=1)
    eval_every = check_scalar(eval_every, "eval_every", "int", min=1)
    eval_size = check_scalar(eval_size, "eval_size", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    weight_decay = check_scalar(weight_decay, "weight_decay", "real", min=0.0)
    warmup = check_scalar(warmup, "warmup", "int", min=0)
    if grad_clip is not None:
        grad_clip = check_scalar(grad_clip, "grad_clip", "real", min=0.0, inclusive="neither")
    if history is not None:
        check_instance(history, "history", History)
    device = next(model.parameters()).device
    rng = as_generator(seed)
    gen = torch_generator(seed)
    tokens, pos, targets = (torch.as_tensor(a, device=device) for a in splits.training_set())
    n = len(tokens)
    evals = {
        "atomic": splits.atomic[rng.permutation(len(splits.atomic))[:eval_size]],
        "train_inferred": splits.train_inferred[rng.permutation(len(splits.train_inferred))[:eval_size]],
        "test_id": splits.test_id,
        "test_ood": splits.test_ood,
    }
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(warmup, 1)))
    history = History() if history is None else history
    start = history.steps[-1] if history.steps else 0
    order = torch.randperm(n, generator=gen).to(device)
    cursor, losses = 0, []
    model.train()
    for step in range(1, steps + 1):
        if cursor + batch_size > n:
            order, cursor = torch.randperm(n, generator=gen).to(device), 0
        idx = order[cursor:cursor + batch_size]
        cursor += batch_size
        loss = F.cross_entropy(model(tokens[idx], pos[idx]), targets[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if step % eval_every == 0 or step == steps:
            history.steps.append(start + step)
            for name, facts in evals.items():
                history.accuracy.setdefault(name, []).append(evaluate(model, splits, facts))
            history.loss.append(float(np.mean(losses)))
            history.weight_norm.append(float(torch.sqrt(sum((p.detach() ** 2).sum() for p in decay))))
            losses = []
    return history
