"""Minimal message passing networks (GIN, GCN) in plain PyTorch, the models that WILT distils.

Part of the WILTing Trees implementation (``icml25.transport.wilt``); no PyTorch Geometric
needed.  Graphs are ``networkx.Graph`` objects with the node attribute ``label`` (one-hot encoded
over the model's ``node_labels``).  The graph embedding is the pooled output of the last
message-passing layer, before the linear prediction head (paper Sec. 3).

Example
-------
>>> from icml25.data.molecules import make_molecule_like
>>> from icml25.transport.wilt_mpnn import embed_graphs, train_mpnn
>>> graphs, y, _ = make_molecule_like(64, seed=0)
>>> model = train_mpnn(graphs, y, epochs=2, seed=0)
>>> embed_graphs(model, graphs).shape
(64, 64)
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import pairwise
from typing import Literal, NamedTuple

import networkx as nx
import numpy as np
import torch
from torch import nn

from icml25.utils.random import Seed, seeded, torch_generator
from icml25.utils.validation import check_array, check_choice, check_scalar


class GraphTensors(NamedTuple):
    """A batch of graphs: one-hot vertex features, directed edge list (both directions), graph index."""

    x: torch.Tensor
    edge_index: torch.Tensor
    batch: torch.Tensor
    num_graphs: int


def graphs_to_tensors(
    graphs: Sequence[nx.Graph], node_labels: Sequence[Hashable], dtype: torch.dtype = torch.float32
) -> GraphTensors:
    """Stack ``graphs`` into one disconnected batch; vertex labels must be in ``node_labels``."""
    index = {label: i for i, label in enumerate(node_labels)}
    xs, edges, batch, offset = [], [], [], 0
    for g, graph in enumerate(graphs):
        if not isinstance(graph, nx.Graph) or graph.is_directed():
            raise TypeError(f"graphs must be undirected networkx.Graph objects, got {type(graph).__name__}")
        if graph.number_of_nodes() == 0:
            raise ValueError("graphs must have at least one vertex (got an empty graph)")
        pos = {u: i for i, u in enumerate(graph.nodes)}
        try:
            xs.extend(index[label] for _, label in graph.nodes(data="label"))
        except KeyError as exc:
            raise ValueError(f"vertex label {exc.args[0]!r} is not one of the model's node_labels") from None
        for u, v in graph.edges:
            edges.append((offset + pos[u], offset + pos[v]))
            if u != v:
                edges.append((offset + pos[v], offset + pos[u]))
        batch.extend([g] * len(pos))
        offset += len(pos)
    x = torch.zeros(offset, len(index), dtype=dtype)
    x[torch.arange(offset), torch.tensor(xs, dtype=torch.long)] = 1.0
    edge_index = torch.tensor(edges, dtype=torch.long).reshape(-1, 2).T.contiguous()
    return GraphTensors(x, edge_index, torch.tensor(batch, dtype=torch.long), len(graphs))


class MPNN(nn.Module):
    """GIN (Xu et al. 2019; sum aggregation, 2-layer MLP) or GCN (Kipf & Welling 2017; symmetric
    normalisation with self-loops), ``layers`` message-passing layers of width ``hidden``, sum or
    mean pooling, and a linear head with ``n_out`` outputs."""

    def __init__(
        self,
        node_labels: Sequence[Hashable],
        n_out: int,
        *,
        hidden: int = 64,
        layers: int = 3,
        conv: Literal["gin", "gcn"] = "gin",
        pooling: Literal["sum", "mean"] = "sum",
    ) -> None:
        super().__init__()
        if len(node_labels) == 0 or len(set(node_labels)) != len(node_labels):
            raise ValueError(f"node_labels must be a non-empty sequence of distinct labels, got {node_labels!r}")
        n_out = check_scalar(n_out, "n_out", "int", min=1)
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        layers = check_scalar(layers, "layers", "int", min=1)
        check_choice(conv, "conv", ("gin", "gcn"))
        check_choice(pooling, "pooling", ("sum", "mean"))
        self.node_labels = tuple(node_labels)
        self.conv, self.pooling = conv, pooling
        dims = [len(self.node_labels)] + [hidden] * layers
        if conv == "gin":
            self.layers = nn.ModuleList(
                nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, b)) for a, b in pairwise(dims)
            )
            self.eps = nn.Parameter(torch.zeros(layers))
        else:
            self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in pairwise(dims))
        self.head = nn.Linear(hidden, n_out)

    def embed(
        self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor, num_graphs: int
    ) -> torch.Tensor:
        """Graph embeddings ``(num_graphs, hidden)``: message passing, then pooling."""
        src, dst = edge_index
        h = x
        if self.conv == "gcn":
            deg = torch.ones(x.shape[0], dtype=x.dtype, device=x.device).index_add_(
                0, dst, torch.ones_like(dst, dtype=x.dtype)
            )
            norm = deg.rsqrt()
        for k, layer in enumerate(self.layers):
            if self.conv == "gin":
                agg = torch.zeros_like(h).index_add_(0, dst, h[src])
                h = torch.relu(layer((1 + self.eps[k]) * h + agg))
            else:
                msg = h[src] * (norm[src] * norm[dst]).unsqueeze(1)
                h = torch.relu(
                    layer(torch.zeros_like(h).index_add_(0, dst, msg) + h * norm.unsqueeze(1) ** 2)
                )
        pooled = torch.zeros(num_graphs, h.shape[1], dtype=h.dtype, device=h.device).index_add_(0, batch, h)
        if self.pooling == "mean":
            counts = torch.zeros(num_graphs, dtype=h.dtype, device=h.device).index_add_(
                0, batch, torch.ones_like(batch, dtype=h.dtype)
            )
            pooled = pooled / counts.clamp(min=1).unsqueeze(1)
        return pooled

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor, num_graphs: int
    ) -> torch.Tensor:
        """Predictions ``(num_graphs, n_out)`` (logits for classification)."""
        return self.head(self.embed(x, edge_index, batch, num_graphs))


def _score(model: MPNN, graphs: Sequence[nx.Graph], y: np.ndarray, task: str) -> float:
    out = predict_graphs(model, graphs)
    if task == "classification":
        return float(np.mean(out.argmax(axis=1) == y))
    return -float(np.mean((out[:, 0] - y) ** 2))


def train_mpnn(
    graphs: Sequence[nx.Graph],
    y: np.ndarray,
    *,
    task: Literal["classification", "regression"] = "classification",
    conv: Literal["gin", "gcn"] = "gin",
    pooling: Literal["sum", "mean"] = "sum",
    hidden: int = 64,
    layers: int = 3,
    epochs: int = 30,
    lr: float = 1e-3,
    batch_size: int = 32,
    val: tuple[Sequence[nx.Graph], np.ndarray] | None = None,
    node_labels: Sequence[Hashable] | None = None,
    seed: Seed = 0,
) -> MPNN:
    """Train an ``MPNN`` with Adam (cross-entropy or MSE) and return the epoch with the best
    validation score (accuracy, or -MSE) when ``val`` is given, else the last one.

    ``epochs=0`` returns the seeded, untrained network (the "before training" reference).
    ``node_labels`` defaults to the sorted labels seen in ``graphs`` (and ``val``).
    """
    y = check_array(y, "y")
    if y.shape != (len(graphs),) or len(graphs) == 0:
        raise ValueError(f"y must have one target per graph, shape ({len(graphs)},), got shape {y.shape}")
    check_choice(task, "task", ("classification", "regression"))
    if task == "classification" and (not np.issubdtype(y.dtype, np.integer) or y.min() < 0):
        raise ValueError(f"y must hold non-negative integer classes for classification, got dtype {y.dtype}, "
                         f"min {y.min()}")
    epochs = check_scalar(epochs, "epochs", "int", min=0)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    if node_labels is None:
        pool = list(graphs) + (list(val[0]) if val is not None else [])
        node_labels = sorted({lab for g in pool for _, lab in g.nodes(data="label")}, key=repr)
    n_out = int(y.max()) + 1 if task == "classification" else 1
    with seeded(seed):
        model = MPNN(node_labels, n_out, hidden=hidden, layers=layers, conv=conv, pooling=pooling)
    if epochs == 0:
        return model.eval()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch_generator(seed)
    best_score, best_state = -np.inf, None
    for _ in range(epochs):
        model.train()
        order = torch.randperm(len(graphs), generator=generator).tolist()
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            out = model(*graphs_to_tensors([graphs[i] for i in idx], model.node_labels))
            if task == "classification":
                loss = nn.functional.cross_entropy(out, torch.as_tensor(y[idx], dtype=torch.long))
            else:
                loss = nn.functional.mse_loss(out[:, 0], torch.as_tensor(y[idx], dtype=out.dtype))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if val is not None:
            score = _score(model, val[0], np.asarray(val[1]), task)
            if score > best_score:
                best_score = score
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if best_state is not None:
        model.load_state_dict(best_state)
    return model.eval()


@torch.no_grad()
def _run(model: MPNN, graphs: Sequence[nx.Graph], batch_size: int, embed: bool) -> np.ndarray:
    model.eval()
    graphs = list(graphs)
    param = next(model.parameters())
    parts = []
    for i in range(0, len(graphs), batch_size):
        x, edge_index, batch, num = graphs_to_tensors(
            graphs[i : i + batch_size], model.node_labels, param.dtype
        )
        args = (x.to(param.device), edge_index.to(param.device), batch.to(param.device), num)
        parts.append(model.embed(*args) if embed else model(*args))
    return torch.cat(parts).double().cpu().numpy()


def embed_graphs(model: MPNN, graphs: Sequence[nx.Graph], batch_size: int = 512) -> np.ndarray:
    """Graph embeddings (after pooling, before the head) as a float64 array ``(n_graphs, hidden)``."""
    return _run(model, graphs, batch_size, embed=True)


def predict_graphs(model: MPNN, graphs: Sequence[nx.Graph], batch_size: int = 512) -> np.ndarray:
    """Model outputs (logits or regression values) as a float64 array ``(n_graphs, n_out)``."""
    return _run(model, graphs, batch_size, embed=False)


__all__ = ["MPNN", "GraphTensors", "embed_graphs", "graphs_to_tensors", "predict_graphs", "train_mpnn"]
