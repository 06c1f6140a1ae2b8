"""Property prediction from sequences: a small GRU/Transformer regressor over token features (needs torch).

Both representations of the reproduction go through the same model: D-VAE node strings (a token
per vertex: one-hot label and the bit vector of edges from earlier vertices) and DIGGED rule
sequences (a token per rule: one-hot rule id and, by default, the content of the rule).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from icml25.graphs.dag_grammar.grammar import NONTERMINAL, DagGrammar
from icml25.utils.random import Seed, int_seed, seeded
from icml25.utils.validation import check_array, check_choice, check_consistent_length, check_scalar


class SequenceRegressor(nn.Module):
    """Regress a scalar from a padded batch of token feature vectors.

    ``kind='gru'``: a GRU, the last hidden state of each sequence; ``kind='transformer'``: a
    Transformer encoder with learned positions, mean-pooled over the real tokens.  Input
    ``x`` has shape ``(batch, time, n_features)``; ``lengths`` the number of real tokens.
    """

    def __init__(self, n_features: int, d_model: int = 64, layers: int = 1, kind: str = "gru",
                 max_len: int = 64, heads: int = 4):
        super().__init__()
        check_choice(kind, "kind", ("gru", "transformer"))
        for name, value in (("n_features", n_features), ("d_model", d_model), ("layers", layers),
                            ("max_len", max_len), ("heads", heads)):
            check_scalar(value, name, "int", min=1)
        self.kind = kind
        self.embed = nn.Linear(n_features, d_model)
        if kind == "gru":
            self.body = nn.GRU(d_model, d_model, num_layers=layers, batch_first=True)
        else:
            self.position = nn.Parameter(torch.zeros(max_len, d_model))
            block = nn.TransformerEncoderLayer(d_model, heads, 2 * d_model, dropout=0.0, batch_first=True)
            self.body = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.Linear(d_model, d_model), nn.ReLU(), nn.Linear(d_model, 1))

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        steps = torch.arange(x.shape[1], device=x.device)
        real = steps[None, :] < lengths[:, None]
        if self.kind == "gru":
            out, _ = self.body(h)
            pooled = out[torch.arange(x.shape[0], device=x.device), lengths - 1]
        else:
            out = self.body(h + self.position[: x.shape[1]], src_key_padding_mask=~real)
            pooled = (out * real[..., None]).sum(1) / lengths[:, None].to(out.dtype)
        return self.head(pooled).squeeze(-1)


def pad(features: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Stack per-sequence ``(length, n_features)`` arrays into ``(n, max_length, n_features)`` and lengths."""
    if len(features) == 0:
        raise ValueError("features must hold at least one sequence, got none")
    lengths = np.array([len(f) for f in features])
    if lengths.min() < 1:
        raise ValueError(f"features must have at least one token per sequence, got an empty one at {lengths.argmin()}")
    out = np.zeros((len(features), lengths.max(), features[0].shape[1]), dtype=np.float32)
    for i, f in enumerate(features):
        out[i, : len(f)] = f
    return out, lengths


def node_string_features(strings: Sequence[list[tuple]], labels: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Token features of node strings: one-hot label and the edge bits, padded to the longest string."""
    labels = list(labels)
    width = max(len(s) for s in strings)
    feats = []
    for s in strings:
        f = np.zeros((len(s), len(labels) + width), dtype=np.float32)
        for j, (label, bits) in enumerate(s):
            f[j, labels.index(label)] = 1.0
            f[j, len(labels): len(labels) + len(bits)] = bits
        feats.append(f)
    return pad(feats)


def rule_features(grammar: DagGrammar, content: bool = True) -> np.ndarray:
    """One row per rule: one-hot rule id and, with ``content`` (this implementation's addition), what the rule adds.

    The content is the count of each terminal label in the rhs, its number of terminal edges and
    of instructions, and whether it keeps a nonterminal.  With a few hundred graphs most rule
    ids are too rare to learn an embedding from alone.
    """
    labels = sorted({lab for rule in grammar.rules for lab in rule.terminal_counts}, key=repr)
    rows = []
    for r, rule in enumerate(grammar.rules):
        row = [0.0] * len(grammar.rules)
        row[r] = 1.0
        if content:
            terminal_edges = sum(
                1 for a, b in rule.rhs.edges
                if NONTERMINAL not in (rule.rhs.nodes[a]["label"], rule.rhs.nodes[b]["label"])
            )
            row += [float(rule.terminal_counts.get(lab, 0)) for lab in labels]
            row += [float(terminal_edges), float(len(rule.embedding)), float(rule.nonterminal is not None)]
        rows.append(row)
    return np.asarray(rows, dtype=np.float32)


def rule_sequence_features(grammar: DagGrammar, sequences: Sequence[Sequence[int]],
                           content: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Token features of rule sequences (rows of :func:`rule_features`), padded."""
    table = rule_features(grammar, content)
    return pad([table[list(seq)] for seq in sequences])


def cross_validated_rmse(x: np.ndarray, lengths: np.ndarray, y: np.ndarray, *, n_splits: int = 5,
                         seed: Seed = 0, epochs: int = 300, lr: float = 3e-3, weight_decay: float = 1e-4,
                         **model_kwargs) -> list[float]:
    """RMSE of a :class:`SequenceRegressor` on each of ``n_splits`` folds (full-batch Adam).

    Targets are standardised on the training part of each fold; RMSE is in the original units.
    """
    x = check_array(x, "x", ndim=3, dtype=np.float32)
    lengths = check_array(lengths, "lengths", ndim=1)
    y = check_array(y, "y", ndim=1, dtype=np.float64)
    check_consistent_length(x, lengths, y, names=("x", "lengths", "y"))
    n_splits = check_scalar(n_splits, "n_splits", "int", min=2, max=len(y))
    epochs = check_scalar(epochs, "epochs", "int", min=0)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    weight_decay = check_scalar(weight_decay, "weight_decay", "real", min=0.0)
    seed = int_seed(seed)
    rng = np.random.default_rng(seed)
    folds = np.array_split(rng.permutation(len(y)), n_splits)
    out = []
    for k, test in enumerate(folds):
        train = np.concatenate([f for j, f in enumerate(folds) if j != k])
        mean, scale = y[train].mean(), y[train].std() + 1e-12
        with seeded(seed * 1000 + k):
            model = SequenceRegressor(x.shape[2], max_len=max(64, x.shape[1]), **model_kwargs)
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
        xt, lt = torch.from_numpy(x[train]), torch.from_numpy(lengths[train]).long()
        yt = torch.from_numpy((y[train] - mean) / scale).float()
        for _ in range(epochs):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(xt, lt), yt)
            loss.backward()
            opt.step()
        with torch.no_grad():
            pred = model(torch.from_numpy(x[test]), torch.from_numpy(lengths[test]).long()).numpy() * scale + mean
        out.append(float(np.sqrt(np.mean((pred - y[test]) ** 2))))
    return out
