"""Representation similarity and knowledge graphs (groundwork for the universality chapter).

* :func:`linear_cka` and :func:`debiased_cka` — centred kernel alignment with linear
  kernels (Kornblith et al., 2019), the debiased version using the unbiased HSIC
  estimator.
* :class:`FamilyForest` — a genealogy of a few generations with derived relations
  (parent, child, spouse, sibling, grandparent, grandchild, uncle/aunt, niece/nephew,
  cousin, ancestor, descendant), queryable as sets of (person, person) facts.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .utils import check_int

__all__ = ["linear_cka", "debiased_cka", "FamilyForest", "RELATIONS"]


def _check_pair(X, Y) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X.detach().cpu() if hasattr(X, "detach") else X, dtype=np.float64)
    Y = np.asarray(Y.detach().cpu() if hasattr(Y, "detach") else Y, dtype=np.float64)
    if X.ndim != 2 or Y.ndim != 2:
        raise ValueError(f"X and Y must be 2-D (examples, features), got {X.shape}, {Y.shape}")
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X and Y must describe the same examples: {X.shape[0]} rows vs "
                         f"{Y.shape[0]}")
    if not (np.isfinite(X).all() and np.isfinite(Y).all()):
        raise ValueError("X and Y must be finite")
    return X, Y


def linear_cka(X, Y) -> float:
    """Linear CKA between representations X (n, p) and Y (n, q) of the same n examples.

    ``||Yc^T Xc||_F^2 / (||Xc^T Xc||_F ||Yc^T Yc||_F)`` with column-centred Xc, Yc.
    Invariant to orthogonal transforms and isotropic scaling, not to general linear maps.
    """
    X, Y = _check_pair(X, Y)
    X, Y = X - X.mean(0), Y - Y.mean(0)
    cross = np.linalg.norm(Y.T @ X) ** 2
    return float(cross / (np.linalg.norm(X.T @ X) * np.linalg.norm(Y.T @ Y)))


def _unbiased_hsic(K: np.ndarray, L: np.ndarray) -> float:
    """Unbiased HSIC estimator (Song et al., 2012) of two Gram matrices, up to a constant."""
    n = K.shape[0]
    K, L = K.copy(), L.copy()
    np.fill_diagonal(K, 0.0)
    np.fill_diagonal(L, 0.0)
    ones = np.ones(n)
    term = (np.trace(K @ L) + (ones @ K @ ones) * (ones @ L @ ones) / ((n - 1) * (n - 2))
            - 2 * (ones @ K @ L @ ones) / (n - 2))
    return float(term / (n * (n - 3)))


def debiased_cka(X, Y) -> float:
    """Linear CKA with the unbiased HSIC estimator (less biased for few examples)."""
    X, Y = _check_pair(X, Y)
    if X.shape[0] < 4:
        raise ValueError(f"debiased CKA needs at least 4 examples, got {X.shape[0]}")
    K, L = X @ X.T, Y @ Y.T
    return _unbiased_hsic(K, L) / np.sqrt(_unbiased_hsic(K, K) * _unbiased_hsic(L, L))


RELATIONS = ("parent", "child", "spouse", "sibling", "grandparent", "grandchild",
             "uncle_aunt", "niece_nephew", "cousin", "ancestor", "descendant")


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
    def generate(cls, n_families: int = 2, generations: int = 4, children: tuple = (2, 3),
                 seed: int = 0) -> FamilyForest:
        """Founding couples; every couple has between ``children[0]`` and ``children[1]``
        children; every child except in the last generation marries a newcomer."""
        n_families = check_int("n_families", n_families, minimum=1)
        generations = check_int("generations", generations, minimum=2)
        lo, hi = (check_int("children", c, minimum=1) for c in children)
        if hi < lo:
            raise ValueError(f"children must be (min, max) with min <= max, got {children}")
        rng = np.random.default_rng(seed)
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
                        partner = person(g, f)           # marries in
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
        if relation in self._cache:
            return self._cache[relation]
        P, eye = self.parent.astype(int), np.eye(self.n, dtype=bool)
        sib = ((P.T @ P) > 0) & ~eye
        if relation == "parent":
            M = self.parent
        elif relation == "child":
            M = self.parent.T
        elif relation == "spouse":
            M = self.spouse
        elif relation == "sibling":
            M = sib
        elif relation == "grandparent":
            M = (P @ P) > 0
        elif relation == "grandchild":
            M = ((P @ P) > 0).T
        elif relation == "uncle_aunt":        # a is a sibling of a parent of b
            M = (sib.astype(int) @ P) > 0
        elif relation == "niece_nephew":
            M = ((sib.astype(int) @ P) > 0).T
        elif relation == "cousin":            # a parent of a is a sibling of a parent of b
            M = ((P.T @ sib.astype(int) @ P) > 0) & ~eye
        else:                                 # ancestor / descendant: transitive closure
            A = self.parent.copy()
            while True:
                grown = A | ((A.astype(int) @ P) > 0)
                if (grown == A).all():
                    break
                A = grown
            M = A if relation == "ancestor" else A.T
        self._cache[relation] = M
        return M

    def facts(self, relation: str) -> set:
        """The set of (a, b) pairs for which relation(a, b) holds."""
        a, b = np.nonzero(self.matrix(relation))
        return set(zip(a.tolist(), b.tolist(), strict=True))

    def all_facts(self, relations=RELATIONS) -> np.ndarray:
        """Every fact as rows (relation index, a, b), relations indexed as in ``relations``."""
        rows = [(r, a, b) for r, rel in enumerate(relations)
                for a, b in sorted(self.facts(rel))]
        return np.array(rows, dtype=np.int64).reshape(-1, 3)

    def split(self, test_fraction: float = 0.2, seed: int = 0, relations=RELATIONS):
        """Random train/test split over *facts* (rows of :meth:`all_facts`)."""
        facts = self.all_facts(relations)
        order = np.random.default_rng(seed).permutation(len(facts))
        n_test = int(round(test_fraction * len(facts)))
        return facts[order[n_test:]], facts[order[:n_test]]
