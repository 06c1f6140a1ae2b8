"""The operator library of the offline agent: vetted code blocks that compose into a candidate
``represent(lattice, frac_coords, numbers) -> Graph`` source, and the hand-written reference codes.

A candidate is described by its *genes*: a neighbour rule (``radius``: every periodic image within the
cutoff; ``knn``: the 12 nearest), a cutoff (``hard`` or ``smooth``, a cosine envelope that takes every edge
feature to 0 at the cutoff), edge-feature blocks (``distance``, ``rbf``, ``angle``, ``triple`` -- signed
triple products, pseudo-scalars --, ``cartesian`` -- raw vectors --, ``lattice_loops`` -- Matformer-style
self-loops carrying the cell-vector lengths) and node blocks (``frac``: fractional coordinates as node
features). :func:`compose` writes the genes as real Python source (a ``# genes:`` header line records
them) that runs in the sandbox like any LLM-written code; what the library cannot show is an LLM
inventing a block that is not in it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from icml25.utils.validation import check_choice, check_instance, check_scalar

NEIGHBOURS = ("radius", "knn")
CUTOFFS = ("hard", "smooth")
FEATURES = ("distance", "rbf", "angle", "triple", "cartesian", "lattice_loops", "frac")
CUTOFF_RADIUS = 4.0  # Å, every reference code and candidate

_PREAMBLE = '''import numpy as np

CUTOFF = {cutoff!r}


def species(numbers):
    z = np.asarray(numbers, dtype=float)[:, None]
    return np.concatenate([z / 100.0, np.sin(z / 3.0), np.cos(z / 3.0), np.sin(z / 11.0)], axis=1)


def images(lattice, frac, radius):
    """Every pair (i, j, image) with 0 < |r_j + image - r_i| < radius, all periodic images included."""
    inv = np.linalg.inv(lattice)
    reach = np.ceil(radius * np.linalg.norm(inv, axis=0)).astype(int)
    axes = [np.arange(-r, r + 1) for r in reach]
    shifts = np.array(np.meshgrid(*axes, indexing="ij")).reshape(3, -1).T
    vec = (frac[None, :, None, :] + shifts[None, None] - frac[:, None, None, :]) @ lattice
    dist = np.linalg.norm(vec, axis=-1)
    i, j, s = np.nonzero((dist > 1e-8) & (dist < radius))
    return i, j, vec[i, j, s], dist[i, j, s]
'''

_NEIGHBOURS = {
    "radius": '''

def neighbours(lattice, frac):
    return images(lattice, frac, CUTOFF)
''',
    "knn": '''

def neighbours(lattice, frac, k=12):
    radius = CUTOFF
    while True:
        i, j, vec, dist = images(lattice, frac, radius)
        if np.all(np.bincount(i, minlength=len(frac)) >= k):
            break
        radius *= 1.5
    keep = []
    for a in range(len(frac)):
        rows = np.nonzero(i == a)[0]
        keep.extend(rows[np.argsort(dist[rows], kind="stable")[:k]])
    keep = np.array(keep)
    return i[keep], j[keep], vec[keep], dist[keep]
''',
}

_CUTOFFS = {
    "hard": '''

def envelope(dist):
    return np.ones_like(dist)
''',
    "smooth": '''

def envelope(dist):
    return np.where(dist < CUTOFF, 0.5 * (np.cos(np.pi * np.minimum(dist / CUTOFF, 1.0)) + 1.0), 0.0)
''',
}

_BLOCKS = {
    "distance": '''

def feat_distance(src, vec, dist, w):
    return (dist * w)[:, None]
''',
    "rbf": '''

def feat_rbf(src, vec, dist, w):
    centres = np.linspace(0.0, CUTOFF, 8)
    return np.exp(-((dist[:, None] - centres[None]) ** 2) / (2 * 0.5 ** 2)) * w[:, None]
''',
    "angle": '''

def feat_angle(src, vec, dist, w):
    unit = vec / dist[:, None]
    out = np.zeros((len(dist), 2))
    for a in np.unique(src):
        rows = np.nonzero(src == a)[0]
        cos = np.clip(unit[rows] @ unit[rows].T, -1.0, 1.0)
        g = (1.0 + cos) / 2.0
        wk = w[rows][None, :] * (1.0 - np.eye(len(rows)))
        out[rows, 0] = (wk * g).sum(axis=1) * w[rows]
        out[rows, 1] = (wk * g ** 2).sum(axis=1) * w[rows]
    return out
''',
    "triple": '''

def pseudo_triple(src, vec, dist, w):
    unit = vec / dist[:, None]
    out = np.zeros((len(dist), 1))
    for a in np.unique(src):
        rows = np.nonzero(src == a)[0]
        u, wk = unit[rows], w[rows]
        dots = u @ u.T
        cross = np.cross(u[:, None, :], u[None, :, :])
        triple = np.einsum("ad,kld->akl", u, cross)
        anti = dots[:, :, None] - dots[:, None, :]
        out[rows, 0] = np.einsum("akl,k,l->a", anti * triple, wk, wk) * wk
    return out
''',
    "cartesian": '''

def feat_cartesian(src, vec, dist, w):
    return vec * w[:, None]
''',
}

_REPRESENT = '''

def represent(lattice, frac_coords, numbers):
    lattice = np.asarray(lattice, dtype=float)
    frac = np.asarray(frac_coords, dtype=float)
    src, dst, vec, dist = neighbours(lattice, frac)
    w = envelope(dist)
    nodes = [species(numbers)]
{nodes}    edges = [{edges}]
    pseudo = [{pseudo}]
    edge_index = np.stack([src, dst])
    edge_feats = np.concatenate(edges, axis=1)
    edge_pseudo = np.concatenate(pseudo, axis=1)
{loops}    return Graph(np.concatenate(nodes, axis=1), edge_index, edge_feats, edge_pseudo)
'''

_FRAC_NODES = "    nodes.append(frac)\n"
_LOOPS = '''    n, lengths = len(frac), np.linalg.norm(lattice, axis=1)
    loop_index = np.stack([np.repeat(np.arange(n), 3), np.repeat(np.arange(n), 3)])
    loop_feats = np.zeros((3 * n, edge_feats.shape[1] + 1))
    loop_feats[:, -1] = np.tile(lengths, n)
    edge_index = np.concatenate([edge_index, loop_index], axis=1)
    edge_feats = np.concatenate([np.concatenate([edge_feats, np.zeros((len(dist), 1))], axis=1), loop_feats])
    edge_pseudo = np.concatenate([edge_pseudo, np.zeros((3 * n, edge_pseudo.shape[1]))])
'''

_HEADER = re.compile(r"^# genes: (\{.*\})\s*$", re.MULTILINE)


def check_genes(genes: Mapping[str, Any], name: str = "genes") -> dict[str, Any]:
    """``genes`` validated and normalised: ``{"neighbours", "cutoff", "features": sorted tuple}``."""
    check_instance(genes, name, Mapping, "a mapping with keys neighbours, cutoff, features")
    missing = {"neighbours", "cutoff", "features"} - set(genes)
    if missing:
        raise ValueError(f"{name} must have keys neighbours, cutoff and features, missing {sorted(missing)}")
    features = genes["features"]
    if isinstance(features, str) or not isinstance(features, (list, tuple, set, frozenset)):
        raise TypeError(f"{name}['features'] must be a list of block names, got {features!r}")
    for f in features:
        check_choice(f, f"{name}['features']", FEATURES)
    return {"neighbours": check_choice(genes["neighbours"], f"{name}['neighbours']", NEIGHBOURS),
            "cutoff": check_choice(genes["cutoff"], f"{name}['cutoff']", CUTOFFS),
            "features": tuple(sorted(set(features)))}


def compose(genes: Mapping[str, Any], cutoff: float = CUTOFF_RADIUS) -> str:
    """The Python source of the representation described by ``genes`` (see the module docstring).

    Edge features with no edge block (only ``triple``/``cartesian``-free genes) fall back to a constant column
    times the envelope, so every candidate has at least one invariant edge feature.
    """
    genes = check_genes(genes)
    cutoff = check_scalar(cutoff, "cutoff", "real", min=0.5, max=20.0)
    feats = genes["features"]
    edge_blocks = [f for f in ("distance", "rbf", "angle", "cartesian") if f in feats]
    parts = [f"# genes: {json.dumps({**genes, 'features': list(feats)}, sort_keys=True)}\n",
             _PREAMBLE.format(cutoff=cutoff), _NEIGHBOURS[genes["neighbours"]], _CUTOFFS[genes["cutoff"]]]
    parts += [_BLOCKS[f] for f in ("distance", "rbf", "angle", "triple", "cartesian") if f in feats]
    edges = ", ".join(f"feat_{f}(src, vec, dist, w)" for f in edge_blocks) or "w[:, None]"
    pseudo = "pseudo_triple(src, vec, dist, w)" if "triple" in feats else "np.zeros((len(dist), 0))"
    parts.append(_REPRESENT.format(nodes=_FRAC_NODES if "frac" in feats else "", edges=edges, pseudo=pseudo,
                                   loops=_LOOPS if "lattice_loops" in feats else ""))
    return "".join(parts)


def genes_of(source: str) -> dict[str, Any] | None:
    """The genes recorded in a composed source's ``# genes:`` header, or None for other code."""
    check_instance(source, "source", str)
    match = _HEADER.search(source)
    if match is None:
        return None
    try:
        return check_genes(json.loads(match.group(1)))
    except (ValueError, TypeError):
        return None


REFERENCE_GENES = {
    "cgcnn": {"neighbours": "radius", "cutoff": "hard", "features": ("rbf",)},
    "knn": {"neighbours": "knn", "cutoff": "hard", "features": ("rbf",)},
    "knn_angle": {"neighbours": "knn", "cutoff": "hard", "features": ("rbf", "angle")},
    "matformer": {"neighbours": "radius", "cutoff": "hard", "features": ("rbf", "lattice_loops")},
    "hard_cutoff": {"neighbours": "radius", "cutoff": "hard", "features": ("rbf", "triple")},
    "frac_nodes": {"neighbours": "radius", "cutoff": "smooth", "features": ("rbf", "frac")},
    "cartesian": {"neighbours": "radius", "cutoff": "smooth", "features": ("rbf", "cartesian")},
    "constant": {"neighbours": "knn", "cutoff": "hard", "features": ()},
    "smooth_triple": {"neighbours": "radius", "cutoff": "smooth", "features": ("rbf", "angle", "triple")},
}
BASE_CODES = ("cgcnn", "knn", "matformer")
