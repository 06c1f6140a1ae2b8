"""Blocks of parameters, direction allocation, projection onto seed-regenerated bases and reconstruction.

Ferret (Shu et al., ICML 2025), Sec. 3: a client's update ``Delta`` is cut into blocks; block ``l``
gets ``K_l`` of the ``K`` shared seeds and is sent as ``K_l`` coordinates
``gamma_{l,k} = <v_{l,k}, Delta_l> / K_l`` (unbiased with ``E[v v^T] = I``); the server regenerates
every direction once, and rebuilds ``sum_k gammā_{l,k} v_{l,k}``.  Directions are streamed one at a
time (chunked), or, for blocks smaller than ``chunk`` values, in groups of at most ``chunk`` values (one
matrix-vector product per group), so no ``K x d`` matrix is ever held: extra memory stays below
``chunk`` floats (4 MiB by default) plus one block.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from icml25.federated.ferret.bases import KINDS, basis, iter_basis_chunks, rademacher_rows
from icml25.federated.messages import MalformedMessageError
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_choice, check_instance, check_scalar, check_sequence

__all__ = ["Block", "Coords", "make_blocks", "parameter_aliases", "allocate_directions", "project", "reconstruct",
           "coordinate_scale"]


@dataclass(frozen=True)
class Block:
    """A group of named tensors flattened into one vector (names in registration order).

    ``names`` (distinct strings, at least one) and ``shapes`` (one tuple of sizes >= 0 per name) have equal lengths.
    """

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        names = check_sequence(self.names, "names", min_len=1, item=lambda v, n: check_instance(v, n, str))
        shapes = check_sequence(self.shapes, "shapes", min_len=1)
        if len(names) != len(shapes):
            raise ValueError(f"names and shapes must have the same length, got {len(names)}, {len(shapes)}")
        if len(set(names)) != len(names):
            raise ValueError(f"names must be distinct, got {list(names)}")
        for i, shape in enumerate(shapes):
            check_sequence(shape, f"shapes[{i}]", item=lambda v, n: check_scalar(v, n, "int", min=0))

    @property
    def numel(self) -> int:
        return int(sum(int(np.prod(s)) for s in self.shapes))

    def flatten(self, arrays: Mapping[str, np.ndarray]) -> np.ndarray:
        """The block's tensors of ``arrays`` (a mapping holding every name of the block) as one float32 vector."""
        check_instance(arrays, "arrays", Mapping, "a mapping name -> array")
        missing = [n for n in self.names if n not in arrays]
        if missing:
            raise ValueError(f"arrays lacks the block's tensors {missing}")
        for name, shape in zip(self.names, self.shapes, strict=True):
            if int(np.size(arrays[name])) != int(np.prod(shape)):
                raise ValueError(f"arrays[{name!r}] must hold {int(np.prod(shape))} values (shape {tuple(shape)}), "
                                 f"got shape {np.shape(arrays[name])}")
        return np.concatenate([np.asarray(arrays[n], dtype=np.float32).ravel() for n in self.names])

    def split(self, vector: np.ndarray) -> dict[str, np.ndarray]:
        """Inverse of :meth:`flatten`: a finite 1-d ``vector`` of :attr:`numel` values -> name -> array."""
        vector = check_array(vector, "vector", ndim=1, dtype=None)
        if vector.size != self.numel:
            raise ValueError(f"vector must hold the block's {self.numel} values, got {vector.size}")
        out, pos = {}, 0
        for name, shape in zip(self.names, self.shapes, strict=True):
            n = int(np.prod(shape))
            out[name] = vector[pos:pos + n].reshape(shape)
            pos += n
        return out


def _named_shapes(params: object) -> list[tuple[str, tuple[int, ...]]]:
    if hasattr(params, "named_parameters"):  # an nn.Module: trainable parameters, tied ones counted once
        return [(n, tuple(p.shape)) for n, p in params.named_parameters() if p.requires_grad]
    if isinstance(params, Mapping):
        return [(str(n), tuple(np.shape(v))) for n, v in params.items()]
    raise TypeError(f"params must be an nn.Module or a mapping name -> array, got {type(params).__name__}")


def make_blocks(params: object, target_numel: int | None = None) -> list[Block]:
    """Group tensors in order into blocks of about ``target_numel`` values (official: 0.9 x median numel).

    ``params`` is an ``nn.Module`` (its trainable parameters; frozen ones are excluded and tied ones
    counted once) or a mapping name -> array.  A block is closed when adding the next tensor would
    exceed the target; a tensor larger than the target forms its own block.  ``target_numel`` at
    least the total size gives a single block.
    """
    named = [(n, s) for n, s in _named_shapes(params) if int(np.prod(s)) > 0]
    if not named:
        raise ValueError("make_blocks needs at least one non-empty trainable tensor")
    sizes = [int(np.prod(s)) for _, s in named]
    if target_numel is None:
        target_numel = max(1, int(0.9 * float(np.median(sizes))))
    target_numel = check_scalar(target_numel, "target_numel", "int", min=1)
    blocks, current, size = [], [], 0
    for (name, shape), n in zip(named, sizes, strict=True):
        if current and size + n > target_numel:
            blocks.append(current)
            current, size = [], 0
        current.append((name, shape))
        size += n
    blocks.append(current)
    return [Block(tuple(n for n, _ in b), tuple(s for _, s in b)) for b in blocks]


def parameter_aliases(module: object) -> dict[str, str]:
    """State-dict names of tied parameters -> the name under which ``named_parameters`` lists them."""
    if not (hasattr(module, "named_parameters") and hasattr(module, "state_dict")):
        raise TypeError(f"module must be an nn.Module, got {type(module).__name__}")
    canonical = {id(p): n for n, p in module.named_parameters()}
    return {n: canonical[id(t)] for n, t in module.state_dict(keep_vars=True).items()
            if id(t) in canonical and canonical[id(t)] != n}


def allocate_directions(block_norms: Sequence[float], K: int, dims: Sequence[int] | None = None,
                        min_per_block: int = 2, rule: str = "norm") -> list[int]:
    """Directions per block: ``max(floor(K * ||Delta_l|| / max_j ||Delta_j||), min_per_block)`` (official rule).

    ``rule="uniform"`` gives ``K`` to every block.  Counts are capped at ``K`` and at the block size
    ``dims[l]`` (with a warning).  All norms zero: no directions at all (nothing to send).
    """
    K = check_scalar(K, "K", "int", min=1)
    check_choice(rule, "rule", ("norm", "uniform"))
    min_per_block = check_scalar(min_per_block, "min_per_block", "int", min=0)
    norms = check_array(block_norms, "block_norms", ndim=1, dtype=np.float64, min_len=1)
    if np.any(norms < 0):
        raise ValueError(f"block_norms must be >= 0, got {block_norms!r}")
    if norms.max() == 0:
        return [0] * norms.size
    if rule == "uniform":
        counts = np.full(norms.size, K)
    else:
        counts = np.maximum(np.floor(K * norms / max(norms.max(), 1e-8)).astype(int), min(min_per_block, K))
    counts = np.minimum(counts, K)
    if dims is not None:
        dims = check_array(dims, "dims", dtype=int)
        if dims.shape != norms.shape or np.any(dims < 1):
            raise ValueError(f"dims must give one positive size per block, got {list(dims)}")
        if np.any(counts > dims):
            warnings.warn("more directions than values in a block: capped at the block size", RuntimeWarning,
                          stacklevel=2)
            counts = np.minimum(counts, dims)
    return [int(c) for c in counts]


def coordinate_scale(kind: str, dim: int, n_directions: int) -> float:
    """``1/K_l`` for unbiased bases (Gaussian, Rademacher); ``d_l/K_l`` for the official truncated normal."""
    return (dim if check_choice(kind, "kind", KINDS) == "official" else 1.0) / n_directions


@dataclass
class Coords:
    """A client's compressed update: per block, the chosen seed indices and their coordinates.

    ``index[l]`` (distinct ints >= 0) and ``values[l]`` (finite floats) are 1-d arrays of equal length, one pair
    per block.
    """

    index: list[np.ndarray]
    values: list[np.ndarray]

    def __post_init__(self) -> None:
        index, values = check_sequence(self.index, "index"), check_sequence(self.values, "values")
        if len(index) != len(values):
            raise ValueError(f"index and values must have one entry per block, got {len(index)}, {len(values)}")
        for block, (idx, val) in enumerate(zip(index, values, strict=True)):
            idx = check_array(idx, f"index[{block}]", ndim=1)
            val = check_array(val, f"values[{block}]", ndim=1)
            if idx.size and (idx.dtype.kind not in "iu" or idx.min() < 0 or np.unique(idx).size != idx.size):
                raise ValueError(f"index[{block}] must hold distinct integers >= 0, got {idx.tolist()}")
            if idx.size != val.size:
                raise ValueError(f"index[{block}] and values[{block}] must have the same length, got "
                                 f"{idx.size}, {val.size}")

    def _seed_count(self, K: object) -> int:
        top = max((int(np.max(i)) for i in self.index if np.size(i)), default=-1)
        return check_scalar(K, "K", "int", min=max(1, top + 1))

    @property
    def n_coords(self) -> int:
        return int(sum(v.size for v in self.values))

    def dense(self, K: int) -> np.ndarray:
        """The ``(n_blocks, K)`` float32 matrix with zeros for unused seeds (``K`` above every index)."""
        K = self._seed_count(K)
        out = np.zeros((len(self.values), K), dtype=np.float32)
        for row, (idx, val) in enumerate(zip(self.index, self.values, strict=True)):
            out[row, idx] = val
        return out

    def to_arrays(self, K: int) -> dict[str, np.ndarray]:
        """What goes over the wire: float32 coordinates, uint16/uint32 seed indices and per-block counts."""
        K = self._seed_count(K)
        itype = np.uint16 if K <= 2**16 else np.uint32
        counts = np.array([v.size for v in self.values], dtype=itype)
        return {"coords": np.concatenate([np.zeros(0, np.float32), *self.values]).astype(np.float32),
                "index": np.concatenate([np.zeros(0, itype), *self.index]).astype(itype), "counts": counts}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], blocks: Sequence[Block], K: int) -> Coords:
        """Parse and check :meth:`to_arrays`' output; raise MalformedMessageError naming what is wrong.

        ``arrays`` is a mapping of names to arrays, ``blocks`` a non-empty sequence of :class:`Block` and
        ``K`` (seeds per round) an int >= 1.
        """
        check_instance(arrays, "arrays", Mapping)
        blocks = check_sequence(blocks, "blocks", min_len=1, item=lambda v, n: check_instance(v, n, Block))
        K = check_scalar(K, "K", "int", min=1)
        for key in ("coords", "index", "counts"):
            if key not in arrays:
                raise MalformedMessageError(f"Ferret message lacks {key!r}")
        coords, index, counts = (np.asarray(arrays[k]) for k in ("coords", "index", "counts"))
        if counts.dtype.kind not in "iu" or index.dtype.kind not in "iu" or coords.dtype.kind != "f":
            raise MalformedMessageError("Ferret message: counts and index must be integers, coords floats")
        if counts.shape != (len(blocks),):
            raise MalformedMessageError(f"Ferret message has {counts.size} block counts, expected {len(blocks)}")
        caps = np.array([min(K, b.numel) for b in blocks])
        if np.any(counts.astype(np.int64) > caps):
            raise MalformedMessageError(f"Ferret message: block counts {counts.tolist()} exceed min(K, d_l)")
        total = int(counts.astype(np.int64).sum())
        if coords.shape != (total,) or index.shape != (total,):
            raise MalformedMessageError(f"Ferret message: {coords.size} coords and {index.size} indices, counts sum "
                                        f"to {total}")
        if not np.all(np.isfinite(coords)):
            raise MalformedMessageError("Ferret message: coordinates contain NaN or Inf")
        if total and int(index.max()) >= K:
            raise MalformedMessageError(f"Ferret message: seed index {int(index.max())} out of range [0, {K})")
        bounds = np.concatenate([[0], np.cumsum(counts.astype(np.int64))])
        idx = [index[a:b].astype(np.int64) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        if any(np.unique(i).size != i.size for i in idx):
            raise MalformedMessageError("Ferret message: a seed index repeats within a block")
        return cls(idx, [coords[a:b].astype(np.float32) for a, b in zip(bounds[:-1], bounds[1:], strict=True)])


def project(deltas: Sequence[np.ndarray], seeds: np.ndarray, counts: Sequence[int], kind: str = "gaussian",
            seed: Seed = 0, chunk: int = 2**20) -> Coords:
    """Project each block's update onto ``counts[l]`` directions picked (without replacement) from ``seeds``.

    ``gamma_{l,k} = scale * <basis(seeds[k], d_l, block=l), Delta_l>`` with
    :func:`coordinate_scale`; ``seed`` (an int, ``None`` or a NumPy Generator, drawn from as is) picks the
    seed indices (all ``K`` seeds when ``counts[l] == K``).  ``seeds`` is a non-empty 1-d array of ints >= 0.
    """
    deltas = check_sequence(deltas, "deltas")
    counts = check_sequence(counts, "counts", item=lambda v, n: check_scalar(v, n, "int", min=0))
    seeds = _check_seeds(seeds)
    chunk = check_scalar(chunk, "chunk", "int", min=1)
    if len(deltas) != len(counts):
        raise ValueError(f"deltas and counts must have the same length, got {len(deltas)}, {len(counts)}")
    rng = as_generator(seed)
    K = len(seeds)
    index, values = [], []
    for block, (delta, n) in enumerate(zip(deltas, counts, strict=True)):
        delta = np.asarray(delta, dtype=np.float32).ravel()
        if not np.all(np.isfinite(delta)):
            raise ValueError(f"deltas[{block}] (the update of block {block}) contains NaN or Inf")
        if not 0 <= n <= min(K, delta.size):
            raise ValueError(f"block {block}: {n} directions, allowed 0..min(K={K}, d_l={delta.size})")
        idx = np.arange(K) if n == K else np.sort(rng.choice(K, size=n, replace=False))
        scale = coordinate_scale(kind, delta.size, max(n, 1))
        if delta.size <= chunk:  # whole directions, a group at a time: one matrix-vector product per group
            vals = np.concatenate([np.zeros(0, np.float32)] + [
                _stack(seeds, group, delta.size, kind, block) @ delta for group in _groups(idx, delta.size, chunk)])
            vals = (vals.astype(np.float64) * scale).tolist()
        else:  # one direction at a time, chunk by chunk
            vals = []
            for k in idx:
                dot, pos = 0.0, 0
                for part in iter_basis_chunks(int(seeds[k]), delta.size, kind, block, chunk):
                    dot += float(np.dot(part, delta[pos:pos + part.size]))
                    pos += part.size
                vals.append(scale * dot)
        index.append(idx.astype(np.int64))
        values.append(np.asarray(vals, dtype=np.float32))
    return Coords(index, values)


def reconstruct(dense: np.ndarray, seeds: np.ndarray, dims: Sequence[int], kind: str = "gaussian",
                clip: float | None = None, chunk: int = 2**20) -> tuple[list[np.ndarray], int]:
    """``sum_k dense[l, k] * v_{l,k}`` per block, each direction regenerated once; returns (updates, count).

    ``clip`` (official: 10) caps the l2 norm of every seed's reconstructed term ``dense[l,k] v_{l,k}``.
    ``count`` is the number of directions regenerated (the non-zero entries of ``dense``).
    """
    dense = check_array(dense, "dense", ndim=2, dtype=np.float32)
    seeds = _check_seeds(seeds)
    dims = check_sequence(dims, "dims", min_len=1, item=lambda v, n: check_scalar(v, n, "int", min=1))
    chunk = check_scalar(chunk, "chunk", "int", min=1)
    if dense.shape != (len(dims), len(seeds)):
        raise ValueError(f"dense must have shape ({len(dims)}, {len(seeds)}), got {dense.shape}")
    if clip is not None:
        clip = check_scalar(clip, "clip", "real", min=0.0, inclusive="neither")
    updates, count = [], 0
    for block, dim in enumerate(dims):
        acc = np.zeros(int(dim), dtype=np.float32)
        used = np.flatnonzero(dense[block])
        if dim <= chunk or clip is not None:  # whole directions, a group at a time
            for group in _groups(used, int(dim), chunk):
                V = _stack(seeds, group, int(dim), kind, block)
                coefs = dense[block, group].astype(np.float32)
                if clip is not None:
                    size = np.abs(coefs) * np.linalg.norm(V, axis=1)
                    coefs = coefs * np.minimum(1.0, clip / np.maximum(size, 1e-30)).astype(np.float32)
                acc += coefs @ V
        else:  # one direction at a time, chunk by chunk
            for k in used:
                pos = 0
                for part in iter_basis_chunks(int(seeds[k]), int(dim), kind, block, chunk):
                    acc[pos:pos + part.size] += dense[block, k] * part
                    pos += part.size
        count += used.size
        updates.append(acc)
    return updates, count


def _check_seeds(seeds: object) -> np.ndarray:
    seeds = check_array(seeds, "seeds", ndim=1, min_len=1)
    if seeds.dtype.kind not in "iu" or seeds.min() < 0:
        raise ValueError(f"seeds must be integers >= 0, got {seeds.tolist()}")
    return seeds


def _groups(idx: np.ndarray, dim: int, chunk: int) -> list[np.ndarray]:
    """Split seed indices into groups whose stacked directions hold at most ``max(chunk, dim)`` values."""
    size = max(1, chunk // dim)
    return [idx[a:a + size] for a in range(0, len(idx), size)]


def _stack(seeds: np.ndarray, group: np.ndarray, dim: int, kind: str, block: int) -> np.ndarray:
    if kind == "rademacher":
        return rademacher_rows(seeds[group], dim, block)
    return np.stack([basis(int(seeds[k]), dim, kind, block) for k in group]) if len(group) else np.zeros((0, dim),
                                                                                                           np.float32)
