"""Offline structures: the checkers' structure bank, a chiral test crystal, and an EMT energy data set,
all built with ASE (``ase.build.bulk`` prototypes with ASE's reference lattice constants,
``ase.spacegroup.crystal``, ``ase.calculators.emt.EMT``); nothing is downloaded."""

from __future__ import annotations

import numpy as np

from icml25.materials.rep_codegen.crystal import Crystal
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_scalar, check_sequence

EMT_ELEMENTS = ("Al", "Cu", "Ni", "Ag", "Au", "Pd", "Pt")


def chiral_structure() -> Crystal:
    """Trigonal selenium, space group P3_121 (No. 152): helical chains, a chiral crystal (3 atoms)."""
    from ase.spacegroup import crystal

    atoms = crystal("Se", [(0.2254, 0.0, 1 / 3)], spacegroup=152, cellpar=[4.3662, 4.3662, 4.9536, 90, 90, 120])
    return Crystal.from_ase(atoms)


def structure_bank(seed: Seed = 0, rattle: float = 0.1) -> list[Crystal]:
    """The checkers' bank: one-atom fcc Cu, rock-salt NaCl, and strained, rattled cells (4-atom fcc Al,
    2-atom bcc Fe with a substitution) so that neighbour distances are spread out."""
    from ase.build import bulk

    rattle = check_scalar(rattle, "rattle", "real", min=0.0, max=0.3)
    rng = as_generator(seed)
    cu = Crystal.from_ase(bulk("Cu", "fcc"))
    nacl = Crystal.from_ase(bulk("NaCl", "rocksalt", a=5.64))
    al = Crystal.from_ase(bulk("Al", "fcc", cubic=True))
    fe = Crystal.from_ase(bulk("Fe", "bcc", cubic=True))
    out = [cu, nacl]
    for c, numbers in ((al, al.numbers), (fe, np.array([26, 28]))):
        strain = np.eye(3) + 0.03 * rng.standard_normal((3, 3))
        strained = Crystal(c.lattice @ strain, c.frac_coords, numbers)
        out.append(strained.perturb(rattle, rng))
    return out


def emt_dataset(n: int, seed: Seed = 0, elements: tuple[str, ...] = EMT_ELEMENTS, rattle: float = 0.1,
                strain: float = 0.04) -> tuple[list[Crystal], np.ndarray]:
    """``n`` random cells and their EMT energy per atom (eV).

    Each cell is a 1-, 2- or 4-atom fcc or bcc cell of one element with ASE's reference lattice constant
    (bcc: the fcc volume per atom), randomly strained (``strain``), rattled (``rattle`` Å) and with each atom
    substituted by another element of ``elements`` with probability 0.3.
    """
    from ase.build import bulk
    from ase.calculators.emt import EMT

    n = check_scalar(n, "n", "int", min=1)
    elements = tuple(check_sequence(elements, "elements", min_len=1))
    for i, e in enumerate(elements):
        if e not in EMT_ELEMENTS:
            raise ValueError(f"elements[{i}] must be one of {EMT_ELEMENTS} (EMT's metals), got {e!r}")
    rattle = check_scalar(rattle, "rattle", "real", min=0.0, max=0.3)
    strain = check_scalar(strain, "strain", "real", min=0.0, max=0.2)
    rng = as_generator(seed)
    calc = EMT()
    crystals, energies = [], []
    while len(crystals) < n:
        element = elements[rng.integers(len(elements))]
        a_fcc = bulk(element, "fcc").cell.lengths()[0] * np.sqrt(2)
        kind = ("fcc", "bcc")[rng.integers(2)]
        cubic = bool(rng.integers(2))
        a = a_fcc if kind == "fcc" else a_fcc * 0.5 ** (1 / 3)  # bcc with the fcc volume per atom
        atoms = bulk(element, kind, a=a, cubic=cubic)
        atoms.set_cell(atoms.cell[:] @ (np.eye(3) + strain * rng.standard_normal((3, 3))), scale_atoms=True)
        atoms.positions += rattle * rng.standard_normal(atoms.positions.shape)
        symbols = [elements[rng.integers(len(elements))] if rng.random() < 0.3 else s
                   for s in atoms.get_chemical_symbols()]
        atoms.set_chemical_symbols(symbols)
        try:
            crystal = Crystal.from_ase(atoms)
        except ValueError:
            continue
        atoms.calc = calc
        crystals.append(crystal)
        energies.append(atoms.get_potential_energy() / len(atoms))
    return crystals, np.array(energies)
