"""Knowledge graphs: a genealogy and its kinship data.

* :class:`FamilyForest` — a genealogy of a few generations with derived relations
  (parent, child, spouse, sibling, grandparent, grandchild, uncle/aunt, niece/nephew,
  cousin, ancestor, descendant), queryable as sets of (person, person) facts, and the
  single *kinship term* of every ordered pair (:data:`KINSHIP`).
* :func:`kinship_data` — every ordered pair of people with its kinship term, split into
  training and held-out pairs; :func:`seen_closure` — every kinship term the training
  pairs imply (sound rules, fixed point); :func:`automorphism_count` — how many
  relabellings of the people preserve every relation.

The models that learn these graphs, their training and the plots of forests and
embeddings are in :mod:`seqtheory.kinship`; how two models' embeddings compare (CKA,
stitching) in :mod:`seqtheory.similarity`; the universality chapter's experiment (setup,
run, result) in :mod:`seqtheory.representations`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from math import factorial

import numpy as np
import torch

from ..core.runtime import check_device, to_numpy
from ..core.seeds import make_rng
from ..core.validate import check_float, check_int

__all__ = [
    "KINSHIP",
    "RELATIONS",
    "FamilyForest",
    "KinshipData",
    "automorphism_count",
    "kinship_data",
    "seen_closure",
]

RELATIONS = (
    "parent",
    "child",
    "spouse",
    "sibling",
    "grandparent",
    "grandchild",
    "uncle_aunt",
    "niece_nephew",
    "cousin",
    "ancestor",
    "descendant",
)
# The kinship term of an ordered pair (a, b): "a is b's <term>".  The terms are mutually
# exclusive in a forest without intermarriage; "great_ancestor" = ancestor but neither
# parent nor grandparent; "none" = no relation (including in-laws).
KINSHIP = (
    "none",
    "parent",
    "child",
    "spouse",
    "sibling",
    "grandparent",
    "grandchild",
    "uncle_aunt",
    "niece_nephew",
    "cousin",
    "great_ancestor",
    "great_descendant",
)
# The relations that are the transpose of another: "a is b's child" = "b is a's parent".
_INVERSES = {
    "child": "parent",
    "grandchild": "grandparent",
    "niece_nephew": "uncle_aunt",
    "descendant": "ancestor",
}


@dataclass
class FamilyForest:
    """A genealogy: ``parent[a, b]`` is True when person a is a parent of person b.

    People are numbered 0..n-1; ``generation[p]`` counts from 0 (the founders) and
    ``family[p]`` says which founding couple's tree p belongs to (spouses who marry in are
    assigned to the family they marry into).
    """

    parent: np.ndarray
    spouse: np.ndarray
    generation: np.ndarray
    family: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def generate(
        cls,
        n_families: int = 2,
        generations: int = 4,
        children: tuple = (2, 3),
        seed: int = 0,
        *,
        base: int | None = None,
    ) -> FamilyForest:
        """Founding couples; every couple has between ``children[0]`` and ``children[1]``
        children; every child except in the last generation marries a newcomer.  Drawn
        from ``make_rng(seed, base=base)`` (``base`` None: the book's base seed)."""
        n_families = check_int("n_families", n_families, minimum=1)
        generations = check_int("generations", generations, minimum=2)
        lo, hi = (check_int("children", c, minimum=1) for c in children)
        if hi < lo:
            raise ValueError(f"children must be (min, max) with min <= max, got {children}")
        rng = make_rng(seed, base=base)
        gen, fam, parents, couples = [], [], [], []

        def person(g, f, of=()):
            gen.append(g)
            fam.append(f)
            parents.append(tuple(of))
            return len(gen) - 1

        frontier = []
        for f in range(n_families):
            a, b = person(0, f), person(0, f)
            couples.append((a, b))
            frontier.append((a, b, f))
        for g in range(1, generations):
            nxt = []
            for a, b, f in frontier:
                for _ in range(rng.integers(lo, hi + 1)):
                    kid = person(g, f, (a, b))
                    if g < generations - 1:
                        partner = person(g, f)  # marries in
                        couples.append((kid, partner))
                        nxt.append((kid, partner, f))
            frontier = nxt
        n = len(gen)
        P = np.zeros((n, n), dtype=bool)
        for kid, of in enumerate(parents):
            for par in of:
                P[par, kid] = True
        S = np.zeros((n, n), dtype=bool)
        for a, b in couples:
            S[a, b] = S[b, a] = True
        return cls(P, S, np.array(gen), np.array(fam))

    @property
    def n(self) -> int:
        """Number of people."""
        return len(self.generation)

    def matrix(self, relation: str) -> np.ndarray:
        """Boolean (n, n) matrix: ``M[a, b]`` is True when relation(a, b) holds."""
        if relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}; got {relation!r}")
        if relation not in self._cache:
            inverse = _INVERSES.get(relation)
            self._cache[relation] = (
                self.matrix(inverse).T if inverse is not None else self._forward(relation)
            )
        return self._cache[relation]

    def _forward(self, relation: str) -> np.ndarray:
        """The matrix of a relation that is not the inverse of another (uncached)."""
        P, eye = self.parent.astype(int), np.eye(self.n, dtype=bool)
        if relation == "parent":
            return self.parent
        if relation == "spouse":
            return self.spouse
        if relation == "ancestor":  # transitive closure of parent
            A = self.parent.copy()
            while True:
                grown = A | ((A.astype(int) @ P) > 0)
                if (grown == A).all():
                    return A
                A = grown
        sib = ((P.T @ P) > 0) & ~eye
        if relation == "sibling":
            return sib
        if relation == "grandparent":
            return (P @ P) > 0
        if relation == "uncle_aunt":  # a is a sibling of a parent of b
            return (sib.astype(int) @ P) > 0
        # cousin: a parent of a is a sibling of a parent of b
        return ((P.T @ sib.astype(int) @ P) > 0) & ~eye

    def facts(self, relation: str) -> set:
        """The set of (a, b) pairs for which relation(a, b) holds."""
        a, b = np.nonzero(self.matrix(relation))
        return set(zip(a.tolist(), b.tolist(), strict=True))

    def all_facts(self, relations=RELATIONS) -> np.ndarray:
        """Every fact as rows (relation index, a, b), relations indexed as in ``relations``."""
        rows = [(r, a, b) for r, rel in enumerate(relations) for a, b in sorted(self.facts(rel))]
        return np.array(rows, dtype=np.int64).reshape(-1, 3)

    def kinship(self) -> np.ndarray:
        """(n, n) int matrix: ``K[a, b]`` indexes :data:`KINSHIP` (a is b's <term>)."""
        K = np.zeros((self.n, self.n), dtype=np.int64)
        for i, term in enumerate(KINSHIP[1:10], start=1):
            K[self.matrix(term)] = i
        great = self.matrix("ancestor") & (K == 0)
        K[great] = KINSHIP.index("great_ancestor")
        K[great.T] = KINSHIP.index("great_descendant")
        return K

    def shuffled(self, seed: int = 0, *, base: int | None = None) -> FamilyForest:
        """The same family shapes with people relabelled at random *within* each family:
        a different graph on the same people (person i now sits somewhere else); drawn
        from ``make_rng(seed, base=base)``."""
        rng = make_rng(seed, base=base)
        perm = np.arange(self.n)  # perm[old] = new label
        for f in np.unique(self.family):
            idx = np.flatnonzero(self.family == f)
            perm[idx] = rng.permutation(idx)
        inv = np.argsort(perm)  # inv[new] = old
        return FamilyForest(
            self.parent[np.ix_(inv, inv)],
            self.spouse[np.ix_(inv, inv)],
            self.generation[inv],
            self.family[inv],
        )

    def split(self, test_fraction: float = 0.2, seed: int = 0, relations=RELATIONS):
        """Random train/test split over *facts* (rows of :meth:`all_facts`)."""
        facts = self.all_facts(relations)
        order = make_rng(seed).permutation(len(facts))
        n_test = int(round(test_fraction * len(facts)))
        return facts[order[n_test:]], facts[order[:n_test]]


# --------------------------------------------------------------------------- kinship data
@dataclass
class KinshipData:
    """Ordered pairs of people with their kinship term and a train/held-out split."""

    pairs: torch.Tensor  # (P, 2) long: ordered pairs (a, b), a != b
    labels: torch.Tensor  # (P,) long: index into KINSHIP of "a is b's <term>"
    train: torch.Tensor  # (P,) bool: True for training pairs, False for held-out ones
    n_people: int

    def select(self, which: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
        """``(pairs, labels)`` of one part: "train", "test", "test_facts" (held-out related
        pairs), "test_none" (held-out unrelated pairs), "train_facts" or "all"."""
        related = self.labels > 0
        masks = {
            "all": torch.ones_like(self.train),
            "train": self.train,
            "test": ~self.train,
            "train_facts": self.train & related,
            "test_facts": ~self.train & related,
            "test_none": ~self.train & ~related,
        }
        if which not in masks:
            raise ValueError(f"which must be one of {tuple(masks)}; got {which!r}")
        m = masks[which]
        return self.pairs[m], self.labels[m]

    def relabelled(self, forest: FamilyForest) -> KinshipData:
        """The same pairs and split, labelled by another forest on the same people."""
        if forest.n != self.n_people:
            raise ValueError(f"forest has {forest.n} people, the data has {self.n_people}")
        K = torch.from_numpy(forest.kinship()).to(self.pairs.device)
        return KinshipData(
            self.pairs, K[self.pairs[:, 0], self.pairs[:, 1]], self.train, self.n_people
        )

    @property
    def device(self) -> torch.device:
        """Where the tensors live."""
        return self.pairs.device

    def to(self, device) -> KinshipData:
        """The same data with its tensors on ``device`` (itself if they are there already)."""
        device = check_device("device", device)
        if self.pairs.device == device:
            return self
        return KinshipData(
            self.pairs.to(device), self.labels.to(device), self.train.to(device), self.n_people
        )


def kinship_data(
    forest: FamilyForest,
    train_fraction: float = 0.8,
    seed: int = 0,
    within_family: bool = True,
    *,
    base: int | None = None,
) -> KinshipData:
    """Every ordered pair (a, b), a != b, with its kinship term; a random ``train_fraction``
    of the pairs is for training, the rest is held out (drawn from
    ``make_rng(seed, base=base)``).

    ``within_family`` keeps only pairs from the same family (pairs across families are all
    "none", and cost most of the compute)."""
    if not isinstance(forest, FamilyForest):
        raise TypeError(f"forest must be a FamilyForest, got {type(forest).__name__}")
    train_fraction = check_float(
        "train_fraction", train_fraction, low=0.0, high=1.0, low_open=True, high_open=True
    )
    keep = ~np.eye(forest.n, dtype=bool)
    if within_family:
        keep &= forest.family[:, None] == forest.family[None, :]
    a, b = np.nonzero(keep)
    labels = forest.kinship()[a, b]
    train = make_rng(seed, base=base).random(len(a)) < train_fraction
    return KinshipData(
        torch.from_numpy(np.stack([a, b], 1)),
        torch.from_numpy(labels),
        torch.from_numpy(train),
        forest.n,
    )


def seen_closure(data: KinshipData) -> np.ndarray:
    """The kinship terms that the *training* pairs of ``data`` imply: (n, n) int matrix
    indexing :data:`KINSHIP`, 0 where nothing is implied.

    Sound rules, valid in every forest :meth:`FamilyForest.generate` makes (each child has
    exactly two parents, who are each other's only spouse; siblings share both parents):
    a seen "parent" or the inverse "child" gives a parent link; a seen spouse or sibling
    fact is symmetric; children of one parent are siblings; siblings are transitive; a
    parent of someone is a parent of that person's siblings; a parent's spouse is a parent;
    two parents of one child are spouses.  Iterated to a fixed point on boolean matrices,
    the recovered parent and spouse links are a subset of the true ones, so every term
    derived from them (as in :meth:`FamilyForest.kinship`) is the true term."""
    if not isinstance(data, KinshipData):
        raise TypeError(f"data must be KinshipData, got {type(data).__name__}")
    n = data.n_people
    pairs, labels = (to_numpy(t) for t in data.select("train"))
    seen = np.zeros((len(KINSHIP), n, n), dtype=bool)  # (K, n, n)
    seen[labels, pairs[:, 0], pairs[:, 1]] = True
    T = {t: seen[KINSHIP.index(t)] for t in ("parent", "child", "spouse", "sibling")}
    eye = np.eye(n, dtype=bool)
    P = T["parent"] | T["child"].T
    S = T["spouse"] | T["spouse"].T
    sib = T["sibling"] | T["sibling"].T

    def mm(A, B):
        return (A.astype(np.int64) @ B.astype(np.int64)) > 0

    while True:
        new_sib = (sib | mm(P.T, P) | mm(sib, sib)) & ~eye
        new_P = P | mm(P, new_sib) | mm(S, P)
        new_S = S | (mm(new_P, new_P.T) & ~eye)
        if (new_sib == sib).all() and (new_P == P).all() and (new_S == S).all():
            break
        sib, P, S = new_sib, new_P, new_S
    zeros = np.zeros(n, dtype=np.int64)
    return FamilyForest(P, S, zeros, zeros).kinship()


def automorphism_count(forest: FamilyForest) -> int:
    """Number of relabellings of the people that preserve every parent and spouse link
    (and so every kinship term), for forests made by :meth:`FamilyForest.generate`:
    swap the two founders of a couple, swap siblings whose descendant trees have the same
    shape, swap families of the same shape."""
    if not isinstance(forest, FamilyForest):
        raise TypeError(f"forest must be a FamilyForest, got {type(forest).__name__}")
    kids = [np.flatnonzero(forest.parent[p]) for p in range(forest.n)]

    def tree(p):  # (shape, automorphisms) of the line below person p
        below = [tree(c) for c in kids[p]]
        shape = (bool(forest.spouse[p].any()), tuple(sorted(sh for sh, _ in below)))
        count = int(np.prod([a for _, a in below], dtype=object)) if below else 1
        for mult in Counter(sh for sh, _ in below).values():
            count *= factorial(mult)
        return shape, count

    founders = np.flatnonzero(
        ~forest.parent.any(0) & ~(forest.spouse.astype(int) @ forest.parent.any(0)).astype(bool)
    )
    roots = [
        p
        for p in founders  # one founder per couple, or a single founder
        if not forest.spouse[p].any() or p < np.flatnonzero(forest.spouse[p]).min()
    ]
    total, shapes = 1, []
    for r in roots:
        shape, count = tree(r)
        couple = forest.spouse[r].any()
        total *= count * (2 if couple else 1)  # the founders swap
        shapes.append(shape)
    for mult in Counter(shapes).values():
        total *= factorial(mult)
    return total
