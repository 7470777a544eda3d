"""Knowledge graphs, models that learn them, and two ways to compare what they learned.

* :class:`FamilyForest` — a genealogy of a few generations with derived relations
  (parent, child, spouse, sibling, grandparent, grandchild, uncle/aunt, niece/nephew,
  cousin, ancestor, descendant), queryable as sets of (person, person) facts, and the
  single *kinship term* of every ordered pair (:data:`KINSHIP`).
* :func:`kinship_data` — every ordered pair of people with its kinship term, split into
  training and held-out pairs (the held-out facts are implied by the seen ones).
* :class:`KinshipModels` — ``M`` independent models in one tensor program: a learned
  embedding per person and an MLP decoder that reads two embeddings and names the
  relation. :func:`train_kinship` trains them, :func:`accuracy` scores them.
* :func:`linear_cka` and :func:`debiased_cka` — centred kernel alignment with linear
  kernels (Kornblith et al., 2019), the debiased version using the unbiased HSIC
  estimator.
* :func:`stitch` — affine model stitching (Lenc & Vedaldi, 2015; Bansal et al., 2021):
  frozen embeddings of model A, a trainable affine map, the frozen decoder of model B;
  ``kind="mlp"`` adds a small non-linear residual, :func:`stitch_restarts` retries from
  random starts, :func:`affine_r2` scores how affine a learned map is.
* :func:`seen_closure` — every kinship term the training pairs imply (sound rules, fixed
  point); :func:`automorphism_count` — how many relabellings of the people preserve
  every relation (person-level correspondence is defined only up to these).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .training import TrainConfig, train
from .utils import Sizes, check_choice, check_float, check_int, make_generator, make_rng

__all__ = [
    "linear_cka", "debiased_cka", "FamilyForest", "RELATIONS", "KINSHIP", "KinshipData",
    "kinship_data", "KinshipModels", "train_kinship", "accuracy", "StitchResult", "stitch",
    "affine_align", "pca_2d", "stitch_controls", "cka_across_seeds", "compare_models",
    "plot_forest", "plot_embedding", "RepresentationSetup", "SETUP", "DECODERS",
    "STITCH_KINDS", "stitch_restarts", "affine_r2", "seen_closure", "automorphism_count",
]


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


def _unbiased_hsic(X: np.ndarray, Y: np.ndarray) -> float:
    """Unbiased HSIC estimator (Song et al., 2012) of the linear kernels K = XX^T and
    L = YY^T, up to a constant, computed from the features in O(n p q) without forming
    the n x n Gram matrices.  With zero-diagonal K~, L~:
    ``[tr(K~L~) + 1'K~1 1'L~1 / ((n-1)(n-2)) - 2 1'K~L~1 / (n-2)] / (n(n-3))``."""
    n = X.shape[0]
    dk, dl = (X * X).sum(1), (Y * Y).sum(1)                 # diagonals of K and L
    trace = np.linalg.norm(X.T @ Y) ** 2 - dk @ dl           # tr(K~ L~)
    k_rows = X @ X.sum(0) - dk                               # K~ 1
    l_rows = Y @ Y.sum(0) - dl                               # L~ 1
    term = (trace + k_rows.sum() * l_rows.sum() / ((n - 1) * (n - 2))
            - 2 * (k_rows @ l_rows) / (n - 2))
    return float(term / (n * (n - 3)))


def debiased_cka(X, Y) -> float:
    """Linear CKA with the unbiased HSIC estimator (less biased for few examples)."""
    X, Y = _check_pair(X, Y)
    if X.shape[0] < 4:
        raise ValueError(f"debiased CKA needs at least 4 examples, got {X.shape[0]}")
    return _unbiased_hsic(X, Y) / np.sqrt(_unbiased_hsic(X, X) * _unbiased_hsic(Y, Y))


RELATIONS = ("parent", "child", "spouse", "sibling", "grandparent", "grandchild",
             "uncle_aunt", "niece_nephew", "cousin", "ancestor", "descendant")
# The kinship term of an ordered pair (a, b): "a is b's <term>".  The terms are mutually
# exclusive in a forest without intermarriage; "great_ancestor" = ancestor but neither
# parent nor grandparent; "none" = no relation (including in-laws).
KINSHIP = ("none", "parent", "child", "spouse", "sibling", "grandparent", "grandchild",
           "uncle_aunt", "niece_nephew", "cousin", "great_ancestor", "great_descendant")
# Decoder families of :class:`KinshipModels`: a one-hidden-layer MLP on [e_a, e_b], or a
# bilinear form per kinship term (RESCAL-style) plus linear terms.
DECODERS = ("mlp", "bilinear")


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
        rng = make_rng(seed)
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

    def kinship(self) -> np.ndarray:
        """(n, n) int matrix: ``K[a, b]`` indexes :data:`KINSHIP` (a is b's <term>)."""
        K = np.zeros((self.n, self.n), dtype=np.int64)
        for i, term in enumerate(KINSHIP[1:10], start=1):
            K[self.matrix(term)] = i
        great = self.matrix("ancestor") & (K == 0)
        K[great] = KINSHIP.index("great_ancestor")
        K[great.T] = KINSHIP.index("great_descendant")
        return K

    def shuffled(self, seed: int = 0) -> FamilyForest:
        """The same family shapes with people relabelled at random *within* each family:
        a different graph on the same people (person i now sits somewhere else)."""
        rng = make_rng(seed)
        perm = np.arange(self.n)                 # perm[old] = new label
        for f in np.unique(self.family):
            idx = np.flatnonzero(self.family == f)
            perm[idx] = rng.permutation(idx)
        inv = np.argsort(perm)                   # inv[new] = old
        return FamilyForest(self.parent[np.ix_(inv, inv)], self.spouse[np.ix_(inv, inv)],
                            self.generation[inv], self.family[inv])

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

    pairs: torch.Tensor     # (P, 2) long: ordered pairs (a, b), a != b
    labels: torch.Tensor    # (P,) long: index into KINSHIP of "a is b's <term>"
    train: torch.Tensor     # (P,) bool: True for training pairs, False for held-out ones
    n_people: int

    def select(self, which: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
        """``(pairs, labels)`` of one part: "train", "test", "test_facts" (held-out related
        pairs), "test_none" (held-out unrelated pairs), "train_facts" or "all"."""
        related = self.labels > 0
        masks = {"all": torch.ones_like(self.train), "train": self.train, "test": ~self.train,
                 "train_facts": self.train & related, "test_facts": ~self.train & related,
                 "test_none": ~self.train & ~related}
        if which not in masks:
            raise ValueError(f"which must be one of {tuple(masks)}; got {which!r}")
        m = masks[which]
        return self.pairs[m], self.labels[m]

    def relabelled(self, forest: FamilyForest) -> KinshipData:
        """The same pairs and split, labelled by another forest on the same people."""
        if forest.n != self.n_people:
            raise ValueError(f"forest has {forest.n} people, the data has {self.n_people}")
        K = torch.from_numpy(forest.kinship())
        return KinshipData(self.pairs, K[self.pairs[:, 0], self.pairs[:, 1]], self.train,
                           self.n_people)


def kinship_data(forest: FamilyForest, train_fraction: float = 0.8, seed: int = 0,
                 within_family: bool = True) -> KinshipData:
    """Every ordered pair (a, b), a != b, with its kinship term; a random ``train_fraction``
    of the pairs is for training, the rest is held out.

    ``within_family`` keeps only pairs from the same family (pairs across families are all
    "none", and cost most of the compute)."""
    if not isinstance(forest, FamilyForest):
        raise TypeError(f"forest must be a FamilyForest, got {type(forest).__name__}")
    train_fraction = check_float("train_fraction", train_fraction, low=0.0, high=1.0,
                                 low_open=True, high_open=True)
    keep = ~np.eye(forest.n, dtype=bool)
    if within_family:
        keep &= forest.family[:, None] == forest.family[None, :]
    a, b = np.nonzero(keep)
    labels = forest.kinship()[a, b]
    train = make_rng(seed).random(len(a)) < train_fraction
    return KinshipData(torch.from_numpy(np.stack([a, b], 1)), torch.from_numpy(labels),
                       torch.from_numpy(train), forest.n)


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
    pairs, labels = (t.numpy() for t in data.select("train"))
    seen = np.zeros((len(KINSHIP), n, n), dtype=bool)              # (K, n, n)
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
    from collections import Counter
    from math import factorial

    kids = [np.flatnonzero(forest.parent[p]) for p in range(forest.n)]

    def tree(p):                  # (shape, automorphisms) of the line below person p
        below = [tree(c) for c in kids[p]]
        shape = (bool(forest.spouse[p].any()), tuple(sorted(sh for sh, _ in below)))
        count = int(np.prod([a for _, a in below], dtype=object)) if below else 1
        for mult in Counter(sh for sh, _ in below).values():
            count *= factorial(mult)
        return shape, count

    founders = np.flatnonzero(~forest.parent.any(0) & ~(forest.spouse.astype(int)
                                                        @ forest.parent.any(0)).astype(bool))
    roots = [p for p in founders              # one founder per couple, or a single founder
             if not forest.spouse[p].any() or p < np.flatnonzero(forest.spouse[p]).min()]
    total, shapes = 1, []
    for r in roots:
        shape, count = tree(r)
        couple = forest.spouse[r].any()
        total *= count * (2 if couple else 1)                     # the founders swap
        shapes.append(shape)
    for mult in Counter(shapes).values():
        total *= factorial(mult)
    return total


# --------------------------------------------------------------------------- models
class KinshipModels(nn.Module):
    """``M`` independent models trained as one tensor program.

    Model m has an embedding ``E_m`` (n_people, d_m) and a one-hidden-layer MLP decoder:
    ``logits(a, b) = W_out relu(W_a e_a + W_b e_b + b_1) + b_out`` (the first layer acts on
    the concatenation ``[e_a, e_b]``); ``decoder="bilinear"`` replaces it by a different
    family, ``logits_k(a, b) = e_a^T R_k e_b + u_k . e_a + v_k . e_b + c_k`` (one d x d form
    R_k per kinship term).  Models of different sizes share one tensor: their
    embeddings are zero-padded to the largest d and masked.  Model m is initialised from
    ``seeds[m]`` alone (embeddings ~ N(0, init_scale^2), default ``1/sqrt(d_m)``), so it is
    the same model whether it is trained alone or with others.
    """

    def __init__(self, n_people: int, embed_dims: int | Sequence[int],
                 seeds: Sequence[int] = (0,), hidden: int = 32,
                 n_classes: int = len(KINSHIP), init_scale: float | None = None,
                 decoder: str = "mlp") -> None:
        super().__init__()
        self.decoder = check_choice("decoder", decoder, DECODERS)
        n = check_int("n_people", n_people, minimum=2)
        h = check_int("hidden", hidden, minimum=1)
        k = check_int("n_classes", n_classes, minimum=2)
        seeds = tuple(check_int("seed", s, minimum=0) for s in seeds)
        if not seeds:
            raise ValueError("seeds must name at least one model")
        if isinstance(embed_dims, (int, np.integer)):
            embed_dims = (embed_dims,) * len(seeds)
        dims = tuple(check_int("embed_dim", d, minimum=1) for d in embed_dims)
        if len(dims) != len(seeds):
            raise ValueError(f"give one embedding size per seed: {len(dims)} sizes for "
                             f"{len(seeds)} seeds")
        if init_scale is not None:
            init_scale = check_float("init_scale", init_scale, low=0.0, low_open=True)
        self.seeds, self.dims = seeds, dims
        D = max(dims)
        names = (("embed", "w_a", "w_b", "b_1", "w_out", "b_out") if decoder == "mlp"
                 else ("embed", "rel", "u_a", "u_b", "b_out"))
        parts: dict[str, list] = {name: [] for name in names}
        for s, d in zip(seeds, dims, strict=True):
            g = make_generator(s)
            scale = init_scale if init_scale is not None else 1 / np.sqrt(d)
            pad = torch.zeros(n, D - d)
            parts["embed"].append(torch.cat([torch.randn(n, d, generator=g) * scale, pad], 1))
            if decoder == "bilinear":     # one d x d form per kinship term, plus linear terms
                rel = torch.zeros(k, D, D)
                rel[:, :d, :d] = torch.randn(k, d, d, generator=g) / np.sqrt(d)
                parts["rel"].append(rel)
                for w in ("u_a", "u_b"):
                    parts[w].append(torch.cat([torch.randn(d, k, generator=g) / np.sqrt(d),
                                               torch.zeros(D - d, k)]))
                parts["b_out"].append(torch.zeros(1, k))
                continue
            for w in ("w_a", "w_b"):
                parts[w].append(torch.cat([torch.randn(d, h, generator=g) / np.sqrt(2 * d),
                                           torch.zeros(D - d, h)]))
            parts["b_1"].append(torch.zeros(1, h))
            parts["w_out"].append(torch.randn(h, k, generator=g) / np.sqrt(h))
            parts["b_out"].append(torch.zeros(1, k))
        for name, tensors in parts.items():
            setattr(self, name, nn.Parameter(torch.stack(tensors)))
        mask = torch.zeros(len(dims), 1, D)
        for m, d in enumerate(dims):
            mask[m, :, :d] = 1.0
        self.register_buffer("mask", mask)                          # (M, 1, D)

    @property
    def n_models(self) -> int:
        """Number of models M."""
        return self.embed.shape[0]

    def embedding(self, m: int) -> torch.Tensor:
        """Model m's learned embedding, (n_people, d_m)."""
        m = check_int("m", m, minimum=0)
        if m >= self.n_models:
            raise ValueError(f"model index must be < {self.n_models}, got {m}")
        return self.embed.detach()[m, :, : self.dims[m]]

    def index(self, dim: int, seed: int) -> int:
        """Position of the model with embedding size ``dim`` and ``seed``."""
        for m, key in enumerate(zip(self.dims, self.seeds, strict=True)):
            if key == (dim, seed):
                return m
        raise ValueError(f"no model with dim={dim}, seed={seed}; have "
                         f"{sorted(set(zip(self.dims, self.seeds, strict=True)))}")

    def forward(self, pairs: torch.Tensor, embed: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (M, P, K) for ordered pairs (P, 2); ``embed`` (M, n, D) replaces the
        models' own embeddings (used for stitching)."""
        E = self.embed if embed is None else embed                  # (M, n, D)
        if E.shape[0] != self.n_models or E.shape[2] != self.embed.shape[2]:
            raise ValueError(f"embed must have shape ({self.n_models}, n, "
                             f"{self.embed.shape[2]}), got {tuple(E.shape)}")
        E = E * self.mask
        if self.decoder == "bilinear":  # logits_k = e_a^T R_k e_b + u_k.e_a + v_k.e_b + c_k
            ER = torch.einsum("mni,mkij->mnkj", E, self.rel)         # (M, n, K, D)
            e_b = E[:, pairs[:, 1]]                                  # (M, P, D)
            bil = (ER[:, pairs[:, 0]] * e_b[:, :, None]).sum(-1)     # (M, P, K)
            return bil + (E @ self.u_a)[:, pairs[:, 0]] + e_b @ self.u_b + self.b_out
        u_a, u_b = E @ self.w_a, E @ self.w_b                       # (M, n, h) each
        hidden = torch.relu(u_a[:, pairs[:, 0]] + u_b[:, pairs[:, 1]] + self.b_1)  # (M, P, h)
        return torch.baddbmm(self.b_out, hidden, self.w_out)       # (M, P, K)

    def select(self, index: int | Sequence[int]) -> KinshipModels:
        """A frozen copy holding the models at ``index`` (an int or a list of ints)."""
        idx = [index] if isinstance(index, (int, np.integer)) else list(index)
        for i in idx:
            if not 0 <= i < self.n_models:
                raise ValueError(f"model index must be in [0, {self.n_models}), got {i}")
        out = KinshipModels.__new__(KinshipModels)
        nn.Module.__init__(out)
        out.decoder = self.decoder
        out.seeds = tuple(self.seeds[i] for i in idx)
        out.dims = tuple(self.dims[i] for i in idx)
        D = max(out.dims)
        for name, p in self.named_parameters():
            value = p.detach()[idx].clone()
            if name == "embed":
                value = value[:, :, :D]
            elif name in ("w_a", "w_b", "u_a", "u_b"):
                value = value[:, :D]
            elif name == "rel":
                value = value[:, :, :D, :D]
            setattr(out, name, nn.Parameter(value, requires_grad=False))
        out.register_buffer("mask", self.mask[idx][:, :, :D].clone())
        return out


def _ensemble_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Sum over models of each model's mean cross-entropy (so models train independently)."""
    M, P, K = logits.shape
    return F.cross_entropy(logits.reshape(M * P, K), labels.repeat(M)) * M


def accuracy(models: KinshipModels, data: KinshipData, which: str = "test_facts",
             embed: torch.Tensor | None = None) -> np.ndarray:
    """Fraction of pairs in ``data.select(which)`` whose term each model names: (M,)."""
    pairs, labels = data.select(which)
    if len(labels) == 0:
        raise ValueError(f"the data has no {which!r} pairs")
    with torch.no_grad():
        pred = models(pairs, embed).argmax(-1)                     # (M, P)
    return (pred == labels).double().mean(1).numpy()


def train_kinship(data: KinshipData, dims: int | Sequence[int] = 4,
                  seeds: Sequence[int] = (0,), *, hidden: int = 32, steps: int = 1000,
                  lr: float = 1e-2, weight_decay: float = 0.0,
                  init_scale: float | None = None, decoder: str = "mlp",
                  progress: bool = True, desc: str = "training models"):
    """Train one model per (embedding size, seed) on the training pairs, all at once.

    Full-batch AdamW; models are ordered size-major (all seeds of ``dims[0]`` first).
    Returns ``(models, history)``; the history records the mean training accuracy and
    held-out-fact accuracy over the models."""
    if not isinstance(data, KinshipData):
        raise TypeError(f"data must be KinshipData, got {type(data).__name__}")
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    seeds = tuple(seeds)
    if not dims or not seeds:
        raise ValueError("dims and seeds must each name at least one value")
    models = KinshipModels(data.n_people, [d for d in dims for _ in seeds],
                           [s for _ in dims for s in seeds], hidden, init_scale=init_scale,
                           decoder=decoder)
    pairs, labels = data.select("train")

    def evaluate(m, step):
        return {"train acc": accuracy(m, data, "train").mean(),
                "held-out acc": accuracy(m, data, "test_facts").mean()}

    cfg = TrainConfig(steps=steps, lr=lr, weight_decay=weight_decay, grad_clip=None,
                      eval_every=max(1, steps // 4))
    hist = train(models, lambda step: (pairs, labels), cfg, eval_fn=evaluate,
                 loss_fn=_ensemble_loss, progress=progress, desc=desc)
    models.requires_grad_(False)
    return models, hist


# --------------------------------------------------------------------------- stitching
@dataclass
class StitchResult:
    """Affine stitching of source embeddings into frozen target decoders, M at a time."""

    weight: torch.Tensor     # (M, d_source, d_target) the learned linear map
    bias: torch.Tensor       # (M, 1, d_target) its offset
    mapped: torch.Tensor     # (M, n, d_target) source embeddings after the map
    train_acc: np.ndarray    # (M,) stitched accuracy on the training pairs
    test_acc: np.ndarray     # (M,) stitched accuracy on the held-out facts
    loss: np.ndarray         # (M,) final training cross-entropy (nats)


def _as_embeddings(source) -> torch.Tensor:
    """(M, n, D) float tensor from one (n, d) array, an (M, n, d) array, or a list of
    (n, d_m) arrays of different widths (zero-padded to the widest)."""
    def as_t(x):
        return torch.as_tensor(np.asarray(x.detach().cpu() if hasattr(x, "detach") else x),
                               dtype=torch.float32)

    if isinstance(source, (list, tuple)):
        parts = [as_t(x) for x in source]
        if not parts or any(p.ndim != 2 for p in parts):
            raise ValueError("a list of sources must hold 2-D (n, d) embeddings")
        if len({p.shape[0] for p in parts}) != 1:
            raise ValueError(f"sources embed different numbers of people: "
                             f"{[p.shape[0] for p in parts]}")
        D = max(p.shape[1] for p in parts)
        return torch.stack([F.pad(p, (0, D - p.shape[1])) for p in parts])
    src = as_t(source)
    if src.ndim == 2:
        src = src[None]
    if src.ndim != 3:
        raise ValueError(f"source must be (n, d), (M, n, d) or a list of (n, d_m); got "
                         f"shape {tuple(src.shape)}")
    return src


class _AffineStitch(nn.Module):
    """``e -> e W + c`` (affine) or ``e -> e W + c + relu(e W_1 + b_1) W_2`` ("mlp": an
    affine map plus a one-hidden-layer residual, whose output layer starts at zero)."""

    def __init__(self, source: torch.Tensor, target: KinshipModels, init: str,
                 kind: str = "affine", hidden: int = 32, seed: int = 0) -> None:
        super().__init__()
        self.source, self.target, self.kind = source, target, kind
        M, n, d_in = source.shape
        goal = target.embed.detach()                                # (M, n, d_target)
        d_out = goal.shape[2]
        g = make_generator(seed)
        if init == "lstsq":      # least-squares affine match of the two embeddings
            X = torch.cat([source, torch.ones(M, n, 1)], 2).double()  # (M, n, d_in + 1)
            coef = torch.linalg.lstsq(X, goal.double()).solution.float()
            weight, bias = coef[:, :d_in], coef[:, d_in:]
        elif init == "random":   # a random map, scaled to the target's spread
            scale = goal.std(1, keepdim=True) / source.std(1).norm(dim=1).clamp_min(1e-8)[
                :, None, None]                                        # (M, 1, d_target)
            weight = torch.randn(M, d_in, d_out, generator=g) * scale
            bias = goal.mean(1, keepdim=True)
        else:                    # zero map: everybody starts at the mean person
            weight, bias = torch.zeros(M, d_in, d_out), goal.mean(1, keepdim=True)
        self.weight = nn.Parameter(weight.clone())
        self.bias = nn.Parameter(bias.clone())
        if kind == "mlp":
            self.w_1 = nn.Parameter(torch.randn(M, d_in, hidden, generator=g)
                                    / np.sqrt(max(d_in, 1)))
            self.b_1 = nn.Parameter(torch.zeros(M, 1, hidden))
            self.w_2 = nn.Parameter(torch.zeros(M, hidden, d_out))

    def mapped(self) -> torch.Tensor:
        out = torch.baddbmm(self.bias, self.source, self.weight)   # (M, n, d_target)
        if self.kind == "mlp":
            out = out + torch.relu(torch.baddbmm(self.b_1, self.source, self.w_1)) @ self.w_2
        return out

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        return self.target(pairs, self.mapped())


STITCH_KINDS = ("affine", "mlp")


def stitch(source, target: KinshipModels, data: KinshipData, *, steps: int = 300,
           lr: float = 1e-2, init: str = "lstsq", kind: str = "affine", hidden: int = 32,
           seed: int = 0, progress: bool = False) -> StitchResult:
    """Stitch embeddings ``source`` (n, d) or (M, n, d) into ``target``'s frozen decoders
    through a trainable map each, trained on the training pairs of ``data``.

    ``kind="affine"`` trains ``e -> e W + c``; ``kind="mlp"`` adds a residual
    ``relu(e W_1 + b_1) W_2`` of width ``hidden`` (starting at zero, so at the affine start).
    ``init="lstsq"`` starts the affine part at the least-squares affine match of the source
    to the target's own embeddings (the same start for real models and for controls);
    ``init="random"`` at a random map drawn from ``seed`` (for restarts); ``init="zero"``
    with every person at the target's mean embedding.  ``target`` holds M models (or one,
    reused for every source)."""
    check_choice("init", init, ("lstsq", "random", "zero"))
    check_choice("kind", kind, STITCH_KINDS)
    hidden = check_int("hidden", hidden, minimum=1)
    steps = check_int("steps", steps, minimum=1)
    if not isinstance(target, KinshipModels):
        raise TypeError(f"target must be KinshipModels, got {type(target).__name__}")
    if not isinstance(data, KinshipData):
        raise TypeError(f"data must be KinshipData, got {type(data).__name__}")
    src = _as_embeddings(source)
    if src.shape[1] != data.n_people:
        raise ValueError(f"source embeds {src.shape[1]} people, the data has {data.n_people}")
    if target.n_models == 1 and src.shape[0] > 1:
        target = target.select([0] * src.shape[0])
    if target.n_models != src.shape[0]:
        raise ValueError(f"{src.shape[0]} sources but {target.n_models} target models")
    target = target.select(list(range(target.n_models)))          # frozen copy
    model = _AffineStitch(src, target, init, kind, hidden, seed)
    pairs, labels = data.select("train")
    train(model, lambda step: (pairs, labels), TrainConfig(
        steps=steps, lr=lr, grad_clip=None, eval_every=steps), loss_fn=_ensemble_loss,
        progress=progress, desc="stitching")
    with torch.no_grad():
        mapped = model.mapped()
        logits = target(pairs, mapped)                              # (M, P, K) train pairs
        M, P, K = logits.shape
        loss = F.cross_entropy(logits.reshape(M * P, K), labels.repeat(M),
                               reduction="none").reshape(M, P).mean(1).numpy()
        train_acc = (logits.argmax(-1) == labels).double().mean(1).numpy()
    return StitchResult(model.weight.detach(), model.bias.detach(), mapped, train_acc,
                        accuracy(target, data, "test_facts", mapped), loss)


def stitch_restarts(source, target: KinshipModels, data: KinshipData, *, restarts: int = 4,
                    steps: int = 300, seed: int = 0, **kw) -> StitchResult:
    """Affine stitching from ``restarts`` random starts (and the least-squares start) per
    source; keeps, per source, the run with the lowest final *training* loss, so the
    held-out pairs play no part in the choice.  Arguments as for :func:`stitch`."""
    restarts = check_int("restarts", restarts, minimum=1)
    src = _as_embeddings(source)
    M = src.shape[0]
    if not isinstance(target, KinshipModels):
        raise TypeError(f"target must be KinshipModels, got {type(target).__name__}")
    if target.n_models == 1 and M > 1:
        target = target.select([0] * M)
    runs = [stitch(src, target, data, steps=steps, init="lstsq", **kw)]
    big = stitch(src.repeat(restarts, 1, 1), target.select(list(range(target.n_models))
                                                             * restarts),
                 data, steps=steps, init="random", seed=seed, **kw)
    for r in range(restarts):
        sl = slice(r * M, (r + 1) * M)
        runs.append(StitchResult(big.weight[sl], big.bias[sl], big.mapped[sl],
                                 big.train_acc[sl], big.test_acc[sl], big.loss[sl]))
    best = np.stack([r.loss for r in runs]).argmin(0)               # (M,) run per source
    idx = torch.from_numpy(best)
    rows = torch.arange(M)

    def pick(name):                                                 # field of the best runs
        stacked = [torch.as_tensor(getattr(r, name)) for r in runs]
        return torch.stack(stacked)[idx, rows]

    return StitchResult(pick("weight"), pick("bias"), pick("mapped"),
                        pick("train_acc").numpy(), pick("test_acc").numpy(),
                        pick("loss").numpy())


def affine_r2(X, Y) -> float:
    """Fraction of the variance of Y (n, q) explained by the best affine function of X
    (n, p): 1 for an exactly affine relation, 0 when no affine map does better than the
    mean.  Applied to a stitch's input and output, it scores how *almost affine* the
    learned map is."""
    X, Y = _check_pair(X, Y)
    total = ((Y - Y.mean(0)) ** 2).sum()
    if total == 0:
        raise ValueError("Y must not be constant")
    return float(1 - ((Y - affine_align(X, Y)) ** 2).sum() / total)


def affine_align(X, Y) -> np.ndarray:
    """Least-squares affine map of X (n, p) onto Y (n, q); returns the mapped X (n, q)."""
    X, Y = _check_pair(X, Y)
    A = np.hstack([X, np.ones((len(X), 1))])
    coef, *_ = np.linalg.lstsq(A, Y, rcond=None)
    return A @ coef


def pca_2d(X, basis_of=None) -> np.ndarray:
    """Coordinates of X (n, p) on the top two principal axes of ``basis_of`` (default X)."""
    X = np.asarray(X.detach() if hasattr(X, "detach") else X, dtype=np.float64)
    B = X if basis_of is None else np.asarray(
        basis_of.detach() if hasattr(basis_of, "detach") else basis_of, dtype=np.float64)
    if X.ndim != 2 or B.ndim != 2 or X.shape[1] != B.shape[1]:
        raise ValueError(f"X and basis_of must be 2-D with equal widths, got {X.shape}, "
                         f"{B.shape}")
    mean = B.mean(0)
    _, _, Vt = np.linalg.svd(B - mean, full_matrices=False)
    V = Vt[:2].T
    if V.shape[1] < 2:                                            # 1-D embeddings
        V = np.hstack([V, np.zeros((V.shape[0], 1))])
    return (X - mean) @ V


# --------------------------------------------------------------------------- analyses
def stitch_controls(models: KinshipModels, data: KinshipData,
                    other_graph: KinshipModels | None = None, *, seed: int = 0,
                    steps: int = 300) -> dict:
    """Held-out accuracy of every model in ``models`` (as the target B) when its decoder
    reads embeddings from: itself (the unstitched baseline, "own"); another seed of the
    same size ("across seeds", the next seed in ``models``); random Gaussian embeddings
    of the same size ("random"); and, if given, the model of the same size trained on a
    *different graph* ("other graph").  Returns ``{name: (M,) array}``."""
    idx = {}
    for m, d in enumerate(models.dims):
        idx.setdefault(d, []).append(m)
    partner = [0] * models.n_models
    for group in idx.values():
        for k, m in enumerate(group):
            partner[m] = group[(k + 1) % len(group)]
    g = make_generator(seed)
    out = {"own": accuracy(models, data),
           "across seeds": stitch([models.embedding(p) for p in partner], models, data,
                                  steps=steps).test_acc,
           "random": stitch([torch.randn(data.n_people, d, generator=g) / np.sqrt(d)
                             for d in models.dims], models, data, steps=steps).test_acc}
    if other_graph is not None:
        src = [other_graph.embedding(other_graph.dims.index(d)) for d in models.dims]
        out["other graph"] = stitch(src, models, data, steps=steps).test_acc
    return out


def cka_across_seeds(models: KinshipModels, debiased: bool = True) -> dict:
    """Mean CKA over all pairs of seeds, for each embedding size: ``{d: value}``."""
    cka = debiased_cka if debiased else linear_cka
    out = {}
    for d in dict.fromkeys(models.dims):
        ms = [m for m, dm in enumerate(models.dims) if dm == d]
        vals = [cka(models.embedding(a), models.embedding(b))
                for i, a in enumerate(ms) for b in ms[i + 1:]]
        out[d] = float(np.mean(vals)) if vals else float("nan")
    return out


def compare_models(source: KinshipModels, i: int, target: KinshipModels, j: int,
                   data: KinshipData, steps: int = 300) -> dict:
    """Everything the chapter's explorer shows for "model i of ``source`` -> model j of
    ``target``": linear and debiased CKA of the two embeddings, B's own held-out
    accuracy, the stitched held-out and training accuracy, and A's embedding after the
    learned map (n, d_B)."""
    Ea, Eb = source.embedding(i), target.embedding(j)
    res = stitch(Ea, target.select(j), data, steps=steps)
    return {"cka": linear_cka(Ea, Eb), "debiased cka": debiased_cka(Ea, Eb),
            "own": float(accuracy(target.select(j), data)[0]),
            "stitched": float(res.test_acc[0]), "stitched train": float(res.train_acc[0]),
            "mapped": res.mapped[0, :, : target.dims[j]].numpy()}


# --------------------------------------------------------------------------- figures
def _scatter_people(ax, xy: np.ndarray, forest: FamilyForest, **kw) -> None:
    """People at (n, 2) positions: colour = generation, marker = family."""
    import matplotlib.pyplot as plt

    top = int(forest.generation.max())
    cmap = plt.get_cmap("viridis", top + 1)
    for fam, marker in zip(np.unique(forest.family), "osD^v", strict=False):
        sel = forest.family == fam
        ax.scatter(xy[sel, 0], xy[sel, 1], c=forest.generation[sel], cmap=cmap,
                   marker=marker, vmin=-0.5, vmax=top + 0.5, edgecolor="k",
                   label=f"family {fam}", **kw)


def plot_forest(ax, forest: FamilyForest, labels: bool = False):
    """Draw the genealogy: generations top to bottom, parent-child lines, spouse links;
    colour = generation, marker = family (as in :func:`plot_embedding`)."""

    x = np.zeros(forest.n)
    for g in np.unique(forest.generation):                 # order people within a row
        row = np.flatnonzero(forest.generation == g)
        if g == 0:
            order = row
        else:                # children under their parents, partners next to spouses
            def key(p):
                par = np.flatnonzero(forest.parent[:, p])
                sp = np.flatnonzero(forest.spouse[p])
                if len(par):
                    return (x[par].mean(), p)
                if len(sp) and forest.parent[:, sp[0]].any():     # next to the partner
                    return (x[np.flatnonzero(forest.parent[:, sp[0]])].mean(), sp[0] + 0.5)
                return (2.0, p)
            order = sorted(row, key=key)
        x[order] = np.linspace(0, 1, len(order) + 2)[1:-1]
    y = -forest.generation.astype(float)
    for a, b in zip(*np.nonzero(forest.parent), strict=True):
        ax.plot([x[a], x[b]], [y[a], y[b]], color="0.75", lw=0.8, zorder=1)
    for a, b in zip(*np.nonzero(np.triu(forest.spouse)), strict=True):
        ax.plot([x[a], x[b]], [y[a], y[b]], color="0.3", lw=1.6, zorder=1)
    _scatter_people(ax, np.stack([x, y], 1), forest, s=40, zorder=2, linewidth=0.4)
    if labels:
        for p in range(forest.n):
            ax.annotate(str(p), (x[p], y[p]), fontsize=6, ha="center", va="bottom",
                        xytext=(0, 4), textcoords="offset points")
    ax.set_yticks(-np.unique(forest.generation))
    ax.set_yticklabels([f"gen {g}" for g in np.unique(forest.generation)])
    ax.set_xticks([])
    ax.grid(False)
    return ax


def plot_embedding(ax, coords, forest: FamilyForest, title: str | None = None):
    """Scatter 2-D coordinates of the people: colour = generation, marker = family."""

    coords = np.asarray(coords)
    if coords.shape != (forest.n, 2):
        raise ValueError(f"coords must have shape ({forest.n}, 2), got {coords.shape}")
    _scatter_people(ax, coords, forest, s=30, linewidth=0.3)
    ax.set_xlabel("PC 1 of B's embedding")
    ax.set_ylabel("PC 2")
    if title:
        ax.set_title(title, fontsize=10)
    return ax


# --------------------------------------------------------------------------- run sizes
@dataclass(frozen=True)
class RepresentationSetup:
    """Sizes of the universality chapter's experiments (CPU default; FULL=1 is larger)."""

    n_families: int = 2                     # founding couples
    generations: int = 4                    # generations, founders included
    children: tuple = (2, 2)                # children per couple (min, max)
    forest_seed: int = 0
    train_fraction: float = 0.8             # fraction of ordered pairs used for training
    fractions: tuple = (0.5,)               # further training fractions (data starvation)
    dims: tuple = (1, 2, 3, 4, 6, 8, 16, 32)   # embedding sizes d
    seeds: tuple = (0, 1, 2, 3)             # initialisation seeds per size
    hidden: int = 32                        # decoder width
    steps: int = 1000                       # full-batch AdamW steps per model
    lr: float = 1e-2
    weight_decays: tuple = (0.0, 0.1)       # no pressure / resource pressure
    stitch_steps: int = 300                 # AdamW steps for each affine map


SETUP = Sizes(
    cpu=RepresentationSetup(),
    full=RepresentationSetup(children=(2, 3), dims=(1, 2, 3, 4, 6, 8, 12, 16, 32, 64),
                             seeds=tuple(range(8)), hidden=64, steps=3000,
                             stitch_steps=600),
)
