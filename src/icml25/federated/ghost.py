"""GHOST (Qian et al., ICML 2025): one-shot federated graph learning with proxy models and topology consolidation.

Subgraph federated node classification in ONE round.  Each client trains a label-conditioned
feature generator (the "proxy model") to mimic its subgraph — feature alignment plus a fused
Gromov-Wasserstein alignment of structure and features (POT) — and uploads it once.  The server
draws proxy graphs (generated features, cosine kNN structure) client after client and trains a
global GCN on them; the Topology-Consistency Criterion (TCC) marks the first-layer parameters that
carry topological knowledge and an EWC-style penalty keeps them near their values after every
earlier proxy graph, so the model forgets earlier clients less.  Built on the shared runtime:
:class:`GhostClient` and :class:`GhostStrategy` run in :func:`icml25.federated.simulate` or Flower.

Example
-------
>>> from icml25.data.graphs import make_csbm
>>> from icml25.federated.ghost import run_ghost
>>> g = make_csbm(300, n_classes=3, n_features=16, avg_degree=6, homophily=0.8, seed=0)
>>> out = run_ghost(g, n_clients=3, alpha=0.5, gen_epochs=10, seed=0)
>>> sorted(out)[:3], out["uplink_bytes"] > 0
(['accuracy', 'history', 'model'], True)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml25.data.graphs import GraphData, dirichlet_node_split, induced_subgraph, knn_graph, random_node_masks
from icml25.federated.messages import FitIns, FitRes, MalformedMessageError
from icml25.federated.simulation import Client, ClientFailure, History, Strategy, check_same_layout, simulate
from icml25.federated.torch_clients import load_arrays, module_to_arrays
from icml25.utils.random import Seed, as_generator, init_rng, int_seed, seeded
from icml25.utils.validation import (
    check_array,
    check_bool,
    check_callable,
    check_choice,
    check_instance,
    check_scalar,
    check_sequence,
    check_tensor,
)

__all__ = [
    "normalized_adjacency", "GCNConv", "GCN", "ProxyGenerator", "feature_alignment_loss", "fgw_loss",
    "topology_consistency", "proxy_graph", "train_gcn", "gcn_accuracy", "GhostClient", "GhostStrategy",
    "GcnClient", "split_graph", "run_ghost",
]

GEN_PREFIX = "gen."


def _check_edges(edge_index: object, n_nodes: int, name: str = "edge_index") -> np.ndarray:
    """``edge_index`` as a (2, E) integer array of node ids in [0, n_nodes)."""
    ei = check_array(edge_index, name, ndim=2, dtype=None)
    if ei.shape[0] != 2 or (ei.size and ei.dtype.kind not in "iu"):
        raise ValueError(f"{name} must be a (2, E) array of integer node ids, got shape {ei.shape} {ei.dtype}")
    if ei.size and (ei.min() < 0 or ei.max() >= n_nodes):
        raise ValueError(f"{name} must hold node ids in [0, {n_nodes}), got [{ei.min()}, {ei.max()}]")
    return ei


def _check_graph_input(x: object, adj: object, in_dim: int | None = None, finite: bool = False) -> None:
    """Node features ``x`` (n, in_dim) and a square (n, n) adjacency (sparse, as normalized_adjacency builds it,
    or dense)."""
    check_tensor(x, "x", ndim=2, floating=True, finite=finite)
    if in_dim is not None and x.shape[1] != in_dim:
        raise ValueError(f"x must have {in_dim} features per node, got shape {tuple(x.shape)}")
    check_tensor(adj, "adj", ndim=2, floating=True)
    if tuple(adj.shape) != (x.shape[0], x.shape[0]):
        raise ValueError(f"x and adj must describe the same nodes: adj must be ({x.shape[0]}, {x.shape[0]}), got "
                         f"{tuple(adj.shape)}")
    if finite:
        values = adj.coalesce().values() if adj.is_sparse else adj
        if not bool(torch.isfinite(values).all()):
            raise ValueError("adj must contain only finite values, got NaN or inf")


def _check_labels(y: object, name: str, n_classes: int, n: int | None = None, partner: str = "") -> None:
    check_tensor(y, name, ndim=1)
    if y.is_floating_point() or y.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer class labels, got dtype {y.dtype}")
    if n is not None and len(y) != n:
        raise ValueError(f"{partner} and {name} must have the same length, got {n}, {len(y)}")
    if len(y) and (int(y.min()) < 0 or int(y.max()) >= n_classes):
        raise ValueError(f"{name} must hold labels in [0, {n_classes}), got [{int(y.min())}, {int(y.max())}]")


def _check_mask(mask: object, graph: GraphData) -> np.ndarray:
    mask = check_array(mask, "mask", ndim=1, dtype=None)
    if mask.dtype != bool or mask.shape != (graph.num_nodes,):
        raise ValueError(f"mask must be a boolean array of the graph's {graph.num_nodes} nodes, got shape "
                         f"{mask.shape} {mask.dtype}")
    return mask


def _server_round(server_round: object) -> int:
    return check_scalar(server_round, "server_round", "int", min=1)


def _check_arrays(arrays: object) -> None:
    check_instance(arrays, "arrays", Mapping, "a mapping name -> array")


def normalized_adjacency(edge_index: np.ndarray | torch.Tensor, n_nodes: int,
                         device: torch.device | str = "cpu") -> torch.Tensor:
    """Sparse ``D^-1/2 (A + I) D^-1/2`` (Kipf and Welling 2017) of an undirected edge list, on ``device``.

    ``edge_index`` is a (2, E) array or tensor of node ids in [0, ``n_nodes``); ``n_nodes`` >= 1.
    """
    n_nodes = check_scalar(n_nodes, "n_nodes", "int", min=1)
    _check_edges(edge_index, n_nodes)
    ei = torch.as_tensor(np.asarray(edge_index) if not torch.is_tensor(edge_index) else edge_index,
                         dtype=torch.long, device=device)
    loops = torch.arange(n_nodes, device=device)
    ei = torch.cat([ei[:, ei[0] != ei[1]], torch.stack([loops, loops])], dim=1)
    deg = torch.zeros(n_nodes, device=device).index_add_(0, ei[0], torch.ones(ei.shape[1], device=device))
    norm = deg[ei[0]].rsqrt() * deg[ei[1]].rsqrt()
    return torch.sparse_coo_tensor(ei, norm, (n_nodes, n_nodes), check_invariants=False).coalesce()




class GCNConv(nn.Module):
    """One graph convolution ``A_hat (x W^T) + b`` (PyG's ``GCNConv`` layout: ``lin.weight``, ``bias``).

    ``seed`` fixes the initial weights without touching torch's global RNG (``None``: torch's default
    initialisation from the global RNG).
    """

    def __init__(self, in_dim: int, out_dim: int, seed: Seed = None) -> None:
        super().__init__()
        for name, value in (("in_dim", in_dim), ("out_dim", out_dim)):
            check_scalar(value, name, "int", min=1)
        with init_rng(seed):
            self.lin = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        """``x`` (n, in_dim) node features, ``adj`` the (n, n) normalized adjacency (sparse or dense)."""
        _check_graph_input(x, adj, self.lin.in_features)
        return torch.sparse.mm(adj, self.lin(x)) + self.bias


class GCN(nn.Module):
    """Two-layer GCN backbone of GHOST; ``forward(x, adj) -> (first-layer hidden, log-probabilities)``.

    ``seed`` fixes the initial weights without touching torch's global RNG (``None``: the global RNG).
    """

    def __init__(self, in_dim: int, out_dim: int, hidden: int = 128, dropout: float = 0.3, seed: Seed = None) -> None:
        super().__init__()
        for name, value in (("in_dim", in_dim), ("out_dim", out_dim), ("hidden", hidden)):
            check_scalar(value, name, "int", min=1)
        dropout = check_scalar(dropout, "dropout", "real", min=0.0, max=1.0, inclusive="left")
        with init_rng(seed):
            self.conv1, self.conv2, self.dropout = GCNConv(in_dim, hidden), GCNConv(hidden, out_dim), dropout

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``x`` (n, in_dim) node features, ``adj`` the (n, n) normalized adjacency (sparse or dense)."""
        _check_graph_input(x, adj, self.conv1.lin.in_features)
        h = F.relu(self.conv1(x, adj))
        out = self.conv2(F.dropout(h, self.dropout, self.training), adj)
        return h, F.log_softmax(out, dim=1)


class ProxyGenerator(nn.Module):
    """GHOST's proxy model: ``[label embedding ; z] -> 64 -> 128 -> 256 -> n_features`` with tanh and dropout."""

    def __init__(self, n_features: int, n_classes: int, noise_dim: int = 64, dropout: float = 0.2,
                 seed: Seed = None) -> None:
        super().__init__()
        for name, value in (("n_features", n_features), ("n_classes", n_classes), ("noise_dim", noise_dim)):
            check_scalar(value, name, "int", min=1)
        dropout = check_scalar(dropout, "dropout", "real", min=0.0, max=1.0, inclusive="left")
        self.noise_dim, self.n_classes = noise_dim, n_classes
        with init_rng(seed):
            self.embed = nn.Embedding(n_classes, n_classes)
            widths = [n_classes + noise_dim, 64, 128, 256]
            layers: list[nn.Module] = []
            for a, b in zip(widths[:-1], widths[1:], strict=True):
                layers += [nn.Linear(a, b), nn.Tanh(), nn.Dropout(dropout)]
            self.net = nn.Sequential(*layers, nn.Linear(256, n_features))

    def forward(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Features from noise ``z`` (n, noise_dim) and labels ``y`` (n,) in [0, n_classes)."""
        check_tensor(z, "z", ndim=2, floating=True, shape=(None, self.noise_dim))
        _check_labels(y, "y", self.n_classes, len(z), "z")
        return self.net(torch.cat([self.embed(y), z], dim=1))

    def sample(self, y: torch.Tensor) -> torch.Tensor:
        """Features for labels ``y`` ((n,) in [0, n_classes)) with fresh noise (uses torch's global RNG)."""
        _check_labels(y, "y", self.n_classes)
        return self(torch.randn(y.shape[0], self.noise_dim, device=y.device), y)


def feature_alignment_loss(x_hat: torch.Tensor, x: torch.Tensor, lambda_d: float = 0.05) -> torch.Tensor:
    """``lambda_d KL(softmax(x) || softmax(x_hat)) + 1 - mean_i cos(x_hat_i, x_i)`` (rows paired in order).

    ``x_hat`` and ``x`` are finite (n, d) floating tensors of the same shape, n >= 1; ``lambda_d`` >= 0.
    """
    check_tensor(x_hat, "x_hat", ndim=2, floating=True, finite=True)
    check_tensor(x, "x", ndim=2, floating=True, finite=True)
    if x_hat.shape != x.shape or len(x) == 0:
        raise ValueError(f"x_hat and x must have the same non-empty (n, d) shape, got {tuple(x_hat.shape)}, "
                         f"{tuple(x.shape)}")
    lambda_d = check_scalar(lambda_d, "lambda_d", "real", min=0.0)
    kl = F.kl_div(F.log_softmax(x_hat, dim=1), F.softmax(x, dim=1), reduction="batchmean")
    return lambda_d * kl + 1 - F.cosine_similarity(x_hat, x, dim=1).mean()


def fgw_loss(adj1: torch.Tensor, adj2: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor,
             alpha: float = 0.5) -> torch.Tensor:
    """Fused Gromov-Wasserstein distance between ``(adj1, x1)`` and ``(adj2, x2)`` with uniform weights
    (POT's ``fused_gromov_wasserstein2``, square loss, feature cost ``||x1_i - x2_j||^2``); differentiable
    in the features through the cost matrix (envelope theorem: the plan is held fixed)."""
    import ot

    for i, (adj, x) in enumerate(((adj1, x1), (adj2, x2)), start=1):
        check_tensor(x, f"x{i}", ndim=2, floating=True, finite=True)
        check_tensor(adj, f"adj{i}", ndim=2, finite=True)
        if len(x) == 0 or tuple(adj.shape) != (len(x), len(x)):
            raise ValueError(f"adj{i} must be ({len(x)}, {len(x)}) for the {len(x)} nodes of x{i} (at least one), "
                             f"got {tuple(adj.shape)}")
    if x1.shape[1] != x2.shape[1]:
        raise ValueError(f"x1 and x2 must have the same feature size, got {x1.shape[1]}, {x2.shape[1]}")
    alpha = check_scalar(alpha, "alpha", "real", min=0.0, max=1.0)
    p = torch.full((x1.shape[0],), 1 / x1.shape[0], dtype=x1.dtype, device=x1.device)
    q = torch.full((x2.shape[0],), 1 / x2.shape[0], dtype=x2.dtype, device=x2.device)
    cost = torch.cdist(x1, x2) ** 2
    return ot.gromov.fused_gromov_wasserstein2(cost, adj1.to(x1.dtype), adj2.to(x1.dtype), p, q,
                                               loss_fun="square_loss", alpha=alpha)


def topology_consistency(model: GCN, x: torch.Tensor, adj: torch.Tensor,
                         edge_index: torch.Tensor) -> dict[str, torch.Tensor]:
    """TCC importance: gradient of the topology energy ``sum_(i,j) e_ij^2`` with ``e_ij = <P_i, tanh(P_j)>``,
    ``P = ReLU(conv1(x)) W_1`` (first-layer embeddings mapped back by the first-layer weight), over the edges
    of ``edge_index`` with self loops.  Returns ``{name: |dL/dtheta|}`` for the first layer's parameters.
    ``x`` (n, in_dim) and ``adj`` (n, n) as in :meth:`GCN.forward`, finite; ``edge_index`` a (2, E) tensor."""
    check_instance(model, "model", GCN)
    _check_graph_input(x, adj, model.conv1.lin.in_features, finite=True)
    check_tensor(edge_index, "edge_index", ndim=2)
    _check_edges(edge_index, x.shape[0])
    n = x.shape[0]
    loops = torch.arange(n, device=x.device)
    src, dst = torch.cat([edge_index.to(x.device), torch.stack([loops, loops])], dim=1)
    params = {"conv1.lin.weight": model.conv1.lin.weight, "conv1.bias": model.conv1.bias}
    h = F.relu(model.conv1(x, adj))
    p = h @ model.conv1.lin.weight
    energy = ((p[src] * torch.tanh(p[dst])).sum(1) ** 2).sum()
    grads = torch.autograd.grad(energy, list(params.values()))
    return {name: g.detach().abs() for name, g in zip(params, grads, strict=True)}


def proxy_graph(generator: ProxyGenerator, y: torch.Tensor, k: int = 5) -> tuple[torch.Tensor, torch.Tensor,
                                                                                 torch.Tensor]:
    """A proxy graph from a generator: features ``G(z, y)`` and their cosine kNN structure.
    Returns ``(x_hat, edge_index, adj)``; ``x_hat`` keeps the generator's graph of gradients.  ``y`` holds one
    label in [0, n_classes) per proxy node (at least one), ``k`` >= 1."""
    check_instance(generator, "generator", ProxyGenerator)
    _check_labels(y, "y", generator.n_classes)
    if len(y) == 0:
        raise ValueError("y must hold at least one label (one per proxy node)")
    k = check_scalar(k, "k", "int", min=1)
    x_hat = generator.sample(y)
    edge_index = torch.as_tensor(knn_graph(x_hat.detach().cpu().numpy(), k), device=y.device)
    return x_hat, edge_index, normalized_adjacency(edge_index, y.shape[0], y.device)


def _graph_tensors(graph: GraphData, device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return (torch.as_tensor(graph.x, device=device), normalized_adjacency(graph.edge_index, graph.num_nodes, device),
            torch.as_tensor(graph.y, device=device))


def train_gcn(model: GCN, graph: GraphData, epochs: int, lr: float = 0.01, weight_decay: float = 4e-4,
              mask: np.ndarray | None = None, seed: Seed = 0) -> GCN:
    """Full-batch Adam training of ``model`` on the nodes of ``mask`` (default: the train mask).

    ``seed`` drives the dropout masks; the caller's global torch RNG is left untouched.  ``mask`` is a boolean
    array over the graph's nodes; ``epochs`` >= 0, ``lr`` > 0, ``weight_decay`` >= 0.
    """
    check_instance(model, "model", GCN)
    check_instance(graph, "graph", GraphData, "an icml25.data.graphs.GraphData")
    epochs = check_scalar(epochs, "epochs", "int", min=0)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    weight_decay = check_scalar(weight_decay, "weight_decay", "real", min=0.0)
    mask = graph.train_mask if mask is None else _check_mask(mask, graph)
    if mask is None or not mask.any():
        raise ValueError("train_gcn needs a non-empty training mask")
    device = next(model.parameters()).device
    x, adj, y = _graph_tensors(graph, device)
    idx = torch.as_tensor(np.flatnonzero(mask), device=device)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    with seeded(seed):
        model.train()
        for _ in range(epochs):
            opt.zero_grad()
            F.nll_loss(model(x, adj)[1][idx], y[idx]).backward()
            opt.step()
    return model.eval()


@torch.no_grad()
def gcn_accuracy(model: GCN, graph: GraphData, mask: np.ndarray | None = None) -> float:
    """Accuracy of ``model`` on the nodes of ``mask`` (a boolean array over the nodes; all nodes when None).

    NaN when ``mask`` selects no node.
    """
    check_instance(model, "model", GCN)
    check_instance(graph, "graph", GraphData, "an icml25.data.graphs.GraphData")
    if mask is not None:
        mask = _check_mask(mask, graph)
    device = next(model.parameters()).device
    x, adj, y = _graph_tensors(graph, device)
    model.eval()
    pred = model(x, adj)[1].argmax(1)
    keep = torch.ones_like(y, dtype=torch.bool) if mask is None else torch.as_tensor(mask, device=device)
    return float((pred[keep] == y[keep]).float().mean()) if keep.any() else float("nan")


class GhostClient(Client):
    """A GHOST client: trains its proxy generator on its subgraph and uploads it once (Sec. "proxy model").

    ``graph`` is the client's subgraph with a non-empty ``train_mask``.  Per epoch, one generated node per
    real node (true labels, fresh noise), a cosine kNN proxy structure, and on the training nodes
    ``L = L_feat + lambda_f L_fgw`` (``feature_loss=False`` or ``lambda_f=0`` drop a term, for ablations).
    The reply holds the generator's float32 weights (``gen.*``), the training-label histogram (int64 [C])
    and the node count (int64 [1]): exactly what is uploaded.
    A client without training nodes is rejected unless ``allow_untrained`` (it then uploads its
    untrained generator, with a warning).
    """

    def __init__(self, graph: GraphData, gen_epochs: int = 100, lr: float = 5e-3, weight_decay: float = 4e-4,
                 lambda_d: float = 0.05, lambda_f: float = 0.1, fgw_alpha: float = 0.5, k: int = 5,
                 noise_dim: int = 64, dropout: float = 0.2, feature_loss: bool = True, allow_untrained: bool = False,
                 seed: Seed = 0, device: torch.device | str = "cpu") -> None:
        check_instance(graph, "graph", GraphData, "an icml25.data.graphs.GraphData")
        allow_untrained = check_bool(allow_untrained, "allow_untrained")
        if graph.train_mask is None or not graph.train_mask.any():
            if not allow_untrained:
                raise ValueError("the client has no training nodes; pass allow_untrained=True to upload an "
                                 "untrained generator anyway")
            warnings.warn("GhostClient without training nodes uploads an untrained generator", stacklevel=2)
        self.graph, self.gen_epochs = graph, check_scalar(gen_epochs, "gen_epochs", "int", min=0)
        self.lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
        self.weight_decay = check_scalar(weight_decay, "weight_decay", "real", min=0.0)
        self.lambda_d = check_scalar(lambda_d, "lambda_d", "real", min=0.0)
        self.lambda_f = check_scalar(lambda_f, "lambda_f", "real", min=0.0)
        self.fgw_alpha = check_scalar(fgw_alpha, "fgw_alpha", "real", min=0.0, max=1.0)
        self.k = check_scalar(k, "k", "int", min=1)
        self.feature_loss = check_bool(feature_loss, "feature_loss")
        noise_dim = check_scalar(noise_dim, "noise_dim", "int", min=1)
        dropout = check_scalar(dropout, "dropout", "real", min=0.0, max=1.0, inclusive="left")
        self.noise_dim, self.dropout, self.seed, self.device = noise_dim, dropout, int_seed(seed), torch.device(device)

    def train_generator(self) -> tuple[ProxyGenerator, float]:
        """The trained generator and its last loss."""
        g, device = self.graph, self.device
        with seeded(self.seed):
            gen = ProxyGenerator(g.num_features, g.n_classes, self.noise_dim, self.dropout).to(device)
            mask = g.train_mask if g.train_mask is not None else np.zeros(g.num_nodes, bool)
            idx = np.flatnonzero(mask)
            x, y = torch.as_tensor(g.x, device=device), torch.as_tensor(g.y, device=device)
            dense = torch.zeros(g.num_nodes, g.num_nodes, device=device)
            dense[tuple(torch.as_tensor(g.edge_index, device=device))] = 1.0
            dense.fill_diagonal_(1.0)
            adj_m, x_m, t_idx = dense[idx][:, idx], x[idx], torch.as_tensor(idx, device=device)
            opt = torch.optim.Adam(gen.parameters(), lr=self.lr, weight_decay=self.weight_decay)
            loss_value = float("nan")
            for _ in range(self.gen_epochs if idx.size else 0):
                gen.train()
                opt.zero_grad()
                x_hat = gen.sample(y)
                loss = feature_alignment_loss(x_hat[t_idx], x_m, self.lambda_d) if self.feature_loss \
                    else x_hat.new_zeros(())
                if idx.size > 1 and self.lambda_f > 0:
                    knn = knn_graph(x_hat.detach().cpu().numpy(), min(self.k, g.num_nodes - 1))
                    proxy = torch.zeros_like(dense)
                    proxy[tuple(torch.as_tensor(knn, device=device))] = 1.0
                    proxy.fill_diagonal_(1.0)
                    loss = loss + self.lambda_f * fgw_loss(adj_m, proxy[t_idx][:, t_idx], x_m, x_hat[t_idx],
                                                           self.fgw_alpha)
                if loss.requires_grad:   # False only without the feature term on a single training node
                    loss.backward()
                    opt.step()
                loss_value = float(loss.detach())
        return gen.eval(), loss_value

    def fit(self, ins: FitIns | None) -> FitRes:
        """Train the generator and return the upload; ``ins`` (a FitIns, or None) is ignored: GHOST's server
        sends nothing down."""
        if ins is not None:
            check_instance(ins, "ins", FitIns)
        gen, loss = self.train_generator()
        labels = self.graph.y[self.graph.train_mask] if self.graph.train_mask is not None else self.graph.y[:0]
        arrays = {GEN_PREFIX + k: v for k, v in module_to_arrays(gen).items()}
        arrays["label_hist"] = np.bincount(labels, minlength=self.graph.n_classes).astype(np.int64)
        arrays["n_nodes"] = np.array([self.graph.num_nodes], dtype=np.int64)
        metrics = {"generator_loss": loss} if np.isfinite(loss) else {}
        return FitRes(arrays, num_examples=int(labels.size), metrics=metrics)


class GhostStrategy(Strategy):
    """GHOST's server: sends nothing down, receives the generators once and integrates them into a global GCN.

    For clients in a random order (``seed``), ``proxy_steps`` (M) times: draw a proxy graph of the client's
    size, compute the importance Ω with the current model (``importance="tcc"``, Topology-Consistency
    Criterion; ``"uniform"``: Ω = 1 on all parameters), take ``server_steps`` (T_G) Adam steps on
    ``NLL + lambda_r sum_j sum |Ω_j| (θ - θ*_j)^2`` over all earlier snapshots, then store (Ω, θ).
    ``importance_norm="max"`` divides each Ω by its largest entry (``"none"``: raw, the official code with
    lambda_r = 1e-11).  ``proxy_labels="client_histogram"`` draws proxy labels from the uploaded training-label
    histogram (our choice, not the official code's); ``"uniform"`` balances them over all classes (official).
    ``schedule="joint"`` is the non-sequential baseline: every step trains on one proxy of every client at once,
    no penalty.
    ``trace_`` holds ``(client, arrays)`` after each client's proxies; ``uploads_`` the uploads last integrated.
    """

    def __init__(self, n_features: int, n_classes: int, hidden: int = 128, dropout: float = 0.3,
                 proxy_steps: int = 3, server_steps: int = 5, lr: float = 0.01, weight_decay: float = 4e-4,
                 lambda_r: float = 0.03, importance: str = "tcc", importance_norm: str = "max",
                 proxy_labels: str = "client_histogram", schedule: str = "sequential", k: int = 5,
                 noise_dim: int = 64, gen_dropout: float = 0.2, seed: Seed = 0, device: torch.device | str = "cpu",
                 evaluate_fn: Callable[[GCN], Mapping[str, float]] | None = None) -> None:
        for name, value, allowed in (("importance", importance, ("tcc", "uniform")),
                                     ("importance_norm", importance_norm, ("max", "none")),
                                     ("proxy_labels", proxy_labels, ("client_histogram", "uniform")),
                                     ("schedule", schedule, ("sequential", "joint"))):
            check_choice(value, name, allowed)
        proxy_steps = check_scalar(proxy_steps, "proxy_steps", "int", min=1)
        server_steps = check_scalar(server_steps, "server_steps", "int", min=1)
        lambda_r = check_scalar(lambda_r, "lambda_r", "real", min=0.0)
        k = check_scalar(k, "k", "int", min=1)
        lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
        for name, value in (("n_features", n_features), ("n_classes", n_classes), ("hidden", hidden),
                            ("noise_dim", noise_dim)):
            check_scalar(value, name, "int", min=1)
        dropout = check_scalar(dropout, "dropout", "real", min=0.0, max=1.0, inclusive="left")
        gen_dropout = check_scalar(gen_dropout, "gen_dropout", "real", min=0.0, max=1.0, inclusive="left")
        weight_decay = check_scalar(weight_decay, "weight_decay", "real", min=0.0)
        if evaluate_fn is not None:
            check_callable(evaluate_fn, "evaluate_fn")
        seed = int_seed(seed)
        self.n_features, self.n_classes, self.hidden, self.dropout = n_features, n_classes, hidden, dropout
        self.proxy_steps, self.server_steps, self.lr, self.weight_decay = proxy_steps, server_steps, lr, weight_decay
        self.lambda_r, self.importance, self.importance_norm = lambda_r, importance, importance_norm
        self.proxy_labels, self.schedule, self.k = proxy_labels, schedule, k
        self.noise_dim, self.gen_dropout, self.seed, self.device = noise_dim, gen_dropout, seed, torch.device(device)
        self.evaluate_fn = evaluate_fn
        self.trace_: list[tuple[int, dict[str, np.ndarray]]] = []
        self.uploads_: list[tuple[int, dict[str, np.ndarray]]] = []
        with seeded(seed):  # only the layout is kept: the caller's torch RNG is not touched
            layout = module_to_arrays(ProxyGenerator(n_features, n_classes, noise_dim))
        self._generator_layout = {GEN_PREFIX + k: v for k, v in layout.items()}

    def make_model(self) -> GCN:
        """A fresh global GCN (initialized from ``seed``) on the strategy's device."""
        with seeded(self.seed):
            return GCN(self.n_features, self.n_classes, self.hidden, self.dropout).to(self.device)

    def initialize(self) -> dict[str, np.ndarray]:
        return module_to_arrays(self.make_model())

    def configure_fit(self, server_round, arrays, clients):
        server_round = _server_round(server_round)
        _check_arrays(arrays)
        clients = check_sequence(clients, "clients", item=lambda v, n: check_scalar(v, n, "int", min=0))
        return {cid: FitIns({}, self.fit_config(server_round)) for cid in clients}

    def validate_fit(self, server_round, arrays, res) -> None:
        _server_round(server_round)
        _check_arrays(arrays)
        check_instance(res, "res", FitRes)
        gen = {k: v for k, v in res.arrays.items() if k.startswith(GEN_PREFIX)}
        check_same_layout(self._generator_layout, gen)
        hist, n_nodes = res.arrays.get("label_hist"), res.arrays.get("n_nodes")
        if hist is None or hist.shape != (self.n_classes,) or hist.dtype.kind not in "iu" or hist.min() < 0:
            raise MalformedMessageError(f"label_hist must be {self.n_classes} non-negative integer counts")
        if n_nodes is None or n_nodes.shape != (1,) or n_nodes.dtype.kind not in "iu" or n_nodes[0] < 1:
            raise MalformedMessageError("n_nodes must be one positive integer")
        if set(res.arrays) != set(gen) | {"label_hist", "n_nodes"}:
            raise MalformedMessageError(f"unexpected arrays {sorted(set(res.arrays) - set(gen))}")

    def _generator(self, arrays: Mapping[str, np.ndarray]) -> ProxyGenerator:
        gen = ProxyGenerator(self.n_features, self.n_classes, self.noise_dim, self.gen_dropout).to(self.device)
        return load_arrays(gen, {k[len(GEN_PREFIX):]: v for k, v in arrays.items() if k.startswith(GEN_PREFIX)}).eval()

    def _labels(self, arrays: Mapping[str, np.ndarray], rng: np.random.Generator) -> torch.Tensor:
        n, hist = int(arrays["n_nodes"][0]), arrays["label_hist"].astype(float)
        if self.proxy_labels == "uniform" or hist.sum() == 0:
            y = rng.permutation(np.arange(n) % self.n_classes)
        else:
            y = rng.choice(self.n_classes, size=n, p=hist / hist.sum())
        return torch.as_tensor(y, dtype=torch.long, device=self.device)

    @torch.no_grad()
    def _proxy(self, gen: ProxyGenerator, arrays: Mapping[str, np.ndarray], rng: np.random.Generator):
        y = self._labels(arrays, rng)
        x_hat, edge_index, adj = proxy_graph(gen, y, self.k)
        return x_hat, edge_index, adj, y

    def _importance(self, model: GCN, x: torch.Tensor, adj: torch.Tensor,
                    edge_index: torch.Tensor) -> dict[str, torch.Tensor]:
        if self.importance == "uniform":
            return {n: torch.ones_like(p) for n, p in model.named_parameters()}
        omega = topology_consistency(model, x, adj, edge_index)
        if self.importance_norm == "max":
            top = max(float(o.max()) for o in omega.values())
            omega = {n: o / top if top > 0 else o for n, o in omega.items()}
        return omega

    def integrate(self, uploads: Sequence[tuple[int, Mapping[str, np.ndarray]]]) -> GCN:
        """Knowledge integration (server side of GHOST) over ``(client id, uploaded arrays)`` pairs (at least one)."""
        def pair(item: object, name: str) -> tuple[int, Mapping[str, np.ndarray]]:
            if not isinstance(item, (tuple, list)) or len(item) != 2 or not isinstance(item[1], Mapping):
                raise TypeError(f"{name} must be a pair (client id, uploaded arrays), got {type(item).__name__}")
            return check_scalar(item[0], f"{name} client id", "int", min=0), item[1]

        uploads = check_sequence(uploads, "uploads", item=pair)
        if not uploads:
            raise ValueError("uploads is empty: integrate needs at least one client upload")
        rng = as_generator(self.seed)
        uploads = sorted(uploads, key=lambda u: u[0])
        order = [uploads[i] for i in rng.permutation(len(uploads))]
        model = self.make_model()
        params = dict(model.named_parameters())
        opt = torch.optim.Adam(model.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        # sum_j Ω_j (θ - θ*_j)^2 = Σ Ω_j θ^2 - 2 θ Σ Ω_j θ*_j + const: two running sums per parameter
        omega_sum = {n: torch.zeros_like(p) for n, p in params.items()}
        anchor_sum = {n: torch.zeros_like(p) for n, p in params.items()}
        self.trace_ = []
        with seeded(self.seed):
            gens = {cid: self._generator(arrays) for cid, arrays in order}
            model.train()
            if self.schedule == "joint":
                for _ in range(self.proxy_steps):
                    proxies = [self._proxy(gens[cid], arrays, rng) for cid, arrays in order]
                    for _ in range(self.server_steps * len(order)):
                        opt.zero_grad()
                        loss = sum(F.nll_loss(model(x, adj)[1], y) for x, _, adj, y in proxies) / len(proxies)
                        loss.backward()
                        opt.step()
                self.trace_.append((-1, module_to_arrays(model)))
                return model.eval()
            for cid, arrays in order:
                for _ in range(self.proxy_steps):
                    x, edge_index, adj, y = self._proxy(gens[cid], arrays, rng)
                    omega = self._importance(model, x, adj, edge_index) if self.lambda_r > 0 else {}
                    for _ in range(self.server_steps):
                        opt.zero_grad()
                        loss = F.nll_loss(model(x, adj)[1], y)
                        if self.lambda_r > 0:
                            loss = loss + self.lambda_r * sum(
                                (omega_sum[n] * p.pow(2) - 2 * anchor_sum[n] * p).sum() for n, p in params.items())
                        loss.backward()
                        opt.step()
                    with torch.no_grad():
                        for n, o in omega.items():
                            omega_sum[n] += o
                            anchor_sum[n] += o * params[n]
                self.trace_.append((cid, module_to_arrays(model)))
        return model.eval()

    def aggregate_fit(self, server_round, arrays, results, failures: list[ClientFailure]):
        _server_round(server_round)
        _check_arrays(arrays)

        def pair(item: object, name: str) -> tuple[int, FitRes]:
            if not isinstance(item, (tuple, list)) or len(item) != 2 or not isinstance(item[1], FitRes):
                raise TypeError(f"{name} must be a pair (client id, FitRes), got {type(item).__name__}")
            return check_scalar(item[0], f"{name} client id", "int", min=0), item[1]

        results = check_sequence(results, "results", min_len=1, item=pair)
        failures = check_sequence(failures, "failures")
        self.uploads_ = [(cid, res.arrays) for cid, res in results]
        model = self.integrate(self.uploads_)
        return module_to_arrays(model), {"clients": len(results), "failures": len(failures)}

    def evaluate(self, server_round, arrays):
        _server_round(server_round)
        _check_arrays(arrays)
        if self.evaluate_fn is None:
            return {}
        return dict(self.evaluate_fn(load_arrays(self.make_model(), arrays).eval()))


class GcnClient(Client):
    """A plain GCN client for FedAvg / local-only baselines: ``epochs`` full-batch Adam steps on its subgraph."""

    def __init__(self, graph: GraphData, epochs: int = 100, lr: float = 0.01, weight_decay: float = 4e-4,
                 hidden: int = 128, dropout: float = 0.3, seed: Seed = 0) -> None:
        check_instance(graph, "graph", GraphData, "an icml25.data.graphs.GraphData")
        if graph.train_mask is None or not graph.train_mask.any():
            raise ValueError("graph must have a non-empty train_mask for a GcnClient")
        self.graph, self.epochs = graph, check_scalar(epochs, "epochs", "int", min=0)
        self.lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
        self.weight_decay = check_scalar(weight_decay, "weight_decay", "real", min=0.0)
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        dropout = check_scalar(dropout, "dropout", "real", min=0.0, max=1.0, inclusive="left")
        self.hidden, self.dropout, self.seed = hidden, dropout, int_seed(seed)

    def fit(self, ins: FitIns) -> FitRes:
        check_instance(ins, "ins", FitIns)
        g = self.graph
        model = load_arrays(GCN(g.num_features, g.n_classes, self.hidden, self.dropout), ins.arrays)
        train_gcn(model, g, self.epochs, self.lr, self.weight_decay, seed=self.seed + int(ins.config.get("round", 0)))
        return FitRes(module_to_arrays(model), int(g.train_mask.sum()),
                      {"train_accuracy": gcn_accuracy(model, g, g.train_mask)})


def split_graph(graph: GraphData, n_clients: int, alpha: float, fractions: tuple[float, float, float] = (0.2, 0.4, 0.4),
                min_nodes: int = 5, seed: Seed = 0) -> tuple[list[GraphData], GraphData, GraphData, list[np.ndarray]]:
    """GHOST's subgraph-FL setting: Dirichlet(alpha) label-skewed node split, each client's induced subgraph with
    a random train/val/test split (20/40/40), and the global evaluation graphs: the induced subgraphs of the whole
    graph on the union of the clients' test nodes and on the union of their validation nodes.
    Returns ``(client_graphs, global_test_graph, global_val_graph, client_node_ids)``."""
    check_instance(graph, "graph", GraphData, "an icml25.data.graphs.GraphData")
    n_clients = check_scalar(n_clients, "n_clients", "int", min=1)
    alpha = check_scalar(alpha, "alpha", "real", min=0.0, inclusive="neither")
    min_nodes = check_scalar(min_nodes, "min_nodes", "int", min=0)
    seed = int_seed(seed)
    parts = dirichlet_node_split(graph.y, n_clients, alpha, min_nodes=min_nodes, seed=seed)
    clients, test_nodes, val_nodes = [], [], []
    for c, nodes in enumerate(parts):
        sub = random_node_masks(induced_subgraph(graph, nodes), fractions, seed=seed * 1000 + c)
        clients.append(sub)
        test_nodes.append(nodes[sub.test_mask])
        val_nodes.append(nodes[sub.val_mask])
    return (clients, induced_subgraph(graph, np.sort(np.concatenate(test_nodes))),
            induced_subgraph(graph, np.sort(np.concatenate(val_nodes))), parts)


def run_ghost(graph: GraphData, n_clients: int = 10, alpha: float = 0.05, gen_epochs: int = 100, seed: Seed = 0,
              client_kwargs: Mapping[str, object] | None = None, **strategy_kwargs) -> dict[str, object]:
    """GHOST end to end in one simulated round: split, client generators, server integration, global test
    accuracy.  Returns ``{"accuracy", "history", "model", "uplink_bytes"}`` (bytes from the ledger)."""
    check_instance(graph, "graph", GraphData, "an icml25.data.graphs.GraphData")
    if client_kwargs is not None:
        check_instance(client_kwargs, "client_kwargs", Mapping, "a mapping of GhostClient options")
    gen_epochs = check_scalar(gen_epochs, "gen_epochs", "int", min=0)
    seed = int_seed(seed)
    clients, test_graph, _, _ = split_graph(graph, n_clients, alpha, seed=seed)
    ghost_clients = [GhostClient(g, gen_epochs=gen_epochs, seed=seed * 100 + c, **dict(client_kwargs or {}))
                     for c, g in enumerate(clients)]
    strategy = GhostStrategy(graph.num_features, graph.n_classes, seed=seed, **strategy_kwargs)
    history: History = simulate(ghost_clients, strategy, rounds=1, seed=seed)
    model = load_arrays(strategy.make_model(), history.arrays)
    return {"accuracy": gcn_accuracy(model, test_graph), "history": history, "model": model,
            "uplink_bytes": history.ledger.total("up", kind="message") // 8}
