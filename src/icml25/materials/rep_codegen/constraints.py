"""The six constraint checkers of Rep-CodeGen (and an optional seventh), as executable code.

The paper (Sec. 3.2) states six constraints a crystal-graph representation should meet; their exact
definitions were not available to us, so these checkers are our reconstruction (the standard crystal-graph
invariances, reflection *equivariance* for chirality and Lipschitz continuity). Each checker calls a batched
``represent(crystals) -> graphs`` (the sandbox's, or :func:`local_representation` in process) on transformed
copies of a structure bank and returns a :class:`CheckResult` with a numeric violation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from icml25.materials.rep_codegen.crystal import Crystal
from icml25.materials.rep_codegen.graph import Graph, graph_distance, readout
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_instance, check_scalar, check_sequence

Represent = Callable[[Sequence[Crystal]], list[Graph]]


@dataclass(frozen=True)
class CheckResult:
    """``passed`` iff ``violation`` (the largest measured discrepancy) is within the checker's tolerance."""

    passed: bool
    violation: float
    detail: str


def local_representation(source: str) -> Represent:
    """A batched ``represent`` from trusted source code, run in this process (for reference codes and tests;
    untrusted code goes through :class:`icml25.materials.Sandbox`)."""
    check_instance(source, "source", str)
    namespace: dict[str, Any] = {"Graph": Graph}
    exec(compile(source, "<representation>", "exec"), namespace)
    fn = namespace.get("represent")
    if not callable(fn):
        raise ValueError("source must define a function represent(lattice, frac_coords, numbers)")

    def represent(crystals: Sequence[Crystal]) -> list[Graph]:
        return [fn(c.lattice.copy(), c.frac_coords.copy(), c.numbers.copy()) for c in crystals]

    return represent


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random proper rotation matrix."""
    rng = as_generator(rng, "rng")
    return Rotation.random(random_state=rng).as_matrix()


def random_unimodular(rng: np.random.Generator, n_shears: int = 3) -> np.ndarray:
    """A random integer matrix with determinant +1: a product of elementary shears (row i += ±row j)."""
    rng = as_generator(rng, "rng")
    n_shears = check_scalar(n_shears, "n_shears", "int", min=0)
    m = np.eye(3, dtype=np.int64)
    for _ in range(n_shears):
        i, j = rng.choice(3, size=2, replace=False)
        shear = np.eye(3, dtype=np.int64)
        shear[i, j] = rng.choice([-1, 1])
        m = shear @ m
    return m


class Constraint:
    """A checker: ``check(represent, bank, rng)``; ``name`` labels it in reports and prompts, ``description``
    is the definition the agents are given. Subclasses implement :meth:`check`."""

    name = "constraint"
    description = ""

    def __init__(self, trials: int = 3, atol: float = 1e-6) -> None:
        self.trials = check_scalar(trials, "trials", "int", min=1)
        self.atol = check_scalar(atol, "atol", "real", min=0.0)

    def check(self, represent: Represent, bank: Sequence[Crystal], rng: Seed = None) -> CheckResult:
        raise NotImplementedError

    def _inputs(self, represent: Any, bank: Any, rng: Seed) -> tuple[Represent, list[Crystal], np.random.Generator]:
        if not callable(represent):
            raise TypeError(f"represent must be callable (crystals -> graphs), got {type(represent).__name__}")
        bank = check_sequence(bank, "bank", min_len=1, item=lambda c, n: check_instance(c, n, Crystal))
        return represent, bank, as_generator(rng, "rng")

    def _pairs(self, represent: Represent, originals: list[Crystal], transformed: list[Crystal],
               repeat: Sequence[int] | None = None, originals_graphs: list[Graph] | None = None) -> float:
        g0 = originals_graphs if originals_graphs is not None else represent(originals)
        g1 = represent(transformed)
        reps = repeat if repeat is not None else [1] * len(transformed)
        return max(graph_distance(b, a, r) for a, b, r in zip(g0, g1, reps, strict=True))

    def _result(self, violation: float, what: str) -> CheckResult:
        return CheckResult(bool(violation <= self.atol), float(violation), what)


class _Invariance(Constraint):
    def _transform(self, crystal: Crystal, rng: np.random.Generator) -> Crystal:
        raise NotImplementedError

    def check(self, represent: Represent, bank: Sequence[Crystal], rng: Seed = None) -> CheckResult:
        represent, bank, rng = self._inputs(represent, bank, rng)
        originals = [c for c in bank for _ in range(self.trials)]
        moved = [self._transform(c, rng) for c in originals]
        worst = self._pairs(represent, originals, moved)
        return self._result(worst, f"largest node-matched difference over {len(moved)} transformed structures")


class PermutationInvariance(_Invariance):
    """C1: re-indexing the atoms gives the same graph up to node order."""

    name = "C1_permutation"
    description = "Randomly permuting the order of the atoms must give the same graph up to node relabelling."

    def _transform(self, crystal: Crystal, rng: np.random.Generator) -> Crystal:
        return crystal.permute(rng.permutation(crystal.n_atoms))


class TranslationInvariance(_Invariance):
    """C2: shifting every atom by one random fractional vector (mod 1) gives the same graph."""

    name = "C2_translation"
    description = "Translating all atoms by the same vector (wrapped into the cell) must give the same graph."

    def _transform(self, crystal: Crystal, rng: np.random.Generator) -> Crystal:
        return crystal.translate(rng.random(3))


class RotationInvariance(_Invariance):
    """C3: rotating the crystal (lattice and Cartesian frame) by a random SO(3) matrix gives the same graph."""

    name = "C3_rotation"
    description = "Rotating the whole crystal by any proper rotation must give the same graph."

    def _transform(self, crystal: Crystal, rng: np.random.Generator) -> Crystal:
        return crystal.rotate(random_rotation(rng))


class PeriodicInvariance(Constraint):
    """C4: (a) another basis of the same lattice (random unimodular matrix) gives the same graph; (b) a
    supercell (2x1x1 along a random axis, and 2x2x1) gives the original graph repeated."""

    name = "C4_periodic"
    description = ("Choosing another unit cell of the same periodic crystal (another lattice basis, or a supercell) "
                   "must give the same graph (for a supercell: the original graph repeated once per copy).")

    def check(self, represent: Represent, bank: Sequence[Crystal], rng: Seed = None) -> CheckResult:
        represent, bank, rng = self._inputs(represent, bank, rng)
        originals, moved, repeat = [], [], []
        for c in bank:
            for _ in range(self.trials):
                originals.append(c)
                moved.append(c.change_basis(random_unimodular(rng)))
                repeat.append(1)
            reps = np.ones(3, dtype=np.int64)
            reps[rng.integers(3)] = 2
            for r in (reps, np.array([2, 2, 1])):
                originals.append(c)
                moved.append(c.supercell(r))
                repeat.append(int(np.prod(r)))
        worst = self._pairs(represent, originals, moved, repeat)
        return self._result(worst, f"largest difference over {len(moved)} re-based cells and supercells")


class ReflectionEquivariance(Constraint):
    """C5: for the mirror image (then a random rotation) the invariant features are unchanged and the
    pseudo-scalar features negated; and for each chiral structure the two enantiomers' graphs differ by more
    than ``distinct`` (a mirror-blind representation fails)."""

    name = "C5_reflection"
    description = ("Reflecting the crystal must leave invariant edge features unchanged and negate the pseudo-scalar "
                   "features (edge_pseudo); for a chiral crystal the graphs of the two mirror images must differ.")

    def __init__(self, trials: int = 3, atol: float = 1e-6, chiral: Sequence[Crystal] | None = None,
                 distinct: float = 1e-5) -> None:
        super().__init__(trials, atol)
        if chiral is None:
            from icml25.materials.rep_codegen.data import chiral_structure

            chiral = [chiral_structure()]
        self.chiral = check_sequence(chiral, "chiral", min_len=1, item=lambda c, n: check_instance(c, n, Crystal))
        self.distinct = check_scalar(distinct, "distinct", "real", min=0.0, inclusive="neither")

    def check(self, represent: Represent, bank: Sequence[Crystal], rng: Seed = None) -> CheckResult:
        represent, bank, rng = self._inputs(represent, bank, rng)
        structures = bank + self.chiral
        originals = [c for c in structures for _ in range(self.trials)]
        mirrored = [c.mirror().rotate(random_rotation(rng)) for c in originals]
        g0, g1 = represent(originals), represent(mirrored)
        equivariance = max(graph_distance(b, a.negate_pseudo()) for a, b in zip(g0, g1, strict=True))
        n_bank = len(bank) * self.trials
        chirality = min(graph_distance(b, a) for a, b in zip(g0[n_bank:], g1[n_bank:], strict=True))
        shortfall = max(0.0, self.distinct - chirality)
        violation = max(equivariance, shortfall)
        passed = equivariance <= self.atol and chirality > self.distinct
        return CheckResult(bool(passed), float(violation),
                           f"equivariance error {equivariance:.3g}; enantiomers differ by {chirality:.3g}")


class LipschitzContinuity(Constraint):
    """C6: the per-atom readout (:func:`icml25.materials.readout`) changes at most ``lipschitz`` times the
    displacement (Å), (a) for ``trials`` random displacements of norm 1e-2, 1e-3, 1e-4 Å, (b) along ``paths``
    random paths of ``step`` Å per atom and (c) along a dimer path that pulls two atoms from 1.5 to 8 Å apart (so every
    cutoff in that range is crossed). On (b) and (c) the ``segments`` segments that change most are refined
    ``refinements`` times (each time the segment that changes most is cut into ``refine_points`` pieces, one batch
    per level): a jump (a hard cutoff, a k-NN switch) shows as a ratio that grows with every refinement."""

    name = "C6_lipschitz"
    description = ("The graph's readout (mean node features and per-atom sums of edge features) must be Lipschitz "
                   "in the atomic positions: no jumps when an atom crosses a cutoff or neighbours swap.")

    def __init__(self, trials: int = 3, lipschitz: float = 1e3, paths: int = 1, path_points: int = 16,
                 refinements: int = 4, refine_points: int = 8, step: float = 0.3, segments: int = 2) -> None:
        super().__init__(trials, 0.0)
        self.lipschitz = check_scalar(lipschitz, "lipschitz", "real", min=0.0, inclusive="neither")
        self.paths = check_scalar(paths, "paths", "int", min=0)
        self.path_points = check_scalar(path_points, "path_points", "int", min=2)
        self.refinements = check_scalar(refinements, "refinements", "int", min=0)
        self.refine_points = check_scalar(refine_points, "refine_points", "int", min=2)
        self.step = check_scalar(step, "step", "real", min=0.0, inclusive="neither")
        self.segments = check_scalar(segments, "segments", "int", min=1)

    def _readouts(self, represent: Represent, crystals: list[Crystal]) -> np.ndarray:
        return np.stack([readout(g) for g in represent(crystals)])

    def check(self, represent: Represent, bank: Sequence[Crystal], rng: Seed = None) -> CheckResult:
        represent, bank, rng = self._inputs(represent, bank, rng)
        worst = 0.0
        for c in bank:
            base = self._readouts(represent, [c])[0]
            eps = np.repeat([1e-2, 1e-3, 1e-4], self.trials)
            moved = self._readouts(represent, [c.displace(self._direction(c, rng) * e) for e in eps])
            worst = max(worst, float((np.linalg.norm(moved - base, axis=1) / eps).max()))
            for _ in range(self.paths):
                worst = max(worst, self._path(represent, c, self._direction(c, rng) * self.step * np.sqrt(c.n_atoms)))
        dimer = Crystal(np.diag([18.0, 17.0, 16.0]), [[0.0, 0.0, 0.0], [1.5 / 18.0, 0.0, 0.0]], [29, 29])
        pull = np.array([[0.0, 0.0, 0.0], [6.5, 0.0, 0.0]])
        worst = max(worst, self._path(represent, dimer, pull))
        return CheckResult(bool(worst <= self.lipschitz), worst,
                           f"largest |readout change| / |displacement| = {worst:.3g} (limit {self.lipschitz:g})")

    @staticmethod
    def _direction(c: Crystal, rng: np.random.Generator) -> np.ndarray:
        d = rng.standard_normal((c.n_atoms, 3))
        return d / np.linalg.norm(d)

    def _path(self, represent: Represent, c: Crystal, v: np.ndarray) -> float:
        ts = np.linspace(0.0, 1.0, self.path_points)
        f = self._readouts(represent, [c.displace(t * v) for t in ts])
        norm = np.linalg.norm(v)
        jumps = np.linalg.norm(np.diff(f, axis=0), axis=1)
        worst = float(jumps.max() / ((ts[1] - ts[0]) * norm))
        segments = [(ts[k], ts[k + 1]) for k in np.argsort(-jumps, kind="stable")[:self.segments]]
        for _ in range(self.refinements):
            grids = [np.linspace(lo, hi, self.refine_points + 1) for lo, hi in segments]
            f = self._readouts(represent, [c.displace(t * v) for grid in grids for t in grid])
            f = f.reshape(len(grids), self.refine_points + 1, -1)
            segments = []
            for grid, fs in zip(grids, f, strict=True):
                jumps = np.linalg.norm(np.diff(fs, axis=0), axis=1)
                k = int(np.argmax(jumps))
                worst = max(worst, float(jumps[k] / ((grid[1] - grid[0]) * norm)))
                segments.append((grid[k], grid[k + 1]))
        return worst


class Discriminativeness(Constraint):
    """C7 (optional): a structure and a non-isometric copy of it (every length scaled by ``1 + strain``) give
    graphs that differ by more than ``distinct``; rules out degenerate codes (constant features) that satisfy
    every invariance trivially."""

    name = "C7_discriminative"
    description = "Different (non-isometric) crystals must give different graphs; constant features are not allowed."

    def __init__(self, distinct: float = 1e-5, strain: float = 0.04) -> None:
        super().__init__(1, 0.0)
        self.distinct = check_scalar(distinct, "distinct", "real", min=0.0, inclusive="neither")
        self.strain = check_scalar(strain, "strain", "real", min=0.0, max=0.5, inclusive="neither")

    def check(self, represent: Represent, bank: Sequence[Crystal], rng: Seed = None) -> CheckResult:
        represent, bank, _ = self._inputs(represent, bank, rng)
        scaled = [Crystal(c.lattice * (1 + self.strain), c.frac_coords, c.numbers) for c in bank]
        closest = min(graph_distance(a, b) for a, b in zip(represent(bank), represent(scaled), strict=True))
        return CheckResult(bool(closest > self.distinct), float(max(0.0, self.distinct - closest)),
                           f"closest structure / scaled copy pair differs by {closest:.3g}")


def default_constraints(discriminative: bool = False) -> list[Constraint]:
    """C1-C6 with their default settings (the paper's six constraints, as we reconstruct them), and C7
    (:class:`Discriminativeness`) when ``discriminative``."""
    from icml25.utils.validation import check_bool

    out = [PermutationInvariance(), TranslationInvariance(), RotationInvariance(), PeriodicInvariance(),
           ReflectionEquivariance(), LipschitzContinuity()]
    return out + [Discriminativeness()] if check_bool(discriminative, "discriminative") else out
