"""A periodic crystal as (lattice, fractional coordinates, atomic numbers) and the symmetry operations
the constraint checkers of Rep-CodeGen apply to it (permutation, translation, rotation, change of basis,
supercell, mirror image, perturbation).

Only NumPy is needed, so the sandboxed child process can rebuild crystals without importing ASE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_scalar

MIN_DISTANCE = 0.5  # Å: closer atoms are rejected as unphysical


def _min_image_distance(lattice: np.ndarray, frac: np.ndarray) -> float:
    """The shortest distance between two atoms (or an atom and its own image) in the periodic crystal."""
    shifts = np.array(np.meshgrid(*[np.arange(-1, 2)] * 3, indexing="ij")).reshape(3, -1).T
    diff = (frac[None, :, None, :] - frac[:, None, None, :] + shifts[None, None]) @ lattice
    d = np.linalg.norm(diff, axis=-1)
    n = len(frac)
    d[np.arange(n), np.arange(n), len(shifts) // 2] = np.inf
    return float(d.min())


@dataclass(frozen=True, eq=False)
class Crystal:
    """A periodic structure: ``lattice`` rows are the cell vectors (Å), ``frac_coords`` in [0, 1), ``numbers``
    the atomic numbers.

    A left-handed lattice (negative determinant) is normalised to a right-handed one by negating its first
    vector and the first fractional coordinate (the same atoms in space); a singular lattice, atoms closer
    than 0.5 Å (images included) and non-positive atomic numbers are rejected.
    """

    lattice: np.ndarray
    frac_coords: np.ndarray
    numbers: np.ndarray

    def __post_init__(self) -> None:
        lattice = check_array(self.lattice, "lattice", dtype=float, shape=(3, 3), copy=True)
        frac = check_array(self.frac_coords, "frac_coords", dtype=float, ndim=2, min_len=1, copy=True)
        if frac.shape[1] != 3:
            raise ValueError(f"frac_coords must have shape (N, 3), got {frac.shape}")
        numbers = check_array(self.numbers, "numbers", ndim=1, min_len=1)
        if numbers.dtype.kind not in "iu" and not np.all(numbers == np.round(numbers)):
            raise TypeError(f"numbers must be integer atomic numbers, got dtype {numbers.dtype}")
        numbers = numbers.astype(np.int64)
        if len(numbers) != len(frac):
            raise ValueError(f"numbers and frac_coords must have the same length, got {len(numbers)}, {len(frac)}")
        if np.any(numbers < 1) or np.any(numbers > 118):
            raise ValueError(f"numbers must be atomic numbers in [1, 118], got {numbers.tolist()}")
        det = np.linalg.det(lattice)
        volume_scale = np.prod(np.linalg.norm(lattice, axis=1))
        if abs(det) < 1e-8 * max(volume_scale, 1e-300):
            raise ValueError(f"lattice must be non-singular, got determinant {det:.3g}")
        if det < 0:
            lattice[0] *= -1
            frac[:, 0] *= -1
        frac = frac % 1.0
        frac[frac >= 1.0] = 0.0
        if _min_image_distance(lattice, frac) < MIN_DISTANCE:
            raise ValueError(f"frac_coords put two atoms closer than {MIN_DISTANCE} Å (images included)")
        object.__setattr__(self, "lattice", lattice)
        object.__setattr__(self, "frac_coords", frac)
        object.__setattr__(self, "numbers", numbers)

    @property
    def n_atoms(self) -> int:
        return len(self.numbers)

    @property
    def cart_coords(self) -> np.ndarray:
        return self.frac_coords @ self.lattice

    @classmethod
    def from_ase(cls, atoms: Any) -> Crystal:
        """From a periodic ``ase.Atoms`` (all three directions periodic)."""
        if not all(hasattr(atoms, a) for a in ("get_cell", "get_scaled_positions", "get_atomic_numbers")):
            raise TypeError(f"atoms must be an ase.Atoms, got {type(atoms).__name__}")
        if not all(atoms.pbc):
            raise ValueError(f"atoms must be periodic in all three directions, got pbc={list(atoms.pbc)}")
        return cls(np.array(atoms.get_cell()), atoms.get_scaled_positions(wrap=True), atoms.get_atomic_numbers())

    def to_ase(self) -> Any:
        """The same structure as an ``ase.Atoms`` (needs the ``materials`` extra)."""
        from ase import Atoms

        return Atoms(numbers=self.numbers, scaled_positions=self.frac_coords, cell=self.lattice, pbc=True)

    def permute(self, order: Any) -> Crystal:
        """Atoms re-indexed: atom ``i`` of the result is atom ``order[i]`` of this crystal."""
        order = check_array(order, "order", ndim=1)
        if order.dtype.kind not in "iu" or sorted(order.tolist()) != list(range(self.n_atoms)):
            raise ValueError(f"order must be a permutation of range({self.n_atoms}), got {order.tolist()}")
        return Crystal(self.lattice, self.frac_coords[order], self.numbers[order])

    def translate(self, shift: Any) -> Crystal:
        """Every atom moved by the fractional vector ``shift`` (wrapped back into the cell)."""
        shift = check_array(shift, "shift", dtype=float, shape=(3,))
        return Crystal(self.lattice, self.frac_coords + shift, self.numbers)

    def rotate(self, rotation: Any) -> Crystal:
        """The crystal rotated rigidly by a proper rotation matrix (Cartesian row vectors ``x -> x R^T``)."""
        rotation = check_array(rotation, "rotation", dtype=float, shape=(3, 3))
        if not np.allclose(rotation @ rotation.T, np.eye(3), atol=1e-8) or np.linalg.det(rotation) < 0:
            raise ValueError("rotation must be a proper rotation matrix (orthogonal, determinant +1)")
        return Crystal(self.lattice @ rotation.T, self.frac_coords, self.numbers)

    def change_basis(self, matrix: Any) -> Crystal:
        """The same lattice in another basis: ``lattice' = M lattice`` for an integer ``M`` with det ±1."""
        matrix = check_array(matrix, "matrix", shape=(3, 3))
        if not np.all(matrix == np.round(matrix)) or round(abs(np.linalg.det(matrix))) != 1:
            raise ValueError("matrix must be a unimodular integer matrix (integer entries, determinant ±1)")
        matrix = np.round(matrix)
        return Crystal(matrix @ self.lattice, self.frac_coords @ np.linalg.inv(matrix), self.numbers)

    def supercell(self, reps: Any) -> Crystal:
        """The ``reps[0] x reps[1] x reps[2]`` supercell; atom ``i`` of each copy follows the original order."""
        reps = check_array(reps, "reps", shape=(3,))
        if reps.dtype.kind not in "iu" or np.any(reps < 1):
            raise ValueError(f"reps must be three integers >= 1, got {reps.tolist()}")
        grid = np.array(np.meshgrid(*[np.arange(r) for r in reps], indexing="ij")).reshape(3, -1).T
        frac = ((self.frac_coords[None] + grid[:, None]) / reps).reshape(-1, 3)
        return Crystal(self.lattice * reps[:, None], frac, np.tile(self.numbers, len(grid)))

    def mirror(self) -> Crystal:
        """The mirror image through the plane z = 0 (Cartesian ``diag(1, 1, -1)``), made right-handed again."""
        return Crystal(self.lattice * np.array([1.0, 1.0, -1.0]), self.frac_coords, self.numbers)

    def perturb(self, sigma: float, seed: Seed = None) -> Crystal:
        """Every atom displaced by an isotropic Gaussian of standard deviation ``sigma`` Å."""
        sigma = check_scalar(sigma, "sigma", "real", min=0.0)
        rng = as_generator(seed)
        cart = self.cart_coords + sigma * rng.standard_normal((self.n_atoms, 3))
        return Crystal(self.lattice, cart @ np.linalg.inv(self.lattice), self.numbers)

    def displace(self, delta: Any) -> Crystal:
        """Atoms moved by the Cartesian displacements ``delta`` (N, 3) in Å."""
        delta = check_array(delta, "delta", dtype=float, shape=(self.n_atoms, 3))
        return Crystal(self.lattice, (self.cart_coords + delta) @ np.linalg.inv(self.lattice), self.numbers)
